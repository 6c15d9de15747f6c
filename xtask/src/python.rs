//! `cargo xtask python`: builds the `ptc_runner` Python package and runs its pytest suite.
//!
//! A virtual environment under `target/python-venv` gets maturin and pytest from the
//! package index (once; later runs reuse it), maturin builds the extension into it
//! (`maturin develop`, the debug profile that `cargo test` already built the workspace
//! crates in), and pytest runs `crates/ptc-python/tests` — which also runs the Python
//! examples of the README's "From Python" section and of `docs/python.md`.
//! `--release` builds the extension optimised (for `crates/ptc-python/bench/side_by_side.py`).

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

/// `cargo xtask python [--release] [pytest args...]`.
pub fn run(root: &Path, args: &[String]) -> Result<()> {
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
