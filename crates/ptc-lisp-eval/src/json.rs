//! JSON <-> value conversion.
//!
//! JSON objects become string-keyed maps (flexible key access lets `(:user-id m)` find
//! `"user_id"`); integers that fit in i64 stay integers. Values that JSON cannot hold
//! (functions, regexes, vars) are rejected by [`to_json`]; keywords become strings.

use std::sync::Arc;

use serde_json::{Map, Number, Value as Json};

use crate::value::{PMap, Value};

mod parse;

/// Converts JSON to a value.
///
/// Object keys (and short strings) are interned: the 100,000 `"status"` keys of a large
/// tool result share one allocation, which keeps lookups in cache and memory small.
pub fn from_json(j: &Json) -> Value {
    let mut interner = Interner::default();
    convert(j, &mut interner)
}

/// Converts a JSON object to a string-keyed map (a run's context).
pub fn map_from_json(obj: &Map<String, Json>) -> PMap {
    let mut interner = Interner::default();
    let mut m = PMap::new();
    for (k, v) in obj {
        m.insert(Value::Str(interner.get(k)), convert(v, &mut interner));
    }
    m
}

#[derive(Default)]
struct Interner {
    /// The shared strings themselves are the keys (no second copy of each).
    strings: std::collections::HashSet<Arc<str>, foldhash::fast::RandomState>,
}

impl Interner {
    fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.strings.get(s) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(s);
        if self.strings.len() < 100_000 {
            self.strings.insert(a.clone());
        }
        a
    }
}

fn convert(j: &Json, interner: &mut Interner) -> Value {
    match j {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Int(i)
            } else {
                Value::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Json::String(s) if s.len() <= 24 => Value::Str(interner.get(s)),
        Json::String(s) => Value::str(s.as_str()),
        Json::Array(items) => Value::vector(items.iter().map(|x| convert(x, interner))),
        Json::Object(obj) => {
            let mut m = PMap::new();
            for (k, v) in obj {
                m.insert(Value::Str(interner.get(k)), convert(v, interner));
            }
            Value::Map(Arc::new(m))
        }
    }
}

/// Why a value has no JSON form.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct NotJson(pub String);

/// Converts a value to JSON. Keywords become their names; map keys become strings
/// (integers print as decimal); sets become arrays; NaN/Infinity and functions are errors.
/// Iterative: a value nested deeper than [`MAX_JSON_DEPTH`] is an error, never a deep
/// recursion, on any thread.
pub fn to_json(v: &Value) -> Result<Json, NotJson> {
    enum Open {
        Array(Vec<Json>),
        Object(Map<String, Json>, String),
    }
    let mut open: Vec<Open> = Vec::new();
    let mut done: Option<Json> = None;
    walk(v, |event| {
        let finished = match event {
            Event::Scalar(x) => scalar_json(x),
            Event::BeginArray(n) => {
                open.push(Open::Array(Vec::with_capacity(n)));
                return Ok(());
            }
            Event::BeginObject => {
                open.push(Open::Object(Map::new(), String::new()));
                return Ok(());
            }
            Event::Key(k) => {
                if let Some(Open::Object(_, pending)) = open.last_mut() {
                    *pending = k;
                }
                return Ok(());
            }
            Event::End => match open.pop() {
                Some(Open::Array(items)) => Json::Array(items),
                Some(Open::Object(map, _)) => Json::Object(map),
                None => return Ok(()),
            },
        };
        match open.last_mut() {
            Some(Open::Array(items)) => items.push(finished),
            Some(Open::Object(map, pending)) => {
                map.insert(std::mem::take(pending), finished);
            }
            None => done = Some(finished),
        }
        Ok(())
    })?;
    Ok(done.unwrap_or(Json::Null))
}

/// Deepest collection nesting [`to_json`] and [`generate_bounded`] convert: above the
/// engine's `MAX_VALUE_NESTING`, so every value a run hands out converts, and shallow
/// enough that the JSON tree it gives can be printed and dropped on an ordinary thread.
pub const MAX_JSON_DEPTH: usize = crate::meter::UNMETERED_MAX_DEPTH as usize;

/// One step of a walk over a value in JSON order.
enum Event<'a> {
    /// A value without parts (its JSON form exists: `walk` checked).
    Scalar(&'a Value),
    /// A vector or set of this many items begins.
    BeginArray(usize),
    /// A map begins.
    BeginObject,
    /// The next map entry's key, as JSON writes it.
    Key(String),
    /// The innermost open collection ends.
    End,
}

/// Walks `v` in JSON order with an explicit stack, metered per collection.
fn walk<'a>(v: &'a Value, mut emit: impl FnMut(Event<'a>) -> Result<(), NotJson>) -> Result<(), NotJson> {
    enum Frame<'a> {
        Items(Box<dyn Iterator<Item = &'a Value> + 'a>),
        Entries(crate::value::MapIter<'a>),
    }
    let mut stack: Vec<Frame<'a>> = Vec::new();
    let mut next = Some(v);
    loop {
        if let Some(x) = next.take() {
            if matches!(x, Value::Vector(_) | Value::List(_) | Value::Set(_) | Value::Map(_)) {
                if stack.len() >= MAX_JSON_DEPTH {
                    return Err(NotJson(format!(
                        "the value is nested more than {MAX_JSON_DEPTH} levels deep, too deep to convert to JSON; build flatter data"
                    )));
                }
                if !crate::meter::step() {
                    return Err(NotJson(
                        "the value is too large or too deeply nested to convert to JSON in time".into(),
                    ));
                }
            }
            match x {
                Value::Vector(items) | Value::List(items) => {
                    emit(Event::BeginArray(items.len()))?;
                    stack.push(Frame::Items(Box::new(items.iter())));
                }
                Value::Set(items) => {
                    emit(Event::BeginArray(items.len()))?;
                    stack.push(Frame::Items(Box::new(items.iter())));
                }
                Value::Map(m) => {
                    emit(Event::BeginObject)?;
                    stack.push(Frame::Entries(m.iter()));
                }
                Value::Float(f) if !f.is_finite() => {
                    return Err(NotJson(format!("{} has no JSON form", crate::printer::format_float(*f))));
                }
                Value::Regex(_) | Value::Func(_) | Value::Lazy(_) | Value::Reduced(_) | Value::Var(_) => {
                    return Err(NotJson(format!("{} has no JSON form", x.type_name())));
                }
                _ => emit(Event::Scalar(x))?,
            }
        }
        let Some(top) = stack.last_mut() else { return Ok(()) };
        match top {
            Frame::Items(items) => match items.next() {
                Some(x) => next = Some(x),
                None => {
                    stack.pop();
                    emit(Event::End)?;
                }
            },
            Frame::Entries(entries) => match entries.next() {
                Some((k, x)) => {
                    let key = match k {
                        Value::Str(s) | Value::Keyword(s) => s.to_string(),
                        Value::Int(i) => i.to_string(),
                        Value::Bool(b) => b.to_string(),
                        other => {
                            return Err(NotJson(format!(
                                "map key {} has no JSON form; use string or keyword keys",
                                crate::printer::to_clojure(other)
                            )));
                        }
                    };
                    emit(Event::Key(key))?;
                    next = Some(x);
                }
                None => {
                    stack.pop();
                    emit(Event::End)?;
                }
            },
        }
    }
}

/// The JSON form of a value without parts (checked by `walk`).
fn scalar_json(v: &Value) -> Json {
    match v {
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::Number((*i).into()),
        Value::Float(f) => Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Value::Str(s) | Value::Keyword(s) | Value::Symbol(s) => Json::String(s.to_string()),
        _ => Json::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_integers() {
        let j: Json = serde_json::json!({"a": [1, 2.5, "x", null, true], "b": {"c": -3}});
        let v = from_json(&j);
        assert_eq!(to_json(&v).unwrap(), j);
    }
}

/// Why JSON text could not become a value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    /// Not valid JSON.
    #[error("{0}")]
    Syntax(String),
    /// Building the value would exceed the memory budget.
    #[error("the JSON is larger than the memory budget allows")]
    TooLarge,
    /// The run's deadline passed (or it was cancelled) while parsing.
    #[error("parsing the JSON ran out of time")]
    OutOfTime,
}

/// A budget for one parse: bytes that may still be built, and a deadline/cancel check.
pub(crate) struct ParseBudget<'a> {
    pub(crate) bytes_left: u64,
    pub(crate) budget: Option<&'a crate::limits::SharedBudget>,
    pub(crate) nodes: u32,
    pub(crate) failure: Option<ParseError>,
}

impl ParseBudget<'_> {
    #[inline]
    fn take(&mut self, bytes: u64) -> bool {
        if self.failure.is_some() {
            return false;
        }
        if bytes > self.bytes_left {
            self.failure = Some(ParseError::TooLarge);
            return false;
        }
        self.bytes_left -= bytes;
        self.nodes = self.nodes.wrapping_add(1);
        if self.nodes.is_multiple_of(4096)
            && let Some(b) = self.budget
            && b.check_time().is_err()
        {
            self.failure = Some(ParseError::OutOfTime);
            return false;
        }
        true
    }
}

/// Parses JSON text straight into a value (no intermediate tree), charging every node to
/// `bytes_left` — the way contexts and `json/parse-string` are read, so a large or hostile
/// document costs what it builds and stops at the budget.
///
/// ```
/// let v = ptc_lisp_eval::json::parse_str(r#"{"b": [1, 2.5, null], "a": "x"}"#, u64::MAX).unwrap();
/// assert_eq!(ptc_lisp_eval::to_clojure(&v), r#"{"a" "x" "b" [1 2.5 nil]}"#);
/// assert!(ptc_lisp_eval::json::parse_str("[1, 2, 3]", 16).is_err());
/// ```
pub fn parse_str(text: &str, bytes_left: u64) -> Result<Value, ParseError> {
    let mut pb = ParseBudget { bytes_left, budget: None, nodes: 0, failure: None };
    parse_with(text, &mut pb)
}

pub(crate) fn parse_with(text: &str, pb: &mut ParseBudget<'_>) -> Result<Value, ParseError> {
    parse::parse(text, pb)
}

/// Writes a value as compact JSON text of at most `max_bytes`, without building an
/// intermediate tree. `Err` names why (no JSON form, too large, too deep or out of time).
pub fn generate_bounded(v: &Value, max_bytes: usize) -> Result<String, NotJson> {
    use std::io::Write;
    let mut w = CappedWriter { out: Vec::new(), max: max_bytes, over: false };
    // per open collection: (is a map, nothing written in it yet)
    let mut open: Vec<(bool, bool)> = Vec::new();
    let r = walk(v, |event| {
        let io = |e: std::io::Error| NotJson(e.to_string());
        // a comma before every item of an array but the first, and before every key
        let comma = |open: &mut Vec<(bool, bool)>, w: &mut CappedWriter, key: bool| -> Result<(), NotJson> {
            if let Some((is_map, first)) = open.last_mut()
                && *is_map == key
            {
                if !*first {
                    w.write_all(b",").map_err(io)?;
                }
                *first = false;
            }
            Ok(())
        };
        match event {
            Event::Scalar(x) => {
                comma(&mut open, &mut w, false)?;
                match x {
                    Value::Str(s) | Value::Keyword(s) | Value::Symbol(s) => serde_json::to_writer(&mut w, &**s),
                    other => serde_json::to_writer(&mut w, &scalar_json(other)),
                }
                .map_err(|e| NotJson(e.to_string()))
            }
            Event::BeginArray(_) | Event::BeginObject => {
                comma(&mut open, &mut w, false)?;
                let is_map = matches!(event, Event::BeginObject);
                open.push((is_map, true));
                w.write_all(if is_map { b"{" } else { b"[" }).map_err(io)
            }
            Event::Key(k) => {
                comma(&mut open, &mut w, true)?;
                serde_json::to_writer(&mut w, &k).map_err(|e| NotJson(e.to_string()))?;
                w.write_all(b":").map_err(io)
            }
            Event::End => {
                let is_map = open.pop().is_some_and(|(m, _)| m);
                w.write_all(if is_map { b"}" } else { b"]" }).map_err(io)
            }
        }
    });
    if w.over {
        return Err(NotJson(format!("the JSON text is larger than {max_bytes} bytes")));
    }
    r?;
    String::from_utf8(w.out).map_err(|e| NotJson(e.to_string()))
}

struct CappedWriter {
    out: Vec<u8>,
    max: usize,
    over: bool,
}

impl std::io::Write for CappedWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.out.len() + buf.len() > self.max {
            self.over = true;
            return Err(std::io::Error::other("too large"));
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Reads a run's context: JSON text that must be an object (each key becomes
/// `data/<key>`), loaded straight into values and charged against `max_bytes` of built
/// data (the cost model of the memory limit), so a context's footprint has a known bound.
pub fn parse_context(text: &str, max_bytes: u64) -> Result<PMap, String> {
    parse_context_charged(text, max_bytes, "--max-context-bytes").map(|(m, _)| m)
}

/// [`parse_context`], also returning the bytes the loaded values were charged (so a
/// caller can charge them to a run's memory limit); `limit` names the limit in the
/// message when `max_bytes` is not enough.
///
/// ```
/// let (m, used) = ptc_lisp_eval::json::parse_context_charged(r#"{"xs": [1, 2, 3]}"#, 1 << 20, "x").unwrap();
/// assert_eq!(m.len(), 1);
/// assert!(used > 0);
/// let err = ptc_lisp_eval::json::parse_context_charged(r#"{"xs": [1, 2, 3]}"#, 8, "max_heap_bytes").err().unwrap();
/// assert!(err.contains("more than 8 bytes once loaded (max_heap_bytes)"), "{err}");
/// ```
pub fn parse_context_charged(text: &str, max_bytes: u64, limit: &str) -> Result<(PMap, u64), String> {
    let mut pb = ParseBudget { bytes_left: max_bytes, budget: None, nodes: 0, failure: None };
    let parsed = parse_with(text, &mut pb);
    let used = max_bytes.saturating_sub(pb.bytes_left);
    match parsed {
        Ok(Value::Map(m)) => Ok((Arc::unwrap_or_clone(m), used)),
        Ok(other) => Err(format!(
            "the context must be a JSON object whose keys become data/<key>; got a JSON {}",
            match other {
                Value::Nil => "null",
                Value::Bool(_) => "boolean",
                Value::Int(_) | Value::Float(_) => "number",
                Value::Str(_) => "string",
                _ => "array",
            }
        )),
        Err(ParseError::Syntax(e)) => Err(format!("the context is not valid JSON: {e}")),
        Err(ParseError::TooLarge) => Err(format!(
            "the context needs more than {max_bytes} bytes once loaded ({limit}); pass less data or raise the limit"
        )),
        Err(ParseError::OutOfTime) => Err("loading the context ran out of time".into()),
    }
}

/// The serde_json-based parser the hand-written one replaced: the reference the
/// differential tests compare against.
#[cfg(test)]
pub(crate) mod serde_reference {
    use std::sync::Arc;

    use super::{Interner, ParseBudget, ParseError};
    use crate::value::{PMap, PVector, Value};

    pub(crate) fn parse_with(text: &str, pb: &mut ParseBudget<'_>) -> Result<Value, ParseError> {
        use serde::de::DeserializeSeed;
        let mut interner = Interner::default();
        let mut de = serde_json::Deserializer::from_str(text);
        // serde_json's own recursion limit (128) bounds nesting, so this cannot overflow
        let seed = Seed { pb: &mut *pb, interner: &mut interner };
        let parsed = seed.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
        match (parsed, pb.failure.take()) {
            (_, Some(f)) => Err(f),
            (Ok(v), None) => Ok(v),
            (Err(e), None) => Err(ParseError::Syntax(e.to_string())),
        }
    }

    struct Seed<'p, 'b> {
        pb: &'p mut ParseBudget<'b>,
        interner: &'p mut Interner,
    }

    impl<'de> serde::de::DeserializeSeed<'de> for Seed<'_, '_> {
        type Value = Value;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }

    fn budget_error<E: serde::de::Error>() -> E {
        E::custom("budget")
    }

    impl<'de> serde::de::Visitor<'de> for Seed<'_, '_> {
        type Value = Value;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
            if !self.pb.take(crate::limits::cost::ELEM) {
                return Err(budget_error());
            }
            Ok(Value::Nil)
        }
        fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<Value, E> {
            if !self.pb.take(crate::limits::cost::ELEM) {
                return Err(budget_error());
            }
            Ok(Value::Bool(b))
        }
        fn visit_i64<E: serde::de::Error>(self, i: i64) -> Result<Value, E> {
            if !self.pb.take(crate::limits::cost::ELEM) {
                return Err(budget_error());
            }
            Ok(Value::Int(i))
        }
        fn visit_u64<E: serde::de::Error>(self, u: u64) -> Result<Value, E> {
            if !self.pb.take(crate::limits::cost::ELEM) {
                return Err(budget_error());
            }
            Ok(i64::try_from(u).map_or(Value::Float(u as f64), Value::Int))
        }
        fn visit_f64<E: serde::de::Error>(self, f: f64) -> Result<Value, E> {
            if !self.pb.take(crate::limits::cost::ELEM) {
                return Err(budget_error());
            }
            Ok(Value::Float(f))
        }
        fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Value, E> {
            if !self.pb.take(crate::limits::cost::ELEM + s.len() as u64) {
                return Err(budget_error());
            }
            Ok(if s.len() <= 24 { Value::Str(self.interner.get(s)) } else { Value::str(s) })
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            if !self.pb.take(crate::limits::cost::HEADER) {
                return Err(budget_error());
            }
            let mut items = PVector::new();
            while let Some(v) = seq.next_element_seed(Seed { pb: &mut *self.pb, interner: &mut *self.interner })? {
                items.push_back(v);
            }
            Ok(Value::from_pvec(items))
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            if !self.pb.take(crate::limits::cost::HEADER) {
                return Err(budget_error());
            }
            let mut entries: Vec<(Value, Value)> = Vec::new();
            while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if !self.pb.take(crate::limits::cost::ENTRY + k.len() as u64) {
                    return Err(budget_error());
                }
                let key = Value::Str(self.interner.get(&k));
                let v = map.next_value_seed(Seed { pb: &mut *self.pb, interner: &mut *self.interner })?;
                entries.push((key, v));
            }
            // JSON objects may repeat a key: the last one wins, as in from_json
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut unique: Vec<(Value, Value)> = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                match unique.last_mut() {
                    Some(last) if last.0 == k => last.1 = v,
                    _ => unique.push((k, v)),
                }
            }
            Ok(Value::Map(Arc::new(PMap::from_sorted_unique(unique))))
        }
    }
}
