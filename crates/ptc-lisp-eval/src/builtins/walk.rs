//! clojure.walk (`walk/`): `walk`, `postwalk`, `prewalk`, `keywordize-keys`...

use std::sync::Arc;

use crate::builtins::context::BuiltinContext;
use crate::builtins::{Arity, Builtin, Category, Library, Table, expected};
use crate::error::EvalResult;
use crate::limits::cost;
use crate::value::{PMap, PSet, PVector, Value};

use Arity::*;
use Category::Walk;

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Walk,
    builtins: &[
        Builtin::new("walk", Exact(3), Walk, walk)
            .doc("(walk inner outer form): inner on each child, outer on the rebuilt form.")
            .ex(&[("(walk inc identity [1 2])", "[2 3]")]),
        Builtin::new("postwalk", Exact(2), Walk, postwalk)
            .doc("Applies f to every node, children first.")
            .ex(&[("(postwalk #(if (number? %) (inc %) %) [1 [2]])", "[2 [3]]")]),
        Builtin::new("prewalk", Exact(2), Walk, prewalk)
            .doc("Applies f to every node, parent first.")
            .ex(&[("(prewalk #(if (number? %) (inc %) %) [1 [2]])", "[2 [3]]")]),
        Builtin::new("keywordize-keys", Exact(1), Walk, keywordize_keys)
            .doc("String map keys become keywords, recursively.")
            .ex(&[("(keywordize-keys {\"a\" {\"b\" 1}})", "{:a {:b 1}}")]),
        Builtin::new("stringify-keys", Exact(1), Walk, stringify_keys)
            .doc("Keyword map keys become strings, recursively.")
            .ex(&[("(stringify-keys {:a 1})", "{\"a\" 1}")]),
        Builtin::new("prewalk-replace", Exact(2), Walk, prewalk_replace)
            .lists_aliases()
            .alias(&["postwalk-replace"])
            .doc("Replaces every node found as a key of the map by its value.")
            .ex(&[("(prewalk-replace {:a :b} [:a [:a]])", "[:b [:b]]")]),
    ],
};

fn rebuild(
    cx: &mut BuiltinContext,
    form: &Value,
    inner: &mut dyn FnMut(&mut BuiltinContext, Value) -> EvalResult,
) -> EvalResult {
    cx.tick(1)?;
    if let Value::Vector(c) | Value::List(c) = form {
        cx.check_stack()?;
        cx.charge(cost::items(c.len() as u64))?;
    } else if let Value::Set(c) = form {
        cx.check_stack()?;
        cx.charge(cost::items(c.len() as u64))?;
    } else if let Value::Map(c) = form {
        cx.check_stack()?;
        cx.charge(cost::entries(c.len() as u64))?;
    }
    Ok(match form {
        Value::Vector(items) => {
            let mut out = PVector::new();
            for x in items.iter() {
                out.push_back(inner(cx, x.clone())?);
            }
            Value::from_pvec(out)
        }
        Value::List(items) => {
            let mut out = PVector::new();
            for x in items.iter() {
                out.push_back(inner(cx, x.clone())?);
            }
            Value::List(Arc::new(out))
        }
        Value::Set(items) => {
            let mut out = PSet::new();
            for x in items.iter() {
                out.insert(inner(cx, x.clone())?);
            }
            Value::Set(Arc::new(out))
        }
        Value::Map(m) => {
            let mut out = PMap::new();
            for (k, v) in m.iter() {
                let entry = inner(cx, Value::vector([k.clone(), v.clone()]))?;
                match entry {
                    Value::Vector(e) if e.len() == 2 => out.insert(e[0].clone(), e[1].clone()),
                    other => return expected("walk", "map entries to stay [k v] pairs", &other),
                }
            }
            Value::Map(Arc::new(out))
        }
        other => other.clone(),
    })
}

fn walk(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (inner, outer) = (a[0].clone(), a[1].clone());
    let rebuilt = rebuild(cx, &a[2], &mut |cx, x| cx.apply(&inner, &mut [x]))?;
    cx.apply(&outer, &mut [rebuilt])
}

fn postwalk_with(
    cx: &mut BuiltinContext,
    f: &mut dyn FnMut(&mut BuiltinContext, Value) -> EvalResult,
    form: Value,
) -> EvalResult {
    let rebuilt = rebuild(cx, &form, &mut |cx, x| postwalk_with(cx, f, x))?;
    f(cx, rebuilt)
}

fn prewalk_with(
    cx: &mut BuiltinContext,
    f: &mut dyn FnMut(&mut BuiltinContext, Value) -> EvalResult,
    form: Value,
) -> EvalResult {
    let replaced = f(cx, form)?;
    rebuild(cx, &replaced, &mut |cx, x| prewalk_with(cx, f, x))
}

fn postwalk(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let fv = a[0].clone();
    postwalk_with(cx, &mut |cx, x| cx.apply(&fv, &mut [x]), std::mem::take(&mut a[1]))
}

fn prewalk(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let fv = a[0].clone();
    prewalk_with(cx, &mut |cx, x| cx.apply(&fv, &mut [x]), std::mem::take(&mut a[1]))
}

fn rekey(cx: &mut BuiltinContext, form: Value, to_keyword: bool) -> EvalResult {
    postwalk_with(
        cx,
        &mut |_, x| {
            Ok(match x {
                Value::Map(m) => Value::map(m.iter().map(|(k, v)| {
                    let k = match (k, to_keyword) {
                        (Value::Str(s), true) => Value::Keyword(s.clone()),
                        (Value::Keyword(s), false) => Value::Str(s.clone()),
                        (other, _) => other.clone(),
                    };
                    (k, v.clone())
                })),
                other => other,
            })
        },
        form,
    )
}

fn keywordize_keys(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    rekey(cx, std::mem::take(&mut a[0]), true)
}

fn stringify_keys(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    rekey(cx, std::mem::take(&mut a[0]), false)
}

fn prewalk_replace(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let smap = match &a[0] {
        Value::Map(m) => m.clone(),
        other => return expected("prewalk-replace", "a replacement map", other),
    };
    prewalk_with(cx, &mut |_, x| Ok(smap.get(&x).cloned().unwrap_or(x)), std::mem::take(&mut a[1]))
}
