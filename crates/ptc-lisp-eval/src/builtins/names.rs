//! Clojure names models reach for that are small on their own: `namespace`, `symbol`,
//! `num`, `comparator`, `trampoline`, `Character/digit`, `Character/getNumericValue`.

use std::sync::Arc;

use super::{Arity, Builtin, Category, expected, int_arg};
use crate::builtins::context::BuiltinContext;
use crate::error::{ErrorKind, EvalResult, err};
use crate::function::{FnRepr, Function, Held};
use crate::value::Value;

use Arity::*;
use Category::{Core, Functional, Interop};

/// The builtins of this family.
pub static BUILTINS: &[Builtin] = &[
    Builtin::new("namespace", Exact(1), Core, namespace)
        .doc("The namespace of a keyword or symbol (\"order\" for :order/paid), or nil when it has none.")
        .ex(&[("(namespace :order/paid)", "\"order\""), ("(namespace :paid)", "nil")]),
    Builtin::new("symbol", Range(1, 2), Core, symbol)
        .doc("A symbol from a name, or from a namespace and a name.")
        .ex(&[("(symbol \"a\")", "a"), ("(symbol \"ns\" \"a\")", "ns/a")]),
    Builtin::new("num", Exact(1), Core, num).doc("Its argument, which must be a number.").ex(&[("(num 2.5)", "2.5")]),
    Builtin::new("comparator", Exact(1), Functional, comparator)
        .doc("A comparison function (-1, 0 or 1) from a predicate like <.")
        .ex(&[("(sort (comparator >) [1 3 2])", "[3 2 1]")]),
    Builtin::new("trampoline", AtLeast(1), Functional, trampoline)
        .doc("Calls f with the arguments, then keeps calling the result while it is a function (mutual recursion without growing the stack).")
        .ex(&[("(trampoline (fn f [n] (if (pos? n) #(f (dec n)) :done)) 3)", ":done")]),
    Builtin::new("Character/digit", Exact(2), Interop, char_digit)
        .doc("The value of a digit character in a radix, or -1.")
        .ex(&[("(Character/digit \\7 10)", "7"), ("(Character/digit \\f 16)", "15")]),
    Builtin::new("Character/getNumericValue", Exact(1), Interop, char_numeric_value)
        .doc("The value of a digit or letter (a..z are 10..35), or -1.")
        .ex(&[("(Character/getNumericValue \\8)", "8")]),
];

/// The namespace and name of a keyword or symbol's text (`order/paid`).
pub fn split_name(s: &str) -> (Option<&str>, &str) {
    match s.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() => (Some(ns), name),
        _ => (None, s),
    }
}

fn namespace(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Keyword(s) | Value::Symbol(s) => Ok(split_name(s).0.map_or(Value::Nil, Value::str)),
        other => expected("namespace", "a keyword or symbol", other),
    }
}

fn symbol(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let part = |v: &Value| -> EvalResult<Arc<str>> {
        match v {
            Value::Str(s) | Value::Symbol(s) | Value::Keyword(s) if !s.is_empty() => Ok(s.clone()),
            other => expected("symbol", "a non-empty string", other),
        }
    };
    match a {
        [name] => Ok(Value::Symbol(part(name)?)),
        [Value::Nil, name] => Ok(Value::Symbol(part(name)?)),
        [ns, name] => Ok(Value::Symbol(Arc::from(format!("{}/{}", part(ns)?, part(name)?)))),
        _ => err(ErrorKind::ArityError, "symbol takes a name, or a namespace and a name"),
    }
}

fn num(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Int(_) | Value::Float(_) => Ok(std::mem::take(&mut a[0])),
        other => expected("num", "a number (parse text with parse-long or parse-double)", other),
    }
}

fn comparator(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let pred = std::mem::take(&mut a[0]);
    Ok(Function::native("comparator", Held::values(vec![pred]), |cx, held, call| {
        let Some(pred) = held.first() else { return Ok(Value::Nil) };
        let [x, y] = call else {
            return err(ErrorKind::ArityError, "a comparator takes 2 arguments");
        };
        let (x, y) = (x.clone(), y.clone());
        if cx.apply(pred, &mut [x.clone(), y.clone()])?.truthy() {
            Ok(Value::Int(-1))
        } else if cx.apply(pred, &mut [y, x])?.truthy() {
            Ok(Value::Int(1))
        } else {
            Ok(Value::Int(0))
        }
    }))
}

fn trampoline(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (f, args) =
        a.split_first_mut().ok_or(()).or_else(|_| err(ErrorKind::ArityError, "trampoline needs a function"))?;
    let mut result = cx.apply(f, args)?;
    // each bounce is a loop iteration, bounded like loop/recur
    let mut bounces: u64 = 0;
    while matches!(&result, Value::Func(f) if !matches!(f.repr(), FnRepr::Lazy(_) | FnRepr::Reduced(_))) {
        bounces += 1;
        if bounces > cx.max_loop_iterations() {
            return err(
                ErrorKind::LoopLimitExceeded,
                format!(
                    "trampoline bounced more than {} times (the loop iteration limit); make sure the functions eventually return a non-function value",
                    cx.max_loop_iterations()
                ),
            );
        }
        cx.tick(1)?;
        let f = std::mem::take(&mut result);
        result = cx.apply(&f, &mut [])?;
    }
    Ok(result)
}

fn char_arg(fname: &str, v: &Value) -> EvalResult<char> {
    match v {
        Value::Str(s) if s.chars().count() == 1 => {
            s.chars().next().map_or_else(|| expected(fname, "a character", v), Ok)
        }
        Value::Int(i) => {
            u32::try_from(*i).ok().and_then(char::from_u32).map_or_else(|| expected(fname, "a character", v), Ok)
        }
        other => expected(fname, "a character like \\7", other),
    }
}

fn char_digit(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let c = char_arg("Character/digit", &a[0])?;
    let radix = int_arg("Character/digit", &a[1])?;
    if !(2..=36).contains(&radix) {
        return Ok(Value::Int(-1));
    }
    Ok(Value::Int(c.to_digit(radix as u32).map_or(-1, i64::from)))
}

fn char_numeric_value(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let c = char_arg("Character/getNumericValue", &a[0])?;
    Ok(Value::Int(c.to_digit(36).map_or(-1, i64::from)))
}
