//! `ptc run --upstreams FILE` and agent-file upstream grants, with the real binary, real
//! MCP server processes (`fixtures/missions/two-servers/mini_mcp.py`, standard-library
//! Python, no network) and scripted models.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Output;

use common::cli::{command, err, out, root, scratch, script, trace_events, write};
use serde_json::{Value, json};

const UPSTREAMS: &str = "fixtures/missions/two-servers/upstreams.json";

fn ptc(args: &[&str]) -> Output {
    command().args(args).current_dir(root()).env_remove("PTC_UPSTREAMS").env("HOME", scratch()).output().unwrap()
}

#[test]
fn the_demo_joins_two_servers_in_one_program() {
    let dir = scratch();
    let trace = dir.join("trace.jsonl");
    let o = ptc(&[
        "run",
        "--upstreams",
        UPSTREAMS,
        "--prompt-file",
        "fixtures/missions/two-servers/prompt.txt",
        "--signature",
        "{customers [{name :string, owed :float}], total :float}",
        "--llm",
        "script:fixtures/missions/two-servers/script.jsonl",
        "--output",
        "json",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    let step: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(
        step["return"],
        json!({"customers": [{"name": "Initech", "owed": 2500.0}, {"name": "Acme GmbH", "owed": 1500.0}], "total": 4000.0})
    );
    // the step keeps every upstream call with its turn, and the metrics
    let calls = step["upstream_calls"].as_array().unwrap();
    let who: Vec<(&str, &str, u64)> = calls
        .iter()
        .map(|c| (c["server"].as_str().unwrap(), c["tool"].as_str().unwrap(), c["turn"].as_u64().unwrap()))
        .collect();
    assert_eq!(who, vec![("crm", "find_customers", 2), ("billing", "open_invoices", 2)]);
    assert!(calls.iter().all(|c| c["status"] == "ok" && c["result_bytes"].as_u64().unwrap() > 0));
    assert_eq!(step["turns"][1]["upstream_calls"].as_array().unwrap().len(), 2);
    let m = &step["ptc_metrics"];
    assert_eq!(m["upstream_call_count"], 2);
    assert_eq!(m["final_result_bytes"], step["return"].to_string().len());
    assert!(m["payload_reduction_ratio"].as_f64().unwrap() > 1.0, "{m}");
    // the system prompt carries the inline catalog (2 small servers: auto -> inline)
    let events = trace_events(&trace);
    let system = events.iter().find(|e| e["event"] == "llm_request").unwrap()["system"].as_str().unwrap().to_string();
    assert!(system.contains("<upstream_tools>"), "{system}");
    assert!(system.contains("(dir \"billing\" {:limit 20})"), "{system}");
    assert!(system.contains("find_customers - Customers of the CRM"), "{system}");
    let summary = events.iter().find(|e| e["event"] == "upstream_summary").unwrap();
    assert_eq!(summary["upstream_calls"].as_array().unwrap().len(), 2);
    assert_eq!(summary["ptc_metrics"]["upstream_ok_count"], 2);
    // the text report names the calls too
    let o = ptc(&[
        "run",
        "--upstreams",
        UPSTREAMS,
        "--prompt-file",
        "fixtures/missions/two-servers/prompt.txt",
        "--llm",
        "script:fixtures/missions/two-servers/script.jsonl",
    ]);
    assert!(out(&o).contains("── upstreams ── 2 call(s), 2 ok, 0 failed"), "{}", out(&o));
}

#[test]
fn lazy_catalog_mode_shows_servers_only_and_the_env_var_finds_the_file() {
    let dir = scratch();
    let trace = dir.join("trace.jsonl");
    let s =
        script(&dir, &["(return (count (:items (:value (tool/call {:server \"crm\" :tool \"find_customers\"})))))"]);
    let o = command()
        .args(["run", "--prompt", "count customers", "--llm", &format!("script:{s}"), "--output", "json"])
        .args(["--catalog-mode", "lazy", "--trace", trace.to_str().unwrap()])
        .current_dir(root())
        .env("PTC_UPSTREAMS", UPSTREAMS)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    let step: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(step["return"], json!(4));
    let events = trace_events(&trace);
    let system = events.iter().find(|e| e["event"] == "llm_request").unwrap()["system"].as_str().unwrap();
    assert!(system.contains("(tool/servers)"), "{system}");
    assert!(!system.contains("(dir \"crm\""), "{system}");
    assert!(system.contains("use (dir \"server\") to list"), "{system}");
}

#[test]
fn a_dead_upstream_is_a_tool_result_the_mission_survives() {
    let dir = scratch();
    let cfg = write(
        &dir,
        "upstreams.json",
        &json!({"upstreams": {"flaky": {"transport": "mcp_stdio", "command": "python3",
            "args": [root().join("fixtures/missions/two-servers/mini_mcp.py"), "flaky"]}}})
        .to_string(),
    );
    let s = script(
        &dir,
        &[
            "(def r (tool/call {:server \"flaky\" :tool \"boom\"}))\n(println (:ok r) (:reason r))",
            "(return (str \"degraded: \" (name (:reason r))))",
        ],
    );
    let o = ptc(&["run", "--upstreams", &cfg, "--prompt", "x", "--llm", &format!("script:{s}"), "--output", "json"]);
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    let step: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(step["return"], json!("degraded: upstream_unavailable"));
    assert_eq!(step["upstream_calls"][0]["status"], "error");
    assert_eq!(step["upstream_calls"][0]["reason"], "upstream_unavailable");
    assert_eq!(step["ptc_metrics"]["upstream_error_count"], 1);
}

#[test]
fn text_mode_offers_upstream_tools_natively() {
    let dir = scratch();
    let lines = [
        json!({"content": "", "tool_calls": [{"id": "c1", "name": "crm__find_customers", "args": {"region": "us"}}]}),
        json!({"content": "Globex is our only US customer."}),
    ];
    let s = write(&dir, "script.jsonl", &lines.iter().map(Value::to_string).collect::<Vec<_>>().join("\n"));
    let o = ptc(&[
        "run",
        "--upstreams",
        UPSTREAMS,
        "--mode",
        "text",
        "--prompt",
        "Who are our US customers?",
        "--llm",
        &format!("script:{s}"),
        "--output",
        "json",
    ]);
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    let step: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(step["return"], json!("Globex is our only US customer."));
    let call = &step["turns"][0]["tool_calls"][0];
    assert_eq!(call["name"], "crm__find_customers");
    assert_eq!(call["exposure_layer"], "native");
    assert_eq!(call["result"]["items"][0]["name"], "Globex", "{call}");
    // lisp mode cannot offer tools natively
    let o =
        ptc(&["run", "--upstreams", UPSTREAMS, "--upstream-expose", "native", "--prompt", "x", "--llm", "script:/x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--upstream-expose: in lisp mode the model only writes programs"), "{}", err(&o));
}

/// A root without upstreams and a researcher granted one CRM tool.
fn tree(grants: Value) -> Value {
    json!({
        "prompt": "Report on EU customers",
        "upstreams": [],
        "max_turns": 3,
        "tools": {"researcher": {"agent": {
            "prompt": "Find customers of {{region}}",
            "signature": "(region :string) -> :int",
            "description": "Counts the customers of a region",
            "upstreams": grants,
        }}}
    })
}

#[test]
fn agent_files_grant_upstream_tools_per_agent() {
    let dir = scratch();
    let agent = write(&dir, "agent.json", &tree(json!(["crm/find_customers"])).to_string());
    let s = script(
        &dir,
        &[
            // root: no upstreams, so tool/call is not even a tool here
            "(tool/call {:server \"crm\" :tool \"find_customers\"})",
            "(def n (tool/researcher {:region \"eu\"}))\n(println n)",
            // the child: its granted tool works, billing is not in its view
            "(def r (tool/call {:server \"crm\" :tool \"find_customers\" :args {:region data/region}}))\n(println (:ok r))",
            "(tool/call {:server \"billing\" :tool \"open_invoices\"})",
            "(return (count (:items (:value r))))",
            "(return {:eu n})",
        ],
    );
    let o =
        ptc(&["run", "--upstreams", UPSTREAMS, "--agent", &agent, "--llm", &format!("script:{s}"), "--output", "json"]);
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    let step: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(step["return"], json!({"eu": 2}));
    let root_error = step["turns"][0]["error"].as_str().unwrap();
    assert!(root_error.contains("call"), "{root_error}");
    assert!(step["upstream_calls"].is_null(), "the root made no upstream call: {step}");
    let child = &step["children"][0]["step"];
    let child_error = child["turns"][1]["error"].as_str().unwrap();
    assert!(child_error.contains("no upstream 'billing' configured; configured: crm"), "{child_error}");
    assert_eq!(child["upstream_calls"][0]["tool"], "find_customers");
    assert_eq!(child["ptc_metrics"]["upstream_ok_count"], 1);
}

#[test]
fn a_bad_grant_is_a_config_error_before_any_model_call() {
    let dir = scratch();
    // a script with no answers: any model request would fail the run with exit 1
    let empty = write(&dir, "empty.jsonl", "");
    for (grants, needle) in [
        (
            json!(["crm/nope"]),
            "upstreams: \"crm/nope\": upstream \"crm\" has no tool \"nope\" (its tools: find_customers)",
        ),
        (json!(["erp/*"]), "upstreams: \"erp/*\": no upstream \"erp\" is configured (configured: billing, crm)"),
        (json!(["crm/a/b"]), "upstreams: \"crm/a/b\": write \"server\", \"server/*\" or \"server/tool\""),
    ] {
        let agent = write(&dir, "agent.json", &tree(grants).to_string());
        let o = ptc(&["run", "--upstreams", UPSTREAMS, "--agent", &agent, "--llm", &format!("script:{empty}")]);
        assert_eq!(o.status.code(), Some(2), "{}", err(&o));
        let e = err(&o);
        assert!(e.contains(&format!("agent file {agent}: agent `root.tools.researcher`: {needle}")), "{e}");
    }
    // a grant with no upstreams file at all
    let agent = write(&dir, "agent.json", &tree(json!(["crm/*"])).to_string());
    let o = ptc(&["run", "--agent", &agent, "--llm", &format!("script:{empty}")]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains(
            "agent `root.tools.researcher`: upstreams: names upstream tools, but no upstreams file is configured"
        ),
        "{}",
        err(&o)
    );
}
