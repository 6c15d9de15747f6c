//! `ptc mcp --debug-tool --trace-dir` with the real binary over stdio: the `lisp_debug`
//! tool sees the calls, keeps no context data, and traces are one capped file per call.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

use common::mcp::StdioServer;
use serde_json::{Value, json};

/// `ptc mcp --log-level error --response-profile structured ARGS` over stdio.
fn start(args: &[&str]) -> StdioServer {
    StdioServer::start(&[&["--log-level", "error", "--response-profile", "structured"][..], args].concat())
}

#[test]
fn lisp_debug_and_traces_see_every_call() {
    let dir = std::env::temp_dir().join(format!("ptc-traces-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let trace_dir = dir.join("traces");
    let mut s = start(&[
        "--debug-tool",
        "--debug-ring-size",
        "10",
        "--trace-dir",
        trace_dir.to_str().unwrap(),
        "--trace-payloads",
        "none",
        "--trace-max-files",
        "2",
    ]);
    let tools = s.request("tools/list", json!({}));
    let names: Vec<&str> =
        tools["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["lisp_eval", "lisp_debug"]);

    s.call("lisp_eval", json!({"program": "(count data/rows)", "context": {"rows": ["private customer row"]}}));
    s.call("lisp_eval", json!({"program": "(/ 1 :x)"}));
    s.call("lisp_eval", json!({"program": "(+ 1 2)"}));
    let recent = s.call("lisp_debug", json!({"op": "recent", "limit": 5}))["structuredContent"].clone();
    assert_eq!(recent["count"], 3, "{recent}");
    assert_eq!(recent["records"][0]["tool"], "lisp_eval");
    assert_eq!(recent["records"][0]["program"]["bytes"], 7);
    assert!(recent["records"][0]["program"].get("text").is_none(), "--trace-payloads none keeps no program text");
    let text = recent.to_string();
    assert!(!text.contains("private customer row"), "context data is never recorded: {text}");
    assert_eq!(recent["records"][1]["status"], "error");
    let id = recent["records"][1]["request_id"].as_str().unwrap().to_string();
    let got = s.call("lisp_debug", json!({"op": "get", "request_id": id}))["structuredContent"].clone();
    assert_eq!(got["record"]["status"], "error");
    let stats = s.call("lisp_debug", json!({"op": "stats"}))["structuredContent"].clone();
    assert_eq!(stats["tools"]["lisp_eval"]["calls"], 3, "lisp_debug does not record itself: {stats}");
    assert_eq!(stats["tools"]["lisp_eval"]["error"], 1);
    assert_eq!(stats["ring_size"], 10);
    assert_eq!(stats["trace_dir_enabled"], true);
    let bad = s.call("lisp_debug", json!({"op": "recent", "limit": 0}));
    assert_eq!(bad["isError"], true);

    let mut files: Vec<_> = std::fs::read_dir(&trace_dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert_eq!(files.len(), 2, "--trace-max-files keeps the newest two");
    let last = std::fs::read_to_string(&files[1]).unwrap();
    let events: Vec<Value> = last.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events[0]["event"], "lisp.execute.start");
    assert_eq!(events[0]["payload_policy"], "none");
    assert_eq!(events.last().unwrap()["event"], "lisp.execute.success");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);

    let o = Command::new(common::cli::PTC).args(["mcp", "--debug-ring-size", "5"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--debug-ring-size must be between 10 and 5000"));
}
