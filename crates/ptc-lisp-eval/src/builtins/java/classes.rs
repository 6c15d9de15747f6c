//! The static side of the interop subset: `Integer/` and `Long/` parsing and printing,
//! `Double/` parsing and predicates, `Boolean/parseBoolean`, `String/valueOf`/`join` and
//! `Character/` predicates. Java-named parsers raise on bad input (a NumberFormatException
//! in Java), unlike the nil-returning `parse-long`/`parse-double`.

use super::{expected, java_int, str_arg};
use crate::builtins::context::BuiltinContext;
use crate::error::{ErrorKind, EvalResult, err};
use crate::value::Value;

fn number_format<T>(fname: &str, v: &Value, what: &str) -> EvalResult<T> {
    let shown = match v {
        Value::Str(s) => format!("{:?}", crate::printer::clip(s, 60)),
        other => crate::builtins::brief(other),
    };
    err(
        ErrorKind::RuntimeError,
        format!(
            "{fname}: cannot parse {shown} as {what} (NumberFormatException); parse-long and parse-double give nil instead of failing"
        ),
    )
}
fn radix_arg(fname: &str, a: &[Value]) -> EvalResult<u32> {
    match a.get(1) {
        None => Ok(10),
        Some(v) => match java_int(fname, v)? {
            r @ 2..=36 => Ok(r as u32),
            r => err(ErrorKind::RuntimeError, format!("{fname}: radix {r} is outside 2..36")),
        },
    }
}
/// Java's `Long.parseLong(s, radix)` restricted to `min..=max`: an optional sign, then
/// digits of the radix; no spaces, no underscores.
fn parse_integer(fname: &str, a: &[Value], min: i64, max: i64, what: &str) -> EvalResult {
    let radix = radix_arg(fname, a)?;
    let Value::Str(s) = &a[0] else { return number_format(fname, &a[0], what) };
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return number_format(fname, &a[0], what);
    }
    match i64::from_str_radix(s, radix) {
        Ok(n) if (min..=max).contains(&n) => Ok(Value::Int(n)),
        _ => number_format(fname, &a[0], what),
    }
}
pub(super) fn parse_int(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    parse_integer("Integer/parseInt", a, i32::MIN as i64, i32::MAX as i64, "a 32-bit integer")
}
pub(super) fn parse_long(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    parse_integer("Long/parseLong", a, i64::MIN, i64::MAX, "a 64-bit integer")
}
/// Java's `Double.parseDouble` grammar: surrounding characters up to U+0020 ignored, an
/// optional sign, then NaN, Infinity, a decimal with optional exponent and f/d suffix, or
/// a hexadecimal float (0x1.8p1).
fn java_double(text: &str) -> Option<f64> {
    let t = text.trim_matches(|c: char| c <= ' ');
    let (negative, body) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let magnitude = match body {
        "NaN" => f64::NAN,
        "Infinity" => f64::INFINITY,
        _ => {
            let body = body.strip_suffix(['f', 'F', 'd', 'D']).unwrap_or(body);
            if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
                hex_float(hex)?
            } else {
                let (mantissa, exponent) = match body.find(['e', 'E']) {
                    Some(i) => (&body[..i], Some(&body[i + 1..])),
                    None => (body, None),
                };
                let digits = mantissa.chars().filter(char::is_ascii_digit).count();
                let dots = mantissa.chars().filter(|c| *c == '.').count();
                if digits == 0 || dots > 1 || digits + dots != mantissa.len() {
                    return None;
                }
                if let Some(e) = exponent {
                    let e = e.strip_prefix(['+', '-']).unwrap_or(e);
                    if e.is_empty() || !e.bytes().all(|b| b.is_ascii_digit()) {
                        return None;
                    }
                }
                body.parse::<f64>().ok()?
            }
        }
    };
    Some(if negative { -magnitude } else { magnitude })
}
/// The part of a hexadecimal float after `0x`: hex digits with an optional point, then a
/// binary exponent `p±n`, which Java requires.
fn hex_float(s: &str) -> Option<f64> {
    let (mantissa, exp) = s.split_once(['p', 'P'])?;
    let exp: i32 = exp.parse().ok()?;
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut value = 0f64;
    for c in int.chars() {
        value = value * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        value += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    Some(value * 2f64.powi(exp))
}
pub(super) fn parse_double(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Str(s) => java_double(s)
            .map_or_else(|| number_format("Double/parseDouble", &a[0], "a number"), |x| Ok(Value::Float(x))),
        other => number_format("Double/parseDouble", other, "a number"),
    }
}
pub(super) fn parse_boolean(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Str(s) => Ok(Value::Bool(s.eq_ignore_ascii_case("true"))),
        Value::Nil => Ok(Value::Bool(false)),
        other => expected("Boolean/parseBoolean", "a string", other),
    }
}
fn num_of(fname: &str, v: &Value) -> EvalResult<f64> {
    crate::builtins::num_arg(fname, v)
}
pub(super) fn double_is_nan(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(num_of("Double/isNaN", &a[0])?.is_nan()))
}
pub(super) fn double_is_infinite(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(num_of("Double/isInfinite", &a[0])?.is_infinite()))
}
pub(super) fn double_is_finite(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(num_of("Double/isFinite", &a[0])?.is_finite()))
}
fn int_arg32(fname: &str, v: &Value) -> EvalResult<i32> {
    match v {
        Value::Int(i) => i32::try_from(*i).or_else(|_| {
            err(ErrorKind::ArithmeticError, format!("{fname}: {i} does not fit in a 32-bit int; use the Long/ version"))
        }),
        other => expected(fname, "an integer", other),
    }
}
pub(super) fn int_to_string(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let fname = "Integer/toString";
    let x = match &a[0] {
        Value::Int(i) => *i,
        other => return expected(fname, "an integer", other),
    };
    let radix = radix_arg(fname, a)?;
    let mut digits = Vec::new();
    let mut n = x.unsigned_abs();
    loop {
        let d = (n % u64::from(radix)) as u32;
        digits.push(char::from_digit(d, radix).unwrap_or('?'));
        n /= u64::from(radix);
        if n == 0 {
            break;
        }
    }
    if x < 0 {
        digits.push('-');
    }
    Ok(Value::str(digits.iter().rev().collect::<String>()))
}
pub(super) fn int_to_hex(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(format!("{:x}", int_arg32("Integer/toHexString", &a[0])?)))
}
pub(super) fn int_to_binary(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(format!("{:b}", int_arg32("Integer/toBinaryString", &a[0])?)))
}
pub(super) fn int_to_octal(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(format!("{:o}", int_arg32("Integer/toOctalString", &a[0])?)))
}
pub(super) fn long_to_hex(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Int(i) => Ok(Value::str(format!("{i:x}"))),
        other => expected("Long/toHexString", "an integer", other),
    }
}
pub(super) fn long_to_binary(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Int(i) => Ok(Value::str(format!("{i:b}"))),
        other => expected("Long/toBinaryString", "an integer", other),
    }
}
pub(super) fn string_value_of(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(crate::builtins::core::strings::str_form(cx, &a[0])?))
}
pub(super) fn string_join(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    str_arg("String/join", &a[0])?;
    crate::builtins::lookup("join").map_or(Ok(Value::Nil), |b| cx.call(b, a))
}
/// A `char` argument: a 1-character string or a code point.
fn char_of(fname: &str, v: &Value) -> EvalResult<char> {
    let c = match v {
        Value::Str(s) if s.chars().count() == 1 => s.chars().next(),
        Value::Int(i) => u32::try_from(*i).ok().and_then(char::from_u32),
        _ => None,
    };
    c.map_or_else(|| expected(fname, "a character like \\a", v), Ok)
}
macro_rules! char_pred {
    ($name:ident, $label:literal, $test:expr) => {
        pub(super) fn $name(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
            let test: fn(char) -> bool = $test;
            Ok(Value::Bool(test(char_of($label, &a[0])?)))
        }
    };
}
char_pred!(char_is_digit, "Character/isDigit", char::is_numeric);
char_pred!(char_is_letter, "Character/isLetter", char::is_alphabetic);
char_pred!(char_is_letter_or_digit, "Character/isLetterOrDigit", |c| c.is_alphabetic() || c.is_ascii_digit());
char_pred!(char_is_upper, "Character/isUpperCase", char::is_uppercase);
char_pred!(char_is_lower, "Character/isLowerCase", char::is_lowercase);
char_pred!(char_is_whitespace, "Character/isWhitespace", crate::builtins::java_whitespace);
pub(super) fn char_to_upper(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let c = char_of("Character/toUpperCase", &a[0])?;
    // Java maps one char to one char: ß stays ß
    let mut up = c.to_uppercase();
    Ok(Value::str(match (up.next(), up.next()) {
        (Some(u), None) => u.to_string(),
        _ => c.to_string(),
    }))
}
pub(super) fn char_to_lower(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let c = char_of("Character/toLowerCase", &a[0])?;
    let mut low = c.to_lowercase();
    Ok(Value::str(match (low.next(), low.next()) {
        (Some(l), None) => l.to_string(),
        _ => c.to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_number_text() {
        assert_eq!(java_double(" 1.5d "), Some(1.5));
        assert_eq!(java_double("+.5"), Some(0.5));
        assert_eq!(java_double("1e3"), Some(1000.0));
        assert_eq!(java_double("0x1.8p1"), Some(3.0));
        assert_eq!(java_double("-Infinity"), Some(f64::NEG_INFINITY));
        assert!(java_double("NaN").is_some_and(f64::is_nan));
        for bad in ["", "x", "1_0", "1e", "e5", ".", "1.2.3", "0x1.8", "inf", "1,5"] {
            assert_eq!(java_double(bad), None, "{bad}");
        }
    }
}
