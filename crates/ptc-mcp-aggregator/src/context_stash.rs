//! Keeping a call's JSON `context` away from rmcp.
//!
//! rmcp decodes a frame through serde's buffering (untagged enums, flattened fields) into
//! `serde_json::Value`s: several trees at once, each tens of bytes per JSON token, so a
//! 4 MB context cost several hundred MB per call before the program started, none of it
//! charged. Both transports therefore lift the `context` of a `lisp_eval` call out of the
//! frame before rmcp sees it: the JSON text waits here under a random token, the frame
//! carries only the token, and the server parses the text straight into values under the
//! program's memory limit once the call has its slot (see `PtcServer::call_lisp_eval`).
//!
//! The token is unguessable (128 bits from the process's random hash keys), so a client
//! cannot name another call's context; an entry is taken once, and one that rmcp never
//! hands to a call (a frame it refuses) is dropped after [`TTL`] or when the stash is full.

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::frame::{self, Rejection};

/// What the frame carries instead of a lifted context: this prefix and the token.
pub(crate) const PLACEHOLDER_PREFIX: &str = "\u{0}ptc-context:";

/// How long a lifted context waits for its call (rmcp hands a call over in milliseconds).
pub(crate) const TTL: Duration = Duration::from_secs(60);

struct Entry {
    token: String,
    at: Instant,
    text: String,
}

/// Lifted contexts waiting for their calls.
pub(crate) struct ContextStash {
    entries: Mutex<VecDeque<Entry>>,
    cap: usize,
    counter: AtomicU64,
}

impl ContextStash {
    /// A stash holding at most `cap` contexts (the calls that can be running or queued).
    pub(crate) fn new(cap: usize) -> Self {
        ContextStash { entries: Mutex::new(VecDeque::new()), cap: cap.max(1), counter: AtomicU64::new(0) }
    }

    fn token(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        // RandomState's keys are random per process (and change per instance)
        let a = std::collections::hash_map::RandomState::new().hash_one(n);
        let b = std::collections::hash_map::RandomState::new().hash_one(!n);
        format!("{a:016x}{b:016x}")
    }

    fn put(&self, text: String) -> String {
        let token = self.token();
        if let Ok(mut q) = self.entries.lock() {
            while q.front().is_some_and(|e| e.at.elapsed() > TTL) || q.len() >= self.cap {
                q.pop_front();
            }
            q.push_back(Entry { token: token.clone(), at: Instant::now(), text });
        }
        token
    }

    /// The context lifted under `token`, once.
    pub(crate) fn take(&self, token: &str) -> Option<String> {
        let mut q = self.entries.lock().ok()?;
        let i = q.iter().position(|e| e.token == token)?;
        q.remove(i).map(|e| e.text)
    }

    /// Contexts waiting (for tests and metrics).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().map(|q| q.len()).unwrap_or(0)
    }

    /// For a frame that passed [`frame::check`] as a `tools/call`: lifts the `context`
    /// object of a `lisp_eval` call into the stash and returns the frame that carries its
    /// token instead (`None`: nothing to lift). `Err` answers a frame whose path to the
    /// context names a key twice.
    pub(crate) fn lift(&self, bytes: &[u8], id: &serde_json::Value) -> Result<Option<Vec<u8>>, Rejection> {
        let span = match frame::lisp_eval_context(bytes) {
            Ok(Some(span)) => span,
            Ok(None) => return Ok(None),
            Err(why) => {
                return Err(Rejection {
                    id: id.clone(),
                    code: frame::INVALID_PARAMS,
                    message: format!("Invalid params for tools/call: {why}; send each key once"),
                });
            }
        };
        let Some(text) = bytes.get(span.clone()) else { return Ok(None) };
        if text.first() != Some(&b'{') {
            // null, or a wrong type the call reports: nothing large to keep away
            return Ok(None);
        }
        let Ok(text) = std::str::from_utf8(text) else { return Ok(None) };
        let token = self.put(text.to_string());
        let placeholder = serde_json::Value::String(format!("{PLACEHOLDER_PREFIX}{token}")).to_string();
        let mut out = Vec::with_capacity(bytes.len() - text.len() + placeholder.len());
        out.extend_from_slice(bytes.get(..span.start).unwrap_or_default());
        out.extend_from_slice(placeholder.as_bytes());
        out.extend_from_slice(bytes.get(span.end..).unwrap_or_default());
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn lifted(stash: &ContextStash, frame: &str) -> Option<Value> {
        let out = stash.lift(frame.as_bytes(), &json!(1)).unwrap()?;
        Some(serde_json::from_slice(&out).unwrap())
    }

    #[test]
    fn the_context_object_is_replaced_by_a_token_taken_once() {
        let stash = ContextStash::new(4);
        let frame = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lisp_eval","arguments":{"program":"(count data/xs)","context" : {"xs":[1,2,{"a":"}"}]} ,"x":1}}}"#;
        let out = lifted(&stash, frame).unwrap();
        let placeholder = out["params"]["arguments"]["context"].as_str().unwrap().to_string();
        assert_eq!(out["params"]["arguments"]["program"], "(count data/xs)");
        assert_eq!(out["params"]["arguments"]["x"], 1);
        let token = placeholder.strip_prefix(PLACEHOLDER_PREFIX).unwrap();
        assert_eq!(token.len(), 32);
        assert_eq!(stash.take(token).as_deref(), Some(r#"{"xs":[1,2,{"a":"}"}]}"#));
        assert_eq!(stash.take(token), None, "taken once");
    }

    #[test]
    fn other_tools_null_contexts_and_escaped_keys() {
        let stash = ContextStash::new(4);
        let other =
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"context":{}}}}"#;
        assert_eq!(lifted(&stash, other), None);
        let null = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lisp_eval","arguments":{"context":null}}}"#;
        assert_eq!(lifted(&stash, null), None);
        let escaped = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lisp_\u0065val","arguments":{"con\u0074ext":{"a":1}}}}"#;
        assert!(lifted(&stash, escaped).is_some(), "escaped keys are the same keys");
        assert_eq!(stash.len(), 1);
    }

    #[test]
    fn a_key_given_twice_on_the_path_is_refused() {
        let stash = ContextStash::new(4);
        let twice = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"lisp_eval","arguments":{"context":{},"context":{"a":1}}}}"#;
        let r = stash.lift(twice.as_bytes(), &json!(7)).unwrap_err();
        assert_eq!((r.code, r.id), (frame::INVALID_PARAMS, json!(7)));
        assert!(r.message.contains("\"context\" appears twice"), "{}", r.message);
    }

    #[test]
    fn the_stash_is_bounded() {
        let stash = ContextStash::new(2);
        let frame = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lisp_eval","arguments":{"context":{"a":1}}}}"#;
        for _ in 0..5 {
            lifted(&stash, frame);
        }
        assert_eq!(stash.len(), 2);
    }
}
