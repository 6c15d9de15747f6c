//! Values nested any depth deep, inside collections or inside what functions hold: the
//! engine refuses to hand them out (results, definitions, tool arguments), and every walk
//! over a value (drop, print, JSON, hash, compare, `=`, Debug) is safe at any depth on an
//! ordinary thread.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::collections::HashSet;
use std::sync::Arc;

use ptc_lisp_eval::{
    Cancel, CompileEnv, Engine, FnHost, Limits, MAX_VALUE_NESTING, RunInput, RunOptions, Value, json, printer, run,
};

/// 100,000 vectors, each inside the next.
const DEEP: &str = "(reduce (fn [a _] [a]) [] (range 100000))";

/// Every way a program can make a value hold another without a collection in between:
/// function values of every builder (the 56-byte program of issue 22 is the first).
fn holders() -> Vec<(&'static str, String)> {
    let d = DEEP;
    vec![
        ("constantly", format!("(constantly {d})")),
        ("fn closure", format!("(let [d {d}] (fn [] d))")),
        ("memoize", format!("(let [d {d}] (memoize (fn [x] d)))")),
        ("comp", format!("(let [d {d}] (comp (fn [x] d) inc))")),
        ("juxt", format!("(let [d {d}] (juxt (fn [x] d)))")),
        ("partial", format!("(partial conj {d})")),
        ("complement", format!("(let [d {d}] (complement (fn [x] d)))")),
        ("fnil", format!("(fnil conj {d})")),
        ("every-pred", format!("(let [d {d}] (every-pred (fn [x] d)))")),
        ("some-fn", format!("(let [d {d}] (some-fn (fn [x] d)))")),
        ("reduced", format!("(reduced {d})")),
        ("completing", format!("(let [d {d}] (completing (fn [a x] d)))")),
        ("map transducer", format!("(let [d {d}] (map (fn [x] d)))")),
        ("repeat", format!("(repeat {d})")),
        ("iterate", format!("(iterate identity {d})")),
        ("cycle", format!("(cycle [{d}])")),
        ("lazy step", format!("(let [d {d}] (map (fn [x] d) (range)))")),
        ("dedupe state", format!("(let [rf ((dedupe) conj)] (rf [] {d}) rf)")),
        ("distinct state", format!("(let [rf ((distinct) conj)] (rf [] {d}) rf)")),
        ("partition-all state", format!("(let [rf ((partition-all 5) conj)] (rf [] {d}) rf)")),
        // no collection at all: 100,000 functions, each holding the last
        ("function chain", "(reduce (fn [f _] (constantly f)) nil (range 100000))".into()),
        ("closure chain", "(reduce (fn [f _] (fn [] f)) nil (range 100000))".into()),
    ]
}

/// Runs `f` on a thread with tokio's default 2 MiB stack, as the MCP server's threads are.
/// The default limits with time to spare: building values 100,000 levels deep takes a
/// while in a debug build on a loaded machine, and these tests are about depth, not time.
fn roomy() -> Limits {
    Limits { timeout: std::time::Duration::from_secs(30), ..Limits::default() }
}

fn on_small_thread<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new().stack_size(2 * 1024 * 1024).spawn(f).unwrap().join().unwrap()
}

fn reason(src: &str) -> (String, String) {
    let src = src.to_string();
    // the outcome is returned to, and dropped on, an ordinary thread
    on_small_thread(move || {
        let o = run(&src, RunOptions { limits: roomy(), ..RunOptions::default() });
        match o.error() {
            Some(e) => (e.kind.to_string(), e.message.clone()),
            None => ("ok".into(), o.printed.clone()),
        }
    })
}

#[test]
fn results_holding_deep_values_are_refused() {
    for (name, src) in holders() {
        let (kind, msg) = reason(&src);
        assert_eq!(kind, "output_too_large", "{name}: {msg}");
        assert!(msg.contains("nested more than"), "{name}: {msg}");
    }
    // the same through (return v) and (fail v)
    for src in [format!("(return (constantly {DEEP}))"), format!("(fail (constantly {DEEP}))")] {
        assert_eq!(reason(&src).0, "output_too_large", "{src}");
    }
}

#[test]
fn definitions_holding_deep_values_are_refused_and_not_kept() {
    let engine = Engine::new(roomy());
    let host = FnHost::new();
    for (name, src) in holders() {
        let o = engine.eval(&format!("(def keep 1) (def f {src}) 1"), RunInput::new(), &host, &Cancel::new());
        assert_eq!(o.error().map(|e| e.kind.to_string()).as_deref(), Some("output_too_large"), "{name}");
        assert!(o.memory.is_empty(), "{name}: a refused run keeps no definition");
    }
    // a definition from an earlier run that a later run makes deep is refused too
    let o = engine.eval("(def f (fn [] 1))", RunInput::new(), &host, &Cancel::new());
    assert!(o.is_ok());
    let later = RunInput::new().with_memory(o.memory.clone());
    let o2 = engine.eval(&format!("(def f (constantly {DEEP})) 1"), later, &host, &Cancel::new());
    assert_eq!(o2.error().map(|e| e.kind.to_string()).as_deref(), Some("output_too_large"));
    assert_eq!(o2.memory.len(), 1, "the earlier definition stays");
}

#[test]
fn functions_holding_shallow_values_are_fine() {
    let shallow = "(reduce (fn [a _] [a]) [] (range 900))";
    for src in [
        format!("(constantly {shallow})"),
        format!("(partial conj {shallow})"),
        format!("(let [d {shallow}] (fn [] d))"),
        "(reduce (fn [f _] (constantly f)) nil (range 900))".into(),
    ] {
        let (kind, out) = reason(&src);
        assert_eq!(kind, "ok", "{src}: {out}");
    }
    let (kind, out) = reason(&format!("(count (flatten ((constantly {shallow}))))"));
    assert_eq!((kind.as_str(), out.as_str()), ("ok", "0"));
}

#[test]
fn shared_nodes_are_judged_by_their_full_height() {
    // `a` is met first one level down, then again 600 levels below `b`'s top: the check
    // must not skip it the second time (a definition, so printing cannot catch it instead)
    let src = "(def v (let [a (reduce (fn [a _] [a]) [] (range 600))
                            b (reduce (fn [x _] [x]) a (range 600))]
                        [b a]))
               1";
    for src in [src.to_string(), src.replace("[b a]", "[a b]")] {
        let (kind, msg) = reason(&src);
        assert_eq!(kind, "output_too_large", "{msg}");
        assert!(msg.contains("nested more than"), "{msg}");
    }
    // sharing alone is no depth: 2^60 paths through 60 nodes
    let (kind, msg) = reason("(def s (reduce (fn [a _] [a a]) [] (range 60))) (count s)");
    assert_eq!((kind.as_str(), msg.as_str()), ("ok", "2"));
}

#[test]
fn deep_tool_arguments_never_reach_the_host() {
    let called = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = called.clone();
    let host = FnHost::new().with_tool("keep", move |args| {
        seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(args)
    });
    let opts = RunOptions { host: Arc::new(host), limits: roomy(), ..RunOptions::default() };
    let o = on_small_thread(move || {
        let o = run(&format!("(tool/keep {{:x {DEEP}}})"), opts);
        (o.error().map(|e| (e.kind.to_string(), e.message.clone())), o.tool_calls.len())
    });
    let (err, records) = o;
    let (kind, msg) = err.expect("an error");
    assert_eq!(kind, "invalid_tool_args", "{msg}");
    assert!(msg.contains("'keep'") && msg.contains("nested more than"), "{msg}");
    assert_eq!((called.load(std::sync::atomic::Ordering::SeqCst), records), (0, 0));
}

/// A vector nested `n` deep, built without recursion.
fn nested(n: usize, leaf: Value) -> Value {
    (0..n).fold(leaf, |v, _| Value::vector([v]))
}

#[test]
fn every_walk_is_safe_at_any_depth_on_an_ordinary_thread() {
    on_small_thread(|| {
        let n = 300_000;
        let a = nested(n, Value::Int(1));
        let b = nested(n, Value::Int(1));
        // print and Debug stop at their depth cap with "..."
        let (text, truncated) = printer::to_clojure_with(&a, &printer::PrintOptions::default());
        assert!(truncated && text.contains("..."));
        assert!(format!("{a:?}").contains("..."));
        // JSON conversion is an error, not a crash
        assert!(json::to_json(&a).is_err());
        assert!(json::generate_bounded(&a, 1 << 30).is_err());
        // hash, compare and = answer (past the walk depth, the answer is not exact)
        let mut set = HashSet::new();
        set.insert(a.clone());
        set.insert(b.clone());
        let _ = a.cmp(&b);
        let _ = a.equiv(&b);
        let _ = a == b;
        // sets and maps of deep values hash and order their members the same way
        let s = Value::set([a.clone(), b.clone(), Value::Int(3)]);
        drop(s);
        // dropping the last owner of each: no recursion
        drop(set);
        drop(a);
        drop(b);
        // a map and a set chain, and a shared tail dropped by its last owner
        let m = (0..n).fold(Value::Nil, |v, i| Value::map([(Value::Int(i as i64), v)]));
        let st = (0..n).fold(Value::Nil, |v, _| Value::set([v]));
        let tail = nested(n, Value::Nil);
        let heads: Vec<Value> = (0..3).map(|_| Value::vector([tail.clone()])).collect();
        drop(tail);
        drop((m, st, heads));
    });
}

#[test]
fn values_at_the_nesting_limit_walk_completely_on_an_ordinary_thread() {
    on_small_thread(|| {
        let a = nested(MAX_VALUE_NESTING, Value::Int(1));
        let b = nested(MAX_VALUE_NESTING, Value::Int(1));
        let c = nested(MAX_VALUE_NESTING, Value::Int(2));
        let (text, truncated) = printer::to_clojure_with(&a, &printer::PrintOptions::default());
        assert!(!truncated && text.contains("[1]") && !text.contains("..."));
        assert!(json::to_json(&a).is_ok());
        assert!(json::generate_bounded(&a, 1 << 20).is_ok());
        assert!(a == b && a.equiv(&b) && a != c && !a.equiv(&c));
        assert_eq!(a.cmp(&c), std::cmp::Ordering::Less);
        let set: HashSet<Value> = [a.clone(), b, c].into_iter().collect();
        assert_eq!(set.len(), 2);
    });
}

#[test]
fn a_program_value_handed_out_at_the_limit_drops_and_prints_on_an_ordinary_thread() {
    // the deepest value a run may return, printed and dropped by the caller's thread
    let src = format!("(constantly (reduce (fn [a _] [a]) [] (range {})))", MAX_VALUE_NESTING - 1);
    let (kind, out) = reason(&src);
    assert_eq!((kind.as_str(), out.as_str()), ("ok", "#fn[...]"));
    let engine = Engine::new(roomy());
    let program = engine.compile(&src, &CompileEnv::new()).unwrap();
    let o = on_small_thread(move || {
        let o = engine.run(&program, RunInput::new(), &FnHost::new(), &Cancel::new());
        o.value().map(|v| format!("{v:?}"))
    });
    assert_eq!(o.as_deref(), Some("#fn[...]"));
}

#[test]
fn json_conversion_depth_is_capped() {
    let program = |n: usize| format!("(count (json/generate-string (reduce (fn [a _] [a]) [] (range {n}))))");
    let within = json::MAX_JSON_DEPTH - 1;
    assert_eq!(reason(&program(within)), ("ok".to_string(), (2 * within + 2).to_string()));
    // deeper has no JSON form here (json/generate-string gives nil, as for a function)
    let deeper = format!("(nil? (json/generate-string (reduce (fn [a _] [a]) [] (range {}))))", json::MAX_JSON_DEPTH);
    assert_eq!(reason(&deeper), ("ok".to_string(), "true".to_string()));
    // the same cap off an evaluation thread, through the public API
    on_small_thread(|| {
        assert!(json::to_json(&nested(json::MAX_JSON_DEPTH, Value::Nil)).is_ok());
        let e = json::to_json(&nested(json::MAX_JSON_DEPTH + 1, Value::Nil)).unwrap_err();
        assert!(e.0.contains(&format!("more than {} levels deep", json::MAX_JSON_DEPTH)), "{e}");
    });
}
