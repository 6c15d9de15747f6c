//! Java-interop date functions at the edges of the integer range: an error, never a panic
//! (found by the `eval` fuzz target: `abs` of the smallest integer overflows).
mod common;
use common::*;

#[test]
fn dates_at_integer_extremes_are_errors() {
    check_err(&[
        ("(LocalDate/of -9223372036854775808 1 1)", "runtime_error", "is not a valid date"),
        ("(LocalDate/of 9223372036854775807 1 1)", "runtime_error", "is not a valid date"),
        ("(LocalDate/ofEpochDay -9223372036854775808)", "arithmetic_error", "out of the supported range"),
        ("(Instant/ofEpochMilli -9223372036854775808)", "arithmetic_error", "out of the supported range"),
        (
            "(.plusMonths (LocalDate/of 2024 1 31) -9223372036854775808)",
            "arithmetic_error",
            "out of the supported range",
        ),
        (
            "(.plusYears (LocalDate/of 2024 1 31) -9223372036854775808)",
            "arithmetic_error",
            "out of the supported range",
        ),
    ]);
    check(&[("(str (.plusMonths (LocalDate/of 2024 1 31) 1))", "\"2024-02-29\"")]);
}
