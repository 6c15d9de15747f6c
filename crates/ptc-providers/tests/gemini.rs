//! Gemini generateContent against a loopback fake: request shape, answers, errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "gemini")]

mod support;

use std::time::Duration;

use ptc_llm::{LlmErrorKind, Message, TokenUsage};
use ptc_providers::{Env, from_spec_with};
use serde_json::json;
use support::conversation::{hello, lisp_eval_schema, tool_round_trip};
use support::{FakeServer, Reply};

const KEY: &str = "AIza-test-gemini-0123456789";

fn env(server: &FakeServer) -> Env {
    Env::from_pairs([("GEMINI_API_KEY", KEY.to_string()), ("GEMINI_BASE_URL", server.url.clone())])
}

fn function_call_answer() -> Reply {
    Reply::json(
        200,
        json!({
            "candidates": [{"content": {"role": "model", "parts": [
                {"text": "Thinking about orders", "thought": true},
                {"text": "Counting."},
                {"functionCall": {"id": "fc-7", "name": "lisp_eval", "args": {"program": "(count data/orders)"}},
                 "thoughtSignature": "c2lnLTE="},
                {"functionCall": {"name": "lisp_eval", "args": {"program": "(first data/orders)"}}}
            ]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 200, "candidatesTokenCount": 40, "thoughtsTokenCount": 10,
                              "cachedContentTokenCount": 150, "totalTokenCount": 250},
            "modelVersion": "gemini-2.5-flash"
        }),
    )
}

#[tokio::test]
async fn sends_generate_content_with_system_instruction_and_function_parts() {
    let server = FakeServer::start(vec![function_call_answer()]).await;
    let llm = from_spec_with("gemini:gemini-2.5-flash", None, &env(&server)).unwrap();
    // The recorded call carries a signature and a vendor id: both go back.
    let data = json!({"thought_signature": "c2lnLTA=", "vendor_id": true});
    let response = llm.complete(&tool_round_trip(Some(data))).await.unwrap();

    let request = server.single();
    assert_eq!(request.path, "/v1beta/models/gemini-2.5-flash:generateContent");
    assert_eq!(request.query, None, "the key never travels in the URL");
    assert_eq!(request.header("x-goog-api-key"), KEY);
    assert_eq!(
        request.body,
        json!({
            "systemInstruction": {"parts": [{"text": "You write PTC-Lisp."}]},
            "contents": [
                {"role": "user", "parts": [{"text": "How many orders?"}]},
                {"role": "model", "parts": [
                    {"text": "Let me count."},
                    {"functionCall": {"id": "call_1", "name": "lisp_eval", "args": {"program": "(count data/orders)"}},
                     "thoughtSignature": "c2lnLTA="}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"id": "call_1", "name": "lisp_eval", "response": {"result": {"count": 3}}}},
                    {"text": "Now answer."}
                ]}
            ],
            "tools": [{"functionDeclarations": [
                {"name": "lisp_eval", "description": "Run a PTC-Lisp program", "parametersJsonSchema": lisp_eval_schema()}
            ]}],
            "generationConfig": {"temperature": 0.2, "maxOutputTokens": 256}
        })
    );

    assert_eq!(response.content, "Counting.", "thought parts are not text");
    assert_eq!(response.tool_calls.len(), 2);
    let (first, second) = (&response.tool_calls[0], &response.tool_calls[1]);
    assert_eq!(first.id, "fc-7");
    assert_eq!(first.provider_data, Some(json!({"thought_signature": "c2lnLTE=", "vendor_id": true})));
    assert_eq!(second.args, json!({"program": "(first data/orders)"}));
    assert_ne!(second.id, first.id, "a call without a vendor id gets a local one");
    assert_eq!(second.provider_data, None);
    assert_eq!(response.usage, TokenUsage { input: 200, output: 50, cache_read: 150, cache_write: 0 });
    assert_eq!(response.model.as_deref(), Some("gemini-2.5-flash"));
}

#[tokio::test]
async fn signatures_round_trip_from_a_response_into_the_next_request() {
    let server = FakeServer::start(vec![
        function_call_answer(),
        Reply::json(200, json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "3"}]}}]})),
    ])
    .await;
    let llm = from_spec_with("gemini:gemini-3-pro-preview", None, &env(&server)).unwrap();
    let mut request = hello();
    let first = llm.complete(&request).await.unwrap();
    request.messages.push(Message::Assistant { content: first.content.clone(), tool_calls: first.tool_calls.clone() });
    for call in &first.tool_calls {
        request.messages.push(Message::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: "3".into(),
            is_error: false,
        });
    }
    assert_eq!(llm.complete(&request).await.unwrap().content, "3");

    let sent = &server.requests()[1].body;
    assert_eq!(
        sent["contents"][1]["parts"],
        json!([
            {"text": "Counting."},
            {"functionCall": {"id": "fc-7", "name": "lisp_eval", "args": {"program": "(count data/orders)"}}, "thoughtSignature": "c2lnLTE="},
            {"functionCall": {"name": "lisp_eval", "args": {"program": "(first data/orders)"}}}
        ])
    );
    assert_eq!(
        sent["contents"][2]["parts"],
        json!([
            {"functionResponse": {"id": "fc-7", "name": "lisp_eval", "response": {"result": 3}}},
            {"functionResponse": {"name": "lisp_eval", "response": {"result": 3}}}
        ])
    );
    assert!(sent.get("generationConfig").is_none(), "nothing to configure");
}

#[tokio::test]
async fn errors_are_classified_with_retry_after_and_the_vendor_message() {
    let google_error =
        |code: u16, status: &str, message: &str| json!({"error": {"code": code, "message": message, "status": status}});
    let server = FakeServer::start(vec![
        Reply::json(429, google_error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."))
            .with_header("retry-after", "30"),
        Reply::json(503, google_error(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")),
        Reply::json(500, google_error(500, "INTERNAL", "An internal error has occurred.")),
        Reply::json(
            400,
            google_error(
                400,
                "INVALID_ARGUMENT",
                "Function call is missing a thought_signature in functionCall parts.",
            ),
        ),
    ])
    .await;
    let llm = from_spec_with("gemini:gemini-2.5-flash", None, &env(&server)).unwrap();
    let e = llm.complete(&hello()).await.unwrap_err();
    assert_eq!((e.kind, e.retry_after), (LlmErrorKind::RateLimit, Some(Duration::from_secs(30))));
    assert!(e.message.contains("Resource has been exhausted"), "{}", e.message);
    let e = llm.complete(&hello()).await.unwrap_err();
    assert_eq!((e.kind, e.status), (LlmErrorKind::ServerError, Some(503)));
    let e = llm.complete(&hello()).await.unwrap_err();
    assert_eq!((e.kind, e.status), (LlmErrorKind::ServerError, Some(500)));
    assert!(e.message.contains("An internal error has occurred."), "{}", e.message);
    let e = llm.complete(&hello()).await.unwrap_err();
    assert_eq!((e.kind, e.status), (LlmErrorKind::ClientError, Some(400)));
    assert!(e.message.contains("missing a thought_signature"), "{}", e.message);
}

#[tokio::test]
async fn a_missing_key_names_the_variable() {
    let e = from_spec_with("gemini:gemini-2.5-flash", None, &Env::from_pairs([("HOME", "/x")])).err().unwrap();
    assert_eq!(e.kind, LlmErrorKind::ConfigError);
    assert!(e.message.contains("GEMINI_API_KEY"), "{}", e.message);
}
