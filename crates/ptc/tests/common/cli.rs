//! The `ptc` binary, its output, scratch directories and scripted-model files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};

/// The binary under test.
pub const PTC: &str = env!("CARGO_BIN_EXE_ptc");

/// The workspace root (where `fixtures/` is).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// `ptc` with stdin closed and stdout and stderr captured; the caller adds arguments,
/// a working directory and the environment it needs.
pub fn command() -> Command {
    let mut c = Command::new(PTC);
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// Runs `ptc ARGS` (stdin closed, output captured) to its end.
pub fn ptc(args: &[&str]) -> Output {
    command().args(args).output().unwrap()
}

pub fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// The Step `ptc run --output json` printed.
pub fn step_of(o: &Output) -> Value {
    serde_json::from_str(out(o).trim()).unwrap_or_else(|e| panic!("{e}: {}\n{}", out(o), err(o)))
}

/// A fresh directory under the system's temporary one, named after the test file, the
/// process and a counter.
pub fn scratch() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "ptc-{}-{}-{}",
        env!("CARGO_CRATE_NAME").replace('_', "-"),
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `dir/name`; its path.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().to_string()
}

/// A script file (`dir/script.jsonl`) whose model answers with these programs, one
/// fenced code block per answer, in order; its path (give it as `--llm script:PATH`).
pub fn script(dir: &Path, programs: &[&str]) -> String {
    let lines: Vec<String> =
        programs.iter().map(|p| json!({"content": format!("```clojure\n{p}\n```")}).to_string()).collect();
    write(dir, "script.jsonl", &(lines.join("\n") + "\n"))
}

/// The events of a JSON-lines trace file.
pub fn trace_events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}
