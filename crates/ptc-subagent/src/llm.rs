//! The `Llm` trait: the one seam between the agent loop and a language model.
//!
//! A request carries the system prompt, the conversation so far, the turn number, the
//! native tool schemas offered (if any) and options; a response carries text and/or native
//! tool calls and token usage. Errors are classified so retry policy can tell a rate limit
//! from a bad request without parsing messages.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// A boxed, sendable future (the trait stays dyn-compatible: `Arc<dyn Llm>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A language model the agent loop can ask for the next turn.
pub trait Llm: Send + Sync {
    /// Produces the assistant's next message for `request`.
    fn complete<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>>;

    /// A short name for traces and errors (`"openai:gpt-4.1-mini"`, `"scripted"`).
    fn name(&self) -> String {
        "llm".to_string()
    }

    /// Whether the loop waits (real time) between retries of a failed request. A live
    /// vendor asks for the wait; a recording played back has no server to spare and
    /// answers `false`, so a recorded `Retry-After` never sleeps.
    fn retry_waits(&self) -> bool {
        true
    }

    /// A mission resumed from a checkpoint continues after `answered` requests this
    /// model object received before the checkpoint (see `SubAgentBuilder::resume_from`).
    /// A scripted or replayed model skips that many entries, so the resumed mission
    /// reads the answers an uninterrupted run would have; a live model has nothing to
    /// skip (the default). `Err` when the script or recording is shorter.
    fn resume_at(&self, answered: u64) -> Result<(), LlmError> {
        let _ = answered;
        Ok(())
    }
}

/// Forwards every method to the model behind the pointer, so `Arc<dyn Llm>` (what
/// `LlmRegistry` and `from_spec` give), `Box<dyn Llm>` and `&T` are models too:
/// `agent.run(&llm)` compiles with any of them.
macro_rules! forward_llm {
    ($($ptr:ty),*) => {$(
        impl<T: Llm + ?Sized> Llm for $ptr {
            fn complete<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
                (**self).complete(request)
            }
            fn name(&self) -> String {
                (**self).name()
            }
            fn retry_waits(&self) -> bool {
                (**self).retry_waits()
            }
            fn resume_at(&self, answered: u64) -> Result<(), LlmError> {
                (**self).resume_at(answered)
            }
        }
    )*};
}

forward_llm!(&T, Box<T>, std::sync::Arc<T>);

/// `llm.complete(request)` with a panic in the model client (while building the future or
/// while polling it) contained as an [`LlmErrorKind::Unknown`] error, which is not
/// retried: the mission ends in `llm_error` instead of unwinding through the caller.
pub(crate) fn complete_contained<'a>(
    llm: &'a (impl Llm + ?Sized),
    request: &'a LlmRequest,
) -> impl Future<Output = Result<LlmResponse, LlmError>> + Send + 'a {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    let panicked = |p: Box<dyn std::any::Any + Send>| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        LlmError::new(
            LlmErrorKind::Unknown,
            format!("the model client {:?} panicked: {what} (a bug in the client, not in the request)", llm.name()),
        )
    };
    let mut future = match catch_unwind(AssertUnwindSafe(|| llm.complete(request))) {
        Ok(f) => Some(f),
        Err(p) => return futures_ready(Err(panicked(p))),
    };
    futures_poll(std::future::poll_fn(move |cx| {
        let Some(f) = future.as_mut() else {
            return std::task::Poll::Ready(Err(LlmError::new(
                LlmErrorKind::Unknown,
                "the model request was polled after it ended",
            )));
        };
        match catch_unwind(AssertUnwindSafe(|| f.as_mut().poll(cx))) {
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Ok(std::task::Poll::Ready(r)) => {
                future = None;
                std::task::Poll::Ready(r)
            }
            Err(p) => {
                future = None;
                std::task::Poll::Ready(Err(panicked(p)))
            }
        }
    }))
}

/// One future type for both arms of [`complete_contained`].
fn futures_ready<'a>(r: Result<LlmResponse, LlmError>) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
    Box::pin(std::future::ready(r))
}

fn futures_poll<'a>(
    f: impl Future<Output = Result<LlmResponse, LlmError>> + Send + 'a,
) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
    Box::pin(f)
}

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

/// Why a model request failed, classified for retry decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LlmErrorKind {
    /// 429 or a provider's rate-limit signal (retryable, honour `retry_after`).
    RateLimit,
    /// Connection or read timeout (retryable).
    Timeout,
    /// 5xx (retryable).
    ServerError,
    /// 4xx other than 429: the request is wrong (not retryable).
    ClientError,
    /// Missing key, unknown model, bad base URL (not retryable).
    ConfigError,
    /// The answer exceeded the size cap and was not read further (not retryable: the
    /// same request would bring the same answer).
    AnswerTooLarge,
    /// Anything else.
    Unknown,
}

impl LlmErrorKind {
    /// Stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            LlmErrorKind::RateLimit => "rate_limit",
            LlmErrorKind::Timeout => "timeout",
            LlmErrorKind::ServerError => "server_error",
            LlmErrorKind::ClientError => "client_error",
            LlmErrorKind::ConfigError => "config_error",
            LlmErrorKind::AnswerTooLarge => "answer_too_large",
            LlmErrorKind::Unknown => "unknown",
        }
    }
}

impl fmt::Display for LlmErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed model request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{kind}: {message}")]
#[non_exhaustive]
pub struct LlmError {
    /// The class of failure.
    pub kind: LlmErrorKind,
    /// What went wrong (the vendor's message where there is one).
    pub message: String,
    /// HTTP status, when the failure came from one.
    pub status: Option<u16>,
    /// How long the vendor asked us to wait (`Retry-After`).
    pub retry_after: Option<Duration>,
}

impl LlmError {
    /// A new error of `kind`.
    pub fn new(kind: LlmErrorKind, message: impl Into<String>) -> Self {
        LlmError { kind, message: message.into(), status: None, retry_after: None }
    }

    /// True for kinds worth retrying (rate limit, timeout, server error).
    pub fn is_retryable(&self) -> bool {
        matches!(self.kind, LlmErrorKind::RateLimit | LlmErrorKind::Timeout | LlmErrorKind::ServerError)
    }
}
