//! `ptc repl`: a Clojure-style read-eval-print loop over the sandbox.
//!
//! Definitions persist between inputs; `*1 *2 *3` are the last results and `*e` the last
//! error; `def` shows `#'user/x`; results go to stdout and errors to stderr. On a terminal
//! it edits lines with rustyline: Tab completes names (`complete.rs`), an unfinished form
//! continues on the next line, and the history is kept across sessions (`history.rs`).
//! From a pipe it reads line by line, without prompt or history (`input.rs`). Errors
//! inside a function defined earlier point at its definition (`origin.rs`).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use ptc_lisp_eval::Limits;
use ptc_lisp_eval::value::PMap;

mod complete;
mod history;
pub(crate) mod input;
mod origin;
mod session;

use complete::Completions;
use history::HistoryFile;
use input::{Piped, Read, Terminal};
use session::{Reply, Session};

/// What `ptc repl` was started with.
pub struct Options {
    /// Limits of every input.
    pub limits: Limits,
    /// `data/`.
    pub context: Arc<PMap>,
    /// Upstream MCP servers, when configured.
    pub upstreams: Option<ptc_mcp_aggregator::UpstreamRuntime>,
    /// `--history FILE` (`None`: the default place).
    pub history: Option<PathBuf>,
}

/// The inputs the REPL answers itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    Quit,
    Help,
}

fn command(text: &str) -> Option<Command> {
    match text.trim() {
        ":quit" | ":q" | ":exit" | "(exit)" | "(quit)" => Some(Command::Quit),
        ":help" | "(help)" => Some(Command::Help),
        _ => None,
    }
}

/// Whether the loop goes on.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Quit,
}

/// Runs the REPL until `:quit`, `(exit)`, Ctrl-D or the end of piped input.
pub fn run(opts: Options) -> Result<()> {
    let max_program_bytes = opts.limits.max_program_bytes;
    let mut session = Session::new(opts.limits, opts.context, opts.upstreams);
    if !std::io::stdin().is_terminal() {
        let help = help_text(None, "off: input is not a terminal");
        let mut piped = Piped::new(std::io::stdin().lock(), max_program_bytes);
        while let Read::Entry(text) = piped.read()? {
            if step(&mut session, &text, &help)? == Flow::Quit {
                break;
            }
        }
        return Ok(());
    }
    let path = history::history_path(opts.history.as_deref(), |k| std::env::var_os(k)).unwrap_or_else(|why| {
        eprintln!("ptc repl: warning: history is off: {why}");
        None
    });
    let completions = Completions::new(&session.data_keys(), &session.tool_names());
    let mut terminal = Terminal::new(completions, HistoryFile::new(path))?;
    let help = help_text(terminal.history_file(), "off");
    println!("ptc {} PTC-Lisp REPL. (help) for help; :quit or Ctrl-D to leave.", env!("CARGO_PKG_VERSION"));
    // exit commands stay out of the history, so Up in the next session recalls real work
    let record = |line: &str| !line.trim().is_empty() && command(line) != Some(Command::Quit);
    loop {
        match terminal.read(record)? {
            Read::Eof => break,
            Read::Interrupted => continue,
            Read::Entry(text) => {
                if step(&mut session, &text, &help)? == Flow::Quit {
                    break;
                }
            }
        }
        terminal.set_user_names(session.user_names());
    }
    Ok(())
}

/// Answers one input.
fn step(session: &mut Session, text: &str, help: &str) -> Result<Flow> {
    let reply = match command(text) {
        Some(Command::Quit) => return Ok(Flow::Quit),
        Some(Command::Help) => Reply { out: vec![help.to_string()], err: None },
        None if text.trim().is_empty() => return Ok(Flow::Continue),
        None => session.eval(text),
    };
    match show(&reply) {
        Ok(()) => Ok(Flow::Continue),
        // stdout closed (ptc repl < in | head): nobody is reading any more
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Flow::Quit),
        Err(e) => Err(e.into()),
    }
}

/// Results on stdout, then the error on stderr.
fn show(reply: &Reply) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for line in &reply.out {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    if let Some(err) = &reply.err {
        let mut e = std::io::stderr().lock();
        writeln!(e, "{err}")?;
        e.flush()?;
    }
    Ok(())
}

/// What `(help)` prints.
fn help_text(history: Option<&Path>, off: &str) -> String {
    let history = history.map_or_else(|| off.to_string(), |p| p.display().to_string());
    format!(
        "PTC-Lisp REPL: a sandboxed Clojure subset; definitions persist between inputs.
  (doc map)              documentation of a function or of your definition
  (dir str)              names in a namespace: str set walk core json Math user ...
  (apropos \"sort\")       functions whose name or description matches
  (all-ns)               the namespaces
  *1 *2 *3               the last three results
  *e                     the last error: {{:reason \"...\" :message \"...\" :line L :column C}}
  data/<key>             the context loaded with --context FILE
  Tab                    complete builtins, namespaces, your definitions, data/ keys
  Up, Down, Ctrl-R       history ({history})
  Enter in an open form  continue it on the next line; Ctrl-C drops the input
  (help), :help          this text
  :quit, (exit), Ctrl-D  leave"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_and_help_commands_are_recognised_with_spaces_around() {
        for q in [":quit", ":q", ":exit", "(exit)", " (quit) \n"] {
            assert_eq!(command(q), Some(Command::Quit), "{q}");
        }
        assert_eq!(command("(help)\n"), Some(Command::Help));
        assert_eq!(command(":help"), Some(Command::Help));
        assert_eq!(command("(help 1)"), None);
        assert_eq!(command("(exit-code)"), None);
    }

    #[test]
    fn help_names_the_history_file_or_says_it_is_off() {
        assert!(help_text(Some(Path::new("/tmp/h")), "off").contains("history (/tmp/h)"));
        assert!(help_text(None, "off").contains("history (off)"));
    }
}
