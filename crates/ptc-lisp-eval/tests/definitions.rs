//! def, defn, defonce, fn, let, loop/recur.
mod common;
use common::*;

#[test]
fn def_and_defn() {
    check(&[
        ("(def x 10)", "#'x"),
        ("(def x 10) (* x x)", "100"),
        ("(def x \"the x\" 3) x", "3"),
        ("(defn sq [x] (* x x)) (sq 7)", "49"),
        ("(defn sq \"squares\" [x] (* x x)) (sq 3)", "9"),
        ("(defn f [] 42) (f)", "42"),
        ("(defn fact [n] (if (<= n 1) 1 (* n (fact (dec n))))) (fact 20)", "2432902008176640000"),
        ("(defonce y 1) (defonce y 2) y", "1"),
        ("(def map {:shadowed true}) map", "{:shadowed true}"),
        ("(defn add [a b & more] (apply + a b more)) (add 1 2 3 4)", "10"),
        ("(def f (fn [x] (+ x 1))) (f 1)", "2"),
    ]);
}

#[test]
fn fn_forms() {
    check(&[
        ("((fn [x] (* 2 x)) 21)", "42"),
        ("((fn [a & more] [a more]) 1 2 3)", "[1 (2 3)]"),
        ("((fn [a & more] [a more]) 1)", "[1 nil]"),
        ("((fn fib [n] (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2))))) 20)", "6765"),
        ("(#(* % %) 5)", "25"),
        ("(#(+ %1 %2) 3 4)", "7"),
        ("(#(vector %1 %&) 1 2 3)", "[1 (2 3)]"),
        ("(#(str \"x\"))", "\"x\""),
        ("(fn [x y] x)", "#fn[x y]"),
        ("(let [x 10 f (fn [y] (+ x y))] (f 5))", "15"),
        ("(let [a 1] (let [f (fn [] (fn [] a))] ((f))))", "1"),
        ("(let [make (fn [n] (fn [x] (+ x n))) add5 (make 5)] (map add5 [1 2]))", "[6 7]"),
        ("(defn counter [n] (fn [] n)) ((counter 3))", "3"),
    ]);
}

#[test]
fn let_and_loop() {
    check(&[
        ("(let [x 1 y (+ x 1)] [x y])", "[1 2]"),
        ("(let [x 1] (let [x 2] x))", "2"),
        ("(let [x 1] (let [x 2] x) x)", "1"),
        ("(let [] 5)", "5"),
        ("(loop [i 0 acc 0] (if (< i 5) (recur (inc i) (+ acc i)) acc))", "10"),
        ("(loop [n 10 a 0 b 1] (if (zero? n) a (recur (dec n) b (+ a b))))", "55"),
        ("((fn [n acc] (if (= n 0) acc (recur (dec n) (* acc n)))) 5 1)", "120"),
        ("(loop [[x & xs] [1 2 3] acc 0] (if x (recur xs (+ acc x)) acc))", "6"),
        ("(defn f [& xs] (if (seq xs) (recur (rest xs)) :done)) (f 1 2)", ":done"),
    ]);
}

#[test]
fn malformed_definitions_are_explained() {
    check_err(&[
        ("(let [x] x)", "invalid_form", "even number"),
        ("(let x 1)", "invalid_form", "binding vector"),
        ("(fn x)", "invalid_form", "parameter vector"),
        ("(fn ([x] x) ([x] y))", "invalid_form", "two arities with 1 parameters"),
        ("(fn ([x & r] x) ([x y & z] y))", "invalid_form", "only one variadic arity"),
        ("(fn ([x y z] x) ([x & r] y))", "invalid_form", "more parameters than the variadic"),
        ("((fn ([x] x) ([x y] y)))", "arity_error", "it takes 1 or 2"),
        ("(def)", "invalid_form", "usage"),
        ("(def tool/x 1)", "invalid_form", "protected namespace"),
        ("(loop [i 0] (inc (recur i)))", "invalid_form", "tail position"),
        ("(recur 1)", "invalid_form", "tail position"),
        ("(loop [i 0] (recur))", "invalid_form", "binds 1"),
        ("((fn [x] x))", "arity_error", "expects 1"),
        ("((fn [x] x) 1 2)", "arity_error", "expects 1"),
        ("(%)", "invalid_placeholder", "#("),
        ("(try 1 (catch Exception e 2))", "invalid_form", "try/catch"),
        ("(. \"s\" toUpperCase)", "invalid_form", ".method"),
    ]);
}

#[test]
fn letfn_functions_reach_each_other() {
    // more cases, checked against Clojure, in fixtures/conformance/letfn.txt
    check(&[
        (
            "(letfn [(ev? [n] (if (zero? n) true (od? (dec n)))) (od? [n] (if (zero? n) false (ev? (dec n))))] [(ev? 10) (od? 7) (ev? 7)])",
            "[true true false]",
        ),
        // a group function as a value, inside the group and outside it
        ("(letfn [(f [xs] (mapv g xs)) (g [y] (* y 2))] (f [1 2 3]))", "[2 4 6]"),
        (
            "(letfn [(ev? [n] (if (zero? n) true (od? (dec n)))) (od? [n] (not (ev? n)))] (filter ev? (range 6)))",
            "[0 2 4]",
        ),
        // values from the surroundings, each function capturing its own
        (
            "(let [k 10 step 3] (letfn [(up [x] (if (> x k) x (over (+ x step)))) (over [x] (up (inc x)))] (up 0)))",
            "12",
        ),
        // a closure made inside a group function calls back into the group
        ("(letfn [(a [x] (if (> x 20) x (b (* 2 x)))) (b [x] (first (map (fn [y] (a (+ y x))) [1])))] (a 1))", "31"),
        // arities, recur, a name written twice (the later one wins, as in Clojure)
        ("(letfn [(f ([x] (f x 1)) ([x y] (+ x y)))] [(f 1) (f 2 3)])", "[2 5]"),
        ("(letfn [(f [x] (if (pos? x) (recur (dec x)) (g))) (g [] :g)] (f 5))", ":g"),
        ("(letfn [(f [] 1) (f [] 2)] (f))", "2"),
        // a parameter shadows a group name
        ("(letfn [(f [g] (g 1)) (g [x] :group)] (f inc))", "2"),
        // the functions outlive the form
        ("(def h (letfn [(f [x] (if (< x 3) (g (inc x)) x)) (g [x] (f (* 2 x)))] f)) (h 0)", "6"),
    ]);
}
