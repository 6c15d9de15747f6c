//! clojure.set (`set/`): `union`, `intersection`, `difference`, `select`, `join`...

use std::sync::Arc;

use crate::builtins::context::BuiltinContext;
use crate::builtins::core::predicates::b;
use crate::builtins::core::sequences::all;
use crate::builtins::{Arity, Builtin, Category, Library, Table, expected, seq_iter};
use crate::error::EvalResult;
use crate::limits::cost;
use crate::value::{PMap, PSet, Value};

use Arity::*;
use Category::Set;

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Set,
    builtins: &[
        Builtin::new("union", AtLeast(0), Set, union).doc("Set union.").ex(&[("(union #{1} #{2})", "#{1 2}")]),
        Builtin::new("intersection", AtLeast(1), Set, intersection)
            .doc("Set intersection.")
            .ex(&[("(intersection #{1 2} #{2 3})", "#{2}")]),
        Builtin::new("difference", AtLeast(1), Set, difference)
            .doc("Members of the first set not in the others.")
            .ex(&[("(difference #{1 2} #{2})", "#{1}")]),
        Builtin::new("subset?", Exact(2), Set, subset)
            .doc("True when every member of the first set is in the second.")
            .ex(&[("(subset? #{1} #{1 2})", "true")]),
        Builtin::new("superset?", Exact(2), Set, superset)
            .doc("True when the first set has every member of the second.")
            .ex(&[("(superset? #{1 2} #{1})", "true")]),
        Builtin::new("map-invert", Exact(1), Set, map_invert)
            .doc("Map with keys and values swapped.")
            .ex(&[("(map-invert {:a 1})", "{1 :a}")]),
        Builtin::new("rename-keys", Exact(2), Set, rename_keys)
            .doc("Map with keys renamed by a {old new} map.")
            .ex(&[("(rename-keys {:a 1} {:a :b})", "{:b 1}")]),
        Builtin::new("set/select", Exact(2), Set, set_select)
            .doc("Members of a set for which (pred x) holds.")
            .ex(&[("(set/select odd? #{1 2 3})", "#{1 3}")]),
        Builtin::new("set/join", Range(2, 3), Set, set_join)
            .doc("Relational join of two sets of maps on their shared keys (or on a {x-key y-key} map); no shared keys gives every pair merged.")
            .ex(&[("(set/join #{{:id 1 :a 2}} #{{:id 1 :b 3}})", "#{{:a 2 :b 3 :id 1}}")]),
        Builtin::new("set/rename", Exact(2), Set, set_rename)
            .doc("A set of maps with keys renamed by a {old new} map.")
            .ex(&[("(set/rename #{{:a 1}} {:a :b})", "#{{:b 1}}")]),
        Builtin::new("set/project", Exact(2), Set, set_project)
            .doc("The set of the maps (from a set or any collection of maps) with only the given keys.")
            .ex(&[("(set/project #{{:a 1 :b 2}} [:a])", "#{{:a 1}}")]),
        Builtin::new("set/index", Exact(2), Set, set_index)
            .doc("Map from {key values} to the set of maps (from a set or any collection of maps) having them.")
            .ex(&[("(set/index #{{:a 1 :b 2}} [:a])", "{{:a 1} #{{:a 1 :b 2}}}")]),
    ],
};

fn set_arg(fname: &str, v: &Value) -> EvalResult<PSet> {
    match v {
        Value::Set(s) => Ok((**s).clone()),
        Value::Nil => Ok(PSet::new()),
        other => expected(fname, "a set", other),
    }
}

/// As Clojure's: the largest set is the base (of equal sizes, the first of two, the last
/// of more) and the others' members are added to it in order; a member already there
/// stays (a vector and a list of the same items are equal).
fn union(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let sets = a.iter().map(|s| set_arg("union", s)).collect::<EvalResult<Vec<PSet>>>()?;
    let Some(base) = pick(&sets, |s| s.len(), |best, len| len > best || (sets.len() > 2 && len == best)) else {
        return Ok(Value::Set(Arc::new(PSet::new())));
    };
    let mut out = sets[base].clone();
    for (i, s) in sets.iter().enumerate() {
        if i != base {
            out.extend(s.iter().cloned());
        }
    }
    cx.charge(cost::items(out.len() as u64))?;
    Ok(Value::Set(Arc::new(out)))
}

/// As Clojure's: from the smallest set (of equal sizes, the first of two, the last of
/// more), each other set in turn keeps the members of the smaller side found in the
/// larger.
fn intersection(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let sets = a.iter().map(|s| set_arg("intersection", s)).collect::<EvalResult<Vec<PSet>>>()?;
    let Some(first) = pick(&sets, |s| s.len(), |best, len| len < best || (sets.len() > 2 && len == best)) else {
        return Ok(Value::Set(Arc::new(PSet::new())));
    };
    let mut out = sets[first].clone();
    for (i, s) in sets.iter().enumerate() {
        if i == first {
            continue;
        }
        let (small, large) = if s.len() < out.len() { (s, &out) } else { (&out, s) };
        out = PSet::from_items(small.iter().filter(|x| large.contains(x)).cloned());
    }
    Ok(Value::Set(Arc::new(out)))
}

/// The index of the item `better` prefers by `key` (each item against the best so far).
fn pick<T>(items: &[T], key: impl Fn(&T) -> usize, better: impl Fn(usize, usize) -> bool) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (i, x) in items.iter().enumerate() {
        let k = key(x);
        if best.is_none_or(|(_, b)| better(b, k)) {
            best = Some((i, k));
        }
    }
    best.map(|(i, _)| i)
}

/// As Clojure's: the first set's members that no other set has. A first set smaller than
/// the next keeps its members not found there; otherwise the next set's members are
/// taken out of it.
pub(crate) fn difference(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let mut out = set_arg("difference", &a[0])?;
    for s in a[1..].iter() {
        let other = set_arg("difference", s)?;
        if out.len() < other.len() {
            out = PSet::from_items(out.iter().filter(|x| !other.contains(x)).cloned());
        } else {
            for x in other.iter() {
                out.remove(x);
            }
        }
    }
    Ok(Value::Set(Arc::new(out)))
}

fn subset(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, y) = (set_arg("subset?", &a[0])?, set_arg("subset?", &a[1])?);
    b(x.iter().all(|v| y.contains(v)))
}

fn superset(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, y) = (set_arg("superset?", &a[0])?, set_arg("superset?", &a[1])?);
    b(y.iter().all(|v| x.contains(v)))
}

fn map_of<'a>(fname: &str, v: &'a Value) -> EvalResult<Option<&'a PMap>> {
    match v {
        Value::Map(m) => Ok(Some(m)),
        Value::Nil => Ok(None),
        other => expected(fname, "a map", other),
    }
}

fn map_invert(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let m = map_of("map-invert", &a[0])?;
    Ok(Value::map(m.into_iter().flat_map(|m| m.iter().map(|(k, v)| (v.clone(), k.clone())))))
}

fn rename_keys(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let Some(m) = map_of("rename-keys", &a[0])? else { return Ok(Value::Nil) };
    let renames = map_of("rename-keys", &a[1])?;
    let mut out = m.clone();
    if let Some(r) = renames {
        // an old key found as the map holds it (DIV-47: :status renames the JSON key "status")
        let olds: Vec<Value> = r.iter().map(|(old, _)| crate::interp::write_key(m, old.clone())).collect();
        for old in &olds {
            out.remove(old);
        }
        for (old, (_, new)) in olds.iter().zip(r.iter()) {
            if let Some(v) = m.get(old) {
                out.insert(new.clone(), v.clone());
            }
        }
    }
    Ok(Value::Map(Arc::new(out)))
}

fn set_select(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = a[0].clone();
    let mut out = PSet::new();
    for x in set_arg("set/select", &a[1])?.iter() {
        cx.tick(1)?;
        if cx.apply(&f, &mut [x.clone()])?.truthy() {
            out.insert(x.clone());
        }
    }
    Ok(Value::Set(Arc::new(out)))
}

fn select_keys_of(m: &Value, ks: &[Value]) -> Value {
    match m {
        Value::Map(m) => Value::map(ks.iter().filter_map(|k| m.get(k).map(|v| (k.clone(), v.clone())))),
        _ => Value::empty_map(),
    }
}

fn set_join(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let xs = all(cx, "set/join", &a[0])?;
    let ys = all(cx, "set/join", &a[1])?;
    let mut out = PSet::new();
    let (Some(x0), Some(y0)) = (xs.first(), ys.first()) else {
        return Ok(Value::Set(Arc::new(out)));
    };
    // (key in x, key in y) pairs that must hold equal values
    let pairs: Vec<(Value, Value)> = match a.get(2) {
        Some(km) => match map_of("set/join", km)? {
            Some(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            None => Vec::new(),
        },
        None => match (x0, y0) {
            (Value::Map(x), Value::Map(y)) => {
                x.keys().filter(|k| y.contains_key(k)).map(|k| (k.clone(), k.clone())).collect()
            }
            _ => Vec::new(),
        },
    };
    // as in Clojure, the larger relation's values win when the merged maps share a key
    let y_wins = xs.len() <= ys.len();
    for x in &xs {
        let Value::Map(xm) = x else { return expected("set/join", "a set of maps", x) };
        for y in &ys {
            cx.tick(1)?;
            let Value::Map(ym) = y else { return expected("set/join", "a set of maps", y) };
            if pairs.iter().all(|(kx, ky)| xm.get(kx) == ym.get(ky)) {
                let (mut base, top) = if y_wins { ((**xm).clone(), ym) } else { ((**ym).clone(), xm) };
                for (k, v) in top.iter() {
                    base.insert(k.clone(), v.clone());
                }
                cx.charge(cost::HEADER + cost::ELEM * base.len() as u64)?;
                out.insert(Value::Map(Arc::new(base)));
            }
        }
    }
    Ok(Value::Set(Arc::new(out)))
}

fn set_rename(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let kmap = a[1].clone();
    let mut out = PSet::new();
    // one item at a time: nothing is collected first
    let coll = a[0].clone();
    for m in seq_iter("set/rename", &coll)? {
        out.insert(rename_keys(cx, &mut [m, kmap.clone()])?);
    }
    Ok(Value::Set(Arc::new(out)))
}

fn set_project(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let ks = all(cx, "set/project", &a[1])?;
    // any collection of maps, as in Clojure (a vector of records from JSON is the usual one)
    let mut out = PSet::new();
    let coll = a[0].clone();
    for m in seq_iter("set/project", &coll)? {
        cx.tick(1)?;
        out.insert(select_keys_of(&m, &ks));
    }
    Ok(Value::Set(Arc::new(out)))
}

fn set_index(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let ks = all(cx, "set/index", &a[1])?;
    let mut out = PMap::new();
    // any collection of maps, as in Clojure
    let coll = a[0].clone();
    for m in seq_iter("set/index", &coll)? {
        cx.tick(1)?;
        let k = select_keys_of(&m, &ks);
        let mut members = match out.get(&k) {
            Some(Value::Set(s)) => (**s).clone(),
            _ => PSet::new(),
        };
        members.insert(m.clone());
        out.insert(k, Value::Set(Arc::new(members)));
    }
    Ok(Value::Map(Arc::new(out)))
}
