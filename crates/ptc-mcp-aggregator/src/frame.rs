//! Checking a JSON-RPC frame before rmcp sees it, so that every frame gets an answer.
//!
//! rmcp drops frames it cannot decode (malformed JSON, invalid UTF-8, JSON nested deeper
//! than serde_json's 128 levels) and turns a known method with missing params into an
//! unknown one; a client waiting on such a frame's id would wait forever. Both transports
//! run every incoming frame through [`check`] first: a bad request is answered here with
//! a JSON-RPC error carrying its id whenever the id can be read, a bad notification is
//! dropped (notifications never get replies), and everything else goes on to rmcp.

use serde::Deserialize;
use serde_json::{Value as Json, json};

/// JSON-RPC: the frame is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the frame is JSON but not a valid request.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: the params do not fit the method.
pub const INVALID_PARAMS: i64 = -32602;

/// What to do with one incoming frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Hand it to rmcp. `id` is the request id (None for notifications and responses),
    /// `method` the method name when there is one.
    Pass {
        /// The request id, when the frame is a request.
        id: Option<Json>,
        /// The method, when the frame is a request or a notification.
        method: Option<String>,
    },
    /// Answer with this JSON-RPC error response instead.
    Reject(Rejection),
    /// A bad notification: no reply is allowed, so it is dropped (and logged).
    Drop(String),
}

/// A JSON-RPC error answering a bad frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// The id of the offending request (`null` when it cannot be read).
    pub id: Json,
    /// The JSON-RPC error code.
    pub code: i64,
    /// What was wrong, for the client's developer.
    pub message: String,
}

impl Rejection {
    /// A rejection of a frame whose id could not be read.
    pub fn parse_error(message: impl Into<String>) -> Self {
        Rejection { id: Json::Null, code: PARSE_ERROR, message: message.into() }
    }

    /// The JSON-RPC error response.
    pub fn to_json(&self) -> Json {
        json!({"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}})
    }
}

/// The top of a frame, read without descending into params (serde_json skips ignored
/// values iteratively, so this works on frames nested too deep for a full parse).
#[derive(Deserialize)]
struct Head {
    #[serde(default, deserialize_with = "present")]
    id: Option<Json>,
    #[serde(default)]
    method: Option<Json>,
}

/// Distinguishes `"id": null` (Some(Null)) from no id at all (None).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Json>, D::Error> {
    Json::deserialize(d).map(Some)
}

/// The id of a frame when it can be read at all (for answering frames too deep to parse).
pub fn read_id(bytes: &[u8]) -> Option<Json> {
    serde_json::from_slice::<Head>(bytes).ok().and_then(|h| h.id).filter(valid_id)
}

fn valid_id(id: &Json) -> bool {
    matches!(id, Json::String(_) | Json::Number(_))
}

/// Checks one frame (a stdio line without its newline, or an HTTP body).
pub fn check(bytes: &[u8]) -> Verdict {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Verdict::Reject(Rejection::parse_error("Parse error: the frame is not valid UTF-8"));
    };
    let value: Json = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) if e.to_string().contains("recursion limit") => {
            let id = read_id(bytes).unwrap_or(Json::Null);
            let message = "Parse error: the JSON nests deeper than 128 levels; send flatter data".to_string();
            return match (id, is_notification(bytes)) {
                (_, true) => Verdict::Drop(message),
                (id, false) => Verdict::Reject(Rejection { id, code: PARSE_ERROR, message }),
            };
        }
        Err(e) => return Verdict::Reject(Rejection::parse_error(format!("Parse error: {e}"))),
    };
    let Json::Object(obj) = &value else {
        let message = if value.is_array() {
            "Invalid Request: batches are not supported; send one message per frame"
        } else {
            "Invalid Request: a JSON-RPC message is a JSON object"
        };
        return Verdict::Reject(Rejection { id: Json::Null, code: INVALID_REQUEST, message: message.into() });
    };
    let id = obj.get("id").cloned();
    let reply_id = id.clone().filter(valid_id).unwrap_or(Json::Null);
    let invalid = |message: &str| {
        if id.is_none() {
            Verdict::Drop(message.to_string())
        } else {
            Verdict::Reject(Rejection { id: reply_id.clone(), code: INVALID_REQUEST, message: message.into() })
        }
    };
    if obj.get("jsonrpc").and_then(Json::as_str) != Some("2.0") {
        return invalid("Invalid Request: \"jsonrpc\" must be \"2.0\"");
    }
    let method = match obj.get("method") {
        None => {
            // a response to a request of ours (or garbage without a method)
            if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) {
                return Verdict::Pass { id: None, method: None };
            }
            return invalid("Invalid Request: a request needs a \"method\" string");
        }
        Some(Json::String(m)) => m.clone(),
        Some(_) => return invalid("Invalid Request: \"method\" must be a string"),
    };
    if let Some(i) = &id
        && !valid_id(i)
    {
        return Verdict::Reject(Rejection {
            id: Json::Null,
            code: INVALID_REQUEST,
            message: "Invalid Request: \"id\" must be a string or a number".into(),
        });
    }
    let params = obj.get("params");
    if let Some(p) = params
        && !p.is_object()
        && !p.is_null()
    {
        return reject_params(id.is_none(), &reply_id, &method, "params must be an object");
    }
    match method.as_str() {
        "tools/call" => {
            let Some(Json::Object(p)) = params else {
                return reject_params(
                    id.is_none(),
                    &reply_id,
                    &method,
                    "params are required: {\"name\": \"lisp_eval\", \"arguments\": {...}}",
                );
            };
            if !p.get("name").is_some_and(Json::is_string) {
                return reject_params(id.is_none(), &reply_id, &method, "params.name must be the tool name");
            }
            if let Some(a) = p.get("arguments")
                && !a.is_object()
                && !a.is_null()
            {
                return reject_params(id.is_none(), &reply_id, &method, "params.arguments must be an object");
            }
        }
        "initialize" if !params.is_some_and(Json::is_object) => {
            return reject_params(
                id.is_none(),
                &reply_id,
                &method,
                "params are required: protocolVersion, capabilities, clientInfo",
            );
        }
        _ => {}
    }
    Verdict::Pass { id: id.filter(valid_id), method: Some(method) }
}

fn reject_params(notification: bool, id: &Json, method: &str, what: &str) -> Verdict {
    let message = format!("Invalid params for {method}: {what}");
    if notification {
        Verdict::Drop(message)
    } else {
        Verdict::Reject(Rejection { id: id.clone(), code: INVALID_PARAMS, message })
    }
}

fn is_notification(bytes: &[u8]) -> bool {
    serde_json::from_slice::<Head>(bytes).is_ok_and(|h| h.id.is_none() && h.method.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected(frame: &[u8]) -> Rejection {
        match check(frame) {
            Verdict::Reject(r) => r,
            other => panic!("expected a rejection of {:?}, got {other:?}", String::from_utf8_lossy(frame)),
        }
    }

    #[test]
    fn malformed_frames_are_parse_errors() {
        let r = rejected(b"this is not json");
        assert_eq!((r.code, r.id), (PARSE_ERROR, Json::Null));
        let r = rejected(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"\xff\"}");
        assert_eq!(r.code, PARSE_ERROR);
        assert!(r.message.contains("UTF-8"));
    }

    #[test]
    fn deep_frames_are_answered_with_their_id() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let frame = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"lisp_eval","arguments":{{"program":"1","context":{{"x":{deep}}}}}}}}}"#
        );
        let r = rejected(frame.as_bytes());
        assert_eq!((r.code, r.id), (PARSE_ERROR, json!(7)));
        let note = format!(r#"{{"jsonrpc":"2.0","method":"notifications/x","params":{{"x":{deep}}}}}"#);
        assert!(matches!(check(note.as_bytes()), Verdict::Drop(_)));
    }

    #[test]
    fn tools_call_without_params_is_invalid_params() {
        let r = rejected(br#"{"jsonrpc":"2.0","id":"a","method":"tools/call"}"#);
        assert_eq!((r.code, r.id), (INVALID_PARAMS, json!("a")));
        let r = rejected(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{}}}"#);
        assert_eq!(r.code, INVALID_PARAMS);
    }

    #[test]
    fn shapes() {
        assert_eq!(rejected(b"[1]").code, INVALID_REQUEST);
        assert_eq!(rejected(b"3").code, INVALID_REQUEST);
        assert_eq!(rejected(br#"{"id":1,"method":"ping"}"#).code, INVALID_REQUEST);
        assert_eq!(rejected(br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#).code, INVALID_REQUEST);
        assert_eq!(
            check(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Verdict::Pass { id: Some(json!(1)), method: Some("ping".into()) }
        );
        assert!(matches!(check(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), Verdict::Pass { .. }));
        assert!(matches!(check(br#"{"jsonrpc":"2.0","method":"tools/call"}"#), Verdict::Drop(_)));
    }
}
