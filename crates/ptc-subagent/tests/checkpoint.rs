//! Checkpoint and resume: a mission interrupted after some turns and resumed from its
//! checkpoint gives the answer, memory and turns of an uninterrupted run under the same
//! scripted model, without calling its tools again; bad checkpoints are clear errors.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use common::*;
use ptc_subagent::{
    Checkpoint, LlmError, LlmErrorKind, LlmResponse, LlmRetry, ScriptEntry, ScriptedLlm, SubAgent, SubAgentBuilder,
    TokenUsage, Tool,
};
use serde_json::json;

fn scratch(name: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "ptc-checkpoint-{}-{name}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A mission whose memory holds a closure, with a tool that counts its calls.
fn builder(calls: Arc<AtomicU32>) -> SubAgentBuilder {
    let counted = Tool::new("price", move |args| {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok(json!(args["qty"].as_i64().unwrap_or(0) * 3))
    })
    .signature("(qty :int) -> :int");
    SubAgent::builder("Price the basket")
        .signature("{total :int}")
        .max_turns(6)
        .llm_retry(LlmRetry { max_attempts: 1, ..LlmRetry::default() })
        .tool(counted)
}

const PROGRAMS: [&str; 4] = [
    "(def unit (tool/price {:qty 1}))",
    "(defn cost [n] (* n unit))",
    "(def big (tool/price {:qty 10}))",
    "(return {:total (+ (cost 4) big)})",
];

fn script(n: usize) -> Vec<ScriptEntry> {
    let mut entries: Vec<ScriptEntry> = PROGRAMS[..n]
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut r = LlmResponse::text(clj(p));
            r.usage = TokenUsage { input: 100 + i as u64, output: 10, ..Default::default() };
            ScriptEntry::Respond(r)
        })
        .collect();
    if n < PROGRAMS.len() {
        entries.push(ScriptEntry::Fail(LlmError::new(LlmErrorKind::ServerError, "the process died")));
    }
    entries
}

#[test]
fn a_resumed_mission_gives_the_uninterrupted_answer_without_calling_tools_again() {
    let calls = Arc::new(AtomicU32::new(0));
    let whole_dir = scratch("whole");
    let whole = run(&builder(calls.clone()).checkpoint_dir(&whole_dir).build().unwrap(), &ScriptedLlm::new(script(4)));
    assert_eq!(whole.return_value, Some(json!({"total": 42})), "{:?}", whole.fail);
    assert_eq!(calls.swap(0, Ordering::SeqCst), 2);
    // a checkpoint after each turn that went on (not after the last)
    for n in 1..=3 {
        assert!(whole_dir.join(format!("checkpoint-{n:04}.json")).is_file(), "checkpoint {n}");
    }

    // interrupted: the model dies in turn 3, after two checkpoints
    let dir = scratch("cut");
    let cut = run(&builder(calls.clone()).checkpoint_dir(&dir).build().unwrap(), &ScriptedLlm::new(script(2)));
    assert_eq!(cut.fail.unwrap().reason, "llm_error");
    assert_eq!(calls.swap(0, Ordering::SeqCst), 1);
    let saved = Checkpoint::load(&dir).unwrap();
    assert_eq!(saved.turns_done, 2);
    assert_eq!(saved.model_calls, 2);
    assert!(saved.memory.contains_key("unit") && saved.memory.contains_key("cost"), "{:?}", saved.memory);
    assert_eq!(saved.tool_calls.len(), 1);

    // resumed with the whole script: the model is moved past the two answered requests
    let llm = ScriptedLlm::new(script(4));
    let resumed = run(&builder(calls.clone()).resume_from(&dir).build().unwrap(), &llm);
    assert_eq!(resumed.return_value, whole.return_value, "{:?}", resumed.fail);
    assert_eq!(resumed.memory, whole.memory);
    assert_eq!(resumed.usage.turns, whole.usage.turns);
    assert_eq!(resumed.usage.input_tokens, whole.usage.input_tokens);
    let programs = |s: &ptc_subagent::Step| s.turns.iter().map(|t| t.program.clone()).collect::<Vec<_>>();
    assert_eq!(programs(&resumed), programs(&whole));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "only turn 3's call runs again; turn 1's comes from the checkpoint");
    assert_eq!(llm.requests().len(), 2, "turns 3 and 4 asked the model");
    // the request of turn 3 is the one the uninterrupted run sent
    let fresh = ScriptedLlm::new(script(4));
    run(&builder(calls).build().unwrap(), &fresh);
    assert_eq!(llm.requests()[0], fresh.requests()[2]);
    // and the resumed run went on writing checkpoints where it came from
    assert!(dir.join("checkpoint-0003.json").is_file());
}

#[test]
fn corrupt_foreign_and_missing_checkpoints_are_clear_errors() {
    let calls = Arc::new(AtomicU32::new(0));
    let dir = scratch("errors");
    run(&builder(calls.clone()).checkpoint_dir(&dir).build().unwrap(), &ScriptedLlm::new(script(2)));
    let good = dir.join("checkpoint-0002.json");

    let err = |path: &std::path::Path, b: SubAgentBuilder| b.resume_from(path).build().unwrap_err();
    let foreign = err(&good, builder(calls.clone()).max_turns(7));
    assert_eq!(foreign.option, "resume_from");
    assert!(foreign.message.contains("written by a different mission"), "{}", foreign.message);

    let broken = dir.join("checkpoint-0009.json");
    std::fs::write(&broken, "{\"format\": \"ptc-checkpoint\", \"vers").unwrap();
    let e = err(&dir, builder(calls.clone()));
    assert!(
        e.message.contains("checkpoint-0009.json is not valid JSON") && e.message.contains("previous"),
        "{}",
        e.message
    );

    std::fs::write(&broken, "{\"a\": 1}").unwrap();
    assert!(err(&broken, builder(calls.clone())).message.contains("is not a ptc checkpoint"));
    let mut newer: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&good).unwrap()).unwrap();
    newer["version"] = json!(99);
    std::fs::write(&broken, newer.to_string()).unwrap();
    assert!(err(&broken, builder(calls.clone())).message.contains("format version 99; this build reads version 1"));
    let empty = scratch("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert!(err(&empty, builder(calls)).message.contains("no checkpoint in"));
}
