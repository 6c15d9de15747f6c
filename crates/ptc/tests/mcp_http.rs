//! `ptc mcp --http` with the real binary on 127.0.0.1: sessions, calls, health, auth,
//! Host/Origin checks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
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
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["mcp", "--http", &format!("127.0.0.1:{port}"), "--log-level", "info"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // wait for the "serving" log line: the socket is bound before it is written
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "server exited before serving");
        if line.contains("serving MCP over Streamable HTTP") {
            break;
        }
    }
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    Server { child, port }
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
    assert!(del.status == 200 || del.status == 202 || del.status == 204, "{}", del.status);
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
    for _ in 0..5 {
        http(s.port, "POST", "/mcp", &[JSON, ACCEPT, ("Authorization", "Bearer nope")], &body);
    }
    let limited =
        http(s.port, "POST", "/mcp", &[JSON, ACCEPT, ("Authorization", format!("Bearer {token}").as_str())], &body);
    assert_eq!(limited.status, 429);
    assert!(limited.header("retry-after").is_some());
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
    let s = start(&["--max-recursion-depth", "100000", "--timeout-ms", "20000"]);
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
