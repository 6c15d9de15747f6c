//! clojure.core's regular expressions: `re-pattern`, `re-find`, `re-matches`, `re-seq`...

use std::sync::Arc;

use crate::builtins::context::BuiltinContext;
use crate::builtins::string::{max_pieces, pieces_or_exceeded};
use crate::builtins::{Arity, Builtin, Category, Library, Table, expected, java_regex, str_arg};
use crate::error::{ErrorKind, EvalResult, err, type_err};
use crate::limits::cost;
use crate::regex_value::RegexValue;
use crate::value::Value;

use Arity::*;
use Category::Regex;

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    builtins: &[
        Builtin::new("re-pattern", Exact(1), Regex, re_pattern)
            .doc("A regex from a string (a regex passes through).")
            .ex(&[("(re-pattern \"\\\\d+\")", "#\"\\d+\"")]),
        Builtin::new("regex?", Exact(1), Regex, is_regex).doc("True for regexes.").ex(&[("(regex? #\"a\")", "true")]).lazy(),
        Builtin::new("re-find", Exact(2), Regex, re_find)
            .doc("First match: the string, or [whole group1 ...] when the pattern has groups (nil for a group that did not take part); nil when none.")
            .ex(&[("(re-find #\"(\\d+)-(\\d+)\" \"10-20\")", "[\"10-20\" \"10\" \"20\"]")]),
        Builtin::new("re-matches", Exact(2), Regex, re_matches)
            .doc("Like re-find, but the whole string must match.")
            .ex(&[("(re-matches #\"\\d+\" \"12a\")", "nil")]),
        Builtin::new("re-seq", Exact(2), Regex, re_seq)
            .doc("Every match (strings, or [whole group1 ...] vectors), as a vector; nil when there is none.")
            .ex(&[("(re-seq #\"\\d\" \"a1b2\")", "[\"1\" \"2\"]")]),
        Builtin::new("re-split", Exact(2), Regex, re_split)
            .ext()
            .doc("Splits a string on a regex, keeping every piece (trailing empty ones too): (re-split re s).")
            .ex(&[("(re-split #\",\" \"a,b,\")", "[\"a\" \"b\" \"\"]")]),
    ],
};

/// The vector form of a match: the string, or `[whole g1 ...]` when the pattern has groups;
/// the copies of the match and its groups are charged before they are made.
pub(crate) fn match_value(cx: &mut BuiltinContext, caps: &regex::Captures<'_>) -> EvalResult {
    let bytes: u64 = caps.iter().map(|m| m.map_or(0, |m| m.len() as u64 + cost::HEADER)).sum();
    cx.charge(bytes)?;
    if caps.len() == 1 {
        return Ok(caps.get(0).map_or(Value::Nil, |m| Value::str(m.as_str())));
    }
    cx.charge(cost::items(caps.len() as u64))?;
    Ok(Value::vector(caps.iter().map(|m| m.map_or(Value::Nil, |m| Value::str(m.as_str())))))
}

/// A regex argument; strings are refused with a pointer to `re-pattern`.
fn regex_arg<'a>(fname: &str, v: &'a Value) -> EvalResult<&'a RegexValue> {
    match v {
        Value::Regex(r) => Ok(r),
        Value::Str(s) => type_err(format!(
            "{fname}: expected a regex, got string {s:?}; write a regex literal like #\"\\d+\" or use (re-pattern s)"
        )),
        other => expected(fname, "a regex like #\"\\d+\"", other),
    }
}

/// A pattern for `extract`: a regex, or a string compiled as one (as upstream does).
pub(crate) fn pattern_arg(fname: &str, v: &Value) -> EvalResult<Arc<RegexValue>> {
    match v {
        Value::Regex(r) => Ok(r.clone()),
        Value::Str(s) => {
            RegexValue::compile(s).map(Arc::new).or_else(|m| err(ErrorKind::RuntimeError, format!("{fname}: {m}")))
        }
        other => expected(fname, "a regex like #\"\\d+\" or a pattern string", other),
    }
}

fn re_pattern(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Regex(_) => Ok(a[0].clone()),
        Value::Str(s) => {
            RegexValue::compile(s).map(|r| Value::Regex(Arc::new(r))).or_else(|m| err(ErrorKind::RuntimeError, m))
        }
        other => expected("re-pattern", "a string", other),
    }
}

fn is_regex(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(matches!(a[0], Value::Regex(_))))
}

fn re_find(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let re = regex_arg("re-find", &a[0])?;
    let s = str_arg("re-find", &a[1])?;
    match re.regex().captures(s) {
        Some(c) => match_value(cx, &c),
        None => Ok(Value::Nil),
    }
}

fn re_matches(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let re = regex_arg("re-matches", &a[0])?;
    let s = str_arg("re-matches", &a[1])?;
    let Some(full) = re.anchored() else {
        return err(ErrorKind::RuntimeError, format!("re-matches: the pattern #\"{}\" is too large", re.source()));
    };
    match full.captures(s) {
        Some(c) => match_value(cx, &c),
        None => Ok(Value::Nil),
    }
}

fn re_seq(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let re = regex_arg("re-seq", &a[0])?;
    let s = str_arg("re-seq", &a[1])?;
    let mut out = Vec::new();
    for c in java_regex::find_iter(re.regex(), s) {
        cx.tick(1)?;
        cx.charge(cost::ELEM)?;
        out.push(match_value(cx, &c)?);
    }
    cx.charge(cost::HEADER)?;
    Ok(if out.is_empty() { Value::Nil } else { Value::vector(out) })
}

fn re_split(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let compiled;
    let re: &RegexValue = match &a[0] {
        // upstream also takes a pattern string here
        Value::Str(_) => {
            compiled = pattern_arg("re-split", &a[0])?;
            &compiled
        }
        other => regex_arg("re-split", other)?,
    };
    let s = str_arg("re-split", &a[1])?;
    let max = max_pieces(cx);
    let parts = pieces_or_exceeded(cx, java_regex::split(re.regex(), s, -1, max))?;
    cx.tick(parts.len() as u64)?;
    cx.charge(cost::items(parts.len() as u64) + s.len() as u64)?;
    Ok(Value::vector(parts.into_iter().map(Value::str)))
}
