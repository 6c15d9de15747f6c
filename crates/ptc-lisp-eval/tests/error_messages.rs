//! The messages a model reads: every program of `fixtures/errors/messages.txt` fails, and
//! its error kind, location and message are snapshotted in one file, so a changed
//! message is a reviewed diff (`cargo insta review`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ptc_lisp_eval::{RunOptions, RunResult, run};

#[test]
fn analyzer_and_runtime_error_messages() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/errors/messages.txt");
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    let mut not_failing = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let src = line.trim();
        if src.is_empty() {
            continue;
        }
        if let Some(section) = src.strip_prefix("## ") {
            out.push_str(&format!("\n## {section}\n"));
            continue;
        }
        if src.starts_with("# ") {
            continue;
        }
        let o = run(src, RunOptions::default());
        let shown = match &o.result {
            RunResult::Error(e) => {
                let at = e.span.map(|s| format!(" at {}:{}", s.line, s.column)).unwrap_or_default();
                format!("{}{at}: {}", e.kind, e.message)
            }
            RunResult::Failed(_) => format!("fail: {}", o.printed),
            RunResult::Value(_) | RunResult::Returned(_) => {
                not_failing.push(format!("line {}: {src} => {}", i + 1, o.printed));
                continue;
            }
        };
        out.push_str(&format!("{src}\n  => {shown}\n"));
    }
    assert!(not_failing.is_empty(), "these programs do not fail; fix or remove them:\n{}", not_failing.join("\n"));
    insta::assert_snapshot!(out);
}

/// Thousands of unknown names: the error lists the first few in the order the program uses
/// them (with near names) and counts the rest, at once. Near names were searched for every
/// one, about a millisecond each, past the run's deadline (found by the `answer` fuzz
/// target; its seed `fixtures/fuzz/answer/many-unknown-names.txt`).
#[test]
fn thousands_of_unknown_names_are_counted_not_each_searched() {
    let names: Vec<String> = (0..3_000).map(|i| format!("zq{i}x")).collect();
    let src = format!("[fitler {}]", names.join(" "));
    let started = std::time::Instant::now();
    let o = run(&src, RunOptions::default());
    let RunResult::Error(e) = &o.result else { panic!("{}", o.printed) };
    assert_eq!(e.kind.as_str(), "unbound_var");
    assert!(
        e.message.starts_with("Undefined variables: fitler (line 1, column 2); did you mean `filter`?, zq0x"),
        "{}",
        e.message
    );
    assert!(e.message.ends_with(", and 2993 more"), "{}", e.message);
    // generous for a debug build beside other work: the search alone took over 20 s in a debug build
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
}
