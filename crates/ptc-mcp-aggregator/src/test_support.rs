//! Helpers shared by the crate's unit tests.

/// `duration_ms` is the one field that differs from run to run.
pub(crate) fn without_durations(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("duration_ms") {
        let (head, tail) = rest.split_at(at + "duration_ms".len());
        out.push_str(head);
        let value_at = tail.find(|c: char| c.is_ascii_digit()).unwrap_or(0);
        out.push_str(&tail[..value_at]);
        let tail = &tail[value_at..];
        let end = tail.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-')).unwrap_or(tail.len());
        out.push('N');
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Calls for the inline path (the stdio reader, an HTTP connection thread): the
/// arguments, whether a thread that may run in place answers it there, and the answer's
/// text (or failure reason) it must give either way. The server needs an `echo` tool.
pub(crate) fn inline_cases() -> Vec<(serde_json::Value, bool, &'static str)> {
    use serde_json::json;
    let deep = "(defn down [n] (if (= n 0) 0 (inc (down (dec n))))) (down 100000)";
    vec![
        (json!({"program": "(+ 1 2)"}), true, "user=> 3"),
        (json!({"program": "(println \"hi\") (count data/xs)", "context": {"xs": [1, 2]}}), true, "user=> 2"),
        // needs far more than an inline run's fuel: run again on the pool
        (json!({"program": "(reduce + (range 100000))"}), false, "user=> 4999950000"),
        // a tool call is never made in place
        (json!({"program": "(tool/echo {:a 1})"}), false, "user=> {\"a\" 1}"),
        // deep recursion ends as it does on the pool
        (json!({"program": deep}), false, "recursion_limit_exceeded"),
        // a context over the inline size goes to the pool at once
        (
            json!({"program": "(count data/xs)", "context": {"xs": (0..5_000).collect::<Vec<_>>()}}),
            false,
            "user=> 5000",
        ),
        // the program's own error, found within the budget, is answered in place
        (json!({"program": "(/ 1 0)"}), true, "arithmetic_error"),
    ]
}
