//! The key rules at the tool boundary, in one place.
//!
//! Programs write Clojure-style names (`:user-id`, `tool/search-orders`); tools and JSON
//! speak `snake_case` strings. Going out, map keys become strings with `-` turned into
//! `_` and keyword values become plain strings ([`to_tool_keys`]); coming back in for Lisp
//! code, keys become keywords with `_` turned into `-` ([`to_lisp_keys`]). A tool named
//! `search_orders` is found as `tool/search-orders` too ([`resolve_tool_name`]).

use std::sync::Arc;

use crate::builtins::brief;
use crate::error::{ErrorKind, EvalResult, err};
use crate::value::{PMap, Value};

/// A Lisp-style name as tools see it: `-` becomes `_`.
pub fn tool_key(name: &str) -> String {
    name.replace('-', "_")
}

/// A tool-style name as Lisp code reads it: `_` becomes `-`.
pub fn lisp_key(name: &str) -> String {
    name.replace('_', "-")
}

/// The declared tool a program's `tool/<name>` refers to: the exact name, else the name
/// with `-` turned into `_`.
pub fn resolve_tool_name<'a, I>(name: &str, declared: I) -> Option<String>
where
    I: IntoIterator<Item = &'a String> + Clone,
{
    if declared.clone().into_iter().any(|d| d == name) {
        return Some(name.to_string());
    }
    let normalized = tool_key(name);
    declared.into_iter().any(|d| *d == normalized).then_some(normalized)
}

/// Map keys become strings with `-` turned into `_`, keyword values become plain
/// strings, sets become vectors, recursively (what tools receive).
pub fn to_tool_keys(v: &Value) -> Value {
    match v {
        Value::Map(m) => {
            let mut out = PMap::new();
            for (k, val) in m.iter() {
                let key = match k {
                    Value::Keyword(s) | Value::Str(s) | Value::Symbol(s) => tool_key(s),
                    other => crate::printer::to_clojure(other),
                };
                out.insert(Value::str(key), to_tool_keys(val));
            }
            Value::Map(Arc::new(out))
        }
        Value::Vector(items) | Value::List(items) => Value::vector(items.iter().map(to_tool_keys)),
        Value::Set(items) => Value::vector(items.iter().map(to_tool_keys)),
        Value::Keyword(k) => Value::Str(k.clone()),
        other => other.clone(),
    }
}

/// Map keys become keywords with `_` turned into `-`, recursively (what Lisp code reads).
pub fn to_lisp_keys(v: &Value) -> Value {
    match v {
        Value::Map(m) => {
            let mut out = PMap::new();
            for (k, val) in m.iter() {
                let key = match k {
                    Value::Str(s) | Value::Keyword(s) => Value::kw(lisp_key(s)),
                    other => other.clone(),
                };
                out.insert(key, to_lisp_keys(val));
            }
            Value::Map(Arc::new(out))
        }
        Value::Vector(items) => Value::vector(items.iter().map(to_lisp_keys)),
        Value::List(items) => Value::list(items.iter().map(to_lisp_keys)),
        other => other.clone(),
    }
}

/// `(tool/call 'server/tool {...})` / `(tool/call "server/tool")`: the aggregator's
/// reference shape, rewritten to `{:server "server" :tool "tool" :args {...}}`. Only a
/// first argument naming `server/tool` qualifies, which no other shape accepts.
fn upstream_ref_shape(args: &mut [Value]) -> Option<Value> {
    let (reference, rest) = args.split_first_mut()?;
    let (Value::Symbol(r) | Value::Str(r)) = reference else { return None };
    let (server, tool) = r.split_once('/')?;
    if server.is_empty() || tool.is_empty() {
        return None;
    }
    let call_args = match rest {
        [] => Value::empty_map(),
        [m @ (Value::Map(_) | Value::Nil)] => std::mem::take(m),
        _ => return None,
    };
    Some(Value::map([
        (Value::kw("server"), Value::str(server)),
        (Value::kw("tool"), Value::str(tool)),
        (Value::kw("args"), call_args),
    ]))
}

/// Converts call arguments to the single string-keyed map tools receive.
pub(crate) fn tool_args(name: &str, args: &mut [Value]) -> EvalResult {
    if name == "call"
        && let Some(shape) = upstream_ref_shape(args)
    {
        return Ok(to_tool_keys(&shape));
    }
    let map = match args {
        [] => Value::empty_map(),
        [m @ Value::Map(_)] => std::mem::take(m),
        [Value::Nil] => Value::empty_map(),
        [single] => {
            let single = &*single;
            let hint = match single {
                Value::Str(s) => format!(
                    " Got string {} — try (tool/{name} {{:url \"{}\"}})",
                    brief(single),
                    s.chars().take(20).collect::<String>()
                ),
                other => format!(" Got {} — wrap it in {{:key value}}", brief(other)),
            };
            return err(
                ErrorKind::InvalidToolArgs,
                format!(
                    "Tool calls require named arguments. Use (tool/{name} {{:key value}}), not positional args.{hint}"
                ),
            );
        }
        many if many.len() % 2 == 0 && many.iter().step_by(2).all(|k| matches!(k, Value::Keyword(_))) => {
            let mut m = PMap::new();
            for pair in many.chunks_mut(2) {
                let k = std::mem::take(&mut pair[0]);
                let v = std::mem::take(&mut pair[1]);
                m.insert(k, v);
            }
            Value::Map(Arc::new(m))
        }
        _ => {
            return err(
                ErrorKind::InvalidToolArgs,
                format!(
                    "Tool calls require named arguments. Use (tool/{name} {{:key value}}) or (tool/{name} :key value), not positional args."
                ),
            );
        }
    };
    Ok(to_tool_keys(&map))
}
