//! `compare`, `=` and `not=` of two vector literals (`(compare [(:k b) (:w b)] [(:k a) (:w
//! a)])`, the comparator models write for a sort on two keys) compare the items without
//! building the vectors. Nothing a program can see changes: the answers, the errors, the
//! order in which the items run, and the fuel and memory charged, which are checked here
//! against the figures the evaluator gave when it built both vectors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;
use common::*;
use ptc_lisp_eval::{Limits, Outcome, RunOptions, RunResult, run};

const SORT_TWO_KEYS: &str = "(let [xs (mapv (fn [i] {:k (mod (* i 7919) 101) :w (mod i 7)}) (range 200))] \
     (mapv :k (take 5 (sort (fn [a b] (compare [(:k b) (:w b)] [(:k a) (:w a)])) xs))))";

fn with(src: &str, limits: Limits) -> Outcome {
    run(src, RunOptions { limits, ..RunOptions::default() })
}

#[test]
fn answers_are_those_of_the_built_vectors() {
    check(&[
        (SORT_TWO_KEYS, "[100 100 99 99 98]"),
        // Java's string difference, nil first, numbers across int and float, nested vectors
        (r#"(let [s "abc"] (compare [1 (str s "x")] [1 (str s "z")]))"#, "-2"),
        (r#"(let [s "abc"] (compare [s :a nil] [s :a 1]))"#, "-1"),
        ("(let [x 0.5] (compare [1.5 2] [(inc x) 1]))", "1"),
        ("(let [s \"abc\"] (compare [[1 (count s)]] [[1 2]]))", "1"),
        ("(let [a 2] (compare [a a] [a a]))", "0"),
        ("(let [a 2] (compare [:x a] [:x (inc a)]))", "-1"),
        // = and not= across int and float, lazy items, different lengths
        ("(let [s \"abc\"] (= [(count s) 2.0] [3.0 2]))", "true"),
        ("(let [s \"abc\"] (not= [(count s) 2.0] [3.0 2]))", "false"),
        ("(= [(map inc [1 2])] [(list 2 3)])", "true"),
        ("(let [i 3] (= [i 0] [i 0 1]))", "false"),
        ("(let [i 3] (not= [i 0] [i 0 1]))", "true"),
        ("(let [i 3] (= [i {:a i}] [3 {:a 3}]))", "true"),
        // vectors of different lengths still go to the builtin: shorter first
        ("(let [i 3] (compare [i 0] [i 0 1]))", "-1"),
    ]);
}

#[test]
fn items_run_in_order_before_the_comparison() {
    let o = go(r#"(compare [(do (println "a") 1) (do (println "b") 2)] [(do (println "c") 1) (do (println "d") 3)])"#);
    assert_eq!(o.printed, "-1");
    assert_eq!(o.prints, ["a", "b", "c", "d"]);
}

#[test]
fn an_incomparable_pair_is_the_error_of_compare_at_the_call() {
    let o = go("(let [a 1]\n  (compare [a :k] [a \"s\"]))");
    let RunResult::Error(e) = &o.result else { panic!("{}", show_outcome(&o)) };
    assert_eq!(e.kind.as_str(), "type_error");
    assert!(e.message.starts_with("cannot compare keyword :k with string \"s\""), "{}", e.message);
    let span = e.span.expect("the call's location");
    assert_eq!((span.line, span.column), (2, 3));
}

/// Fuel and bytes charged, and where the limits stop a run, are those the evaluator gave
/// when it built both vectors (measured on the tree before this node existed).
#[test]
fn fuel_and_memory_are_charged_as_for_the_built_vectors() {
    let usage = |src: &str| {
        let o = go(src);
        assert!(matches!(o.result, RunResult::Value(_)), "{}", show_outcome(&o));
        (o.usage.fuel, o.usage.heap_bytes)
    };
    // the sort's comparator compares one key of each record, so it runs as a key sort:
    // each record's key vector built once (200 of them) instead of two per comparison
    // (5265 and 357,456 when the comparator ran at each of the ~1,100 comparisons)
    // (`take 5` under `mapv` is fused: its five-item vector, 208 bytes, is not built)
    assert_eq!(usage(SORT_TWO_KEYS), (2965, 77_248));
    assert_eq!(
        usage("(loop [i 0 n 0] (if (< i 300) (recur (inc i) (if (= [(mod i 3) (mod i 5)] [0 0]) (inc n) n)) n))"),
        (1220, 33_600)
    );
    assert_eq!(
        usage("(loop [i 0 n 0] (if (< i 300) (recur (inc i) (if (not= [(mod i 3) (mod i 5)] [0 0 i]) (inc n) n)) n))"),
        (1500, 76_800)
    );

    let fuel = with(SORT_TWO_KEYS, Limits { max_fuel: Some(2000), ..Limits::default() });
    assert!(
        matches!(&fuel.result, RunResult::Error(e) if e.kind.as_str() == "fuel_exhausted"),
        "{}",
        show_outcome(&fuel)
    );
    assert_eq!((fuel.usage.fuel, fuel.usage.heap_bytes), (2001, 70_592));

    let heap = with(SORT_TWO_KEYS, Limits { max_heap_bytes: 60_000, ..Limits::default() });
    assert!(
        matches!(&heap.result, RunResult::Error(e) if e.kind.as_str() == "memory_exceeded"),
        "{}",
        show_outcome(&heap)
    );
    assert_eq!((heap.usage.fuel, heap.usage.heap_bytes), (1415, 60_064));
}
