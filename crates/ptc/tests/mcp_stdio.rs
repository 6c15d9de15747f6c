//! `ptc mcp` over stdio with the real binary: handshake, calls, errors, limits.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        Server::start_logging(args, "error", Stdio::null())
    }
    fn start_logging(args: &[&str], level: &str, stderr: Stdio) -> Server {
        let child = Command::new(env!("CARGO_BIN_EXE_ptc"))
            .arg("mcp")
            .args(args)
            .arg("--log-level")
            .arg(level)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        Server::handshake(child)
    }
    /// Takes a started server through `initialize` and `notifications/initialized`.
    fn handshake(mut child: Child) -> Server {
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Server { child, stdin, stdout };
        let init = s.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "ptc");
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }
    fn send(&mut self, v: &Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }
    fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }
    fn read(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }
    fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let v = self.read();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }
    fn call(&mut self, id: i64, args: Value) -> Value {
        self.request(id, "tools/call", json!({"name": "lisp_eval", "arguments": args}))["result"].clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_string()
}

#[test]
fn lists_lisp_eval_with_a_budgeted_description() {
    let mut s = Server::start(&[]);
    let r = s.request(2, "tools/list", json!({}));
    let tools = r["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["name"], "lisp_eval");
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["program"]));
    assert_eq!(tools[0]["annotations"]["readOnlyHint"], true);
    assert!(tools[0].get("outputSchema").is_none(), "slim profile has no outputSchema");
    assert!(tools[0]["description"].as_str().unwrap().len() <= 1500);
}

#[test]
fn evaluates_with_context_and_prints() {
    let mut s = Server::start(&[]);
    let r = s.call(
        2,
        json!({"program": "(println \"n\" (count data/xs)) (reduce + data/xs)", "context": {"xs": [1, 2, 3]}}),
    );
    assert_eq!(r["isError"], false);
    assert_eq!(text(&r), "<prints>\nn 3\n\n<result>\nuser=> 6");
    // each call is isolated: definitions do not persist
    let r = s.call(3, json!({"program": "(def x 1)"}));
    assert_eq!(r["isError"], false);
    let r = s.call(4, json!({"program": "x"}));
    assert!(text(&r).starts_with("unbound_var: Undefined variable: x"), "{}", text(&r));
}

#[test]
fn errors_have_stable_reasons() {
    let mut s = Server::start(&[]);
    let cases = [
        (json!({"program": "(+ 1"}), "parse_error: unclosed list"),
        (json!({"program": "(/ 1 0)"}), "arithmetic_error: division by zero"),
        (json!({"program": "  "}), "args_error: argument `program` is blank"),
        (json!({}), "args_error: missing argument `program`"),
        (json!({"program": "1", "context": [1]}), "args_error: argument `context` must be a JSON object"),
        (json!({"program": "1", "context": {"a/b": 1}}), "args_error: context key \"a/b\" is invalid"),
        (json!({"program": "1", "signature": "{a :int}"}), "args_error: argument `signature` is no longer supported"),
        (json!({"program": "1", "output_schema": {"enum": [1]}}), "args_error: argument `output_schema` is invalid"),
        (json!({"program": "data/nope", "context": {"xs": 1}}), "runtime_error: data/nope is not bound"),
        (json!({"program": "(fail {:reason :empty})"}), "fail: the program called (fail {:reason :empty})"),
        (json!({"program": "(loop [i 0] (recur (inc i)))"}), "loop_limit_exceeded: Loop iteration limit exceeded"),
        (
            json!({"program": "{:count \"x\"}", "output_schema": {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}}),
            "validation_error: the result does not match the expected type {count :int}:\n- count: expected int",
        ),
    ];
    for (i, (args, want)) in cases.into_iter().enumerate() {
        let r = s.call(10 + i as i64, args);
        assert_eq!(r["isError"], true, "{want}");
        assert!(text(&r).starts_with(want), "want {want:?}\n got {:?}", text(&r));
    }
    let r = s.request(50, "tools/call", json!({"name": "other", "arguments": {}}))["result"].clone();
    assert!(text(&r).starts_with("unknown_tool"), "{}", text(&r));
}

#[test]
fn limits_from_flags() {
    let mut s = Server::start(&[
        "--program-timeout-ms",
        "50",
        "--max-program-bytes",
        "40",
        "--program-memory-limit-bytes",
        "100000",
    ]);
    let r = s.call(2, json!({"program": "(reduce + (range 10000000))"}));
    let t = text(&r);
    assert!(t.starts_with("timeout") || t.starts_with("memory_exceeded"), "{t}");
    let r = s.call(3, json!({"program": "(vec (range 100000))"}));
    assert!(text(&r).starts_with("memory_exceeded"), "{}", text(&r));
    let r = s.call(4, json!({"program": format!("(+ {})", "1 ".repeat(30))}));
    assert!(text(&r).starts_with("args_error: argument `program` exceeds max_program_bytes"), "{}", text(&r));
}

#[test]
fn structured_profile_returns_structured_content() {
    let mut s = Server::start(&["--response-profile", "structured"]);
    let list = s.request(2, "tools/list", json!({}));
    assert!(list["result"]["tools"][0]["outputSchema"].is_object());
    let r = s.call(
        3,
        json!({"program": "{:a 1}", "output_schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}),
    );
    assert_eq!(r["structuredContent"]["status"], "ok");
    assert_eq!(r["structuredContent"]["result"], "user=> {:a 1}");
    assert_eq!(r["structuredContent"]["validated"], json!({"a": 1}));
}

#[test]
fn concurrency_cap_answers_busy_immediately() {
    // --queue-timeout-ms 0: no queue, the cap alone decides
    let mut s =
        Server::start(&["--max-concurrent-calls", "1", "--program-timeout-ms", "3000", "--queue-timeout-ms", "0"]);
    let long = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(defn f [n] (if (= n 0) 0 (+ (f (dec n)) (f (dec n))))) (f 40)"}}});
    let quick = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "1"}}});
    let mut long_id = 2;
    s.send(&long(long_id));
    let mut id = 100;
    loop {
        id += 1;
        assert!(id < 10_000, "no call was ever refused while the long one ran");
        s.send(&quick(id));
        let refused = loop {
            let v = s.read();
            if v["id"] == json!(long_id) {
                // the long call lost the race for the single slot: start it again
                long_id = id + 100_000;
                s.send(&long(long_id));
            } else if v["id"] == json!(id) {
                break text(&v["result"]).starts_with("busy");
            }
        };
        if refused {
            break;
        }
    }
}

#[test]
fn cancellation_stops_a_running_program() {
    cancellation_stops_a_running_program_with(&[]);
}

#[test]
fn cancellation_stops_a_running_program_on_rmcps_path() {
    // the same through rmcp's handler, which passes the cancellation on while it awaits the run
    cancellation_stops_a_running_program_with(&["--stdio-fast-path", "false"]);
}

fn cancellation_stops_a_running_program_with(extra: &[&str]) {
    // one worker: the next call is `busy` until the cancelled program has really stopped
    let mut args = vec!["--max-concurrent-calls", "1", "--program-timeout-ms", "60000", "--queue-timeout-ms", "0"];
    args.extend_from_slice(extra);
    let mut s = Server::start(&args);
    let long = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(defn f [n] (if (= n 0) 0 (+ (f (dec n)) (f (dec n))))) (f 40)"}}});
    let quick = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(+ 1 2)"}}});
    // start the long call; if it raced a quick call and was refused, start it again
    let mut long_id = 2;
    s.send(&long(long_id));
    let mut id = 100;
    'running: loop {
        id += 1;
        assert!(id < 10_000, "the long call never started");
        s.send(&quick(id));
        loop {
            let v = s.read();
            if v["id"] == json!(long_id) {
                assert!(text(&v["result"]).starts_with("busy"), "long call ended early: {v}");
                long_id = id + 100_000;
                s.send(&long(long_id));
            } else if v["id"] == json!(id) {
                if text(&v["result"]).starts_with("busy") {
                    break 'running;
                }
                break;
            }
        }
    }
    let started = std::time::Instant::now();
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": long_id, "reason": "test"}}));
    loop {
        id += 1;
        let r = s.call(id, json!({"program": "(+ 1 2)"}));
        if text(&r) == "user=> 3" {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "cancelled program kept its worker");
    }
}

#[test]
fn malformed_frames_keep_the_connection() {
    let mut s = Server::start(&[]);
    writeln!(s.stdin, "this is not json").unwrap();
    s.stdin.flush().unwrap();
    let r = s.request(2, "ping", json!({}));
    assert_eq!(r["result"], json!({}));
    let r = s.request(3, "server/discover", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let r = s.request(4, "ping", json!({}));
    assert_eq!(r["result"], json!({}));
}

#[test]
fn stdin_eof_exits_zero() {
    let mut s = Server::start(&[]);
    assert_eq!(end_stdin(&mut s).code(), Some(0));
}

/// Closes the server's stdin (swapped for a pipe end nobody reads) and waits for its exit.
fn end_stdin(s: &mut Server) -> std::process::ExitStatus {
    let mut c = Command::new("true").stdin(Stdio::piped()).spawn().unwrap();
    let unused = c.stdin.take().unwrap();
    let _ = c.wait();
    drop(std::mem::replace(&mut s.stdin, unused));
    s.child.wait().unwrap()
}

/// Programs that recurse deeply, recurse mutually or build deeply nested data end in a
/// clean error, and the same server answers the next call.
#[test]
fn deep_programs_end_cleanly_and_the_server_keeps_serving() {
    let mut s = Server::start(&["--max-recursion-depth", "100000", "--timeout-ms", "20000"]);
    let cases = [
        ("(defn f [n] (if (= n 0) 0 (+ 1 (f (dec n))))) (f 1000)", "user=> 1000"),
        ("(defn f [n] (if (= n 0) 0 (+ 1 (f (dec n))))) (f 1000000)", "recursion_limit_exceeded"),
        (
            "(defn ev? [n] (if (= n 0) true (od? (dec n)))) (defn od? [n] (if (= n 0) false (ev? (dec n)))) (ev? 1000000)",
            "recursion_limit_exceeded",
        ),
        ("(reduce (fn [a _] [a]) [] (range 100000))", "output_too_large"),
        ("(count (str (reduce (fn [a _] {:a a}) {} (range 900))))", "user=> "),
    ];
    for (i, (program, want)) in cases.into_iter().enumerate() {
        let r = s.call(100 + i as i64, json!({"program": program}));
        assert!(text(&r).starts_with(want), "{program}\nwant {want:?}\n got {:?}", text(&r));
        let next = s.call(200 + i as i64, json!({"program": "(+ 1 2)"}));
        assert_eq!(text(&next), "user=> 3", "the server still serves after {program}");
    }
}

/// The shared limit flags reach the MCP server: loop, recursion and tool-call limits too.
#[test]
fn shared_limit_flags_reach_mcp() {
    let mut s = Server::start(&["--max-loop-iterations", "5", "--max-recursion-depth", "10"]);
    let r = s.call(2, json!({"program": "(loop [i 0] (if (< i 10) (recur (inc i)) i))"}));
    assert!(text(&r).starts_with("loop_limit_exceeded"), "{}", text(&r));
    let r = s.call(3, json!({"program": "(defn f [n] (if (= n 0) 0 (+ 1 (f (dec n))))) (f 50)"}));
    assert!(text(&r).starts_with("recursion_limit_exceeded"), "{}", text(&r));
    let list = s.request(4, "tools/list", json!({}));
    let description = list["result"]["tools"][0]["description"].as_str().unwrap().to_string();
    assert!(description.contains("5 recur steps per loop, 10 nested calls"), "{description}");
}

fn call_frame(id: i64, program: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": program}}})
}

/// Every frame gets an answer: malformed JSON, invalid UTF-8, a context nested 200 deep,
/// a frame over --max-frame-bytes, tools/call without params; and the server keeps serving.
#[test]
fn every_bad_frame_gets_a_json_rpc_error() {
    let mut s = Server::start(&["--max-frame-bytes", "4096"]);
    s.send_raw(b"this is not json");
    let r = s.read();
    assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (Value::Null, json!(-32700)), "{r}");
    s.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"x\":\"\xff\xfe\"}");
    let r = s.read();
    assert_eq!(r["error"]["code"], -32700, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("UTF-8"), "{r}");
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let frame = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"lisp_eval","arguments":{{"program":"1","context":{{"x":{deep}}}}}}}}}"#
    );
    s.send_raw(frame.as_bytes());
    let r = s.read();
    assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (json!(3), json!(-32700)), "{r}");
    let big = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "x".repeat(5000)}}});
    s.send(&big);
    let r = s.read();
    assert_eq!(r["error"]["code"], -32700, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("max_frame_bytes"), "{r}");
    let r = s.request(5, "tools/call", Value::Null);
    assert_eq!(r["error"]["code"], -32602, "tools/call without params: {r}");
    s.send(&json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call"}));
    assert_eq!(s.read()["error"]["code"], -32602);
    let r = s.call(7, json!({"program": "(+ 1 2)"}));
    assert_eq!(text(&r), "user=> 3", "the server still serves");
}

/// A request whose id is still running is answered with an error, not silence.
#[test]
fn duplicate_in_flight_id_is_an_error() {
    let mut s = Server::start(&["--timeout-ms", "1500", "--max-loop-iterations", "100000000000"]);
    s.send(&call_frame(9, "(loop [] (recur))"));
    s.send(&call_frame(9, "(+ 1 2)"));
    let first = s.read();
    assert_eq!(first["id"], 9);
    assert_eq!(first["error"]["code"], -32600, "{first}");
    assert!(first["error"]["message"].as_str().unwrap().contains("in flight"), "{first}");
    let second = s.read();
    assert_eq!(second["id"], 9);
    assert!(text(&second["result"]).starts_with("timeout"), "{second}");
    // once answered, the id may be used again
    let r = s.call(9, json!({"program": "(+ 1 2)"}));
    assert_eq!(text(&r), "user=> 3");
}

fn busy_and_timeouts(s: &mut Server, ids: std::ops::Range<i64>) -> (usize, usize) {
    for id in ids.clone() {
        s.send(&call_frame(id, "(loop [] (recur))"));
    }
    let (mut busy, mut timeouts) = (0, 0);
    for _ in ids {
        let t = text(&s.read()["result"]);
        if t.starts_with("busy") {
            assert!(t.contains("queue is full"), "{t}");
            busy += 1;
        } else {
            assert!(t.starts_with("timeout"), "{t}");
            timeouts += 1;
        }
    }
    (busy, timeouts)
}

/// Calls past the concurrency cap wait in a bounded queue: one slot and two queue places
/// take three calls without refusing any; a fourth is refused at once.
#[test]
fn calls_queue_before_busy() {
    let args = [
        "--max-concurrent-calls",
        "1",
        "--max-queued-calls",
        "2",
        "--queue-timeout-ms",
        "30000",
        "--timeout-ms",
        "1000",
        "--max-loop-iterations",
        "100000000000",
    ];
    let mut s = Server::start(&args);
    assert_eq!(busy_and_timeouts(&mut s, 10..13), (0, 3), "N+1 calls all run");
    assert_eq!(busy_and_timeouts(&mut s, 20..24), (1, 3), "one past the queue cap is refused");
}

/// A queued call gives up with `busy` when no slot frees within --queue-timeout-ms.
#[test]
fn queue_wait_is_bounded() {
    let mut s = Server::start(&[
        "--max-concurrent-calls",
        "1",
        "--queue-timeout-ms",
        "100",
        "--timeout-ms",
        "3000",
        "--max-loop-iterations",
        "100000000000",
    ]);
    s.send(&call_frame(2, "(loop [] (recur))"));
    s.send(&call_frame(3, "(loop [] (recur))"));
    let r = s.read();
    let t = text(&r["result"]);
    assert!(t.starts_with("busy") && t.contains("no slot freed within 100 ms"), "{r}");
}

/// The prints of a failing program are kept in the slim result: they are its trail.
#[test]
fn prints_survive_an_error() {
    let mut s = Server::start(&[]);
    let r = s.call(2, json!({"program": "(println \"step 1\") (println \"step 2\") (/ 1 0)"}));
    assert_eq!(r["isError"], true);
    let t = text(&r);
    assert!(t.starts_with("<prints>\nstep 1\nstep 2\n"), "{t}");
    assert!(t.contains("<error>\narithmetic_error: division by zero"), "{t}");
    let many = "(doseq [i (range 100)] (println \"line\" i (apply str (repeat 200 \"x\")))) (fail :boom)";
    let r = s.call(3, json!({"program": many}));
    let t = text(&r);
    assert!(t.contains("[truncated]") && t.len() < 12_000, "prints are bounded: {} bytes", t.len());
}

fn stderr_lines(child: &mut Child) -> std::sync::mpsc::Receiver<String> {
    let err = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in err.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn wait_for_line(rx: &std::sync::mpsc::Receiver<String>, needle: &str) -> String {
    loop {
        let line = rx.recv_timeout(std::time::Duration::from_secs(30)).expect("log line");
        if line.contains(needle) {
            return line;
        }
    }
}

/// One log line per call: method, duration, status and reason at info, never the
/// program or the context; the program only at debug.
#[test]
fn one_log_line_per_call() {
    let mut s = Server::start_logging(&[], "info", Stdio::piped());
    let rx = stderr_lines(&mut s.child);
    s.call(2, json!({"program": "(+ 40 2 data/secret)", "context": {"secret": 1}}));
    let line = wait_for_line(&rx, "tools/call");
    for want in ["duration_ms", "status=\"ok\"", "tool=\"lisp_eval\""] {
        assert!(line.contains(want), "{line}");
    }
    assert!(!line.contains("(+ 40 2") && !line.contains("secret"), "no program text at info: {line}");
    s.call(3, json!({"program": "(/ 1 0)"}));
    let line = wait_for_line(&rx, "tools/call");
    assert!(line.contains("status=\"error\"") && line.contains("reason=\"arithmetic_error\""), "{line}");

    let mut s = Server::start_logging(&[], "debug", Stdio::piped());
    let rx = stderr_lines(&mut s.child);
    s.call(2, json!({"program": "(+ 40 2)", "context": {"token": "hunter2"}}));
    let line = wait_for_line(&rx, "tools/call program");
    assert!(line.contains("(+ 40 2)"), "{line}");
    drop(s);
    let all: Vec<String> = rx.try_iter().collect();
    assert!(!all.iter().any(|l| l.contains("hunter2")), "context data is never logged");
}

/// SIGTERM drains like SIGINT: the running call finishes, then exit code 0.
#[test]
fn sigterm_drains_and_exits_zero() {
    let args = ["--timeout-ms", "700", "--max-loop-iterations", "100000000000"];
    let mut s = Server::start_logging(&args, "debug", Stdio::piped());
    let rx = stderr_lines(&mut s.child);
    s.send(&call_frame(2, "(loop [] (recur))"));
    // the call has its slot once its program is logged (the slot is taken right after)
    wait_for_line(&rx, "tools/call program");
    let pid = s.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let r = s.read();
    assert_eq!(r["id"], 2);
    assert!(text(&r["result"]).starts_with("timeout"), "the running call finished: {r}");
    assert_eq!(s.child.wait().unwrap().code(), Some(0));
}

#[test]
fn result_previews_say_what_they_cut_and_are_configurable() {
    let program = json!({"program": "(vec (range 80))"});
    // the defaults: 50 items, and the tool description says so
    let mut s = Server::start(&[]);
    let tools = s.request(9, "tools/list", json!({}));
    let description = tools["result"]["tools"][0]["description"].as_str().unwrap_or_default().to_string();
    assert!(description.contains("at most 50 items per collection and 250 characters"), "{description}");
    let out = text(&s.call(10, program.clone()));
    assert!(out.contains("49 ..."), "cut after 50 items, marked: {out}");
    assert!(!out.contains(" 50 "), "{out}");
    // raised by flags
    let mut wide = Server::start(&["--max-result-items", "100", "--max-result-chars", "1000"]);
    let out = text(&wide.call(11, program.clone()));
    assert!(out.ends_with("78 79]"), "the whole vector: {out}");
    // the debug profile shows the whole result, whatever the preview limits
    let mut debug = Server::start(&["--response-profile", "debug", "--max-result-items", "5"]);
    let result = debug.call(12, program);
    let structured = &result["structuredContent"];
    assert!(structured["result"].as_str().unwrap_or_default().ends_with("78 79]"), "{structured}");
    assert_eq!(structured["truncated"], json!(false));
}

#[test]
fn result_preview_flags_are_checked() {
    let out = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["mcp", "--max-result-items", "0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-result-items"));
}

/// `ptc mcp --upstreams` (the two-server fixture, from the workspace root) over stdio.
fn start_with_upstreams(fast_path: &str) -> Server {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let child = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .current_dir(root)
        .args(["mcp", "--upstreams", "fixtures/missions/two-servers/upstreams.json", "--stdio-fast-path", fast_path])
        .args(["--log-level", "error"])
        .env_remove("PTC_UPSTREAMS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Server::handshake(child)
}

#[test]
fn upstream_tool_calls_answer_alike_on_the_fast_path_and_through_rmcp() {
    let programs = [
        r#"(tool/call {:server "crm" :tool "find_customers" :args {:region "eu"}})"#,
        r#"(tool/call {:server "billing" :tool "open_invoices" :args {:customer_id "c1"}})"#,
        r#"(tool/call {:server "crm" :tool "nope"})"#,
    ];
    let answers = |fast: &str| {
        let mut s = start_with_upstreams(fast);
        let got: Vec<Value> =
            programs.iter().enumerate().map(|(i, p)| s.call(10 + i as i64, json!({"program": p}))).collect();
        got
    };
    let fast = answers("true");
    assert!(text(&fast[0]).contains("Initech") && !text(&fast[0]).contains("Globex"), "{fast:?}");
    assert!(text(&fast[2]).starts_with("unknown_tool"), "{fast:?}");
    assert_eq!(fast, answers("false"));
}

/// A supervisor that exits closes the log pipe: the server keeps answering on both call
/// paths at the most talkative level, and stdin's end still ends it with exit 0.
#[test]
fn a_closed_stderr_keeps_the_server_answering() {
    for extra in [&[][..], &["--stdio-fast-path", "false"][..]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut args = vec!["--log-level", "debug"];
        args.extend_from_slice(extra);
        let child = Command::new(env!("CARGO_BIN_EXE_ptc"))
            .arg("mcp")
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(writer)
            .spawn()
            .unwrap();
        let mut s = Server::handshake(child);
        for id in 2..6 {
            let r = s.call(id, json!({"program": "(undefined-fn 1)"}));
            assert_eq!(r["isError"], true, "{extra:?}: {r}");
            let ok = s.call(id + 100, json!({"program": "(+ 1 2)"}));
            assert_eq!(text(&ok), "user=> 3", "{extra:?}: {ok}");
        }
        let status = end_stdin(&mut s);
        assert_eq!(status.code(), Some(0), "{extra:?}: {status:?}");
    }
}
