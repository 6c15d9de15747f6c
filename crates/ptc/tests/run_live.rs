//! `ptc run --output text` as a person sees it: a model error is printed once, not again
//! as the failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Stdio};

#[test]
fn a_model_error_that_ends_the_mission_is_printed_once() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.jsonl");
    std::fs::write(&script, "{\"error\": \"client_error\", \"message\": \"the model gpt-9 does not exist\"}\n")
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["run", "--prompt", "count the orders", "--llm"])
        .arg(format!("script:{}", script.display()))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("the model gpt-9 does not exist").count(), 1, "{err}");
    assert!(err.contains("Failed (llm_error): the model error above"), "{err}");
    // piped: no live line
    assert!(!err.contains("waiting for the model"), "{err}");
}
