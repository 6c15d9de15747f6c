//! Chaining: a step's return becomes the next agent's context; a failed step is never
//! chained onto.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::clj;
use ptc_subagent::{ScriptedLlm, Step, SubAgent};
use serde_json::json;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap().block_on(f)
}

fn finder() -> SubAgent {
    SubAgent::builder("Find urgent emails").signature("{count :int, ids [:int]}").build().unwrap()
}

#[test]
fn the_return_and_its_signature_become_the_next_context() {
    let chain = finder()
        .then(SubAgent::builder("Draft replies to {{count}} emails").signature("{drafts [:string]}"))
        .then(SubAgent::builder("Count the drafts").signature("{n :int}"));
    let llm = ScriptedLlm::texts([
        clj("(return {:count 2 :ids [4 9]})"),
        clj("(return {:drafts (map #(str \"Re: \" %) data/ids)})"),
        clj("(return {:n (count data/drafts)})"),
    ]);
    let steps = block_on(chain.run_all(&llm));
    assert_eq!(steps.len(), 3);
    assert_eq!(steps[2].return_value, Some(json!({"n": 2})));
    let second = format!("{:?}", llm.requests()[1].messages[0]);
    assert!(second.contains("Draft replies to 2 emails"), "{second}");
    // the context signature's types are shown
    assert!(second.contains("ids") && second.contains("[:int]"), "{second}");
}

#[test]
fn a_failed_step_ends_the_chain_with_chained_failure_keeping_the_original() {
    let chain = finder().then(SubAgent::builder("Draft replies").signature("{drafts [:string]}"));
    let llm = ScriptedLlm::texts([clj("(fail {:reason :mailbox_locked :message \"locked\"})")]);
    let steps = block_on(chain.run_all(&llm));
    assert_eq!(steps.len(), 2);
    let fail = steps[1].fail.as_ref().unwrap();
    assert_eq!(fail.reason, "chained_failure");
    assert_eq!(fail.message, "Upstream agent failed: mailbox_locked");
    let original = &fail.details.as_ref().unwrap()["original_failure"];
    assert_eq!(original["reason"], "mailbox_locked");
    assert_eq!(original["message"], "locked");
    // the second agent never asked the model
    assert_eq!(llm.requests().len(), 1);
    assert_eq!(steps[1].usage.llm_requests, 0);
}

#[test]
fn run_after_chains_a_step_by_hand() {
    let failed = Step::failed(ptc_subagent::Fail::new("llm_error", "down"));
    let llm = ScriptedLlm::texts(Vec::<String>::new());
    let step = block_on(SubAgent::builder("Next").run_after(&failed, None, &llm));
    assert_eq!(step.fail.unwrap().reason, "chained_failure");

    let ok = block_on(finder().run(&ScriptedLlm::texts([clj("(return {:count 1 :ids [3]})")])));
    let llm = ScriptedLlm::texts([clj("(return (first data/ids))")]);
    let step = block_on(SubAgent::builder("First id").signature(":int").run_after(
        &ok,
        Some("{count :int, ids [:int]}"),
        &llm,
    ));
    assert_eq!(step.return_value, Some(json!(3)));
}

#[test]
fn a_next_prompt_naming_a_missing_field_is_a_template_error() {
    let chain = finder().then(SubAgent::builder("Draft replies to {{total}} emails"));
    let llm = ScriptedLlm::texts([clj("(return {:count 2 :ids [4 9]})")]);
    let step = block_on(chain.run(&llm));
    let fail = step.fail.unwrap();
    assert_eq!(fail.reason, "template_error");
    assert!(fail.message.contains("{{total}}"), "{}", fail.message);
}

#[test]
fn only_a_map_can_become_a_context() {
    let first = SubAgent::builder("Count").signature(":int").build().unwrap();
    let llm = ScriptedLlm::texts([clj("(return 5)")]);
    let step = block_on(first.then(SubAgent::builder("Next")).run(&llm));
    let fail = step.fail.unwrap();
    assert_eq!(fail.reason, "validation_error");
    assert!(fail.message.contains("returned a number"), "{}", fail.message);
}
