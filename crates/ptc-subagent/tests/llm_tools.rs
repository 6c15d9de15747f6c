//! LLM tools: one templated model request per call, the JSON answer checked against the
//! signature before the program sees it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::{clj, feedback_after, run};
use ptc_subagent::{Llm, LlmRef, LlmTool, Message, ScriptedLlm, SubAgent, Tool};
use serde_json::json;

fn evaluate() -> LlmTool {
    LlmTool::new("Is this email urgent? Subject: {{subject}}", "(subject :string) -> {urgent :bool, reason :string}")
}

fn agent_with(tool: Tool) -> SubAgent {
    SubAgent::builder("Triage the inbox").tool(tool).build().unwrap()
}

fn user_text(m: &Message) -> String {
    match m {
        Message::User { content } => content.clone(),
        other => panic!("not a user message: {other:?}"),
    }
}

#[test]
fn a_judgment_uses_the_callers_model_and_returns_the_checked_answer() {
    let agent = agent_with(evaluate().into_tool("evaluate").unwrap());
    let llm = ScriptedLlm::texts([
        clj("(return (tool/evaluate {:subject \"Server down!\"}))"),
        "{\"urgent\": true, \"reason\": \"Production issue\"}".to_string(),
    ]);
    let step = run(&agent, &llm);
    assert_eq!(step.return_value, Some(json!({"urgent": true, "reason": "Production issue"})), "{:?}", step.fail);
    let req = &llm.requests()[1];
    assert_eq!(req.system, ptc_subagent::JUDGMENT_SYSTEM_PROMPT);
    let text = user_text(&req.messages[0]);
    assert!(text.starts_with("Is this email urgent? Subject: Server down!"), "{text}");
    assert!(text.contains("Answer with JSON of type: {urgent :bool, reason :string}"), "{text}");
    assert!(req.options.response_schema.is_some());
    // the judgment is kept in the caller's step
    let child = &step.children[0];
    assert_eq!((child.turn, child.tool.as_str()), (1, "evaluate"));
    assert_eq!(child.step.turns[0].raw_response, "{\"urgent\": true, \"reason\": \"Production issue\"}");
}

#[test]
fn answers_are_coerced_to_the_signature_and_fenced_json_is_accepted() {
    let agent = agent_with(evaluate().into_tool("evaluate").unwrap());
    let llm = ScriptedLlm::texts([
        clj("(return (tool/evaluate {:subject \"hi\"}))"),
        "Here you go:\n```json\n{\"urgent\": \"false\", \"reason\": \"greeting\", \"extra\": 1}\n```".to_string(),
    ]);
    let step = run(&agent, &llm);
    let v = step.return_value.unwrap();
    assert_eq!(v["urgent"], json!(false));
    assert_eq!(v["reason"], json!("greeting"));
}

#[test]
fn an_answer_that_does_not_fit_is_a_tool_error_the_program_sees() {
    let agent = agent_with(evaluate().into_tool("evaluate").unwrap());
    let llm = ScriptedLlm::texts([
        clj("(tool/evaluate {:subject \"hi\"})"),
        "{\"urgent\": \"maybe\"}".to_string(),
        clj("(tool/evaluate {:subject \"hi\"})"),
        "I think it is urgent.".to_string(),
        clj("(return {:urgent false})"),
    ]);
    let step = run(&agent, &llm);
    assert!(step.is_ok());
    let fb = feedback_after(&llm, 2);
    assert!(fb.contains("LLM tool evaluate failed (validation_error)"), "{fb}");
    let fb = feedback_after(&llm, 4);
    assert!(fb.contains("is not JSON"), "{fb}");
    assert_eq!(step.children.len(), 2);
    assert!(step.children.iter().all(|c| c.step.fail.as_ref().unwrap().reason == "validation_error"));
}

#[test]
fn inputs_are_checked_before_any_request() {
    let agent = agent_with(evaluate().into_tool("evaluate").unwrap());
    let llm = ScriptedLlm::texts([clj("(tool/evaluate {:subject 42 :body \"x\"})"), clj("(return 1)")]);
    let step = run(&agent, &llm);
    assert!(step.is_ok());
    assert_eq!(llm.requests().len(), 2);
    assert!(feedback_after(&llm, 1).contains("invalid arguments for tool/evaluate"));
}

#[test]
fn batch_classification_renders_each_item_and_nothing_for_an_empty_list() {
    let tool = LlmTool::new(
        "Classify urgency for each:\n{{#items}}- {{id}}: {{subject}}\n{{/items}}Done.",
        "(items [{id :int, subject :string}]) -> [{id :int, urgency :string}]",
    )
    .into_tool("classify")
    .unwrap();
    let agent = agent_with(tool);
    let llm = ScriptedLlm::texts([
        clj(
            "(def a (tool/classify {:items [{:id 1 :subject \"Server down\"} {:id 2 :subject \"Lunch?\"}]}))\n(def b (tool/classify {:items []}))\n(return {:a a :b b})",
        ),
        "[{\"id\": 1, \"urgency\": \"high\"}, {\"id\": 2, \"urgency\": \"low\"}]".to_string(),
        "[]".to_string(),
    ]);
    let step = run(&agent, &llm);
    assert_eq!(
        step.return_value,
        Some(json!({"a": [{"id": 1, "urgency": "high"}, {"id": 2, "urgency": "low"}], "b": []})),
        "{:?}",
        step.fail
    );
    let reqs = llm.requests();
    let first = user_text(&reqs[1].messages[0]);
    assert!(first.starts_with("Classify urgency for each:\n- 1: Server down\n- 2: Lunch?\nDone."), "{first}");
    let empty = user_text(&reqs[2].messages[0]);
    assert!(empty.starts_with("Classify urgency for each:\nDone."), "{empty}");
}

#[test]
fn nested_fields_are_reachable_with_dots() {
    let tool = LlmTool::new(
        "Analyze profile for {{user.name}} (ID: {{user.id}})",
        "(user {name :string, id :int}) -> {summary :string}",
    )
    .into_tool("profile")
    .unwrap();
    let agent = agent_with(tool);
    let llm = ScriptedLlm::texts([
        clj("(return (tool/profile {:user {:name \"Ada\" :id 7}}))"),
        "{\"summary\": \"ok\"}".to_string(),
    ]);
    let step = run(&agent, &llm);
    assert!(step.is_ok(), "{:?}", step.fail);
    assert!(user_text(&llm.requests()[1].messages[0]).starts_with("Analyze profile for Ada (ID: 7)"));
}

#[test]
fn template_errors_are_found_when_the_tool_is_made() {
    let err = LlmTool::new("Is {{text}} urgent?", "(subject :string) -> :bool").into_tool("t").unwrap_err();
    assert_eq!(err.option, "prompt");
    assert!(err.message.contains("{{text}} is not a signature input"), "{err}");
    let err = LlmTool::new("{{#items}}x", "(items [:string]) -> :bool").into_tool("t").unwrap_err();
    assert!(err.message.contains("never closed"), "{err}");
    let err = LlmTool::new("{{user.age}}", "(user {name :string}) -> :bool").into_tool("t").unwrap_err();
    assert!(err.message.contains("has no field age"), "{err}");
    let err = LlmTool::new("x", "(a :strin) -> :bool").into_tool("t").unwrap_err();
    assert_eq!(err.option, "signature");
}

#[test]
fn the_model_can_be_explicit_or_a_registry_alias() {
    let cheap = Arc::new(ScriptedLlm::texts(["{\"urgent\": false, \"reason\": \"cheap\"}"]));
    let agent = agent_with(evaluate().llm(LlmRef::Explicit(cheap.clone())).into_tool("evaluate").unwrap());
    let llm = ScriptedLlm::texts([clj("(return (tool/evaluate {:subject \"x\"}))")]);
    assert_eq!(run(&agent, &llm).return_value.unwrap()["reason"], json!("cheap"));
    assert_eq!(cheap.remaining(), 0);

    let haiku = Arc::new(ScriptedLlm::texts(["{\"urgent\": false, \"reason\": \"haiku\"}"]));
    let registry = [("haiku".to_string(), haiku as Arc<dyn Llm>)].into_iter().collect();
    let agent = SubAgent::builder("Triage")
        .tool(evaluate().llm(LlmRef::Alias("haiku".into())).into_tool("evaluate").unwrap())
        .llm_registry(registry)
        .build()
        .unwrap();
    let llm = ScriptedLlm::texts([clj("(return (tool/evaluate {:subject \"x\"}))")]);
    assert_eq!(run(&agent, &llm).return_value.unwrap()["reason"], json!("haiku"));

    let agent = agent_with(evaluate().llm(LlmRef::Alias("opus".into())).into_tool("evaluate").unwrap());
    let llm = ScriptedLlm::texts([clj("(tool/evaluate {:subject \"x\"})"), clj("(return 1)")]);
    let step = run(&agent, &llm);
    assert!(feedback_after(&llm, 1).contains("LLM tool evaluate failed (model_not_found)"));
    assert!(step.children.is_empty() || step.children[0].step.fail.is_some());
}

#[test]
fn a_model_error_is_a_tool_error_with_llm_error() {
    let agent = agent_with(
        evaluate()
            .llm_retry(ptc_subagent::LlmRetry { max_attempts: 1, ..Default::default() })
            .into_tool("evaluate")
            .unwrap(),
    );
    let llm = ScriptedLlm::from_jsonl(&format!(
        "{}\n{{\"error\": \"server_error\"}}\n{}",
        json!({"content": clj("(tool/evaluate {:subject \"x\"})")}),
        json!({"content": clj("(return 1)")})
    ))
    .unwrap();
    let step = run(&agent, &llm);
    assert!(step.is_ok());
    assert!(feedback_after(&llm, 2).contains("(llm_error)"), "{}", feedback_after(&llm, 2));
}

#[test]
fn with_tools_an_llm_tool_becomes_an_agent_tool() {
    let tool = LlmTool::new("Look up {{id}}", "(id :int) -> {name :string}")
        .description("Finds a customer's name")
        .tools(vec![Tool::fixed("customers", json!([{"id": 7, "name": "Ada"}]))])
        .into_tool("lookup")
        .unwrap();
    let agent = agent_with(tool);
    let llm = ScriptedLlm::texts([
        clj("(return (tool/lookup {:id 7}))"),
        clj("(return {:name (:name (first (filter #(= (:id %) data/id) (tool/customers {}))))})"),
    ]);
    let step = run(&agent, &llm);
    assert_eq!(step.return_value, Some(json!({"name": "Ada"})), "{:?}", step.fail);
    assert_eq!(step.children[0].step.usage.turns, 1);
}

#[test]
fn a_judgment_reaches_the_observer_as_a_nested_one_turn_run() {
    let agent = agent_with(evaluate().into_tool("evaluate").unwrap());
    let llm = ScriptedLlm::texts([
        clj("(return (tool/evaluate {:subject \"Server down!\"}))"),
        "{\"urgent\": true, \"reason\": \"prod\"}".to_string(),
    ]);
    let (step, events) = common::run_observed(&agent, &llm);
    assert!(step.is_ok());
    let kinds: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            ptc_subagent::Event::Nested { agent, depth: 1, inner } if agent == "evaluate" => {
                Some(serde_json::to_value(inner).unwrap()["event"].as_str().unwrap().to_string())
            }
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["run_start", "llm_request", "llm_response", "turn_end", "run_end"]);
}

#[test]
fn each_judgment_takes_one_turn_of_the_trees_budget() {
    let agent = SubAgent::builder("Triage the inbox")
        .tool(evaluate().into_tool("evaluate").unwrap())
        .turn_budget(3)
        .max_turns(5)
        .build()
        .unwrap();
    let answer = "{\"urgent\": true, \"reason\": \"x\"}".to_string();
    let llm = ScriptedLlm::texts([
        clj("(tool/evaluate {:subject \"a\"})\n(tool/evaluate {:subject \"b\"})\n(tool/evaluate {:subject \"c\"})"),
        answer.clone(),
        answer.clone(),
        answer,
        clj("(return {:urgent false})"),
    ]);
    let step = run(&agent, &llm);
    // the root's turn and two judgments spend the budget of 3: the third judgment never
    // reaches the model, and the root has no turn left to answer with
    assert_eq!(llm.requests().len(), 3);
    assert_eq!(step.children.len(), 3);
    let third = step.children[2].step.fail.as_ref().unwrap();
    assert_eq!(third.reason, "turn_budget_exhausted");
    assert_eq!(step.fail.as_ref().unwrap().reason, "turn_budget_exhausted");
}

#[test]
fn a_judgment_runs_one_level_below_its_caller_and_respects_max_depth() {
    let agent = SubAgent::builder("Triage the inbox")
        .tool(evaluate().into_tool("evaluate").unwrap())
        .max_depth(0)
        .build()
        .unwrap();
    let llm = ScriptedLlm::texts([clj("(tool/evaluate {:subject \"a\"})"), clj("(return {:urgent false})")]);
    let step = run(&agent, &llm);
    assert!(step.is_ok(), "{:?}", step.fail);
    // no request for the judgment: depth 1 > 0
    assert_eq!(llm.requests().len(), 2);
    let fb = feedback_after(&llm, 1);
    assert!(fb.contains("LLM tool evaluate failed (max_depth_exceeded)"), "{fb}");
    let fail = step.children[0].step.fail.as_ref().unwrap();
    assert_eq!(fail.reason, "max_depth_exceeded");
    assert!(fail.message.contains("depth 1 > 0"), "{}", fail.message);
}

#[test]
fn a_judgment_inside_a_child_agent_counts_from_the_root() {
    let child = SubAgent::builder("Check {{subject}}")
        .signature("(subject :string) -> :bool")
        .description("Checks one subject")
        .tool(evaluate().into_tool("evaluate").unwrap())
        .as_tool("checker")
        .unwrap();
    // root depth 0, child depth 1, its judgment would be depth 2 > 1
    let agent = SubAgent::builder("Triage").tool(child).max_depth(1).build().unwrap();
    let llm = ScriptedLlm::texts([
        clj("(tool/checker {:subject \"a\"})"),
        clj("(tool/evaluate {:subject \"a\"})"),
        clj("(return true)"),
        clj("(return {:done true})"),
    ]);
    let step = run(&agent, &llm);
    assert!(step.is_ok(), "{:?}", step.fail);
    let child = &step.children[0].step;
    assert_eq!(child.return_value, Some(json!(true)));
    assert_eq!(child.children[0].step.fail.as_ref().unwrap().reason, "max_depth_exceeded");
    assert_eq!(llm.requests().len(), 4);
}
