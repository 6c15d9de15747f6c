//! `update` changes a value in place when the map is not shared, and never a map that is.
mod common;
use common::*;

#[test]
fn update_keeps_shared_maps_and_flexible_keys() {
    check(&[
        ("(update {:a 1} :a inc)", "{:a 2}"),
        ("(update {:a 1} :a + 10 100)", "{:a 111}"),
        ("(update {:a 1} :b (fnil inc 0))", "{:a 1 :b 1}"),
        ("(let [m {:a 1}] [(update m :a inc) m])", "[{:a 2} {:a 1}]"),
        // a large map (not a small sorted vector), shared and not
        ("(let [m (zipmap (range 40) (range 40)) n (update m 7 * 10)] [(get m 7) (get n 7) (count n)])", "[7 70 40]"),
        ("(reduce (fn [m i] (update m (rem i 3) (fnil + 0) i)) {} (range 10))", "{0 18 1 12 2 15}"),
        // a string key found by keyword keeps the stored key
        ("(update {\"user_id\" 1} :user-id inc)", "{\"user_id\" 2}"),
        ("(update {\"a\" 1} :a inc)", "{\"a\" 2}"),
        ("(update nil :a (fnil inc 0))", "{:a 1}"),
        ("(update [1 2] 0 inc)", "[2 2]"),
    ]);
    check_err(&[("(update {:a \"x\"} :a inc)", "type_error", "inc")]);
}

/// JSON data (the context, tool results) has string keys; a keyword write replaces or
/// removes the field the data already has instead of adding a second key beside it, as the
/// same program does in Clojure on keyword-keyed data (DIV-47 for writes).
#[test]
fn keyword_writes_reach_the_string_keys_of_json_data() {
    let t =
        r#"(def t (json/parse-string "{\"id\": \"T-1\", \"status\": \"open\", \"tags\": [\"a\"], \"user_id\": 7}"))"#;
    let u = r#"(def u (json/parse-string "{\"ann\": {\"age\": 31, \"plan\": \"pro\"}}"))"#;
    let cases = [
        ("(assoc t :status \"closed\")", r#"{"id" "T-1" "status" "closed" "tags" ["a"] "user_id" 7}"#),
        ("(dissoc t :tags :status)", r#"{"id" "T-1" "user_id" 7}"#),
        ("(dissoc t :user-id)", r#"{"id" "T-1" "status" "open" "tags" ["a"]}"#),
        (
            "(merge t {:status \"x\" :owner \"li\"})",
            r#"{:owner "li" "id" "T-1" "status" "x" "tags" ["a"] "user_id" 7}"#,
        ),
        ("(merge-with + t {:user-id 1})", r#"{"id" "T-1" "status" "open" "tags" ["a"] "user_id" 8}"#),
        ("(conj t [:status \"x\"])", r#"{"id" "T-1" "status" "x" "tags" ["a"] "user_id" 7}"#),
        ("(into t {:status \"x\"})", r#"{"id" "T-1" "status" "x" "tags" ["a"] "user_id" 7}"#),
        ("(find t :id)", r#"["id" "T-1"]"#),
        ("(set/rename-keys t {:status :state})", r#"{:state "open" "id" "T-1" "tags" ["a"] "user_id" 7}"#),
        ("(assoc-in u [:ann :plan] \"free\")", r#"{"ann" {"age" 31 "plan" "free"}}"#),
        ("(update-in u [:ann :age] inc)", r#"{"ann" {"age" 32 "plan" "pro"}}"#),
        // a key the data does not have is added as written; a keyword the map holds wins
        ("(assoc t :total 3)", r#"{:total 3 "id" "T-1" "status" "open" "tags" ["a"] "user_id" 7}"#),
        ("(assoc {:a 1 \"a\" 2} :a 3)", r#"{:a 3 "a" 2}"#),
        ("(dissoc {:a 1 \"a\" 2} :a)", r#"{"a" 2}"#),
        // a string key is written as given
        ("(assoc {:a 1} \"a\" 2)", r#"{:a 1 "a" 2}"#),
    ];
    let owned: Vec<(String, &str)> = cases.iter().map(|(p, want)| (format!("{t} {u} {p}"), *want)).collect();
    let refs: Vec<(&str, &str)> = owned.iter().map(|(p, w)| (p.as_str(), *w)).collect();
    check(&refs);
}

/// `update-in` and `assoc-in` take each level out of a map or vector nobody else holds and
/// change it in place; a level that is shared (held by a local, by another map, by the
/// argument itself) is left as it was.
#[test]
fn nested_updates_change_unshared_levels_and_keep_shared_ones() {
    check(&[
        ("(update-in {:a {:b [1]}} [:a :b] conj 2)", "{:a {:b [1 2]}}"),
        ("(let [m {:a {:b [1]}} n (update-in m [:a :b] conj 2)] [m n])", "[{:a {:b [1]}} {:a {:b [1 2]}}]"),
        (
            "(let [inner {:b 1} m {:a inner} n (update-in m [:a :b] inc)] [inner m n])",
            "[{:b 1} {:a {:b 1}} {:a {:b 2}}]",
        ),
        ("(let [v [[0 1] [2 3]] w (update-in v [1 0] + 10)] [v w])", "[[[0 1] [2 3]] [[0 1] [12 3]]]"),
        ("(let [m {:a {:n 1}} n (assoc-in m [:a :n] 5)] [m n])", "[{:a {:n 1}} {:a {:n 5}}]"),
        (
            "(reduce (fn [m i] (update-in m [(mod i 3) :n] (fnil + 0) i)) {} (range 10))",
            "{0 {:n 18} 1 {:n 12} 2 {:n 15}}",
        ),
        ("(reduce (fn [m i] (assoc-in m [(mod i 2) :last] i)) {} (range 5))", "{0 {:last 4} 1 {:last 3}}"),
        // the value a function sees is the one a read finds (a keyword finds a string key)
        ("(update-in {\"a\" {\"b\" 1}} [:a :b] inc)", "{\"a\" {\"b\" 2}}"),
        ("(update-in {:a 1 \"a\" 2} [:a] inc)", "{:a 2 \"a\" 2}"),
        ("(update-in {:a 1} [] (fn [m] (count m)))", "1"),
    ]);
    check_err(&[
        ("(update-in {:a [1 2]} [:a 5] (fnil inc 0))", "runtime_error", "index 5 out of bounds"),
        ("(update-in {:a 1} [:a :b] (fnil inc 0))", "type_error", "got integer 1"),
    ]);
}

/// `merge-with` merges into its first map (in place when nobody else holds it); a map a
/// local still holds is left as it was.
#[test]
fn merge_with_merges_into_the_first_map_and_keeps_shared_ones() {
    check(&[
        ("(merge-with + {:a 1 :b 2} {:a 10 :c 3} nil {:a 100})", "{:a 111 :b 2 :c 3}"),
        ("(let [m {:a 1} n (merge-with + m {:a 2})] [m n])", "[{:a 1} {:a 3}]"),
        ("(let [m {:a [1]} n (merge-with into m {:a [2]})] [m n])", "[{:a [1]} {:a [1 2]}]"),
        ("(merge-with + nil {:a 1})", "{:a 1}"),
        ("(merge-with +)", "nil"),
        ("(merge-with + nil nil)", "nil"),
        ("(reduce #(merge-with + %1 %2) {} (map (fn [i] {(mod i 3) 1}) (range 10)))", "{0 4 1 3 2 3}"),
        ("(merge-with (fn [a b] (merge-with + a b)) {:x {:n 1}} {:x {:n 2 :m 1}})", "{:x {:m 1 :n 3}}"),
    ]);
    check_err(&[
        ("(merge-with + {:a 1} 5)", "type_error", "merge-with"),
        ("(merge-with + {:a \"s\"} {:a 1})", "type_error", ""),
    ]);
}
