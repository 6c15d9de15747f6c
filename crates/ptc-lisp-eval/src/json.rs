//! JSON <-> value conversion.
//!
//! JSON objects become string-keyed maps (flexible key access lets `(:user-id m)` find
//! `"user_id"`); integers that fit in i64 stay integers. Values that JSON cannot hold
//! (functions, regexes, vars) are rejected by [`to_json`]; keywords become strings.

use std::sync::Arc;

use serde_json::{Map, Number, Value as Json};

use crate::value::{PMap, Value};

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
    strings: std::collections::HashMap<String, Arc<str>>,
}

impl Interner {
    fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.strings.get(s) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(s);
        if self.strings.len() < 100_000 {
            self.strings.insert(s.to_string(), a.clone());
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
