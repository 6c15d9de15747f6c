//! `format`: the `java.util.Formatter` subset programs use.
//!
//! Specifiers are `%[index$][flags][width][.precision]conversion` with the flags
//! `- + space 0 , ( # <` and the conversions `s S d x X o f e E g G b B c C h H % n`.
//! Floating-point conversions round the shortest decimal form of the number half-up, as
//! Java does (`(format "%.2f" 2.675)` is `"2.68"`, not Rust's `"2.67"`). PTC-Lisp
//! differences: nil prints as an empty string (DIV-21), `%f`/`%e`/`%g` accept integers,
//! and `%c` accepts a one-character string (characters are strings).

use crate::builtins::context::BuiltinContext;
use crate::builtins::core::strings::push_str_form;
use crate::builtins::expected;
use crate::error::{ErrorKind, EvalResult, err};
use crate::value::Value;

#[derive(Default, Clone, Copy)]
struct Flags {
    left: bool,
    alternate: bool,
    plus: bool,
    space: bool,
    zero: bool,
    group: bool,
    paren: bool,
}

struct Spec {
    flags: Flags,
    width: Option<usize>,
    precision: Option<usize>,
    conv: char,
}

fn fail<T>(msg: String) -> EvalResult<T> {
    err(ErrorKind::RuntimeError, format!("format: {msg}"))
}

/// Formats `args` by the Java-style template `fmt`, charging the interpreter's memory
/// budget for each piece before it is built (a width of 10^9 fails cleanly).
pub(super) fn format(cx: &mut BuiltinContext, fmt: &str, args: &[Value]) -> EvalResult<String> {
    let cs: Vec<char> = fmt.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let mut ordinary = 0usize;
    let mut last: Option<usize> = None;
    let digits_from = |i: &mut usize| -> String {
        let start = *i;
        while cs.get(*i).is_some_and(char::is_ascii_digit) {
            *i += 1;
        }
        cs[start..*i].iter().collect()
    };
    while let Some(&c) = cs.get(i) {
        i += 1;
        if c != '%' {
            out.push(c);
            continue;
        }
        // %[index$][flags][width][.precision]conversion
        let mut explicit: Option<usize> = None;
        let mut j = i;
        let index = digits_from(&mut j);
        if !index.is_empty() && cs.get(j) == Some(&'$') {
            match index.parse::<usize>() {
                Ok(n) if n >= 1 => explicit = Some(n - 1),
                _ => return fail(format!("argument index %{index}$ must be 1 or more")),
            }
            i = j + 1;
        }
        let mut flags = Flags::default();
        let mut relative = false;
        while let Some(&f) = cs.get(i) {
            match f {
                '-' => flags.left = true,
                '#' => flags.alternate = true,
                '+' => flags.plus = true,
                ' ' => flags.space = true,
                '0' => flags.zero = true,
                ',' => flags.group = true,
                '(' => flags.paren = true,
                '<' => relative = true,
                _ => break,
            }
            i += 1;
        }
        let w = digits_from(&mut i);
        let width = if w.is_empty() {
            None
        } else {
            Some(w.parse::<usize>().or_else(|_| fail(format!("width {w} is too large")))?)
        };
        let mut precision = None;
        if cs.get(i) == Some(&'.') {
            i += 1;
            let p = digits_from(&mut i);
            precision =
                Some(p.parse::<usize>().or_else(|_| fail("a '.' must be followed by a precision, as in %.2f".into()))?);
        }
        let Some(&conv) = cs.get(i) else {
            return fail("the template ends inside a % specifier; write %% for a percent sign".into());
        };
        i += 1;
        let spec = Spec { flags, width, precision, conv };
        check_width(&spec)?;
        cx.charge(spec.width.unwrap_or(0) as u64 + spec.precision.unwrap_or(0) as u64)?;
        match conv {
            '%' => {
                if spec.precision.is_some() {
                    return fail("%% takes no precision".into());
                }
                out.push_str(&pad(&spec, "%".into()));
                continue;
            }
            'n' => {
                if spec.width.is_some() || spec.precision.is_some() {
                    return fail("%n takes no width or precision".into());
                }
                out.push('\n');
                continue;
            }
            _ => {}
        }
        let index = if relative {
            match last {
                Some(i) => i,
                None => return fail(format!("%<{conv} has no previous argument to reuse")),
            }
        } else if let Some(i) = explicit {
            i
        } else {
            ordinary += 1;
            ordinary - 1
        };
        last = Some(index);
        let Some(arg) = args.get(index) else {
            return fail(format!(
                "%{conv} has no matching argument (the template needs at least {} argument(s), got {})",
                index + 1,
                args.len()
            ));
        };
        let piece = convert(cx, &spec, arg)?;
        cx.charge(piece.len() as u64)?;
        out.push_str(&piece);
    }
    cx.charge(fmt.len() as u64)?;
    Ok(out)
}

fn check_width(spec: &Spec) -> EvalResult<()> {
    let f = spec.flags;
    if (f.left || f.zero) && spec.width.is_none() {
        return fail(format!(
            "the {} flag needs a width, as in %-8{c} or %08{c}",
            if f.left { '-' } else { '0' },
            c = spec.conv
        ));
    }
    if f.left && f.zero {
        return fail("the flags - and 0 cannot be combined".into());
    }
    if f.plus && f.space {
        return fail("the flags + and space cannot be combined".into());
    }
    Ok(())
}

fn flag_error<T>(spec: &Spec, flag: char) -> EvalResult<T> {
    fail(format!("the flag '{flag}' does not apply to %{}", spec.conv))
}

/// Rejects flags outside `allowed` (a string of flag characters).
fn only_flags(spec: &Spec, allowed: &str) -> EvalResult<()> {
    let f = spec.flags;
    for (on, c) in [(f.alternate, '#'), (f.plus, '+'), (f.space, ' '), (f.zero, '0'), (f.group, ','), (f.paren, '(')] {
        if on && !allowed.contains(c) {
            return flag_error(spec, c);
        }
    }
    Ok(())
}

fn no_precision(spec: &Spec) -> EvalResult<()> {
    match spec.precision {
        Some(p) => fail(format!("%{} takes no precision (got .{p})", spec.conv)),
        None => Ok(()),
    }
}

fn pad(spec: &Spec, body: String) -> String {
    let Some(w) = spec.width else { return body };
    let n = body.chars().count();
    if n >= w {
        return body;
    }
    let fill = " ".repeat(w - n);
    if spec.flags.left { body + &fill } else { fill + &body }
}

fn truncate(spec: &Spec, s: String) -> String {
    match spec.precision {
        Some(p) => s.chars().take(p).collect(),
        None => s,
    }
}

fn upper_if(spec: &Spec, s: String) -> String {
    if spec.conv.is_ascii_uppercase() { s.to_uppercase() } else { s }
}

fn convert(cx: &mut BuiltinContext, spec: &Spec, arg: &Value) -> EvalResult<String> {
    let conv = spec.conv;
    match conv.to_ascii_lowercase() {
        's' => {
            only_flags(spec, "")?;
            // an atom is a copy the loop charges; a collection prints within what is left
            // of the budget (never cut silently)
            let mut s = String::new();
            push_str_form(cx, arg, &mut s)?;
            Ok(pad(spec, upper_if(spec, truncate(spec, s))))
        }
        'b' => {
            only_flags(spec, "")?;
            let b = !matches!(arg, Value::Nil | Value::Bool(false));
            Ok(pad(spec, upper_if(spec, truncate(spec, b.to_string()))))
        }
        'c' => {
            only_flags(spec, "")?;
            no_precision(spec)?;
            let c = match arg {
                Value::Nil => return Ok(pad(spec, String::new())),
                Value::Int(i) => u32::try_from(*i).ok().and_then(char::from_u32),
                Value::Str(s) if s.chars().count() == 1 => s.chars().next(),
                _ => None,
            };
            match c {
                Some(c) => Ok(pad(spec, upper_if(spec, c.to_string()))),
                None => expected("format %c", "a character (a 1-character string) or a code point", arg),
            }
        }
        'd' => {
            only_flags(spec, "+ 0,(")?;
            no_precision(spec)?;
            match arg {
                Value::Nil => Ok(pad(spec, String::new())),
                Value::Int(i) => Ok(signed(spec, *i < 0, String::new(), i.unsigned_abs().to_string(), true)),
                other => expected("format %d", "an integer (use %.0f or %s for floats)", other),
            }
        }
        'x' | 'o' => {
            only_flags(spec, "#0")?;
            no_precision(spec)?;
            match arg {
                Value::Nil => Ok(pad(spec, String::new())),
                Value::Int(i) => {
                    let (digits, prefix) = if conv.eq_ignore_ascii_case(&'x') {
                        (format!("{i:x}"), "0x")
                    } else {
                        (format!("{i:o}"), "0")
                    };
                    let prefix = if spec.flags.alternate { prefix } else { "" };
                    Ok(upper_if(spec, signed(spec, false, prefix.to_string(), digits, false)))
                }
                other => expected(&format!("format %{conv}"), "an integer", other),
            }
        }
        'f' | 'e' | 'g' => {
            let x = match arg {
                Value::Nil => return Ok(pad(spec, String::new())),
                Value::Int(i) => *i as f64,
                Value::Float(f) => *f,
                other => return expected(&format!("format %{conv}"), "a number", other),
            };
            match conv.to_ascii_lowercase() {
                'f' => only_flags(spec, "+ 0,(#")?,
                'e' => only_flags(spec, "+ 0(#")?,
                _ => only_flags(spec, "+ 0,(")?,
            }
            if !x.is_finite() {
                let body = if x.is_nan() {
                    "NaN".to_string()
                } else if x > 0.0 {
                    if spec.flags.plus {
                        "+Infinity".into()
                    } else if spec.flags.space {
                        " Infinity".into()
                    } else {
                        "Infinity".into()
                    }
                } else if spec.flags.paren {
                    "(Infinity)".into()
                } else {
                    "-Infinity".into()
                };
                return Ok(pad(spec, upper_if(spec, body)));
            }
            let digits = match conv.to_ascii_lowercase() {
                'f' => fixed_digits(x, spec.precision.unwrap_or(6)),
                'e' => scientific(x, spec.precision.unwrap_or(6)),
                _ => general(x, spec.precision.unwrap_or(6)),
            };
            Ok(upper_if(spec, signed(spec, x.is_sign_negative(), String::new(), digits, true)))
        }
        'h' => {
            only_flags(spec, "")?;
            let hash = match arg {
                Value::Nil => return Ok(pad(spec, String::new())),
                Value::Str(s) => s.encode_utf16().fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u))),
                Value::Int(i) => (*i ^ ((*i as u64) >> 32) as i64) as i32,
                Value::Float(x) => {
                    let bits = if x.is_nan() { 0x7ff8_0000_0000_0000u64 } else { x.to_bits() };
                    (bits ^ (bits >> 32)) as i32
                }
                Value::Bool(b) => {
                    if *b {
                        1231
                    } else {
                        1237
                    }
                }
                other => return expected("format %h", "a string, number or boolean (Java hash codes)", other),
            };
            Ok(pad(spec, upper_if(spec, truncate(spec, format!("{hash:x}")))))
        }
        't' | 'a' => fail(format!(
            "%{conv} is not supported; use %s %d %f %e %g %x %o %b %c with flags - + 0 , ( # and a width/precision"
        )),
        _ => fail(format!(
            "unknown conversion %{conv}; use %s %d %f %.Nf %e %g %x %o %b %c %% or %n (write %% for a percent sign)"
        )),
    }
}

/// Sign, prefix, grouping and zero padding around an unsigned digit string.
fn signed(spec: &Spec, negative: bool, prefix: String, digits: String, numeric: bool) -> String {
    let f = spec.flags;
    let digits = if f.group && numeric { group(&digits) } else { digits };
    let (lead, trail) = if negative {
        if f.paren { ("(", ")") } else { ("-", "") }
    } else if f.plus && numeric {
        ("+", "")
    } else if f.space && numeric {
        (" ", "")
    } else {
        ("", "")
    };
    let mut body = digits;
    if f.zero
        && let Some(w) = spec.width
    {
        let used = lead.len() + prefix.len() + body.chars().count() + trail.len();
        if used < w {
            body = "0".repeat(w - used) + &body;
        }
    }
    pad(spec, format!("{lead}{prefix}{body}{trail}"))
}

/// Inserts ',' every three digits of the integer part.
fn group(digits: &str) -> String {
    let (int, rest) = match digits.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => digits.split_at(i),
        None => (digits, ""),
    };
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out + rest
}

/// The shortest decimal digits of |x| and the position of the decimal point: |x| =
/// 0.d1d2... × 10^point. Zero is `([0], 1)`.
fn shortest(x: f64) -> (Vec<u8>, i32) {
    let s = format!("{:e}", x.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect();
    if digits.iter().all(|d| *d == 0) {
        return (vec![0], 1);
    }
    (digits, exp + 1)
}

/// Keeps `keep` leading digits, rounding half-up; a carry out of the first digit moves
/// the decimal point (returned adjusted).
fn round_half_up(mut digits: Vec<u8>, mut point: i32, keep: i32) -> (Vec<u8>, i32) {
    if keep < 0 {
        return (vec![0], point);
    }
    let keep = keep as usize;
    if digits.len() <= keep {
        return (digits, point);
    }
    let up = digits.get(keep).is_some_and(|d| *d >= 5);
    digits.truncate(keep);
    if up {
        let mut i = digits.len();
        loop {
            if i == 0 {
                digits.insert(0, 1);
                point += 1;
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
    if digits.is_empty() {
        digits.push(0);
    }
    (digits, point)
}

fn digit_at(digits: &[u8], i: i32) -> char {
    if i < 0 {
        return '0';
    }
    digits.get(i as usize).map_or('0', |d| (b'0' + d) as char)
}

/// |x| with `places` decimals, Java HALF_UP on the shortest decimal form.
fn fixed_digits(x: f64, places: usize) -> String {
    let (digits, point) = shortest(x);
    let (digits, point) = round_half_up(digits, point, point + places as i32);
    let mut out = String::new();
    if point <= 0 {
        out.push('0');
    } else {
        for i in 0..point {
            out.push(digit_at(&digits, i));
        }
    }
    if places > 0 {
        out.push('.');
        for i in 0..places as i32 {
            out.push(digit_at(&digits, point + i));
        }
    }
    out
}

/// |x| as d.ddde±XX with `places` decimals.
fn scientific(x: f64, places: usize) -> String {
    let (digits, point) = shortest(x);
    let zero = digits == [0];
    let (digits, point) = round_half_up(digits, point, places as i32 + 1);
    let mut out = String::new();
    out.push(digit_at(&digits, 0));
    if places > 0 {
        out.push('.');
        for i in 1..=places as i32 {
            out.push(digit_at(&digits, i));
        }
    }
    let e = if zero { 0 } else { point - 1 };
    out.push_str(&format!("e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs()));
    out
}

/// Java's %g: `precision` significant digits, positional for 1e-4 <= |x| < 10^precision.
fn general(x: f64, precision: usize) -> String {
    let p = precision.max(1);
    let (digits, point) = shortest(x);
    if digits == [0] {
        return fixed_digits(0.0, p - 1);
    }
    let (_, rounded_point) = round_half_up(digits, point, p as i32);
    let exp = rounded_point - 1;
    if (-4..p as i32).contains(&exp) {
        fixed_digits(x, (p as i32 - 1 - exp).max(0) as usize)
    } else {
        scientific(x, p - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(t: &str, args: &[Value]) -> EvalResult<String> {
        use std::sync::Arc;
        let limits = Arc::new(crate::Limits::default());
        let budget = Arc::new(crate::limits::SharedBudget::new(&limits, crate::Cancel::new()));
        let mut interp = crate::interp::Interp::new(
            &crate::NoTools,
            limits,
            budget,
            Arc::new(crate::value::PMap::new()),
            crate::Memory::default(),
            Arc::new(Vec::new()),
        );
        format(&mut BuiltinContext::new(&mut interp, "format"), t, args)
    }

    fn fixed(x: f64, places: usize) -> String {
        fmt(&format!("%.{places}f"), &[Value::Float(x)]).unwrap()
    }

    fn f(t: &str, args: &[Value]) -> String {
        fmt(t, args).unwrap()
    }

    #[test]
    fn half_up_on_the_shortest_decimal() {
        assert_eq!(fixed(1.005, 2), "1.01");
        assert_eq!(fixed(2.675, 2), "2.68");
        assert_eq!(fixed(0.125, 2), "0.13");
        assert_eq!(fixed(0.5, 0), "1");
        assert_eq!(fixed(-0.001, 2), "-0.00");
        assert_eq!(fixed(9.995, 2), "10.00");
        assert_eq!(fixed(1e-10, 2), "0.00");
        assert_eq!(fixed(0.0005, 3), "0.001");
        assert_eq!(fixed(1e20, 1), "100000000000000000000.0");
        assert_eq!(scientific(1.125, 2), "1.13e+00");
        assert_eq!(scientific(9.99, 1), "1.0e+01");
        assert_eq!(scientific(0.000123, 2), "1.23e-04");
        assert_eq!(general(1234.5, 3), "1.23e+03");
        assert_eq!(general(1.5, 6), "1.50000");
        assert_eq!(general(0.0001, 2), "0.00010");
    }

    #[test]
    fn flags_width_and_indexes() {
        let i = Value::Int;
        assert_eq!(f("%5d|%-5d|%05d", &[i(42), i(42), i(-42)]), "   42|42   |-0042");
        assert_eq!(f("%,d %+d %(d", &[i(1234567), i(5), i(-5)]), "1,234,567 +5 (5)");
        assert_eq!(f("%,.2f", &[Value::Float(1234567.891)]), "1,234,567.89");
        assert_eq!(f("%08.2f", &[Value::Float(-1.23456)]), "-0001.23");
        assert_eq!(f("%#x %X %o", &[i(255), i(255), i(8)]), "0xff FF 10");
        assert_eq!(f("%2$s %1$s %<s", &[Value::str("a"), Value::str("b")]), "b a a");
        assert_eq!(f("%.2s|%5s|%S", &[Value::str("abcdef"), Value::Nil, Value::str("x")]), "ab|     |X");
        assert_eq!(f("%b %c %5%%n", &[Value::Nil, Value::str("z")]), "false z     %\n");
        assert_eq!(f("%h %h %h", &[Value::str("hello"), Value::Int(-1), Value::Bool(true)]), "5e918d2 0 4cf");
    }

    #[test]
    fn errors_name_the_problem() {
        for (t, args) in [
            ("%d", vec![Value::Float(1.5)]),
            ("%s %s", vec![Value::str("a")]),
            ("%-d", vec![Value::Int(1)]),
            ("%q", vec![Value::Int(1)]),
            ("%", vec![]),
            ("%,x", vec![Value::Int(1)]),
            ("%.2d", vec![Value::Int(1)]),
            ("%999999999999d", vec![Value::Int(1)]),
        ] {
            assert!(fmt(t, &args).is_err(), "{t}");
        }
    }
}
