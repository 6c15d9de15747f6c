//! Replay: an [`Llm`] that answers from a recording, in order, without network or keys.
//!
//! Each incoming request must equal the recorded one at the same position; the first that
//! does not is reported with its position, its turn and the first differing field, so a
//! drifting prompt or loop change is found at once instead of producing odd answers.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ptc_llm::{BoxFuture, Llm, LlmError, LlmErrorKind, LlmRequest, LlmResponse};
use serde_json::Value as Json;

use crate::record::{FORMAT_VERSION, RecordedExchange};

/// Longest value shown in a drift message.
const MAX_SHOWN: usize = 160;

/// A model that plays a recording back.
#[derive(Debug)]
pub struct Replay {
    source: String,
    exchanges: Vec<RecordedExchange>,
    next: Mutex<usize>,
}

impl Replay {
    /// Loads the recording at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, LlmError> {
        let path: PathBuf = path.as_ref().to_path_buf();
        let text = ptc_files::Limit::new("the recording", ptc_files::SCRIPT_MAX_BYTES)
            .read_to_string(&path)
            .map_err(|e| LlmError::new(LlmErrorKind::ConfigError, e.to_string()))?;
        Replay::from_jsonl(&text, path.display().to_string())
    }

    /// Parses a recording from its text; `source` names it in messages. Every line must
    /// be an exchange of this format version, numbered 1, 2, 3... in order, with exactly
    /// one outcome (a response or an error); the first that is not fails the whole
    /// recording, naming the file, the line and the entry.
    pub fn from_jsonl(text: &str, source: impl Into<String>) -> Result<Self, LlmError> {
        let source = source.into();
        let mut exchanges = Vec::new();
        for (number, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let at = format!("recording {source}, line {} (entry #{})", number + 1, exchanges.len() + 1);
            let bad = |problem: String| LlmError::new(LlmErrorKind::ConfigError, format!("{at}: {problem}"));
            let exchange: RecordedExchange =
                serde_json::from_str(line).map_err(|e| bad(format!("not a recorded exchange: {e}")))?;
            if exchange.v != FORMAT_VERSION {
                return Err(bad(format!(
                    "format version {} is not one this build reads (version {FORMAT_VERSION}); record the run again with `ptc run --record`",
                    exchange.v
                )));
            }
            let expected = exchanges.len() as u64 + 1;
            if exchange.index != expected {
                return Err(bad(format!(
                    "has index {}, expected {expected}: entries are numbered 1, 2, 3... in the order they were recorded (was the file edited or were recordings joined?)",
                    exchange.index
                )));
            }
            match (&exchange.response, &exchange.error) {
                (Some(_), None) | (None, Some(_)) => {}
                (None, None) => return Err(bad("has neither a response nor an error".into())),
                (Some(_), Some(_)) => {
                    return Err(bad("has both a response and an error; an exchange has exactly one outcome".into()));
                }
            }
            exchanges.push(exchange);
        }
        Ok(Replay { source, exchanges, next: Mutex::new(0) })
    }

    /// How many exchanges the recording holds.
    pub fn len(&self) -> usize {
        self.exchanges.len()
    }

    /// True when the recording holds no exchange.
    pub fn is_empty(&self) -> bool {
        self.exchanges.is_empty()
    }

    /// How many recorded exchanges have not been asked for yet.
    pub fn remaining(&self) -> usize {
        self.next.lock().map(|next| self.exchanges.len().saturating_sub(*next)).unwrap_or(0)
    }

    fn answer(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let mut next = self
            .next
            .lock()
            .map_err(|_| LlmError::new(LlmErrorKind::Unknown, "the replay's lock was poisoned by an earlier panic"))?;
        let position = *next + 1;
        let Some(exchange) = self.exchanges.get(*next) else {
            return Err(LlmError::new(
                LlmErrorKind::ClientError,
                format!(
                    "replay {}: request #{position} (turn {}) was not recorded; the recording ends after {} request(s)",
                    self.source,
                    request.turn,
                    self.exchanges.len()
                ),
            ));
        };
        if let Some(drift) = first_difference(&exchange.request, request) {
            return Err(LlmError::new(
                LlmErrorKind::ClientError,
                format!(
                    "replay {}: request #{position} (turn {}) differs from the recording (turn {}) at {drift}",
                    self.source, request.turn, exchange.request.turn
                ),
            ));
        }
        *next += 1;
        match (&exchange.response, &exchange.error) {
            (Some(response), _) => Ok(response.clone()),
            (None, Some(error)) => Err(LlmError::from(error)),
            (None, None) => Err(LlmError::new(LlmErrorKind::ConfigError, "recorded exchange without an outcome")),
        }
    }
}

impl Llm for Replay {
    fn complete<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        Box::pin(async move { self.answer(request) })
    }

    fn name(&self) -> String {
        format!("replay:{}", self.source)
    }

    /// A recording has no server to spare: a recorded `Retry-After` is not slept.
    fn retry_waits(&self) -> bool {
        false
    }

    /// A resumed mission continues the recording after the exchanges it already had.
    fn resume_at(&self, answered: u64) -> Result<(), LlmError> {
        let mut next = self
            .next
            .lock()
            .map_err(|_| LlmError::new(LlmErrorKind::Unknown, "the replay's lock was poisoned by an earlier panic"))?;
        if answered > self.exchanges.len() as u64 {
            return Err(LlmError::new(
                LlmErrorKind::ConfigError,
                format!(
                    "replay {}: the checkpoint was taken after {answered} request(s), but the recording holds {}",
                    self.source,
                    self.exchanges.len()
                ),
            ));
        }
        *next = answered as usize;
        Ok(())
    }
}

/// Where two requests first differ, as `path: recorded X, got Y`; `None` when equal.
fn first_difference(recorded: &LlmRequest, actual: &LlmRequest) -> Option<String> {
    if recorded == actual {
        return None;
    }
    let recorded = serde_json::to_value(recorded).unwrap_or(Json::Null);
    let actual = serde_json::to_value(actual).unwrap_or(Json::Null);
    let mut path = String::new();
    Some(diff(&recorded, &actual, &mut path).unwrap_or_else(|| "an unknown field".to_string()))
}

fn diff(recorded: &Json, actual: &Json, path: &mut String) -> Option<String> {
    match (recorded, actual) {
        (Json::Object(a), Json::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let (x, y) = (a.get(key).unwrap_or(&Json::Null), b.get(key).unwrap_or(&Json::Null));
                if x != y {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(key);
                    let found = diff(x, y, path);
                    path.truncate(len);
                    return found;
                }
            }
            None
        }
        (Json::Array(a), Json::Array(b)) => {
            for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
                if x != y {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    let found = diff(x, y, path);
                    path.truncate(len);
                    return found;
                }
            }
            (a.len() != b.len()).then(|| format!("{path}: recorded {} item(s), got {}", a.len(), b.len()))
        }
        (Json::String(x), Json::String(y)) if x.chars().count().max(y.chars().count()) > MAX_SHOWN => {
            // Long texts (prompts) share most of their length: show where they part.
            let at = x.chars().zip(y.chars()).take_while(|(a, b)| a == b).count();
            let (x, y) = (excerpt(x, at), excerpt(y, at));
            Some(format!("{}, from character {at}: recorded {x}, got {y}", where_(path)))
        }
        (x, y) if x != y => Some(format!("{}: recorded {}, got {}", where_(path), shown(x), shown(y))),
        _ => None,
    }
}

fn where_(path: &str) -> &str {
    if path.is_empty() { "the request" } else { path }
}

/// Up to 40 characters before and 80 after character `at` of `text`, JSON-quoted.
fn excerpt(text: &str, at: usize) -> String {
    let start = at.saturating_sub(40);
    let total = text.chars().count();
    let piece: String = text.chars().skip(start).take(at - start + 80).collect();
    let quoted = serde_json::to_string(&piece).unwrap_or_default();
    let before = if start > 0 { "..." } else { "" };
    let after = if start + piece.chars().count() < total { "..." } else { "" };
    format!("{before}{quoted}{after}")
}

fn shown(value: &Json) -> String {
    let text = value.to_string();
    if text.chars().count() <= MAX_SHOWN {
        text
    } else {
        let head: String = text.chars().take(MAX_SHOWN).collect();
        format!("{head}...")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptc_llm::Message;

    #[test]
    fn the_first_differing_field_is_named() {
        let a = LlmRequest {
            system: "s".into(),
            messages: vec![Message::user("x"), Message::user("y")],
            ..Default::default()
        };
        let mut b = a.clone();
        b.messages[1] = Message::user("z");
        let drift = first_difference(&a, &b).unwrap();
        assert_eq!(drift, r#"messages[1].content: recorded "y", got "z""#);
        b.messages.push(Message::user("w"));
        b.messages[1] = Message::user("y");
        assert_eq!(first_difference(&a, &b).unwrap(), "messages: recorded 2 item(s), got 3");
        assert_eq!(first_difference(&a, &a), None);
    }

    #[test]
    fn long_texts_are_shown_where_they_part() {
        let prompt = "x".repeat(500);
        let a = LlmRequest { system: format!("{prompt} alpha tail"), ..Default::default() };
        let b = LlmRequest { system: format!("{prompt} beta tail"), ..Default::default() };
        let drift = first_difference(&a, &b).unwrap();
        let xs = "x".repeat(39);
        assert_eq!(
            drift,
            format!(r#"system, from character 501: recorded ..."{xs} alpha tail", got ..."{xs} beta tail""#)
        );
    }
}
