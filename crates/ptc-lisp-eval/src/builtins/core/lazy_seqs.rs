//! clojure.core's lazy-sequence producers: `range`, `repeat`, `iterate`, `cycle`,
//! `repeatedly`, `tree-seq`.

use crate::builtins::context::BuiltinContext;
use crate::builtins::core::sequences::all;
use crate::builtins::{Arity, Builtin, Category, Library, Table, int_arg, seq_iter};
use crate::error::{ErrorKind, EvalResult, err};
use crate::lazy;
use crate::limits::cost;
use crate::value::{PVector, Value};

use Arity::*;
use Category::Sequence;

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    builtins: &[
        Builtin::new("repeat", Range(1, 2), Sequence, repeat)
            .doc("(repeat n x): a vector of n copies of x; (repeat x) repeats forever, for take and friends.")
            .ex(&[("(repeat 3 :x)", "[:x :x :x]")]),
        Builtin::new("tree-seq", Exact(3), Sequence, tree_seq)
            .doc("Depth-first nodes of a tree: (tree-seq branch? children root).")
            .ex(&[("(tree-seq vector? identity [1 [2]])", "[[1 [2]] 1 [2] 2]")]),
        Builtin::new("range", Range(0, 3), Sequence, range)
            .source(crate::fusion::SourceKind::Range)
            .doc("Numbers from start (0) below end by step (1); (range) counts up forever, for take and friends.")
            .ex(&[("(range 4)", "[0 1 2 3]"), ("(range 1 10 3)", "[1 4 7]")]),
        Builtin::new("iterate", Exact(2), Sequence, iterate)
            .doc("The infinite sequence x, (f x), (f (f x))...; bound it with take, take-while, first, nth or some.")
            .ex(&[("(take 4 (iterate #(* 2 %) 1))", "[1 2 4 8]")]),
        Builtin::new("cycle", Exact(1), Sequence, cycle)
            .doc("The items of a collection repeated forever; bound it with take and friends.")
            .ex(&[("(take 5 (cycle [:a :b]))", "[:a :b :a :b :a]")]),
        Builtin::new("repeatedly", Range(1, 2), Sequence, repeatedly)
            .doc("(repeatedly n f): n results of calling f; (repeatedly f) is infinite.")
            .ex(&[("(repeatedly 2 (fn [] :x))", "[:x :x]"), ("(take 2 (repeatedly (constantly 1)))", "[1 1]")]),
    ],
};

fn repeat(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let [x] = a {
        return Ok(crate::lazy::repeat(std::mem::take(x)));
    }
    let n = int_arg("repeat", &a[0])?.max(0) as u64;
    cx.charge(cost::items(n))?;
    cx.tick(n)?;
    Ok(Value::vector((0..n).map(|_| a[1].clone())))
}

/// Nodes `tree-seq` walks at once; a bigger (or infinite) tree becomes a lazy sequence
/// walked again one node at a time, so `(take n (tree-seq ...))` of an endless tree works.
const TREE_SEQ_EAGER_NODES: usize = 10_000;

fn tree_seq(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (branch, children) = (a[0].clone(), a[1].clone());
    let root = a[2].clone();
    let mut out = Vec::new();
    let mut stack = vec![std::mem::take(&mut a[2])];
    while let Some(node) = stack.pop() {
        if out.len() >= TREE_SEQ_EAGER_NODES {
            return Ok(crate::lazy::tree_seq(branch, children, root));
        }
        cx.tick(1)?;
        cx.charge(cost::ELEM)?;
        out.push(node.clone());
        if cx.apply(&branch, &mut [node.clone()])?.truthy() {
            let kids = cx.apply(&children, &mut [node])?;
            let mut kids = all(cx, "tree-seq", &kids)?;
            kids.reverse();
            stack.extend(kids);
        }
    }
    Ok(Value::vector(out))
}

pub(crate) fn range(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    // (range) and a zero step never end: a lazy sequence for take and friends
    match args {
        [] => return Ok(crate::lazy::range(Value::Int(0), Value::Int(1))),
        [s, e, st] if st.as_f64() == Some(0.0) => {
            return Ok(if s.equiv(e) { Value::vector([]) } else { crate::lazy::range(s.clone(), st.clone()) });
        }
        _ => {}
    }
    let all_int = args.iter().all(|a| matches!(a, Value::Int(_)));
    if all_int {
        let Some((start, n, step)) = crate::fusion::int_range(args) else {
            return err(
                ErrorKind::RuntimeError,
                "range with step 0 would never end; use (repeat n x) for repeated values",
            );
        };
        if cost::items(n) > cx.heap_left() {
            // too long to hold: made one number at a time, for take and friends
            let (s, e, st) = match args {
                [Value::Int(e)] => (0, *e, 1),
                [Value::Int(s), Value::Int(e)] => (*s, *e, 1),
                [Value::Int(s), Value::Int(e), Value::Int(st)] => (*s, *e, *st),
                _ => (start, start, step),
            };
            return Ok(crate::lazy::range_to(s, e, st));
        }
        cx.charge(cost::items(n))?;
        let mut out = PVector::new();
        let mut x = start as i128;
        for _ in 0..n {
            cx.tick(1)?;
            out.push_back(Value::Int(x as i64));
            x += step as i128;
        }
        return Ok(Value::from_pvec(out));
    }
    let nums: Vec<f64> = args.iter().map(|a| crate::builtins::num_arg("range", a)).collect::<EvalResult<_>>()?;
    let (start, end, step) = match nums.as_slice() {
        [e] => (0.0, *e, 1.0),
        [s, e] => (*s, *e, 1.0),
        [s, e, st] => (*s, *e, *st),
        _ => return err(ErrorKind::ArityError, "range takes 1 to 3 arguments"),
    };
    if step == 0.0 || step.is_nan() {
        return err(ErrorKind::RuntimeError, "range with step 0 would never end");
    }
    // as Clojure: the step is added again and again, so rounding can add an item
    // ((range 0 1 0.1) has 11); the estimate is charged up front, one more to spare
    let n = ((end - start) / step).ceil();
    let n = if n.is_finite() && n > 0.0 { n as u64 } else { 0 };
    cx.charge(cost::items(n.saturating_add(1)))?;
    let first_int = matches!(args.first(), Some(Value::Int(_))) && args.len() > 1;
    let mut out = PVector::new();
    let mut x = start;
    while if step > 0.0 { x < end } else { x > end } {
        cx.tick(1)?;
        if out.is_empty() && first_int {
            out.push_back(args[0].clone());
        } else {
            out.push_back(Value::Float(x));
        }
        if out.len() as u64 > n {
            cx.charge(cost::ELEM)?;
        }
        x += step;
    }
    Ok(Value::from_pvec(out))
}

fn iterate(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(lazy::iterate(std::mem::take(&mut a[0]), std::mem::take(&mut a[1])))
}

fn cycle(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    cx.charge(crate::builtins::materialized_cost(&a[0]))?;
    let items: PVector = seq_iter("cycle", &a[0])?.collect();
    if items.is_empty() {
        return Ok(Value::vector([]));
    }
    Ok(lazy::cycle(items))
}

fn repeatedly(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match a {
        [f] => Ok(lazy::repeatedly(std::mem::take(f))),
        [n, f] => {
            let n = int_arg("repeatedly", n)?.max(0);
            let f = std::mem::take(f);
            let mut out = PVector::new();
            for _ in 0..n {
                cx.tick(1)?;
                cx.charge(crate::limits::cost::ELEM)?;
                out.push_back(cx.apply(&f, &mut [])?);
            }
            Ok(Value::from_pvec(out))
        }
        _ => err(ErrorKind::ArityError, "repeatedly takes (repeatedly f) or (repeatedly n f)"),
    }
}
