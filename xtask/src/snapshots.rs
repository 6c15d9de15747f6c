//! `cargo xtask snapshots [--accept|--review]`: refresh the `insta` snapshots of every
//! crate in one command.
//!
//! The crates whose `Cargo.toml` depends on `insta` are found, and in each the test
//! targets that use it (files of `tests/` mentioning `insta::`, plus the library's unit
//! tests when `src/` does) run with `INSTA_UPDATE=new INSTA_FORCE_PASS=1`: every changed
//! snapshot is written next to its `.snap` as `.snap.new` instead of stopping the test at
//! the first difference. Then:
//!
//! - no flag: list the pending `.snap.new` files (and fail if there are any);
//! - `--review`: show each one as a diff against the committed snapshot (and fail if any);
//! - `--accept`: replace each committed snapshot with its `.snap.new`.
//!
//! `cargo xtask ci` runs the tests with `INSTA_UPDATE=no` and fails on any `.snap.new`
//! left in the tree ([`check_none_pending`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::root;

/// One crate's snapshot tests.
#[derive(Debug, PartialEq, Eq)]
struct SnapshotTests {
    package: String,
    lib: bool,
    tests: Vec<String>,
}

pub fn run(args: &[String]) -> Result<()> {
    let mode = match args.first().map(String::as_str) {
        None => Mode::List,
        Some("--review") => Mode::Review,
        Some("--accept") => Mode::Accept,
        Some(other) => bail!("unknown flag {other}; usage: cargo xtask snapshots [--accept|--review]"),
    };
    if args.len() > 1 {
        bail!("usage: cargo xtask snapshots [--accept|--review]");
    }
    let root = root();
    // Start from the committed snapshots: what is pending afterwards comes from this run.
    for stale in pending(&root)? {
        std::fs::remove_file(&stale).with_context(|| format!("cannot remove {}", stale.display()))?;
    }
    let cargo = crate::cargo();
    let mut failed = Vec::new();
    for krate in snapshot_tests(&root)? {
        let mut args = vec!["test".to_string(), "--quiet".into(), "-p".into(), krate.package.clone()];
        if krate.lib {
            args.push("--lib".into());
        }
        for test in &krate.tests {
            args.extend(["--test".into(), test.clone()]);
        }
        eprintln!("==> snapshot tests of {} ({})", krate.package, targets_label(&krate));
        let status = Command::new(&cargo)
            .args(&args)
            .env("INSTA_UPDATE", "new")
            .env("INSTA_FORCE_PASS", "1")
            .env_remove("CI")
            .current_dir(&root)
            .status()
            .with_context(|| format!("cannot run cargo test -p {}", krate.package))?;
        if !status.success() {
            failed.push(krate.package);
        }
    }
    let pending = pending(&root)?;
    for new in &pending {
        // insta records the assertion's line number in a pending snapshot only; dropping it
        // keeps the review to what changed and the accepted file as cargo-insta writes it.
        let text = std::fs::read_to_string(new).with_context(|| format!("cannot read {}", new.display()))?;
        let cleaned = without_assertion_line(&text);
        if cleaned != text {
            std::fs::write(new, cleaned).with_context(|| format!("cannot write {}", new.display()))?;
        }
    }
    match mode {
        Mode::Accept => {
            for new in &pending {
                let accepted = accepted_path(new).with_context(|| format!("{} is not a .snap.new", new.display()))?;
                std::fs::rename(new, &accepted).with_context(|| format!("cannot accept {}", new.display()))?;
                println!("accepted {}", shown(&accepted, &root));
            }
            if pending.is_empty() {
                println!("no snapshot changed");
            }
        }
        Mode::List | Mode::Review => {
            for new in &pending {
                println!("pending  {}", shown(new, &root));
                if mode == Mode::Review {
                    review(new, &root)?;
                }
            }
            if pending.is_empty() {
                println!("no snapshot changed");
            }
        }
    }
    if !failed.is_empty() {
        bail!("tests failed for reasons other than snapshots in {}", failed.join(", "));
    }
    if mode != Mode::Accept && !pending.is_empty() {
        bail!(
            "{} snapshot(s) changed: review with `cargo xtask snapshots --review`, accept with `cargo xtask snapshots --accept`",
            pending.len()
        );
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    List,
    Review,
    Accept,
}

/// Fails when a `.snap.new` is left in the tree (CI: a snapshot changed and nobody
/// accepted it).
pub fn check_none_pending(root: &Path) -> Result<()> {
    let pending = pending(root)?;
    if pending.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = pending.iter().map(|p| shown(p, root)).collect();
    bail!(
        "pending snapshot(s): {}\nreview with `cargo xtask snapshots --review`, accept with `cargo xtask snapshots --accept`",
        names.join(", ")
    )
}

/// Whether a manifest depends on `insta` (in any dependency table).
fn uses_insta(manifest: &str) -> bool {
    let mut in_dependencies = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_dependencies = line.trim_matches(['[', ']']).ends_with("dependencies");
        } else if in_dependencies
            && line.split(['=', '.', ' ']).next().is_some_and(|key| key.trim_matches('"') == "insta")
        {
            return true;
        }
    }
    false
}

/// Every crate under `crates/` that depends on `insta`, with the targets that use it.
fn snapshot_tests(root: &Path) -> Result<Vec<SnapshotTests>> {
    let mut found = Vec::new();
    for dir in sorted_dir(&root.join("crates"))? {
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else { continue };
        if !uses_insta(&manifest) {
            continue;
        }
        let package = package_name(&manifest).with_context(|| format!("{}/Cargo.toml has no name", dir.display()))?;
        let mut tests = Vec::new();
        if dir.join("tests").is_dir() {
            for file in sorted_dir(&dir.join("tests"))? {
                if file.extension().is_some_and(|e| e == "rs")
                    && mentions_insta(&file)?
                    && let Some(stem) = file.file_stem()
                {
                    tests.push(stem.to_string_lossy().into_owned());
                }
            }
        }
        let lib = any_file_mentions_insta(&dir.join("src"))?;
        if lib || !tests.is_empty() {
            found.push(SnapshotTests { package, lib, tests });
        }
    }
    Ok(found)
}

fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package && let Some(rest) = line.strip_prefix("name") {
            return rest
                .trim_start()
                .strip_prefix('=')?
                .trim()
                .strip_prefix('"')?
                .split('"')
                .next()
                .map(str::to_string);
        }
    }
    None
}

fn mentions_insta(file: &Path) -> Result<bool> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    Ok(text.contains("insta::"))
}

fn any_file_mentions_insta(dir: &Path) -> Result<bool> {
    if !dir.is_dir() {
        return Ok(false);
    }
    for path in sorted_dir(dir)? {
        let found = if path.is_dir() {
            any_file_mentions_insta(&path)?
        } else {
            path.extension().is_some_and(|e| e == "rs") && mentions_insta(&path)?
        };
        if found {
            return Ok(true);
        }
    }
    Ok(false)
}

fn sorted_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        entries.push(entry.with_context(|| format!("cannot list {}", dir.display()))?.path());
    }
    entries.sort();
    Ok(entries)
}

/// Every `.snap.new` under `crates/` (outside build and fuzz output).
fn pending(root: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    collect_pending(&root.join("crates"), &mut found)?;
    Ok(found)
}

fn collect_pending(dir: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
    for path in sorted_dir(dir)? {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if path.is_dir() {
            if !matches!(name.as_str(), "target" | "corpus" | "artifacts" | ".git") {
                collect_pending(&path, found)?;
            }
        } else if accepted_path(&path).is_some() {
            found.push(path);
        }
    }
    Ok(())
}

/// A snapshot without the `assertion_line:` entry of its metadata header (the part
/// between the first two `---` lines).
fn without_assertion_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fences = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" {
            fences += 1;
        }
        if fences == 1 && line.starts_with("assertion_line:") {
            continue;
        }
        out.push_str(line);
    }
    out
}

/// `x.snap` for `x.snap.new`.
fn accepted_path(new: &Path) -> Option<PathBuf> {
    let name = new.file_name()?.to_str()?;
    let accepted = name.strip_suffix(".snap.new")?;
    Some(new.with_file_name(format!("{accepted}.snap")))
}

/// The committed snapshot against the new one, as a unified diff (git's, which needs no
/// repository for two paths).
fn review(new: &Path, root: &Path) -> Result<()> {
    let Some(old) = accepted_path(new) else { return Ok(()) };
    if !old.exists() {
        println!("  (a new snapshot)");
        print!("{}", std::fs::read_to_string(new).with_context(|| format!("cannot read {}", new.display()))?);
        return Ok(());
    }
    // git diff exits 1 when the files differ: that is the expected case, not a failure.
    Command::new("git")
        .args(["--no-pager", "diff", "--no-index", "--color=auto", "--"])
        .arg(old.strip_prefix(root).unwrap_or(&old))
        .arg(new.strip_prefix(root).unwrap_or(new))
        .current_dir(root)
        .status()
        .context("cannot run git diff")?;
    Ok(())
}

fn shown(path: &Path, root: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

fn targets_label(krate: &SnapshotTests) -> String {
    let mut targets: Vec<String> = krate.tests.iter().map(|t| format!("tests/{t}.rs")).collect();
    if krate.lib {
        targets.insert(0, "unit tests".into());
    }
    targets.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insta_is_found_in_any_dependency_table() {
        assert!(uses_insta("[package]\nname = \"a\"\n\n[dev-dependencies]\ninsta.workspace = true\n"));
        assert!(uses_insta("[dev-dependencies]\ninsta = { version = \"1\", features = [\"json\"] }\n"));
        assert!(uses_insta("[target.'cfg(unix)'.dev-dependencies]\n\"insta\" = \"1\"\n"));
        assert!(!uses_insta("[dev-dependencies]\ninstability = \"1\"\n"));
        assert!(!uses_insta("[package]\ninsta = \"not a dependency\"\n[dependencies]\nserde = \"1\"\n"));
    }

    #[test]
    fn package_names_are_read_from_the_package_table() {
        let manifest = "[workspace]\nname = \"no\"\n[package]\nname = \"ptc-lisp-syntax\"\nversion.workspace = true\n";
        assert_eq!(package_name(manifest).as_deref(), Some("ptc-lisp-syntax"));
        assert_eq!(package_name("[dependencies]\nname = \"x\"\n"), None);
    }

    #[test]
    fn a_pending_snapshot_replaces_its_committed_one() {
        let new = Path::new("crates/a/tests/snapshots/errors__unclosed.snap.new");
        assert_eq!(accepted_path(new), Some(PathBuf::from("crates/a/tests/snapshots/errors__unclosed.snap")));
        assert_eq!(accepted_path(Path::new("crates/a/tests/snapshots/errors__unclosed.snap")), None);
    }

    #[test]
    fn the_assertion_line_is_dropped_from_the_header_only() {
        let new = "---\nsource: tests/errors.rs\nassertion_line: 39\nexpression: x\n---\nassertion_line: 7 is data\n";
        assert_eq!(
            without_assertion_line(new),
            "---\nsource: tests/errors.rs\nexpression: x\n---\nassertion_line: 7 is data\n"
        );
    }

    #[test]
    fn pending_snapshots_are_found_and_reported() {
        let dir = std::env::temp_dir().join(format!("xtask-snapshots-{}", std::process::id()));
        let snapshots = dir.join("crates/a/tests/snapshots");
        std::fs::create_dir_all(&snapshots).unwrap();
        std::fs::create_dir_all(dir.join("crates/a/target")).unwrap();
        std::fs::write(snapshots.join("t__x.snap"), "old").unwrap();
        assert!(check_none_pending(&dir).is_ok());
        std::fs::write(snapshots.join("t__x.snap.new"), "new").unwrap();
        std::fs::write(dir.join("crates/a/target/ignored.snap.new"), "build output").unwrap();
        let err = check_none_pending(&dir).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err.starts_with("pending snapshot(s): crates/a/tests/snapshots/t__x.snap.new\n"), "{err}");
    }
}
