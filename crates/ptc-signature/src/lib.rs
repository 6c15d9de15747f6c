//! `ptc-signature`: the contracts between agents and tools.
//!
//! A signature such as `(query :string, limit :int?) -> [{id :int, title :string}]` is
//! parsed once ([`parse`]), then used to validate outputs strictly ([`validate`]), coerce
//! inputs leniently with warnings ([`coerce`]), render prompt lines ([`render()`]), and
//! bridge to JSON Schema ([`schema`]). Errors teach: `:list is not a type — use [:type]`.
//!
//! This crate does no I/O and depends only on `ptc-lisp-eval` for values.
//!
//! ```
//! use ptc_signature::{parse, validate, Mode};
//! use ptc_lisp_eval::Value;
//! let sig = parse("{count :int}").unwrap();
//! let report = validate(&Value::map([(Value::kw("count"), Value::str("x"))]), &sig.output, Mode::Enabled);
//! assert_eq!(report.render_errors(), "- count: expected int, got string \"x\"");
//! ```

#![deny(missing_docs)]
// A `pub` item no path from the root reaches is `pub(crate)`: what is public is the API.
#![warn(unreachable_pub)]

mod enforce;
pub mod keys;
mod parse;
pub mod render;
pub mod schema;
pub mod template;
mod types;
mod validate;

pub use enforce::{enforce, mismatch_error};
pub use parse::{SignatureError, parse, parse_type};
pub use render::{KeyStyle, extract_return_spec, render_tool, render_type};
pub use template::{Template, TemplateError};
pub use types::{Field, Signature, Type};
pub use validate::{Issue, Mode, Report, coerce, field_value, validate};

/// Renders a signature canonically (`(query :string) -> {count :int}`).
pub fn render(sig: &Signature) -> String {
    render::render(sig, KeyStyle::AsWritten)
}

/// The examples of this crate's `README.md`, compiled and run as doctests so that the
/// page crates.io shows cannot drift from the code.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
