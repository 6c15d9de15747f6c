//! clojure.core's output: `println`, and the printers to a string (`pr-str`...).

use crate::builtins::context::BuiltinContext;
use crate::builtins::{Arity, Builtin, Category, Library, Table};
use crate::error::EvalResult;
use crate::limits::cost;
use crate::printer::{format_float, to_clojure};
use crate::value::Value;

use Arity::*;
use Category::String as Str;

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    builtins: &[
        Builtin::new("println", AtLeast(0), Category::Io, println)
            .doc("Prints the arguments space-separated on one line (captured in prints); returns nil.")
            .ex(&[("(println \"total\" 3)", "nil")]),
        Builtin::new("pr-str", AtLeast(0), Str, pr_str)
            .doc("Printed (readable) forms joined by spaces.")
            .ex(&[("(pr-str \"a\" 1 nil)", "\"\\\"a\\\" 1 nil\"")]),
        Builtin::new("print-str", AtLeast(0), Str, print_str)
            .doc("The arguments printed for people (strings unquoted, also inside collections), space-separated.")
            .ex(&[("(print-str \"a\" 1 nil)", "\"a 1 nil\""), ("(print-str [\"x\" :k])", "\"[x :k]\"")]),
        Builtin::new("println-str", AtLeast(0), Str, println_str)
            .doc("Like print-str, with a trailing newline.")
            .ex(&[("(println-str \"x\" 1)", "\"x 1\\n\"")]),
        Builtin::new("prn-str", AtLeast(0), Str, prn_str)
            .doc("Like pr-str, with a trailing newline.")
            .ex(&[("(prn-str \"x\")", "\"\\\"x\\\"\\n\"")]),
    ],
};

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

/// Printed forms (`pr`), or forms for people (`print`: strings unquoted at every depth).
fn printed_all(cx: &mut BuiltinContext, a: &[Value], readable: bool) -> EvalResult<String> {
    let mut out = String::new();
    for (i, v) in a.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if readable {
            // printed within what is left of the budget, and charged: never cut silently
            let text = cx.print_value(v, usize::MAX)?;
            out.push_str(&text);
        } else {
            print_plain(cx, v, &mut out, 0)?;
        }
    }
    cx.charge(cost::HEADER)?;
    Ok(out)
}

fn print_plain(cx: &mut BuiltinContext, v: &Value, out: &mut String, depth: usize) -> EvalResult<()> {
    cx.tick(1)?;
    if depth > 1_000 {
        // as the printer does: nesting this deep is cut, not followed
        out.push_str("...");
        return Ok(());
    }
    let items = |cx: &mut BuiltinContext, it: &mut dyn Iterator<Item = &Value>, out: &mut String| -> EvalResult<()> {
        for (i, x) in it.enumerate() {
            if i > 0 {
                out.push(' ');
            }
            print_plain(cx, x, out, depth + 1)?;
        }
        Ok(())
    };
    match v {
        Value::Str(s) => {
            cx.charge(s.len() as u64)?;
            out.push_str(s);
        }
        Value::Vector(xs) => {
            out.push('[');
            items(cx, &mut xs.iter(), out)?;
            out.push(']');
        }
        Value::List(xs) => {
            out.push('(');
            items(cx, &mut xs.iter(), out)?;
            out.push(')');
        }
        Value::Set(xs) => {
            out.push_str("#{");
            items(cx, &mut xs.iter(), out)?;
            out.push('}');
        }
        Value::Map(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                print_plain(cx, k, out, depth + 1)?;
                out.push(' ');
                print_plain(cx, x, out, depth + 1)?;
            }
            out.push('}');
        }
        other => {
            let text = to_clojure(other);
            cx.charge(text.len() as u64)?;
            out.push_str(&text);
        }
    }
    Ok(())
}

fn pr_str(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(printed_all(cx, a, true)?))
}

fn print_str(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(printed_all(cx, a, false)?))
}

fn println_str(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(printed_all(cx, a, false)? + "\n"))
}

fn prn_str(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(printed_all(cx, a, true)? + "\n"))
}
