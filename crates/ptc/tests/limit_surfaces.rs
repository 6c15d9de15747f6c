//! Every resource limit with an error reason fires on every surface that runs programs —
//! `ptc eval`, `ptc eval --jsonl`, `ptc mcp` over stdio and over HTTP, and `ptc run` —
//! when set by the same flag, with the same reason (issue 22). Print caps are checked
//! the same way in `print_caps.rs`; `max_tool_calls` needs tools, which only `ptc run`
//! (a tools file) and upstreams give (`run_cli.rs`, `upstreams_cli.rs`);
//! `max_parallel_workers` answers `parallel_capacity_exceeded` only under a race, which
//! the evaluator's own tests drive.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Write;
use std::process::Stdio;

use common::cli::{command, err, out, scratch, script};
use common::mcp::{Client, HttpServer, StdioServer};
use serde_json::{Value, json};

/// (limit, its flags, a program past it, the reason it must end with).
fn cases() -> Vec<(&'static str, Vec<&'static str>, String, &'static str)> {
    vec![
        (
            "timeout_ms",
            vec!["--timeout-ms", "300", "--max-loop-iterations", "1000000000000"],
            "(loop [i 0] (recur (inc i)))".into(),
            "timeout",
        ),
        (
            "max_heap_bytes",
            vec!["--max-heap-bytes", "100000"],
            "(count (.repeat \"x\" 1000000))".into(),
            "memory_exceeded",
        ),
        (
            "max_loop_iterations",
            vec!["--max-loop-iterations", "100"],
            "(loop [i 0] (if (< i 1000) (recur (inc i)) i))".into(),
            "loop_limit_exceeded",
        ),
        (
            "max_recursion_depth",
            vec!["--max-recursion-depth", "50"],
            "(defn f [n] (if (= n 0) 0 (inc (f (dec n))))) (f 100)".into(),
            "recursion_limit_exceeded",
        ),
        (
            "max_program_bytes",
            vec!["--max-program-bytes", "100"],
            format!("(count \"{}\")", "x".repeat(200)),
            "program_too_large",
        ),
        (
            "max_symbols",
            vec!["--max-symbols", "10"],
            "(let [a 1 b 2 c 3 d 4 e 5 f 6 g 7 h 8 i 9 j 10 k 11 l 12] (+ a l))".into(),
            "symbol_limit_exceeded",
        ),
        ("max_result_bytes", vec!["--max-result-bytes", "100"], "(vec (range 1000))".into(), "output_too_large"),
        ("max_nesting_depth", vec!["--max-nesting-depth", "5"], "(count [[[[[[[1]]]]]]])".into(), "parse_error"),
        ("max_fuel", vec!["--max-fuel", "1000"], "(reduce + (range 100000))".into(), "fuel_exhausted"),
    ]
}

/// The reason MCP answers with: an oversize program is refused with the tool's other
/// argument errors, before it is read (`args_error`, naming the limit; docs/security.md).
fn over_mcp(limit: &str, reason: &'static str) -> &'static str {
    if limit == "max_program_bytes" { "args_error" } else { reason }
}

/// The reason at the start of an MCP text answer (`ok` for a result).
fn reason_of_text(text: &str) -> String {
    if text.starts_with("user=>") || text.starts_with("<prints>") || text.is_empty() {
        "ok".to_string()
    } else {
        text.split(':').next().unwrap_or_default().to_string()
    }
}

#[test]
fn every_limit_fires_over_eval() {
    for (limit, flags, program, reason) in cases() {
        let o = command().args(["eval", "--output", "json"]).args(&flags).args(["-e", &program]).output().unwrap();
        let envelope: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        assert_eq!(envelope["reason"], reason, "{limit}: {}{}", out(&o), err(&o));
        assert_eq!(o.status.code(), Some(1), "{limit}");
    }
}

#[test]
fn every_limit_fires_over_eval_jsonl_and_the_batch_goes_on() {
    for (limit, flags, program, reason) in cases() {
        let mut child = command().args(["eval", "--jsonl"]).args(&flags).stdin(Stdio::piped()).spawn().unwrap();
        let input = format!("{}\n{}\n", json!({"src": program}), json!({"src": "(+ 1 2)"}));
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let o = child.wait_with_output().unwrap();
        let lines: Vec<Value> = out(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2, "{limit}: {}{}", out(&o), err(&o));
        assert_eq!(lines[0]["reason"], reason, "{limit}: {}", lines[0]);
        assert_eq!(lines[1]["result"], "3", "{limit}: the next line runs");
    }
}

#[test]
fn every_limit_fires_over_mcp_stdio_and_the_server_keeps_serving() {
    for (limit, flags, program, reason) in cases() {
        let mut s = StdioServer::start(&[&["--log-level", "error"][..], &flags].concat());
        let text = s.eval_text(&program);
        assert_eq!(reason_of_text(&text), over_mcp(limit, reason), "{limit}: {text:.300}");
        assert!(text.contains(limit) || text.contains(reason), "{limit}: the answer names it: {text:.300}");
        assert_eq!(s.eval_text("(+ 1 2)"), "user=> 3", "{limit}");
    }
}

#[test]
fn every_limit_fires_over_mcp_http_and_the_server_keeps_serving() {
    for (limit, flags, program, reason) in cases() {
        let server = HttpServer::start(&flags);
        let c = Client::connect(server.port, None);
        let text = c.eval_text(2, &program);
        assert_eq!(reason_of_text(&text), over_mcp(limit, reason), "{limit}: {text:.300}");
        assert!(text.contains(limit) || text.contains(reason), "{limit}: the answer names it: {text:.300}");
        assert_eq!(c.eval_text(3, "(+ 1 2)"), "user=> 3", "{limit}");
    }
}

#[test]
fn every_limit_fires_over_run_and_the_mission_goes_on() {
    for (limit, flags, program, reason) in cases() {
        let dir = scratch();
        let llm = format!("script:{}", script(&dir, &[&program, "(return 3)"]));
        let o = command()
            .args(["run", "--prompt", "Go", "--llm", &llm, "--output", "json", "--max-turns", "3"])
            .args(&flags)
            .env_remove("PTC_LLM_CONFIG")
            .output()
            .unwrap();
        let step: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        let error = step["turns"][0]["error"].as_str().unwrap_or_default();
        assert!(error.starts_with(reason), "{limit}: turn 1's error is {error:?}\n{}{}", out(&o), err(&o));
        assert_eq!(step["return"], 3, "{limit}: the mission goes on to its answer: {step}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
