//! The collection and sequence functions real programs need first: count, get, assoc,
//! conj, first/rest, map/filter/reduce, range, keys/vals, sum, apply, juxt, pmap, pcalls.

use smallvec::SmallVec;
use std::sync::Arc;

use super::{Arity, Builtin, Category, SeqIter, expected, seq_iter, seq_len};
use crate::builtins::context::BuiltinContext;
use crate::error::{ErrorKind, EvalResult, err};
use crate::function::{Function, Held};
use crate::interp::get_in_value;
use crate::limits::cost;
use crate::value::{PMap, PVector, Value};

use Arity::*;
use Category::{Collection, Functional, Sequence};

/// Sequence and collection builtins.
pub static BUILTINS: &[Builtin] = &[
    Builtin::new("count", Exact(1), Collection, count).doc("Number of items (characters for strings, 0 for nil).").ex(&[("(count [1 2 3])", "3"), ("(count \"héllo\")", "5")]),
    Builtin::new("get", Range(2, 3), Collection, get).doc("Value at a key or index, or the default (nil). Keys match flexibly: :user-id finds \"user_id\".").ex(&[("(get {:a 1} :a)", "1"), ("(get [10 20] 5 :none)", ":none")]),
    Builtin::new("get-in", Range(2, 3), Collection, get_in).doc("Value at a path of keys/indexes, or the default.").ex(&[("(get-in {:a [{:b 1}]} [:a 0 :b])", "1")]),
    Builtin::new("assoc", AtLeast(3), Collection, assoc).doc("Map with keys set to values; vectors by index (up to the length).").ex(&[("(assoc {:a 1} :b 2)", "{:a 1 :b 2}"), ("(assoc [1 2] 2 3)", "[1 2 3]")]),
    Builtin::new("conj", AtLeast(0), Collection, conj).doc("Adds items: vectors at the end, lists (and nil) at the front, sets as members, maps take [k v] entries.").ex(&[("(conj [1 2] 3)", "[1 2 3]"), ("(conj '(1 2) 3)", "(3 1 2)"), ("(conj {:a 1} [:b 2])", "{:a 1 :b 2}")]),
    Builtin::new("first", Exact(1), Sequence, first).lazy().doc("First item, or nil.").ex(&[("(first [1 2])", "1"), ("(first [])", "nil")]),
    Builtin::new("rest", Exact(1), Sequence, rest).lazy().doc("All but the first item: a list for a list, a vector otherwise (empty for nil).").ex(&[("(rest [1 2 3])", "[2 3]"), ("(rest '(1 2 3))", "(2 3)")]),
    Builtin::new("seq", Exact(1), Sequence, seq).lazy().doc("The items as a vector, or nil when empty.").ex(&[("(seq [])", "nil"), ("(seq {:a 1})", "[[:a 1]]")]),
    Builtin::new("map", AtLeast(1), Sequence, map).lazy().fused(crate::fusion::Step::Map).doc("Applies f to each item (to items of several collections in step, stopping at the shortest); returns a vector. (map f) is a transducer; over infinite sequences map is lazy.").ex(&[("(map inc [1 2 3])", "[2 3 4]"), ("(map + [1 2] [10 20 30])", "[11 22]")]),
    Builtin::new("mapv", AtLeast(2), Sequence, map).fused(crate::fusion::Step::Map).doc("Like map (every sequence is an eager vector).").ex(&[("(mapv inc [1 2])", "[2 3]")]),
    Builtin::new("filter", Range(1, 2), Sequence, filter).lazy().fused(crate::fusion::Step::Filter).doc("Items for which (pred item) is truthy.").ex(&[("(filter even? [1 2 3 4])", "[2 4]")]),
    Builtin::new("filterv", Exact(2), Sequence, filter).fused(crate::fusion::Step::Filter).doc("Like filter.").ex(&[("(filterv odd? [1 2 3])", "[1 3]")]),
    Builtin::new("remove", Range(1, 2), Sequence, remove).lazy().fused(crate::fusion::Step::Remove).doc("Items for which (pred item) is falsy.").ex(&[("(remove even? [1 2 3 4])", "[1 3]")]),
    Builtin::new("reduce", Range(2, 3), Sequence, reduce).lazy().doc("Folds f over the items, with an optional initial value.").ex(&[("(reduce + [1 2 3])", "6"), ("(reduce + 10 [1 2])", "13")]),
    Builtin::new("range", Range(0, 3), Sequence, range).doc("Numbers from start (0) below end by step (1); (range) counts up forever, for take and friends.").ex(&[("(range 4)", "[0 1 2 3]"), ("(range 1 10 3)", "[1 4 7]")]),
    Builtin::new("vector", AtLeast(0), Collection, vector).doc("A vector of the arguments.").ex(&[("(vector 1 2)", "[1 2]")]),
    Builtin::new("list", AtLeast(0), Collection, list).doc("A list of the arguments; conj adds to its front.").ex(&[("(list 1 2)", "(1 2)"), ("(conj (list 1 2) 0)", "(0 1 2)")]),
    Builtin::new("vec", Exact(1), Collection, vec).doc("The items of a collection as a vector.").ex(&[("(vec #{1})", "[1]")]),
    Builtin::new("hash-map", AtLeast(0), Collection, hash_map).alias(&["array-map"]).doc("A map of key/value arguments.").ex(&[("(hash-map :a 1 :b 2)", "{:a 1 :b 2}")]),
    Builtin::new("dissoc", AtLeast(1), Collection, dissoc).doc("Map without the given keys.").ex(&[("(dissoc {:a 1 :b 2} :a)", "{:b 2}")]),
    Builtin::new("update", AtLeast(3), Collection, update).doc("Map with (f old-value & args) at a key; the key matches flexibly like get (:total finds \"total\").").ex(&[("(update {:a 1} :a inc)", "{:a 2}"), ("(update {:a 1} :a + 10)", "{:a 11}")]),
    Builtin::new("into", Range(1, 3), Collection, into).lazy().doc("Adds every item of the second collection to the first (conj semantics, so a list receives them at its front); (into to xform from) runs the items through a transducer.").ex(&[("(into {} [[:a 1] [:b 2]])", "{:a 1 :b 2}"), ("(into [1] #{2})", "[1 2]"), ("(into '() [1 2 3])", "(3 2 1)")]),
    Builtin::new("map-indexed", Range(1, 2), Sequence, map_indexed).lazy().doc("Applies (f index item) to each item.").ex(&[("(map-indexed vector [:a :b])", "[[0 :a] [1 :b]]")]),
    Builtin::new("fnil", Range(2, 4), Functional, fnil).doc("A function like f that replaces nil arguments with defaults.").ex(&[("((fnil inc 0) nil)", "1")]),
    Builtin::new("keys", Exact(1), Collection, keys).doc("The keys of a map, sorted (nil when empty).").ex(&[("(keys {:b 2 :a 1})", "[:a :b]")]),
    Builtin::new("vals", Exact(1), Collection, vals).doc("The values of a map, in key order (nil when empty).").ex(&[("(vals {:b 2 :a 1})", "[1 2]")]),
    Builtin::new("sum", Exact(1), Sequence, sum).ext().doc("Sum of a collection of numbers, skipping nil; 0 when empty.").ex(&[("(sum [1 2 3.5])", "6.5"), ("(sum [])", "0")]),
    Builtin::new("apply", AtLeast(2), Functional, apply).lazy().doc("Calls f with the leading arguments plus the items of the last one.").ex(&[("(apply + 1 [2 3])", "6")]),
    Builtin::new("juxt", AtLeast(1), Functional, juxt).doc("A function returning a vector of each function applied to its argument.").ex(&[("((juxt :a :b) {:a 1 :b 2})", "[1 2]")]),
    Builtin::new("pmap", AtLeast(2), Functional, pmap).ext().doc("Like map, with the calls run in parallel (bounded workers, shared deadline); results in order.").ex(&[("(pmap inc [1 2 3])", "[2 3 4]")]),
    Builtin::new("pcalls", AtLeast(0), Functional, pcalls).ext().doc("Calls zero-argument functions in parallel; returns their results in order.").ex(&[("(pcalls (fn [] 1) (fn [] 2))", "[1 2]")]),
];

fn count(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    match seq_len(&args[0]) {
        Some(n) => Ok(Value::Int(n as i64)),
        None => expected("count", "a collection or string", &args[0]),
    }
}

fn get(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let found = get_in_value(&args[0], &args[1]);
    Ok(match found {
        Some(v) => v,
        None => args.get_mut(2).map(std::mem::take).unwrap_or(Value::Nil),
    })
}

fn get_in(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let path = match &args[1] {
        Value::Vector(p) | Value::List(p) => p.clone(),
        Value::Nil => Arc::new(PVector::new()),
        other => return expected("get-in", "a vector path like [:a 0 :b]", other),
    };
    let mut cur = args[0].clone();
    for k in path.iter() {
        match get_in_value(&cur, k) {
            Some(v) => cur = v,
            None => return Ok(args.get_mut(2).map(std::mem::take).unwrap_or(Value::Nil)),
        }
    }
    Ok(cur)
}

/// `assoc` of one key on a map or vector.
pub fn assoc1(cx: &mut BuiltinContext, coll: Value, k: Value, v: Value) -> EvalResult {
    match coll {
        Value::Nil => {
            cx.charge(cost::HEADER + cost::ENTRY)?;
            Ok(Value::map([(k, v)]))
        }
        Value::Map(mut m) => {
            cx.charge(cost::ENTRY)?;
            Arc::make_mut(&mut m).insert(k, v);
            Ok(Value::Map(m))
        }
        Value::Vector(mut items) => {
            let len = items.len();
            match k {
                Value::Int(i) if i >= 0 && (i as usize) < len => {
                    cx.charge(cost::ELEM)?;
                    Arc::make_mut(&mut items).set(i as usize, v);
                    Ok(Value::Vector(items))
                }
                Value::Int(i) if i as usize == len => {
                    cx.charge(cost::ELEM)?;
                    Arc::make_mut(&mut items).push_back(v);
                    Ok(Value::Vector(items))
                }
                other => err(
                    ErrorKind::RuntimeError,
                    format!(
                        "assoc: index {} out of bounds for vector of length {len}; use conj to append",
                        super::brief(&other)
                    ),
                ),
            }
        }
        other => expected("assoc", "a map, vector or nil", &other),
    }
}

fn assoc(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    if args.len() % 2 != 1 {
        return err(
            ErrorKind::ArityError,
            "assoc expects a collection followed by key/value pairs: (assoc m :k v :k2 v2)",
        );
    }
    let mut coll = std::mem::take(&mut args[0]);
    for pair in args[1..].chunks_mut(2) {
        let k = std::mem::take(&mut pair[0]);
        let v = std::mem::take(&mut pair[1]);
        coll = assoc1(cx, coll, k, v)?;
    }
    Ok(coll)
}

/// `conj` of one item.
pub fn conj1(cx: &mut BuiltinContext, coll: Value, x: Value) -> EvalResult {
    cx.charge(cost::ELEM)?;
    match coll {
        // nil conjs like the empty list: (conj nil 1 2) is (2 1), (update m k conj x) collects newest first
        Value::Nil => Ok(Value::list([x])),
        Value::Vector(mut items) => {
            Arc::make_mut(&mut items).push_back(x);
            Ok(Value::Vector(items))
        }
        Value::List(mut items) => {
            Arc::make_mut(&mut items).push_front(x);
            Ok(Value::List(items))
        }
        Value::Set(mut s) => {
            Arc::make_mut(&mut s).insert(x);
            Ok(Value::Set(s))
        }
        Value::Map(mut m) => match x {
            Value::Vector(kv) if kv.len() == 2 => {
                Arc::make_mut(&mut m).insert(kv[0].clone(), kv[1].clone());
                Ok(Value::Map(m))
            }
            Value::Map(other) => {
                let mm = Arc::make_mut(&mut m);
                for (k, v) in other.iter() {
                    mm.insert(k.clone(), v.clone());
                }
                Ok(Value::Map(m))
            }
            Value::Nil => Ok(Value::Map(m)),
            other => expected("conj", "a [key value] vector or a map to add to a map", &other),
        },
        other => expected("conj", "a vector, list, set, map or nil", &other),
    }
}

fn conj(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let Some((first, rest)) = args.split_first_mut() else {
        return Ok(Value::vector([]));
    };
    let mut coll = std::mem::take(first);
    for x in rest.iter_mut() {
        coll = conj1(cx, coll, std::mem::take(x))?;
    }
    Ok(coll)
}

fn first(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    if let Some(l) = crate::lazy::as_lazy(&args[0]) {
        return crate::lazy::nth(cx, 0, l);
    }
    match &args[0] {
        Value::Vector(v) | Value::List(v) => Ok(v.front().cloned().unwrap_or(Value::Nil)),
        other => Ok(seq_iter("first", other)?.next().unwrap_or(Value::Nil)),
    }
}

fn rest(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    if let Some(l) = crate::lazy::as_lazy(&args[0]) {
        return crate::lazy::drop(1, l);
    }
    match &args[0] {
        Value::List(v) => {
            let mut v = (**v).clone();
            v.pop_front();
            cx.charge(cost::HEADER)?;
            Ok(Value::List(Arc::new(v)))
        }
        Value::Vector(v) => {
            if v.is_empty() {
                return Ok(Value::vector([]));
            }
            let mut v = (**v).clone();
            v.pop_front();
            cx.charge(cost::HEADER)?;
            Ok(Value::from_pvec(v))
        }
        other => {
            cx.charge(super::materialized_cost(other))?;
            let items: PVector = seq_iter("rest", other)?.skip(1).collect();
            cx.charge(cost::items(items.len() as u64))?;
            Ok(Value::from_pvec(items))
        }
    }
}

fn seq(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    if let Some(l) = crate::lazy::as_lazy(&args[0]) {
        // nil for an empty sequence; otherwise the sequence itself, still lazy
        let empty = crate::lazy::is_empty(cx, &l.clone())?;
        return Ok(if empty { Value::Nil } else { std::mem::take(&mut args[0]) });
    }
    match &args[0] {
        Value::Vector(v) | Value::List(v) if !v.is_empty() => Ok(args[0].clone()),
        other => {
            cx.charge(super::materialized_cost(other))?;
            let items: PVector = seq_iter("seq", other)?.collect();
            cx.charge(cost::items(items.len() as u64))?;
            Ok(if items.is_empty() { Value::Nil } else { Value::from_pvec(items) })
        }
    }
}

/// Applies `f` to each item, collecting a vector. Charges fuel per item.
fn map(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut args[0]);
    if args.len() == 1 {
        return Ok(super::transducers::xf_map(f));
    }
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

fn filter_impl(cx: &mut BuiltinContext, args: &mut [Value], keep: bool, name: &str) -> EvalResult {
    if let [pred] = args {
        return Ok(super::transducers::xf_filter(std::mem::take(pred), keep));
    }
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

fn reduce(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut args[0]);
    let (init, coll) = if args.len() == 3 {
        (Some(std::mem::take(&mut args[1])), std::mem::take(&mut args[2]))
    } else {
        (None, std::mem::take(&mut args[1]))
    };
    let coll = match init {
        None => crate::lazy::realized(cx, "reduce", coll)?,
        Some(_) => coll,
    };
    if crate::lazy::as_lazy(&coll).is_some() {
        let Some(init) = init else {
            return err(
                ErrorKind::ArityError,
                "reduce over an infinite sequence needs an initial value and a (reduced x) to stop",
            );
        };
        return super::transducers::reduce_items(cx, &f, init, &coll, "reduce");
    }
    let mut it = seq_iter("reduce", &coll)?;
    let mut acc = match init {
        Some(v) => v,
        None => match it.next() {
            Some(v) => v,
            None => return cx.apply(&f, &mut []),
        },
    };
    // (reduce + coll): add directly, no call per item
    if let Value::Func(func) = &f
        && let crate::function::FnRepr::Builtin(b) = func.repr()
        && b.name == "+"
    {
        for item in it {
            cx.tick(1)?;
            acc = super::core::add2(&acc, &item)?;
        }
        return Ok(acc);
    }
    for item in it {
        cx.tick(1)?;
        let mut call = [acc, item];
        acc = cx.apply(&f, &mut call)?;
        if let Some(v) = super::transducers::reduced_value(&acc) {
            return Ok(v.clone());
        }
    }
    Ok(acc)
}

fn range(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    // (range) and a zero step never end: a lazy sequence for take and friends
    match args {
        [] => return Ok(crate::lazy::range(Value::Int(0), Value::Int(1))),
        [s, e, st] if st.as_f64() == Some(0.0) => {
            return Ok(if s.equiv(e) { Value::vector([]) } else { crate::lazy::range(s.clone(), st.clone()) });
        }
        _ => {}
    }
    let all_int = args.iter().all(|a| matches!(a, Value::Int(_)));
    if all_int {
        let Some((start, n, step)) = crate::fusion::int_range(args) else {
            return err(
                ErrorKind::RuntimeError,
                "range with step 0 would never end; use (repeat n x) for repeated values",
            );
        };
        if cost::items(n) > cx.heap_left() {
            // too long to hold: made one number at a time, for take and friends
            let (s, e, st) = match args {
                [Value::Int(e)] => (0, *e, 1),
                [Value::Int(s), Value::Int(e)] => (*s, *e, 1),
                [Value::Int(s), Value::Int(e), Value::Int(st)] => (*s, *e, *st),
                _ => (start, start, step),
            };
            return Ok(crate::lazy::range_to(s, e, st));
        }
        cx.charge(cost::items(n))?;
        let mut out = PVector::new();
        let mut x = start as i128;
        for _ in 0..n {
            cx.tick(1)?;
            out.push_back(Value::Int(x as i64));
            x += step as i128;
        }
        return Ok(Value::from_pvec(out));
    }
    let nums: Vec<f64> = args.iter().map(|a| super::num_arg("range", a)).collect::<EvalResult<_>>()?;
    let (start, end, step) = match nums.as_slice() {
        [e] => (0.0, *e, 1.0),
        [s, e] => (*s, *e, 1.0),
        [s, e, st] => (*s, *e, *st),
        _ => return err(ErrorKind::ArityError, "range takes 1 to 3 arguments"),
    };
    if step == 0.0 || step.is_nan() {
        return err(ErrorKind::RuntimeError, "range with step 0 would never end");
    }
    // as Clojure: the step is added again and again, so rounding can add an item
    // ((range 0 1 0.1) has 11); the estimate is charged up front, one more to spare
    let n = ((end - start) / step).ceil();
    let n = if n.is_finite() && n > 0.0 { n as u64 } else { 0 };
    cx.charge(cost::items(n.saturating_add(1)))?;
    let first_int = matches!(args.first(), Some(Value::Int(_))) && args.len() > 1;
    let mut out = PVector::new();
    let mut x = start;
    while if step > 0.0 { x < end } else { x > end } {
        cx.tick(1)?;
        if out.is_empty() && first_int {
            out.push_back(args[0].clone());
        } else {
            out.push_back(Value::Float(x));
        }
        if out.len() as u64 > n {
            cx.charge(cost::ELEM)?;
        }
        x += step;
    }
    Ok(Value::from_pvec(out))
}

fn vector(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    cx.charge(cost::items(args.len() as u64))?;
    Ok(Value::vector(args.iter_mut().map(std::mem::take)))
}

fn list(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    cx.charge(cost::items(args.len() as u64))?;
    Ok(Value::list(args.iter_mut().map(std::mem::take)))
}

fn vec(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    match &args[0] {
        Value::Vector(_) => return Ok(std::mem::take(&mut args[0])),
        // the same items in the same order: the storage is shared
        Value::List(items) => return Ok(Value::Vector(items.clone())),
        _ => {}
    }
    cx.charge(super::materialized_cost(&args[0]))?;
    let items: PVector = seq_iter("vec", &args[0])?.collect();
    cx.charge(cost::items(items.len() as u64))?;
    Ok(Value::from_pvec(items))
}

fn hash_map(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    if !args.len().is_multiple_of(2) {
        return err(ErrorKind::ArityError, "hash-map needs key/value pairs: (hash-map :a 1 :b 2)");
    }
    let mut m = PMap::new();
    for pair in args.chunks_mut(2) {
        m.insert(std::mem::take(&mut pair[0]), std::mem::take(&mut pair[1]));
    }
    cx.charge(cost::entries(m.len() as u64))?;
    Ok(Value::Map(Arc::new(m)))
}

fn keys(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    match &args[0] {
        Value::Map(m) if m.is_empty() => Ok(Value::Nil),
        Value::Map(m) => Ok(Value::vector(m.keys().cloned())),
        Value::Nil => Ok(Value::Nil),
        other => expected("keys", "a map", other),
    }
}

fn vals(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    match &args[0] {
        Value::Map(m) if m.is_empty() => Ok(Value::Nil),
        Value::Map(m) => Ok(Value::vector(m.values().cloned())),
        Value::Nil => Ok(Value::Nil),
        other => expected("vals", "a map", other),
    }
}

fn sum(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let mut acc = Value::Int(0);
    for item in seq_iter("sum", &args[0])? {
        cx.tick(1)?;
        // nil is skipped, as in sum-by and avg
        if !item.is_nil() {
            acc = super::core::add2(&acc, &item)?;
        }
    }
    Ok(acc)
}

fn apply(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let n = args.len();
    let f = std::mem::take(&mut args[0]);
    let last = std::mem::take(&mut args[n - 1]);
    let mut call: Vec<Value> = args[1..n - 1].iter_mut().map(std::mem::take).collect();
    if let Some(l) = crate::lazy::as_lazy(&last) {
        // a builtin declared to take its arguments lazily gets them so; otherwise the
        // sequence is realised (an infinite one is the error naming it)
        if let Value::Func(func) = &f
            && let crate::function::FnRepr::Builtin(b) = func.repr()
            && let Some(spread) = b.spread_lazy
        {
            return spread(cx, call, &l.clone());
        }
        let l = l.clone();
        let all = crate::lazy::realize(cx, "apply", &l)?;
        call.extend(seq_iter("apply", &all)?);
        return cx.apply(&f, &mut call);
    }
    match &last {
        Value::Vector(_) | Value::List(_) | Value::Set(_) | Value::Nil | Value::Map(_) => {
            cx.charge(super::materialized_cost(&last))?;
            call.extend(seq_iter("apply", &last)?)
        }
        other => return expected("apply", "a collection as its last argument, e.g. (apply + [1 2 3])", other),
    }
    cx.apply(&f, &mut call)
}

fn juxt(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let fs: Vec<Value> = args.iter_mut().map(std::mem::take).collect();
    Ok(Function::native("juxt", Held::values(fs), |cx, fs, call| {
        let mut out = PVector::new();
        for f in fs {
            let mut a: Vec<Value> = call.to_vec();
            out.push_back(cx.apply(f, &mut a)?);
        }
        Ok(Value::from_pvec(out))
    }))
}

fn pmap(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut args[0]);
    let colls: Vec<Value> = args[1..].iter_mut().map(std::mem::take).collect();
    let mut iters: Vec<SeqIter<'_>> = colls.iter().map(|c| seq_iter("pmap", c)).collect::<EvalResult<_>>()?;
    let mut calls = Vec::new();
    'outer: loop {
        let mut call = Vec::with_capacity(iters.len());
        for it in iters.iter_mut() {
            match it.next() {
                Some(v) => call.push(v),
                None => break 'outer,
            }
        }
        calls.push((f.clone(), call));
    }
    cx.parallel(calls)
}

fn pcalls(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let calls = args.iter_mut().map(|f| (std::mem::take(f), Vec::new())).collect();
    cx.parallel(calls)
}

fn dissoc(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    match std::mem::take(&mut args[0]) {
        Value::Nil => Ok(Value::Nil),
        Value::Map(mut m) => {
            cx.charge(cost::HEADER)?;
            let mm = Arc::make_mut(&mut m);
            for k in args[1..].iter() {
                mm.remove(k);
            }
            Ok(Value::Map(m))
        }
        other => expected("dissoc", "a map", &other),
    }
}

fn update(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let coll = std::mem::take(&mut args[0]);
    let key = std::mem::take(&mut args[1]);
    let f = std::mem::take(&mut args[2]);
    // a key stored as written: one search, and the value is replaced where it is
    let coll = match coll {
        Value::Map(mut m) => {
            let mm = Arc::make_mut(&mut m);
            if let Some(slot) = mm.get_mut(&key) {
                let mut call: SmallVec<[Value; 4]> = SmallVec::new();
                call.push(std::mem::take(slot));
                call.extend(args[3..].iter_mut().map(std::mem::take));
                let new = cx.apply(&f, &mut call)?;
                cx.charge(cost::ENTRY)?;
                *slot = new;
                return Ok(Value::Map(m));
            }
            Value::Map(m)
        }
        other => other,
    };
    let old = get_in_value(&coll, &key).unwrap_or(Value::Nil);
    let mut call: SmallVec<[Value; 4]> = SmallVec::new();
    call.push(old);
    call.extend(args[3..].iter_mut().map(std::mem::take));
    let new = cx.apply(&f, &mut call)?;
    // keep the key the map already uses (flexible access may have found "user_id" for :user-id)
    let key = match &coll {
        Value::Map(m) => crate::interp::flex_get_key(m, &key).unwrap_or(key),
        _ => key,
    };
    assoc1(cx, coll, key, new)
}

fn into(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let mut to = std::mem::take(&mut args[0]);
    if let [_, xform, from] = args {
        return super::transducers::into_with(cx, to, xform, from);
    }
    let Some(from) = args.get_mut(1) else { return Ok(to) };
    let from = &crate::lazy::realized(cx, "into", std::mem::take(from))?;
    if matches!(to, Value::Nil) {
        to = Value::empty_list();
    }
    for item in seq_iter("into", from)? {
        cx.tick(1)?;
        to = conj1(cx, to, item)?;
    }
    Ok(to)
}

fn map_indexed(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut args[0]);
    if args.len() == 1 {
        return Ok(super::transducers::xf_map_indexed(f));
    }
    if let Some(l) = crate::lazy::as_lazy(&args[1]) {
        return crate::lazy::map_indexed(f, l);
    }
    let coll = std::mem::take(&mut args[1]);
    let mut out = PVector::new();
    for (i, item) in seq_iter("map-indexed", &coll)?.enumerate() {
        cx.tick(1)?;
        cx.charge(super::kept_item_cost(&coll))?;
        out.push_back(cx.apply(&f, &mut [Value::Int(i as i64), item])?);
    }
    cx.charge(cost::items(out.len() as u64))?;
    Ok(Value::from_pvec(out))
}

fn fnil(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    // held: f, then the defaults
    let held: Vec<Value> = args.iter_mut().map(std::mem::take).collect();
    Ok(Function::native("fnil", Held::values(held), |cx, held, call| {
        let Some((f, defaults)) = held.split_first() else { return Ok(Value::Nil) };
        for (slot, d) in call.iter_mut().zip(defaults.iter()) {
            if slot.is_nil() {
                *slot = d.clone();
            }
        }
        cx.apply(f, call)
    }))
}
