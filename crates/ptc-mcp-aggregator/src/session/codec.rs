//! Session values as bytes: a flat, versioned encoding of PTC-Lisp data.
//!
//! A session's state outlives the process that built it (a second instance, a Redis
//! record), so its values are written as a list of operations in postfix order: leaves
//! push a value, `vec n` / `map n` / `set n` pop their items. Encoding and decoding walk
//! with an explicit stack, so a value nested a thousand levels deep (the engine's
//! `MAX_VALUE_NESTING`) costs no recursion, and the JSON around it stays two levels deep.
//!
//! Data round-trips exactly: ints stay ints, floats stay floats (NaN and infinities
//! included), keywords, symbols, vars, regexes and sets keep their kind. Builtin functions
//! are written by name and tool functions by tool name. A closure, a composed function or
//! a lazy sequence is not data: [`encode`] refuses it and says what it found, and the
//! session layer keeps such a binding by its defining form instead.

use std::sync::Arc;

use ptc_lisp_eval::value::{PMap, PSet};
use ptc_lisp_eval::{Function, FunctionKind, RegexValue, Value};
use serde_json::{Value as Json, json};

/// Why a value cannot be written as data.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NotData {
    /// A user closure, a composed function (`partial`, `comp`...) or `reduced`.
    Function,
    /// An infinite lazy sequence.
    Lazy,
}

impl NotData {
    /// What the value is, for a message.
    pub(crate) fn what(&self) -> &'static str {
        match self {
            NotData::Function => "a function",
            NotData::Lazy => "an infinite lazy sequence",
        }
    }
}

enum Walk<'a> {
    Visit(&'a Value),
    Close(&'static str, usize),
}

/// The operations of `value`, postfix. Each op is a short JSON array: `["i", 1]`,
/// `["vec", 3]`...
pub(crate) fn encode(value: &Value) -> Result<Vec<Json>, NotData> {
    let mut out = Vec::new();
    let mut work = vec![Walk::Visit(value)];
    while let Some(step) = work.pop() {
        let v = match step {
            Walk::Close(tag, n) => {
                out.push(json!([tag, n]));
                continue;
            }
            Walk::Visit(v) => v,
        };
        match v {
            Value::Nil => out.push(json!(["nil"])),
            Value::Bool(b) => out.push(json!(["b", b])),
            Value::Int(i) => out.push(json!(["i", i])),
            Value::Float(f) if f.is_finite() => out.push(json!(["f", f])),
            Value::Float(f) => {
                let name = if f.is_nan() {
                    "nan"
                } else if *f > 0.0 {
                    "inf"
                } else {
                    "-inf"
                };
                out.push(json!(["f", name]));
            }
            Value::Str(s) => out.push(json!(["s", &**s])),
            Value::Keyword(k) => out.push(json!(["k", &**k])),
            Value::Symbol(s) => out.push(json!(["y", &**s])),
            Value::Var(s) => out.push(json!(["v", &**s])),
            Value::Regex(r) => out.push(json!(["re", r.source()])),
            Value::Vector(items) => {
                work.push(Walk::Close("vec", items.len()));
                // pushed in reverse so that they are visited (and written) in order
                let all: Vec<&Value> = items.iter().collect();
                work.extend(all.into_iter().rev().map(Walk::Visit));
            }
            Value::List(items) => {
                work.push(Walk::Close("list", items.len()));
                let all: Vec<&Value> = items.iter().collect();
                work.extend(all.into_iter().rev().map(Walk::Visit));
            }
            Value::Set(items) => {
                work.push(Walk::Close("set", items.len()));
                let all: Vec<&Value> = items.iter().collect();
                work.extend(all.into_iter().rev().map(Walk::Visit));
            }
            Value::Map(m) => {
                work.push(Walk::Close("map", m.len()));
                let all: Vec<(&Value, &Value)> = m.iter().collect();
                for (k, v) in all.into_iter().rev() {
                    work.push(Walk::Visit(v));
                    work.push(Walk::Visit(k));
                }
            }
            Value::Func(f) => match f.kind() {
                FunctionKind::Builtin(name) => out.push(json!(["fn", name])),
                FunctionKind::Tool(name) => out.push(json!(["tool", name])),
                _ => return Err(NotData::Function),
            },
            Value::Lazy(_) => return Err(NotData::Lazy),
            Value::Reduced(_) => return Err(NotData::Function),
        }
    }
    Ok(out)
}

/// Why encoded bytes do not decode.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Corrupt(pub(crate) String);

fn bad(what: impl Into<String>) -> Corrupt {
    Corrupt(what.into())
}

/// The value the operations build.
pub(crate) fn decode(ops: &[Json]) -> Result<Value, Corrupt> {
    let mut stack: Vec<Value> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let Some(parts) = op.as_array() else { return Err(bad(format!("op {i} is not an array"))) };
        let tag = parts.first().and_then(Json::as_str).ok_or_else(|| bad(format!("op {i} has no tag")))?;
        let arg = parts.get(1);
        let text = || arg.and_then(Json::as_str).ok_or_else(|| bad(format!("op {i} ({tag}) needs a string")));
        let count = || {
            arg.and_then(Json::as_u64)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| bad(format!("op {i} ({tag}) needs a count")))
        };
        let v = match tag {
            "nil" => Value::Nil,
            "b" => Value::Bool(arg.and_then(Json::as_bool).ok_or_else(|| bad(format!("op {i} needs a bool")))?),
            "i" => Value::Int(arg.and_then(Json::as_i64).ok_or_else(|| bad(format!("op {i} needs an int")))?),
            "f" => match arg {
                Some(Json::String(s)) if s == "nan" => Value::Float(f64::NAN),
                Some(Json::String(s)) if s == "inf" => Value::Float(f64::INFINITY),
                Some(Json::String(s)) if s == "-inf" => Value::Float(f64::NEG_INFINITY),
                Some(n) => Value::Float(n.as_f64().ok_or_else(|| bad(format!("op {i} needs a float")))?),
                None => return Err(bad(format!("op {i} needs a float"))),
            },
            "s" => Value::str(text()?),
            "k" => Value::kw(text()?),
            "y" => Value::Symbol(Arc::from(text()?)),
            "v" => Value::Var(Arc::from(text()?)),
            "re" => Value::Regex(Arc::new(RegexValue::compile(text()?).map_err(bad)?)),
            "fn" => {
                let name = text()?;
                let b = ptc_lisp_eval::registry::lookup(name)
                    .ok_or_else(|| bad(format!("builtin `{name}` does not exist in this version")))?;
                Value::Func(Arc::new(Function::builtin(b)))
            }
            "tool" => Value::Func(Arc::new(Function::tool(text()?))),
            "vec" | "list" | "set" | "map" => {
                let n = count()?;
                let items = if tag == "map" { n.checked_mul(2) } else { Some(n) };
                let take =
                    items.filter(|k| *k <= stack.len()).ok_or_else(|| bad(format!("op {i} ({tag}) underflows")))?;
                let parts = stack.split_off(stack.len() - take);
                match tag {
                    "vec" => Value::vector(parts),
                    "list" => Value::list(parts),
                    "set" => Value::Set(Arc::new(PSet::from_items(parts))),
                    _ => {
                        let mut it = parts.into_iter();
                        let mut entries = Vec::with_capacity(n);
                        while let (Some(k), Some(v)) = (it.next(), it.next()) {
                            entries.push((k, v));
                        }
                        Value::Map(Arc::new(PMap::from_entries(entries)))
                    }
                }
            }
            other => return Err(bad(format!("op {i} has the unknown tag {other:?}"))),
        };
        stack.push(v);
    }
    match (stack.pop(), stack.is_empty()) {
        (Some(v), true) => Ok(v),
        _ => Err(bad("the operations do not build exactly one value")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptc_lisp_eval::{Engine, Limits, NoTools};

    fn eval(src: &str) -> Value {
        let out = Engine::new(Limits::default()).eval_with(src, &NoTools);
        out.value().cloned().unwrap_or_else(|| panic!("{src}: {:?}", out.result))
    }

    #[test]
    fn data_round_trips_with_its_kinds() {
        for src in [
            "nil",
            "[1 1.0 -0.5 \"s\" :k 'sym #{1 2 :a} {:a [1 {\"x\" nil}] 2 true}]",
            "[##NaN ##Inf ##-Inf]",
            "#\"a+b\"",
            "[inc str/join]",
            "{:recent (list 3 2 1) :empty ()}",
        ] {
            let v = eval(src);
            let ops = encode(&v).unwrap();
            let back = decode(&ops).unwrap();
            assert_eq!(ptc_lisp_eval::to_clojure(&back), ptc_lisp_eval::to_clojure(&v), "{src}");
        }
        assert_eq!(decode(&encode(&Value::Int(3)).unwrap()).unwrap(), Value::Int(3));
        assert_ne!(decode(&encode(&Value::Float(3.0)).unwrap()).unwrap(), Value::Int(3));
        // a list stays a list (conj adds at its front)
        let list = decode(&encode(&eval("(conj '(2 1) 3)")).unwrap()).unwrap();
        assert!(matches!(list, Value::List(_)), "{list:?}");
        assert_eq!(ptc_lisp_eval::to_clojure(&list), "(3 2 1)");
    }

    #[test]
    fn deep_values_need_no_recursion() {
        let mut v = Value::Int(1);
        for _ in 0..5_000 {
            v = Value::vector([v]);
        }
        let ops = encode(&v).unwrap();
        assert_eq!(ops.len(), 5_001);
        let text = serde_json::to_string(&ops).unwrap();
        let parsed: Vec<Json> = serde_json::from_str(&text).unwrap();
        let back = decode(&parsed).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn functions_are_not_data() {
        assert_eq!(encode(&eval("(fn [x] x)")), Err(NotData::Function));
        assert_eq!(encode(&eval("(partial + 1)")), Err(NotData::Function));
        // a result cannot hold an endless sequence any more (it is an error), a binding can
        let out = Engine::new(Limits::default()).eval_with("(def f {:f (range)}) 1", &NoTools);
        let held = out.memory.get("f").cloned().unwrap_or_else(|| panic!("{:?}", out.result));
        assert_eq!(encode(&held), Err(NotData::Lazy));
    }

    #[test]
    fn corrupt_operations_are_errors() {
        for ops in [json!([]), json!([["vec", 2]]), json!([["zz"]]), json!([["i", "x"]]), json!([["i", 1], ["i", 2]])] {
            let ops: Vec<Json> = serde_json::from_value(ops).unwrap();
            assert!(decode(&ops).is_err(), "{ops:?}");
        }
    }
}
