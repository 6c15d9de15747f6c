//! Recording a run and replaying it offline; drift is reported precisely.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::{Arc, Mutex};

use ptc_llm::{BoxFuture, Llm, LlmError, LlmErrorKind, LlmRequest, LlmResponse, Message, NativeToolCall, TokenUsage};
use ptc_providers::{Env, RecordedExchange, Recorder, Replay, from_spec_with};
use serde_json::json;
use support::conversation::{hello, tool_round_trip};
use support::temp_dir;

/// A model answering from a fixed list.
struct Canned(Mutex<Vec<Result<LlmResponse, LlmError>>>);

impl Llm for Canned {
    fn complete<'a>(&'a self, _request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        Box::pin(async move { self.0.lock().unwrap().remove(0) })
    }

    fn name(&self) -> String {
        "canned".into()
    }
}

fn answers() -> Vec<Result<LlmResponse, LlmError>> {
    let mut rate_limited = LlmError::new(LlmErrorKind::RateLimit, "openai returned HTTP 429: slow down");
    rate_limited.status = Some(429);
    rate_limited.retry_after = Some(std::time::Duration::from_millis(1500));
    vec![
        Ok(LlmResponse {
            content: String::new(),
            tool_calls: vec![NativeToolCall {
                id: "call_1".into(),
                name: "lisp_eval".into(),
                args: json!({"program": "(count data/orders)"}),
                provider_data: Some(json!({"thought_signature": "abc"})),
            }],
            usage: TokenUsage { input: 10, output: 5, cache_read: 2, cache_write: 1 },
            model: Some("m-1".into()),
        }),
        Err(rate_limited),
        Ok(LlmResponse::text("(return 3)")),
    ]
}

fn requests() -> Vec<LlmRequest> {
    let second = tool_round_trip(Some(json!({"thought_signature": "abc"})));
    vec![hello(), second.clone(), second]
}

async fn record(path: &std::path::Path) -> Vec<Result<LlmResponse, LlmError>> {
    let recorder = Recorder::create(Arc::new(Canned(Mutex::new(answers()))), path).unwrap();
    assert_eq!(recorder.name(), "canned");
    let mut outcomes = Vec::new();
    for request in requests() {
        outcomes.push(recorder.complete(&request).await);
    }
    outcomes
}

#[tokio::test]
async fn a_recorded_run_replays_identically_without_network() {
    let dir = temp_dir("replay-identical");
    let path = dir.join("run.jsonl");
    let recorded = record(&path).await;
    assert_eq!(recorded, answers());

    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<RecordedExchange> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines.iter().map(|l| l.index).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert_eq!(lines[0].llm, "canned");
    assert_eq!(lines[1].error.as_ref().unwrap().retry_after_ms, Some(1500));

    // Through the resolver: `replay:FILE` needs no key and no vendor feature.
    let replay =
        from_spec_with(&format!("replay:{}", path.display()), None, &Env::from_pairs::<String, String>([])).unwrap();
    let mut replayed = Vec::new();
    for request in requests() {
        replayed.push(replay.complete(&request).await);
    }
    assert_eq!(replayed, recorded, "responses, errors (kind, status, retry-after) and usage come back as recorded");
}

#[tokio::test]
async fn drift_names_the_first_differing_request_and_field() {
    let dir = temp_dir("replay-drift");
    let path = dir.join("run.jsonl");
    record(&path).await;
    let replay = Replay::open(&path).unwrap();
    assert_eq!(replay.len(), 3);
    replay.complete(&hello()).await.unwrap();
    let mut drifted = tool_round_trip(Some(json!({"thought_signature": "abc"})));
    drifted.messages[3] = Message::user("Answer now, please.");
    let e = replay.complete(&drifted).await.unwrap_err();
    assert_eq!(e.kind, LlmErrorKind::ClientError);
    assert!(e.message.contains("request #2 (turn 2)"), "{}", e.message);
    assert!(
        e.message.contains(r#"messages[3].content: recorded "Now answer.", got "Answer now, please.""#),
        "{}",
        e.message
    );
    assert!(e.message.contains(&path.display().to_string()), "{}", e.message);
    assert_eq!(replay.remaining(), 2, "a drifted request consumes nothing");
}

#[tokio::test]
async fn a_run_longer_than_its_recording_is_reported() {
    let replay = Replay::from_jsonl("", "empty.jsonl").unwrap();
    assert!(replay.is_empty());
    let e = replay.complete(&hello()).await.unwrap_err();
    assert_eq!(e.kind, LlmErrorKind::ClientError);
    assert!(e.message.contains("request #1 (turn 1) was not recorded"), "{}", e.message);
}

#[test]
fn a_broken_recording_names_its_line() {
    let e = Replay::from_jsonl("\n{\"nope\": 1}\n", "bad.jsonl").unwrap_err();
    assert_eq!(e.kind, LlmErrorKind::ConfigError);
    assert!(e.message.contains("bad.jsonl, line 2"), "{}", e.message);
    let e = Replay::open("/nonexistent/ptc/run.jsonl").unwrap_err();
    assert_eq!(e.kind, LlmErrorKind::ConfigError);
    assert!(e.message.contains("/nonexistent/ptc/run.jsonl"), "{}", e.message);
}

#[test]
fn a_recording_that_cannot_be_created_fails_before_any_request() {
    let e = Recorder::create(Arc::new(Canned(Mutex::new(vec![]))), "/nonexistent/dir/run.jsonl").unwrap_err();
    assert_eq!(e.kind, LlmErrorKind::ConfigError);
}

#[test]
fn a_recording_with_a_bad_entry_fails_naming_the_file_and_entry() {
    let good = |index: u64| json!({"v": 1, "index": index, "llm": "m", "request": hello(), "response": LlmResponse::text("(return 1)")});
    let mut unknown_version = good(1);
    unknown_version["v"] = json!(7);
    let mut both = good(2);
    both["error"] = json!({"kind": "rate_limit", "message": "slow down"});
    let cases = [
        (vec![unknown_version], "line 1 (entry #1): format version 7 is not one this build reads"),
        (vec![good(1), good(3)], "line 2 (entry #2): has index 3, expected 2"),
        (vec![good(2)], "line 1 (entry #1): has index 2, expected 1"),
        (vec![good(1), both], "line 2 (entry #2): has both a response and an error"),
    ];
    for (lines, expected) in cases {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let e = Replay::from_jsonl(&text, "run.jsonl").unwrap_err();
        assert_eq!(e.kind, LlmErrorKind::ConfigError);
        assert!(e.message.starts_with(&format!("recording run.jsonl, {expected}")), "{}", e.message);
    }
    let fine: String = [good(1), good(2)].iter().map(|l| format!("{l}\n")).collect();
    assert_eq!(Replay::from_jsonl(&fine, "run.jsonl").unwrap().len(), 2);
}

#[test]
fn a_replay_does_not_wait_but_a_recorder_waits_like_its_model() {
    let replay = Replay::from_jsonl("", "empty.jsonl").unwrap();
    assert!(!replay.retry_waits(), "a recorded Retry-After is never slept");
    let dir = temp_dir("waits");
    let recorder = Recorder::create(Arc::new(replay), dir.join("r.jsonl")).unwrap();
    assert!(!recorder.retry_waits());
    let live = Recorder::create(Arc::new(Canned(Mutex::new(vec![]))), dir.join("l.jsonl")).unwrap();
    assert!(live.retry_waits());
}
