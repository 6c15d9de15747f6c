//! clojure.core's item-by-item sequence functions: `map`, `filter`, `remove`, `keep`,
//! `mapcat`, `map-indexed`, `keep-indexed` (and `mapv`, `filterv`); the ones the fuser
//! streams and whose one-argument forms are transducers. What each does with one item is
//! its [`Step`] (`crate::steps`); here a finite collection is run through the step into
//! a vector, a lazy sequence gets the step as a lazy sequence, and the one-argument form
//! is the step as a transducer.

use crate::builtins::context::BuiltinContext;
use crate::builtins::core::sequences::{concat, items};
use crate::builtins::core::transducers::xf_step;
use crate::builtins::{Arity, Builtin, Category, Library, SeqIter, Table, seq_iter};
use crate::error::EvalResult;
use crate::limits::cost;
use crate::steps::{Step, run_into_vector};
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
            .fused(crate::fusion::Step::Mapcat)
            .doc("Concatenation of (f item) for each item.")
            .ex(&[("(mapcat (fn [x] [x x]) [1 2])", "[1 1 2 2]")]),
        Builtin::new("keep-indexed", Exact(2), Sequence, keep_indexed).lazy()
            .fused(crate::fusion::Step::KeepIndexed)
            .doc("Non-nil results of (f index item).")
            .ex(&[("(keep-indexed (fn [i x] (when (odd? i) x)) [:a :b :c])", "[:b]")]),
        Builtin::new("map", AtLeast(1), Sequence, map).transducer(1, map_xf).lazy().fused(crate::fusion::Step::Map).doc("Applies f to each item (to items of several collections in step, stopping at the shortest); returns a vector. (map f) is a transducer; over infinite sequences map is lazy.").ex(&[("(map inc [1 2 3])", "[2 3 4]"), ("(map + [1 2] [10 20 30])", "[11 22]")]),
        Builtin::new("mapv", AtLeast(2), Sequence, map).fused(crate::fusion::Step::Map).doc("Like map (every sequence is an eager vector).").ex(&[("(mapv inc [1 2])", "[2 3]")]),
        Builtin::new("filter", Range(1, 2), Sequence, filter).transducer(1, filter_xf).lazy().fused(crate::fusion::Step::Filter).doc("Items for which (pred item) is truthy.").ex(&[("(filter even? [1 2 3 4])", "[2 4]")]),
        Builtin::new("filterv", Exact(2), Sequence, filter).fused(crate::fusion::Step::Filter).doc("Like filter.").ex(&[("(filterv odd? [1 2 3])", "[1 3]")]),
        Builtin::new("remove", Range(1, 2), Sequence, remove).transducer(1, remove_xf).lazy().fused(crate::fusion::Step::Remove).doc("Items for which (pred item) is falsy.").ex(&[("(remove even? [1 2 3 4])", "[1 3]")]),
        Builtin::new("map-indexed", Range(1, 2), Sequence, map_indexed).transducer(1, map_indexed_xf).lazy().fused(crate::fusion::Step::MapIndexed).doc("Applies (f index item) to each item.").ex(&[("(map-indexed vector [:a :b])", "[[0 :a] [1 :b]]")]),
    ],
};

/// `(f coll)` of a one-collection step: lazy over a lazy sequence, else the step run over
/// the collection into a vector.
fn eager_or_lazy(cx: &mut BuiltinContext, step: Step, coll: &Value) -> EvalResult {
    match crate::lazy::as_lazy(coll) {
        Some(l) => crate::lazy::stepped(step, l),
        None => run_into_vector(cx, step, coll),
    }
}

/// `(keep f)`: the transducer form.
fn keep_xf(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(xf_step(Step::Keep(std::mem::take(&mut a[0]))))
}

fn keep(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    eager_or_lazy(cx, Step::Keep(std::mem::take(&mut a[0])), &a[1])
}

/// `(mapcat f)`: the transducer form.
fn mapcat_xf(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(xf_step(Step::Mapcat(Some(std::mem::take(&mut a[0])))))
}

pub(crate) fn mapcat(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let [f, coll] = a {
        return eager_or_lazy(cx, Step::Mapcat(Some(std::mem::take(f))), coll);
    }
    // several collections: map over them in step, then concatenate
    let mapped = crate::builtins::lookup("map").map(|b| cx.call(b, a)).unwrap_or_else(|| Ok(Value::Nil))?;
    let parts = items(cx, "mapcat", &mapped)?;
    concat(cx, &mut parts.into_iter().collect::<Vec<_>>())
}

fn keep_indexed(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    eager_or_lazy(cx, Step::KeepIndexed { f: std::mem::take(&mut a[0]), i: 0 }, &a[1])
}

/// `(map f)`: the transducer form.
fn map_xf(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(xf_step(Step::Map(std::mem::take(&mut a[0]))))
}

/// Applies `f` to each item (of several collections in step, to the shortest),
/// collecting a vector. Charges fuel per item.
pub(crate) fn map(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut args[0]);
    if args.len() == 2 {
        return eager_or_lazy(cx, Step::Map(f), &args[1]);
    }
    if args[1..].iter().any(|c| crate::lazy::as_lazy(c).is_some()) {
        return crate::lazy::map_mixed(cx, f, &args[1..]);
    }
    let colls: Vec<Value> = args[1..].iter_mut().map(std::mem::take).collect();
    let mut iters: Vec<SeqIter<'_>> = colls.iter().map(|c| seq_iter("map", c)).collect::<EvalResult<_>>()?;
    let mut out = PVector::new();
    loop {
        let mut call: smallvec::SmallVec<[Value; 4]> = smallvec::SmallVec::with_capacity(iters.len());
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
    Ok(xf_step(Step::Filter { pred: std::mem::take(&mut a[0]), keep: true }))
}

/// `(remove pred)`: the transducer form.
fn remove_xf(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(xf_step(Step::Filter { pred: std::mem::take(&mut a[0]), keep: false }))
}

fn filter(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    eager_or_lazy(cx, Step::Filter { pred: std::mem::take(&mut args[0]), keep: true }, &args[1])
}

fn remove(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    eager_or_lazy(cx, Step::Filter { pred: std::mem::take(&mut args[0]), keep: false }, &args[1])
}

/// `(map-indexed f)`: the transducer form.
fn map_indexed_xf(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(xf_step(Step::MapIndexed { f: std::mem::take(&mut a[0]), i: 0 }))
}

pub(crate) fn map_indexed(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    eager_or_lazy(cx, Step::MapIndexed { f: std::mem::take(&mut args[0]), i: 0 }, &args[1])
}
