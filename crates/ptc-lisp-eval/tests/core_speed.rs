//! Issue 28's fourth round on the interpreter's core: closures with plain parameters get
//! their arguments as the frame's first slots, the function-building builtins (`fnil`,
//! `partial`, `comp`...) called with constant arguments are made once at analysis, and a
//! comparator sort reads ahead the items it compares next. Nothing a program can see
//! changes but the one documented effect (one call site of `(fnil inc 0)` gives one
//! function value); these tests pin the answers, errors, fuel and memory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;
use common::*;
use ptc_lisp_eval::{Limits, RunOptions, RunResult, run};

#[test]
fn closures_bind_every_kind_of_parameter_list() {
    check(&[
        // plain parameters, with captures, a self reference, recur and a second frame
        ("(let [k 10 f (fn [a b] (+ a b k))] (f 1 2))", "13"),
        ("((fn fact [n] (if (< n 2) 1 (* n (fact (dec n))))) 10)", "3628800"),
        ("((fn [n acc] (if (zero? n) acc (recur (dec n) (+ acc n)))) 100 0)", "5050"),
        ("(let [f (fn [x] (let [y (* x 2) z (inc y)] [x y z]))] (mapv f [1 2]))", "[[1 2 3] [2 4 5]]"),
        ("((fn [] 7))", "7"),
        // destructuring, `_`, `& rest`: bound one by one as before
        ("((fn [[a b] {:keys [c]}] [a b c]) [1 2] {:c 3})", "[1 2 3]"),
        ("((fn [_ b] b) 1 2)", "2"),
        ("((fn [a & more] [a more]) 1 2 3)", "[1 (2 3)]"),
        ("((fn [a & more] [a more]) 1)", "[1 nil]"),
        // a parameter shadowed inside the body, a parameter captured by an inner fn
        ("((fn [a] (let [a (inc a)] a)) 1)", "2"),
        ("(((fn [a] (fn [b] (+ a b))) 1) 2)", "3"),
        // comparator sorts lend their items to such closures and take them back
        ("(sort (fn [a b] (compare (:k a) (:k b))) [{:k 2} {:k 1} {:k 3}])", "[{:k 1} {:k 2} {:k 3}]"),
        (
            "(sort (fn [a b] (compare [(:p b) (:q b)] [(:p a) (:q a)])) [{:p 1 :q 2} {:p 2 :q 1} {:p 1 :q 3}])",
            "[{:p 2 :q 1} {:p 1 :q 3} {:p 1 :q 2}]",
        ),
        (
            "(sort-by (juxt :p :q) #(compare %2 %1) [{:p 1 :q 2} {:p 2 :q 1} {:p 1 :q 3}])",
            "[{:p 2 :q 1} {:p 1 :q 3} {:p 1 :q 2}]",
        ),
    ]);
    check_err(&[
        ("((fn [a b] a) 1)", "arity_error", "called with 1 argument, expects 2"),
        ("((fn [a b] a) 1 2 3)", "arity_error", "called with 3 arguments, expects 2"),
    ]);
}

#[test]
fn a_comparator_sort_stopped_by_fuel_is_the_fuel_error() {
    // a fuel limit half way through the merges (the read-ahead, the lent items) stops
    // the sort with the fuel error, as before
    let build = "(mapv (fn [i] {:k (mod (* i 7) 10)}) (range 200))";
    let sort = format!("(sort (fn [a b] (compare (:k a) (:k b))) {build})");
    let fuel_of = |src: &str| go(src).usage.fuel;
    let (built, sorted) = (fuel_of(build), fuel_of(&sort));
    assert!(sorted > built + 100, "{built} {sorted}");
    let o = run(
        &sort,
        RunOptions {
            limits: Limits { max_fuel: Some((built + sorted) / 2), ..Limits::default() },
            ..RunOptions::default()
        },
    );
    assert!(matches!(&o.result, RunResult::Error(e) if e.kind.as_str() == "fuel_exhausted"), "{}", show_outcome(&o));
}

#[test]
fn function_builders_on_constants_are_made_once_per_call_site() {
    // one call site, two passes: the same function value (it used to be two)
    check(&[
        ("(let [fs (mapv (fn [_] (fnil inc 0)) (range 2))] (= (first fs) (second fs)))", "true"),
        ("(let [fs (mapv (fn [_] (partial + 1)) (range 2))] (= (first fs) (second fs)))", "true"),
        ("(let [fs (mapv (fn [_] (juxt :a :b)) (range 2))] (= (first fs) (second fs)))", "true"),
        // two call sites still make two functions; a non-constant argument, one per pass
        ("(= (fnil inc 0) (fnil inc 0))", "false"),
        ("(let [fs (mapv (fn [i] (fnil inc i)) (range 2))] (= (first fs) (second fs)))", "false"),
        // and they behave as before
        ("(reduce (fn [m w] (update m w (fnil inc 0))) {} [\"a\" \"b\" \"a\"])", "{\"a\" 2 \"b\" 1}"),
        ("((fnil + 0 10) nil nil)", "10"),
        ("((comp inc inc) 1)", "3"),
        ("((comp) 5)", "5"),
        ("((complement even?) 3)", "true"),
        ("((constantly [1]) 1 2)", "[1]"),
        ("((every-pred pos? even?) 2 4)", "true"),
        ("((some-fn :a :b) {:b 2})", "2"),
        ("(sort (comparator >) [1 3 2])", "[3 2 1]"),
        ("((juxt :a :b) {:a 1 :b 2})", "[1 2]"),
    ]);
    // the arity is still the builtin's error, at run time, where the call is
    check_err(&[("(fnil inc)", "arity_error", "fnil")]);
}

#[test]
fn a_made_function_burns_the_fuel_of_the_call() {
    // `(fnil inc z)` with `z` a local is made on each pass; `(fnil inc 0)` once (both
    // closures capture `z`, so they charge the same for it). Both burn the call's unit of
    // fuel each pass, and neither charges memory for the function.
    let usage = |src: &str| {
        let o = go(src);
        assert!(matches!(o.result, RunResult::Value(_)), "{}", show_outcome(&o));
        (o.printed.clone(), o.usage.fuel, o.usage.heap_bytes)
    };
    let made_each_time =
        usage("(let [z 0] (reduce (fn [m i] (update m (+ z (mod i 7)) (fnil inc z))) {} (range 500)))");
    let made_once = usage("(let [z 0] (reduce (fn [m i] (update m (+ z (mod i 7)) (fnil inc 0))) {} (range 500)))");
    assert_eq!(made_each_time, made_once);
    let fuel = |src: &str, max: u64| {
        let o = run(
            src,
            RunOptions { limits: Limits { max_fuel: Some(max), ..Limits::default() }, ..RunOptions::default() },
        );
        match &o.result {
            RunResult::Error(e) => (e.kind.as_str().to_string(), o.usage.fuel),
            other => (format!("{other:?}"), o.usage.fuel),
        }
    };
    assert_eq!(
        fuel("(let [z 0] (reduce (fn [m i] (update m (+ z (mod i 7)) (fnil inc z))) {} (range 500)))", 1000),
        fuel("(let [z 0] (reduce (fn [m i] (update m (+ z (mod i 7)) (fnil inc 0))) {} (range 500)))", 1000)
    );
}
