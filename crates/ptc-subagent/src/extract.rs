//! Finding the program in a model's answer.
//!
//! Models wrap code in Markdown fences, sometimes in several, sometimes in XML-ish tags,
//! sometimes not at all, and chat front-ends sprinkle invisible characters and curly
//! quotes into what they produce. Extraction first normalises the text, then looks for,
//! in order: fenced ```` ```clojure ````/```` ```lisp ```` blocks, untagged fences whose body
//! starts with `(`, `<clojure>`-style tags, and finally a bare s-expression. Exactly one
//! block may be found; two or more are refused (none of them runs), because definitions
//! in separate blocks would silently not see each other.

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
    let mut bodies: Vec<&str> = blocks.iter().filter(|b| is_lisp_tag(&b.tag)).map(|b| b.body.as_str()).collect();
    if bodies.len() < 2 {
        bodies = blocks
            .iter()
            .filter(|b| b.tag.is_empty() && b.body.trim_start().starts_with('('))
            .map(|b| b.body.as_str())
            .collect();
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
    let tagged: Vec<&Block> = blocks.iter().filter(|b| is_lisp_tag(&b.tag)).collect();
    match tagged.len() {
        0 => {}
        1 => return code_or_nothing(&tagged[0].body),
        n => return Extracted::Multiple(n),
    }
    let untagged: Vec<&Block> =
        blocks.iter().filter(|b| b.tag.is_empty() && b.body.trim_start().starts_with('(')).collect();
    match untagged.len() {
        0 => {}
        1 => return code_or_nothing(&untagged[0].body),
        n => return Extracted::Multiple(n),
    }
    if let Some(code) = xml_block(&text) {
        return code_or_nothing(&code);
    }
    let trimmed = text.trim();
    if trimmed.starts_with('(') {
        return Extracted::Code(trimmed.to_string());
    }
    Extracted::NoCode
}

fn code_or_nothing(body: &str) -> Extracted {
    let code = body.trim();
    if code.is_empty() { Extracted::NoCode } else { Extracted::Code(code.to_string()) }
}

fn is_lisp_tag(tag: &str) -> bool {
    matches!(tag.to_ascii_lowercase().as_str(), "clojure" | "lisp" | "clj" | "ptc-lisp")
}

/// CRLF to LF, invisible characters removed, typographic quotes made ASCII.
pub fn normalize(text: &str) -> String {
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

struct Block {
    tag: String,
    body: String,
}

/// Line-based fence scan. A fence line starts (after indentation) with three or more
/// backticks; its rest is the tag. An unclosed last block runs to the end of the text.
fn fenced_blocks(text: &str) -> Vec<Block> {
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
                blocks.push(Block { tag, body: body.join("\n") });
            }
            Some((width, tag, mut body)) => {
                body.push(line);
                open = Some((width, tag, body));
            }
        }
    }
    if let Some((_, tag, body)) = open {
        blocks.push(Block { tag, body: body.join("\n") });
    }
    blocks
}

/// `<clojure>...</clojure>` and friends.
fn xml_block(text: &str) -> Option<String> {
    for tag in ["clojure", "lisp", "program", "code"] {
        let open = format!("<{tag}>");
        let close = format!("</{tag}>");
        if let Some(start) = text.find(&open) {
            let rest = &text[start + open.len()..];
            let end = rest.find(&close).unwrap_or(rest.len());
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
    let trimmed = response.trim_start();
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

    #[test]
    fn thinking_preamble_is_stripped() {
        assert_eq!(strip_thinking("thinking: first count\n```clojure\n(+ 1 2)\n```"), "```clojure\n(+ 1 2)\n```");
        assert_eq!(strip_thinking("```clojure\n(+ 1 2)\n```"), "```clojure\n(+ 1 2)\n```");
        assert_eq!(strip_thinking("thinkin\u{e9}: x"), "thinkin\u{e9}: x");
    }
}
