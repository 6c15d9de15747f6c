//! Text: string searching and shaping, parsing, `format`, regexes, JSON, and `extract`.

use std::sync::Arc;

use super::{Arity, Builtin, Category, expected, int_arg, str_arg};
use crate::error::{ErrorKind, EvalResult, err};
use crate::interp::Interp;
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
    Builtin::new("replace", Exact(3), Str, replace)
        .doc("Replaces every match: string for string, or regex for string ($1 refers to groups) or for (fn [match]).")
        .ex(&[("(replace \"a.b\" \".\" \"-\")", "\"a-b\""), ("(replace \"a1b22\" #\"\\d+\" \"#\")", "\"a#b#\"")]),
    Builtin::new("replace-first", Exact(3), Str, replace_first)
        .doc("Replaces the first match.")
        .ex(&[("(replace-first \"aaa\" \"a\" \"b\")", "\"baa\"")]),
    Builtin::new("str/reverse", Exact(1), Str, str_reverse)
        .doc("clojure.string/reverse: the characters of a string in reverse order.")
        .ex(&[("(str/reverse \"abc\")", "\"cba\"")]),
    Builtin::new("split-lines", Exact(1), Str, split_lines)
        .doc("Lines of a string; trailing empty lines dropped.")
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
        .doc("The arguments printed like println, without the newline, as a string.")
        .ex(&[("(print-str \"a\" 1 nil)", "\"a 1 nil\"")]),
    Builtin::new("println-str", AtLeast(0), Str, println_str)
        .doc("Like print-str, with a trailing newline.")
        .ex(&[("(println-str \"x\" 1)", "\"x 1\\n\"")]),
    Builtin::new("prn-str", AtLeast(0), Str, prn_str)
        .doc("Like pr-str, with a trailing newline.")
        .ex(&[("(prn-str \"x\")", "\"\\\"x\\\"\\n\"")]),
    Builtin::new("str/escape", Exact(2), Str, escape)
        .doc("String with characters replaced through a {char replacement} map.")
        .ex(&[("(str/escape \"a&b\" {\\& \"&amp;\"})", "\"a&amp;b\"")]),
    Builtin::new("format", AtLeast(1), Str, format)
        .doc("printf-style formatting: %s %d %f %.Nf %e %x %o %% (nil prints as empty, DIV-21).")
        .ex(&[
            ("(format \"%s has %d items\" \"cart\" 3)", "\"cart has 3 items\""),
            ("(format \"%.2f\" 2.675)", "\"2.68\""),
        ]),
    Builtin::new("extract", Range(2, 3), Str, extract)
        .ext()
        .doc("Group n (default 1; 0 = whole match) of the first match of a pattern (regex or string), or nil.")
        .ex(&[("(extract #\"id=(\\d+)\" \"x id=42\")", "\"42\"")]),
    Builtin::new("extract-int", Range(2, 4), Str, extract_int)
        .ext()
        .doc("Like extract, parsed as an integer; default (nil) when missing or not a number.")
        .ex(&[("(extract-int #\"(\\d+) items\" \"3 items\")", "3")]),
    Builtin::new("re-pattern", Exact(1), Regex, re_pattern)
        .doc("A regex from a string (a regex passes through).")
        .ex(&[("(re-pattern \"\\\\d+\")", "#\"\\d+\"")]),
    Builtin::new("regex?", Exact(1), Regex, is_regex).doc("True for regexes.").ex(&[("(regex? #\"a\")", "true")]),
    Builtin::new("re-find", Exact(2), Regex, re_find)
        .doc("First match: the string, or [whole group1 ...] when the pattern has groups; nil when none.")
        .ex(&[("(re-find #\"(\\d+)-(\\d+)\" \"10-20\")", "[\"10-20\" \"10\" \"20\"]")]),
    Builtin::new("re-matches", Exact(2), Regex, re_matches)
        .doc("Like re-find, but the whole string must match.")
        .ex(&[("(re-matches #\"\\d+\" \"12a\")", "nil")]),
    Builtin::new("re-seq", Exact(2), Regex, re_seq)
        .doc("Every match, as a vector; nil when there is none.")
        .ex(&[("(re-seq #\"\\d\" \"a1b2\")", "[\"1\" \"2\"]")]),
    Builtin::new("re-split", Exact(2), Regex, re_split)
        .ext()
        .doc("Splits a string on a regex: (re-split re s).")
        .ex(&[("(re-split #\",\" \"a,b\")", "[\"a\" \"b\"]")]),
    Builtin::new("json/parse-string", Range(1, 2), Json, json_parse)
        .alias(&["json/read-str"])
        .doc("Value from JSON text (string keys); nil when the text is not JSON (DIV-23).")
        .ex(&[("(json/parse-string \"{\\\"a\\\": [1, 2]}\")", "{\"a\" [1 2]}")]),
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
    s[..byte].chars().count() as i64
}
fn char_to_byte(s: &str, idx: i64) -> usize {
    s.char_indices().nth(idx.max(0) as usize).map(|(b, _)| b).unwrap_or(s.len())
}
fn index_of(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let s = str_arg("index-of", &a[0])?;
    let sub = str_arg("index-of", &a[1])?;
    let from = match a.get(2) {
        Some(v) => char_to_byte(s, int_arg("index-of", v)?),
        None => 0,
    };
    Ok(s[from..].find(sub).map(|b| Value::Int(chars_index(s, from + b))).unwrap_or(Value::Nil))
}
fn last_index_of(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let s = str_arg("last-index-of", &a[0])?;
    let sub = str_arg("last-index-of", &a[1])?;
    let hay = match a.get(2) {
        Some(v) => {
            let end = char_to_byte(s, int_arg("last-index-of", v)?);
            &s[..(end + sub.len()).min(s.len())]
        }
        None => s,
    };
    Ok(hay.rfind(sub).map(|b| Value::Int(chars_index(s, b))).unwrap_or(Value::Nil))
}
/// Java replacement syntax `$1` -> the regex crate's `${1}`.
fn java_replacement(r: &str) -> String {
    let mut out = String::new();
    let mut chars = r.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    if n == '$' {
                        out.push_str("$$");
                    } else {
                        out.push(n);
                    }
                }
            }
            '$' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                if digits.is_empty() {
                    out.push_str("$$");
                } else {
                    out.push_str(&format!("${{{digits}}}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}
fn replace_impl(interp: &mut Interp, a: &mut [Value], fname: &str, limit: usize) -> EvalResult {
    let s = str_arg(fname, &a[0])?.to_string();
    let out = match (&a[1], &a[2]) {
        (Value::Str(from), Value::Str(to)) => {
            if limit == 0 {
                s.replace(&**from, to)
            } else {
                s.replacen(&**from, to, limit)
            }
        }
        (Value::Regex(re), Value::Str(to)) => {
            re.regex().replacen(&s, limit, java_replacement(to).as_str()).into_owned()
        }
        (Value::Regex(re), f @ Value::Func(_)) => {
            let f = f.clone();
            let mut out = String::new();
            let mut last = 0;
            for (n, caps) in re.regex().captures_iter(&s).enumerate() {
                if limit != 0 && n >= limit {
                    break;
                }
                interp.tick(1)?;
                let Some(m) = caps.get(0) else { continue };
                out.push_str(&s[last..m.start()]);
                let arg = match_value(&caps);
                let r = interp.apply(&f, &mut [arg])?;
                super::core::str_of(&r, &mut out);
                last = m.end();
            }
            out.push_str(&s[last..]);
            out
        }
        (m, _) => return expected(fname, "a string or regex to match, and a string (or fn for a regex) to insert", m),
    };
    interp.charge(out.len() as u64 + cost::HEADER)?;
    Ok(Value::str(out))
}
fn replace(interp: &mut Interp, a: &mut [Value]) -> EvalResult {
    replace_impl(interp, a, "replace", 0)
}
fn replace_first(interp: &mut Interp, a: &mut [Value]) -> EvalResult {
    replace_impl(interp, a, "replace-first", 1)
}
fn split_lines(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let s = str_arg("split-lines", &a[0])?;
    let mut lines: Vec<&str> = s.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    while lines.len() > 1 && lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    Ok(Value::vector(lines.into_iter().map(Value::str)))
}
fn triml(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(str_arg("triml", &a[0])?.trim_start_matches(super::java_whitespace)))
}
fn trimr(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(str_arg("trimr", &a[0])?.trim_end_matches(super::java_whitespace)))
}
fn trim_newline(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(str_arg("trim-newline", &a[0])?.trim_end_matches(['\n', '\r'])))
}
fn capitalize(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let s = str_arg("capitalize", &a[0])?;
    let mut chars = s.chars();
    Ok(Value::str(match chars.next() {
        Some(c) => c.to_uppercase().chain(chars.as_str().to_lowercase().chars()).collect::<String>(),
        None => String::new(),
    }))
}
fn parse_long(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(match &a[0] {
        Value::Str(s) if !s.starts_with('+') || s.len() > 1 => s.parse::<i64>().map(Value::Int).unwrap_or(Value::Nil),
        _ => Value::Nil,
    })
}
fn parse_double(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(match &a[0] {
        Value::Str(s) => {
            let t = s.as_ref();
            let ok = !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'));
            match (ok, t) {
                (_, "NaN") => Value::Float(f64::NAN),
                (_, "Infinity") => Value::Float(f64::INFINITY),
                (_, "-Infinity") => Value::Float(f64::NEG_INFINITY),
                (true, _) => t.parse::<f64>().map(Value::Float).unwrap_or(Value::Nil),
                _ => Value::Nil,
            }
        }
        _ => Value::Nil,
    })
}
fn parse_boolean(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(match &a[0] {
        Value::Str(s) if &**s == "true" => Value::Bool(true),
        Value::Str(s) if &**s == "false" => Value::Bool(false),
        _ => Value::Nil,
    })
}
fn pr_str(interp: &mut Interp, a: &mut [Value]) -> EvalResult {
    let s = a.iter().map(to_clojure).collect::<Vec<_>>().join(" ");
    interp.charge(s.len() as u64)?;
    Ok(Value::str(s))
}

/// Java's HALF_UP rounding of the exact decimal expansion of `x` to `places` decimals.
pub fn fixed(x: f64, places: usize) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "NaN".into()
        } else if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    // the shortest representation is the decimal Java rounds (2.675 -> "2.675" -> 2.68)
    let repr = format!("{}", x.abs());
    let (int_part, frac_part) = repr.split_once('.').unwrap_or((&repr, ""));
    if repr.contains('e') {
        return format!("{x:.places$}");
    }
    let mut digits: Vec<u8> = int_part.bytes().chain(frac_part.bytes()).map(|b| b - b'0').collect();
    let int_len = int_part.len();
    let keep = int_len + places;
    while digits.len() < keep + 1 {
        digits.push(0);
    }
    let round_up = digits[keep] >= 5;
    digits.truncate(keep);
    if round_up {
        let mut i = digits.len();
        loop {
            if i == 0 {
                digits.insert(0, 1);
                break;
            }
            i -= 1;
            if digits[i] == 9 {
                digits[i] = 0;
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    let int_digits = digits.len() - places;
    let mut out = String::new();
    if x < 0.0 && digits.iter().any(|d| *d != 0) {
        out.push('-');
    }
    for d in &digits[..int_digits] {
        out.push((b'0' + d) as char);
    }
    if int_digits == 0 {
        out.push('0');
    }
    if places > 0 {
        out.push('.');
        for d in &digits[int_digits..] {
            out.push((b'0' + d) as char);
        }
    }
    out
}

fn format(interp: &mut Interp, a: &mut [Value]) -> EvalResult {
    let fmt = str_arg("format", &a[0])?.to_string();
    let mut args = a[1..].iter();
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut precision: Option<usize> = None;
        if chars.peek() == Some(&'.') {
            chars.next();
            let mut p = String::new();
            while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                p.push(*d);
                chars.next();
            }
            precision = p.parse().ok();
        }
        let Some(conv) = chars.next() else {
            return err(ErrorKind::RuntimeError, "format: the string ends with a lone %; write %% for a percent sign");
        };
        if conv == '%' {
            out.push('%');
            continue;
        }
        if conv == 'n' {
            out.push('\n');
            continue;
        }
        let Some(arg) = args.next() else {
            return err(ErrorKind::RuntimeError, format!("format: %{conv} has no matching argument"));
        };
        match conv {
            's' => match arg {
                Value::Nil => {}
                other => super::core::str_of(other, &mut out),
            },
            'd' => match arg {
                Value::Int(i) => out.push_str(&i.to_string()),
                other => return expected("format %d", "an integer", other),
            },
            'f' => out.push_str(&fixed(super::num_arg("format %f", arg)?, precision.unwrap_or(6))),
            'e' => {
                let x = super::num_arg("format %e", arg)?;
                let s = format!("{:.*e}", precision.unwrap_or(6), x);
                let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
                let e: i32 = e.parse().unwrap_or(0);
                out.push_str(&format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs()));
            }
            'x' => out.push_str(&format!("{:x}", super::int_arg("format %x", arg)?)),
            'o' => out.push_str(&format!("{:o}", super::int_arg("format %o", arg)?)),
            other => {
                return err(
                    ErrorKind::RuntimeError,
                    format!("format: unsupported conversion %{other}; use %s %d %f %.Nf %e %x %o %%"),
                );
            }
        }
    }
    interp.charge(out.len() as u64 + cost::HEADER)?;
    Ok(Value::str(out))
}

fn regex_of(fname: &str, v: &Value) -> EvalResult<Arc<RegexValue>> {
    match v {
        Value::Regex(r) => Ok(r.clone()),
        Value::Str(s) => {
            RegexValue::compile(&regex::escape(s)).map(Arc::new).or_else(|m| err(ErrorKind::RuntimeError, m))
        }
        other => expected(fname, "a regex like #\"\\d+\"", other),
    }
}
fn match_value(caps: &regex::Captures<'_>) -> Value {
    if caps.len() == 1 {
        return caps.get(0).map(|m| Value::str(m.as_str())).unwrap_or(Value::Nil);
    }
    Value::vector(caps.iter().map(|m| m.map(|m| Value::str(m.as_str())).unwrap_or(Value::Nil)))
}
fn re_pattern(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Regex(_) => Ok(a[0].clone()),
        Value::Str(s) => {
            RegexValue::compile(s).map(|r| Value::Regex(Arc::new(r))).or_else(|m| err(ErrorKind::RuntimeError, m))
        }
        other => expected("re-pattern", "a string", other),
    }
}
fn is_regex(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(matches!(a[0], Value::Regex(_))))
}
fn re_find(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let re = regex_of("re-find", &a[0])?;
    let s = str_arg("re-find", &a[1])?;
    Ok(re.regex().captures(s).map(|c| match_value(&c)).unwrap_or(Value::Nil))
}
fn re_matches(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let re = regex_of("re-matches", &a[0])?;
    let s = str_arg("re-matches", &a[1])?;
    let full = RegexValue::compile(&format!("^(?:{})$", re.source()))
        .map_err(|m| crate::error::EvalError::new(ErrorKind::RuntimeError, m))?;
    Ok(full
        .regex()
        .captures(s)
        .map(|c| {
            // drop the wrapper's own group numbering: it adds none (non-capturing)
            match_value(&c)
        })
        .unwrap_or(Value::Nil))
}
fn re_seq(interp: &mut Interp, a: &mut [Value]) -> EvalResult {
    let re = regex_of("re-seq", &a[0])?;
    let s = str_arg("re-seq", &a[1])?;
    let mut out = Vec::new();
    for c in re.regex().captures_iter(s) {
        interp.tick(1)?;
        out.push(match_value(&c));
    }
    interp.charge(cost::HEADER + cost::ELEM * out.len() as u64)?;
    Ok(if out.is_empty() { Value::Nil } else { Value::vector(out) })
}
fn re_split(interp: &mut Interp, a: &mut [Value]) -> EvalResult {
    let re = regex_of("re-split", &a[0])?;
    let s = str_arg("re-split", &a[1])?;
    let parts: Vec<Value> = re.regex().split(s).map(Value::str).collect();
    interp.charge(cost::HEADER + cost::ELEM * parts.len() as u64)?;
    Ok(Value::vector(parts))
}
fn extract_group(a: &[Value], fname: &str) -> EvalResult<Option<String>> {
    let re = regex_of(fname, &a[0])?;
    let s = match &a[1] {
        Value::Str(s) => s.clone(),
        Value::Nil => return Ok(None),
        other => return expected(fname, "a string", other),
    };
    let n = match a.get(2) {
        Some(v) => int_arg(fname, v)?.max(0) as usize,
        None => usize::from(re.regex().captures_len() > 1),
    };
    Ok(re.regex().captures(&s).and_then(|c| c.get(n)).map(|m| m.as_str().to_string()))
}
fn extract(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(extract_group(a, "extract")?.map(Value::str).unwrap_or(Value::Nil))
}
fn extract_int(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let found = extract_group(a, "extract-int")?.and_then(|s| s.trim().parse::<i64>().ok());
    Ok(found.map(Value::Int).unwrap_or_else(|| a.get(3).cloned().unwrap_or(Value::Nil)))
}
fn json_parse(interp: &mut Interp, a: &mut [Value]) -> EvalResult {
    let Value::Str(s) = &a[0] else { return Ok(Value::Nil) };
    interp.charge(s.len() as u64 * 2 + cost::HEADER)?;
    Ok(serde_json::from_str::<serde_json::Value>(s).map(|j| crate::json::from_json(&j)).unwrap_or(Value::Nil))
}
fn json_generate(interp: &mut Interp, a: &mut [Value]) -> EvalResult {
    match crate::json::to_json(&a[0]) {
        Ok(j) => {
            let s = j.to_string();
            interp.charge(s.len() as u64 + cost::HEADER)?;
            Ok(Value::str(s))
        }
        Err(_) => Ok(Value::Nil),
    }
}
fn json_parse_lines(interp: &mut Interp, a: &mut [Value]) -> EvalResult {
    let s = str_arg("json/parse-lines", &a[0])?;
    interp.charge(s.len() as u64 * 2 + cost::HEADER)?;
    let mut out = Vec::new();
    for line in s.lines().filter(|l| !l.trim().is_empty()) {
        interp.tick(1)?;
        out.push(
            serde_json::from_str::<serde_json::Value>(line).map(|j| crate::json::from_json(&j)).unwrap_or(Value::Nil),
        );
    }
    Ok(Value::vector(out))
}

fn str_reverse(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(str_arg("str/reverse", &a[0])?.chars().rev().collect::<String>()))
}

fn plain(a: &[Value]) -> String {
    a.iter()
        .map(|v| match v {
            Value::Str(s) => s.to_string(),
            other => to_clojure(other),
        })
        .collect::<Vec<_>>()
        .join(" ")
}
fn print_str(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(plain(a)))
}
fn println_str(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(plain(a) + "\n"))
}
fn prn_str(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(a.iter().map(to_clojure).collect::<Vec<_>>().join(" ") + "\n"))
}
fn escape(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let s = str_arg("str/escape", &a[0])?;
    let Value::Map(m) = &a[1] else { return expected("str/escape", "a {char replacement} map", &a[1]) };
    let mut out = String::new();
    for c in s.chars() {
        match m.get(&Value::str(c.to_string())) {
            Some(r) => super::core::str_of(r, &mut out),
            None => out.push(c),
        }
    }
    Ok(Value::str(out))
}
