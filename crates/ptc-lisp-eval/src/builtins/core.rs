//! Numbers, comparison, equality, logic, `str` and `println`.

use std::cmp::Ordering;

use super::{Arity, Builtin, Category, expected};
use crate::builtins::context::BuiltinContext;
use crate::error::{ErrorKind, EvalResult, err};
use crate::printer::{format_float, to_clojure};
use crate::value::Value;

use crate::node::ArithOp;
use Arity::*;
use Category::Core;

/// Core builtins.
pub static BUILTINS: &[Builtin] = &[
    Builtin::new("+", AtLeast(0), Core, add)
        .arith(ArithOp::Add)
        .alias(&["+'"])
        .doc("Sum of numbers; (+) is 0. Integer overflow is an error.")
        .ex(&[("(+ 1 2 3)", "6"), ("(+ 1 2.5)", "3.5")]),
    Builtin::new("-", AtLeast(1), Core, sub)
        .arith(ArithOp::Sub)
        .alias(&["-'"])
        .doc("Subtracts the rest from the first; (- x) negates.")
        .ex(&[("(- 10 3 2)", "5"), ("(- 5)", "-5")]),
    Builtin::new("*", AtLeast(0), Core, mul)
        .arith(ArithOp::Mul)
        .alias(&["*'"])
        .doc("Product of numbers; (*) is 1.")
        .ex(&[("(* 2 3 4)", "24")]),
    Builtin::new("/", AtLeast(1), Core, div)
        .doc("Division; always returns a float (PTC-Lisp: no ratios).")
        .ex(&[("(/ 10 4)", "2.5"), ("(/ 10 2)", "5.0")]),
    Builtin::new("inc", Exact(1), Core, inc).arith(ArithOp::Inc).alias(&["inc'"]).doc("Adds one.").ex(&[("(inc 41)", "42")]),
    Builtin::new("dec", Exact(1), Core, dec).arith(ArithOp::Dec).alias(&["dec'"]).doc("Subtracts one.").ex(&[("(dec 43)", "42")]),
    Builtin::new("=", AtLeast(1), Core, eq)
        .alias(&["=="])
        .doc("Equality; numbers compare by value across int/float, collections structurally.")
        .ex(&[("(= 1 1.0)", "true"), ("(= [1 2] [1 2])", "true")]),
    Builtin::new("not=", AtLeast(1), Core, not_eq)
        .doc("True when not all arguments are equal.")
        .ex(&[("(not= 1 2)", "true")]),
    Builtin::new("<", AtLeast(1), Core, lt)
        .doc("Strictly increasing in the order of compare? Numbers by value, strings and keywords by text, nil first; values of different kinds are an error.")
        .ex(&[("(< 1 2 3)", "true")]),
    Builtin::new(">", AtLeast(1), Core, gt).doc("Strictly decreasing?").ex(&[("(> 3 2 1)", "true")]),
    Builtin::new("<=", AtLeast(1), Core, le).doc("Non-decreasing?").ex(&[("(<= 1 1 2)", "true")]),
    Builtin::new(">=", AtLeast(1), Core, ge).doc("Non-increasing?").ex(&[("(>= 2 2 1)", "true")]),
    Builtin::new("not", Exact(1), Core, not).doc("True for nil and false.").ex(&[("(not nil)", "true")]),
    Builtin::new("nil?", Exact(1), Core, is_nil).doc("True for nil.").ex(&[("(nil? nil)", "true")]),
    Builtin::new("some?", Exact(1), Core, is_some).doc("True for anything but nil.").ex(&[("(some? false)", "true")]),
    Builtin::new("zero?", Exact(1), Core, is_zero)
        .doc("True for 0 and 0.0; false for anything else, including nil.")
        .ex(&[("(zero? 0)", "true"), ("(zero? nil)", "false")]),
    Builtin::new("pos?", Exact(1), Core, is_pos)
        .doc("True for numbers above zero; false for non-numbers.")
        .ex(&[("(pos? 3)", "true")]),
    Builtin::new("neg?", Exact(1), Core, is_neg)
        .doc("True for numbers below zero; false for non-numbers.")
        .ex(&[("(neg? -1)", "true")]),
    Builtin::new("even?", Exact(1), Core, is_even)
        .doc("True for even integers (and whole floats); false for non-numbers.")
        .ex(&[("(even? 4)", "true"), ("(even? 3)", "false")]),
    Builtin::new("odd?", Exact(1), Core, is_odd)
        .doc("True for odd integers (and whole floats); false for non-numbers.")
        .ex(&[("(odd? 3)", "true")]),
    Builtin::new("NaN?", Exact(1), Core, is_nan)
        .doc("True for ##NaN.")
        .ex(&[("(NaN? ##NaN)", "true"), ("(NaN? 1)", "false")]),
    Builtin::new("max", AtLeast(1), Core, max)
        .doc("The largest argument in the order of compare (nil is smallest); the winning value keeps its type.")
        .ex(&[("(max 1 5 3)", "5"), ("(max 1 2.0)", "2.0")]),
    Builtin::new("min", AtLeast(1), Core, min)
        .doc("The smallest argument in the order of compare (nil is smallest); the winning value keeps its type.")
        .ex(&[("(min 4 2 8)", "2")]),
    Builtin::new("str", AtLeast(0), Category::String, str_fn)
        .doc("Concatenates the printed forms; nil is empty, strings raw.")
        .ex(&[("(str \"a\" 1 nil :k)", "\"a1:k\"")]),
    Builtin::new("println", AtLeast(0), Category::Io, println)
        .doc("Prints the arguments space-separated on one line (captured in prints); returns nil.")
        .ex(&[("(println \"total\" 3)", "nil")]),
];

#[inline]
fn overflow<T>(op: &str) -> EvalResult<T> {
    err(
        ErrorKind::ArithmeticError,
        format!(
            "integer overflow in {op}: the result does not fit in 64 bits; use a float (e.g. 1.0) for very large numbers"
        ),
    )
}

fn num(fname: &str, v: &Value) -> EvalResult<Value> {
    match v {
        Value::Int(_) | Value::Float(_) => Ok(v.clone()),
        Value::Nil => err(
            ErrorKind::TypeError,
            format!(
                "{fname}: expected a number, got nil; a missing value reached arithmetic — check with (some? x) or use (or x 0)"
            ),
        ),
        other => expected(fname, "a number", other),
    }
}

/// Adds two numbers.
#[inline]
pub fn add2(a: &Value, b: &Value) -> EvalResult {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => match x.checked_add(*y) {
            Some(r) => Ok(Value::Int(r)),
            None => overflow("+"),
        },
        (Value::Float(x), Value::Float(y)) => Ok(Value::Float(x + y)),
        (Value::Int(x), Value::Float(y)) => Ok(Value::Float(*x as f64 + y)),
        (Value::Float(x), Value::Int(y)) => Ok(Value::Float(x + *y as f64)),
        (x, y) => {
            num("+", x)?;
            num("+", y)?;
            overflow("+")
        }
    }
}

fn add(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let mut acc = Value::Int(0);
    for a in args.iter() {
        acc = add2(&acc, a)?;
    }
    Ok(acc)
}

fn sub2(a: &Value, b: &Value) -> EvalResult {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => match x.checked_sub(*y) {
            Some(r) => Ok(Value::Int(r)),
            None => overflow("-"),
        },
        _ => Ok(Value::Float(num_f("-", a)? - num_f("-", b)?)),
    }
}

fn num_f(fname: &str, v: &Value) -> EvalResult<f64> {
    match num(fname, v)? {
        Value::Int(i) => Ok(i as f64),
        Value::Float(f) => Ok(f),
        _ => Ok(f64::NAN),
    }
}

fn sub(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    match args {
        [x] => sub2(&Value::Int(0), x),
        [first, rest @ ..] => {
            let mut acc = num("-", first)?;
            for a in rest.iter() {
                acc = sub2(&acc, a)?;
            }
            Ok(acc)
        }
        [] => Ok(Value::Int(0)),
    }
}

fn mul2(a: &Value, b: &Value) -> EvalResult {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => match x.checked_mul(*y) {
            Some(r) => Ok(Value::Int(r)),
            None => overflow("*"),
        },
        _ => Ok(Value::Float(num_f("*", a)? * num_f("*", b)?)),
    }
}

fn mul(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let mut acc = Value::Int(1);
    for a in args.iter() {
        acc = mul2(&acc, a)?;
    }
    Ok(acc)
}

fn div2(a: &Value, b: &Value) -> EvalResult {
    let x = num_f("/", a)?;
    let y = num_f("/", b)?;
    if matches!((a, b), (Value::Int(_), Value::Int(0))) {
        return err(
            ErrorKind::ArithmeticError,
            "division by zero; check the divisor first, e.g. (if (zero? d) 0 (/ n d))",
        );
    }
    Ok(Value::Float(x / y))
}

fn div(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    match args {
        [x] => div2(&Value::Int(1), x),
        [first, rest @ ..] => {
            let mut acc = num("/", first)?;
            for a in rest.iter() {
                acc = div2(&acc, a)?;
            }
            Ok(acc)
        }
        [] => Ok(Value::Nil),
    }
}

fn inc(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    match &args[0] {
        Value::Int(i) => i.checked_add(1).map(Value::Int).map_or_else(|| overflow("inc"), Ok),
        Value::Float(f) => Ok(Value::Float(f + 1.0)),
        other => num("inc", other),
    }
}

fn dec(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    match &args[0] {
        Value::Int(i) => i.checked_sub(1).map(Value::Int).map_or_else(|| overflow("dec"), Ok),
        Value::Float(f) => Ok(Value::Float(f - 1.0)),
        other => num("dec", other),
    }
}

fn eq(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(args.windows(2).all(|w| w[0].equiv(&w[1]))))
}

fn not_eq(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(!args.windows(2).all(|w| w[0].equiv(&w[1]))))
}

/// The one order of PTC-Lisp — Clojure's `compare` — used by `< > <= >= compare sort
/// sort-by min max min-key max-key min-by max-by`: nil before anything; numbers by value
/// across int and float (NaN is unordered: `None`); strings, keywords and symbols by text;
/// false before true; vectors shorter first, then item by item. Values of different kinds,
/// maps, sets and functions have no order: a type error naming both.
#[inline]
pub fn compare_values(a: &Value, b: &Value) -> EvalResult<Option<Ordering>> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Ok(Some(x.cmp(y))),
        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
            Ok(a.as_f64().unwrap_or(f64::NAN).partial_cmp(&b.as_f64().unwrap_or(f64::NAN)))
        }
        (Value::Nil, Value::Nil) => Ok(Some(Ordering::Equal)),
        (Value::Nil, _) => Ok(Some(Ordering::Less)),
        (_, Value::Nil) => Ok(Some(Ordering::Greater)),
        (Value::Str(_), Value::Str(_))
        | (Value::Keyword(_), Value::Keyword(_))
        | (Value::Symbol(_), Value::Symbol(_))
        | (Value::Bool(_), Value::Bool(_)) => Ok(Some(a.cmp(b))),
        (Value::Vector(x) | Value::List(x), Value::Vector(y) | Value::List(y)) => {
            if x.len() != y.len() {
                return Ok(Some(x.len().cmp(&y.len())));
            }
            if std::sync::Arc::ptr_eq(x, y) {
                return Ok(Some(Ordering::Equal));
            }
            if !crate::meter::step() {
                return Err(crate::meter::stopped().into());
            }
            for (p, q) in x.iter().zip(y.iter()) {
                match compare_values(p, q)? {
                    Some(Ordering::Equal) => {}
                    other => return Ok(other),
                }
            }
            Ok(Some(Ordering::Equal))
        }
        _ => incomparable(a, b),
    }
}

#[cold]
fn incomparable<T>(a: &Value, b: &Value) -> EvalResult<T> {
    err(
        ErrorKind::TypeError,
        format!(
            "cannot compare {} {} with {} {}: only two numbers, two strings, two keywords, two booleans or two vectors have an order (nil sorts first); convert first, e.g. (str x) or (parse-long s)",
            a.type_name(),
            super::brief(a),
            b.type_name(),
            super::brief(b)
        ),
    )
}

fn chain(args: &[Value], ok: fn(Ordering) -> bool) -> EvalResult {
    for w in args.windows(2) {
        if !compare_values(&w[0], &w[1])?.is_some_and(ok) {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

fn lt(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    chain(args, |o| o == Ordering::Less)
}
fn gt(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    chain(args, |o| o == Ordering::Greater)
}
fn le(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    chain(args, |o| o != Ordering::Greater)
}
fn ge(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    chain(args, |o| o != Ordering::Less)
}

fn not(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(!args[0].truthy()))
}
fn is_nil(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(args[0].is_nil()))
}
fn is_some(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(!args[0].is_nil()))
}

fn whole(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Float(f) if f.fract() == 0.0 && f.is_finite() => Some(*f as i64),
        _ => None,
    }
}

fn is_zero(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(args[0].as_f64() == Some(0.0)))
}
fn is_pos(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(args[0].as_f64().is_some_and(|x| x > 0.0)))
}
fn is_neg(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(args[0].as_f64().is_some_and(|x| x < 0.0)))
}
fn is_even(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(whole(&args[0]).is_some_and(|i| i % 2 == 0)))
}
fn is_odd(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(whole(&args[0]).is_some_and(|i| i % 2 != 0)))
}
fn is_nan(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(matches!(args[0], Value::Float(f) if f.is_nan())))
}

fn extreme(args: &mut [Value], want: Ordering) -> EvalResult {
    let is_nan = |v: &Value| matches!(v, Value::Float(f) if f.is_nan());
    let mut best = std::mem::take(&mut args[0]);
    for a in args[1..].iter_mut() {
        let o = compare_values(&best, a)?;
        if is_nan(&best) {
            // NaN wins, as in Clojure; the rest still has to be comparable
            continue;
        }
        // as in Clojure, a tie goes to the later argument: (max 1 1.0) is 1.0
        if is_nan(a) || o != Some(want) {
            best = std::mem::take(a);
        }
    }
    Ok(best)
}
fn max(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    extreme(args, Ordering::Greater)
}
fn min(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    extreme(args, Ordering::Less)
}

/// Java's `Double.toString` style used by `str`: `1.0`, `0.1`, `1.0E20`, `1.0E-4`.
pub fn float_str(f: f64) -> String {
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
pub fn str_len_bound(v: &Value) -> u64 {
    let n = match v {
        Value::Nil => 0,
        Value::Str(s) => s.len(),
        Value::Bool(_) => 5,
        Value::Int(_) => 20,
        Value::Float(_) => 32,
        Value::Regex(r) => r.source().len(),
        Value::Keyword(k) | Value::Symbol(k) | Value::Var(k) => k.len() + 8,
        Value::Func(_) => 128,
        Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_) => 0,
    };
    n as u64
}

/// Appends the `str` form of `v` to `out`. Atoms are appended as they are (the caller
/// charged [`str_len_bound`] for them); collections are printed within what is left of
/// the memory budget and charged, so a huge shared value fails with `memory_exceeded`
/// instead of being built whole or silently cut.
pub fn push_str_form(cx: &mut BuiltinContext, v: &Value, out: &mut String) -> EvalResult<()> {
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
pub fn str_form(cx: &mut BuiltinContext, v: &Value) -> EvalResult<String> {
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
pub fn concat_str_forms<I>(cx: &mut BuiltinContext, parts: impl Fn() -> I, sep: &str) -> EvalResult<String>
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
pub fn case_mapped(cx: &mut BuiltinContext, s: &str, map: impl FnOnce(&str) -> String) -> EvalResult {
    charge_text(cx, s.len())?;
    let out = map(s);
    cx.charge(out.len().saturating_sub(s.len()) as u64)?;
    Ok(Value::str(out))
}

/// Charges a string result of `bytes` before it is built (for functions whose output size
/// is known from their input: trims, case changes, substrings).
pub fn charge_text(cx: &mut BuiltinContext, bytes: usize) -> EvalResult<()> {
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
    Ok(Value::str(concat_str_forms(cx, || args.iter(), "")?))
}

fn println(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let mut line = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        match a {
            Value::Str(s) => line.push_str(s),
            Value::Float(f) => line.push_str(&format_float(*f)),
            // the line is cut at max_print_length characters anyway: print no more than that
            other => {
                let room = cx.max_print_length().saturating_mul(4).saturating_add(64);
                line.push_str(&cx.print_value(other, room)?)
            }
        }
    }
    cx.print(line)?;
    Ok(Value::Nil)
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
