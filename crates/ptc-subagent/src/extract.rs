//! Finding the program in a model's answer.
//!
//! Models wrap code in Markdown fences, sometimes in several, sometimes in XML-ish tags,
//! sometimes not at all, and chat front-ends sprinkle invisible characters and curly
//! quotes into what they produce. Extraction first normalises the text, then looks for,
//! in order: fenced ```` ```clojure ````/```` ```lisp ```` blocks, untagged fences whose body
//! starts with `(`, `<clojure>`-style tags, and finally a bare s-expression. Exactly one
//! block may be found; two or more are refused (none of them runs), because definitions
//! in separate blocks would silently not see each other.

use std::borrow::Cow;

/// What the model's answer yielded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Extracted {
    /// One program.
    Code(String),
    /// Several code blocks: refused with the `multiple_code_blocks` feedback.
    Multiple(usize),
    /// Nothing that looks like PTC-Lisp: the `no_code_found` feedback.
    NoCode,
}

/// What the loop does with an answer holding several code blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MultipleCodeBlocks {
    /// None of them runs; the model is told to send one block (`multiple_code_blocks`).
    /// The default: a model that writes several blocks often means alternatives or a
    /// draft and its fix, and running them all would act on the draft.
    #[default]
    Refuse,
    /// The seed's rule: the blocks run in order as one program (as if in one `do`),
    /// so definitions in an earlier block are seen by later ones and the last block's
    /// value is the turn's result. Each block must parse on its own.
    Sequential,
}

/// The blocks of an answer that held several (see [`Extracted::Multiple`]), joined into
/// one program in order; `Err` is the feedback naming the block that does not parse.
pub(crate) fn join_blocks(response: &str) -> Result<String, String> {
    let text = normalize(response);
    let blocks = fenced_blocks(&text);
    let mut bodies: Vec<&str> = blocks.iter().filter(|b| is_lisp_tag(b.tag)).map(|b| b.body).collect();
    if bodies.len() < 2 {
        bodies =
            blocks.iter().filter(|b| b.tag.is_empty() && trim_start(b.body).starts_with('(')).map(|b| b.body).collect();
    }
    for (i, body) in bodies.iter().enumerate() {
        if let Err(e) = ptc_lisp_syntax::parse_program(body) {
            return Err(format!(
                "Error: code block {} of {} does not parse on its own: {e}. Blocks run in order as one program; each must be complete.",
                i + 1,
                bodies.len()
            ));
        }
    }
    Ok(bodies.iter().map(|b| b.trim()).collect::<Vec<_>>().join("\n"))
}

/// Feedback when the answer holds `n` code blocks.
pub(crate) fn multiple_code_blocks_message(n: usize) -> String {
    format!(
        "Error: Found {n} code blocks in your response, but exactly ONE is required. Combine all your code into a single ```clojure block. Variables defined in separate blocks are NOT shared."
    )
}

/// Feedback when the answer holds no program.
pub(crate) const NO_CODE_FOUND_MESSAGE: &str = "Error: No valid PTC-Lisp code found in response. Please provide code in a ```clojure or ```lisp code block, or as a raw s-expression starting with '('.";

/// Extracts the program from a model's answer.
pub fn extract_code(response: &str) -> Extracted {
    let text = normalize(response);
    let blocks = fenced_blocks(&text);
    let tagged: Vec<&Block> = blocks.iter().filter(|b| is_lisp_tag(b.tag)).collect();
    match tagged.len() {
        0 => {}
        1 => return code_or_nothing(tagged[0].body),
        n => return Extracted::Multiple(n),
    }
    let untagged: Vec<&Block> =
        blocks.iter().filter(|b| b.tag.is_empty() && trim_start(b.body).starts_with('(')).collect();
    match untagged.len() {
        0 => {}
        1 => return code_or_nothing(untagged[0].body),
        n => return Extracted::Multiple(n),
    }
    if let Some(code) = xml_block(&text) {
        return code_or_nothing(&code);
    }
    if trim_start(&text).starts_with('(') {
        return Extracted::Code(trim(&text).to_string());
    }
    Extracted::NoCode
}

fn code_or_nothing(body: &str) -> Extracted {
    let code = trim(body);
    if code.is_empty() { Extracted::NoCode } else { Extracted::Code(code.to_string()) }
}

fn is_lisp_tag(tag: &str) -> bool {
    ["clojure", "lisp", "clj", "ptc-lisp"].iter().any(|t| tag.eq_ignore_ascii_case(t))
}

/// CRLF to LF, invisible characters removed, typographic quotes made ASCII.
///
/// One pass that copies the unchanged stretches between the characters it rewrites
/// (found by a byte search for `\r` and the lead bytes of the rewritten characters), and
/// borrows the text when nothing changes: a megabyte answer costs a copy at most.
pub fn normalize(text: &str) -> Cow<'_, str> {
    let mut next = Candidates::new(text.as_bytes());
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut from = 0;
    while let Some(at) = next.from(from) {
        // `at` holds `\r` or a lead byte, so a character starts there
        let Some(c) = text[at..].chars().next() else { break };
        let mut len = c.len_utf8();
        let with = match c {
            '\r' => {
                if text.as_bytes().get(at + 1) == Some(&b'\n') {
                    len = 2;
                }
                Some('\n')
            }
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => Some('\''),
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => Some('"'),
            c if is_invisible(c) => None,
            // a character with the same lead byte that stays
            _ => {
                from = at + len;
                continue;
            }
        };
        let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
        out.push_str(&text[copied..at]);
        out.extend(with);
        copied = at + len;
        from = copied;
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
    }
}

/// Where the next byte that may start a character [`normalize`] rewrites is: `\r`, or the
/// lead byte of U+00A0/U+00AD (`C2`), U+180E (`E1`), U+2000 to U+2060 (`E2`), U+FEFF and
/// U+FFFE (`EF`). Two searches, each remembered until passed, keep the scan linear.
struct Candidates<'a> {
    bytes: &'a [u8],
    /// Next `\r`, `C2` or `E2` at or after the last position searched from.
    common: Option<usize>,
    /// Next `E1` or `EF`.
    rare: Option<usize>,
    searched: bool,
}

impl<'a> Candidates<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Candidates { bytes, common: None, rare: None, searched: false }
    }

    /// The first candidate at or after `at`; `at` never moves back between calls.
    fn from(&mut self, at: usize) -> Option<usize> {
        let rest = self.bytes.get(at..)?;
        if !self.searched || self.common.is_some_and(|p| p < at) {
            self.common = memchr::memchr3(b'\r', 0xC2, 0xE2, rest).map(|p| p + at);
        }
        if !self.searched || self.rare.is_some_and(|p| p < at) {
            self.rare = memchr::memchr2(0xE1, 0xEF, rest).map(|p| p + at);
        }
        self.searched = true;
        match (self.common, self.rare) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{FEFF}'
            | '\u{200B}'..='\u{200D}'
            | '\u{00A0}'
            | '\u{202F}'
            | '\u{2060}'
            | '\u{FFFE}'
            | '\u{00AD}'
            | '\u{180E}'
            | '\u{2000}'..='\u{200A}'
    )
}

struct Block<'a> {
    tag: &'a str,
    body: &'a str,
}

/// Line-based fence scan over normalised text (no `\r`). A fence line starts (after
/// indentation) with three or more backticks; its rest is the tag. An unclosed last block
/// runs to the end of the text. Bodies are slices of `text`: its lines between the fences.
///
/// Only lines holding a backtick can be fences, so the scan jumps from backtick to
/// backtick (a byte search) and looks at the line around each; every byte is searched at
/// most twice, forwards and back.
fn fenced_blocks(text: &str) -> Vec<Block<'_>> {
    let bytes = text.as_bytes();
    let mut blocks = Vec::new();
    // (fence width, tag, where the body starts)
    let mut open: Option<(usize, &str, usize)> = None;
    // the start of the first line not looked at yet
    let mut pos = 0;
    while let Some(hit) = bytes.get(pos..).and_then(|rest| memchr::memchr(b'`', rest)).map(|p| pos + p) {
        let start = memchr::memrchr(b'\n', &bytes[pos..hit]).map_or(pos, |p| pos + p + 1);
        let end = memchr::memchr(b'\n', &bytes[hit..]).map_or(text.len(), |p| hit + p);
        pos = end + 1;
        let line = &text[start..end];
        let trimmed = line.trim_start();
        if start + (line.len() - trimmed.len()) != hit {
            continue; // a backtick inside the line: not a fence
        }
        let ticks = trimmed.bytes().take_while(|b| *b == b'`').count();
        match open {
            None if ticks >= 3 => {
                let tag = trimmed[ticks..].split_whitespace().next().unwrap_or("");
                open = Some((ticks, tag, end + 1));
            }
            Some((width, tag, from)) if ticks >= width && trimmed[ticks..].trim().is_empty() => {
                // the body ends before the newline that ends its last line
                let to = start.saturating_sub(1);
                let body = if to <= from { "" } else { text.get(from..to).unwrap_or("") };
                blocks.push(Block { tag, body });
                open = None;
            }
            _ => {}
        }
    }
    if let Some((_, tag, from)) = open {
        let rest = text.get(from..).unwrap_or("");
        blocks.push(Block { tag, body: rest.strip_suffix('\n').unwrap_or(rest) });
    }
    blocks
}

/// `s.trim_start()`, with a run of ASCII blanks skipped byte by byte first: the same
/// result, for a fraction of the cost when an answer is mostly blank lines.
fn trim_start(s: &str) -> &str {
    let blank = s.bytes().take_while(|b| is_ascii_blank(*b)).count();
    s[blank..].trim_start()
}

/// `s.trim_end()`, ASCII blanks skipped byte by byte first (see [`trim_start`]).
fn trim_end(s: &str) -> &str {
    let blank = s.bytes().rev().take_while(|b| is_ascii_blank(*b)).count();
    s[..s.len() - blank].trim_end()
}

/// `s.trim()` (see [`trim_start`]).
pub(crate) fn trim(s: &str) -> &str {
    trim_end(trim_start(s))
}

/// The ASCII characters `char::is_whitespace` holds: tab, line feed, vertical tab, form
/// feed, carriage return and space.
fn is_ascii_blank(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | b' ')
}

/// `<clojure>...</clojure>` and friends.
fn xml_block(text: &str) -> Option<String> {
    for tag in ["clojure", "lisp", "program", "code"] {
        let open = format!("<{tag}>");
        let close = format!("</{tag}>");
        if let Some(start) = memchr::memmem::find(text.as_bytes(), open.as_bytes()) {
            let rest = &text[start + open.len()..];
            let end = memchr::memmem::find(rest.as_bytes(), close.as_bytes()).unwrap_or(rest.len());
            let body = rest[..end].trim();
            if body.starts_with('(') {
                return Some(body.to_string());
            }
        }
    }
    None
}

/// Removes a leading `thinking:` preamble (everything before the first code fence) from
/// the assistant message kept in the conversation.
pub fn strip_thinking(response: &str) -> String {
    let trimmed = trim_start(response);
    if trimmed.get(..9).is_some_and(|head| head.eq_ignore_ascii_case("thinking:"))
        && let Some(i) = trimmed.find("```")
    {
        return trimmed[i..].to_string();
    }
    response.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(s: &str) -> String {
        match extract_code(s) {
            Extracted::Code(c) => c,
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn one_clojure_block_with_prose_around() {
        assert_eq!(code("Let me count.\n```clojure\n(count data/xs)\n```\nDone."), "(count data/xs)");
        assert_eq!(code("```lisp\n(+ 1 2)\n```"), "(+ 1 2)");
        assert_eq!(code("```Clojure\r\n(+ 1\r\n 2)\r\n```"), "(+ 1\n 2)");
    }

    #[test]
    fn two_tagged_blocks_are_refused() {
        assert_eq!(extract_code("```clojure\n(def a 1)\n```\n```clojure\n(inc a)\n```"), Extracted::Multiple(2));
        assert!(multiple_code_blocks_message(2).starts_with("Error: Found 2 code blocks"));
    }

    #[test]
    fn a_json_block_beside_the_program_is_ignored() {
        assert_eq!(code("```json\n{\"a\": 1}\n```\n```clojure\n(+ 1 2)\n```"), "(+ 1 2)");
    }

    #[test]
    fn untagged_fence_starting_with_paren() {
        assert_eq!(code("```\n(map inc [1 2])\n```"), "(map inc [1 2])");
        assert_eq!(extract_code("```\nhello\n```"), Extracted::NoCode);
    }

    #[test]
    fn xml_tags_and_raw_sexpr() {
        assert_eq!(code("Here: <clojure>(+ 1 2)</clojure>"), "(+ 1 2)");
        assert_eq!(code("  (return {:n 1})  "), "(return {:n 1})");
        assert_eq!(extract_code("I cannot do that."), Extracted::NoCode);
        assert_eq!(extract_code("```clojure\n\n```"), Extracted::NoCode);
    }

    #[test]
    fn unclosed_fence_runs_to_the_end() {
        assert_eq!(code("```clojure\n(+ 1 2)"), "(+ 1 2)");
    }

    #[test]
    fn invisible_characters_and_smart_quotes_are_normalised() {
        assert_eq!(code("```clojure\n(str \u{201C}a\u{201D}\u{200B} \u{2018}b)\u{FEFF}\n```"), "(str \"a\" 'b)");
        assert_eq!(normalize("a\u{00A0}b\u{00AD}c"), "abc");
    }

    /// What `normalize` did before it copied stretches: three whole passes.
    fn normalize_by_passes(text: &str) -> String {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        text.chars()
            .filter(|c| !is_invisible(*c))
            .map(|c| match c {
                '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
                '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
                other => other,
            })
            .collect()
    }

    #[test]
    fn normalising_in_one_pass_matches_the_three_passes() {
        let pieces = [
            "a", "(", "\r", "\n", "\r\n", "\r\r\n", "\u{2018}", "\u{201F}", "\u{201C}", "\u{2020}", "\u{2060}",
            "\u{2061}", "\u{200B}", "\u{2000}", "\u{200E}", "\u{202F}", "\u{00A0}", "\u{00A9}", "\u{00AD}", "\u{180E}",
            "\u{180F}", "\u{1800}", "\u{FEFF}", "\u{FFFE}", "\u{FFFD}", "\u{EF00}", "é", "😀", "```",
        ];
        // every sequence of up to three pieces, and a long mixed one
        let mut texts = vec![String::new(), pieces.concat(), pieces.concat().repeat(50)];
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    texts.push(format!("{a}{b}{c}"));
                }
            }
        }
        for text in &texts {
            let once = normalize(text);
            assert_eq!(once, normalize_by_passes(text), "{text:?}");
            assert_eq!(normalize(&once), once, "normalising twice changes {text:?}");
        }
    }

    #[test]
    fn text_that_needs_no_change_is_borrowed() {
        let text = "```clojure\n(str \"caf\u{e9}\" \u{2014} \u{1F600})\n```".repeat(1000);
        assert!(matches!(normalize(&text), Cow::Borrowed(_)));
        assert!(matches!(normalize("a\rb"), Cow::Owned(_)));
    }

    /// What `fenced_blocks` did before it jumped between backticks: every line, its body
    /// lines collected and joined.
    fn fenced_blocks_by_lines(text: &str) -> Vec<(String, String)> {
        let mut blocks = Vec::new();
        let mut open: Option<(usize, String, Vec<&str>)> = None;
        for line in text.lines() {
            let trimmed = line.trim_start();
            let ticks = trimmed.chars().take_while(|c| *c == '`').count();
            match open.take() {
                None if ticks >= 3 => {
                    let tag = trimmed[ticks..].split_whitespace().next().unwrap_or("").to_string();
                    open = Some((ticks, tag, Vec::new()));
                }
                None => {}
                Some((width, tag, body)) if ticks >= width && trimmed[ticks..].trim().is_empty() => {
                    blocks.push((tag, body.join("\n")));
                }
                Some((width, tag, mut body)) => {
                    body.push(line);
                    open = Some((width, tag, body));
                }
            }
        }
        if let Some((_, tag, body)) = open {
            blocks.push((tag, body.join("\n")));
        }
        blocks
    }

    #[test]
    fn jumping_between_backticks_finds_the_blocks_every_line_would() {
        let pieces =
            ["```", "````", "```clojure", " ```lisp x", "`", "a`b", "\n", "(a)", "  ", "\u{3000}", "\t``` ", "\n\n"];
        let mut texts = vec![String::new(), pieces.concat().repeat(20)];
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    for d in pieces {
                        texts.push(format!("{a}{b}{c}{d}"));
                    }
                }
            }
        }
        for text in &texts {
            let found: Vec<(String, String)> =
                fenced_blocks(text).into_iter().map(|b| (b.tag.to_string(), b.body.to_string())).collect();
            assert_eq!(found, fenced_blocks_by_lines(text), "{text:?}");
        }
    }

    #[test]
    fn trimming_by_bytes_first_trims_what_std_trims() {
        let blanks =
            ["", " ", "\t", "\n", "\u{b}", "\u{c}", "\r", "\u{85}", "\u{3000}", "\u{2028}", "x", "\u{e9}", "\0"];
        for a in blanks {
            for b in blanks {
                for c in blanks {
                    let s = format!("{a}{b}{c}{a}");
                    assert_eq!(trim_start(&s), s.trim_start(), "{s:?}");
                    assert_eq!(trim_end(&s), s.trim_end(), "{s:?}");
                    assert_eq!(trim(&s), s.trim(), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn block_bodies_are_the_lines_between_the_fences() {
        assert_eq!(code("```clojure\n\n(+ 1\n\n 2)\n\n```"), "(+ 1\n\n 2)");
        assert_eq!(code("```clojure"), "NoCode");
        assert_eq!(code("```clojure\n"), "NoCode");
        assert_eq!(code("x\n  ````lisp extra\n(a)\n```\n(b)\n````\n"), "(a)\n```\n(b)");
        assert_eq!(extract_code("```clj\n(a)\n```\n```CLOJURE\n(b)"), Extracted::Multiple(2));
        assert_eq!(join_blocks("```clj\n(def a 1)\n```\n```CLOJURE\n(inc a)\n\n").as_deref(), Ok("(def a 1)\n(inc a)"));
    }

    #[test]
    fn thinking_preamble_is_stripped() {
        assert_eq!(strip_thinking("thinking: first count\n```clojure\n(+ 1 2)\n```"), "```clojure\n(+ 1 2)\n```");
        assert_eq!(strip_thinking("```clojure\n(+ 1 2)\n```"), "```clojure\n(+ 1 2)\n```");
        assert_eq!(strip_thinking("thinkin\u{e9}: x"), "thinkin\u{e9}: x");
    }
}
