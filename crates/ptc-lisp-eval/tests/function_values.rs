//! Function values as an embedder sees them: opaque, with a kind to ask about.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use ptc_lisp_eval::{Engine, FnHost, Function, FunctionKind, Limits, Value};

fn kind_of(src: &str) -> String {
    let host = FnHost::new().with_tool("lookup", Ok);
    let out = Engine::new(Limits::default()).eval_with(src, &host);
    match out.value() {
        Some(Value::Func(f)) => format!("{:?}", f.kind()),
        other => panic!("{src}: expected a function, got {other:?} ({:?})", out.error()),
    }
}

#[test]
fn each_kind_of_function_value_is_reported() {
    assert_eq!(kind_of("inc"), "Builtin(\"inc\")");
    assert_eq!(kind_of("(fn [x] x)"), "Closure { name: None, captures: 0 }");
    assert_eq!(kind_of("(let [y 1] (fn add-y [x] (+ x y)))"), "Closure { name: Some(\"add-y\"), captures: 1 }");
    assert_eq!(kind_of("(partial + 1)"), "Native(\"partial\")");
    assert_eq!(kind_of("tool/lookup"), "Tool(\"lookup\")");
}

#[test]
fn builtin_and_tool_values_made_outside_behave_like_the_programs_own() {
    let Some(inc) = ptc_lisp_eval::registry::lookup("inc") else { panic!("inc is a builtin") };
    let f = Function::builtin(inc);
    assert_eq!(f.kind(), FunctionKind::Builtin("inc"));
    let mut memory = ptc_lisp_eval::Memory::new();
    memory.insert("f", Value::Func(Arc::new(f)));
    memory.insert("t", Value::Func(Arc::new(Function::tool("lookup"))));
    let host = FnHost::new().with_tool("lookup", |args| Ok(Value::vector([args])));
    let input = ptc_lisp_eval::RunInput::new().with_memory(memory);
    let out = Engine::new(Limits::default()).eval("[(f 1) (t {:id 2})]", input, &host, &ptc_lisp_eval::Cancel::new());
    // the host sees tool keys (strings), as from a program's own `(tool/lookup {:id 2})`
    assert_eq!(out.printed, r#"[2 [{"id" 2}]]"#, "{:?}", out.error());
}

fn printed(src: &str) -> String {
    let out = Engine::new(Limits::default()).eval_with(src, &FnHost::new());
    match out.error() {
        None => out.printed,
        Some(e) => format!("error {}: {}", e.kind.as_str(), e.message),
    }
}

#[test]
fn lazy_sequences_and_reduced_are_values_of_their_own_not_functions() {
    assert_eq!(printed("(fn? (range))"), "false");
    assert_eq!(printed("(fn? (iterate inc 0))"), "false");
    assert_eq!(printed("(fn? (reduced 1))"), "false");
    assert_eq!(printed("(fn? inc)"), "true");
    assert_eq!(printed("(type (range))"), ":lazy-seq");
    assert_eq!(printed("(type (map inc (range)))"), ":lazy-seq");
    assert_eq!(printed("(type (reduced 1))"), ":reduced");
    assert_eq!(printed("(reduced? (reduced 1))"), "true");
    assert_eq!(printed("(reduced? (range))"), "false");
    assert_eq!(printed("(str (reduced 1))"), "\"#<reduced>\"");
    assert_eq!(printed("(= (reduced 1) (reduced 1))"), "true");
    assert_eq!(printed("(= (reduced 1) (reduced 2))"), "false");
    assert_eq!(printed("(seq? (take 3 (range)))"), "true");
    assert_eq!(printed("(reduce (fn [a x] (if (> x 2) (reduced a) (+ a x))) 0 (range))"), "3");
    assert!(printed("((range) 1)").starts_with("error "), "{}", printed("((range) 1)"));
}

#[test]
fn a_lazy_sequence_kept_in_memory_is_a_lazy_value() {
    let out = Engine::new(Limits::default()).eval_with("(def r (range)) (take 2 r)", &FnHost::new());
    assert_eq!(out.printed, "[0 1]", "{:?}", out.error());
    match out.memory.get("r") {
        Some(v @ Value::Lazy(l)) => {
            assert!(l.is_infinite());
            assert_eq!(l.label(), "(range)");
            assert_eq!(ptc_lisp_eval::to_clojure(v), "#<infinite (range)>");
            assert!(v.equiv(&v.clone()), "a lazy sequence equals itself");
        }
        other => panic!("expected a lazy sequence, got {other:?}"),
    }
}
