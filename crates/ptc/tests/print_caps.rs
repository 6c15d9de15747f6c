//! Both print caps (`--max-print-length`, `--max-print-bytes`) hold on every print path
//! (`println`, `doc`, `pmap`/`pcalls` branches) over `ptc eval`, `ptc mcp` (stdio and
//! HTTP) and `ptc run` with a scripted model.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::cli::PTC;
use common::mcp::{Client, HttpServer, StdioServer};
use serde_json::{Value, json};
const MAX_LENGTH: usize = 40;
const MAX_BYTES: usize = 300;
const CAPS: [&str; 4] = ["--max-print-length", "40", "--max-print-bytes", "300"];

/// Programs that print through each path, far past both caps.
const PROGRAMS: [(&str, &str); 6] = [
    ("println", "(dotimes [i 50] (println i (apply str (repeat 100 \"x\"))))"),
    ("pmap", "(pmap (fn [i] (println i (apply str (repeat 100 \"x\"))) i) (range 40))"),
    ("pcalls", "(apply pcalls (repeat 16 #(println (apply str (repeat 100 \"y\")))))"),
    ("doc of a builtin", "(dotimes [_ 20] (doc map))"),
    (
        "doc of a definition",
        "(defn f \"a docstring that goes on and on and on and on and on\" [] 1) (dotimes [_ 20] (doc f))",
    ),
    ("doc in pmap", "(pmap (fn [_] (doc reduce)) (range 12))"),
];

/// Asserts both caps on a run's print lines: none longer than `MAX_LENGTH` characters
/// (a cut line is its first `MAX_LENGTH` characters plus a note of its length), at most
/// `MAX_BYTES` bytes in all, at most one drop marker and only at the end.
fn assert_caps(what: &str, prints: &[String]) {
    assert!(!prints.is_empty(), "{what}: nothing printed");
    let (body, marker) = match prints.split_last() {
        Some((last, rest)) if last.starts_with("... (further output dropped") => (rest, Some(last)),
        _ => (prints, None),
    };
    let total: usize = body.iter().map(String::len).sum();
    assert!(total <= MAX_BYTES, "{what}: {total} bytes printed, cap {MAX_BYTES}: {prints:?}");
    for line in body {
        assert!(!line.starts_with("... (further output dropped"), "{what}: a marker before the end: {prints:?}");
        let kept = match line.rsplit_once("... (") {
            Some((head, note)) if note.ends_with(" chars)") => head,
            _ => line.as_str(),
        };
        let n = kept.chars().count();
        assert!(n <= MAX_LENGTH, "{what}: a line of {n} characters: {line:?}");
    }
    if let Some(m) = marker {
        assert!(m.contains(&format!("more than {MAX_BYTES} bytes")), "{what}: {m}");
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn eval_keeps_both_caps_on_every_print_path() {
    for (what, program) in PROGRAMS {
        let o = Command::new(PTC).args(["eval", "--output", "json"]).args(CAPS).arg(program).output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{what}: {out} {}", String::from_utf8_lossy(&o.stderr));
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_caps(what, &strings(&v["prints"]));
    }
}

/// A `lisp_eval` answer's full (debug profile) content: the server's own preview cut
/// must not hide the caps.
fn assert_caps_in(what: &str, r: &Value) {
    let full = &r["structuredContent"];
    assert_eq!(full["status"], "ok", "{what}: {r}");
    assert!(full.get("prints_truncated").is_none(), "{what}: the server's own cut hides the caps: {r}");
    assert_caps(what, &strings(&full["prints"]));
}

#[test]
fn mcp_stdio_keeps_both_caps_on_every_print_path() {
    let mut s = StdioServer::start(&[&["--response-profile", "debug", "--log-level", "error"][..], &CAPS].concat());
    for (what, program) in PROGRAMS {
        assert_caps_in(what, &s.call("lisp_eval", json!({"program": program})));
    }
}

#[test]
fn mcp_http_keeps_both_caps_on_every_print_path() {
    let server = HttpServer::start(&[&["--response-profile", "debug"][..], &CAPS].concat());
    let c = Client::connect(server.port, None);
    for (i, (what, program)) in PROGRAMS.iter().enumerate() {
        assert_caps_in(what, &c.call(10 + i as u64, "lisp_eval", json!({"program": program})));
    }
}

#[test]
fn run_keeps_both_caps_on_every_print_path() {
    let dir = std::env::temp_dir().join(format!("ptc-print-caps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut lines: Vec<String> =
        PROGRAMS.iter().map(|(_, p)| json!({"content": format!("```clojure\n{p}\n```")}).to_string()).collect();
    lines.push(json!({"content": "```clojure\n(return :done)\n```"}).to_string());
    let script: PathBuf = dir.join("script.jsonl");
    std::fs::write(&script, lines.join("\n")).unwrap();
    let llm = format!("script:{}", script.display());
    let o = Command::new(PTC)
        .args(["run", "--prompt", "Print", "--llm", &llm, "--max-turns", "10", "--output", "json"])
        .args(CAPS)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out} {}", String::from_utf8_lossy(&o.stderr));
    let step: Value = serde_json::from_str(out.trim()).unwrap();
    let turns = step["turns"].as_array().unwrap();
    assert_eq!(turns.len(), PROGRAMS.len() + 1, "{step}");
    for ((what, _), turn) in PROGRAMS.iter().zip(turns) {
        assert_caps(what, &strings(&turn["prints"]));
    }
}
