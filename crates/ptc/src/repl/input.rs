//! Where inputs come from: a terminal (rustyline: line editing, completion, history, an
//! unfinished form continues on the next line) or a pipe (read line by line, the same
//! continuation rule, no prompt, no history).

use std::borrow::Cow;
use std::io::BufRead;

use anyhow::Result;
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::Validator;
use rustyline::{CompletionType, Config, Context, Editor, Helper};

use super::complete::{Completions, word_start};
use super::history::{HistoryFile, MAX_ENTRIES};

/// The prompt, as Clojure shows it.
pub const PROMPT: &str = "user=> ";

/// The prompt of a line that continues an unfinished form (as Leiningen's REPL shows it).
pub const CONTINUATION: &str = "  #_=> ";

/// What reading produced.
#[derive(Debug, PartialEq)]
pub enum Read {
    /// One complete input (possibly several lines).
    Entry(String),
    /// Ctrl-C: the input being typed was dropped.
    Interrupted,
    /// Ctrl-D or the end of the pipe.
    Eof,
}

/// True while `text` is an unfinished form (an unclosed bracket or string), so Enter
/// continues it on the next line instead of evaluating it.
pub fn is_unfinished(text: &str) -> bool {
    match ptc_lisp_syntax::parse_program(text) {
        Ok(_) => false,
        Err(e) => e.message.starts_with("unclosed") || e.message.starts_with("unterminated"),
    }
}

/// The rustyline helper: completion and the continuation rule.
pub struct ReplHelper {
    /// The names offered on Tab.
    pub completions: Completions,
    /// Whether the prompt is shown in colour.
    pub colour: bool,
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let Some(start) = word_start(line, pos) else { return Ok((pos, Vec::new())) };
        let prefix = line.get(start..pos).unwrap_or("");
        let pairs = self
            .completions
            .candidates(prefix)
            .into_iter()
            .map(|name| Pair { display: name.clone(), replacement: name })
            .collect();
        Ok((start, pairs))
    }
}

// Enter always ends a line: `Terminal::read` gathers an unfinished form's lines itself,
// so that each continuation line gets its own prompt.
impl Validator for ReplHelper {}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Highlighter for ReplHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(&'s self, prompt: &'p str, _default: bool) -> Cow<'b, str> {
        if self.colour { Cow::Owned(format!("\x1b[32m{prompt}\x1b[0m")) } else { Cow::Borrowed(prompt) }
    }
}

impl Helper for ReplHelper {}

/// A terminal with line editing and a history file.
pub struct Terminal {
    editor: Editor<ReplHelper, FileHistory>,
    history: HistoryFile,
}

impl Terminal {
    /// An editor completing `completions`, with the entries of `history` loaded.
    pub fn new(completions: Completions, mut history: HistoryFile, colour: bool) -> Result<Self> {
        let config = Config::builder()
            .max_history_size(MAX_ENTRIES)?
            .history_ignore_dups(true)?
            .history_ignore_space(false)
            .completion_type(CompletionType::List)
            .auto_add_history(false)
            .build();
        let mut editor = Editor::with_config(config)?;
        editor.set_helper(Some(ReplHelper { completions, colour }));
        history.load(editor.history_mut());
        Ok(Terminal { editor, history })
    }

    /// The history file, while history is on.
    pub fn history_file(&self) -> Option<&std::path::Path> {
        self.history.path()
    }

    /// The user's definitions changed.
    pub fn set_user_names(&mut self, names: Vec<String>) {
        if let Some(helper) = self.editor.helper_mut() {
            helper.completions.set_user_names(names);
        }
    }

    /// Reads one input; `record` says whether it goes into the history.
    /// An unfinished form continues on the next line under [`CONTINUATION`]; the lines of
    /// one input are one history entry.
    pub fn read(&mut self, record: impl Fn(&str) -> bool) -> Result<Read> {
        let mut text = String::new();
        loop {
            let prompt = if text.is_empty() { PROMPT } else { CONTINUATION };
            match self.editor.readline(prompt) {
                Ok(line) => {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&line);
                    if is_unfinished(&text) {
                        continue;
                    }
                    if record(&text) && self.editor.add_history_entry(text.trim_end()).unwrap_or(false) {
                        self.history.save(self.editor.history_mut());
                    }
                    return Ok(Read::Entry(text));
                }
                Err(ReadlineError::Interrupted) => return Ok(Read::Interrupted),
                // Ctrl-D inside an unfinished form: evaluate it, so its error shows
                Err(ReadlineError::Eof) if !text.is_empty() => return Ok(Read::Entry(text)),
                Err(ReadlineError::Eof) => return Ok(Read::Eof),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Inputs from a pipe or a file: lines gathered until the form is finished.
pub struct Piped<R> {
    reader: R,
    /// Longest input kept; longer ones are cut here (the engine then refuses them).
    max_bytes: usize,
    done: bool,
}

impl<R: BufRead> Piped<R> {
    /// Reads from `reader`, keeping at most `max_bytes` of one input.
    pub fn new(reader: R, max_bytes: usize) -> Self {
        Piped { reader, max_bytes, done: false }
    }

    /// The next input; an unfinished form at the end is returned as it is, so that its
    /// error is shown.
    pub fn read(&mut self) -> std::io::Result<Read> {
        let mut pending = String::new();
        while !self.done {
            let mut line = Vec::new();
            let budget = self.max_bytes.saturating_add(1).saturating_sub(pending.len());
            if read_line_bounded(&mut self.reader, &mut line, budget)? == 0 {
                self.done = true;
                break;
            }
            pending.push_str(&String::from_utf8_lossy(&line));
            if pending.len() > self.max_bytes || !is_unfinished(&pending) {
                break;
            }
        }
        if pending.trim().is_empty() {
            return Ok(if self.done { Read::Eof } else { Read::Entry(String::new()) });
        }
        Ok(Read::Entry(pending))
    }
}

/// Reads one line (with its `\n`) into `buf`, keeping at most `max` bytes and skipping the
/// rest of a longer line; returns the bytes consumed (0 at the end of input).
pub(crate) fn read_line_bounded(reader: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(consumed);
        }
        let (take, end) = match memchr_newline(chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        buf.extend_from_slice(chunk.get(..take.min(room)).unwrap_or(&[]));
        reader.consume(take);
        consumed += take;
        if end {
            return Ok(consumed);
        }
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str, max: usize) -> Vec<String> {
        let mut p = Piped::new(text.as_bytes(), max);
        let mut out = Vec::new();
        loop {
            match p.read().unwrap() {
                Read::Entry(e) => out.push(e),
                Read::Eof => return out,
                Read::Interrupted => unreachable!(),
            }
        }
    }

    #[test]
    fn unfinished_forms_and_strings_continue() {
        assert!(is_unfinished("(defn f [x]"));
        assert!(is_unfinished("(str \"abc"));
        assert!(is_unfinished("[1 {:a"));
        assert!(!is_unfinished("(+ 1 2)"));
        assert!(!is_unfinished(":quit"));
        // a mismatched bracket is an error to show, not a reason to wait
        assert!(!is_unfinished("(let [x 1) x)"));
    }

    #[test]
    fn piped_lines_gather_into_forms() {
        let got = entries("(+ 1 2)\n(defn f [x]\n  (* x 2))\n\n(f 4)", 1000);
        assert_eq!(got, ["(+ 1 2)\n", "(defn f [x]\n  (* x 2))\n", "", "(f 4)"]);
    }

    #[test]
    fn an_unfinished_form_at_the_end_is_still_returned() {
        assert_eq!(entries("(+ 1\n", 1000), ["(+ 1\n"]);
    }

    #[test]
    fn an_overlong_input_is_cut_past_the_limit_and_reading_goes_on() {
        let long = format!("(str \"{}\")\n(+ 1 2)\n", "x".repeat(100));
        let got = entries(&long, 20);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].len(), 21);
        assert_eq!(got[1], "(+ 1 2)\n");
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let mut p = Piped::new(&b"(str \"\xff\")\n"[..], 100);
        assert_eq!(p.read().unwrap(), Read::Entry("(str \"\u{fffd}\")\n".into()));
    }
}
