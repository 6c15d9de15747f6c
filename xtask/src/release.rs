//! `cargo xtask release`: cut a release of every published crate of the workspace.
//!
//! ```text
//! cargo xtask release <major|minor|patch|X.Y.Z> [--skip-ci] [--execute]
//! cargo xtask release --check
//! ```
//!
//! `X.Y.Z` may be the current version while it has no `vX.Y.Z` tag (the first release).
//!
//! A release bumps `[workspace.package]`'s version (and the `version =` of the internal
//! path dependencies), moves the `[Unreleased]` notes of `CHANGELOG.md` under the new
//! version (see `changelog.rs`), runs `cargo semver-checks` against the last `v*` tag when
//! there is one, runs the full CI (`cargo xtask ci`), packages every crate in dependency
//! order with verification, and lists the `.crate` files with their sizes and the
//! `git` and `cargo publish` commands of the release.
//!
//! Without `--execute` it is a dry run: the bump is written only while the crates are
//! packaged (packages must carry the new version) and the three files it touches
//! (`Cargo.toml`, `Cargo.lock`, `CHANGELOG.md`) are put back as they were afterwards,
//! also when a step fails. If a dry run is killed half-way, `git checkout -- Cargo.toml
//! Cargo.lock CHANGELOG.md` undoes it. `--skip-ci` skips the CI run, for dry runs only.
//!
//! With `--execute` (never run by tests) the tree must be clean; the bump is committed,
//! tagged `vX.Y.Z` and published crate by crate. Pushing the commit and the tag is left to
//! the maintainer (the command is printed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use serde_json::Value as Json;

use crate::changelog::{self, Plan};
use crate::version::{self, Level};
use crate::{root, step, target_dir};

const USAGE: &str = "usage: cargo xtask release <major|minor|patch|X.Y.Z> [--skip-ci] [--execute]
       cargo xtask release --check

  (default)   dry run: bump, check the changelog, semver-checks, CI, package every crate,
              print the git and cargo publish commands; then put the files back
  --execute   commit the bump, tag vX.Y.Z and cargo publish each crate (clean tree only)
  --skip-ci   skip `cargo xtask ci` (dry runs only)
  --check     only cargo semver-checks against the last v* tag";

/// The files a release writes.
const TOUCHED: [&str; 3] = ["Cargo.toml", "Cargo.lock", "CHANGELOG.md"];

pub fn run(args: &[String]) -> Result<()> {
    let cargo = crate::cargo();
    let mut target = None;
    let (mut execute, mut skip_ci, mut check) = (false, false, false);
    for arg in args {
        match arg.as_str() {
            "--execute" => execute = true,
            "--skip-ci" => skip_ci = true,
            "--check" => check = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            flag if flag.starts_with('-') => bail!("unknown flag {flag}\n\n{USAGE}"),
            other if target.is_none() => target = Some(other.to_string()),
            other => bail!("unexpected argument {other}\n\n{USAGE}"),
        }
    }
    if check {
        if target.is_some() || execute || skip_ci {
            bail!("--check takes no other argument\n\n{USAGE}");
        }
        return semver_check(&cargo, None);
    }
    let Some(target) = target else { bail!("which release?\n\n{USAGE}") };
    if execute && skip_ci {
        bail!("--skip-ci is for dry runs only: a release that is executed runs the full CI");
    }
    release(&cargo, &target, execute, skip_ci)
}

fn release(cargo: &str, target: &str, execute: bool, skip_ci: bool) -> Result<()> {
    let root = root();
    let manifest = read(&root.join("Cargo.toml"))?;
    let current = version::workspace_version(&manifest)?;
    let current_released = !git(&["tag", "--list", &format!("v{current}")])?.trim().is_empty();
    let next = version::target(&current, target, current_released)?;
    let tag = format!("v{next}");
    let mode = if execute { "release" } else { "dry run" };
    eprintln!("==> {mode}: {current} -> {next}");

    let dirty = git(&["status", "--porcelain"])?;
    if execute && !dirty.trim().is_empty() {
        bail!("the working tree has uncommitted changes; commit or stash them first:\n{dirty}");
    }
    if !dirty.trim().is_empty() {
        eprintln!("    (uncommitted changes are packaged too; --execute needs a clean tree)");
    }
    if !git(&["tag", "--list", &tag])?.trim().is_empty() {
        bail!("tag {tag} already exists");
    }

    let crates = publish_order(&members(cargo)?)?;
    let changelog_path = root.join("CHANGELOG.md");
    let changelog_text = read(&changelog_path)?;
    let plan = changelog::plan(&changelog_text, &next.to_string(), &current.to_string(), &today())?;
    match &plan {
        Plan::AlreadyThere => eprintln!("==> CHANGELOG.md has a section for {next}"),
        Plan::Move(_) => eprintln!("==> CHANGELOG.md: [Unreleased] becomes [{next}]"),
    }

    semver_check(cargo, Some(current.level_to(&next)))?;
    if skip_ci {
        eprintln!("==> cargo xtask ci skipped (--skip-ci: a dry run only)");
    } else {
        crate::ci()?;
    }

    let mut restore = Restore::capture(&root)?;
    std::fs::write(root.join("Cargo.toml"), version::bump_manifest(&manifest, &current, &next)?)
        .context("cannot write Cargo.toml")?;
    if let Plan::Move(text) = &plan {
        std::fs::write(&changelog_path, text).context("cannot write CHANGELOG.md")?;
    }
    // Bring Cargo.lock's entries for the workspace crates to the new version (and only those).
    step("Cargo.lock follows the bump", cargo, &["update", "--workspace"])?;
    let excluded = non_published(cargo)?;

    if execute {
        let message = format!("Release {tag}");
        let mut commit = vec!["commit", "--quiet", "-m", &message, "--"];
        commit.extend(TOUCHED);
        step("git commit the bump", "git", &commit)?;
        restore.keep();
    }
    let mut package = vec!["package", "--workspace"];
    for name in &excluded {
        package.extend(["--exclude", name.as_str()]);
    }
    if !execute {
        package.push("--allow-dirty");
    }
    let packaged = step("cargo package (every crate, verified)", cargo, &package);
    if execute && packaged.is_err() {
        eprintln!("    the bump is committed as HEAD and not tagged; `git reset --hard HEAD~1` undoes it");
    }
    packaged?;

    println!();
    println!("packaged crates, in publish order:");
    let packages = target_dir().join("package");
    for name in &crates {
        let file = packages.join(format!("{name}-{next}.crate"));
        let size = std::fs::metadata(&file).with_context(|| format!("{} was not packaged", file.display()))?.len();
        println!("  {:<48} {:>10}", display_path(&file, &root), human_size(size));
    }
    let tag_message = format!("ptc-runner {next}");
    let mut commands: Vec<Vec<String>> = Vec::new();
    if !execute {
        commands.push(owned(&[
            "git",
            "commit",
            "-m",
            &format!("Release {tag}"),
            "--",
            TOUCHED[0],
            TOUCHED[1],
            TOUCHED[2],
        ]));
    }
    commands.push(owned(&["git", "tag", "-a", &tag, "-m", &tag_message]));
    for name in &crates {
        commands.push(owned(&["cargo", "publish", "-p", name]));
    }
    println!();
    println!("{}", if execute { "running:" } else { "the release would run:" });
    for command in &commands {
        println!("  {}", shell_words(command));
    }
    println!("then, by hand: git push origin HEAD {tag}");

    if execute {
        for command in &commands {
            let (program, args) = command.split_first().context("empty command")?;
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            step(&shell_words(command), program, &args)?;
        }
        eprintln!("==> released {tag}; push it: git push origin HEAD {tag}");
    } else {
        restore.now()?;
        eprintln!("==> dry run done; Cargo.toml, Cargo.lock and CHANGELOG.md are as they were");
    }
    Ok(())
}

/// `cargo semver-checks` against the last `v*` tag, installed on first use. Without a tag
/// there is nothing to compare with.
fn semver_check(cargo: &str, level: Option<Level>) -> Result<()> {
    let last = Command::new("git")
        .args(["describe", "--tags", "--abbrev=0", "--match", "v*"])
        .current_dir(root())
        .output()
        .context("cannot run git describe")?;
    let tag = String::from_utf8_lossy(&last.stdout).trim().to_string();
    if !last.status.success() || tag.is_empty() {
        eprintln!("==> no earlier release tag: semver check skipped");
        return Ok(());
    }
    let installed = Command::new(cargo).args(["semver-checks", "--version"]).output().is_ok_and(|o| o.status.success());
    if !installed {
        step("cargo install --locked cargo-semver-checks", cargo, &["install", "--locked", "cargo-semver-checks"])?;
    }
    let mut args = vec!["semver-checks", "check-release", "--workspace", "--baseline-rev", &tag];
    if let Some(level) = level {
        args.extend(["--release-type", level.as_str()]);
    }
    step(&format!("cargo semver-checks against {tag}"), cargo, &args)
}

/// A workspace member: its name, whether it is published, and the workspace crates it
/// needs to build (normal and build dependencies; dev-dependencies do not order a publish).
#[derive(Debug, Clone)]
pub struct Member {
    pub name: String,
    pub publish: bool,
    pub needs: Vec<String>,
}

fn metadata(cargo: &str) -> Result<Json> {
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root())
        .output()
        .context("cannot run cargo metadata")?;
    if !output.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    serde_json::from_slice(&output.stdout).context("cargo metadata printed something that is not JSON")
}

/// The workspace members as `cargo metadata` describes them.
fn members(cargo: &str) -> Result<Vec<Member>> {
    members_of(&metadata(cargo)?)
}

pub fn members_of(metadata: &Json) -> Result<Vec<Member>> {
    let packages = metadata["packages"].as_array().context("cargo metadata without packages")?;
    let names: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut members = Vec::new();
    for package in packages {
        let name = package["name"].as_str().context("a package without a name")?;
        // `publish`: null means any registry; [] (publish = false) means none.
        let publish = !matches!(&package["publish"], Json::Array(registries) if registries.is_empty());
        let mut needs: Vec<String> = package["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["kind"].as_str() != Some("dev"))
            .filter_map(|d| d["name"].as_str())
            .filter(|d| names.contains(d) && *d != name)
            .map(str::to_string)
            .collect();
        needs.sort();
        needs.dedup();
        members.push(Member { name: name.to_string(), publish, needs });
    }
    Ok(members)
}

fn non_published(cargo: &str) -> Result<Vec<String>> {
    Ok(members(cargo)?.into_iter().filter(|m| !m.publish).map(|m| m.name).collect())
}

/// The published members, each after the workspace crates it needs (ties by name, so
/// the order is stable). A published crate needing an unpublished one, or a cycle, is an
/// error.
pub fn publish_order(members: &[Member]) -> Result<Vec<String>> {
    let published: BTreeMap<&str, &Member> =
        members.iter().filter(|m| m.publish).map(|m| (m.name.as_str(), m)).collect();
    for member in published.values() {
        if let Some(missing) = member.needs.iter().find(|n| !published.contains_key(n.as_str())) {
            bail!("{} needs {missing}, which is not published (publish = false)", member.name);
        }
    }
    let mut order: Vec<String> = Vec::new();
    while order.len() < published.len() {
        let ready = published
            .values()
            .find(|m| !order.contains(&m.name) && m.needs.iter().all(|n| order.contains(n)))
            .map(|m| m.name.clone());
        match ready {
            Some(name) => order.push(name),
            None => {
                let stuck: Vec<&str> = published.keys().copied().filter(|n| !order.iter().any(|o| o == n)).collect();
                bail!("the workspace crates {} depend on each other in a cycle", stuck.join(", "));
            }
        }
    }
    Ok(order)
}

/// The touched files as they were, written back on `now()` or when dropped (a failed
/// step), unless `keep()` was called.
struct Restore {
    saved: Vec<(PathBuf, Option<Vec<u8>>)>,
}

impl Restore {
    fn capture(root: &Path) -> Result<Restore> {
        let mut saved = Vec::new();
        for file in TOUCHED {
            let path = root.join(file);
            let bytes = match std::fs::read(&path) {
                Ok(bytes) => Some(bytes),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
            };
            saved.push((path, bytes));
        }
        Ok(Restore { saved })
    }

    fn keep(&mut self) {
        self.saved.clear();
    }

    fn now(&mut self) -> Result<()> {
        for (path, bytes) in self.saved.drain(..) {
            match bytes {
                Some(bytes) => std::fs::write(&path, bytes),
                None => std::fs::remove_file(&path)
                    .or_else(|e| if e.kind() == std::io::ErrorKind::NotFound { Ok(()) } else { Err(e) }),
            }
            .with_context(|| format!("cannot restore {}", path.display()))?;
        }
        Ok(())
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        if !self.saved.is_empty() {
            match self.now() {
                Ok(()) => eprintln!("    (Cargo.toml, Cargo.lock and CHANGELOG.md put back as they were)"),
                Err(e) => eprintln!("xtask: {e:#}; undo with: git checkout -- Cargo.toml Cargo.lock CHANGELOG.md"),
            }
        }
    }
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

fn git(args: &[&str]) -> Result<String> {
    let output = Command::new("git").args(args).current_dir(root()).output().context("cannot run git")?;
    if !output.status.success() {
        bail!("git {} failed: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn today() -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    changelog::date(now)
}

fn owned(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// A command as a shell would need it typed.
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./:=@+,".contains(&b)) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn display_path(path: &Path, root: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// `41.2 KiB`.
pub fn human_size(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn member(name: &str, needs: &[&str]) -> Member {
        Member { name: name.into(), publish: true, needs: needs.iter().map(|n| n.to_string()).collect() }
    }

    #[test]
    fn crates_are_published_after_what_they_need() {
        let members = [
            member("ptc", &["ptc-providers", "ptc-lisp-eval", "ptc-subagent"]),
            member("ptc-providers", &["ptc-subagent"]),
            member("ptc-subagent", &["ptc-lisp-eval"]),
            member("ptc-lisp-eval", &["ptc-lisp-syntax"]),
            member("ptc-lisp-syntax", &[]),
            Member { publish: false, ..member("xtask", &["ptc-lisp-eval"]) },
        ];
        assert_eq!(
            publish_order(&members).unwrap(),
            ["ptc-lisp-syntax", "ptc-lisp-eval", "ptc-subagent", "ptc-providers", "ptc"]
        );
    }

    #[test]
    fn cycles_and_unpublished_needs_are_errors() {
        let err = publish_order(&[member("a", &["b"]), member("b", &["a"])]).unwrap_err().to_string();
        assert_eq!(err, "the workspace crates a, b depend on each other in a cycle");
        let members = [member("a", &["tool"]), Member { publish: false, ..member("tool", &[]) }];
        let err = publish_order(&members).unwrap_err().to_string();
        assert_eq!(err, "a needs tool, which is not published (publish = false)");
    }

    #[test]
    fn members_come_from_cargo_metadata() {
        let metadata = json!({"packages": [
            {"name": "eval", "publish": null, "dependencies": [
                {"name": "syntax", "kind": null}, {"name": "regex", "kind": null},
                {"name": "insta", "kind": "dev"}, {"name": "syntax", "kind": "dev"}]},
            {"name": "syntax", "publish": null, "dependencies": [{"name": "logos", "kind": null}]},
            {"name": "xtask", "publish": [], "dependencies": [{"name": "eval", "kind": null}]},
        ]});
        let members = members_of(&metadata).unwrap();
        let summary: Vec<(&str, bool, Vec<String>)> =
            members.iter().map(|m| (m.name.as_str(), m.publish, m.needs.clone())).collect();
        assert_eq!(
            summary,
            [
                ("eval", true, vec!["syntax".to_string()]),
                ("syntax", true, vec![]),
                ("xtask", false, vec!["eval".to_string()])
            ]
        );
        assert_eq!(publish_order(&members).unwrap(), ["syntax", "eval"]);
    }

    #[test]
    fn a_dropped_restore_puts_the_files_back() {
        let dir = std::env::temp_dir().join(format!("xtask-restore-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("Cargo.toml"), "version = \"0.1.0\"\n").unwrap();
        std::fs::write(dir.join("CHANGELOG.md"), "## [Unreleased]\n").unwrap();
        {
            let _restore = Restore::capture(&dir).unwrap();
            std::fs::write(dir.join("Cargo.toml"), "version = \"0.1.1\"\n").unwrap();
            std::fs::write(dir.join("Cargo.lock"), "written by the bump\n").unwrap();
            // A failing step returns here with `?`: the guard drops.
        }
        let toml = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let lock_exists = dir.join("Cargo.lock").exists();
        let mut kept = Restore::capture(&dir).unwrap();
        std::fs::write(dir.join("CHANGELOG.md"), "## [0.1.1]\n").unwrap();
        kept.keep();
        drop(kept);
        let changelog = std::fs::read_to_string(dir.join("CHANGELOG.md")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(toml, "version = \"0.1.0\"\n");
        assert!(!lock_exists, "a file that did not exist is removed again");
        assert_eq!(changelog, "## [0.1.1]\n", "keep() leaves the release's files");
    }

    #[test]
    fn commands_print_as_typed() {
        let words = owned(&["git", "tag", "-a", "v0.1.1", "-m", "ptc-runner 0.1.1", "it's"]);
        assert_eq!(shell_words(&words), r"git tag -a v0.1.1 -m 'ptc-runner 0.1.1' 'it'\''s'");
    }

    #[test]
    fn sizes_are_human() {
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(41_123), "40.2 KiB");
        assert_eq!(human_size(3 * 1024 * 1024), "3.0 MiB");
    }
}
