//! `ProgramTools`: another host's tools for an agent's programs (what the MCP aggregator
//! plugs in), its catalog in the system prompt, and its accounting in the turn and step.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use common::{clj, run_observed};
use ptc_lisp_eval::{CallCx, Discovery, Host, Outcome, ToolCall, ToolError, ToolSpec, Value};
use ptc_subagent::{Event, ProgramTools, ScriptedLlm, SubAgent};
use serde_json::{Value as Json, json};

/// Answers `tool/call` with 7 (recording a `server`) and `(doc "s/t")`.
struct Upstreams;

impl Host for Upstreams {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec::named("call").describe("call an upstream")]
    }
    fn call(&self, _call: &ToolCall, cx: &CallCx<'_>) -> Result<Value, ToolError> {
        cx.record("server", json!("s"));
        Ok(Value::Int(7))
    }
    fn discover(&self, query: &Discovery<'_>, _cx: &CallCx<'_>) -> Option<Result<Value, ToolError>> {
        match query {
            Discovery::Doc { name } if *name == "s/t" => Some(Ok(Value::str("s/t: the t tool of s"))),
            _ => None,
        }
    }
}

#[derive(Default)]
struct Fake {
    hosts: AtomicU32,
}

impl ProgramTools for Fake {
    fn host(&self) -> Arc<dyn Host> {
        self.hosts.fetch_add(1, Ordering::SeqCst);
        Arc::new(Upstreams)
    }
    fn prompt(&self) -> Option<String> {
        Some("CATALOG: server s, tool t".into())
    }
    fn calls(&self, outcome: &Outcome) -> Vec<Json> {
        outcome
            .tool_calls
            .iter()
            .filter(|r| r.meta.contains_key("server"))
            .map(|r| json!({"server": r.meta["server"]}))
            .collect()
    }
    fn metrics(&self, calls: &[Json], answer_bytes: u64, prints_bytes: u64) -> Json {
        json!({"calls": calls.len(), "answer_bytes": answer_bytes, "prints_bytes": prints_bytes})
    }
}

#[test]
fn programs_reach_the_tools_and_the_step_keeps_their_account() {
    let tools = Arc::new(Fake::default());
    let agent = SubAgent::builder("Use the upstreams").program_tools(tools.clone()).build().unwrap();
    assert!(agent.system_prompt().ends_with("<upstream_tools>\nCATALOG: server s, tool t\n</upstream_tools>"));
    let llm = ScriptedLlm::texts([clj("(def x (tool/call {:server \"s\"}))\n(doc \"s/t\")"), clj("(return x)")]);
    let (step, events) = run_observed(&agent, &llm);
    assert_eq!(step.return_value, Some(json!(7)), "{:?}", step.fail);
    assert_eq!(step.turns[0].prints, vec!["s/t: the t tool of s".to_string()]);
    assert_eq!(step.turns[0].upstream_calls, vec![json!({"server": "s"})]);
    assert!(step.turns[1].upstream_calls.is_empty());
    assert_eq!(step.upstream_calls, vec![json!({"server": "s", "turn": 1})]);
    assert_eq!(step.ptc_metrics, Some(json!({"calls": 1, "answer_bytes": 1, "prints_bytes": 20})));
    // a fresh host (fresh per-program budgets) for each program
    assert_eq!(tools.hosts.load(Ordering::SeqCst), 2);
    let summary = events.iter().find_map(|e| match e {
        Event::UpstreamSummary { upstream_calls, .. } => Some(upstream_calls.len()),
        _ => None,
    });
    assert_eq!(summary, Some(1));
}

#[test]
fn an_agent_without_them_has_no_such_tool_and_no_account() {
    let agent = SubAgent::builder("No upstreams").build().unwrap();
    assert!(!agent.system_prompt().contains("<upstream_tools>"));
    let llm = ScriptedLlm::texts([clj("(tool/call {:server \"s\"})"), clj("(return 1)")]);
    let (step, _) = run_observed(&agent, &llm);
    assert!(step.turns[0].error.as_deref().unwrap_or("").contains("Unknown tool: call"), "{:?}", step.turns[0].error);
    assert!(step.upstream_calls.is_empty() && step.ptc_metrics.is_none());
}
