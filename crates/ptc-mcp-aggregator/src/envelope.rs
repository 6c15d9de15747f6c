//! The `lisp_eval` result payload and how each response profile shapes it.

use ptc_lisp_eval::{Outcome, RunResult};
use serde_json::{Value as Json, json};

use crate::config::ResponseProfile;

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

fn feedback_for(reason: &str) -> &'static str {
    match reason {
        "parse_error" => {
            "The program did not parse. Fix the syntax at the reported line and column and call lisp_eval again."
        }
        "timeout" => {
            "The program ran out of time. Process less data per call, avoid long loops, or aggregate with reduce."
        }
        "memory_exceeded" => {
            "The program built too much data. Return summaries (counts, sums, the first few items) instead of whole collections."
        }
        "validation_error" => "The result does not match output_schema. Fix the listed paths and call lisp_eval again.",
        "args_error" => {
            "The tool arguments are invalid. Pass {\"program\": \"...\"} and optionally an object \"context\"."
        }
        "busy" => {
            "The MCP server is at its concurrent-call cap. The previous call has not finished. Wait briefly and retry the same tools/call."
        }
        "cancelled" => "The call was cancelled by the client.",
        "unknown_tool" => {
            "The name is not a tool here. This MCP server exposes one tool, `lisp_eval`; inside a program, (tool/...) may only name the tools its description lists."
        }
        "shutting_down" => "The server is shutting down. Retry on a new connection.",
        "fail" => "The program called (fail ...). Read the reason and adjust.",
        "session_args_error" => "The session tool arguments are invalid. Fix the named argument and call again.",
        "session_not_found" => "No such session (it may have expired). Start one with lisp_session_start.",
        "session_owner_mismatch" => {
            "That session belongs to another client. Use your own sessions (lisp_session_list)."
        }
        "session_closed" => "The session has ended. Start a new one with lisp_session_start.",
        "session_busy" => "Another eval of this session is running. Wait for it to return, then retry.",
        "session_limit_exceeded" => {
            "A session limit was reached and nothing was committed. Free room with lisp_session_forget or close sessions."
        }
        "session_state_error" => {
            "The eval defined something a session cannot keep; nothing was committed. Follow the message."
        }
        "session_record_invalid" => "The session's stored state cannot be read. Close it and start a new session.",
        "session_store_unavailable" => {
            "The session store is unreachable. Retry shortly; lisp_eval-style work is unaffected."
        }
        _ => "The program raised an error. Read the message, fix the program and call lisp_eval again.",
    }
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
pub fn success(outcome: &Outcome, profile: ResponseProfile, preview: Preview, validated: Option<Json>) -> CallPayload {
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
pub fn error(
    reason: &str,
    message: &str,
    result: Option<String>,
    prints: &[String],
    profile: ResponseProfile,
) -> CallPayload {
    error_with_feedback(reason, message, feedback_for(reason), result, prints, profile)
}

/// An error whose feedback line is the caller's (a tool whose arguments are not
/// `lisp_eval`'s says what its own arguments are).
pub(crate) fn error_with_feedback(
    reason: &str,
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
    let mut full = json!({"status": "error", "reason": reason, "message": message, "feedback": feedback});
    if let Some(r) = result {
        full["result"] = json!(r);
    }
    if !prints.is_empty() {
        full["prints"] = json!(prints);
    }
    if prints_truncated {
        full["prints_truncated"] = json!(true);
    }
    let reason = Some(reason.to_string());
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
pub fn from_outcome(
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
            error("fail", &format!("the program called (fail {shown})"), Some(shown.clone()), &outcome.prints, profile)
        }
        RunResult::Error(e) => {
            let mut message = e.message.clone();
            if let Some(span) = e.span {
                message = format!("{message} (line {}, column {})", span.line, span.column);
            }
            error(e.kind.as_str(), &message, None, &outcome.prints, profile)
        }
    }
}

/// The `outputSchema` advertised for `lisp_eval` in the structured and debug profiles.
pub fn output_schema(profile: ResponseProfile) -> Option<Json> {
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
