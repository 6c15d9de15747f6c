//! Sequential and map destructuring, with flexible key access.
mod common;
use common::*;

#[test]
fn sequential() {
    check(&[
        ("(let [[a b] [1 2]] (+ a b))", "3"),
        ("(let [[a b c] [1 2]] [a b c])", "[1 2 nil]"),
        ("(let [[a _ c] [1 2 3]] [a c])", "[1 3]"),
        ("(let [[a [b c]] [1 [2 3]]] [a b c])", "[1 2 3]"),
        ("(let [[a & rest] [1 2 3]] [a rest])", "[1 (2 3)]"),
        ("(let [[a & rest] [1]] [a rest])", "[1 nil]"),
        ("(let [[& [y]] [5]] y)", "5"),
        ("(let [[a b :as all] [1 2 3]] [a b all])", "[1 2 [1 2 3]]"),
        ("(let [[a b] nil] [a b])", "[nil nil]"),
        ("(let [[a b] \"xy\"] [a b])", "[\"x\" \"y\"]"),
    ]);
}

#[test]
fn maps() {
    check(&[
        ("(let [{:keys [a b]} {:a 1}] [a b])", "[1 nil]"),
        ("(let [{:keys [a b] :or {b 5}} {:a 1}] [a b])", "[1 5]"),
        ("(let [{:strs [a]} {\"a\" 1}] a)", "1"),
        ("(let [{n :name} {:name \"x\"}] n)", "\"x\""),
        ("(let [{:keys [a] :as m} {:a 1 :z 2}] [a m])", "[1 {:a 1 :z 2}]"),
        ("(let [{{:keys [c]} :b} {:b {:c 3}}] c)", "3"),
        ("(let [{[x y] :pt} {:pt [1 2]}] (+ x y))", "3"),
        ("((fn [{:keys [x y]}] (* x y)) {:x 3 :y 4})", "12"),
        ("(let [{:keys [a]} nil] a)", "nil"),
        // flexible access: keyword patterns find string and snake_case keys
        ("(let [{:keys [user-id]} {\"user_id\" 7}] user-id)", "7"),
        ("(let [{:keys [name]} {\"name\" \"ann\"}] name)", "\"ann\""),
    ]);
}

#[test]
fn mismatches() {
    check_err(&[
        ("(let [[a] 5] a)", "destructure_error", "vector pattern"),
        ("(let [{:keys [a]} 5] a)", "destructure_error", "map pattern"),
        ("(let [{:syms [a]} {}] a)", "invalid_form", ":syms"),
        ("(let [5 1] 1)", "invalid_form", "cannot bind"),
    ]);
}

#[test]
fn keyword_arguments() {
    check(&[
        ("((fn [a b & {:keys [c]}] [a b c]) 1 2 :c 3)", "[1 2 3]"),
        ("((fn [& {:keys [x] :or {x 9}}] x))", "9"),
        ("((fn [& {:keys [x]}] x) {:x 4})", "4"),
    ]);
}
