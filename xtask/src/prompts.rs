//! `cargo xtask prompts`: every prompt card's size against its byte budget.
//!
//! A card is `prompts/*.md`: a `---` header of `key: value` lines (`name`, `purpose`,
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
    let dir = root.join("prompts");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md") && p.file_name().is_some_and(|n| n != "README.md"))
        .collect();
    files.sort();
    let mut cards = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let file = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        let (budget, bytes) = measure(&text);
        cards.push(Card { file, budget, bytes });
    }
    println!("{:<32} {:>7} {:>7}  status", "card", "bytes", "budget");
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
        println!("{:<32} {:>7} {:>7}  {status}", c.file, c.bytes, budget);
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
