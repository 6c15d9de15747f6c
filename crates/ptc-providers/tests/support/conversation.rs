//! The conversation every vendor test sends: a tool round trip, then more user text.

use ptc_llm::{LlmOptions, LlmRequest, Message, NativeToolCall, ToolSchema};
use serde_json::{Value as Json, json};

pub fn lisp_eval_schema() -> Json {
    json!({"type": "object", "properties": {"program": {"type": "string"}}, "required": ["program"]})
}

/// A turn-2 request: the model called `lisp_eval`, the loop answered, and adds feedback.
pub fn tool_round_trip(provider_data: Option<Json>) -> LlmRequest {
    LlmRequest {
        system: "You write PTC-Lisp.".into(),
        messages: vec![
            Message::user("How many orders?"),
            Message::Assistant {
                content: "Let me count.".into(),
                tool_calls: vec![NativeToolCall {
                    id: "call_1".into(),
                    name: "lisp_eval".into(),
                    args: json!({"program": "(count data/orders)"}),
                    provider_data,
                }],
            },
            Message::ToolResult {
                call_id: "call_1".into(),
                name: "lisp_eval".into(),
                content: r#"{"count":3}"#.into(),
                is_error: false,
            },
            Message::user("Now answer."),
        ],
        turn: 2,
        tools: vec![ToolSchema {
            name: "lisp_eval".into(),
            description: "Run a PTC-Lisp program".into(),
            parameters: lisp_eval_schema(),
        }],
        options: LlmOptions {
            cache: true,
            temperature: Some(0.2),
            max_output_tokens: Some(256),
            response_schema: None,
        },
    }
}

/// A plain turn-1 request.
pub fn hello() -> LlmRequest {
    LlmRequest { system: "Be brief.".into(), messages: vec![Message::user("hi")], turn: 1, ..Default::default() }
}
