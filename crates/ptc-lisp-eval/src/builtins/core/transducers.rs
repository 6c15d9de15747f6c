//! clojure.core's transducers and early reduction: `transduce`, `sequence`, `eduction`,
//! `completing`, `cat`, `reduced`..., and the one-argument transducer forms: each is a
//! sequence step of `crate::steps` made a transducer by [`xf_step`].

use std::sync::{Arc, Mutex};

use crate::builtins::context::BuiltinContext;
use crate::builtins::{Arity, Builtin, Category, Library, Table, expected, seq_iter};
use crate::error::{ErrorKind, EvalResult, err};
use crate::function::{Function, Held};
use crate::lazy::{self, Items};
use crate::steps::{Fed, Step};
use crate::value::{PVector, Value};

use Arity::*;
use Category::{Functional, Sequence};

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    builtins: &[
        Builtin::new("reduced", Exact(1), Functional, reduced)
            .doc("Wraps a value so reduce (or a transduction) stops and returns it.")
            .ex(&[("(reduce (fn [a x] (if (> a 5) (reduced a) (+ a x))) (range 10))", "6")]),
        Builtin::new("reduced?", Exact(1), Functional, is_reduced)
            .doc("True for a (reduced x) value.")
            .ex(&[("(reduced? (reduced 1))", "true")])
            .lazy(),
        Builtin::new("unreduced", Exact(1), Functional, unreduced_fn)
            .doc("The value inside a (reduced x), or x itself.")
            .ex(&[("(unreduced (reduced 1))", "1")]),
        Builtin::new("ensure-reduced", Exact(1), Functional, ensure_reduced_fn)
            .doc("x wrapped as (reduced x) unless it already is.")
            .ex(&[("(reduced? (ensure-reduced 1))", "true")]),
        Builtin::new("transduce", Range(3, 4), Sequence, transduce)
            .lazy()
            .doc(
                "(transduce xform f init? coll): reduces coll with (xform f), then calls (f result); init defaults to (f).",
            )
            .ex(&[("(transduce (map inc) + [1 2 3])", "9"), ("(transduce (filter odd?) + 10 [1 2 3])", "14")]),
        Builtin::new("sequence", Range(1, 2), Sequence, sequence)
            .lazy()
            .doc("(sequence coll) as a vector; (sequence xform coll) applies a transducer (lazily over a lazy sequence).")
            .ex(&[("(sequence (comp (map inc) (filter even?)) [1 2 3])", "[2 4]")]),
        Builtin::new("eduction", AtLeast(1), Sequence, eduction)
            .doc("(eduction xform* coll): coll through the transducers, as a vector.")
            .ex(&[("(eduction (map inc) (take 2) [1 2 3])", "[2 3]")]),
        Builtin::new("completing", Range(1, 2), Functional, completing)
            .doc("(completing f) or (completing f cf): f with a one-argument completion (identity, or cf).")
            .ex(&[("(transduce (map inc) (completing +) 0 [1 2])", "5")]),
        Builtin::new("cat", Exact(1), Functional, cat).transducer_itself()
            .doc("The transducer that concatenates each item's contents.")
            .ex(&[("(into [] cat [[1 2] [3]])", "[1 2 3]")]),
    ],
};

/// `(reduced x)`.
pub(crate) fn make_reduced(x: Value) -> Value {
    Value::Reduced(Arc::new(crate::value::Reduced::new(x)))
}

/// The value inside a `reduced`, if `v` is one.
#[inline]
pub(crate) fn reduced_value(v: &Value) -> Option<&Value> {
    match v {
        Value::Reduced(r) => Some(r.value()),
        _ => None,
    }
}

fn unreduced(v: Value) -> Value {
    match reduced_value(&v) {
        Some(x) => x.clone(),
        None => v,
    }
}

fn ensure_reduced(v: Value) -> Value {
    if reduced_value(&v).is_some() { v } else { make_reduced(v) }
}

fn reduced(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(make_reduced(std::mem::take(&mut a[0])))
}

fn is_reduced(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(reduced_value(&a[0]).is_some()))
}

fn unreduced_fn(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(unreduced(std::mem::take(&mut a[0])))
}

fn ensure_reduced_fn(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(ensure_reduced(std::mem::take(&mut a[0])))
}

/// Reduces `coll` (finite or infinite) with `f` from `acc`, stopping at a `reduced`.
pub(crate) fn reduce_items(cx: &mut BuiltinContext, f: &Value, acc: Value, mut coll: Value, fname: &str) -> EvalResult {
    // a lazy sequence handed over whole: read without caching when nobody else holds it
    let items = match lazy::take_lazy(&mut coll) {
        Some(l) => Items::Lazy(lazy::Cursor::owned(l)),
        None => Items::of(fname, &coll)?,
    };
    reduce_rest(cx, f, acc, items)
}

/// `(reduce f coll)` of a finite lazy sequence handed over whole: its first item is the
/// start, `(f)` when it has none, and the rest streams as in [`reduce_items`] (nothing is
/// kept when nobody else holds the sequence, so `(reduce + (range 3000000))` builds no
/// vector of three million numbers).
pub(crate) fn reduce_lazy_from_first(cx: &mut BuiltinContext, f: &Value, seq: Arc<lazy::LazySeq>) -> EvalResult {
    let mut items = Items::Lazy(lazy::Cursor::owned(seq));
    match items.next(cx)? {
        Some(first) => reduce_rest(cx, f, first, items),
        None => cx.apply(f, &mut []),
    }
}

/// Folds what is left of `items` into `acc` with `f`, stopping at a `(reduced x)`.
fn reduce_rest(cx: &mut BuiltinContext, f: &Value, mut acc: Value, mut items: Items) -> EvalResult {
    while let Some(x) = items.next(cx)? {
        cx.tick(1)?;
        acc = cx.apply(f, &mut [acc, x])?;
        if let Some(v) = reduced_value(&acc) {
            return Ok(v.clone());
        }
    }
    Ok(acc)
}

/// The reducing function of `into`: conj, with an identity completion.
fn conj_rf() -> Value {
    Function::native("conj", Held::none(), |cx, _, args| match args {
        [] => Ok(Value::vector([])),
        [acc] => Ok(std::mem::take(acc)),
        [acc, x] => crate::builtins::core::collections::conj1(cx, std::mem::take(acc), std::mem::take(x)),
        _ => err(ErrorKind::ArityError, "conj takes a collection and an item"),
    })
}

/// `(into to xform from)`.
pub(crate) fn into_with(cx: &mut BuiltinContext, to: Value, xform: &Value, from: &Value) -> EvalResult {
    // (into nil ...) conjs onto nil, which builds a list (items end up reversed)
    let to = if to.is_nil() { Value::empty_list() } else { to };
    let xrf = apply_xform(cx, xform, conj_rf())?;
    let acc = reduce_items(cx, &xrf, to, from.clone(), "into")?;
    cx.apply(&xrf, &mut [acc])
}

/// The reducing function a transducer makes of `conj`: what `sequence` pulls a lazy
/// source through, one item onto an empty vector at a time.
pub(crate) fn transducer_over_vectors(cx: &mut BuiltinContext, xform: &Value) -> EvalResult {
    apply_xform(cx, xform, conj_rf())
}

fn apply_xform(cx: &mut BuiltinContext, xform: &Value, rf: Value) -> EvalResult {
    let xrf = cx.apply(xform, &mut [rf])?;
    if !matches!(xrf, Value::Func(_)) {
        return expected("a transducer", "a transducer such as (map f) or (comp (map f) (filter p))", xform);
    }
    Ok(xrf)
}

fn transduce(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let xform = std::mem::take(&mut a[0]);
    let f = std::mem::take(&mut a[1]);
    let (init, coll) = match a {
        [_, _, coll] => (cx.apply(&f, &mut [])?, std::mem::take(coll)),
        [_, _, init, coll] => (std::mem::take(init), std::mem::take(coll)),
        _ => {
            return err(
                ErrorKind::ArityError,
                "transduce takes (transduce xform f coll) or (transduce xform f init coll)",
            );
        }
    };
    let xrf = apply_xform(cx, &xform, f)?;
    let acc = reduce_items(cx, &xrf, init, coll, "transduce")?;
    cx.apply(&xrf, &mut [acc])
}

pub(crate) fn sequence(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match a {
        // a lazy sequence stays lazy: its items as they are asked for
        [coll] if lazy::as_lazy(coll).is_some() => Ok(std::mem::take(coll)),
        [xform, coll] if lazy::as_lazy(coll).is_some() => match lazy::as_lazy(coll) {
            Some(l) => lazy::xform(std::mem::take(xform), l),
            None => Ok(Value::Nil),
        },
        [coll] => {
            cx.charge(crate::builtins::materialized_cost(coll))?;
            let items: PVector = seq_iter("sequence", coll)?.collect();
            cx.charge(crate::limits::cost::HEADER + crate::limits::cost::ELEM * items.len() as u64)?;
            Ok(Value::from_pvec(items))
        }
        [xform, coll] => into_with(cx, Value::vector([]), &xform.clone(), coll),
        _ => err(ErrorKind::ArityError, "sequence takes (sequence coll) or (sequence xform coll)"),
    }
}

fn eduction(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = a.len();
    let coll = std::mem::take(&mut a[n - 1]);
    let xforms: Vec<Value> = a[..n - 1].iter_mut().map(std::mem::take).collect();
    // (eduction xf1 xf2 coll) is (comp xf1 xf2)
    let composed = Function::native("eduction", Held::values(xforms), |cx, xforms, args| {
        let mut rf = args.first().cloned().unwrap_or(Value::Nil);
        for xf in xforms.iter().rev() {
            rf = cx.apply(xf, &mut [rf])?;
        }
        Ok(rf)
    });
    into_with(cx, Value::vector([]), &composed, &coll)
}

fn completing(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    // held: f, then the completion function if given
    let held: Vec<Value> = a.iter_mut().map(std::mem::take).collect();
    Ok(Function::native("completing", Held::values(held), |cx, held, args| {
        let Some((f, cf)) = held.split_first() else { return Ok(Value::Nil) };
        match args {
            [] => cx.apply(f, &mut []),
            [acc] => match cf.first() {
                Some(cf) => cx.apply(cf, &mut [std::mem::take(acc)]),
                None => Ok(std::mem::take(acc)),
            },
            _ => cx.apply(f, args),
        }
    }))
}

/// A reducing function wrapping `rf`: `step` for two arguments, `finish` for one, and
/// `rf`'s init for none.
fn reducer(
    rf: Value,
    held: Held,
    step: impl Fn(&mut BuiltinContext, &Value, Value, Value) -> EvalResult + Send + Sync + 'static,
    finish: impl Fn(&mut BuiltinContext, &Value, Value) -> EvalResult + Send + Sync + 'static,
) -> Value {
    Function::native("transducer step", held.with(rf.clone()), move |cx, _, args| match args {
        [] => cx.apply(&rf, &mut []),
        [acc] => finish(cx, &rf, std::mem::take(acc)),
        [acc, x] => step(cx, &rf, std::mem::take(acc), std::mem::take(x)),
        _ => err(ErrorKind::ArityError, "a reducing function takes 0, 1 or 2 arguments"),
    })
}

/// A transducer: a function of one reducing function; `make` builds the wrapped one
/// (fresh state per transduction).
/// `held` names the values `make` captures.
fn transducer(name: &'static str, held: Held, make: impl Fn(Value) -> Value + Send + Sync + 'static) -> Value {
    Function::native(name, held, move |_, _, args| match args {
        [rf] => Ok(make(std::mem::take(rf))),
        _ => err(
            ErrorKind::ArityError,
            format!(
                "({name} f) is a transducer: give it to into, transduce, sequence or eduction, e.g. (into [] ({name} f) coll); to use it directly write ({name} f coll)"
            ),
        ),
    })
}

/// A sequence step as a transducer (`(map f)`, `(take n)`, `(distinct)`...): each
/// transduction gets a fresh copy of the step (see `crate::steps`).
pub(crate) fn xf_step(step: Step) -> Value {
    let mut fns = Vec::new();
    step.each_held(&mut |v| fns.push(v));
    transducer(step.name(), Held::values(fns), move |rf| step_reducer(rf, step.clone()))
}

/// The reducing function `step` makes of `rf`: what the step gives for an item goes to
/// `rf`; the end of the step (`take`, `take-while`) is a `reduced`; at completion what the
/// step still holds goes to `rf` before `rf`'s own completion.
fn step_reducer(rf: Value, step: Step) -> Value {
    let state = Arc::new(Mutex::new(Some(step)));
    let done = state.clone();
    reducer(
        rf,
        Held::none().with_state(state.clone()),
        move |cx, rf, acc, x| {
            // taken out while it runs (it calls back into the program, which must not find
            // the lock held); a transducer fed from inside its own step finds it missing
            let mut step = state.lock().map_err(|_| poisoned())?.take().ok_or_else(poisoned)?;
            let fed = step.feed(cx, x);
            *state.lock().map_err(|_| poisoned())? = Some(step);
            match fed? {
                Fed::Skip => Ok(acc),
                Fed::One(y) => cx.apply(rf, &mut [acc, y]),
                Fed::Many(ys) => {
                    let mut acc = acc;
                    for y in ys {
                        acc = cx.apply(rf, &mut [acc, y])?;
                        if reduced_value(&acc).is_some() {
                            break;
                        }
                    }
                    Ok(acc)
                }
                Fed::End => Ok(ensure_reduced(acc)),
                Fed::Last(y) => Ok(ensure_reduced(cx.apply(rf, &mut [acc, y])?)),
            }
        },
        move |cx, rf, acc| {
            let mut step = done.lock().map_err(|_| poisoned())?.take().ok_or_else(poisoned)?;
            let mut rest = Vec::new();
            let flushed = loop {
                match step.finish(cx) {
                    Ok(Some(y)) => rest.push(y),
                    Ok(None) => break Ok(()),
                    Err(e) => break Err(e),
                }
            };
            *done.lock().map_err(|_| poisoned())? = Some(step);
            flushed?;
            let mut acc = acc;
            for y in rest {
                acc = cx.apply(rf, &mut [acc, y])?;
                if reduced_value(&acc).is_some() {
                    break;
                }
            }
            cx.apply(rf, &mut [unreduced(acc)])
        },
    )
}

fn cat(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(step_reducer(std::mem::take(&mut a[0]), Step::Mapcat(None)))
}

fn poisoned() -> crate::error::Flow {
    crate::error::Flow::Error(Box::new(crate::error::EvalError::new(
        ErrorKind::RuntimeError,
        "a transducer's step was used from inside itself (or failed earlier); give each transduction its own (map f), (take n)... transducer",
    )))
}
