//! The minimum supported Rust version: `rust-version` in `[workspace.package]` must cover
//! every dependency of the build, and the places that state it (the MSRV job of the
//! GitHub workflow, the READMEs) must agree with it.
//!
//! Only one toolchain is installed where `cargo xtask ci` runs, so the MSRV build itself
//! runs in the GitHub workflow (`dtolnay/rust-toolchain@<msrv>`); this check catches the
//! two ways it drifts without that build: a dependency update that raises the floor, and a
//! bump of `rust-version` that the workflow and docs do not follow.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value as Json;

/// A Rust version, `1.88` or `1.88.0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct RustVersion(u64, u64, u64);

impl RustVersion {
    pub fn parse(text: &str) -> Option<RustVersion> {
        let mut parts = text.trim().split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = match parts.next() {
            Some(p) => p.parse().ok()?,
            None => 0,
        };
        parts.next().is_none().then_some(RustVersion(major, minor, patch))
    }
}

impl std::fmt::Display for RustVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.2 == 0 { write!(f, "{}.{}", self.0, self.1) } else { write!(f, "{}.{}.{}", self.0, self.1, self.2) }
    }
}

pub fn check(root: &Path, cargo: &str) -> Result<()> {
    eprintln!("==> rust-version covers every dependency and is stated the same everywhere");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).context("cannot read Cargo.toml")?;
    let declared = declared(&manifest).context("Cargo.toml has no rust-version in [workspace.package]")?;
    let metadata = resolved_metadata(root, cargo)?;
    if let Some((needed, who)) = highest(&metadata)?
        && needed > declared
    {
        bail!(
            "{who} needs Rust {needed}, above the workspace's rust-version {declared}: raise rust-version \
             (and the MSRV job of .github/workflows/ci.yml and the READMEs) or keep {who} at an older version"
        );
    }
    let mut stated = vec![(".github/workflows/ci.yml".to_string(), root.join(".github/workflows/ci.yml"))];
    stated.push(("README.md".into(), root.join("README.md")));
    for entry in std::fs::read_dir(root.join("crates")).context("cannot list crates/")? {
        let dir = entry.context("cannot list crates/")?.path();
        if dir.join("README.md").is_file() {
            let name = format!("{}/README.md", dir.strip_prefix(root).unwrap_or(&dir).display());
            stated.push((name, dir.join("README.md")));
        }
    }
    let mut problems = Vec::new();
    for (name, path) in &stated {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {name}"))?;
        problems.extend(disagreements(&text, declared).into_iter().map(|p| format!("{name}: {p}")));
    }
    if !stated.iter().any(|(name, path)| {
        name.ends_with("ci.yml")
            && std::fs::read_to_string(path).is_ok_and(|t| t.contains(&format!("dtolnay/rust-toolchain@{declared}")))
    }) {
        problems.push(format!(".github/workflows/ci.yml has no MSRV job (dtolnay/rust-toolchain@{declared})"));
    }
    if !problems.is_empty() {
        bail!("rust-version is {declared}, but:\n  {}", problems.join("\n  "));
    }
    eprintln!("    rust-version {declared}");
    Ok(())
}

/// `rust-version` of `[workspace.package]`.
pub fn declared(manifest: &str) -> Option<RustVersion> {
    let mut section = "";
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line;
        } else if section == "[workspace.package]"
            && let Some(rest) = line.strip_prefix("rust-version")
        {
            let value = rest.trim_start().strip_prefix('=')?.trim().trim_matches('"');
            return RustVersion::parse(value);
        }
    }
    None
}

/// `cargo metadata` of the build on this host (every target of this platform, features
/// as resolved), so that dependencies of other platforms do not count.
fn resolved_metadata(root: &Path, cargo: &str) -> Result<Json> {
    let host = Command::new("rustc").arg("-vV").output().context("cannot run rustc -vV")?;
    let host = String::from_utf8_lossy(&host.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .context("rustc -vV names no host")?;
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--filter-platform", &host])
        .current_dir(root)
        .output()
        .context("cannot run cargo metadata")?;
    if !output.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    serde_json::from_slice(&output.stdout).context("cargo metadata printed something that is not JSON")
}

/// The highest `rust-version` among the packages of the resolved graph, and whose it is.
pub fn highest(metadata: &Json) -> Result<Option<(RustVersion, String)>> {
    let in_graph: Vec<&str> = metadata["resolve"]["nodes"]
        .as_array()
        .context("cargo metadata without a resolve graph")?
        .iter()
        .filter_map(|n| n["id"].as_str())
        .collect();
    let mut best: Option<(RustVersion, String)> = None;
    for package in metadata["packages"].as_array().context("cargo metadata without packages")? {
        let (Some(id), Some(text)) = (package["id"].as_str(), package["rust_version"].as_str()) else { continue };
        if !in_graph.contains(&id) {
            continue;
        }
        let Some(version) = RustVersion::parse(text) else { continue };
        if best.as_ref().is_none_or(|(b, _)| version > *b) {
            let name =
                format!("{} {}", package["name"].as_str().unwrap_or("?"), package["version"].as_str().unwrap_or("?"));
            best = Some((version, name));
        }
    }
    Ok(best)
}

/// Statements of the MSRV in a text that disagree with `declared`: "Minimum Rust version:
/// X", "Rust X or newer", and `dtolnay/rust-toolchain@X` with a numeric X.
pub fn disagreements(text: &str, declared: RustVersion) -> Vec<String> {
    let mut found = Vec::new();
    let patterns: [(&str, &str); 3] =
        [("Minimum Rust version: ", ""), ("Rust ", " or newer"), ("dtolnay/rust-toolchain@", "")];
    for (before, after) in patterns {
        for (at, _) in text.match_indices(before) {
            let rest = &text[at + before.len()..];
            let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
            let number = rest[..end].trim_end_matches('.');
            if !rest[end..].starts_with(after) || number.is_empty() {
                continue;
            }
            if let Some(v) = RustVersion::parse(number)
                && v != declared
            {
                found.push(format!("says {before}{number}{after}"));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rv(text: &str) -> RustVersion {
        RustVersion::parse(text).unwrap()
    }

    #[test]
    fn versions_parse_and_order() {
        assert!(rv("1.88") < rv("1.88.1"));
        assert!(rv("1.9") < rv("1.88"));
        assert_eq!(rv("1.88.0"), rv("1.88"));
        assert_eq!(rv("1.88").to_string(), "1.88");
        assert_eq!(RustVersion::parse("stable"), None);
        assert_eq!(RustVersion::parse("1.88.0.1"), None);
    }

    #[test]
    fn the_declared_version_is_the_workspace_packages() {
        let manifest =
            "[package]\nrust-version = \"1.70\"\n[workspace.package]\nversion = \"0.1.0\"\nrust-version = \"1.88\"\n";
        assert_eq!(declared(manifest), Some(rv("1.88")));
        assert_eq!(declared("[workspace]\n"), None);
    }

    #[test]
    fn the_highest_counts_only_the_resolved_graph() {
        let metadata = json!({
            "packages": [
                {"id": "a", "name": "rmcp", "version": "3.9.0", "rust_version": "1.88"},
                {"id": "b", "name": "logos", "version": "0.16.0", "rust_version": "1.80.1"},
                {"id": "c", "name": "windows-only", "version": "1.0.0", "rust_version": "1.95"},
                {"id": "d", "name": "old", "version": "1.0.0", "rust_version": null}
            ],
            "resolve": {"nodes": [{"id": "a"}, {"id": "b"}, {"id": "d"}]}
        });
        assert_eq!(highest(&metadata).unwrap(), Some((rv("1.88"), "rmcp 3.9.0".to_string())));
    }

    #[test]
    fn stale_statements_are_found() {
        let text = "With Rust 1.85 or newer (`rustup update`).\nMinimum Rust version: 1.88.\n\
                    - uses: dtolnay/rust-toolchain@1.86\n- uses: dtolnay/rust-toolchain@stable\nRust 2024 edition\n";
        assert_eq!(disagreements(text, rv("1.88")), ["says Rust 1.85 or newer", "says dtolnay/rust-toolchain@1.86"]);
        assert!(disagreements("Minimum Rust version: 1.88. With Rust 1.88 or newer", rv("1.88")).is_empty());
    }
}
