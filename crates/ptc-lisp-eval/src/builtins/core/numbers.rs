//! clojure.core's numbers: arithmetic, comparison (`=`, `<`, `compare`), number tests,
//! casts, `abs`/`floor`/`pow`-style math and the bitwise operations.

use std::cmp::Ordering;

use crate::builtins::context::BuiltinContext;
use crate::builtins::core::predicates::{b, pred};
use crate::builtins::java::math::ints;
use crate::builtins::{Arity, Builtin, Category, Library, Table, expected, int_arg, num_arg};
use crate::error::{ErrorKind, EvalResult, err};
use crate::node::ArithOp;
use crate::value::Value;

use Arity::*;
use Category::{Core, Math};

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    builtins: &[
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
        Builtin::new("=", AtLeast(1), Core, eq).compare(crate::node::CmpOp::Eq)
            .alias(&["=="])
            .doc("Equality; numbers compare by value across int/float, collections structurally.")
            .ex(&[("(= 1 1.0)", "true"), ("(= [1 2] [1 2])", "true")]),
        Builtin::new("not=", AtLeast(1), Core, not_eq).compare(crate::node::CmpOp::NotEq)
            .doc("True when not all arguments are equal.")
            .ex(&[("(not= 1 2)", "true")]),
        Builtin::new("<", AtLeast(1), Core, lt).compare(crate::node::CmpOp::Lt)
            .doc("Strictly increasing in the order of compare? Numbers by value, strings and keywords by text, nil first; values of different kinds are an error.")
            .ex(&[("(< 1 2 3)", "true")]),
        Builtin::new(">", AtLeast(1), Core, gt).compare(crate::node::CmpOp::Gt).doc("Strictly decreasing?").ex(&[("(> 3 2 1)", "true")]),
        Builtin::new("<=", AtLeast(1), Core, le).compare(crate::node::CmpOp::Le).doc("Non-decreasing?").ex(&[("(<= 1 1 2)", "true")]),
        Builtin::new(">=", AtLeast(1), Core, ge).compare(crate::node::CmpOp::Ge).doc("Non-increasing?").ex(&[("(>= 2 2 1)", "true")]),
        Builtin::new("zero?", Exact(1), Core, is_zero)
            .test(test_zero)
            .doc("True for 0 and 0.0; false for anything else, including nil.")
            .ex(&[("(zero? 0)", "true"), ("(zero? nil)", "false")]),
        Builtin::new("pos?", Exact(1), Core, is_pos)
            .test(test_pos)
            .doc("True for numbers above zero; false for non-numbers.")
            .ex(&[("(pos? 3)", "true")]),
        Builtin::new("neg?", Exact(1), Core, is_neg)
            .test(test_neg)
            .doc("True for numbers below zero; false for non-numbers.")
            .ex(&[("(neg? -1)", "true")]),
        Builtin::new("even?", Exact(1), Core, is_even)
            .test(test_even)
            .doc("True for even integers (and whole floats); false for non-numbers.")
            .ex(&[("(even? 4)", "true"), ("(even? 3)", "false")]),
        Builtin::new("odd?", Exact(1), Core, is_odd)
            .test(test_odd)
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
        Builtin::new("number?", Exact(1), Core, is_number)
            .doc("True for integers and floats.")
            .ex(&[("(number? 1.5)", "true")])
            .lazy(),
        Builtin::new("integer?", Exact(1), Core, is_integer)
            .alias(&["int?"])
            .doc("True for integers.")
            .ex(&[("(integer? 1)", "true"), ("(integer? 1.0)", "false")])
            .lazy(),
        Builtin::new("float?", Exact(1), Core, is_float)
            .alias(&["double?"])
            .doc("True for floats.")
            .ex(&[("(float? 1.0)", "true")])
            .lazy(),
        Builtin::new("mod", Exact(2), Category::Math, modulo)
            .arith(crate::node::ArithOp::Mod)
            .doc("Floored modulus: the result has the sign of the divisor.")
            .ex(&[("(mod -7 2)", "1"), ("(mod 5.5 2)", "1.5")]),
        Builtin::new("rem", Exact(2), Category::Math, rem)
            .arith(crate::node::ArithOp::Rem)
            .doc("Truncated remainder: the result has the sign of the dividend.")
            .ex(&[("(rem -7 2)", "-1")]),
        Builtin::new("quot", Exact(2), Category::Math, quot)
            .arith(crate::node::ArithOp::Quot)
            .doc("Integer quotient, truncated toward zero.")
            .ex(&[("(quot -7 2)", "-3")]),
        Builtin::new("ratio?", Exact(1), Core, always_false)
            .alias(&["decimal?", "map-entry?"])
            .doc("Always false: PTC-Lisp has no ratios, decimals or map-entry type (DIV-20, DIV-49).")
            .ex(&[("(ratio? 1)", "false")])
            .lazy(),
        Builtin::new("rational?", Exact(1), Core, is_rational)
            .doc("Same as integer? (no ratios; DIV-20).")
            .ex(&[("(rational? 1)", "true")])
            .lazy(),
        Builtin::new("pos-int?", Exact(1), Core, pos_int).doc("Integer above zero.").ex(&[("(pos-int? 3)", "true")]).lazy(),
        Builtin::new("neg-int?", Exact(1), Core, neg_int).doc("Integer below zero.").ex(&[("(neg-int? -3)", "true")]).lazy(),
        Builtin::new("nat-int?", Exact(1), Core, nat_int).doc("Integer zero or above.").ex(&[("(nat-int? 0)", "true")]).lazy(),
        Builtin::new("infinite?", Exact(1), Core, infinite)
            .doc("True for ##Inf and ##-Inf.")
            .ex(&[("(infinite? ##Inf)", "true")]),
        Builtin::new("compare", Exact(2), Core, compare)
            .doc("-1, 0 or 1 comparing numbers, strings, keywords or vectors; nil sorts first.")
            .ex(&[("(compare 1 2)", "-1"), ("(compare \"b\" \"a\")", "1")]),
        Builtin::new("abs", Exact(1), Math, abs)
            .alias(&["Math/abs"])
            .doc("Absolute value.")
            .ex(&[("(abs -3)", "3"), ("(abs -2.5)", "2.5")]),
        Builtin::new("floor", Exact(1), Math, floor)
            .alias(&["Math/floor"])
            .ext()
            .doc("Largest integer not above x, as an integer (DIV-42); ##NaN and infinities pass through.")
            .ex(&[("(floor 2.7)", "2"), ("(floor -2.1)", "-3")]),
        Builtin::new("ceil", Exact(1), Math, ceil)
            .alias(&["Math/ceil"])
            .ext()
            .doc("Smallest integer not below x, as an integer (DIV-42); ##NaN and infinities pass through.")
            .ex(&[("(ceil 2.1)", "3")]),
        Builtin::new("round", Range(1, 2), Math, round)
            .ext()
            .doc("Nearest integer, halves toward positive infinity (as Java's Math/round); with n, a float rounded to n decimals of its decimal form (n < 0 rounds to tens, hundreds...); ##NaN and infinities pass through.")
            .ex(&[("(round 2.5)", "3"), ("(round -2.5)", "-2"), ("(round 3.14159 2)", "3.14"), ("(round 1.005 2)", "1.01")]),
        Builtin::new("trunc", Exact(1), Math, trunc)
            .ext()
            .doc("Integer part, toward zero; ##NaN and infinities pass through.")
            .ex(&[("(trunc -2.7)", "-2")]),
        Builtin::new("int", Exact(1), Math, int)
            .doc("Integer part of a number, toward zero, within the 32-bit int range as in Clojure (use long for larger values); ##NaN gives 0.")
            .ex(&[("(int 3.7)", "3"), ("(int -1.9)", "-1")]),
        Builtin::new("long", Exact(1), Math, long)
            .doc("Integer part of a number, toward zero; ##NaN gives 0; out of the 64-bit range is an error.")
            .ex(&[("(long 2.9)", "2"), ("(long 1e18)", "1000000000000000000")]),
        Builtin::new("double", Exact(1), Math, double)
            .alias(&["float"])
            .doc("The number as a float.")
            .ex(&[("(double 1)", "1.0")]),
        Builtin::new("pow", Exact(2), Math, pow)
            .alias(&["Math/pow"])
            .doc("x to the power y, as a float, with Java's special cases ((pow 1 ##Inf) is ##NaN).")
            .ex(&[("(pow 2 10)", "1024.0"), ("(pow 2 -1)", "0.5")]),
        Builtin::new("sqrt", Exact(1), Math, sqrt)
            .alias(&["Math/sqrt"])
            .doc("Square root (##NaN for negative numbers).")
            .ex(&[("(sqrt 16)", "4.0")]),
        Builtin::new("bit-and", AtLeast(2), Math, bit_and).doc("Bitwise and of integers.").ex(&[("(bit-and 12 10)", "8")]),
        Builtin::new("bit-or", AtLeast(2), Math, bit_or).doc("Bitwise or of integers.").ex(&[("(bit-or 12 10)", "14")]),
        Builtin::new("bit-xor", AtLeast(2), Math, bit_xor)
            .doc("Bitwise exclusive or of integers.")
            .ex(&[("(bit-xor 12 10)", "6")]),
        Builtin::new("bit-and-not", AtLeast(2), Math, bit_and_not).doc("x and not y.").ex(&[("(bit-and-not 12 10)", "4")]),
        Builtin::new("bit-not", Exact(1), Math, bit_not).doc("Bitwise complement.").ex(&[("(bit-not 0)", "-1")]),
        Builtin::new("bit-shift-left", Exact(2), Math, shl)
            .doc("x shifted left by n bits, as a 64-bit integer (bits shifted out are lost; n is taken mod 64, as in Clojure).")
            .ex(&[("(bit-shift-left 1 4)", "16"), ("(bit-shift-left 1 63)", "-9223372036854775808")]),
        Builtin::new("bit-shift-right", Exact(2), Math, shr)
            .doc("x shifted right by n bits, sign-extending (n mod 64).")
            .ex(&[("(bit-shift-right 16 2)", "4")]),
        Builtin::new("unsigned-bit-shift-right", Exact(2), Math, ushr)
            .doc("x shifted right by n bits, filling with zeros (n mod 64).")
            .ex(&[("(unsigned-bit-shift-right -1 60)", "15")]),
        Builtin::new("bit-set", Exact(2), Math, bit_set).doc("x with bit n (mod 64) set.").ex(&[("(bit-set 0 3)", "8")]),
        Builtin::new("bit-clear", Exact(2), Math, bit_clear)
            .doc("x with bit n (mod 64) cleared.")
            .ex(&[("(bit-clear 15 0)", "14")]),
        Builtin::new("bit-flip", Exact(2), Math, bit_flip)
            .doc("x with bit n (mod 64) flipped.")
            .ex(&[("(bit-flip 0 1)", "2")]),
        Builtin::new("bit-test", Exact(2), Math, bit_test)
            .doc("True when bit n (mod 64) of x is set.")
            .ex(&[("(bit-test 8 3)", "true")]),
        Builtin::new("num", Exact(1), Core, to_num).doc("Its argument, which must be a number.").ex(&[("(num 2.5)", "2.5")]),
    ],
};

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
pub(crate) fn add2(a: &Value, b: &Value) -> EvalResult {
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
    // from the first operand, not from 0: (+ -0.0 -0.0) is -0.0, as in Clojure
    let Some((first, rest)) = args.split_first() else { return Ok(Value::Int(0)) };
    let mut acc = num("+", first)?;
    for a in rest {
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

pub(crate) fn inc(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
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
pub(crate) fn compare_values(a: &Value, b: &Value) -> EvalResult<Option<Ordering>> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Ok(Some(x.cmp(y))),
        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
            Ok(a.as_f64().unwrap_or(f64::NAN).partial_cmp(&b.as_f64().unwrap_or(f64::NAN)))
        }
        (Value::Nil, Value::Nil) => Ok(Some(Ordering::Equal)),
        (Value::Nil, _) => Ok(Some(Ordering::Less)),
        (_, Value::Nil) => Ok(Some(Ordering::Greater)),
        // a namespace orders first (none before any), as Clojure's keywords and symbols do
        (Value::Keyword(x), Value::Keyword(y)) | (Value::Symbol(x), Value::Symbol(y))
            if x.contains('/') || y.contains('/') =>
        {
            Ok(Some(clojure_compare(a, b)?.cmp(&0)))
        }
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
            crate::builtins::brief(a),
            b.type_name(),
            crate::builtins::brief(b)
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

pub(crate) fn whole(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Float(f) if f.fract() == 0.0 && f.is_finite() => Some(*f as i64),
        _ => None,
    }
}

// The sign and parity tests of one value, answered in place by the interpreter's test
// node. A lazy sequence goes to the builtin, which realises it first (a realisation may
// fail).
fn test_zero(v: &Value) -> Option<bool> {
    (!matches!(v, Value::Lazy(_))).then(|| v.as_f64() == Some(0.0))
}

fn test_pos(v: &Value) -> Option<bool> {
    (!matches!(v, Value::Lazy(_))).then(|| v.as_f64().is_some_and(|x| x > 0.0))
}

fn test_neg(v: &Value) -> Option<bool> {
    (!matches!(v, Value::Lazy(_))).then(|| v.as_f64().is_some_and(|x| x < 0.0))
}

fn test_even(v: &Value) -> Option<bool> {
    (!matches!(v, Value::Lazy(_))).then(|| whole(v).is_some_and(|i| i % 2 == 0))
}

fn test_odd(v: &Value) -> Option<bool> {
    (!matches!(v, Value::Lazy(_))).then(|| whole(v).is_some_and(|i| i % 2 != 0))
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

fn is_number(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Int(_) | Value::Float(_)))
}

fn is_integer(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Int(_)))
}

fn is_float(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Float(_)))
}

fn int_pair(fname: &str, a: &[Value]) -> EvalResult<Option<(i64, i64)>> {
    match (&a[0], &a[1]) {
        (Value::Int(x), Value::Int(y)) => {
            if *y == 0 {
                return err(ErrorKind::ArithmeticError, format!("{fname}: division by zero"));
            }
            Ok(Some((*x, *y)))
        }
        (x, y) => {
            crate::builtins::num_arg(fname, x)?;
            crate::builtins::num_arg(fname, y)?;
            Ok(None)
        }
    }
}

/// Both operands as floats; a zero divisor is an error, as in Clojure.
pub(crate) fn floats(fname: &str, a: &[Value]) -> EvalResult<(f64, f64)> {
    let (x, y) = (a[0].as_f64().unwrap_or(f64::NAN), a[1].as_f64().unwrap_or(f64::NAN));
    if y == 0.0 {
        return err(ErrorKind::ArithmeticError, format!("{fname}: division by zero"));
    }
    Ok((x, y))
}

fn modulo(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match int_pair("mod", a)? {
        Some((x, y)) => {
            Ok(Value::Int(x.checked_rem(y).map(|r| if r != 0 && (r < 0) != (y < 0) { r + y } else { r }).unwrap_or(0)))
        }
        None => {
            let (x, y) = floats("mod", a)?;
            let r = x % y;
            Ok(Value::Float(if r != 0.0 && (r < 0.0) != (y < 0.0) { r + y } else { r }))
        }
    }
}

fn rem(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match int_pair("rem", a)? {
        Some((x, y)) => Ok(Value::Int(x.checked_rem(y).unwrap_or(0))),
        None => {
            let (x, y) = floats("rem", a)?;
            Ok(Value::Float(x % y))
        }
    }
}

fn quot(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match int_pair("quot", a)? {
        Some((x, y)) => match x.checked_div(y) {
            Some(q) => Ok(Value::Int(q)),
            None => err(ErrorKind::ArithmeticError, "integer overflow in quot"),
        },
        None => {
            let (x, y) = floats("quot", a)?;
            Ok(Value::Float((x / y).trunc()))
        }
    }
}

fn always_false(_: &mut BuiltinContext, _: &mut [Value]) -> EvalResult {
    b(false)
}

fn is_rational(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Int(_)))
}

fn pos_int(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Int(i) if i > 0))
}

fn neg_int(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Int(i) if i < 0))
}

fn nat_int(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Int(i) if i >= 0))
}

pub(crate) fn infinite(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Float(f) if f.is_infinite()))
}

fn compare(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(clojure_compare(&a[0], &a[1])?))
}

/// What Clojure's `compare` answers: strings, keywords and symbols as Java compares them
/// (the difference of the first differing characters, else of the lengths: `(compare "a"
/// "c")` is -2); vectors shorter first, then the answer for their first pair of items that
/// differ (`(compare [1 "a"] [1 "c"])` is -2 too); the rest -1, 0 or 1.
pub(crate) fn clojure_compare(x: &Value, y: &Value) -> EvalResult<i64> {
    match (x, y) {
        (Value::Str(x), Value::Str(y)) => return Ok(java_compare(x, y)),
        (Value::Keyword(x), Value::Keyword(y)) | (Value::Symbol(x), Value::Symbol(y)) => {
            let split = |s: &str| match s.split_once('/') {
                Some((ns, name)) if !ns.is_empty() && !name.is_empty() => (Some(ns.to_string()), name.to_string()),
                _ => (None, s.to_string()),
            };
            let ((nx, x), (ny, y)) = (split(x), split(y));
            let by_ns = match (nx, ny) {
                (None, None) => 0,
                (None, Some(_)) => -1,
                (Some(_), None) => 1,
                (Some(p), Some(q)) => java_compare(&p, &q),
            };
            return Ok(if by_ns != 0 { by_ns } else { java_compare(&x, &y) });
        }
        (Value::Vector(p) | Value::List(p), Value::Vector(q) | Value::List(q)) if p.len() == q.len() => {
            if std::sync::Arc::ptr_eq(p, q) {
                return Ok(0);
            }
            return clojure_compare_items(p.iter().zip(q.iter()));
        }
        _ => {}
    }
    Ok(crate::builtins::compare_values(x, y)?.unwrap_or(std::cmp::Ordering::Equal) as i64)
}

/// [`clojure_compare`] of two vectors of one length, given as their pairs of items: the
/// answer for the first pair that differs, else 0. One collection step of the meter, as a
/// walk over the two vectors.
#[inline]
pub(crate) fn clojure_compare_items<'a>(pairs: impl Iterator<Item = (&'a Value, &'a Value)>) -> EvalResult<i64> {
    if !crate::meter::step() {
        return Err(crate::meter::stopped().into());
    }
    for (i, j) in pairs {
        let c = clojure_compare(i, j)?;
        if c != 0 {
            return Ok(c);
        }
    }
    Ok(0)
}

/// Java's `String.compareTo`: over UTF-16 code units.
fn java_compare(x: &str, y: &str) -> i64 {
    let (mut p, mut q) = (x.encode_utf16(), y.encode_utf16());
    loop {
        match (p.next(), q.next()) {
            (Some(c), Some(d)) if c != d => return c as i64 - d as i64,
            (Some(_), Some(_)) => {}
            _ => return x.encode_utf16().count() as i64 - y.encode_utf16().count() as i64,
        }
    }
}

pub(crate) fn f(v: f64) -> EvalResult {
    Ok(Value::Float(v))
}

/// Truncates a float into `min..=max`; ##NaN is 0 (as Clojure's casts), else out of range
/// is an arithmetic error naming the function.
fn to_int_in(fname: &str, x: f64, min: i64, max: i64, hint: &str) -> EvalResult {
    if x.is_nan() {
        return Ok(Value::Int(0));
    }
    // as Clojure's casts: the untruncated value must lie within the range (2^63, the
    // double nearest i64::MAX, saturates)
    if x < min as f64 || x > max as f64 {
        return err(
            ErrorKind::ArithmeticError,
            format!("{fname}: {} is out of range{hint}", crate::builtins::core::strings::float_str(x)),
        );
    }
    Ok(Value::Int(x.trunc() as i64))
}

fn to_int(fname: &str, x: f64) -> EvalResult {
    to_int_in(fname, x, i64::MIN, i64::MAX, " for a 64-bit integer")
}

fn abs(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Int(i) => i
            .checked_abs()
            .map(Value::Int)
            .map_or_else(|| err(ErrorKind::ArithmeticError, "integer overflow in abs"), Ok),
        other => f(num_arg("abs", other)?.abs()),
    }
}

/// An integer result of a float rounding function; integers pass through, and ##NaN,
/// infinities and floats beyond the 64-bit range come back as floats (upstream signals).
pub(crate) fn rounding(fname: &str, v: &Value, op: fn(f64) -> f64) -> EvalResult {
    match v {
        Value::Int(i) => Ok(Value::Int(*i)),
        other => {
            let x = num_arg(fname, other)?;
            let r = op(x);
            // past the 64-bit range a float is already integral: it stays a float
            if !r.is_finite() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&r) {
                return f(r);
            }
            to_int(fname, r)
        }
    }
}

fn floor(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    rounding("floor", &a[0], f64::floor)
}

fn ceil(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    rounding("ceil", &a[0], f64::ceil)
}

fn trunc(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    rounding("trunc", &a[0], f64::trunc)
}

/// Java's Math.round rule: halves go toward positive infinity, without the x + 0.5 error.
pub(crate) fn half_up(x: f64) -> f64 {
    let fl = x.floor();
    if x - fl >= 0.5 { fl + 1.0 } else { fl }
}

/// x rounded to `places` decimals of its shortest decimal form; ties toward positive
/// infinity, like the one-argument round.
fn round_places(x: f64, places: i64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let s = format!("{:e}", x.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let mut digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect();
    // digits d1 d2 ... with the decimal point after d(exp+1); keep exp + 1 + places of them
    let keep = exp + 1 + places;
    if keep < 0 || digits.len() as i64 <= keep {
        return if keep < 0 { 0.0 } else { x };
    }
    let keep = keep as usize;
    let rest = &digits[keep..];
    let half = rest.first().copied().unwrap_or(0);
    let beyond_half = half > 5 || (half == 5 && rest.iter().skip(1).any(|d| *d != 0));
    // a tie goes up for positive numbers and toward zero for negative ones
    let up = beyond_half || (half == 5 && x > 0.0);
    digits.truncate(keep);
    let mut point = exp + 1;
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
        return 0.0 * x.signum();
    }
    let text: String = digits.iter().map(|d| (b'0' + d) as char).collect();
    let magnitude: f64 = format!("0.{text}e{point}").parse().unwrap_or(0.0);
    if x < 0.0 { -magnitude } else { magnitude }
}

pub(crate) fn round(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let Some(places) = a.get(1) {
        let n = int_arg("round", places)?.clamp(-400, 400);
        return match &a[0] {
            Value::Int(i) if n >= 0 => Ok(Value::Int(*i)),
            other => f(round_places(num_arg("round", other)?, n)),
        };
    }
    rounding("round", &a[0], half_up)
}

fn int(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let hint = " for int (32 bits); use long for larger numbers";
    match &a[0] {
        Value::Int(i) if i32::try_from(*i).is_ok() => Ok(Value::Int(*i)),
        Value::Int(i) => err(ErrorKind::ArithmeticError, format!("int: {i} is out of range{hint}")),
        other => to_int_in("int", num_arg("int", other)?, i32::MIN as i64, i32::MAX as i64, hint),
    }
}

fn long(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Int(i) => Ok(Value::Int(*i)),
        other => to_int("long", num_arg("long", other)?),
    }
}

fn double(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    f(num_arg("double", &a[0])?)
}

/// `java.lang.Math.pow`: like C's pow except that a NaN exponent, or |x| = 1 with an
/// infinite exponent, gives NaN.
fn java_pow(x: f64, y: f64) -> f64 {
    if y == 0.0 {
        1.0
    } else if y.is_nan() || (x.abs() == 1.0 && y.is_infinite()) {
        f64::NAN
    } else {
        x.powf(y)
    }
}

fn pow(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    f(java_pow(num_arg("pow", &a[0])?, num_arg("pow", &a[1])?))
}

pub(crate) fn sqrt(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    f(num_arg("sqrt", &a[0])?.sqrt())
}

fn fold(fname: &str, a: &[Value], op: fn(i64, i64) -> i64) -> EvalResult {
    let xs = ints(fname, a)?;
    Ok(Value::Int(xs[1..].iter().fold(xs[0], |acc, x| op(acc, *x))))
}

fn bit_and(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    fold("bit-and", a, |x, y| x & y)
}

fn bit_or(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    fold("bit-or", a, |x, y| x | y)
}

fn bit_xor(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    fold("bit-xor", a, |x, y| x ^ y)
}

fn bit_and_not(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    fold("bit-and-not", a, |x, y| x & !y)
}

fn bit_not(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(!ints("bit-not", a)?[0]))
}

/// The value and a bit index taken mod 64, as the JVM's shifts do.
fn bit_index(fname: &str, a: &[Value]) -> EvalResult<(i64, u32)> {
    let xs = ints(fname, a)?;
    Ok((xs[0], (xs[1] & 63) as u32))
}

fn shl(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, n) = bit_index("bit-shift-left", a)?;
    Ok(Value::Int(x.wrapping_shl(n)))
}

fn shr(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, n) = bit_index("bit-shift-right", a)?;
    Ok(Value::Int(x >> n))
}

fn ushr(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, n) = bit_index("unsigned-bit-shift-right", a)?;
    Ok(Value::Int(((x as u64) >> n) as i64))
}

fn bit_set(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, n) = bit_index("bit-set", a)?;
    Ok(Value::Int(x | (1i64 << n)))
}

fn bit_clear(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, n) = bit_index("bit-clear", a)?;
    Ok(Value::Int(x & !(1i64 << n)))
}

fn bit_flip(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, n) = bit_index("bit-flip", a)?;
    Ok(Value::Int(x ^ (1i64 << n)))
}

fn bit_test(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, n) = bit_index("bit-test", a)?;
    Ok(Value::Bool(x & (1i64 << n) != 0))
}

fn to_num(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Int(_) | Value::Float(_) => Ok(std::mem::take(&mut a[0])),
        other => expected("num", "a number (parse text with parse-long or parse-double)", other),
    }
}

#[cfg(test)]
mod tests {
    use super::round_places;

    fn eval(src: &str) -> String {
        let out = crate::run(src, crate::RunOptions::default());
        match out.result {
            crate::RunResult::Error(e) => format!("!{}", e.kind.as_str()),
            _ => out.printed,
        }
    }

    fn check(cases: &[(&str, &str)]) {
        for (src, want) in cases {
            assert_eq!(eval(src), *want, "{src}");
        }
    }

    #[test]
    fn rounding_to_integers() {
        check(&[
            ("(floor -2.5)", "-3"),
            ("(ceil -2.5)", "-2"),
            ("(trunc -2.5)", "-2"),
            ("(round 2.5)", "3"),
            ("(round -2.5)", "-2"),
            ("(round 0.49999999999999994)", "0"),
            ("(floor ##NaN)", "##NaN"),
            ("(ceil ##Inf)", "##Inf"),
            ("(float? (floor 1e300))", "true"),
            ("(Math/round ##NaN)", "0"),
            ("(Math/round ##Inf)", "9223372036854775807"),
            ("(Math/round 1e19)", "9223372036854775807"),
            ("(Math/floor 2.7)", "2"),
        ]);
    }

    #[test]
    fn rounding_to_places() {
        assert_eq!(round_places(1.005, 2), 1.01);
        assert_eq!(round_places(2.675, 2), 2.68);
        assert_eq!(round_places(-1.555, 2), -1.55);
        assert_eq!(round_places(-1.556, 2), -1.56);
        assert_eq!(round_places(1234.5678, -2), 1200.0);
        assert_eq!(round_places(0.4, 0), 0.0);
        assert_eq!(round_places(9.99, 1), 10.0);
        assert_eq!(round_places(1e-5, 2), 0.0);
        check(&[("(round 3.14159 2)", "3.14"), ("(round 7 -1)", "10.0"), ("(round 7 2)", "7")]);
    }

    #[test]
    fn casts_follow_clojure() {
        check(&[
            ("(int 3.7)", "3"),
            ("(int ##NaN)", "0"),
            ("(int 2147483647.5)", "!arithmetic_error"),
            ("(int 3000000000)", "!arithmetic_error"),
            ("(long 3000000000.9)", "3000000000"),
            ("(long ##Inf)", "!arithmetic_error"),
            ("(double 2)", "2.0"),
        ]);
    }

    #[test]
    fn powers_and_java_math() {
        check(&[
            ("(pow 2 10)", "1024.0"),
            ("(pow 1 ##Inf)", "##NaN"),
            ("(pow 1 ##NaN)", "##NaN"),
            ("(pow ##NaN 0)", "1.0"),
            ("(sqrt -1)", "##NaN"),
            ("(Math/rint 2.5)", "2.0"),
            ("(Math/addExact 9223372036854775807 1)", "!arithmetic_error"),
            ("(Math/toIntExact 2147483648)", "!arithmetic_error"),
            ("(Math/floorDiv -7 2)", "-4"),
            ("(max 1 1.0)", "1.0"),
            ("(max ##NaN 1)", "##NaN"),
            ("(min 2 1 1.0)", "1.0"),
            ("(mod 5.5 0)", "!arithmetic_error"),
        ]);
    }

    #[test]
    fn bits_wrap_like_the_jvm() {
        check(&[
            ("(bit-shift-left 1 63)", "-9223372036854775808"),
            ("(bit-shift-left 1 64)", "1"),
            ("(bit-shift-right 8 -1)", "0"),
            ("(unsigned-bit-shift-right -1 60)", "15"),
            ("(bit-set 0 64)", "1"),
            ("(bit-test -1 63)", "true"),
            ("(bit-and 1.5 1)", "!type_error"),
        ]);
    }
}
