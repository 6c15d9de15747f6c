//! What a hostile model cannot make the loop keep or wait for: history is bounded by
//! `max_history_bytes`, retry waits by `LlmRetry::max_delay`, and a model that does not
//! wait (a replay) never sleeps.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Mutex;
use std::time::Duration;

use common::*;
use ptc_subagent::{
    BoxFuture, Event, Llm, LlmError, LlmErrorKind, LlmRequest, LlmResponse, LlmRetry, Message, ScriptedLlm, Status,
    SubAgent,
};

fn conversation_bytes(request: &LlmRequest) -> usize {
    request.messages.iter().skip(1).map(|m| serde_json::to_string(m).unwrap().len()).sum()
}

#[test]
fn big_answers_across_turns_keep_history_bounded() {
    let cap = 64 * 1024;
    // twelve answers of 1 MB each: a program followed by a megabyte of chatter
    let junk = "chatter ".repeat(128 * 1024);
    let answers: Vec<String> = (0..12).map(|i| format!("{}\n{junk}", clj(&format!("(def x{i} {i})")))).collect();
    let llm = ScriptedLlm::texts(answers);
    let agent = SubAgent::builder("Keep talking").max_turns(12).max_history_bytes(cap).build().unwrap();
    let step = run(&agent, &llm);
    assert_eq!(step.usage.turns, 12, "{:?}", step.fail);

    let requests = llm.requests();
    assert_eq!(requests.len(), 12);
    // JSON framing adds a little per message; the texts themselves stay under the cap
    let slack = 4096;
    for request in &requests {
        let bytes = conversation_bytes(request);
        assert!(bytes <= cap + slack, "turn {} re-sent {bytes} bytes of history (cap {cap})", request.turn);
    }
    // the newest answer is still there, its head intact, and older ones say they were elided
    let last = requests.last().unwrap();
    let texts: Vec<&str> = last
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert!(texts.last().unwrap().contains("(def x10 10)"), "{}", &texts.last().unwrap()[..100]);
    assert!(texts[0].contains("bytes elided"), "{}", texts[0]);

    // the step's turn records are bounded too
    let recorded: usize =
        step.turns.iter().map(|t| t.raw_response.len() + t.program.as_ref().map_or(0, String::len)).sum();
    assert!(recorded <= cap + slack, "the step keeps {recorded} bytes of answers (cap {cap})");
}

#[test]
fn max_history_bytes_is_checked() {
    let e = SubAgent::builder("x").max_history_bytes(10).build().unwrap_err();
    assert_eq!(e.option, "max_history_bytes");
}

/// Rate-limited once with a long `Retry-After`, then returns.
struct SlowDown {
    retry_after: Duration,
    waits: bool,
    calls: Mutex<u32>,
}

impl Llm for SlowDown {
    fn complete<'a>(&'a self, _request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        Box::pin(async move {
            let mut calls = self.calls.lock().unwrap();
            *calls += 1;
            if *calls == 1 {
                let mut e = LlmError::new(LlmErrorKind::RateLimit, "slow down");
                e.retry_after = Some(self.retry_after);
                Err(e)
            } else {
                Ok(LlmResponse::text(clj("(return 42)")))
            }
        })
    }

    fn retry_waits(&self) -> bool {
        self.waits
    }
}

fn run_bounded(agent: &SubAgent, llm: &dyn Llm) -> (ptc_subagent::Step, Vec<Event>) {
    let rec = std::sync::Arc::new(Recorder::default());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    // A guard, not a wait: without the caps below this run would sleep for a month.
    let step = rt
        .block_on(async {
            tokio::time::timeout(Duration::from_secs(20), agent.run_observed(llm, Some(rec.clone()))).await
        })
        .expect("the retry wait was not capped");
    let events = rec.events.lock().unwrap().clone();
    (step, events)
}

fn retry_delays(events: &[Event]) -> Vec<Option<u64>> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::LlmError { retry_in_ms, .. } => Some(*retry_in_ms),
            _ => None,
        })
        .collect()
}

#[test]
fn a_month_long_retry_after_waits_at_most_max_delay() {
    let llm = SlowDown { retry_after: Duration::from_secs(30 * 86_400), waits: true, calls: Mutex::new(0) };
    let retry = LlmRetry { max_delay: Duration::from_millis(20), ..LlmRetry::default() };
    let agent = SubAgent::builder("x").llm_retry(retry).build().unwrap();
    let (step, events) = run_bounded(&agent, &llm);
    assert_eq!(step.status, Status::Ok, "{:?}", step.fail);
    assert_eq!(retry_delays(&events), [Some(20)]);
}

#[test]
fn a_retry_after_past_the_deadline_ends_the_mission_without_waiting() {
    let llm = SlowDown { retry_after: Duration::from_secs(86_400), waits: true, calls: Mutex::new(0) };
    let retry = LlmRetry { max_delay: Duration::from_secs(86_400), ..LlmRetry::default() };
    let agent = SubAgent::builder("x").llm_retry(retry).mission_timeout(Duration::from_secs(5)).build().unwrap();
    let (step, _) = run_bounded(&agent, &llm);
    assert_eq!(step.fail.unwrap().reason, "mission_timeout");
}

#[test]
fn a_model_that_does_not_wait_is_never_slept_for() {
    // A replay: the recorded Retry-After (an hour, and max_delay allows it) is not slept.
    let llm = SlowDown { retry_after: Duration::from_secs(3600), waits: false, calls: Mutex::new(0) };
    let retry = LlmRetry { max_delay: Duration::from_secs(3600), ..LlmRetry::default() };
    let agent = SubAgent::builder("x").llm_retry(retry).build().unwrap();
    let (step, events) = run_bounded(&agent, &llm);
    assert_eq!(step.status, Status::Ok, "{:?}", step.fail);
    assert_eq!(retry_delays(&events), [Some(3_600_000)], "the trace still shows the recorded wait");
}
