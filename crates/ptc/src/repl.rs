//! `ptc repl`: line editing, persistent definitions, `*1 *2 *3`.

use std::sync::Arc;

use anyhow::Result;
use ptc_lisp_eval::value::PMap;
use ptc_lisp_eval::{Globals, Limits, RunOptions, RunResult};
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

const HELP: &str = "PTC-Lisp REPL. Definitions persist; *1 *2 *3 are the last results.\n  :help  this text\n  :quit  leave (or Ctrl-D)";

/// Runs the REPL until EOF or `:quit`.
pub fn run(limits: Limits, context: Arc<PMap>, upstreams: Option<ptc_mcp_aggregator::UpstreamRuntime>) -> Result<()> {
    let mut editor = DefaultEditor::new()?;
    let mut memory = Globals::default();
    let mut history: Vec<ptc_lisp_eval::Value> = Vec::new();
    let base = RunOptions { limits, context, ..RunOptions::default() };
    println!("{HELP}");
    let mut pending = String::new();
    loop {
        let prompt = if pending.is_empty() { "user=> " } else { "  ...> " };
        let line = match editor.readline(prompt) {
            Ok(l) => l,
            Err(ReadlineError::Interrupted) => {
                pending.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        if pending.is_empty() {
            match line.trim() {
                ":quit" | ":q" | ":exit" => break,
                ":help" => {
                    println!("{HELP}");
                    continue;
                }
                "" => continue,
                _ => {}
            }
        }
        pending.push_str(&line);
        pending.push('\n');
        // keep reading while the input is an unfinished form
        if let Err(e) = ptc_lisp_syntax::parse_program(&pending)
            && (e.message.starts_with("unclosed") || e.message.starts_with("unterminated"))
        {
            continue;
        }
        let source = std::mem::take(&mut pending);
        let _ = editor.add_history_entry(source.trim_end());
        let mut opts = RunOptions { memory: memory.clone(), turn_history: history.clone(), ..base.clone() };
        if let Some(rt) = &upstreams {
            // a fresh host per entry: each entry has its own upstream call budget
            opts.host = std::sync::Arc::new(rt.program_host());
        }
        let outcome = ptc_lisp_eval::run(&source, opts);
        for p in &outcome.prints {
            println!("{p}");
        }
        match &outcome.result {
            RunResult::Value(v) | RunResult::Returned(v) => {
                match v {
                    // (doc "server/tool") printed its text above and returns it too
                    ptc_lisp_eval::Value::Str(_) if source.trim_start().starts_with("(doc ") => {}
                    _ => println!("{}", outcome.printed),
                }
                history.push(v.clone());
                if history.len() > 3 {
                    history.remove(0);
                }
                memory = outcome.memory;
            }
            RunResult::Failed(_) => println!("Fail: {}", outcome.printed),
            RunResult::Error(e) => println!("{}", crate::envelope::render_error(e, &source)),
        }
    }
    Ok(())
}
