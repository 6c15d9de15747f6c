//! Watching a mission as it happens.
//!
//! Two mechanisms, for two audiences: `tracing` spans and events (`run`, `turn`, `llm`,
//! `tool`, with durations and token counts) for whatever subscriber the application
//! installs, and an [`Observer`] that receives every [`Event`] as data — the exact
//! request sent to the model, its answer, each tool call and each finished turn — for
//! trace files and live displays.

use serde::Serialize;
use serde_json::Value as Json;

use crate::llm::{Message, NativeToolCall, TokenUsage, ToolSchema};
use crate::step::{Fail, Status, StepUsage, Turn};

/// Receives the events of a mission, in order, on the thread that produced them (tool
/// calls arrive from the evaluation thread).
pub trait Observer: Send + Sync {
    /// One event.
    fn event(&self, event: &Event);
}

/// Something that happened during a mission. Serialises as one JSON object tagged by
/// `"event"` (`llm_request`, `llm_response`, ...), one line per event in trace files.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// The mission starts.
    RunStart {
        /// The agent's name.
        agent: Option<String>,
        /// Work turns available.
        max_turns: u32,
    },
    /// A request is about to be sent to the model, exactly as it will be sent.
    LlmRequest {
        /// Turn number.
        turn: u32,
        /// 1-based attempt (retries count up).
        attempt: u32,
        /// The system prompt.
        system: String,
        /// The conversation.
        messages: Vec<Message>,
        /// Tools offered natively.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tools: Vec<ToolSchema>,
    },
    /// What an answer cost and the mission's spend so far (when the model's price is
    /// known; see `cost.rs`).
    Cost {
        /// Turn number.
        turn: u32,
        /// This answer, in US dollars.
        request_usd: f64,
        /// The mission so far.
        total_usd: f64,
    },
    /// The model answered.
    LlmResponse {
        /// Turn number.
        turn: u32,
        /// Attempt.
        attempt: u32,
        /// Text content.
        content: String,
        /// Native tool calls.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<NativeToolCall>,
        /// Tokens.
        usage: TokenUsage,
        /// Time the request took.
        duration_ms: u64,
    },
    /// The model request failed.
    LlmError {
        /// Turn number.
        turn: u32,
        /// Attempt.
        attempt: u32,
        /// Error class (`rate_limit`, ...).
        kind: String,
        /// Message.
        message: String,
        /// The wait before the next attempt, when there is one.
        retry_in_ms: Option<u64>,
    },
    /// A program or the model called a tool.
    ToolCall {
        /// Turn number.
        turn: u32,
        /// Tool name.
        name: String,
        /// Arguments.
        args: Json,
        /// `native` (the model called it) or `ptc_lisp` (a program did).
        exposure_layer: String,
        /// True when the result came from the run's cache (the tool did not run).
        cached: bool,
        /// Hash of the canonical cache key, for cached tools.
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_key_hash: Option<String>,
        /// True when the full result sits in the run's cache (a cached tool that answered).
        full_result_cached: bool,
        /// Bytes of JSON the cache holds for this call, when it stored a new result.
        #[serde(skip_serializing_if = "Option::is_none")]
        retained_bytes: Option<u64>,
        /// Result on success.
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Json>,
        /// Error on failure.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Duration.
        duration_ms: u64,
    },
    /// A turn finished.
    TurnEnd {
        /// The turn's record (as it appears in the step).
        turn: Turn,
    },
    /// The mission ended.
    RunEnd {
        /// `ok` or `error`.
        status: Status,
        /// The return value.
        #[serde(rename = "return")]
        return_value: Option<Json>,
        /// The failure.
        fail: Option<Fail>,
        /// Usage.
        usage: StepUsage,
    },
    /// The mission's calls through its [`ProgramTools`](crate::ProgramTools) (an MCP
    /// aggregator's upstreams), just before `RunEnd`: every call in order, each with its
    /// turn, and their `ptc_metrics`.
    UpstreamSummary {
        /// Every call, in order.
        upstream_calls: Vec<Json>,
        /// The summary (`schema_version`, counts, bytes, reduction ratio...).
        ptc_metrics: Json,
    },
    /// Something that happened in a nested agent (an agent tool or the self tool).
    Nested {
        /// The child's name (its agent name, or the tool's).
        agent: String,
        /// 1 for a child of the root, 2 for a grandchild, ...
        depth: u32,
        /// The child's own event (never itself `Nested`: a grandchild's events arrive
        /// wrapped once, with depth 2).
        inner: Box<Event>,
    },
}

pub(crate) fn emit(observer: Option<&dyn Observer>, event: impl FnOnce() -> Event) {
    if let Some(o) = observer {
        o.event(&event());
    }
}
