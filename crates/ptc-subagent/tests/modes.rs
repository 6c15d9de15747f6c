//! The native-tool modes (`lisp-tool`, `text`, `combined`), driven by scripted models:
//! every row of combined mode's tables, the protocol errors and universal pairing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use common::*;
use ptc_subagent::{
    Event, Exposure, LlmResponse, Message, Mode, NativeResult, NativeToolCall, ScriptEntry, ScriptedLlm, Status,
    SubAgent, Tool,
};
use serde_json::{Value, json};

/// A scripted answer with native tool calls `(id, name, args)`.
fn calls(list: &[(&str, &str, Value)]) -> ScriptEntry {
    ScriptEntry::Respond(LlmResponse {
        tool_calls: list
            .iter()
            .map(|(id, name, args)| NativeToolCall {
                id: id.to_string(),
                name: name.to_string(),
                args: args.clone(),
                provider_data: None,
            })
            .collect(),
        ..LlmResponse::default()
    })
}

fn lisp(id: &str, program: &str) -> ScriptEntry {
    calls(&[(id, "lisp_eval", json!({"program": program}))])
}

fn text(t: &str) -> ScriptEntry {
    ScriptEntry::Respond(LlmResponse::text(t))
}

/// The tool results of the last request, as `(call_id, parsed content)`.
fn tool_results(llm: &ScriptedLlm, request: usize) -> Vec<(String, Value)> {
    llm.requests()[request]
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult { call_id, content, .. } => {
                Some((call_id.clone(), serde_json::from_str(content).unwrap()))
            }
            _ => None,
        })
        .collect()
}

/// Every assistant tool call in `messages` has exactly one result, right after it.
fn assert_paired(messages: &[Message]) {
    let mut i = 0;
    while i < messages.len() {
        if let Message::Assistant { tool_calls, .. } = &messages[i] {
            for (k, call) in tool_calls.iter().enumerate() {
                match messages.get(i + 1 + k) {
                    Some(Message::ToolResult { call_id, .. }) => assert_eq!(call_id, &call.id),
                    other => panic!("call {} has no result: {other:?}", call.id),
                }
            }
            i += tool_calls.len();
        }
        i += 1;
    }
}

/// A counting `search_logs` tool returning `n` rows.
fn search_logs(n: usize, runs: Arc<AtomicU32>) -> Tool {
    Tool::new("search_logs", move |_args| {
        runs.fetch_add(1, Ordering::SeqCst);
        Ok(Value::Array(
            (0..n).map(|i| json!({"id": i, "timestamp": format!("t{i}"), "message": "error code 42"})).collect(),
        ))
    })
    .signature("(query :string) -> [:any]")
    .description("Search log events.")
}

// ---------- lisp-tool: PTC-Lisp over the tool_call transport ----------

#[test]
fn lisp_tool_offers_exactly_one_native_tool_and_pairs_each_program_result() {
    let agent = SubAgent::builder("Count").mode(Mode::LispTool).signature("{n :int}").build().unwrap();
    let req = agent.first_request();
    assert_eq!(req.tools.len(), 1);
    assert_eq!(req.tools[0].name, "lisp_eval");
    assert!(req.system.contains("call the native `lisp_eval` tool"));
    let llm = ScriptedLlm::new([lisp("c1", "(def n 3)\n(println \"n\" n)\n(inc n)"), lisp("c2", "(return {:n n})")]);
    let step = run(&agent, &llm);
    assert!(step.is_ok(), "{:?}", step.fail);
    assert_eq!(step.return_value, Some(json!({"n": 3})));
    let results = tool_results(&llm, 1);
    assert_eq!(results.len(), 1);
    let (id, r) = &results[0];
    assert_eq!(id, "c1");
    assert_eq!(r["status"], json!("ok"));
    assert_eq!(r["result"], json!("user=> 4"));
    assert_eq!(r["prints"], json!(["n 3"]));
    assert_eq!(r["memory"]["changed"], json!({"n": "3"}));
    assert_eq!(r["memory"]["stored_keys"], json!(["n"]));
    assert_eq!(r["truncated"], json!(false));
    assert_eq!(step.turns[1].program.as_deref(), Some("(return {:n n})"));
}

#[test]
fn lisp_tool_fail_ends_the_run_and_a_direct_answer_is_validated() {
    let agent = SubAgent::builder("x").mode(Mode::LispTool).signature("{n :int}").build().unwrap();
    let llm = ScriptedLlm::new([lisp("c1", "(fail {:reason :not_found :message \"none\"})")]);
    let step = run(&agent, &llm);
    assert_eq!(step.fail.as_ref().map(|f| f.reason.as_str()), Some("not_found"));

    let llm = ScriptedLlm::new([text("{\"n\": \"three\"}"), text("{\"n\": 3}")]);
    let step = run(&agent, &llm);
    assert_eq!(step.return_value, Some(json!({"n": 3})));
    assert!(feedback_after(&llm, 1).starts_with("<error_feedback>"), "{}", feedback_after(&llm, 1));
}

#[test]
fn lisp_tool_protocol_errors_are_paired_and_the_run_goes_on() {
    let agent = SubAgent::builder("x").mode(Mode::LispTool).build().unwrap();
    let llm = ScriptedLlm::new([
        calls(&[("a", "lisp_eval", json!({"program": "1"})), ("b", "lisp_eval", json!({"program": "2"}))]),
        calls(&[("c", "search", json!({}))]),
        calls(&[("d", "lisp_eval", json!({"program": 42}))]),
        lisp("e", "(return 7)"),
    ]);
    let step = run(&agent, &llm);
    assert_eq!(step.return_value, Some(json!(7)));
    let r = tool_results(&llm, 1);
    assert_eq!(r.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    assert!(r.iter().all(|(_, v)| v["reason"] == json!("multiple_tool_calls")));
    assert_eq!(tool_results(&llm, 2)[2].1["reason"], json!("unknown_tool"));
    let d = &tool_results(&llm, 3)[3].1;
    assert_eq!(d["reason"], json!("args_error"));
    assert_eq!(d["message"], json!("lisp_eval `program` must be a string, got 42."));
    assert_paired(&llm.requests()[3].messages);
}

#[test]
fn lisp_tool_tools_default_to_programs() {
    let agent = SubAgent::builder("x").mode(Mode::LispTool).tool(Tool::fixed("rate", json!(2))).build().unwrap();
    assert_eq!(agent.first_request().tools.len(), 1, "app tools are not offered natively");
    let llm = ScriptedLlm::new([lisp("c1", "(return (* 21 (tool/rate {})))")]);
    let (step, events) = run_observed(&agent, &llm);
    assert_eq!(step.return_value, Some(json!(42)));
    assert_eq!(step.turns[0].tool_calls[0].exposure_layer, "ptc_lisp");
    let ev = events.iter().find(|e| matches!(e, Event::ToolCall { .. })).unwrap();
    assert_eq!(serde_json::to_value(ev).unwrap()["exposure_layer"], json!("ptc_lisp"));
    assert_paired(&llm.requests()[0].messages);
}

#[test]
fn lisp_tool_calls_app_tools_from_programs_only() {
    let agent = SubAgent::builder("x")
        .mode(Mode::LispTool)
        .tool(Tool::fixed("native_only", json!(1)).expose(Exposure::Native))
        .build()
        .unwrap_err();
    assert_eq!(agent.option, "tools");
}

// ---------- text mode ----------

#[test]
fn text_mode_answers_raw_text_without_a_signature() {
    let agent = SubAgent::builder("Say hi").mode(Mode::Text).build().unwrap();
    let req = agent.first_request();
    assert!(req.tools.is_empty() && req.options.response_schema.is_none());
    let llm = ScriptedLlm::new([text("Hello there!")]);
    let step = run(&agent, &llm);
    assert_eq!(step.return_value, Some(json!("Hello there!")));
}

#[test]
fn text_mode_json_answers_are_validated_with_the_json_error_retry() {
    let agent = SubAgent::builder("Count").mode(Mode::Text).signature("{count :int}").build().unwrap();
    let req = agent.first_request();
    assert_eq!(req.options.response_schema.as_ref().unwrap()["required"], json!(["count"]));
    let llm = ScriptedLlm::new([text("about five"), text("```json\n{\"count\": 5}\n```")]);
    let step = run(&agent, &llm);
    assert_eq!(step.return_value, Some(json!({"count": 5})));
    let fb = feedback_after(&llm, 1);
    assert!(fb.contains("the answer is not valid JSON") && fb.contains("Your answer was:\nabout five"), "{fb}");
    assert_eq!(step.turns[0].error.as_deref().map(|e| e.starts_with("the answer is not valid JSON")), Some(true));
}

#[test]
fn text_mode_list_answers_are_wrapped_as_items() {
    let agent = SubAgent::builder("List").mode(Mode::Text).signature("[:int]").build().unwrap();
    let schema = agent.first_request().options.response_schema.unwrap();
    assert_eq!(schema["required"], json!(["items"]));
    let step = run(&agent, &ScriptedLlm::new([text("{\"items\": [1, 2]}")]));
    assert_eq!(step.return_value, Some(json!([1, 2])));
    let step = run(&agent, &ScriptedLlm::new([text("[3]")]));
    assert_eq!(step.return_value, Some(json!([3])));
}

#[test]
fn text_mode_scalars_are_coerced() {
    let agent = SubAgent::builder("How many").mode(Mode::Text).signature(":int").build().unwrap();
    assert_eq!(run(&agent, &ScriptedLlm::new([text(" 42 ")])).return_value, Some(json!(42)));
    let agent = SubAgent::builder("Is it").mode(Mode::Text).signature(":bool").build().unwrap();
    assert_eq!(run(&agent, &ScriptedLlm::new([text("true")])).return_value, Some(json!(true)));
}

#[test]
fn text_mode_runs_a_native_tool_loop() {
    let runs = Arc::new(AtomicU32::new(0));
    let agent = SubAgent::builder("How many errors?")
        .mode(Mode::Text)
        .tool(search_logs(3, runs.clone()))
        .max_tool_calls(1)
        .build()
        .unwrap();
    let req = agent.first_request();
    assert_eq!(req.tools.len(), 1);
    assert_eq!(req.tools[0].parameters["required"], json!(["query"]));
    let llm = ScriptedLlm::new([
        calls(&[("c1", "search_logs", json!({"query": "error"}))]),
        calls(&[("c2", "search_logs", json!({"query": "other"})), ("c3", "lisp_eval", json!({"program": "1"}))]),
        text("3 errors"),
    ]);
    let (step, events) = run_observed(&agent, &llm);
    assert_eq!(step.return_value, Some(json!("3 errors")));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let first = &tool_results(&llm, 1)[0].1;
    assert_eq!(first.as_array().map(Vec::len), Some(3), "text mode returns the full result: {first}");
    let second = tool_results(&llm, 2);
    assert_eq!(second[1].1["reason"], json!("tool_call_limit_exceeded"));
    assert_eq!(second[2].1["reason"], json!("unknown_tool"));
    assert_paired(&llm.requests()[2].messages);
    let tool_events: Vec<&Event> = events.iter().filter(|e| matches!(e, Event::ToolCall { .. })).collect();
    assert_eq!(tool_events.len(), 1);
    let ev = serde_json::to_value(tool_events[0]).unwrap();
    assert_eq!(ev["exposure_layer"], json!("native"));
    assert_eq!(ev["cached"], json!(false));
    assert_eq!(step.turns[0].tool_calls[0].exposure_layer, "native");
}

#[test]
fn text_mode_rejects_tools_exposed_to_programs() {
    let e = SubAgent::builder("x").mode(Mode::Text).tool(Tool::fixed("t", json!(1)).expose(Exposure::Both)).build();
    assert!(e.unwrap_err().message.contains("text mode runs no programs"));
}

// ---------- combined mode ----------

fn combined(tools: Vec<Tool>) -> SubAgent {
    let mut b = SubAgent::builder("You are a support assistant.").mode(Mode::Combined).max_turns(6);
    for t in tools {
        b = b.tool(t);
    }
    b.build().unwrap()
}

#[test]
fn combined_mode_offers_native_tools_and_lisp_eval_with_the_reference_card() {
    let agent = combined(vec![
        Tool::fixed("native_t", json!(1)),
        Tool::fixed("both_t", json!(2)).expose(Exposure::Both).description("Both layers"),
        Tool::fixed("lisp_t", json!(3)).expose(Exposure::Program).signature("(q :string) -> :int"),
    ]);
    let req = agent.first_request();
    let names: Vec<&str> = req.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["both_t", "native_t", "lisp_eval"]);
    assert!(req.tools[2].description.contains("but not in the same turn as `lisp_eval`"));
    assert!(req.system.contains("<ptc_lisp_reference>"));
    assert!(req.system.ends_with(
        ";; Program-callable tools (inside lisp_eval):\ntool/both_t  ; Both layers\ntool/lisp_t(q string) -> int"
    ));
    // with nothing exposed to programs the card is still there
    let bare = combined(vec![Tool::fixed("native_t", json!(1))]);
    assert!(bare.first_request().system.contains("<ptc_lisp_reference>"));
    assert!(bare.first_request().system.contains(";; none - lisp_eval works on data/"));
}

#[test]
fn combined_mode_defaults_to_native_and_rejects_programs_calling_native_tools() {
    let agent = combined(vec![Tool::fixed("lookup", json!(1))]);
    let llm = ScriptedLlm::new([lisp("c1", "(tool/lookup {})"), lisp("c2", "(+ 1 2)"), text("3")]);
    let step = run(&agent, &llm);
    assert_eq!(step.return_value, Some(json!("3")));
    let r = &tool_results(&llm, 1)[0].1;
    assert_eq!(r["status"], json!("error"));
    assert_eq!(r["reason"], json!("unknown_tool"));
    assert!(r["message"].as_str().unwrap().contains("offered to you as a native tool only"), "{r}");
    assert_eq!(tool_results(&llm, 2)[1].1["result"], json!("user=> 3"));
}

#[test]
fn the_cache_bridge_runs_a_both_tool_once_for_native_then_program() {
    let runs = Arc::new(AtomicU32::new(0));
    let agent = combined(vec![
        search_logs(1842, runs.clone()).expose(Exposure::Both).cache(true).native_result(NativeResult::Metadata),
    ]);
    let llm = ScriptedLlm::new([
        calls(&[("call_1", "search_logs", json!({"query": "error code 42"}))]),
        lisp("call_2", "(def rows (tool/search_logs {:query \"error code 42\"}))\n(return {:total (count rows)})"),
        text("There were 1842 errors with code 42 in the queried window."),
    ]);
    let (step, events) = run_observed(&agent, &llm);
    assert_eq!(step.return_value, Some(json!("There were 1842 errors with code 42 in the queried window.")));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the program reused the native call's result");
    let preview = &tool_results(&llm, 1)[0].1;
    assert_eq!(
        preview,
        &json!({
            "status": "ok",
            "result_count": 1842,
            "schema": {"type": "array", "items": {"type": "object", "properties": {"id": "integer", "message": "string", "timestamp": "string"}}},
            "sample_keys": ["id", "message", "timestamp"],
            "full_result_cached": true,
            "cache_hint": "Call lisp_eval and then call (tool/search_logs {:query \"error code 42\"}) to process the full cached result."
        })
    );
    let program = &tool_results(&llm, 2)[1].1;
    assert_eq!(program["status"], json!("ok"));
    assert_eq!(program["result"], json!("user=> {:total 1842}"));
    assert_eq!(program["prints"], json!([]));
    let layers: Vec<(String, bool)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall { exposure_layer, cached, .. } => Some((exposure_layer.clone(), *cached)),
            _ => None,
        })
        .collect();
    assert_eq!(layers, [("native".to_string(), false), ("ptc_lisp".to_string(), true)]);
    let native = events.iter().find(|e| matches!(e, Event::ToolCall { .. })).unwrap();
    let native = serde_json::to_value(native).unwrap();
    assert_eq!(native["full_result_cached"], json!(true));
    assert!(native["retained_bytes"].as_u64().unwrap() > 1842 * 40);
    assert_eq!(native["cache_key_hash"].as_str().map(str::len), Some(16));
    assert!(step.turns[1].tool_calls[0].cached);
}

#[test]
fn the_cache_bridge_works_program_first_and_over_canonical_arguments() {
    let runs = Arc::new(AtomicU32::new(0));
    let counter = runs.clone();
    let tool = Tool::new("rows", move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(json!([{"a": 1}]))
    })
    .expose(Exposure::Both)
    .cache(true);
    let agent = combined(vec![tool]);
    let llm = ScriptedLlm::new([
        lisp("p", "(count (tool/rows {:max-rows 10 :opts {:b 2 :a 1}}))"),
        calls(&[("n", "rows", json!({"opts": {"a": 1.0, "b": 2}, "max_rows": 10.0}))]),
        text("done"),
    ]);
    let step = run(&agent, &llm);
    assert!(step.is_ok());
    assert_eq!(runs.load(Ordering::SeqCst), 1, "integer-equal floats, key order and key style converge");
    assert_eq!(tool_results(&llm, 2)[1].1["full_result_cached"], json!(true));
}

#[test]
fn native_result_rows_and_custom_previews() {
    let rows = combined(vec![
        search_logs(30, Arc::default())
            .expose(Exposure::Both)
            .cache(true)
            .native_result(NativeResult::Rows { limit: 5 }),
    ]);
    let llm = ScriptedLlm::new([calls(&[("c", "search_logs", json!({"query": "x"}))]), text("ok")]);
    run(&rows, &llm);
    let p = &tool_results(&llm, 1)[0].1;
    assert_eq!(p["rows"].as_array().map(Vec::len), Some(5));
    assert_eq!(p["result_count"], json!(30));

    let custom = combined(vec![
        search_logs(4, Arc::default())
            .expose(Exposure::Both)
            .cache(true)
            .native_result(NativeResult::custom(|r| Ok(json!({"last_id": r[3]["id"]})))),
    ]);
    let llm = ScriptedLlm::new([calls(&[("c", "search_logs", json!({"query": "x"}))]), text("ok")]);
    run(&custom, &llm);
    let p = &tool_results(&llm, 1)[0].1;
    assert_eq!(p["last_id"], json!(3));
    assert_eq!(p["full_result_cached"], json!(true));
    assert!(p.get("rows").is_none());

    let failing = combined(vec![
        search_logs(4, Arc::default())
            .expose(Exposure::Both)
            .cache(true)
            .native_result(NativeResult::custom(|_| Err("boom".into()))),
    ]);
    let llm = ScriptedLlm::new([calls(&[("c", "search_logs", json!({"query": "x"}))]), text("ok")]);
    run(&failing, &llm);
    assert_eq!(tool_results(&llm, 1)[0].1["sample_keys"], json!(["id", "message", "timestamp"]));
}

#[test]
fn native_result_needs_both_and_cache() {
    for tool in [
        Tool::fixed("t", json!(1)).expose(Exposure::Both).native_result(NativeResult::Metadata),
        Tool::fixed("t", json!(1)).cache(true).native_result(NativeResult::Metadata),
        Tool::fixed("t", json!(1)).expose(Exposure::Both).cache(true).native_result(NativeResult::Rows { limit: 0 }),
    ] {
        let e = SubAgent::builder("x").mode(Mode::Combined).tool(tool).build().unwrap_err();
        assert_eq!(e.option, "tools");
        assert!(e.message.contains("native_result"), "{e}");
    }
}

#[test]
fn return_does_not_short_circuit_and_fail_does_not_abort() {
    let agent = SubAgent::builder("x").mode(Mode::Combined).signature("{total :int}").build().unwrap();
    let llm = ScriptedLlm::new([
        lisp("c1", "(return {:total 5})"),
        lisp("c2", "(fail {:reason :nope :message \"no data\"})"),
        text("{\"total\": 6}"),
    ]);
    let step = run(&agent, &llm);
    assert_eq!(step.return_value, Some(json!({"total": 6})), "the final text is the answer, not the program's v");
    let r1 = &tool_results(&llm, 1)[0].1;
    assert_eq!((r1["status"].clone(), r1["result"].clone()), (json!("ok"), json!("user=> {:total 5}")));
    let r2 = &tool_results(&llm, 2)[1].1;
    assert_eq!(r2["status"], json!("error"));
    assert_eq!(r2["reason"], json!("fail"));
    assert_eq!(r2["result"], json!({"reason": "nope", "message": "no data"}));
}

#[test]
fn a_program_on_the_last_turn_is_paired_then_max_turns_ends_the_run() {
    let agent = SubAgent::builder("x").mode(Mode::Combined).max_turns(2).build().unwrap();
    let rec = Arc::new(Recorder::default());
    let llm = ScriptedLlm::new([lisp("c1", "(+ 1 1)"), lisp("c2", "(return 99)")]);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let step = rt.block_on(agent.run_observed(&llm, Some(rec)));
    assert_eq!(step.status, Status::Error);
    assert_eq!(step.fail.as_ref().map(|f| f.reason.as_str()), Some("max_turns_exceeded"));
    assert_eq!(step.return_value, None, "not the program's v");
    assert_eq!(llm.requests().len(), 2);
    assert_eq!(step.turns[1].result.as_deref(), Some("99"));
}

#[test]
fn lisp_eval_is_exempt_from_max_tool_calls() {
    let agent = SubAgent::builder("x")
        .mode(Mode::Combined)
        .max_turns(6)
        .max_tool_calls(1)
        .tool(Tool::fixed("t", json!(1)))
        .build()
        .unwrap();
    let llm = ScriptedLlm::new([
        lisp("a", "1"),
        lisp("b", "2"),
        calls(&[("c", "t", json!({}))]),
        lisp("d", "3"),
        calls(&[("e", "t", json!({}))]),
        text("done"),
    ]);
    let step = run(&agent, &llm);
    assert!(step.is_ok());
    assert_eq!(tool_results(&llm, 4)[3].1["result"], json!("user=> 3"));
    assert_eq!(tool_results(&llm, 5)[4].1["reason"], json!("tool_call_limit_exceeded"));
}

#[test]
fn lisp_eval_mixed_with_native_calls_is_refused_for_every_call() {
    let agent = combined(vec![Tool::fixed("t", json!(1))]);
    let llm = ScriptedLlm::new([
        calls(&[("a", "t", json!({})), ("b", "lisp_eval", json!({"program": "1"}))]),
        calls(&[("c", "lisp_eval", json!({"program": "1"})), ("d", "lisp_eval", json!({"program": "2"}))]),
        text("ok"),
    ]);
    let step = run(&agent, &llm);
    assert!(step.is_ok());
    let r = tool_results(&llm, 2);
    assert_eq!(r[0].1["reason"], json!("mixed_with_lisp_eval"));
    assert_eq!(r[1].1["reason"], json!("mixed_with_lisp_eval"));
    assert_eq!(r[2].1["reason"], json!("multiple_tool_calls"));
    assert_paired(&llm.requests()[2].messages);
    assert!(step.turns[0].tool_calls.is_empty(), "nothing ran");
}

#[test]
fn tool_errors_are_paired_error_results() {
    let agent = combined(vec![Tool::new("broken", |_| Err("upstream down".into()))]);
    let llm = ScriptedLlm::new([calls(&[("a", "broken", json!({}))]), text("sorry")]);
    let step = run(&agent, &llm);
    assert!(step.is_ok());
    let (_, r) = &tool_results(&llm, 1)[0];
    assert_eq!(r, &json!({"status": "error", "reason": "tool_error", "message": "upstream down"}));
    let Message::ToolResult { is_error, .. } = &llm.requests()[1].messages[2] else { panic!() };
    assert!(is_error);
}

#[test]
fn chat_does_not_keep_caches_across_calls() {
    let runs = Arc::new(AtomicU32::new(0));
    let agent = combined(vec![search_logs(2, runs.clone()).expose(Exposure::Both).cache(true)]);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let llm = ScriptedLlm::new([calls(&[("a", "search_logs", json!({"query": "q"}))]), text("two rows")]);
    let first = rt.block_on(agent.chat(&llm, "How many?", Vec::new(), Default::default(), None));
    assert_eq!(first.step.return_value, Some(json!("two rows")));
    assert_eq!(first.messages.len(), 4);
    let llm2 = ScriptedLlm::new([lisp("b", "(count (tool/search_logs {:query \"q\"}))"), text("still two")]);
    let second = rt.block_on(agent.chat(&llm2, "Sure?", first.messages.clone(), first.memory.clone(), None));
    assert_eq!(second.step.return_value, Some(json!("still two")));
    assert_eq!(runs.load(Ordering::SeqCst), 2, "the cache of the first call is gone");
    assert_eq!(llm2.requests()[0].messages.len(), 5);
    assert_eq!(second.messages.len(), 8);
}

#[test]
fn chat_in_text_mode_answers_plain_text_even_with_a_signature() {
    let agent = SubAgent::builder("x").mode(Mode::Text).signature("{n :int}").build().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let llm = ScriptedLlm::new([text("just text")]);
    let reply = rt.block_on(agent.chat(&llm, "hi", Vec::new(), Default::default(), None));
    assert_eq!(reply.step.return_value, Some(json!("just text")));
    assert!(reply.memory.is_empty());
}

#[test]
fn chat_in_lisp_mode_threads_memory() {
    let agent = SubAgent::builder("x").build().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let llm = ScriptedLlm::texts([clj("(def n 2)"), clj("(return n)")]);
    let first = rt.block_on(agent.chat(&llm, "define n", Vec::new(), Default::default(), None));
    assert_eq!(first.memory.get("n"), Some(&json!(2)));
    let llm = ScriptedLlm::texts([clj("(return (inc n))")]);
    let second = rt.block_on(agent.chat(&llm, "use n", first.messages, first.memory, None));
    assert_eq!(second.step.return_value, Some(json!(3)));
}
