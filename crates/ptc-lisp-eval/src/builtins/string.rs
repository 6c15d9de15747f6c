//! clojure.string (`str/`): `join`, `split`, `replace`, `trim`, `upper-case`...

use crate::builtins::context::BuiltinContext;
use crate::builtins::core::regex::match_value;
use crate::builtins::{Arity, Builtin, Category, Library, Table, expected, int_arg, java_regex, seq_iter, str_arg};
use crate::error::{ErrorKind, EvalResult, err, type_err};
use crate::limits::cost;
use crate::regex_value::RegexValue;
use crate::value::Value;

use Arity::*;
use Category::String as Str;

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::String,
    builtins: &[
        Builtin::new("join", Range(1, 2), Str, join)
            .doc("Items as strings (nil as \"\") joined, with an optional separator.")
            .ex(&[("(join \", \" [1 2 3])", "\"1, 2, 3\"")]),
        Builtin::new("upper-case", Exact(1), Str, upper)
            .alias(&["upcase"])
            .doc("Upper-cased string.")
            .ex(&[("(upper-case \"abc\")", "\"ABC\"")]),
        Builtin::new("lower-case", Exact(1), Str, lower)
            .alias(&["downcase"])
            .doc("Lower-cased string.")
            .ex(&[("(lower-case \"ABC\")", "\"abc\"")]),
        Builtin::new("trim", Exact(1), Str, trim)
            .doc("String without surrounding whitespace.")
            .ex(&[("(trim \"  a \")", "\"a\"")]),
        Builtin::new("includes?", Exact(2), Str, includes)
            .doc("True when the string contains the substring.")
            .ex(&[("(includes? \"hello\" \"ell\")", "true")]),
        Builtin::new("starts-with?", Exact(2), Str, starts_with)
            .doc("True when the string starts with the prefix.")
            .ex(&[("(starts-with? \"hello\" \"he\")", "true")]),
        Builtin::new("ends-with?", Exact(2), Str, ends_with)
            .doc("True when the string ends with the suffix.")
            .ex(&[("(ends-with? \"hello\" \"lo\")", "true")]),
        Builtin::new("split", Range(2, 3), Str, split).source(crate::fusion::SourceKind::Split)
            .doc("Splits a string on a regex or a 1-character string; trailing empty strings are dropped (as in Java).")
            .ex(&[("(split \"a,b,,c,,\" #\",\")", "[\"a\" \"b\" \"\" \"c\"]"), ("(split \"a b\" \" \")", "[\"a\" \"b\"]")]),
        Builtin::new("blank?", Exact(1), Str, blank)
            .doc("True for nil, empty or whitespace-only strings.")
            .ex(&[("(blank? \"  \")", "true")]),
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
        Builtin::new("capitalize", Exact(1), Str, capitalize)
            .doc("First character upper-cased, the rest lower-cased.")
            .ex(&[("(capitalize \"hELLO\")", "\"Hello\"")]),
        Builtin::new("str/escape", Exact(2), Str, escape)
            .doc("String with characters replaced through a {char replacement} map (or a fn of the char; nil keeps it).")
            .ex(&[("(str/escape \"a&b\" {\\& \"&amp;\"})", "\"a&amp;b\"")]),
    ],
};

fn join(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    // like Clojure, any separator is turned into a string first
    let (sep, coll) = if a.len() == 2 {
        (crate::builtins::core::strings::str_form(cx, &a[0])?, &a[1])
    } else {
        (String::new(), &a[0])
    };
    // the parts' sizes are summed and charged before the result is allocated
    seq_iter("join", coll)?;
    let parts = || seq_iter("join", coll).unwrap_or(super::SeqIter::Empty);
    let out = crate::builtins::core::strings::concat_str_forms(cx, parts, &sep)?;
    cx.charge(cost::HEADER)?;
    Ok(Value::str(out))
}

fn upper(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let Value::Str(s) = &a[0]
        && s.is_ascii()
        && !s.bytes().any(|b| b.is_ascii_lowercase())
    {
        // already upper case: the same string, no copy
        return Ok(std::mem::take(&mut a[0]));
    }
    crate::builtins::core::strings::case_mapped(cx, str_arg("upper-case", &a[0])?, str::to_uppercase)
}

fn lower(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let Value::Str(s) = &a[0]
        && s.is_ascii()
        && !s.bytes().any(|b| b.is_ascii_uppercase())
    {
        // already lower case: the same string, no copy
        return Ok(std::mem::take(&mut a[0]));
    }
    crate::builtins::core::strings::case_mapped(cx, str_arg("lower-case", &a[0])?, str::to_lowercase)
}

fn trim(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let out = str_arg("trim", &a[0])?.trim_matches(super::java_whitespace);
    crate::builtins::core::strings::charge_text(cx, out.len())?;
    Ok(Value::str(out))
}

fn includes(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(str_arg("includes?", &a[0])?.contains(str_arg("includes?", &a[1])?)))
}

fn starts_with(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(str_arg("starts-with?", &a[0])?.starts_with(str_arg("starts-with?", &a[1])?)))
}

fn ends_with(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(str_arg("ends-with?", &a[0])?.ends_with(str_arg("ends-with?", &a[1])?)))
}

fn blank(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Nil => Ok(Value::Bool(true)),
        Value::Str(s) => Ok(Value::Bool(s.chars().all(super::java_whitespace))),
        other => expected("blank?", "a string or nil", other),
    }
}

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
                cx.charge(crate::builtins::core::strings::str_len_bound(&r))?;
                crate::builtins::core::strings::push_str_form(cx, &r, &mut out)?;
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

pub(super) fn replace(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    replace_impl(cx, a, "replace", false)
}

fn replace_first(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    replace_impl(cx, a, "replace-first", true)
}

fn re_quote_replacement(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = str_arg("re-quote-replacement", &a[0])?;
    crate::builtins::core::strings::charge_text(cx, s.len() + s.matches(['\\', '$']).count())?;
    Ok(Value::str(s.replace('\\', "\\\\").replace('$', "\\$")))
}

/// `clojure.string/split`: Java's `Pattern.split` on a regex; a 1-character string splits
/// on that character and "" into characters (PTC extensions; longer strings are refused,
/// DIV-50). An optional limit caps the number of pieces (negative keeps trailing empties).
pub(super) fn split(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let parts = split_parts(cx, a)?;
    Ok(Value::vector(parts.into_iter().map(Value::str)))
}

/// The pieces `(split s re limit?)` returns, as slices of `s`, with the call's fuel and
/// memory charged (a fused chain turns them into values one at a time).
pub(crate) fn split_parts<'a>(cx: &mut BuiltinContext, a: &'a [Value]) -> EvalResult<Vec<&'a str>> {
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
pub(crate) fn max_pieces(cx: &BuiltinContext) -> usize {
    usize::try_from(cx.heap_left() / cost::ELEM).unwrap_or(usize::MAX).saturating_add(1)
}

/// The pieces of a split, or `memory_exceeded` when there were more than the budget holds.
pub(crate) fn pieces_or_exceeded<'a>(cx: &mut BuiltinContext, parts: Option<Vec<&'a str>>) -> EvalResult<Vec<&'a str>> {
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
    crate::builtins::core::strings::charge_text(cx, out.len())?;
    Ok(Value::str(out))
}

fn trimr(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let out = str_arg("trimr", &a[0])?.trim_end_matches(super::java_whitespace);
    crate::builtins::core::strings::charge_text(cx, out.len())?;
    Ok(Value::str(out))
}

fn trim_newline(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let out = str_arg("trim-newline", &a[0])?.trim_end_matches(['\n', '\r']);
    crate::builtins::core::strings::charge_text(cx, out.len())?;
    Ok(Value::str(out))
}

fn capitalize(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = str_arg("capitalize", &a[0])?;
    crate::builtins::core::strings::case_mapped(cx, s, |s| {
        let mut chars = s.chars();
        match chars.next() {
            Some(c) => c.to_uppercase().chain(chars.as_str().to_lowercase().chars()).collect::<String>(),
            None => String::new(),
        }
    })
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
                cx.charge(crate::builtins::core::strings::str_len_bound(&r))?;
                crate::builtins::core::strings::push_str_form(cx, &r, &mut out)?;
            }
        }
    }
    cx.charge(cost::HEADER)?;
    Ok(Value::str(out))
}

fn str_reverse(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = str_arg("str/reverse", &a[0])?;
    crate::builtins::core::strings::charge_text(cx, s.len())?;
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
