//! The feature matrix of `cargo xtask ci`: `ptc-providers` with no vendor, each vendor
//! alone and all features; the `ptc` binary without vendors; `ptc-lisp-eval` without
//! default features; and the `Llm` seam and interpreter crates free of the async and HTTP stacks the
//! providers bring.
//!
//! Clippy, not test builds: a type check of every combination (tests included) costs
//! little once the workspace's clippy run has built the dependencies, while a test build
//! per combination would double the CI time on two cores.

use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{root, step};

/// One combination: a title and the feature flags after `cargo clippy -p <package>`.
pub struct Combination {
    pub title: &'static str,
    pub package: &'static str,
    pub flags: &'static [&'static str],
}

/// Every combination the matrix checks.
pub const MATRIX: &[Combination] = &[
    Combination { title: "ptc-providers with no vendor", package: "ptc-providers", flags: &["--no-default-features"] },
    Combination {
        title: "ptc-providers with openai only",
        package: "ptc-providers",
        flags: &["--no-default-features", "--features", "openai"],
    },
    Combination {
        title: "ptc-providers with anthropic only",
        package: "ptc-providers",
        flags: &["--no-default-features", "--features", "anthropic"],
    },
    Combination {
        title: "ptc-providers with gemini only",
        package: "ptc-providers",
        flags: &["--no-default-features", "--features", "gemini"],
    },
    Combination { title: "ptc-providers with all features", package: "ptc-providers", flags: &["--all-features"] },
    Combination { title: "ptc without vendors", package: "ptc", flags: &["--no-default-features"] },
    Combination {
        title: "ptc-lisp-eval without default features",
        package: "ptc-lisp-eval",
        flags: &["--no-default-features"],
    },
];

/// Clippy (a full type check, tests included) of every [`MATRIX`] combination, then
/// `cargo tree` of the crates that must not see tokio or reqwest.
pub fn feature_matrix(cargo: &str) -> Result<()> {
    for combination in MATRIX {
        let mut args = vec!["clippy", "-p", combination.package, "--all-targets"];
        args.extend(combination.flags);
        args.extend(["--", "-D", "warnings"]);
        step(combination.title, cargo, &args)?;
    }
    for krate in ["ptc-llm", "ptc-lisp-syntax", "ptc-lisp-eval", "ptc-signature", "ptc-files"] {
        eprintln!("==> {krate} has no tokio, reqwest or hyper");
        let output = Command::new(cargo)
            .args(["tree", "-p", krate, "-e", "normal", "--prefix", "none"])
            .current_dir(root())
            .output()
            .with_context(|| format!("cannot run cargo tree -p {krate}"))?;
        if !output.status.success() {
            bail!("cargo tree -p {krate} failed: {}", String::from_utf8_lossy(&output.stderr));
        }
        let tree = String::from_utf8_lossy(&output.stdout);
        let banned: Vec<&str> = tree
            .lines()
            .filter_map(|line| line.split_whitespace().next())
            .filter(|name| matches!(*name, "tokio" | "reqwest" | "hyper" | "rmcp"))
            .collect();
        if !banned.is_empty() {
            bail!("{krate} depends on {}: it must stay free of async and HTTP", banned.join(", "));
        }
    }
    Ok(())
}
