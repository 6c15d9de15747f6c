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
