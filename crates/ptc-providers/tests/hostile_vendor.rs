//! A vendor that answers without end, echoes secrets, or is reached through a URL with
//! credentials in it: reading stops at the answer cap, and no known secret comes back
//! to the loop, a recording or an error message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "openai")]

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use ptc_llm::{Llm, LlmErrorKind};
use ptc_providers::openai::OpenAi;
use ptc_providers::{ApiKey, Env, ProviderConfig, Recorder, from_resolved, resolve_with};
use serde_json::json;
use support::conversation::hello;
use support::{FakeServer, Reply, endless_server, temp_dir};

const KEY: &str = "sk-proj-ECHOED-0a1b2c3d4e5f";
const OTHER_KEY: &str = "sk-ant-OTHER-VENDOR-99887766";

#[tokio::test]
async fn an_endless_answer_stops_at_the_cap() {
    let (url, sent) = endless_server(64 * 1024, None).await;
    let cap = 1024 * 1024;
    let config = ProviderConfig::new("openai:m", format!("{url}/v1"), "m").with_max_answer_bytes(cap);
    let llm = OpenAi::compatible(config).unwrap();
    let e = llm.complete(&hello()).await.unwrap_err();
    assert_eq!(e.kind, LlmErrorKind::AnswerTooLarge, "{e}");
    assert!(!e.is_retryable());
    assert!(e.message.contains("max_answer_bytes (1048576 bytes"), "{}", e.message);
    assert!(e.message.contains("--max-answer-bytes"), "says what to do: {}", e.message);
    // The client hung up: the server could only push what the socket buffers hold past
    // the cap (a few MB at most), not the endless rest.
    let written = sent.load(Ordering::SeqCst);
    assert!(written < 32 * 1024 * 1024, "the server wrote {written} bytes before the client stopped reading");
}

#[tokio::test]
async fn an_announced_oversize_answer_is_refused_unread() {
    let big = json!({"choices": [{"message": {"content": "y".repeat(300_000)}}]});
    let server = FakeServer::start(vec![Reply::json(200, big)]).await;
    let config = ProviderConfig::new("openai:m", format!("{}/v1", server.url), "m").with_max_answer_bytes(100_000);
    let e = OpenAi::compatible(config).unwrap().complete(&hello()).await.unwrap_err();
    assert_eq!(e.kind, LlmErrorKind::AnswerTooLarge);
    assert!(e.message.contains("announced"), "{}", e.message);
}

#[tokio::test]
async fn an_answer_under_the_cap_is_read_whole() {
    let content = "z".repeat(200_000);
    let server =
        FakeServer::start(vec![Reply::json(200, json!({"choices": [{"message": {"content": content}}]}))]).await;
    let config = ProviderConfig::new("openai:m", format!("{}/v1", server.url), "m").with_max_answer_bytes(300_000);
    let answer = OpenAi::compatible(config).unwrap().complete(&hello()).await.unwrap();
    assert_eq!(answer.content.len(), 200_000);
}

#[tokio::test]
async fn echoed_keys_are_scrubbed_from_answers_and_recordings() {
    let server = FakeServer::start(vec![Reply::json(
        200,
        json!({"choices": [{"message": {
            "content": format!("your key is {KEY}; the other one is {OTHER_KEY}"),
            "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "lisp_eval", "arguments": json!({"program": format!("(str \"{KEY}\")")}).to_string()
            }}]
        }}], "model": KEY}),
    )])
    .await;
    let env = Env::from_pairs([
        ("OPENAI_API_KEY", KEY.to_string()),
        ("ANTHROPIC_API_KEY", OTHER_KEY.to_string()),
        ("OPENAI_BASE_URL", format!("{}/v1", server.url)),
    ]);
    let resolved = resolve_with("openai:m", None, &env).unwrap();
    let dir = temp_dir("echo");
    let path = dir.join("run.jsonl");
    let llm = Recorder::create(from_resolved(&resolved, &env).unwrap(), &path).unwrap();
    let answer = llm.complete(&hello()).await.unwrap();
    assert_eq!(answer.content, "your key is ***; the other one is ***");
    assert_eq!(answer.tool_calls[0].args, json!({"program": "(str \"***\")"}));
    assert_eq!(answer.model.as_deref(), Some("***"));
    let recording = std::fs::read_to_string(&path).unwrap();
    assert!(!recording.contains(KEY) && !recording.contains(OTHER_KEY), "{recording}");
}

#[tokio::test]
async fn credentials_in_the_base_url_never_show() {
    let password = "pa55word-SECRET-1";
    let query = "query-SECRET-2";
    // A port nobody listens on: the transport error names the URL.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let base = format!("http://user:{password}@127.0.0.1:{port}/v1?key={query}");
    let config = ProviderConfig::new("openai:m", base.clone(), "m").with_api_key(ApiKey::new(KEY));
    assert!(!format!("{config:?}").contains(password));
    let e = OpenAi::compatible(config).unwrap().complete(&hello()).await.unwrap_err();
    assert!(e.message.contains("http://***@127.0.0.1"), "shows where, without secrets: {}", e.message);
    for secret in [password, query, KEY] {
        assert!(!e.message.contains(secret), "leaked {secret}: {}", e.message);
    }

    // A vendor answering (an error and an answer) with the URL's secrets in them.
    let server = FakeServer::start(vec![
        Reply::json(500, json!({"error": {"message": format!("bad password {password}")}})),
        Reply::json(200, json!({"choices": [{"message": {"content": format!("query was {query}")}}]})),
    ])
    .await;
    let host = server.url.trim_start_matches("http://");
    let base = format!("http://user:{password}@{host}/v1?key={query}");
    let env = Env::from_pairs([("OPENAI_BASE_URL", base.clone()), ("OPENAI_API_KEY", KEY.to_string())]);
    let resolved = resolve_with("openai:m", None, &env).unwrap();
    for shown in [resolved.to_string(), serde_json::to_string(&resolved).unwrap(), format!("{resolved:?}")] {
        assert!(!shown.contains(password) && !shown.contains(query), "leaked: {shown}");
    }
    let llm: Arc<dyn Llm> = from_resolved(&resolved, &env).unwrap();
    let e = llm.complete(&hello()).await.unwrap_err();
    assert_eq!(e.message, "openai-compatible returned HTTP 500: bad password ***");
    let answer = llm.complete(&hello()).await.unwrap();
    assert_eq!(answer.content, "query was ***");
}

#[tokio::test]
async fn keys_named_by_the_llm_registry_are_scrubbed_from_every_model() {
    let vllm_key = "vllm-token-REGISTRY-SECRET";
    let server = FakeServer::start(vec![Reply::json(
        200,
        json!({"choices": [{"message": {"content": format!("the vllm box uses {vllm_key}")}}]}),
    )])
    .await;
    let registry = ptc_providers::Registry::from_json(
        r#"{"vllm": {"vendor": "openai", "model": "q", "base_url": "http://gpu:8000/v1", "api_key_env": "VLLM_API_KEY"}}"#,
        None,
    )
    .unwrap();
    let env = Env::from_pairs([
        ("OPENAI_API_KEY", KEY.to_string()),
        ("VLLM_API_KEY", vllm_key.to_string()),
        ("OPENAI_BASE_URL", format!("{}/v1", server.url)),
    ]);
    // a different model than the alias: the registry's keys are secrets all the same
    let resolved = resolve_with("openai:m", Some(&registry), &env).unwrap();
    let answer = from_resolved(&resolved, &env).unwrap().complete(&hello()).await.unwrap();
    assert_eq!(answer.content, "the vllm box uses ***");
}
