//! `ptc-lisp-syntax`: the PTC-Lisp reader. Text in, located [`Form`]s out, and a printer
//! that turns forms back into text the reader accepts.
//!
//! This crate knows nothing about evaluation: it does not resolve symbols, check special
//! forms or arities, or know which functions exist. Any input yields forms or a located
//! [`ParseError`] whose message says what to write instead (the messages are read by the
//! models that write PTC-Lisp); it never panics, and collection nesting is bounded by
//! [`ParseOptions::max_depth`] so hostile input cannot exhaust the stack of whoever walks
//! the forms. Property tests and a fuzz target hold it to that.
//!
//! Pipeline: a `logos` lexer (`lexer.rs`, literal decoding in `literals.rs`) feeds a small
//! hand-written parser (`parser.rs`) that keeps open delimiters on an explicit stack, which
//! is what lets it say "'[' opened at line 1, column 4 is closed by ')'". `printer.rs` goes
//! the other way.
//!
//! ```
//! let forms = ptc_lisp_syntax::parse_program("(+ 1 2) [:a \\b]").unwrap();
//! assert_eq!(forms.len(), 2);
//! assert_eq!(ptc_lisp_syntax::print_form(&forms[1]), "[:a \\b]");
//!
//! let src = "(let [x 1]";
//! let err = ptc_lisp_syntax::parse_program(src).unwrap_err();
//! assert_eq!(err.message, "unclosed list: '(' opened at line 1, column 1 was never closed; add ')'");
//! assert_eq!(err.render(src), format!("{}\n  1 | (let [x 1]\n    | ^", err.message));
//! ```

#![deny(missing_docs)]
// A `pub` item no path from the root reaches is `pub(crate)`: what is public is the API.
#![warn(unreachable_pub)]

pub mod ast;
mod error;
mod lexer;
mod literals;
mod parser;
mod printer;

pub use ast::{Form, FormKind, Span};
pub use error::ParseError;
pub use printer::{print_form, print_program, write_string_literal};

/// Reader options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseOptions {
    /// Maximum nesting of collections (`(`, `[`, `{`, `#{`, `#(`); one more level is a
    /// parse error. Every form returned is at most this deep, so code that walks forms
    /// recursively (printing, evaluation, dropping) is safe as long as this stays modest.
    pub max_depth: usize,
}

impl Default for ParseOptions {
    /// `max_depth: 256`: far beyond what real programs use, far below any stack limit.
    fn default() -> Self {
        ParseOptions { max_depth: 256 }
    }
}

/// Reads a whole program (any number of top-level forms) with default options.
///
/// Empty input (or only whitespace and comments) is `Ok(vec![])`.
pub fn parse_program(src: &str) -> Result<Vec<Form>, ParseError> {
    parse_program_with(src, &ParseOptions::default())
}

/// Reads a whole program with explicit options.
///
/// ```
/// use ptc_lisp_syntax::{ParseOptions, parse_program_with};
/// let shallow = ParseOptions { max_depth: 2 };
/// assert!(parse_program_with("[[1]]", &shallow).is_ok());
/// let err = parse_program_with("[[[1]]]", &shallow).unwrap_err();
/// assert!(err.message.starts_with("forms nested deeper than 2 levels at line 1, column 3"));
/// ```
pub fn parse_program_with(src: &str, opts: &ParseOptions) -> Result<Vec<Form>, ParseError> {
    parser::parse(src, opts)
}

/// The examples of this crate's `README.md`, compiled and run as doctests so that the
/// page crates.io shows cannot drift from the code.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
