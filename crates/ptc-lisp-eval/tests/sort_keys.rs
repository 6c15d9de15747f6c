//! sort-by with vector keys of one width (`(juxt :a :b)`) spreads them into a flat table;
//! these check it against the general path, which sees the same keys one vector each.
mod common;
use common::*;
use proptest::prelude::*;

fn item() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (-3i64..3).prop_map(|i| i.to_string()),
        1 => prop_oneof![Just("nil"), Just("1.0"), Just("-0.5"), Just("##NaN"), Just("2.0")].prop_map(String::from),
        1 => prop_oneof![Just("\"a\""), Just("\"b\""), Just(":k")].prop_map(String::from),
        1 => prop_oneof![Just("true"), Just("false")].prop_map(String::from),
    ]
}

fn records() -> impl Strategy<Value = String> {
    proptest::collection::vec((item(), item()), 0..24).prop_map(|rs| {
        let body: Vec<String> = rs.iter().enumerate().map(|(i, (a, b))| format!("{{:id {i} :a {a} :b {b}}}")).collect();
        format!("[{}]", body.join(" "))
    })
}

/// Ints only: the keys are totally ordered, so every path must agree on success.
fn int_records() -> impl Strategy<Value = String> {
    proptest::collection::vec((-3i64..3, -3i64..3), 0..40).prop_map(|rs| {
        let body: Vec<String> = rs.iter().enumerate().map(|(i, (a, b))| format!("{{:id {i} :a {a} :b {b}}}")).collect();
        format!("[{}]", body.join(" "))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn flat_keys_sort_like_general_keys_with_a_known_comparator(data in records()) {
        for (cmp, general) in [
            ("#(compare %2 %1)", "(fn [x y] (let [c (compare y x)] c))"),
            ("#(compare %1 %2)", "(fn [x y] (let [c (compare x y)] c))"),
        ] {
            let flat = show(&format!("(map :id (sort-by (juxt :a :b) {cmp} {data}))"));
            let slow = show(&format!("(map :id (sort-by (juxt :a :b) {general} {data}))"));
            prop_assert_eq!(flat, slow, "comparator {}", cmp);
        }
    }

    #[test]
    fn flat_keys_sort_like_nested_keys_in_order(data in records()) {
        for order in [":asc", ":desc"] {
            // a key wrapped in another vector is never spread; it compares the same
            let flat = show(&format!("(map :id (sort-by (juxt :a :b) {order} {data}))"));
            let nested = show(&format!("(map :id (sort-by (fn [r] [[(:a r) (:b r)]]) {order} {data}))"));
            prop_assert_eq!(flat, nested, "order {}", order);
        }
    }

    #[test]
    fn int_keys_sort_the_same_every_way(data in int_records()) {
        let want = show(&format!("(map :id (sort-by (fn [r] [[(:a r) (:b r)]]) {data}))"));
        prop_assert!(!want.starts_with('!'), "{}", want);
        prop_assert_eq!(show(&format!("(map :id (sort-by (juxt :a :b) {data}))")), want.clone());
        prop_assert_eq!(show(&format!("(map :id (sort-by (juxt :a :b) #(compare %1 %2) {data}))")), want);
    }
}

#[test]
fn keys_that_stop_fitting_fall_back() {
    check(&[
        // a shorter key after spread ones: compared by length first, as vectors are
        ("(sort-by identity #(compare %1 %2) [[2 1] [1 5] [3]])", "[[3] [1 5] [2 1]]"),
        ("(sort-by identity [[2 1] [1 5] [3]])", "[[3] [1 5] [2 1]]"),
        // a key that is not a vector after spread ones
        ("(sort-by identity #(compare %2 %1) [[2 1] [1 5] nil])", "[[2 1] [1 5] nil]"),
        // a vector with a collection inside
        ("(sort-by identity [[2 1] [1 [5]]])", "[[1 [5]] [2 1]]"),
        ("(sort-by identity #(compare %1 %2) [[2 1] [1 [5]]])", "[[1 [5]] [2 1]]"),
        ("(sort-by (juxt :a :b) #(compare %2 %1) [])", "[]"),
        ("(sort-by (juxt :a) [{:a \"b\"} {:a \"a\"} {:a nil}])", "[{:a nil} {:a \"a\"} {:a \"b\"}]"),
    ]);
}
