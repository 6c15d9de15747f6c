//! java.lang.Math (`Math/pow`...): the static methods of the interop subset.

use crate::builtins::context::BuiltinContext;
use crate::builtins::core::numbers::{f, half_up};
use crate::builtins::{Arity, Builtin, Category, Library, Table, expected, num_arg};
use crate::error::{ErrorKind, EvalResult, err};
use crate::value::Value;

use Arity::*;
use Category::Math;

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    builtins: &[
        Builtin::new("Math/round", Exact(1), Math, math_round)
            .doc("Java's Math.round: nearest integer, halves toward positive infinity; ##NaN gives 0, out-of-range values saturate; integers pass through (DIV-45).")
            .ex(&[("(Math/round 2.5)", "3"), ("(Math/round ##NaN)", "0")]),
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
    ],
};

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

fn math_max(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match crate::builtins::lookup("max") {
        Some(b) => cx.call(b, a),
        None => Ok(Value::Nil),
    }
}

fn math_min(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match crate::builtins::lookup("min") {
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

pub(crate) fn ints(fname: &str, a: &[Value]) -> EvalResult<Vec<i64>> {
    a.iter()
        .map(|v| match v {
            Value::Int(i) => Ok(*i),
            other => expected(fname, "integers", other),
        })
        .collect()
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
    // as Java: the remainder takes the divisor's sign; `rem` then `+ y` only when the
    // signs differ, which cannot overflow (`(r + y) % y` did for large operands)
    let r = x.wrapping_rem(y);
    Ok(Value::Int(if r != 0 && ((r < 0) != (y < 0)) { r + y } else { r }))
}
