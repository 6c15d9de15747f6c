//! Printed representation (`to_clojure`), snapshot-tested.
mod common;
use common::*;

#[test]
fn printed_forms() {
    let cases = [
        "nil",
        "true",
        "42",
        "-7",
        "5.0",
        "(/ 10 3)",
        "3.3",
        "1e20",
        "##Inf",
        "##-Inf",
        "##NaN",
        "\"a\\\"b\\nc\"",
        ":kw",
        "\\a",
        "[1 [2 3] []]",
        "{:b 2 :a 1}",
        "{\"z\" 1 :a 2 3 4}",
        "#{3 1 2}",
        "#\"\\d+\"",
        "(fn [x y] x)",
        "(fn [[a b] {:keys [c]}] a)",
        "(def v 1)",
        "'sym",
        "inc",
        "(/ 0.1 3)",
        "(* 1.0 100000)",
        "{:nested {:deep [1 {:x nil}]}}",
    ];
    let mut out = String::new();
    for c in cases {
        out.push_str(&format!("{c:<40} => {}\n", show(c)));
    }
    insta::assert_snapshot!(out);
}

#[test]
fn exponential_values_print_bounded() {
    // 2^60 leaves when printed, 60 nodes in memory: printing stops at the result cap
    let o = go("(reduce (fn [a _] [a a]) [] (range 60))");
    let shown = show_outcome(&o);
    assert!(shown.starts_with("!output_too_large"), "{shown}");
}

#[test]
fn preview() {
    let v = go("(range 100)");
    let p = ptc_lisp_eval::repl_preview(v.value().unwrap(), 250).unwrap();
    assert!(p.starts_with("user=> [0 1 2"), "{p}");
    assert!(p.contains("(50/100)"), "{p}");
    assert_eq!(ptc_lisp_eval::repl_preview(go("nil").value().unwrap(), 250), None);
}
