//! data/, tool/, the auto-fallback, persisted definitions, *1 *2 *3, Clojure aliases.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use ptc_lisp_eval::{FnHost, RunOptions, RunResult, Value, run};

fn ctx(json: serde_json::Value) -> RunOptions {
    RunOptions::default().with_json_context(json.as_object().unwrap())
}

fn with_tools(opts: RunOptions) -> (RunOptions, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let host = FnHost::new()
        .with_tool("get_user", move |args| {
            c.fetch_add(1, Ordering::SeqCst);
            Ok(Value::map([(Value::str("echo"), args)]))
        })
        .with_tool("search", |_| Ok(Value::vector([Value::Int(1), Value::Int(2)])))
        .with_tool("boom", |_| Err("upstream exploded".to_string()));
    (RunOptions { host: Arc::new(host), ..opts }, calls)
}

fn show_with(src: &str, opts: RunOptions) -> String {
    show_outcome(&run(src, opts))
}

#[test]
fn data_namespace() {
    let o = || {
        ctx(
            serde_json::json!({"orders": [{"amount": 5, "status": "paid"}, {"amount": 7, "status": "open"}], "user_id": 3}),
        )
    };
    assert_eq!(show_with("(count data/orders)", o()), "2");
    assert_eq!(show_with("(->> data/orders (filter #(= \"paid\" (:status %))) (map :amount) (reduce +))", o()), "5");
    assert_eq!(show_with("data/missing", o()), "nil");
    assert_eq!(show_with("data/user-id", o()), "3");
    // bare name falls back to data/ when nothing else defines it
    assert_eq!(show_with("(count orders)", o()), "2");
    let strict = RunOptions { strict_data: true, ..o() };
    let out = show_with("data/missing", strict);
    assert!(out.starts_with("!runtime_error: data/missing is not bound"), "{out}");
}

#[test]
fn tool_calls_convert_keys_and_record_the_ledger() {
    let (opts, calls) = with_tools(RunOptions::default());
    let out = run("(tool/get_user {:user-id 7 :tags [:a]})", opts);
    assert_eq!(out.printed, "{\"echo\" {\"tags\" [\"a\"] \"user_id\" 7}}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(out.tool_calls.len(), 1);
    assert_eq!(out.tool_calls[0].name, "get_user");

    let (opts, _) = with_tools(RunOptions::default());
    assert_eq!(show_with("(tool/get_user :id 1)", opts), "{\"echo\" {\"id\" 1}}");
    let (opts, _) = with_tools(RunOptions::default());
    assert_eq!(show_with("(tool/search)", opts), "[1 2]");
    // hyphenated names find underscore tools; bare names fall back to tool/
    let (opts, _) = with_tools(RunOptions::default());
    assert_eq!(show_with("(get-user {:id 2})", opts), "{\"echo\" {\"id\" 2}}");
    let (opts, _) = with_tools(RunOptions::default());
    assert_eq!(show_with("(map (fn [q] (count (tool/search {:q q}))) [\"a\" \"b\"])", opts), "[2 2]");
}

#[test]
fn tool_errors() {
    let (opts, _) = with_tools(RunOptions::default());
    assert_eq!(show_with("(tool/boom {})", opts), "!tool_error: Tool 'boom' failed: upstream exploded");
    let (opts, _) = with_tools(RunOptions::default());
    let out = show_with("(tool/search \"cats\")", opts);
    assert!(out.starts_with("!invalid_tool_args: Tool calls require named arguments"), "{out}");
    let (opts, calls) = with_tools(RunOptions::default());
    // unknown tools are reported before any tool runs
    let out = show_with("(tool/get_user {:id 1}) (tool/nope {})", opts);
    assert_eq!(out, "!unknown_tool: Unknown tool: nope. Available tools: boom, get_user, search");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(show("(tool/x)"), "!unknown_tool: Unknown tool: x. No tools available.");
}

#[test]
fn ambiguous_fallback_is_an_error() {
    let (opts, _) = with_tools(ctx(serde_json::json!({"search": [1]})));
    let out = show_with("(count search)", opts);
    assert!(out.contains("ambiguous reference search"), "{out}");
}

#[test]
fn undefined_names_are_reported_before_running() {
    check_err(&[
        ("(foo 1)", "unbound_var", "Undefined variable: foo"),
        ("(+ a b)", "unbound_var", "Undefined variables: a (line 1, column 4), b (line 1, column 6)"),
        ("(swap! x inc)", "unbound_var", "no mutable state"),
        ("(rand-nth [1 2 3])", "unbound_var", "randomness is not available"),
        ("(shuffle [1 2 3])", "unbound_var", "choose deterministically"),
        ("(replicate 2 :x)", "unbound_var", "write (repeat n x)"),
        ("(identical? :a :a)", "unbound_var", "compare with ="),
        ("(str/capitalize-all \"x\")", "unbound_var", "not a function of clojure.string"),
        ("(bogus.ns/f 1)", "unbound_var", "unknown namespace"),
        ("(.fooBar \"s\")", "unsupported_method", "Unsupported method '.fooBar'"),
    ]);
}

#[test]
fn undefined_names_suggest_the_closest_names_in_scope() {
    check_err(&[
        ("(fitler odd? [1 2])", "unbound_var", "fitler; did you mean `filter`?"),
        ("(let [total 5] (+ totl 1))", "unbound_var", "did you mean `total`?"),
        ("(defn compute-total [x] x) (compute-totl 1)", "unbound_var", "did you mean `compute-total`?"),
        ("(str/uper-case \"a\")", "unbound_var", "did you mean `str/upper-case`?"),
        ("(set/uinon #{1} #{2})", "unbound_var", "did you mean `set/union`?"),
        ("(str/union #{1} #{2})", "unbound_var", "did you mean `set/union`?"),
        ("(+ q 1)", "unbound_var", "Undefined variable: q"),
        ("(+ q r)", "unbound_var", "Undefined variables: q (line 1, column 4), r (line 1, column 6)"),
    ]);
    // one undefined name is located by the error's span (every surface renders it)
    let o = go("(+ q 1)");
    let span = o.error().and_then(|e| e.span).expect("a located error");
    assert_eq!((span.line, span.column), (1, 4));
    let (opts, _) = with_tools(ctx(serde_json::json!({"user_id": 7})));
    let out = show_with("(inc user-idd)", opts.clone());
    assert!(out.contains("did you mean `data/user_id`?"), "{out}");
    let out = show_with("(tool/serch {:q 1})", opts);
    assert!(out.contains("Did you mean `tool/search`?"), "{out}");
    let o = go("(println \"side effect\") (undefined-thing)");
    assert!(o.prints.is_empty(), "nothing runs when analysis fails");
}

#[test]
fn memory_persists_and_rolls_back() {
    let first = run("(def x 41) (defn add1 [n] (inc n))", RunOptions::default());
    assert!(first.is_ok());
    let second = run("(add1 x)", RunOptions { memory: first.memory.clone(), ..RunOptions::default() });
    assert_eq!(second.printed, "42");
    // an error rolls definitions back
    let failed =
        run("(def x 100) (undefined-fn)", RunOptions { memory: first.memory.clone(), ..RunOptions::default() });
    assert!(!failed.is_ok());
    let failed = run("(def x 100) (/ 1 0)", RunOptions { memory: first.memory.clone(), ..RunOptions::default() });
    assert!(matches!(failed.result, RunResult::Error(_)));
    assert_eq!(failed.memory.get("x").map(|v| v.to_string()), Some("41".into()));
    // docstrings are kept
    let d = run("(defn f \"adds one\" [n] (inc n))", RunOptions::default());
    assert_eq!(d.memory.doc("f").map(|s| s.to_string()), Some("adds one".into()));
}

#[test]
fn turn_history() {
    let opts = RunOptions { turn_history: vec![Value::Int(1), Value::Int(2), Value::Int(3)], ..RunOptions::default() };
    assert_eq!(show_with("[*1 *2 *3]", opts), "[3 2 1]");
    assert_eq!(show("*1"), "nil");
}

#[test]
fn clojure_aliases_resolve() {
    check(&[("(clojure.core/inc 1)", "2"), ("(core/count [1])", "1")]);
}

#[test]
fn discovery_forms() {
    let o = run("(doc map)", RunOptions::default());
    assert_eq!(o.printed, "nil");
    assert!(o.prints[0].starts_with("clojure.core/map\n"), "{:?}", o.prints);
    let o = run("(defn area \"circle area\" [r] (* 3.14 r r)) (doc area)", RunOptions::default());
    assert!(o.prints[0].contains("circle area"), "{:?}", o.prints);
    assert_eq!(show("(:name (meta str/join))"), "\"join\"");
    assert_eq!(show("(meta no-such-thing)"), "nil");
    assert_eq!(show("(first (apropos \"frequencies\"))"), "\"frequencies - Map from item to how often it occurs.\"");
    assert_eq!(show("(apropos \"qqqq\")"), "[]");
    // names first; a doc word that merely contains the query ("already") is no match
    let hits = run("(apropos \"read\" {:limit 50})", RunOptions::default());
    let RunResult::Value(Value::Vector(hits)) = &hits.result else { panic!("{:?}", hits.result) };
    let hits: Vec<&str> = hits.iter().map(|h| h.as_str().unwrap()).collect();
    assert!(!hits.is_empty());
    for hit in &hits {
        let (name, doc) = hit.split_once(" - ").unwrap();
        let doc_word = doc.to_lowercase().split(|c: char| !c.is_alphanumeric()).any(|w| w.starts_with("read"));
        assert!(name.contains("read") || doc_word, "{hit}");
    }
    assert!(show("(apropos \"\")").starts_with("!runtime_error"));
    assert_eq!(show("(count (dir str {:limit 3}))"), "3");
    assert_eq!(show("(def x 1) (dir user)"), "[\"x\"]");
    assert!(show("(all-ns)").contains("\"clojure.string\""));
    assert_eq!(show("(ns-name set)"), "\"clojure.set\"");
    assert!(show("(dir nope)").starts_with("!runtime_error: dir: unknown namespace nope"));
}
