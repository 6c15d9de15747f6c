//! Argument helpers shared by builtin families: type checks with messages that say what
//! was expected, and iteration over anything seqable.

use crate::builtins::context::BuiltinContext;
use crate::error::{EvalResult, type_err};
use crate::limits::cost;
use crate::printer::to_clojure;
use crate::value::{MapIter, Value};

/// Short printed form of a value for error messages (at most ~60 chars).
pub(crate) fn brief(v: &Value) -> String {
    let opts = crate::printer::PrintOptions { limit: Some(5), printable_limit: Some(40), max_bytes: 80 };
    let (s, _) = crate::printer::to_clojure_with(v, &opts);
    s
}

/// "expected X, got <type> <value>".
pub(crate) fn expected<T>(fname: &str, what: &str, got: &Value) -> EvalResult<T> {
    if let Some(l) = crate::lazy::as_lazy(got) {
        return crate::lazy::unbounded(fname, l);
    }
    // `rest`, `next` and `& more` give sequences: say how to get the vector wanted
    let hint = match got {
        Value::List(_) if what.contains("vector") => "; (vec xs) makes a vector of a sequence",
        _ => "",
    };
    type_err(format!("{fname}: expected {what}, got {} {}{hint}", got.type_name(), brief(got)))
}

/// An integer argument.
pub(crate) fn int_arg(fname: &str, v: &Value) -> EvalResult<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Float(f) if f.fract() == 0.0 && f.is_finite() => Ok(*f as i64),
        _ => expected(fname, "an integer", v),
    }
}

/// A numeric argument as f64.
pub(crate) fn num_arg(fname: &str, v: &Value) -> EvalResult<f64> {
    match v {
        Value::Int(i) => Ok(*i as f64),
        Value::Float(f) => Ok(*f),
        _ => expected(fname, "a number", v),
    }
}

/// A string argument.
pub(crate) fn str_arg<'a>(fname: &str, v: &'a Value) -> EvalResult<&'a str> {
    match v {
        Value::Str(s) => Ok(s),
        _ => expected(fname, "a string", v),
    }
}

/// Iterates any seqable value: nil (empty), vectors, sets, maps (as `[k v]` entries),
/// strings (as 1-char strings).
pub(crate) enum SeqIter<'a> {
    /// Nothing.
    Empty,
    /// Vector items.
    Vec(crate::pvector::Iter<'a>),
    /// Set members.
    Set(Box<dyn Iterator<Item = &'a Value> + 'a>),
    /// Map entries.
    Map(MapIter<'a>),
    /// Characters.
    Chars(std::str::Chars<'a>),
}

impl Iterator for SeqIter<'_> {
    type Item = Value;
    #[inline]
    fn next(&mut self) -> Option<Value> {
        match self {
            SeqIter::Empty => None,
            SeqIter::Vec(it) => it.next().cloned(),
            SeqIter::Set(it) => it.next().cloned(),
            SeqIter::Map(it) => it.next().map(|(k, v)| Value::vector([k.clone(), v.clone()])),
            SeqIter::Chars(it) => it.next().map(|c| Value::str(c.to_string())),
        }
    }
}

/// True when the value can be iterated with [`seq_iter`].
pub(crate) fn is_seqable(v: &Value) -> bool {
    matches!(v, Value::Nil | Value::Vector(_) | Value::List(_) | Value::Set(_) | Value::Map(_) | Value::Str(_))
}

/// Iterates a seqable argument or fails with a type error naming the function.
pub(crate) fn seq_iter<'a>(fname: &str, v: &'a Value) -> EvalResult<SeqIter<'a>> {
    Ok(match v {
        Value::Nil => SeqIter::Empty,
        Value::Vector(items) | Value::List(items) => SeqIter::Vec(items.iter()),
        Value::Set(s) => SeqIter::Set(Box::new(s.iter())),
        Value::Map(m) => SeqIter::Map(m.iter()),
        Value::Str(s) => SeqIter::Chars(s.chars()),
        other => {
            if let Some(l) = crate::lazy::as_lazy(other) {
                return crate::lazy::unbounded(fname, l);
            }
            return expected(fname, "a collection (vector, list, map, set, string or nil)", other);
        }
    })
}

/// Number of items a seqable value yields.
pub(crate) fn seq_len(v: &Value) -> Option<usize> {
    match v {
        Value::Nil => Some(0),
        Value::Vector(items) | Value::List(items) => Some(items.len()),
        Value::Set(s) => Some(s.len()),
        Value::Map(m) => Some(m.len()),
        Value::Str(s) => Some(s.chars().count()),
        _ => None,
    }
}

/// Bytes that iterating `v` builds beyond the slots the items fill: each character of a
/// string becomes a string of its own, and each map entry a `[k v]` vector. Collectors
/// charge this before collecting, so `(vec s)` of a 60 MB string fails at the charge
/// instead of after building gigabytes of one-character strings. (The slots themselves
/// are charged by the builder's output; they never outnumber the items of a collection
/// that already exists, or the characters charged here.)
pub(crate) fn materialized_cost(v: &Value) -> u64 {
    match v {
        Value::Str(s) => cost::ELEM.saturating_mul(s.chars().count() as u64),
        Value::Map(m) => cost::items(2).saturating_mul(m.len() as u64),
        _ => 0,
    }
}

/// Bytes to charge before keeping one item read from `source` one at a time: for a string
/// or a map, the item was built by the reading (a character's string, an entry's vector)
/// and takes a slot; items of vectors and sets already exist, and their slots are charged
/// with the builder's output.
pub(crate) fn kept_item_cost(source: &Value) -> u64 {
    match source {
        Value::Str(_) => 2 * cost::ELEM,
        Value::Map(_) => cost::items(2) + cost::ELEM,
        _ => 0,
    }
}

/// Every item of a seqable argument, collected after what [`materialized_cost`] counts
/// was charged.
pub(crate) fn collect_items(cx: &mut BuiltinContext, fname: &str, v: &Value) -> EvalResult<Vec<Value>> {
    let it = seq_iter(fname, v)?;
    cx.charge(materialized_cost(v))?;
    Ok(it.collect())
}

/// The printed form of a value, for `str` and messages.
pub(crate) fn printed(v: &Value) -> String {
    to_clojure(v)
}

/// The key function of the `*-by` family: a string names a key, looked up flexibly like a
/// keyword (`(sum-by "amount" rows)` is `(sum-by :amount rows)`, which also finds `"amount"`).
pub(crate) fn by_key(f: &Value) -> Value {
    match f {
        Value::Str(s) => Value::Keyword(s.clone()),
        other => other.clone(),
    }
}
