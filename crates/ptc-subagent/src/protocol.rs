//! The `lisp_eval` tool: its schema, its descriptions, its result JSON and the protocol
//! errors of the `tool_call` transport.
//!
//! In the `lisp-tool` and `combined` modes the model runs programs by calling one native
//! tool, `lisp_eval`, with `{"program": "..."}`. Each call gets exactly one tool result
//! (also when the call is refused), so the conversation stays well-formed for every
//! provider.

use ptc_lisp_eval::{Memory, Outcome, RunResult, Value, repl_preview, to_clojure};
use serde_json::{Map, Value as Json, json};

use crate::feedback::{FormatOptions, cut_chars};
use crate::llm::ToolSchema;

/// The native tool's name.
pub(crate) const LISP_EVAL: &str = "lisp_eval";

/// The `program` parameter's description.
pub(crate) const PROGRAM_DESCRIPTION: &str =
    "PTC-Lisp source code. Must be non-empty. Call app tools as `(tool/name ...)` from inside the program.";

/// `lisp_eval`'s description when it is the only native tool (`lisp-tool` mode).
pub(crate) const DESCRIPTION_WITH_APP_TOOLS: &str = "Execute a PTC-Lisp program in PtcRunner's sandbox. Use this for deterministic computation and tool orchestration. Call app tools as `(tool/name ...)` from inside the program — do not attempt to call app tools as native function calls; only `lisp_eval` is available natively.";

/// `lisp_eval`'s description in combined mode.
pub(crate) const DESCRIPTION_TEXT_MODE: &str = "Execute a PTC-Lisp program in PtcRunner's sandbox. Use this for deterministic computation, filtering, aggregation, or multi-step data transformation. Call `:both`-exposed app tools as `(tool/name ...)` from inside the program. The same tools are also callable natively in this assistant turn, but not in the same turn as `lisp_eval`.";

/// The `lisp_eval` tool schema with `description`.
pub(crate) fn lisp_eval_schema(description: &str) -> ToolSchema {
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
pub(crate) fn program_arg(args: &Json) -> Result<String, String> {
    match args.get("program") {
        None | Some(Json::Null) => Err("lisp_eval requires a non-empty `program` string argument.".into()),
        Some(Json::String(s)) if s.trim().is_empty() => Err("lisp_eval `program` must be a non-empty string.".into()),
        Some(Json::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!("lisp_eval `program` must be a string, got {other}.")),
    }
}

/// A refused or failed call: `{"status": "error", "reason", "message", ...}`.
pub(crate) fn error_json(reason: &str, message: &str) -> Json {
    json!({"status": "error", "reason": reason, "message": message})
}

/// The protocol error for an answer with more than one `lisp_eval` call.
pub(crate) fn multiple_tool_calls() -> Json {
    error_json("multiple_tool_calls", "Make exactly one lisp_eval call per assistant turn; this call was not run.")
}

/// The protocol error for a call to a tool the model was not offered.
pub(crate) fn unknown_tool(name: &str, offered: &[String]) -> Json {
    error_json(
        "unknown_tool",
        &format!("Unknown tool {name:?}; the tools offered natively are: {}.", offered.join(", ")),
    )
}

/// The protocol error for app tools called in the same answer as `lisp_eval`.
pub(crate) fn mixed_with_lisp_eval() -> Json {
    error_json(
        "mixed_with_lisp_eval",
        "lisp_eval cannot be combined with other tool calls in one assistant turn; call lisp_eval alone, or the other tools alone. None of these calls was run.",
    )
}

/// The tool result of a program run.
pub(crate) fn outcome_json(outcome: &Outcome, old_memory: &Memory, fmt: &FormatOptions, feedback: &str) -> Json {
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
            let (prints, prints_cut) = bounded_prints(&outcome.prints, fmt.feedback_max_chars);
            obj.insert("prints".into(), json!(prints));
            obj.insert("memory".into(), memory_json(old_memory, &outcome.memory, fmt));
            obj.insert("truncated".into(), json!(truncated || prints_cut));
        }
        RunResult::Failed(v) => {
            obj.insert("status".into(), json!("error"));
            obj.insert("reason".into(), json!("fail"));
            let (message, message_cut) = bounded_message(&fail_message(v), fmt.feedback_max_chars);
            obj.insert("message".into(), json!(message));
            // the payload as data when it is small; a cut preview when it would flood the model
            let as_json = ptc_lisp_eval::json::to_json(v).ok();
            let (result, result_cut) = match as_json {
                Some(j) if j.to_string().chars().count() <= fmt.feedback_max_chars => (j, false),
                too_long => {
                    let line = repl_preview(v, fmt.feedback_max_chars).unwrap_or_else(|| to_clojure(v));
                    let (line, cut) = cut_chars(&line, fmt.feedback_max_chars);
                    (json!(line), cut || too_long.is_some())
                }
            };
            obj.insert("result".into(), result);
            let (prints, prints_cut) = bounded_prints(&outcome.prints, fmt.feedback_max_chars);
            obj.insert("prints".into(), json!(prints));
            obj.insert("truncated".into(), json!(message_cut || result_cut || prints_cut));
        }
        RunResult::Error(e) => {
            obj.insert("status".into(), json!("error"));
            obj.insert("reason".into(), json!(e.kind.as_str()));
            let (message, message_cut) = bounded_message(&e.message, fmt.feedback_max_chars);
            obj.insert("message".into(), json!(message));
            let (prints, prints_cut) = bounded_prints(&outcome.prints, fmt.feedback_max_chars);
            obj.insert("prints".into(), json!(prints));
            obj.insert("truncated".into(), json!(message_cut || prints_cut));
        }
    }
    if !feedback.is_empty() {
        obj.insert("feedback".into(), json!(feedback));
    }
    Json::Object(obj)
}

/// A message cut to `max` characters (a parse error can quote a whole hostile program),
/// with a note saying so, and whether it was cut.
fn bounded_message(message: &str, max: usize) -> (String, bool) {
    let (mut text, cut) = cut_chars(message, max);
    if cut {
        text.push_str(&format!("... (truncated at {max} chars)"));
    }
    (text, cut)
}

/// The printed lines, at most `max` characters in all (the last kept line cut, then a
/// note), and whether anything was left out: the same budget the content modes give them.
fn bounded_prints(prints: &[String], max: usize) -> (Vec<String>, bool) {
    let mut left = max;
    let mut out = Vec::new();
    for line in prints {
        let (kept, cut) = cut_chars(line, left);
        left -= kept.chars().count();
        out.push(kept);
        if cut || (left == 0 && out.len() < prints.len()) {
            out.push(format!("... (prints truncated at {max} chars; print specific fields instead)"));
            return (out, true);
        }
    }
    (out, false)
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
fn memory_json(old: &Memory, new: &Memory, fmt: &FormatOptions) -> Json {
    let mut changed = Map::new();
    let mut truncated = false;
    for (name, v) in new.iter() {
        let same = old.get(name).is_some_and(|before| to_clojure(before) == to_clojure(v));
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
    json!({"changed": changed, "stored_keys": new.names().collect::<Vec<_>>(), "truncated": truncated})
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
    fn rendered(src: &str) -> Json {
        let outcome = ptc_lisp_eval::run(src, ptc_lisp_eval::RunOptions::default());
        outcome_json(&outcome, &outcome.memory.clone(), &FormatOptions::default(), "")
    }

    #[test]
    fn a_huge_error_message_is_cut_in_the_tool_result() {
        // an undefined name is quoted in the message: a long one must not flood the model
        let name = "x".repeat(30_000);
        let j = rendered(&format!("(+ 1 {name})"));
        assert_eq!(j["status"], "error");
        let message = j["message"].as_str().unwrap();
        assert!(message.chars().count() < 600, "{} chars", message.chars().count());
        assert!(message.ends_with("(truncated at 512 chars)"), "{message}");
        assert_eq!(j["truncated"], true);
    }

    #[test]
    fn prints_and_a_fail_payload_are_bounded_in_the_tool_result() {
        let j = rendered(
            r#"(dotimes [i 200] (println (apply str (repeat 100 "p")))) (fail {:message (apply str (repeat 5000 "m")) :data (vec (range 5000))})"#,
        );
        assert_eq!(j["reason"], "fail");
        let total: usize = j["prints"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().chars().count()).sum();
        assert!(total < 700, "{total} chars of prints");
        assert!(j["prints"].as_array().unwrap().last().unwrap().as_str().unwrap().contains("prints truncated"));
        assert!(j["message"].as_str().unwrap().chars().count() < 600);
        assert!(j["result"].to_string().chars().count() < 700, "{}", j["result"]);
        assert_eq!(j["truncated"], true);

        // small ones pass through whole, as data
        let j = rendered(r#"(println "hi") (fail {:message "no" :code 7})"#);
        assert_eq!(j["prints"], json!(["hi"]));
        assert_eq!(j["result"]["code"], 7);
        assert_eq!(j["truncated"], false);
    }
}
