//! if, if-not, when, when-not, cond, case, condp, if-let & co, and/or, do.
mod common;
use common::*;

#[test]
fn branching() {
    check(&[
        ("(if true 1 2)", "1"),
        ("(if false 1 2)", "2"),
        ("(if nil 1)", "nil"),
        ("(if 0 :t :f)", ":t"),
        ("(if [] :t :f)", ":t"),
        ("(if-not false 1 2)", "1"),
        ("(when true 1 2 3)", "3"),
        ("(when false 1)", "nil"),
        ("(when-not false :x)", ":x"),
        ("(cond (< 1 0) :neg (> 1 0) :pos :else :zero)", ":pos"),
        ("(cond false 1)", "nil"),
        ("(case 2 1 :one 2 :two :other)", ":two"),
        ("(case 9 1 :one 2 :two :other)", ":other"),
        ("(case :b (:a :b) :ab :c :c)", ":ab"),
        ("(case \"x\" \"x\" 1 \"y\" 2)", "1"),
        ("(condp = 2 1 :one 2 :two :none)", ":two"),
        ("(condp = 5 1 :one :none)", ":none"),
        ("(condp < 5 10 :big 3 :medium :small)", ":medium"),
        ("(if-let [x 1] (inc x) :no)", "2"),
        ("(if-let [x nil] (inc x) :no)", ":no"),
        ("(if-let [[a b] [1 2]] (+ a b) :no)", "3"),
        ("(when-let [x 5] (* x 2))", "10"),
        ("(if-some [x false] [:some x] :none)", "[:some false]"),
        ("(if-some [x nil] :some :none)", ":none"),
        ("(when-some [x 0] (inc x))", "1"),
        ("(when-first [x [1 2 3]] (* 10 x))", "10"),
        ("(when-first [x []] :never)", "nil"),
    ]);
}

#[test]
fn logic_and_do() {
    check(&[
        ("(do)", "nil"),
        ("(do 1 2 3)", "3"),
        ("(and)", "true"),
        ("(and 1 2)", "2"),
        ("(and 1 nil 2)", "nil"),
        ("(or)", "nil"),
        ("(or nil false)", "false"),
        ("(or false nil 3 4)", "3"),
        ("(comment (anything))", "nil"),
        ("'foo", "foo"),
        ("(quote bar)", "bar"),
    ]);
}

#[test]
fn malformed_conditionals() {
    check_err(&[
        ("(if)", "invalid_form", "usage"),
        ("(if 1 2 3 4)", "invalid_form", "usage"),
        ("(cond 1)", "invalid_form", "pairs"),
        ("(if-let [x 1 y 2] x)", "invalid_form", "one binding"),
        ("(case)", "invalid_form", "usage"),
        // as Clojure: no match and no default is an error, not nil
        ("(case 9 1 :one)", "runtime_error", "no clause matches 9 and there is no default"),
        ("(case (count [1 2]) 1 :one 3 :three)", "runtime_error", "add a default as the last form"),
    ]);
}
