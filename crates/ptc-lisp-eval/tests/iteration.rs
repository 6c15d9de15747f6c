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

/// `range` in a `for`/`doseq` binding counts its numbers out instead of building them
/// first; the same comprehension with `range` called through a local (a computed
/// function, never recognised) must answer, print and fail the same.
mod counted_ranges {
    use super::common::*;
    use proptest::prelude::*;

    fn range_call() -> impl Strategy<Value = String> {
        prop_oneof![
            (-2i64..6).prop_map(|e| format!("(range {e})")),
            (-3i64..4, -3i64..6).prop_map(|(s, e)| format!("(range {s} {e})")),
            // a zero step is an endless range (or an empty one): the explicit cases have it
            (-4i64..5, -4i64..5, prop_oneof![Just(-2i64), Just(-1), Just(1), Just(3)])
                .prop_map(|(s, e, st)| format!("(range {s} {e} {st})")),
            Just("(range 0.5 3)".to_string()),
            Just("(range x)".to_string()),
        ]
    }

    fn comprehension() -> impl Strategy<Value = (String, String, String, u8)> {
        (
            range_call(),
            range_call(),
            prop_oneof![Just(""), Just(":when (odd? (+ x y))"), Just(":while (< y 3)"), Just(":let [z (* x y)]")],
            0u8..3,
        )
            .prop_map(|(a, b, filter, form)| (a, b, filter.to_string(), form))
    }

    fn program((a, b, filter, form): &(String, String, String, u8), local: bool) -> String {
        let (a, b) = if local {
            (a.replacen("(range", "(range*", 1), b.replacen("(range", "(range*", 1))
        } else {
            (a.clone(), b.clone())
        };
        let body = match form {
            0 => format!("(count (take 50 (for [x {a} y {b} {filter}] [x y])))"),
            1 => format!("(vec (for [x {a} y {b} {filter}] (+ x y)))"),
            _ => format!("(doseq [x {a} y {b} {filter}] (println x y))"),
        };
        format!("(let [range* range x 2] {body})")
    }

    #[test]
    fn ranges_too_long_to_hold_stay_lazy() {
        check(&[
            ("(first (for [x (range 1000000000000)] x))", "0"),
            ("(vec (for [x [1] y (range 1000000000000) :while (< y 3)] [x y]))", "[[1 0] [1 1] [1 2]]"),
            ("(count (for [x (range 3) y (range 1000 2000) :when (= y 1500)] x))", "3"),
            ("(vec (for [x (range 2) y (range 3 3 0)] [x y]))", "[]"),
        ]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn counted_ranges_agree_with_built_ones(c in comprehension()) {
            let fast = go(&program(&c, false));
            let slow = go(&program(&c, true));
            let prints = |o: &ptc_lisp_eval::Outcome| o.prints.clone();
            prop_assert_eq!(show_outcome(&fast), show_outcome(&slow), "{}", program(&c, false));
            prop_assert_eq!(prints(&fast), prints(&slow), "{}", program(&c, false));
        }
    }
}
