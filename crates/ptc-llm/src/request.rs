//! What the loop sends: the request, its options, the conversation and the tools offered.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// One request to a model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmRequest {
    /// The system prompt (static across turns, so providers may mark it cacheable).
    pub system: String,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// 1-based turn number of the agent loop.
    pub turn: u32,
    /// Tools offered natively (provider function calling); empty for the content transport.
    pub tools: Vec<ToolSchema>,
    /// Options for this request.
    pub options: LlmOptions,
}

/// Per-request options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmOptions {
    /// Ask the provider to cache the static prefix (system prompt, tool schemas).
    pub cache: bool,
    /// Sampling temperature, when the caller wants one.
    pub temperature: Option<f32>,
    /// Cap on output tokens.
    pub max_output_tokens: Option<u32>,
    /// JSON Schema the answer must follow (text mode with a signature), if the provider
    /// supports structured output.
    pub response_schema: Option<Json>,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Message {
    /// Text from the user (the mission, or feedback from the loop).
    User {
        /// The text.
        content: String,
    },
    /// What the model answered: text and/or native tool calls.
    Assistant {
        /// The text (may be empty when the model only called tools).
        content: String,
        /// Native tool calls the model made, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<NativeToolCall>,
    },
    /// The result of one native tool call, paired with it by `call_id`. Serialised as
    /// `{"role": "tool", "tool_call_id": ..., "name": ..., "content": ...}`.
    #[serde(rename = "tool", alias = "tool_result")]
    ToolResult {
        /// The id of the call this answers.
        #[serde(rename = "tool_call_id", alias = "call_id")]
        call_id: String,
        /// The tool's name.
        name: String,
        /// The result as text (usually JSON).
        content: String,
        /// True when the result reports an error.
        #[serde(default)]
        is_error: bool,
    },
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::User { content: content.into() }
    }

    /// An assistant message without tool calls.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message::Assistant { content: content.into(), tool_calls: Vec::new() }
    }
}

/// A native (provider function-calling) tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NativeToolCall {
    /// Provider-assigned id; results are paired by it.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments (a JSON object).
    pub args: Json,
    /// Opaque provider data that must be sent back with this call on the next request
    /// (e.g. Gemini thought signatures). The loop never reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_data: Option<Json>,
}

/// A tool offered to the model natively.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    /// Tool name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Json,
}
