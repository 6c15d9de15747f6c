//! What the session tools show: the eval payload per response profile and the text
//! views of `lisp_session_inspect`. Stored values are shown as short previews only.

use serde_json::{Value as Json, json};

use ptc_lisp_eval::Value;

use super::record::{self, Record};
use super::{SessionConfig, codec};
use crate::config::ResponseProfile;
use crate::envelope::CallPayload;

pub(super) fn usage(record: &Record) -> Json {
    json!({
        "memory_bytes": record.memory_bytes(),
        "binding_count": record.bindings.len(),
        "history_count": record.history.len(),
        "print_entries": record.prints.len(),
        "print_bytes": record.prints.iter().map(String::len).sum::<usize>(),
        "tool_call_entries": record.tool_calls.len(),
        "upstream_call_entries": record.upstream_calls.len(),
    })
}

pub(super) fn preview(ops: &[Json], limit: usize) -> String {
    match codec::decode(ops) {
        Ok(v) => {
            let opts =
                ptc_lisp_eval::printer::PrintOptions { limit: Some(10), printable_limit: None, max_bytes: limit * 4 };
            let text = ptc_lisp_eval::printer::to_clojure_with(&v, &opts).0;
            if text.chars().count() > limit {
                format!("{}...", text.chars().take(limit).collect::<String>())
            } else {
                text
            }
        }
        Err(_) => "<unreadable>".into(),
    }
}

pub(super) fn memory_text(record: &Record) -> String {
    if record.bindings.is_empty() {
        return ";; No stored bindings".into();
    }
    let mut lines = vec![";; Bindings (user/):".to_string()];
    let mut sorted: Vec<&record::Binding> = record.bindings.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for b in sorted {
        match &b.stored {
            record::Stored::Data { ops } => lines.push(format!("(def {} {})", b.name, preview(ops, 120))),
            record::Stored::Form { source } => {
                let first = source.lines().next().unwrap_or("");
                let shown: String = first.chars().take(120).collect();
                lines.push(if shown.len() < source.len() { format!("{shown} ...") } else { shown });
            }
        }
    }
    lines.join("\n")
}

pub(super) fn prints_text(record: &Record) -> String {
    if record.prints.is_empty() {
        return ";; No prints".into();
    }
    format!(";; Prints (most recent last):\n{}", record.prints.join("\n"))
}

pub(super) fn calls_text(record: &Record) -> String {
    if record.tool_calls.is_empty() && record.upstream_calls.is_empty() {
        return ";; No tool calls".into();
    }
    let lines: Vec<String> = record.tool_calls.iter().chain(&record.upstream_calls).map(Json::to_string).collect();
    format!(";; Tool calls (most recent last):\n{}", lines.join("\n"))
}

pub(super) fn history_entries(record: &Record) -> Vec<Json> {
    record
        .history
        .iter()
        .rev()
        .enumerate()
        .map(|(i, h)| match h {
            Some(ops) => json!({"name": format!("*{}", i + 1), "preview": preview(ops, 120)}),
            None => json!({"name": format!("*{}", i + 1), "preview": null, "kept": false}),
        })
        .collect()
}

pub(super) fn history_text(entries: &[Json]) -> String {
    let mut lines = vec![";; History:".to_string()];
    for n in 1..=3 {
        let shown = entries
            .get(n - 1)
            .map(|e| e["preview"].as_str().unwrap_or("<not kept: over max_history_entry_bytes>").to_string())
            .unwrap_or_else(|| "nil".into());
        lines.push(format!(";   *{n} {shown}"));
    }
    lines.join("\n")
}

/// The payload of a committed eval.
#[allow(clippy::too_many_arguments)]
pub(super) fn eval_payload(
    id: &str,
    outcome: &ptc_lisp_eval::Outcome,
    record: &Record,
    changed: &[String],
    notices: &[String],
    validated: Option<Json>,
    cfg: &SessionConfig,
    profile: ResponseProfile,
) -> CallPayload {
    let value = outcome.value().cloned().unwrap_or(Value::Nil);
    let result = ptc_lisp_eval::repl_preview(&value, cfg.max_preview_chars).unwrap_or_else(|| match &value {
        Value::Var(name) if !name.contains('/') => format!("user=> #'user/{name}"),
        _ => format!("user=> {}", outcome.printed),
    });
    let result_truncated = result.contains("(truncated at");
    let (max_entries, max_bytes, _, _) = profile.output_limits();
    let mut prints = outcome.prints.clone();
    let all_prints = prints.len();
    keep_first(&mut prints, max_entries, max_bytes);
    let prints_truncated = prints.len() < all_prints;
    let mut feedback = Vec::new();
    if result_truncated {
        feedback.push("Result truncated. Try `(describe *1)` or store it with def and look at parts.".to_string());
    }
    feedback.extend(notices.iter().map(|n| format!(";; {n}")));
    let mut text = String::new();
    if !prints.is_empty() {
        text.push_str(&format!("<prints>\n{}\n\n<result>\n", prints.join("\n")));
    }
    text.push_str(&result);
    if !changed.is_empty() {
        text.push_str(&format!("\n;; stored: {}", changed.join(", ")));
    }
    for f in &feedback {
        text.push('\n');
        text.push_str(f);
    }
    if prints_truncated {
        text.push_str("\n\n[truncated]");
    }
    let session = json!({
        "session_id": id, "turn": record.turn,
        "memory_bytes": record.memory_bytes(), "binding_count": record.bindings.len()
    });
    let mut full = json!({
        "status": "ok",
        "result": result,
        "prints": prints,
        "feedback": feedback.join("\n"),
        "memory": {"changed_keys": changed, "stored_keys": record.stored_keys(), "truncated": false},
        "session": session,
        "history_notices": notices,
        "truncated": result_truncated || prints_truncated || !notices.is_empty(),
    });
    if let Some(v) = &validated {
        full["validated"] = v.clone();
    }
    match profile {
        ResponseProfile::Slim => CallPayload { is_error: false, text, structured: None, reason: None },
        ResponseProfile::Structured => {
            let mut compact = json!({
                "status": "ok", "result": full["result"], "memory": {"changed_keys": changed}, "session": full["session"]
            });
            if let Some(v) = validated {
                compact["validated"] = v;
            }
            if full["truncated"] == json!(true) {
                compact["truncated"] = json!(true);
            }
            CallPayload { is_error: false, text, structured: Some(compact), reason: None }
        }
        _ => {
            full["usage"] = json!({
                "duration_ms": outcome.usage.duration.as_secs_f64() * 1000.0,
                "fuel": outcome.usage.fuel,
                "heap_bytes": outcome.usage.heap_bytes,
            });
            CallPayload { is_error: false, text: full.to_string(), structured: Some(full), reason: None }
        }
    }
}

pub(super) fn keep_first(items: &mut Vec<String>, max_entries: usize, max_bytes: usize) {
    let mut used = 0;
    let mut keep = 0;
    for p in items.iter() {
        if keep >= max_entries || used + p.len() > max_bytes {
            break;
        }
        used += p.len();
        keep += 1;
    }
    items.truncate(keep);
}
