//! `cargo xtask prompts`: every prompt card's size against its byte budget.
//!
//! A card is `crates/*/prompts/*.md` (each crate keeps the cards it embeds, so that its
//! published package carries them): a `---` header of `key: value` lines (`name`, `purpose`,
//! `budget_bytes`), a closing `---`, then the text that reaches the model. Only the text
//! counts against the budget. A card over budget, or without one, fails the command.

use std::path::Path;

use anyhow::{Context, Result, bail};

/// One card's measurements.
struct Card {
    file: String,
    budget: Option<usize>,
    bytes: usize,
}

pub fn run(root: &Path) -> Result<()> {
    let crates = root.join("crates");
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&crates).with_context(|| format!("cannot list {}", crates.display()))? {
        let dir = krate.with_context(|| format!("cannot list {}", crates.display()))?.path().join("prompts");
        if !dir.is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
            let path = entry.with_context(|| format!("cannot list {}", dir.display()))?.path();
            if path.extension().is_some_and(|x| x == "md") && path.file_name().is_some_and(|n| n != "README.md") {
                files.push(path);
            }
        }
    }
    if files.is_empty() {
        bail!("no prompt cards found under {}/*/prompts", crates.display());
    }
    files.sort();
    let mut cards = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let file = path.strip_prefix(&crates).unwrap_or(&path).display().to_string();
        let (budget, bytes) = measure(&text);
        cards.push(Card { file, budget, bytes });
    }
    println!("{:<56} {:>7} {:>7}  status", "card", "bytes", "budget");
    let mut problems = Vec::new();
    for c in &cards {
        let status = match c.budget {
            None => {
                problems.push(format!("{}: no budget_bytes in its header", c.file));
                "NO BUDGET"
            }
            Some(b) if c.bytes > b => {
                problems.push(format!("{}: {} bytes, {} over its budget of {b}", c.file, c.bytes, c.bytes - b));
                "OVER"
            }
            Some(_) => "ok",
        };
        let budget = c.budget.map(|b| b.to_string()).unwrap_or_else(|| "-".into());
        println!("{:<56} {:>7} {:>7}  {status}", c.file, c.bytes, budget);
    }
    if !problems.is_empty() {
        bail!("prompt cards out of budget:\n  {}", problems.join("\n  "));
    }
    Ok(())
}

/// The budget from the header and the byte size of the text after it (final newline
/// excluded, as the crates embed it).
fn measure(text: &str) -> (Option<usize>, usize) {
    let Some(rest) = text.strip_prefix("---\n") else { return (None, text.len()) };
    let Some(end) = rest.find("\n---\n") else { return (None, text.len()) };
    let budget = rest[..end]
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == "budget_bytes")
        .and_then(|(_, v)| v.trim().parse().ok());
    let body = &rest[end + 5..];
    (budget, body.strip_suffix('\n').unwrap_or(body).len())
}

#[cfg(test)]
mod tests {
    use super::measure;

    #[test]
    fn the_header_is_not_counted() {
        assert_eq!(measure("---\nname: x\nbudget_bytes: 10\n---\nhello\n"), (Some(10), 5));
        assert_eq!(measure("no header\n"), (None, 10));
    }
}
