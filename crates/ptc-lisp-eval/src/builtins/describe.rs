//! `describe`: a bounded summary of a value's shape, for exploring large tool results
//! without printing them.

use std::collections::BTreeMap;

use super::{Arity, Builtin, Category};
use crate::builtins::context::BuiltinContext;
use crate::error::EvalResult;
use crate::printer::{PrintOptions, to_clojure_with};
use crate::value::Value;

/// Items inspected at the root; keys reported per map; characters per example.
const MAX_ITEMS: usize = 1_000;
const MAX_KEYS: usize = 100;
const EXAMPLE_CHARS: usize = 120;

/// The describe builtin.
pub static BUILTINS: &[Builtin] = &[Builtin::new("describe", Arity::Range(1, 2), Category::Core, describe)
    .ext()
    .doc("Bounded summary of a value: type, count, key types of maps (also across a vector of maps), a few short examples. Options {:sample 1..3}.")
    .ex(&[("(describe [{:id 1 :name \"a\"} {:id 2}])", "{:count 2 :examples [\"{:id 1 :name \\\"a\\\"}\" \"{:id 2}\"] :keys {:id :number :name :string} :type :vector}")])];

fn type_kw(v: &Value) -> Value {
    Value::kw(match v {
        Value::Nil => "nil",
        Value::Bool(_) => "boolean",
        Value::Int(_) | Value::Float(_) => "number",
        Value::Str(_) => "string",
        Value::Keyword(_) => "keyword",
        Value::Vector(_) => "vector",
        Value::List(_) => "list",
        Value::Map(_) => "map",
        Value::Set(_) => "set",
        Value::Regex(_) => "regex",
        Value::Func(_) => "function",
        Value::Var(_) => "var",
        Value::Symbol(_) => "symbol",
    })
}

fn example(v: &Value) -> Value {
    let opts = PrintOptions { limit: Some(5), printable_limit: Some(40), max_bytes: EXAMPLE_CHARS };
    Value::str(to_clojure_with(v, &opts).0)
}

fn key_types<'a>(maps: impl Iterator<Item = &'a Value>, out: &mut BTreeMap<Value, Value>) -> bool {
    let mut capped = false;
    for m in maps {
        if let Value::Map(m) = m {
            for (k, v) in m.iter() {
                if out.len() >= MAX_KEYS && !out.contains_key(k) {
                    capped = true;
                    continue;
                }
                let slot = out.entry(k.clone()).or_insert(Value::Nil);
                if slot.is_nil() && !v.is_nil() {
                    *slot = type_kw(v);
                } else if slot.is_nil() {
                    *slot = Value::kw("nil");
                }
            }
        }
    }
    capped
}

fn describe(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let sample = match a.get(1) {
        Some(Value::Map(o)) => match o.get(&Value::kw("sample")) {
            Some(Value::Int(n)) => (*n).clamp(1, 3) as usize,
            _ => 2,
        },
        _ => 2,
    };
    let v = &a[0];
    let mut out: Vec<(Value, Value)> = vec![(Value::kw("type"), type_kw(v))];
    match v {
        Value::Vector(_) | Value::List(_) | Value::Set(_) => {
            let items: Vec<Value> = super::seq_iter("describe", v)?.take(MAX_ITEMS).collect();
            cx.tick(items.len() as u64)?;
            let total = super::seq_len(v).unwrap_or(0);
            out.push((Value::kw("count"), Value::Int(total as i64)));
            let mut types: BTreeMap<Value, i64> = BTreeMap::new();
            for i in &items {
                *types.entry(type_kw(i)).or_insert(0) += 1;
            }
            if types.len() > 1 {
                out.push((Value::kw("types"), Value::map(types.into_iter().map(|(k, n)| (k, Value::Int(n))))));
            }
            let mut keys = BTreeMap::new();
            let capped = key_types(items.iter(), &mut keys);
            if !keys.is_empty() {
                out.push((Value::kw("keys"), Value::map(keys)));
            }
            out.push((Value::kw("examples"), Value::vector(items.iter().take(sample).map(example))));
            if capped || total > MAX_ITEMS {
                out.push((Value::kw("truncated"), Value::Bool(true)));
            }
        }
        Value::Map(m) => {
            out.push((Value::kw("count"), Value::Int(m.len() as i64)));
            let mut keys = BTreeMap::new();
            let capped = key_types(std::iter::once(v), &mut keys);
            out.push((Value::kw("keys"), Value::map(keys)));
            if capped {
                out.push((Value::kw("truncated"), Value::Bool(true)));
            }
        }
        Value::Str(s) => {
            out.push((Value::kw("count"), Value::Int(s.chars().count() as i64)));
            out.push((Value::kw("example"), example(v)));
        }
        Value::Nil => {}
        other => out.push((Value::kw("value"), example(other))),
    }
    Ok(Value::map(out))
}
