//! The full first request, pinned for three agent shapes. A changed prompt is a reviewed
//! change: `cargo insta review`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ptc_subagent::{Exposure, LlmRequest, Mode, NativeResult, SubAgent, Tool};
use serde_json::json;

fn render(req: &LlmRequest) -> String {
    let mut out = format!("=== system ===\n{}\n", req.system);
    for t in &req.tools {
        out.push_str(&format!("=== tool {} ===\n{}\n{}\n", t.name, t.description, t.parameters));
    }
    if let Some(schema) = &req.options.response_schema {
        out.push_str(&format!("=== response schema ===\n{schema}\n"));
    }
    for m in &req.messages {
        let j = serde_json::to_value(m).unwrap();
        out.push_str(&format!("=== {} ===\n{}\n", j["role"].as_str().unwrap(), j["content"].as_str().unwrap()));
    }
    out
}

#[test]
fn no_tools_no_signature() {
    let agent = SubAgent::builder("What is the sum of the squares of 1 to 10?").build().unwrap();
    insta::assert_snapshot!(render(&agent.first_request()));
}

#[test]
fn tools_and_signature() {
    let agent = SubAgent::builder("Find the three most expensive open orders of {{customer}}.")
        .signature("(customer :string) -> {order_ids [:int], total :float}")
        .context_value("customer", json!("acme"))
        .field_description("order_ids", "ids, most expensive first")
        .tool(
            Tool::new("search_orders", |_| Ok(json!([])))
                .signature(
                    "(customer :string, status :string?, limit :int?) -> [{id :int, amount :float, status :string}]",
                )
                .description("Orders of a customer, newest first"),
        )
        .tool(Tool::new("get_rate", |_| Ok(json!(1.0))).description("Today's EUR rate"))
        .max_tool_calls(10)
        .build()
        .unwrap();
    insta::assert_snapshot!(render(&agent.first_request()));
}

#[test]
fn context_data_single_shot() {
    let agent = SubAgent::builder("How many paid orders are there?")
        .signature(":int")
        .max_turns(1)
        .context_value(
            "orders",
            json!([
                {"id": 1, "status": "paid", "amount": 20},
                {"id": 2, "status": "open", "amount": 5},
                {"id": 3, "status": "paid", "amount": 7},
                {"id": 4, "status": "paid", "amount": 12}
            ]),
        )
        .context_value("region", json!("EMEA"))
        .context_description("orders", "this quarter's orders")
        .build()
        .unwrap();
    insta::assert_snapshot!(render(&agent.first_request()));
}

#[test]
fn lisp_tool_mode() {
    let agent = SubAgent::builder("Total the paid orders.")
        .mode(Mode::LispTool)
        .signature("{total :int}")
        .tool(Tool::new("orders", |_| Ok(json!([]))).signature("(status :string) -> [{amount :int}]"))
        .build()
        .unwrap();
    insta::assert_snapshot!(render(&agent.first_request()));
}

#[test]
fn text_mode_with_a_structured_signature() {
    let agent = SubAgent::builder("Name three colours.")
        .mode(Mode::Text)
        .signature("{colours [:string]}")
        .tool(Tool::new("palette", |_| Ok(json!([]))).description("The house palette"))
        .build()
        .unwrap();
    insta::assert_snapshot!(render(&agent.first_request()));
}

#[test]
fn combined_mode() {
    let agent = SubAgent::builder("How many errors with code 42 last hour?")
        .mode(Mode::Combined)
        .context_value("window", json!("1h"))
        .tool(
            Tool::new("search_logs", |_| Ok(json!([])))
                .signature("(query :string) -> [:any]")
                .description("Search log events.")
                .expose(Exposure::Both)
                .cache(true)
                .native_result(NativeResult::Metadata),
        )
        .tool(Tool::new("page_oncall", |_| Ok(json!(null))).description("Page the on-call engineer"))
        .build()
        .unwrap();
    insta::assert_snapshot!(render(&agent.first_request()));
}
