//! `cargo xtask`: project automation (ci, conformance, bench, release, snapshots...).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};

mod agent_reasons;
mod api;
mod bench;
mod changelog;
mod conformance;
mod doc_blocks;
mod docs;
mod fuzz;
mod interop;
mod interop_upstreams;
mod load;
mod msrv;
mod prompts;
mod providers;
mod python;
mod reasons;
mod release;
mod snapshots;
mod version;

const USAGE: &str = "usage: cargo xtask <command>

commands:
  api           each library crate's public API (rustdoc JSON, stable toolchain) against
                api/<crate>.txt; fails with a diff when a surface changed (--bless: rewrite)
  ci            fmt --check, clippy -D warnings, public APIs (api), tests (failing on a
                pending snapshot), the feature matrix, rust-version, generated docs, prompt budgets, conformance
                against real Clojure, the Python package's pytest suite, MCP interop when
                python3 and npm are there, every fuzz target for 25 s
  conformance   run fixtures/conformance/*.txt against real Clojure; writes docs/conformance.md
                (--record: write our output of each case to fixtures/conformance/*.out, no JVM)
  bench         benchmarks side by side with baselines (CPython, whole-process startup)
  docs          regenerate docs/functions.md from the function registry and docs/reasons/
                from the reason enums (--check: fail when a committed file is stale)
  doc-blocks    run the shell blocks of README.md and docs/*.md (transcripts checked line by
                line; a short list of blocks that need a network or a key is skipped)
  fuzz          cargo-fuzz targets (parse, eval, json_context, frame, answer) on stable, each for
                --seconds S / --minutes N / --runs N (--ci: 25 s each, as ci runs them);
                arguments after -- go to libFuzzer (-- -fork=1 -ignore_crashes=1)
  interop       ptc mcp against the Python MCP SDK, the MCP Inspector, the conformance suite,
                sessions across two instances sharing Redis, and (aggregator mode) real
                upstream MCP servers and an OpenAPI service
  interop-upstreams  only the aggregator part of interop
  interop-sessions   only the sessions part of interop: the Python MCP SDK drives
                lisp_session_* across two ptc mcp --http instances sharing a redis-server
  load          HTTP load test of ptc mcp on 127.0.0.1 [--clients 100] [--seconds 30] [--release]
                (--hostile: 60 s of memory bombs, deep data and closures, 1 MB contexts; fails on
                a crash, an error other than a limit's, /health p99 >= 100 ms or RSS > 2x idle)
  prompts       each prompt card's size against its byte budget (fails over budget)
  python        build the ptc_runner Python package into target/python-venv (maturin, pytest
                from the package index) and run its pytest suite [--release] [pytest args];
                --bench [--quick]: ptc_runner beside pydantic-monty, smolagents and CPython
                exec in one Python process (tiny program and the agent workloads)
  features      only the feature matrix of ci (clippy of each provider feature alone, none, all...)
  msrv          only the rust-version check of ci (every dependency, the workflow, the READMEs)
  release       <major|minor|patch|X.Y.Z> [--skip-ci] [--execute]: bump, changelog, semver-checks,
                CI, package every crate, print the tag and publish commands (dry run unless
                --execute); --check: only cargo semver-checks against the last v* tag
  snapshots     run every crate's insta snapshot tests; list the changed ones
                (--review: as diffs; --accept: accept them)
";

fn main() -> ExitCode {
    if let Some(code) = api::rustdoc_wrapper() {
        return code;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("api") => api::run(&args[1..]),
        Some("conformance") if args.get(1).map(String::as_str) == Some("--record") => conformance::record(&root()),
        Some("conformance") => conformance::run(&root()),
        Some("bench") => bench::run(),
        Some("docs") if args.get(1).map(String::as_str) == Some("--check") => docs::check(&root()),
        Some("docs") => docs::run(&root()),
        Some("doc-blocks") => doc_blocks::run(&root()),
        Some("interop") => interop::run(&root()),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("prompts") => prompts::run(&root()),
        Some("load") => load::run(&root(), &args[1..]),
        Some("interop-upstreams") => interop::run_upstreams_only(&root()),
        Some("interop-sessions") => interop::run_sessions_only(&root()),
        Some("features") => providers::feature_matrix(&cargo()),
        Some("python") => python::run(&root(), &args[1..]),
        Some("msrv") => msrv::check(&root(), &cargo()),
        Some("release") => release::run(&args[1..]),
        Some("snapshots") => snapshots::run(&args[1..]),
        Some("-h" | "--help" | "help") | None => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => {
            eprint!("unknown command {other}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root.
pub fn root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(Path::to_path_buf).unwrap_or(here)
}

/// Cargo's target directory (`CARGO_TARGET_DIR` when set, else `<root>/target`).
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => {
            let d = PathBuf::from(d);
            if d.is_absolute() { d } else { root().join(d) }
        }
        None => root().join("target"),
    }
}

/// Runs a command in the workspace root, failing on a non-zero exit.
pub fn step(title: &str, program: &str, args: &[&str]) -> Result<()> {
    step_with_env(title, program, args, &[])
}

/// [`step`] with extra environment variables.
pub fn step_with_env(title: &str, program: &str, args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    eprintln!("==> {title}");
    let status = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(root())
        .status()
        .with_context(|| format!("cannot start {program}"))?;
    if !status.success() {
        bail!("{title} failed ({status})");
    }
    Ok(())
}

/// The cargo that runs this xtask.
fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

fn ci() -> Result<()> {
    let cargo = cargo();
    step("cargo fmt --check", &cargo, &["fmt", "--all", "--check"])?;
    step("cargo clippy -D warnings", &cargo, &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"])?;
    // Right after clippy: rustdoc reads the dependencies clippy just type-checked.
    api::run(&[])?;
    // A changed snapshot fails its test here instead of being written as .snap.new for
    // later; the check after it catches one left over from an earlier run.
    let snapshots_strict = [("INSTA_UPDATE", "no"), ("CI", "true")];
    step_with_env("cargo test", &cargo, &["test", "--workspace", "--quiet"], &snapshots_strict)?;
    eprintln!("==> no pending snapshot");
    snapshots::check_none_pending(&root())?;
    providers::feature_matrix(&cargo)?;
    msrv::check(&root(), &cargo)?;
    eprintln!("==> docs/functions.md and docs/reasons/ are up to date");
    docs::check(&root())?;
    eprintln!("==> prompt cards within budget");
    prompts::run(&root())?;
    eprintln!("==> the shell blocks of the README and docs/");
    doc_blocks::run(&root())?;
    eprintln!("==> the Python package (maturin, pytest)");
    python::run(&root(), &[])?;
    eprintln!("==> conformance against real Clojure");
    conformance::run(&root())?;
    if interop::available() {
        eprintln!("==> MCP interop (Python SDK, Inspector, conformance suite)");
        interop::run(&root())?;
    } else {
        eprintln!("==> MCP interop skipped: python3 and npm are needed");
    }
    eprintln!("==> fuzz targets, {} s each", fuzz::CI_SECONDS);
    fuzz::run(&["--ci".to_string()])?;
    eprintln!("==> ci: all green");
    Ok(())
}
