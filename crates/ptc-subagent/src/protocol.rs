//! The `lisp_eval` tool: its schema, its descriptions, its result JSON and the protocol
//! errors of the `tool_call` transport.
//!
//! In the `lisp-tool` and `combined` modes the model runs programs by calling one native
//! tool, `lisp_eval`, with `{"program": "..."}`. Each call gets exactly one tool result
//! (also when the call is refused), so the conversation stays well-formed for every
//! provider.

use ptc_lisp_eval::{Globals, Outcome, RunResult, Value, repl_preview, to_clojure};
use serde_json::{Map, Value as Json, json};

use crate::feedback::FormatOptions;
use crate::llm::ToolSchema;

/// The native tool's name.
pub const LISP_EVAL: &str = "lisp_eval";

/// The `program` parameter's description.
pub const PROGRAM_DESCRIPTION: &str =
    "PTC-Lisp source code. Must be non-empty. Call app tools as `(tool/name ...)` from inside the program.";

/// `lisp_eval`'s description when it is the only native tool (`lisp-tool` mode).
pub const DESCRIPTION_WITH_APP_TOOLS: &str = "Execute a PTC-Lisp program in PtcRunner's sandbox. Use this for deterministic computation and tool orchestration. Call app tools as `(tool/name ...)` from inside the program — do not attempt to call app tools as native function calls; only `lisp_eval` is available natively.";

/// `lisp_eval`'s description in combined mode.
pub const DESCRIPTION_TEXT_MODE: &str = "Execute a PTC-Lisp program in PtcRunner's sandbox. Use this for deterministic computation, filtering, aggregation, or multi-step data transformation. Call `:both`-exposed app tools as `(tool/name ...)` from inside the program. The same tools are also callable natively in this assistant turn, but not in the same turn as `lisp_eval`.";

/// The `lisp_eval` tool schema with `description`.
pub fn lisp_eval_schema(description: &str) -> ToolSchema {
    ToolSchema {
        name: LISP_EVAL.into(),
        description: description.into(),
        parameters: json!({
            "type": "object",
            "properties": {"program": {"type": "string", "description": PROGRAM_DESCRIPTION}},
            "required": ["program"],
            "additionalProperties": false
        }),
    }
}

/// The program in a `lisp_eval` call's arguments, or the message explaining what is wrong.
pub fn program_arg(args: &Json) -> Result<String, String> {
    match args.get("program") {
        None | Some(Json::Null) => Err("lisp_eval requires a non-empty `program` string argument.".into()),
        Some(Json::String(s)) if s.trim().is_empty() => Err("lisp_eval `program` must be a non-empty string.".into()),
        Some(Json::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!("lisp_eval `program` must be a string, got {other}.")),
    }
}

/// A refused or failed call: `{"status": "error", "reason", "message", ...}`.
pub fn error_json(reason: &str, message: &str) -> Json {
    json!({"status": "error", "reason": reason, "message": message})
}

/// The protocol error for an answer with more than one `lisp_eval` call.
pub fn multiple_tool_calls() -> Json {
    error_json("multiple_tool_calls", "Make exactly one lisp_eval call per assistant turn; this call was not run.")
}

/// The protocol error for a call to a tool the model was not offered.
pub fn unknown_tool(name: &str, offered: &[String]) -> Json {
    error_json(
        "unknown_tool",
        &format!("Unknown tool {name:?}; the tools offered natively are: {}.", offered.join(", ")),
    )
}

/// The protocol error for app tools called in the same answer as `lisp_eval`.
pub fn mixed_with_lisp_eval() -> Json {
    error_json(
        "mixed_with_lisp_eval",
        "lisp_eval cannot be combined with other tool calls in one assistant turn; call lisp_eval alone, or the other tools alone. None of these calls was run.",
    )
}

/// The tool result of a program run.
pub(crate) fn outcome_json(outcome: &Outcome, old_memory: &Globals, fmt: &FormatOptions, feedback: &str) -> Json {
    let mut obj = Map::new();
    match &outcome.result {
        RunResult::Value(v) | RunResult::Returned(v) => {
            obj.insert("status".into(), json!("ok"));
            let mut truncated = false;
            if let Some(line) = repl_preview(v, fmt.feedback_max_chars) {
                truncated = line.chars().count() > fmt.feedback_max_chars;
                obj.insert("result".into(), json!(line));
            }
            if matches!(outcome.result, RunResult::Returned(_)) {
                obj.insert("returned".into(), json!(true));
            }
            obj.insert("prints".into(), json!(outcome.prints));
            obj.insert("memory".into(), memory_json(old_memory, &outcome.memory, fmt));
            obj.insert("truncated".into(), json!(truncated));
        }
        RunResult::Failed(v) => {
            obj.insert("status".into(), json!("error"));
            obj.insert("reason".into(), json!("fail"));
            obj.insert("message".into(), json!(fail_message(v)));
            obj.insert("result".into(), ptc_lisp_eval::json::to_json(v).unwrap_or_else(|_| json!(to_clojure(v))));
            obj.insert("prints".into(), json!(outcome.prints));
        }
        RunResult::Error(e) => {
            obj.insert("status".into(), json!("error"));
            obj.insert("reason".into(), json!(e.kind.as_str()));
            obj.insert("message".into(), json!(e.message));
            obj.insert("prints".into(), json!(outcome.prints));
        }
    }
    if !feedback.is_empty() {
        obj.insert("feedback".into(), json!(feedback));
    }
    Json::Object(obj)
}

fn fail_message(v: &Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        Value::Map(m) => ptc_signature::field_value(m, "message")
            .map(|(_, m)| match m {
                Value::Str(s) => s.to_string(),
                other => to_clojure(other),
            })
            .unwrap_or_else(|| to_clojure(v)),
        other => to_clojure(other),
    }
}

/// `{"changed": {name: preview}, "stored_keys": [...], "truncated": bool}`.
fn memory_json(old: &Globals, new: &Globals, fmt: &FormatOptions) -> Json {
    let mut names: Vec<&std::sync::Arc<str>> = new.values.keys().collect();
    names.sort();
    let mut changed = Map::new();
    let mut truncated = false;
    for name in &names {
        let v = &new.values[*name];
        let same = old.values.get(*name).is_some_and(|before| to_clojure(before) == to_clojure(v));
        if same {
            continue;
        }
        let text = to_clojure(v);
        let shown: String = text.chars().take(fmt.preview_max_chars).collect();
        if shown.len() < text.len() {
            truncated = true;
            changed.insert(name.to_string(), json!(format!("{shown}...")));
        } else {
            changed.insert(name.to_string(), json!(shown));
        }
    }
    json!({"changed": changed, "stored_keys": names.iter().map(|n| n.to_string()).collect::<Vec<_>>(), "truncated": truncated})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_has_one_required_string_program() {
        let s = lisp_eval_schema(DESCRIPTION_WITH_APP_TOOLS);
        assert_eq!(s.name, "lisp_eval");
        assert_eq!(s.parameters["required"], json!(["program"]));
        assert_eq!(s.parameters["additionalProperties"], json!(false));
        assert!(s.description.contains("only `lisp_eval` is available natively"));
    }

    #[test]
    fn program_arguments_are_checked() {
        assert_eq!(program_arg(&json!({"program": "(+ 1 2)"})), Ok("(+ 1 2)".into()));
        assert_eq!(program_arg(&json!({})), Err("lisp_eval requires a non-empty `program` string argument.".into()));
        assert_eq!(program_arg(&json!({"program": 42})), Err("lisp_eval `program` must be a string, got 42.".into()));
        assert_eq!(
            program_arg(&json!({"program": "  "})),
            Err("lisp_eval `program` must be a non-empty string.".into())
        );
    }
}
