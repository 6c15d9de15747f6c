//! The one error type of the reader, and how it is shown to a person (or a model).

use std::ops::Range;

use crate::ast::Span;

/// A located reader error.
///
/// `message` is written for whoever wrote the program: it says what is wrong, where
/// (`line L, column C` appears in the text itself) and what to write instead. `line`,
/// `column` and `span` carry the same location for tools.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct ParseError {
    /// What went wrong and what to write instead.
    pub message: String,
    /// 1-based line of the offending text.
    pub line: u32,
    /// 1-based column (in characters) of the offending text.
    pub column: u32,
    /// Location of the offending text (for unclosed delimiters: the opener).
    pub span: Span,
}

/// How much of a long source line [`ParseError::render`] shows around the caret.
const CONTEXT_BEFORE: usize = 60;
const CONTEXT_AFTER: usize = 40;

impl ParseError {
    /// Builds an error located at `span` (line and column are taken from it).
    pub(crate) fn at(span: Span, message: impl Into<String>) -> Self {
        ParseError { message: message.into(), line: span.line, column: span.column, span }
    }

    /// The message, then the offending source line and a caret under the column:
    ///
    /// ```text
    /// unclosed vector: '[' opened at line 1, column 6 was never closed; add ']'
    ///   1 | (let [x 1
    ///     |      ^
    /// ```
    ///
    /// Long lines are cut to a window around the caret (marked with `...`). If `src` is not
    /// the text the error came from and has no such line, only the message is returned.
    pub fn render(&self, src: &str) -> String {
        let mut out = self.message.clone();
        let Some(line) = src.split('\n').nth(self.line.saturating_sub(1) as usize) else {
            return out;
        };
        let line = line.strip_suffix('\r').unwrap_or(line);
        let chars: Vec<char> = line.chars().collect();
        let caret_at = (self.column.saturating_sub(1) as usize).min(chars.len());
        let from = caret_at.saturating_sub(CONTEXT_BEFORE);
        let to = caret_at.saturating_add(CONTEXT_AFTER).min(chars.len());

        let mut shown = String::new();
        let mut under = String::new();
        if from > 0 {
            shown.push_str("...");
            under.push_str("   ");
        }
        for (i, &c) in chars.get(from..to).unwrap_or(&[]).iter().enumerate() {
            shown.push(c);
            if from + i < caret_at {
                // Keep tabs so the caret lines up with what a terminal shows.
                under.push(if c == '\t' { '\t' } else { ' ' });
            }
        }
        if to < chars.len() {
            shown.push_str("...");
        }
        let number = self.line.to_string();
        let pad = " ".repeat(number.len());
        out.push_str(&format!("\n  {number} | {shown}\n  {pad} | {under}^"));
        out
    }
}

/// A lexing failure: a message in two halves around the location, so the final text can
/// say "… at line L, column C …" wherever it reads best.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct LexError {
    /// Byte range of the offending text; `None` means the token being lexed.
    pub range: Option<Range<usize>>,
    /// Message text before `line L, column C`.
    pub head: String,
    /// Message text after `line L, column C`.
    pub tail: String,
}

impl LexError {
    /// An error located at the current token.
    pub(crate) fn new(head: impl Into<String>, tail: impl Into<String>) -> Self {
        LexError { range: None, head: head.into(), tail: tail.into() }
    }

    /// The same error located at `range` (absolute byte offsets).
    pub(crate) fn at(mut self, range: Range<usize>) -> Self {
        self.range = Some(range);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(line: u32, column: u32) -> ParseError {
        ParseError::at(Span { start: 0, end: 1, line, column }, "boom")
    }

    #[test]
    fn render_puts_the_caret_under_the_column() {
        let src = "(foo)\n(let [x 1\n";
        assert_eq!(error(2, 6).render(src), "boom\n  2 | (let [x 1\n    |      ^");
    }

    #[test]
    fn render_pads_for_wide_line_numbers_and_keeps_tabs() {
        let src = format!("{}\t(x", "\n".repeat(11));
        assert_eq!(error(12, 2).render(&src), "boom\n  12 | \t(x\n     | \t^");
    }

    #[test]
    fn render_strips_carriage_returns() {
        assert_eq!(error(1, 3).render("ab)\r\nx"), "boom\n  1 | ab)\n    |   ^");
    }

    #[test]
    fn render_at_end_of_input_points_past_the_last_character() {
        assert_eq!(error(1, 4).render("abc"), "boom\n  1 | abc\n    |    ^");
        assert_eq!(error(2, 1).render("abc\n"), "boom\n  2 | \n    | ^");
    }

    #[test]
    fn render_without_the_line_is_just_the_message() {
        assert_eq!(error(7, 1).render("one line"), "boom");
    }

    #[test]
    fn render_cuts_long_lines_around_the_caret() {
        let src = format!("{}X{}", "a".repeat(200), "b".repeat(200));
        let shown = error(1, 201).render(&src);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines[1], format!("  1 | ...{}X{}...", "a".repeat(60), "b".repeat(39)));
        assert_eq!(lines[2], format!("    | {}^", " ".repeat(63)));
    }
}
