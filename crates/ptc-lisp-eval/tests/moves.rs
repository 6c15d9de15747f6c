//! Last-use moves (a local read once is moved out of its slot): every construct that runs
//! code more than once keeps seeing its locals.
mod common;
use common::*;

#[test]
fn single_reads_in_repeating_constructs_keep_their_values() {
    check(&[
        // a local bound outside a loop, read once inside it
        (
            "(let [m {:a 1}] (loop [i 0 acc []] (if (< i 3) (recur (inc i) (conj acc m)) acc)))",
            "[{:a 1} {:a 1} {:a 1}]",
        ),
        // a parameter read once inside a loop of the function body
        ("((fn [m] (loop [i 0 acc 0] (if (< i 3) (recur (inc i) (+ acc (:a m))) acc))) {:a 2})", "6"),
        ("((fn [v] (loop [i 0 out []] (if (< i 2) (recur (inc i) (into out v)) out))) [1 2])", "[1 2 1 2]"),
        // for: outer bindings are read once per inner element
        ("(for [x [1 2] y [:a :b]] [x y])", "[[1 :a] [1 :b] [2 :a] [2 :b]]"),
        ("(let [v [9]] (for [x [1 2]] (conj v x)))", "[[9 1] [9 2]]"),
        ("(for [x [[1] [2]] :let [y (conj x 0)] z [:p :q]] [y z])", "[[[1 0] :p] [[1 0] :q] [[2 0] :p] [[2 0] :q]]"),
        ("(let [acc []] (doseq [x [1 2]] (conj acc x)) acc)", "[]"),
        // a closure captures the local; the capture is a read
        ("(let [v [1]] (let [f (fn [] v)] [(f) (f) (conj v 2)]))", "[[1] [1] [1 2]]"),
        ("(let [v [1] f (fn [x] (conj v x))] [(f 2) (f 3)])", "[[1 2] [1 3]]"),
        // map over a function whose parameter is read once
        ("(map (fn [m] (assoc m :b 2)) [{:a 1} {:a 2}])", "[{:a 1 :b 2} {:a 2 :b 2}]"),
        // recursion through recur in a fn body
        ("((fn [m n] (if (zero? n) m (recur (assoc m n n) (dec n)))) {} 3)", "{1 1 2 2 3 3}"),
        // the original stays intact when a derived value is built from a single read
        ("(let [a [1 2] b (conj a 3)] b)", "[1 2 3]"),
        ("(let [a [1 2]] [(conj a 3) a])", "[[1 2 3] [1 2]]"),
        ("(def base {:x 1}) (let [m base] (assoc m :y 2)) base", "{:x 1}"),
        // :or defaults read locals without moving them
        ("(let [d 5 {:keys [a] :or {a d}} {}] [a d])", "[5 5]"),
        ("(let [d [5] {:keys [a] :or {a d}} {}] a)", "[5]"),
        // reduce with assoc/update over a parameter read once
        ("(reduce (fn [m [k v]] (update m k (fnil + 0) v)) {} [[:a 1] [:b 2] [:a 3]])", "{:a 4 :b 2}"),
        ("(let [init {:n 0}] [(reduce (fn [m x] (update m :n + x)) init [1 2 3]) init])", "[{:n 6} {:n 0}]"),
        // while / dotimes desugar to loops
        ("(let [v [1]] (dotimes [i 2] (conj v i)) v)", "[1]"),
        // if-let / when-let read their temporary twice
        ("(if-let [x (get {:a [1]} :a)] (conj x 2) :none)", "[1 2]"),
        ("(when-some [[a b] [1 2]] (+ a b))", "3"),
    ]);
}

#[test]
fn last_reads_after_earlier_reads_and_in_branches_keep_values() {
    check(&[
        // several reads: only the last moves, and the earlier ones still see the value
        ("(reduce (fn [m w] (assoc m w (inc (get m w 0)))) {} [\"a\" \"b\" \"a\"])", "{\"a\" 2 \"b\" 1}"),
        ("(let [v [1 2]] [(count v) (conj v 3) (count v)])", "[2 [1 2 3] 2]"),
        ("(let [v [1 2]] [(conj v 3) (conj v 4)])", "[[1 2 3] [1 2 4]]"),
        ("(let [m {:a 1}] (= m (assoc m :b 2)))", "false"),
        ("(let [m {:a 1}] [(assoc m :b 2) (:a m)])", "[{:a 1 :b 2} 1]"),
        // exclusive branches, each the last read
        ("(loop [i 0 m {}] (if (< i 3) (recur (inc i) (assoc m i (* i i))) m))", "{0 0 1 1 2 4}"),
        ("(let [v [1]] [(if (seq v) (conj v 2) v) v])", "[[1 2] [1]]"),
        ("(let [v [1]] (case (count v) 1 (conj v :one) 2 (conj v :two) v))", "[1 :one]"),
        ("(let [v [1]] (case (count v) 3 (conj v :three) nil) (conj v 0))", "[1 0]"),
        ("(let [v [1] w (if (= 1 (count v)) (conj v 2) (conj v 3))] [v w])", "[[1] [1 2]]"),
        ("(let [v [1]] (and (seq v) (conj v 2)))", "[1 2]"),
        ("(let [v [1]] (or (get v 5) (conj v 2) v))", "[1 2]"),
        // a read in the loop body of a binding from outside stays a clone
        (
            "(let [v [1]] (loop [i 0 out []] (if (< i 2) (recur (inc i) (conj out (conj v i))) [out v])))",
            "[[[1 0] [1 1]] [1]]",
        ),
        // a closure made before the last read keeps its capture
        ("(let [v [1] f (fn [] v)] [(conj v 2) (f)])", "[[1 2] [1]]"),
    ]);
}

#[test]
fn sorting_with_comparator_functions() {
    check(&[
        ("(sort-by :a #(compare %2 %1) [{:a 1} {:a 3} {:a 2}])", "[{:a 3} {:a 2} {:a 1}]"),
        ("(sort-by :a #(compare %1 %2) [{:a 1} {:a 3} {:a 2}])", "[{:a 1} {:a 2} {:a 3}]"),
        ("(sort #(compare %2 %1) [3 1 2 5 4])", "[5 4 3 2 1]"),
        ("(sort (fn [a b] (compare b a)) [\"b\" \"a\" \"c\"])", "[\"c\" \"b\" \"a\"]"),
        // stable: equal keys keep their order, also when descending
        ("(map :id (sort-by :k #(compare %2 %1) [{:id 1 :k 1} {:id 2 :k 2} {:id 3 :k 1} {:id 4 :k 2}]))", "[2 4 1 3]"),
        (
            "(sort-by (juxt :p :a) #(compare %2 %1) [{:p 1 :a 5} {:p 2 :a 1} {:p 1 :a 7}])",
            "[{:a 1 :p 2} {:a 7 :p 1} {:a 5 :p 1}]",
        ),
        // a comparator closing over something, or doing more, is called as written
        ("(let [k -1] (sort #(* k (compare %1 %2)) [1 3 2]))", "[3 2 1]"),
        ("(sort > [1 3 2])", "[3 2 1]"),
        ("(sort #(< %1 %2) [3 1 2])", "[1 2 3]"),
        ("(sort (fn [a b] (- (count a) (count b))) [\"ccc\" \"a\" \"bb\"])", "[\"a\" \"bb\" \"ccc\"]"),
    ]);
}
