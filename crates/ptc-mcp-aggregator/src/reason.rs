//! Why a `tools/call` of `ptc mcp` failed: the server's reason vocabulary.
//!
//! A program's run keeps the evaluator's reasons ([`McpReason::Eval`]: `parse_error`,
//! `timeout`, `memory_exceeded`...), so one word means one thing on every surface; the
//! server adds the reasons of its own checks (arguments, the call queue, shutdown,
//! sessions, `lisp_task`). A failed `lisp_task` whose planner mission failed answers with
//! the mission's reason instead (the agent loop's vocabulary, or the program's own
//! `(fail {:reason ...})`).
//!
//! This file depends on nothing but `ptc_lisp_eval::ErrorKind`: `cargo xtask docs` and the
//! `ptc` crate's reachability test include it as it is (`docs/reasons/mcp.md`).

use std::fmt;

use ptc_lisp_eval::ErrorKind;

/// The stable reason of a failed `tools/call` (`"reason"` in the payload, the first word
/// of the text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum McpReason {
    /// The program's run ended in this evaluator reason (`docs/reasons/evaluator.md`);
    /// also `cancelled` for a call cancelled while it waited for a slot.
    Eval(ErrorKind),
    /// The tool's arguments are invalid (missing or blank `program`, a bad `context` or
    /// `output_schema`, an unknown argument).
    ArgsError,
    /// Every evaluation slot is taken and the queue is full or the wait timed out.
    Busy,
    /// The call names a tool this server does not offer.
    UnknownTool,
    /// The server is draining: no new calls.
    ShuttingDown,
    /// A session's prelude is no longer loaded in this server.
    PreludeUnavailable,
    /// A session tool's arguments are invalid.
    SessionArgsError,
    /// No such session (never started, or expired and forgotten).
    SessionNotFound,
    /// The session belongs to another owner.
    SessionOwnerMismatch,
    /// The session has ended (closed, TTL or idle timeout).
    SessionClosed,
    /// Another eval of the session holds its lease.
    SessionBusy,
    /// A session limit (count, bytes, bindings) would be exceeded; nothing was committed.
    SessionLimitExceeded,
    /// The eval defined something a session cannot keep; nothing was committed.
    SessionStateError,
    /// The session's stored record cannot be read.
    SessionRecordInvalid,
    /// The session store cannot be reached.
    SessionStoreUnavailable,
    /// `lisp_task`: the planner's answer is larger than `--agentic-max-result-bytes`.
    ResultTooLarge,
}

impl McpReason {
    /// The server's own reasons, in the order of `docs/reasons/mcp.md` (the evaluator's
    /// reasons are [`ErrorKind::ALL`], each wrapped in [`McpReason::Eval`]).
    pub const ALL: [McpReason; 15] = [
        McpReason::ArgsError,
        McpReason::Busy,
        McpReason::UnknownTool,
        McpReason::ShuttingDown,
        McpReason::PreludeUnavailable,
        McpReason::SessionArgsError,
        McpReason::SessionNotFound,
        McpReason::SessionOwnerMismatch,
        McpReason::SessionClosed,
        McpReason::SessionBusy,
        McpReason::SessionLimitExceeded,
        McpReason::SessionStateError,
        McpReason::SessionRecordInvalid,
        McpReason::SessionStoreUnavailable,
        McpReason::ResultTooLarge,
    ];

    /// Stable snake_case name, as clients see it.
    pub fn as_str(self) -> &'static str {
        match self {
            McpReason::Eval(kind) => kind.as_str(),
            McpReason::ArgsError => "args_error",
            McpReason::Busy => "busy",
            McpReason::UnknownTool => "unknown_tool",
            McpReason::ShuttingDown => "shutting_down",
            McpReason::PreludeUnavailable => "prelude_unavailable",
            McpReason::SessionArgsError => "session_args_error",
            McpReason::SessionNotFound => "session_not_found",
            McpReason::SessionOwnerMismatch => "session_owner_mismatch",
            McpReason::SessionClosed => "session_closed",
            McpReason::SessionBusy => "session_busy",
            McpReason::SessionLimitExceeded => "session_limit_exceeded",
            McpReason::SessionStateError => "session_state_error",
            McpReason::SessionRecordInvalid => "session_record_invalid",
            McpReason::SessionStoreUnavailable => "session_store_unavailable",
            McpReason::ResultTooLarge => "result_too_large",
        }
    }

    /// One line saying what the reason means (the table of `docs/reasons/mcp.md`).
    pub fn description(self) -> &'static str {
        match self {
            McpReason::Eval(kind) => kind.description(),
            McpReason::ArgsError => {
                "The tool's arguments are invalid: a missing or blank `program`, a bad `context` or `output_schema`, an unknown argument."
            }
            McpReason::Busy => {
                "Every evaluation slot is taken and the queue is full, or the call waited past `--queue-timeout-ms`."
            }
            McpReason::UnknownTool => {
                "The call names a tool this server does not offer (`lisp_eval` with `--sessions`, say)."
            }
            McpReason::ShuttingDown => "The server is draining after a shutdown signal and takes no new calls.",
            McpReason::PreludeUnavailable => "A session's prelude is no longer loaded in this server.",
            McpReason::SessionArgsError => "A session tool's arguments are invalid.",
            McpReason::SessionNotFound => "No such session: never started, or expired and forgotten.",
            McpReason::SessionOwnerMismatch => "The session belongs to another owner (token or client).",
            McpReason::SessionClosed => "The session has ended: closed, or past its TTL or idle timeout.",
            McpReason::SessionBusy => "Another eval of the session holds its lease; nothing was run.",
            McpReason::SessionLimitExceeded => {
                "A session limit (sessions, bytes, bindings) would be exceeded; nothing was committed."
            }
            McpReason::SessionStateError => "The eval defined something a session cannot keep; nothing was committed.",
            McpReason::SessionRecordInvalid => "The session's stored record cannot be read; it is left as it is.",
            McpReason::SessionStoreUnavailable => "The session store (Redis) cannot be reached.",
            McpReason::ResultTooLarge => {
                "`lisp_task`: the planner's answer is larger than `--agentic-max-result-bytes`."
            }
        }
    }

    /// The feedback line a model reads after the message: what to do next.
    pub fn feedback(self) -> &'static str {
        match self {
            McpReason::Eval(ErrorKind::ParseError) => {
                "The program did not parse. Fix the syntax at the reported line and column and call lisp_eval again."
            }
            McpReason::Eval(ErrorKind::Timeout) => {
                "The program ran out of time. Process less data per call, avoid long loops, or aggregate with reduce."
            }
            McpReason::Eval(ErrorKind::MemoryExceeded) => {
                "The program built too much data. Return summaries (counts, sums, the first few items) instead of whole collections."
            }
            McpReason::Eval(ErrorKind::ValidationError) => {
                "The result does not match output_schema. Fix the listed paths and call lisp_eval again."
            }
            McpReason::Eval(ErrorKind::Cancelled) => "The call was cancelled by the client.",
            McpReason::Eval(ErrorKind::Fail) => "The program called (fail ...). Read the reason and adjust.",
            McpReason::Eval(_) => {
                "The program raised an error. Read the message, fix the program and call lisp_eval again."
            }
            McpReason::ArgsError => {
                "The tool arguments are invalid. Pass {\"program\": \"...\"} and optionally an object \"context\"."
            }
            McpReason::Busy => {
                "The MCP server is at its concurrent-call cap. The previous call has not finished. Wait briefly and retry the same tools/call."
            }
            McpReason::UnknownTool => {
                "The name is not a tool here. This MCP server exposes one tool, `lisp_eval`; inside a program, (tool/...) may only name the tools its description lists."
            }
            McpReason::ShuttingDown => "The server is shutting down. Retry on a new connection.",
            McpReason::PreludeUnavailable => {
                "The session was started with a prelude this server no longer has. Start a new session."
            }
            McpReason::SessionArgsError => {
                "The session tool arguments are invalid. Fix the named argument and call again."
            }
            McpReason::SessionNotFound => "No such session (it may have expired). Start one with lisp_session_start.",
            McpReason::SessionOwnerMismatch => {
                "That session belongs to another client. Use your own sessions (lisp_session_list)."
            }
            McpReason::SessionClosed => "The session has ended. Start a new one with lisp_session_start.",
            McpReason::SessionBusy => "Another eval of this session is running. Wait for it to return, then retry.",
            McpReason::SessionLimitExceeded => {
                "A session limit was reached and nothing was committed. Free room with lisp_session_forget or close sessions."
            }
            McpReason::SessionStateError => {
                "The eval defined something a session cannot keep; nothing was committed. Follow the message."
            }
            McpReason::SessionRecordInvalid => {
                "The session's stored state cannot be read. Close it and start a new session."
            }
            McpReason::SessionStoreUnavailable => {
                "The session store is unreachable. Retry shortly; lisp_eval-style work is unaffected."
            }
            McpReason::ResultTooLarge => "Ask for fewer items or fields.",
        }
    }
}

impl From<ErrorKind> for McpReason {
    fn from(kind: ErrorKind) -> Self {
        McpReason::Eval(kind)
    }
}

impl fmt::Display for McpReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
