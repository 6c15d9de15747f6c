//! clojure.core's sequences, used: extracting items (`first`, `nth`, `last`), reducing
//! (`reduce`, `frequencies`, `group-by`, `sum`), searching (`some`, `every?`), forcing (`doall`).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use crate::builtins::context::BuiltinContext;
use crate::builtins::core::predicates::b;
use crate::builtins::core::sequences::out_vec;
use crate::builtins::{Arity, Builtin, Category, Library, Table, compare_values, expected, int_arg, seq_iter};
use crate::error::{ErrorKind, EvalResult, err};
use crate::limits::cost;
use crate::value::{PVector, Value};

use Arity::*;
use Category::Sequence;

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    builtins: &[
        Builtin::new("second", Exact(1), Sequence, second)
            .lazy()
            .doc("Second item, or nil.")
            .ex(&[("(second [1 2 3])", "2")]),
        Builtin::new("last", Exact(1), Sequence, last)
            .sink(crate::fusion::Consumer::Last)
            .lazy()
            .doc("Last item, or nil.")
            .ex(&[("(last [1 2 3])", "3")]),
        Builtin::new("next", Exact(1), Sequence, next)
            .lazy()
            .doc("All but the first item, or nil when nothing is left.")
            .ex(&[("(next [1])", "nil")]),
        Builtin::new("nth", Range(2, 3), Sequence, nth)
            .lazy()
            .doc("Item at an index; nil (or the default) when out of range.")
            .ex(&[("(nth [10 20] 1)", "20"), ("(nth [10 20] 5 :none)", ":none")]),
        Builtin::new("group-by", Exact(2), Sequence, group_by)
            .doc("Map from (f item) to the vector of items with that result.")
            .ex(&[("(group-by odd? [1 2 3])", "{false [2] true [1 3]}")]),
        Builtin::new("frequencies", Exact(1), Sequence, frequencies)
            .sink(crate::fusion::Consumer::Frequencies)
            .doc("Map from item to how often it occurs.")
            .ex(&[("(frequencies [:a :b :a])", "{:a 2 :b 1}")]),
        Builtin::new("some", Exact(2), Sequence, some)
            .sink(crate::fusion::Consumer::Some)
            .lazy()
            .doc("The first truthy (pred item), or nil.")
            .ex(&[("(some even? [1 4 5])", "true"), ("(some #{2} [1 2])", "2")]),
        Builtin::new("every?", Exact(2), Sequence, every)
            .sink(crate::fusion::Consumer::Every)
            .lazy()
            .doc("True when (pred item) is truthy for every item.")
            .ex(&[("(every? pos? [1 2])", "true")]),
        Builtin::new("not-any?", Exact(2), Sequence, not_any)
            .sink(crate::fusion::Consumer::NotAny)
            .lazy()
            .doc("True when (pred item) is falsy for every item.")
            .ex(&[("(not-any? neg? [1 2])", "true")]),
        Builtin::new("avg", Exact(1), Sequence, avg)
            .ext()
            .doc("Average of numbers as a float; nil when empty.")
            .ex(&[("(avg [10 20])", "15.0"), ("(avg [])", "nil")]),
        Builtin::new("sum-by", Exact(2), Sequence, sum_by)
            .ext()
            .doc("Sum of (f item), skipping nil.")
            .ex(&[("(sum-by :n [{:n 1} {:n 2} {}])", "3")]),
        Builtin::new("avg-by", Exact(2), Sequence, avg_by)
            .ext()
            .doc("Average of (f item), skipping nil; nil when nothing is left.")
            .ex(&[("(avg-by :n [{:n 1} {:n 2}])", "1.5")]),
        Builtin::new("min-by", Exact(2), Sequence, min_by)
            .ext()
            .doc("The item with the smallest (f item), skipping nil.")
            .ex(&[("(min-by :n [{:n 3} {:n 1}])", "{:n 1}")]),
        Builtin::new("max-by", Exact(2), Sequence, max_by)
            .ext()
            .doc("The item with the largest (f item), skipping nil.")
            .ex(&[("(max-by :n [{:n 3} {:n 1}])", "{:n 3}")]),
        Builtin::new("ffirst", Exact(1), Sequence, ffirst)
            .lazy()
            .doc("First item of the first item.")
            .ex(&[("(ffirst [[1 2] [3]])", "1")]),
        Builtin::new("reduce-kv", Exact(3), Sequence, reduce_kv)
            .doc("Folds (f acc k v) over a map (or index/item over a vector).")
            .ex(&[("(reduce-kv (fn [a k v] (+ a v)) 0 {:x 1 :y 2})", "3")]),
        Builtin::new("max-key", AtLeast(2), Sequence, max_key)
            .doc("The argument with the largest (f x); ties go to the last.")
            .ex(&[("(max-key count \"a\" \"abc\")", "\"abc\"")]),
        Builtin::new("min-key", AtLeast(2), Sequence, min_key)
            .doc("The argument with the smallest (f x); ties go to the last.")
            .ex(&[("(min-key count \"ab\" \"c\")", "\"c\"")]),
        Builtin::new("not-every?", Exact(2), Sequence, not_every)
            .sink(crate::fusion::Consumer::NotEvery)
            .lazy()
            .doc("True when (pred item) is falsy for some item.")
            .ex(&[("(not-every? odd? [1 2])", "true")]),
        Builtin::new("fnext", Exact(1), Sequence, fnext).lazy().doc("Same as second.").ex(&[("(fnext [1 2])", "2")]),
        Builtin::new("nfirst", Exact(1), Sequence, nfirst)
            .lazy()
            .doc("(next (first coll)).")
            .ex(&[("(nfirst [[1 2 3]])", "(2 3)")]),
        Builtin::new("nnext", Exact(1), Sequence, nnext)
            .lazy()
            .doc("(next (next coll)).")
            .ex(&[("(nnext [1 2 3])", "(3)")]),
        Builtin::new("nthnext", Exact(2), Sequence, nthnext)
            .lazy()
            .doc("Items from index n on, or nil.")
            .ex(&[("(nthnext [1 2 3] 1)", "(2 3)")]),
        Builtin::new("nthrest", Exact(2), Sequence, nthrest)
            .lazy()
            .doc("Items from index n on.")
            .ex(&[("(nthrest [1 2 3] 2)", "(3)")]),
        Builtin::new("doall", Exact(1), Sequence, doall)
            .alias(&["seque"])
            .doc("The collection itself (sequences are already eager).")
            .ex(&[("(doall (map inc [1 2]))", "[2 3]")]),
        Builtin::new("dorun", Exact(1), Sequence, dorun)
            .doc("nil (sequences are already eager).")
            .ex(&[("(dorun [1 2])", "nil")]),
        Builtin::new("run!", Exact(2), Sequence, run_bang)
            .doc("Calls f on each item for its effect (println); returns nil.")
            .ex(&[("(run! println [1 2])", "nil")]),
        Builtin::new("first", Exact(1), Sequence, first)
            .sink(crate::fusion::Consumer::First)
            .lazy()
            .doc("First item, or nil.")
            .ex(&[("(first [1 2])", "1"), ("(first [])", "nil")]),
        Builtin::new("rest", Exact(1), Sequence, rest)
            .lazy()
            .doc("All but the first item, as a sequence (empty for nil).")
            .ex(&[("(rest [1 2 3])", "(2 3)"), ("(rest '(1 2 3))", "(2 3)")]),
        Builtin::new("reduce", Range(2, 3), Sequence, reduce)
            .sink(crate::fusion::Consumer::Reduce)
            .lazy()
            .doc("Folds f over the items, with an optional initial value.")
            .ex(&[("(reduce + [1 2 3])", "6"), ("(reduce + 10 [1 2])", "13")]),
        Builtin::new("sum", Exact(1), Sequence, sum)
            .sink(crate::fusion::Consumer::Sum)
            .ext()
            .doc("Sum of a collection of numbers, skipping nil; 0 when empty.")
            .ex(&[("(sum [1 2 3.5])", "6.5"), ("(sum [])", "0")]),
    ],
};

/// Hashing for the builtins' working tables: seeded per table, much faster than SipHash
/// on short strings and keywords.
pub(crate) type FastHash = foldhash::fast::RandomState;

pub(crate) fn second(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let Some(l) = crate::lazy::take_lazy(&mut a[0]) {
        return crate::lazy::nth(cx, 1, l);
    }
    Ok(seq_iter("second", &a[0])?.nth(1).unwrap_or(Value::Nil))
}

pub(crate) fn last(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    // a lazy sequence streams to its end: (last (range 3000000)) keeps nothing
    if let Some(l) = crate::lazy::take_lazy(&mut a[0]) {
        return crate::lazy::last(cx, l);
    }
    match &a[0] {
        Value::Vector(v) | Value::List(v) => Ok(v.back().cloned().unwrap_or(Value::Nil)),
        other => Ok(seq_iter("last", other)?.last().unwrap_or(Value::Nil)),
    }
}

pub(crate) fn next(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let Some(l) = crate::lazy::as_lazy(&a[0]) {
        let rest = crate::lazy::drop(1, l)?;
        return crate::lazy::nil_if_empty(cx, rest);
    }
    // the rest of a list or vector shares its items (a copy at every turn of a `loop`
    // over `next` grew with the square of the turns)
    if let Value::List(v) | Value::Vector(v) = &mut a[0] {
        if v.len() <= 1 {
            return Ok(Value::Nil);
        }
        cx.charge(cost::HEADER)?;
        drop_first(v);
        // a sequence, as in Clojure: `conj` adds to its front
        return Ok(as_seq(std::mem::take(&mut a[0])));
    }
    cx.charge(crate::builtins::materialized_cost(&a[0]))?;
    let rest: Vec<Value> = seq_iter("next", &a[0])?.skip(1).collect();
    if rest.is_empty() {
        Ok(Value::Nil)
    } else {
        cx.charge(cost::items(rest.len() as u64))?;
        Ok(Value::list(rest))
    }
}

pub(crate) fn nth(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let i = int_arg("nth", &a[1])?;
    if let Some(l) = crate::lazy::take_lazy(&mut a[0]) {
        let found = if i < 0 { None } else { crate::lazy::nth_or(cx, i as usize, l)? };
        return Ok(found.unwrap_or_else(|| a.get_mut(2).map(std::mem::take).unwrap_or(Value::Nil)));
    }
    // vectors and lists index directly; other seqables walk to the index without
    // building the items before it (a string's characters, a map's entries)
    let found = match &a[0] {
        _ if i < 0 => None,
        Value::Vector(v) | Value::List(v) => v.get(i as usize).cloned(),
        Value::Str(s) => s.chars().nth(i as usize).map(|c| Value::str(c.to_string())),
        Value::Map(m) => m.iter().nth(i as usize).map(|(k, v)| Value::vector([k.clone(), v.clone()])),
        other => seq_iter("nth", other)?.nth(i as usize),
    };
    Ok(found.unwrap_or_else(|| a.get_mut(2).map(std::mem::take).unwrap_or(Value::Nil)))
}

fn group_by(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = crate::builtins::by_key(&a[0]);
    let mut groups: HashMap<Value, PVector, FastHash> = HashMap::default();
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for item in seq_iter("group-by", &coll)? {
        cx.tick(1)?;
        let k = cx.apply(&f, &mut [item.clone()])?;
        cx.charge(cost::ELEM)?;
        groups.entry(k).or_default().push_back(item);
    }
    cx.charge(cost::entries(groups.len() as u64))?;
    Ok(Value::map(groups.into_iter().map(|(k, v)| (k, Value::from_pvec(v)))))
}

fn frequencies(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let mut counts: HashMap<Value, i64, FastHash> = HashMap::default();
    // one item at a time: nothing is collected first
    let coll = a[0].clone();
    for item in seq_iter("frequencies", &coll)? {
        cx.tick(1)?;
        *counts.entry(item).or_insert(0) += 1;
    }
    cx.charge(cost::entries(counts.len() as u64))?;
    Ok(Value::map(counts.into_iter().map(|(k, n)| (k, Value::Int(n)))))
}

pub(crate) fn some(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut a[0]);
    if let Some(l) = crate::lazy::take_lazy(&mut a[1]) {
        return crate::lazy::some(cx, &f, l);
    }
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for item in seq_iter("some", &coll)? {
        cx.tick(1)?;
        let r = cx.apply(&f, &mut [item])?;
        if r.truthy() {
            return Ok(r);
        }
    }
    Ok(Value::Nil)
}

pub(crate) fn every(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut a[0]);
    if let Some(l) = crate::lazy::take_lazy(&mut a[1]) {
        return Ok(Value::Bool(crate::lazy::every(cx, &f, l)?));
    }
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for item in seq_iter("every?", &coll)? {
        cx.tick(1)?;
        if !cx.apply(&f, &mut [item])?.truthy() {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

fn not_any(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let r = some(cx, a)?;
    Ok(Value::Bool(!r.truthy()))
}

fn numbers_of(cx: &mut BuiltinContext, fname: &str, f: Option<&Value>, coll: &Value) -> EvalResult<Vec<Value>> {
    let mut out = Vec::new();
    // one item at a time: nothing is collected first
    let coll = coll.clone();
    for item in seq_iter(fname, &coll)? {
        cx.tick(1)?;
        let v = match f {
            Some(f) => cx.apply(f, &mut [item])?,
            None => item,
        };
        match v {
            Value::Nil => {}
            Value::Int(_) | Value::Float(_) => out.push(v),
            other => {
                return err(
                    ErrorKind::ArithmeticError,
                    format!("{fname}: expected numbers, got {} {}", other.type_name(), crate::builtins::brief(&other)),
                );
            }
        }
    }
    Ok(out)
}

fn mean(nums: &[Value]) -> Value {
    if nums.is_empty() {
        return Value::Nil;
    }
    let total: f64 = nums.iter().filter_map(Value::as_f64).sum();
    Value::Float(total / nums.len() as f64)
}

fn avg(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let nums = numbers_of(cx, "avg", None, &a[0])?;
    Ok(mean(&nums))
}

fn sum_by(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = crate::builtins::by_key(&a[0]);
    let nums = numbers_of(cx, "sum-by", Some(&f), &a[1])?;
    nums.iter().try_fold(Value::Int(0), |acc, x| crate::builtins::core::numbers::add2(&acc, x))
}

fn avg_by(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = crate::builtins::by_key(&a[0]);
    let nums = numbers_of(cx, "avg-by", Some(&f), &a[1])?;
    Ok(mean(&nums))
}

fn extreme_by(cx: &mut BuiltinContext, a: &mut [Value], fname: &str, want: Ordering) -> EvalResult {
    let f = crate::builtins::by_key(&a[0]);
    let mut best: Option<(Value, Value)> = None;
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for item in seq_iter(fname, &coll)? {
        cx.tick(1)?;
        let k = cx.apply(&f, &mut [item.clone()])?;
        if k.is_nil() {
            continue;
        }
        let better = match &best {
            None => true,
            Some((bk, _)) => compare_values(&k, bk)? == Some(want),
        };
        if better {
            best = Some((k, item));
        }
    }
    Ok(best.map(|(_, v)| v).unwrap_or(Value::Nil))
}

fn min_by(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    extreme_by(cx, a, "min-by", Ordering::Less)
}

fn max_by(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    extreme_by(cx, a, "max-by", Ordering::Greater)
}

fn ffirst(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let mut first = match crate::lazy::take_lazy(&mut a[0]) {
        Some(l) => crate::lazy::nth(cx, 0, l)?,
        None => seq_iter("ffirst", &a[0])?.next().unwrap_or(Value::Nil),
    };
    if let Some(l) = crate::lazy::take_lazy(&mut first) {
        return crate::lazy::nth(cx, 0, l);
    }
    Ok(seq_iter("ffirst", &first)?.next().unwrap_or(Value::Nil))
}

fn reduce_kv(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut a[0]);
    let mut acc = std::mem::take(&mut a[1]);
    let pairs: Vec<(Value, Value)> = match &a[2] {
        Value::Map(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Value::Vector(v) => v.iter().enumerate().map(|(i, x)| (Value::Int(i as i64), x.clone())).collect(),
        Value::Nil => Vec::new(),
        other => return expected("reduce-kv", "a map or vector", other),
    };
    for (k, v) in pairs {
        cx.tick(1)?;
        acc = cx.apply(&f, &mut [acc, k, v])?;
    }
    Ok(acc)
}

fn extreme_key(cx: &mut BuiltinContext, a: &mut [Value], want: Ordering) -> EvalResult {
    let f = std::mem::take(&mut a[0]);
    let mut best: Option<(Value, Value)> = None;
    for x in a[1..].iter_mut() {
        let x = std::mem::take(x);
        let k = cx.apply(&f, &mut [x.clone()])?;
        let better = match &best {
            None => true,
            Some((bk, _)) => compare_values(&k, bk)? != Some(want.reverse()),
        };
        if better {
            best = Some((k, x));
        }
    }
    Ok(best.map(|(_, v)| v).unwrap_or(Value::Nil))
}

fn max_key(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    extreme_key(cx, a, Ordering::Greater)
}

fn min_key(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    extreme_key(cx, a, Ordering::Less)
}

fn not_every(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = a[0].clone();
    if let Some(l) = crate::lazy::take_lazy(&mut a[1]) {
        return b(!crate::lazy::every(cx, &f, l)?);
    }
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for item in seq_iter("not-every?", &coll)? {
        cx.tick(1)?;
        if !cx.apply(&f, &mut [item])?.truthy() {
            return b(true);
        }
    }
    b(false)
}

fn fnext(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let Some(l) = crate::lazy::take_lazy(&mut a[0]) {
        return crate::lazy::nth(cx, 1, l);
    }
    Ok(seq_iter("fnext", &a[0])?.nth(1).unwrap_or(Value::Nil))
}

fn tail(cx: &mut BuiltinContext, v: &Value, n: usize, fname: &str, nil_when_empty: bool) -> EvalResult {
    // an infinite sequence stays lazy: its items from n on
    if let Some(l) = crate::lazy::as_lazy(v) {
        let rest = crate::lazy::drop(n, l)?;
        return if nil_when_empty { crate::lazy::nil_if_empty(cx, rest) } else { Ok(rest) };
    }
    // the rest of a list or vector shares its items: a sequence, as in Clojure
    if let Value::List(items) | Value::Vector(items) = v {
        if n == 0 && !nil_when_empty {
            // `(nthrest coll 0)` is the collection itself
            return Ok(v.clone());
        }
        if items.len() <= n && nil_when_empty {
            return Ok(Value::Nil);
        }
        cx.charge(cost::HEADER)?;
        return Ok(Value::List(Arc::new(items.skip(n))));
    }
    cx.charge(crate::builtins::materialized_cost(v))?;
    let rest: Vec<Value> = seq_iter(fname, v)?.skip(n).collect();
    if rest.is_empty() && nil_when_empty {
        Ok(Value::Nil)
    } else if let Value::List(_) = v {
        cx.charge(cost::items(rest.len() as u64))?;
        Ok(Value::list(rest))
    } else {
        out_vec(cx, rest)
    }
}

fn nfirst(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let first = match crate::lazy::take_lazy(&mut a[0]) {
        Some(l) => crate::lazy::nth(cx, 0, l)?,
        None => seq_iter("nfirst", &a[0])?.next().unwrap_or(Value::Nil),
    };
    tail(cx, &first, 1, "nfirst", true)
}

fn nnext(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    tail(cx, &a[0], 2, "nnext", true)
}

fn nthnext(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = int_arg("nthnext", &a[1])?.max(0) as usize;
    tail(cx, &a[0], n, "nthnext", true)
}

fn nthrest(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = int_arg("nthrest", &a[1])?.max(0) as usize;
    tail(cx, &a[0], n, "nthrest", false)
}

fn doall(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(std::mem::take(&mut a[0]))
}

fn dorun(_: &mut BuiltinContext, _: &mut [Value]) -> EvalResult {
    Ok(Value::Nil)
}

fn run_bang(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = a[0].clone();
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for x in seq_iter("run!", &coll)? {
        cx.tick(1)?;
        cx.apply(&f, &mut [x])?;
    }
    Ok(Value::Nil)
}

pub(crate) fn first(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    if let Some(l) = crate::lazy::take_lazy(&mut args[0]) {
        return crate::lazy::nth(cx, 0, l);
    }
    match &args[0] {
        Value::Vector(v) | Value::List(v) => Ok(v.front().cloned().unwrap_or(Value::Nil)),
        other => Ok(seq_iter("first", other)?.next().unwrap_or(Value::Nil)),
    }
}

/// `v` without its first item (it has one). A list or vector nothing else holds (a `loop`
/// recurring on `(rest xs)` hands `xs` over) loses it in place, so walking a big vector
/// this way copies nothing at each turn; a shared one gives a new vector of its other items
/// (a big one's tree shared, not copied: [`PVector::skip`]).
fn drop_first(v: &mut Arc<PVector>) {
    match Arc::get_mut(v) {
        Some(only) => {
            only.pop_front();
        }
        None => *v = Arc::new(v.skip(1)),
    }
}

/// The items of a vector as a sequence (a list), which is what `rest` and `next` give in
/// Clojure: `conj` adds to its front.
fn as_seq(v: Value) -> Value {
    match v {
        Value::Vector(items) => Value::List(items),
        other => other,
    }
}

pub(crate) fn rest(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    if let Some(l) = crate::lazy::as_lazy(&args[0]) {
        return crate::lazy::drop(1, l);
    }
    match &mut args[0] {
        Value::List(v) => {
            cx.charge(cost::HEADER)?;
            if !v.is_empty() {
                drop_first(v);
            }
            Ok(std::mem::take(&mut args[0]))
        }
        // the rest of a vector is a sequence, as in Clojure: `conj` adds to its front
        Value::Vector(v) => {
            if v.is_empty() {
                return Ok(Value::empty_list());
            }
            cx.charge(cost::HEADER)?;
            drop_first(v);
            Ok(as_seq(std::mem::take(&mut args[0])))
        }
        other => {
            cx.charge(crate::builtins::materialized_cost(other))?;
            let items: PVector = seq_iter("rest", other)?.skip(1).collect();
            cx.charge(cost::items(items.len() as u64))?;
            Ok(Value::List(Arc::new(items)))
        }
    }
}

pub(crate) fn reduce(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut args[0]);
    let (init, coll) = if args.len() == 3 {
        (Some(std::mem::take(&mut args[1])), std::mem::take(&mut args[2]))
    } else {
        (None, std::mem::take(&mut args[1]))
    };
    let mut coll = coll;
    if crate::lazy::as_lazy(&coll).is_some() {
        use crate::builtins::core::transducers::{reduce_items, reduce_lazy_from_first};
        let finite = crate::lazy::is_finite_lazy(&coll);
        return match (init, crate::lazy::take_lazy(&mut coll)) {
            (Some(init), Some(seq)) => reduce_items(cx, &f, init, Value::Lazy(seq), "reduce"),
            (None, Some(seq)) if finite => reduce_lazy_from_first(cx, &f, seq),
            _ => err(
                ErrorKind::ArityError,
                "reduce over an infinite sequence needs an initial value and a (reduced x) to stop",
            ),
        };
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
        && b.arith == Some(crate::node::ArithOp::Add)
    {
        for item in it {
            cx.tick(1)?;
            acc = crate::builtins::core::numbers::add2(&acc, &item)?;
        }
        return Ok(acc);
    }
    for item in it {
        cx.tick(1)?;
        let mut call = [acc, item];
        acc = cx.apply(&f, &mut call)?;
        if let Some(v) = crate::builtins::core::transducers::reduced_value(&acc) {
            return Ok(v.clone());
        }
    }
    Ok(acc)
}

fn sum(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let mut acc = Value::Int(0);
    for item in seq_iter("sum", &args[0])? {
        cx.tick(1)?;
        // nil is skipped, as in sum-by and avg
        if !item.is_nil() {
            acc = crate::builtins::core::numbers::add2(&acc, &item)?;
        }
    }
    Ok(acc)
}
