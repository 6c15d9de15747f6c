//! Session leases across instances with real parts (a `redis-server` on 127.0.0.1 and a
//! free port, two `ptc mcp --http` processes): an evaluation renews its short lease while
//! it runs, so a long program keeps its session; an instance killed mid-evaluation frees
//! its session after one lease (`--session-lease-ms`), not after the program's timeout,
//! and loses no committed state.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;

use common::cli::PTC;
use common::mcp::{message, request};
use common::redis::Redis;

// ---- ptc mcp --http ----

struct Http {
    child: Child,
    port: u16,
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_http(store: &str, extra: &[&str]) -> Http {
    let mut child = Command::new(PTC)
        .args(["mcp", "--sessions", "--http", "127.0.0.1:0", "--log-level", "info", "--session-store", store])
        .args(["--response-profile", "debug"])
        .args(extra)
        .env_remove("PTC_UPSTREAMS")
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
        if let Some(rest) = line.split_once("serving MCP over Streamable HTTP at http://127.0.0.1:") {
            break rest.1.split('/').next().unwrap().parse::<u16>().unwrap();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    Http { child, port }
}

/// One MCP client of one instance.
#[derive(Clone)]
struct Client {
    port: u16,
    mcp_session: String,
}

impl Client {
    fn connect(port: u16) -> Client {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let reply = request(port, "POST", "/mcp", &[], &init.to_string());
        assert_eq!(reply.status, 200, "{}", reply.body);
        let mcp_session = reply.header("mcp-session-id").unwrap().to_string();
        let c = Client { port, mcp_session };
        request(
            port,
            "POST",
            "/mcp",
            &c.headers(),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        );
        c
    }

    fn headers(&self) -> Vec<(String, String)> {
        vec![
            ("Mcp-Session-Id".to_string(), self.mcp_session.clone()),
            ("Mcp-Protocol-Version".to_string(), "2025-11-25".to_string()),
        ]
    }

    fn rpc(&self, id: u64, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let reply = request(self.port, "POST", "/mcp", &self.headers(), &body.to_string());
        assert_eq!(reply.status, 200, "{}", reply.body);
        message(&reply.body)
    }

    fn call(&self, id: u64, tool: &str, args: Value) -> Value {
        self.rpc(id, "tools/call", json!({"name": tool, "arguments": args}))["result"].clone()
    }

    fn start(&self) -> String {
        let r = self.call(100, "lisp_session_start", json!({}));
        assert_eq!(r["isError"], false, "{r}");
        r["structuredContent"]["session_id"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no session id in {r}"))
    }

    fn eval(&self, id: u64, session: &str, program: &str) -> Value {
        self.call(id, "lisp_session_eval", json!({"session_id": session, "program": program}))
    }
}

/// An eval's result (`user=> ...`), or an error's message.
fn text(r: &Value) -> String {
    let s = &r["structuredContent"];
    s["result"].as_str().or(s["message"].as_str()).unwrap_or_default().to_string()
}

fn reason(r: &Value) -> String {
    assert_eq!(r["isError"], true, "expected an error: {r}");
    r["structuredContent"]["reason"].as_str().unwrap_or_default().to_string()
}

/// A JSON service the test holds: `/ping` answers only when the test says so, after
/// telling it that the request arrived; anything else answers at once.
fn gated_service() -> (u16, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (arrived_tx, arrived_rx) = mpsc::channel();
    let (open_tx, open_rx) = mpsc::channel::<()>();
    let open_rx = std::sync::Arc::new(std::sync::Mutex::new(open_rx));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let arrived_tx = arrived_tx.clone();
            let open_rx = open_rx.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut first = String::new();
                reader.read_line(&mut first).unwrap();
                loop {
                    let mut l = String::new();
                    if reader.read_line(&mut l).unwrap_or(0) == 0 || l == "\r\n" {
                        break;
                    }
                }
                let body = if first.contains("/ping") {
                    arrived_tx.send(()).unwrap();
                    open_rx.lock().unwrap().recv().unwrap();
                    "{\"pong\":true}".to_string()
                } else {
                    "[]".to_string()
                };
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(resp.as_bytes());
            });
        }
    });
    (port, arrived_rx, open_tx)
}

/// An upstreams.json naming the gated service's `ping` (an OpenAPI operation).
fn upstreams(service: u16, name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ptc-session-lease-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let schema = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/upstreams/orders.openapi.json");
    let config = dir.join("upstreams.json");
    std::fs::write(
        &config,
        json!({"upstreams": {"orders": {
            "transport": "openapi", "base_url": format!("http://127.0.0.1:{service}"),
            "schema_file": schema, "allow_insecure_http": true,
            "include_operations": ["ping"]
        }}})
        .to_string(),
    )
    .unwrap();
    config
}

const PING: &str = "(def pong (:value (tool/call {:server \"orders\" :tool \"ping\"}))) (def n (inc n)) n";

const LEASE_MS: u64 = 900;

#[test]
fn a_running_eval_keeps_its_lease_past_one_lease_length() {
    let redis = Redis::start();
    let (service, arrived, open) = gated_service();
    let config = upstreams(service, "renew");
    let flags = [
        "--upstreams",
        config.to_str().unwrap(),
        "--session-lease-ms",
        "900",
        "--timeout-ms",
        "20000",
        "--upstream-call-timeout-ms",
        "20000",
    ];
    let a = start_http(&redis.url(), &flags);
    let b = start_http(&redis.url(), &flags);
    let (ca, cb) = (Client::connect(a.port), Client::connect(b.port));
    let id = ca.start();
    assert_eq!(ca.eval(2, &id, "(def n 1)")["isError"], false);
    let first = {
        let (ca, id) = (ca.clone(), id.clone());
        std::thread::spawn(move || ca.eval(3, &id, PING))
    };
    arrived.recv().unwrap();
    let held_since = Instant::now();
    let lease_key = format!("ptc:session:lease:{id}");
    // the lease stays held for three lease lengths: renewed, never expired
    let mut renewals = 0;
    let mut last_ttl = i64::MAX;
    while held_since.elapsed() < Duration::from_millis(3 * LEASE_MS) {
        let ttl: i64 = redis.cmd(&["PTTL", &lease_key]).trim_start_matches(':').parse().unwrap();
        assert!(ttl > 0, "the lease expired while the program ran ({ttl})");
        if ttl > last_ttl {
            renewals += 1;
        }
        last_ttl = ttl;
        assert_eq!(reason(&cb.eval(4, &id, "(def n 100)")), "session_busy");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(renewals >= 2, "the lease was renewed {renewals} times");
    open.send(()).unwrap();
    let first = first.join().unwrap();
    assert_eq!(text(&first), "user=> 2", "{first}");
    assert_eq!(text(&cb.eval(5, &id, "n")), "user=> 2");
    assert_eq!(redis.cmd(&["EXISTS", &lease_key]), ":0", "the lease is given back");
}

#[test]
fn a_killed_instance_frees_its_sessions_after_one_lease() {
    let redis = Redis::start();
    let (service, arrived, _open) = gated_service();
    let config = upstreams(service, "kill");
    // the program may run 60 s: the old lease (timeout + 30 s) would block B for 90 s
    let flags = [
        "--upstreams",
        config.to_str().unwrap(),
        "--session-lease-ms",
        "900",
        "--timeout-ms",
        "60000",
        "--upstream-call-timeout-ms",
        "60000",
    ];
    let mut a = start_http(&redis.url(), &flags);
    let b = start_http(&redis.url(), &flags);
    let (ca, cb) = (Client::connect(a.port), Client::connect(b.port));
    let id = ca.start();
    assert_eq!(text(&ca.eval(2, &id, "(def n 1) (def kept [1 2 3]) n")), "user=> 1");
    {
        let (ca, id) = (ca.clone(), id.clone());
        // the request dies with the instance; its answer (if any) does not matter
        std::thread::spawn(move || {
            let _ = std::panic::catch_unwind(|| ca.eval(3, &id, PING));
        });
    }
    arrived.recv().unwrap();
    assert_eq!(reason(&cb.eval(4, &id, "n")), "session_busy");
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let killed_at = Instant::now();
    // B polls; the session comes back once the dead instance's lease runs out
    let answer = loop {
        let r = cb.eval(5, &id, "[n kept]");
        if r["isError"] == false {
            break r;
        }
        assert_eq!(reason(&r), "session_busy", "{r}");
        assert!(killed_at.elapsed() < Duration::from_secs(10), "the session stayed blocked {:?}", killed_at.elapsed());
        std::thread::sleep(Duration::from_millis(50));
    };
    let waited = killed_at.elapsed();
    assert!(waited <= Duration::from_millis(LEASE_MS + 1500), "blocked for {waited:?} after the kill");
    // the committed state is intact; the killed eval committed nothing
    assert_eq!(text(&answer), "user=> [1 [1 2 3]]", "{answer}");
    assert_eq!(text(&cb.eval(6, &id, "(def n (inc n)) n")), "user=> 2");
}

#[test]
fn the_lease_flag_has_bounds() {
    let out = Command::new(PTC)
        .args(["mcp", "--sessions", "--session-lease-ms", "10"])
        .env_remove("PTC_UPSTREAMS")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--session-lease-ms"));
}
