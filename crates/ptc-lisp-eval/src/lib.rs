//! `ptc-lisp-eval`: runs PTC-Lisp programs in a sandbox.
//!
//! An [`Engine`] owns the [`Limits`] and the threads programs run on (an [`EvalPool`]); it compiles source
//! text into a reusable [`Program`] and runs it with a [`RunInput`] (context data, memory
//! of earlier runs), a [`Host`] (the only door to the outside: tool calls and discovery)
//! and a [`Cancel`] handle. Every run ends in an [`Outcome`]: a value, a `(return v)`, a
//! `(fail v)` or an [`EvalError`] with a stable [`ErrorKind`], plus prints, the tool-call
//! ledger, the new memory and usage.
//!
//! This crate must never do I/O: no network, no filesystem, no environment variables, no
//! async runtime, and no clock except the deadline check. Given the same program, data
//! and tool results, it computes the same result.
//!
//! ```
//! use ptc_lisp_eval::{Engine, Limits, NoTools};
//! let engine = Engine::new(Limits::default());
//! let out = engine.eval_with("(->> [1 2 3 4] (filter #(> % 2)) (map inc) (reduce +))", &NoTools);
//! assert_eq!(out.printed, "9");
//! ```
//!
//! API boundary: the items re-exported here plus the modules [`value`], [`json`],
//! [`printer`], [`registry`], [`tool_keys`] and [`contract`]. Everything else (analyzer,
//! nodes, interpreter, budgets, builtin implementations) is internal and may change in
//! any release.

#![deny(missing_docs)]
// A `pub` item no path from the root reaches is `pub(crate)`: what is public is the API.
#![warn(unreachable_pub)]

mod analyze;
mod builtins;
mod cancel;
pub mod contract;
mod desugar;
mod engine;
mod error;
mod function;
mod fusion;
mod host;
mod interp;
pub mod json;
mod lazy;
mod limits;
mod memory;
mod meter;
mod moves;
mod nesting;
mod node;
mod outcome;
mod parallel;
mod pool;
pub mod printer;
mod prints;
mod pvector;
mod regex_value;
mod release;
mod run;
mod special_form;
mod stack;
mod steps;
mod suggest;
pub mod tool_keys;
pub mod value;

/// The function registry, read-only: names, arities, categories, docs and examples of
/// every builtin (what `doc`, `dir`, `apropos` and the generated reference show), the
/// namespaces and their names, and the special forms (what editors complete).
pub mod registry {
    pub use crate::builtins::{
        Arity, Builtin, Category, Library, all, home_library, lookup, lookup_ns, names_in_namespace, namespaces,
    };
    pub use crate::special_form::special_forms;
}

/// Lexical search as `apropos` ranks it (seed 002): tokens and scores, for hosts that
/// search their own catalogs the same way.
pub mod search {
    pub use crate::builtins::discovery::{score, tokens};
}

pub use cancel::{Cancel, CancelWatch, Interrupted};
pub use engine::{CompileEnv, Engine, Program, RunInput};
pub use error::{ErrorKind, EvalError};
pub use function::{Function, FunctionKind};
pub use host::{
    AsyncToolFn, CallCx, Discovery, Exposure, FnHost, Host, NoTools, ToolCall, ToolCallRecord, ToolError,
    ToolErrorKind, ToolFn, ToolFuture, ToolSpec,
};
pub use lazy::LazySeq;
pub use limits::{LimitError, LimitSpec, LimitUnit, Limits};
pub use memory::Memory;
pub use nesting::MAX_VALUE_NESTING;
pub use outcome::{Outcome, RunResult, Usage};
pub use pool::{EvalPool, PoolError, PoolOptions};
pub use printer::{repl_preview, repl_preview_with, to_clojure};
pub use regex_value::RegexValue;
pub use run::{RunOptions, run};
pub use value::{Reduced, Value};

/// The examples of this crate's `README.md`, compiled and run as doctests so that the
/// page crates.io shows cannot drift from the code.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
