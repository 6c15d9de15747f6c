//! The HTTP fast path against rmcp's path: the same status, headers and events for the
//! same requests, and the behaviours a fast-path call must keep (cancellation, `busy`,
//! ids in flight, sessions, headers rmcp refuses).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use ptc_lisp_eval::{FnHost, Host, Value};
use serde_json::{Value as Json, json};
use tokio_util::sync::CancellationToken;

use super::serve_listener;
use crate::config::{McpConfig, ResponseProfile};
use crate::http_fast::FastHttp;
use crate::server::{PtcServer, ToolBackend};
use crate::test_support::{inline_cases, without_durations};

struct Echo;

impl ToolBackend for Echo {
    fn host(&self) -> Arc<dyn Host> {
        Arc::new(FnHost::new().with_tool("echo", |args: Value| Ok(args)))
    }
}

/// `ptc mcp --http` on 127.0.0.1, its runtime on a thread of its own.
struct Server {
    port: u16,
    fast: Arc<FastHttp>,
    stop: CancellationToken,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start(config: McpConfig) -> Server {
        let probe = Arc::new(OnceLock::new());
        let stop = CancellationToken::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let (p, s) = (probe.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let runtime =
                tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
                let port = listener.local_addr().expect("an address").port();
                let server = PtcServer::new(config.clone(), Arc::new(Echo));
                let serving = serve_listener(server, &config, listener, s, Some(p));
                let _ = tx.send(port);
                serving.await.expect("serves");
            });
        });
        let port = rx.recv().expect("the server's port");
        // the probe is set before the first connection is accepted
        let fast = loop {
            if let Some(f) = probe.get() {
                break f.clone();
            }
            std::thread::yield_now();
        };
        Server { port, fast, stop, thread: Some(thread) }
    }

    fn connect(&self) -> Conn {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Conn { port: self.port, stream: BufReader::new(stream) }
    }

    fn taken(&self) -> u64 {
        self.fast.taken()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One HTTP/1.1 response: status line, headers in order (names lowercased), the body's
/// chunks (or the whole body when it has a length).
#[derive(Debug, Clone, PartialEq)]
struct Reply {
    status: String,
    headers: Vec<(String, String)>,
    chunks: Vec<String>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        self.chunks.concat()
    }

    /// The JSON-RPC message of the last event.
    fn message(&self) -> Json {
        let text = self.text();
        let data = text.lines().filter_map(|l| l.strip_prefix("data: ")).rfind(|d| !d.is_empty());
        data.and_then(|d| serde_json::from_str(d).ok())
            .or_else(|| serde_json::from_str(&text).ok())
            .unwrap_or(Json::Null)
    }

    /// Without what differs between two servers: the date, the session id, the number of
    /// the event stream, durations.
    fn normalised(&self) -> Reply {
        let mut r = self.clone();
        r.headers.retain(|(k, _)| k != "date");
        for (k, v) in &mut r.headers {
            if k == "mcp-session-id" {
                *v = "SID".into();
            }
        }
        r.chunks = r.chunks.iter().map(|c| without_durations(&without_stream_numbers(c))).collect();
        r
    }
}

/// `id: 1/9223372036854775808` → `id: 1/N`.
fn without_stream_numbers(chunk: &str) -> String {
    chunk
        .split('\n')
        .map(|line| match line.strip_prefix("id: ").and_then(|id| id.split_once('/')) {
            Some((index, _)) => format!("id: {index}/N"),
            None => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One keep-alive connection.
struct Conn {
    port: u16,
    stream: BufReader<TcpStream>,
}

impl Conn {
    fn send(&mut self, session: Option<&str>, extra: &[(&str, &str)], body: &str) {
        let mut req = format!("POST /mcp HTTP/1.1\r\nContent-Length: {}\r\n", body.len());
        let mut names: Vec<String> = Vec::new();
        for (k, v) in extra {
            names.push(k.to_ascii_lowercase());
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        let defaults = [
            ("host", format!("127.0.0.1:{}", self.port)),
            ("content-type", "application/json".to_string()),
            ("accept", "application/json, text/event-stream".to_string()),
            ("mcp-protocol-version", "2025-11-25".to_string()),
        ];
        for (k, v) in defaults {
            if !names.iter().any(|n| n == k) {
                req.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        if let Some(sid) = session {
            req.push_str(&format!("mcp-session-id: {sid}\r\n"));
        }
        req.push_str("\r\n");
        req.push_str(body);
        self.stream.get_mut().write_all(req.as_bytes()).expect("send a request");
    }

    fn head(&mut self) -> (String, Vec<(String, String)>) {
        let mut status = String::new();
        self.stream.read_line(&mut status).expect("a status line");
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            self.stream.read_line(&mut line).expect("a header line");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (k, v) = line.split_once(':').expect("a header");
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        (status.trim_end().to_string(), headers)
    }

    /// The next chunk of a chunked body (`None` at its end).
    fn chunk(&mut self) -> Option<String> {
        let mut size = String::new();
        self.stream.read_line(&mut size).expect("a chunk size");
        let size = usize::from_str_radix(size.trim(), 16).expect("a hex chunk size");
        let mut chunk = vec![0; size + 2];
        self.stream.read_exact(&mut chunk).expect("a chunk");
        chunk.truncate(size);
        (size > 0).then(|| String::from_utf8_lossy(&chunk).into_owned())
    }

    fn reply(&mut self) -> Reply {
        let (status, headers) = self.head();
        self.body(status, headers, Vec::new())
    }

    /// The rest of a response whose head (and first `chunks`) were read.
    fn body(&mut self, status: String, headers: Vec<(String, String)>, mut chunks: Vec<String>) -> Reply {
        let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
        if chunked {
            while let Some(c) = self.chunk() {
                chunks.push(c);
            }
        } else {
            let len =
                headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
            let mut body = vec![0; len];
            self.stream.read_exact(&mut body).expect("a body");
            chunks.push(String::from_utf8_lossy(&body).into_owned());
        }
        Reply { status, headers, chunks }
    }

    fn post(&mut self, session: Option<&str>, extra: &[(&str, &str)], body: &Json) -> Reply {
        self.send(session, extra, &body.to_string());
        self.reply()
    }

    /// `initialize` (on `version`) and `notifications/initialized`: the session's id.
    fn open(&mut self, version: &str) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
        let r = self.post(None, &[("mcp-protocol-version", version)], &init);
        let sid = r.header("mcp-session-id").expect("a session id").to_string();
        let r = self.post(Some(&sid), &[], &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert!(r.status.contains("202"), "{r:?}");
        sid
    }
}

fn config(fast: bool, profile: ResponseProfile) -> McpConfig {
    let mut c = McpConfig { http_fast_path: fast, response_profile: profile, ..McpConfig::default() };
    c.limits.max_loop_iterations = 1_000;
    c.limits.max_heap_bytes = 200_000;
    c.limits.max_program_bytes = 2_000;
    c
}

fn eval(id: Json, arguments: Json) -> Json {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": arguments}})
}

/// Which session a step names.
#[derive(Clone, Copy)]
enum Sid {
    Open,
    Unknown,
    Without,
}

/// Requests the fast path takes (the first 13), then ones it leaves to rmcp.
/// A request: its session, headers over the defaults, body.
type Step = (Sid, Vec<(&'static str, &'static str)>, Json);

fn steps() -> Vec<Step> {
    let long_program = format!("(str {})", "\"x\" ".repeat(600));
    let plain = |id: Json, args: Json| (Sid::Open, vec![], eval(id, args));
    vec![
        plain(json!(1), json!({"program": "(+ 1 2)"})),
        plain(json!(2), json!({"program": "(count data/xs)", "context": {"xs": [1, 2, 3]}})),
        plain(json!(3), json!({"program": "(/ 1 0)"})),
        plain(json!(4), json!({"program": "(loop [i 0] (recur (inc i)))"})),
        plain(json!(5), json!({"program": "(tool/echo {:a 1})"})),
        plain(json!(6), json!({"program": "\"text\"", "output_schema": {"type": "integer"}})),
        plain(json!(7), json!({"program": "(println \"hi\") (count (vec (range 100000)))"})),
        plain(json!(8), json!({})),
        plain(json!(9), json!({"program": long_program})),
        plain(json!(10), json!({"program": "1", "signature": "x"})),
        plain(json!("s-11"), json!({"program": "{:a [1 2.5 nil]}"})),
        (Sid::Open, vec![("mcp-protocol-version", "2025-03-26")], eval(json!(12), json!({"program": "(+ 1 2)"}))),
        (Sid::Open, vec![("origin", "http://localhost:PORT")], eval(json!(13), json!({"program": "(+ 1 2)"}))),
        // rmcp's: a `_meta`, another tool, arguments that are no object, other methods
        (
            Sid::Open,
            vec![],
            json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(+ 1 2)"}, "_meta": {"progressToken": 7}}}),
        ),
        (
            Sid::Open,
            vec![],
            json!({"jsonrpc": "2.0", "id": 21, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}),
        ),
        (
            Sid::Open,
            vec![],
            json!({"jsonrpc": "2.0", "id": 22, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": [1]}}),
        ),
        (Sid::Open, vec![], json!({"jsonrpc": "2.0", "id": 23, "method": "tools/list"})),
        (Sid::Open, vec![], json!({"jsonrpc": "2.0", "id": 24, "method": "ping"})),
        // headers rmcp refuses or judges itself
        (Sid::Unknown, vec![], eval(json!(30), json!({"program": "(+ 1 2)"}))),
        (Sid::Without, vec![], eval(json!(31), json!({"program": "(+ 1 2)"}))),
        (Sid::Open, vec![("host", "evil.example")], eval(json!(32), json!({"program": "(+ 1 2)"}))),
        (Sid::Open, vec![("origin", "http://evil.example")], eval(json!(33), json!({"program": "(+ 1 2)"}))),
        (Sid::Open, vec![("accept", "application/json")], eval(json!(34), json!({"program": "(+ 1 2)"}))),
        (
            Sid::Open,
            vec![("accept", "application/json;q=0, text/event-stream")],
            eval(json!(35), json!({"program": "1"})),
        ),
        (Sid::Open, vec![("content-type", "text/plain")], eval(json!(36), json!({"program": "(+ 1 2)"}))),
        (Sid::Open, vec![("mcp-protocol-version", "1999-01-01")], eval(json!(37), json!({"program": "(+ 1 2)"}))),
        (Sid::Open, vec![("mcp-protocol-version", "2026-07-28")], eval(json!(38), json!({"program": "(+ 1 2)"}))),
    ]
}

/// Every step's reply, normalised, and how many calls took the fast path.
fn transcript(fast: bool, profile: ResponseProfile, version: &str) -> (Vec<Reply>, u64) {
    let server = Server::start(config(fast, profile));
    let mut conn = server.connect();
    let sid = conn.open(version);
    let origin = format!("http://localhost:{}", server.port);
    let mut replies = Vec::new();
    for (which, extra, body) in steps() {
        let extra: Vec<(&str, &str)> =
            extra.iter().map(|(k, v)| (*k, if *v == "http://localhost:PORT" { origin.as_str() } else { *v })).collect();
        let session = match which {
            Sid::Open => Some(sid.as_str()),
            Sid::Unknown => Some("not-a-session"),
            Sid::Without => None,
        };
        // rmcp closes a connection after some refusals: one connection per step
        let mut c = server.connect();
        replies.push(c.post(session, &extra, &body).normalised());
    }
    drop(conn);
    (replies, server.taken())
}

#[test]
fn the_fast_path_answers_as_rmcp_does() {
    for (profile, version) in [
        (ResponseProfile::Slim, "2025-11-25"),
        (ResponseProfile::Structured, "2025-06-18"),
        (ResponseProfile::Debug, "2024-11-05"),
    ] {
        let (fast, taken) = transcript(true, profile, version);
        let (slow, not_taken) = transcript(false, profile, version);
        assert_eq!(not_taken, 0, "the fast path was off");
        assert_eq!(taken, 13, "the first 13 steps take the fast path ({profile:?})");
        assert_eq!(fast.len(), slow.len());
        for (i, (f, s)) in fast.iter().zip(&slow).enumerate() {
            assert_eq!(f, s, "step {i} ({profile:?}, {version})");
        }
    }
}

#[test]
fn fast_path_answers_are_the_programs() {
    let server = Server::start(config(true, ResponseProfile::Structured));
    let mut conn = server.connect();
    let sid = conn.open("2025-11-25");
    let r = conn.post(Some(&sid), &[], &eval(json!(1), json!({"program": "(+ 1 2)"})));
    assert_eq!(r.status, "HTTP/1.1 200 OK");
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.chunks.len(), 2, "the priming event, then the answer: {r:?}");
    assert!(r.chunks[0].starts_with("data: \nid: 0/") && r.chunks[0].ends_with("retry: 3000\n\n"), "{r:?}");
    assert_eq!(r.message()["id"], 1);
    assert_eq!(r.message()["result"]["content"][0]["text"], "user=> 3");
    let r =
        conn.post(Some(&sid), &[], &eval(json!(2), json!({"program": "(count data/xs)", "context": {"xs": [1, 2]}})));
    assert_eq!(r.message()["result"]["structuredContent"]["result"], "user=> 2", "{r:?}");
    assert_eq!(server.taken(), 2);
}

#[test]
fn tiny_programs_run_on_the_connection_thread_and_the_rest_on_the_pool() {
    let mut c = config(true, ResponseProfile::Structured);
    c.limits.max_loop_iterations = 1_000_000;
    c.limits.max_heap_bytes = 64 * 1024 * 1024;
    c.limits.max_program_bytes = 100_000;
    let cases = inline_cases();
    for threads in [2, 0] {
        let server = Server::start(McpConfig { http_conn_threads: threads, ..c.clone() });
        let mut conn = server.connect();
        let sid = conn.open("2025-11-25");
        for (i, (arguments, inline, want)) in cases.iter().enumerate() {
            let before = server.fast.inline_runs();
            let r = conn.post(Some(&sid), &[], &eval(json!(i), arguments.clone()));
            let m = r.message();
            let text = m["result"]["content"][0]["text"].as_str().unwrap_or("");
            let got = if text.contains(want) {
                want
            } else {
                m["result"]["structuredContent"]["reason"].as_str().unwrap_or("")
            };
            assert_eq!(got, *want, "{arguments} with {threads} connection threads: {r:?}");
            // without connection threads, every call goes to the pool
            let ran_inline = *inline && threads > 0;
            assert_eq!(server.fast.inline_runs() - before, u64::from(ran_inline), "{arguments}: ran inline?");
        }
        assert_eq!(server.taken(), cases.len() as u64, "every call took the fast path");
    }
}

#[test]
fn a_call_before_notifications_initialized_is_rmcps() {
    let run = |fast: bool| {
        let server = Server::start(config(fast, ResponseProfile::Slim));
        let mut conn = server.connect();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
        let r = conn.post(None, &[], &init);
        let sid = r.header("mcp-session-id").expect("a session id").to_string();
        // rmcp answers this one once the handshake is over: send it, finish the handshake
        // on another connection, then read it
        conn.send(Some(&sid), &[], &eval(json!(1), json!({"program": "(+ 1 2)"})).to_string());
        // rmcp's head and priming event: it holds the call
        let (status, headers) = conn.head();
        let first = conn.chunk().into_iter().collect();
        let mut other = server.connect();
        let done = other.post(Some(&sid), &[], &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        (conn.body(status, headers, first).normalised(), done.normalised(), server.taken())
    };
    let (fast, fast_done, taken) = run(true);
    let (slow, slow_done, _) = run(false);
    assert_eq!(fast, slow);
    assert_eq!(fast_done, slow_done);
    assert_eq!(taken, 0, "no call took the fast path before the handshake was over");
    assert_eq!(fast.message()["result"]["content"][0]["text"], "user=> 3", "{fast:?}");
}

/// A server (on `c`, its time limit raised to ten minutes) running the endless program
/// of call `id` on connection `a` of session `sid`, once the call holds a slot (with
/// `fast`, once it is counted on the fast path, just after it starts): the server, `a`,
/// `sid` and when the call was sent.
fn long_call(mut c: McpConfig, id: u64, fast: bool) -> (Server, Conn, String, Instant) {
    c.limits.timeout = Duration::from_secs(600);
    c.limits.max_loop_iterations = u64::MAX;
    let server = Server::start(c);
    let mut a = server.connect();
    let sid = a.open("2025-11-25");
    a.send(Some(&sid), &[], &eval(json!(id), json!({"program": "(loop [i 0] (recur (inc i)))"})).to_string());
    let started = Instant::now();
    while server.fast.calls_in_flight() == 0 || (fast && server.taken() == 0) {
        assert!(started.elapsed() < Duration::from_secs(20), "the long call never started");
        std::thread::yield_now();
    }
    (server, a, sid, started)
}

/// A ten-minute program holds the only slot; a second call is `busy`; cancelling the
/// first frees the slot, and its stream ends without an answer (as rmcp's does).
fn cancel_run(fast: bool) -> (Reply, Json, Vec<String>, u64) {
    let mut c = config(fast, ResponseProfile::Slim);
    c.max_concurrent_calls = 1;
    c.queue_timeout = Duration::ZERO;
    // the long call holds the slot before the other connection's calls start (one of
    // them arriving first would take the slot and leave the long call `busy`)
    let (server, mut a, sid, started) = long_call(c, 2, fast);
    let mut b = server.connect();
    let mut id = 3;
    // until the long call holds the slot
    let busy = loop {
        let r = b.post(Some(&sid), &[], &eval(json!(id), json!({"program": "(+ 1 2)"})));
        id += 1;
        if r.message()["result"]["content"][0]["text"].as_str().unwrap_or("").starts_with("busy") {
            break r;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the long call never started");
    };
    // a second request with the running id is refused
    let twice = b.post(Some(&sid), &[], &eval(json!(2), json!({"program": "(+ 1 2)"})));
    assert_eq!(twice.message()["error"]["code"], -32600, "{twice:?}");
    let note =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "test"}});
    let r = b.post(Some(&sid), &[], &note);
    assert!(r.status.contains("202"), "{r:?}");
    loop {
        let r = b.post(Some(&sid), &[], &eval(json!(id), json!({"program": "(+ 1 2)"})));
        id += 1;
        if r.message()["result"]["content"][0]["text"] == "user=> 3" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the cancelled program kept its slot");
    }
    // the cancelled call's stream: the priming event, then its end
    let (status, _) = a.head();
    assert_eq!(status, "HTTP/1.1 200 OK");
    let mut events = Vec::new();
    while let Some(c) = a.chunk() {
        events.push(c);
    }
    let taken = server.taken();
    let events = events.iter().map(|e| without_stream_numbers(e)).collect();
    drop(server);
    // which call saw the slot taken first varies
    let busy_result = busy.message()["result"].clone();
    let mut busy = busy.normalised();
    busy.chunks.clear();
    (busy, busy_result, events, taken)
}

#[test]
fn cancelling_a_fast_path_call_frees_its_slot_and_drops_its_answer() {
    let (fast_busy, fast_result, fast_events, taken) = cancel_run(true);
    let (slow_busy, slow_result, slow_events, _) = cancel_run(false);
    // the long call took the fast path; the call after the cancel takes it when the freed
    // slot is seen at once, else rmcp's path answers it (either shows the slot freed)
    assert!(taken >= 1, "the long call took the fast path ({taken})");
    assert_eq!(fast_busy, slow_busy);
    assert_eq!(fast_result, slow_result);
    assert_eq!(fast_events, slow_events);
}

#[test]
fn a_client_gone_cancels_its_fast_path_program() {
    let (server, mut a, sid, _) = long_call(config(true, ResponseProfile::Slim), 1, true);
    let _ = a.stream.get_mut().shutdown(std::net::Shutdown::Both);
    drop(a);
    let gone = Instant::now();
    while server.fast.calls_in_flight() != 0 {
        assert!(gone.elapsed() < Duration::from_secs(20), "the program of a client gone kept running");
        std::thread::sleep(Duration::from_millis(5));
    }
    // the server still answers
    let mut b = server.connect();
    let r = b.post(Some(&sid), &[], &eval(json!(2), json!({"program": "(+ 1 2)"})));
    assert_eq!(r.message()["result"]["content"][0]["text"], "user=> 3", "{r:?}");
}

#[test]
fn session_servers_keep_rmcps_path() {
    let mut c = config(true, ResponseProfile::Structured);
    c.sessions.enabled = true;
    let server = Server::start(c);
    let mut conn = server.connect();
    let sid = conn.open("2025-11-25");
    let start = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "lisp_session_start", "arguments": {}}});
    let r = conn.post(Some(&sid), &[], &start);
    let session = r.message()["result"]["structuredContent"]["session_id"].as_str().unwrap_or_default().to_string();
    assert!(!session.is_empty(), "{r:?}");
    for (id, program) in [(2, "(def x 21)"), (3, "(* x 2)")] {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lisp_session_eval", "arguments": {"session_id": session, "program": program}}});
        let r = conn.post(Some(&sid), &[], &call);
        if id == 3 {
            assert!(r.text().contains("user=> 42"), "{r:?}");
        }
    }
    let _ = conn.post(Some(&sid), &[], &eval(json!(4), json!({"program": "(+ 1 2)"})));
    assert_eq!(server.taken(), 0, "session servers take rmcp's path");
}
