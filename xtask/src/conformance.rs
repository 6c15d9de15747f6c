//! Differential conformance against real Clojure.
//!
//! Case files (`fixtures/conformance/<category>.txt`), one program per line:
//!
//! ```text
//! # a comment
//! (frequencies [1 1 2])
//! @ctx {"orders": [{"amount": 5}]}
//! (sum (map :amount (:orders ctx)))
//! @div DIV-nth | nil | nth out of range gives nil
//! (nth [1 2] 5)
//! ```
//!
//! `@ctx` gives the next case a context: Clojure sees it as `ctx` (keyword keys), PTC-Lisp
//! reads the same program with `ctx` bound through `(def ctx ...)` of the same data with
//! keyword keys. `@div ID | expected | reason` marks an intentional divergence: PTC-Lisp must print
//! exactly `expected` (or fail when `expected` is `!error`), whatever Clojure says.
//! `@prints` makes the next case compare what the program printed too (its `println` lines,
//! in order), for the cases whose point is a side effect: how often a lazy sequence runs
//! its steps.
//!
//! Results are compared structurally: Clojure's printed result is read back with our
//! reader (a list equals the vector of the same items, as `=` has it in Clojure;
//! characters are 1-char strings, map and set order does not matter). When Clojure throws, PTC-Lisp must fail too.
//!
//! Our own output of every case is recorded beside it (`<category>.out`: the program, then
//! `=> printed result` or `=> !error reason`), refreshed by `cargo xtask conformance --record`
//! (no JVM needed) and checked by `cargo test -p xtask`, so a change of behaviour shows up
//! without Clojure installed.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use ptc_lisp_eval::{RunOptions, RunResult, Value};
use ptc_lisp_syntax::{Form, FormKind};
use serde_json::json;

/// One case.
#[derive(Debug, Clone)]
pub struct Case {
    category: String,
    line: usize,
    src: String,
    ctx: Option<serde_json::Value>,
    div: Option<Divergence>,
    /// Compare the printed lines with Clojure's output as well (`@prints`).
    prints: bool,
}

/// An intentional divergence from Clojure, pinned by a case.
#[derive(Debug, Clone)]
pub struct Divergence {
    id: String,
    expected: String,
    reason: String,
}

fn load_cases(dir: &Path) -> Result<Vec<Case>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for f in files {
        let category = f.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
        let text = std::fs::read_to_string(&f)?;
        let mut ctx = None;
        let mut div = None;
        let mut prints = false;
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            if let Some(rest) = t.strip_prefix("@ctx ") {
                ctx = Some(
                    serde_json::from_str(rest).with_context(|| format!("{}:{}: bad @ctx JSON", f.display(), i + 1))?,
                );
                continue;
            }
            if t == "@prints" {
                prints = true;
                continue;
            }
            if let Some(rest) = t.strip_prefix("@div ") {
                let parts: Vec<&str> = rest.splitn(3, '|').map(str::trim).collect();
                let [id, expected, reason] = parts.as_slice() else {
                    bail!("{}:{}: write @div ID | expected result | reason", f.display(), i + 1);
                };
                div =
                    Some(Divergence { id: id.to_string(), expected: expected.to_string(), reason: reason.to_string() });
                continue;
            }
            cases.push(Case {
                category: category.clone(),
                line: i + 1,
                src: t.to_string(),
                ctx: ctx.take(),
                div: div.take(),
                prints: std::mem::take(&mut prints),
            });
        }
    }
    Ok(cases)
}

const CLOJURE_JAR: &str = "/usr/share/java/clojure.jar";
const JSON_JAR: &str = "/usr/share/java/data.json.jar";

fn ensure_clojure() -> Result<()> {
    if Path::new(CLOJURE_JAR).exists() && Path::new(JSON_JAR).exists() {
        return Ok(());
    }
    eprintln!("installing clojure and libdata-json-clojure from Debian packages...");
    let sudo = if unsafe_is_root() { vec![] } else { vec!["sudo"] };
    for args in
        [vec!["apt-get", "update", "-qq"], vec!["apt-get", "install", "-y", "-qq", "clojure", "libdata-json-clojure"]]
    {
        let mut full = sudo.clone();
        full.extend(args);
        let status = Command::new(full[0]).args(&full[1..]).status().context("cannot run apt-get")?;
        if !status.success() {
            bail!("apt-get failed; install the Debian packages clojure and libdata-json-clojure");
        }
    }
    Ok(())
}

fn unsafe_is_root() -> bool {
    std::env::var("USER").map(|u| u == "root").unwrap_or(false)
        || Command::new("id").arg("-u").output().map(|o| o.stdout.starts_with(b"0")).unwrap_or(false)
}

fn run_oracle(root: &Path, cases: &[Case]) -> Result<Vec<serde_json::Value>> {
    ensure_clojure()?;
    let script = root.join("xtask/oracle/oracle.clj");
    let mut child = Command::new("java")
        .args(["-cp", &format!("{CLOJURE_JAR}:{JSON_JAR}"), "clojure.main"])
        .arg(&script)
        .env("ORACLE_TIMEOUT_MS", "5000")
        .env("ORACLE_PRELUDE", root.join("xtask/oracle/prelude.clj"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start java for the Clojure oracle")?;
    let mut stdin = child.stdin.take().context("no stdin")?;
    let lines: Vec<String> = cases
        .iter()
        .map(|c| match &c.ctx {
            Some(ctx) => json!({"src": c.src, "ctx": ctx}).to_string(),
            None => json!(c.src).to_string(),
        })
        .collect();
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        for l in lines {
            writeln!(stdin, "{l}")?;
        }
        Ok(())
    });
    let stdout = child.stdout.take().context("no stdout")?;
    let mut out = Vec::with_capacity(cases.len());
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        out.push(
            serde_json::from_str(&line).unwrap_or_else(|_| json!({"ok": false, "class": "unreadable", "msg": line})),
        );
        if out.len() == cases.len() {
            break;
        }
    }
    let _ = writer.join();
    let _ = child.kill();
    let _ = child.wait();
    if out.len() != cases.len() {
        bail!("the oracle answered {} of {} cases", out.len(), cases.len());
    }
    Ok(out)
}

/// Converts a form read from Clojure's output to a value for comparison.
fn form_to_value(f: &Form) -> Option<Value> {
    Some(match &f.kind {
        FormKind::Nil => Value::Nil,
        FormKind::Bool(b) => Value::Bool(*b),
        FormKind::Int(i) => Value::Int(*i),
        FormKind::Float(x) => Value::Float(*x),
        FormKind::Str(s) => Value::str(s.as_str()),
        FormKind::Char(c) => Value::str(c.to_string()),
        FormKind::Keyword(k) => Value::kw(k.as_str()),
        FormKind::Symbol { ns, name } => Value::Symbol(Arc::from(match ns {
            Some(ns) => format!("{ns}/{name}"),
            None => name.clone(),
        })),
        FormKind::List(items) | FormKind::Vector(items) => {
            Value::vector(items.iter().map(form_to_value).collect::<Option<Vec<_>>>()?)
        }
        FormKind::Set(items) => Value::set(items.iter().map(form_to_value).collect::<Option<Vec<_>>>()?),
        FormKind::Map(items) => {
            let vals = items.iter().map(form_to_value).collect::<Option<Vec<_>>>()?;
            Value::map(vals.chunks(2).filter_map(|c| match c {
                [k, v] => Some((k.clone(), v.clone())),
                _ => None,
            }))
        }
        FormKind::Regex(src) => Value::Regex(Arc::new(ptc_lisp_eval::RegexValue::compile(src).ok()?)),
        _ => return None,
    })
}

/// Strict structural sameness: like `=` but 1 and 1.0 differ and NaN equals NaN.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Value::Vector(x) | Value::List(x), Value::Vector(y) | Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| same(p, q))
        }
        (Value::Func(_), Value::Symbol(_)) => false,
        _ => a == b,
    }
}

enum Verdict {
    Agree,
    Divergent,
    Disagree(String),
}

/// JSON to a value with keyword keys, the way the oracle binds `ctx`.
fn keywordized(j: &serde_json::Value) -> Value {
    match j {
        serde_json::Value::Object(obj) => Value::map(obj.iter().map(|(k, v)| (Value::kw(k.as_str()), keywordized(v)))),
        serde_json::Value::Array(items) => Value::vector(items.iter().map(keywordized)),
        other => ptc_lisp_eval::json::from_json(other),
    }
}

fn run_case(case: &Case) -> ptc_lisp_eval::Outcome {
    let mut opts = RunOptions::default();
    if let Some(ctx) = &case.ctx {
        opts.memory.insert(Arc::from("ctx"), keywordized(ctx));
    }
    ptc_lisp_eval::run(&case.src, opts)
}

/// Our result of a case as recorded: the printed value, or `!error reason`.
fn recorded(case: &Case) -> String {
    let out = run_case(case);
    match &out.result {
        RunResult::Value(_) | RunResult::Returned(_) => out.printed.replace('\n', "\\n"),
        RunResult::Failed(v) => format!("!fail {}", ptc_lisp_eval::to_clojure(v)),
        RunResult::Error(e) => format!("!error {}", e.kind),
    }
}

fn recording(cases: &[&Case]) -> String {
    let mut text = String::new();
    for c in cases {
        text.push_str(&c.src);
        text.push_str("\n=> ");
        text.push_str(&recorded(c));
        text.push('\n');
    }
    text
}

fn by_category(cases: &[Case]) -> BTreeMap<&str, Vec<&Case>> {
    let mut out: BTreeMap<&str, Vec<&Case>> = BTreeMap::new();
    for c in cases {
        out.entry(c.category.as_str()).or_default().push(c);
    }
    out
}

/// Writes `<category>.out` beside each case file with our current output.
pub fn record(root: &Path) -> Result<()> {
    let dir = root.join("fixtures/conformance");
    let cases = load_cases(&dir)?;
    for (category, cs) in by_category(&cases) {
        std::fs::write(dir.join(format!("{category}.out")), recording(&cs))?;
    }
    eprintln!("recorded our output of {} cases", cases.len());
    Ok(())
}

fn judge(case: &Case, oracle: &serde_json::Value) -> Verdict {
    let out = run_case(case);
    let ours = match &out.result {
        RunResult::Value(v) | RunResult::Returned(v) => Ok(v.clone()),
        RunResult::Failed(v) => Err(format!("fail {}", ptc_lisp_eval::to_clojure(v))),
        RunResult::Error(e) => Err(format!("{}: {}", e.kind, e.message)),
    };
    if let Some(Divergence { id, expected, .. }) = &case.div {
        return match (&ours, expected.as_str()) {
            (Err(_), "!error") => Verdict::Divergent,
            (Ok(_), e) if out.printed == e => Verdict::Divergent,
            (Ok(_), e) => Verdict::Disagree(format!("{id}: expected our result {e}, got {}", out.printed)),
            (Err(m), e) => Verdict::Disagree(format!("{id}: expected our result {e}, got error {m}")),
        };
    }
    let clj_ok = oracle.get("ok").and_then(|v| v.as_bool()).unwrap_or(false);
    if !clj_ok {
        let class = oracle.get("class").and_then(|v| v.as_str()).unwrap_or("?");
        return match ours {
            Err(_) => Verdict::Agree,
            Ok(_) => Verdict::Disagree(format!("Clojure throws {class}, we returned {}", out.printed)),
        };
    }
    let edn = oracle.get("edn").and_then(|v| v.as_str()).unwrap_or("");
    let theirs = ptc_lisp_syntax::parse_program(edn).ok().and_then(|forms| match forms.as_slice() {
        [one] => form_to_value(one),
        [] => Some(Value::Nil),
        _ => None,
    });
    let Some(theirs) = theirs else {
        return Verdict::Disagree(format!("cannot read Clojure's result {edn}"));
    };
    let printed: String = out.prints.iter().map(|l| format!("{l}\n")).collect();
    let clj_out = oracle.get("out").and_then(|v| v.as_str()).unwrap_or("");
    match ours {
        Ok(v) if same(&v, &theirs) && case.prints && printed != clj_out => {
            Verdict::Disagree(format!("Clojure printed {clj_out:?}, we printed {printed:?}"))
        }
        Ok(v) if same(&v, &theirs) => Verdict::Agree,
        Ok(_) => Verdict::Disagree(format!("Clojure {edn}, we {}", out.printed)),
        Err(m) => Verdict::Disagree(format!("Clojure {edn}, we failed: {m}")),
    }
}

#[derive(Default)]
struct Tally {
    cases: usize,
    agree: usize,
    divergent: usize,
    disagree: usize,
}

/// Runs the suite, writes `docs/conformance.md`, fails on any unexpected disagreement.
pub fn run(root: &Path) -> Result<()> {
    let mut cases = load_cases(&root.join("fixtures/conformance"))?;
    // CONFORMANCE_ONLY=string,regex runs only those category files (docs are not rewritten)
    let only = std::env::var("CONFORMANCE_ONLY").ok();
    if let Some(only) = &only {
        let wanted: Vec<&str> = only.split(',').collect();
        cases.retain(|c| wanted.contains(&c.category.as_str()));
    }
    if cases.is_empty() {
        bail!("no conformance cases found in fixtures/conformance");
    }
    let oracle = run_oracle(root, &cases)?;
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    let mut failures = Vec::new();
    for (case, o) in cases.iter().zip(&oracle) {
        let t = tallies.entry(case.category.clone()).or_default();
        t.cases += 1;
        match judge(case, o) {
            Verdict::Agree => t.agree += 1,
            Verdict::Divergent => t.divergent += 1,
            Verdict::Disagree(why) => {
                t.disagree += 1;
                failures.push(format!("{}.txt:{}: {}\n    {}", case.category, case.line, case.src, why));
            }
        }
    }
    let total: usize = tallies.values().map(|t| t.cases).sum();
    let agree: usize = tallies.values().map(|t| t.agree).sum();
    let div: usize = tallies.values().map(|t| t.divergent).sum();
    let mut md = String::from(
        "# Conformance against real Clojure\n\nGenerated by `cargo xtask conformance`: every case in `fixtures/conformance/` runs in Clojure 1.11 and in PTC-Lisp; results are compared structurally. Intentional divergences are listed in [divergences.md](divergences.md).\n\n| category | cases | agree | intentional divergences | disagree |\n|---|---:|---:|---:|---:|\n",
    );
    for (cat, t) in &tallies {
        md.push_str(&format!("| {cat} | {} | {} | {} | {} |\n", t.cases, t.agree, t.divergent, t.disagree));
    }
    md.push_str(&format!("| **total** | {total} | {agree} | {div} | {} |\n", failures.len()));
    if only.is_none() {
        std::fs::write(root.join("docs/conformance.md"), md)?;
        write_divergences(root, &cases, &oracle)?;
    }
    for f in &failures {
        eprintln!("{f}");
    }
    eprintln!("conformance: {total} cases, {agree} agree, {div} intentional divergences, {} disagree", failures.len());
    if !failures.is_empty() {
        bail!("{} conformance cases disagree with Clojure", failures.len());
    }
    Ok(())
}

/// Writes `docs/divergences.md` from the `@div` cases: each intentional divergence with
/// its example, our result and Clojure's.
fn write_divergences(root: &Path, cases: &[Case], oracle: &[serde_json::Value]) -> Result<()> {
    let mut md = String::from(
        "# Intentional divergences from Clojure\n\nGenerated by `cargo xtask conformance` from the `@div` cases in `fixtures/conformance/`; each row is also a test that pins our behaviour. See also `ARCHITECTURE.md` (key decisions).\n\n| id | program | PTC-Lisp | Clojure 1.11 | why |\n|---|---|---|---|---|\n",
    );
    for (case, o) in cases.iter().zip(oracle) {
        let Some(d) = &case.div else { continue };
        let clj = if o.get("ok").and_then(|v| v.as_bool()).unwrap_or(false) {
            o.get("edn").and_then(|v| v.as_str()).unwrap_or("").to_string()
        } else {
            format!("throws {}", o.get("class").and_then(|v| v.as_str()).unwrap_or("?"))
        };
        let clj = stable_object_ids(&clj);
        let cell = |s: &str| s.replace('|', "\\|");
        md.push_str(&format!(
            "| {} | `{}` | `{}` | `{}` | {} |\n",
            cell(&d.id),
            cell(&case.src),
            cell(&d.expected),
            cell(&clj),
            cell(&d.reason)
        ));
    }
    std::fs::write(root.join("docs/divergences.md"), md)?;
    Ok(())
}

/// Clojure prints an object's identity hash (`#object[java.time.Duration 0x2271d383 ...]`),
/// which changes from run to run; the generated page shows `0x…` so it only changes when a
/// result does.
fn stable_object_ids(edn: &str) -> String {
    let mut out = String::with_capacity(edn.len());
    let mut rest = edn;
    while let Some(at) = rest.find(" 0x") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 3..];
        let hex = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex > 0 && rest[..at].contains("#object[") {
            out.push_str(" 0x…");
        } else {
            out.push_str(&rest[at..at + 3 + hex]);
        }
        rest = &after[hex..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program that never ends (the `GAP-lazy` cases) stops at whichever resource limit
    /// it reaches first, which depends on the machine's speed: those are one outcome here.
    fn resource_limits_as_one(text: &str) -> String {
        let mut out = text.to_string();
        for limit in ["!error memory_exceeded", "!error loop_limit_exceeded", "!error fuel_exhausted"] {
            out = out.replace(limit, "!error timeout");
        }
        out
    }

    /// Every case's output matches the recording, without a JVM.
    #[test]
    fn recorded_output_matches() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let dir = root.join("fixtures/conformance");
        let cases = load_cases(&dir).unwrap();
        let mut failures = Vec::new();
        for (category, cs) in by_category(&cases) {
            let file = dir.join(format!("{category}.out"));
            let want = resource_limits_as_one(&std::fs::read_to_string(&file).unwrap_or_default());
            let got = resource_limits_as_one(&recording(&cs));
            if want != got {
                let first = want
                    .lines()
                    .zip(got.lines())
                    .find(|(w, g)| w != g)
                    .map(|(w, g)| format!("recorded {w}\n    now      {g}"))
                    .unwrap_or_else(|| "the number of cases changed".to_string());
                failures.push(format!("{category}.out: {first}"));
            }
        }
        assert!(
            failures.is_empty(),
            "our output differs from the recording; check the change, then run cargo xtask conformance --record\n{}",
            failures.join("\n")
        );
    }
}
