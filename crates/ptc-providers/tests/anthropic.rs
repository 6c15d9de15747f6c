//! Anthropic Messages against a loopback fake: request shape, answers, errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "anthropic")]

mod support;

use std::time::Duration;

use ptc_llm::{LlmErrorKind, Message, NativeToolCall, TokenUsage};
use ptc_providers::{Env, from_spec_with};
use serde_json::json;
use support::conversation::{hello, lisp_eval_schema, tool_round_trip};
use support::{FakeServer, Reply};

const KEY: &str = "sk-ant-test-0123456789";

fn env(server: &FakeServer) -> Env {
    Env::from_pairs([("ANTHROPIC_API_KEY", KEY.to_string()), ("ANTHROPIC_BASE_URL", server.url.clone())])
}

fn message_with_thinking_and_tool_use() -> Reply {
    Reply::json(
        200,
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5-20251001",
            "stop_reason": "tool_use",
            "content": [
                {"type": "thinking", "thinking": "I should count.", "signature": "sig-abc"},
                {"type": "text", "text": "Counting."},
                {"type": "tool_use", "id": "toolu_01", "name": "lisp_eval", "input": {"program": "(count data/orders)"}}
            ],
            "usage": {"input_tokens": 20, "output_tokens": 15, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 50}
        }),
    )
}

#[tokio::test]
async fn sends_messages_with_top_level_system_and_paired_tool_results() {
    let server = FakeServer::start(vec![message_with_thinking_and_tool_use()]).await;
    let llm = from_spec_with("anthropic:claude-haiku-4-5", None, &env(&server)).unwrap();
    let response = llm.complete(&tool_round_trip(None)).await.unwrap();

    let request = server.single();
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), KEY);
    assert_eq!(request.header("anthropic-version"), "2023-06-01");
    assert_eq!(request.header("authorization"), "", "Anthropic takes the key in x-api-key only");
    assert_eq!(
        request.body,
        json!({
            "model": "claude-haiku-4-5",
            "max_tokens": 256,
            "system": [{"type": "text", "text": "You write PTC-Lisp.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "How many orders?"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me count."},
                    {"type": "tool_use", "id": "call_1", "name": "lisp_eval", "input": {"program": "(count data/orders)"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "{\"count\":3}"},
                    {"type": "text", "text": "Now answer."}
                ]}
            ],
            "tools": [{"name": "lisp_eval", "description": "Run a PTC-Lisp program", "input_schema": lisp_eval_schema(),
                       "cache_control": {"type": "ephemeral"}}],
            "temperature": 0.2
        })
    );

    assert_eq!(response.content, "Counting.", "thinking is not text");
    assert_eq!(response.tool_calls.len(), 1);
    let call = &response.tool_calls[0];
    assert_eq!((call.id.as_str(), call.name.as_str()), ("toolu_01", "lisp_eval"));
    assert_eq!(call.args, json!({"program": "(count data/orders)"}));
    // input excludes cached tokens on the wire; ours includes them.
    assert_eq!(response.usage, TokenUsage { input: 1070, output: 15, cache_read: 1000, cache_write: 50 });
    assert_eq!(response.model.as_deref(), Some("claude-haiku-4-5-20251001"));
}

#[tokio::test]
async fn thinking_goes_back_as_a_block_before_tool_use_never_as_text() {
    let server = FakeServer::start(vec![
        message_with_thinking_and_tool_use(),
        Reply::json(200, json!({"content": [{"type": "text", "text": "3 orders."}], "usage": {"input_tokens": 5, "output_tokens": 2}})),
    ])
    .await;
    let llm = from_spec_with("anthropic:claude-sonnet-4-5", None, &env(&server)).unwrap();
    let mut request = hello();
    let first = llm.complete(&request).await.unwrap();
    let call: NativeToolCall = first.tool_calls[0].clone();
    request.messages.push(Message::Assistant { content: first.content.clone(), tool_calls: vec![call.clone()] });
    request.messages.push(Message::ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: "boom".into(),
        is_error: true,
    });
    request.turn = 2;
    let second = llm.complete(&request).await.unwrap();
    assert_eq!(second.content, "3 orders.");

    let sent = &server.requests()[1].body;
    // Without `cache`, the system prompt is a plain string.
    assert_eq!(sent["system"], "Be brief.");
    assert_eq!(sent["max_tokens"], 4096, "the default when nothing sets max tokens");
    assert_eq!(
        sent["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "I should count.", "signature": "sig-abc"},
            {"type": "text", "text": "Counting."},
            {"type": "tool_use", "id": "toolu_01", "name": "lisp_eval", "input": {"program": "(count data/orders)"}}
        ])
    );
    assert_eq!(
        sent["messages"][2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "boom", "is_error": true}]})
    );
    assert!(!sent.to_string().contains("\"text\":\"I should count.\""), "thinking never travels as text");
}

#[tokio::test]
async fn errors_are_classified_with_retry_after_and_the_vendor_message() {
    let anthropic_error =
        |kind: &str, message: &str| json!({"type": "error", "error": {"type": kind, "message": message}});
    let server = FakeServer::start(vec![
        Reply::json(429, anthropic_error("rate_limit_error", "Number of request tokens has exceeded your rate limit"))
            .with_header("retry-after", "12"),
        Reply::json(529, anthropic_error("overloaded_error", "Overloaded")),
        Reply::json(500, anthropic_error("api_error", "Internal server error")),
        Reply::json(400, anthropic_error("invalid_request_error", "messages.1: tool_use ids must be unique")),
    ])
    .await;
    let llm = from_spec_with("anthropic:claude-haiku-4-5", None, &env(&server)).unwrap();

    let e = llm.complete(&hello()).await.unwrap_err();
    assert_eq!((e.kind, e.retry_after), (LlmErrorKind::RateLimit, Some(Duration::from_secs(12))));
    assert!(e.message.contains("exceeded your rate limit"), "{}", e.message);
    let e = llm.complete(&hello()).await.unwrap_err();
    assert_eq!((e.kind, e.status), (LlmErrorKind::ServerError, Some(529)));
    let e = llm.complete(&hello()).await.unwrap_err();
    assert_eq!((e.kind, e.status), (LlmErrorKind::ServerError, Some(500)));
    let e = llm.complete(&hello()).await.unwrap_err();
    assert_eq!((e.kind, e.status), (LlmErrorKind::ClientError, Some(400)));
    assert!(e.message.contains("tool_use ids must be unique"), "{}", e.message);
}

#[tokio::test]
async fn a_missing_key_names_the_variable() {
    let e = from_spec_with("anthropic:claude-haiku-4-5", None, &Env::from_pairs([("HOME", "/x")])).err().unwrap();
    assert_eq!(e.kind, LlmErrorKind::ConfigError);
    assert!(e.message.contains("ANTHROPIC_API_KEY"), "{}", e.message);
}
