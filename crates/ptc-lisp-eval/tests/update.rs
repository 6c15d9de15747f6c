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
