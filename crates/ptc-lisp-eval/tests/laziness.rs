//! Lazy sequences (one mechanism, `crate::lazy`): steps over infinite and huge producers
//! give their answers when a consumer bounds them, and every sequence that is never
//! bounded ends in a limit error — never a hang or an out-of-memory.
mod common;
use common::*;

use ptc_lisp_eval::{Cancel, Engine, FnHost, Limits, RunInput, RunOptions, RunResult, run};

#[test]
fn lazy_steps_over_infinite_producers_answer_when_bounded() {
    check(&[
        ("(take 5 (for [x (range)] x))", "[0 1 2 3 4]"),
        ("(take 3 (for [x (range) :when (odd? x)] x))", "[1 3 5]"),
        ("(let [k 10] (take 3 (for [x (range) :let [y (* x k)]] y)))", "[0 10 20]"),
        ("(defn f [n] (take n (for [x (range)] [x n]))) (f 2)", "[[0 2] [1 2]]"),
        ("(take 3 (distinct (cycle [1 2 3])))", "[1 2 3]"),
        ("(take 3 (dedupe (map #(quot % 3) (range))))", "[0 1 2]"),
        ("(take 3 (reductions + (range)))", "[0 1 3]"),
        ("(take 2 (partition-by #(quot % 3) (range)))", "[[0 1 2] [3 4 5]]"),
        ("(take 3 (sequence (map inc) (range)))", "[1 2 3]"),
        ("(sequence (comp (map inc) (take 2)) (range))", "[1 2]"),
        ("(take 5 (apply concat (repeat [1 2])))", "[1 2 1 2 1]"),
        ("(take 3 (drop-last (range)))", "[0 1 2]"),
        ("(take 3 (take-while pos? (iterate inc 1)))", "[1 2 3]"),
        ("(take 3 (filter #(zero? (mod % 7)) (range 1 Long/MAX_VALUE)))", "[7 14 21]"),
        ("(take 3 (tree-seq (constantly true) (fn [x] [(inc x)]) 0))", "[0 1 2]"),
        // an endless binding after finite ones: the rest is the lazy tail
        ("(take 3 (for [x (range) y (range)] [x y]))", "[[0 0] [0 1] [0 2]]"),
        ("(take 4 (for [x [1 2] y (if (= x 2) (range) [0])] [x y]))", "[[1 0] [2 0] [2 1] [2 2]]"),
    ]);
}

#[test]
fn finite_lazy_sequences_are_realised_by_consumers_that_need_everything() {
    check(&[
        ("(take-while #(< % 4) (range))", "[0 1 2 3]"),
        ("(count (take-while #(< % 100) (range)))", "100"),
        ("(= [0 1 2] (take-while #(< % 3) (range)))", "true"),
        ("(let [s (take-while #(< % 3) (range))] (= s [0 1 2]))", "true"),
        ("(empty? (take-while neg? (range)))", "true"),
        ("(seq (take-while neg? (range)))", "nil"),
        ("(next (take-while #(< % 1) (range)))", "nil"),
        ("(nth (take-while #(< % 3) (range)) 5 :none)", ":none"),
        ("(reduce + (take-while #(< % 100) (range)))", "4950"),
        ("(into [] (take-while #(< % 3) (range)))", "[0 1 2]"),
        ("(partition-all 2 (take-while #(< % 5) (range)))", "[[0 1] [2 3] [4]]"),
        ("(concat (take-while #(< % 2) (range)) [:end])", "[0 1 :end]"),
        ("(apply + (take-while #(< % 5) (range)))", "10"),
    ]);
}

/// Every sequence a program never bounds stops at a limit (the default limits), and the
/// error names the producer when it is known to be infinite.
#[test]
fn unbounded_lazy_sequences_end_in_a_limit_error() {
    check_err(&[
        ("(count (range))", "loop_limit_exceeded", "(range) is infinite, so count"),
        ("(count (for [x (range)] x))", "loop_limit_exceeded", "(range) is infinite"),
        ("(count (for [x [1 2] y (range)] [x y]))", "loop_limit_exceeded", "(range) is infinite"),
        ("(doseq [x [1] y (range)] x)", "loop_limit_exceeded", "so doseq would never finish"),
        ("(vec (distinct (cycle [1 2])))", "loop_limit_exceeded", "(cycle coll) is infinite"),
        ("(reduce + (reductions + (range)))", "arity_error", "needs an initial value"),
        ("(apply + (repeat 1))", "loop_limit_exceeded", "(repeat x) is infinite, so apply"),
    ]);
    // no item is ever produced, or the sequence is finite but far too long: the fuel,
    // memory or time limit ends it
    // counting a range makes none of its numbers (as Clojure's count of a range)
    check(&[("(count (range 1 Long/MAX_VALUE))", "9223372036854775806")]);
    for src in [
        "(count (map inc (range 1 Long/MAX_VALUE)))",
        "(range 1 Long/MAX_VALUE)",
        "(first (filter neg? (range)))",
        "(take 2 (distinct (repeat 1)))",
        "(count (take-while pos? (iterate inc 1)))",
        "(take 3 (sequence (filter neg?) (range)))",
        "(count (tree-seq (constantly true) (fn [x] [(inc x)]) 0))",
        "(first (for [x (range) :when (neg? x)] x))",
        "(take 1 (partition-by even? (iterate #(+ % 2) 0)))",
    ] {
        let o = run(src, RunOptions::default());
        match &o.result {
            RunResult::Error(e) => assert!(
                ["loop_limit_exceeded", "memory_exceeded", "timeout", "fuel_exhausted"].contains(&e.kind.as_str()),
                "{src}: {} {}",
                e.kind,
                e.message
            ),
            _ => panic!("{src} should end in a limit error, got {}", o.printed),
        }
    }
}

#[test]
fn lazy_sequences_inside_the_result_are_realised_or_refused() {
    check(&[
        ("[(take-while #(< % 3) (range))]", "[[0 1 2]]"),
        ("{:a (for [x (take-while #(< % 2) (range))] x) :b 1}", "{:a [0 1] :b 1}"),
        ("(return {:xs (take-while #(< % 2) (range))})", "{:xs [0 1]}"),
        ("(list (distinct (take-while #(< % 2) (range))))", "([0 1])"),
    ]);
    check_err(&[
        ("[(range)]", "loop_limit_exceeded", "(range) is infinite, so printing the result"),
        ("{:a (repeat 1)}", "loop_limit_exceeded", "(repeat x) is infinite"),
    ]);
}

#[test]
fn a_tool_gets_lazy_arguments_realised() {
    let host = FnHost::new().with_tool("echo", Ok);
    let engine = Engine::new(Limits::default());
    let o = engine.eval("(tool/echo {:ids (take-while #(< % 3) (range))})", RunInput::new(), &host, &Cancel::new());
    assert_eq!(o.printed, r#"{"ids" [0 1 2]}"#, "{:?}", o.error());
    let o = engine.eval("(tool/echo {:ids (range)})", RunInput::new(), &host, &Cancel::new());
    let e = o.error().expect("an infinite argument is refused");
    assert!(e.message.contains("(range) is infinite, so a tool call"), "{}", e.message);
}

/// The walk that realises lazy sequences in a result visits each shared node once: a
/// value of 60 levels of `[a a]` (2^60 paths, 60 nodes) ends at once in the result-size
/// limit instead of walking every path, with or without a lazy sequence at the bottom.
#[test]
fn results_that_share_structure_are_walked_once_per_node() {
    for leaf in ["[1 2]", "[(map inc [1 2])]"] {
        let src = format!("(reduce (fn [acc _] [acc acc]) {leaf} (range 60))");
        let started = std::time::Instant::now();
        let o = run(&src, RunOptions::default());
        let kind = o.error().map(|e| e.kind.to_string());
        assert_eq!(kind.as_deref(), Some("output_too_large"), "{src}: {:?}", o.error());
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "{src}: {:?}", started.elapsed());
    }
}

/// The lines a program printed, and its printed result (or error).
fn prints_and_result(src: &str) -> (Vec<String>, String) {
    let o = go(src);
    (o.prints.clone(), show_outcome(&o))
}

/// A lazy sequence makes each item once, however often it is read (as Clojure's caches
/// them): the function inside runs once per item, so what it prints is printed once.
#[test]
fn lazy_sequences_make_each_item_once() {
    let cases: &[(&str, &[&str], &str)] = &[
        // read twice, from the start each time
        (
            "(let [r (map #(do (println \"x\" %) %) (range))] [(vec (take 2 r)) (vec (take 3 r)) (first r) (nth r 2)])",
            &["x 0", "x 1", "x 2"],
            "[[0 1] [0 1 2] 0 2]",
        ),
        // a finite lazy sequence counted, then realised
        (
            "(let [r (map #(do (println %) %) (take-while #(< % 3) (range)))] (count r) (vec r))",
            &["0", "1", "2"],
            "[0 1 2]",
        ),
        // destructuring pulls each position once, not from the start every time
        ("(let [[a b c] (map #(do (println %) %) (range))] [a b c])", &["0", "1", "2"], "[0 1 2]"),
        // a definition read by several expressions
        ("(def r (map #(do (println %) %) (range))) (first r) (second r) (first r)", &["0", "1"], "0"),
        // a step over a shared sequence, then the sequence itself
        (
            "(let [r (map #(do (println %) %) (range)) s (map inc r)] (doall (take 2 s)) (vec (take 2 r)))",
            &["0", "1"],
            "[0 1]",
        ),
        ("(let [s (iterate #(do (println %) (inc %)) 0)] (nth s 3) (nth s 3))", &["0", "1", "2"], "3"),
        ("(let [s (repeatedly #(do (println \"r\") 1))] (vec (take 2 s)) (vec (take 2 s)))", &["r", "r"], "[1 1]"),
        (
            "(let [s (filter #(do (println %) (odd? %)) (range))] [(first s) (second s) (first s)])",
            &["0", "1", "2", "3"],
            "[1 3 1]",
        ),
        // rest/next find out whether anything is left; the item made to tell is kept
        ("(let [s (map #(do (println %) %) (range))] (next s) (vec (take 2 s)))", &["0", "1"], "[0 1]"),
        // for and doseq over a shared lazy binding
        (
            "(let [s (map #(do (println %) %) (take-while #(< % 3) (range)))] (doseq [x s] x) (vec (for [x s] (inc x))))",
            &["0", "1", "2"],
            "[1 2 3]",
        ),
        (
            "(let [s (map #(do (println %) %) (range))] (vec (for [x s :while (< x 2)] x)) (vec (for [x s :while (< x 3)] x)))",
            &["0", "1", "2", "3"],
            "[0 1 2]",
        ),
    ];
    let mut failures = Vec::new();
    for (src, want_prints, want) in cases {
        let (prints, got) = prints_and_result(src);
        if prints != *want_prints || got != *want {
            failures.push(format!("  {src}\n    want {want_prints:?} {want}\n    got  {prints:?} {got}"));
        }
    }
    assert!(failures.is_empty(), "{} case(s) failed:\n{}", failures.len(), failures.join("\n"));
}

/// A tool called inside a lazy `map` is called once per item, however often the
/// sequence is read.
#[test]
fn tool_calls_inside_a_lazy_sequence_happen_once_per_item() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let host = FnHost::new().with_tool("fetch", move |args| {
        seen.fetch_add(1, Ordering::SeqCst);
        Ok(args)
    });
    let engine = Engine::new(Limits::default());
    let src = "(let [rows (map #(tool/fetch {:id %}) (range))]
                 [(count (take 3 rows)) (mapv :id (take 3 rows)) (:id (first rows))])";
    let o = engine.eval(src, RunInput::new(), &host, &Cancel::new());
    assert_eq!(o.printed, "[3 [0 1 2] 0]", "{:?}", o.error());
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(o.tool_calls.len(), 3);
}

/// Parallel readers of one lazy sequence share its items: each is made once, by
/// whichever thread asks first, while the others wait for it.
#[test]
fn parallel_readers_share_the_items_of_a_lazy_sequence() {
    let (prints, got) = prints_and_result(
        "(let [r (map #(do (println %) %) (range))] (vec (pmap (fn [i] (nth r (+ 40 i))) (range 8))))",
    );
    assert_eq!(got, "[40 41 42 43 44 45 46 47]");
    let mut prints: Vec<i64> = prints.iter().map(|p| p.parse().unwrap()).collect();
    prints.sort_unstable();
    assert_eq!(prints, (0..48).collect::<Vec<_>>(), "every item printed exactly once");
}

/// What a shared lazy sequence caches is charged as memory, while a sequence read by
/// one consumer only (a temporary) keeps nothing; infinite producers stay lazy either way.
#[test]
fn cached_items_are_charged_and_sole_readers_cache_nothing() {
    let small =
        || RunOptions { limits: Limits { max_heap_bytes: 1 << 20, ..Limits::default() }, ..RunOptions::default() };
    // read by one consumer: nothing kept, fits in 1 MiB
    for src in [
        "(nth (range) 100000)",
        "(first (drop 100000 (map inc (range))))",
        "(some #(when (> % 100000) %) (range))",
        "(let [r (range)] (nth r 100000))",
        "(reduce (fn [a x] (if (= x 100000) (reduced a) (+ a x))) 0 (map inc (range)))",
    ] {
        let o = run(src, small());
        assert!(matches!(o.result, RunResult::Value(_)), "{src}: {:?}", o.error());
    }
    // shared: the 100,000 cached items (32 bytes each) do not fit in 1 MiB
    let o = run("(let [r (range)] (nth r 100000) (first r))", small());
    assert_eq!(o.error().map(|e| e.kind.as_str()), Some("memory_exceeded"), "{:?}", o.error());
    check(&[
        ("(let [r (range)] [(nth r 1000) (first r) (nth r 1000)])", "[1000 0 1000]"),
        ("(let [r (iterate #(* 2 %) 1)] [(take 3 r) (take 5 r)])", "[[1 2 4] [1 2 4 8 16]]"),
        ("(def r (cycle [:a :b])) (take 3 r)", "[:a :b :a]"),
    ]);
}

/// A sequence whose producer asks for the item it is making is an error, as it is
/// unbounded recursion in Clojure.
#[test]
fn a_sequence_made_from_itself_is_an_error() {
    check_err(&[(
        "(def s (map (fn [x] (first s)) (range))) (first s)",
        "recursion_limit_exceeded",
        "asks for its own next item",
    )]);
}

/// `take`, `drop`, `split-at` and `split-with` of a lazy sequence are lazy themselves:
/// only the items a consumer pulls through them are made (as in Clojure, whose `(range)`,
/// `iterate` and `repeatedly` are unchunked).
#[test]
fn take_and_split_of_a_lazy_sequence_make_only_what_is_pulled() {
    let cases: &[(&str, &[&str], &str)] = &[
        ("(first (take 2 (map #(do (println %) %) (range))))", &["0"], "0"),
        ("(first (drop 1 (take 5 (map #(do (println %) %) (iterate inc 0)))))", &["0", "1"], "1"),
        (
            "(let [s (take 3 (map #(do (println \"m\" %) %) (range)))] (println \"made\") (vec s))",
            &["made", "m 0", "m 1", "m 2"],
            "[0 1 2]",
        ),
        ("(some #(when (> % 5) %) (take 10 (map #(do (println %) (* % %)) (iterate inc 1))))", &["1", "2", "3"], "9"),
        ("(first (first (split-at 3 (map #(do (println %) %) (range)))))", &["0"], "0"),
        ("(first (second (split-at 2 (map #(do (println %) %) (range)))))", &["0", "1", "2"], "2"),
    ];
    let mut failures = Vec::new();
    for (src, want_prints, want) in cases {
        let (prints, got) = prints_and_result(src);
        if prints != *want_prints || got != *want {
            failures.push(format!("  {src}\n    want {want_prints:?} {want}\n    got  {prints:?} {got}"));
        }
    }
    assert!(failures.is_empty(), "{} case(s) failed:\n{}", failures.len(), failures.join("\n"));
    check(&[
        ("(first (split-at 2 (range)))", "[0 1]"),
        ("(take 3 (second (split-at 2 (range))))", "[2 3 4]"),
        ("(take 3 (second (split-with neg? (range))))", "[0 1 2]"),
        ("(first (split-with #(< % 3) (iterate inc 0)))", "[0 1 2]"),
        ("(split-at 2 [1 2 3])", "[[1 2] [3]]"),
        ("(take 0 (range))", "[]"),
        ("(take 2 (take 5 (iterate inc 0)))", "[0 1]"),
        ("(zipmap [:a :b] (range))", "{:a 0 :b 1}"),
        // the windowed step keeps every short last window of partition-all, lazily too
        ("(partition-all 3 1 (take 4 (range)))", "[[0 1 2] [1 2 3] [2 3] [3]]"),
        ("(partition-all 3 1 [1 2 3 4])", "[[1 2 3] [2 3 4] [3 4] [4]]"),
        ("(zipmap (iterate inc 0) [:x :y])", "{0 :x 1 :y}"),
    ]);
}

/// `zipmap` of two infinite sequences would never finish: an error naming the producer,
/// not a silently empty map.
#[test]
fn zipmap_of_two_infinite_sequences_names_the_producer() {
    check_err(&[
        ("(take 3 (zipmap (range) (range)))", "loop_limit_exceeded", "(range) is infinite, so zipmap"),
        ("(zipmap (iterate inc 0) (repeat :x))", "loop_limit_exceeded", "so zipmap would never finish"),
    ]);
}

/// Each step is one definition: its eager form over a vector, its lazy form over a lazy
/// sequence, its fused form in a pipeline and its transducer form agree.
#[test]
fn a_step_answers_the_same_eager_lazy_fused_and_as_a_transducer() {
    // (the call without its collection, whether it has a transducer form)
    let steps = [
        ("(map inc", true),
        ("(filter odd?", true),
        ("(remove odd?", true),
        ("(keep #(when (odd? %) (* % %))", true),
        ("(map-indexed vector", true),
        ("(keep-indexed #(when (even? %1) %2)", false),
        ("(take 4", true),
        ("(drop 3", true),
        ("(take-nth 3", false),
        ("(take-while #(< % 6)", true),
        ("(drop-while #(< % 3)", true),
        ("(distinct", true),
        ("(dedupe", true),
        ("(partition-by #(quot % 3)", false),
        ("(partition-all 5", true),
        ("(mapcat #(vector % %)", true),
    ];
    // items with repeats, so distinct and dedupe have work to do
    let items = "[0 0 1 2 2 3 4 5 5 6 7 8]";
    // the same items as a finite lazy sequence
    let lazy = format!("(take 12 (cycle {items}))");
    let mut failures = Vec::new();
    #[allow(clippy::useless_vec)] // grown below for the steps with a transducer form
    for (call, xf) in steps {
        let eager = format!("{call} {items})");
        let want = show_outcome(&go(&eager));
        let mut forms =
            vec![format!("(vec {call} {lazy}))"), format!("(vec {call} {items}))"), format!("(count {call} {items}))")];
        if xf {
            forms.push(format!("(into [] {call}) {items})"));
            forms.push(format!("(sequence {call}) {lazy})"));
        }
        for form in &forms {
            let got = show_outcome(&go(form));
            // the eager call's count, taken after it (a let keeps it from being fused)
            let want = if form.starts_with("(count") {
                show_outcome(&go(&format!("(let [v {eager}] (count v))")))
            } else {
                want.clone()
            };
            if got != want {
                failures.push(format!("  {eager} => {want}, but {form} => {got}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} case(s) failed:\n{}", failures.len(), failures.join("\n"));
}

/// A window's step moves in one go, however long: `(partition-all 10000000000 [1 2])`
/// answered only after ten billion turns of a loop (the fuzz seed
/// `fixtures/fuzz/eval/partition-all-huge-size.clj`).
#[test]
fn a_huge_partition_size_or_step_answers_at_once() {
    check(&[
        ("(partition-all 10000000000 [1 2])", "[[1 2]]"),
        ("(partition 2 10000000000 (range 5))", "[[0 1]]"),
        ("(partition-all 2 10000000000 [1 2 3 4 5])", "[[1 2]]"),
        ("(into [] (partition-all 10000000000) [1 2])", "[[1 2]]"),
        ("(vec (partition-all 2 10000000000 (map inc (range 5))))", "[[1 2]]"),
    ]);
}

/// Runs with a loop limit high enough for the walks below (the default is 1,000 turns).
fn go_long(src: &str) -> ptc_lisp_eval::Outcome {
    let limits = ptc_lisp_eval::Limits {
        max_loop_iterations: 1_000_000,
        timeout: std::time::Duration::from_secs(30),
        ..ptc_lisp_eval::Limits::default()
    };
    ptc_lisp_eval::run(src, ptc_lisp_eval::RunOptions { limits, ..ptc_lisp_eval::RunOptions::default() })
}

/// Walking a lazy sequence with `rest`, `next` or `drop 1` in a `loop` reads it through
/// one step: the memory charged grows with the items, not with their square, no stack of
/// steps builds up, and every item is still made once.
#[test]
fn walking_a_lazy_sequence_with_rest_is_linear() {
    let walks = [
        "(loop [xs (filter odd? (range N)) s 0] (if (seq xs) (recur (next xs) (+ s (first xs))) s))",
        "(loop [xs (map inc (filter even? (range N))) s 0] (if (seq xs) (recur (rest xs) (+ s (first xs))) s))",
        "(loop [xs (filter odd? (range N)) s 0] (if (empty? xs) s (recur (drop 1 xs) (+ s (first xs)))))",
        "(loop [[x & more] (filter odd? (range N)) s 0] (if x (recur more (+ s x)) s))",
        "(loop [xs (iterate inc 0) n 0] (if (< n (quot N 2)) (recur (rest xs) (inc n)) (first xs)))",
        // lazy: a filter over an endless range, read through its cache
        "(let [odds (filter odd? (range))] (loop [xs odds n 0 s 0] (if (< n (quot N 2)) (recur (next xs) (inc n) (+ s (first xs))) s)))",
        "(loop [xs (map inc (range)) n 0] (if (< n N) (recur (rest xs) (inc n)) (first xs)))",
    ];
    for walk in walks {
        let heap = |n: u64| {
            let o = go_long(&walk.replace('N', &n.to_string()));
            assert!(matches!(o.result, ptc_lisp_eval::RunResult::Value(_)), "{walk} at {n}: {}", show_outcome(&o));
            o.usage.heap_bytes
        };
        let (small, big) = (heap(4_000), heap(40_000));
        // ten times the items: about ten times the memory (the square would be a hundred)
        assert!(big <= small.max(1) * 20, "{walk}: {small} bytes at 4,000 items, {big} at 40,000");
    }
    let sum =
        go_long("(loop [xs (filter odd? (range 200000)) s 0] (if (seq xs) (recur (next xs) (+ s (first xs))) s))");
    assert_eq!(show_outcome(&sum), "10000000000");
    // the items of the walked sequence are made once, and the walk sees each of them
    let (prints, got) = prints_and_result(
        "(let [s (map #(do (println %) %) (take-while #(< % 4) (range)))] (loop [xs s acc []] (if (seq xs) (recur (rest xs) (conj acc (first xs))) (conj acc (vec s)))))",
    );
    assert_eq!((prints, got.as_str()), (vec!["0".into(), "1".into(), "2".into(), "3".into()], "[0 1 2 3 [0 1 2 3]]"));
    // a source read by its one drop and then dropped again is not made twice
    let (prints, got) = prints_and_result(
        "(let [d (drop 1 (map #(do (println %) %) (take-while #(< % 4) (range))))] [(first d) (first (rest d)) (vec (drop 2 d))])",
    );
    assert_eq!((prints, got.as_str()), (vec!["0".into(), "1".into(), "2".into(), "3".into()], "[1 2 [3]]"));
}

/// `last`, `every?` and `not-every?` read a lazy sequence one item at a time, so a range
/// too long to hold answers under the default memory limit; `last` of an endless one is
/// an error naming it.
#[test]
fn last_and_every_stream_a_lazy_sequence() {
    check(&[
        ("(last (range 3000000))", "2999999"),
        ("(last (map inc (range 3000000)))", "3000000"),
        ("(every? number? (range 3000000))", "true"),
        ("(every? #(< % 10) (range))", "false"),
        ("(not-every? #(< % 10) (range))", "true"),
        ("(not-every? number? (range 3000000))", "false"),
        ("(last (take 3 (iterate inc 5)))", "7"),
        ("(last (filter odd? (range 10)))", "9"),
    ]);
    check_err(&[("(last (range))", "loop_limit_exceeded", "(range) is infinite")]);
    let (prints, got) = prints_and_result("(let [s (map #(do (println %) %) (take 3 (range)))] [(last s) (vec s)])");
    assert_eq!((prints, got.as_str()), (vec!["0".into(), "1".into(), "2".into()], "[2 [0 1 2]]"));
}

/// `count` of a lazy sequence counts its items as they stream: a sequence too long to
/// hold under the default memory limit is counted, one shared with another reader is
/// made once, and an endless one is the same error as before.
#[test]
fn count_streams_a_lazy_sequence() {
    check(&[
        ("(count (mapcat (fn [x] [x x]) (take-while #(< % 300000) (range))))", "600000"),
        ("(count (map inc (take-while #(< % 3000000) (range))))", "3000000"),
        ("(count (filter even? (take 10 (iterate inc 0))))", "5"),
        ("(count (mapcat (fn [x] [x x]) (take 3 (range))))", "6"),
        ("(count (take 0 (range)))", "0"),
    ]);
    check_err(&[
        ("(count (range))", "loop_limit_exceeded", "(range) is infinite, so count would never finish"),
        ("(count (map inc (range)))", "loop_limit_exceeded", "(range) is infinite, so count would never finish"),
    ]);
    let (prints, got) =
        prints_and_result("(let [s (map #(do (println %) %) (take 3 (range)))] [(count s) (vec s) (count s)])");
    assert_eq!((prints, got.as_str()), (vec!["0".into(), "1".into(), "2".into()], "[3 [0 1 2] 3]"));
}
