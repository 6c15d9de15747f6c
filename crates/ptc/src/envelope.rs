//! The JSON envelope of `ptc eval --output json` and `--jsonl`, and text error rendering.

use ptc_lisp_eval::{EvalError, Outcome, RunResult, json::to_json};
use serde_json::{Value as Json, json};

/// One JSON object describing an outcome.
pub fn envelope(o: &Outcome) -> Json {
    let usage = json!({
        "duration_ms": o.usage.duration.as_secs_f64() * 1000.0,
        "fuel": o.usage.fuel,
        "heap_bytes": o.usage.heap_bytes,
    });
    let tool_calls: Vec<Json> = o.tool_calls.iter().map(|c| c.to_json()).collect();
    match &o.result {
        RunResult::Value(v) | RunResult::Returned(v) => {
            let mut env = json!({
                "status": "ok",
                "result": o.printed,
                "value": to_json(v).ok(),
                "prints": o.prints,
                "tool_calls": tool_calls,
                "usage": usage,
            });
            if matches!(o.result, RunResult::Returned(_))
                && let Some(obj) = env.as_object_mut()
            {
                obj.insert("returned".into(), Json::Bool(true));
            }
            env
        }
        RunResult::Failed(v) => json!({
            "status": "error",
            "reason": ptc_lisp_eval::ErrorKind::Fail.as_str(),
            "message": format!("the program called (fail {})", o.printed),
            "result": o.printed,
            "value": to_json(v).ok(),
            "prints": o.prints,
            "tool_calls": tool_calls,
            "usage": usage,
        }),
        RunResult::Error(e) => {
            let mut env = json!({
                "status": "error",
                "reason": e.kind.as_str(),
                "message": e.message,
                "prints": o.prints,
                "tool_calls": tool_calls,
                "usage": usage,
            });
            if let (Some(span), Some(obj)) = (e.span, env.as_object_mut()) {
                obj.insert("line".into(), json!(span.line));
                obj.insert("column".into(), json!(span.column));
            }
            env
        }
    }
}

/// An envelope for a malformed batch line.
pub fn usage_error(message: &str) -> Json {
    json!({"status": "error", "reason": crate::exit::Exit::UsageError.as_str(), "message": message, "prints": []})
}

/// `<Kind> error: message`, plus the source line and a caret when the error has a location.
pub fn render_error(e: &EvalError, source: &str) -> String {
    let mut out = format!("{} error: {}", e.kind.phase(), e.message);
    if let Some(span) = e.span
        && let Some(line) = source.lines().nth(span.line.saturating_sub(1) as usize)
    {
        let num = span.line.to_string();
        let pad = " ".repeat(num.len());
        let col = span.column.saturating_sub(1) as usize;
        let prefix: String = line.chars().take(col).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
        out.push_str(&format!("\n {num} | {line}\n {pad} | {prefix}^ (line {}, column {})", span.line, span.column));
    }
    out
}
