//! Compaction (trim) in a running mission: the requests shrink, the step keeps every turn.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use ptc_subagent::{Compaction, Message, Mode, ScriptedLlm, SubAgent};

#[test]
fn past_the_trigger_requests_keep_the_mission_and_the_recent_turns() {
    let c = Compaction { trigger_turns: Some(3), trigger_tokens: None, keep_recent_turns: 1, keep_initial_user: true };
    let agent = SubAgent::builder("Count up").max_turns(6).compaction(c).build().unwrap();
    let llm = ScriptedLlm::texts([clj("1"), clj("2"), clj("3"), clj("4"), clj("(return 5)")]);
    let step = run(&agent, &llm);
    assert!(step.is_ok(), "{:?}", step.fail);
    let sizes: Vec<usize> = llm.requests().iter().map(|r| r.messages.len()).collect();
    assert_eq!(sizes, [1, 3, 5, 3, 3]);
    let fourth = &llm.requests()[3].messages;
    assert!(matches!(&fourth[0], Message::User { content } if content.contains("<mission>\nCount up\n</mission>")));
    assert_eq!(fourth[1], Message::assistant(clj("3")));
    let stats = step.usage.compaction.clone().unwrap();
    assert!(stats.enabled && stats.triggered);
    assert_eq!(stats.strategy, "trim");
    assert_eq!(stats.reason.as_deref(), Some("turn_pressure"));
    assert_eq!((stats.messages_before, stats.messages_after), (9, 3));
    assert!(stats.estimated_tokens_after < stats.estimated_tokens_before);
    assert_eq!(step.turns.len(), 5, "the step keeps every turn");
}

#[test]
fn without_pressure_nothing_is_trimmed_and_stats_say_so() {
    let agent = SubAgent::builder("x").compaction(Compaction::default()).build().unwrap();
    let step = run(&agent, &ScriptedLlm::texts([clj("(return 1)")]));
    let stats = step.usage.compaction.unwrap();
    assert!(stats.enabled && !stats.triggered && stats.reason.is_none());
}

#[test]
fn compaction_is_checked_at_build() {
    let bad = [
        SubAgent::builder("x").mode(Mode::Text).compaction(Compaction::default()).build(),
        SubAgent::builder("x").max_turns(1).compaction(Compaction::default()).build(),
        SubAgent::builder("x")
            .compaction(Compaction { trigger_turns: None, trigger_tokens: None, ..Compaction::default() })
            .build(),
        SubAgent::builder("x").compaction(Compaction { keep_recent_turns: 0, ..Compaction::default() }).build(),
    ];
    for b in bad {
        assert_eq!(b.unwrap_err().option, "compaction");
    }
}
