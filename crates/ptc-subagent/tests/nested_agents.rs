//! Agents as tools: the child runs inside the parent's tool call, shares the tree's turn
//! budget and deadline, and its failures reach the parent as tool errors.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{clj, feedback_after, run, run_observed};
use ptc_subagent::{
    BoxFuture, Event, Llm, LlmError, LlmRef, LlmRequest, LlmResponse, LlmRetry, ScriptedLlm, SubAgent, SubAgentBuilder,
};
use serde_json::json;

fn researcher() -> SubAgentBuilder {
    SubAgent::builder("Research {{topic}}")
        .signature("(topic :string) -> {summary :string}")
        .description("Researches one topic and summarises it")
        .name("researcher")
}

fn planner(child: SubAgentBuilder) -> SubAgentBuilder {
    SubAgent::builder("Plan a report").signature("{report :string}").tool(child.as_tool("researcher").unwrap())
}

#[test]
fn a_child_answers_from_the_callers_script_in_request_order() {
    let agent = planner(researcher()).build().unwrap();
    let llm = ScriptedLlm::texts([
        clj("(def r (tool/researcher {:topic \"rust\"}))\n(println (:summary r))"),
        clj("(return {:summary (str \"about \" data/topic)})"),
        clj("(return {:report (str \"Report: \" (:summary r))})"),
    ]);
    let step = run(&agent, &llm);
    assert!(step.is_ok(), "{:?}", step.fail);
    assert_eq!(step.return_value, Some(json!({"report": "Report: about rust"})));
    // the second request was the child's: its own prompt, rendered with the call's arguments
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 3);
    let child_first = format!("{:?}", reqs[1].messages[0]);
    assert!(child_first.contains("Research rust"), "{child_first}");
    assert_eq!(step.children.len(), 1);
    let child = &step.children[0];
    assert_eq!((child.turn, child.tool.as_str()), (1, "researcher"));
    assert_eq!(child.step.name.as_deref(), Some("researcher"));
    assert_eq!(child.step.return_value, Some(json!({"summary": "about rust"})));
    assert_eq!(child.step.usage.turns, 1);
}

#[test]
fn a_failed_child_is_a_tool_error_the_parent_can_recover_from() {
    let agent = planner(researcher()).build().unwrap();
    let llm = ScriptedLlm::texts([
        clj("(tool/researcher {:topic \"rust\"})"),
        clj("(fail {:reason :no_sources :message \"nothing found\"})"),
        clj("(return {:report \"no research available\"})"),
    ]);
    let step = run(&agent, &llm);
    assert!(step.is_ok(), "{:?}", step.fail);
    let fb = feedback_after(&llm, 2);
    assert!(fb.contains("agent tool researcher failed (no_sources): nothing found"), "{fb}");
    assert_eq!(step.children[0].step.fail.as_ref().unwrap().reason, "no_sources");
}

#[test]
fn arguments_are_checked_against_the_childs_signature() {
    let agent = planner(researcher()).build().unwrap();
    let llm = ScriptedLlm::texts([clj("(tool/researcher {:subject \"rust\"})"), clj("(return {:report \"x\"})")]);
    let step = run(&agent, &llm);
    assert!(step.is_ok());
    let fb = feedback_after(&llm, 1);
    assert!(fb.contains("invalid arguments for tool/researcher"), "{fb}");
    // no request was made for a child that never started
    assert_eq!(llm.requests().len(), 2);
    assert!(step.children.is_empty());
}

#[test]
fn depth_beyond_the_limit_fails_the_child_without_asking_a_model() {
    let agent = planner(researcher()).max_depth(0).build().unwrap();
    let llm = ScriptedLlm::texts([clj("(tool/researcher {:topic \"rust\"})"), clj("(return {:report \"x\"})")]);
    let step = run(&agent, &llm);
    assert!(step.is_ok());
    assert_eq!(llm.requests().len(), 2);
    let fb = feedback_after(&llm, 1);
    assert!(fb.contains("max_depth_exceeded"), "{fb}");
    assert_eq!(step.children[0].step.fail.as_ref().unwrap().reason, "max_depth_exceeded");
}

/// `tools: {"again": :self}` — an agent summing a list by halves, recursing once per level.
fn summer(max_depth: u32) -> SubAgent {
    SubAgent::builder("Sum {{xs}}")
        .signature("(xs [:int]) -> :int")
        .context_value("xs", json!([1, 2, 3, 4]))
        .self_tool("again")
        .max_depth(max_depth)
        .build()
        .unwrap()
}

#[test]
fn self_recursion_runs_the_same_agent_on_the_arguments() {
    let agent = summer(3);
    let llm = ScriptedLlm::texts([
        clj("(return (+ (tool/again {:xs (take 2 data/xs)}) (tool/again {:xs (drop 2 data/xs)})))"),
        clj("(return (reduce + data/xs))"),
        clj("(return (reduce + data/xs))"),
    ]);
    let step = run(&agent, &llm);
    assert_eq!(step.return_value, Some(json!(10)), "{:?}", step.fail);
    let sums: Vec<_> = step.children.iter().map(|c| c.step.return_value.clone()).collect();
    assert_eq!(sums, vec![Some(json!(3)), Some(json!(7))]);
    // the child got the same tools, so it could recurse again
    assert!(format!("{:?}", llm.requests()[1].messages[0]).contains("again"));
}

#[test]
fn recursion_stops_at_the_depth_limit() {
    let agent = summer(1);
    let llm = ScriptedLlm::texts([
        clj("(return (tool/again {:xs [1 2]}))"),
        // depth 1: recursing again would be depth 2
        clj("(return (tool/again {:xs [1]}))"),
        clj("(return (reduce + data/xs))"),
    ]);
    let step = run(&agent, &llm);
    assert_eq!(step.return_value, Some(json!(3)), "{:?}", step.fail);
    let child = &step.children[0].step;
    assert_eq!(child.usage.turns, 2);
    let grandchild = &child.children[0].step;
    assert_eq!(grandchild.fail.as_ref().unwrap().reason, "max_depth_exceeded");
    assert!(grandchild.fail.as_ref().unwrap().message.contains("depth 2 > 1"));
}

#[test]
fn the_turn_budget_is_shared_by_the_whole_tree() {
    let agent = planner(researcher()).turn_budget(3).max_turns(5).build().unwrap();
    let llm = ScriptedLlm::texts([
        clj("(tool/researcher {:topic \"rust\"})"),
        clj("(println \"looking\")"),
        clj("(return {:summary \"found\"})"),
        clj("(return {:report \"never sent\"})"),
    ]);
    let step = run(&agent, &llm);
    let fail = step.fail.as_ref().unwrap();
    assert_eq!(fail.reason, "turn_budget_exhausted");
    assert!(fail.message.contains("3 turn(s)"), "{}", fail.message);
    assert_eq!(step.usage.turns, 1);
    assert_eq!(step.children[0].step.usage.turns, 2);
    assert_eq!(llm.remaining(), 1);
}

#[test]
fn a_child_running_out_of_budget_fails_as_a_tool_error() {
    let agent = planner(researcher()).turn_budget(2).build().unwrap();
    let llm = ScriptedLlm::texts([
        clj("(tool/researcher {:topic \"rust\"})"),
        clj("(println \"looking\")"),
        clj("(return {:summary \"never sent\"})"),
    ]);
    let step = run(&agent, &llm);
    assert_eq!(step.children[0].step.fail.as_ref().unwrap().reason, "turn_budget_exhausted");
    assert_eq!(step.fail.as_ref().unwrap().reason, "turn_budget_exhausted");
}

/// A model that answers after `delay`.
struct Slow {
    delay: Duration,
}

impl Llm for Slow {
    fn complete<'a>(&'a self, _request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            Ok(LlmResponse::text(clj("(return {:summary \"late\"})")))
        })
    }
}

#[test]
fn a_child_cannot_outlive_the_parents_mission_deadline() {
    let slow: Arc<dyn Llm> = Arc::new(Slow { delay: Duration::from_secs(3) });
    let agent = planner(researcher().llm(slow)).mission_timeout(Duration::from_millis(300)).build().unwrap();
    let llm = ScriptedLlm::texts([clj("(tool/researcher {:topic \"rust\"})"), clj("(return {:report \"x\"})")]);
    let started = Instant::now();
    let step = run(&agent, &llm);
    // the slow child was stopped at the parent's deadline, not after its model's 3 s
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    assert_eq!(step.fail.as_ref().unwrap().reason, "mission_timeout");
    // the parent's program is abandoned at the same deadline, so the child's step may
    // arrive too late to be recorded; when it is, it is the child's own mission_timeout
    for c in &step.children {
        assert_eq!(c.step.fail.as_ref().unwrap().reason, "mission_timeout");
    }
}

#[test]
fn the_childs_own_model_comes_first_then_the_bound_one_then_the_callers() {
    // own model
    let own = Arc::new(ScriptedLlm::texts([clj("(return {:summary \"own\"})")]));
    let agent = planner(researcher().llm(own.clone())).build().unwrap();
    let parent = ScriptedLlm::texts([clj("(return {:report (:summary (tool/researcher {:topic \"a\"}))})")]);
    assert_eq!(run(&agent, &parent).return_value, Some(json!({"report": "own"})));
    assert_eq!(own.remaining(), 0);

    // bound at as_tool
    let bound = Arc::new(ScriptedLlm::texts([clj("(return {:summary \"bound\"})")]));
    let tool = researcher().as_tool_with_llm("researcher", LlmRef::Explicit(bound.clone())).unwrap();
    let agent = SubAgent::builder("Plan").signature("{report :string}").tool(tool).build().unwrap();
    let parent = ScriptedLlm::texts([clj("(return {:report (:summary (tool/researcher {:topic \"a\"}))})")]);
    assert_eq!(run(&agent, &parent).return_value, Some(json!({"report": "bound"})));
    assert_eq!(bound.remaining(), 0);
}

#[test]
fn a_registry_alias_resolves_or_is_model_not_found() {
    let haiku = Arc::new(ScriptedLlm::texts([clj("(return {:summary \"from haiku\"})")]));
    let registry = [("haiku".to_string(), haiku.clone() as Arc<dyn Llm>)].into_iter().collect();
    let agent = planner(researcher().llm_alias("haiku")).llm_registry(registry).build().unwrap();
    let parent = ScriptedLlm::texts([clj("(return {:report (:summary (tool/researcher {:topic \"a\"}))})")]);
    assert_eq!(run(&agent, &parent).return_value, Some(json!({"report": "from haiku"})));

    let agent = planner(researcher().llm_alias("sonnet")).build().unwrap();
    let parent = ScriptedLlm::texts([clj("(tool/researcher {:topic \"a\"})"), clj("(return {:report \"x\"})")]);
    let step = run(&agent, &parent);
    let fb = feedback_after(&parent, 1);
    assert!(fb.contains("model_not_found"), "{fb}");
    assert!(fb.contains("no model named \\\"sonnet\\\"") || fb.contains("no model named \"sonnet\""), "{fb}");
    assert_eq!(step.children[0].step.fail.as_ref().unwrap().reason, "model_not_found");
}

#[test]
fn child_events_reach_the_parents_observer_wrapped_with_their_depth() {
    let agent = planner(researcher()).build().unwrap();
    let llm = ScriptedLlm::texts([
        clj("(def r (tool/researcher {:topic \"rust\"}))"),
        clj("(return {:summary \"s\"})"),
        clj("(return {:report (:summary r)})"),
    ]);
    let (step, events) = run_observed(&agent, &llm);
    assert!(step.is_ok());
    let nested: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Nested { agent, depth, inner } => Some((agent.clone(), *depth, inner)),
            _ => None,
        })
        .collect();
    assert!(nested.iter().all(|(a, d, _)| a == "researcher" && *d == 1));
    assert!(nested.iter().any(|(_, _, e)| matches!(***e, Event::TurnEnd { .. })));
    assert!(nested.iter().any(|(_, _, e)| matches!(***e, Event::RunEnd { .. })));
    // the trace line names the nesting
    let line = serde_json::to_value(events.iter().find(|e| matches!(e, Event::Nested { .. })).unwrap()).unwrap();
    assert_eq!(line["event"], "nested");
    assert_eq!(line["depth"], 1);
}

#[test]
fn agent_tool_options_are_checked_when_the_tool_is_made() {
    let err = SubAgent::builder("Research {{subject}}")
        .signature("(topic :string) -> :string")
        .description("d")
        .as_tool("r")
        .unwrap_err();
    assert_eq!(err.option, "prompt");
    let err = SubAgent::builder("Research").description("d").as_tool("r").unwrap_err();
    assert_eq!(err.option, "signature");
    let err = SubAgent::builder("Sum").self_tool("again").build().unwrap_err();
    assert!(err.to_string().contains("needs the agent's signature"), "{err}");
    let err = SubAgent::builder("Sum {{xs}}")
        .signature("(xs [:int]) -> :int")
        .context_value("xs", json!([]))
        .self_tool("return")
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("reserved or not valid"), "{err}");
}

#[test]
fn retries_of_a_childs_model_requests_happen_in_the_child() {
    let agent =
        planner(researcher().llm_retry(LlmRetry { base_delay: Duration::from_millis(1), ..LlmRetry::default() }))
            .build()
            .unwrap();
    let llm = ScriptedLlm::new([
        ptc_subagent::ScriptEntry::Respond(LlmResponse::text(clj("(def r (tool/researcher {:topic \"rust\"}))"))),
        ptc_subagent::ScriptEntry::Fail(LlmError::new(ptc_subagent::LlmErrorKind::RateLimit, "slow down")),
        ptc_subagent::ScriptEntry::Respond(LlmResponse::text(clj("(return {:summary \"s\"})"))),
        ptc_subagent::ScriptEntry::Respond(LlmResponse::text(clj("(return {:report (:summary r)})"))),
    ]);
    let step = run(&agent, &llm);
    assert!(step.is_ok(), "{:?}", step.fail);
    assert_eq!(step.children[0].step.usage.llm_requests, 2);
}

#[test]
fn a_childs_own_context_is_kept_and_the_arguments_are_added() {
    let child = SubAgent::builder("Research {{topic}}")
        .signature("(topic :string) -> {summary :string}")
        .description("Researches one topic in a set style")
        .context_value("style", json!("brief"));
    let agent = planner(child).build().unwrap();
    let llm = ScriptedLlm::texts([
        clj("(return {:report (:summary (tool/researcher {:topic \"rust\"}))})"),
        clj("(return {:summary (str data/style \" notes on \" data/topic)})"),
    ]);
    let step = run(&agent, &llm);
    assert_eq!(step.return_value, Some(json!({"report": "brief notes on rust"})), "{:?}", step.fail);
    assert!(format!("{:?}", llm.requests()[1].messages[0]).contains("Research rust"));
}

#[test]
fn nested_agents_run_under_a_current_thread_runtime_too() {
    let agent = planner(researcher()).build().unwrap();
    let llm = ScriptedLlm::texts([
        clj("(return {:report (:summary (tool/researcher {:topic \"rust\"}))})"),
        clj("(return {:summary \"ok\"})"),
    ]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let step = rt.block_on(agent.run(&llm));
    assert_eq!(step.return_value, Some(json!({"report": "ok"})), "{:?}", step.fail);
}

#[test]
fn the_default_budget_never_cuts_a_lone_agent_short() {
    let agent = SubAgent::builder("Count").max_turns(22).build().unwrap();
    let mut programs: Vec<String> = (0..21).map(|i| clj(&format!("(println {i})"))).collect();
    programs.push(clj("(return 1)"));
    let step = run(&agent, &ScriptedLlm::texts(programs));
    assert_eq!(step.return_value, Some(json!(1)), "{:?}", step.fail);
    assert_eq!(step.usage.turns, 22);
}

/// Answers from a script, but holds each child's request ("Research a|b") until two are
/// in flight at once: served one at a time, they would never meet.
struct Rendezvous {
    script: ScriptedLlm,
    arrived: std::sync::atomic::AtomicUsize,
    met: tokio::sync::Notify,
}

impl Llm for Rendezvous {
    fn complete<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        Box::pin(async move {
            let first = format!("{:?}", request.messages[0]);
            if first.contains("Research a") || first.contains("Research b") {
                let waiting = self.met.notified();
                if self.arrived.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 >= 2 {
                    self.met.notify_waiters();
                } else if tokio::time::timeout(Duration::from_secs(3), waiting).await.is_err() {
                    return Err(LlmError::new(ptc_subagent::LlmErrorKind::Unknown, "the other child never asked"));
                }
            }
            self.script.complete(request).await
        })
    }
}

#[test]
fn children_run_in_parallel_and_their_requests_are_answered_together() {
    let agent = planner(researcher().llm_retry(LlmRetry { max_attempts: 1, ..LlmRetry::default() }))
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let llm = Rendezvous {
        script: ScriptedLlm::texts([
            clj("(return {:report (apply str (pmap #(:summary (tool/researcher {:topic %})) [\"a\" \"b\"]))})"),
            clj("(return {:summary (str \"<\" data/topic \">\")})"),
            clj("(return {:summary (str \"<\" data/topic \">\")})"),
        ]),
        arrived: Default::default(),
        met: Default::default(),
    };
    let step = run(&agent, &llm);
    assert_eq!(step.return_value, Some(json!({"report": "<a><b>"})), "{:?}", step.fail);
    assert_eq!(step.children.len(), 2);
    assert!(step.children.iter().all(|c| c.step.is_ok()));
}
