//! `cargo xtask doc-blocks`: the shell blocks of README.md and docs/*.md, run as a reader
//! would paste them.
//!
//! Every ```` ```sh ```` block runs, from the workspace root, with `ptc` on the `PATH` (the
//! debug build) and `cargo run --release -p ptc --` read as `ptc`, so one build serves them
//! all. A block whose lines start with `$ ` is a transcript: each command's output (stdout
//! and stderr, as a terminal shows them) must be the lines under it, where `...` inside a
//! line stands for any text. Any other block must exit 0. The blocks that need a network, an
//! API key, a live client or this command itself are skipped by the short list in
//! [`SKIPPED`], each with its reason, and the run says how many it skipped and why.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Blocks that cannot run offline in CI: any block containing the text is skipped.
const SKIPPED: &[(&str, &str)] = &[
    ("cargo install", "installs into ~/.cargo (the same build runs every other block)"),
    ("cargo xtask", "runs this suite or a long job of its own"),
    ("curl ", "needs a network or a running server"),
    ("claude mcp", "needs the Claude Code client"),
    ("_API_KEY", "needs a vendor API key"),
    ("ollama", "needs a local Ollama server"),
    ("--llm haiku", "needs a vendor API key"),
    ("reference-servers.json", "downloads the reference MCP servers with npx"),
    ("mcp --http", "starts a server that runs until stopped"),
    ("cargo build --release", "an optimised build of its own (many minutes); the bench measures it"),
    ("--profile profiling", "an optimised build of its own (many minutes); the bench measures it"),
];

/// One fenced shell block.
#[derive(Debug)]
struct Block {
    file: PathBuf,
    line: usize,
    text: String,
}

/// Runs every block; fails listing each block that failed.
pub fn run(root: &Path) -> Result<()> {
    let cargo = crate::cargo();
    crate::step("build ptc", &cargo, &["build", "-q", "-p", "ptc"])?;
    let ptc = crate::target_dir().join("debug/ptc");
    let bin = crate::target_dir().join("doc-blocks/bin");
    std::fs::create_dir_all(&bin)?;
    let link = bin.join("ptc");
    let _ = std::fs::remove_file(&link);
    std::fs::copy(&ptc, &link).with_context(|| format!("cannot copy {}", ptc.display()))?;
    let path = match std::env::var_os("PATH") {
        Some(p) => format!("{}:{}", bin.display(), p.to_string_lossy()),
        None => bin.display().to_string(),
    };

    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);

    let mut prelude = String::new();
    let (mut ran, mut skipped, mut failures) = (0usize, Vec::new(), Vec::new());
    for file in &files {
        let text = std::fs::read_to_string(file)?;
        // a block that only assigns variables (README's M=(...)) is kept for the blocks
        // after it in the same file
        prelude.clear();
        for block in blocks(file, &text) {
            let place = format!("{}:{}", block.file.strip_prefix(root).unwrap_or(&block.file).display(), block.line);
            if let Some((_, why)) = SKIPPED.iter().find(|(needle, _)| block.text.contains(needle)) {
                skipped.push(format!("{place}: {why}"));
                continue;
            }
            if is_assignment(&block.text) {
                prelude.push_str(&block.text);
                prelude.push('\n');
                continue;
            }
            ran += 1;
            let result = if block.text.lines().any(|l| l.starts_with("$ ")) {
                run_transcript(root, &path, &prelude, &block.text)
            } else {
                run_script(root, &path, &prelude, &block.text)
            };
            if let Err(e) = result {
                failures.push(format!("{place}: {e:#}"));
            }
        }
    }
    eprintln!("doc-blocks: ran {ran} shell blocks, skipped {}:", skipped.len());
    for s in &skipped {
        eprintln!("  skipped {s}");
    }
    if !failures.is_empty() {
        bail!("{} doc block(s) failed:\n{}", failures.len(), failures.join("\n"));
    }
    Ok(())
}

/// The ```` ```sh ```` blocks of a Markdown text, with the line each starts on.
fn blocks(file: &Path, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut current: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        match &mut current {
            None if line.trim_end() == "```sh" => {
                current = Some(Block { file: file.to_path_buf(), line: i + 1, text: String::new() });
            }
            None => {}
            Some(_) if line.starts_with("```") => out.extend(current.take()),
            Some(b) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
        }
    }
    out
}

/// True for a block of variable assignments only (`M=(...)`, continued lines included).
fn is_assignment(text: &str) -> bool {
    let first = text.lines().next().unwrap_or("");
    let name_end = first.find('=').unwrap_or(0);
    name_end > 0
        && first[..name_end].chars().all(|c| c.is_ascii_uppercase() || c == '_')
        && first[name_end + 1..].starts_with('(')
        && text.trim_end().ends_with(')')
}

/// The README's way to run from a checkout, read as the `ptc` on the PATH.
fn as_ptc(command: &str) -> String {
    command.replace("cargo run --release -p ptc --", "ptc")
}

fn shell(root: &Path, path: &str, script: &str) -> Result<std::process::Output> {
    Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(root)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .output()
        .context("cannot run bash")
}

fn run_script(root: &Path, path: &str, prelude: &str, text: &str) -> Result<()> {
    let script = format!("set -euo pipefail\n{prelude}{}", as_ptc(text));
    let out = shell(root, path, &script)?;
    if !out.status.success() {
        bail!(
            "exited with {}:\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// `$ command` lines, each followed by the output it must print.
fn run_transcript(root: &Path, path: &str, prelude: &str, text: &str) -> Result<()> {
    let mut steps: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        if let Some(cmd) = line.strip_prefix("$ ") {
            steps.push((cmd.to_string(), Vec::new()));
        } else if let Some((_, expected)) = steps.last_mut() {
            expected.push(line.to_string());
        }
    }
    for (cmd, expected) in steps {
        let out = shell(root, path, &format!("{prelude}{} 2>&1", as_ptc(&cmd)))?;
        let got = String::from_utf8_lossy(&out.stdout).into_owned();
        let got: Vec<&str> = got.lines().collect();
        let matches = got.len() == expected.len()
            && got.iter().zip(&expected).all(|(g, e)| line_matches(g.trim_end(), e.trim_end()));
        if !matches {
            bail!("`$ {cmd}` printed\n{}\nbut the doc shows\n{}", got.join("\n"), expected.join("\n"));
        }
    }
    Ok(())
}

/// `expected` with each `...` standing for any text.
fn line_matches(got: &str, expected: &str) -> bool {
    let parts: Vec<&str> = expected.split("...").collect();
    if parts.len() == 1 {
        return got == expected;
    }
    let mut rest = got;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else { return false };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            let Some(at) = rest.find(part) else { return false };
            rest = &rest[at + part.len()..];
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ellipsis_stands_for_any_text() {
        assert!(line_matches(r#"{"a":1,"usage":{"x":2},"v":3}"#, r#"{"a":1,"usage":{...},"v":3}"#));
        assert!(!line_matches(r#"{"a":2,"usage":{"x":2},"v":3}"#, r#"{"a":1,"usage":{...},"v":3}"#));
        assert!(line_matches("same", "same"));
        assert!(!line_matches("same!", "same"));
    }

    #[test]
    fn blocks_and_assignments_are_found() {
        let md = "text\n```sh\nM=(--a b\n   --c d)\n```\n```text\nx\n```\n```sh\n$ ptc eval 1\n1\n```\n";
        let found = blocks(Path::new("x.md"), md);
        assert_eq!(found.len(), 2);
        assert!(is_assignment(&found[0].text));
        assert!(!is_assignment(&found[1].text));
        assert_eq!(found[1].line, 9);
        assert_eq!(as_ptc("cargo run --release -p ptc -- eval 1"), "ptc eval 1");
    }
}
