//! Named constants of the Java interop surface (`Double/NaN`, `Math/PI`, `Long/MAX_VALUE`).
//! Referring to one yields its value: `(+ Math/PI 1)`.

use super::{Arity, Builtin, Category, Library, Table};
use crate::builtins::context::BuiltinContext;
use crate::error::EvalResult;
use crate::value::Value;

macro_rules! constant {
    ($fname:ident, $value:expr) => {
        fn $fname(_: &mut BuiltinContext, _: &mut [Value]) -> EvalResult {
            Ok($value)
        }
    };
}

constant!(nan, Value::Float(f64::NAN));
constant!(pos_inf, Value::Float(f64::INFINITY));
constant!(neg_inf, Value::Float(f64::NEG_INFINITY));
constant!(pi, Value::Float(std::f64::consts::PI));
constant!(e, Value::Float(std::f64::consts::E));
constant!(long_max, Value::Int(i64::MAX));
constant!(long_min, Value::Int(i64::MIN));
constant!(int_max, Value::Int(i32::MAX as i64));
constant!(int_min, Value::Int(i32::MIN as i64));
constant!(double_max, Value::Float(f64::MAX));

use Arity::Exact;
use Category::{Interop, Math};

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    builtins: &[
        Builtin::new("Double/NaN", Exact(0), Interop, nan)
            .constant()
            .doc("Not-a-number (##NaN).")
            .ex(&[("(NaN? Double/NaN)", "true")]),
        Builtin::new("Double/POSITIVE_INFINITY", Exact(0), Interop, pos_inf)
            .constant()
            .doc("Positive infinity (##Inf).")
            .ex(&[("Double/POSITIVE_INFINITY", "##Inf")]),
        Builtin::new("Double/NEGATIVE_INFINITY", Exact(0), Interop, neg_inf)
            .constant()
            .doc("Negative infinity (##-Inf).")
            .ex(&[("Double/NEGATIVE_INFINITY", "##-Inf")]),
        Builtin::new("Double/MAX_VALUE", Exact(0), Interop, double_max)
            .constant()
            .doc("Largest finite double.")
            .ex(&[("(> Double/MAX_VALUE 1e300)", "true")]),
        Builtin::new("Math/PI", Exact(0), Math, pi)
            .constant()
            .doc("The ratio of a circle's circumference to its diameter.")
            .ex(&[("Math/PI", "3.141592653589793")]),
        Builtin::new("Math/E", Exact(0), Math, e)
            .constant()
            .doc("Euler's number.")
            .ex(&[("Math/E", "2.718281828459045")]),
        Builtin::new("Long/MAX_VALUE", Exact(0), Interop, long_max)
            .constant()
            .doc("Largest integer (2^63 - 1).")
            .ex(&[("Long/MAX_VALUE", "9223372036854775807")]),
        Builtin::new("Long/MIN_VALUE", Exact(0), Interop, long_min)
            .constant()
            .doc("Smallest integer (-2^63).")
            .ex(&[("Long/MIN_VALUE", "-9223372036854775808")]),
        Builtin::new("Integer/MAX_VALUE", Exact(0), Interop, int_max)
            .constant()
            .doc("Largest 32-bit integer.")
            .ex(&[("Integer/MAX_VALUE", "2147483647")]),
        Builtin::new("Integer/MIN_VALUE", Exact(0), Interop, int_min)
            .constant()
            .doc("Smallest 32-bit integer.")
            .ex(&[("Integer/MIN_VALUE", "-2147483648")]),
    ],
};
