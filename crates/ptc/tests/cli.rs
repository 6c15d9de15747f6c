//! The `ptc` binary end to end: output modes, exit codes, usage errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn ptc(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    } else {
        drop(child.stdin.take());
    }
    child.wait_with_output().unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}
fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn version_names_the_build_and_its_vendor_features() {
    let o = ptc(&["--version"], None);
    assert_eq!(o.status.code(), Some(0));
    let mut features = Vec::new();
    for (name, on) in [
        ("openai", cfg!(feature = "openai")),
        ("anthropic", cfg!(feature = "anthropic")),
        ("gemini", cfg!(feature = "gemini")),
    ] {
        if on {
            features.push(name);
        }
    }
    let features = if features.is_empty() { "none".to_string() } else { features.join(", ") };
    assert_eq!(out(&o), format!("ptc {} (features: {features})\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn text_output_prints_then_result() {
    let o = ptc(&["eval", "(println \"hi\" 1) {:a (/ 10 4)}"], None);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(out(&o), "hi 1\n{:a 2.5}\n");
}

#[test]
fn program_from_stdin_and_file() {
    let o = ptc(&["eval", "-"], Some("(+ 1 2)"));
    assert_eq!(out(&o), "3\n");
    let dir = std::env::temp_dir().join(format!("ptc-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("p.clj");
    std::fs::write(&f, "(count data/xs)").unwrap();
    let c = dir.join("c.json");
    std::fs::write(&c, r#"{"xs": [1, 2, 3]}"#).unwrap();
    let o = ptc(&["eval", "-f", f.to_str().unwrap(), "--context", c.to_str().unwrap()], None);
    assert_eq!(out(&o), "3\n", "{}", err(&o));
}

#[test]
fn json_envelope_success() {
    let o =
        ptc(&["eval", "--output", "json", "--context-json", r#"{"n": 2}"#, "(println \"x\") {:n data/n :f 1.5}"], None);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["result"], "{:f 1.5 :n 2}");
    assert_eq!(v["value"], serde_json::json!({"f": 1.5, "n": 2}));
    assert_eq!(v["prints"], serde_json::json!(["x"]));
    assert!(v["usage"]["duration_ms"].is_number());
}

#[test]
fn json_envelope_errors_and_fail() {
    let o = ptc(&["eval", "--output", "json", "(let [x 1]\n  (foo x)"], None);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["status"], "error");
    assert_eq!(v["reason"], "parse_error");
    assert_eq!(v["line"], 1);
    assert_eq!(v["column"], 1);
    let o = ptc(&["eval", "--output", "json", "(fail {:reason :nope})"], None);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["reason"], "fail");
    assert_eq!(v["result"], "{:reason :nope}");
    let o = ptc(&["eval", "--output", "json", "(return 5) 6"], None);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["result"], "5");
}

#[test]
fn text_errors_go_to_stderr_with_a_caret() {
    let o = ptc(&["eval", "(+ 1\n   [2 3)"], None);
    assert_eq!(o.status.code(), Some(1));
    let e = err(&o);
    assert!(e.starts_with("Parse error: mismatched delimiter"), "{e}");
    assert!(e.contains(" 2 |    [2 3)"), "{e}");
    assert!(e.contains('^'), "{e}");
    assert_eq!(out(&o), "");
    let o = ptc(&["eval", "(undefined-x 1)"], None);
    assert!(err(&o).starts_with("Analysis error: Undefined variable: undefined-x"), "{}", err(&o));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(ptc(&["eval", "--no-such-flag", "1"], None).status.code(), Some(2));
    assert_eq!(ptc(&["eval", "-f", "/nonexistent/file.clj"], None).status.code(), Some(2));
    let o = ptc(&["eval", "--context-json", "[1,2]", "1"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("must be a JSON object"), "{}", err(&o));
    assert_eq!(ptc(&["eval"], None).status.code(), Some(2));
}

#[test]
fn limits_are_flags() {
    let o = ptc(
        &[
            "eval",
            "--output",
            "json",
            "--timeout-ms",
            "30",
            "--max-loop-iterations",
            "100000000000",
            "(loop [i 0] (recur (inc i)))",
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["reason"], "timeout");
    let o = ptc(&["eval", "--output", "json", "--max-heap-bytes", "1000", "(vec (range 1000))"], None);
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["reason"], "memory_exceeded");
}

#[test]
fn fuel_limit_is_a_flag_and_ends_the_run_deterministically() {
    let program = "(reduce + (map inc (range 10000)))";
    let o = ptc(&["eval", "--output", "json", program], None);
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["status"], "ok");
    let used = v["usage"]["fuel"].as_u64().unwrap();
    for (max, status) in [(used, "ok"), (used - 1, "error")] {
        let o = ptc(&["eval", "--output", "json", "--max-fuel", &max.to_string(), program], None);
        let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
        assert_eq!(v["status"], status, "{v}");
        if status == "error" {
            assert_eq!(v["reason"], "fuel_exhausted");
            assert!(v["message"].as_str().unwrap().contains("max_fuel"), "{v}");
        }
    }
    let o = ptc(&["eval", "--max-fuel", "0", "1"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--max-fuel: max_fuel must be at least 1 (got 0)"), "{}", err(&o));
    let o = ptc(&["eval", "--max-parallel-workers", "0", "1"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("max_parallel_workers must be between 1 and 256 (got 0)"), "{}", err(&o));
}

#[test]
fn jsonl_batch() {
    let input = "{\"src\": \"(+ 1 2)\"}\n\"(count data/xs)\"\n{\"src\": \"(count data/xs)\", \"ctx\": {\"xs\": [1]}}\nnot json\n{\"src\": \"(/ 1 0)\"}\n";
    let o = ptc(&["eval", "--jsonl", "--context-json", r#"{"xs": [1, 2]}"#], Some(input));
    assert_eq!(o.status.code(), Some(0));
    let lines: Vec<serde_json::Value> = out(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0]["result"], "3");
    assert_eq!(lines[1]["result"], "2");
    assert_eq!(lines[2]["result"], "1");
    assert_eq!(lines[3]["reason"], "usage_error");
    assert_eq!(lines[4]["reason"], "arithmetic_error");
}

/// A `--jsonl` line longer than its budget is skipped whole (never held), answered with a
/// usage error, and the lines after it still run; invalid UTF-8 gets the same treatment.
#[test]
fn jsonl_lines_over_their_budget_are_refused_and_the_batch_goes_on() {
    let long = format!("{{\"src\": \"(count data/s)\", \"ctx\": {{\"s\": \"{}\"}}}}", "x".repeat(200_000));
    let input = format!("{long}\n{{\"src\": \"(+ 1 2)\"}}\n");
    let o = ptc(&["eval", "--jsonl", "--max-context-bytes", "50000", "--max-program-bytes", "1000"], Some(&input));
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let lines: Vec<serde_json::Value> = out(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{}", out(&o));
    assert_eq!(lines[0]["reason"], "usage_error");
    assert!(lines[0]["message"].as_str().unwrap().contains("over 51000 bytes"), "{}", lines[0]);
    assert_eq!(lines[1]["result"], "3");

    let mut child = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["eval", "--jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"\"\xff\xfe\"\n\"(+ 2 2)\"\n").unwrap();
    let o = child.wait_with_output().unwrap();
    let lines: Vec<serde_json::Value> = out(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{}", out(&o));
    assert_eq!(lines[0]["reason"], "usage_error");
    assert_eq!(lines[1]["result"], "4");
}

/// Under `--output json`, usage errors are a JSON envelope on stdout too.
#[test]
fn usage_errors_under_output_json_are_json() {
    for args in [
        &["eval", "--output", "json", "--no-such-flag", "1"][..],
        &["eval", "--output", "json", "--context", "/no/such/file.json", "1"][..],
        &["eval", "--output=json"][..],
    ] {
        let o = ptc(args, None);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let env: serde_json::Value = serde_json::from_str(out(&o).trim()).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert_eq!(env["status"], "error");
        assert_eq!(env["reason"], "usage_error");
        assert!(!env["message"].as_str().unwrap().is_empty());
    }
}

/// A program on stdin is read only up to --max-program-bytes, never whole.
#[test]
fn stdin_program_is_size_checked_while_reading() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["eval", "--max-program-bytes", "1000", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // 64 MiB that the reader must not wait for: it stops one byte past the limit
    let writer = std::thread::spawn(move || {
        let chunk = vec![b'1'; 1 << 20];
        for _ in 0..64 {
            if stdin.write_all(&chunk).is_err() {
                return false;
            }
        }
        true
    });
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("over --max-program-bytes (1000 bytes)"), "{}", err(&o));
    assert!(!writer.join().unwrap(), "ptc stopped reading before the end of the input");
}

/// With stderr closed by whoever started `ptc` (its reader gone), an error still ends the
/// run with its own exit code: `eprintln!` would panic on the broken pipe (exit 101).
#[test]
fn a_closed_stderr_keeps_the_exit_code() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["eval", "(undefined-fn 1)"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(writer)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1), "{status:?}");
}

#[test]
fn a_bad_context_names_where_it_came_from() {
    let dir = std::env::temp_dir().join(format!("ptc-cli-bad-context-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("broken.json");
    std::fs::write(&file, "{\"a\": [1, 2,").unwrap();
    let o = ptc(&["eval", "--context", file.to_str().unwrap(), "(count data/a)"], None);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let e = err(&o);
    assert!(e.contains(&format!("--context {}: the context is not valid JSON", file.display())), "{e}");
    let o = ptc(&["eval", "--context-json", "[1]", "1"], None);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("--context-json: the context must be a JSON object"), "{}", err(&o));
    // a file that is not there: the system's reason, once (it was printed twice)
    let missing = dir.join("missing.json");
    let o = ptc(&["eval", "--context", missing.to_str().unwrap(), "1"], None);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let e = err(&o);
    assert!(e.contains(&format!("--context {}: cannot read it: ", missing.display())), "{e}");
    assert_eq!(e.matches("os error 2").count(), 1, "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
