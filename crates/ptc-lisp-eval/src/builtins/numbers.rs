//! Math: rounding, powers, roots, logarithms, trigonometry, bit operations, and the
//! `Math/` names of the Java interop surface.

use super::{Arity, Builtin, Category, expected, int_arg, num_arg};
use crate::builtins::context::BuiltinContext;
use crate::error::{ErrorKind, EvalResult, err};
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
    Builtin::new("Math/round", Exact(1), Math, math_round)
        .doc("Java's Math.round: nearest integer, halves toward positive infinity; ##NaN gives 0, out-of-range values saturate; integers pass through (DIV-45).")
        .ex(&[("(Math/round 2.5)", "3"), ("(Math/round ##NaN)", "0")]),
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
    Builtin::new("Math/sinh", Exact(1), Math, sinh).doc("Hyperbolic sine.").ex(&[("(Math/sinh 0)", "0.0")]),
    Builtin::new("Math/cosh", Exact(1), Math, cosh).doc("Hyperbolic cosine.").ex(&[("(Math/cosh 0)", "1.0")]),
    Builtin::new("Math/tanh", Exact(1), Math, tanh).doc("Hyperbolic tangent.").ex(&[("(Math/tanh 0)", "0.0")]),
    Builtin::new("Math/expm1", Exact(1), Math, expm1)
        .doc("e^x - 1, accurate for small x.")
        .ex(&[("(Math/expm1 0)", "0.0")]),
    Builtin::new("Math/rint", Exact(1), Math, rint)
        .doc("The closest integral float; halves go to the even neighbour.")
        .ex(&[("(Math/rint 2.5)", "2.0"), ("(Math/rint 3.5)", "4.0")]),
    Builtin::new("Math/addExact", Exact(2), Math, add_exact)
        .doc("Integer sum; overflow is an error.")
        .ex(&[("(Math/addExact 1 2)", "3")]),
    Builtin::new("Math/subtractExact", Exact(2), Math, subtract_exact)
        .doc("Integer difference; overflow is an error.")
        .ex(&[("(Math/subtractExact 3 4)", "-1")]),
    Builtin::new("Math/multiplyExact", Exact(2), Math, multiply_exact)
        .doc("Integer product; overflow is an error.")
        .ex(&[("(Math/multiplyExact 3 4)", "12")]),
    Builtin::new("Math/negateExact", Exact(1), Math, negate_exact)
        .doc("Integer negation; overflow is an error.")
        .ex(&[("(Math/negateExact 5)", "-5")]),
    Builtin::new("Math/incrementExact", Exact(1), Math, increment_exact)
        .doc("Integer plus one; overflow is an error.")
        .ex(&[("(Math/incrementExact 1)", "2")]),
    Builtin::new("Math/decrementExact", Exact(1), Math, decrement_exact)
        .doc("Integer minus one; overflow is an error.")
        .ex(&[("(Math/decrementExact 1)", "0")]),
    Builtin::new("Math/toIntExact", Exact(1), Math, to_int_exact)
        .doc("The integer, checked to fit in 32 bits.")
        .ex(&[("(Math/toIntExact 5)", "5")]),
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
        .ex(&[("(Math/toRadians 180)", "3.141592653589793")]),
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
];

fn f(v: f64) -> EvalResult {
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
            format!("{fname}: {} is out of range{hint}", super::core::float_str(x)),
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
fn rounding(fname: &str, v: &Value, op: fn(f64) -> f64) -> EvalResult {
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
fn half_up(x: f64) -> f64 {
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
fn round(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let Some(places) = a.get(1) {
        let n = int_arg("round", places)?.clamp(-400, 400);
        return match &a[0] {
            Value::Int(i) if n >= 0 => Ok(Value::Int(*i)),
            other => f(round_places(num_arg("round", other)?, n)),
        };
    }
    rounding("round", &a[0], half_up)
}
fn math_round(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Int(i) => Ok(Value::Int(*i)),
        other => {
            let x = num_arg("Math/round", other)?;
            Ok(Value::Int(if x.is_nan() {
                0
            } else if x >= 9.223_372_036_854_776e18 {
                i64::MAX
            } else if x <= -9.223_372_036_854_776e18 {
                i64::MIN
            } else {
                half_up(x) as i64
            }))
        }
    }
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
fn sqrt(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    f(num_arg("sqrt", &a[0])?.sqrt())
}
fn math_max(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match super::lookup("max") {
        Some(b) => cx.call(b, a),
        None => Ok(Value::Nil),
    }
}
fn math_min(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match super::lookup("min") {
        Some(b) => cx.call(b, a),
        None => Ok(Value::Nil),
    }
}
macro_rules! unary {
    ($name:ident, $label:literal, $op:expr) => {
        fn $name(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
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
unary!(sinh, "Math/sinh", f64::sinh);
unary!(cosh, "Math/cosh", f64::cosh);
unary!(tanh, "Math/tanh", f64::tanh);
unary!(expm1, "Math/expm1", f64::exp_m1);
unary!(rint, "Math/rint", f64::round_ties_even);
unary!(signum, "Math/signum", |x| if x == 0.0 || x.is_nan() { x } else { x.signum() });
fn atan2(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    f(num_arg("Math/atan2", &a[0])?.atan2(num_arg("Math/atan2", &a[1])?))
}
fn hypot(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
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
fn exact(fname: &str, r: Option<i64>) -> EvalResult {
    r.map(Value::Int).map_or_else(
        || err(ErrorKind::ArithmeticError, format!("{fname}: integer overflow (the result does not fit in 64 bits)")),
        Ok,
    )
}
fn add_exact(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let xs = ints("Math/addExact", a)?;
    exact("Math/addExact", xs[0].checked_add(xs[1]))
}
fn subtract_exact(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let xs = ints("Math/subtractExact", a)?;
    exact("Math/subtractExact", xs[0].checked_sub(xs[1]))
}
fn multiply_exact(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let xs = ints("Math/multiplyExact", a)?;
    exact("Math/multiplyExact", xs[0].checked_mul(xs[1]))
}
fn negate_exact(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    exact("Math/negateExact", ints("Math/negateExact", a)?[0].checked_neg())
}
fn increment_exact(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    exact("Math/incrementExact", ints("Math/incrementExact", a)?[0].checked_add(1))
}
fn decrement_exact(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    exact("Math/decrementExact", ints("Math/decrementExact", a)?[0].checked_sub(1))
}
fn to_int_exact(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let x = ints("Math/toIntExact", a)?[0];
    match i32::try_from(x) {
        Ok(_) => Ok(Value::Int(x)),
        Err(_) => err(ErrorKind::ArithmeticError, format!("Math/toIntExact: {x} does not fit in 32 bits")),
    }
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
fn floor_div(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, y) = int_div_args("Math/floorDiv", a)?;
    match x.checked_div(y) {
        Some(q) if x % y != 0 && ((x < 0) != (y < 0)) => Ok(Value::Int(q - 1)),
        Some(q) => Ok(Value::Int(q)),
        None => err(ErrorKind::ArithmeticError, "integer overflow in Math/floorDiv"),
    }
}
fn floor_mod(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, y) = int_div_args("Math/floorMod", a)?;
    Ok(Value::Int(((x % y) + y) % y))
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
