//! Compiled agents: one model turn derives the program; later runs need no model.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::clj;
use ptc_subagent::{ScriptedLlm, SubAgent, Tool};
use serde_json::{Map, Value, json};

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap().block_on(f)
}

fn ctx(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn summariser() -> SubAgent {
    SubAgent::builder("Count the orders over {{min}} and sum them")
        .signature("{count :int, total :int}")
        .context(ctx(json!({"min": 10, "orders": [{"amount": 5}, {"amount": 20}]})))
        .tool(Tool::new("fx", |_| Ok(json!(2))).signature("() -> :int"))
        .max_turns(4)
        .build()
        .unwrap()
}

const PROGRAM: &str = "(let [big (filter #(> (:amount %) data/min) data/orders)]\n  (return {:count (count big) :total (* (tool/fx {}) (sum (map :amount big)))}))";

#[test]
fn a_compiled_program_runs_over_new_context_without_a_model() {
    let llm = ScriptedLlm::texts([clj(PROGRAM)]);
    let compiled = block_on(summariser().compile(&llm)).unwrap();
    assert_eq!(compiled.source(), PROGRAM);
    assert_eq!(compiled.derivation().return_value, Some(json!({"count": 1, "total": 40})));
    let out = compiled.execute(ctx(json!({"min": 1, "orders": [{"amount": 5}, {"amount": 20}, {"amount": 0}]})));
    assert_eq!(out, Ok(json!({"count": 2, "total": 50})));
    let out = compiled.execute(ctx(json!({"min": 100, "orders": []})));
    assert_eq!(out, Ok(json!({"count": 0, "total": 0})));
    // the model was asked exactly once
    assert_eq!(llm.requests().len(), 1);
}

#[test]
fn compiling_is_single_shot_and_a_bad_derivation_is_the_failed_step() {
    // max_turns 4 on the agent, but compile asks once: a turn without return fails
    let llm = ScriptedLlm::texts([clj("(+ 1 \"a\")"), clj(PROGRAM)]);
    let step = block_on(summariser().compile(&llm)).unwrap_err();
    assert_eq!(step.fail.unwrap().reason, "type_error");
    assert_eq!(llm.requests().len(), 1);
}

#[test]
fn executions_are_checked_against_the_signature() {
    let compiled = block_on(summariser().compile(&ScriptedLlm::texts([clj(PROGRAM)]))).unwrap();
    // a context of the wrong shape makes the program fail at run time
    let err = compiled.execute(ctx(json!({"min": 1, "orders": [{"amount": "five"}]}))).unwrap_err();
    assert_eq!(err.reason, "type_error", "{err:?}");
    let agent = SubAgent::builder("x").signature("{n :int}").context(ctx(json!({"xs": [1]}))).build().unwrap();
    let compiled = block_on(agent.compile(&ScriptedLlm::texts([clj("(return {:n (first data/xs)})")]))).unwrap();
    let err = compiled.execute(ctx(json!({"xs": ["a"]}))).unwrap_err();
    assert_eq!(err.reason, "validation_error");
}
