//! `cargo xtask fuzz [--ci | --seconds S | --minutes N | --runs N] [TARGET...]`: runs the
//! cargo-fuzz targets with their committed seed corpora (`fixtures/fuzz/<target>`).
//!
//! Targets: `parse` (the reader, `crates/ptc-lisp-syntax/fuzz`); `eval` (programs through
//! the engine and everything a server does with their results, under a counting allocator)
//! and `json_context` (context loading), both in `crates/ptc-lisp-eval/fuzz`; `frame`
//! (every incoming MCP JSON-RPC frame gets a verdict, `crates/ptc-mcp-aggregator/fuzz`);
//! `answer` (hostile model answers through `ptc run`'s extraction, feedback and whole
//! missions, `crates/ptc-subagent/fuzz`).
//!
//! No nightly toolchain is needed: the targets are built by the stable toolchain with
//! `RUSTC_BOOTSTRAP=1` (cargo-fuzz passes a few `-Z` flags) and without a sanitizer
//! (`--sanitizer none`; the engine has no `unsafe` to check, and the eval target counts
//! allocations itself). `cargo-fuzz` is installed from crates.io when missing. All targets
//! share one build directory, `target/fuzz`. New corpus entries go to
//! `target/fuzz-corpus/<target>`; a failing input to `target/fuzz-artifacts/<target>/`.
//!
//! `--ci` (what `cargo xtask ci` runs) builds every target, then runs each for
//! [`CI_SECONDS`]. `--runs N` stops each target after N executions, for the long runs
//! recorded in `docs/security.md`. Arguments after `--` go to libFuzzer as they are (for
//! a long run that should outlive known crashes: `-- -fork=1 -ignore_crashes=1`).
//!
//! Every run passes libFuzzer `-entropic_scale_per_exec_time=1`: inputs that run fast are
//! mutated more often than slow ones, so the rare inputs that build 100k-deep data or
//! megabyte answers stay in the corpus without taking most of the run's time.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// (target, crate directory holding its `fuzz/`).
const TARGETS: &[(&str, &str)] = &[
    ("parse", "crates/ptc-lisp-syntax"),
    ("eval", "crates/ptc-lisp-eval"),
    ("json_context", "crates/ptc-lisp-eval"),
    ("frame", "crates/ptc-mcp-aggregator"),
    ("answer", "crates/ptc-subagent"),
];

/// Seconds per target in `--ci`.
pub const CI_SECONDS: u64 = 25;

/// libFuzzer options every run gets (see the module documentation).
const LIBFUZZER: &[&str] =
    &["-rss_limit_mb=2048", "-timeout=10", "-print_final_stats=1", "-entropic_scale_per_exec_time=1"];

#[derive(Debug, PartialEq, Eq)]
enum Budget {
    Seconds(u64),
    Runs(u64),
}

/// What `cargo xtask fuzz` was asked to do.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    budget: Budget,
    targets: Vec<&'static str>,
    /// Passed to libFuzzer after the xtask's own options.
    libfuzzer: Vec<String>,
}

fn parse(args: &[String]) -> Result<Request> {
    let mut budget = Budget::Seconds(60);
    let mut targets: Vec<&'static str> = Vec::new();
    let mut libfuzzer = Vec::new();
    let mut it = args.iter();
    let whole = |v: Option<&String>, flag: &str| -> Result<u64> {
        v.and_then(|m| m.parse().ok()).with_context(|| format!("{flag} takes a whole number"))
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--ci" => budget = Budget::Seconds(CI_SECONDS),
            "--minutes" => budget = Budget::Seconds(whole(it.next(), "--minutes")?.saturating_mul(60)),
            "--seconds" => budget = Budget::Seconds(whole(it.next(), "--seconds")?),
            "--runs" => budget = Budget::Runs(whole(it.next(), "--runs")?),
            "--" => {
                libfuzzer.extend(it.by_ref().cloned());
            }
            name => match TARGETS.iter().find(|(t, _)| *t == name) {
                Some((t, _)) => targets.push(t),
                None => bail!(
                    "unknown fuzz target or option {name}; targets: {}; options: --ci, --seconds S, --minutes N, --runs N, -- <libFuzzer flags>",
                    names()
                ),
            },
        }
    }
    if targets.is_empty() {
        targets = TARGETS.iter().map(|(t, _)| *t).collect();
    }
    Ok(Request { budget, targets, libfuzzer })
}

/// Entry point of `cargo xtask fuzz`.
pub fn run(args: &[String]) -> Result<()> {
    let Request { budget, targets: chosen, libfuzzer: extra } = parse(args)?;
    ensure_cargo_fuzz()?;
    let root = crate::root();
    // Build everything first, so a target that does not compile fails before any runs.
    let mut built: Vec<&str> = Vec::new();
    for target in &chosen {
        let dir = crate_dir(target)?;
        if !built.contains(&dir) {
            eprintln!("==> build fuzz targets of {dir}");
            let status = cargo_fuzz(&root.join(dir), &["build"], &[]).status().context("cannot start cargo fuzz")?;
            if !status.success() {
                bail!("building the fuzz targets of {dir} failed ({status})");
            }
            built.push(dir);
        }
    }
    for target in chosen {
        let dir = root.join(crate_dir(target)?);
        let corpus = crate::target_dir().join("fuzz-corpus").join(target);
        let artifacts = crate::target_dir().join("fuzz-artifacts").join(target);
        std::fs::create_dir_all(&corpus)?;
        std::fs::create_dir_all(&artifacts)?;
        let seeds = root.join("fixtures/fuzz").join(target);
        let limit = match budget {
            Budget::Seconds(s) => {
                eprintln!("==> fuzz {target} for {s} s");
                format!("-max_total_time={s}")
            }
            Budget::Runs(n) => {
                eprintln!("==> fuzz {target} for {n} executions");
                format!("-runs={n}")
            }
        };
        let prefix = format!("-artifact_prefix={}/", artifacts.display());
        let corpus_dirs = [corpus.display().to_string(), seeds.display().to_string()];
        let status = cargo_fuzz(&dir, &["run", target], &[&corpus_dirs[0], &corpus_dirs[1], "--"])
            .arg(&limit)
            .args(LIBFUZZER)
            .arg(&prefix)
            .args(&extra)
            .status()
            .with_context(|| format!("cannot start cargo fuzz for {target}"))?;
        if !status.success() {
            let reproduce = format!(
                "reproduce: `RUSTC_BOOTSTRAP=1 cargo fuzz run --sanitizer none --target-dir target/fuzz {target} <file>` in {}",
                dir.display()
            );
            if std::fs::read_dir(&artifacts).is_ok_and(|mut d| d.next().is_some()) {
                bail!("fuzz target {target} found a failure: the input is in {} ({reproduce})", artifacts.display());
            }
            // a stack overflow kills the target before libFuzzer can save the input; the
            // seeds are the inputs that can be named
            let failing = failing_seeds(target, &seeds);
            bail!(
                "fuzz target {target} died without saving its input (a stack overflow does that); failing seeds: {} ({reproduce})",
                if failing.is_empty() { "none, the input was a new one".to_string() } else { failing.join(", ") }
            );
        }
    }
    Ok(())
}

/// The seed files on which the built `target` fails when run alone.
fn failing_seeds(target: &str, seeds: &Path) -> Vec<String> {
    let host = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let binary = crate::target_dir().join("fuzz").join(host).join("release").join(target);
    if !binary.is_file() {
        return Vec::new();
    }
    let mut files: Vec<_> = std::fs::read_dir(seeds).into_iter().flatten().flatten().map(|e| e.path()).collect();
    files.sort();
    files
        .into_iter()
        .filter(|f| {
            let run = Command::new(&binary).arg(f).stdout(Stdio::null()).stderr(Stdio::null()).status();
            !run.is_ok_and(|s| s.success())
        })
        .map(|f| f.display().to_string())
        .collect()
}

fn names() -> String {
    TARGETS.iter().map(|(t, _)| *t).collect::<Vec<_>>().join(", ")
}

fn crate_dir(target: &str) -> Result<&'static str> {
    TARGETS.iter().find(|(t, _)| *t == target).map(|(_, d)| *d).context("unknown fuzz target")
}

/// `cargo fuzz <sub> --sanitizer none --target-dir target/fuzz <rest>` in `dir`, on the
/// toolchain that runs this xtask, allowed the `-Z` flags cargo-fuzz passes.
fn cargo_fuzz(dir: &Path, sub: &[&str], rest: &[&str]) -> Command {
    let mut c = Command::new(crate::cargo());
    c.arg("fuzz")
        .args(&sub[..1])
        .args(["--sanitizer", "none", "--target-dir"])
        .arg(crate::target_dir().join("fuzz"))
        .args(&sub[1..])
        .args(rest)
        .env("RUSTC_BOOTSTRAP", "1")
        .current_dir(dir);
    c
}

fn ensure_cargo_fuzz() -> Result<()> {
    let have = Command::new(crate::cargo()).args(["fuzz", "--version"]).output();
    if !have.is_ok_and(|o| o.status.success()) {
        crate::step("cargo install cargo-fuzz --locked", &crate::cargo(), &["install", "cargo-fuzz", "--locked"])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_after_the_separator_go_to_libfuzzer() {
        let r = parse(&args(&["eval", "--runs", "10000000", "--", "-fork=1", "-ignore_crashes=1", "answer"])).unwrap();
        assert_eq!(r.budget, Budget::Runs(10_000_000));
        assert_eq!(r.targets, vec!["eval"]);
        assert_eq!(r.libfuzzer, args(&["-fork=1", "-ignore_crashes=1", "answer"]));
    }

    #[test]
    fn no_target_means_every_target_and_no_extra_flags() {
        let r = parse(&args(&["--minutes", "2"])).unwrap();
        assert_eq!(r.budget, Budget::Seconds(120));
        assert_eq!(r.targets.len(), TARGETS.len());
        assert!(r.libfuzzer.is_empty());
    }

    #[test]
    fn an_unknown_word_names_the_options() {
        let e = parse(&args(&["-fork=1"])).unwrap_err().to_string();
        assert!(e.contains("unknown fuzz target or option -fork=1") && e.contains("-- <libFuzzer flags>"), "{e}");
    }
}
