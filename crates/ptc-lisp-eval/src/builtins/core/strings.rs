//! clojure.core's strings, keywords and symbols: `str`, `subs`, `name`, `keyword`,
//! `symbol`, `format`, `parse-long`..., and the PTC extraction helpers.

use std::sync::Arc;

use crate::builtins::context::BuiltinContext;
use crate::builtins::core::regex::pattern_arg;
use crate::builtins::{Arity, Builtin, Category, Library, Table, expected, format, int_arg, str_arg};
use crate::error::{ErrorKind, EvalResult, err};
use crate::limits::cost;
use crate::printer::{format_float, to_clojure};
use crate::value::Value;

use Arity::*;
use Category::Core;
use Category::String as Str;

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    builtins: &[
        Builtin::new("str", AtLeast(0), Category::String, str_fn)
            .doc("Concatenates the printed forms; nil is empty, strings raw.")
            .ex(&[("(str \"a\" 1 nil :k)", "\"a1:k\"")]),
        Builtin::new("name", Exact(1), Str, name)
            .doc("Name of a keyword or symbol (without the colon or namespace), or a string.")
            .ex(&[("(name :user-id)", "\"user-id\""), ("(name :order/paid)", "\"paid\"")]),
        Builtin::new("keyword", Range(1, 2), Core, keyword)
            .doc("Keyword from a string, or from a namespace and a name (a keyword passes through; nil stays nil).")
            .ex(&[("(keyword \"a\")", ":a"), ("(keyword \"order\" \"paid\")", ":order/paid")]),
        Builtin::new("subs", Range(2, 3), Str, subs)
            .doc("Substring by character indexes [start, end); an end past the string is cut, a start out of range (or negative) gives \"\" (DIV-22).")
            .ex(&[("(subs \"hello\" 1 3)", "\"el\"")]),
        Builtin::new("char", Exact(1), Str, char_of)
            .doc("The character with a code point (a 1-character string, as characters are); a character stays itself.")
            .ex(&[("(char 65)", "\"A\""), ("(char \\a)", "\"a\"")]),
        Builtin::new("parse-long", Exact(1), Str, parse_long)
            .alias(&["parse-int"])
            .doc("Integer from a whole string, or nil (nil for non-strings; DIV-18).")
            .ex(&[("(parse-long \"42\")", "42"), ("(parse-long \"4x\")", "nil")]),
        Builtin::new("parse-double", Exact(1), Str, parse_double)
            .doc("Float from a whole string, or nil.")
            .ex(&[("(parse-double \"1e3\")", "1000.0")]),
        Builtin::new("parse-boolean", Exact(1), Str, parse_boolean)
            .doc("true or false from \"true\"/\"false\", else nil.")
            .ex(&[("(parse-boolean \"true\")", "true")]),
        Builtin::new("format", AtLeast(1), Str, format)
            .doc("Java-style formatting: %s %d %f %e %g %x %o %b %c %% %n, flags - + 0 , ( #, width, .precision, %2$s; floats round half-up; nil prints as empty (DIV-21).")
            .ex(&[
                ("(format \"%s has %d items\" \"cart\" 3)", "\"cart has 3 items\""),
                ("(format \"%.2f\" 2.675)", "\"2.68\""),
                ("(format \"%-6s|%5d|%,.1f\" \"ab\" 42 1234.56)", "\"ab    |   42|1,234.6\""),
            ]),
        Builtin::new("extract", Range(2, 3), Str, extract)
            .ext()
            .doc("Group n (default 1, or the whole match when the pattern has no groups; 0 = whole match) of the first match of a pattern (a regex, or a string compiled as one), or nil.")
            .ex(&[("(extract #\"id=(\\d+)\" \"x id=42\")", "\"42\"")]),
        Builtin::new("extract-int", Range(2, 4), Str, extract_int)
            .ext()
            .doc("Like extract, parsed as an integer; default (nil) when missing or not a number.")
            .ex(&[("(extract-int #\"(\\d+) items\" \"3 items\")", "3"), ("(extract-int \"n=(\\\\d+)\" \"none\" 1 0)", "0")]),
        Builtin::new("namespace", Exact(1), Core, namespace)
            .doc("The namespace of a keyword or symbol (\"order\" for :order/paid), or nil when it has none.")
            .ex(&[("(namespace :order/paid)", "\"order\""), ("(namespace :paid)", "nil")]),
        Builtin::new("symbol", Range(1, 2), Core, symbol)
            .doc("A symbol from a name, or from a namespace and a name.")
            .ex(&[("(symbol \"a\")", "a"), ("(symbol \"ns\" \"a\")", "ns/a")]),
    ],
};

/// Java's `Double.toString` style used by `str`: `1.0`, `0.1`, `1.0E20`, `1.0E-4`.
pub(crate) fn float_str(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    format_float(f)
}

/// The `str` rendering of an atom (anything but a vector, map or set, which print
/// through [`push_str_form`] under the memory budget).
fn atom_str(v: &Value, out: &mut String) {
    match v {
        Value::Nil => {}
        Value::Str(s) => out.push_str(s),
        Value::Float(f) => out.push_str(&float_str(*f)),
        Value::Int(i) => push_int(out, *i),
        // Pattern.toString: the source only
        Value::Regex(r) => out.push_str(r.source()),
        // a symbol's name, as Clojure's str gives it ((str 'abc) is "abc")
        Value::Symbol(s) => out.push_str(s),
        other => out.push_str(&to_clojure(other)),
    }
}

/// Bytes the `str` form of `v` takes at most, known without building it: exact for
/// strings, a bound for other atoms, 0 for collections (they are charged as they print).
/// Builders sum this over their parts and charge it before allocating, so
/// `(apply str (repeat 3000 s))` fails at the charge instead of after building gigabytes.
pub(crate) fn str_len_bound(v: &Value) -> u64 {
    let n = match v {
        Value::Nil => 0,
        Value::Str(s) => s.len(),
        Value::Bool(_) => 5,
        Value::Int(_) => 20,
        Value::Float(_) => 32,
        Value::Regex(r) => r.source().len(),
        Value::Keyword(k) | Value::Symbol(k) | Value::Var(k) => k.len() + 8,
        Value::Func(_) | Value::Lazy(_) | Value::Reduced(_) => 128,
        Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_) => 0,
    };
    n as u64
}

/// Appends the `str` form of `v` to `out`. Atoms are appended as they are (the caller
/// charged [`str_len_bound`] for them); collections are printed within what is left of
/// the memory budget and charged, so a huge shared value fails with `memory_exceeded`
/// instead of being built whole or silently cut.
pub(crate) fn push_str_form(cx: &mut BuiltinContext, v: &Value, out: &mut String) -> EvalResult<()> {
    match v {
        Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_) => {
            out.push_str(&cx.print_value(v, usize::MAX)?)
        }
        other => atom_str(other, out),
    }
    Ok(())
}

/// The `str` form of one value as a new string, charged to the memory budget before it is
/// built (`.toString`, `String/valueOf`, `format`'s `%s`, replacement values).
pub(crate) fn str_form(cx: &mut BuiltinContext, v: &Value) -> EvalResult<String> {
    let bound = str_len_bound(v);
    cx.charge(bound)?;
    let mut out = String::with_capacity(bound as usize);
    push_str_form(cx, v, &mut out)?;
    Ok(out)
}

/// The `str` form of several values concatenated, with `sep` between them: the bytes of
/// every part whose size is known are charged before the string is allocated, and each
/// collection is charged as it prints (`str`, `str/join`, `String/join`).
/// `parts` is called twice: once to size the result, once to build it.
pub(crate) fn concat_str_forms<I>(cx: &mut BuiltinContext, parts: impl Fn() -> I, sep: &str) -> EvalResult<String>
where
    I: Iterator,
    I::Item: std::borrow::Borrow<Value>,
{
    use std::borrow::Borrow;
    let mut known = 0u64;
    let mut count = 0u64;
    for v in parts() {
        known = known.saturating_add(str_len_bound(v.borrow()));
        count += 1;
    }
    known = known.saturating_add((sep.len() as u64).saturating_mul(count.saturating_sub(1)));
    cx.charge(known.saturating_add(16))?;
    let mut out = String::with_capacity(usize::try_from(known).unwrap_or(0));
    for (i, v) in parts().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        push_str_form(cx, v.borrow(), &mut out)?;
    }
    Ok(out)
}

/// A case mapping of `s` (`upper-case`, `capitalize`...): the input's size is charged
/// before the copy is made, and the rare growth (`ß` upper-cases to `SS`) after it.
pub(crate) fn case_mapped(cx: &mut BuiltinContext, s: &str, map: impl FnOnce(&str) -> String) -> EvalResult {
    charge_text(cx, s.len())?;
    let out = map(s);
    cx.charge(out.len().saturating_sub(s.len()) as u64)?;
    Ok(Value::str(out))
}

/// Charges a string result of `bytes` before it is built (for functions whose output size
/// is known from their input: trims, case changes, substrings).
pub(crate) fn charge_text(cx: &mut BuiltinContext, bytes: usize) -> EvalResult<()> {
    cx.charge((bytes as u64).saturating_add(crate::limits::cost::HEADER))?;
    Ok(())
}

/// Appends the decimal form of `i` (as `i.to_string()`, without building a string first).
fn push_int(out: &mut String, i: i64) {
    let mut digits = [0u8; 20];
    let mut pos = digits.len();
    let mut n = i.unsigned_abs();
    loop {
        pos -= 1;
        digits[pos] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        out.push('-');
    }
    out.extend(digits[pos..].iter().map(|&d| d as char));
}

fn str_fn(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    // `(str acc x)` where nobody else holds the string `acc` (an accumulator moved into
    // the call): it is freed when the call returns, so only what the new string adds is
    // charged. A string built up a piece at a time in a loop is then charged about its
    // final length, where charging every intermediate copy in full grew with the square
    // of the pieces and ended in memory_exceeded on a few thousand lines.
    if let [Value::Str(acc), rest @ ..] = args
        && !rest.is_empty()
        && Arc::strong_count(acc) == 1
    {
        let tail = concat_str_forms(cx, || rest.iter(), "")?;
        let mut out = String::with_capacity(acc.len() + tail.len());
        out.push_str(acc);
        out.push_str(&tail);
        return Ok(Value::str(out));
    }
    Ok(Value::str(concat_str_forms(cx, || args.iter(), "")?))
}

pub(crate) fn name(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Keyword(k) | Value::Symbol(k) => match crate::builtins::core::strings::split_name(k) {
            (Some(_), name) => Ok(Value::str(name)),
            (None, _) => Ok(Value::Str(k.clone())),
        },
        Value::Str(_) => Ok(a[0].clone()),
        other => expected("name", "a keyword, symbol or string", other),
    }
}

pub(crate) fn keyword(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let [ns, name] = a {
        return match (&*ns, &*name) {
            (Value::Nil, Value::Str(n)) if !n.is_empty() => {
                cx.note_made_keyword(n)?;
                Ok(Value::Keyword(n.clone()))
            }
            (Value::Str(ns), Value::Str(n)) if !n.is_empty() => {
                let k: Arc<str> = Arc::from(format!("{ns}/{n}"));
                cx.note_made_keyword(&k)?;
                Ok(Value::Keyword(k))
            }
            _ => err(
                ErrorKind::TypeError,
                "keyword takes a namespace string (or nil) and a name string, like (keyword \"order\" \"paid\")",
            ),
        };
    }
    match &a[0] {
        Value::Str(s) if !s.is_empty() => {
            cx.note_made_keyword(s)?;
            Ok(Value::Keyword(s.clone()))
        }
        Value::Keyword(_) | Value::Nil => Ok(a[0].clone()),
        other => expected("keyword", "a non-empty string", other),
    }
}

/// A `subs` index: integers, or floats truncated toward zero as Clojure's interop does.
fn subs_index(v: &Value) -> EvalResult<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Float(f) if f.is_finite() => Ok(f.trunc() as i64),
        Value::Float(f) if f.is_nan() => Ok(0),
        other => expected("subs", "an integer index", other),
    }
}

fn subs(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = str_arg("subs", &a[0])?;
    let n = s.chars().count() as i64;
    let start = subs_index(&a[1])?;
    // DIV-22: out of range gives "" (a negative start, typically a -1 from .indexOf, too)
    // rather than an exception; an end past the string is cut to its length
    if start < 0 {
        return Ok(Value::str(""));
    }
    let start = start.min(n);
    let end = match a.get(2) {
        Some(e) => subs_index(e)?.clamp(start, n),
        None => n,
    };
    let from = s.char_indices().nth(start as usize).map_or(s.len(), |(b, _)| b);
    let to = s[from..].char_indices().nth((end - start) as usize).map_or(s.len(), |(b, _)| from + b);
    let out = s.get(from..to).unwrap_or("");
    crate::builtins::core::strings::charge_text(cx, out.len())?;
    Ok(Value::str(out))
}

fn char_of(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Str(s) if s.chars().count() == 1 => Ok(a[0].clone()),
        Value::Int(i) => match u32::try_from(*i).ok().and_then(char::from_u32) {
            Some(c) => Ok(Value::str(c.to_string())),
            None => err(ErrorKind::ArithmeticError, format!("char: {i} is not a Unicode code point")),
        },
        other => expected("char", "a code point (integer) or a character", other),
    }
}

fn parse_long(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(match &a[0] {
        Value::Str(s) if !s.starts_with('+') || s.len() > 1 => s.parse::<i64>().map_or(Value::Nil, Value::Int),
        _ => Value::Nil,
    })
}

fn parse_double(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(match &a[0] {
        Value::Str(s) => {
            let t = s.as_ref();
            let ok = !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'));
            match (ok, t) {
                (_, "NaN") => Value::Float(f64::NAN),
                (_, "Infinity" | "+Infinity") => Value::Float(f64::INFINITY),
                (_, "-Infinity") => Value::Float(f64::NEG_INFINITY),
                (true, _) => t.parse::<f64>().map_or(Value::Nil, Value::Float),
                _ => Value::Nil,
            }
        }
        _ => Value::Nil,
    })
}

fn parse_boolean(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(match &a[0] {
        Value::Str(s) if &**s == "true" => Value::Bool(true),
        Value::Str(s) if &**s == "false" => Value::Bool(false),
        _ => Value::Nil,
    })
}

pub(crate) fn format(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let template = str_arg("format", &a[0])?;
    let out = format::format(cx, template, &a[1..])?;
    cx.charge(cost::HEADER)?;
    Ok(Value::str(out))
}

fn extract_group(cx: &mut BuiltinContext, a: &[Value], fname: &str) -> EvalResult<Option<String>> {
    let re = pattern_arg(fname, &a[0])?;
    let s = match &a[1] {
        Value::Str(s) => s.clone(),
        Value::Nil => return Ok(None),
        other => return expected(fname, "a string", other),
    };
    let n = match a.get(2) {
        Some(Value::Nil) | None => usize::from(re.regex().captures_len() > 1),
        Some(v) => {
            let n = int_arg(fname, v)?;
            if n < 0 {
                return err(ErrorKind::RuntimeError, format!("{fname}: group {n} does not exist; groups count from 0"));
            }
            n as usize
        }
    };
    cx.tick(1)?;
    Ok(re.regex().captures(&s).and_then(|c| c.get(n)).map(|m| m.as_str().to_string()))
}

pub(crate) fn extract(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(extract_group(cx, a, "extract")?.map_or(Value::Nil, Value::str))
}

fn extract_int(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let found = extract_group(cx, a, "extract-int")?.and_then(|s| s.trim().parse::<i64>().ok());
    Ok(found.map_or_else(|| a.get(3).cloned().unwrap_or(Value::Nil), Value::Int))
}

/// The namespace and name of a keyword or symbol's text (`order/paid`).
pub(crate) fn split_name(s: &str) -> (Option<&str>, &str) {
    match s.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() => (Some(ns), name),
        _ => (None, s),
    }
}

fn namespace(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Keyword(s) | Value::Symbol(s) => Ok(split_name(s).0.map_or(Value::Nil, Value::str)),
        other => expected("namespace", "a keyword or symbol", other),
    }
}

fn symbol(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let part = |v: &Value| -> EvalResult<Arc<str>> {
        match v {
            Value::Str(s) | Value::Symbol(s) | Value::Keyword(s) if !s.is_empty() => Ok(s.clone()),
            other => expected("symbol", "a non-empty string", other),
        }
    };
    match a {
        [name] => Ok(Value::Symbol(part(name)?)),
        [Value::Nil, name] => Ok(Value::Symbol(part(name)?)),
        [ns, name] => Ok(Value::Symbol(Arc::from(format!("{}/{}", part(ns)?, part(name)?)))),
        _ => err(ErrorKind::ArityError, "symbol takes a name, or a namespace and a name"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn push_int_is_to_string(i in prop_oneof![any::<i64>(), -1000i64..1000, Just(i64::MIN), Just(i64::MAX), Just(0i64)]) {
            let mut out = String::from("x");
            push_int(&mut out, i);
            prop_assert_eq!(out, format!("x{i}"));
        }
    }
}
