//! The builder checks every option before anything runs, and names the option at fault.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use ptc_subagent::{CatalogEntry, ConfigError, LlmRetry, SubAgent, SubAgentBuilder, Tool};
use serde_json::json;

fn err(b: SubAgentBuilder) -> ConfigError {
    match b.build() {
        Ok(a) => panic!("expected a config error, built {a:?}"),
        Err(e) => e,
    }
}

fn noop(name: &str) -> Tool {
    Tool::new(name, |_| Ok(json!(null)))
}

#[test]
fn reserved_tool_names_are_refused() {
    for name in ["return", "fail", "lisp_eval"] {
        let e = err(SubAgent::builder("x").tool(noop(name)));
        assert_eq!(e.option, "tools");
        assert!(e.message.contains("reserved"), "{e}");
    }
}

#[test]
fn a_tool_may_not_share_a_name_with_data() {
    let e = err(SubAgent::builder("x").context_value("orders", json!([])).tool(noop("orders")));
    assert_eq!(e.to_string(), "tools: orders is both a tool and data - rename one");
}

#[test]
fn duplicate_and_malformed_tools_are_refused() {
    let e = err(SubAgent::builder("x").tool(noop("a")).tool(noop("a")));
    assert!(e.message.contains("declared twice"));
    let e = err(SubAgent::builder("x").tool(noop("bad name")));
    assert!(e.message.contains("not valid"));
    let e = err(SubAgent::builder("x").tool(noop("search").signature("(q :list) -> :int")));
    assert_eq!(e.option, "tools");
    assert!(e.message.starts_with("tool \"search\": bad signature:"), "{e}");
}

#[test]
fn placeholders_need_context_values_and_signature_inputs() {
    let e = err(SubAgent::builder("Summarise {{topic}}"));
    assert_eq!(e.option, "prompt");
    assert!(e.message.contains("{{topic}} has no value in the context"), "{e}");

    let e = err(SubAgent::builder("Summarise {{topic}}")
        .signature("(subject :string) -> :string")
        .context_value("topic", json!("rust")));
    assert_eq!(e.option, "prompt");
    assert!(e.message.contains("not a signature input"), "{e}");

    let e = err(SubAgent::builder("Summarise {{topic}}")
        .signature("(topic :string, n :int) -> :string")
        .context_value("topic", json!("rust")));
    assert_eq!(e.option, "context");

    let ok = SubAgent::builder("Summarise {{topic}}")
        .signature("(topic :string) -> :string")
        .context_value("topic", json!("rust"))
        .build()
        .unwrap();
    assert!(ok.first_user_message().ends_with("<mission>\nSummarise rust\n</mission>"));
}

#[test]
fn bad_signatures_and_templates_name_their_option() {
    assert_eq!(err(SubAgent::builder("x").signature("{count :list}")).option, "signature");
    assert_eq!(err(SubAgent::builder("x {{#a}}")).option, "prompt");
    assert_eq!(err(SubAgent::builder("   ")).option, "prompt");
    assert_eq!(err(SubAgent::builder("x").context_signature(":int")).option, "context_signature");
    let e = err(SubAgent::builder("x").context_value("n", json!("three")).context_signature("{n :int}"));
    assert_eq!(e.option, "context");
    assert!(e.message.contains("n: expected int"), "{e}");
}

#[test]
fn numeric_options_are_checked() {
    assert_eq!(err(SubAgent::builder("x").max_turns(0)).option, "max_turns");
    assert_eq!(err(SubAgent::builder("x").timeout(Duration::ZERO)).option, "timeout");
    assert_eq!(err(SubAgent::builder("x").mission_timeout(Duration::ZERO)).option, "mission_timeout");
    assert_eq!(
        err(SubAgent::builder("x").llm_retry(LlmRetry { max_attempts: 0, ..LlmRetry::default() })).option,
        "llm_retry"
    );
    assert_eq!(err(SubAgent::builder("x").max_tool_calls(0)).option, "max_tool_calls");
    assert_eq!(err(SubAgent::builder("x").float_precision(Some(40))).option, "float_precision");
    assert_eq!(err(SubAgent::builder("x").name(" ")).option, "name");
    assert_eq!(
        err(SubAgent::builder("x").memory_limit(0, ptc_subagent::MemoryStrategy::Strict)).option,
        "memory_limit"
    );
}

#[test]
fn the_catalog_is_shown_but_not_callable() {
    let e = err(SubAgent::builder("x").tool(noop("a")).catalog_tool(CatalogEntry::new("a", None, "")));
    assert_eq!(e.option, "tool_catalog");
    let agent = SubAgent::builder("Plan")
        .catalog_tool(CatalogEntry::new("send_email", Some("(to :string, body :string) -> :bool"), "Sends mail"))
        .build()
        .unwrap();
    let msg = agent.first_user_message();
    assert!(msg.contains("send_email(to string, body string) -> bool  ; Sends mail"), "{msg}");
    let llm = ptc_subagent::ScriptedLlm::texts(["```clojure\n(tool/send_email {:to \"a\" :body \"b\"})\n```"]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let step = rt.block_on(agent.run(&llm));
    assert!(step.turns[0].error.as_deref().unwrap().contains("send_email"), "{:?}", step.turns[0].error);
}

#[test]
fn loaded_context_values_count_for_every_check_and_json_entries_go_over_them() {
    use std::sync::Arc;
    let loaded =
        || Arc::new(ptc_lisp_eval::json::parse_context(r#"{"xs": [1, 2, 3], "name": "loaded"}"#, 1 << 20).unwrap());
    let agent = SubAgent::builder("Count the xs of {{name}}")
        .context_values(loaded())
        .context_value("name", json!("json"))
        .context_signature("{xs [:int], name :string}")
        .build()
        .unwrap();
    let first = format!("{:?}", agent.first_request().messages[0]);
    assert!(first.contains("Count the xs of json"), "the JSON entry goes over the loaded one: {first}");
    let llm = ptc_subagent::ScriptedLlm::texts(["```clojure\n(return [(count data/xs) data/name])\n```".to_string()]);
    let step = futures_lite_run(&agent, &llm);
    assert_eq!(step.return_value, Some(json!([3, "json"])), "{:?}", step.fail);
    // the loaded keys are what placeholders, tools and the context signature see
    assert_eq!(err(SubAgent::builder("{{other}}").context_values(loaded())).option, "prompt");
    assert_eq!(err(SubAgent::builder("x").context_values(loaded()).tool(noop("xs"))).option, "tools");
    assert_eq!(
        err(SubAgent::builder("x").context_values(loaded()).context_signature("{xs [:string]}")).option,
        "context"
    );
}

fn futures_lite_run(agent: &SubAgent, llm: &dyn ptc_subagent::Llm) -> ptc_subagent::Step {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(agent.run(llm))
}

/// `limits()` keeps every field it is given. The literal names every field of `Limits`
/// (no `..`), so a field added there fails to compile here until it is carried.
#[test]
fn the_builder_keeps_every_limit_it_is_given() {
    let given = ptc_lisp_eval::Limits {
        timeout: Duration::from_millis(1_234),
        max_heap_bytes: 7_000_000,
        max_loop_iterations: 77_777,
        max_recursion_depth: 77,
        max_program_bytes: 7_777,
        max_symbols: 777,
        max_print_length: 177,
        max_print_bytes: 7_717,
        max_result_bytes: 71_717,
        max_tool_calls: Some(7),
        max_parallel_workers: 3,
        max_nesting_depth: 70,
        max_fuel: Some(700_000),
    };
    assert_ne!(given, ptc_lisp_eval::Limits::default());
    let agent = SubAgent::builder("x").limits(given.clone()).build().unwrap();
    assert_eq!(agent.limits(), &given);

    // the dedicated setters and `limits()` set the same three fields: the last call wins
    let agent = SubAgent::builder("x")
        .limits(given.clone())
        .timeout(Duration::from_millis(99))
        .max_tool_calls(9)
        .build()
        .unwrap();
    assert_eq!(agent.limits().timeout, Duration::from_millis(99));
    assert_eq!(agent.limits().max_tool_calls, Some(9));
    assert_eq!(agent.limits().max_heap_bytes, 7_000_000);
    let agent = SubAgent::builder("x").timeout(Duration::from_millis(99)).limits(given.clone()).build().unwrap();
    assert_eq!(agent.limits(), &given);
}
