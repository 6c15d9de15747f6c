//! `ptc-lisp-eval`: runs PTC-Lisp programs in a sandbox.
//!
//! Source text is read by `ptc-lisp-syntax`, analyzed into resolved nodes
//! ([`analyze`]), and evaluated by a slot-based tree walker ([`interp`]) that meters
//! fuel, time and memory ([`limits`]). The only door to the outside world is the
//! [`Host`] trait (tool calls).
//!
//! This crate must never do I/O: no network, no filesystem, no environment variables, no
//! async runtime, and no clock except the deadline check. Given the same program, data
//! and tool results, it computes the same result.
//!
//! ```
//! use ptc_lisp_eval::{run, RunOptions};
//! let out = run("(->> [1 2 3 4] (filter #(> % 2)) (map inc) (reduce +))", RunOptions::default());
//! assert_eq!(out.printed, "9");
//! ```

pub mod analyze;
pub mod builtins;
mod desugar;
pub mod error;
pub mod function;
pub mod host;
pub mod interp;
pub mod json;
pub mod limits;
pub mod node;
pub mod printer;
pub mod regex_value;
pub mod run;
pub mod value;

pub use error::{ErrorKind, EvalError};
pub use host::{FnHost, Host, NoTools, ToolCallRecord};
pub use interp::Globals;
pub use limits::Limits;
pub use printer::{repl_preview, to_clojure};
pub use run::{Outcome, RunOptions, RunResult, Usage, run, run_on_this_thread, run_with_stack};
pub use value::Value;
