//! Every row of the seed's "Error Reasons Reference", reached through the agent API and
//! checked against the reason this project reports. Where the project's one reason
//! vocabulary (`ErrorKind`, shared with `ptc eval` and MCP) is finer than the seed's, the
//! row names both: the seed's `analysis_error` is the analysis category (`unbound_var`,
//! `invalid_form`, ...), its `eval_error` the runtime kinds (`type_error`,
//! `arithmetic_error`, ...), its `tool_not_found` is `unknown_tool`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::{clj, run};
use ptc_lisp_eval::Limits;
use ptc_subagent::{
    CatalogEntry, LlmRetry, LlmTool, MemoryStrategy, ScriptedLlm, Step, SubAgent, SubAgentBuilder, Tool,
};
use serde_json::json;

/// A one-turn agent answering `program`: the turn's error is the mission's reason.
fn one_turn(builder: SubAgentBuilder, program: &str) -> Step {
    let agent = builder.max_turns(1).build().unwrap();
    run(&agent, &ScriptedLlm::texts([clj(program)]))
}

fn reason(step: &Step) -> String {
    step.fail.as_ref().map(|f| f.reason.clone()).unwrap_or_else(|| "ok".into())
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap().block_on(f)
}

#[test]
fn lisp_reasons() {
    // parse_error
    assert_eq!(reason(&one_turn(SubAgent::builder("x"), "(+ 1")), "parse_error");
    // analysis_error: the analysis category
    assert_eq!(reason(&one_turn(SubAgent::builder("x"), "(frobnicate 1)")), "unbound_var");
    // eval_error: the runtime kinds
    assert_eq!(reason(&one_turn(SubAgent::builder("x"), "(+ 1 \"a\")")), "type_error");
    // timeout
    let slow = Tool::new("slow", |_| {
        std::thread::sleep(Duration::from_secs(2));
        Ok(json!(1))
    });
    let step = one_turn(SubAgent::builder("x").tool(slow).timeout(Duration::from_millis(200)), "(tool/slow {})");
    assert_eq!(reason(&step), "timeout");
    // memory_exceeded: the program's heap
    let small = Limits { max_heap_bytes: 10_000, ..Limits::default() };
    let step = one_turn(SubAgent::builder("x").limits(small), "(count (apply str (repeat 100000 \"ab\")))");
    assert_eq!(reason(&step), "memory_exceeded");
    // ...and the agent's memory (definitions kept between turns), strict
    let step = one_turn(
        SubAgent::builder("x").memory_limit(100, MemoryStrategy::Strict),
        "(def big (apply str (repeat 200 \"x\")))",
    );
    assert_eq!(reason(&step), "memory_exceeded");
}

#[test]
fn tool_reasons() {
    // tool_error
    let broken = Tool::new("broken", |_| Err("disk on fire".into()));
    let step = one_turn(SubAgent::builder("x").tool(broken), "(tool/broken {})");
    assert_eq!(reason(&step), "tool_error");
    assert!(step.fail.unwrap().message.contains("disk on fire"));
    // tool_not_found
    let step = one_turn(SubAgent::builder("x"), "(tool/nowhere {})");
    assert_eq!(reason(&step), "unknown_tool");
    // a catalog tool is for planning only: calling it says so
    let step = one_turn(
        SubAgent::builder("x").catalog_tool(CatalogEntry::new("send_email", None, "Sends mail")),
        "(tool/send_email {:to \"a\"})",
    );
    assert_eq!(reason(&step), "unknown_tool");
    assert!(step.fail.unwrap().message.contains("tool/send_email is in the tool catalog for planning only"));
    // validation_error: arguments that do not match a tool's signature
    let typed = Tool::new("typed", |_| Ok(json!(1))).signature("(n :int) -> :int");
    let step = one_turn(SubAgent::builder("x").tool(typed), "(tool/typed {:n \"many\"})");
    assert_eq!(reason(&step), "invalid_tool_args");
    // reserved_tool_name: refused when the agent is built
    let err = SubAgent::builder("x").tool(Tool::fixed("return", json!(1))).build().unwrap_err();
    assert_eq!(err.option, "tools");
    assert!(err.message.contains("reserved"));
}

#[test]
fn loop_reasons() {
    // max_turns_exceeded
    let agent = SubAgent::builder("x").max_turns(2).build().unwrap();
    let step = run(&agent, &ScriptedLlm::texts([clj("(println 1)"), clj("(println 2)")]));
    assert_eq!(reason(&step), "max_turns_exceeded");
    // mission_timeout
    let slow = Tool::new("slow", |_| {
        std::thread::sleep(Duration::from_millis(300));
        Ok(json!(1))
    });
    let agent = SubAgent::builder("x").tool(slow).mission_timeout(Duration::from_millis(100)).build().unwrap();
    let step = run(&agent, &ScriptedLlm::texts([clj("(tool/slow {})"), clj("(return 1)")]));
    assert_eq!(reason(&step), "mission_timeout");
    // llm_error
    let agent = SubAgent::builder("x").llm_retry(LlmRetry { max_attempts: 1, ..LlmRetry::default() }).build().unwrap();
    let step = run(&agent, &ScriptedLlm::texts(Vec::<String>::new()));
    assert_eq!(reason(&step), "llm_error");
    // custom reasons from (fail ...)
    let step = one_turn(SubAgent::builder("x"), "(fail {:reason :out_of_stock :message \"none left\"})");
    assert_eq!(reason(&step), "out_of_stock");
}

#[test]
fn composition_reasons() {
    let child =
        || SubAgent::builder("Answer {{q}}").signature("(q :string) -> :string").description("Answers one question");
    // max_depth_exceeded
    let agent = SubAgent::builder("x").tool(child().as_tool("ask").unwrap()).max_depth(0).build().unwrap();
    let step = run(&agent, &ScriptedLlm::texts([clj("(tool/ask {:q \"a\"})"), clj("(return 1)")]));
    assert_eq!(reason(&step.children[0].step), "max_depth_exceeded");
    // turn_budget_exhausted
    let agent = SubAgent::builder("x").tool(child().as_tool("ask").unwrap()).turn_budget(1).build().unwrap();
    let step = run(&agent, &ScriptedLlm::texts([clj("(tool/ask {:q \"a\"})")]));
    assert_eq!(reason(&step.children[0].step), "turn_budget_exhausted");
    // model_not_found
    let agent = SubAgent::builder("x").tool(child().llm_alias("haiku").as_tool("ask").unwrap()).build().unwrap();
    let step = run(&agent, &ScriptedLlm::texts([clj("(tool/ask {:q \"a\"})"), clj("(return 1)")]));
    assert_eq!(reason(&step.children[0].step), "model_not_found");
    // chained_failure
    let first = SubAgent::builder("x").build().unwrap();
    let step = block_on(first.then(SubAgent::builder("y")).run(&ScriptedLlm::texts([clj("(fail \"no\")")])));
    assert_eq!(reason(&step), "chained_failure");
    // template_error: a prompt placeholder the context lacks
    let first = SubAgent::builder("x").signature("{a :int}").build().unwrap();
    let step = block_on(first.then(SubAgent::builder("use {{b}}")).run(&ScriptedLlm::texts([clj("(return {:a 1})")])));
    assert_eq!(reason(&step), "template_error");
    // ...and an LLM tool's template is checked when it is made
    assert_eq!(LlmTool::new("{{nope}}", "(a :int) -> :int").into_tool("t").unwrap_err().option, "prompt");
    // validation_error: an LLM tool's answer that does not match its signature
    let judge = LlmTool::new("Is {{a}} big?", "(a :int) -> {big :bool}").into_tool("judge").unwrap();
    let agent = SubAgent::builder("x").tool(judge).build().unwrap();
    let step = run(
        &agent,
        &ScriptedLlm::texts([clj("(tool/judge {:a 1})"), "{\"big\": \"perhaps\"}".into(), clj("(return 1)")]),
    );
    assert_eq!(reason(&step.children[0].step), "validation_error");
}

/// A tool's error is the evaluator's `ToolError`: the kind a tool chooses reaches the
/// program as it is (before issue 23 every tool error became `tool_error`).
#[test]
fn a_tool_error_keeps_its_kind() {
    let picky = Tool::with_context("picky", |_, _| Err(ptc_subagent::ToolError::invalid_args("n must be positive")));
    let step = one_turn(SubAgent::builder("x").tool(picky), "(tool/picky {:n -1})");
    assert_eq!(reason(&step), "invalid_tool_args");
    let down = Tool::with_context("down", |_, _| {
        Err(ptc_subagent::ToolError::data("upstream_unavailable", "the shop is down"))
    });
    let step = one_turn(SubAgent::builder("x").tool(down), "(let [r (tool/down {})] (return (:reason r)))");
    assert_eq!(step.return_value, Some(json!("upstream_unavailable")), "{:?}", step.fail);
}
