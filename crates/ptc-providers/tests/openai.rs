//! OpenAI Chat Completions against a loopback fake: request shape, answers, errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "openai")]

mod support;

use std::time::{Duration, Instant};

use ptc_llm::{LlmErrorKind, NativeToolCall, TokenUsage};
use ptc_providers::openai::OpenAi;
use ptc_providers::{ApiKey, Env, ProviderConfig, from_spec_with};
use serde_json::json;
use support::conversation::{hello, lisp_eval_schema, tool_round_trip};
use support::{FakeServer, Reply, silent_server};

const KEY: &str = "sk-test-openai-0123456789";

fn completion() -> Reply {
    Reply::json(
        200,
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4.1-mini-2025-04-14",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Counting again.",
                "tool_calls": [
                    {"id": "call_9", "type": "function", "function": {"name": "lisp_eval", "arguments": "{\"program\":\"(+ 1 2)\"}"}},
                    {"id": "call_10", "type": "function", "function": {"name": "lisp_eval", "arguments": ""}}
                ]
            }}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
                      "prompt_tokens_details": {"cached_tokens": 100}}
        }),
    )
}

fn env(server: &FakeServer) -> Env {
    Env::from_pairs([("OPENAI_API_KEY", KEY.to_string()), ("OPENAI_BASE_URL", format!("{}/v1", server.url))])
}

#[tokio::test]
async fn sends_chat_completions_and_reads_tool_calls_and_usage() {
    let server = FakeServer::start(vec![completion()]).await;
    let llm = from_spec_with("openai:gpt-4.1-mini", None, &env(&server)).unwrap();
    assert_eq!(llm.name(), "openai:gpt-4.1-mini");
    let response = llm.complete(&tool_round_trip(None)).await.unwrap();

    let request = server.single();
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), format!("Bearer {KEY}"));
    assert_eq!(request.header("content-type"), "application/json");
    assert_eq!(
        request.body,
        json!({
            "model": "gpt-4.1-mini",
            "messages": [
                {"role": "system", "content": "You write PTC-Lisp."},
                {"role": "user", "content": "How many orders?"},
                {"role": "assistant", "content": "Let me count.", "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "lisp_eval", "arguments": "{\"program\":\"(count data/orders)\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "{\"count\":3}"},
                {"role": "user", "content": "Now answer."}
            ],
            "tools": [{"type": "function", "function": {
                "name": "lisp_eval", "description": "Run a PTC-Lisp program", "parameters": lisp_eval_schema()
            }}],
            "temperature": 0.2,
            // A base URL that is not api.openai.com is a compatible server: `max_tokens`.
            "max_tokens": 256
        })
    );

    assert_eq!(response.content, "Counting again.");
    assert_eq!(
        response.tool_calls,
        vec![
            NativeToolCall {
                id: "call_9".into(),
                name: "lisp_eval".into(),
                args: json!({"program": "(+ 1 2)"}),
                provider_data: None
            },
            NativeToolCall { id: "call_10".into(), name: "lisp_eval".into(), args: json!({}), provider_data: None },
        ]
    );
    assert_eq!(response.usage, TokenUsage { input: 120, output: 30, cache_read: 100, cache_write: 0 });
    assert_eq!(response.model.as_deref(), Some("gpt-4.1-mini-2025-04-14"));
}

#[tokio::test]
async fn openai_itself_gets_max_completion_tokens_and_structured_output() {
    let server =
        FakeServer::start(vec![Reply::json(200, json!({"choices": [{"message": {"content": "{\"n\":1}"}}]}))]).await;
    let config =
        ProviderConfig::new("openai:o4-mini", format!("{}/v1/", server.url), "o4-mini").with_api_key(ApiKey::new(KEY));
    let llm = OpenAi::new(config).unwrap();
    let mut request = hello();
    request.options.max_output_tokens = Some(64);
    request.options.response_schema = Some(json!({"type": "object"}));
    let response = ptc_llm::Llm::complete(&llm, &request).await.unwrap();
    assert_eq!(response.content, "{\"n\":1}");
    assert_eq!(response.usage, TokenUsage::default());
    let body = server.single().body;
    assert_eq!(body["max_completion_tokens"], 64);
    assert!(body.get("max_tokens").is_none());
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}}})
    );
    assert!(body.get("tools").is_none(), "no tools offered, no tools field");
}

#[tokio::test]
async fn ollama_needs_no_key_and_uses_v1_of_ollama_host() {
    let server = FakeServer::start(vec![Reply::json(
        200,
        json!({"choices": [{"message": {"content": "<think>hm</think>hello"}}]}),
    )])
    .await;
    // OLLAMA_HOST without a scheme, as Ollama itself accepts it.
    let env = Env::from_pairs([("OLLAMA_HOST", server.addr.clone())]);
    let llm = from_spec_with("ollama:qwen3:8b", None, &env).unwrap();
    let response = llm.complete(&hello()).await.unwrap();
    assert_eq!(response.content, "hello", "reasoning is stripped from the text");
    let request = server.single();
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), "", "no key is sent to Ollama");
    assert_eq!(request.body["model"], "qwen3:8b");
}

#[tokio::test]
async fn openrouter_sends_its_key_and_the_vendor_model() {
    let server = FakeServer::start(vec![Reply::json(200, json!({"choices": [{"message": {"content": "ok"}}]}))]).await;
    let env = Env::from_pairs([
        ("OPENROUTER_API_KEY", "sk-or-test-0123456789".to_string()),
        ("OPENROUTER_BASE_URL", format!("{}/api/v1", server.url)),
    ]);
    let llm = from_spec_with("openrouter:anthropic/claude-haiku-4.5", None, &env).unwrap();
    llm.complete(&hello()).await.unwrap();
    let request = server.single();
    assert_eq!(request.path, "/api/v1/chat/completions");
    assert_eq!(request.header("authorization"), "Bearer sk-or-test-0123456789");
    assert_eq!(request.body["model"], "anthropic/claude-haiku-4.5");
}

#[tokio::test]
async fn errors_are_classified_with_retry_after_and_the_vendor_message() {
    let server = FakeServer::start(vec![
        Reply::json(429, json!({"error": {"message": "Rate limit reached for gpt-4.1-mini", "type": "requests"}}))
            .with_header("retry-after", "3"),
        Reply::json(500, json!({"error": {"message": "The server had an error"}})),
        Reply::json(
            400,
            json!({"error": {"message": "Invalid schema for function 'lisp_eval'", "type": "invalid_request_error"}}),
        ),
        Reply::json(200, json!({"no": "choices"})),
    ])
    .await;
    let llm = from_spec_with("openai:gpt-4.1-mini", None, &env(&server)).unwrap();

    let e = llm.complete(&hello()).await.unwrap_err();
    assert_eq!((e.kind, e.status, e.retry_after), (LlmErrorKind::RateLimit, Some(429), Some(Duration::from_secs(3))));
    assert!(e.message.contains("Rate limit reached"), "{}", e.message);
    assert!(e.is_retryable());

    let e = llm.complete(&hello()).await.unwrap_err();
    assert_eq!((e.kind, e.status), (LlmErrorKind::ServerError, Some(500)));
    assert!(e.is_retryable());

    let e = llm.complete(&hello()).await.unwrap_err();
    assert_eq!((e.kind, e.status), (LlmErrorKind::ClientError, Some(400)));
    assert!(e.message.contains("Invalid schema for function 'lisp_eval'"), "{}", e.message);
    assert!(!e.is_retryable());

    let e = llm.complete(&hello()).await.unwrap_err();
    assert_eq!(e.kind, LlmErrorKind::Unknown);
}

#[tokio::test]
async fn a_silent_server_is_a_timeout() {
    let url = silent_server().await;
    let config = ProviderConfig::new("openai:m", format!("{url}/v1"), "m").with_timeout(Duration::from_millis(300));
    let llm = OpenAi::compatible(config).unwrap();
    let started = Instant::now();
    let e = ptc_llm::Llm::complete(&llm, &hello()).await.unwrap_err();
    assert_eq!(e.kind, LlmErrorKind::Timeout, "{e}");
    assert!(e.is_retryable());
    assert!(started.elapsed() < Duration::from_secs(10), "the timeout fired late: {:?}", started.elapsed());
}

#[tokio::test]
async fn a_missing_key_names_the_variable() {
    let e = from_spec_with("openai:gpt-4.1-mini", None, &Env::from_pairs([("HOME", "/nowhere")])).err().unwrap();
    assert_eq!(e.kind, LlmErrorKind::ConfigError);
    assert!(e.message.contains("OPENAI_API_KEY"), "{}", e.message);
}

#[tokio::test]
async fn registry_defaults_reach_the_request_and_the_request_wins_over_them() {
    let server = FakeServer::start(vec![
        Reply::json(200, json!({"choices": [{"message": {"content": "a"}}]})),
        Reply::json(200, json!({"choices": [{"message": {"content": "b"}}]})),
    ])
    .await;
    let registry = ptc_providers::Registry::from_json(
        &json!({"fast": {"vendor": "openai", "model": "served-model", "base_url": format!("{}/v1", server.url),
                         "api_key_env": "MY_SERVER_KEY", "max_tokens": 99, "temperature": 0.7}})
        .to_string(),
        None,
    )
    .unwrap();
    let env = Env::from_pairs([("MY_SERVER_KEY", "local-key-0123456789")]);
    let llm = from_spec_with("fast", Some(&registry), &env).unwrap();
    llm.complete(&hello()).await.unwrap();
    llm.complete(&tool_round_trip(None)).await.unwrap();
    let requests = server.requests();
    assert_eq!(requests[0].header("authorization"), "Bearer local-key-0123456789");
    assert_eq!((&requests[0].body["max_tokens"], &requests[0].body["temperature"]), (&json!(99), &json!(0.7)));
    assert_eq!((&requests[1].body["max_tokens"], &requests[1].body["temperature"]), (&json!(256), &json!(0.2)));
}

#[tokio::test]
async fn a_server_that_is_not_there_says_so() {
    // Bind, note the port, close: nothing listens there any more.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let env = Env::from_pairs([("OLLAMA_HOST", format!("http://{addr}"))]);
    let llm = from_spec_with("ollama:llama3.2", None, &env).unwrap();
    let e = llm.complete(&hello()).await.unwrap_err();
    assert_eq!(e.kind, LlmErrorKind::Unknown, "{e}");
    assert!(e.message.contains("could not connect") && e.message.contains(&addr.to_string()), "{}", e.message);
}
