//! A large JSON `context` costs a small multiple of its size, is charged against the
//! program's memory limit, and the memory comes back: over `ptc mcp` stdio and HTTP
//! (one call and eight at once), `ptc eval --context`, `ptc eval --jsonl` and `ptc run
//! --context`. Peak RSS is read from /proc while each process is still alive.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// `VmHWM` (peak) and `VmRSS` (now) of a live process, kB.
fn rss_kb(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Waits (at most ten seconds) until the resident size of `pid` is under `limit_kb`: the
/// server gives freed memory back once it is idle, just after answering. The last size.
fn settles_below(pid: u32, limit_kb: u64) -> u64 {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (_, now) = rss_kb(pid);
        if now < limit_kb || std::time::Instant::now() > until {
            return now;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// About 4 MB of JSON text: 500,000 one-key objects, the shape that cost the old server
/// 1.2 GB per call (serde trees of one B-tree node per object, several at once).
fn objects_context() -> String {
    format!("{{\"xs\":[{}]}}", vec![r#"{"a":1}"#; 500_000].join(","))
}

const MIB: u64 = 1024;

/// A `lisp_eval` call frame carrying `context` as raw JSON text.
fn call_frame(id: i64, program: &str, context: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"lisp_eval","arguments":{{"program":{},"context":{context}}}}}}}"#,
        json!(program)
    )
}

struct Stdio_ {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Drop for Stdio_ {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Stdio_ {
    fn start(extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ptc"))
            .args(["mcp", "--log-level", "error", "--max-concurrent-calls", "8"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Stdio_ { child, stdin, stdout };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        s.send(&init.to_string());
        s.answer();
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
        s
    }
    fn send(&mut self, frame: &str) {
        writeln!(self.stdin, "{frame}").unwrap();
        self.stdin.flush().unwrap();
    }
    fn answer(&mut self) -> Value {
        let mut line = String::new();
        assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the server closed its output");
        serde_json::from_str(&line).unwrap()
    }
}

fn text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_large_context_over_stdio_is_charged_bounded_and_given_back() {
    let context = objects_context();
    // the default 64 MiB limit: the context alone is over it, refused while loading
    let mut s = Stdio_::start(&[]);
    let (idle, _) = rss_kb(s.child.id());
    s.send(&call_frame(1, "(count data/xs)", &context));
    let refused = s.answer();
    let t = text(&refused);
    assert!(t.starts_with("args_error"), "{t}");
    assert!(t.contains("max_heap_bytes"), "{t}");
    let (peak, _) = rss_kb(s.child.id());
    assert!(peak < idle + 120 * MIB, "refusing a 4 MB context peaked at {peak} kB (idle {idle} kB)");
    s.send(&call_frame(2, "(+ 1 2)", "{}"));
    assert_eq!(text(&s.answer()), "user=> 3");

    // room for it: it runs, and a program that builds more is told the context's share
    let mut s = Stdio_::start(&["--max-heap-bytes", "200000000", "--timeout-ms", "20000"]);
    let (idle, _) = rss_kb(s.child.id());
    s.send(&call_frame(1, "(count data/xs)", &context));
    assert_eq!(text(&s.answer()), "user=> 500000");
    let (one, _) = rss_kb(s.child.id());
    assert!(one < idle + 250 * MIB, "one 4 MB context peaked at {one} kB (idle {idle} kB)");
    s.send(&call_frame(2, "(count (vec (range 10000000)))", &context));
    let t = text(&s.answer());
    assert!(t.starts_with("memory_exceeded") && t.contains("the context took"), "{t}");

    // eight at once: each loads only once it has its slot, each within its limit
    for id in 10..18 {
        s.send(&call_frame(id, "(count data/xs)", &context));
    }
    for _ in 10..18 {
        assert_eq!(text(&s.answer()), "user=> 500000");
    }
    let (eight, _) = rss_kb(s.child.id());
    assert!(eight < idle + 1100 * MIB, "eight calls peaked at {eight} kB (idle {idle} kB)");
    // the memory comes back once the calls are over (it stayed at the peak before)
    let after = settles_below(s.child.id(), idle + 100 * MIB);
    assert!(after < idle + 100 * MIB, "after the calls RSS is {after} kB (idle {idle} kB, peak {eight} kB)");
}

#[test]
fn a_large_context_over_http_is_charged_and_bounded() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["mcp", "--http", "127.0.0.1:0", "--log-level", "info", "--max-heap-bytes", "200000000"])
        .args(["--timeout-ms", "20000"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let port = loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "server exited before serving");
        if let Some(rest) = line.split_once("at http://127.0.0.1:") {
            break rest.1.split('/').next().unwrap().parse::<u16>().unwrap();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let pid = child.id();
    let post = |headers: &[(&str, &str)], body: &str| -> (String, String) {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut req = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).unwrap();
        s.write_all(body.as_bytes()).unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
        (head.to_string(), body.to_string())
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (head, _) = post(&[], &init.to_string());
    let session = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id")))
        .map(|(_, v)| v.trim().to_string())
        .expect("a session id");
    let h = [("Mcp-Session-Id", session.as_str()), ("Mcp-Protocol-Version", "2025-11-25")];
    post(&h, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    let (idle, _) = rss_kb(pid);
    let context = objects_context();
    let (_, body) = post(&h, &call_frame(2, "(count data/xs)", &context));
    assert!(body.contains("user=> 500000"), "{body:.300}");
    let (peak, _) = rss_kb(pid);
    assert!(peak < idle + 250 * MIB, "a 4 MB context over HTTP peaked at {peak} kB (idle {idle} kB)");
    let after = settles_below(pid, idle + 60 * MIB);
    assert!(after < idle + 60 * MIB, "after the call RSS is {after} kB (idle {idle} kB)");
    let _ = child.kill();
    let _ = child.wait();
}

/// `ptc eval --jsonl`, with a base context from a file (loaded as `ptc eval --context`
/// loads it) and a large `ctx` per line; the process lives on between lines, so its peak
/// can be read.
#[test]
fn large_contexts_over_eval_context_and_jsonl_are_charged_and_bounded() {
    let dir = std::env::temp_dir().join(format!("ptc-context-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ctx.json");
    let context = objects_context();
    std::fs::write(&file, &context).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["eval", "--jsonl", "--context"])
        .arg(&file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |line: &str| -> Value {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut out = String::new();
        stdout.read_line(&mut out).unwrap();
        serde_json::from_str(&out).unwrap()
    };
    assert_eq!(ask(r#""(count data/xs)""#)["result"], "500000");
    let (with_file, _) = rss_kb(pid);
    assert!(with_file < 150 * MIB, "--context of 4 MB peaked at {with_file} kB");
    let line = format!(r#"{{"src": "(count data/ys)", "ctx": {{"ys": {}}}}}"#, &context[6..context.len() - 1]);
    assert_eq!(ask(&line)["result"], "500000");
    let (with_line, _) = rss_kb(pid);
    assert!(with_line < with_file + 150 * MIB, "a 4 MB ctx line peaked at {with_line} kB");
    let _ = child.kill();
    let _ = child.wait();

    // the line's ctx is charged against --max-context-bytes
    let mut child = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["eval", "--jsonl", "--max-context-bytes", "1000000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{line}").unwrap();
    drop(stdin);
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let _ = child.wait();
    let env: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(env["reason"], "usage_error", "{env}");
    assert!(env["message"].as_str().unwrap().contains("--max-context-bytes"), "{env}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The context's path must name each key once: which of two contexts would win is up to
/// the parser, so the call is refused (-32602) and its id is free for the next request.
#[test]
fn a_context_given_twice_is_invalid_params_and_the_id_stays_usable() {
    let mut s = Stdio_::start(&[]);
    s.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"lisp_eval","arguments":{"program":"data/a","context":{"a":1},"context":{"a":2}}}}"#);
    let r = s.answer();
    assert_eq!(r["id"], 5);
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("\"context\" appears twice"), "{r}");
    s.send(&call_frame(5, "data/a", r#"{"a": 3}"#));
    assert_eq!(text(&s.answer()), "user=> 3");
}

/// `ptc run --context`: the file is loaded straight into values, as `ptc eval` does (a
/// JSON tree of these 500,000 objects, and a copy of it, made the run peak at 849 MB).
#[test]
fn a_large_context_over_run_is_loaded_as_values_and_bounded() {
    let dir = common::cli::scratch();
    let file = common::cli::write(&dir, "ctx.json", &objects_context());
    let llm = format!("script:{}", common::cli::script(&dir, &["(def n (count data/xs))", "(return n)"]));
    let mut child = common::cli::command()
        .args(["run", "--prompt", "Count the xs", "--llm", &llm, "--context", &file, "--output", "json"])
        .env_remove("PTC_LLM_CONFIG")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        peak = peak.max(common::rss::peak_rss_kb(child.id()).unwrap_or(0));
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let step: Value = serde_json::from_str(reader.join().unwrap().trim()).unwrap();
    assert_eq!(step["return"], 500_000, "{step:.500}");
    assert!(peak < 150 * MIB, "ptc run with a 4 MB --context peaked at {peak} kB");
    let _ = std::fs::remove_dir_all(dir);
}
