//! clojure.core's collections: generic operations (`count`, `conj`, `into`, `empty`),
//! maps (`get`, `assoc`, `merge`, `keys`...), vectors, lists and sets as collections.

use smallvec::SmallVec;
use std::sync::Arc;

use crate::builtins::context::BuiltinContext;
use crate::builtins::core::sequences::{all, items, out_vec};
use crate::builtins::{Arity, Builtin, Category, Library, Table, expected, int_arg, seq_iter, seq_len};
use crate::error::{ErrorKind, EvalResult, err};
use crate::interp::{get_in_value, write_key};
use crate::limits::cost;
use crate::value::{PMap, PSet, PVector, Value};

use Arity::*;
use Category::{Collection, Set};

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    builtins: &[
        Builtin::new("empty?", Exact(1), Collection, is_empty).lazy()
            .doc("True for nil and empty collections or strings.")
            .ex(&[("(empty? [])", "true"), ("(empty? nil)", "true")]),
        Builtin::new("merge", AtLeast(0), Collection, merge)
            .doc("Maps merged left to right; later keys win.")
            .ex(&[("(merge {:a 1} {:a 2 :b 3})", "{:a 2 :b 3}")]),
        Builtin::new("merge-with", AtLeast(1), Collection, merge_with)
            .doc("Maps merged; values of repeated keys combined with f.")
            .ex(&[("(merge-with + {:a 1} {:a 2})", "{:a 3}")]),
        Builtin::new("select-keys", Exact(2), Collection, select_keys)
            .doc("Map with only the given keys.")
            .ex(&[("(select-keys {:a 1 :b 2} [:a :c])", "{:a 1}")]),
        Builtin::new("contains?", Exact(2), Collection, contains)
            .doc("Key present in a map, member of a set, or (DIV-27) element of a vector or substring of a string.")
            .ex(&[("(contains? {:a nil} :a)", "true"), ("(contains? [10 20] 10)", "true")]),
        Builtin::new("zipmap", Exact(2), Collection, zipmap)
            .doc("Map from keys to values, pairing in order.")
            .ex(&[("(zipmap [:a :b] [1 2])", "{:a 1 :b 2}")]),
        Builtin::new("assoc-in", Exact(3), Collection, assoc_in)
            .doc("Nested assoc along a path, creating maps as needed.")
            .ex(&[("(assoc-in {} [:a :b] 1)", "{:a {:b 1}}")]),
        Builtin::new("update-in", AtLeast(3), Collection, update_in)
            .doc("Nested update along a path.")
            .ex(&[("(update-in {:a {:b 1}} [:a :b] inc)", "{:a {:b 2}}")]),
        Builtin::new("set", Exact(1), Set, set).sink(crate::fusion::Consumer::Set).doc("A set of the items.").ex(&[("(set [1 2 2])", "#{1 2}")]),
        Builtin::new("hash-set", AtLeast(0), Set, hash_set)
            .doc("A set of the arguments.")
            .ex(&[("(hash-set 1 2)", "#{1 2}")]),
        Builtin::new("disj", AtLeast(1), Set, disj)
            .doc("Set without the given members.")
            .ex(&[("(disj #{1 2} 1)", "#{2}")]),
        Builtin::new("update-vals", Exact(2), Collection, update_vals)
            .doc("Map with f applied to every value.")
            .ex(&[("(update-vals {:a 1 :b 2} inc)", "{:a 2 :b 3}")]),
        Builtin::new("update-keys", Exact(2), Collection, update_keys)
            .doc("Map with f applied to every key (colliding keys: last wins).")
            .ex(&[("(update-keys {:a 1} name)", "{\"a\" 1}")]),
        Builtin::new("sorted-map", AtLeast(0), Collection, sorted_map)
            .doc("A map of key/value arguments (every map is sorted by key).")
            .ex(&[("(sorted-map :b 2 :a 1)", "{:a 1 :b 2}")]),
        Builtin::new("sorted-set", AtLeast(0), Set, sorted_set)
            .doc("A set of the arguments (every set is sorted).")
            .ex(&[("(sorted-set 3 1 2)", "#{1 2 3}")]),
        Builtin::new("key", Exact(1), Collection, key)
            .doc("Key of a map entry [k v].")
            .ex(&[("(key (first {:a 1}))", ":a")]),
        Builtin::new("val", Exact(1), Collection, val)
            .doc("Value of a map entry [k v].")
            .ex(&[("(val (first {:a 1}))", "1")]),
        Builtin::new("not-empty", Exact(1), Collection, not_empty).lazy()
            .doc("The collection, or nil when empty.")
            .ex(&[("(not-empty [])", "nil")]),
        Builtin::new("empty", Exact(1), Collection, empty)
            .doc("An empty collection of the same kind.")
            .ex(&[("(empty {:a 1})", "{}")]),
        Builtin::new("peek", Exact(1), Collection, peek)
            .doc("Last item of a vector, first item of a list, or nil.")
            .ex(&[("(peek [1 2])", "2"), ("(peek '(1 2))", "1")]),
        Builtin::new("pop", Exact(1), Collection, pop)
            .doc("A vector without its last item, a list without its first; nil for an empty vector (Clojure throws), an error for an empty list.")
            .ex(&[("(pop [1 2])", "[1]"), ("(pop '(1 2))", "(2)")]),
        Builtin::new("subvec", Range(2, 3), Collection, subvec)
            .doc("Items from start (inclusive) to end (exclusive); indexes are clamped.")
            .ex(&[("(subvec [1 2 3 4] 1 3)", "[2 3]")]),
        Builtin::new("find", Exact(2), Collection, find)
            .doc("The entry [k v] for a key of a map (or [i v] for a vector index), or nil.")
            .ex(&[("(find {:a 1} :a)", "[:a 1]")]),
        Builtin::new("entries", Exact(1), Collection, entries)
            .ext()
            .doc("The [k v] entries of a map, sorted by key.")
            .ex(&[("(entries {:b 2 :a 1})", "[[:a 1] [:b 2]]")]),
        Builtin::new("count", Exact(1), Collection, count).sink(crate::fusion::Consumer::Count).lazy().doc("Number of items (characters for strings, 0 for nil).").ex(&[("(count [1 2 3])", "3"), ("(count \"héllo\")", "5")]),
        Builtin::new("get", Range(2, 3), Collection, get).doc("Value at a key or index, or the default (nil). Keys match flexibly: :user-id finds \"user_id\".").ex(&[("(get {:a 1} :a)", "1"), ("(get [10 20] 5 :none)", ":none")]),
        Builtin::new("get-in", Range(2, 3), Collection, get_in).doc("Value at a path of keys/indexes, or the default.").ex(&[("(get-in {:a [{:b 1}]} [:a 0 :b])", "1")]),
        Builtin::new("assoc", AtLeast(3), Collection, assoc).doc("Map with keys set to values; vectors by index (up to the length).").ex(&[("(assoc {:a 1} :b 2)", "{:a 1 :b 2}"), ("(assoc [1 2] 2 3)", "[1 2 3]")]),
        Builtin::new("conj", AtLeast(0), Collection, conj).doc("Adds items: vectors at the end, lists (and nil) at the front, sets as members, maps take [k v] entries.").ex(&[("(conj [1 2] 3)", "[1 2 3]"), ("(conj '(1 2) 3)", "(3 1 2)"), ("(conj {:a 1} [:b 2])", "{:a 1 :b 2}")]),
        Builtin::new("vector", AtLeast(0), Collection, vector).doc("A vector of the arguments.").ex(&[("(vector 1 2)", "[1 2]")]),
        Builtin::new("list", AtLeast(0), Collection, list).doc("A list of the arguments; conj adds to its front.").ex(&[("(list 1 2)", "(1 2)"), ("(conj (list 1 2) 0)", "(0 1 2)")]),
        Builtin::new("vec", Exact(1), Collection, vec).sink(crate::fusion::Consumer::Vec).doc("The items of a collection as a vector.").ex(&[("(vec #{1})", "[1]")]),
        Builtin::new("hash-map", AtLeast(0), Collection, hash_map).alias(&["array-map"]).doc("A map of key/value arguments.").ex(&[("(hash-map :a 1 :b 2)", "{:a 1 :b 2}")]),
        Builtin::new("dissoc", AtLeast(1), Collection, dissoc).doc("Map without the given keys.").ex(&[("(dissoc {:a 1 :b 2} :a)", "{:b 2}")]),
        Builtin::new("update", AtLeast(3), Collection, update).doc("Map with (f old-value & args) at a key; the key matches flexibly like get (:total finds \"total\").").ex(&[("(update {:a 1} :a inc)", "{:a 2}"), ("(update {:a 1} :a + 10)", "{:a 11}")]),
        Builtin::new("into", Range(1, 3), Collection, into).sink(crate::fusion::Consumer::Into).lazy().doc("Adds every item of the second collection to the first (conj semantics, so a list receives them at its front); (into to xform from) runs the items through a transducer.").ex(&[("(into {} [[:a 1] [:b 2]])", "{:a 1 :b 2}"), ("(into [1] #{2})", "[1 2]"), ("(into '() [1 2 3])", "(3 2 1)")]),
        Builtin::new("keys", Exact(1), Collection, keys).source(crate::fusion::SourceKind::Keys).doc("The keys of a map, sorted, or of a sequence of map entries (nil when empty).").ex(&[("(keys {:b 2 :a 1})", "[:a :b]")]),
        Builtin::new("vals", Exact(1), Collection, vals).source(crate::fusion::SourceKind::Vals).doc("The values of a map, in key order, or of a sequence of map entries (nil when empty).").ex(&[("(vals {:b 2 :a 1})", "[1 2]")]),
    ],
};

fn is_empty(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    // an infinite sequence is never empty; a finite one is asked for its first item
    if let Some(l) = crate::lazy::take_lazy(&mut a[0]) {
        return Ok(Value::Bool(crate::lazy::is_empty(cx, l)?));
    }
    match seq_len(&a[0]) {
        Some(n) => Ok(Value::Bool(n == 0)),
        None => expected("empty?", "a collection, string or nil", &a[0]),
    }
}

pub(crate) fn merge(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let mut acc: Option<Value> = None;
    for m in a.iter_mut() {
        match std::mem::take(m) {
            Value::Nil => {}
            Value::Map(src) => {
                acc = Some(match acc.take() {
                    None => Value::Map(src),
                    Some(Value::Map(mut dst)) => {
                        cx.charge(cost::ENTRY * src.len() as u64)?;
                        let d = Arc::make_mut(&mut dst);
                        for (k, v) in src.iter() {
                            let k = write_key(d, k.clone());
                            d.insert(k, v.clone());
                        }
                        Value::Map(dst)
                    }
                    Some(other) => other,
                })
            }
            other => return expected("merge", "maps (or nil)", &other),
        }
    }
    Ok(acc.unwrap_or(Value::Nil))
}

fn merge_with(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut a[0]);
    // the first map is the result to merge into (changed in place when nobody else holds
    // it, as `merge` does), not copied entry by entry
    let mut out: Option<Arc<PMap>> = None;
    for m in a[1..].iter_mut() {
        match std::mem::take(m) {
            Value::Nil => {}
            Value::Map(src) => {
                let Some(dst) = out.as_mut() else {
                    out = Some(src);
                    continue;
                };
                let d = Arc::make_mut(dst);
                for (k, v) in src.iter() {
                    cx.tick(1)?;
                    let k = write_key(d, k.clone());
                    match d.get_mut(&k) {
                        // the old value is taken out for the call, so f may change it in place
                        Some(slot) => {
                            let old = std::mem::take(slot);
                            *slot = cx.apply(&f, &mut [old, v.clone()])?;
                        }
                        None => {
                            cx.charge(cost::ENTRY)?;
                            d.insert(k, v.clone());
                        }
                    }
                }
            }
            other => return expected("merge-with", "maps (or nil)", &other),
        }
    }
    Ok(out.map(Value::Map).unwrap_or(Value::Nil))
}

fn select_keys(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let mut out = PMap::new();
    if let Value::Map(m) = &a[0] {
        // one item at a time: nothing is collected first
        let coll = a[1].clone();
        for k in seq_iter("select-keys", &coll)? {
            if let Some(v) = m.get(&k) {
                out.insert(k, v.clone());
            } else if let Some(stored) = crate::interp::flex_get_key(m, &k)
                && let Some(v) = m.get(&stored)
            {
                // DIV-46: a string keyseq finds keyword keys (and the reverse)
                out.insert(stored, v.clone());
            }
        }
    }
    cx.charge(cost::entries(out.len() as u64))?;
    Ok(Value::Map(Arc::new(out)))
}

pub(crate) fn contains(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(match &a[0] {
        Value::Map(m) => crate::interp::flex_get(m, &a[1]).is_some(),
        Value::Set(s) => s.contains(&a[1]),
        Value::Vector(v) => v.iter().any(|x| x.equiv(&a[1])),
        Value::Str(s) => matches!(&a[1], Value::Str(sub) if s.contains(&**sub)),
        Value::Nil => false,
        other => return expected("contains?", "a map, set, vector or string", other),
    }))
}

fn zipmap(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    // an infinite side is bounded by the finite one
    let bound = |i: usize, other: usize, a: &mut [Value], cx: &mut BuiltinContext| -> EvalResult<Vec<Value>> {
        match crate::lazy::as_lazy(&a[i]) {
            // both endless: the map would never be finished
            Some(l) if l.is_infinite() && crate::lazy::as_lazy(&a[other]).is_some_and(|o| o.is_infinite()) => {
                crate::lazy::unbounded("zipmap", l)
            }
            Some(l) => {
                let n = seq_len(&a[other]).unwrap_or(0);
                let taken = crate::lazy::take(cx, n, l.clone())?;
                items(cx, "zipmap", &taken)
            }
            None => items(cx, "zipmap", &a[i]),
        }
    };
    let ks = bound(0, 1, a, cx)?;
    let vs = bound(1, 0, a, cx)?;
    cx.charge(cost::entries(ks.len().min(vs.len()) as u64))?;
    Ok(Value::map(ks.into_iter().zip(vs)))
}

fn path(fname: &str, v: &Value) -> EvalResult<Vec<Value>> {
    match v {
        Value::Vector(p) | Value::List(p) => Ok(p.iter().cloned().collect()),
        other => expected(fname, "a vector path like [:a :b]", other),
    }
}

/// The value under `k` in `coll` taken out of it, when `coll` is a map or vector nobody
/// else holds and has `k` exactly (a read finds an exact key before a keyword's string
/// twin): the caller puts a new value back under `k` ([`put_back`]), so what it changes is
/// not shared and is changed in place, not copied.
fn take_inner(coll: &mut Value, k: &Value) -> Option<Value> {
    match coll {
        Value::Map(m) => Arc::get_mut(m)?.get_mut(k).map(std::mem::take),
        Value::Vector(v) => match k {
            Value::Int(i) if *i >= 0 => Arc::get_mut(v)?.get_mut(*i as usize).map(std::mem::take),
            _ => None,
        },
        _ => None,
    }
}

/// Puts `v` back where [`take_inner`] took a value from (charged as `assoc` charges).
fn put_back(cx: &mut BuiltinContext, coll: &mut Value, k: &Value, v: Value) -> EvalResult<()> {
    let slot = match coll {
        Value::Map(m) => {
            cx.charge(cost::ENTRY)?;
            Arc::make_mut(m).get_mut(k)
        }
        Value::Vector(items) => {
            cx.charge(cost::ELEM)?;
            match k {
                Value::Int(i) if *i >= 0 => Arc::make_mut(items).get_mut(*i as usize),
                _ => None,
            }
        }
        _ => None,
    };
    if let Some(slot) = slot {
        *slot = v;
    }
    Ok(())
}

/// `coll` with the value under `k` replaced by what `change` makes of it: taken out and
/// put back in place when `coll` is not shared, else read and `assoc`ed.
fn update_level(
    cx: &mut BuiltinContext,
    mut coll: Value,
    k: &Value,
    change: impl FnOnce(&mut BuiltinContext, Value) -> EvalResult,
) -> EvalResult {
    if let Some(inner) = take_inner(&mut coll, k) {
        let nv = change(cx, inner)?;
        put_back(cx, &mut coll, k, nv)?;
        return Ok(coll);
    }
    let inner = get_in_value(&coll, k).unwrap_or(Value::Nil);
    let nv = change(cx, inner)?;
    crate::builtins::core::collections::assoc1(cx, coll, k.clone(), nv)
}

fn assoc_path(cx: &mut BuiltinContext, coll: Value, keys: &[Value], v: Value) -> EvalResult {
    match keys {
        [] => Ok(v),
        [k] => crate::builtins::core::collections::assoc1(cx, coll, k.clone(), v),
        [k, rest @ ..] => update_level(cx, coll, k, |cx, inner| assoc_path(cx, inner, rest, v)),
    }
}

fn assoc_in(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let keys = path("assoc-in", &a[1])?;
    let v = std::mem::take(&mut a[2]);
    assoc_path(cx, std::mem::take(&mut a[0]), &keys, v)
}

/// `(f old extra...)` put back under `keys` in `coll`: each level's value is taken out of
/// its unshared parent on the way down (so `f` and the `assoc` back change it in place),
/// `f` runs at the end of the path, and the levels are put back innermost first.
fn update_path(cx: &mut BuiltinContext, coll: Value, keys: &[Value], f: &Value, extra: &mut [Value]) -> EvalResult {
    match keys {
        [] => {
            let mut call: SmallVec<[Value; 4]> = SmallVec::with_capacity(1 + extra.len());
            call.push(coll);
            call.extend(extra.iter_mut().map(std::mem::take));
            cx.apply(f, &mut call)
        }
        [k, rest @ ..] => update_level(cx, coll, k, |cx, inner| update_path(cx, inner, rest, f, extra)),
    }
}

fn update_in(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let keys = path("update-in", &a[1])?;
    let f = std::mem::take(&mut a[2]);
    let coll = std::mem::take(&mut a[0]);
    update_path(cx, coll, &keys, &f, &mut a[3..])
}

pub(crate) fn set(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    cx.charge(crate::builtins::materialized_cost(&a[0]))?;
    let s = PSet::from_items(seq_iter("set", &a[0])?);
    cx.charge(cost::items(s.len() as u64))?;
    Ok(Value::Set(Arc::new(s)))
}

fn hash_set(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    cx.charge(cost::items(a.len() as u64))?;
    Ok(Value::set(a.iter_mut().map(std::mem::take)))
}

fn disj(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match std::mem::take(&mut a[0]) {
        Value::Set(mut s) => {
            let m = Arc::make_mut(&mut s);
            for x in a[1..].iter() {
                m.remove(x);
            }
            Ok(Value::Set(s))
        }
        Value::Nil => Ok(Value::Nil),
        other => expected("disj", "a set", &other),
    }
}

fn map_arg<'a>(fname: &str, v: &'a Value) -> EvalResult<Option<&'a PMap>> {
    match v {
        Value::Map(m) => Ok(Some(m)),
        Value::Nil => Ok(None),
        other => expected(fname, "a map", other),
    }
}

fn update_vals(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut a[1]);
    let mut out = PMap::new();
    if let Some(m) = map_arg("update-vals", &a[0])? {
        for (k, v) in m.iter() {
            cx.tick(1)?;
            out.insert(k.clone(), cx.apply(&f, &mut [v.clone()])?);
        }
    }
    cx.charge(cost::entries(out.len() as u64))?;
    Ok(Value::Map(Arc::new(out)))
}

fn update_keys(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut a[1]);
    let mut out = PMap::new();
    if let Some(m) = map_arg("update-keys", &a[0])? {
        for (k, v) in m.iter() {
            cx.tick(1)?;
            out.insert(cx.apply(&f, &mut [k.clone()])?, v.clone());
        }
    }
    cx.charge(cost::entries(out.len() as u64))?;
    Ok(Value::Map(Arc::new(out)))
}

fn sorted_map(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match crate::builtins::lookup("hash-map") {
        Some(b) => cx.call(b, a),
        None => Ok(Value::empty_map()),
    }
}

fn sorted_set(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    hash_set(cx, a)
}

fn entry_part(fname: &str, v: &Value, i: usize) -> EvalResult {
    match v {
        Value::Vector(e) if e.len() == 2 => Ok(e[i].clone()),
        other => expected(fname, "a map entry [k v]", other),
    }
}

pub(crate) fn key(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    entry_part("key", &a[0], 0)
}

fn val(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    entry_part("val", &a[0], 1)
}

fn not_empty(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if crate::lazy::as_lazy(&a[0]).is_some() {
        return crate::lazy::nil_if_empty(cx, std::mem::take(&mut a[0]));
    }
    match seq_len(&a[0]) {
        Some(0) => Ok(Value::Nil),
        Some(_) => Ok(std::mem::take(&mut a[0])),
        None => expected("not-empty", "a collection or string", &a[0]),
    }
}

pub(crate) fn empty(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(match &a[0] {
        Value::Map(_) => Value::empty_map(),
        Value::Set(_) => Value::set([]),
        Value::Vector(_) => Value::vector([]),
        Value::List(_) => Value::empty_list(),
        Value::Str(_) => Value::str(""),
        _ => Value::Nil,
    })
}

fn peek(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Vector(v) => Ok(v.back().cloned().unwrap_or(Value::Nil)),
        Value::List(v) => Ok(v.front().cloned().unwrap_or(Value::Nil)),
        Value::Nil => Ok(Value::Nil),
        other => expected("peek", "a vector or list", other),
    }
}

fn pop(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match std::mem::take(&mut a[0]) {
        Value::Vector(v) if v.is_empty() => Ok(Value::Nil),
        Value::Vector(mut v) => {
            Arc::make_mut(&mut v).pop_back();
            Ok(Value::Vector(v))
        }
        Value::List(v) if v.is_empty() => {
            err(ErrorKind::RuntimeError, "pop: the list is empty; check (empty? xs) before popping")
        }
        Value::List(mut v) => {
            Arc::make_mut(&mut v).pop_front();
            Ok(Value::List(v))
        }
        Value::Nil => Ok(Value::Nil),
        other => expected("pop", "a vector or list", &other),
    }
}

fn subvec(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    // a slice of a vector shares its items, as in Clojure (a `loop` that takes
    // `(subvec v 1)` every turn copied what was left at every turn)
    if let Value::Vector(v) = &a[0] {
        let (start, len) = subvec_bounds(a, v.len())?;
        cx.charge(cost::HEADER)?;
        return Ok(Value::from_pvec(v.skip(start).take(len)));
    }
    let v = all(cx, "subvec", &a[0])?;
    let (start, len) = subvec_bounds(a, v.len())?;
    out_vec(cx, v.into_iter().skip(start).take(len))
}

/// Where `(subvec coll start end?)` starts in a collection of `n` items and how many it
/// takes, the indexes clamped into the collection.
fn subvec_bounds(a: &[Value], n: usize) -> EvalResult<(usize, usize)> {
    let n = n as i64;
    let start = int_arg("subvec", &a[1])?.clamp(0, n);
    let end = match a.get(2) {
        Some(e) => int_arg("subvec", e)?.clamp(start, n),
        None => n,
    };
    Ok((start as usize, (end - start) as usize))
}

fn find(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Map(m) => Ok(match crate::interp::flex_get_key(m, &a[1]) {
            // the entry as the map holds it (DIV-47: :id finds the JSON key "id")
            Some(k) => m.get(&k).map(|v| Value::vector([k.clone(), v.clone()])).unwrap_or(Value::Nil),
            None => Value::Nil,
        }),
        Value::Vector(v) => Ok(match &a[1] {
            Value::Int(i) if *i >= 0 && (*i as usize) < v.len() => {
                Value::vector([a[1].clone(), v[*i as usize].clone()])
            }
            _ => Value::Nil,
        }),
        Value::Nil => Ok(Value::Nil),
        other => expected("find", "a map or vector", other),
    }
}

pub(crate) fn entries(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Map(_) | Value::Nil => {
            let v = all(cx, "entries", &a[0])?;
            out_vec(cx, v)
        }
        other => expected("entries", "a map", other),
    }
}

pub(crate) fn count(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    // a lazy sequence is counted as it streams: (count (mapcat f xs)) keeps none of it
    if let Some(l) = crate::lazy::take_lazy(&mut args[0]) {
        return crate::lazy::count(cx, l);
    }
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
pub(crate) fn assoc1(cx: &mut BuiltinContext, coll: Value, k: Value, v: Value) -> EvalResult {
    match coll {
        Value::Nil => {
            cx.charge(cost::HEADER + cost::ENTRY)?;
            Ok(Value::map([(k, v)]))
        }
        Value::Map(mut m) => {
            cx.charge(cost::ENTRY)?;
            let k = write_key(&m, k);
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
                        crate::builtins::brief(&other)
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
pub(crate) fn conj1(cx: &mut BuiltinContext, coll: Value, x: Value) -> EvalResult {
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
                let k = write_key(&m, kv[0].clone());
                Arc::make_mut(&mut m).insert(k, kv[1].clone());
                Ok(Value::Map(m))
            }
            Value::Map(other) => {
                let mm = Arc::make_mut(&mut m);
                for (k, v) in other.iter() {
                    let k = write_key(mm, k.clone());
                    mm.insert(k, v.clone());
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

pub(crate) fn vector(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    cx.charge(cost::items(args.len() as u64))?;
    Ok(Value::vector(args.iter_mut().map(std::mem::take)))
}

pub(crate) fn list(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
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
    cx.charge(crate::builtins::materialized_cost(&args[0]))?;
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

fn keys(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    match &args[0] {
        Value::Map(m) if m.is_empty() => Ok(Value::Nil),
        Value::Map(m) => Ok(Value::vector(m.keys().cloned())),
        Value::Nil => Ok(Value::Nil),
        _ => entry_parts(cx, "keys", std::mem::take(&mut args[0]), 0),
    }
}

fn vals(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    match &args[0] {
        Value::Map(m) if m.is_empty() => Ok(Value::Nil),
        Value::Map(m) => Ok(Value::vector(m.values().cloned())),
        Value::Nil => Ok(Value::Nil),
        _ => entry_parts(cx, "vals", std::mem::take(&mut args[0]), 1),
    }
}

/// `keys`/`vals` of a sequence of map entries, as Clojure takes them:
/// `(->> m (filter #(> (val %) 1)) keys)`. Each item must be a `[key value]` pair.
fn entry_parts(cx: &mut BuiltinContext, fname: &str, coll: Value, part: usize) -> EvalResult {
    if !matches!(coll, Value::Vector(_) | Value::List(_)) && crate::lazy::as_lazy(&coll).is_none() {
        return expected(fname, "a map or a sequence of map entries", &coll);
    }
    let coll = crate::lazy::realized(cx, fname, coll)?;
    let mut out = Vec::new();
    for item in seq_iter(fname, &coll)? {
        cx.tick(1)?;
        match &item {
            Value::Vector(kv) if kv.len() == 2 => out.push(kv[part].clone()),
            other => return expected(fname, "a map or a sequence of [key value] map entries", other),
        }
    }
    if out.is_empty() {
        return Ok(Value::Nil);
    }
    out_vec(cx, out)
}

fn dissoc(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    match std::mem::take(&mut args[0]) {
        Value::Nil => Ok(Value::Nil),
        Value::Map(mut m) => {
            cx.charge(cost::HEADER)?;
            let mm = Arc::make_mut(&mut m);
            for k in args[1..].iter_mut() {
                let k = write_key(mm, std::mem::take(k));
                mm.remove(&k);
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

pub(crate) fn into(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let mut to = std::mem::take(&mut args[0]);
    if let [_, xform, from] = args {
        return crate::builtins::core::transducers::into_with(cx, to, xform, from);
    }
    let Some(from) = args.get_mut(1) else { return Ok(to) };
    let from = &crate::lazy::realized(cx, "into", std::mem::take(from))?;
    if matches!(to, Value::Nil) {
        to = Value::empty_list();
    }
    if let Value::Set(set) = to {
        // charged as conj charges each item; repeats skipped as `set` skips them
        let mut members = crate::value::SetBuilder::new(Arc::unwrap_or_clone(set));
        for item in seq_iter("into", from)? {
            cx.tick(1)?;
            cx.charge(cost::ELEM)?;
            members.push(item);
        }
        return Ok(Value::Set(Arc::new(members.finish())));
    }
    for item in seq_iter("into", from)? {
        cx.tick(1)?;
        to = conj1(cx, to, item)?;
    }
    Ok(to)
}
