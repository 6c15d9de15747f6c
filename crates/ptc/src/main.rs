//! `ptc`: run PTC-Lisp programs from the command line.
//!
//! This binary is the composition root: it reads files and flags, builds run options and
//! prints outcomes. All language work happens in the library crates.

#![deny(missing_docs)]

use std::ffi::OsString;
use std::io::{Read, Write};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::sync::{Arc, LazyLock};

use ptc_lisp_eval::value::PMap;
use ptc_lisp_eval::{Limits, RunOptions};

use crate::exit::Exit;

/// `eprintln!` that drops the line when stderr cannot be written (closed by whoever
/// started `ptc`), where `eprintln!` would panic and end the run or the server.
macro_rules! warn_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `println!` that drops the line when stdout cannot be written (`ptc run … | head -1`
/// closed it), where `println!` would panic with a backtrace instead of ending quietly.
macro_rules! out_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `print!` with `out_line!`'s handling of a closed stdout.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

mod agentic_flags;
mod envelope;
mod exit;
mod heap;
mod limit_flags;
mod logging;
mod mcp_cmd;
mod models_cmd;
mod repl;
mod run_cmd;
mod signature_cmd;
mod upstream_flags;

const EXAMPLES: &str = "Examples:
  ptc eval '(map inc [1 2 3])'                       run a program, print its result
  ptc eval --context data.json -f report.clj          data/<key> from a JSON object
  ptc eval --output json - < prog.clj                 one JSON envelope on stdout
  ptc repl                                            interactive, definitions persist
  ptc mcp                                             MCP server on stdio (lisp_eval)
  ptc mcp --http 127.0.0.1:7332                       MCP over Streamable HTTP at /mcp
  ptc signature check '(q :string) -> [{id :int}]'    a signature and its JSON Schemas";

const AFTER_HELP_TAIL: &str = "Every sandbox limit is a flag on eval, repl and mcp (see `ptc eval --help`).
Docs: README.md, docs/language.md, docs/mcp.md, docs/security.md, docs/reasons/.";

/// `ptc -h`: the examples and the exit statuses, one line each.
static AFTER_HELP: LazyLock<String> =
    LazyLock::new(|| format!("{EXAMPLES}\n\n{}\n{AFTER_HELP_TAIL}", exit::summary(false)));

/// `ptc --help`: the same with what each exit status means.
static AFTER_LONG_HELP: LazyLock<String> =
    LazyLock::new(|| format!("{EXAMPLES}\n\n{}\n{AFTER_HELP_TAIL}", exit::summary(true)));

/// `ptc --version`: the version and the LLM vendor features compiled in, so a bug report
/// says which build it came from (`ptc X.Y.Z (features: openai, anthropic, gemini)`).
static VERSION: LazyLock<String> = LazyLock::new(|| {
    let features = ptc_providers::vendor_features();
    let features = if features.is_empty() { "none".to_string() } else { features.join(", ") };
    format!("{} (features: {features})", env!("CARGO_PKG_VERSION"))
});

/// Programmatic tool calling: run PTC-Lisp programs (a sandboxed Clojure subset) with
/// limits on time, memory and size, from the command line or as an MCP server.
#[derive(Parser, Debug)]
#[command(name = "ptc", version = VERSION.as_str(), propagate_version = true, after_help = AFTER_HELP.as_str(), after_long_help = AFTER_LONG_HELP.as_str())]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    log: logging::LogArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Evaluate a program and print its result.
    Eval(EvalArgs),
    /// Interactive read-eval-print loop: completion, history, persistent definitions, *1 *2 *3 *e.
    Repl(ReplArgs),
    /// Serve lisp_eval to MCP clients over stdio (default) or Streamable HTTP.
    Mcp(mcp_cmd::McpArgs),
    /// Run a mission: a model writes PTC-Lisp turn after turn until it returns an answer.
    Run(Box<run_cmd::RunArgs>),
    /// Show what a model spec (or each registry alias) resolves to, without calling it.
    Models(models_cmd::ModelsArgs),
    /// Work with signatures (type contracts).
    #[command(subcommand)]
    Signature(SignatureCmd),
    /// Print a shell completion script: `ptc completions bash > ~/.local/share/bash-completion/completions/ptc`.
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `ptc man > ~/.local/share/man/man1/ptc.1`.
    Man,
    /// `ptc FILE.clj [ARGS...]`: run a script; ARGS are `*command-line-args*`.
    #[command(external_subcommand)]
    Script(Vec<OsString>),
}

#[derive(Subcommand, Debug)]
enum SignatureCmd {
    /// Parse a signature; print it normalised with its JSON Schemas (exit 2 when invalid).
    Check {
        /// e.g. '(query :string, limit :int?) -> [{id :int}]'
        signature: String,
    },
}

#[derive(Args, Debug)]
struct EvalArgs {
    /// Program text, or `-` to read it from stdin.
    program: Option<String>,
    /// The program text as a flag, as `clj -e` and `bb -e` take it.
    #[arg(short = 'e', long = "expr", value_name = "PROGRAM", conflicts_with_all = ["program", "file"])]
    expr: Option<String>,
    /// Read the program from a file (a first line starting with `#!` is skipped).
    #[arg(short = 'f', long = "file", conflicts_with = "program")]
    file: Option<std::path::PathBuf>,
    #[command(flatten)]
    data: ContextArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,
    /// Batch mode: each stdin line is {"src": "...", "ctx": {...}}; prints one JSON envelope per line.
    #[arg(long, conflicts_with_all = ["program", "file"])]
    jsonl: bool,
    /// Validate the result against this signature's output type, e.g. '{count :int}'.
    #[arg(long, value_name = "SIG")]
    signature: Option<String>,
    #[command(flatten)]
    limits: limit_flags::LimitArgs,
    #[command(flatten)]
    upstreams: upstream_flags::UpstreamArgs,
}

#[derive(Args, Debug)]
struct ReplArgs {
    #[command(flatten)]
    data: ContextArgs,
    /// History file [default: PTC_REPL_HISTORY, else $XDG_DATA_HOME/ptc/repl_history, else
    /// ~/.local/share/ptc/repl_history]; an empty value turns history off.
    #[arg(long, value_name = "FILE")]
    history: Option<std::path::PathBuf>,
    #[command(flatten)]
    limits: limit_flags::LimitArgs,
    #[command(flatten)]
    upstreams: upstream_flags::UpstreamArgs,
}

#[derive(Args, Debug)]
struct ContextArgs {
    /// JSON file holding an object; each key becomes data/<key>.
    #[arg(long = "context", value_name = "FILE")]
    context_file: Option<std::path::PathBuf>,
    /// The same, inline.
    #[arg(long = "context-json", value_name = "JSON", conflicts_with = "context_file")]
    context_json: Option<String>,
    /// Bytes the loaded context may occupy (values as the memory limit counts them).
    #[arg(long, value_name = "BYTES", default_value_t = 512 * 1024 * 1024)]
    max_context_bytes: u64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Output {
    /// prints, then the result as PTC-Lisp text
    Text,
    /// one JSON envelope
    Json,
}

impl ContextArgs {
    fn text(&self) -> Result<Option<String>> {
        Ok(match (&self.context_file, &self.context_json) {
            // the JSON text is never larger than what it loads into, so the load budget
            // bounds the file too
            (Some(path), _) => Some(
                ptc_files::Limit::new("--context", self.max_context_bytes)
                    .raise_with("pass less data or raise --max-context-bytes")
                    .read_to_string(path)?,
            ),
            (None, Some(json)) => Some(json.clone()),
            (None, None) => None,
        })
    }

    /// Where the context came from, for its error messages (`--context data.json`).
    fn origin(&self) -> String {
        match &self.context_file {
            Some(path) => format!("--context {}", path.display()),
            None => "--context-json".to_string(),
        }
    }

    /// The context as values, loaded straight from the JSON text under `--max-context-bytes`.
    fn load_values(&self) -> Result<Arc<PMap>> {
        match self.text()? {
            Some(text) => ptc_lisp_eval::json::parse_context(&text, self.max_context_bytes)
                .map(Arc::new)
                .map_err(|e| anyhow::anyhow!("{}: {e}", self.origin())),
            None => Ok(Arc::new(PMap::new())),
        }
    }

    /// The context as a JSON object (for the agent loop, which renders it in prompts).
    #[allow(dead_code)]
    fn load(&self) -> Result<serde_json::Map<String, serde_json::Value>> {
        let Some(text) = self.text()? else { return Ok(serde_json::Map::new()) };
        // the same checks and messages as load_values
        ptc_lisp_eval::json::parse_context(&text, self.max_context_bytes)
            .map_err(|e| anyhow::anyhow!("{}: {e}", self.origin()))?;
        match serde_json::from_str(&text) {
            Ok(serde_json::Value::Object(m)) => Ok(m),
            _ => anyhow::bail!("{}: the context must be a JSON object whose keys become data/<key>", self.origin()),
        }
    }
}

/// Usage errors exit with 2 ([`Exit::UsageError`]).
struct UsageError(anyhow::Error);

/// True when the command line asks `ptc eval` for JSON output: usage errors are then a
/// JSON envelope on stdout too, so a program reading stdout always gets JSON.
fn wants_json(args: &[String]) -> bool {
    args.get(1).is_some_and(|c| c == "eval")
        && (args.windows(2).any(|w| w[0] == "--output" && w[1] == "json") || args.iter().any(|a| a == "--output=json"))
}

fn main() -> ExitCode {
    heap::limit_arenas();
    let raw: Vec<String> = std::env::args().collect();
    let json_errors = wants_json(&raw);
    let cli = match Cli::try_parse_from(&raw) {
        Ok(cli) => cli,
        Err(e) if json_errors && e.use_stderr() => {
            let message = e.render().to_string();
            let first = message.lines().next().unwrap_or("invalid arguments").trim_start_matches("error: ");
            out_line!("{}", envelope::usage_error(first));
            return Exit::UsageError.into();
        }
        Err(e) => e.exit(),
    };
    // a server reports what it does; `ptc run` shows model errors and retries in its own
    // view, so the library's warnings about them would be said twice
    let default_level = match cli.command {
        Command::Mcp(_) => "info",
        Command::Run(_) => "error",
        _ => "warn",
    };
    // held to the end of the command: dropping it writes the log lines still waiting
    let log = match cli.log.init(default_level) {
        Ok(guard) => guard,
        Err(e) => {
            warn_line!("ptc: {e:#}");
            return Exit::UsageError.into();
        }
    };
    let result = match cli.command {
        Command::Eval(args) => eval_cmd(args),
        Command::Repl(args) => repl_cmd(args),
        Command::Signature(SignatureCmd::Check { signature }) => signature_cmd::check(&signature).map_err(UsageError),
        Command::Mcp(args) => mcp_cmd::run(args).map_err(UsageError),
        Command::Run(args) => run_cmd::run(*args).map_err(UsageError),
        Command::Models(args) => models_cmd::run(args).map_err(UsageError),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "ptc", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => man_page().map_err(UsageError),
        Command::Script(argv) => script_cmd(argv),
    };
    // the log lines come before the closing error line
    drop(log);
    match result {
        Ok(code) => code,
        Err(UsageError(e)) => {
            if json_errors {
                out_line!("{}", envelope::usage_error(&format!("{e:#}")));
            } else {
                warn_line!("ptc: {e:#}");
            }
            Exit::UsageError.into()
        }
    }
}

/// The default limits, with 10 s per program when upstreams are configured.
fn base_limits(upstreams: &upstream_flags::UpstreamArgs) -> Limits {
    if upstreams.path().is_some() { limit_flags::with_upstreams(Limits::default()) } else { Limits::default() }
}

fn eval_cmd(args: EvalArgs) -> Result<ExitCode, UsageError> {
    let limits = args.limits.to_limits(base_limits(&args.upstreams)).map_err(UsageError)?;
    let upstreams = args.upstreams.start(ptc_mcp_aggregator::upstream::SnapshotMode::Live).map_err(UsageError)?;
    let context = args.data.load_values().map_err(UsageError)?;
    let signature = match &args.signature {
        Some(text) => Some(ptc_signature::parse(text).map_err(|e| UsageError(anyhow::anyhow!("--signature: {e}")))?),
        None => None,
    };
    if args.jsonl {
        // the whole loop runs on one evaluation thread, so each line's program runs right
        // there instead of being handed to a pool thread and back
        let engine = ptc_lisp_eval::Engine::new(limits.clone());
        let max_ctx = args.data.max_context_bytes;
        return engine
            .batch(|| jsonl(&limits, &context, max_ctx, signature.as_ref(), upstreams.as_ref()))
            .map_err(|e| anyhow::anyhow!("{}", e.message))
            .and_then(|r| r)
            .map_err(UsageError);
    }
    let source = match (&args.program, &args.file) {
        (Some(p), None) if p == "-" => {
            read_program(std::io::stdin().lock(), limits.max_program_bytes, "stdin").map_err(UsageError)?
        }
        (Some(p), None) => p.clone(),
        (None, Some(f)) => program_file(f, limits.max_program_bytes).map_err(UsageError)?,
        (None, None) if args.expr.is_some() => args.expr.clone().unwrap_or_default(),
        _ => {
            return Err(UsageError(anyhow::anyhow!(
                "give a program: ptc eval '(+ 1 2)', ptc eval -e '(+ 1 2)', ptc eval -f prog.clj, or ptc eval - < prog.clj"
            )));
        }
    };
    // the process exits right after printing: freeing a large context item by item would
    // take longer than many programs, so this reference is never dropped (see the end)
    let context_at_exit = Arc::clone(&context);
    let opts = RunOptions { limits, context, host: host_for(upstreams.as_ref()), ..RunOptions::default() };
    let mut outcome = ptc_lisp_eval::run(&source, opts);
    if let Some(sig) = &signature {
        signature_cmd::check_result(&mut outcome, sig);
    }
    let ok = outcome.is_ok();
    match args.output {
        Output::Json => {
            let mut env = envelope::envelope(&outcome);
            add_upstream_calls(&mut env, &outcome, upstreams.is_some());
            // a closed stdout (ptc eval ... | head) is not an error of the program
            let _ = writeln!(std::io::stdout(), "{env}");
        }
        Output::Text => print_text(&outcome, &source, true),
    }
    std::mem::forget(context_at_exit);
    Ok(if ok { ExitCode::SUCCESS } else { Exit::ProgramFailed.into() })
}

/// A fresh program host (its own call budgets) when upstreams are configured.
fn host_for(upstreams: Option<&ptc_mcp_aggregator::UpstreamRuntime>) -> std::sync::Arc<dyn ptc_lisp_eval::Host> {
    match upstreams {
        Some(rt) => std::sync::Arc::new(rt.program_host()),
        None => std::sync::Arc::new(ptc_lisp_eval::NoTools),
    }
}

/// `upstream_calls` in the JSON envelope of an aggregator run.
fn add_upstream_calls(env: &mut serde_json::Value, outcome: &ptc_lisp_eval::Outcome, enabled: bool) {
    if enabled && let serde_json::Value::Object(m) = env {
        m.insert(
            "upstream_calls".into(),
            serde_json::Value::Array(ptc_mcp_aggregator::upstream::upstream_calls(outcome)),
        );
    }
}

/// Reads `ptc eval -f FILE`: a regular file of at most `max` bytes.
fn program_file(path: &std::path::Path, max: usize) -> Result<String> {
    let max = u64::try_from(max).unwrap_or(u64::MAX);
    let limit = ptc_files::Limit::new("--file", max).raise_with(
        "send a shorter program or raise --max-program-bytes (a program can also come on stdin: ptc eval -)",
    );
    Ok(skip_shebang(limit.read_to_string(path)?))
}

/// A script's `#!/usr/bin/env ptc` first line reads as a comment: `#!` becomes `;!`, so
/// every line and column of the program stays where the file has it.
fn skip_shebang(mut source: String) -> String {
    if source.starts_with("#!") {
        source.replace_range(0..1, ";");
    }
    source
}

/// `ptc man`: the man page generated from the command-line definition.
fn man_page() -> Result<ExitCode> {
    let cmd = <Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out).context("cannot render the man page")?;
    std::io::stdout().write_all(&out).context("cannot write the man page")?;
    Ok(ExitCode::SUCCESS)
}

/// `ptc FILE.clj [ARGS...]` (and `#!/usr/bin/env ptc` scripts): runs the file with the
/// default limits, prints what it prints and then its result unless that is nil (a script
/// ending in `println` shows no extra `nil`); the arguments after the file are the
/// program's `*command-line-args*` (a vector of strings, nil when there are none, as in
/// Clojure). Errors go to stderr and exit 1, as with `ptc eval`.
fn script_cmd(argv: Vec<OsString>) -> Result<ExitCode, UsageError> {
    let mut argv = argv.into_iter();
    let Some(file) = argv.next() else {
        return Err(UsageError(anyhow::anyhow!("give a script: ptc FILE.clj [ARGS...]")));
    };
    let path = std::path::PathBuf::from(&file);
    if !path.exists() {
        let name = file.to_string_lossy();
        return Err(UsageError(anyhow::anyhow!(
            "'{name}' is neither a subcommand nor a script file; the subcommands are eval, repl, mcp, run, models, signature, completions and man (ptc --help), and `ptc FILE.clj [ARGS...]` runs a file"
        )));
    }
    let mut args = Vec::new();
    for a in argv {
        match a.into_string() {
            Ok(a) => args.push(ptc_lisp_eval::Value::str(a.as_str())),
            Err(a) => {
                return Err(UsageError(anyhow::anyhow!(
                    "the argument {a:?} is not valid UTF-8; PTC-Lisp strings are text"
                )));
            }
        }
    }
    let limits = Limits::default();
    let source = program_file(&path, limits.max_program_bytes).map_err(UsageError)?;
    let mut memory = ptc_lisp_eval::Memory::default();
    let command_line_args =
        if args.is_empty() { ptc_lisp_eval::Value::Nil } else { ptc_lisp_eval::Value::vector(args) };
    memory.insert(Arc::from("*command-line-args*"), command_line_args);
    let opts = RunOptions { limits, memory, ..RunOptions::default() };
    let outcome = ptc_lisp_eval::run(&source, opts);
    print_text(&outcome, &source, false);
    Ok(if outcome.is_ok() { ExitCode::SUCCESS } else { Exit::ProgramFailed.into() })
}

/// `--output text`: the prints, then the result on stdout (a nil result only when
/// `show_nil`), or the failure on stderr with the source line of an error.
fn print_text(outcome: &ptc_lisp_eval::Outcome, source: &str, show_nil: bool) {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in &outcome.prints {
        let _ = writeln!(out, "{line}");
    }
    match &outcome.result {
        ptc_lisp_eval::RunResult::Value(v) | ptc_lisp_eval::RunResult::Returned(v) => {
            if show_nil || !matches!(v, ptc_lisp_eval::Value::Nil) {
                let _ = writeln!(out, "{}", outcome.printed);
            }
        }
        ptc_lisp_eval::RunResult::Failed(_) => {
            let _ = out.flush();
            warn_line!("Fail: {}", outcome.printed);
        }
        ptc_lisp_eval::RunResult::Error(e) => {
            let _ = out.flush();
            warn_line!("{}", envelope::render_error(e, source));
        }
    }
}

/// Reads a program, stopping one byte past `max` so that a huge input is never held whole.
fn read_program(input: impl Read, max: usize, from: &str) -> Result<String> {
    let mut bytes = Vec::new();
    input
        .take(u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read the program from {from}"))?;
    if bytes.len() > max {
        bail!(
            "the program in {from} is over --max-program-bytes ({max} bytes); send a shorter program or raise the limit"
        );
    }
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("the program in {from} is not valid UTF-8"))
}

/// Runs one program per stdin line: a JSON string (the source) or `{"src": ..., "ctx":
/// {...}}`. Each line is parsed straight into values, charged against `max_ctx` bytes
/// (`--max-context-bytes`, the cost model of the memory limit), so a large `ctx` costs
/// what it builds and no intermediate JSON tree.
fn jsonl(
    limits: &Limits,
    base_context: &Arc<PMap>,
    max_ctx: u64,
    signature: Option<&ptc_signature::Signature>,
    upstreams: Option<&ptc_mcp_aggregator::UpstreamRuntime>,
) -> Result<ExitCode> {
    use ptc_lisp_eval::Value;
    let shape_error = "each line must be a JSON object {\"src\": \"...\", \"ctx\": {...}} or a JSON string";
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    // answers are written in blocks and flushed whenever no further line is waiting, so a
    // client that sends one line and waits gets its answer at once, and a batch costs one
    // write per block instead of one per line
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    let budget = max_ctx.saturating_add(u64::try_from(limits.max_program_bytes).unwrap_or(u64::MAX));
    // a line's text is held whole while it is parsed: it may be as long as the budget its
    // values may cost, and no longer (the rest of a longer line is skipped, never kept)
    let max_line = usize::try_from(budget).unwrap_or(usize::MAX);
    let mut input = std::io::BufReader::with_capacity(64 * 1024, stdin.lock());
    let mut raw = Vec::new();
    loop {
        if input.buffer().is_empty() {
            out.flush()?;
        }
        raw.clear();
        let consumed = repl::input::read_line_bounded(&mut input, &mut raw, max_line.saturating_add(1))
            .context("cannot read stdin")?;
        if consumed == 0 {
            break;
        }
        if raw.len() > max_line {
            let env = envelope::usage_error(&format!(
                "the line is over {max_line} bytes (--max-context-bytes plus --max-program-bytes); pass less data per line or raise --max-context-bytes"
            ));
            writeln!(out, "{env}")?;
            continue;
        }
        let Ok(line) = std::str::from_utf8(&raw) else {
            writeln!(out, "{}", envelope::usage_error("the line is not valid UTF-8"))?;
            continue;
        };
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            continue;
        }
        let env = match ptc_lisp_eval::json::parse_str(line, budget) {
            Ok(Value::Str(src)) => run_one(&src, base_context.clone(), limits, signature, upstreams),
            Ok(Value::Map(obj)) => match obj.get(&Value::str("src")).cloned() {
                Some(Value::Str(src)) => {
                    let mut ctx = base_context.clone();
                    match obj.get(&Value::str("ctx")) {
                        Some(Value::Map(c)) => {
                            let merged = Arc::make_mut(&mut ctx);
                            for (k, v) in c.iter() {
                                merged.insert(k.clone(), v.clone());
                            }
                        }
                        None | Some(Value::Nil) => {}
                        Some(_) => {
                            writeln!(out, "{}", envelope::usage_error("\"ctx\" must be a JSON object"))?;
                            continue;
                        }
                    }
                    // the line's values are shared into ctx; free the rest before the run
                    drop(obj);
                    run_one(&src, ctx, limits, signature, upstreams)
                }
                _ => envelope::usage_error("each line needs a \"src\" string: {\"src\": \"(+ 1 2)\", \"ctx\": {}}"),
            },
            Err(ptc_lisp_eval::json::ParseError::TooLarge) => envelope::usage_error(&format!(
                "the line needs more than {budget} bytes once loaded (--max-context-bytes plus --max-program-bytes); pass less data or raise the limit"
            )),
            _ => envelope::usage_error(shape_error),
        };
        writeln!(out, "{env}")?;
        if raw.len() > 1024 * 1024 {
            // a large ctx leaves many small freed blocks behind: give them back
            raw = Vec::new();
            heap::give_back_free_memory();
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn run_one(
    src: &str,
    ctx: Arc<PMap>,
    limits: &Limits,
    signature: Option<&ptc_signature::Signature>,
    upstreams: Option<&ptc_mcp_aggregator::UpstreamRuntime>,
) -> serde_json::Value {
    let opts = RunOptions { limits: limits.clone(), context: ctx, host: host_for(upstreams), ..RunOptions::default() };
    let mut outcome = ptc_lisp_eval::run(src, opts);
    if let Some(sig) = signature {
        signature_cmd::check_result(&mut outcome, sig);
    }
    let mut env = envelope::envelope(&outcome);
    add_upstream_calls(&mut env, &outcome, upstreams.is_some());
    env
}

fn repl_cmd(args: ReplArgs) -> Result<ExitCode, UsageError> {
    let limits = args.limits.to_limits(repl::interactive_limits(base_limits(&args.upstreams))).map_err(UsageError)?;
    let context = args.data.load_values().map_err(UsageError)?;
    let upstreams = args.upstreams.start(ptc_mcp_aggregator::upstream::SnapshotMode::Live).map_err(UsageError)?;
    let ended = repl::run(repl::Options { limits, context, upstreams, history: args.history }).map_err(UsageError)?;
    Ok(match ended {
        repl::Ended::Clean => ExitCode::SUCCESS,
        repl::Ended::AfterErrors => Exit::ProgramFailed.into(),
    })
}

#[cfg(test)]
mod help_tests {
    use std::collections::BTreeMap;

    use clap::CommandFactory;

    use super::Cli;

    /// Every subcommand documents each of its flags, and a help text is shared between
    /// subcommands only by flags that mean the same everywhere (the flattened sets:
    /// logging, sandbox limits, upstreams, models). A flag written once per subcommand
    /// (`--output`, `--context`) says what it does in that subcommand.
    #[test]
    fn every_flag_is_documented_in_its_subcommands_own_words() {
        let cli = Cli::command();
        cli.clone().debug_assert();
        let mut seen: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        let mut undocumented = Vec::new();
        let mut stack: Vec<(String, clap::Command)> = vec![("ptc".into(), cli)];
        while let Some((path, cmd)) = stack.pop() {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().to_string();
                if arg.is_hide_set() || id == "help" || id == "version" {
                    continue;
                }
                let help = arg.get_help().or(arg.get_long_help()).map(|h| h.to_string()).unwrap_or_default();
                if help.trim().is_empty() {
                    undocumented.push(format!("{path} --{id}"));
                }
                seen.entry((id, help)).or_default().push(path.clone());
            }
            for sub in cmd.get_subcommands() {
                stack.push((format!("{path} {}", sub.get_name()), sub.clone()));
            }
        }
        assert!(undocumented.is_empty(), "flags without help: {undocumented:?}");
        let copied: Vec<String> = seen
            .iter()
            .filter(|((id, _), paths)| paths.len() > 1 && !shared_flag(id))
            .map(|((id, help), paths)| format!("--{id} in {paths:?}: {help:.80}"))
            .collect();
        assert!(
            copied.is_empty(),
            "the same help text for a flag whose meaning differs per subcommand:\n{}",
            copied.join("\n")
        );
    }

    /// Flags of the flattened sets (`logging.rs`, `limit_flags.rs`, `upstream_flags.rs`, the
    /// context flags): one definition, the same meaning on every subcommand that has them.
    fn shared_flag(id: &str) -> bool {
        matches!(id, "log_level" | "log_format" | "verbose" | "quiet" | "timeout_ms" | "upstreams")
            || ["max_", "upstream_", "catalog_", "context_"].iter().any(|p| id.starts_with(p))
    }
}
