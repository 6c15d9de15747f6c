//! `ptc mcp --sessions --session-store redis://...` with real parts: a `redis-server` the
//! test starts on 127.0.0.1 and a free port (no persistence; stopped by the test) and two
//! `ptc mcp --http` processes sharing it. A session started on one instance is used on the
//! other; two evals of one session on two instances give one result and one
//! `session_busy`; a Redis outage is `session_store_unavailable` while the servers stay
//! up, and sessions work again when Redis is back; a foreign key is reported and left
//! alone. `redis-server` is Debian's package (`.ci/run` installs it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::{Command, Stdio};

use common::cli::PTC;
use common::mcp::{Client, HttpServer, request};
use common::redis::Redis;
use common::service::gated_service;
use serde_json::{Value, json};

/// `ptc mcp --sessions --http 127.0.0.1:0 --session-store STORE` with debug answers.
fn start_http(store: &str, extra: &[&str]) -> HttpServer {
    HttpServer::start(&[&["--sessions", "--session-store", store, "--response-profile", "debug"][..], extra].concat())
}

/// The session tools through one instance's client.
trait Sessions {
    fn start(&self) -> String;
    fn eval(&self, id: u64, session: &str, program: &str) -> Value;
}

impl Sessions for Client {
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

#[test]
fn a_session_started_on_one_instance_is_used_on_another() {
    let redis = Redis::start();
    let a = start_http(&redis.url(), &[]);
    let b = start_http(&redis.url(), &[]);
    let (ca, cb) = (Client::connect(a.port, None), Client::connect(b.port, None));
    let id = ca.start();
    assert_eq!(text(&ca.eval(2, &id, "(def x 41)")), "user=> #'user/x");
    assert_eq!(text(&cb.eval(2, &id, "(def y (inc x)) y")), "user=> 42");
    assert_eq!(text(&ca.eval(3, &id, "[x y]")), "user=> [41 42]");
    let listed = cb.call(4, "lisp_session_list", json!({}));
    assert_eq!(listed["structuredContent"]["sessions"][0]["session_id"], id.as_str(), "{listed}");
    let inspected = cb.call(5, "lisp_session_inspect", json!({"session_id": id}));
    assert_eq!(inspected["isError"], false, "{inspected}");
    // the record lives in Redis, with the session's deadline as its expiry
    let ttl: i64 = redis.cmd(&["PTTL", &format!("ptc:session:rec:{id}")]).trim_start_matches(':').parse().unwrap();
    assert!(ttl > 0 && ttl <= 900_000, "the idle timeout is the key's expiry: {ttl}");
    // closed on one instance, closed on both
    assert_eq!(cb.call(6, "lisp_session_close", json!({"session_id": id}))["isError"], false);
    assert_eq!(reason(&ca.eval(7, &id, "x")), "session_closed");
    assert_eq!(redis.cmd(&["EXISTS", &format!("ptc:session:rec:{id}")]), ":0");
}

#[test]
fn sessions_expire_as_redis_keys() {
    let redis = Redis::start();
    let a = start_http(&redis.url(), &["--session-idle-timeout-ms", "300"]);
    let b = start_http(&redis.url(), &[]);
    let (ca, cb) = (Client::connect(a.port, None), Client::connect(b.port, None));
    let id = ca.start();
    let key = format!("ptc:session:rec:{id}");
    // Redis removes the key by itself at the deadline: wait for that event, via Redis
    let ttl: i64 = redis.cmd(&["PTTL", &key]).trim_start_matches(':').parse().unwrap();
    assert!(ttl > 0 && ttl <= 300, "{ttl}");
    while redis.cmd(&["EXISTS", &key]) == ":1" {
        std::thread::yield_now();
    }
    let r = cb.eval(2, &id, "1");
    assert_eq!(reason(&r), "session_closed", "{r}");
    assert!(text(&r).contains("idle"), "{r}");
}

#[test]
fn two_evals_on_two_instances_give_one_result_and_one_busy() {
    let redis = Redis::start();
    let (service, arrived, open) = gated_service("[]".to_string());
    let dir = std::env::temp_dir().join(format!("ptc-sessions-redis-{}", std::process::id()));
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
    let upstreams = ["--upstreams", config.to_str().unwrap()];
    let a = start_http(&redis.url(), &upstreams);
    let b = start_http(&redis.url(), &upstreams);
    let (ca, cb) = (Client::connect(a.port, None), Client::connect(b.port, None));
    let id = ca.start();
    assert_eq!(ca.eval(2, &id, "(def n 1)")["isError"], false);
    // the eval on A waits in the upstream, holding the session's lease in Redis
    let first = {
        let ca = ca.clone();
        let id = id.clone();
        std::thread::spawn(move || {
            ca.eval(3, &id, "(def pong (:value (tool/call {:server \"orders\" :tool \"ping\"}))) (def n (inc n)) n")
        })
    };
    arrived.recv().unwrap();
    let second = cb.eval(3, &id, "(def n 100) (def other 1)");
    assert_eq!(reason(&second), "session_busy", "{second}");
    let listed = cb.call(4, "lisp_session_list", json!({}));
    assert_eq!(listed["structuredContent"]["sessions"][0]["eval_status"], "running", "{listed}");
    open.send(()).unwrap();
    let first = first.join().unwrap();
    assert_eq!(text(&first), "user=> 2", "{first}");
    // B sees A's commit and nothing of its own refused eval
    assert_eq!(text(&cb.eval(5, &id, "n")), "user=> 2");
    let keys = cb.call(6, "lisp_session_inspect", json!({"session_id": id, "view": "memory"}));
    assert_eq!(keys["structuredContent"]["stored_keys"], json!(["n", "pong"]), "{keys}");
    // and now B can write
    assert_eq!(text(&cb.eval(7, &id, "(def n (inc n)) n")), "user=> 3");
    assert_eq!(text(&ca.eval(8, &id, "n")), "user=> 3");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_redis_outage_is_session_store_unavailable_and_sessions_come_back() {
    let mut redis = Redis::start();
    let port = redis.port;
    let a = start_http(&redis.url(), &["--debug-tool"]);
    let ca = Client::connect(a.port, None);
    let id = ca.start();
    assert_eq!(ca.eval(2, &id, "(def x 1)")["isError"], false);
    redis.stop();
    for (tool, args) in [
        ("lisp_session_eval", json!({"session_id": id, "program": "x"})),
        ("lisp_session_start", json!({})),
        ("lisp_session_list", json!({})),
        ("lisp_session_inspect", json!({"session_id": id})),
        ("lisp_session_close", json!({"session_id": id})),
    ] {
        let r = ca.call(3, tool, args);
        assert_eq!(reason(&r), "session_store_unavailable", "{tool}: {r}");
        assert!(text(&r).contains(&format!("redis://127.0.0.1:{port}/0")), "{tool} names the store: {r}");
    }
    // the server stays up, healthy and answering what needs no store
    assert_eq!(request(a.port, "GET", "/health", &[], "").status, 200);
    let tools = ca.rpc(4, "tools/list", json!({}));
    assert_eq!(tools["result"]["tools"].as_array().map(Vec::len), Some(8), "{tools}");
    let stats = ca.call(5, "lisp_debug", json!({"op": "stats"}));
    assert_eq!(stats["isError"], false, "{stats}");
    // a new, empty Redis on the same port: the same server works again, no restart
    let _redis = Redis::start_on(port);
    assert_eq!(reason(&ca.eval(6, &id, "x")), "session_not_found", "the old Redis kept nothing");
    let id2 = ca.start();
    assert_eq!(text(&ca.eval(7, &id2, "(def y 2) y")), "user=> 2");
}

#[test]
fn a_foreign_key_is_reported_and_left_alone() {
    let redis = Redis::start();
    let a = start_http(&redis.url(), &[]);
    let ca = Client::connect(a.port, None);
    // a hash in another layout under a session's key
    let id = ca.start();
    let key = format!("ptc:session:rec:{id}");
    assert_eq!(redis.cmd(&["HSET", &key, "fmt", "someone-else-v9"]), ":0");
    for (tool, args) in [
        ("lisp_session_eval", json!({"session_id": id, "program": "1"})),
        ("lisp_session_inspect", json!({"session_id": id})),
        ("lisp_session_close", json!({"session_id": id})),
    ] {
        let r = ca.call(2, tool, args);
        assert_eq!(reason(&r), "session_record_invalid", "{tool}: {r}");
        assert!(text(&r).contains("someone-else-v9") && text(&r).contains(&key), "{tool}: {r}");
    }
    assert_eq!(redis.cmd(&["HGET", &key, "fmt"]), "someone-else-v9", "left as it was");
    assert_eq!(redis.cmd(&["EXISTS", &format!("ptc:session:lease:{id}")]), ":0", "no lease left behind");
    // a key of another type
    let id2 = ca.start();
    let key2 = format!("ptc:session:rec:{id2}");
    assert_eq!(redis.cmd(&["DEL", &key2]), ":1");
    assert_eq!(redis.cmd(&["SET", &key2, "not a session"]), "+OK");
    let r = ca.eval(3, &id2, "1");
    assert_eq!(reason(&r), "session_record_invalid", "{r}");
    assert_eq!(redis.cmd(&["GET", &key2]), "not a session");
    // damaged bytes in a well-formed hash: the record codec reports it, nothing changes
    let id3 = ca.start();
    let key3 = format!("ptc:session:rec:{id3}");
    assert_eq!(redis.cmd(&["HSET", &key3, "bytes", "garbage"]), ":0");
    let r = ca.eval(4, &id3, "1");
    assert_eq!(reason(&r), "session_record_invalid", "{r}");
    assert_eq!(redis.cmd(&["HGET", &key3, "bytes"]), "garbage");
    assert_eq!(redis.cmd(&["HGET", &key3, "ver"]), "1");
    // and the server is fine
    let ok = ca.start();
    assert_eq!(text(&ca.eval(5, &ok, "(+ 1 2)")), "user=> 3");
}

#[test]
fn a_bad_store_url_fails_at_start_with_the_fix() {
    let out = Command::new(PTC)
        .args(["mcp", "--sessions", "--session-store", "rediss://:pw@127.0.0.1:1/0"])
        .env_remove("PTC_UPSTREAMS")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("only redis://HOST:PORT/DB") && !err.contains(":pw@"), "{err}");
    let out = Command::new(PTC)
        .args(["mcp", "--session-store", "redis://127.0.0.1:1/0"])
        .env_remove("PTC_UPSTREAMS")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs --sessions"), "{out:?}");
}

#[test]
fn an_mcp_session_opened_on_one_instance_is_honoured_by_another() {
    let redis = Redis::start();
    let a = start_http(&redis.url(), &[]);
    let b = start_http(&redis.url(), &[]);
    let on_a = Client::connect(a.port, None);
    let key = format!("ptc:mcp:{}", on_a.mcp_session);
    assert_eq!(redis.cmd(&["EXISTS", &key]), ":1", "the initialize is kept in Redis");
    // the same MCP session id, routed to the other instance (no sticky routing)
    let on_b = Client { port: b.port, token: None, mcp_session: on_a.mcp_session.clone() };
    let id = on_b.start();
    assert_eq!(text(&on_b.eval(2, &id, "(def x 7) (* x 6)")), "user=> 42");
    assert_eq!(text(&on_a.eval(3, &id, "x")), "user=> 7");
    // an id nobody issued is still refused
    let stranger = Client { port: b.port, token: None, mcp_session: "not-a-session".into() };
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).to_string();
    assert_eq!(request(b.port, "POST", "/mcp", &stranger.headers(), &body).status, 404);
    // a DELETE removes the shared entry: no instance can take the session over afterwards
    assert_eq!(request(b.port, "DELETE", "/mcp", &on_a.headers(), "").status, 200);
    assert_eq!(redis.cmd(&["EXISTS", &key]), ":0");
}
