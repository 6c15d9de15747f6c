//! for and doseq.
mod common;
use common::*;

#[test]
fn for_comprehensions() {
    check(&[
        ("(for [x [1 2 3]] (* x x))", "[1 4 9]"),
        ("(for [x [1 2] y [:a :b]] [x y])", "[[1 :a] [1 :b] [2 :a] [2 :b]]"),
        ("(for [x (range 10) :when (even? x)] x)", "[0 2 4 6 8]"),
        ("(for [x (range 10) :while (< x 4)] x)", "[0 1 2 3]"),
        ("(for [x [1 2 3] :let [y (* x 10)]] y)", "[10 20 30]"),
        ("(for [[k v] {:a 1 :b 2}] [v k])", "[[1 :a] [2 :b]]"),
        ("(for [x [1 2 3] y [1 2 3] :when (< x y)] [x y])", "[[1 2] [1 3] [2 3]]"),
        ("(for [x [1 2] :while (< x 2) y [1 2]] [x y])", "[[1 1] [1 2]]"),
        ("(for [x []] x)", "[]"),
        ("(for [c \"ab\"] c)", "[\"a\" \"b\"]"),
    ]);
}

#[test]
fn doseq_prints_and_returns_nil() {
    let o = go("(doseq [x [1 2 3]] (println \"item\" x))");
    assert_eq!(o.printed, "nil");
    assert_eq!(o.prints, vec!["item 1", "item 2", "item 3"]);
}
