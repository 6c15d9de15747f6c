//! `ptc signature check` and the `--signature` check of `ptc eval`.

use std::process::ExitCode;

use anyhow::Result;
use ptc_lisp_eval::Outcome;
use ptc_signature::{KeyStyle, Signature};

/// Prints the normalised signature and its schemas; an invalid signature is a usage error.
pub fn check(text: &str) -> Result<ExitCode> {
    let sig = ptc_signature::parse(text).map_err(|e| {
        // show at most 60 characters on each side of the error
        let chars: Vec<char> = text.chars().collect();
        let at = e.column.saturating_sub(1).min(chars.len());
        let from = at.saturating_sub(60);
        let to = (at + 60).min(chars.len());
        let shown: String = chars[from..to].iter().collect();
        let prefix = if from > 0 { "..." } else { "" };
        let suffix = if to < chars.len() { "..." } else { "" };
        let caret = format!("{}^", " ".repeat(at - from + prefix.len()));
        anyhow::anyhow!("{e}\n  {prefix}{shown}{suffix}\n  {caret}")
    })?;
    let canonical = ptc_signature::render(&sig);
    let lisp = ptc_signature::render::render(&sig, KeyStyle::Lisp);
    out_line!("{canonical}");
    // the keyword form only when it reads differently (string keys)
    if lisp != canonical {
        out_line!("lisp:   {lisp}");
    }
    let schemas = serde_json::json!({
        "input": ptc_signature::schema::input_schema(&sig),
        "output": ptc_signature::schema::output_schema(&sig.output),
    });
    out_line!("{}", serde_json::to_string_pretty(&schemas)?);
    Ok(ExitCode::SUCCESS)
}

/// Validates a successful result against the signature's output type; a mismatch turns the
/// outcome into a `validation_error` listing every path.
pub fn check_result(outcome: &mut Outcome, sig: &Signature) {
    ptc_signature::enforce(outcome, &sig.output);
}
