//! Two-operand `+`, `-` and `*` are computed in place by the evaluator when both operands
//! are numbers (nested arithmetic too); these check that path against the builtins
//! themselves, reached through `apply`, for integers, floats and the two mixed.
mod common;
use common::*;
use proptest::prelude::*;

fn operand() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (-1000i64..1000).prop_map(|i| i.to_string()),
        1 => prop_oneof![
            Just("9007199254740993"),
            Just("-9223372036854775807"),
            Just("0"),
            Just("0.0"),
            Just("-0.0"),
            Just("1.5"),
            Just("-2.25"),
            Just("1e300"),
            Just("##Inf"),
            Just("##-Inf"),
            Just("##NaN"),
        ]
        .prop_map(String::from),
        2 => (-1000.0f64..1000.0).prop_map(|f| format!("{f:?}")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn in_place_arithmetic_answers_as_the_builtins(a in operand(), b in operand(), c in operand()) {
        for op in ["+", "-", "*"] {
            // literals, locals, and an operation nested in another
            let direct = show(&format!("[({op} {a} {b}) (let [x {a} y {b}] ({op} x y)) ({op} ({op} {a} {b}) {c})]"));
            let builtin = show(&format!("[(apply {op} [{a} {b}]) (apply {op} [{a} {b}]) (apply {op} [(apply {op} [{a} {b}]) {c}])]"));
            prop_assert_eq!(direct, builtin, "{} {} {} {}", op, a, b, c);
        }
    }
}

#[test]
fn mixed_operands_become_floats() {
    check(&[
        ("(* 1.5 2)", "3.0"),
        ("(+ 1 0.5)", "1.5"),
        ("(- 1 0.5)", "0.5"),
        ("(- 0.5 1)", "-0.5"),
        ("(reduce + (map #(* 1.5 %) (range 4)))", "9.0"),
        ("(let [x 2] (* x 0.5))", "1.0"),
        // real Clojure: [-0.0 -0.0 -0.0 3.0 0.5 9.007199254740992E15 -0.0]
        (
            "[(+ -0.0 -0.0) (+ -0.0) (apply + [-0.0 -0.0]) (* 1.5 2) (- 1 0.5) (+ 9007199254740993 0.5) (* -0.0 3)]",
            "[-0.0 -0.0 -0.0 3.0 0.5 9.007199254740992E15 -0.0]",
        ),
    ]);
}
