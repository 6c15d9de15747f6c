//! `CHANGELOG.md` in the Keep a Changelog format, as `cargo xtask release` reads and
//! writes it.
//!
//! The rule: a release needs notes. If the changelog already has a `## [X.Y.Z]` section
//! for the new version, it is used as written. Otherwise the notes under
//! `## [Unreleased]` become `## [X.Y.Z] - YYYY-MM-DD`, and an empty `[Unreleased]`
//! section is left on top for the next round; the comparison links at the bottom follow.
//! An empty `[Unreleased]` with no section for the version stops the release.

use anyhow::{Result, bail};

/// What the release does to the changelog.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// A `## [X.Y.Z]` section already exists: nothing to write.
    AlreadyThere,
    /// `[Unreleased]` moves under the version: the new text of the file.
    Move(String),
}

/// Second-level headings: (line index, the name between the brackets).
fn sections(lines: &[&str]) -> Vec<(usize, String)> {
    lines
        .iter()
        .enumerate()
        .filter_map(|(i, line)| {
            let name = line.strip_prefix("## [")?.split(']').next()?;
            Some((i, name.to_string()))
        })
        .collect()
}

/// Where the section starting at heading `at` ends: the next `## ` heading, the link
/// references at the bottom, or the end of the file.
fn section_end(lines: &[&str], at: usize) -> usize {
    (at + 1..lines.len()).find(|&i| lines[i].starts_with("## ") || is_link_reference(lines[i])).unwrap_or(lines.len())
}

fn is_link_reference(line: &str) -> bool {
    line.starts_with('[') && line.contains("]: ")
}

/// The changelog for releasing `version` (previously `previous`) on `date`.
pub fn plan(text: &str, version: &str, previous: &str, date: &str) -> Result<Plan> {
    let lines: Vec<&str> = text.lines().collect();
    let found = sections(&lines);
    if let Some((at, _)) = found.iter().find(|(_, name)| name == version) {
        let body = lines[at + 1..section_end(&lines, *at)].iter().any(|l| !l.trim().is_empty());
        if !body {
            bail!("CHANGELOG.md: the section ## [{version}] is empty; say what changed");
        }
        return Ok(Plan::AlreadyThere);
    }
    let Some((at, _)) = found.iter().find(|(_, name)| name.eq_ignore_ascii_case("unreleased")) else {
        bail!("CHANGELOG.md has neither ## [{version}] nor ## [Unreleased]: write the release notes first");
    };
    let end = section_end(&lines, *at);
    let notes: Vec<&str> = lines[at + 1..end].to_vec();
    if notes.iter().all(|l| l.trim().is_empty()) {
        bail!("CHANGELOG.md: ## [Unreleased] is empty and there is no ## [{version}]: write the release notes first");
    }
    let mut out: Vec<String> = lines[..*at].iter().map(|l| l.to_string()).collect();
    out.push("## [Unreleased]".into());
    out.push(String::new());
    out.push(format!("## [{version}] - {date}"));
    out.extend(notes.iter().map(|l| l.to_string()));
    for line in &lines[end..] {
        out.extend(relink(line, version, previous));
    }
    let mut text = out.join("\n");
    text.push('\n');
    Ok(Plan::Move(text))
}

/// The link reference lines that replace `line`: `[Unreleased]` now compares from the new
/// tag, and the new version gets its own link (compared with the previous tag, or the
/// tag's page for a first release).
fn relink(line: &str, version: &str, previous: &str) -> Vec<String> {
    let Some(url) = line.strip_prefix("[Unreleased]: ").or_else(|| line.strip_prefix("[unreleased]: ")) else {
        return vec![line.to_string()];
    };
    let Some(repo) = url
        .split("/compare/")
        .next()
        .filter(|r| *r != url)
        .or_else(|| url.split("/commits/").next().filter(|r| *r != url))
    else {
        return vec![line.to_string()];
    };
    let first = !url.contains(&format!("/compare/v{previous}..."));
    let release_link = if first {
        format!("[{version}]: {repo}/releases/tag/v{version}")
    } else {
        format!("[{version}]: {repo}/compare/v{previous}...v{version}")
    };
    vec![format!("[Unreleased]: {repo}/compare/v{version}...HEAD"), release_link]
}

/// The date of `unix_seconds` (UTC) as `YYYY-MM-DD` (the civil-from-days algorithm of
/// Howard Hinnant's date library).
pub fn date(unix_seconds: u64) -> String {
    let days = i64::try_from(unix_seconds / 86_400).unwrap_or(0);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPO: &str = "https://github.com/ptc-runner/ptc-runner";

    fn changelog(unreleased: &str, links: &str) -> String {
        format!(
            "# Changelog\n\nAll notable changes...\n\n## [Unreleased]\n{unreleased}\n## [0.1.0] - 2026-11-24\n\n### Added\n\n- The workspace.\n\n{links}"
        )
    }

    #[test]
    fn unreleased_notes_move_under_the_new_version() {
        let links = format!("[Unreleased]: {REPO}/compare/v0.1.0...HEAD\n[0.1.0]: {REPO}/releases/tag/v0.1.0\n");
        let text = changelog("\n### Fixed\n\n- A crash.\n", &links);
        let Plan::Move(out) = plan(&text, "0.1.1", "0.1.0", "2026-12-01").unwrap() else { panic!("no move") };
        let expected = format!(
            "# Changelog\n\nAll notable changes...\n\n## [Unreleased]\n\n## [0.1.1] - 2026-12-01\n\n### Fixed\n\n- A crash.\n\n## [0.1.0] - 2026-11-24\n\n### Added\n\n- The workspace.\n\n[Unreleased]: {REPO}/compare/v0.1.1...HEAD\n[0.1.1]: {REPO}/compare/v0.1.0...v0.1.1\n[0.1.0]: {REPO}/releases/tag/v0.1.0\n"
        );
        assert_eq!(out, expected);
    }

    #[test]
    fn a_first_release_links_to_its_tag() {
        let text = format!(
            "# Changelog\n\n## [Unreleased]\n\n### Added\n\n- Everything.\n\n[Unreleased]: {REPO}/commits/HEAD\n"
        );
        let Plan::Move(out) = plan(&text, "0.1.0", "0.1.0", "2026-11-24").unwrap() else { panic!("no move") };
        assert!(out.contains("## [Unreleased]\n\n## [0.1.0] - 2026-11-24\n\n### Added\n\n- Everything.\n"), "{out}");
        assert!(
            out.ends_with(&format!(
                "[Unreleased]: {REPO}/compare/v0.1.0...HEAD\n[0.1.0]: {REPO}/releases/tag/v0.1.0\n"
            )),
            "{out}"
        );
    }

    #[test]
    fn a_written_section_is_used_as_it_is() {
        let text = changelog("\n", "");
        assert_eq!(plan(&text, "0.1.0", "0.0.9", "2026-12-01").unwrap(), Plan::AlreadyThere);
    }

    #[test]
    fn no_notes_no_release() {
        let err = plan(&changelog("\n", ""), "0.1.1", "0.1.0", "2026-12-01").unwrap_err().to_string();
        assert_eq!(
            err,
            "CHANGELOG.md: ## [Unreleased] is empty and there is no ## [0.1.1]: write the release notes first"
        );
        let err =
            plan("# Changelog\n\n## [0.2.0] - 2026-01-01\n\n## [0.1.0]\n\n- x\n", "0.2.0", "0.1.0", "d").unwrap_err();
        assert_eq!(err.to_string(), "CHANGELOG.md: the section ## [0.2.0] is empty; say what changed");
        assert!(plan("# Changelog\n", "0.1.1", "0.1.0", "d").is_err());
    }

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(951_782_400), "2000-02-29");
        assert_eq!(date(1_795_996_800 + 86_399), "2026-11-30");
        assert_eq!(date(4_107_542_400), "2100-03-01");
    }
}
