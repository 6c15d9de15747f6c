//! The JSON functions (`json/parse-string`, `json/generate-string`, `json/parse-lines`).

use std::sync::Arc;

use crate::builtins::context::BuiltinContext;
use crate::builtins::{Arity, Builtin, Category, Library, Table, expected, str_arg};
use crate::error::EvalResult;
use crate::limits::cost;
use crate::value::Value;

use Arity::*;
use Category::Json;

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    builtins: &[
    Builtin::new("json/parse-string", Range(1, 2), Json, json_parse)
        .alias(&["json/read-str"])
        .doc("Value from JSON text (string keys; with true as second argument keyword keys, with a fn its result); nil when the text is not JSON (DIV-23).")
        .ex(&[
            ("(json/parse-string \"{\\\"a\\\": [1, 2]}\")", "{\"a\" [1 2]}"),
            ("(json/parse-string \"{\\\"a\\\": 1}\" true)", "{:a 1}"),
        ]),
    Builtin::new("json/generate-string", Exact(1), Json, json_generate)
        .alias(&["json/write-str"])
        .doc("JSON text of a value (keywords become strings); nil when it has no JSON form (DIV-24).")
        .ex(&[("(json/generate-string {:a [1 nil]})", "\"{\\\"a\\\":[1,null]}\"")]),
    Builtin::new("json/parse-lines", Exact(1), Json, json_parse_lines)
        .ext()
        .doc("One value per non-blank line of JSON Lines text (nil for a bad line).")
        .ex(&[("(json/parse-lines \"1\\n\\n[2]\")", "[1 [2]]")]),
    ],
};

/// Re-keys parsed JSON objects: `true` makes keyword keys, a fn maps each key string.
fn rekey(cx: &mut BuiltinContext, v: Value, key_fn: &Value) -> EvalResult {
    cx.tick(1)?;
    Ok(match v {
        Value::Map(m) => {
            let mut out = crate::value::PMap::new();
            for (k, x) in m.iter() {
                let k = match (key_fn, k) {
                    (Value::Bool(true), Value::Str(s)) if !s.is_empty() && !s.contains(['/', ' ']) => {
                        Value::Keyword(s.clone())
                    }
                    (Value::Func(_), k) => cx.apply(key_fn, &mut [k.clone()])?,
                    (_, k) => k.clone(),
                };
                out.insert(k, rekey(cx, x.clone(), key_fn)?);
            }
            Value::Map(Arc::new(out))
        }
        Value::Vector(xs) | Value::List(xs) => {
            let mut out = Vec::with_capacity(xs.len());
            for x in xs.iter() {
                out.push(rekey(cx, x.clone(), key_fn)?);
            }
            Value::vector(out)
        }
        other => other,
    })
}

/// Parses JSON text under the run's memory budget and deadline; invalid JSON is nil.
fn parse_json_metered(cx: &mut BuiltinContext, text: &str) -> EvalResult {
    let left = cx.heap_left();
    let mut pb = cx.json_budget(left);
    let parsed = crate::json::parse_with(text, &mut pb);
    let used = left - pb.bytes_left;
    cx.charge(used)?;
    match parsed {
        Ok(v) => Ok(v),
        Err(crate::json::ParseError::Syntax(_)) => Ok(Value::Nil),
        Err(crate::json::ParseError::TooLarge) => {
            // charge past the limit so the error names it
            cx.charge(left.saturating_add(1)).map(|()| Value::Nil)
        }
        Err(crate::json::ParseError::OutOfTime) => cx.check_time().map(|()| Value::Nil),
    }
}

fn json_parse(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let Value::Str(s) = &a[0] else { return Ok(Value::Nil) };
    let s = s.clone();
    let parsed = parse_json_metered(cx, &s)?;
    match a.get(1) {
        Some(k @ (Value::Bool(true) | Value::Func(_))) => {
            let k = k.clone();
            rekey(cx, parsed, &k)
        }
        Some(Value::Nil | Value::Bool(false)) | None => Ok(parsed),
        Some(other) => expected("json/parse-string", "true (keyword keys) or a fn of each key", other),
    }
}

fn json_generate(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let left = cx.heap_left();
    let cap = usize::try_from(left).unwrap_or(usize::MAX);
    match crate::json::generate_bounded(&a[0], cap) {
        Ok(s) => {
            cx.charge(s.len() as u64 + cost::HEADER)?;
            Ok(Value::str(s))
        }
        Err(e) if e.0.contains("larger than") => cx.charge(left.saturating_add(1)).map(|()| Value::Nil),
        // no JSON form (a function, NaN...) is nil; a walk stopped by the deadline raises
        Err(_) => cx.check_time().map(|()| Value::Nil),
    }
}

fn json_parse_lines(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = str_arg("json/parse-lines", &a[0])?.to_string();
    cx.charge(cost::HEADER)?;
    let mut out = Vec::new();
    for line in s.lines().filter(|l| !l.trim().is_empty()) {
        cx.tick(1)?;
        cx.charge(cost::ELEM)?;
        out.push(parse_json_metered(cx, line)?);
    }
    Ok(Value::vector(out))
}
