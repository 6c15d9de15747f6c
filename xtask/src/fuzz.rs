//! `cargo xtask fuzz [--minutes N] [TARGET...]`: runs the cargo-fuzz targets with their
//! committed seed corpora (`fixtures/fuzz/<target>`), each for N minutes (default 1).
//!
//! Targets: `parse` (the reader, `crates/ptc-lisp-syntax/fuzz`), `eval` (structured
//! programs through the engine) and `json_context` (context loading), both in
//! `crates/ptc-lisp-eval/fuzz`, and `frame` (every incoming MCP JSON-RPC frame gets a verdict,
//! `crates/ptc-mcp-aggregator/fuzz`). libFuzzer needs a nightly toolchain (`rustup toolchain
//! install nightly`) and `cargo-fuzz` (installed here when missing). New corpus entries go
//! to `target/fuzz-corpus/<target>`; crashes to the fuzz directory's `artifacts/`.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};

const TARGETS: &[(&str, &str)] = &[
    ("parse", "crates/ptc-lisp-syntax"),
    ("eval", "crates/ptc-lisp-eval"),
    ("json_context", "crates/ptc-lisp-eval"),
    ("frame", "crates/ptc-mcp-aggregator"),
];

/// Entry point.
pub fn run(args: &[String]) -> Result<()> {
    let mut minutes = 1u64;
    let mut chosen: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--minutes" => {
                minutes = it.next().and_then(|m| m.parse().ok()).context("--minutes takes a whole number")?;
            }
            name => match TARGETS.iter().find(|(t, _)| *t == name) {
                Some((t, _)) => chosen.push(t),
                None => bail!("unknown fuzz target {name}; targets: parse, eval, json_context, frame"),
            },
        }
    }
    if chosen.is_empty() {
        chosen = TARGETS.iter().map(|(t, _)| *t).collect();
    }
    let toolchain_ok = Command::new("rustup").args(["run", "nightly", "rustc", "--version"]).output();
    if !toolchain_ok.is_ok_and(|o| o.status.success()) {
        bail!("fuzzing needs a nightly toolchain: rustup toolchain install nightly");
    }
    let have_fuzz = Command::new("cargo").args(["+nightly", "fuzz", "--version"]).output();
    if !have_fuzz.is_ok_and(|o| o.status.success()) {
        crate::step("cargo install cargo-fuzz", "cargo", &["install", "cargo-fuzz", "--locked"])?;
    }
    let root = crate::root();
    for target in chosen {
        let dir = TARGETS.iter().find(|(t, _)| *t == target).map(|(_, d)| root.join(d)).context("target")?;
        let corpus = crate::target_dir().join("fuzz-corpus").join(target);
        std::fs::create_dir_all(&corpus)?;
        let seeds: PathBuf = root.join("fixtures/fuzz").join(target);
        let secs = (minutes * 60).to_string();
        eprintln!("==> fuzz {target} for {minutes} min");
        let status = Command::new("cargo")
            .args(["+nightly", "fuzz", "run", target])
            .arg(&corpus)
            .arg(&seeds)
            .args(["--", &format!("-max_total_time={secs}"), "-rss_limit_mb=4096", "-timeout=10"])
            .current_dir(&dir)
            .status()
            .with_context(|| format!("cannot start cargo fuzz for {target}"))?;
        if !status.success() {
            bail!("fuzz target {target} found a failure (see {}/fuzz/artifacts/{target})", dir.display());
        }
    }
    Ok(())
}
