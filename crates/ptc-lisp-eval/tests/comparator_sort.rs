//! `sort` and `sort-by` with a comparator function: whatever the comparator answers (even
//! when it is no order at all), the result is the one a plain bottom-up merge sort gives,
//! with the same comparisons, so it is deterministic and the fuel is the same however the
//! merges are scheduled. Comparators that only read their arguments get them lent (no
//! clone per call); the others get clones: both are checked here.
mod common;
use common::*;
use ptc_lisp_eval::{Limits, RunOptions, run};

/// The records the programs build: `{:id i :k (mod (* i 7919) 101) :w (mod (* i 104729) 97)}`.
fn records(n: i64) -> Vec<(i64, i64, i64)> {
    (0..n).map(|i| (i, (i * 7919) % 101, (i * 104729) % 97)).collect()
}

fn build(n: i64) -> String {
    format!("(mapv (fn [i] {{:id i :k (mod (* i 7919) 101) :w (mod (* i 104729) 97)}}) (range {n}))")
}

/// A plain bottom-up merge sort: `b_first(a, b)` says whether `b`, from the right run, goes
/// before `a` (the comparator called as `(f b a)` answered true).
fn reference<T: Copy>(items: &[T], b_first: impl Fn(&T, &T) -> bool) -> Vec<T> {
    let mut v = items.to_vec();
    let n = v.len();
    let mut width = 1;
    while width < n {
        let mut out = Vec::with_capacity(n);
        let mut start = 0;
        while start < n {
            let (mid, end) = ((start + width).min(n), (start + 2 * width).min(n));
            let (mut i, mut j) = (start, mid);
            while i < mid && j < end {
                if b_first(&v[i], &v[j]) {
                    out.push(v[j]);
                    j += 1;
                } else {
                    out.push(v[i]);
                    i += 1;
                }
            }
            out.extend_from_slice(&v[i..mid]);
            out.extend_from_slice(&v[j..end]);
            start = end;
        }
        v = out;
        width *= 2;
    }
    v
}

/// The printed result with a long deadline: a debug build sorting 5,000 records beside
/// other builds on a shared machine can pass the default second.
fn show(src: &str) -> String {
    let limits = Limits { timeout: std::time::Duration::from_secs(120), ..Limits::default() };
    show_outcome(&run(src, RunOptions { limits, ..RunOptions::default() }))
}

fn ids(v: &[(i64, i64, i64)]) -> String {
    format!("[{}]", v.iter().map(|r| r.0.to_string()).collect::<Vec<_>>().join(" "))
}

// sizes around the merge sort's block of 2048 items
const SIZES: [i64; 9] = [0, 1, 2, 3, 100, 2047, 2048, 2049, 5000];

#[test]
fn an_inconsistent_comparator_gets_the_merges_of_a_bottom_up_merge_sort() {
    for n in SIZES {
        // reads its arguments only: they are lent
        let src = format!("(mapv :id (sort (fn [x y] (< (:k x) (:w y))) {}))", build(n));
        let want = reference(&records(n), |a, b| b.1 < a.2);
        assert_eq!(show(&src), ids(&want), "n = {n}");
        // `compare` over vectors of the arguments' fields, as models write it
        let src = format!("(mapv :id (sort (fn [a b] (compare [(:k b) (:id b)] [(:k a) (:id a)])) {}))", build(n));
        let mut want = records(n);
        want.sort_by_key(|r| std::cmp::Reverse((r.1, r.0)));
        assert_eq!(show(&src), ids(&want), "n = {n}");
    }
}

#[test]
fn comparators_that_move_their_arguments_sort_the_same() {
    for n in SIZES {
        // `(+ y 3)` takes `y` (its last read): the comparator gets clones
        let src = format!("(mapv :id (sort-by :k (fn [x y] (< x (+ y 3))) {}))", build(n));
        let want = reference(&records(n), |a, b| b.1 < a.1 + 3);
        assert_eq!(show(&src), ids(&want), "n = {n}");
        let src = format!("(mapv :id (sort (fn [x y] (if (nil? x) (recur y x) (< (:k x) (:w y)))) {}))", build(n));
        let want = reference(&records(n), |a, b| b.1 < a.2);
        assert_eq!(show(&src), ids(&want), "n = {n}");
    }
}

#[test]
fn lent_arguments_come_back_whole() {
    // every record is in the result, unchanged, after thousands of lent calls
    let src = format!("(let [rs {}] (= (set rs) (set (sort (fn [a b] (< (:w a) (:w b))) rs))))", build(3000));
    assert_eq!(show(&src), "true");
    let src = format!("(let [rs {}] (count (sort (fn [a b] (< (:w a) (:w b))) rs)))", build(3000));
    assert_eq!(show(&src), "3000");
}

#[test]
fn fuel_of_a_comparator_sort_is_exact_and_runs_out_inside_a_lent_call() {
    let src = format!("(count (sort (fn [a b] (< (:w a) (:w b))) {}))", build(2500));
    // a generous time limit: a debug build on a loaded machine may pass the default second,
    // and a run that timed out reports the fuel of its last check, not the whole sort's
    let limits = Limits { timeout: std::time::Duration::from_secs(60), ..Limits::default() };
    let whole = run(&src, RunOptions { limits: limits.clone(), ..RunOptions::default() });
    assert_eq!(show_outcome(&whole), "2500");
    let used = whole.usage.fuel;
    let at = |max| {
        let o =
            run(&src, RunOptions { limits: Limits { max_fuel: Some(max), ..limits.clone() }, ..RunOptions::default() });
        show_outcome(&o)
    };
    assert_eq!(at(used), "2500");
    assert!(at(used - 1).starts_with("!fuel_exhausted"), "{}", at(used - 1));
    // and a comparator that fails stops the sort with its error
    let src = format!("(sort (fn [a b] (< (:w a) \"x\")) {})", build(50));
    assert!(show(&src).starts_with("!type_error"), "{}", show(&src));
}
