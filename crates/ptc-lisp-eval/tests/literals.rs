//! Vector and map literals with computed parts: the value does not depend on the order
//! the keys are written in, a later duplicate key wins, and the items of a vector stay in order.
mod common;
use common::*;

#[test]
fn map_literals_sort_their_keys_and_keep_the_last_duplicate() {
    check(&[
        ("(let [x 1] {:c x :a (inc x) :b 0})", "{:a 2 :b 0 :c 1}"),
        ("(let [k :a] {k 1 :b 2 :a 3})", "{:a 3 :b 2}"),
        ("(let [k :a] {:a 1 k 2})", "{:a 2}"),
        ("(let [k \"a\"] {k 1 :a 2 \"b\" 3})", "{:a 2 \"a\" 1 \"b\" 3}"),
        ("(let [ks (range 20)] (count {(nth ks 19) 1 (nth ks 3) 2 (nth ks 7) 3}))", "3"),
        (
            "(let [x 2] (keys {:z x :y x :x x :w x :v x :u x :t x :s x :r x :q x :p x :o x :n x :m x :l x :k x :j x}))",
            "[:j :k :l :m :n :o :p :q :r :s :t :u :v :w :x :y :z]",
        ),
        (
            "(let [x 2] (get {:z x :y x :x x :w x :v x :u x :t x :s x :r x :q x :p x :o x :n x :m x :l x :k x :j 7} :j))",
            "7",
        ),
    ]);
}

#[test]
fn vector_literals_of_computed_items() {
    check(&[
        ("(let [x 1] [x (inc x) [x]])", "[1 2 [1]]"),
        ("(let [x 1] (count [x x x x x x x x x x x x x x x x x x x x x x x x x x x x x x x x x x x]))", "35"),
        (
            "(let [x 1] (conj [x x x x x x x x x x x x x x x x x x x x x x x x x x x x x x x x x] 9))",
            "[1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 9]",
        ),
    ]);
}

#[test]
fn map_literals_with_constant_keys_evaluate_their_values_in_the_order_written() {
    // the keys are put in order once, at analysis; the values still run as written
    let o = go("(let [x 1] {:z (do (println \"z\") x) :a (do (println \"a\") 2) \"m\" (do (println \"m\") 3)})");
    assert_eq!(o.prints, vec!["z", "a", "m"]);
    assert_eq!(o.printed, "{:a 2 :z 1 \"m\" 3}");
    // the first value that fails, in the order written, is the error
    check_err(&[("(let [s \"x\"] {:z (inc s) :a (first 1)})", "type_error", "inc: expected a number")]);
}

#[test]
fn keyword_and_string_lookups_prefer_their_own_kind_then_the_other() {
    // one scan of a small map finds both; the key of the lookup's own kind wins
    let small = "{\"a\" 1 :a 2 \"b\" 3 :c 4 \"long_name_key\" 5 :long-name-key 6 \"only_str\" 7}";
    let large = "(into {\"a\" 1 :a 2 \"b\" 3 :c 4 \"long_name_key\" 5 :long-name-key 6 \"only_str\" 7} (map (fn [i] [i i]) (range 20)))";
    for m in [small, large] {
        check(&[
            (&format!("(:a {m})"), "2"),
            (&format!("(get {m} \"a\")"), "1"),
            (&format!("(:b {m})"), "3"),
            (&format!("(get {m} \"c\")"), "4"),
            (&format!("(:long-name-key {m})"), "6"),
            (&format!("(get {m} \"long_name_key\")"), "5"),
            (&format!("(:only-str {m})"), "7"),
            (&format!("(:missing {m} :none)"), ":none"),
        ]);
    }
}

/// A Java static field in parentheses reads as the field, as Clojure takes it.
#[test]
fn static_fields_in_parentheses_are_their_values() {
    check(&[
        ("(Integer/MAX_VALUE)", "2147483647"),
        ("(Long/MIN_VALUE)", "-9223372036854775808"),
        ("(reduce min (Long/MAX_VALUE) [3 1 2])", "1"),
        ("(Math/PI)", "3.141592653589793"),
    ]);
}
