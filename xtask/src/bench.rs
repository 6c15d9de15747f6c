//! `cargo xtask bench`: benchmarks run side by side with their baselines, reported as
//! ratios. Nothing here asserts a timing; the numbers are for people.
//!
//! The core is the agent-workload suite of issue 17: each workload is answered by a
//! PTC-Lisp program and by a plain CPython 3 program over the same generated context file,
//! both run as whole processes (`ptc eval --context FILE -f prog.clj` against
//! `python3 prog.py FILE`), interleaved run by run so both sides see the same machine
//! noise. Each side's answer must equal the other's, or the bench fails. The figures go to
//! `docs/performance.md` and to stdout.
//!
//! Every workload is asked in several phrasings (see `workloads.rs`); each phrasing's answer
//! is checked against CPython's over the same data, and the main table shows the worst
//! phrasing of each workload and the geometric mean of those worst ratios. The sandbox
//! peers (pydantic-monty as a library and through its CLI, nbb) run the same workloads in
//! the same run when they are installed under `target/peers/` (see `peers.rs`).
//!
//! `--quick` does one timed run of each and a shorter scaling series, and writes its table
//! to `target/bench/performance-quick.md` (the committed `docs/performance.md` is only
//! written by a full run); `--runs N` sets the number of timed runs (default 5; the startup
//! row does four times as many).
//! `--latency` runs only the in-process, MCP and many-missions figures and replaces that section
//! of `docs/performance.md`, leaving the committed whole-process tables as they are.
//! `--mcp-only` runs only the MCP stdio and HTTP figures and prints them (nothing is
//! written); `--ptc PATH` measures that binary instead of building one (to compare two
//! builds, alternating them).

pub(crate) mod data;
mod latency;
mod measure;
mod peers;
mod report;
pub(crate) mod workloads;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use data::DataSet;
use measure::{Figures, Run};
use workloads::{PTC_LIMITS, Phrasing, Source, Workload};

/// What the command line asked for.
struct Options {
    runs: usize,
    quick: bool,
    latency_only: bool,
    mcp_only: bool,
    ptc: Option<PathBuf>,
}

impl Options {
    fn parse(args: &[String]) -> Result<Self> {
        let mut opts = Options { runs: 5, quick: false, latency_only: false, mcp_only: false, ptc: None };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--latency" => opts.latency_only = true,
                "--mcp-only" => opts.mcp_only = true,
                "--ptc" => opts.ptc = Some(PathBuf::from(it.next().context("--ptc needs the path of a ptc binary")?)),
                "--quick" => {
                    opts.quick = true;
                    opts.runs = 1;
                }
                "--runs" => {
                    let n = it.next().context("--runs needs a number")?;
                    opts.runs = n.parse().with_context(|| format!("--runs {n}: not a number"))?;
                    if opts.runs == 0 {
                        bail!("--runs must be at least 1");
                    }
                }
                other => bail!(
                    "unknown bench option {other} (expected --quick, --latency, --mcp-only, --ptc PATH or --runs N)"
                ),
            }
        }
        Ok(opts)
    }
}

/// One side-by-side row: a workload's figures for ptc and for its baseline.
pub struct Row {
    pub id: String,
    pub title: String,
    pub ptc: Figures,
    pub base: Figures,
}

/// One workload's phrasings, each measured against CPython over its own data, and the peers.
pub struct Phrasings {
    pub id: String,
    pub title: String,
    /// Phrasing name, where its data came from, and its figures.
    pub rows: Vec<(String, Source, Row)>,
    pub peers: Vec<peers::PeerFigure>,
}

impl Phrasings {
    /// The phrasing with the highest ptc / CPython time ratio.
    pub fn worst(&self) -> Option<&(String, Source, Row)> {
        self.rows.iter().max_by(|a, b| ratio(&a.2).total_cmp(&ratio(&b.2)))
    }
}

/// ptc's median time over CPython's.
pub fn ratio(r: &Row) -> f64 {
    r.ptc.median_ms / r.base.median_ms
}

/// The geometric mean of some ratios; NaN for none.
pub fn geometric_mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp()
}

/// The `ptc` and `python3` commands of one workload, ready to run.
struct Pair {
    ptc: Vec<String>,
    python: Vec<String>,
}

/// Runs every benchmark, prints the report and writes `docs/performance.md`.
pub fn run() -> Result<()> {
    // `cargo xtask bench [options]`: the options follow the command name
    let args: Vec<String> = std::env::args().skip(2).collect();
    let opts = Options::parse(&args)?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let ptc = match &opts.ptc {
        Some(p) => p.clone(),
        None => {
            crate::step("build release ptc", &cargo, &["build", "--release", "-p", "ptc", "--quiet"])?;
            crate::target_dir().join("release/ptc")
        }
    };
    if opts.mcp_only {
        eprintln!("==> MCP latency of {}", ptc.display());
        for line in latency::mcp(&ptc, if opts.quick { 1 } else { 5 })? {
            println!("- {line}");
        }
        return Ok(());
    }
    let python = python_interpreter()?;
    let dir = crate::target_dir().join("bench");
    std::fs::create_dir_all(dir.join("programs"))?;
    let machine = report::Machine::probe();
    if opts.latency_only {
        return latency_only(&ptc, &python, &opts);
    }

    eprintln!("==> whole process: ptc eval '(+ 1 2)' vs python3 -c 'print(1 + 2)'");
    let startup_pair =
        Pair { ptc: vec!["eval".into(), "(+ 1 2)".into()], python: vec!["-c".into(), "print(1 + 2)".into()] };
    let startup = side_by_side(&ptc, &python, &startup_pair, opts.runs * 4, |out| Ok(plain_answer(out)))?.0;
    let startup =
        Row { id: "0".into(), title: "whole process `ptc eval '(+ 1 2)'`".into(), ptc: startup.0, base: startup.1 };

    let peers = peers::Peers::probe(&dir);
    let mut phrasings = Vec::new();
    for w in workloads::all() {
        let mut set = Phrasings { id: w.id.into(), title: w.title.into(), rows: Vec::new(), peers: Vec::new() };
        let mut ctx_answer = None;
        for (k, p) in w.phrasings.iter().enumerate() {
            eprintln!("==> workload {} phrasing {k} ({}): {}", w.id, p.name, w.title);
            let (row, answer) = compare(&ptc, &python, &dir, &w, k, opts.runs)?;
            if p.source == Source::Context && ctx_answer.is_none() {
                ctx_answer = Some(answer);
            }
            set.rows.push((p.name.into(), p.source, row));
        }
        if let Some(answer) = ctx_answer {
            set.peers = peers.measure(&w, &dir, &answer);
        }
        phrasings.push(set);
    }
    let rows: Vec<Row> = phrasings
        .iter()
        .filter_map(|set| {
            set.worst().map(|(name, _, row)| Row {
                id: set.id.clone(),
                title: format!("{} — worst: `{name}`", set.title),
                ptc: row.ptc,
                base: row.base,
            })
        })
        .collect();
    eprintln!("==> workload 8 floor: serde_json parse in a release Rust program");
    let floor = json_floor(&python, &dir, opts.runs);

    let sizes: &[usize] = if opts.quick { &[10_000, 100_000] } else { &[10_000, 100_000, 1_000_000] };
    let mut scaling = Vec::new();
    for (make, scale) in [
        (workloads::orders_pipeline as fn(usize) -> Workload, 1),
        (workloads::numeric_loop, 10),
        (workloads::assoc_update, 1),
    ] {
        for &n in sizes {
            let w = make(n * scale);
            eprintln!("==> scaling {} at {}", w.id, n * scale);
            let (mut row, _) = compare(&ptc, &python, &dir, &w, 0, opts.runs)?;
            row.title = report::count(n * scale);
            scaling.push(row);
        }
    }

    eprintln!("==> in-process and MCP latency");
    let mut service = latency::in_process(&ptc, opts.runs, &python)?;
    service.extend(latency::mcp(&ptc, if opts.quick { 1 } else { 5 })?);
    eprintln!("==> many missions on one runtime");
    service.extend(latency::missions()?);

    let text = report::render(&report::Report {
        machine,
        runs: opts.runs,
        quick: opts.quick,
        startup,
        rows,
        phrasings,
        peers: peers.notes(),
        floor,
        scaling,
        service,
    });
    // a quick run is too noisy to stand as the committed record
    let doc = if opts.quick { dir.join("performance-quick.md") } else { crate::root().join("docs/performance.md") };
    // the hand-written profiling findings at the end of the document survive regeneration
    let old = std::fs::read_to_string(crate::root().join("docs/performance.md")).unwrap_or_default();
    let text = report::keep_hand_written(text, &old);
    std::fs::write(&doc, &text).with_context(|| format!("cannot write {}", doc.display()))?;
    println!("{text}");
    eprintln!("==> wrote {}", doc.display());
    Ok(())
}

/// `--latency`: the latency figures alone, written over the latency section of
/// `docs/performance.md` (the section's heading and everything after it).
fn latency_only(ptc: &Path, python: &Path, opts: &Options) -> Result<()> {
    eprintln!("==> in-process and MCP latency");
    let mut service = latency::in_process(ptc, opts.runs, python)?;
    service.extend(latency::mcp(ptc, if opts.quick { 1 } else { 5 })?);
    eprintln!("==> many missions on one runtime");
    service.extend(latency::missions()?);
    let doc = crate::root().join("docs/performance.md");
    let old = std::fs::read_to_string(&doc).with_context(|| format!("cannot read {}", doc.display()))?;
    let section = report::LATENCY_HEADING;
    let Some(at) = old.find(section) else {
        bail!("{} has no `{section}` section; run the whole bench once", doc.display());
    };
    let mut text = old[..at].to_string();
    text.push_str(&report::latency_section(&service));
    // the sections after it (the hand-written profiling findings) stay
    if let Some(next) = old[at + section.len()..].find("\n## ") {
        text.push_str(&old[at + section.len() + next..]);
    }
    std::fs::write(&doc, &text).with_context(|| format!("cannot write {}", doc.display()))?;
    println!("{}", report::latency_section(&service));
    eprintln!("==> updated the latency section of {}", doc.display());
    Ok(())
}

/// Runs phrasing `k` of workload `w` and CPython's program over the same data, checks that
/// the answers agree, and returns the figures and CPython's answer.
fn compare(
    ptc: &Path,
    python: &Path,
    dir: &Path,
    w: &Workload,
    k: usize,
    runs: usize,
) -> Result<(Row, serde_json::Value)> {
    let phrasing: &Phrasing = w.phrasings.get(k).with_context(|| format!("workload {} has no phrasing {k}", w.id))?;
    let (data, python_file) = w.baseline(phrasing.source);
    let ctx = data.ensure(dir)?;
    let programs = dir.join("programs");
    let clj = programs.join(format!("{}-{k}.clj", w.id));
    let py = programs.join(format!("{}-{}.py", w.id, source_tag(phrasing.source)));
    std::fs::write(&clj, &phrasing.lisp)?;
    std::fs::write(&py, python_file)?;
    let mut ptc_args: Vec<String> = vec!["eval".into(), "--output".into(), "json".into()];
    ptc_args.extend(PTC_LIMITS.iter().map(|s| s.to_string()));
    ptc_args.extend(["--context".into(), path_arg(&ctx), "-f".into(), path_arg(&clj)]);
    let pair = Pair { ptc: ptc_args, python: vec![path_arg(&py), path_arg(&ctx)] };
    let (figures, answer) = side_by_side(ptc, python, &pair, runs, |out| {
        let envelope: serde_json::Value = serde_json::from_str(out).context("ptc printed no JSON envelope")?;
        if envelope["status"] != "ok" {
            bail!("ptc did not answer: {envelope}");
        }
        Ok(envelope["value"].clone())
    })
    .with_context(|| format!("workload {} ({}), phrasing `{}`", w.id, w.title, phrasing.name))?;
    Ok((Row { id: w.id.into(), title: w.title.into(), ptc: figures.0, base: figures.1 }, answer))
}

fn source_tag(source: Source) -> &'static str {
    match source {
        Source::Context => "ctx",
        Source::Built => "built",
    }
}

/// One untimed warm-up run of each side (its answers are compared), then `runs` timed runs
/// alternating ptc and CPython. Returns both sides' figures and CPython's answer.
fn side_by_side(
    ptc: &Path,
    python: &Path,
    pair: &Pair,
    runs: usize,
    ptc_answer: impl Fn(&str) -> Result<serde_json::Value>,
) -> Result<((Figures, Figures), serde_json::Value)> {
    let ours = ptc_answer(&measure::run(ptc, &pair.ptc)?.stdout)?;
    let theirs_out = measure::run(python, &pair.python)?.stdout;
    let theirs = plain_answer(&theirs_out);
    if !same_answer(&ours, &theirs) {
        bail!("answers differ:\n  ptc:     {}\n  CPython: {}", clip(&ours), clip(&theirs));
    }
    let (mut a, mut b): (Vec<Run>, Vec<Run>) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        a.push(measure::run(ptc, &pair.ptc)?);
        b.push(measure::run(python, &pair.python)?);
    }
    Ok(((measure::figures(&a), measure::figures(&b)), theirs))
}

/// Workload 8's floor: a release Rust program that parses the same file with serde_json
/// and answers the same question. `None` with the reason when it cannot be built here.
fn json_floor(python: &Path, dir: &Path, runs: usize) -> Result<Figures, String> {
    let build = || -> Result<PathBuf> {
        let deps = crate::target_dir().join("release/deps");
        let rlib = newest_rlib(&deps, "libserde_json-")?;
        let src = dir.join("programs/json_floor.rs");
        std::fs::write(&src, workloads::EVENTS_FLOOR_RS)?;
        let exe = dir.join("programs/json-floor");
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        let out = Command::new(rustc)
            .args(["--edition", "2021", "-C", "opt-level=3", "-o"])
            .arg(&exe)
            .arg(&src)
            .arg("--extern")
            .arg(format!("serde_json={}", rlib.display()))
            .arg("-L")
            .arg(format!("dependency={}", deps.display()))
            .output()
            .context("cannot start rustc")?;
        if !out.status.success() {
            bail!("rustc failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(exe)
    };
    let measure_floor = || -> Result<Figures> {
        let exe = build()?;
        let ctx = DataSet::Events(50_000_000).ensure(dir)?;
        let args = vec![path_arg(&ctx)];
        let mut all = vec![measure::run(&exe, &args)?];
        let answer: serde_json::Value = serde_json::from_str(all[0].stdout.trim())?;
        let py = dir.join("programs/8-ctx.py");
        let theirs: serde_json::Value =
            serde_json::from_str(measure::run(python, &[path_arg(&py), path_arg(&ctx)])?.stdout.trim())?;
        if !same_answer(&answer, &theirs) {
            bail!("the serde_json floor's answer differs from CPython's: {answer} vs {theirs}");
        }
        all.clear();
        for _ in 0..runs {
            all.push(measure::run(&exe, &args)?);
        }
        Ok(measure::figures(&all))
    };
    measure_floor().map_err(|e| format!("{e:#}"))
}

/// The real CPython binary behind `python3`: a version manager's shim (pyenv's is a bash
/// script) would add its own start-up to every CPython figure.
fn python_interpreter() -> Result<PathBuf> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .context("cannot run python3 (CPython 3 is the baseline of the bench)")?;
    let exe = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || exe.is_empty() {
        bail!("python3 did not say where its interpreter is: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(PathBuf::from(exe))
}

fn newest_rlib(deps: &Path, prefix: &str) -> Result<PathBuf> {
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in std::fs::read_dir(deps).with_context(|| format!("cannot list {}", deps.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(prefix) && name.ends_with(".rlib") {
            let modified = entry.metadata()?.modified()?;
            if best.as_ref().is_none_or(|(t, _)| modified > *t) {
                best = Some((modified, entry.path()));
            }
        }
    }
    best.map(|(_, p)| p).with_context(|| format!("no {prefix}*.rlib in {}", deps.display()))
}

/// What a program printed, as JSON when it is JSON, else as a string.
pub fn plain_answer(out: &str) -> serde_json::Value {
    serde_json::from_str(out.trim()).unwrap_or_else(|_| serde_json::Value::String(out.trim().into()))
}

fn path_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Equal answers: numbers within a relative 1e-9 (an average may print as 2.5 on one side
/// and 2.5000000000000004 on the other; an integral float equals the integer), everything
/// else structurally.
pub fn same_answer(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    match (a, b) {
        (J::Number(x), J::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
            _ => x == y,
        },
        (J::Array(xs), J::Array(ys)) => xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same_answer(x, y)),
        (J::Object(xs), J::Object(ys)) => {
            xs.len() == ys.len() && xs.iter().all(|(k, x)| ys.get(k).is_some_and(|y| same_answer(x, y)))
        }
        _ => a == b,
    }
}

fn clip(v: &serde_json::Value) -> String {
    let s = v.to_string();
    if s.len() > 400 { format!("{}…", s.chars().take(400).collect::<String>()) } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_compare_numbers_by_value_and_the_rest_by_structure() {
        assert!(same_answer(&json!({"a": [1, 2.5]}), &json!({"a": [1.0, 2.5000000000000004]})));
        assert!(!same_answer(&json!({"a": 1}), &json!({"a": 2})));
        assert!(!same_answer(&json!({"a": 1}), &json!({"b": 1})));
        assert!(!same_answer(&json!([1, 2]), &json!([2, 1])));
        assert!(!same_answer(&json!("3"), &json!(3)));
    }

    #[test]
    fn the_worst_phrasing_is_the_highest_ratio_and_the_mean_is_geometric() {
        let fig = |ms| Figures { median_ms: ms, peak_mib: 1.0 };
        let row = |p, b| Row { id: "1".into(), title: "t".into(), ptc: fig(p), base: fig(b) };
        let set = Phrasings {
            id: "1".into(),
            title: "t".into(),
            rows: vec![
                ("a".into(), Source::Context, row(50.0, 100.0)),
                ("b".into(), Source::Built, row(90.0, 60.0)),
                ("c".into(), Source::Context, row(80.0, 100.0)),
            ],
            peers: Vec::new(),
        };
        assert_eq!(set.worst().map(|w| w.0.as_str()), Some("b"));
        assert!((geometric_mean(&[0.5, 2.0]) - 1.0).abs() < 1e-12);
        assert!((geometric_mean(&[0.25, 1.0]) - 0.5).abs() < 1e-12);
        assert!(geometric_mean(&[]).is_nan());
    }

    #[test]
    fn options_parse_quick_and_runs() {
        let quick = Options::parse(&["--quick".into()]).unwrap();
        assert!(quick.quick && quick.runs == 1);
        assert_eq!(Options::parse(&["--runs".into(), "3".into()]).unwrap().runs, 3);
        assert!(Options::parse(&["--runs".into(), "0".into()]).is_err());
        assert!(Options::parse(&["--fast".into()]).is_err());
    }
}
