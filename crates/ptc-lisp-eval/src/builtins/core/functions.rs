//! clojure.core's functions on functions: `comp`, `partial`, `apply`, `juxt`, `fnil`,
//! `memoize`, `trampoline`..., and the parallel `pmap`/`pcalls`.

use crate::builtins::context::BuiltinContext;
use crate::builtins::{Arity, Builtin, Category, Library, SeqIter, Table, expected, seq_iter};
use crate::error::{ErrorKind, EvalResult, err};
use crate::function::{Function, Held};
use crate::value::{PVector, Value};

use Arity::*;
use Category::Functional;

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    builtins: &[
        Builtin::new("identity", Exact(1), Functional, identity).doc("Returns its argument.").ex(&[("(identity 3)", "3")]),
        Builtin::new("comp", AtLeast(0), Functional, comp)
            .doc("Composition, right to left.")
            .ex(&[("((comp inc inc) 1)", "3")]),
        Builtin::new("partial", AtLeast(1), Functional, partial)
            .doc("f with leading arguments fixed.")
            .ex(&[("((partial + 10) 1)", "11")]),
        Builtin::new("complement", Exact(1), Functional, complement)
            .doc("A function returning the boolean opposite of f.")
            .ex(&[("((complement even?) 3)", "true")]),
        Builtin::new("constantly", Exact(1), Functional, constantly)
            .doc("A function always returning x.")
            .ex(&[("((constantly 5) 1 2)", "5")]),
        Builtin::new("memoize", Exact(1), Functional, memoize)
            .doc("The function itself: PTC-Lisp functions are pure, so callers may cache results themselves.")
            .ex(&[("((memoize inc) 1)", "2")]),
        Builtin::new("every-pred", AtLeast(1), Functional, every_pred)
            .doc("A predicate true when every given predicate holds for every argument.")
            .ex(&[("((every-pred pos? even?) 2 4)", "true")]),
        Builtin::new("some-fn", AtLeast(1), Functional, some_fn)
            .doc("A function returning the first truthy result of the given functions.")
            .ex(&[("((some-fn :a :b) {:b 2})", "2")]),
        Builtin::new("fnil", Range(2, 4), Functional, fnil).doc("A function like f that replaces nil arguments with defaults.").ex(&[("((fnil inc 0) nil)", "1")]),
        Builtin::new("apply", AtLeast(2), Functional, apply).sink(crate::fusion::Consumer::Apply).lazy().doc("Calls f with the leading arguments plus the items of the last one.").ex(&[("(apply + 1 [2 3])", "6")]),
        Builtin::new("juxt", AtLeast(1), Functional, juxt).doc("A function returning a vector of each function applied to its argument.").ex(&[("((juxt :a :b) {:a 1 :b 2})", "[1 2]")]),
        Builtin::new("pmap", AtLeast(2), Functional, pmap).ext().doc("Like map, with the calls run in parallel (bounded workers, shared deadline); results in order.").ex(&[("(pmap inc [1 2 3])", "[2 3 4]")]),
        Builtin::new("pcalls", AtLeast(0), Functional, pcalls).ext().doc("Calls zero-argument functions in parallel; returns their results in order.").ex(&[("(pcalls (fn [] 1) (fn [] 2))", "[1 2]")]),
        Builtin::new("comparator", Exact(1), Functional, comparator)
            .doc("A comparison function (-1, 0 or 1) from a predicate like <.")
            .ex(&[("(sort (comparator >) [1 3 2])", "[3 2 1]")]),
        Builtin::new("trampoline", AtLeast(1), Functional, trampoline)
            .doc("Calls f with the arguments, then keeps calling the result while it is a function (mutual recursion without growing the stack).")
            .ex(&[("(trampoline (fn f [n] (if (pos? n) #(f (dec n)) :done)) 3)", ":done")]),
    ],
};

fn identity(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(std::mem::take(&mut a[0]))
}

pub(crate) fn comp(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(make_comp(a))
}

fn make_comp(a: &mut [Value]) -> Value {
    let fs: Vec<Value> = a.iter_mut().map(std::mem::take).collect();
    Function::native("comp", Held::values(fs), |cx, fs, args| {
        let Some((last, rest)) = fs.split_last() else {
            return Ok(args.first().cloned().unwrap_or(Value::Nil));
        };
        let mut v = cx.apply(last, args)?;
        for f in rest.iter().rev() {
            v = cx.apply(f, &mut [v])?;
        }
        Ok(v)
    })
}

fn partial(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(make_partial(a))
}

fn make_partial(a: &mut [Value]) -> Value {
    // held: f, then the fixed arguments
    let held: Vec<Value> = a.iter_mut().map(std::mem::take).collect();
    Function::native("partial", Held::values(held), |cx, held, args| {
        let Some((f, fixed)) = held.split_first() else { return Ok(Value::Nil) };
        let mut call = Vec::with_capacity(fixed.len() + args.len());
        call.extend_from_slice(fixed);
        call.extend(args.iter_mut().map(std::mem::take));
        cx.apply(f, &mut call)
    })
}

pub(crate) fn complement(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(make_complement(a))
}

fn make_complement(a: &mut [Value]) -> Value {
    let f = std::mem::take(&mut a[0]);
    Function::native("complement", Held::values(vec![f]), |cx, held, args| {
        let Some(f) = held.first() else { return Ok(Value::Nil) };
        Ok(Value::Bool(!cx.apply(f, args)?.truthy()))
    })
}

fn constantly(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(make_constantly(a))
}

fn make_constantly(a: &mut [Value]) -> Value {
    let v = std::mem::take(&mut a[0]);
    Function::native("constantly", Held::values(vec![v]), |_, held, _| Ok(held.first().cloned().unwrap_or_default()))
}

fn every_pred(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(make_every_pred(a))
}

fn make_every_pred(a: &mut [Value]) -> Value {
    let ps: Vec<Value> = a.iter_mut().map(std::mem::take).collect();
    Function::native("every-pred", Held::values(ps), |cx, ps, args| {
        for p in ps {
            for x in args.iter() {
                if !cx.apply(p, &mut [x.clone()])?.truthy() {
                    return Ok(Value::Bool(false));
                }
            }
        }
        Ok(Value::Bool(true))
    })
}

fn some_fn(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(make_some_fn(a))
}

fn make_some_fn(a: &mut [Value]) -> Value {
    let ps: Vec<Value> = a.iter_mut().map(std::mem::take).collect();
    Function::native("some-fn", Held::values(ps), |cx, ps, args| {
        // like Clojure's (or (p1 x) (p1 y) (p2 x) ...): the first truthy result, else the last one
        let mut last = Value::Nil;
        for p in ps {
            for x in args.iter() {
                last = cx.apply(p, &mut [x.clone()])?;
                if last.truthy() {
                    return Ok(last);
                }
            }
        }
        Ok(last)
    })
}

fn memoize(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(std::mem::take(&mut a[0]))
}

fn apply(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let n = args.len();
    let f = std::mem::take(&mut args[0]);
    let last = std::mem::take(&mut args[n - 1]);
    let mut call: Vec<Value> = args[1..n - 1].iter_mut().map(std::mem::take).collect();
    if let Some(l) = crate::lazy::as_lazy(&last) {
        // a builtin declared to take its arguments lazily gets them so; otherwise the
        // sequence is realised (an infinite one is the error naming it)
        if let Value::Func(func) = &f
            && let crate::function::FnRepr::Builtin(b) = func.repr()
            && let Some(spread) = b.spread_lazy
        {
            return spread(cx, call, &l.clone());
        }
        let all = crate::lazy::realize(cx, "apply", l.clone())?;
        call.extend(seq_iter("apply", &all)?);
        return cx.apply(&f, &mut call);
    }
    match &last {
        Value::Vector(_) | Value::List(_) | Value::Set(_) | Value::Nil | Value::Map(_) => {
            cx.charge(crate::builtins::materialized_cost(&last))?;
            call.extend(seq_iter("apply", &last)?)
        }
        other => return expected("apply", "a collection as its last argument, e.g. (apply + [1 2 3])", other),
    }
    cx.apply(&f, &mut call)
}

fn juxt(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    Ok(make_juxt(args))
}

fn make_juxt(args: &mut [Value]) -> Value {
    let fs: Vec<Value> = args.iter_mut().map(std::mem::take).collect();
    Function::native("juxt", Held::values(fs), |cx, fs, call| {
        // every function but the last gets copies of the arguments (on the stack for the
        // usual one or two); the last gets the arguments themselves
        let mut out = Vec::with_capacity(fs.len());
        if let Some((last, firsts)) = fs.split_last() {
            for f in firsts {
                let mut a: smallvec::SmallVec<[Value; 2]> = call.iter().cloned().collect();
                out.push(cx.apply(f, &mut a)?);
            }
            out.push(cx.apply(last, call)?);
        }
        Ok(Value::from_pvec(PVector::from_vec(out)))
    })
}

fn pmap(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut args[0]);
    let colls: Vec<Value> = args[1..].iter_mut().map(std::mem::take).collect();
    let mut iters: Vec<SeqIter<'_>> = colls.iter().map(|c| seq_iter("pmap", c)).collect::<EvalResult<_>>()?;
    let mut calls = Vec::new();
    'outer: loop {
        let mut call = Vec::with_capacity(iters.len());
        for it in iters.iter_mut() {
            match it.next() {
                Some(v) => call.push(v),
                None => break 'outer,
            }
        }
        calls.push((f.clone(), call));
    }
    cx.parallel(calls)
}

fn pcalls(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    let calls = args.iter_mut().map(|f| (std::mem::take(f), Vec::new())).collect();
    cx.parallel(calls)
}

fn fnil(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    Ok(make_fnil(args))
}

fn make_fnil(args: &mut [Value]) -> Value {
    // held: f, then the defaults
    let held: Vec<Value> = args.iter_mut().map(std::mem::take).collect();
    Function::native("fnil", Held::values(held), |cx, held, call| {
        let Some((f, defaults)) = held.split_first() else { return Ok(Value::Nil) };
        for (slot, d) in call.iter_mut().zip(defaults.iter()) {
            if slot.is_nil() {
                *slot = d.clone();
            }
        }
        cx.apply(f, call)
    })
}

fn comparator(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(make_comparator(a))
}

fn make_comparator(a: &mut [Value]) -> Value {
    let pred = std::mem::take(&mut a[0]);
    Function::native("comparator", Held::values(vec![pred]), |cx, held, call| {
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
    })
}

fn trampoline(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (f, args) =
        a.split_first_mut().ok_or(()).or_else(|_| err(ErrorKind::ArityError, "trampoline needs a function"))?;
    let mut result = cx.apply(f, args)?;
    // each bounce is a loop iteration, bounded like loop/recur
    let mut bounces: u64 = 0;
    while matches!(&result, Value::Func(_)) {
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

/// The function a function-building builtin (`fnil`, `partial`, `comp`, `complement`,
/// `constantly`, `juxt`, `every-pred`, `some-fn`, `comparator`) makes of `args`: these
/// read nothing but their arguments, charge nothing and cannot fail once their arity
/// holds, so the analyser makes the function of a call whose arguments are all constants
/// once (`(update m k (fnil inc 0))` in a loop body then allocates nothing per pass).
/// `None` for any other builtin.
pub(crate) fn made_of(name: &str, args: &mut [Value]) -> Option<Value> {
    let make = match name {
        "comp" => make_comp,
        "partial" => make_partial,
        "complement" => make_complement,
        "constantly" => make_constantly,
        "every-pred" => make_every_pred,
        "some-fn" => make_some_fn,
        "fnil" => make_fnil,
        "juxt" => make_juxt,
        "comparator" => make_comparator,
        _ => return None,
    };
    Some(make(args))
}
