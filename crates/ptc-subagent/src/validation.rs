//! Validation modes: how strictly a mission checks a return value against its signature,
//! and a tool's arguments and result against the tool's signature.
//!
//! One vocabulary for both ([`ValidationMode`], the signature crate's mode): `enabled`
//! (the default: errors fail, extra map fields are allowed), `strict` (extra fields are
//! errors too; an agent in strict mode also refuses tools without a signature),
//! `warn_only` (errors become `tracing` warnings and the value goes through; they are
//! also kept in `Step.warnings`, a return value's and each tool call's) and `disabled`
//! (nothing is checked or coerced). The agent's mode is each tool's default; a tool's own
//! [`Tool::validation`](crate::Tool::validation) wins.

use ptc_lisp_eval::{ToolError, Value};
pub use ptc_signature::Mode as ValidationMode;
use ptc_signature::{KeyStyle, Signature, Type};
use serde_json::Value as Json;

use crate::nesting::Warnings;
use crate::tool::PreparedTool;

/// Logs a `warn_only` warning and keeps it for `Step.warnings` when there is a mission.
fn warn(sink: Option<&Warnings>, name: &str, text: String) {
    tracing::warn!(tool_name = name, "{text}");
    if let Some(mut w) = sink.and_then(|s| s.lock().ok()) {
        w.push(text);
    }
}

/// The mode a tool is checked in: its own, or `enabled` for tools the loop adds itself.
fn mode_of(prepared: &PreparedTool) -> ValidationMode {
    prepared.tool.validation.unwrap_or_default()
}

/// A tool's arguments after its input check: coerced to the signature's input types,
/// or the `invalid_tool_args` error the program raises. `warn_only` lets a mismatch
/// through (logged); `disabled` passes the arguments untouched; `strict` also refuses
/// arguments the signature does not name.
pub(crate) fn tool_args(
    prepared: &PreparedTool,
    name: &str,
    args: &Value,
    sink: Option<&Warnings>,
) -> Result<Value, ToolError> {
    let Some(ty) = &prepared.inputs else { return Ok(args.clone()) };
    let mode = mode_of(prepared);
    if mode == ValidationMode::Disabled {
        return Ok(args.clone());
    }
    let (coerced, report) = ptc_signature::coerce(args, ty);
    let mut errors: Vec<String> = report.errors.iter().map(|e| format!("- {e}")).collect();
    if mode == ValidationMode::Strict
        && let (Type::Object { fields, .. }, Value::Map(given)) = (ty, args)
    {
        for (key, _) in given.iter() {
            let key_text = match key {
                Value::Keyword(s) | Value::Str(s) => s.replace('-', "_"),
                other => ptc_lisp_eval::to_clojure(other),
            };
            if !fields.iter().any(|f| f.name.replace('-', "_") == key_text) {
                let known: Vec<String> = fields.iter().map(|f| format!(":{}", f.name.replace('_', "-"))).collect();
                let takes = if known.is_empty() { "no arguments".to_string() } else { known.join(", ") };
                errors
                    .push(format!("- {key_text}: unexpected argument (strict validation); tool/{name} takes {takes}"));
            }
        }
    }
    if errors.is_empty() {
        return Ok(coerced);
    }
    let msg = format!("invalid arguments for tool/{name}:\n{}", errors.join("\n"));
    if mode == ValidationMode::WarnOnly {
        warn(sink, name, format!("{msg}\n(validation warn_only: the call went ahead)"));
        return Ok(coerced);
    }
    Err(ToolError::invalid_args(msg))
}

/// A tool's result after its output check against the signature's output type (`Err`:
/// the tool error the program raises). Nothing is checked for an `:any` output.
pub(crate) fn tool_result(
    prepared: &PreparedTool,
    name: &str,
    result: &Json,
    sink: Option<&Warnings>,
) -> Result<(), ToolError> {
    let mode = mode_of(prepared);
    if mode == ValidationMode::Disabled {
        return Ok(());
    }
    let Some(output) = prepared.tool.output.as_deref() else { return Ok(()) };
    let value = ptc_lisp_eval::json::from_json(result);
    let report = ptc_signature::validate(&value, output, mode);
    let problems = if report.is_ok() { &report.warnings } else { &report.errors };
    if problems.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = problems.iter().map(|e| format!("- {e}")).collect();
    let msg = format!(
        "tool/{name} returned a value that does not match its signature's output `{}`:\n{}",
        ptc_signature::render_type(output, KeyStyle::Lisp),
        lines.join("\n")
    );
    if mode == ValidationMode::WarnOnly {
        warn(sink, name, format!("{msg}\n(validation warn_only: the result was used)"));
        return Ok(());
    }
    Err(ToolError::failed(msg))
}

/// The output type a tool's result is checked against: `None` for `:any`.
pub(crate) fn output_type(sig: &Signature) -> Option<std::sync::Arc<Type>> {
    match &sig.output {
        Type::Any => None,
        other => Some(std::sync::Arc::new(other.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_with_both_spellings() {
        assert_eq!("warn_only".parse::<ValidationMode>(), Ok(ValidationMode::WarnOnly));
        assert_eq!("strict".parse::<ValidationMode>(), Ok(ValidationMode::Strict));
        let err = "lenient".parse::<ValidationMode>().unwrap_err();
        assert!(err.contains("enabled, warn_only, strict or disabled"), "{err}");
    }
}
