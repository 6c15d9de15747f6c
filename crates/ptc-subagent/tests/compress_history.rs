//! History compression (seed 001): the single USER message for the seed's scenarios,
//! pinned as snapshots (`cargo insta review`), plus its rules.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use ptc_subagent::{HistoryOptions, Message, Mode, ScriptedLlm, SubAgent, Tool};
use serde_json::json;

/// The messages of request `n` (0-based) as `[ROLE]` blocks.
fn render(llm: &ScriptedLlm, n: usize) -> String {
    let req = &llm.requests()[n];
    let mut out = String::new();
    for m in &req.messages {
        match m {
            Message::User { content } => out.push_str(&format!("[USER]\n{content}\n\n")),
            Message::Assistant { content, .. } => out.push_str(&format!("[ASSISTANT]\n{content}\n\n")),
            other => out.push_str(&format!("{other:?}\n\n")),
        }
    }
    out
}

fn products() -> serde_json::Value {
    json!([
        {"name": "Laptop", "price": 1200, "category": "Electronics"},
        {"name": "Mouse", "price": 25, "category": "Electronics"},
        {"name": "Monitor", "price": 300, "category": "Electronics"},
        {"name": "Desk", "price": 450, "category": "Furniture"}
    ])
}

fn shop() -> ptc_subagent::SubAgentBuilder {
    SubAgent::builder("Find well-reviewed products in stock")
        .context_value("products", products())
        .tool(Tool::fixed(
            "search-reviews",
            json!(
                "Customer Review Summary for Electronics: - Laptop: Average rating 4.5/5. - Mouse: Average rating 3.2/5"
            ),
        ))
        .tool(Tool::fixed(
            "get-inventory",
            json!("Warehouse Inventory Report: Laptop - 23 units in stock. Mouse - OUT OF STOCK"),
        ))
        .compress_history(HistoryOptions::default())
}

#[test]
fn successful_turn_3() {
    let agent = shop().build().unwrap();
    let llm = ScriptedLlm::texts([
        clj(
            "(defn electronic? \"True for electronics; by category\" [p] (= (:category p) \"Electronics\"))\n(def electronics \"Products in Electronics\" (filter electronic? data/products))\n(def reviews (tool/search-reviews {:category \"Electronics\"}))",
        ),
        clj("(def inventory (tool/get-inventory {}))\n(println \"Inventory:\" inventory)"),
        clj("(return (map :name electronics))"),
    ]);
    let step = run(&agent, &llm);
    assert!(step.is_ok(), "{:?}", step.fail);
    let third = render(&llm, 2);
    insta::assert_snapshot!(third);
    // one USER message, no previous code; the full programs stay in the step
    assert_eq!(llm.requests()[2].messages.len(), 1);
    assert!(!third.contains("(def "));
    assert!(step.turns[0].program.as_deref().unwrap().starts_with("(defn electronic?"));
    let Message::User { content } = &llm.requests()[2].messages[0] else { panic!() };
    assert_eq!(step.turns[1].feedback.as_ref(), Some(content), "the step records what the model read");
}

#[test]
fn a_failed_turn_between_successes() {
    let agent = shop().build().unwrap();
    let llm = ScriptedLlm::texts([
        clj("(def users (tool/search-reviews {:category \"Electronics\"}))"),
        clj("(def x (broken-code))"),
        clj("(def n (count data/products))"),
        clj("(return n)"),
    ]);
    let step = run(&agent, &llm);
    assert!(step.is_ok(), "{:?}", step.fail);
    insta::assert_snapshot!("failed_turn_request_3", render(&llm, 2));
    insta::assert_snapshot!("failed_turn_request_4", render(&llm, 3));
    assert_eq!(llm.requests()[3].messages.len(), 3, "the failed pair stays after the USER message");
}

#[test]
fn side_effect_tools_returning_nil() {
    let agent = SubAgent::builder("Call Alice and Bob, then email the team")
        .tool(Tool::fixed("make-call", json!(null)))
        .tool(Tool::fixed("send-email", json!(null)))
        .compress_history(HistoryOptions::default())
        .build()
        .unwrap();
    let llm = ScriptedLlm::texts([
        clj(
            "(tool/make-call {:to \"Alice\" :message \"Meeting at 3pm\"})\n(tool/make-call {:to \"Bob\" :message \"Bring documents\"})",
        ),
        clj("(tool/send-email {:to \"team@example.com\" :subject \"Update\"})"),
        clj("(return \"done\")"),
    ]);
    let step = run(&agent, &llm);
    assert!(step.is_ok(), "{:?}", step.fail);
    insta::assert_snapshot!(render(&llm, 2));
}

#[test]
fn println_versus_samples() {
    let agent = shop().build().unwrap();
    let exploring = ScriptedLlm::texts([
        clj("(def reviews (tool/search-reviews {:category \"Electronics\"}))\n(def inventory (tool/get-inventory {}))"),
        clj("(return 1)"),
    ]);
    run(&agent, &exploring);
    insta::assert_snapshot!("exploration_mode", render(&exploring, 1));
    let explicit = ScriptedLlm::texts([
        clj(
            "(def reviews (tool/search-reviews {:category \"Electronics\"}))\n(def inventory (tool/get-inventory {}))\n(println \"Reviews:\" reviews)\n(println \"Inventory:\" inventory)",
        ),
        clj("(return 1)"),
    ]);
    run(&agent, &explicit);
    insta::assert_snapshot!("explicit_mode", render(&explicit, 1));
}

#[test]
fn no_tool_calls_edge_cases_and_cross_turn_redefinition() {
    let agent = SubAgent::builder("Explore").compress_history(HistoryOptions::default()).build().unwrap();
    let llm = ScriptedLlm::texts([
        clj("(def x nil)\n(def items [])\n(def m {})\n(def y 1)"),
        clj("(def y \"two\")"),
        clj("(return y)"),
    ]);
    run(&agent, &llm);
    assert_eq!(
        render(&llm, 2),
        "[USER]\nExplore\n\n; No tool calls made\n; Defined: x = nil\n; Defined: items = list[0]\n; Defined: m = map[0]\n; Defined: y = string, sample: \"two\"\n\nTurns left: 3\n\n"
    );
}

#[test]
fn limits_are_configurable() {
    let agent = SubAgent::builder("Loop")
        .tool(Tool::fixed("ping", json!(null)))
        .compress_history(HistoryOptions { println_limit: 2, tool_call_limit: 3 })
        .build()
        .unwrap();
    let llm =
        ScriptedLlm::texts([clj("(doseq [i (range 5)] (tool/ping {:i i}) (println \"line\" i))"), clj("(return 1)")]);
    run(&agent, &llm);
    assert_eq!(
        render(&llm, 1),
        "[USER]\nLoop\n\n; Tool calls:\n;   ping({:i 2})\n;   ping({:i 3})\n;   ping({:i 4})\n; Output:\nline 3\nline 4\n\nTurns left: 4\n\n"
    );
}

#[test]
fn the_first_request_moves_the_inventory_to_the_system_prompt() {
    let agent = shop().signature("[:string]").build().unwrap();
    let req = agent.first_request();
    assert_eq!(req.messages, vec![Message::user("Find well-reviewed products in stock\n\nTurns left: 5")]);
    assert!(req.system.contains(";; === tools ===\ntool/get-inventory"));
    assert!(req.system.contains(";; === data/ ==="));
    assert!(req.system.contains("# Expected Output"));
}

#[test]
fn compression_is_for_the_lisp_mode() {
    let e = SubAgent::builder("x").mode(Mode::Text).compress_history(HistoryOptions::default()).build().unwrap_err();
    assert_eq!(e.option, "compress_history");
    let e = SubAgent::builder("x")
        .compress_history(HistoryOptions { println_limit: 0, tool_call_limit: 1 })
        .build()
        .unwrap_err();
    assert_eq!(e.option, "compress_history");
}
