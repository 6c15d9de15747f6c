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

/// serde_json's recursion limit: a frame nesting deeper than this fails its parse in rmcp.
const MAX_NESTING: usize = 127;

/// How deep arrays and objects nest in valid JSON text (brackets inside strings are not
/// counted). One pass, no allocation.
fn nesting_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// What a JSON value is, without building it: arrays and objects are skipped (serde_json
/// skips ignored values without recursion and without allocating).
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Null,
    Bool,
    Number(serde_json::Number),
    String(String),
    Array,
    Object,
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Shape;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<Shape, E> {
                Ok(Shape::Null)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
                Ok(Shape::Bool)
            }
            fn visit_i64<E>(self, v: i64) -> Result<Shape, E> {
                Ok(Shape::Number(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Shape, E> {
                Ok(Shape::Number(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Shape, E> {
                Ok(serde_json::Number::from_f64(v).map(Shape::Number).unwrap_or(Shape::Null))
            }
            fn visit_str<E>(self, v: &str) -> Result<Shape, E> {
                Ok(Shape::String(v.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Shape, A::Error> {
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Shape::Array)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Shape, A::Error> {
                while a.next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?.is_some() {}
                Ok(Shape::Object)
            }
        }
        d.deserialize_any(V)
    }
}

impl Shape {
    /// The value for a reply's `id` (arrays and objects are not ids anyway).
    fn to_json(&self) -> Json {
        match self {
            Shape::Number(n) => Json::Number(n.clone()),
            Shape::String(s) => Json::String(s.clone()),
            Shape::Null => Json::Null,
            Shape::Bool => Json::Bool(false),
            Shape::Array => Json::Array(Vec::new()),
            Shape::Object => Json::Object(serde_json::Map::new()),
        }
    }
}

/// The parts of `params` the check looks at.
#[derive(Deserialize)]
struct ParamsShape {
    #[serde(default)]
    name: Option<Shape>,
    #[serde(default)]
    arguments: Option<Shape>,
}

/// `params`: an object (with its shape), or something else.
enum Params {
    Object(ParamsShape),
    Other(Shape),
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Params;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("params")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Params, A::Error> {
                let mut p = ParamsShape { name: None, arguments: None };
                while let Some(k) = a.next_key::<std::borrow::Cow<'de, str>>()? {
                    match &*k {
                        "name" => p.name = Some(a.next_value()?),
                        "arguments" => p.arguments = Some(a.next_value()?),
                        _ => {
                            a.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(Params::Object(p))
            }
            fn visit_unit<E>(self) -> Result<Params, E> {
                Ok(Params::Other(Shape::Null))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Params, E> {
                Ok(Params::Other(Shape::Bool))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Params, E> {
                Ok(Params::Other(Shape::Number(v.into())))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Params, E> {
                Ok(Params::Other(Shape::Number(v.into())))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Params, E> {
                Ok(Params::Other(Shape::Null))
            }
            fn visit_str<E>(self, _: &str) -> Result<Params, E> {
                Ok(Params::Other(Shape::String(String::new())))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Params, A::Error> {
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Params::Other(Shape::Array))
            }
        }
        d.deserialize_any(V)
    }
}

/// The top of a message: what the check needs, nothing built for the rest.
enum Message {
    Object {
        jsonrpc: Option<Shape>,
        id: Option<Shape>,
        method: Option<Shape>,
        params: Option<Params>,
        has_result: bool,
    },
    Array,
    Other,
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Message;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON-RPC message")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Message, A::Error> {
                let (mut jsonrpc, mut id, mut method, mut params, mut has_result) = (None, None, None, None, false);
                while let Some(k) = a.next_key::<std::borrow::Cow<'de, str>>()? {
                    match &*k {
                        "jsonrpc" => jsonrpc = Some(a.next_value()?),
                        "id" => id = Some(a.next_value()?),
                        "method" => method = Some(a.next_value()?),
                        "params" => params = Some(a.next_value()?),
                        "result" | "error" => {
                            a.next_value::<serde::de::IgnoredAny>()?;
                            has_result = true;
                        }
                        _ => {
                            a.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(Message::Object { jsonrpc, id, method, params, has_result })
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Message, A::Error> {
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Message::Array)
            }
            fn visit_unit<E>(self) -> Result<Message, E> {
                Ok(Message::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Message, E> {
                Ok(Message::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Message, E> {
                Ok(Message::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Message, E> {
                Ok(Message::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Message, E> {
                Ok(Message::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<Message, E> {
                Ok(Message::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// Checks one frame (a stdio line without its newline, or an HTTP body). Nothing of the
/// frame is built as a tree here: a 4 MB context costs this check no memory.
pub fn check(bytes: &[u8]) -> Verdict {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Verdict::Reject(Rejection::parse_error("Parse error: the frame is not valid UTF-8"));
    };
    if nesting_depth(bytes) > MAX_NESTING {
        let id = read_id(bytes).unwrap_or(Json::Null);
        let message = "Parse error: the JSON nests deeper than 128 levels; send flatter data".to_string();
        return match (id, is_notification(bytes)) {
            (_, true) => Verdict::Drop(message),
            (id, false) => Verdict::Reject(Rejection { id, code: PARSE_ERROR, message }),
        };
    }
    let message: Message = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Verdict::Reject(Rejection::parse_error(format!("Parse error: {e}"))),
    };
    let (jsonrpc, id, method, params, has_result) = match message {
        Message::Object { jsonrpc, id, method, params, has_result } => (jsonrpc, id, method, params, has_result),
        other => {
            let message = if matches!(other, Message::Array) {
                "Invalid Request: batches are not supported; send one message per frame"
            } else {
                "Invalid Request: a JSON-RPC message is a JSON object"
            };
            return Verdict::Reject(Rejection { id: Json::Null, code: INVALID_REQUEST, message: message.into() });
        }
    };
    let id = id.map(|i| i.to_json());
    let reply_id = id.clone().filter(valid_id).unwrap_or(Json::Null);
    let invalid = |message: &str| {
        if id.is_none() {
            Verdict::Drop(message.to_string())
        } else {
            Verdict::Reject(Rejection { id: reply_id.clone(), code: INVALID_REQUEST, message: message.into() })
        }
    };
    if !matches!(&jsonrpc, Some(Shape::String(v)) if v == "2.0") {
        return invalid("Invalid Request: \"jsonrpc\" must be \"2.0\"");
    }
    let method = match method {
        None => {
            // a response to a request of ours (or garbage without a method)
            if id.is_some() && has_result {
                return Verdict::Pass { id: None, method: None };
            }
            return invalid("Invalid Request: a request needs a \"method\" string");
        }
        Some(Shape::String(m)) => m,
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
    if let Some(Params::Other(p)) = &params
        && *p != Shape::Null
    {
        return reject_params(id.is_none(), &reply_id, &method, "params must be an object");
    }
    match method.as_str() {
        "tools/call" => {
            let Some(Params::Object(p)) = &params else {
                return reject_params(
                    id.is_none(),
                    &reply_id,
                    &method,
                    "params are required: {\"name\": \"lisp_eval\", \"arguments\": {...}}",
                );
            };
            if !matches!(p.name, Some(Shape::String(_))) {
                return reject_params(id.is_none(), &reply_id, &method, "params.name must be the tool name");
            }
            if let Some(a) = &p.arguments
                && !matches!(a, Shape::Object | Shape::Null)
            {
                return reject_params(id.is_none(), &reply_id, &method, "params.arguments must be an object");
            }
        }
        "initialize" if !matches!(params, Some(Params::Object(_))) => {
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

/// Where `params.arguments.context` of a `lisp_eval` call lies in a frame that passed
/// [`check`] as a `tools/call`: `Ok(None)` when the call is not to `lisp_eval` or has no
/// context, `Err` naming a key given twice on that path (which value wins would then be
/// up to the parser; the call is refused instead).
pub(crate) fn lisp_eval_context(bytes: &[u8]) -> Result<Option<std::ops::Range<usize>>, String> {
    let Some(params) = member(bytes, 0, "params")? else { return Ok(None) };
    let Some(name) = member(bytes, params.start, "name")? else { return Ok(None) };
    let name = bytes.get(name).unwrap_or_default();
    if serde_json::from_slice::<String>(name).ok().as_deref() != Some("lisp_eval") {
        return Ok(None);
    }
    let Some(args) = member(bytes, params.start, "arguments")? else { return Ok(None) };
    member(bytes, args.start, "context")
}

/// The span of the value of `key` in the object starting at or after `at` (whitespace
/// first); `Ok(None)` when the value there is not an object or lacks the key.
fn member(bytes: &[u8], at: usize, key: &str) -> Result<Option<std::ops::Range<usize>>, String> {
    let mut i = skip_ws(bytes, at);
    if bytes.get(i) != Some(&b'{') {
        return Ok(None);
    }
    i += 1;
    let mut found = None;
    loop {
        i = skip_ws(bytes, i);
        match bytes.get(i) {
            Some(b'"') => {}
            _ => return Ok(found),
        }
        let key_end = skip_value(bytes, i);
        let raw = bytes.get(i + 1..key_end.saturating_sub(1).max(i + 1)).unwrap_or_default();
        let same = if raw.contains(&b'\\') {
            serde_json::from_slice::<String>(bytes.get(i..key_end).unwrap_or_default()).is_ok_and(|k| k == key)
        } else {
            raw == key.as_bytes()
        };
        i = skip_ws(bytes, key_end);
        i = skip_ws(bytes, i + 1); // the ':'
        let end = skip_value(bytes, i);
        if same {
            if found.is_some() {
                return Err(format!("the key \"{key}\" appears twice"));
            }
            found = Some(i..end);
        }
        i = skip_ws(bytes, end);
        if bytes.get(i) == Some(&b',') {
            i += 1;
        }
    }
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

/// The end of the (valid) JSON value starting at `i`, without recursion.
fn skip_value(bytes: &[u8], mut i: usize) -> usize {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let start = i;
    while let Some(&b) = bytes.get(i) {
        i += 1;
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => {
                    in_string = false;
                    if depth == 0 {
                        return i;
                    }
                }
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                if depth == 0 {
                    // the end of the enclosing container: a scalar ended just before it
                    return i - 1;
                }
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            b',' if depth == 0 => return i - 1,
            b if depth == 0 && b.is_ascii_whitespace() && i - 1 > start => return i - 1,
            _ => {}
        }
    }
    i
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
    fn the_nesting_limit_is_serde_json_s() {
        // what passes the check must also decode downstream (serde_json's limit), and a
        // bracket inside a string is not nesting
        let frame = |depth: usize| {
            let inner = format!("{}\"[{{\"{}", "[".repeat(depth - 4), "]".repeat(depth - 4));
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"lisp_eval","arguments":{{"context":{{"x":{inner}}}}}}}}}"#
            )
        };
        for depth in [120, 127, 128, 140] {
            let f = frame(depth);
            let decodes = serde_json::from_str::<Json>(&f).is_ok();
            let passes = matches!(check(f.as_bytes()), Verdict::Pass { .. });
            assert_eq!(passes, decodes, "depth {depth}");
            assert_eq!(passes, depth <= 127, "depth {depth}");
        }
    }

    #[test]
    fn checking_a_frame_builds_no_tree_of_its_params() {
        // the shapes the check needs are read; the rest is skipped, so a large context
        // passes with the same verdict as before
        let big = format!("[{}0]", "{\"a\":1},".repeat(100_000));
        let frame = format!(
            r#"{{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{{"name":"lisp_eval","arguments":{{"program":"1","context":{{"xs":{big}}}}}}}}}"#
        );
        assert_eq!(check(frame.as_bytes()), Verdict::Pass { id: Some(json!("x")), method: Some("tools/call".into()) });
        let r = rejected(
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lisp_eval","arguments":[1]}}"#,
        );
        assert_eq!((r.code, r.id), (INVALID_PARAMS, json!(2)));
        let r = rejected(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":[]}"#);
        assert_eq!(r.code, INVALID_PARAMS);
        assert_eq!(rejected(br#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#).code, INVALID_REQUEST);
        assert_eq!(rejected(br#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#).code, INVALID_REQUEST);
        assert!(matches!(check(br#"{"jsonrpc":"2.0","id":5,"result":{}}"#), Verdict::Pass { id: None, method: None }));
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
