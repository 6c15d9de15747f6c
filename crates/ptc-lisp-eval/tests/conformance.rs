//! The recorded conformance corpus, run by `cargo test -p ptc-lisp-eval`.
//!
//! `fixtures/conformance/<category>.txt` holds the cases (format: `xtask/src/conformance.rs`;
//! `@ctx` gives the next case a context bound as `ctx`, `@div` pins a divergence) and
//! `<category>.out` our recorded output of each: the program, then `=> printed result`,
//! `=> !error reason` or `=> !fail value`. Every case runs here against its recording,
//! and every case that differs is reported, not only the first. `cargo xtask conformance`
//! compares the same cases with real Clojure and refreshes the recordings (`--record`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ptc_lisp_eval::{RunOptions, RunResult, Value};

/// One case: where it is, its program and context.
struct Case {
    file: String,
    line: usize,
    src: String,
    ctx: Option<serde_json::Value>,
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/conformance")
}

/// The cases of one `.txt` file, in order.
fn cases(path: &Path) -> Vec<Case> {
    let file = path.file_name().unwrap().to_string_lossy().to_string();
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    let mut ctx = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with("@div ") || t == "@prints" {
            continue;
        }
        if let Some(rest) = t.strip_prefix("@ctx ") {
            ctx = Some(serde_json::from_str(rest).unwrap_or_else(|e| panic!("{file}:{}: bad @ctx JSON: {e}", i + 1)));
            continue;
        }
        out.push(Case { file: file.clone(), line: i + 1, src: t.to_string(), ctx: ctx.take() });
    }
    out
}

/// The recorded (program, result) pairs of one `.out` file.
fn recording(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut lines = text.lines();
    let mut out = Vec::new();
    while let Some(src) = lines.next() {
        let result = lines.next().and_then(|l| l.strip_prefix("=> ")).unwrap_or_default();
        out.push((src.to_string(), result.to_string()));
    }
    out
}

/// JSON with keyword keys, as the Clojure side reads the context.
fn keywordized(j: &serde_json::Value) -> Value {
    match j {
        serde_json::Value::Object(obj) => Value::map(obj.iter().map(|(k, v)| (Value::kw(k.as_str()), keywordized(v)))),
        serde_json::Value::Array(items) => Value::vector(items.iter().map(keywordized)),
        other => ptc_lisp_eval::json::from_json(other),
    }
}

/// Our result of a case, written as the recording writes it.
fn result_of(case: &Case) -> String {
    let mut opts = RunOptions::default();
    if let Some(ctx) = &case.ctx {
        opts.memory.insert(Arc::from("ctx"), keywordized(ctx));
    }
    let out = ptc_lisp_eval::run(&case.src, opts);
    match &out.result {
        RunResult::Value(_) | RunResult::Returned(_) => out.printed.replace('\n', "\\n"),
        RunResult::Failed(v) => format!("!fail {}", ptc_lisp_eval::to_clojure(v)),
        RunResult::Error(e) => format!("!error {}", e.kind),
    }
}

/// A program that never ends (the `GAP-lazy` cases) stops at whichever resource limit it
/// reaches first, and that depends on the machine's speed: time, memory, loop steps or
/// fuel are the same outcome here.
fn same_limit(want: &str, got: &str) -> bool {
    const LIMITS: [&str; 4] =
        ["!error timeout", "!error memory_exceeded", "!error loop_limit_exceeded", "!error fuel_exhausted"];
    LIMITS.contains(&want) && LIMITS.contains(&got)
}

#[test]
fn every_recorded_case_gives_its_recorded_result() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no cases in {}", dir().display());
    let mut total = 0;
    let mut failures = Vec::new();
    for txt in files {
        let cases = cases(&txt);
        let recorded = recording(&txt.with_extension("out"));
        if recorded.len() != cases.len() {
            failures.push(format!(
                "{}: {} cases but {} recorded; run cargo xtask conformance --record",
                txt.display(),
                cases.len(),
                recorded.len()
            ));
        }
        for (i, case) in cases.iter().enumerate() {
            total += 1;
            let got = result_of(case);
            match recorded.get(i) {
                Some((src, want)) if *src == case.src && (*want == got || same_limit(want, &got)) => {}
                Some((src, want)) if *src == case.src => failures.push(format!(
                    "{}:{}: {}\n    recorded {want}\n    now      {got}",
                    case.file, case.line, case.src
                )),
                _ => failures
                    .push(format!("{}:{}: {} has no recording in order (now {got})", case.file, case.line, case.src)),
            }
        }
    }
    assert!(total > 2_000, "only {total} cases found");
    assert!(
        failures.is_empty(),
        "{} of {total} conformance cases differ from their recording (check each change, then run cargo xtask conformance --record):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
