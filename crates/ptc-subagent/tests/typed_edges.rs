//! Typed Rust at the edges: tools over serde types, the answer as a Rust type, any pointer
//! to a model is a model, panics in a model or a tool contained, usage of the whole tree.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::{clj, run};
use ptc_subagent::{
    BoxFuture, Fail, Llm, LlmError, LlmRequest, LlmResponse, LlmTool, ScriptedLlm, SubAgent, Tool, ToolContext,
    ToolError,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Deserialize)]
struct Query {
    customer: Customer,
    limit: u32,
}

#[derive(Deserialize)]
struct Customer {
    id: u64,
}

#[derive(Serialize)]
struct Orders {
    customer: u64,
    ids: Vec<u32>,
}

fn orders(q: Query, _cx: &ToolContext) -> Result<Orders, ToolError> {
    Ok(Orders { customer: q.customer.id, ids: (1..=q.limit).collect() })
}

fn agent(tool: Tool) -> SubAgent {
    SubAgent::builder("Find the orders").max_turns(1).tool(tool).build().unwrap()
}

#[test]
fn a_typed_tool_deserialises_its_arguments_and_serialises_its_result() {
    let llm = ScriptedLlm::texts([clj("(return (tool/orders {:customer {:id 7} :limit 2}))")]);
    let step = run(&agent(Tool::typed("orders", orders)), &llm);
    assert_eq!(step.return_value, Some(json!({"customer": 7, "ids": [1, 2]})), "{:?}", step.fail);
}

#[test]
fn a_typed_tool_names_the_field_that_does_not_fit() {
    let llm = ScriptedLlm::texts([clj("(return (tool/orders {:customer {:id \"seven\"} :limit 2}))")]);
    let step = run(&agent(Tool::typed("orders", orders)), &llm);
    let error = step.turns[0].error.clone().unwrap_or_default();
    assert!(error.starts_with("tool_error"), "{error}");
    assert!(error.contains("argument `customer.id`"), "{error}");
    let llm = ScriptedLlm::texts([clj("(return (tool/orders {:customer {:id 1}}))")]);
    let step = run(&agent(Tool::typed("orders", orders)), &llm);
    let error = step.turns[0].error.clone().unwrap_or_default();
    assert!(error.contains("missing field `limit`"), "{error}");
}

#[test]
fn an_async_typed_tool_works_the_same_way() {
    let tool = Tool::typed_async("orders", |q: Query, cx: ToolContext| async move { orders(q, &cx) });
    let llm = ScriptedLlm::texts([clj("(return (tool/orders {:customer {:id 3} :limit 1}))")]);
    let step = run(&agent(tool.clone()), &llm);
    assert_eq!(step.return_value, Some(json!({"customer": 3, "ids": [1]})), "{:?}", step.fail);
    let llm = ScriptedLlm::texts([clj("(return (tool/orders {:customer {:id 3} :limit -1}))")]);
    let error = run(&agent(tool), &llm).turns[0].error.clone().unwrap_or_default();
    assert!(error.contains("argument `limit`"), "{error}");
}

#[derive(Debug, Deserialize, PartialEq)]
struct Totals {
    count: u32,
    total: f64,
}

#[test]
fn the_answer_is_read_as_a_rust_type_and_a_mismatch_names_the_field() {
    let agent = SubAgent::builder("Sum").signature("{count :int, total :float}").build().unwrap();
    let step = run(&agent, &ScriptedLlm::texts([clj("(return {:count 2 :total 19.75})")]));
    assert_eq!(step.answer::<Totals>(), Ok(Totals { count: 2, total: 19.75 }));
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Wrong {
        count: String,
    }
    let fail = step.answer::<Wrong>().unwrap_err();
    assert_eq!(fail.reason, "validation_error");
    assert!(fail.message.contains("at `count`"), "{}", fail.message);
    // a failed mission gives its own Fail, usable with `?`
    let failed = run(&agent, &ScriptedLlm::texts([clj("(fail {:reason :not_found :message \"no orders\"})")]));
    fn read(step: &ptc_subagent::Step) -> Result<Totals, Box<dyn std::error::Error>> {
        Ok(step.answer::<Totals>()?)
    }
    let err = read(&failed).unwrap_err();
    assert!(err.to_string().contains("not_found"), "{err}");
    let fail: Fail = failed.answer::<Totals>().unwrap_err();
    assert_eq!(fail.reason, "not_found");
}

#[test]
fn pointers_to_a_model_are_models() {
    let agent = SubAgent::builder("One").build().unwrap();
    let arc: Arc<dyn Llm> = Arc::new(ScriptedLlm::texts([clj("(return 1)")]));
    assert_eq!(run(&agent, &arc).return_value, Some(json!(1)));
    let boxed: Box<dyn Llm> = Box::new(ScriptedLlm::texts([clj("(return 2)")]));
    assert_eq!(run(&agent, &boxed).return_value, Some(json!(2)));
    let plain = ScriptedLlm::texts([clj("(return 3)")]);
    let by_ref: &ScriptedLlm = &plain;
    assert_eq!(run(&agent, &by_ref).return_value, Some(json!(3)));
    assert_eq!(arc.name(), Arc::new(ScriptedLlm::texts(["x"])).name());
}

/// A model client with a bug: it panics, before or while answering.
struct Buggy {
    in_future: bool,
}

impl Llm for Buggy {
    fn complete<'a>(&'a self, _request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        if !self.in_future {
            panic!("index out of bounds in the client");
        }
        Box::pin(async { panic!("the client's future broke") })
    }
}

#[test]
fn a_panicking_model_ends_the_mission_in_llm_error() {
    let agent = SubAgent::builder("One").build().unwrap();
    for (in_future, said) in [(false, "index out of bounds"), (true, "future broke")] {
        let step = run(&agent, &Buggy { in_future });
        let fail = step.fail.expect("the mission fails");
        assert_eq!(fail.reason, "llm_error", "{}", fail.message);
        assert!(fail.message.contains(said), "{}", fail.message);
    }
}

#[test]
fn a_panicking_tool_is_a_tool_error_sync_or_async() {
    let sync = Tool::new("boom", |_| panic!("sync tool bug"));
    let asynchronous = Tool::new_async("boom", |_, _| async { panic!("async tool bug") });
    for (tool, said) in [(sync, "sync tool bug"), (asynchronous, "async tool bug")] {
        let step = run(&agent(tool), &ScriptedLlm::texts([clj("(return (tool/boom {}))")]));
        let error = step.turns[0].error.clone().unwrap_or_default();
        assert!(error.starts_with("tool_error"), "{error}");
        assert!(error.contains(said), "{error}");
    }
}

#[test]
fn usage_covers_the_whole_tree_and_keeps_the_agent_s_own_share() {
    let judge =
        LlmTool::new("Is {{subject}} urgent?", "(subject :string) -> {urgent :bool}").into_tool("judge").unwrap();
    let agent = SubAgent::builder("Triage").max_turns(2).tool(judge).build().unwrap();
    let llm = ScriptedLlm::texts([
        clj("(def a (tool/judge {:subject \"x\"}))\n(def b (tool/judge {:subject \"y\"}))\na"),
        "{\"urgent\": true}".to_string(),
        "{\"urgent\": false}".to_string(),
        clj("(return [a b])"),
    ]);
    let step = run(&agent, &llm);
    assert!(step.is_ok(), "{:?}", step.fail);
    assert_eq!(llm.requests().len(), 4);
    assert_eq!(step.usage.llm_requests, 4, "the mission's requests and its two LLM tool calls");
    assert_eq!(step.own_usage().llm_requests, 2);
    assert_eq!(step.usage.turns, 2);
    let json = serde_json::to_value(&step).unwrap();
    assert_eq!(json["own_usage"]["llm_requests"], json!(2));
}

#[test]
fn an_async_tool_called_outside_any_runtime_runs_on_the_crate_s_tool_runtime() {
    // a compiled agent is executed from plain threads: its async tool still gets timers
    let agent = SubAgent::builder("Double {{n}}")
        .signature(":int")
        .context_value("n", json!(4))
        .tool(Tool::new_async("double", |args, _cx| async move {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            Ok(json!(args["n"].as_i64().unwrap_or(0) * 2))
        }))
        .build()
        .unwrap();
    let llm = ScriptedLlm::texts([clj("(return (tool/double {:n data/n}))")]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let compiled = rt.block_on(agent.compile(&llm)).unwrap();
    drop(rt);
    let context = json!({"n": 21});
    assert_eq!(compiled.execute(context.as_object().unwrap().clone()), Ok(json!(42)));
}
