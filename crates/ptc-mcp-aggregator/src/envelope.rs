//! The `lisp_eval` result payload and how each response profile shapes it.

use ptc_lisp_eval::{ErrorKind, Outcome, RunResult};
use serde_json::{Value as Json, json};

use crate::config::ResponseProfile;
use crate::reason::McpReason;

/// How much of a result the `user=> ...` line shows in the `slim` and `structured`
/// profiles; a cut preview says so (`...`, `(truncated at N chars; ...)`) and the payload's
/// `truncated` is true. The `debug` profile shows the whole printed result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preview {
    /// Items shown of each collection (`--max-result-items`, default 50).
    pub max_items: usize,
    /// Characters of the whole line (`--max-result-chars`, default 250).
    pub max_chars: usize,
}

impl Default for Preview {
    fn default() -> Self {
        Preview { max_items: 50, max_chars: 250 }
    }
}

impl Preview {
    /// One sentence for the tool description.
    pub fn describe(&self) -> String {
        format!(
            "The result line previews at most {} items per collection and {} characters, marking a cut with `...`; return or println the specific fields you need.",
            self.max_items, self.max_chars
        )
    }
}

/// What a `tools/call` returns, before it becomes an MCP `CallToolResult`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CallPayload {
    /// `isError`.
    pub is_error: bool,
    /// `content[0].text`.
    pub text: String,
    /// `structuredContent` (structured and debug profiles).
    pub structured: Option<Json>,
    /// The stable reason of an error (for logs); `None` on success.
    pub reason: Option<String>,
}

fn cap_prints(prints: &[String], profile: ResponseProfile) -> (Vec<String>, bool) {
    let (max_entries, max_bytes, _, _) = profile.output_limits();
    let mut out = Vec::new();
    let mut used = 0;
    let mut truncated = false;
    for p in prints {
        if out.len() >= max_entries || used + p.len() > max_bytes {
            truncated = true;
            break;
        }
        used += p.len();
        out.push(p.clone());
    }
    (out, truncated)
}

/// A successful run (value or `return`), with the validated JSON when an output schema
/// matched.
pub(crate) fn success(
    outcome: &Outcome,
    profile: ResponseProfile,
    preview: Preview,
    validated: Option<Json>,
) -> CallPayload {
    let value = outcome.value().cloned().unwrap_or(ptc_lisp_eval::Value::Nil);
    let whole = || format!("user=> {}", outcome.printed);
    let (preview, truncated) = if profile == ResponseProfile::Debug {
        // the whole result: the run already bounded it by max_result_bytes
        (whole(), false)
    } else {
        let line = ptc_lisp_eval::repl_preview_with(&value, preview.max_items, preview.max_chars).unwrap_or_else(whole);
        let truncated = line != whole();
        (line, truncated)
    };
    let (prints, prints_truncated) = cap_prints(&outcome.prints, profile);
    let mut text = String::new();
    if !prints.is_empty() {
        text.push_str("<prints>\n");
        text.push_str(&prints.join("\n"));
        text.push_str("\n\n<result>\n");
    }
    text.push_str(&preview);
    if prints_truncated {
        text.push_str("\n\n[truncated]");
    }
    let mut full = json!({"status": "ok", "result": preview, "prints": prints, "truncated": truncated});
    if let Some(v) = &validated {
        full["validated"] = v.clone();
    }
    if prints_truncated {
        full["prints_truncated"] = json!(true);
    }
    match profile {
        ResponseProfile::Slim => CallPayload { is_error: false, text, structured: None, reason: None },
        ResponseProfile::Structured => {
            let mut compact = json!({"status": "ok", "result": full["result"]});
            if let Some(v) = validated {
                compact["validated"] = v;
            }
            if truncated {
                compact["truncated"] = json!(true);
            }
            CallPayload { is_error: false, text, structured: Some(compact), reason: None }
        }
        ResponseProfile::Debug => {
            full["usage"] = json!({
                "duration_ms": outcome.usage.duration.as_secs_f64() * 1000.0,
                "fuel": outcome.usage.fuel,
                "heap_bytes": outcome.usage.heap_bytes,
            });
            CallPayload { is_error: false, text: full.to_string(), structured: Some(full), reason: None }
        }
    }
}

/// An error result with a stable reason.
pub(crate) fn error(
    reason: McpReason,
    message: &str,
    result: Option<String>,
    prints: &[String],
    profile: ResponseProfile,
) -> CallPayload {
    error_with_feedback(reason, message, reason.feedback(), result, prints, profile)
}

/// An error whose feedback line is the caller's (a tool whose arguments are not
/// `lisp_eval`'s says what its own arguments are).
pub(crate) fn error_with_feedback(
    reason: McpReason,
    message: &str,
    feedback: &str,
    result: Option<String>,
    prints: &[String],
    profile: ResponseProfile,
) -> CallPayload {
    let mut text = format!("{reason}: {message}\n{feedback}");
    if let Some(r) = &result {
        text = format!("{reason}: {message}\nresult: {r}\n{feedback}");
    }
    // the prints of a failing program are its debugging trail: kept (bounded) in every profile
    let (prints, prints_truncated) = cap_prints(prints, profile);
    if !prints.is_empty() {
        let mut trail = format!("<prints>\n{}\n", prints.join("\n"));
        if prints_truncated {
            trail.push_str("[truncated]\n");
        }
        text = format!("{trail}\n<error>\n{text}");
    }
    let mut full = json!({"status": "error", "reason": reason.as_str(), "message": message, "feedback": feedback});
    if let Some(r) = result {
        full["result"] = json!(r);
    }
    if !prints.is_empty() {
        full["prints"] = json!(prints);
    }
    if prints_truncated {
        full["prints_truncated"] = json!(true);
    }
    let reason = Some(reason.as_str().to_string());
    match profile {
        ResponseProfile::Slim => CallPayload { is_error: true, text, structured: None, reason },
        ResponseProfile::Structured => CallPayload { is_error: true, text, structured: Some(full), reason },
        ResponseProfile::Debug => {
            full["prints"] = json!(prints);
            CallPayload { is_error: true, text: full.to_string(), structured: Some(full), reason }
        }
    }
}

/// The payload of a finished run.
pub(crate) fn from_outcome(
    outcome: &Outcome,
    profile: ResponseProfile,
    preview: Preview,
    validated: Option<Json>,
) -> CallPayload {
    match &outcome.result {
        RunResult::Value(_) | RunResult::Returned(_) => success(outcome, profile, preview, validated),
        RunResult::Failed(v) => {
            let opts = ptc_lisp_eval::printer::PrintOptions { limit: Some(50), printable_limit: None, max_bytes: 2048 };
            let shown = ptc_lisp_eval::printer::to_clojure_with(v, &opts).0;
            let reason = McpReason::Eval(ErrorKind::Fail);
            error(reason, &format!("the program called (fail {shown})"), Some(shown.clone()), &outcome.prints, profile)
        }
        RunResult::Error(e) => {
            let mut message = e.message.clone();
            if let Some(span) = e.span {
                message = format!("{message} (line {}, column {})", span.line, span.column);
            }
            error(McpReason::Eval(e.kind), &message, None, &outcome.prints, profile)
        }
    }
}

/// The `outputSchema` advertised for `lisp_eval` in the structured and debug profiles.
pub(crate) fn output_schema(profile: ResponseProfile) -> Option<Json> {
    let base = json!({
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["ok", "error"]},
            "result": {"type": "string"},
            "validated": {},
            "truncated": {"type": "boolean"},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "feedback": {"type": "string"},
            "prints": {"type": "array", "items": {"type": "string"}},
            "usage": {"type": "object"}
        },
        "required": ["status"]
    });
    match profile {
        ResponseProfile::Slim => None,
        _ => Some(base),
    }
}
