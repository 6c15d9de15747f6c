//! The [`Outcome`] every run produces.

use std::time::Duration;

use crate::error::{ErrorKind, EvalError};
use crate::host::ToolCallRecord;
use crate::memory::Memory;
use crate::value::Value;

/// How a run ended.
#[derive(Debug, Clone)]
pub enum RunResult {
    /// The value of the last form.
    Value(Value),
    /// `(return v)`.
    Returned(Value),
    /// `(fail v)`.
    Failed(Value),
    /// An error.
    Error(EvalError),
}

/// Resource usage of a run.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Usage {
    /// Wall-clock time of parse + analyze + eval.
    pub duration: Duration,
    /// Fuel units burned (calls, iterations, builtin work).
    pub fuel: u64,
    /// Bytes charged to the memory budget.
    pub heap_bytes: u64,
}

/// The result of a run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Outcome {
    /// Value, return, fail or error.
    pub result: RunResult,
    /// The result printed with `to_clojure` (untruncated; empty on error).
    pub printed: String,
    /// `println` lines in order.
    pub prints: Vec<String>,
    /// Tool calls in order.
    pub tool_calls: Vec<ToolCallRecord>,
    /// User definitions after the run (unchanged when the run failed).
    pub memory: Memory,
    /// Resource usage.
    pub usage: Usage,
}

impl Outcome {
    /// An outcome that failed before the program ran (or could not run at all).
    pub fn failure(e: EvalError, memory: Memory) -> Self {
        Outcome {
            result: RunResult::Error(e),
            printed: String::new(),
            prints: Vec::new(),
            tool_calls: Vec::new(),
            memory,
            usage: Usage::default(),
        }
    }

    /// True for value and return results.
    pub fn is_ok(&self) -> bool {
        matches!(self.result, RunResult::Value(_) | RunResult::Returned(_))
    }

    /// The result value for value/return/fail outcomes.
    pub fn value(&self) -> Option<&Value> {
        match &self.result {
            RunResult::Value(v) | RunResult::Returned(v) | RunResult::Failed(v) => Some(v),
            RunResult::Error(_) => None,
        }
    }

    /// The error, if the run failed with one.
    pub fn error(&self) -> Option<&EvalError> {
        match &self.result {
            RunResult::Error(e) => Some(e),
            _ => None,
        }
    }

    /// The reason of a failed run: the error's kind, or [`ErrorKind::Fail`] for `(fail v)`.
    pub fn failure_kind(&self) -> Option<ErrorKind> {
        match &self.result {
            RunResult::Error(e) => Some(e.kind),
            RunResult::Failed(_) => Some(ErrorKind::Fail),
            _ => None,
        }
    }

    /// The stable reason of a failed run: the error kind's name, or `fail` for `(fail v)`.
    pub fn reason(&self) -> Option<&'static str> {
        self.failure_kind().map(ErrorKind::as_str)
    }
}
