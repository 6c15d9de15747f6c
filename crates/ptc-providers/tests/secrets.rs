//! API keys appear in the auth header and nowhere else: not in recordings, Debug output,
//! resolutions or error messages.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "openai")]

mod support;

use std::sync::Arc;

use ptc_llm::{Llm, LlmErrorKind};
use ptc_providers::openai::OpenAi;
use ptc_providers::{ApiKey, Env, ProviderConfig, Recorder, from_spec_with, resolve_with};
use serde_json::json;
use support::conversation::{hello, tool_round_trip};
use support::{FakeServer, Reply, silent_server, temp_dir};

const KEY: &str = "sk-proj-SECRET-9f8e7d6c5b4a";

#[tokio::test]
async fn the_key_never_leaves_the_auth_header() {
    let server = FakeServer::start(vec![
        Reply::json(200, json!({"choices": [{"message": {"content": "fine"}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}})),
        // Vendors sometimes echo the key they rejected.
        Reply::json(401, json!({"error": {"message": format!("Incorrect API key provided: {KEY}.")}})),
    ])
    .await;
    let env = Env::from_pairs([("OPENAI_API_KEY", KEY.to_string()), ("OPENAI_BASE_URL", format!("{}/v1", server.url))]);
    let dir = temp_dir("secrets");
    let path = dir.join("run.jsonl");
    let llm = Recorder::create(from_spec_with("openai:gpt-4.1-mini", None, &env).unwrap(), &path).unwrap();

    llm.complete(&tool_round_trip(None)).await.unwrap();
    let e = llm.complete(&hello()).await.unwrap_err();
    assert_eq!(e.kind, LlmErrorKind::ClientError);
    assert!(e.message.contains("Incorrect API key provided: ***"), "{}", e.message);

    // It did travel where it belongs.
    assert_eq!(server.requests()[0].header("authorization"), format!("Bearer {KEY}"));

    let recording = std::fs::read_to_string(&path).unwrap();
    assert_eq!(recording.lines().count(), 2);
    let lower = recording.to_lowercase();
    for forbidden in [KEY.to_lowercase().as_str(), "bearer", "authorization", "x-api-key", "api_key"] {
        assert!(!lower.contains(forbidden), "the recording contains {forbidden:?}: {recording}");
    }
    for printed in [format!("{e}"), format!("{e:?}"), format!("{llm:?}")] {
        assert!(!printed.contains(KEY), "leaked: {printed}");
    }

    let resolved = resolve_with("openai:gpt-4.1-mini", None, &env).unwrap();
    assert!(resolved.key_set);
    for printed in [resolved.to_string(), format!("{resolved:?}"), serde_json::to_string(&resolved).unwrap()] {
        assert!(!printed.contains(KEY), "leaked: {printed}");
        assert!(printed.contains("OPENAI_API_KEY"), "names the variable: {printed}");
    }
}

#[tokio::test]
async fn debug_and_transport_errors_hide_the_key() {
    let url = silent_server().await;
    let config = ProviderConfig::new("openai:m", format!("{url}/v1"), "m")
        .with_api_key(ApiKey::new(KEY))
        .with_timeout(std::time::Duration::from_millis(200));
    assert!(!format!("{config:?}").contains(KEY));
    let llm = OpenAi::compatible(config).unwrap();
    assert!(!format!("{llm:?}").contains(KEY));
    let e = Arc::new(llm).complete(&hello()).await.unwrap_err();
    assert_eq!(e.kind, LlmErrorKind::Timeout);
    assert!(!format!("{e:?}").contains(KEY));
}
