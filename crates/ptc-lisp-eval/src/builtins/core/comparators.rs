//! Comparators that `sort` and `sort-by` can run without calling them: the `compare`
//! builtin itself (`#(compare %2 %1)`), and a comparator that compares one key of each
//! argument (`(fn [a b] (compare (:amount b) (:amount a)))`), which sorts as `sort-by` of
//! that key does.

use std::sync::Arc;

use crate::function::{Closure, FnRepr, Function};
use crate::node::{CmpOp, ItemsCmp, Lambda, Node, Pattern};
use crate::value::Value;

/// A comparator that is exactly `(fn [x y] (compare x y))` or `(fn [x y] (compare y x))`
/// (`#(compare %1 %2)`, `#(compare %2 %1)`): whether the arguments are swapped.
pub(crate) fn known_comparator(f: &Value) -> Option<bool> {
    let (c, p0, p1) = two_params(f)?;
    let Node::CallBuiltin(b, args, _) = &c.lambda.body else { return None };
    if b.name != "compare" {
        return None;
    }
    let local = |n: &Node| match n {
        Node::Local(s) | Node::LocalMove(s) => Some(*s),
        _ => None,
    };
    match (args.first().and_then(local), args.get(1).and_then(local), args.len()) {
        (Some(x), Some(y), 2) if x == p0 && y == p1 => Some(false),
        (Some(x), Some(y), 2) if x == p1 && y == p0 => Some(true),
        _ => None,
    }
}

/// The `<` or `>` builtin passed as a comparator (`(sort > xs)`, `(sort-by :score > xs)`):
/// whether it is `>` (a descending order). While every key is a number or nil it orders
/// two keys exactly as `compare` does (equal numbers, `1` and `1.0` included, are neither
/// less nor greater, as `compare` finds them equal), so the sort needs no call per
/// comparison; any other key must go through the builtin.
pub(crate) fn numeric_comparator(f: &Value) -> Option<bool> {
    let Value::Func(func) = f else { return None };
    let FnRepr::Builtin(b) = func.repr() else { return None };
    match b.compare {
        Some(CmpOp::Lt) => Some(false),
        Some(CmpOp::Gt) => Some(true),
        _ => None,
    }
}

/// A comparator that compares the same key of both its arguments.
pub(crate) struct KeyComparator {
    /// A function of the item that gives its key (called with the item as both of the
    /// comparator's arguments; its body reads only the first).
    pub key: Value,
    /// The comparator answers `compare` of the second item's key against the first's
    /// (a descending order).
    pub flipped: bool,
    /// The comparator is `<` or `>` of the keys: it sorts as `compare` only while every
    /// key is a number or nil (anything else must go through the comparator, which may
    /// fail).
    pub numbers_only: bool,
}

/// `(fn [a b] (compare K(a) K(b)))` (or `K(b) K(a)`, or `<`/`>` in place of `compare`),
/// where `K` is one expression built only from the argument, constants, captured values,
/// keyword lookups, vector literals, arithmetic and builtins that call no function: sorting
/// with it orders the items by their keys exactly as calling it would, so each key is
/// computed once instead of twice per comparison. `K` calls no user function, tool or
/// output builtin, so computing it a different number of times changes nothing a program
/// can see but the fuel it uses.
pub(crate) fn key_comparator(f: &Value) -> Option<KeyComparator> {
    let (c, p0, p1) = two_params(f)?;
    let (x, y, numbers_only, flipped_op) = match &c.lambda.body {
        Node::CallBuiltin(b, args, _) if b.name == "compare" && args.len() == 2 => {
            (args[0].clone(), args[1].clone(), false, false)
        }
        Node::CompareItems(ItemsCmp::Compare, items, _) => {
            (Node::Vector(items.0.clone()), Node::Vector(items.1.clone()), false, false)
        }
        Node::Compare(CmpOp::Lt, sides) => (sides.0.clone(), sides.1.clone(), true, false),
        Node::Compare(CmpOp::Gt, sides) => (sides.0.clone(), sides.1.clone(), true, true),
        _ => return None,
    };
    let flipped = if mirrored(&x, &y, p0, p1) {
        false
    } else if mirrored(&x, &y, p1, p0) {
        true
    } else {
        return None;
    };
    // the key reads the first argument: `x` when it reads p0, else `y`
    let key_body = if flipped { y } else { x };
    let l = &c.lambda;
    let lambda = Lambda {
        name: None,
        params: l.params.clone(),
        rest: None,
        param_names: l.param_names.clone(),
        frame_size: l.frame_size,
        uses_self: false,
        keeps_params: false,
        plain_params: l.plain_params,
        body: key_body,
    };
    let key = Value::Func(Function::arc(FnRepr::Closure(Closure {
        lambda: Arc::new(lambda),
        captures: c.captures.clone(),
        group: c.group.clone(),
    })));
    Some(KeyComparator { key, flipped: flipped != flipped_op, numbers_only })
}

/// A closure `(fn [a b] body)` with plain names, no rest parameter and no reference to
/// itself, and its two parameter slots.
fn two_params(f: &Value) -> Option<(&Closure, u32, u32)> {
    let Value::Func(func) = f else { return None };
    let FnRepr::Closure(c) = func.repr() else { return None };
    let l = &c.lambda;
    if l.rest.is_some() || l.uses_self {
        return None;
    }
    let [Pattern::Bind(p0), Pattern::Bind(p1)] = l.params.as_slice() else { return None };
    Some((c, *p0, *p1))
}

/// Whether `x` reads parameter `p` only where `y` reads `q`, and is otherwise the same
/// expression, built only from what a sort key may be made of (see [`key_comparator`]).
fn mirrored(x: &Node, y: &Node, p: u32, q: u32) -> bool {
    let all = |xs: &[Node], ys: &[Node]| xs.len() == ys.len() && xs.iter().zip(ys).all(|(a, b)| mirrored(a, b, p, q));
    match (x, y) {
        // the same kind too: `=` holds between 1 and 1.0, which sum differently
        (Node::Const(a), Node::Const(b)) => {
            std::mem::discriminant(a) == std::mem::discriminant(b) && a == b && !matches!(a, Value::Func(_))
        }
        (Node::Local(a) | Node::LocalMove(a), Node::Local(b) | Node::LocalMove(b)) => *a == p && *b == q,
        (Node::GetKey(k1, t1, d1), Node::GetKey(k2, t2, d2)) => {
            k1 == k2
                && mirrored(t1, t2, p, q)
                && match (d1, d2) {
                    (None, None) => true,
                    (Some(a), Some(b)) => mirrored(a, b, p, q),
                    _ => false,
                }
        }
        (Node::Vector(a), Node::Vector(b)) => all(a, b),
        (Node::CallBuiltin(b1, a1, _), Node::CallBuiltin(b2, a2, _)) => {
            b1.name == b2.name && KEY_BUILTINS.contains(&b1.name) && all(a1, a2)
        }
        (Node::Test(b1, a1, _), Node::Test(b2, a2, _)) => {
            b1.name == b2.name && KEY_BUILTINS.contains(&b1.name) && mirrored(a1, a2, p, q)
        }
        (Node::Arith(_, b1, a1, _), Node::Arith(_, b2, a2, _)) => {
            b1.name == b2.name
                && mirrored(&a1.0, &a2.0, p, q)
                && match (&a1.1, &a2.1) {
                    (None, None) => true,
                    (Some(a), Some(b)) => mirrored(a, b, p, q),
                    _ => false,
                }
        }
        _ => false,
    }
}

/// Builtins a sort key may call: each computes a value from its arguments and calls no
/// function it is given, writes nothing and calls no tool.
const KEY_BUILTINS: &[&str] = &[
    "get",
    "get-in",
    "count",
    "str",
    "name",
    "keyword",
    "lower-case",
    "upper-case",
    "trim",
    "subs",
    "first",
    "second",
    "last",
    "nth",
    "abs",
    "-",
    "+",
    "*",
    "/",
    "inc",
    "dec",
    "min",
    "max",
    "mod",
    "rem",
    "quot",
    "parse-long",
    "parse-double",
    "double",
    "int",
    "long",
    "not",
    "nil?",
    "some?",
    "boolean",
    "vec",
    "contains?",
    "empty?",
];
