//! Shared helpers for the evaluator's integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ptc_lisp_eval::{Limits, Outcome, RunOptions, RunResult, run};

/// Runs a program with default options, except a time limit of 30 s: a debug build on a
/// loaded CI machine can pass the default second on programs whose answer (or whose
/// loop, memory or fuel error) is what the test checks. Tests of the time limit set their
/// own.
pub fn go(src: &str) -> Outcome {
    let limits = Limits { timeout: std::time::Duration::from_secs(30), ..Limits::default() };
    run(src, RunOptions { limits, ..RunOptions::default() })
}

/// The printed result, or `!kind: message` for errors, `!fail <v>` for fail.
pub fn show(src: &str) -> String {
    show_outcome(&go(src))
}

/// Same as [`show`] for a ready outcome.
pub fn show_outcome(o: &Outcome) -> String {
    match &o.result {
        RunResult::Value(_) | RunResult::Returned(_) => o.printed.clone(),
        RunResult::Failed(_) => format!("!fail {}", o.printed),
        RunResult::Error(e) => format!("!{}: {}", e.kind, e.message),
    }
}

/// Asserts each (program, expected printed result) pair.
pub fn check(cases: &[(&str, &str)]) {
    let mut failures = Vec::new();
    for (src, want) in cases {
        let got = show(src);
        if &got != want {
            failures.push(format!("  {src}\n    want {want}\n    got  {got}"));
        }
    }
    assert!(failures.is_empty(), "{} case(s) failed:\n{}", failures.len(), failures.join("\n"));
}

/// Asserts that each program fails with the given error kind, and the message contains `needle`.
pub fn check_err(cases: &[(&str, &str, &str)]) {
    let mut failures = Vec::new();
    for (src, kind, needle) in cases {
        let o = go(src);
        match &o.result {
            RunResult::Error(e) if e.kind.as_str() == *kind && e.message.contains(needle) => {}
            _ => {
                failures.push(format!("  {src}\n    want !{kind} containing {needle:?}\n    got  {}", show_outcome(&o)))
            }
        }
    }
    assert!(failures.is_empty(), "{} case(s) failed:\n{}", failures.len(), failures.join("\n"));
}
