//! What a model answers: text, native tool calls and token usage.

use serde::{Deserialize, Serialize};

use crate::NativeToolCall;

/// The model's answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmResponse {
    /// Text content (thinking/reasoning already removed by the provider).
    pub content: String,
    /// Native tool calls, in order.
    #[serde(default)]
    pub tool_calls: Vec<NativeToolCall>,
    /// Token usage of this request.
    #[serde(default)]
    pub usage: TokenUsage,
    /// The model that answered, when the provider says.
    #[serde(default)]
    pub model: Option<String>,
}

impl LlmResponse {
    /// A text-only response.
    pub fn text(content: impl Into<String>) -> Self {
        LlmResponse { content: content.into(), ..LlmResponse::default() }
    }
}

/// Token usage of one request (or summed over a run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens (including cached ones).
    pub input: u64,
    /// Completion tokens.
    pub output: u64,
    /// Prompt tokens served from the provider's cache.
    pub cache_read: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write: u64,
}

impl TokenUsage {
    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &TokenUsage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
    }

    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input + self.output
    }
}
