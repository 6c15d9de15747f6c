//! Signature enforcement of a run's result: one function for every surface (`ptc eval
//! --signature`, MCP `output_schema`, the agent loop's return check), so a mismatch reads
//! the same everywhere.

use ptc_lisp_eval::{ErrorKind, EvalError, Outcome, RunResult};

use crate::render::{KeyStyle, render_type};
use crate::types::Type;
use crate::validate::{Mode, Report, validate};

/// The error a mismatched result becomes: `validation_error`, naming the expected type and
/// listing every failing path.
pub fn mismatch_error(expected: &Type, report: &Report) -> EvalError {
    EvalError::new(
        ErrorKind::ValidationError,
        format!(
            "the result does not match the expected type {}:\n{}",
            render_type(expected, KeyStyle::Lisp),
            report.render_errors()
        ),
    )
}

/// Validates a successful outcome's value against `expected`. On a mismatch the outcome
/// becomes a `validation_error` (and its printed result is cleared); returns true when the
/// outcome is (still) a success. Failed and errored outcomes are left as they are.
///
/// ```
/// use ptc_lisp_eval::{run, RunOptions};
/// let sig = ptc_signature::parse("{count :int}").unwrap();
/// let mut out = run("{:count \"3\"}", RunOptions::default());
/// assert!(!ptc_signature::enforce(&mut out, &sig.output));
/// assert_eq!(out.reason(), Some("validation_error"));
/// ```
pub fn enforce(outcome: &mut Outcome, expected: &Type) -> bool {
    let value = match &outcome.result {
        RunResult::Value(v) | RunResult::Returned(v) => v,
        _ => return false,
    };
    let report = validate(value, expected, Mode::Enabled);
    if report.is_ok() {
        return true;
    }
    outcome.result = RunResult::Error(mismatch_error(expected, &report));
    outcome.printed.clear();
    false
}
