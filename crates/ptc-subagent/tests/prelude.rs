//! `SubAgentBuilder::prelude`: definitions every program starts with, listed in the first
//! user message, kept out of `memory_limit` and `Step.memory`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;

use common::{clj, run};
use ptc_lisp_eval::{Cancel, Engine, Limits, Memory, NoTools, RunInput};
use ptc_subagent::{MemoryStrategy, Prelude, ScriptedLlm, SubAgent};
use serde_json::json;

/// Runs `source` over `memory` and keeps its definition `name` as `ns/name` (what an
/// MCP server does with a `--prelude` file).
fn define(memory: &mut Memory, ns: &str, name: &str, source: &str) {
    let out = Engine::new(Limits::default()).eval(
        source,
        RunInput::new().with_memory(memory.clone()),
        &NoTools,
        &Cancel::new(),
    );
    assert!(out.is_ok(), "{:?}", out.result);
    let qualified = format!("{ns}/{name}");
    memory.insert(qualified.as_str(), out.memory.get(name).cloned().unwrap());
    if let Some(d) = out.memory.doc(name) {
        memory.set_doc(qualified.as_str(), d);
    }
}

/// A `crm` library: a helper, a documented function calling it, a constant.
fn crm() -> Prelude {
    let mut memory = Memory::new();
    define(&mut memory, "crm", "score", "(defn score [c] (* 2 (:spend c)))");
    define(
        &mut memory,
        "crm",
        "vip?",
        "(defn vip? \"True for big spenders.\nSecond line.\" [c] (> (crm/score c) 100))",
    );
    define(&mut memory, "crm", "vip-limit", "(def vip-limit 100)");
    // a big constant: the embedder's, not the model's
    memory.insert("crm/regions", ptc_lisp_eval::json::from_json(&json!(vec!["eu-west-region"; 2000])));
    Prelude::new(memory).unlisted("crm/score").namespace_doc("crm", "Customer helpers")
}

#[test]
fn programs_call_the_prelude_and_the_prompt_lists_it() {
    let agent = SubAgent::builder("Which customers are VIPs?").prelude(crm()).build().unwrap();
    let first = agent.first_user_message();
    assert!(first.contains(";; === prelude: defined before your program runs"), "{first}");
    assert!(first.contains(";; crm - Customer helpers"), "{first}");
    let vip = format!("{:<30}; function - True for big spenders.\n", "crm/vip?");
    assert!(first.contains(&vip), "{first}");
    let limit = format!("{:<30}; integer, sample: 100\n", "crm/vip-limit");
    assert!(first.contains(&limit), "{first}");
    // a long constant is sampled, not written out
    assert!(first.contains("crm/regions") && first.len() < 8_000, "{first}");
    assert!(!first.contains("Second line") && !first.contains("crm/score"), "{first}");
    // after the tools and data, before the mission
    let (tools, prelude, mission) = (
        first.find(";; === tools ===").unwrap(),
        first.find(";; === prelude").unwrap(),
        first.find("<mission>").unwrap(),
    );
    assert!(tools < prelude && prelude < mission, "{first}");

    // the unlisted helper is still callable (vip? calls it)
    let llm = ScriptedLlm::texts([
        clj("(def picked (filterv crm/vip? [{:spend 10} {:spend 60}]))\n(println (count picked))"),
        clj("(return {:vips (count picked) :limit crm/vip-limit :helper (crm/score {:spend 1})})"),
    ]);
    let step = run(&agent, &llm);
    assert_eq!(step.return_value, Some(json!({"vips": 1, "limit": 100, "helper": 2})), "{:?}", step.fail);
    // only what the programs defined is the step's memory
    assert_eq!(step.memory.keys().collect::<Vec<_>>(), ["picked"]);
}

#[test]
fn the_prelude_does_not_count_against_memory_limit() {
    // the regions constant alone is ~36 KB; the programs' own definitions are tiny
    let agent = SubAgent::builder("Count").prelude(crm()).memory_limit(4096, MemoryStrategy::Strict).build().unwrap();
    let llm = ScriptedLlm::texts([clj("(def n (count crm/regions))"), clj("(return n)")]);
    let step = run(&agent, &llm);
    assert_eq!(step.return_value, Some(json!(2000)), "{:?}", step.fail);
    // a redefined prelude name is the program's own, and counts
    let agent = SubAgent::builder("Count")
        .prelude(Prelude::new({
            let mut m = Memory::new();
            m.insert("limit", ptc_lisp_eval::Value::Int(1));
            m
        }))
        .memory_limit(64, MemoryStrategy::Strict)
        .build()
        .unwrap();
    let llm = ScriptedLlm::texts([clj("(def limit (apply str (repeat 100 \"x\")))"), clj("(return 1)")]);
    let step = run(&agent, &llm);
    assert_eq!(step.fail.map(|f| f.reason), Some("memory_exceeded".to_string()));
}

#[test]
fn chat_keeps_the_prelude_under_the_definitions_passed_back() {
    let agent = SubAgent::builder("Chat").prelude(crm()).build().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let llm = ScriptedLlm::texts([clj("(def mine (crm/vip? {:spend 60}))"), clj("(return mine)")]);
    let reply = rt.block_on(agent.chat(&llm, "first", Vec::new(), BTreeMap::new(), None));
    assert_eq!(reply.memory.keys().collect::<Vec<_>>(), ["mine"]);
    let llm = ScriptedLlm::texts([clj("(return [mine (crm/vip? {:spend 1})])")]);
    let reply = rt.block_on(agent.chat(&llm, "again", reply.messages, reply.memory, None));
    assert_eq!(reply.step.return_value, Some(json!([true, false])), "{:?}", reply.step.fail);
}

#[test]
fn an_unlisted_name_must_be_a_definition() {
    let e = SubAgent::builder("x").prelude(crm().unlisted("crm/nope")).build().unwrap_err();
    assert_eq!(e.option, "prelude");
    assert!(e.message.contains("\"crm/nope\" is marked unlisted"), "{e}");
}
