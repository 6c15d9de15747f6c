//! `ptc`: run PTC-Lisp programs from the command line.
//!
//! This binary is the composition root: it reads files and flags, builds run options and
//! prints outcomes. All language work happens in the library crates.

use std::io::{BufRead, Read, Write};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use ptc_lisp_eval::{Limits, RunOptions};

mod envelope;
mod limit_flags;
mod mcp_cmd;
mod repl;
mod signature_cmd;

const AFTER_HELP: &str = "Examples:
  ptc eval '(map inc [1 2 3])'                       run a program, print its result
  ptc eval --context data.json -f report.clj          data/<key> from a JSON object
  ptc eval --output json - < prog.clj                 one JSON envelope on stdout
  ptc repl                                            interactive, definitions persist
  ptc mcp                                             MCP server on stdio (lisp_eval)
  ptc mcp --http 127.0.0.1:7332                       MCP over Streamable HTTP at /mcp
  ptc signature check '(q :string) -> [{id :int}]'    a signature and its JSON Schemas

Exit codes: 0 success, 1 program error or (fail v), 2 usage error.
Every sandbox limit is a flag on eval, repl and mcp (see `ptc eval --help`).
Docs: README.md, docs/language.md, docs/mcp.md, docs/security.md.";

/// Programmatic tool calling: run PTC-Lisp programs (a sandboxed Clojure subset) with
/// limits on time, memory and size, from the command line or as an MCP server.
#[derive(Parser, Debug)]
#[command(name = "ptc", version, propagate_version = true, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Evaluate a program and print its result.
    Eval(EvalArgs),
    /// Interactive read-eval-print loop with persistent definitions and *1 *2 *3.
    Repl(ReplArgs),
    /// Serve lisp_eval to MCP clients over stdio (default) or Streamable HTTP.
    Mcp(mcp_cmd::McpArgs),
    /// Work with signatures (type contracts).
    #[command(subcommand)]
    Signature(SignatureCmd),
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
    /// Read the program from a file.
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
}

#[derive(Args, Debug)]
struct ReplArgs {
    #[command(flatten)]
    data: ContextArgs,
    #[command(flatten)]
    limits: limit_flags::LimitArgs,
}

#[derive(Args, Debug)]
struct ContextArgs {
    /// JSON file holding an object; each key becomes data/<key>.
    #[arg(long = "context", value_name = "FILE")]
    context_file: Option<std::path::PathBuf>,
    /// The same, inline.
    #[arg(long = "context-json", value_name = "JSON", conflicts_with = "context_file")]
    context_json: Option<String>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Output {
    /// prints, then the result as PTC-Lisp text
    Text,
    /// one JSON envelope
    Json,
}

impl ContextArgs {
    fn load(&self) -> Result<serde_json::Map<String, serde_json::Value>> {
        let text = match (&self.context_file, &self.context_json) {
            (Some(path), _) => {
                std::fs::read_to_string(path).with_context(|| format!("cannot read context file {}", path.display()))?
            }
            (None, Some(json)) => json.clone(),
            (None, None) => return Ok(serde_json::Map::new()),
        };
        parse_context(&text)
    }
}

fn parse_context(text: &str) -> Result<serde_json::Map<String, serde_json::Value>> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        Ok(other) => {
            bail!("the context must be a JSON object whose keys become data/<key>; got a JSON {}", json_type(&other))
        }
        Err(e) => bail!("the context is not valid JSON: {e}"),
    }
}

fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

/// Usage errors exit with 2.
struct UsageError(anyhow::Error);

/// True when the command line asks `ptc eval` for JSON output: usage errors are then a
/// JSON envelope on stdout too, so a program reading stdout always gets JSON.
fn wants_json(args: &[String]) -> bool {
    args.get(1).is_some_and(|c| c == "eval")
        && (args.windows(2).any(|w| w[0] == "--output" && w[1] == "json") || args.iter().any(|a| a == "--output=json"))
}

fn main() -> ExitCode {
    let raw: Vec<String> = std::env::args().collect();
    let json_errors = wants_json(&raw);
    let cli = match Cli::try_parse_from(&raw) {
        Ok(cli) => cli,
        Err(e) if json_errors && e.use_stderr() => {
            let message = e.render().to_string();
            let first = message.lines().next().unwrap_or("invalid arguments").trim_start_matches("error: ");
            println!("{}", envelope::usage_error(first));
            return ExitCode::from(2);
        }
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Eval(args) => eval_cmd(args),
        Command::Repl(args) => repl_cmd(args),
        Command::Signature(SignatureCmd::Check { signature }) => signature_cmd::check(&signature).map_err(UsageError),
        Command::Mcp(args) => mcp_cmd::run(args).map_err(UsageError),
    };
    match result {
        Ok(code) => code,
        Err(UsageError(e)) => {
            if json_errors {
                println!("{}", envelope::usage_error(&format!("{e:#}")));
            } else {
                eprintln!("ptc: {e:#}");
            }
            ExitCode::from(2)
        }
    }
}

fn eval_cmd(args: EvalArgs) -> Result<ExitCode, UsageError> {
    let limits = args.limits.to_limits(Limits::default()).map_err(UsageError)?;
    let context = args.data.load().map_err(UsageError)?;
    let signature = match &args.signature {
        Some(text) => Some(ptc_signature::parse(text).map_err(|e| UsageError(anyhow::anyhow!("--signature: {e}")))?),
        None => None,
    };
    if args.jsonl {
        return jsonl(&limits, &context, signature.as_ref()).map_err(UsageError);
    }
    let source = match (&args.program, &args.file) {
        (Some(p), None) if p == "-" => {
            read_program(std::io::stdin().lock(), limits.max_program_bytes, "stdin").map_err(UsageError)?
        }
        (Some(p), None) => p.clone(),
        (None, Some(f)) => {
            let file = std::fs::File::open(f)
                .with_context(|| format!("cannot read program file {}", f.display()))
                .map_err(UsageError)?;
            read_program(file, limits.max_program_bytes, &f.display().to_string()).map_err(UsageError)?
        }
        _ => {
            return Err(UsageError(anyhow::anyhow!(
                "give a program: ptc eval '(+ 1 2)', ptc eval -f prog.clj, or ptc eval - < prog.clj"
            )));
        }
    };
    let opts = RunOptions { limits, ..RunOptions::default() }.with_json_context(&context);
    let mut outcome = ptc_lisp_eval::run(&source, opts);
    if let Some(sig) = &signature {
        signature_cmd::check_result(&mut outcome, sig);
    }
    let ok = outcome.is_ok();
    match args.output {
        Output::Json => {
            let env = envelope::envelope(&outcome);
            println!("{env}");
        }
        Output::Text => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            for line in &outcome.prints {
                let _ = writeln!(out, "{line}");
            }
            match &outcome.result {
                ptc_lisp_eval::RunResult::Value(_) | ptc_lisp_eval::RunResult::Returned(_) => {
                    let _ = writeln!(out, "{}", outcome.printed);
                }
                ptc_lisp_eval::RunResult::Failed(_) => {
                    let _ = out.flush();
                    eprintln!("Fail: {}", outcome.printed);
                }
                ptc_lisp_eval::RunResult::Error(e) => {
                    let _ = out.flush();
                    eprintln!("{}", envelope::render_error(e, &source));
                }
            }
        }
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
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

fn jsonl(
    limits: &Limits,
    base_context: &serde_json::Map<String, serde_json::Value>,
    signature: Option<&ptc_signature::Signature>,
) -> Result<ExitCode> {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in stdin.lock().lines() {
        let line = line.context("cannot read stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let env = match serde_json::from_str::<serde_json::Value>(&line) {
            Ok(serde_json::Value::String(src)) => run_one(&src, base_context.clone(), limits, signature),
            Ok(serde_json::Value::Object(obj)) => match obj.get("src").and_then(|s| s.as_str()) {
                Some(src) => {
                    let mut ctx = base_context.clone();
                    match obj.get("ctx") {
                        Some(serde_json::Value::Object(c)) => ctx.extend(c.clone()),
                        None | Some(serde_json::Value::Null) => {}
                        Some(_) => {
                            writeln!(out, "{}", envelope::usage_error("\"ctx\" must be a JSON object"))?;
                            continue;
                        }
                    }
                    run_one(src, ctx, limits, signature)
                }
                None => envelope::usage_error("each line needs a \"src\" string: {\"src\": \"(+ 1 2)\", \"ctx\": {}}"),
            },
            _ => envelope::usage_error(
                "each line must be a JSON object {\"src\": \"...\", \"ctx\": {...}} or a JSON string",
            ),
        };
        writeln!(out, "{env}")?;
        out.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}

fn run_one(
    src: &str,
    ctx: serde_json::Map<String, serde_json::Value>,
    limits: &Limits,
    signature: Option<&ptc_signature::Signature>,
) -> serde_json::Value {
    let opts = RunOptions { limits: limits.clone(), ..RunOptions::default() }.with_json_context(&ctx);
    let mut outcome = ptc_lisp_eval::run(src, opts);
    if let Some(sig) = signature {
        signature_cmd::check_result(&mut outcome, sig);
    }
    envelope::envelope(&outcome)
}

fn repl_cmd(args: ReplArgs) -> Result<ExitCode, UsageError> {
    let limits = args.limits.to_limits(Limits::default()).map_err(UsageError)?;
    let context = args.data.load().map_err(UsageError)?;
    repl::run(limits, context).map_err(UsageError)?;
    Ok(ExitCode::SUCCESS)
}
