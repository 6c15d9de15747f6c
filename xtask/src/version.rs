//! Versions for `cargo xtask release`: parsing `X.Y.Z[-pre]`, semver precedence, the bump
//! a level asks for, and rewriting the workspace manifest to a new version.
//!
//! Pure functions over text, so the unit tests below cover every rule without touching
//! the repository.

use std::cmp::Ordering;
use std::fmt;

use anyhow::{Result, bail};

/// A semantic version without build metadata (`1.2.3`, `0.4.0-rc.1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    /// The pre-release identifiers after `-` (`rc.1`), empty for a release.
    pub pre: String,
}

impl Version {
    /// Parses `X.Y.Z` or `X.Y.Z-pre` (no leading zeros, no build metadata).
    pub fn parse(text: &str) -> Result<Version> {
        let text = text.trim();
        let (core, pre) = match text.split_once('-') {
            Some((core, pre)) => (core, pre),
            None => (text, ""),
        };
        if text.contains('+') {
            bail!("version {text:?}: build metadata (+...) is not used here");
        }
        let parts: Vec<&str> = core.split('.').collect();
        let [major, minor, patch] = parts.as_slice() else {
            bail!("version {text:?} is not MAJOR.MINOR.PATCH");
        };
        let number = |part: &str| -> Result<u64> {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) || (part.len() > 1 && part.starts_with('0'))
            {
                bail!("version {text:?}: {part:?} is not a number without leading zeros");
            }
            Ok(part.parse()?)
        };
        if text.contains('-') && (pre.is_empty() || pre.split('.').any(|id| id.is_empty())) {
            bail!("version {text:?}: empty pre-release identifier");
        }
        if !pre.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-') {
            bail!("version {text:?}: pre-release identifiers use [0-9A-Za-z-] only");
        }
        Ok(Version { major: number(major)?, minor: number(minor)?, patch: number(patch)?, pre: pre.to_string() })
    }

    /// The version `level` asks for. A pre-release is completed by the level it leads to
    /// (`1.2.0-rc.1` → minor → `1.2.0`), as semver tools do.
    pub fn bump(&self, level: Level) -> Version {
        let pre = !self.pre.is_empty();
        let (major, minor, patch) = match level {
            Level::Patch if pre => (self.major, self.minor, self.patch),
            Level::Patch => (self.major, self.minor, self.patch + 1),
            Level::Minor if pre && self.patch == 0 => (self.major, self.minor, 0),
            Level::Minor => (self.major, self.minor + 1, 0),
            Level::Major if pre && self.minor == 0 && self.patch == 0 => (self.major, 0, 0),
            Level::Major => (self.major + 1, 0, 0),
        };
        Version { major, minor, patch, pre: String::new() }
    }

    /// What kind of release going from `self` to `next` is, for `cargo semver-checks
    /// --release-type`. Before 1.0 a minor bump is allowed to break, as Cargo reads it.
    pub fn level_to(&self, next: &Version) -> Level {
        if next.major != self.major {
            Level::Major
        } else if next.minor != self.minor {
            if self.major == 0 { Level::Major } else { Level::Minor }
        } else if self.major == 0 && self.minor == 0 {
            Level::Major
        } else {
            Level::Patch
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        Ok(())
    }
}

impl Ord for Version {
    /// Semver precedence: numbers first; a pre-release sorts before its release; then
    /// identifier by identifier (numeric ones numerically and before alphanumeric ones).
    fn cmp(&self, other: &Version) -> Ordering {
        let numbers = (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if numbers != Ordering::Equal {
            return numbers;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            (false, false) => {}
        }
        let mut left = self.pre.split('.');
        let mut right = other.pre.split('.');
        loop {
            match (left.next(), right.next()) {
                (None, None) => return Ordering::Equal,
                (None, Some(_)) => return Ordering::Less,
                (Some(_), None) => return Ordering::Greater,
                (Some(a), Some(b)) => {
                    let order = match (a.parse::<u64>(), b.parse::<u64>()) {
                        (Ok(x), Ok(y)) => x.cmp(&y),
                        (Ok(_), Err(_)) => Ordering::Less,
                        (Err(_), Ok(_)) => Ordering::Greater,
                        (Err(_), Err(_)) => a.cmp(b),
                    };
                    if order != Ordering::Equal {
                        return order;
                    }
                }
            }
        }
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Version) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A semver level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Major,
    Minor,
    Patch,
}

impl Level {
    /// The name `cargo semver-checks --release-type` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Major => "major",
            Level::Minor => "minor",
            Level::Patch => "patch",
        }
    }
}

/// The version a `cargo xtask release` argument asks for: `major`, `minor`, `patch`, or an
/// explicit version that must come after `current` — or be `current` itself while that
/// was never released (no `v` tag): the first release of a new workspace.
pub fn target(current: &Version, arg: &str, current_released: bool) -> Result<Version> {
    let next = match arg {
        "major" => current.bump(Level::Major),
        "minor" => current.bump(Level::Minor),
        "patch" => current.bump(Level::Patch),
        explicit => Version::parse(explicit.strip_prefix('v').unwrap_or(explicit))?,
    };
    if next == *current && !current_released {
        return Ok(next);
    }
    if next <= *current {
        bail!("{next} does not come after the current version {current}");
    }
    Ok(next)
}

/// The workspace version: `version = "..."` in `[workspace.package]` of the root manifest.
pub fn workspace_version(manifest: &str) -> Result<Version> {
    let mut section = "";
    for line in manifest.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            section = trimmed;
        } else if section == "[workspace.package]"
            && let Some(value) = key_value(trimmed, "version")
        {
            return Version::parse(value);
        }
    }
    bail!("Cargo.toml has no version in [workspace.package]")
}

/// `"value"` of a `key = "value"` line.
fn key_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(key)?.trim_start().strip_prefix('=')?.trim();
    rest.strip_prefix('"')?.split('"').next()
}

/// The root manifest with `[workspace.package]`'s version and the `version = ` of every
/// path dependency in `[workspace.dependencies]` moved from `old` to `new`. Everything
/// else (comments, order, spacing) is left as it was.
pub fn bump_manifest(manifest: &str, old: &Version, new: &Version) -> Result<String> {
    let (old_text, new_text) = (format!("\"{old}\""), format!("\"{new}\""));
    let mut section = String::new();
    let mut package_version = false;
    let mut path_deps = 0;
    let mut out = String::with_capacity(manifest.len() + 16);
    for line in manifest.split_inclusive('\n') {
        let trimmed = line.trim();
        let mut line = line.to_string();
        if trimmed.starts_with('[') {
            section = trimmed.to_string();
        } else if section == "[workspace.package]" && key_value(trimmed, "version").is_some() {
            if key_value(trimmed, "version") != Some(&old_text[1..old_text.len() - 1]) {
                bail!("[workspace.package] has {trimmed:?}, expected version {old_text}");
            }
            line = line.replacen(&old_text, &new_text, 1);
            package_version = true;
        } else if section == "[workspace.dependencies]" && trimmed.contains("path = ") {
            let pinned = format!("version = {old_text}");
            if !line.contains(&pinned) {
                bail!("workspace dependency {trimmed:?} needs `version = {old_text}` to be published");
            }
            line = line.replacen(&pinned, &format!("version = {new_text}"), 1);
            path_deps += 1;
        }
        out.push_str(&line);
    }
    if !package_version {
        bail!("Cargo.toml has no version in [workspace.package]");
    }
    if path_deps == 0 {
        bail!("Cargo.toml lists no path dependencies in [workspace.dependencies]");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    #[test]
    fn parses_and_prints() {
        assert_eq!(v("1.20.3"), Version { major: 1, minor: 20, patch: 3, pre: String::new() });
        assert_eq!(v("0.4.0-rc.1").to_string(), "0.4.0-rc.1");
        for bad in ["1.2", "1.2.3.4", "01.2.3", "1.2.x", "1.2.3-", "1.2.3-a..b", "1.2.3+build", "", "1.2.3-ü"] {
            assert!(Version::parse(bad).is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn levels_bump_and_reset() {
        assert_eq!(v("0.1.0").bump(Level::Patch), v("0.1.1"));
        assert_eq!(v("0.1.7").bump(Level::Minor), v("0.2.0"));
        assert_eq!(v("0.9.7").bump(Level::Major), v("1.0.0"));
        assert_eq!(v("1.2.3").bump(Level::Major), v("2.0.0"));
    }

    #[test]
    fn a_pre_release_is_completed_by_its_level() {
        assert_eq!(v("1.2.3-rc.1").bump(Level::Patch), v("1.2.3"));
        assert_eq!(v("1.2.0-rc.1").bump(Level::Minor), v("1.2.0"));
        assert_eq!(v("1.2.3-rc.1").bump(Level::Minor), v("1.3.0"));
        assert_eq!(v("2.0.0-beta").bump(Level::Major), v("2.0.0"));
        assert_eq!(v("2.1.0-beta").bump(Level::Major), v("3.0.0"));
    }

    #[test]
    fn precedence_follows_semver() {
        let ordered = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1",
            "1.1.0",
            "2.0.0",
        ];
        for pair in ordered.windows(2) {
            assert!(v(pair[0]) < v(pair[1]), "{} < {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn targets_must_move_forward() {
        let current = v("0.1.0");
        assert_eq!(target(&current, "patch", true).unwrap(), v("0.1.1"));
        assert_eq!(target(&current, "minor", true).unwrap(), v("0.2.0"));
        assert_eq!(target(&current, "major", true).unwrap(), v("1.0.0"));
        assert_eq!(target(&current, "0.3.0-rc.1", true).unwrap(), v("0.3.0-rc.1"));
        assert_eq!(target(&current, "v0.1.5", true).unwrap(), v("0.1.5"));
        let err = target(&current, "0.1.0", true).unwrap_err().to_string();
        assert_eq!(err, "0.1.0 does not come after the current version 0.1.0");
        assert!(target(&current, "0.0.9", true).is_err());
        assert!(target(&current, "next", true).is_err());
    }

    #[test]
    fn an_unreleased_current_version_can_be_the_first_release() {
        let current = v("0.1.0");
        assert_eq!(target(&current, "0.1.0", false).unwrap(), v("0.1.0"));
        assert_eq!(target(&current, "patch", false).unwrap(), v("0.1.1"));
        assert!(target(&current, "0.0.9", false).is_err());
    }

    #[test]
    fn release_types_for_semver_checks() {
        assert_eq!(v("0.1.0").level_to(&v("0.1.1")), Level::Patch);
        assert_eq!(v("0.1.0").level_to(&v("0.2.0")), Level::Major);
        assert_eq!(v("0.0.3").level_to(&v("0.0.4")), Level::Major);
        assert_eq!(v("1.2.3").level_to(&v("1.3.0")), Level::Minor);
        assert_eq!(v("1.2.3").level_to(&v("2.0.0")), Level::Major);
        assert_eq!(v("1.2.3").level_to(&v("1.2.4")), Level::Patch);
    }

    const MANIFEST: &str = r#"[workspace]
members = ["crates/*"]

[workspace.package]
version = "0.1.0"   # the one version of every crate
edition = "2024"

[workspace.dependencies]
ptc-lisp-syntax = { path = "crates/ptc-lisp-syntax", version = "0.1.0" }
ptc-providers = { path = "crates/ptc-providers", version = "0.1.0", default-features = false }
imbl = "7"
logos = { version = "0.1.0" }

[profile.release]
lto = "thin"
"#;

    #[test]
    fn the_manifest_bump_touches_only_versions_of_the_workspace() {
        assert_eq!(workspace_version(MANIFEST).unwrap(), v("0.1.0"));
        let bumped = bump_manifest(MANIFEST, &v("0.1.0"), &v("0.2.0")).unwrap();
        let expected = MANIFEST
            .replace("version = \"0.1.0\"   #", "version = \"0.2.0\"   #")
            .replace("ptc-lisp-syntax\", version = \"0.1.0\"", "ptc-lisp-syntax\", version = \"0.2.0\"")
            .replace("ptc-providers\", version = \"0.1.0\"", "ptc-providers\", version = \"0.2.0\"");
        assert_eq!(bumped, expected);
        // An unrelated dependency that happens to share the version keeps it.
        assert!(bumped.contains("logos = { version = \"0.1.0\" }"));
        assert_eq!(workspace_version(&bumped).unwrap(), v("0.2.0"));
    }

    #[test]
    fn the_manifest_bump_refuses_what_it_cannot_publish() {
        let err = bump_manifest(MANIFEST, &v("0.0.9"), &v("0.2.0")).unwrap_err().to_string();
        assert!(err.starts_with("[workspace.package] has"), "{err}");
        let unpinned = MANIFEST.replace("ptc-lisp-syntax\", version = \"0.1.0\"", "ptc-lisp-syntax\"");
        let err = bump_manifest(&unpinned, &v("0.1.0"), &v("0.2.0")).unwrap_err().to_string();
        assert!(err.contains("needs `version = \"0.1.0\"` to be published"), "{err}");
        assert!(workspace_version("[package]\nversion = \"1.0.0\"\n").is_err());
    }
}
