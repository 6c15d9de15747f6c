//! `ptc-subagent`: the agent loop. An LLM writes PTC-Lisp turn after turn; each program
//! runs in the sandbox, what happened is fed back, and the run ends on a `(return v)` that
//! matches the signature (or on a limit).
//!
//! This crate talks to models only through the [`Llm`] trait: it never speaks HTTP
//! (`ptc-providers` does) and never speaks MCP (`ptc-mcp-aggregator` does).

pub mod llm;

pub use llm::{
    BoxFuture, Llm, LlmError, LlmErrorKind, LlmOptions, LlmRequest, LlmResponse, Message, NativeToolCall, TokenUsage,
    ToolSchema,
};
