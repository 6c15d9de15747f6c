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
pub fn to_json(v: &Value) -> Result<Json, NotJson> {
    if matches!(v, Value::Vector(_) | Value::Set(_) | Value::Map(_)) && !crate::meter::step() {
        return Err(NotJson("the value is too large or too deeply nested to convert to JSON in time".into()));
    }
    Ok(match v {
        Value::Nil => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::Number((*i).into()),
        Value::Float(f) => match Number::from_f64(*f) {
            Some(n) => Json::Number(n),
            None => return Err(NotJson(format!("{} has no JSON form", crate::printer::format_float(*f)))),
        },
        Value::Str(s) => Json::String(s.to_string()),
        Value::Keyword(k) => Json::String(k.to_string()),
        Value::Symbol(s) => Json::String(s.to_string()),
        Value::Vector(items) => Json::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Value::Set(items) => Json::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Value::Map(m) => {
            let mut out = Map::new();
            for (k, v) in m.iter() {
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
                out.insert(key, to_json(v)?);
            }
            Json::Object(out)
        }
        Value::Regex(_) | Value::Func(_) | Value::Var(_) => {
            return Err(NotJson(format!("{} has no JSON form", v.type_name())));
        }
    })
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
    let mut w = CappedWriter { out: Vec::new(), max: max_bytes, over: false };
    let r = serde_json::to_writer(&mut w, &JsonView(v));
    if w.over {
        return Err(NotJson(format!("the JSON text is larger than {max_bytes} bytes")));
    }
    r.map_err(|e| NotJson(e.to_string()))?;
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

struct JsonView<'a>(&'a Value);

impl serde::Serialize for JsonView<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap, SerializeSeq};
        let v = self.0;
        if matches!(v, Value::Vector(_) | Value::Set(_) | Value::Map(_)) && !crate::meter::step() {
            return Err(S::Error::custom("the value is too large or too deeply nested to convert to JSON in time"));
        }
        match v {
            Value::Nil => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) if f.is_finite() => s.serialize_f64(*f),
            Value::Float(f) => Err(S::Error::custom(format!("{} has no JSON form", crate::printer::format_float(*f)))),
            Value::Str(x) | Value::Keyword(x) | Value::Symbol(x) => s.serialize_str(x),
            Value::Vector(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for x in items.iter() {
                    seq.serialize_element(&JsonView(x))?;
                }
                seq.end()
            }
            Value::Set(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for x in items.iter() {
                    seq.serialize_element(&JsonView(x))?;
                }
                seq.end()
            }
            Value::Map(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, x) in m.iter() {
                    let key = match k {
                        Value::Str(s) | Value::Keyword(s) => s.to_string(),
                        Value::Int(i) => i.to_string(),
                        Value::Bool(b) => b.to_string(),
                        other => {
                            return Err(S::Error::custom(format!(
                                "map key {} has no JSON form; use string or keyword keys",
                                crate::printer::to_clojure(other)
                            )));
                        }
                    };
                    map.serialize_entry(&key, &JsonView(x))?;
                }
                map.end()
            }
            Value::Regex(_) | Value::Func(_) | Value::Var(_) => {
                Err(S::Error::custom(format!("{} has no JSON form", v.type_name())))
            }
        }
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
