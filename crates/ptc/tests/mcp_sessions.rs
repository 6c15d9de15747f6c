//! `ptc mcp --sessions` with the real binary, over stdio and Streamable HTTP: the session
//! tools replace `lisp_eval`, definitions persist, failures commit nothing, every limit
//! fires, owners are isolated by token, and two evals of one session at once give one
//! result and one `session_busy` (an upstream the test holds keeps the first one running).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::mcp::{Client, HttpServer, StdioServer, text};
use common::service::gated_service;
use serde_json::{Value, json};

const SESSION_TOOLS: [&str; 7] = [
    "lisp_session_start",
    "lisp_session_list",
    "lisp_session_list_preludes",
    "lisp_session_eval",
    "lisp_session_inspect",
    "lisp_session_forget",
    "lisp_session_close",
];

/// `ptc mcp --sessions --log-level error ARGS` over stdio.
fn start(args: &[&str]) -> StdioServer {
    StdioServer::start(&[&["--sessions", "--log-level", "error"][..], args].concat())
}

/// The session tools on a stdio server.
trait Sessions {
    fn start_session(&mut self) -> String;
    fn eval(&mut self, id: &str, program: &str) -> Value;
}

impl Sessions for StdioServer {
    fn start_session(&mut self) -> String {
        let r = self.call("lisp_session_start", json!({}));
        assert_eq!(r["isError"], false, "{r}");
        session_id(&r)
    }

    fn eval(&mut self, id: &str, program: &str) -> Value {
        self.call("lisp_session_eval", json!({"session_id": id, "program": program}))
    }
}

/// The session id in a start answer (any profile: the text names it too).
fn session_id(r: &Value) -> String {
    if let Some(id) = r["structuredContent"]["session_id"].as_str() {
        return id.to_string();
    }
    let t = text(r);
    let at = t.find("ptcs_").unwrap_or_else(|| panic!("no session id in {t}"));
    t[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-').collect()
}

/// The reason of an error result (the text starts with it).
fn reason(r: &Value) -> String {
    assert_eq!(r["isError"], true, "expected an error: {r}");
    text(r).split(':').next().unwrap_or_default().trim_start_matches("<prints>").trim().to_string()
}

#[test]
fn session_tools_replace_lisp_eval() {
    let mut s = start(&[]);
    let tools = s.request("tools/list", json!({}));
    let names: Vec<&str> =
        tools["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, SESSION_TOOLS);
    let eval_tool = &tools["result"]["tools"][3];
    assert_eq!(eval_tool["inputSchema"]["required"], json!(["session_id", "program"]));
    assert_eq!(eval_tool["inputSchema"]["additionalProperties"], false);
    assert!(eval_tool["description"].as_str().unwrap().contains("Definitions persist"));
    let r = s.call("lisp_eval", json!({"program": "1"}));
    assert_eq!(reason(&r), "unknown_tool");
}

#[test]
fn definitions_persist_and_failed_evals_commit_nothing() {
    let mut s = start(&["--response-profile", "structured"]);
    let started = s.call("lisp_session_start", json!({"title": "orders"}));
    let id = session_id(&started);
    assert!(id.starts_with("ptcs_") && id.len() == 29, "{id}");
    assert_eq!(started["structuredContent"]["limits"]["max_bindings"], 200);
    assert_eq!(started["structuredContent"]["limits"]["max_memory_bytes"], 1_048_576);

    let r = s.eval(&id, "(def base 10)\n(defn add \"adds base\" [x] (+ x base))");
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["structuredContent"]["memory"]["changed_keys"], json!(["add", "base"]));
    assert_eq!(r["structuredContent"]["session"]["turn"], 1);
    assert_eq!(text(&s.eval(&id, "(add 5)")), "user=> 15");
    assert_eq!(text(&s.eval(&id, "(inc *1)")), "user=> 16");
    let ctx = s.call("lisp_session_eval", json!({"session_id": id, "program": "(add data/n)", "context": {"n": 1}}));
    assert_eq!(text(&ctx), "user=> 11");

    // an output_schema mismatch commits nothing
    let r = s.call(
        "lisp_session_eval",
        json!({"session_id": id, "program": "(def base 100) \"text\"", "output_schema": {"type": "integer"}}),
    );
    assert_eq!(reason(&r), "validation_error");
    assert_eq!(text(&s.eval(&id, "base")), "user=> 10");
    // nor does a program error, or a definition the session cannot keep
    let r = s.eval(&id, "(def base 1000) (+ 1 :a)");
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(text(&s.eval(&id, "base")), "user=> 10");
    let r = s.eval(&id, "(def base 7) (def f (partial + 1))");
    assert_eq!(reason(&r), "session_state_error");
    assert!(text(&r).contains("(defn f [args]"), "{}", text(&r));
    assert_eq!(text(&s.eval(&id, "base")), "user=> 10");

    let memory = s.call("lisp_session_inspect", json!({"session_id": id, "view": "memory"}));
    let m = text(&memory);
    assert!(m.contains("(def base 10)") && m.contains("(defn add \"adds base\""), "{m}");
    assert_eq!(memory["structuredContent"]["stored_keys"], json!(["add", "base"]));
    let history = s.call("lisp_session_inspect", json!({"session_id": id, "view": "history"}));
    assert!(text(&history).contains(";   *1 10"), "{}", text(&history));

    let listed = s.call("lisp_session_list", json!({}));
    assert_eq!(listed["structuredContent"]["count"], 1);
    assert_eq!(listed["structuredContent"]["sessions"][0]["title"], "orders");
    assert_eq!(listed["structuredContent"]["sessions"][0]["binding_count"], 2);
    let preludes = s.call("lisp_session_list_preludes", json!({"session_id": id}));
    assert_eq!(preludes["structuredContent"]["prelude_refs"], json!([]));

    let forgot = s.call("lisp_session_forget", json!({"session_id": id, "bindings": ["add"], "clear": ["history"]}));
    assert_eq!(forgot["structuredContent"]["removed_bindings"], json!(["add"]));
    assert_eq!(forgot["structuredContent"]["stored_keys"], json!(["base"]));
    assert_eq!(reason(&s.eval(&id, "(add 1)")), reason(&s.eval(&id, "(undefined-fn 1)")));

    let closed = s.call("lisp_session_close", json!({"session_id": id}));
    assert_eq!(closed["structuredContent"]["closed"], true);
    assert_eq!(reason(&s.eval(&id, "base")), "session_closed");
    assert_eq!(reason(&s.eval("ptcs_nosuchsession", "1")), "session_not_found");
    assert_eq!(reason(&s.call("lisp_session_eval", json!({"program": "1"}))), "session_args_error");
    assert_eq!(
        reason(&s.call("lisp_session_eval", json!({"session_id": id, "program": "1", "x": 1}))),
        "session_args_error"
    );
    assert_eq!(
        reason(&s.call("lisp_session_inspect", json!({"session_id": id, "view": "nope"}))),
        "session_args_error"
    );
    assert_eq!(reason(&s.call("lisp_session_start", json!({"ttl_ms": 0}))), "session_args_error");
}

#[test]
fn session_limits_fire() {
    let mut s = start(&[
        "--max-session-bindings",
        "2",
        "--max-session-binding-bytes",
        "400",
        "--max-session-memory-bytes",
        "500",
        "--max-sessions-per-owner",
        "2",
        "--max-session-print-entries",
        "2",
        "--max-session-history-entry-bytes",
        "100",
        "--max-session-preview-chars",
        "40",
    ]);
    let id = s.start_session();
    let r = s.eval(&id, "(def a 1) (def b 2) (def c 3)");
    assert_eq!(reason(&r), "session_limit_exceeded");
    assert!(text(&r).contains("max_session_bindings (2)"), "{}", text(&r));
    let r = s.eval(&id, "(def big (vec (range 200)))");
    assert_eq!(reason(&r), "session_limit_exceeded");
    assert!(text(&r).contains("max_session_binding_bytes (400)"), "{}", text(&r));
    let r = s.eval(&id, "(def x (vec (range 30))) (def y (vec (range 30)))");
    assert_eq!(reason(&r), "session_limit_exceeded");
    assert!(text(&r).contains("max_session_memory_bytes (500)"), "{}", text(&r));
    assert_eq!(
        text(&s.call("lisp_session_inspect", json!({"session_id": id, "view": "memory"}))),
        ";; No stored bindings"
    );

    for i in 0..3 {
        s.eval(&id, &format!("(println \"line {i}\") {i}"));
    }
    let prints = text(&s.call("lisp_session_inspect", json!({"session_id": id, "view": "prints"})));
    assert!(prints.contains("line 1") && prints.contains("line 2") && !prints.contains("line 0"), "{prints}");

    let r = s.eval(&id, "(vec (range 100))");
    let t = text(&r);
    assert!(t.contains("(truncated at 40 chars"), "{t}");
    assert!(t.contains("over max_history_entry_bytes (100)"), "{t}");
    let history = text(&s.call("lisp_session_inspect", json!({"session_id": id, "view": "history"})));
    assert!(history.contains("*1 <not kept"), "{history}");

    s.start_session();
    let r = s.call("lisp_session_start", json!({}));
    assert_eq!(reason(&r), "session_limit_exceeded");
    assert!(text(&r).contains("max_sessions_per_owner"), "{}", text(&r));
}

#[test]
fn sessions_end_after_their_ttl_and_idle_timeout() {
    let mut s = start(&[]);
    let r = s.call("lisp_session_start", json!({"ttl_ms": 1}));
    let id = session_id(&r);
    // each call takes time; the session's 1 ms are over within a few
    let mut ended = None;
    for _ in 0..10_000 {
        let r = s.eval(&id, "1");
        if r["isError"] == true {
            ended = Some(text(&r));
            break;
        }
    }
    let ended = ended.expect("the session expired");
    // (it may end while an eval runs: that eval commits nothing and says so)
    assert!(ended.starts_with("session_closed"), "{ended}");
    let after = text(&s.eval(&id, "1"));
    assert!(after.starts_with("session_closed") && after.contains("(expired)"), "{after}");
    drop(s);

    let mut s = start(&["--session-idle-timeout-ms", "1"]);
    let id = s.start_session();
    // listing does not keep a session alive
    let mut gone = false;
    for _ in 0..10_000 {
        let r = s.call("lisp_session_list", json!({}));
        if text(&r).starts_with("No live sessions") {
            gone = true;
            break;
        }
    }
    assert!(gone);
    let r = s.eval(&id, "1");
    assert!(text(&r).contains("(idle_timeout)"), "{}", text(&r));
}

// ---- HTTP ----

/// `ptc mcp --sessions --http 127.0.0.1:0 ARGS`.
fn start_http(extra: &[&str]) -> HttpServer {
    HttpServer::start(&[&["--sessions"][..], extra].concat())
}

#[test]
fn one_token_never_sees_another_token_s_sessions() {
    let a = "team-a-0123456789abcdef0123456789abcdef";
    let b = "team-b-0123456789abcdef0123456789abcdef";
    let srv = start_http(&["--http-auth-token", a, "--http-extra-auth-tokens", b]);
    let alice = Client::connect(srv.port, Some(a));
    let alice2 = Client::connect(srv.port, Some(a));
    let bob = Client::connect(srv.port, Some(b));
    let id = session_id(&alice.call(2, "lisp_session_start", json!({})));
    let defined = text(&alice.call(3, "lisp_session_eval", json!({"session_id": id, "program": "(def x 41)"})));
    assert_eq!(defined, "user=> #'user/x\n;; stored: x");
    // another client with the same token is the same owner
    assert_eq!(
        text(&alice2.call(2, "lisp_session_eval", json!({"session_id": id, "program": "(inc x)"}))),
        "user=> 42"
    );
    assert!(text(&bob.call(2, "lisp_session_list", json!({}))).starts_with("No live sessions"));
    for (tool, args) in [
        ("lisp_session_eval", json!({"session_id": id, "program": "x"})),
        ("lisp_session_inspect", json!({"session_id": id})),
        ("lisp_session_forget", json!({"session_id": id, "clear": ["memory"]})),
        ("lisp_session_close", json!({"session_id": id})),
    ] {
        assert_eq!(reason(&bob.call(3, tool, args)), "session_owner_mismatch", "{tool}");
    }
    assert_eq!(text(&alice.call(4, "lisp_session_eval", json!({"session_id": id, "program": "x"}))), "user=> 41");
}

#[test]
fn two_evals_of_one_session_at_once_give_one_result_and_one_busy() {
    let orders = json!([{"id": 1, "status": "paid", "amount": 5}, {"id": 2, "status": "open", "amount": 7}]);
    let (service, arrived, open) = gated_service(orders.to_string());
    let dir = std::env::temp_dir().join(format!("ptc-sessions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let schema = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/upstreams/orders.openapi.json");
    let config = dir.join("upstreams.json");
    std::fs::write(
        &config,
        json!({"upstreams": {"orders": {
            "transport": "openapi", "base_url": format!("http://127.0.0.1:{service}"),
            "schema_file": schema, "allow_insecure_http": true,
            "include_operations": ["list_orders", "ping"]
        }}})
        .to_string(),
    )
    .unwrap();
    let srv = start_http(&["--upstreams", config.to_str().unwrap(), "--response-profile", "debug"]);
    let c = Client::connect(srv.port, None);
    let id = session_id(&c.call(2, "lisp_session_start", json!({})));

    // upstream calls work inside a session, with metrics for this eval only
    let r = c.call(
        3,
        "lisp_session_eval",
        json!({"session_id": id, "program": "(def paid (->> (tool/call {:server \"orders\" :tool \"list_orders\"}) :value (filter #(= \"paid\" (get % \"status\"))) (mapv #(get % \"id\"))))"}),
    );
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["structuredContent"]["ptc_metrics"]["upstream_call_count"], 1, "{r}");
    assert_eq!(r["structuredContent"]["upstream_calls"][0]["tool"], "list_orders");
    let r = c.call(4, "lisp_session_eval", json!({"session_id": id, "program": "paid"}));
    assert_eq!(r["structuredContent"]["result"], "user=> [1]");
    assert_eq!(r["structuredContent"]["ptc_metrics"]["upstream_call_count"], 0, "metrics are per eval");
    let calls = c.call(5, "lisp_session_inspect", json!({"session_id": id, "view": "tool_calls"}));
    assert_eq!(calls["structuredContent"]["upstream_calls"].as_array().unwrap().len(), 1);

    // the first eval waits in the upstream until the test opens it
    let first = {
        let c = c.clone();
        let id = id.clone();
        std::thread::spawn(move || {
            c.call(6, "lisp_session_eval", json!({"session_id": id, "program": "(def pong (:value (tool/call {:server \"orders\" :tool \"ping\"}))) (count paid)"}))
        })
    };
    arrived.recv().unwrap();
    let second = c.call(7, "lisp_session_eval", json!({"session_id": id, "program": "(def other 1)"}));
    assert_eq!(second["structuredContent"]["reason"], "session_busy", "{second}");
    let listed = c.call(8, "lisp_session_list", json!({}));
    assert_eq!(listed["structuredContent"]["sessions"][0]["eval_status"], "running");
    open.send(()).unwrap();
    let first = first.join().unwrap();
    assert_eq!(first["isError"], false, "{first}");
    assert_eq!(first["structuredContent"]["result"], "user=> 1");
    let keys = c.call(9, "lisp_session_inspect", json!({"session_id": id, "view": "memory"}));
    assert_eq!(keys["structuredContent"]["stored_keys"], json!(["paid", "pong"]), "the busy eval committed nothing");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn lisp_debug_records_session_calls_without_tokens() {
    let token = "scrub-me-0123456789abcdef0123456789abcdef";
    let srv = start_http(&["--http-auth-token", token, "--debug-tool", "--trace-payloads", "full"]);
    let c = Client::connect(srv.port, Some(token));
    let id = session_id(&c.call(2, "lisp_session_start", json!({})));
    let program = format!("(def t \"{token}\") (println t) 1");
    c.call(3, "lisp_session_eval", json!({"session_id": id, "program": program}));
    let recent = c.call(4, "lisp_debug", json!({"op": "recent"}));
    let t = text(&recent);
    assert!(t.contains("lisp_session_eval") && t.contains("lisp_session_start"), "{t}");
    assert!(t.contains("[REDACTED]") && !t.contains(token), "the HTTP token is scrubbed: {t}");
}
