//! return, fail, println capture.
mod common;
use common::*;
use ptc_lisp_eval::RunResult;

#[test]
fn return_stops_the_program() {
    let o = go("(println \"before\") (return {:done true}) (println \"after\")");
    assert!(matches!(o.result, RunResult::Returned(_)));
    assert_eq!(o.printed, "{:done true}");
    assert_eq!(o.prints, vec!["before"]);
    assert_eq!(show("(map (fn [x] (if (= x 2) (return :early) x)) [1 2 3])"), ":early");
}

#[test]
fn fail_carries_a_value() {
    assert_eq!(
        show("(fail {:reason :not_found :message \"no user\"})"),
        "!fail {:message \"no user\" :reason :not_found}"
    );
    assert_eq!(show("(fail)"), "!fail nil");
}

#[test]
fn println_renders_values() {
    let o = go("(println \"a\" 1 nil [1 \"x\"] {:k 2.5}) (println)");
    assert_eq!(o.prints, vec!["a 1 nil [1 \"x\"] {:k 2.5}", ""]);
    assert_eq!(o.printed, "nil");
}
