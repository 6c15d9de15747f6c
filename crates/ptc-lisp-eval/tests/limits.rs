//! Every sandbox limit, shown firing with an error that names it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use ptc_lisp_eval::{FnHost, Limits, RunOptions, Value, run};

fn with(limits: Limits) -> RunOptions {
    RunOptions { limits, ..RunOptions::default() }
}

fn kind_of(src: &str, opts: RunOptions) -> (String, String) {
    let o = run(src, opts);
    match o.error() {
        Some(e) => (e.kind.to_string(), e.message.clone()),
        None => ("ok".into(), o.printed),
    }
}

#[test]
fn timeout_fires_in_user_code() {
    let limits = Limits {
        timeout: Duration::from_millis(50),
        max_heap_bytes: u64::MAX,
        max_loop_iterations: u64::MAX,
        ..Limits::default()
    };
    let started = Instant::now();
    let (kind, msg) = kind_of("(loop [i 0] (recur (inc i)))", with(limits));
    assert_eq!(kind, "timeout", "{msg}");
    assert!(msg.contains("50ms"), "{msg}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn timeout_fires_inside_iterating_builtins() {
    let limits = Limits { timeout: Duration::from_millis(50), max_heap_bytes: u64::MAX, ..Limits::default() };
    let started = Instant::now();
    let (kind, msg) = kind_of("(count (filter even? (range 100000000)))", with(limits));
    assert_eq!(kind, "timeout", "{msg}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn memory_limit_stops_allocation_bombs() {
    let (kind, msg) = kind_of("(reduce (fn [s _] (str s s)) \"x\" (range 64))", RunOptions::default());
    assert_eq!(kind, "memory_exceeded", "{msg}");
    assert!(msg.contains("max_heap_bytes"), "{msg}");
    // the default limit stops a huge range before it is built for a consumer that keeps
    // it; one that keeps nothing reads it one number at a time
    for src in ["(vec (range 100000000))", "(vec (map inc (range 100000000)))", "(frequencies (range 100000000))"] {
        let (kind, _) = kind_of(src, RunOptions::default());
        assert_eq!(kind, "memory_exceeded", "{src}");
    }
    assert_eq!(show("(count (range 100000000))"), "100000000");
    assert_eq!(show("(reduce + (range 3000000))"), "4499998500000");
    assert_eq!(show("(reduce + (take 3000000 (range)))"), "4499998500000");
    assert_eq!(show("(count (filter even? (range 3000000)))"), "1500000");
    let small = Limits { max_heap_bytes: 10_000, ..Limits::default() };
    let (kind, _) = kind_of("(vec (range 1000))", with(small));
    assert_eq!(kind, "memory_exceeded");
}

#[test]
fn context_is_not_charged() {
    let big: Vec<serde_json::Value> = (0..50_000).map(|i| serde_json::json!({"id": i})).collect();
    let limits = Limits { max_heap_bytes: 100_000, ..Limits::default() };
    let opts = with(limits).with_json_context(serde_json::json!({"items": big}).as_object().unwrap());
    assert_eq!(show_outcome(&run("(count data/items)", opts)), "50000");
}

#[test]
fn loop_iteration_cap() {
    let (kind, msg) = kind_of("(loop [i 0] (recur (inc i)))", RunOptions::default());
    assert_eq!(kind, "loop_limit_exceeded");
    assert!(msg.contains("1000 iterations"), "{msg}");
    let (kind, _) = kind_of("(loop [i 0] (if (< i 999) (recur (inc i)) i))", RunOptions::default());
    assert_eq!(kind, "ok");
    let (kind, _) = kind_of("(defn f [n] (if (< n 5000) (recur (inc n)) n)) (f 0)", RunOptions::default());
    assert_eq!(kind, "loop_limit_exceeded");
}

#[test]
fn deep_recursion_is_a_clean_error() {
    let prog = "(defn f [n] (if (= n 0) 0 (+ 1 (f (dec n))))) (f 100000)";
    let (kind, msg) = kind_of(prog, RunOptions::default());
    assert_eq!(kind, "recursion_limit_exceeded", "{msg}");
    assert!(msg.contains("max_recursion_depth"), "{msg}");
    // even with the cap raised to 100,000, the process survives
    let limits = Limits { max_recursion_depth: 100_000, timeout: Duration::from_secs(20), ..Limits::default() };
    let (kind, msg) = kind_of(prog, with(limits));
    assert!(kind == "ok" || kind == "recursion_limit_exceeded", "{kind}: {msg}");
    let (kind, _) = kind_of("(defn f [n] (if (= n 0) 0 (+ 1 (f (dec n))))) (f 500)", RunOptions::default());
    assert_eq!(kind, "ok");
}

#[test]
fn program_size_and_symbols() {
    let limits = Limits { max_program_bytes: 10, ..Limits::default() };
    let (kind, msg) = kind_of("(+ 1 2 3 4 5 6)", with(limits));
    assert_eq!(kind, "program_too_large");
    assert!(msg.contains("exceeds limit of 10"), "{msg}");
    let limits = Limits { max_symbols: 5, ..Limits::default() };
    let (kind, msg) = kind_of("[:a :b :c :d :e :f :g]", with(limits));
    assert_eq!(kind, "symbol_limit_exceeded", "{msg}");
}

#[test]
fn println_length_is_capped() {
    let limits = Limits { max_print_length: 10, ..Limits::default() };
    let o = run("(println \"abcdefghijklmnopqrstuvwxyz\")", with(limits));
    assert_eq!(o.prints, vec!["abcdefghij... (10/26 chars)"]);
}

#[test]
fn printed_result_size_is_capped() {
    let limits = Limits { max_result_bytes: 100, ..Limits::default() };
    let (kind, msg) = kind_of("(range 1000)", with(limits));
    assert_eq!(kind, "output_too_large");
    assert!(msg.contains("max_result_bytes"), "{msg}");
}

#[test]
fn tool_call_cap() {
    let host = FnHost::new().with_tool("t", |_| Ok(Value::Int(1)));
    let opts = RunOptions {
        host: Arc::new(host),
        limits: Limits { max_tool_calls: Some(2), ..Limits::default() },
        ..RunOptions::default()
    };
    let (kind, msg) = kind_of("(tool/t) (tool/t) (tool/t)", opts);
    assert_eq!(kind, "tool_call_limit_exceeded", "{msg}");
}

#[test]
fn nesting_depth_of_source() {
    let deep = format!("{}1{}", "[".repeat(300), "]".repeat(300));
    let (kind, _) = kind_of(&deep, RunOptions::default());
    assert_eq!(kind, "parse_error");
}

#[test]
fn cancellation_stops_a_run() {
    let cancel = ptc_lisp_eval::Cancel::new();
    cancel.cancel();
    let opts = RunOptions {
        cancel,
        limits: Limits { max_loop_iterations: u64::MAX, timeout: Duration::from_secs(30), ..Limits::default() },
        ..RunOptions::default()
    };
    let (kind, _) = kind_of("(loop [i 0] (recur (inc i)))", opts);
    assert_eq!(kind, "cancelled");
}

#[test]
fn pmap_runs_in_parallel_with_ordered_results() {
    assert_eq!(show("(pmap inc [1 2 3 4 5 6 7 8 9 10])"), "[2 3 4 5 6 7 8 9 10 11]");
    assert_eq!(show("(pcalls (fn [] 1) (fn [] (+ 1 1)))"), "[1 2]");
    assert_eq!(show("(pmap + [1 2] [10 20])"), "[11 22]");
    assert_eq!(show("(pmap inc [])"), "[]");
}

#[test]
fn pmap_errors_have_stable_reasons() {
    let (kind, msg) = kind_of("(pmap (fn [x] (/ 1 x)) [1 0 2])", RunOptions::default());
    assert_eq!(kind, "pmap_error", "{msg}");
    assert!(msg.contains("branch 1"), "{msg}");
    let limits = Limits { max_parallel_workers: 1, ..Limits::default() };
    let (kind, msg) = kind_of("(pmap (fn [x] (pmap inc [x])) [1 2])", with(limits));
    assert_eq!(kind, "parallel_capacity_exceeded", "{msg}");
    let limits = Limits { timeout: Duration::from_millis(50), max_loop_iterations: u64::MAX, ..Limits::default() };
    let (kind, _) = kind_of("(pmap (fn [x] (loop [i 0] (recur (inc i)))) [1 2])", with(limits));
    assert_eq!(kind, "timeout");
    let (kind, msg) = kind_of("(pmap (fn [x] (return x)) [1])", RunOptions::default());
    assert_eq!(kind, "pmap_error", "{msg}");
}

#[test]
fn deeply_nested_results_do_not_escape() {
    let (kind, msg) = kind_of("(reduce (fn [a _] [a]) [] (range 50000))", RunOptions::default());
    assert_eq!(kind, "output_too_large", "{msg}");
    assert!(msg.contains("nested"), "{msg}");
    let (kind, _) = kind_of("(def deep (reduce (fn [a _] [a]) [] (range 50000))) 1", RunOptions::default());
    assert_eq!(kind, "output_too_large");
}

#[test]
fn infinite_sequences_stay_metered() {
    // realising a whole infinite sequence is a limit error naming the producer
    for (src, producer) in [
        ("(count (range))", "(range)"),
        ("(vec (iterate inc 0))", "(iterate f x)"),
        ("(sort (repeat 1))", "(repeat x)"),
        ("(into [] (cycle [1 2]))", "(cycle coll)"),
    ] {
        let (kind, msg) = kind_of(src, RunOptions::default());
        assert_eq!(kind, "loop_limit_exceeded", "{src}: {msg}");
        assert!(msg.contains(producer), "{src}: {msg}");
    }
    // a consumer that never stops runs out of time, pulling item by item
    let limits = Limits { timeout: Duration::from_millis(50), max_heap_bytes: u64::MAX, ..Limits::default() };
    let started = Instant::now();
    let (kind, msg) = kind_of("(some neg? (range))", with(limits.clone()));
    assert_eq!(kind, "timeout", "{msg}");
    assert!(started.elapsed() < Duration::from_secs(2));
    // so does `count`, which keeps nothing of what it counts
    let (kind, msg) = kind_of("(count (take-while some? (range)))", with(limits.clone()));
    assert_eq!(kind, "timeout", "{msg}");
    // what a consumer keeps is charged as memory, item by item
    let limits = Limits { max_heap_bytes: 1 << 20, ..Limits::default() };
    let (kind, msg) = kind_of("(vec (take-while some? (range)))", with(limits.clone()));
    assert_eq!(kind, "memory_exceeded", "{msg}");
    let (kind, msg) = kind_of("(count (into [] (map inc) (range)))", with(limits));
    assert_eq!(kind, "memory_exceeded", "{msg}");
}

#[test]
fn lazy_steps_stacked_on_one_producer_are_bounded() {
    let (kind, msg) = kind_of("(first (reduce (fn [s _] (map inc s)) (range) (range 5000)))", RunOptions::default());
    assert_eq!(kind, "recursion_limit_exceeded", "{msg}");
    assert!(msg.contains("lazy steps"), "{msg}");
    let (kind, out) = kind_of("(first (reduce (fn [s _] (map inc s)) (range) (range 500)))", RunOptions::default());
    assert_eq!((kind.as_str(), out.as_str()), ("ok", "500"));
}

#[test]
fn names_a_program_defines_count_as_symbols() {
    let limits = Limits { max_symbols: 5, ..Limits::default() };
    for src in [
        "(def a1 1) (def a2 2) (def a3 3) (def a4 4) (def a5 5) (def a6 6)",
        "(defn f1 [] 1) (defn f2 [] 2) (defn f3 [] 3) (defn f4 [] 4) (defn f5 [] 5)",
        "(letfn [(g1 [] 1) (g2 [] 2) (g3 [] 3) (g4 [] 4) (g5 [] 5)] 1)",
        "(fn [p1 p2 p3 p4 p5 p6] 1)",
        "'[q1 q2 q3 q4 q5 q6]",
        "[#'v1 #'v2 #'v3 #'v4 #'v5 #'v6]",
    ] {
        let (kind, msg) = kind_of(src, with(limits.clone()));
        assert_eq!(kind, "symbol_limit_exceeded", "{src}: {msg}");
        assert!(msg.contains("max_symbols"), "{msg}");
    }
    // within the limit: def, a, b and + are four names
    let (kind, msg) = kind_of("(def a 1) (def b 2) (+ a b)", with(limits));
    assert_eq!(kind, "ok", "{msg}");
}

#[test]
fn keywords_made_at_run_time_count_as_symbols() {
    let limits = Limits { max_symbols: 100, ..Limits::default() };
    let (kind, msg) = kind_of("(count (mapv #(keyword (str \"k\" %)) (range 101)))", with(limits.clone()));
    assert_eq!(kind, "symbol_limit_exceeded", "{msg}");
    assert!(msg.contains("max_symbols") && msg.contains("keyword"), "{msg}");
    // the same names again and again are one name each
    let (kind, msg) = kind_of("(count (mapv #(keyword (str \"k\" (mod % 50))) (range 1000)))", with(limits));
    assert_eq!((kind.as_str(), msg.as_str()), ("ok", "1000"));
}

#[test]
fn programs_read_the_clock_only_through_the_host() {
    for src in ["(System/currentTimeMillis)", "(java.util.Date.)"] {
        let (kind, msg) = kind_of(src, RunOptions::default());
        assert_eq!(kind, "unsupported_method", "{src}: {msg}");
        assert!(msg.contains("no clock") && msg.contains("context or a tool"), "{msg}");
    }
    // dates from data still work
    let (kind, msg) = kind_of("(java.util.Date. 0)", RunOptions::default());
    assert_eq!((kind.as_str(), msg.as_str()), ("ok", "\"1970-01-01T00:00:00Z\""));

    struct Clocked;
    impl ptc_lisp_eval::Host for Clocked {
        fn tools(&self) -> Vec<ptc_lisp_eval::ToolSpec> {
            Vec::new()
        }
        fn call(
            &self,
            call: &ptc_lisp_eval::ToolCall,
            _: &ptc_lisp_eval::CallCx<'_>,
        ) -> Result<Value, ptc_lisp_eval::ToolError> {
            Err(ptc_lisp_eval::ToolError::unknown_tool(&call.name))
        }
        fn clock_millis(&self) -> Option<i64> {
            Some(1_500)
        }
    }
    let opts = || RunOptions { host: Arc::new(Clocked), ..RunOptions::default() };
    assert_eq!(kind_of("(System/currentTimeMillis)", opts()), ("ok".into(), "1500".into()));
    assert_eq!(kind_of("(java.util.Date.)", opts()), ("ok".into(), "\"1970-01-01T00:00:01.500Z\"".into()));
}

/// Limits for the builder tests: a 16 MiB budget, and time enough on a loaded debug build
/// that the memory limit, not the deadline, is what stops them.
fn builders() -> RunOptions {
    with(Limits { max_heap_bytes: 16 * 1024 * 1024, timeout: Duration::from_secs(30), ..Limits::default() })
}

#[test]
fn printed_forms_of_huge_values_fail_instead_of_being_cut() {
    // 3000 references to one 1 MB string: 3 GB when printed
    let big = "(def v (vec (repeat 3000 (.repeat \"x\" 1000000))))";
    for call in ["(.toString v)", "(str v)", "(pr-str v)", "(print-str v)", "(String/valueOf v)", "(format \"%s\" v)"] {
        let (kind, msg) = kind_of(&format!("{big} (count {call})"), builders());
        assert_eq!(kind, "memory_exceeded", "{call}: {msg}");
        assert!(msg.contains("max_heap_bytes"), "{msg}");
    }
    // a value that fits prints whole, as before
    let (kind, out) = kind_of("(count (.toString (vec (repeat 3 \"ab\"))))", builders());
    assert_eq!((kind.as_str(), out.as_str()), ("ok", "16"));
}

#[test]
fn string_builders_charge_their_output() {
    // each builder, asked for more than the limit, fails with memory_exceeded
    let s = "(def s (.repeat \"x\" 1000000))";
    for body in [
        "(apply str (repeat 100 s))",
        "(str/join \",\" (repeat 100 s))",
        "(String/join \",\" (repeat 100 s))",
        "(apply format (apply str (repeat 100 \"%s\")) (repeat 100 s))",
        "(str/replace s #\"x+\" (apply str (repeat 100 \"$0\")))",
        "(mapv (fn [_] (upper-case s)) (range 100))",
        "(mapv (fn [_] (str/trim s)) (range 100))",
        "(mapv (fn [i] (subs s i)) (range 100))",
        "(mapv (fn [_] (re-find #\"x+\" s)) (range 100))",
    ] {
        let (kind, msg) = kind_of(&format!("{s} (count {body})"), builders());
        assert_eq!(kind, "memory_exceeded", "{body}: {msg}");
    }
}

#[test]
fn collection_builders_charge_their_output() {
    for src in [
        "(def v (vec (range 10000))) (count (apply interleave (repeat 1000 v)))",
        "(def v (vec (range 10000))) (count (apply concat (repeat 1000 v)))",
        "(count (partition 50000 1 (range 100000)))",
        "(def v (vec (range 1000))) (count (for [a v b v c v] 1))",
        "(def d (reduce (fn [a _] [a a]) [1] (range 30))) (count (flatten d))",
        "(count (group-by identity (repeat 400000 1)))",
        "(def s (.repeat \"x\" 3000000)) (count (vec s))",
    ] {
        let (kind, msg) = kind_of(src, builders());
        assert_eq!(kind, "memory_exceeded", "{src}: {msg}");
    }
}

#[test]
fn text_of_a_too_deep_value_is_an_error_not_a_cut_string() {
    let deep = "(let [d (reduce (fn [a _] [a]) [] (range 1500))]";
    for call in ["(str d)", "(pr-str d)", "(.toString d)", "(str/join [d])"] {
        let (kind, msg) = kind_of(&format!("{deep} (count {call}))"), RunOptions::default());
        assert_eq!(kind, "recursion_limit_exceeded", "{call}: {msg}");
        assert!(msg.contains("1,000 levels"), "{msg}");
    }
    // a line printed for people is cut, and says so
    let o = run(&format!("{deep} (println d) 1)"), RunOptions::default());
    assert!(o.error().is_none(), "{:?}", o.error());
}

/// A host whose catalog documents `big/tool` with a long text.
struct LongDocs;

impl ptc_lisp_eval::Host for LongDocs {
    fn tools(&self) -> Vec<ptc_lisp_eval::ToolSpec> {
        Vec::new()
    }
    fn call(
        &self,
        call: &ptc_lisp_eval::ToolCall,
        _cx: &ptc_lisp_eval::CallCx<'_>,
    ) -> Result<Value, ptc_lisp_eval::ToolError> {
        Err(ptc_lisp_eval::ToolError::unknown_tool(&call.name))
    }
    fn discover(
        &self,
        query: &ptc_lisp_eval::Discovery<'_>,
        _cx: &ptc_lisp_eval::CallCx<'_>,
    ) -> Option<Result<Value, ptc_lisp_eval::ToolError>> {
        match query {
            ptc_lisp_eval::Discovery::Doc { name: "big/tool" } => Some(Ok(Value::str("big/tool: ".repeat(500)))),
            _ => None,
        }
    }
}

/// Asserts that `prints` keeps both caps: no line over `max_length` characters (a cut
/// line is its first `max_length` characters plus the note saying how long it was), at
/// most `max_bytes` bytes in all, and at most one drop marker, last.
fn assert_print_caps(what: &str, prints: &[String], max_length: usize, max_bytes: usize) {
    let (body, marker) = match prints.split_last() {
        Some((last, rest)) if last.starts_with("... (further output dropped") => (rest, Some(last)),
        _ => (prints, None),
    };
    let total: usize = body.iter().map(String::len).sum();
    assert!(total <= max_bytes, "{what}: {total} bytes printed, cap {max_bytes}: {prints:?}");
    for line in body {
        assert!(!line.starts_with("... (further output dropped"), "{what}: a marker before the end: {prints:?}");
        let kept = match line.rsplit_once("... (") {
            Some((head, note)) if note.ends_with(" chars)") => head,
            _ => line.as_str(),
        };
        assert!(kept.chars().count() <= max_length, "{what}: a line of {} chars: {line:?}", kept.chars().count());
    }
    if let Some(m) = marker {
        assert!(m.contains(&format!("more than {max_bytes} bytes")), "{what}: {m}");
    }
}

#[test]
fn every_print_path_keeps_both_print_caps() {
    let (max_length, max_bytes) = (40, 300);
    let limits = Limits { max_print_length: max_length, max_print_bytes: max_bytes, ..Limits::default() };
    let programs = [
        ("println", "(dotimes [i 50] (println i (apply str (repeat 100 \"x\"))))"),
        ("pmap", "(pmap (fn [i] (println i (apply str (repeat 100 \"x\"))) i) (range 40))"),
        ("pcalls", "(apply pcalls (repeat 16 #(println (apply str (repeat 100 \"y\")))))"),
        (
            "nested pmap",
            "(pmap (fn [i] (doall (map #(println i % (apply str (repeat 30 \"z\"))) (range 5)))) (range 8))",
        ),
        ("doc of a builtin", "(dotimes [_ 20] (doc map))"),
        (
            "doc of a definition",
            "(defn f \"a very long docstring that goes on and on and on and on and on\" [] 1) (dotimes [_ 20] (doc f))",
        ),
        ("doc of a host entry", "(dotimes [_ 5] (doc big/tool))"),
        ("doc in pmap", "(pmap (fn [_] (doc big/tool)) (range 8))"),
    ];
    for (what, src) in programs {
        let opts = RunOptions { limits: limits.clone(), host: Arc::new(LongDocs), ..RunOptions::default() };
        let o = run(src, opts);
        assert!(o.error().is_none(), "{what}: {:?}", o.result);
        assert!(!o.prints.is_empty(), "{what}: nothing printed");
        assert_print_caps(what, &o.prints, max_length, max_bytes);
    }
}

/// A tool that returns once `n` calls are waiting in it, so each of `n` parallel calls
/// runs on a worker of its own (an error after 10 s instead of hanging a broken test).
fn meeting_point(n: usize) -> FnHost {
    let state = Arc::new((std::sync::Mutex::new(0usize), std::sync::Condvar::new()));
    FnHost::new().with_tool("meet", move |_| {
        let (count, all_here) = &*state;
        let mut here = count.lock().unwrap();
        *here += 1;
        all_here.notify_all();
        let (here, timeout) = all_here.wait_timeout_while(here, Duration::from_secs(10), |h| *h < n).unwrap();
        if timeout.timed_out() { Err(format!("only {} of {n} calls met", *here)) } else { Ok(Value::Nil) }
    })
}

#[test]
fn parallel_prints_count_against_the_run_cap_in_call_order() {
    // four calls on four workers, each printing 100 bytes: three fit in 300 bytes
    let opts = RunOptions {
        limits: Limits { max_print_bytes: 300, max_parallel_workers: 4, ..Limits::default() },
        host: Arc::new(meeting_point(4)),
        ..RunOptions::default()
    };
    let o = run(
        "(pmap (fn [i] (tool/meet {}) (println (format \"%03d\" i) (apply str (repeat 96 \"x\")))) (range 4))",
        opts,
    );
    assert!(o.error().is_none(), "{:?}", o.result);
    assert_eq!(o.prints.len(), 4, "{:?}", o.prints);
    for (i, line) in o.prints[..3].iter().enumerate() {
        assert!(line.starts_with(&format!("{i:03} x")) && line.len() == 100, "{line}");
    }
    assert!(o.prints[3].contains("more than 300 bytes"), "{:?}", o.prints[3]);
}

#[test]
fn fuel_limit_is_off_by_default_and_fires_with_its_own_reason() {
    let src = "(reduce + (map inc (range 100000)))";
    assert_eq!(kind_of(src, with(Limits::default())).0, "ok");
    let limits = Limits { max_fuel: Some(10_000), ..Limits::default() };
    let (kind, msg) = kind_of(src, with(limits));
    assert_eq!(kind, "fuel_exhausted", "{msg}");
    assert!(msg.contains("more than 10000 steps") && msg.contains("max_fuel"), "{msg}");
}

#[test]
fn fuel_limit_is_deterministic_and_matches_the_fuel_a_run_reports() {
    let src = "(loop [i 0 acc 0] (if (< i 900) (recur (inc i) (+ acc i)) acc))";
    let used = run(src, RunOptions::default()).usage.fuel;
    assert!(used > 0);
    // exactly the fuel the run used is enough; one unit less is not, every time
    let at = |max| kind_of(src, with(Limits { max_fuel: Some(max), ..Limits::default() })).0;
    for _ in 0..3 {
        assert_eq!(at(used), "ok");
        assert_eq!(at(used - 1), "fuel_exhausted");
    }
}

#[test]
fn fuel_of_parallel_branches_counts_toward_the_limit() {
    let src = "(count (pmap (fn [i] (reduce + (range 200))) (range 16)))";
    let o = run(src, RunOptions::default());
    assert_eq!(o.printed, "16");
    // the branches' work is in the usage: far more than the 16 calls themselves
    let used = o.usage.fuel;
    assert!(used > 16 * 200, "{used}");
    let at = |max| kind_of(src, with(Limits { max_fuel: Some(max), ..Limits::default() })).0;
    for _ in 0..3 {
        assert_eq!(at(used), "ok");
        assert_eq!(at(used - 1), "fuel_exhausted");
    }
}

#[test]
fn every_default_is_within_its_range_and_out_of_range_values_are_refused() {
    assert!(Limits::default().validate().is_ok());
    assert!(Limits::mcp().validate().is_ok());
    for spec in Limits::table() {
        let mut l = Limits::default();
        if spec.min > 0 {
            let e = spec.set(&mut l, Some(spec.min - 1)).unwrap_err();
            assert!(e.to_string().starts_with(&format!("{} must be ", spec.name)), "{e}");
        }
        if spec.max < u64::MAX {
            assert!(spec.set(&mut l, Some(spec.max + 1)).is_err(), "{}", spec.name);
        }
        spec.set(&mut l, Some(spec.min)).unwrap();
        assert_eq!(spec.get(&l), Some(spec.min), "{}", spec.name);
        assert_eq!(spec.set(&mut l, None).is_ok(), spec.optional, "{}", spec.name);
        assert!(Limits::spec(spec.name).is_some());
    }
    let e = Limits { timeout: Duration::ZERO, ..Limits::default() }.validate().unwrap_err();
    assert_eq!(e.to_string(), "timeout_ms must be between 1 and 86400000 (got 0); the default is 1000");
}

#[test]
fn a_timeout_past_the_clock_does_not_panic() {
    let limits = Limits { timeout: Duration::from_secs(u64::MAX), ..Limits::default() };
    assert_eq!(kind_of("(+ 1 2)", with(limits)), ("ok".to_string(), "3".to_string()));
}

/// docs/security.md has a row for every limit of the table, naming its flag and what
/// happens past it.
#[test]
fn the_security_doc_lists_every_limit() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/security.md");
    let doc = std::fs::read_to_string(path).unwrap();
    for spec in Limits::table() {
        let flag = format!("`--{}`", spec.name.replace('_', "-"));
        let row = doc.lines().find(|l| l.starts_with('|') && l.contains(&flag));
        let row = row.unwrap_or_else(|| panic!("docs/security.md has no row for {flag}"));
        assert!(
            row.replace('`', "").contains(spec.exceeded),
            "{}: the row does not say {:?}: {row}",
            spec.name,
            spec.exceeded
        );
    }
}

/// Building up a string or slicing a vector a piece per turn is charged about what the
/// result holds, not every intermediate copy: the memory limit bounds what a program
/// keeps, and a string grown in a loop keeps one string. A string that is still held
/// elsewhere is charged in full.
#[test]
fn accumulating_a_string_or_slicing_a_vector_is_charged_linearly() {
    let heap = |src: &str, n: u64| {
        let limits = Limits { max_loop_iterations: 1_000_000, timeout: Duration::from_secs(30), ..Limits::default() };
        let o = run(&src.replace('N', &n.to_string()), with(limits));
        assert!(matches!(o.result, ptc_lisp_eval::RunResult::Value(_)), "{src} at {n}: {}", show_outcome(&o));
        o.usage.heap_bytes
    };
    for src in [
        "(loop [i 0 acc \"\"] (if (< i N) (recur (inc i) (str acc \"line \" i \"\\n\")) (count acc)))",
        "(count (reduce (fn [acc i] (str acc \"row \" i \";\")) \"\" (range N)))",
        "(let [v (vec (range N))] (count (loop [v v] (if (> (count v) 1) (recur (subvec v 1)) v))))",
        "(count (reduce (fn [acc x] (concat acc [x])) [] (range N)))",
    ] {
        let (small, big) = (heap(src, 2_000), heap(src, 20_000));
        assert!(big < small * 20, "{src}: {small} bytes at 2,000 turns, {big} at 20,000");
    }
    // 20,000 lines of about 12 bytes: well under the default 64 MiB (it was 2.4 GB charged)
    assert!(heap("(count (reduce (fn [acc i] (str acc \"line \" i \"\\n\")) \"\" (range N)))", 20_000) < 2_000_000);
    // a string that stays held is charged again each time it is copied
    let kept = heap("(let [s (apply str (repeat 1000 \"x\"))] (count (mapv (fn [i] (str s i)) (range N))))", 100);
    assert!(kept > 100_000, "{kept}");
}

#[test]
fn letfn_mutual_recursion_builds_nothing_per_call() {
    // 10,000 walks of 50 mutually recursive calls: no function value is made per call,
    // so the data built stays far below even a small heap limit
    let limits = Limits { max_heap_bytes: 200_000, ..Limits::default() };
    let src = "(letfn [(ev? [n] (if (zero? n) true (od? (dec n)))) (od? [n] (if (zero? n) false (ev? (dec n))))] \
               (count (filter ev? (map #(mod % 100) (range 10000)))))";
    let (kind, msg) = kind_of(src, with(limits.clone()));
    assert_eq!(kind, "ok", "{msg}");
    // a group function taken as a value is made, and charged, each time
    let src = "(letfn [(f [] g) (g [] 1)] (count (map (fn [_] (f)) (range 100000))))";
    let (kind, msg) = kind_of(src, with(limits.clone()));
    assert_eq!(kind, "memory_exceeded", "{msg}");
    // deep mutual recursion still ends at the depth limit
    let src = "(letfn [(a [n] (b (inc n))) (b [n] (a (inc n)))] (a 0))";
    let (kind, msg) = kind_of(src, with(limits));
    assert_eq!(kind, "recursion_limit_exceeded", "{msg}");
}
