//! Math: rounding, powers, roots, logarithms, trigonometry, bit operations, and the
//! `Math/` names of the Java interop surface.

use super::{Arity, Builtin, Category, expected, int_arg, num_arg};
use crate::error::{ErrorKind, EvalResult, err};
use crate::interp::Interp;
use crate::value::Value;

use Arity::*;
use Category::Math;

/// Math builtins.
pub static BUILTINS: &[Builtin] = &[
    Builtin::new("abs", Exact(1), Math, abs)
        .alias(&["Math/abs"])
        .doc("Absolute value.")
        .ex(&[("(abs -3)", "3"), ("(abs -2.5)", "2.5")]),
    Builtin::new("floor", Exact(1), Math, floor)
        .alias(&["Math/floor"])
        .ext()
        .doc("Largest integer not above x, as an integer (DIV-42).")
        .ex(&[("(floor 2.7)", "2"), ("(floor -2.1)", "-3")]),
    Builtin::new("ceil", Exact(1), Math, ceil)
        .alias(&["Math/ceil"])
        .ext()
        .doc("Smallest integer not below x, as an integer (DIV-42).")
        .ex(&[("(ceil 2.1)", "3")]),
    Builtin::new("round", Range(1, 2), Math, round)
        .alias(&["Math/round"])
        .ext()
        .doc("Nearest integer, halves up (Java's Math/round); with n, a float rounded to n decimals.")
        .ex(&[("(round 2.5)", "3"), ("(round -2.5)", "-2"), ("(round 3.14159 2)", "3.14")]),
    Builtin::new("trunc", Exact(1), Math, trunc).ext().doc("Integer part, toward zero.").ex(&[("(trunc -2.7)", "-2")]),
    Builtin::new("int", Exact(1), Math, int)
        .alias(&["long"])
        .doc("Integer part of a number, toward zero; ##NaN gives 0.")
        .ex(&[("(int 3.7)", "3"), ("(int -1.9)", "-1")]),
    Builtin::new("double", Exact(1), Math, double)
        .alias(&["float"])
        .doc("The number as a float.")
        .ex(&[("(double 1)", "1.0")]),
    Builtin::new("pow", Exact(2), Math, pow)
        .alias(&["Math/pow"])
        .doc("x to the power y, as a float.")
        .ex(&[("(pow 2 10)", "1024.0")]),
    Builtin::new("sqrt", Exact(1), Math, sqrt)
        .alias(&["Math/sqrt"])
        .doc("Square root (##NaN for negative numbers).")
        .ex(&[("(sqrt 16)", "4.0")]),
    Builtin::new("Math/max", AtLeast(1), Math, math_max)
        .doc("The largest number (variadic, DIV-44).")
        .ex(&[("(Math/max 1 5 3)", "5")]),
    Builtin::new("Math/min", AtLeast(1), Math, math_min)
        .doc("The smallest number (variadic, DIV-44).")
        .ex(&[("(Math/min 4 2)", "2")]),
    Builtin::new("Math/log", Exact(1), Math, ln).doc("Natural logarithm.").ex(&[("(Math/log 1)", "0.0")]),
    Builtin::new("Math/log10", Exact(1), Math, log10).doc("Base-10 logarithm.").ex(&[("(Math/log10 1000)", "3.0")]),
    Builtin::new("Math/exp", Exact(1), Math, exp).doc("e to the power x.").ex(&[("(Math/exp 0)", "1.0")]),
    Builtin::new("Math/sin", Exact(1), Math, sin).doc("Sine (radians).").ex(&[("(Math/sin 0)", "0.0")]),
    Builtin::new("Math/cos", Exact(1), Math, cos).doc("Cosine (radians).").ex(&[("(Math/cos 0)", "1.0")]),
    Builtin::new("Math/tan", Exact(1), Math, tan).doc("Tangent (radians).").ex(&[("(Math/tan 0)", "0.0")]),
    Builtin::new("Math/asin", Exact(1), Math, asin).doc("Arc sine.").ex(&[("(Math/asin 0)", "0.0")]),
    Builtin::new("Math/acos", Exact(1), Math, acos).doc("Arc cosine.").ex(&[("(Math/acos 1)", "0.0")]),
    Builtin::new("Math/atan", Exact(1), Math, atan).doc("Arc tangent.").ex(&[("(Math/atan 0)", "0.0")]),
    Builtin::new("Math/atan2", Exact(2), Math, atan2)
        .doc("Angle of the point (x, y) from (atan2 y x).")
        .ex(&[("(Math/atan2 0 1)", "0.0")]),
    Builtin::new("Math/hypot", Exact(2), Math, hypot).doc("sqrt(x² + y²).").ex(&[("(Math/hypot 3 4)", "5.0")]),
    Builtin::new("Math/cbrt", Exact(1), Math, cbrt).doc("Cube root.").ex(&[("(Math/cbrt 27)", "3.0")]),
    Builtin::new("Math/signum", Exact(1), Math, signum)
        .doc("-1.0, 0.0 or 1.0 by sign.")
        .ex(&[("(Math/signum -5)", "-1.0")]),
    Builtin::new("Math/floorDiv", Exact(2), Math, floor_div)
        .doc("Integer division rounding toward negative infinity.")
        .ex(&[("(Math/floorDiv -7 2)", "-4")]),
    Builtin::new("Math/floorMod", Exact(2), Math, floor_mod)
        .doc("Modulus with the sign of the divisor (same as mod).")
        .ex(&[("(Math/floorMod -7 2)", "1")]),
    Builtin::new("Math/toRadians", Exact(1), Math, to_radians)
        .doc("Degrees to radians.")
        .ex(&[("(Math/toRadians 180)", "3.1415926536")]),
    Builtin::new("Math/toDegrees", Exact(1), Math, to_degrees)
        .doc("Radians to degrees.")
        .ex(&[("(Math/toDegrees Math/PI)", "180.0")]),
    Builtin::new("Math/log1p", Exact(1), Math, log1p)
        .doc("ln(1 + x), accurate for small x.")
        .ex(&[("(Math/log1p 0)", "0.0")]),
    Builtin::new("bit-and", AtLeast(2), Math, bit_and).doc("Bitwise and of integers.").ex(&[("(bit-and 12 10)", "8")]),
    Builtin::new("bit-or", AtLeast(2), Math, bit_or).doc("Bitwise or of integers.").ex(&[("(bit-or 12 10)", "14")]),
    Builtin::new("bit-xor", AtLeast(2), Math, bit_xor)
        .doc("Bitwise exclusive or of integers.")
        .ex(&[("(bit-xor 12 10)", "6")]),
    Builtin::new("bit-and-not", AtLeast(2), Math, bit_and_not).doc("x and not y.").ex(&[("(bit-and-not 12 10)", "4")]),
    Builtin::new("bit-not", Exact(1), Math, bit_not).doc("Bitwise complement.").ex(&[("(bit-not 0)", "-1")]),
    Builtin::new("bit-shift-left", Exact(2), Math, shl)
        .doc("x shifted left by n bits; overflow is an error.")
        .ex(&[("(bit-shift-left 1 4)", "16")]),
    Builtin::new("bit-shift-right", Exact(2), Math, shr)
        .doc("x shifted right by n bits (sign-extending).")
        .ex(&[("(bit-shift-right 16 2)", "4")]),
    Builtin::new("bit-set", Exact(2), Math, bit_set).doc("x with bit n set.").ex(&[("(bit-set 0 3)", "8")]),
    Builtin::new("bit-clear", Exact(2), Math, bit_clear).doc("x with bit n cleared.").ex(&[("(bit-clear 15 0)", "14")]),
    Builtin::new("bit-flip", Exact(2), Math, bit_flip).doc("x with bit n flipped.").ex(&[("(bit-flip 0 1)", "2")]),
    Builtin::new("bit-test", Exact(2), Math, bit_test)
        .doc("True when bit n of x is set.")
        .ex(&[("(bit-test 8 3)", "true")]),
];

fn f(v: f64) -> EvalResult {
    Ok(Value::Float(v))
}

fn to_int(fname: &str, x: f64) -> EvalResult {
    if x.is_nan() {
        return Ok(Value::Int(0));
    }
    if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&x) {
        return err(ErrorKind::ArithmeticError, format!("{fname}: {x} does not fit in a 64-bit integer"));
    }
    Ok(Value::Int(x as i64))
}

fn abs(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Int(i) => i
            .checked_abs()
            .map(Value::Int)
            .map_or_else(|| err(ErrorKind::ArithmeticError, "integer overflow in abs"), Ok),
        other => f(num_arg("abs", other)?.abs()),
    }
}
fn rounding(fname: &str, v: &Value, op: fn(f64) -> f64) -> EvalResult {
    match v {
        Value::Int(i) => Ok(Value::Int(*i)),
        other => to_int(fname, op(num_arg(fname, other)?)),
    }
}
fn floor(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    rounding("floor", &a[0], f64::floor)
}
fn ceil(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    rounding("ceil", &a[0], f64::ceil)
}
fn trunc(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    rounding("trunc", &a[0], f64::trunc)
}
fn round(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    if let Some(places) = a.get(1) {
        let n = int_arg("round", places)?.clamp(0, 15) as i32;
        let x = num_arg("round", &a[0])?;
        let scale = 10f64.powi(n);
        // round the decimal text, so 1.005 becomes 1.01 as people expect
        let text = format!("{:.*}", (n + 3) as usize, x * scale);
        let scaled: f64 = text.parse().unwrap_or(x * scale);
        return f((scaled + 0.5).floor() / scale);
    }
    // Java's Math.round: halves go toward positive infinity; no x + 0.5 rounding error
    rounding("round", &a[0], |x| {
        let f = x.floor();
        if x - f >= 0.5 { f + 1.0 } else { f }
    })
}
fn int(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    rounding("int", &a[0], f64::trunc)
}
fn double(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    f(num_arg("double", &a[0])?)
}
fn pow(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    f(num_arg("pow", &a[0])?.powf(num_arg("pow", &a[1])?))
}
fn sqrt(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    f(num_arg("sqrt", &a[0])?.sqrt())
}
fn math_max(interp: &mut Interp, a: &mut [Value]) -> EvalResult {
    match super::lookup("max") {
        Some(b) => b.call(interp, a),
        None => Ok(Value::Nil),
    }
}
fn math_min(interp: &mut Interp, a: &mut [Value]) -> EvalResult {
    match super::lookup("min") {
        Some(b) => b.call(interp, a),
        None => Ok(Value::Nil),
    }
}
macro_rules! unary {
    ($name:ident, $label:literal, $op:expr) => {
        fn $name(_: &mut Interp, a: &mut [Value]) -> EvalResult {
            let op: fn(f64) -> f64 = $op;
            f(op(num_arg($label, &a[0])?))
        }
    };
}
unary!(ln, "Math/log", f64::ln);
unary!(log10, "Math/log10", f64::log10);
unary!(exp, "Math/exp", f64::exp);
unary!(sin, "Math/sin", f64::sin);
unary!(cos, "Math/cos", f64::cos);
unary!(tan, "Math/tan", f64::tan);
unary!(asin, "Math/asin", f64::asin);
unary!(acos, "Math/acos", f64::acos);
unary!(atan, "Math/atan", f64::atan);
unary!(cbrt, "Math/cbrt", f64::cbrt);
unary!(signum, "Math/signum", |x| if x == 0.0 || x.is_nan() { x } else { x.signum() });
fn atan2(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    f(num_arg("Math/atan2", &a[0])?.atan2(num_arg("Math/atan2", &a[1])?))
}
fn hypot(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    f(num_arg("Math/hypot", &a[0])?.hypot(num_arg("Math/hypot", &a[1])?))
}

fn ints(fname: &str, a: &[Value]) -> EvalResult<Vec<i64>> {
    a.iter()
        .map(|v| match v {
            Value::Int(i) => Ok(*i),
            other => expected(fname, "integers", other),
        })
        .collect()
}
fn fold(fname: &str, a: &[Value], op: fn(i64, i64) -> i64) -> EvalResult {
    let xs = ints(fname, a)?;
    Ok(Value::Int(xs[1..].iter().fold(xs[0], |acc, x| op(acc, *x))))
}
fn bit_and(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    fold("bit-and", a, |x, y| x & y)
}
fn bit_or(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    fold("bit-or", a, |x, y| x | y)
}
fn bit_xor(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    fold("bit-xor", a, |x, y| x ^ y)
}
fn bit_and_not(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    fold("bit-and-not", a, |x, y| x & !y)
}
fn bit_not(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(!ints("bit-not", a)?[0]))
}
fn bit_index(fname: &str, a: &[Value]) -> EvalResult<(i64, u32)> {
    let xs = ints(fname, a)?;
    if !(0..64).contains(&xs[1]) {
        return err(ErrorKind::ArithmeticError, format!("{fname}: bit index {} is outside 0..63", xs[1]));
    }
    Ok((xs[0], xs[1] as u32))
}
fn shl(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (x, n) = bit_index("bit-shift-left", a)?;
    let r = x.checked_shl(n).filter(|r| r >> n == x);
    r.map(Value::Int).map_or_else(|| err(ErrorKind::ArithmeticError, "integer overflow in bit-shift-left"), Ok)
}
fn shr(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (x, n) = bit_index("bit-shift-right", a)?;
    Ok(Value::Int(x >> n))
}
fn bit_set(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (x, n) = bit_index("bit-set", a)?;
    Ok(Value::Int(x | (1i64 << n)))
}
fn bit_clear(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (x, n) = bit_index("bit-clear", a)?;
    Ok(Value::Int(x & !(1i64 << n)))
}
fn bit_flip(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (x, n) = bit_index("bit-flip", a)?;
    Ok(Value::Int(x ^ (1i64 << n)))
}
fn bit_test(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (x, n) = bit_index("bit-test", a)?;
    Ok(Value::Bool(x & (1i64 << n) != 0))
}
unary!(to_radians, "Math/toRadians", f64::to_radians);
unary!(to_degrees, "Math/toDegrees", f64::to_degrees);
unary!(log1p, "Math/log1p", f64::ln_1p);
fn int_div_args(fname: &str, a: &[Value]) -> EvalResult<(i64, i64)> {
    let xs = ints(fname, a)?;
    if xs[1] == 0 {
        return err(ErrorKind::ArithmeticError, format!("{fname}: division by zero"));
    }
    Ok((xs[0], xs[1]))
}
fn floor_div(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (x, y) = int_div_args("Math/floorDiv", a)?;
    match x.checked_div(y) {
        Some(q) if x % y != 0 && ((x < 0) != (y < 0)) => Ok(Value::Int(q - 1)),
        Some(q) => Ok(Value::Int(q)),
        None => err(ErrorKind::ArithmeticError, "integer overflow in Math/floorDiv"),
    }
}
fn floor_mod(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (x, y) = int_div_args("Math/floorMod", a)?;
    Ok(Value::Int(((x % y) + y) % y))
}
