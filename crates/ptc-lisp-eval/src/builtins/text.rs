//! Text: string searching and shaping, parsing, `format`, regexes, JSON, and `extract`.
//!
//! Strings index by Unicode scalar values (`(count "😀")` is 1; Clojure counts UTF-16
//! units). Regex functions follow Java's matching loop and split rules (see
//! [`java_regex`]); `format` follows `java.util.Formatter` (see [`format`]).

mod format;
mod java_regex;

use std::sync::Arc;

use super::{Arity, Builtin, Category, expected, int_arg, str_arg};
use crate::builtins::context::BuiltinContext;
use crate::error::{ErrorKind, EvalResult, err, type_err};
use crate::limits::cost;
use crate::printer::to_clojure;
use crate::regex_value::RegexValue;
use crate::value::Value;

use Arity::*;
use Category::{Json, Regex, String as Str};

/// Text builtins.
pub static BUILTINS: &[Builtin] = &[
    Builtin::new("index-of", Range(2, 3), Str, index_of)
        .doc("Character index of the first occurrence (from an optional start), or nil.")
        .ex(&[("(index-of \"hello\" \"l\")", "2"), ("(index-of \"hello\" \"z\")", "nil")]),
    Builtin::new("last-index-of", Range(2, 3), Str, last_index_of)
        .doc("Character index of the last occurrence, or nil.")
        .ex(&[("(last-index-of \"hello\" \"l\")", "3")]),
    Builtin::new("str/replace", Exact(3), Str, replace)
        .doc("clojure.string/replace: replaces every match: string for string (literally), or regex for a string ($1 / ${name} refer to groups, \\$ is a dollar) or for (fn [match]) — the fn gets the match, or [match g1 ...] when the regex has groups.")
        .ex(&[("(str/replace \"a.b\" \".\" \"-\")", "\"a-b\""), ("(str/replace \"a1b22\" #\"\\d+\" \"#\")", "\"a#b#\"")]),
    Builtin::new("replace-first", Exact(3), Str, replace_first)
        .doc("Replaces the first match (same arguments as replace).")
        .ex(&[("(replace-first \"aaa\" \"a\" \"b\")", "\"baa\"")]),
    Builtin::new("re-quote-replacement", Exact(1), Str, re_quote_replacement)
        .doc("A replacement string with \\ and $ escaped, so replace inserts it literally.")
        .ex(&[("(re-quote-replacement \"$1\")", "\"\\\\$1\"")]),
    Builtin::new("str/reverse", Exact(1), Str, str_reverse)
        .doc("clojure.string/reverse: the characters of a string in reverse order.")
        .ex(&[("(str/reverse \"abc\")", "\"cba\"")]),
    Builtin::new("split-lines", Exact(1), Str, split_lines)
        .doc("Lines of a string split at \\n or \\r\\n; trailing empty lines dropped.")
        .ex(&[("(split-lines \"a\\nb\\n\")", "[\"a\" \"b\"]")]),
    Builtin::new("triml", Exact(1), Str, triml)
        .doc("String without leading whitespace.")
        .ex(&[("(triml \"  a \")", "\"a \"")]),
    Builtin::new("trimr", Exact(1), Str, trimr)
        .doc("String without trailing whitespace.")
        .ex(&[("(trimr \" a  \")", "\" a\"")]),
    Builtin::new("trim-newline", Exact(1), Str, trim_newline)
        .doc("String without trailing newlines.")
        .ex(&[("(trim-newline \"a\\n\\n\")", "\"a\"")]),
    Builtin::new("char", Exact(1), Str, char_of)
        .doc("The character with a code point (a 1-character string, as characters are); a character stays itself.")
        .ex(&[("(char 65)", "\"A\""), ("(char \\a)", "\"a\"")]),
    Builtin::new("capitalize", Exact(1), Str, capitalize)
        .doc("First character upper-cased, the rest lower-cased.")
        .ex(&[("(capitalize \"hELLO\")", "\"Hello\"")]),
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
    Builtin::new("pr-str", AtLeast(0), Str, pr_str)
        .doc("Printed (readable) forms joined by spaces.")
        .ex(&[("(pr-str \"a\" 1 nil)", "\"\\\"a\\\" 1 nil\"")]),
    Builtin::new("print-str", AtLeast(0), Str, print_str)
        .doc("The arguments printed for people (strings unquoted, also inside collections), space-separated.")
        .ex(&[("(print-str \"a\" 1 nil)", "\"a 1 nil\""), ("(print-str [\"x\" :k])", "\"[x :k]\"")]),
    Builtin::new("println-str", AtLeast(0), Str, println_str)
        .doc("Like print-str, with a trailing newline.")
        .ex(&[("(println-str \"x\" 1)", "\"x 1\\n\"")]),
    Builtin::new("prn-str", AtLeast(0), Str, prn_str)
        .doc("Like pr-str, with a trailing newline.")
        .ex(&[("(prn-str \"x\")", "\"\\\"x\\\"\\n\"")]),
    Builtin::new("str/escape", Exact(2), Str, escape)
        .doc("String with characters replaced through a {char replacement} map (or a fn of the char; nil keeps it).")
        .ex(&[("(str/escape \"a&b\" {\\& \"&amp;\"})", "\"a&amp;b\"")]),
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
    Builtin::new("re-pattern", Exact(1), Regex, re_pattern)
        .doc("A regex from a string (a regex passes through).")
        .ex(&[("(re-pattern \"\\\\d+\")", "#\"\\d+\"")]),
    Builtin::new("regex?", Exact(1), Regex, is_regex).doc("True for regexes.").ex(&[("(regex? #\"a\")", "true")]),
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
    Builtin::new("json/parse-string", Range(1, 2), Json, json_parse)
        .alias(&["json/read-str"])
        .doc("Value from JSON text (string keys; with true as second argument keyword keys, with a fn its result); nil when the text is not JSON (DIV-23).")
        .ex(&[
            ("(json/parse-string \"{\\\"a\\\": [1, 2]}\")", "{\"a\" [1 2]}"),
            ("(json/parse-string \"{\\\"a\\\": 1}\" true)", "{:a 1}"),
        ]),
    Builtin::new("json/generate-string", Exact(1), Json, json_generate)
        .alias(&["json/write-str"])
        .doc("JSON text of a value (keywords become strings); nil when it has no JSON form (DIV-24).")
        .ex(&[("(json/generate-string {:a [1 nil]})", "\"{\\\"a\\\":[1,null]}\"")]),
    Builtin::new("json/parse-lines", Exact(1), Json, json_parse_lines)
        .ext()
        .doc("One value per non-blank line of JSON Lines text (nil for a bad line).")
        .ex(&[("(json/parse-lines \"1\\n\\n[2]\")", "[1 [2]]")]),
];

fn chars_index(s: &str, byte: usize) -> i64 {
    s.get(..byte).map_or(0, |p| p.chars().count() as i64)
}
fn char_to_byte(s: &str, idx: i64) -> usize {
    s.char_indices().nth(idx.max(0) as usize).map(|(b, _)| b).unwrap_or(s.len())
}
fn index_of(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = str_arg("index-of", &a[0])?;
    let sub = str_arg("index-of", &a[1])?;
    let from = match a.get(2) {
        Some(v) => char_to_byte(s, int_arg("index-of", v)?),
        None => 0,
    };
    Ok(s.get(from..).and_then(|rest| rest.find(sub)).map_or(Value::Nil, |b| Value::Int(chars_index(s, from + b))))
}
fn last_index_of(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = str_arg("last-index-of", &a[0])?;
    let sub = str_arg("last-index-of", &a[1])?;
    let hay = match a.get(2) {
        Some(v) => {
            let from = int_arg("last-index-of", v)?;
            if from < 0 {
                return Ok(Value::Nil);
            }
            let end = char_to_byte(s, from);
            s.get(..(end + sub.len()).min(s.len())).unwrap_or(s)
        }
        None => s,
    };
    Ok(hay.rfind(sub).map_or(Value::Nil, |b| Value::Int(chars_index(s, b))))
}

/// The vector form of a match: the string, or `[whole g1 ...]` when the pattern has groups;
/// the copies of the match and its groups are charged before they are made.
fn match_value(cx: &mut BuiltinContext, caps: &regex::Captures<'_>) -> EvalResult {
    let bytes: u64 = caps.iter().map(|m| m.map_or(0, |m| m.len() as u64 + cost::HEADER)).sum();
    cx.charge(bytes)?;
    if caps.len() == 1 {
        return Ok(caps.get(0).map_or(Value::Nil, |m| Value::str(m.as_str())));
    }
    cx.charge(cost::items(caps.len() as u64))?;
    Ok(Value::vector(caps.iter().map(|m| m.map_or(Value::Nil, |m| Value::str(m.as_str())))))
}

fn replace_impl(cx: &mut BuiltinContext, a: &mut [Value], fname: &str, first_only: bool) -> EvalResult {
    let s = str_arg(fname, &a[0])?;
    let out = match (&a[1], &a[2]) {
        (Value::Str(from), Value::Str(to)) => {
            // charge the result before building it: matches × replacement can be huge
            let hits = if first_only { usize::from(s.contains(&**from)) } else { s.matches(&**from).count() };
            cx.tick(hits as u64)?;
            cx.charge((s.len() as u64).saturating_add((hits as u64).saturating_mul(to.len() as u64)))?;
            if first_only { s.replacen(&**from, to, 1) } else { s.replace(&**from, to) }
        }
        (Value::Regex(re), Value::Str(to)) => {
            let pieces = java_regex::parse_replacement(fname, re.regex(), to)?;
            let mut out = String::new();
            let mut last = 0;
            for caps in java_regex::find_iter(re.regex(), s) {
                cx.tick(1)?;
                let Some(m) = caps.get(0) else { continue };
                let gap = s.get(last..m.start()).unwrap_or("");
                // a replacement like "$0$0$0..." multiplies the match: size it first
                cx.charge((gap.len() as u64).saturating_add(java_regex::expanded_len(&pieces, &caps)))?;
                out.push_str(gap);
                java_regex::expand(&pieces, &caps, &mut out);
                last = m.end();
                if first_only {
                    break;
                }
            }
            let tail = s.get(last..).unwrap_or("");
            cx.charge(tail.len() as u64)?;
            out.push_str(tail);
            out
        }
        (Value::Regex(re), f @ Value::Func(_)) => {
            let f = f.clone();
            let mut out = String::new();
            let mut last = 0;
            for caps in java_regex::find_iter(re.regex(), s) {
                cx.tick(1)?;
                let Some(m) = caps.get(0) else { continue };
                let gap = s.get(last..m.start()).unwrap_or("");
                cx.charge(gap.len() as u64)?;
                out.push_str(gap);
                let matched = match_value(cx, &caps)?;
                let r = cx.apply(&f, &mut [matched])?;
                cx.charge(super::core::str_len_bound(&r))?;
                super::core::push_str_form(cx, &r, &mut out)?;
                last = m.end();
                if first_only {
                    break;
                }
            }
            let tail = s.get(last..).unwrap_or("");
            cx.charge(tail.len() as u64)?;
            out.push_str(tail);
            out
        }
        (Value::Str(_), other) => {
            return expected(fname, "a string to insert (a fn replacement needs a regex pattern)", other);
        }
        (Value::Regex(_), other) => return expected(fname, "a replacement string or a fn of the match", other),
        (m, _) => return expected(fname, "a string or regex to match", m),
    };
    cx.charge(cost::HEADER)?;
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
pub(super) fn replace(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    replace_impl(cx, a, "replace", false)
}
fn replace_first(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    replace_impl(cx, a, "replace-first", true)
}
fn re_quote_replacement(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = str_arg("re-quote-replacement", &a[0])?;
    super::core::charge_text(cx, s.len() + s.matches(['\\', '$']).count())?;
    Ok(Value::str(s.replace('\\', "\\\\").replace('$', "\\$")))
}

/// `clojure.string/split`: Java's `Pattern.split` on a regex; a 1-character string splits
/// on that character and "" into characters (PTC extensions; longer strings are refused,
/// DIV-50). An optional limit caps the number of pieces (negative keeps trailing empties).
pub fn split(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let parts = split_parts(cx, a)?;
    Ok(Value::vector(parts.into_iter().map(Value::str)))
}

/// The pieces `(split s re limit?)` returns, as slices of `s`, with the call's fuel and
/// memory charged (a fused chain turns them into values one at a time).
pub fn split_parts<'a>(cx: &mut BuiltinContext, a: &'a [Value]) -> EvalResult<Vec<&'a str>> {
    let s = str_arg("split", &a[0])?;
    let limit = match a.get(2) {
        Some(l) => int_arg("split", l)?,
        None => 0,
    };
    let max = max_pieces(cx);
    let parts = match &a[1] {
        Value::Regex(r) if r.source() == "\\s+" => java_regex::split_whitespace(s, limit, max),
        Value::Regex(r) => java_regex::split(r.regex(), s, limit, max),
        Value::Str(sep) if sep.chars().count() <= 1 => {
            let literal = RegexValue::compile(&regex::escape(sep)).or_else(|m| err(ErrorKind::RuntimeError, m))?;
            java_regex::split(literal.regex(), s, limit, max)
        }
        Value::Str(sep) => {
            return type_err(format!(
                "split: a plain-string separator must be one character, got {sep:?}; use a regex such as #\"{}\"",
                regex::escape(sep)
            ));
        }
        other => return expected("split", "a regex like #\",\" or a 1-character string", other),
    };
    let parts = pieces_or_exceeded(cx, parts)?;
    cx.tick(parts.len() as u64)?;
    cx.charge(cost::items(parts.len() as u64) + s.len() as u64)?;
    Ok(parts)
}
/// The most pieces a split may collect: each is charged at least one element, so more
/// than the budget has room for fail before they are all found.
fn max_pieces(cx: &BuiltinContext) -> usize {
    usize::try_from(cx.heap_left() / cost::ELEM).unwrap_or(usize::MAX).saturating_add(1)
}
/// The pieces of a split, or `memory_exceeded` when there were more than the budget holds.
fn pieces_or_exceeded<'a>(cx: &mut BuiltinContext, parts: Option<Vec<&'a str>>) -> EvalResult<Vec<&'a str>> {
    match parts {
        Some(p) => Ok(p),
        None => {
            let left = cx.heap_limit();
            cx.charge(left.saturating_add(1))?;
            Ok(Vec::new())
        }
    }
}
fn split_lines(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = str_arg("split-lines", &a[0])?;
    // counted before they are collected: one line per '\n', plus the last
    let lines = s.bytes().filter(|&b| b == b'\n').count() as u64 + 1;
    cx.charge(cost::items(lines))?;
    let mut lines: Vec<&str> = s.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    // Java's split: no match keeps the input, otherwise trailing empty lines go
    if lines.len() > 1 {
        while lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
    }
    cx.tick(lines.len() as u64)?;
    cx.charge(s.len() as u64)?;
    Ok(Value::vector(lines.into_iter().map(Value::str)))
}
fn triml(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let out = str_arg("triml", &a[0])?.trim_start_matches(super::java_whitespace);
    super::core::charge_text(cx, out.len())?;
    Ok(Value::str(out))
}
fn trimr(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let out = str_arg("trimr", &a[0])?.trim_end_matches(super::java_whitespace);
    super::core::charge_text(cx, out.len())?;
    Ok(Value::str(out))
}
fn trim_newline(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let out = str_arg("trim-newline", &a[0])?.trim_end_matches(['\n', '\r']);
    super::core::charge_text(cx, out.len())?;
    Ok(Value::str(out))
}
fn capitalize(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = str_arg("capitalize", &a[0])?;
    super::core::case_mapped(cx, s, |s| {
        let mut chars = s.chars();
        match chars.next() {
            Some(c) => c.to_uppercase().chain(chars.as_str().to_lowercase().chars()).collect::<String>(),
            None => String::new(),
        }
    })
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

/// Printed forms (`pr`), or forms for people (`print`: strings unquoted at every depth).
fn printed_all(cx: &mut BuiltinContext, a: &[Value], readable: bool) -> EvalResult<String> {
    let mut out = String::new();
    for (i, v) in a.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if readable {
            // printed within what is left of the budget, and charged: never cut silently
            let text = cx.print_value(v, usize::MAX)?;
            out.push_str(&text);
        } else {
            print_plain(cx, v, &mut out, 0)?;
        }
    }
    cx.charge(cost::HEADER)?;
    Ok(out)
}
fn print_plain(cx: &mut BuiltinContext, v: &Value, out: &mut String, depth: usize) -> EvalResult<()> {
    cx.tick(1)?;
    if depth > 1_000 {
        // as the printer does: nesting this deep is cut, not followed
        out.push_str("...");
        return Ok(());
    }
    let items = |cx: &mut BuiltinContext, it: &mut dyn Iterator<Item = &Value>, out: &mut String| -> EvalResult<()> {
        for (i, x) in it.enumerate() {
            if i > 0 {
                out.push(' ');
            }
            print_plain(cx, x, out, depth + 1)?;
        }
        Ok(())
    };
    match v {
        Value::Str(s) => {
            cx.charge(s.len() as u64)?;
            out.push_str(s);
        }
        Value::Vector(xs) => {
            out.push('[');
            items(cx, &mut xs.iter(), out)?;
            out.push(']');
        }
        Value::List(xs) => {
            out.push('(');
            items(cx, &mut xs.iter(), out)?;
            out.push(')');
        }
        Value::Set(xs) => {
            out.push_str("#{");
            items(cx, &mut xs.iter(), out)?;
            out.push('}');
        }
        Value::Map(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                print_plain(cx, k, out, depth + 1)?;
                out.push(' ');
                print_plain(cx, x, out, depth + 1)?;
            }
            out.push('}');
        }
        other => {
            let text = to_clojure(other);
            cx.charge(text.len() as u64)?;
            out.push_str(&text);
        }
    }
    Ok(())
}
fn pr_str(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(printed_all(cx, a, true)?))
}
fn print_str(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(printed_all(cx, a, false)?))
}
fn println_str(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(printed_all(cx, a, false)? + "\n"))
}
fn prn_str(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(printed_all(cx, a, true)? + "\n"))
}
fn escape(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = str_arg("str/escape", &a[0])?;
    let cmap = a[1].clone();
    if !matches!(cmap, Value::Map(_) | Value::Func(_)) {
        return expected("str/escape", "a {char replacement} map or a fn of the character", &cmap);
    }
    let mut out = String::new();
    for c in s.chars() {
        cx.tick(1)?;
        let ch = Value::str(c.to_string());
        let r = match &cmap {
            Value::Map(m) => m.get(&ch).cloned().unwrap_or(Value::Nil),
            f => cx.apply(f, &mut [ch])?,
        };
        match r {
            Value::Nil => {
                cx.charge(c.len_utf8() as u64)?;
                out.push(c);
            }
            r => {
                cx.charge(super::core::str_len_bound(&r))?;
                super::core::push_str_form(cx, &r, &mut out)?;
            }
        }
    }
    cx.charge(cost::HEADER)?;
    Ok(Value::str(out))
}

fn format(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let template = str_arg("format", &a[0])?;
    let out = format::format(cx, template, &a[1..])?;
    cx.charge(cost::HEADER)?;
    Ok(Value::str(out))
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
fn pattern_arg(fname: &str, v: &Value) -> EvalResult<Arc<RegexValue>> {
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
fn extract(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(extract_group(cx, a, "extract")?.map_or(Value::Nil, Value::str))
}
fn extract_int(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let found = extract_group(cx, a, "extract-int")?.and_then(|s| s.trim().parse::<i64>().ok());
    Ok(found.map_or_else(|| a.get(3).cloned().unwrap_or(Value::Nil), Value::Int))
}

/// Re-keys parsed JSON objects: `true` makes keyword keys, a fn maps each key string.
fn rekey(cx: &mut BuiltinContext, v: Value, key_fn: &Value) -> EvalResult {
    cx.tick(1)?;
    Ok(match v {
        Value::Map(m) => {
            let mut out = crate::value::PMap::new();
            for (k, x) in m.iter() {
                let k = match (key_fn, k) {
                    (Value::Bool(true), Value::Str(s)) if !s.is_empty() && !s.contains(['/', ' ']) => {
                        Value::Keyword(s.clone())
                    }
                    (Value::Func(_), k) => cx.apply(key_fn, &mut [k.clone()])?,
                    (_, k) => k.clone(),
                };
                out.insert(k, rekey(cx, x.clone(), key_fn)?);
            }
            Value::Map(Arc::new(out))
        }
        Value::Vector(xs) | Value::List(xs) => {
            let mut out = Vec::with_capacity(xs.len());
            for x in xs.iter() {
                out.push(rekey(cx, x.clone(), key_fn)?);
            }
            Value::vector(out)
        }
        other => other,
    })
}
/// Parses JSON text under the run's memory budget and deadline; invalid JSON is nil.
fn parse_json_metered(cx: &mut BuiltinContext, text: &str) -> EvalResult {
    let left = cx.heap_left();
    let mut pb = cx.json_budget(left);
    let parsed = crate::json::parse_with(text, &mut pb);
    let used = left - pb.bytes_left;
    cx.charge(used)?;
    match parsed {
        Ok(v) => Ok(v),
        Err(crate::json::ParseError::Syntax(_)) => Ok(Value::Nil),
        Err(crate::json::ParseError::TooLarge) => {
            // charge past the limit so the error names it
            cx.charge(left.saturating_add(1)).map(|()| Value::Nil)
        }
        Err(crate::json::ParseError::OutOfTime) => cx.check_time().map(|()| Value::Nil),
    }
}

fn json_parse(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let Value::Str(s) = &a[0] else { return Ok(Value::Nil) };
    let s = s.clone();
    let parsed = parse_json_metered(cx, &s)?;
    match a.get(1) {
        Some(k @ (Value::Bool(true) | Value::Func(_))) => {
            let k = k.clone();
            rekey(cx, parsed, &k)
        }
        Some(Value::Nil | Value::Bool(false)) | None => Ok(parsed),
        Some(other) => expected("json/parse-string", "true (keyword keys) or a fn of each key", other),
    }
}
fn json_generate(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let left = cx.heap_left();
    let cap = usize::try_from(left).unwrap_or(usize::MAX);
    match crate::json::generate_bounded(&a[0], cap) {
        Ok(s) => {
            cx.charge(s.len() as u64 + cost::HEADER)?;
            Ok(Value::str(s))
        }
        Err(e) if e.0.contains("larger than") => cx.charge(left.saturating_add(1)).map(|()| Value::Nil),
        // no JSON form (a function, NaN...) is nil; a walk stopped by the deadline raises
        Err(_) => cx.check_time().map(|()| Value::Nil),
    }
}
fn json_parse_lines(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = str_arg("json/parse-lines", &a[0])?.to_string();
    cx.charge(cost::HEADER)?;
    let mut out = Vec::new();
    for line in s.lines().filter(|l| !l.trim().is_empty()) {
        cx.tick(1)?;
        cx.charge(cost::ELEM)?;
        out.push(parse_json_metered(cx, line)?);
    }
    Ok(Value::vector(out))
}

fn str_reverse(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = str_arg("str/reverse", &a[0])?;
    super::core::charge_text(cx, s.len())?;
    Ok(Value::str(s.chars().rev().collect::<String>()))
}

#[cfg(test)]
mod tests {
    use crate::{RunOptions, RunResult, run};

    /// The printed result, or `!kind` for an error.
    fn eval(src: &str) -> String {
        let out = run(src, RunOptions::default());
        match out.result {
            RunResult::Error(e) => format!("!{}", e.kind.as_str()),
            _ => out.printed,
        }
    }

    fn check(cases: &[(&str, &str)]) {
        for (src, want) in cases {
            assert_eq!(eval(src), *want, "{src}");
        }
    }

    #[test]
    fn split_follows_java() {
        check(&[
            (r#"(split "a,b,,c,," #",")"#, r#"["a" "b" "" "c"]"#),
            (r#"(split ",,," #",")"#, "[]"),
            (r#"(split "" #",")"#, r#"[""]"#),
            (r#"(split "abc" #"")"#, r#"["a" "b" "c"]"#),
            (r#"(split "a,b,,," #"," -1)"#, r#"["a" "b" "" "" ""]"#),
            (r#"(split "a,b,c" #"," 2)"#, r#"["a" "b,c"]"#),
            (r#"(split "a,,b" ",")"#, r#"["a" "" "b"]"#),
            (r#"(split "hello" "")"#, r#"["h" "e" "l" "l" "o"]"#),
            (r#"(split "a::b" "::")"#, "!type_error"),
            (r#"(split-lines "a\nb\r\n\n")"#, r#"["a" "b"]"#),
            (r#"(split-lines "\n")"#, "[]"),
            (r#"(split-lines "")"#, r#"[""]"#),
            (r#"(re-split #"," "a,b,,")"#, r#"["a" "b" "" ""]"#),
        ]);
    }

    #[test]
    fn searching_and_slicing() {
        check(&[
            (r#"(index-of "hello" "")"#, "0"),
            (r#"(last-index-of "hello" "")"#, "5"),
            (r#"(index-of "hello" "z")"#, "nil"),
            (r#"(last-index-of "hello" "l" -1)"#, "nil"),
            (r#"(index-of "😀a" "a")"#, "1"),
            (r#"(subs "hello" -1)"#, r#""""#),
            (r#"(subs "hello" 1 99)"#, r#""ello""#),
            (r#"(subs "hello" 1.5)"#, r#""ello""#),
            (r#"(subs "hello" 9)"#, r#""""#),
            (r#"(join 1 [2 3])"#, r#""213""#),
            (r#"(join ", " [1 nil 2])"#, r#""1, , 2""#),
            (r#"(capitalize "hELLO wORLD")"#, r#""Hello world""#),
            (r#"(name :a-b)"#, r#""a-b""#),
            (r#"(name nil)"#, "!type_error"),
        ]);
    }

    #[test]
    fn replace_with_groups_and_fns() {
        check(&[
            (r#"(replace "a.b.c" "." "-")"#, r#""a-b-c""#),
            (r#"(replace "john smith" #"(\w+) (\w+)" "$2, $1")"#, r#""smith, john""#),
            (r#"(replace "abc" #"(?<x>b)" "<${x}>")"#, r#""a<b>c""#),
            (r#"(replace "abc" #"(b)" "$12")"#, r#""ab2c""#),
            (r#"(replace "abc" #"b" "\\$")"#, r#""a$c""#),
            (r#"(replace "abc" #"b" "$")"#, "!runtime_error"),
            (r#"(replace "abc" #"b" "$1")"#, "!runtime_error"),
            (r#"(replace "baaab" #"a*" "-")"#, r#""-b--b-""#),
            (r#"(replace "a1b2" #"\d" (fn [d] (str (* 2 (parse-long d)))))"#, r#""a2b4""#),
            (r#"(replace "k=v" #"(\w)=(\w)" (fn [[_ k v]] (str v k)))"#, r#""vk""#),
            (r#"(replace-first "aXbX" #"X" (fn [_] "-"))"#, r#""a-bX""#),
            (r#"(replace "abc" "b" (fn [m] m))"#, "!type_error"),
        ]);
    }

    #[test]
    fn regex_functions() {
        check(&[
            (r#"(re-find #"(\d+)-(\d+)?" "10-")"#, r#"["10-" "10" nil]"#),
            (r#"(re-matches #"a|ab" "ab")"#, r#""ab""#),
            (r#"(re-matches #"\d+" "12a")"#, "nil"),
            (r#"(re-seq #"a*" "baaab")"#, r#"["" "aaa" "" ""]"#),
            (r#"(re-seq #"x" "abc")"#, "nil"),
            (r#"(re-find "a" "abc")"#, "!type_error"),
            (r#"(re-pattern "a(?=b)")"#, "!runtime_error"),
            (r#"(re-find #"\h+" "a \t b")"#, r#"" \t ""#),
            (r#"(extract "ID:(\\d+)" "ID:42")"#, r#""42""#),
            (r#"(extract #"\d+" "ab 12")"#, r#""12""#),
            (r#"(extract #"(\w+)@(\w+)" "a@b" 2)"#, r#""b""#),
            (r#"(extract-int #"n=(\d+)" "none" 1 0)"#, "0"),
            (r#"(str #"\d+")"#, r#""\\d+""#),
        ]);
    }

    #[test]
    fn parsing_and_printing() {
        check(&[
            (r#"(parse-long "42")"#, "42"),
            (r#"(parse-long " 42")"#, "nil"),
            (r#"(parse-long nil)"#, "nil"),
            (r#"(parse-double "1e3")"#, "1000.0"),
            (r#"(parse-double " 1.5")"#, "nil"),
            (r#"(parse-boolean "TRUE")"#, "nil"),
            (r#"(pr-str "a" 1 nil)"#, r#""\"a\" 1 nil""#),
            (r#"(print-str "a" ["b" {:c "d"}])"#, r#""a [b {:c d}]""#),
            (r#"(println-str "x")"#, r#""x\n""#),
            (r#"(count (print-str (reduce (fn [v _] [v]) [] (range 3000))))"#, "2005"),
            (r#"(str/escape "a-b" #(when (= % "-") "_"))"#, r#""a_b""#),
            (r#"(re-quote-replacement "$1\\")"#, r#""\\$1\\\\""#),
        ]);
    }

    #[test]
    fn format_like_java() {
        check(&[
            (r#"(format "%.2f %.2f %.2f" 1.005 2.675 0.125)"#, r#""1.01 2.68 0.13""#),
            (r#"(format "%5d|%-5s|%05.1f" 42 "ab" 3.14159)"#, r#""   42|ab   |003.1""#),
            (r#"(format "%,d %,.2f" 1234567 9876.543)"#, r#""1,234,567 9,876.54""#),
            (r#"(format "%s and %s" "a" "b" "extra")"#, r#""a and b""#),
            (r#"(format "%s|%d" nil nil)"#, r#""|""#),
            (r#"(format "%x %X %o %e" 255 255 8 12345.678)"#, r#""ff FF 10 1.234568e+04""#),
            (r#"(format "%2$s-%1$s" "a" "b")"#, r#""b-a""#),
            (r#"(format "%d" 1.5)"#, "!type_error"),
            (r#"(format "%s %s" "a")"#, "!runtime_error"),
            (r#"(format "%y" 1)"#, "!runtime_error"),
        ]);
    }

    #[test]
    fn json() {
        check(&[
            (r#"(json/parse-string "{\"a\": [1, 2.5, null]}")"#, r#"{"a" [1 2.5 nil]}"#),
            (r#"(json/parse-string "{\"a\": {\"b\": 1}}" true)"#, "{:a {:b 1}}"),
            (r#"(json/parse-string "not json")"#, "nil"),
            (r#"(json/parse-string nil)"#, "nil"),
            (r#"(json/generate-string {:a :b :c [1 nil]})"#, r#""{\"a\":\"b\",\"c\":[1,null]}""#),
            (r#"(json/generate-string ##NaN)"#, "nil"),
            (r#"(json/parse-lines "1\n\nbad\n[2]")"#, "[1 nil [2]]"),
        ]);
    }

    #[test]
    fn string_building_is_charged_as_memory() {
        let mut opts = RunOptions::default();
        opts.limits.max_heap_bytes = 10_000;
        for src in [
            r#"(format "%100000d" 1)"#,
            r#"(format "%.100000f" 1.5)"#,
            r#"(replace "aaaaaaaaaa" "a" (format "%2000s" "b"))"#,
            r#"(replace "aaaaaaaaaa" #"a" (format "%2000s" "b"))"#,
            r#"(str/escape "aaaaaaaaaa" {"a" (format "%2000s" "b")})"#,
        ] {
            let out = run(src, opts.clone());
            assert!(
                matches!(&out.result, RunResult::Error(e) if e.kind == crate::ErrorKind::MemoryExceeded),
                "{src}: {}",
                out.printed
            );
        }
    }
}
