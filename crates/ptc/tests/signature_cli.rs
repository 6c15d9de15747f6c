//! `ptc signature check` and `ptc eval --signature`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

fn ptc(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_ptc")).args(args).output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into(), String::from_utf8_lossy(&o.stderr).into())
}

#[test]
fn check_prints_normalised_signature_and_schema() {
    let (code, out, _) = ptc(&["signature", "check", "(query :string,limit :int?)->[{id :int}]"]);
    assert_eq!(code, Some(0));
    assert!(out.starts_with("(query :string, limit :int?) -> [{id :int}]\n"), "{out}");
    assert!(out.contains("\"required\": [\n      \"query\"\n    ]"), "{out}");
}

#[test]
fn invalid_signature_exits_2_with_a_teaching_message() {
    let (code, _, err) = ptc(&["signature", "check", "(items :list) -> :bool"]);
    assert_eq!(code, Some(2));
    assert!(err.contains(":list is not a type — use [:type], e.g. [:int]"), "{err}");
    assert!(err.contains("column 8"), "{err}");
    let (code, _, _) = ptc(&["eval", "--signature", "[]", "1"]);
    assert_eq!(code, Some(2));
}

#[test]
fn eval_validates_the_result() {
    let (code, out, _) = ptc(&[
        "eval",
        "--output",
        "json",
        "--signature",
        "{count :int, items [:string]}",
        "{:count \"3\" :items [1 \"a\"]}",
    ]);
    assert_eq!(code, Some(1));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["reason"], "validation_error");
    let msg = v["message"].as_str().unwrap();
    assert!(msg.contains("- count: expected int, got string \"3\""), "{msg}");
    assert!(msg.contains("- items[0]: expected string, got int 1"), "{msg}");
    let (code, out, _) = ptc(&["eval", "--signature", "{total :int}", "(return {:total 5})"]);
    assert_eq!((code, out.as_str()), (Some(0), "{:total 5}\n"));
}
