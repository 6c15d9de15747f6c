//! Every reason of the MCP server is reachable: for each `McpReason`, a real `ptc mcp`
//! (over stdio; over Streamable HTTP where the reason needs two owners or two instances
//! sharing a Redis) answers a `tools/call` with exactly that reason. The `match` in
//! [`reach`] is exhaustive: `reason.rs` is compiled into this test as it is, so a new
//! reason does not compile until it has a case here (and `docs/reasons/mcp.md`, which
//! `cargo xtask docs` generates from the same file, lists it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

#[allow(dead_code)]
#[path = "../../ptc-mcp-aggregator/src/reason.rs"]
mod reason;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use common::cli::{PTC, root, scratch};
use common::mcp::{Client, HttpServer, StdioServer, text};
use common::redis::Redis;
use common::vendor::FakeVendor;
use ptc_lisp_eval::ErrorKind;
use reason::McpReason;
use serde_json::{Value, json};

/// The reason of a failed `tools/call` result: `structuredContent.reason`, the reason of a
/// JSON text (`lisp_task`), or the first word of the text (`busy: ...`).
fn reason_of(r: &Value) -> String {
    assert_eq!(r["isError"], true, "expected an error: {r}");
    if let Some(s) = r["structuredContent"]["reason"].as_str() {
        return s.to_string();
    }
    let t = text(r);
    if let Ok(v) = serde_json::from_str::<Value>(&t)
        && let Some(s) = v["reason"].as_str()
    {
        return s.to_string();
    }
    t.split(':').next().unwrap_or_default().to_string()
}

fn call_frame(id: i64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}})
}

/// Keeps a long call running and sends quick ones beside it until one is refused; the
/// refusal. A long call that lost the race for the slot is sent again.
fn refused_beside(s: &mut StdioServer, tool: &str, long: Value, quick: Value, refusal: &str) -> Value {
    let mut long_id = 2;
    s.send(&call_frame(long_id, tool, long.clone()));
    let mut id = 100;
    loop {
        id += 1;
        assert!(id < 10_000, "no call was refused while the long one ran");
        s.send(&call_frame(id, tool, quick.clone()));
        loop {
            let v = s.read();
            if v["id"] == json!(long_id) {
                long_id = id + 100_000;
                s.send(&call_frame(long_id, tool, long.clone()));
            } else if v["id"] == json!(id) {
                if text(&v["result"]).starts_with(refusal) {
                    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": long_id}}));
                    return v["result"].clone();
                }
                break;
            }
        }
    }
}

fn stderr_lines(child: &mut std::process::Child) -> Receiver<String> {
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

fn wait_for_line(rx: &Receiver<String>, needle: &str) {
    loop {
        let line = rx.recv_timeout(Duration::from_secs(30)).expect("log line");
        if line.contains(needle) {
            return;
        }
    }
}

fn sessions(args: &[&str]) -> StdioServer {
    StdioServer::start(
        &[&["--sessions", "--log-level", "error", "--response-profile", "structured"][..], args].concat(),
    )
}

fn start_session(s: &mut StdioServer, args: Value) -> String {
    let r = s.call("lisp_session_start", args);
    assert_eq!(r["isError"], false, "{r}");
    r["structuredContent"]["session_id"].as_str().unwrap().to_string()
}

fn session_eval(s: &mut StdioServer, id: &str, program: &str) -> Value {
    s.call("lisp_session_eval", json!({"session_id": id, "program": program}))
}

const SPIN: &str = "(loop [i 0] (recur (inc i)))";
const LONG_LIMITS: [&str; 4] = ["--timeout-ms", "3000", "--max-loop-iterations", "100000000000"];

/// Drives a real server to `reason`; the failed `tools/call` result.
fn reach(reason: McpReason) -> Value {
    match reason {
        McpReason::Eval(kind) => {
            let args = match kind {
                ErrorKind::ArithmeticError => json!({"program": "(quot 1 0)"}),
                ErrorKind::Fail => json!({"program": "(fail {:reason :not-found})"}),
                ErrorKind::ValidationError => json!({"program": "\"text\"", "output_schema": {"type": "integer"}}),
                ErrorKind::Timeout => json!({"program": SPIN}),
                other => panic!("no MCP case for {other}: the evaluator's own test reaches it"),
            };
            let flags: &[&str] = if kind == ErrorKind::Timeout {
                &["--timeout-ms", "100", "--max-loop-iterations", "100000000000"]
            } else {
                &["--response-profile", "structured"]
            };
            StdioServer::start(flags).call("lisp_eval", args)
        }
        McpReason::ArgsError => StdioServer::start(&[]).call("lisp_eval", json!({"context": {"a": 1}})),
        McpReason::Busy => {
            let mut s = StdioServer::start(
                &[&["--max-concurrent-calls", "1", "--queue-timeout-ms", "0"][..], &LONG_LIMITS].concat(),
            );
            refused_beside(&mut s, "lisp_eval", json!({"program": SPIN}), json!({"program": "1"}), "busy")
        }
        McpReason::UnknownTool => StdioServer::start(&[]).call("no_such_tool", json!({})),
        McpReason::ShuttingDown => {
            let mut command = Command::new(PTC);
            command
                .arg("mcp")
                .args(LONG_LIMITS)
                .args(["--log-level", "debug"])
                .env_remove("PTC_UPSTREAMS")
                .stderr(Stdio::piped());
            let mut s = StdioServer::spawn(command);
            let rx = stderr_lines(&mut s.child);
            s.send(&call_frame(2, "lisp_eval", json!({"program": SPIN})));
            wait_for_line(&rx, "tools/call program");
            let pid = s.child.id().to_string();
            assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
            // the signal is seen asynchronously: calls run until the drain has begun
            loop {
                let r = s.call("lisp_eval", json!({"program": "1"}));
                if r["isError"] == true {
                    return r;
                }
            }
        }
        McpReason::PreludeUnavailable => {
            // two instances share a Redis store; only the first loads the prelude
            let redis = Redis::start();
            let dir = scratch();
            let prelude = dir.join("crm.clj");
            std::fs::write(
                &prelude,
                "(ns crm \"Customer helpers\")\n(defn vip? \"True for big spenders.\" [c] (> (:spend c) 50))\n",
            )
            .unwrap();
            let store = redis.url();
            let with = HttpServer::start(&[
                "--sessions",
                "--session-store",
                &store,
                "--response-profile",
                "structured",
                "--prelude",
                prelude.to_str().unwrap(),
            ]);
            let without =
                HttpServer::start(&["--sessions", "--session-store", &store, "--response-profile", "structured"]);
            let a = Client::connect(with.port, None);
            let started = a.call(2, "lisp_session_start", json!({}));
            let id = started["structuredContent"]["session_id"].as_str().unwrap().to_string();
            let b = Client::connect(without.port, None);
            let r = b.call(2, "lisp_session_eval", json!({"session_id": id, "program": "1"}));
            let _ = std::fs::remove_dir_all(&dir);
            r
        }
        McpReason::SessionArgsError => sessions(&[]).call("lisp_session_eval", json!({"program": "1"})),
        McpReason::SessionNotFound => sessions(&[])
            .call("lisp_session_eval", json!({"session_id": "ptcs_nosuchsession000000000", "program": "1"})),
        McpReason::SessionOwnerMismatch => {
            let a = "team-a-0123456789abcdef0123456789abcdef";
            let b = "team-b-0123456789abcdef0123456789abcdef";
            let srv = HttpServer::start(&["--sessions", "--http-auth-token", a, "--http-extra-auth-tokens", b]);
            let alice = Client::connect(srv.port, Some(a));
            let bob = Client::connect(srv.port, Some(b));
            let started = alice.call(2, "lisp_session_start", json!({}));
            let t = text(&started);
            let at = t.find("ptcs_").unwrap_or_else(|| panic!("no session id in {t}"));
            let id: String =
                t[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-').collect();
            bob.call(2, "lisp_session_eval", json!({"session_id": id, "program": "1"}))
        }
        McpReason::SessionClosed => {
            let mut s = sessions(&[]);
            let id = start_session(&mut s, json!({}));
            let closed = s.call("lisp_session_close", json!({"session_id": id}));
            assert_eq!(closed["isError"], false, "{closed}");
            session_eval(&mut s, &id, "1")
        }
        McpReason::SessionBusy => {
            let mut s = sessions(&LONG_LIMITS);
            let id = start_session(&mut s, json!({}));
            refused_beside(
                &mut s,
                "lisp_session_eval",
                json!({"session_id": id, "program": SPIN}),
                json!({"session_id": id, "program": "1"}),
                "session_busy",
            )
        }
        McpReason::SessionLimitExceeded => {
            let mut s = sessions(&["--max-sessions-per-owner", "1"]);
            start_session(&mut s, json!({}));
            s.call("lisp_session_start", json!({}))
        }
        McpReason::SessionStateError => {
            let mut s = sessions(&[]);
            let id = start_session(&mut s, json!({}));
            session_eval(&mut s, &id, "(def f (partial + 1))")
        }
        McpReason::SessionRecordInvalid => {
            let redis = Redis::start();
            let srv =
                HttpServer::start(&["--sessions", "--session-store", &redis.url(), "--response-profile", "structured"]);
            let c = Client::connect(srv.port, None);
            let started = c.call(2, "lisp_session_start", json!({}));
            let id = started["structuredContent"]["session_id"].as_str().unwrap().to_string();
            let key = format!("ptc:session:rec:{id}");
            assert_eq!(redis.cmd(&["DEL", &key]), ":1");
            assert_eq!(redis.cmd(&["SET", &key, "not a session"]), "+OK");
            c.call(3, "lisp_session_eval", json!({"session_id": id, "program": "1"}))
        }
        McpReason::SessionStoreUnavailable => {
            let mut redis = Redis::start();
            let srv =
                HttpServer::start(&["--sessions", "--session-store", &redis.url(), "--response-profile", "structured"]);
            let c = Client::connect(srv.port, None);
            redis.stop();
            c.call(2, "lisp_session_start", json!({}))
        }
        McpReason::ResultTooLarge => {
            let program = "(return (vec (range 500)))";
            let vendor = FakeVendor::start(vec![common::vendor::completion(
                "planner-model-001",
                program,
                json!({"prompt_tokens": 100, "completion_tokens": 10}),
            )]);
            let dir = scratch();
            let base = format!("{}/v1", vendor.url);
            let mut command = Command::new(PTC);
            command
                .arg("mcp")
                .args(["--upstreams", "fixtures/missions/two-servers/upstreams.json", "--agentic"])
                .args(["--agentic-model", "openai:planner-model", "--agentic-max-result-bytes", "100"])
                .args(["--log-level", "error"])
                .current_dir(root())
                .env_remove("PTC_UPSTREAMS")
                .env_remove("PTC_LLM_CONFIG")
                .env("HOME", &dir)
                .env("XDG_CONFIG_HOME", &dir)
                .env("OPENAI_API_KEY", "sk-test-reasons")
                .env("OPENAI_BASE_URL", &base)
                .stderr(Stdio::null());
            let mut s = StdioServer::spawn(command);
            let r = s.call("lisp_task", json!({"task": "Every number below 500"}));
            let _ = std::fs::remove_dir_all(&dir);
            r
        }
    }
}

#[test]
fn every_mcp_reason_is_reachable_through_a_real_server() {
    let program_reasons = [ErrorKind::ArithmeticError, ErrorKind::Fail, ErrorKind::ValidationError, ErrorKind::Timeout];
    let all = McpReason::ALL.into_iter().chain(program_reasons.map(McpReason::Eval));
    let mut failures = Vec::new();
    for r in all {
        let got = reach(r);
        let seen = reason_of(&got);
        if seen != r.as_str() {
            failures.push(format!("  {r}: got {seen}: {got}"));
        }
    }
    assert!(failures.is_empty(), "{} reason(s) not reached:\n{}", failures.len(), failures.join("\n"));
}
