//! Errors are values with a kind: what went wrong, in words an LLM can act on.

use std::fmt;

use ptc_lisp_syntax::Span;

use crate::value::Value;

/// The kind of a failed run: the evaluator's reason vocabulary. The string forms
/// (`as_str`) are stable: they appear in JSON envelopes, MCP results and turn feedback, and
/// `docs/reasons/evaluator.md` is generated from [`ErrorKind::ALL`] and
/// [`ErrorKind::description`]. `fail` is the reason of a run that called `(fail v)`
/// ([`crate::Outcome::failure_kind`]); `validation_error` is raised by `ptc-signature`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The source text could not be read.
    ParseError,
    /// A special form is malformed (`(let [x] ...)`, `recur` not in tail position...).
    InvalidForm,
    /// `%` used outside `#()`.
    InvalidPlaceholder,
    /// A symbol resolves to nothing.
    UnboundVar,
    /// `(tool/x ...)` names a tool the host does not have.
    UnknownTool,
    /// A function got the wrong number of arguments.
    ArityError,
    /// A value of the wrong type was given to an operation.
    TypeError,
    /// Integer overflow, division by zero and friends.
    ArithmeticError,
    /// A non-function was called.
    NotCallable,
    /// Destructuring did not fit the value.
    DestructureError,
    /// An interop method that is not supported.
    UnsupportedMethod,
    /// Generic runtime failure of a builtin.
    RuntimeError,
    /// A tool call failed on the host side.
    ToolError,
    /// Tool called with positional arguments.
    InvalidToolArgs,
    /// More tool calls than allowed.
    ToolCallLimitExceeded,
    /// A loop ran more `recur` iterations than allowed.
    LoopLimitExceeded,
    /// Non-tail recursion deeper than allowed.
    RecursionLimitExceeded,
    /// Wall-clock deadline passed.
    Timeout,
    /// The run burned more fuel than `max_fuel` allows.
    FuelExhausted,
    /// The program built more bytes than its budget.
    MemoryExceeded,
    /// The program text is larger than allowed.
    ProgramTooLarge,
    /// More unique symbols than allowed.
    SymbolLimitExceeded,
    /// The printed result is larger than allowed.
    OutputTooLarge,
    /// A pmap/pcalls branch failed.
    PmapError,
    /// No parallel worker could be obtained.
    ParallelCapacityExceeded,
    /// The host cancelled the run.
    Cancelled,
    /// `(fail v)` was called.
    Fail,
    /// The result does not match the expected signature.
    ValidationError,
}

impl ErrorKind {
    /// Every kind, in declaration order (the order of `docs/reasons/evaluator.md`).
    pub const ALL: [ErrorKind; 28] = [
        ErrorKind::ParseError,
        ErrorKind::InvalidForm,
        ErrorKind::InvalidPlaceholder,
        ErrorKind::UnboundVar,
        ErrorKind::UnknownTool,
        ErrorKind::ArityError,
        ErrorKind::TypeError,
        ErrorKind::ArithmeticError,
        ErrorKind::NotCallable,
        ErrorKind::DestructureError,
        ErrorKind::UnsupportedMethod,
        ErrorKind::RuntimeError,
        ErrorKind::ToolError,
        ErrorKind::InvalidToolArgs,
        ErrorKind::ToolCallLimitExceeded,
        ErrorKind::LoopLimitExceeded,
        ErrorKind::RecursionLimitExceeded,
        ErrorKind::Timeout,
        ErrorKind::FuelExhausted,
        ErrorKind::MemoryExceeded,
        ErrorKind::ProgramTooLarge,
        ErrorKind::SymbolLimitExceeded,
        ErrorKind::OutputTooLarge,
        ErrorKind::PmapError,
        ErrorKind::ParallelCapacityExceeded,
        ErrorKind::Cancelled,
        ErrorKind::Fail,
        ErrorKind::ValidationError,
    ];

    /// Stable snake_case name (`parse_error`, `timeout`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::ParseError => "parse_error",
            ErrorKind::InvalidForm => "invalid_form",
            ErrorKind::InvalidPlaceholder => "invalid_placeholder",
            ErrorKind::UnboundVar => "unbound_var",
            ErrorKind::UnknownTool => "unknown_tool",
            ErrorKind::ArityError => "arity_error",
            ErrorKind::TypeError => "type_error",
            ErrorKind::ArithmeticError => "arithmetic_error",
            ErrorKind::NotCallable => "not_callable",
            ErrorKind::DestructureError => "destructure_error",
            ErrorKind::UnsupportedMethod => "unsupported_method",
            ErrorKind::RuntimeError => "runtime_error",
            ErrorKind::ToolError => "tool_error",
            ErrorKind::InvalidToolArgs => "invalid_tool_args",
            ErrorKind::ToolCallLimitExceeded => "tool_call_limit_exceeded",
            ErrorKind::LoopLimitExceeded => "loop_limit_exceeded",
            ErrorKind::RecursionLimitExceeded => "recursion_limit_exceeded",
            ErrorKind::Timeout => "timeout",
            ErrorKind::FuelExhausted => "fuel_exhausted",
            ErrorKind::MemoryExceeded => "memory_exceeded",
            ErrorKind::ProgramTooLarge => "program_too_large",
            ErrorKind::SymbolLimitExceeded => "symbol_limit_exceeded",
            ErrorKind::OutputTooLarge => "output_too_large",
            ErrorKind::PmapError => "pmap_error",
            ErrorKind::ParallelCapacityExceeded => "parallel_capacity_exceeded",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Fail => "fail",
            ErrorKind::ValidationError => "validation_error",
        }
    }

    /// One line saying what the kind means (the table of `docs/reasons/evaluator.md`).
    pub fn description(self) -> &'static str {
        match self {
            ErrorKind::ParseError => "The source text could not be read (unbalanced brackets, a bad literal...).",
            ErrorKind::InvalidForm => "A special form is malformed (`(let [x] ...)`, `recur` not in tail position...).",
            ErrorKind::InvalidPlaceholder => "`%` or `%1` used outside an anonymous function `#(...)`.",
            ErrorKind::UnboundVar => {
                "A symbol resolves to nothing: not a local, a definition, a builtin or `data/` key."
            }
            ErrorKind::UnknownTool => "`(tool/x ...)` names a tool the host does not offer.",
            ErrorKind::ArityError => "A function got the wrong number of arguments.",
            ErrorKind::TypeError => "A value of the wrong type was given to an operation.",
            ErrorKind::ArithmeticError => "Integer overflow, division by zero or a number out of range.",
            ErrorKind::NotCallable => "A value that is not a function was called.",
            ErrorKind::DestructureError => "A destructuring pattern did not fit its value.",
            ErrorKind::UnsupportedMethod => "An interop method or class that PTC-Lisp does not support.",
            ErrorKind::RuntimeError => "A builtin failed for another reason (the message says which).",
            ErrorKind::ToolError => "A tool call failed on the host side.",
            ErrorKind::InvalidToolArgs => "A tool was called with positional, too deeply nested or rejected arguments.",
            ErrorKind::ToolCallLimitExceeded => "The run made more tool calls than `max_tool_calls` allows.",
            ErrorKind::LoopLimitExceeded => {
                "A `loop` ran more `recur` iterations (or a sequence more items) than allowed."
            }
            ErrorKind::RecursionLimitExceeded => "Non-tail recursion went deeper than `max_depth` allows.",
            ErrorKind::Timeout => "The run passed its deadline (`timeout`).",
            ErrorKind::FuelExhausted => "The run burned more fuel than `max_fuel` allows.",
            ErrorKind::MemoryExceeded => "The program built more bytes than `max_heap_bytes` allows.",
            ErrorKind::ProgramTooLarge => "The program text is larger than `max_program_bytes`.",
            ErrorKind::SymbolLimitExceeded => "The program uses more distinct symbols and keywords than allowed.",
            ErrorKind::OutputTooLarge => "The printed result is larger than `max_result_bytes`.",
            ErrorKind::PmapError => "A `pmap`/`pcalls` branch failed (the message names the branch and its error).",
            ErrorKind::ParallelCapacityExceeded => {
                "No parallel worker or run thread was free (`max_parallel_workers`, the pool's queue)."
            }
            ErrorKind::Cancelled => "The host or the client cancelled the run.",
            ErrorKind::Fail => "The program called `(fail v)`.",
            ErrorKind::ValidationError => "The result does not match the expected signature or output schema.",
        }
    }

    /// The coarse phase: `parse_error`, `analysis_error` or `eval_error` (limits keep their
    /// own names).
    pub fn phase(self) -> &'static str {
        match self {
            ErrorKind::ParseError => "Parse",
            ErrorKind::InvalidForm
            | ErrorKind::InvalidPlaceholder
            | ErrorKind::UnboundVar
            | ErrorKind::UnknownTool
            | ErrorKind::ProgramTooLarge
            | ErrorKind::SymbolLimitExceeded => "Analysis",
            ErrorKind::Timeout => "Timeout",
            ErrorKind::ValidationError => "Validation",
            ErrorKind::MemoryExceeded => "Memory",
            _ => "Eval",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A located, kinded error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct EvalError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// Human (and LLM) readable message.
    pub message: String,
    /// Source location when known.
    pub span: Option<Span>,
}

impl EvalError {
    /// New error without location.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        EvalError { kind, message: message.into(), span: None }
    }

    /// Attaches a span unless one is already set.
    pub fn at(mut self, span: Span) -> Self {
        if self.span.is_none() {
            self.span = Some(span);
        }
        self
    }
}

/// Non-local control flow inside the evaluator: errors, `return`, `fail`, `recur`.
#[derive(Debug, Clone)]
pub(crate) enum Flow {
    /// A program error.
    Error(Box<EvalError>),
    /// `(return v)`.
    Return(Value),
    /// `(fail v)`.
    Fail(Value),
    /// `recur`: the arguments were stashed in the interpreter.
    Recur,
}

impl From<EvalError> for Flow {
    fn from(e: EvalError) -> Self {
        Flow::Error(Box::new(e))
    }
}

/// Result type of evaluation steps.
pub(crate) type EvalResult<T = Value> = Result<T, Flow>;

/// Builds an error flow.
pub(crate) fn err<T>(kind: ErrorKind, message: impl Into<String>) -> EvalResult<T> {
    Err(Flow::Error(Box::new(EvalError::new(kind, message))))
}

/// Shorthand for a type error.
pub(crate) fn type_err<T>(message: impl Into<String>) -> EvalResult<T> {
    err(ErrorKind::TypeError, message)
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
