//! The stdio fast path against rmcp's path: the same transcripts byte for byte, and the
//! behaviours a fast-path call must keep (cancellation, `busy`, sessions, tool calls).

use std::io::{BufRead, BufReader, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ptc_lisp_eval::{FnHost, Host, Value};
use serde_json::{Value as Json, json};
use tokio_util::sync::CancellationToken;

use super::{StdioError, serve};
use crate::config::{McpConfig, ResponseProfile};
use crate::server::{PtcServer, ToolBackend};
use crate::test_support::{inline_cases, without_durations};

/// Programs may call `tool/echo` (answers its arguments) and `tool/twice` (async).
struct Echo;

impl ToolBackend for Echo {
    fn host(&self) -> Arc<dyn Host> {
        Arc::new(
            FnHost::new()
                .with_tool("echo", |args: Value| Ok(args))
                .with_async_tool("twice", |args: Value| async move { Ok(Value::vector([args.clone(), args])) }),
        )
    }
}

/// `ptc mcp` on stdio over two pipes, its runtime on a thread of its own.
struct Session {
    stdin: Option<std::io::PipeWriter>,
    stdout: BufReader<std::io::PipeReader>,
    server: Option<std::thread::JoinHandle<Result<u64, StdioError>>>,
    lines: Vec<String>,
}

impl Session {
    fn start(config: McpConfig, backend: Arc<dyn ToolBackend>) -> Session {
        let (in_r, in_w) = std::io::pipe().expect("a pipe");
        let (out_r, out_w) = std::io::pipe().expect("a pipe");
        let server = PtcServer::new(config, backend);
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
            runtime.block_on(serve(server, CancellationToken::new(), in_r, Box::new(out_w)))
        });
        Session { stdin: Some(in_w), stdout: BufReader::new(out_r), server: Some(thread), lines: Vec::new() }
    }

    /// Started, `initialize`d, and past a `ping` (so the handshake is over).
    fn ready(config: McpConfig, backend: Arc<dyn ToolBackend>) -> Session {
        let mut s = Session::start(config, backend);
        s.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}));
        s.read();
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s.send(&json!({"jsonrpc": "2.0", "id": "ping", "method": "ping"}));
        s.read();
        s
    }

    fn send(&mut self, frame: &Json) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{frame}").expect("write a frame");
        stdin.flush().expect("flush");
    }

    /// The next line the server writes, kept for the transcript.
    fn read_line(&mut self) -> Option<String> {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).expect("read stdout");
        if n == 0 {
            return None;
        }
        let line = line.trim_end().to_string();
        self.lines.push(line.clone());
        Some(line)
    }

    fn read(&mut self) -> Json {
        let line = self.read_line().expect("an answer before stdout closed");
        serde_json::from_str(&line).expect("a JSON answer")
    }

    fn call(&mut self, id: i64, arguments: Json) -> Json {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": arguments}}));
        self.read()
    }

    /// Closes stdin, reads stdout to its end; the server's result and its fast-path count.
    fn finish(mut self) -> (Vec<String>, Result<u64, StdioError>) {
        drop(self.stdin.take());
        while self.read_line().is_some() {}
        let done = self.server.take().expect("server thread").join().expect("the server thread returns");
        (self.lines, done)
    }
}

fn config(fast: bool, profile: ResponseProfile) -> McpConfig {
    let mut c = McpConfig { stdio_fast_path: fast, response_profile: profile, ..McpConfig::default() };
    c.limits.max_loop_iterations = 1_000;
    c.limits.max_heap_bytes = 200_000;
    c.limits.max_program_bytes = 2_000;
    c
}

/// One request per step, each answered before the next is sent.
fn transcript(fast: bool, profile: ResponseProfile, steps: &[Json]) -> (Vec<String>, u64) {
    let mut s = Session::ready(config(fast, profile), Arc::new(Echo));
    for step in steps {
        s.send(step);
        if step.get("id").is_some() {
            s.read();
        }
    }
    let (lines, done) = s.finish();
    let taken = done.expect("the server ends cleanly");
    (lines.iter().map(|l| without_durations(l)).collect(), taken)
}

fn eval(id: i64, arguments: Json) -> Json {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": arguments}})
}

/// Calls the fast path takes (8 of them), then calls it hands to rmcp.
fn steps() -> Vec<Json> {
    let long_program = format!("(str {})", "\"x\" ".repeat(600));
    vec![
        eval(1, json!({"program": "(+ 1 2)"})),
        eval(2, json!({"program": "(count data/xs)", "context": {"xs": [1, 2, 3]}})),
        eval(3, json!({"program": "(/ 1 0)"})),
        eval(4, json!({"program": "(loop [i 0] (recur (inc i)))"})),
        eval(5, json!({"program": "(tool/echo {:a 1})"})),
        eval(6, json!({"program": "(tool/twice {:a 1})"})),
        eval(7, json!({"program": "\"text\"", "output_schema": {"type": "integer"}})),
        eval(8, json!({"program": "(count (vec (range 100000)))", "context": {"xs": (0..2_000).collect::<Vec<_>>()}})),
        // argument errors, answered on the reader thread
        eval(9, json!({})),
        eval(10, json!({"program": "  "})),
        eval(11, json!({"program": long_program})),
        eval(12, json!({"program": "1", "signature": "x"})),
        eval(13, json!({"program": "(keys data)", "context": {"a/b": 1}})),
        json!({"jsonrpc": "2.0", "id": "s-14", "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "{:a [1 2.5 nil]}"}}}),
        // rmcp's: a `_meta`, another tool, arguments that are no object, no arguments
        json!({"jsonrpc": "2.0", "id": 15, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(+ 1 2)"}, "_meta": {"progressToken": 7}}}),
        json!({"jsonrpc": "2.0", "id": 16, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 17, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": [1]}}),
        json!({"jsonrpc": "2.0", "id": 18, "method": "tools/call", "params": {"name": "lisp_eval"}}),
        json!({"jsonrpc": "2.0", "id": 19, "method": "tools/list"}),
    ]
}

#[test]
fn the_fast_path_answers_as_rmcp_does() {
    for profile in [ResponseProfile::Slim, ResponseProfile::Structured, ResponseProfile::Debug] {
        let (fast, taken) = transcript(true, profile, &steps());
        let (slow, not_taken) = transcript(false, profile, &steps());
        assert_eq!(not_taken, 0, "the fast path was off");
        assert_eq!(taken, 15, "calls 1 to 14 and 18 take the fast path ({profile:?})");
        assert_eq!(fast.len(), slow.len(), "{fast:#?}\n{slow:#?}");
        for (f, s) in fast.iter().zip(&slow) {
            assert_eq!(f, s, "{profile:?}");
        }
    }
}

#[test]
fn the_fast_path_answers_what_the_program_asked() {
    let (lines, _) = transcript(true, ResponseProfile::Structured, &steps());
    let answers: Vec<Json> = lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let answer = |id: Json| answers.iter().find(|a| a["id"] == id).cloned().unwrap_or(Json::Null);
    let text = |id: Json| answer(id)["result"]["content"][0]["text"].as_str().unwrap_or("").to_string();
    assert_eq!(text(json!(1)), "user=> 3");
    assert_eq!(text(json!(2)), "user=> 3");
    assert_eq!(
        answer(json!(4))["result"]["structuredContent"]["reason"],
        "loop_limit_exceeded",
        "{:?}",
        answer(json!(4))
    );
    assert_eq!(text(json!(5)), "user=> {\"a\" 1}");
    assert_eq!(answer(json!(8))["result"]["structuredContent"]["reason"], "memory_exceeded", "{:?}", answer(json!(8)));
    assert!(text(json!(8)).contains("the context took"), "{}", text(json!(8)));
    assert_eq!(answer(json!(11))["result"]["structuredContent"]["reason"], "args_error");
    assert_eq!(answer(json!("s-14"))["id"], "s-14");
}

#[test]
fn a_call_before_initialize_is_rmcps() {
    let run = |fast: bool, frames: &[Json]| {
        let mut s = Session::start(config(fast, ResponseProfile::Slim), Arc::new(Echo));
        for frame in frames {
            s.send(frame);
        }
        let (mut lines, done) = s.finish();
        // calls sent together may be answered in any order
        lines.sort();
        (lines, done.map_err(|e| e.to_string()))
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    // before `initialize`: rmcp refuses the call
    let first = [eval(1, json!({"program": "(+ 1 2)"})), initialize.clone()];
    let (fast, fast_done) = run(true, &first);
    assert_eq!((fast.clone(), fast_done.clone()), run(false, &first));
    assert_eq!(fast_done, Ok(0), "no call took the fast path without a finished handshake");
    assert!(fast.iter().any(|l| l.contains("\"id\":1,\"error\"")), "{fast:?}");
    // between `initialize` and `notifications/initialized`: rmcp runs it once the
    // handshake is over
    let early =
        [initialize, eval(1, json!({"program": "(+ 1 2)"})), initialized, eval(2, json!({"program": "(+ 1 2)"}))];
    let (fast, fast_done) = run(true, &early);
    let (slow, slow_done) = run(false, &early);
    assert_eq!(fast, slow);
    assert_eq!(fast.len(), 3, "{fast:?}");
    assert!(fast_done.is_ok() && slow_done == Ok(0), "{fast_done:?} {slow_done:?}");
}

#[test]
fn sessions_opened_on_other_versions_answer_alike() {
    for version in ["2025-11-25", "2026-07-28", "2024-11-05"] {
        let run = |fast: bool| {
            let mut s = Session::start(config(fast, ResponseProfile::Structured), Arc::new(Echo));
            s.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}));
            s.read();
            s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
            s.send(&json!({"jsonrpc": "2.0", "id": "ping", "method": "ping"}));
            s.read();
            s.call(1, json!({"program": "(+ 1 2)"}));
            s.call(2, json!({"program": "(/ 1 0)"}));
            let (lines, done) = s.finish();
            (lines, done.expect("clean end"))
        };
        let (fast, taken) = run(true);
        let (slow, _) = run(false);
        assert_eq!(fast, slow, "{version}");
        assert_eq!(taken, 2, "{version}");
    }
}

#[test]
fn cancelling_a_fast_path_call_frees_its_slot_and_drops_its_answer() {
    let mut c = config(true, ResponseProfile::Slim);
    c.max_concurrent_calls = 1;
    c.queue_timeout = Duration::ZERO;
    c.limits.timeout = Duration::from_secs(600);
    c.limits.max_loop_iterations = u64::MAX;
    let mut s = Session::ready(c, Arc::new(Echo));
    // the only slot: held by a program that would run for ten minutes
    s.send(&eval(2, json!({"program": "(loop [i 0] (recur (inc i)))"})));
    let r = s.call(3, json!({"program": "(+ 1 2)"}));
    assert_eq!(r["id"], 3);
    assert!(r["result"]["content"][0]["text"].as_str().unwrap_or("").starts_with("busy"), "{r}");
    s.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "test"}}),
    );
    let started = Instant::now();
    let mut id = 4;
    loop {
        let r = s.call(id, json!({"program": "(+ 1 2)"}));
        assert_eq!(r["id"], id, "{r}");
        if r["result"]["content"][0]["text"] == "user=> 3" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the cancelled program kept its slot");
        id += 1;
    }
    // the id of the cancelled call is free again
    let r = s.call(2, json!({"program": "(+ 2 2)"}));
    assert_eq!(r["result"]["content"][0]["text"], "user=> 4", "{r}");
    let (lines, done) = s.finish();
    // the first call after the cancel may have queued on rmcp's path
    assert!(done.expect("clean end") >= 2);
    let answers_to_2: Vec<&String> =
        lines.iter().filter(|l| l.contains("\"id\":2,") || l.ends_with("\"id\":2}")).collect();
    assert_eq!(answers_to_2.len(), 1, "only the second call with id 2 is answered: {answers_to_2:?}");
}

#[test]
fn a_running_fast_path_id_is_still_in_flight() {
    let mut c = config(true, ResponseProfile::Slim);
    c.limits.timeout = Duration::from_secs(600);
    c.limits.max_loop_iterations = u64::MAX;
    let mut s = Session::ready(c, Arc::new(Echo));
    s.send(&eval(2, json!({"program": "(loop [i 0] (recur (inc i)))"})));
    let r = s.call(2, json!({"program": "(+ 1 2)"}));
    assert_eq!(r["error"]["code"], -32600, "{r}");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}));
    let (_, done) = s.finish();
    assert_eq!(done.expect("clean end"), 1);
}

#[test]
fn session_tools_keep_rmcps_path() {
    let mut c = config(true, ResponseProfile::Structured);
    c.sessions.enabled = true;
    let mut s = Session::ready(c, Arc::new(Echo));
    s.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "lisp_session_start", "arguments": {}}}));
    let started = s.read();
    let sid = started["result"]["structuredContent"]["session_id"].as_str().unwrap_or_default().to_string();
    assert!(!sid.is_empty(), "{started}");
    for (id, program) in [(2, "(def x 21)"), (3, "(* x 2)")] {
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lisp_session_eval", "arguments": {"session_id": sid, "program": program}}}));
        s.read();
    }
    let sessions_lisp_eval = s.call(4, json!({"program": "(+ 1 2)"}));
    let (lines, done) = s.finish();
    assert_eq!(done.expect("clean end"), 0, "session servers take rmcp's path");
    assert!(lines.iter().any(|l| l.contains("user=> 42")), "{lines:#?}");
    // `lisp_eval` is no tool of a session server, on either path
    let mut c = config(false, ResponseProfile::Structured);
    c.sessions.enabled = true;
    let mut slow = Session::ready(c, Arc::new(Echo));
    assert_eq!(slow.call(4, json!({"program": "(+ 1 2)"})), sessions_lisp_eval);
    let _ = slow.finish();
}

/// Tiny programs are answered on the reader thread; a program that needs more than its
/// budget, calls a tool or recurses deep is run again from the start on the pool, and
/// answers as it would have there. Each answer is checked against rmcp's path too.
#[test]
fn tiny_programs_run_on_the_reader_and_the_rest_on_the_pool() {
    let mut c = config(true, ResponseProfile::Structured);
    c.limits.max_loop_iterations = 1_000_000;
    c.limits.max_heap_bytes = 64 * 1024 * 1024;
    let server = PtcServer::new(c, Arc::new(Echo));
    let probe = server.clone();
    let (in_r, in_w) = std::io::pipe().expect("a pipe");
    let (out_r, out_w) = std::io::pipe().expect("a pipe");
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
        runtime.block_on(serve(server, CancellationToken::new(), in_r, Box::new(out_w)))
    });
    let mut s = Session { stdin: Some(in_w), stdout: BufReader::new(out_r), server: Some(thread), lines: Vec::new() };
    s.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}));
    s.read();
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    s.send(&json!({"jsonrpc": "2.0", "id": "ping", "method": "ping"}));
    s.read();
    let text = |a: &Json| a["result"]["content"][0]["text"].as_str().unwrap_or("").to_string();
    let reason = |a: &Json| a["result"]["structuredContent"]["reason"].as_str().unwrap_or("").to_string();
    let cases = inline_cases();
    for (i, (arguments, inline, want)) in cases.into_iter().enumerate() {
        let before = probe.inline_runs();
        let answer = s.call(100 + i as i64, arguments.clone());
        let got = if text(&answer).contains(want) { want.to_string() } else { reason(&answer) };
        assert_eq!(got, want, "{arguments}: {answer}");
        assert_eq!(probe.inline_runs() - before, u64::from(inline), "{arguments}: ran inline?");
    }
    let (_, done) = s.finish();
    assert_eq!(done.expect("the server ends cleanly"), 7, "every call took the fast path");
}
