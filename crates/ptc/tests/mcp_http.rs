//! `ptc mcp --http` with the real binary on 127.0.0.1: sessions, calls, health, auth,
//! Host/Origin checks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(extra: &[&str]) -> Server {
    let (child, port, mut err) = spawn_serving(extra);
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    Server { child, port }
}

/// Starts `ptc mcp --http` and reads its log up to the "serving" line: the child, the
/// port and the rest of its log (the caller drains it, or closes it).
fn spawn_serving(extra: &[&str]) -> (Child, u16, BufReader<std::process::ChildStderr>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["mcp", "--http", "127.0.0.1:0", "--log-level", "info"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // the "serving" line names the address really bound (port 0 picks a free one); the
    // socket is bound before it is written
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let port = loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "server exited before serving");
        assert!(!line.contains("WARN"), "no warnings at start: {line}");
        if let Some(rest) = line.split_once("serving MCP over Streamable HTTP at http://127.0.0.1:") {
            break rest.1.split('/').next().unwrap().parse::<u16>().unwrap();
        }
    };
    (child, port, err)
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    /// The JSON-RPC message in a JSON or SSE body.
    fn json(&self) -> Value {
        let text =
            self.body.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).find(|d| d.starts_with('{'));
        serde_json::from_str(text.unwrap_or(self.body.trim())).unwrap_or(Value::Null)
    }
}

fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    // a server that stopped answering fails the test instead of hanging it
    s.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|c| c.parse().ok()).unwrap_or(0);
    let headers =
        lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_string(), v.trim().to_string())).collect();
    // de-chunk when needed
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(body) } else { body.to_string() };
    Reply { status, headers, body }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

const JSON: (&str, &str) = ("Content-Type", "application/json");
const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");

fn initialize(port: u16, auth: Option<&str>) -> String {
    let bearer = auth.map(|t| format!("Bearer {t}"));
    let mut headers = vec![JSON, ACCEPT];
    if let Some(b) = &bearer {
        headers.push(("Authorization", b.as_str()));
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = http(port, "POST", "/mcp", &headers, &body.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"]["serverInfo"]["name"], "ptc");
    let session = r.header("mcp-session-id").expect("session id").to_string();
    let mut h = headers.clone();
    h.push(("Mcp-Session-Id", session.as_str()));
    h.push(("Mcp-Protocol-Version", "2025-11-25"));
    let r =
        http(port, "POST", "/mcp", &h, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    assert!(r.status == 202 || r.status == 200, "{} {}", r.status, r.body);
    session
}

#[test]
fn session_call_and_delete() {
    let s = start(&[]);
    assert_eq!(http(s.port, "GET", "/health", &[], "").status, 200);
    assert_eq!(http(s.port, "GET", "/ready", &[], "").status, 200);
    let session = initialize(s.port, None);
    let h = [JSON, ACCEPT, ("Mcp-Session-Id", session.as_str()), ("Mcp-Protocol-Version", "2025-11-25")];
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(->> data/xs (map inc) (reduce +))", "context": {"xs": [1, 2, 3]}}}});
    let r = http(s.port, "POST", "/mcp", &h, &call.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"]["content"][0]["text"], "user=> 9");
    let list =
        http(s.port, "POST", "/mcp", &h, &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).to_string());
    assert_eq!(list.json()["result"]["tools"][0]["name"], "lisp_eval");
    let del = http(s.port, "DELETE", "/mcp", &h[2..], "");
    assert_eq!(del.status, 200, "clients read 202 as a failed termination");
    let after = http(s.port, "POST", "/mcp", &h, &call.to_string());
    assert_eq!(after.status, 404, "a deleted session is gone: {}", after.body);
}

#[test]
fn dns_rebinding_defence() {
    let s = start(&[]);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).to_string();
    let bad_host = http(s.port, "POST", "/mcp", &[JSON, ACCEPT, ("Host", "evil.example.com")], &body);
    assert_eq!(bad_host.status, 403, "{}", bad_host.body);
    let bad_origin = http(s.port, "POST", "/mcp", &[JSON, ACCEPT, ("Origin", "http://evil.example.com")], &body);
    assert_eq!(bad_origin.status, 403, "{}", bad_origin.body);
    let good_origin =
        http(s.port, "POST", "/mcp", &[JSON, ACCEPT, ("Origin", &format!("http://localhost:{}", s.port))], &body);
    assert_eq!(good_origin.status, 200, "{}", good_origin.body);
}

#[test]
fn bearer_auth_and_rate_limit() {
    let token = "0123456789abcdef0123456789abcdef-token";
    let s = start(&["--http-auth-token", token]);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let missing = http(s.port, "POST", "/mcp", &[JSON, ACCEPT], &body);
    assert_eq!(missing.status, 401);
    assert_eq!(missing.header("www-authenticate"), Some("Bearer"));
    let wrong = http(s.port, "POST", "/mcp", &[JSON, ACCEPT, ("Authorization", "Bearer nope")], &body);
    assert_eq!(wrong.status, 401);
    assert!(wrong.header("www-authenticate").unwrap().contains("invalid_token"));
    assert_eq!(http(s.port, "GET", "/health", &[], "").status, 200, "health needs no token");
    initialize(s.port, Some(token));
    // RFC 9110: the scheme is case-insensitive
    for scheme in ["bearer", "BEARER", "BeArEr"] {
        let value = format!("{scheme} {token}");
        let r = http(s.port, "POST", "/mcp", &[JSON, ACCEPT, ("Authorization", value.as_str())], &body);
        assert_ne!(r.status, 401, "`{scheme}` is the Bearer scheme: {} {}", r.status, r.body);
        assert_ne!(r.status, 429, "`{scheme}` with the right token is no failed attempt");
    }
    for _ in 0..5 {
        http(s.port, "POST", "/mcp", &[JSON, ACCEPT, ("Authorization", "Bearer nope")], &body);
    }
    let limited = http(s.port, "POST", "/mcp", &[JSON, ACCEPT, ("Authorization", "Bearer nope")], &body);
    assert_eq!(limited.status, 429, "wrong guesses from this address are blocked");
    assert!(limited.header("retry-after").is_some());
    // ... but the valid token is never locked out by someone else's guesses
    initialize(s.port, Some(token));
}

#[test]
fn short_tokens_and_open_binds_are_refused() {
    let o = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["mcp", "--http", "127.0.0.1:0", "--http-auth-token", "short"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("at least 32 characters"));
    let o = Command::new(env!("CARGO_BIN_EXE_ptc")).args(["mcp", "--http", "0.0.0.0:0"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("requires --http-auth-token"));
}

/// Over HTTP too, a deep program ends in a clean error and the server keeps serving.
#[test]
fn deep_recursion_over_http_is_a_clean_error() {
    // connection threads (the default) answer tiny programs in place; without them
    // (`0`) every call goes to the pool: the same answers either way
    for threads in [None, Some("0"), Some("1")] {
        let mut args = vec!["--max-recursion-depth", "100000", "--timeout-ms", "20000"];
        args.extend(threads.map(|t| ["--http-conn-threads", t]).into_iter().flatten());
        deep_recursion_is_a_clean_error(&start(&args));
    }
    let o = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["mcp", "--http", "127.0.0.1:0", "--http-conn-threads", "300"])
        .output()
        .expect("ptc runs");
    assert_eq!(o.status.code(), Some(2), "a usage error");
    assert!(String::from_utf8_lossy(&o.stderr).contains("--http-conn-threads must be at most 256"));
}

fn deep_recursion_is_a_clean_error(s: &Server) {
    let session = initialize(s.port, None);
    let h = [JSON, ACCEPT, ("Mcp-Session-Id", session.as_str()), ("Mcp-Protocol-Version", "2025-11-25")];
    let programs = [
        ("(defn f [n] (if (= n 0) 0 (+ 1 (f (dec n))))) (f 1000)", "user=> 1000"),
        ("(defn f [n] (if (= n 0) 0 (+ 1 (f (dec n))))) (f 1000000)", "recursion_limit_exceeded"),
        (
            "(defn ev? [n] (if (= n 0) true (od? (dec n)))) (defn od? [n] (if (= n 0) false (ev? (dec n)))) (ev? 1000000)",
            "recursion_limit_exceeded",
        ),
        ("(reduce (fn [a _] [a]) [] (range 100000))", "output_too_large"),
        ("(+ 1 2)", "user=> 3"),
    ];
    for (i, (program, want)) in programs.into_iter().enumerate() {
        let call = json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": program}}});
        let r = http(s.port, "POST", "/mcp", &h, &call.to_string());
        assert_eq!(r.status, 200, "{}", r.body);
        let text = r.json()["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
        assert!(text.starts_with(want), "{program}: {text}");
    }
    assert_eq!(http(s.port, "GET", "/health", &[], "").status, 200);
}

/// Function values holding 100,000-deep data (issue 22: one such call used to abort the
/// server for every client) end in `output_too_large`, and the server keeps serving.
#[test]
fn deep_values_held_by_functions_over_http_are_clean_errors() {
    // building the values takes a while in a debug build on a loaded machine: the test is
    // about depth, not time
    let s = start(&["--timeout-ms", "20000"]);
    let session = initialize(s.port, None);
    let h = [JSON, ACCEPT, ("Mcp-Session-Id", session.as_str()), ("Mcp-Protocol-Version", "2025-11-25")];
    let d = "(reduce (fn [a _] [a]) [] (range 100000))";
    let programs = [
        format!("(constantly {d})"),
        format!("(let [d {d}] (fn [] d))"),
        format!("(let [d {d}] (memoize (fn [x] d)))"),
        format!("(let [d {d}] (comp (fn [x] d) inc))"),
        format!("(let [d {d}] (juxt (fn [x] d)))"),
        format!("(partial conj {d})"),
        format!("(fail (constantly {d}))"),
        format!("(reduced {d})"),
        "(reduce (fn [f _] (constantly f)) nil (range 100000))".to_string(),
        format!("(def f (constantly {d})) 1"),
    ];
    for (i, program) in programs.iter().enumerate() {
        let call = json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": program}}});
        let r = http(s.port, "POST", "/mcp", &h, &call.to_string());
        assert_eq!(r.status, 200, "{}", r.body);
        let text = r.json()["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
        assert!(text.starts_with("output_too_large"), "{program}: {text}");
        assert_eq!(http(s.port, "GET", "/health", &[], "").status, 200);
    }
    let call = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(+ 1 2)"}}});
    let r = http(s.port, "POST", "/mcp", &h, &call.to_string());
    assert_eq!(r.json()["result"]["content"][0]["text"], "user=> 3");
}

fn post(port: u16, session: Option<&str>, body: &str) -> Reply {
    let mut h = vec![JSON, ACCEPT];
    if let Some(sid) = session {
        h.push(("Mcp-Session-Id", sid));
        h.push(("Mcp-Protocol-Version", "2025-11-25"));
    }
    http(port, "POST", "/mcp", &h, body)
}

/// A body that is not a JSON-RPC message gets a JSON-RPC error, not plain text.
#[test]
fn malformed_bodies_get_json_rpc_errors() {
    let s = start(&["--max-frame-bytes", "4096"]);
    let session = initialize(s.port, None);
    let r = post(s.port, Some(&session), "{not json");
    assert_eq!(r.status, 400);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["error"]["code"], -32700, "{}", r.body);
    let r = post(s.port, Some(&session), &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call"}).to_string());
    assert_eq!(r.json()["error"]["code"], -32602, "{}", r.body);
    assert_eq!(r.json()["id"], 5);
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let r = post(
        s.port,
        Some(&session),
        &format!(
            r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"lisp_eval","arguments":{{"program":"1","context":{{"x":{deep}}}}}}}}}"#
        ),
    );
    assert_eq!((r.json()["id"].clone(), r.json()["error"]["code"].clone()), (json!(6), json!(-32700)), "{}", r.body);
    let r = post(s.port, Some(&session), &"x".repeat(5000));
    assert_eq!(r.status, 413);
    assert_eq!(r.json()["error"]["code"], -32700, "{}", r.body);
}

/// Allowed origins are matched with their port; no warnings at start (checked by `start`).
#[test]
fn origins_match_with_their_port() {
    let s = start(&["--http-allowed-origins", "http://app.example"]);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).to_string();
    let with = |origin: &str| http(s.port, "POST", "/mcp", &[JSON, ACCEPT, ("Origin", origin)], &body).status;
    assert_eq!(with(&format!("http://localhost:{}", s.port)), 200);
    assert_eq!(with("http://localhost:1"), 403, "another local port is another origin");
    assert_eq!(with("http://localhost"), 403);
    assert_eq!(with("http://app.example"), 200);
    assert_eq!(with("http://app.example:80"), 200);
    assert_eq!(with("http://app.example:8080"), 403);
}

/// An address in use is one clear sentence and exit code 2.
#[test]
fn address_in_use_is_one_sentence() {
    let s = start(&[]);
    let o = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["mcp", "--http", &format!("127.0.0.1:{}", s.port)])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(&format!("cannot listen on 127.0.0.1:{}: the address is already in use", s.port)), "{err}");
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Sessions are capped per owner and in total; the least recently used is evicted, and
/// memory stays bounded however many sessions clients open.
#[test]
fn sessions_are_capped_with_eviction() {
    let s = start(&["--http-max-sessions-per-owner", "2"]);
    let a = initialize(s.port, None);
    let b = initialize(s.port, None);
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}).to_string();
    assert_eq!(post(s.port, Some(&a), &ping).status, 200, "a is used, so b is the oldest");
    let c = initialize(s.port, None);
    assert_eq!(post(s.port, Some(&b), &ping).status, 404, "b was evicted");
    assert_eq!(post(s.port, Some(&a), &ping).status, 200);
    assert_eq!(post(s.port, Some(&c), &ping).status, 200);

    let s = start(&["--http-max-sessions", "16"]);
    let first = initialize(s.port, None);
    let before = rss_kib(s.child.id());
    let mut last = String::new();
    for _ in 0..400 {
        last = initialize(s.port, None);
    }
    let after = rss_kib(s.child.id());
    assert_eq!(post(s.port, Some(&first), &ping).status, 404, "the oldest session was evicted");
    assert_eq!(post(s.port, Some(&last), &ping).status, 200);
    assert!(after < before + 64 * 1024, "RSS grew from {before} KiB to {after} KiB over 400 sessions");
}

fn read_all_with_deadline(stream: &mut TcpStream, secs: u64) -> (String, std::time::Duration) {
    let started = std::time::Instant::now();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(secs))).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    (String::from_utf8_lossy(&raw).to_string(), started.elapsed())
}

/// Slow clients: headers and bodies that trickle in are cut off at their deadlines.
#[test]
fn slow_clients_are_cut_off() {
    let s = start(&["--http-header-timeout-ms", "300", "--http-body-timeout-ms", "300"]);
    let mut slow_head = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    slow_head.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
    let (_, took) = read_all_with_deadline(&mut slow_head, 20);
    assert!(took < std::time::Duration::from_secs(10), "the connection was closed after {took:?}");

    let mut slow_body = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{{\"jsonrpc\"",
        s.port
    );
    slow_body.write_all(head.as_bytes()).unwrap();
    let (reply, took) = read_all_with_deadline(&mut slow_body, 20);
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    assert!(reply.contains("-32700"), "{reply}");
    assert!(took < std::time::Duration::from_secs(10));
    assert_eq!(http(s.port, "GET", "/health", &[], "").status, 200, "the server still serves");
}

/// SIGTERM drains and exits 0, as SIGINT does: the running call still gets its answer.
#[test]
fn sigterm_drains_and_exits_zero() {
    let mut s = start(&[
        "--timeout-ms",
        "1000",
        "--max-loop-iterations",
        "100000000000",
        "--max-concurrent-calls",
        "1",
        "--queue-timeout-ms",
        "0",
    ]);
    let session = initialize(s.port, None);
    let call = |id: i64, program: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": program}}})
            .to_string()
    };
    let (port, sid, long) = (s.port, session.clone(), call(5, "(loop [] (recur))"));
    let running = std::thread::spawn(move || {
        loop {
            let r = post(port, Some(&sid), &long);
            if !r.json()["result"]["content"][0]["text"].as_str().unwrap_or_default().starts_with("busy") {
                return r;
            }
        }
    });
    // the long call runs once a probe with another id is refused for want of a slot
    while !post(s.port, Some(&session), &call(6, "1")).json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .starts_with("busy")
    {}
    let pid = s.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let long = running.join().unwrap();
    let text = long.json()["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
    assert!(text.starts_with("timeout"), "the running call was answered: {}", long.body);
    assert_eq!(s.child.wait().unwrap().code(), Some(0));
}

/// The server keeps serving, and SIGTERM still ends it, once nobody reads its log: whoever
/// started it went away and its stderr pipe is closed (every log line fails to write).
#[test]
fn a_closed_stderr_neither_stops_answers_nor_sigterm() {
    let (mut child, port, err) = spawn_serving(&[]);
    drop(err);
    // killed if the test fails before the server exits
    struct KillOnDrop(String);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = Command::new("kill").args(["-KILL", &self.0]).stderr(Stdio::null()).status();
        }
    }
    let _guard = KillOnDrop(child.id().to_string());
    let session = initialize(port, None);
    for id in 0..20 {
        let body = json!({"jsonrpc": "2.0", "id": id + 10, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(+ 1 2)"}}});
        let r = post(port, Some(&session), &body.to_string());
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.json()["result"]["content"][0]["text"].as_str().unwrap_or_default().contains('3'), "{}", r.body);
    }
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait().map(|s| s.code())));
    let Ok(code) = rx.recv_timeout(std::time::Duration::from_secs(30)) else {
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
        panic!("ptc mcp --http still running 30 s after SIGTERM with its stderr closed");
    };
    assert_eq!(code.unwrap(), Some(0));
}

/// Within a session, a request reusing the id of one still running gets an error, and
/// the running one still gets its answer (rmcp routes answers by id).
#[test]
fn duplicate_in_flight_id_over_http() {
    // one slot and no queue: a probe with another id is `busy` exactly while the long call runs
    let s = start(&[
        "--timeout-ms",
        "1500",
        "--max-loop-iterations",
        "100000000000",
        "--max-concurrent-calls",
        "1",
        "--queue-timeout-ms",
        "0",
    ]);
    let session = initialize(s.port, None);
    let call = |id: i64, program: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": program}}})
            .to_string()
    };
    let (port, sid, long) = (s.port, session.clone(), call(5, "(loop [] (recur))"));
    // the long call may lose the slot to a probe: then it is sent again
    let running = std::thread::spawn(move || {
        loop {
            let r = post(port, Some(&sid), &long);
            if !r.json()["result"]["content"][0]["text"].as_str().unwrap_or_default().starts_with("busy") {
                return r;
            }
        }
    });
    let started = std::time::Instant::now();
    loop {
        let probe = post(s.port, Some(&session), &call(6, "(+ 1 2)"));
        let text = probe.json()["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
        if text.starts_with("busy") {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "the long call never ran");
    }
    let dup = post(s.port, Some(&session), &call(5, "(+ 1 2)"));
    assert_eq!(dup.status, 400, "{}", dup.body);
    assert_eq!(dup.json()["error"]["code"], -32600, "{}", dup.body);
    assert_eq!(dup.json()["id"], 5);
    let long = running.join().unwrap();
    assert_eq!(long.status, 200);
    assert!(long.json()["result"]["content"][0]["text"].as_str().unwrap().starts_with("timeout"), "{}", long.body);
    let again = post(s.port, Some(&session), &call(5, "(+ 1 2)"));
    assert_eq!(again.json()["result"]["content"][0]["text"], "user=> 3", "the id is free again");
}

/// The result-preview flags act over HTTP as over stdio: the tool description states the
/// limits, a raised limit shows the whole result, the debug profile ignores them.
#[test]
fn result_preview_flags_over_http() {
    let call = |port: u16, session: &str, id: i64| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(vec (range 80))"}}});
        let r = post(port, Some(session), &body.to_string());
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()["result"].clone()
    };
    let narrow = start(&["--max-result-items", "10", "--max-result-chars", "200"]);
    let session = initialize(narrow.port, None);
    let tools =
        post(narrow.port, Some(&session), &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string());
    let description = tools.json()["result"]["tools"][0]["description"].as_str().unwrap_or_default().to_string();
    assert!(description.contains("at most 10 items per collection and 200 characters"), "{description}");
    let out = call(narrow.port, &session, 3)["content"][0]["text"].as_str().unwrap_or_default().to_string();
    assert!(out.contains("9 ...") && !out.contains(" 10 "), "cut after 10 items, marked: {out}");

    let wide = start(&["--max-result-items", "100", "--max-result-chars", "1000"]);
    let session = initialize(wide.port, None);
    let out = call(wide.port, &session, 3)["content"][0]["text"].as_str().unwrap_or_default().to_string();
    assert!(out.ends_with("78 79]"), "the whole vector: {out}");

    let debug = start(&["--response-profile", "debug", "--max-result-items", "5"]);
    let session = initialize(debug.port, None);
    let result = call(debug.port, &session, 3);
    let structured = &result["structuredContent"];
    assert!(structured["result"].as_str().unwrap_or_default().ends_with("78 79]"), "{structured}");
    assert_eq!(structured["truncated"], json!(false));
}

/// `--http-fast-path` reaches the server: the fast path numbers its event streams from
/// 2^63 (rmcp's path from 0), and both answer the same call alike.
#[test]
fn http_fast_path_flag_picks_the_path() {
    let stream_number = |r: &Reply| -> u64 {
        let id = r.body.lines().rev().find_map(|l| l.strip_prefix("id: ")).unwrap_or("");
        id.split_once('/').and_then(|(_, n)| n.parse().ok()).unwrap_or(0)
    };
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(+ 1 2)"}}}).to_string();
    let mut texts = Vec::new();
    for (flag, fast) in [(None, true), (Some("true"), true), (Some("false"), false)] {
        let args: Vec<&str> = flag.map(|f| vec!["--http-fast-path", f]).unwrap_or_default();
        let s = start(&args);
        let session = initialize(s.port, None);
        let r = post(s.port, Some(&session), &call);
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(stream_number(&r) >= 1 << 63, fast, "{flag:?}: {}", r.body);
        texts.push(r.json()["result"].clone());
    }
    assert_eq!(texts[0]["content"][0]["text"], "user=> 3");
    assert!(texts.iter().all(|t| *t == texts[0]), "{texts:?}");
}
