//! The seed's mission options and the features it planned: validation modes (agent and
//! per tool), the system prompt override, the mission timeout default, prompt limits,
//! several code blocks per answer, `Step.signature` for chaining, dry runs, the
//! consecutive-failure limit and the cost budget.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use ptc_subagent::{
    Event, LlmResponse, Mode, ModelPrice, MultipleCodeBlocks, PriceTable, PromptLimit, ScriptEntry, ScriptedLlm,
    SubAgent, SystemPrompt, TokenUsage, Tool, ValidationMode,
};
use serde_json::json;

// ---- signature_validation ------------------------------------------------------------

fn extra_field_agent(mode: ValidationMode) -> SubAgent {
    SubAgent::builder("Count").signature("{count :int}").signature_validation(mode).max_turns(2).build().unwrap()
}

#[test]
fn enabled_allows_extra_fields_and_strict_rejects_them() {
    let answer = clj("(return {:count 5 :extra \"bonus\"})");
    let step = run(&extra_field_agent(ValidationMode::Enabled), &ScriptedLlm::texts([answer.clone()]));
    assert!(step.is_ok(), "{:?}", step.fail);
    assert_eq!(step.return_value, Some(json!({"count": 5, "extra": "bonus"})));

    let llm = ScriptedLlm::texts([answer.clone(), answer]);
    let step = run(&extra_field_agent(ValidationMode::Strict), &llm);
    assert!(!step.is_ok());
    let feedback = feedback_after(&llm, 1);
    assert!(feedback.contains("extra"), "{feedback}");
    assert_eq!(step.fail.unwrap().reason, "max_turns_exceeded");
}

#[test]
fn warn_only_accepts_a_mismatch_and_keeps_the_warning() {
    let answer = clj("(return {:count \"five\"})");
    let step = run(&extra_field_agent(ValidationMode::WarnOnly), &ScriptedLlm::texts([answer.clone()]));
    assert!(step.is_ok(), "{:?}", step.fail);
    assert_eq!(step.return_value, Some(json!({"count": "five"})));
    assert_eq!(step.warnings.len(), 1, "{:?}", step.warnings);
    assert!(step.warnings[0].contains("count"), "{}", step.warnings[0]);

    let step = run(&extra_field_agent(ValidationMode::Disabled), &ScriptedLlm::texts([answer.clone()]));
    assert!(step.is_ok());
    assert!(step.warnings.is_empty());

    let llm = ScriptedLlm::texts([answer.clone(), answer]);
    let step = run(&extra_field_agent(ValidationMode::Enabled), &llm);
    assert!(!step.is_ok(), "enabled must refuse a string count");
}

#[test]
fn strict_refuses_a_tool_without_a_signature_at_build() {
    let err = SubAgent::builder("x")
        .signature_validation(ValidationMode::Strict)
        .tool(Tool::fixed("rate", json!(1.08)))
        .build()
        .unwrap_err();
    assert_eq!(err.option, "tools");
    assert!(err.message.contains("strict validation needs one"), "{}", err.message);
    // the tool's own mode wins over the agent's
    SubAgent::builder("x")
        .signature_validation(ValidationMode::Strict)
        .tool(Tool::fixed("rate", json!(1.08)).validation(ValidationMode::Enabled))
        .build()
        .unwrap();
}

fn tool_agent(tool: Tool) -> SubAgent {
    SubAgent::builder("Use the tool").tool(tool).max_turns(2).build().unwrap()
}

#[test]
fn a_tool_result_is_checked_against_its_output_type() {
    let tool = || Tool::fixed("count", json!({"n": "many"})).signature("() -> {n :int}");
    let program = clj("(return (tool/count {}))");
    let llm = ScriptedLlm::texts([program.clone(), program.clone()]);
    let step = run(&tool_agent(tool()), &llm);
    assert!(!step.is_ok());
    let error = step.turns[0].error.clone().unwrap_or_default();
    assert!(error.contains("tool/count returned a value that does not match"), "{error}");
    assert!(error.contains("n: expected int"), "{error}");

    // per tool: warn_only lets it through, disabled does not look
    for mode in [ValidationMode::WarnOnly, ValidationMode::Disabled] {
        let step = run(&tool_agent(tool().validation(mode)), &ScriptedLlm::texts([program.clone()]));
        assert!(step.is_ok(), "{mode:?}: {:?}", step.fail);
        assert_eq!(step.return_value, Some(json!({"n": "many"})));
        // warn_only keeps what it let through in Step.warnings; disabled has nothing to say
        if mode == ValidationMode::WarnOnly {
            assert_eq!(step.warnings.len(), 1, "{:?}", step.warnings);
            let w = &step.warnings[0];
            assert!(w.contains("tool/count returned a value that does not match"), "{w}");
            assert!(w.contains("n: expected int") && w.contains("warn_only: the result was used"), "{w}");
        } else {
            assert!(step.warnings.is_empty(), "{:?}", step.warnings);
        }
    }
}

#[test]
fn warn_only_tool_arguments_go_ahead_with_a_warning_in_the_step() {
    let echo = Tool::new("echo", Ok).signature("(limit :int) -> :any").validation(ValidationMode::WarnOnly);
    let step = run(&tool_agent(echo), &ScriptedLlm::texts([clj("(return (tool/echo {:limit \"many\"}))")]));
    assert_eq!(step.return_value, Some(json!({"limit": "many"})), "{:?}", step.fail);
    assert_eq!(step.warnings.len(), 1, "{:?}", step.warnings);
    assert!(step.warnings[0].contains("invalid arguments for tool/echo"), "{}", step.warnings[0]);
    assert!(step.warnings[0].contains("warn_only: the call went ahead"), "{}", step.warnings[0]);
}

#[test]
fn strict_tools_refuse_unknown_arguments_and_disabled_ones_skip_coercion() {
    let echo = || Tool::new("echo", Ok).signature("(limit :int) -> :any");
    let program = clj("(return (tool/echo {:limit \"3\" :extra 1}))");
    // enabled: coerces "3" and passes the extra key along
    let step = run(&tool_agent(echo()), &ScriptedLlm::texts([program.clone()]));
    assert_eq!(step.return_value, Some(json!({"limit": 3, "extra": 1})), "{:?}", step.fail);
    // strict: the extra key is an argument error naming what the tool takes
    let llm = ScriptedLlm::texts([program.clone(), program.clone()]);
    let step = run(&tool_agent(echo().validation(ValidationMode::Strict)), &llm);
    let error = step.turns[0].error.clone().unwrap_or_default();
    assert!(error.contains("extra: unexpected argument (strict validation); tool/echo takes :limit"), "{error}");
    // disabled: no coercion
    let step = run(&tool_agent(echo().validation(ValidationMode::Disabled)), &ScriptedLlm::texts([program]));
    assert_eq!(step.return_value, Some(json!({"limit": "3", "extra": 1})), "{:?}", step.fail);
}

// ---- system_prompt, mission_timeout, prompt_limit, code blocks, Step.signature ------

#[test]
fn system_prompt_replaces_or_wraps_the_cards() {
    let agent = SubAgent::builder("Go").system_prompt("You are terse.").build().unwrap();
    assert_eq!(agent.first_request().system, "You are terse.");
    let wrapped = SubAgent::builder("Go")
        .system_prompt(SystemPrompt::Wrap { prefix: "BEFORE".into(), suffix: "AFTER".into() })
        .build()
        .unwrap();
    let default = SubAgent::builder("Go").build().unwrap().first_request().system;
    assert_eq!(wrapped.first_request().system, format!("BEFORE\n\n{default}\n\nAFTER"));
    // combined mode keeps its list of program-callable tools after a custom prompt
    let combined = SubAgent::builder("Go")
        .mode(Mode::Combined)
        .system_prompt("Custom.")
        .tool(Tool::fixed("rate", json!(1)).expose(ptc_subagent::Exposure::Program))
        .build()
        .unwrap();
    let system = combined.first_request().system;
    assert!(system.starts_with("Custom.\n\n") && system.contains("tool/rate"), "{system}");
    let err = SubAgent::builder("Go").system_prompt("  ").build().unwrap_err();
    assert_eq!(err.option, "system_prompt");
    // the model receives it
    let llm = ScriptedLlm::texts([clj("(return 1)")]);
    let step = run(&SubAgent::builder("Go").system_prompt("You are terse.").build().unwrap(), &llm);
    assert!(step.is_ok());
    assert_eq!(llm.requests()[0].system, "You are terse.");
}

#[test]
fn the_mission_timeout_defaults_to_sixty_seconds() {
    assert_eq!(ptc_subagent::DEFAULT_MISSION_TIMEOUT, Duration::from_secs(60));
    assert_eq!(SubAgent::builder("Go").build().unwrap().mission_timeout(), Some(Duration::from_secs(60)));
    let unbounded = SubAgent::builder("Go").no_mission_timeout().build().unwrap();
    assert_eq!(unbounded.mission_timeout(), None);
}

#[test]
fn prompt_limit_bounds_the_data_inventory_and_notes_the_cut() {
    let orders: Vec<_> = (1..=12).map(|i| json!({"id": i})).collect();
    let agent = SubAgent::builder("Look")
        .context_value("orders", json!(orders))
        .context_value("text", json!("x".repeat(3000)))
        .build()
        .unwrap();
    let first = agent.first_user_message();
    assert!(first.contains("{\"id\" 5}") && !first.contains("{\"id\" 6}"), "{first}");
    assert!(first.contains(";; (data/orders: showing 5 of 12 items; read it in a program for the rest)"), "{first}");
    assert!(first.contains(";; (data/text: showing about 1000 of 3000 bytes"), "{first}");
    let tight = SubAgent::builder("Look")
        .context_value("orders", json!(orders))
        .prompt_limit(PromptLimit { list: 2, string: 1000 })
        .build()
        .unwrap();
    let first = tight.first_user_message();
    assert!(first.contains("{\"id\" 2}") && !first.contains("{\"id\" 3}"), "{first}");
    assert!(first.contains("showing 2 of 12 items"), "{first}");
    let err = SubAgent::builder("x").prompt_limit(PromptLimit { list: 0, string: 1 }).build().unwrap_err();
    assert_eq!(err.option, "prompt_limit");
}

#[test]
fn several_code_blocks_are_refused_by_default_and_run_in_order_when_asked() {
    let answer = format!("{}\nand then\n{}", clj("(def a 20)"), clj("(return (+ a 1))"));
    let llm = ScriptedLlm::texts([answer.clone(), clj("(return 0)")]);
    let step = run(&SubAgent::builder("Go").build().unwrap(), &llm);
    assert_eq!(step.return_value, Some(json!(0)));
    assert!(feedback_after(&llm, 1).contains("Found 2 code blocks"));

    let sequential = SubAgent::builder("Go").multiple_code_blocks(MultipleCodeBlocks::Sequential).build().unwrap();
    let step = run(&sequential, &ScriptedLlm::texts([answer]));
    assert_eq!(step.return_value, Some(json!(21)), "{:?}", step.fail);
    assert_eq!(step.turns[0].program.as_deref(), Some("(def a 20)\n(return (+ a 1))"));
    // a block that does not parse on its own is named
    let broken = format!("{}\n{}", clj("(def a (inc 1)"), clj("(return a))"));
    let llm = ScriptedLlm::texts([broken, clj("(return 2)")]);
    let step = run(&sequential, &llm);
    assert_eq!(step.return_value, Some(json!(2)));
    assert!(
        feedback_after(&llm, 1).contains("code block 1 of 2 does not parse on its own"),
        "{}",
        feedback_after(&llm, 1)
    );
    let err = SubAgent::builder("Go")
        .mode(Mode::LispTool)
        .multiple_code_blocks(MultipleCodeBlocks::Sequential)
        .build()
        .unwrap_err();
    assert_eq!(err.option, "multiple_code_blocks");
}

#[test]
fn the_step_keeps_its_signature_for_chaining() {
    let first = SubAgent::builder("Find").signature("{ids [:int]}").build().unwrap();
    let step = run(&first, &ScriptedLlm::texts([clj("(return {:ids [1 2]})")]));
    assert_eq!(step.signature.as_deref(), Some("{ids [:int]}"));
    let next = SubAgent::builder("Count the ids").signature(":int").context_from(&step).unwrap().build().unwrap();
    // the context signature types data/ids in the inventory
    assert!(
        next.first_user_message().contains("data/ids                      ; [:int]"),
        "{}",
        next.first_user_message()
    );
    let failed = run(&first, &ScriptedLlm::texts([clj("(fail \"no\")")]));
    let err = SubAgent::builder("Next").context_from(&failed).unwrap_err();
    assert_eq!(err.reason, "chained_failure");
}

// ---- dry run, max_consecutive_failures, max_cost_usd ---------------------------------

#[test]
fn a_dry_run_shows_the_first_request_and_what_stands_in_the_way() {
    let agent = SubAgent::builder("Go {{who}}").context_value("who", json!("home")).build().unwrap();
    let llm = ScriptedLlm::texts(Vec::<String>::new());
    let dry = agent.dry_run(&llm);
    assert!(dry.is_ok(), "{:?}", dry.problems);
    assert_eq!(dry.first_request, agent.first_request());
    assert_eq!(dry.model, "scripted");
    assert!(llm.requests().is_empty(), "a dry run never asks the model");

    let budgeted = SubAgent::builder("Go").max_cost_usd(0.01).build().unwrap();
    let dry = budgeted.dry_run(&llm);
    assert!(dry.problems[0].contains("no price is known for the model \"scripted\""), "{:?}", dry.problems);
    let mut prices = PriceTable::empty();
    prices.set("scripted", ModelPrice::new(1_000_000.0, 0.0));
    let dry = SubAgent::builder("Go").max_cost_usd(0.01).prices(prices).build().unwrap().dry_run(&llm);
    assert!(dry.problems[0].contains("the first request alone would cost"), "{:?}", dry.problems);
    let dry = SubAgent::builder("Go").mission_timeout(Duration::from_millis(10)).build().unwrap().dry_run(&llm);
    assert!(dry.problems[0].starts_with("mission_timeout: 10 ms is shorter"), "{:?}", dry.problems);
}

#[test]
fn consecutive_failures_stop_an_error_loop_but_not_occasional_errors() {
    let bad = clj("(undefined-fn 1)");
    let good = clj("(def x 1)");
    let agent = SubAgent::builder("Go").max_turns(10).max_consecutive_failures(3).build().unwrap();
    let llm = ScriptedLlm::texts([bad.clone(), bad.clone(), "no code here".to_string(), good.clone()]);
    let step = run(&agent, &llm);
    let fail = step.fail.unwrap();
    assert_eq!(fail.reason, "consecutive_failures");
    assert_eq!(step.usage.turns, 3);
    assert!(fail.message.contains("3 turn(s) in a row failed"), "{}", fail.message);
    // errors between successes: the streak resets, the mission goes on to return
    let llm =
        ScriptedLlm::texts([bad.clone(), bad.clone(), good.clone(), bad.clone(), bad.clone(), good, clj("(return x)")]);
    let step = run(&agent, &llm);
    assert_eq!(step.return_value, Some(json!(1)), "{:?}", step.fail);
    assert_eq!(step.usage.turns, 7);
    let err = SubAgent::builder("x").max_consecutive_failures(0).build().unwrap_err();
    assert_eq!(err.option, "max_consecutive_failures");
}

fn priced(input: f64, output: f64) -> PriceTable {
    let mut prices = PriceTable::empty();
    prices.set("scripted", ModelPrice::new(input, output));
    prices
}

fn answer(text: String, input: u64, output: u64) -> ScriptEntry {
    let mut response = LlmResponse::text(text);
    response.usage = TokenUsage { input, output, ..Default::default() };
    ScriptEntry::Respond(response)
}

#[test]
fn cost_goes_into_the_usage_and_the_trace() {
    let agent = SubAgent::builder("Go").prices(priced(2.0, 10.0)).build().unwrap();
    let llm = ScriptedLlm::new([answer(clj("(def a 1)"), 1_000, 100), answer(clj("(return a)"), 3_000, 200)]);
    let (step, events) = run_observed(&agent, &llm);
    assert!(step.is_ok());
    // (4000 * 2 + 300 * 10) / 1e6
    let cost = step.usage.cost_usd.unwrap();
    assert!((cost - 0.011).abs() < 1e-12, "{cost}");
    let costs: Vec<f64> = events
        .iter()
        .filter_map(|e| if let Event::Cost { total_usd, .. } = e { Some(*total_usd) } else { None })
        .collect();
    assert_eq!(costs.len(), 2);
    assert!((costs[0] - 0.003).abs() < 1e-12 && (costs[1] - cost).abs() < 1e-12, "{costs:?}");
    // no price: no cost, and no budget can be kept
    let step = run(&SubAgent::builder("Go").build().unwrap(), &ScriptedLlm::texts([clj("(return 1)")]));
    assert_eq!(step.usage.cost_usd, None);
    let llm = ScriptedLlm::texts([clj("(return 1)")]);
    let step = run(&SubAgent::builder("Go").max_cost_usd(1.0).build().unwrap(), &llm);
    assert_eq!(step.fail.unwrap().reason, "price_unknown");
    assert!(llm.requests().is_empty());
}

#[test]
fn the_budget_stops_the_mission_before_a_request_would_pass_it() {
    // each answer costs $0.01 (10k input tokens at $1/M); after two, $0.02 is spent and
    // the budget of $0.0205 is not yet reached, but the third request's estimate (its
    // bytes / 4 at the input rate) would pass it
    let agent = SubAgent::builder("Go").max_turns(10).prices(priced(1.0, 0.0)).max_cost_usd(0.0205).build().unwrap();
    let turns: Vec<ScriptEntry> = (0..10).map(|i| answer(clj(&format!("(def x{i} {i})")), 10_000, 50)).collect();
    let llm = ScriptedLlm::new(turns);
    let step = run(&agent, &llm);
    let fail = step.fail.clone().unwrap();
    assert_eq!(fail.reason, "cost_budget_exceeded", "{fail:?}");
    assert!(fail.message.contains("(turn 3) would cost about $0.00"), "{}", fail.message);
    assert!(fail.message.contains("$0.0200 is spent of the $0.0205 budget"), "{}", fail.message);
    assert_eq!(llm.requests().len(), 2, "the third request would pass the budget");
    assert!((step.usage.cost_usd.unwrap() - 0.02).abs() < 1e-12);
    // an answer that costs more than its estimate: the next request is refused
    let agent = SubAgent::builder("Go").max_turns(10).prices(priced(1.0, 0.0)).max_cost_usd(0.015).build().unwrap();
    let llm = ScriptedLlm::new([answer(clj("(def a 1)"), 20_000, 50), answer(clj("(return a)"), 10, 1)]);
    let step = run(&agent, &llm);
    assert_eq!(step.fail.unwrap().reason, "cost_budget_exceeded");
    assert_eq!(llm.requests().len(), 1);
    let err = SubAgent::builder("x").max_cost_usd(-1.0).build().unwrap_err();
    assert_eq!(err.option, "max_cost_usd");
}

/// A parent whose first answer calls `tool` and would return after it.
fn parent_calling(tool: Tool, budget: f64) -> SubAgent {
    SubAgent::builder("Go").max_turns(5).prices(priced(1.0, 0.0)).max_cost_usd(budget).tool(tool).build().unwrap()
}

#[test]
fn a_nested_agent_spends_from_the_parents_budget_and_is_stopped_by_it() {
    // each answer costs $0.01 (10k input tokens at $1/M, priced by the root's table: the
    // child has no price of its own); the tree may spend $0.015
    let child = SubAgent::builder("Look it up").name("researcher").description("Looks it up").signature("() -> :int");
    let child = child.max_turns(3).as_tool("research");
    let child = child.unwrap();
    let llm = ScriptedLlm::new([
        answer(clj("(def r (tool/research {}))"), 10_000, 10),
        answer(clj("(def a 1)"), 10_000, 10),
        answer(clj("(return a)"), 10_000, 10),
        answer(clj("(return r)"), 10_000, 10),
    ]);
    let step = run(&parent_calling(child, 0.015), &llm);
    // the child's second request would pass the parent's budget: $0.02 is spent by then
    let child = &step.children[0].step;
    let fail = child.fail.clone().unwrap();
    assert_eq!(fail.reason, "cost_budget_exceeded", "{fail:?}");
    assert!(fail.message.contains("$0.0200 is spent of the mission tree's"), "{}", fail.message);
    assert!(fail.message.contains("1 level(s) up"), "{}", fail.message);
    assert!((child.usage.cost_usd.unwrap() - 0.01).abs() < 1e-12, "{:?}", child.usage);
    // and the parent's next request too, although it spent $0.01 itself
    let fail = step.fail.clone().unwrap();
    assert_eq!(fail.reason, "cost_budget_exceeded", "{fail:?}");
    assert!(fail.message.contains("$0.0200 is spent of the $0.015 budget"), "{}", fail.message);
    assert!((step.own_usage().cost_usd.unwrap() - 0.01).abs() < 1e-12);
    assert!((step.usage.cost_usd.unwrap() - 0.02).abs() < 1e-12, "the tree's usage: {:?}", step.usage);
    assert_eq!(llm.requests().len(), 2, "parent turn 1 and child turn 1 only");
    // a child's own budget binds its own requests
    let child = SubAgent::builder("Look it up").description("Looks it up").signature("() -> :int").max_turns(3);
    let child = child.max_cost_usd(0.005);
    let child = child.as_tool("research").unwrap();
    let llm = ScriptedLlm::new([
        answer(clj("(def r (tool/research {}))"), 10_000, 10),
        answer(clj("(def a 1)"), 10_000, 10),
        answer(clj("(return :fine)"), 10, 1),
    ]);
    let step = run(&parent_calling(child, 1.0), &llm);
    assert_eq!(step.return_value, Some(json!("fine")), "{:?}", step.fail);
    let fail = step.children[0].step.fail.clone().unwrap();
    assert_eq!(fail.reason, "cost_budget_exceeded");
    assert!(fail.message.contains("$0.0100 is spent of the $0.005 budget"), "{}", fail.message);
}

#[test]
fn an_llm_tools_request_is_charged_to_the_trees_budget() {
    let judge = ptc_subagent::LlmTool::new("Is {{x}} fine?", "(x :string) -> {ok :bool}").into_tool("judge").unwrap();
    let llm = ScriptedLlm::new([
        answer(clj("(def j (tool/judge {:x \"it\"}))"), 10_000, 10),
        answer("{\"ok\": true}".to_string(), 10_000, 10),
        answer(clj("(return j)"), 10, 1),
    ]);
    let step = run(&parent_calling(judge.clone(), 0.015), &llm);
    // the parent spent $0.01, the judgment $0.01: the parent's next request would pass
    let fail = step.fail.clone().unwrap();
    assert_eq!(fail.reason, "cost_budget_exceeded", "{fail:?}");
    assert!(fail.message.contains("$0.0200 is spent of the $0.015 budget"), "{}", fail.message);
    assert!((step.children[0].step.usage.cost_usd.unwrap() - 0.01).abs() < 1e-12);
    assert_eq!(llm.requests().len(), 2);
    // a judgment whose own request would pass the budget is not sent: a tool error (and
    // the parent, as close to its budget, stops at its next request)
    let llm = ScriptedLlm::new([
        answer(clj("(def j (tool/judge {:x \"it\"}))"), 14_990, 10),
        answer(clj("(return :without)"), 10, 1),
    ]);
    let step = run(&parent_calling(judge, 0.015), &llm);
    let child = &step.children[0].step;
    assert_eq!(child.fail.as_ref().unwrap().reason, "cost_budget_exceeded", "{child:?}");
    assert_eq!(step.fail.unwrap().reason, "cost_budget_exceeded");
    assert_eq!(llm.requests().len(), 1, "the judgment's request was never sent");
}
