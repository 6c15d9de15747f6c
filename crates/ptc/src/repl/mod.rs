//! `ptc repl`: a Clojure-style read-eval-print loop over the sandbox.
//!
//! Definitions persist between inputs; `*1 *2 *3` are the last results and `*e` the last
//! error; `def` shows `#'user/x`; results go to stdout and errors to stderr. On a terminal
//! it edits lines with rustyline: Tab completes names (`complete.rs`), an unfinished form
//! continues on the next line, and the history is kept across sessions (`history.rs`).
//! From a pipe it reads line by line, without prompt or history (`input.rs`). Errors
//! inside a function defined earlier point at its definition (`origin.rs`).
//!
//! As in clj, each form of a line is its own input with its own result line; an unfinished
//! form continues under `  #_=> `; Ctrl-C during an evaluation cancels it (the error line
//! says so and `*e` holds it) and the prompt returns. On a terminal the prompt and errors
//! are in colour unless `NO_COLOR` is set. The REPL's limits are for a person at a
//! keyboard, not for a model ([`interactive_limits`]); a piped REPL exits 1 when an input
//! failed, so a script notices.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::sync::Mutex;
use std::time::Duration;

use anyhow::Result;
use ptc_lisp_eval::value::PMap;
use ptc_lisp_eval::{Cancel, Limits};

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

/// The limits the REPL starts from (flags still override each): a person at a keyboard
/// runs longer loops than a model's program may, and Ctrl-C stops a runaway one.
pub fn interactive_limits(base: Limits) -> Limits {
    Limits {
        timeout: base.timeout.max(Duration::from_secs(60)),
        max_loop_iterations: base.max_loop_iterations.max(100_000_000),
        max_heap_bytes: base.max_heap_bytes.max(1024 * 1024 * 1024),
        ..base
    }
}

/// How the REPL ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Every input succeeded (or the input was a terminal).
    Clean,
    /// Piped input in which at least one input failed.
    AfterErrors,
}

/// Whether output to a terminal may carry colour (`NO_COLOR`, `TERM=dumb` turn it off).
fn colour_allowed(stream_is_terminal: bool) -> bool {
    stream_is_terminal
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// Ctrl-C while an input runs: the terminal is in cooked mode then, so the key arrives as
/// SIGINT, which cancels the running input instead of killing the REPL. While a line is
/// edited rustyline reads Ctrl-C as a key and drops the line.
struct Interrupts {
    running: Arc<Mutex<Option<Cancel>>>,
}

impl Interrupts {
    /// Installs the SIGINT handler (before returning); `None` when the OS refuses.
    #[cfg(unix)]
    fn install() -> Option<Interrupts> {
        let running: Arc<Mutex<Option<Cancel>>> = Arc::new(Mutex::new(None));
        let slot = running.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("ptc-repl-interrupts".into())
            .spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                    let _ = ready_tx.send(false);
                    return;
                };
                rt.block_on(async move {
                    use tokio::signal::unix::{SignalKind, signal};
                    let Ok(mut sigint) = signal(SignalKind::interrupt()) else {
                        let _ = ready_tx.send(false);
                        return;
                    };
                    let _ = ready_tx.send(true);
                    while sigint.recv().await.is_some() {
                        if let Ok(current) = slot.lock()
                            && let Some(cancel) = current.as_ref()
                        {
                            cancel.cancel();
                        }
                    }
                });
            })
            .ok()?;
        ready_rx.recv().ok().filter(|installed| *installed)?;
        Some(Interrupts { running })
    }

    #[cfg(not(unix))]
    fn install() -> Option<Interrupts> {
        None
    }

    /// Runs `f` with a cancel handle that Ctrl-C trips.
    fn guard<T>(&self, f: impl FnOnce(&Cancel) -> T) -> T {
        let cancel = Cancel::new();
        if let Ok(mut slot) = self.running.lock() {
            *slot = Some(cancel.clone());
        }
        let out = f(&cancel);
        if let Ok(mut slot) = self.running.lock() {
            *slot = None;
        }
        out
    }
}

/// What the loop needs besides the session.
struct Shell<'a> {
    help: &'a str,
    interrupts: Option<Interrupts>,
    colour: bool,
    failed: bool,
}

/// Runs the REPL until `:quit`, `(exit)`, Ctrl-D or the end of piped input.
pub fn run(opts: Options) -> Result<Ended> {
    let max_program_bytes = opts.limits.max_program_bytes;
    let mut session = Session::new(opts.limits, opts.context, opts.upstreams);
    if !std::io::stdin().is_terminal() {
        let help = help_text(None, "off: input is not a terminal");
        let mut shell = Shell { help: &help, interrupts: None, colour: false, failed: false };
        let mut piped = Piped::new(std::io::stdin().lock(), max_program_bytes);
        while let Read::Entry(text) = piped.read()? {
            if step(&mut session, &text, &mut shell)? == Flow::Quit {
                break;
            }
        }
        return Ok(if shell.failed { Ended::AfterErrors } else { Ended::Clean });
    }
    let path = history::history_path(opts.history.as_deref(), |k| std::env::var_os(k)).unwrap_or_else(|why| {
        warn_line!("ptc repl: warning: history is off: {why}");
        None
    });
    let completions = Completions::new(&session.data_keys(), &session.tool_names());
    let colour = colour_allowed(std::io::stdout().is_terminal());
    let mut terminal = Terminal::new(completions, HistoryFile::new(path), colour)?;
    let help = help_text(terminal.history_file(), "off");
    let mut shell = Shell {
        help: &help,
        interrupts: Interrupts::install(),
        colour: colour_allowed(std::io::stderr().is_terminal()),
        failed: false,
    };
    out_line!("ptc {} PTC-Lisp REPL. (help) for help; :quit or Ctrl-D to leave.", env!("CARGO_PKG_VERSION"));
    // exit commands stay out of the history, so Up in the next session recalls real work
    let record = |line: &str| !line.trim().is_empty() && command(line) != Some(Command::Quit);
    loop {
        match terminal.read(record)? {
            Read::Eof => break,
            Read::Interrupted => continue,
            Read::Entry(text) => {
                if step(&mut session, &text, &mut shell)? == Flow::Quit {
                    break;
                }
            }
        }
        terminal.set_user_names(session.user_names());
    }
    Ok(Ended::Clean)
}

/// Answers one input: each of its top-level forms in turn, each with its own result.
fn step(session: &mut Session, text: &str, shell: &mut Shell<'_>) -> Result<Flow> {
    match command(text) {
        Some(Command::Quit) => return Ok(Flow::Quit),
        Some(Command::Help) => return answer(&Reply { out: vec![shell.help.to_string()], err: None }, shell),
        None if text.trim().is_empty() => return Ok(Flow::Continue),
        None => {}
    }
    for form in forms(text) {
        let reply = match &shell.interrupts {
            Some(interrupts) => interrupts.guard(|cancel| session.eval_with(&form, text, cancel)),
            None => session.eval_with(&form, text, &Cancel::new()),
        };
        shell.failed |= reply.err.is_some();
        if answer(&reply, shell)? == Flow::Quit {
            return Ok(Flow::Quit);
        }
    }
    Ok(Flow::Continue)
}

/// The inputs one entry holds: one per top-level form, each padded with blanks where the
/// forms before it stood, so that errors keep the entry's lines and columns. An entry that
/// does not read is one input, whose error then shows.
fn forms(text: &str) -> Vec<String> {
    let Ok(parsed) = ptc_lisp_syntax::parse_program(text) else { return vec![text.to_string()] };
    if parsed.len() < 2 {
        return vec![text.to_string()];
    }
    parsed
        .iter()
        .filter_map(|form| {
            let start = usize::try_from(form.span.start).ok()?;
            let end = usize::try_from(form.span.end).ok()?;
            let before = text.get(..start)?;
            let body = text.get(start..end)?;
            let mut padded: String = before.chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect();
            padded.push_str(body);
            Some(padded)
        })
        .collect()
}

/// Shows a reply; a closed stdout ends the loop.
fn answer(reply: &Reply, shell: &Shell<'_>) -> Result<Flow> {
    match show(reply, shell.colour) {
        Ok(()) => Ok(Flow::Continue),
        // stdout closed (ptc repl < in | head): nobody is reading any more
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Flow::Quit),
        Err(e) => Err(e.into()),
    }
}

/// Results on stdout, then the error on stderr (red when `colour`).
fn show(reply: &Reply, colour: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for line in &reply.out {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    if let Some(err) = &reply.err {
        let mut e = std::io::stderr().lock();
        if colour {
            writeln!(e, "\x1b[31m{err}\x1b[0m")?;
        } else {
            writeln!(e, "{err}")?;
        }
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
  Enter in an open form  continue it on the next line (  #_=> ); Ctrl-C drops the input
  Ctrl-C while running   cancel the evaluation (*e says cancelled)
  limits                 60 s, 100,000,000 recur steps, 1 GiB per input (flags change them)
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
    fn each_form_of_an_entry_is_an_input_that_keeps_its_place() {
        assert_eq!(forms("(+ 1 2)"), ["(+ 1 2)"]);
        assert_eq!(forms("(+ 1 2) (* 2 3)"), ["(+ 1 2)", "        (* 2 3)"]);
        assert_eq!(forms("(def x 1)\n  (inc x)"), ["(def x 1)", "         \n  (inc x)"]);
        // unreadable: one input, so the reader's error shows
        assert_eq!(forms("(+ 1 2) (oops"), ["(+ 1 2) (oops"]);
    }

    #[test]
    fn interactive_limits_only_raise_the_sandbox_s() {
        let l = interactive_limits(Limits::default());
        assert_eq!(l.timeout, Duration::from_secs(60));
        assert_eq!(l.max_loop_iterations, 100_000_000);
        let generous = Limits { timeout: Duration::from_secs(600), ..Limits::default() };
        assert_eq!(interactive_limits(generous).timeout, Duration::from_secs(600));
    }

    #[test]
    fn help_names_the_history_file_or_says_it_is_off() {
        assert!(help_text(Some(Path::new("/tmp/h")), "off").contains("history (/tmp/h)"));
        assert!(help_text(None, "off").contains("history (off)"));
    }
}
