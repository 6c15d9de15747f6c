//! -> ->> as-> cond-> cond->> some-> some->>.
mod common;
use common::*;

#[test]
fn threading_macros() {
    check(&[
        ("(-> 5 inc (* 2))", "12"),
        ("(->> [1 2 3 4] (filter even?) (map inc))", "[3 5]"),
        ("(->> (range 10) (map #(* % %)) (reduce +))", "285"),
        ("(-> {:a {:b 5}} :a :b)", "5"),
        ("(-> 1 (+ 2) (- 10))", "-7"),
        ("(->> 1 (+ 2) (- 10))", "7"),
        ("(as-> 5 x (+ x 1) (* x x))", "36"),
        ("(cond-> 1 true inc false (* 100) true (* 2))", "4"),
        ("(cond->> [1 2 3] true (map inc) false (filter odd?))", "[2 3 4]"),
        ("(some-> {:a {:b 1}} :a :b inc)", "2"),
        ("(some-> {:a nil} :a :b inc)", "nil"),
        ("(some->> [1 2] (map inc) (reduce +))", "5"),
        ("(some-> false not)", "true"),
    ]);
}

#[test]
fn threading_errors() {
    check_err(&[
        ("(->)", "invalid_form", "initial value"),
        ("(-> 1 ())", "invalid_form", "empty list"),
        ("(cond-> 1 true)", "invalid_form", "pairs"),
        ("(-> nil (1))", "not_callable", "not callable"),
    ]);
}
