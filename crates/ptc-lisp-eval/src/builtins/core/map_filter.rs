//! clojure.core's item-by-item sequence functions: `map`, `filter`, `remove`, `keep`,
//! `mapcat`, `map-indexed`, `keep-indexed` (and `mapv`, `filterv`); the ones the fuser
//! streams and whose one-argument forms are transducers.

use crate::builtins::context::BuiltinContext;
use crate::builtins::core::sequences::{concat, items, out_vec, vec_out};
use crate::builtins::{Arity, Builtin, Category, Library, SeqIter, Table, seq_iter, seq_len};
use crate::error::EvalResult;
use crate::function::{Function, Held};
use crate::interp::get_in_value;
use crate::limits::cost;
use crate::value::{PVector, Value};

use Arity::*;
use Category::Sequence;

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    builtins: &[
    Builtin::new("keep", Range(1, 2), Sequence, keep).transducer(1, keep_xf).lazy()
        .fused(crate::fusion::Step::Keep)
        .doc("Non-nil results of (f item).")
        .ex(&[("(keep :a [{:a 1} {:b 2}])", "[1]")]),
    Builtin::new("mapcat", AtLeast(1), Sequence, mapcat).transducer(1, mapcat_xf).lazy()
        .doc("Concatenation of (f item) for each item.")
        .ex(&[("(mapcat (fn [x] [x x]) [1 2])", "[1 1 2 2]")]),
    Builtin::new("keep-indexed", Exact(2), Sequence, keep_indexed).lazy()
        .doc("Non-nil results of (f index item).")
        .ex(&[("(keep-indexed (fn [i x] (when (odd? i) x)) [:a :b :c])", "[:b]")]),
    Builtin::new("map", AtLeast(1), Sequence, map).transducer(1, map_xf).lazy().fused(crate::fusion::Step::Map).doc("Applies f to each item (to items of several collections in step, stopping at the shortest); returns a vector. (map f) is a transducer; over infinite sequences map is lazy.").ex(&[("(map inc [1 2 3])", "[2 3 4]"), ("(map + [1 2] [10 20 30])", "[11 22]")]),
    Builtin::new("mapv", AtLeast(2), Sequence, map).fused(crate::fusion::Step::Map).doc("Like map (every sequence is an eager vector).").ex(&[("(mapv inc [1 2])", "[2 3]")]),
    Builtin::new("filter", Range(1, 2), Sequence, filter).transducer(1, filter_xf).lazy().fused(crate::fusion::Step::Filter).doc("Items for which (pred item) is truthy.").ex(&[("(filter even? [1 2 3 4])", "[2 4]")]),
    Builtin::new("filterv", Exact(2), Sequence, filter).fused(crate::fusion::Step::Filter).doc("Like filter.").ex(&[("(filterv odd? [1 2 3])", "[1 3]")]),
    Builtin::new("remove", Range(1, 2), Sequence, remove).transducer(1, remove_xf).lazy().fused(crate::fusion::Step::Remove).doc("Items for which (pred item) is falsy.").ex(&[("(remove even? [1 2 3 4])", "[1 3]")]),
    Builtin::new("map-indexed", Range(1, 2), Sequence, map_indexed).transducer(1, map_indexed_xf).lazy().doc("Applies (f index item) to each item.").ex(&[("(map-indexed vector [:a :b])", "[[0 :a] [1 :b]]")]),
    ],
};

/// `(keep f)`: the transducer form.
fn keep_xf(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(crate::builtins::core::transducers::xf_keep(std::mem::take(&mut a[0])))
}

fn keep(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut a[0]);
    if let Some(l) = crate::lazy::as_lazy(&a[1]) {
        return crate::lazy::keep(f, l);
    }
    let mut out = Vec::new();
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for item in seq_iter("keep", &coll)? {
        cx.tick(1)?;
        let r = cx.apply(&f, &mut [item])?;
        if !r.is_nil() {
            out.push(r);
        }
    }
    vec_out(cx, out)
}

/// `(mapcat f)`: the transducer form.
fn mapcat_xf(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(crate::builtins::core::transducers::xf_mapcat(std::mem::take(&mut a[0])))
}

pub(crate) fn mapcat(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let [f, coll] = a
        && let Some(l) = crate::lazy::as_lazy(coll)
    {
        return crate::lazy::mapcat(f.clone(), l);
    }
    let mapped = crate::builtins::lookup("map").map(|b| cx.call(b, a)).unwrap_or_else(|| Ok(Value::Nil))?;
    let parts = items(cx, "mapcat", &mapped)?;
    concat(cx, &mut parts.into_iter().collect::<Vec<_>>())
}

fn keep_indexed(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let Some(l) = crate::lazy::as_lazy(&a[1]) {
        // over an infinite sequence: keep the non-nil results of a lazy map-indexed
        let indexed = crate::lazy::map_indexed(a[0].clone(), l)?;
        let same =
            Function::native("identity", Held::values(Vec::new()), |_, _, call| Ok(std::mem::take(&mut call[0])));
        return match crate::lazy::as_lazy(&indexed) {
            Some(i) => crate::lazy::keep(same, i),
            None => Ok(indexed),
        };
    }
    let f = a[0].clone();
    let mut out = Vec::new();
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for (i, item) in seq_iter("keep-indexed", &coll)?.enumerate() {
        cx.tick(1)?;
        let r = cx.apply(&f, &mut [Value::Int(i as i64), item])?;
        if !r.is_nil() {
            cx.charge(crate::builtins::kept_item_cost(&coll))?;
            out.push(r);
        }
    }
    out_vec(cx, out)
}

/// `(map f)`: the transducer form.
fn map_xf(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(crate::builtins::core::transducers::xf_map(std::mem::take(&mut a[0])))
}

/// Applies `f` to each item, collecting a vector. Charges fuel per item.
pub(crate) fn map(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut args[0]);
    if args[1..].iter().any(|c| crate::lazy::as_lazy(c).is_some()) {
        return crate::lazy::map_mixed(cx, f, &args[1..]);
    }
    if args.len() == 2 {
        let coll = std::mem::take(&mut args[1]);
        let mut out = PVector::new();
        let n = seq_len(&coll).unwrap_or(0) as u64;
        cx.charge(cost::items(n))?;
        // (map :key coll): look up by reference, no call
        if let (Value::Keyword(_), Value::Vector(items) | Value::List(items)) = (&f, &coll) {
            for item in items.iter() {
                cx.tick(1)?;
                out.push_back(match item {
                    Value::Map(m) => crate::interp::flex_get(m, &f).cloned().unwrap_or(Value::Nil),
                    other => get_in_value(other, &f).unwrap_or(Value::Nil),
                });
            }
            return Ok(Value::from_pvec(out));
        }
        for item in seq_iter("map", &coll)? {
            cx.tick(1)?;
            out.push_back(cx.apply(&f, &mut [item])?);
        }
        return Ok(Value::from_pvec(out));
    }
    let colls: Vec<Value> = args[1..].iter_mut().map(std::mem::take).collect();
    let mut iters: Vec<SeqIter<'_>> = colls.iter().map(|c| seq_iter("map", c)).collect::<EvalResult<_>>()?;
    let mut out = PVector::new();
    loop {
        let mut call: Vec<Value> = Vec::with_capacity(iters.len());
        for it in iters.iter_mut() {
            match it.next() {
                Some(v) => call.push(v),
                None => {
                    cx.charge(cost::HEADER)?;
                    return Ok(Value::from_pvec(out));
                }
            }
        }
        cx.tick(1)?;
        // charged before it is kept: the collections may be long strings read char by char
        cx.charge(cost::ELEM)?;
        out.push_back(cx.apply(&f, &mut call)?);
    }
}

/// `(filter pred)`: the transducer form.
fn filter_xf(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(crate::builtins::core::transducers::xf_filter(std::mem::take(&mut a[0]), true))
}

/// `(remove pred)`: the transducer form.
fn remove_xf(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(crate::builtins::core::transducers::xf_filter(std::mem::take(&mut a[0]), false))
}

fn filter_impl(cx: &mut BuiltinContext, args: &mut [Value], keep: bool, name: &str) -> EvalResult {
    if let Some(l) = crate::lazy::as_lazy(&args[1]) {
        return crate::lazy::filter(args[0].clone(), keep, l);
    }
    let f = std::mem::take(&mut args[0]);
    let coll = std::mem::take(&mut args[1]);
    let mut out = PVector::new();
    if let Value::Vector(items) | Value::List(items) = &coll {
        // by reference: one clone for the call, one more only for kept items
        for item in items.iter() {
            cx.tick(1)?;
            if cx.apply(&f, &mut [item.clone()])?.truthy() == keep {
                out.push_back(item.clone());
            }
        }
        cx.charge(cost::items(out.len() as u64))?;
    } else {
        cx.charge(cost::HEADER)?;
        for item in seq_iter(name, &coll)? {
            cx.tick(1)?;
            if cx.apply(&f, &mut [item.clone()])?.truthy() == keep {
                // charged before it is kept: a long string's characters are built one by one
                cx.charge(cost::ELEM)?;
                out.push_back(item);
            }
        }
    }
    Ok(Value::from_pvec(out))
}

fn filter(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    filter_impl(cx, args, true, "filter")
}

fn remove(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    filter_impl(cx, args, false, "remove")
}

/// `(map-indexed f)`: the transducer form.
fn map_indexed_xf(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(crate::builtins::core::transducers::xf_map_indexed(std::mem::take(&mut a[0])))
}

pub(crate) fn map_indexed(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut args[0]);
    if let Some(l) = crate::lazy::as_lazy(&args[1]) {
        return crate::lazy::map_indexed(f, l);
    }
    let coll = std::mem::take(&mut args[1]);
    let mut out = PVector::new();
    for (i, item) in seq_iter("map-indexed", &coll)?.enumerate() {
        cx.tick(1)?;
        cx.charge(crate::builtins::kept_item_cost(&coll))?;
        out.push_back(cx.apply(&f, &mut [Value::Int(i as i64), item])?);
    }
    cx.charge(cost::items(out.len() as u64))?;
    Ok(Value::from_pvec(out))
}
