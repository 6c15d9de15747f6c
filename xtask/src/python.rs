//! `cargo xtask python`: builds the `ptc_runner` Python package and runs its pytest suite.
//!
//! A virtual environment under `target/python-venv` gets maturin and pytest from the
//! package index (once; later runs reuse it), maturin builds the extension into it
//! (`maturin develop`, the debug profile that `cargo test` already built the workspace
//! crates in), and pytest runs `crates/ptc-python/tests` — which also runs the Python
//! examples of the README's "From Python" section and of `docs/python.md`.
//! `--release` builds the extension optimised.
//!
//! `--bench [--quick]` runs `crates/ptc-python/bench/side_by_side.py` in one Python
//! process: a tiny program and the canonical context-fed phrasing of each agent workload
//! of `cargo xtask bench` (the programs and data generators are that bench's, at a tenth of
//! their size) through `ptc_runner` with a release build, beside pydantic-monty,
//! smolagents' `LocalPythonExecutor` and CPython `exec` running the workload's Python
//! program; it prints a Markdown section for `docs/performance.md`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// What the venv gets from the package index.
const REQUIREMENTS: &[&str] = &["maturin>=1.9.4,<2", "pytest>=8,<10"];

/// The venv the package is built into.
pub fn venv() -> PathBuf {
    crate::target_dir().join("python-venv")
}

/// Creates the venv with maturin and pytest unless it has them; returns its python.
pub fn ensure_venv(extra: &[&str]) -> Result<PathBuf> {
    let venv = venv();
    let python = venv.join("bin/python");
    if !python.is_file() {
        let system = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_string());
        crate::step(
            &format!("create {}", venv.display()),
            &system,
            &["-m", "venv", &venv.display().to_string()],
        )
        .context("cannot create the virtual environment: Python 3.10 or newer with its venv module is needed (Debian: apt-get install python3-venv)")?;
    }
    let have = |tool: &str| venv.join("bin").join(tool).is_file();
    let mut wanted: Vec<&str> = Vec::new();
    if !have("maturin") || !have("pytest") {
        wanted.extend(REQUIREMENTS);
    }
    wanted.extend(extra);
    if !wanted.is_empty() {
        let mut args = vec!["-m", "pip", "install", "--quiet", "--disable-pip-version-check"];
        args.extend(wanted);
        crate::step("pip install (the package index)", &python.display().to_string(), &args)?;
    }
    Ok(python)
}

/// Builds the extension into the venv with maturin.
pub fn build(root: &Path, release: bool) -> Result<()> {
    let venv = venv();
    let maturin = venv.join("bin/maturin");
    let mut args = vec!["develop", "--quiet", "-m", "crates/ptc-python/Cargo.toml"];
    if release {
        args.push("--release");
    }
    eprintln!("==> maturin {}", args.join(" "));
    let path = match std::env::var_os("PATH") {
        Some(p) => format!("{}:{}", venv.join("bin").display(), p.to_string_lossy()),
        None => venv.join("bin").display().to_string(),
    };
    let status = Command::new(&maturin)
        .args(&args)
        .env("VIRTUAL_ENV", &venv)
        .env("PATH", path)
        .current_dir(root)
        .status()
        .with_context(|| format!("cannot start {}", maturin.display()))?;
    if !status.success() {
        bail!("maturin develop failed ({status})");
    }
    Ok(())
}

/// `cargo xtask python [--release] [pytest args...]`, or `--bench [--quick]`.
pub fn run(root: &Path, args: &[String]) -> Result<()> {
    if args.iter().any(|a| a == "--bench") {
        return bench(root, args.iter().any(|a| a == "--quick"));
    }
    let release = args.iter().any(|a| a == "--release");
    let pytest_args: Vec<&str> = args.iter().filter(|a| *a != "--release").map(String::as_str).collect();
    let started = std::time::Instant::now();
    let python = ensure_venv(&[])?;
    build(root, release)?;
    let mut cmd = vec!["-m", "pytest", "-q", "crates/ptc-python/tests"];
    cmd.extend(pytest_args);
    crate::step("pytest crates/ptc-python/tests", &python.display().to_string(), &cmd)?;
    eprintln!("    python package: {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// The workloads at a tenth of their size: in one process every interpreter runs each one
/// several times, and the slowest peers are 100× CPython.
fn scaled(data: crate::bench::data::DataSet) -> crate::bench::data::DataSet {
    use crate::bench::data::DataSet;
    match data {
        DataSet::Orders(n) => DataSet::Orders(n / 10),
        DataSet::Text(n) => DataSet::Text(n / 10),
        DataSet::Logs(n) => DataSet::Logs(n / 10),
        DataSet::Join(n, m) => DataSet::Join(n / 10, m / 10),
        DataSet::Size(n) => DataSet::Size(n / 10),
        DataSet::Events(n) => DataSet::Events(n / 10),
    }
}

/// `cargo xtask python --bench`: writes the workloads (programs and data) to
/// `target/python-bench/` and runs the side-by-side script on them.
fn bench(root: &Path, quick: bool) -> Result<()> {
    use crate::bench::workloads::{self, Source};
    let python = ensure_venv(&["pydantic-monty", "smolagents"])?;
    build(root, true)?;
    let dir = crate::target_dir().join("python-bench");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut manifest = Vec::new();
    for w in workloads::all() {
        let Some(lisp) = w.phrasings.iter().find(|p| p.source == Source::Context) else { continue };
        let (_, python_file) = w.baseline(Source::Context);
        // the program without its first two lines (`import json, sys`, the json.load)
        let body = python_file.splitn(3, '\n').nth(2).unwrap_or("").to_string();
        let data = scaled(w.data);
        let context = data.ensure(&dir)?;
        manifest.push(serde_json::json!({
            "id": w.id,
            "title": w.title,
            "phrasing": lisp.name,
            "lisp": lisp.lisp,
            "python": format!("import json\n{body}"),
            "context": context.display().to_string(),
            "data": format!("{data:?}"),
        }));
    }
    let path = dir.join("manifest.json");
    std::fs::write(&path, serde_json::to_string_pretty(&manifest)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let script = root.join("crates/ptc-python/bench/side_by_side.py");
    let mut args = vec![script.display().to_string(), path.display().to_string()];
    if quick {
        args.push("--quick".to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    crate::step("side by side in one Python process", &python.display().to_string(), &args)
}
