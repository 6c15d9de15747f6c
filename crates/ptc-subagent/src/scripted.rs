//! [`ScriptedLlm`]: a model that answers from a script, for tests and offline demos.
//!
//! The script format is JSON lines, one answer per request:
//!
//! ```text
//! {"content": "```clojure\n(return 42)\n```"}
//! {"content": "...", "usage": {"input_tokens": 120, "output_tokens": 30}}
//! {"tool_calls": [{"id": "c1", "name": "lisp_eval", "args": {"program": "(+ 1 2)"}}], "content": ""}
//! {"error": "rate_limit", "message": "slow down", "retry_after_ms": 10}
//! ```
//!
//! Blank lines and lines starting with `//` are skipped. Running out of answers is a
//! (non-retryable) error, which ends the mission with `llm_error`.

use std::sync::Mutex;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value as Json;

use crate::llm::{BoxFuture, Llm, LlmError, LlmErrorKind, LlmRequest, LlmResponse, NativeToolCall, TokenUsage};

/// One scripted answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ScriptEntry {
    /// A response.
    Respond(LlmResponse),
    /// A failure of the given class.
    Fail(LlmError),
}

/// A malformed script.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("script line {line}: {message}")]
#[non_exhaustive]
pub struct ScriptError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLine {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<RawCall>>,
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    retry_after_ms: Option<u64>,
    #[serde(default)]
    status: Option<u16>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    id: String,
    name: String,
    #[serde(default)]
    args: Option<Json>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_tokens: u64,
    #[serde(default)]
    cache_write_tokens: u64,
}

fn error_kind(name: &str) -> Option<LlmErrorKind> {
    Some(match name {
        "rate_limit" => LlmErrorKind::RateLimit,
        "timeout" => LlmErrorKind::Timeout,
        "server_error" => LlmErrorKind::ServerError,
        "client_error" => LlmErrorKind::ClientError,
        "config_error" => LlmErrorKind::ConfigError,
        "unknown" => LlmErrorKind::Unknown,
        _ => return None,
    })
}

/// A model that answers each request with the next scripted entry, and remembers every
/// request it was sent.
#[derive(Debug, Default)]
pub struct ScriptedLlm {
    entries: Mutex<std::collections::VecDeque<ScriptEntry>>,
    requests: Mutex<Vec<LlmRequest>>,
}

impl ScriptedLlm {
    /// A model answering with `entries`, in order.
    pub fn new(entries: impl IntoIterator<Item = ScriptEntry>) -> Self {
        ScriptedLlm { entries: Mutex::new(entries.into_iter().collect()), requests: Mutex::new(Vec::new()) }
    }

    /// A model answering with these texts, in order.
    ///
    /// ```
    /// use ptc_subagent::ScriptedLlm;
    /// let llm = ScriptedLlm::texts(["```clojure\n(return 1)\n```"]);
    /// assert_eq!(llm.remaining(), 1);
    /// ```
    pub fn texts<I, S>(texts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ScriptedLlm::new(texts.into_iter().map(|t| ScriptEntry::Respond(LlmResponse::text(t))))
    }

    /// Parses a JSON-lines script (see the module docs).
    pub fn from_jsonl(text: &str) -> Result<Self, ScriptError> {
        let mut entries = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with("//") {
                continue;
            }
            entries.push(parse_line(trimmed).map_err(|message| ScriptError { line: i + 1, message })?);
        }
        Ok(ScriptedLlm::new(entries))
    }

    /// Answers not yet used.
    pub fn remaining(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<LlmRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

fn parse_line(line: &str) -> Result<ScriptEntry, String> {
    let raw: RawLine = serde_json::from_str(line).map_err(|e| {
        format!("{e}; expected {{\"content\": \"...\"}}, {{\"tool_calls\": [...]}} or {{\"error\": \"rate_limit\"}}")
    })?;
    if let Some(kind) = &raw.error {
        let Some(kind) = error_kind(kind) else {
            return Err(format!(
                "unknown error class {kind:?}; use rate_limit, timeout, server_error, client_error, config_error or unknown"
            ));
        };
        let mut e = LlmError::new(kind, raw.message.unwrap_or_else(|| format!("scripted {kind}")));
        e.retry_after = raw.retry_after_ms.map(Duration::from_millis);
        e.status = raw.status;
        return Ok(ScriptEntry::Fail(e));
    }
    if raw.content.is_none() && raw.tool_calls.is_none() {
        return Err("a line needs \"content\", \"tool_calls\" or \"error\"".into());
    }
    let mut tool_calls = Vec::new();
    for c in raw.tool_calls.unwrap_or_default() {
        let args = c.args.unwrap_or_else(|| Json::Object(serde_json::Map::new()));
        if !args.is_object() {
            return Err(format!("tool call {:?}: \"args\" must be a JSON object", c.id));
        }
        tool_calls.push(NativeToolCall { id: c.id, name: c.name, args, provider_data: None });
    }
    let usage = raw
        .usage
        .map(|u| TokenUsage {
            input: u.input_tokens,
            output: u.output_tokens,
            cache_read: u.cache_read_tokens,
            cache_write: u.cache_write_tokens,
        })
        .unwrap_or_default();
    Ok(ScriptEntry::Respond(LlmResponse {
        content: raw.content.unwrap_or_default(),
        tool_calls,
        usage,
        model: Some("scripted".into()),
    }))
}

impl Llm for ScriptedLlm {
    fn complete<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        Box::pin(async move {
            let n = match self.requests.lock() {
                Ok(mut r) => {
                    r.push(request.clone());
                    r.len()
                }
                Err(_) => 0,
            };
            let next = self.entries.lock().ok().and_then(|mut e| e.pop_front());
            match next {
                Some(ScriptEntry::Respond(r)) => Ok(r),
                Some(ScriptEntry::Fail(e)) => Err(e),
                None => Err(LlmError::new(
                    LlmErrorKind::ConfigError,
                    format!("the script has no answer left for request {n}"),
                )),
            }
        })
    }

    fn name(&self) -> String {
        "scripted".into()
    }

    /// Skips the first `answered` entries (a resumed mission continues the script).
    fn resume_at(&self, answered: u64) -> Result<(), LlmError> {
        let mut entries = self
            .entries
            .lock()
            .map_err(|_| LlmError::new(LlmErrorKind::Unknown, "the script's lock was poisoned by an earlier panic"))?;
        if (entries.len() as u64) < answered {
            return Err(LlmError::new(
                LlmErrorKind::ConfigError,
                format!(
                    "the checkpoint was taken after {answered} request(s), but the script has only {} entries",
                    entries.len()
                ),
            ));
        }
        entries.drain(..answered as usize);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_line_shape() {
        let llm = ScriptedLlm::from_jsonl(
            r#"{"content": "hi", "usage": {"input_tokens": 5, "output_tokens": 2}}

// a comment
{"tool_calls": [{"id": "c1", "name": "lisp_eval", "args": {"program": "(+ 1 2)"}}], "content": ""}
{"error": "rate_limit", "retry_after_ms": 5}"#,
        );
        let llm = match llm {
            Ok(l) => l,
            Err(e) => unreachable!("{e}"),
        };
        assert_eq!(llm.remaining(), 3);
    }

    #[test]
    fn malformed_lines_name_their_line() {
        let e = ScriptedLlm::from_jsonl("{\"content\": \"a\"}\n{\"contnet\": \"b\"}").err();
        assert_eq!(e.as_ref().map(|e| e.line), Some(2));
        let e = ScriptedLlm::from_jsonl("{\"error\": \"teapot\"}").err();
        assert!(e.is_some_and(|e| e.message.contains("unknown error class")));
        assert!(ScriptedLlm::from_jsonl("not json").is_err());
        assert!(ScriptedLlm::from_jsonl("{}").is_err());
    }
}
