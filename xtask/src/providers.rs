//! CI checks for `ptc-providers`: every vendor feature builds alone, and the interpreter
//! crates stay free of the async and HTTP stacks the providers bring.

use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{root, step};

/// Clippy (a full type check, tests included) of `ptc-providers` with no vendor and with
/// each vendor alone, then `cargo tree` of the crates that must not see tokio or reqwest.
pub fn feature_matrix(cargo: &str) -> Result<()> {
    for features in ["", "openai", "anthropic", "gemini"] {
        let mut args = vec!["clippy", "-p", "ptc-providers", "--all-targets", "--no-default-features"];
        if !features.is_empty() {
            args.extend(["--features", features]);
        }
        args.extend(["--", "-D", "warnings"]);
        let shown = if features.is_empty() { "no vendor" } else { features };
        step(&format!("ptc-providers with {shown} only"), cargo, &args)?;
    }
    for krate in ["ptc-lisp-syntax", "ptc-lisp-eval", "ptc-signature"] {
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
