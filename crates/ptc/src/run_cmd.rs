//! `ptc run`: a mission from the command line. The model writes PTC-Lisp turn after
//! turn; tools come from a JSON file (fixed results or commands); the answer is printed
//! as text or as the whole `Step` in JSON.
//!
//! Exit codes: 0 the mission returned, 1 it failed, 2 usage or configuration error
//! (nothing was sent to a model).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use ptc_subagent::{
    Event, Exposure, HistoryOptions, Llm, LlmRetry, Mode, MultipleCodeBlocks, NativeResult, Observer, PriceTable,
    PromptLimit, ScriptedLlm, Step, SubAgent, SubAgentBuilder, Tool, ToolError, Turn, ValidationMode,
};
use serde::Deserialize;
use serde_json::Value as Json;

use crate::Output;
use crate::exit::Exit;
use crate::limit_flags::LimitArgs;

mod agent_file;
mod command_tool;
mod upstreams;

/// `ptc run` flags.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The mission; `{{name}}` placeholders are filled from the context.
    #[arg(
        long,
        value_name = "TEXT",
        conflicts_with = "prompt_file",
        required_unless_present_any = ["prompt_file", "agent"]
    )]
    prompt: Option<String>,
    /// Read the mission from a file.
    #[arg(long, value_name = "FILE")]
    prompt_file: Option<PathBuf>,
    /// The answer's contract, e.g. '{count :int, names [:string]}'.
    #[arg(long, value_name = "SIG")]
    signature: Option<String>,
    #[command(flatten)]
    data: crate::ContextArgs,
    /// Tools file (JSON): {"tools": {"NAME": {"signature", "description", "command": [...] | "result": ...}}}.
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// The model: VENDOR:MODEL (openai, anthropic, gemini, ollama, openrouter), a registry
    /// alias, replay:FILE (a --record file), or script:FILE (the next JSON line of FILE per request).
    #[arg(long, value_name = "SPEC", required_unless_present = "agent")]
    llm: Option<String>,
    /// An agent file (JSON, or TOML by extension): prompt, signature, limits, llm, tools,
    /// LLM tools and child agents of a whole mission tree.
    #[arg(long, value_name = "FILE")]
    agent: Option<PathBuf>,
    /// LLM registry file for aliases [default: $PTC_LLM_CONFIG, ./ptc-llms.json, $XDG_CONFIG_HOME/ptc/llms.json].
    #[arg(long, value_name = "FILE")]
    llm_config: Option<PathBuf>,
    /// Record every model request and answer as JSON lines (play back with --llm replay:FILE).
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Check the whole mission (prompt, signatures, tools, context, models, limits, budget)
    /// and print what --llm resolves to and the exact first request; call nothing.
    #[arg(long)]
    dry_run: bool,
    /// Work turns.
    #[arg(long, default_value_t = 5, value_name = "N")]
    max_turns: u32,
    /// Extra turns to correct a return value that does not match the signature.
    #[arg(long, default_value_t = 0, value_name = "N")]
    retry_turns: u32,
    /// Time limit of the whole mission, in milliseconds; 0 for none.
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    mission_timeout_ms: u64,
    /// Attempts per model request (1 = no retry); rate limits, timeouts and 5xx retry.
    #[arg(long, default_value_t = 3, value_name = "N")]
    llm_retries: u32,
    /// Delay before the first retry (doubling after each attempt; Retry-After wins).
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    llm_retry_delay_ms: u64,
    /// Longest wait between two attempts, a vendor's Retry-After included (the mission
    /// deadline caps it further; a replay never waits).
    #[arg(long, default_value_t = 60_000, value_name = "MS")]
    llm_max_retry_delay_ms: u64,
    /// Bytes of one model answer; reading stops there and the mission fails (answer_too_large).
    #[arg(long, default_value_t = ptc_providers::DEFAULT_MAX_ANSWER_BYTES, value_name = "BYTES")]
    max_answer_bytes: usize,
    /// Bytes of conversation kept and re-sent after the mission (oldest answers elided first).
    #[arg(long, default_value_t = ptc_subagent::DEFAULT_MAX_HISTORY_BYTES, value_name = "BYTES")]
    max_history_bytes: usize,
    /// With --trace: bytes of the whole trace file; later events are dropped, one line says so.
    #[arg(long, default_value_t = DEFAULT_MAX_TRACE_BYTES, value_name = "BYTES", requires = "trace")]
    max_trace_bytes: u64,
    /// With --trace: bytes of one event line; longer texts in it are cut, saying so.
    #[arg(long, default_value_t = DEFAULT_MAX_TRACE_EVENT_BYTES, value_name = "BYTES", requires = "trace")]
    max_trace_event_bytes: usize,
    /// Time limit of one command tool call (the program's own limit also applies).
    #[arg(long, default_value_t = 30_000, value_name = "MS")]
    tool_timeout_ms: u64,
    /// text: each turn as it happens, then the answer; json: the Step as one JSON object.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,
    /// Write every event (requests exactly as sent, responses, tool calls, turns) as JSON lines.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// lisp: programs in fenced blocks; lisp-tool: programs through a native lisp_eval tool;
    /// text: text/JSON answers with native tools; combined: text plus lisp_eval.
    #[arg(long, value_enum, default_value_t = ModeArg::Lisp)]
    mode: ModeArg,
    /// Summarise old turns in one user message instead of re-sending them (lisp mode).
    #[arg(long)]
    compress_history: bool,
    /// With --compress-history: most recent println calls shown.
    #[arg(long, default_value_t = 15, value_name = "N", requires = "compress_history")]
    println_limit: usize,
    /// With --compress-history: most recent tool calls shown.
    #[arg(long, default_value_t = 20, value_name = "N", requires = "compress_history")]
    tool_call_limit: usize,
    #[command(flatten)]
    limits: LimitArgs,
    /// How strictly answers and tool calls are checked against signatures: enabled
    /// (default; extra fields allowed), strict (extra fields and tools without a
    /// signature refused), warn_only (mismatches logged, accepted) or disabled.
    #[arg(long, value_name = "MODE", value_parser = parse_validation)]
    signature_validation: Option<ValidationMode>,
    /// Replaces the generated system prompt (the language reference, behaviour and output
    /// cards) with this text.
    #[arg(long, value_name = "TEXT", conflicts_with = "system_prompt_file")]
    system_prompt: Option<String>,
    /// Replaces the generated system prompt with the text of FILE.
    #[arg(long, value_name = "FILE")]
    system_prompt_file: Option<PathBuf>,
    /// Items of a list the prompt's data inventory shows (the seed's prompt_limit.list).
    #[arg(long, value_name = "N", default_value_t = 5)]
    prompt_limit_list: usize,
    /// Bytes of a string the prompt's data inventory shows (prompt_limit.string).
    #[arg(long, value_name = "BYTES", default_value_t = 1000)]
    prompt_limit_string: usize,
    /// An answer with several code blocks: refuse (default; the model is asked for one)
    /// or sequential (the blocks run in order as one program).
    #[arg(long, value_enum, default_value_t = BlocksArg::Refuse)]
    multiple_code_blocks: BlocksArg,
    /// End the mission (consecutive_failures) after N failed turns in a row [default: off].
    #[arg(long, value_name = "N")]
    max_consecutive_failures: Option<u32>,
    /// The most the mission's model requests may cost, in US dollars (prices: built in
    /// for current vendor models, overridden by "price" in the LLM registry) [default: none].
    #[arg(long, value_name = "USD")]
    max_cost_usd: Option<f64>,
    /// Write the mission's state after every turn to DIR (checkpoint-NNNN.json), or to
    /// Redis at redis://HOST:PORT/DB/MISSION (one hash per mission, shared by machines).
    #[arg(long, value_name = "DIR|REDIS")]
    checkpoint_dir: Option<PathBuf>,
    /// Continue a mission from its checkpoint (a file, a directory's newest, or a
    /// redis://HOST:PORT/DB/MISSION's newest); the same prompt, context, tools and
    /// settings must be given. Checkpoints go on where it came from.
    #[arg(long, value_name = "PATH|REDIS")]
    resume: Option<PathBuf>,
    #[command(flatten)]
    upstreams: crate::upstream_flags::UpstreamArgs,
    /// Upstream tools offered to the model natively as server__tool: ptc_lisp (programs
    /// only, through tool/call), native or both [default: native in text mode, else ptc_lisp].
    #[arg(long, value_name = "LAYER")]
    upstream_expose: Option<String>,
}

/// Checkpoints to `at`: a Redis location (`redis://HOST:PORT/DB/MISSION`) or a directory.
pub(crate) fn checkpoint_to(b: SubAgentBuilder, at: &Path) -> std::result::Result<SubAgentBuilder, String> {
    Ok(match redis_location(at)? {
        Some(store) => b.checkpoint_store(store),
        None => b.checkpoint_dir(at),
    })
}

/// Resumes from `at`: a Redis location's newest checkpoint, a checkpoint file or a
/// directory's newest.
pub(crate) fn resume_from(b: SubAgentBuilder, at: &Path) -> std::result::Result<SubAgentBuilder, String> {
    Ok(match redis_location(at)? {
        Some(store) => b.resume_from_store(store),
        None => b.resume_from(at),
    })
}

fn redis_location(at: &Path) -> std::result::Result<Option<Arc<dyn ptc_subagent::CheckpointStore>>, String> {
    match at.to_str() {
        Some(url) if url.starts_with("redis://") => ptc_subagent::RedisCheckpointStore::open(url)
            .map(|s| Some(Arc::new(s) as Arc<dyn ptc_subagent::CheckpointStore>))
            .map_err(|e| e.0),
        _ => Ok(None),
    }
}

/// `--multiple-code-blocks`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum BlocksArg {
    Refuse,
    Sequential,
}

impl RunArgs {
    /// The options of the seed's option table that flags give every root agent:
    /// validation, system prompt, prompt limit, code blocks, mission timeout. The agent
    /// file's own fields are applied after these and win.
    fn seed_options(&self, mut b: SubAgentBuilder) -> Result<SubAgentBuilder> {
        if let Some(mode) = self.signature_validation {
            b = b.signature_validation(mode);
        }
        match (&self.system_prompt, &self.system_prompt_file) {
            (Some(text), _) => b = b.system_prompt(text.as_str()),
            (None, Some(f)) => {
                b = b.system_prompt(
                    ptc_files::Limit::new("--system-prompt-file", ptc_files::CONFIG_MAX_BYTES).read_to_string(f)?,
                )
            }
            (None, None) => {}
        }
        b = b.prompt_limit(PromptLimit { list: self.prompt_limit_list, string: self.prompt_limit_string });
        if self.multiple_code_blocks == BlocksArg::Sequential {
            b = b.multiple_code_blocks(MultipleCodeBlocks::Sequential);
        }
        if let Some(n) = self.max_consecutive_failures {
            b = b.max_consecutive_failures(n);
        }
        if let Some(usd) = self.max_cost_usd {
            b = b.max_cost_usd(usd);
        }
        b = b.prices(prices(self.llm_config.as_deref())?);
        if let Some(at) = &self.checkpoint_dir {
            b = checkpoint_to(b, at).map_err(|e| anyhow!("--checkpoint-dir {e}"))?;
        }
        if let Some(at) = &self.resume {
            b = resume_from(b, at).map_err(|e| anyhow!("--resume {e}"))?;
        }
        Ok(match self.mission_timeout_ms {
            0 => b.no_mission_timeout(),
            ms => b.mission_timeout(Duration::from_millis(ms)),
        })
    }
}

/// The built-in price table with the `price` of every LLM registry entry over it (by
/// `vendor:model`, the name the model reports).
fn prices(llm_config: Option<&Path>) -> Result<PriceTable> {
    let mut table = PriceTable::builtin();
    let env = ptc_providers::Env::process();
    if let Some(registry) = crate::models_cmd::load_registry(llm_config, &env)? {
        for alias in registry.aliases() {
            if let Some(entry) = registry.get(alias)
                && let Some(price) = entry.price
            {
                price.check().map_err(|e| anyhow!("LLM registry: alias {alias:?}: price: {e}"))?;
                table.set(format!("{}:{}", entry.vendor, entry.model), price);
            }
        }
    }
    Ok(table)
}

/// A model named for a dry run: it is never asked.
struct Unasked(String);

impl Llm for Unasked {
    fn complete<'a>(
        &'a self,
        _request: &'a ptc_subagent::LlmRequest,
    ) -> ptc_subagent::BoxFuture<'a, Result<ptc_subagent::LlmResponse, ptc_subagent::LlmError>> {
        Box::pin(async {
            Err(ptc_subagent::LlmError::new(ptc_subagent::LlmErrorKind::ConfigError, "a dry run sends no request"))
        })
    }

    fn name(&self) -> String {
        self.0.clone()
    }
}

/// The model of `spec` for a dry run, and what it resolves to: a script or recording is
/// read (so a bad file shows now), a vendor model is only resolved (no key needed).
fn dry_model(spec: &str, llm_config: Option<&Path>, max_answer_bytes: usize) -> Result<(Arc<dyn Llm>, String)> {
    match spec.split_once(':') {
        Some(("script" | "replay", _)) => {
            let llm = llm_from_spec(spec, llm_config, None, max_answer_bytes)?;
            let name = llm.name();
            Ok((llm, format!("model:       {name} (read, {spec})\n")))
        }
        _ => {
            let resolved = crate::models_cmd::describe(spec, llm_config)?;
            Ok((Arc::new(Unasked(resolved.label())), resolved.to_string()))
        }
    }
}

/// `--dry-run`: the resolved model, the checks, the first request; exit 2 when a check
/// found a problem.
fn print_dry_run(agent: &SubAgent, llm: &dyn Llm, resolved: &str, output: Output) -> Result<ExitCode> {
    let dry = agent.dry_run(llm);
    match output {
        Output::Json => out_line!("{}", serde_json::to_string(&dry)?),
        Output::Text => {
            out!("{resolved}");
            out_line!("── checks ── prompt placeholders, signatures, tools, context, limits: ok");
            if let Some(cost) = dry.estimated_cost_usd {
                out_line!("first request estimated at ${cost:.4}");
            }
            for p in &dry.problems {
                out_line!("problem: {p}");
            }
            out_line!("── first request (turn 1; nothing was sent) ──");
            out_line!("{}", serde_json::to_string_pretty(&dry.first_request)?);
        }
    }
    Ok(if dry.is_ok() { ExitCode::SUCCESS } else { Exit::DryRunFailed.into() })
}

/// `--signature-validation` and the files' `signature_validation`/`validation` fields.
fn parse_validation(text: &str) -> Result<ValidationMode, String> {
    text.parse()
}

/// `--mode`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ModeArg {
    Lisp,
    LispTool,
    Text,
    Combined,
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Lisp => Mode::Lisp,
            ModeArg::LispTool => Mode::LispTool,
            ModeArg::Text => Mode::Text,
            ModeArg::Combined => Mode::Combined,
        }
    }
}

/// `--max-trace-bytes`: 64 MiB of trace per run.
const DEFAULT_MAX_TRACE_BYTES: u64 = 64 * 1024 * 1024;

/// `--max-trace-event-bytes`: 8 MiB per event line (a request event carries the whole
/// conversation, itself bounded by `--max-history-bytes`).
const DEFAULT_MAX_TRACE_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// Runs the mission. `Err` is a usage or configuration error (exit 2).
pub fn run(args: RunArgs) -> Result<ExitCode> {
    // however the run ends, no process a command tool started outlives it
    let _processes = command_tool::Processes::start();
    if let Some(path) = args.agent.clone() {
        return agent_file::run(&path, args);
    }
    let Some(spec) = args.llm.clone() else { bail!("give the model with --llm SPEC") };
    let prompt = match (&args.prompt, &args.prompt_file) {
        (Some(p), _) => p.clone(),
        (None, Some(f)) => ptc_files::Limit::new("--prompt-file", ptc_files::CONFIG_MAX_BYTES).read_to_string(f)?,
        (None, None) => bail!("give the mission with --prompt TEXT or --prompt-file FILE"),
    };
    // loaded straight into values: a JSON tree of a large context costs many times its size
    let context = args.data.load_values()?;
    let native = upstreams::native_exposure(args.upstream_expose.as_deref(), args.mode.into())?;
    let upstream_rt = upstreams::start(&args)?;
    let base = crate::limit_flags::run_base();
    // programs wait on upstreams: the longer default of every surface with upstreams
    let base = if upstream_rt.is_some() { crate::limit_flags::with_upstreams(base) } else { base };
    let limits = args.limits.to_limits(base)?;
    let tools = match &args.tools {
        Some(path) => load_tools(path, Duration::from_millis(args.tool_timeout_ms))?,
        None => Vec::new(),
    };
    let retry = llm_retry(&args)?;

    let mut builder = SubAgent::builder(prompt)
        .mode(args.mode.into())
        .context_values(context)
        .max_turns(args.max_turns)
        .retry_turns(args.retry_turns)
        .timeout(limits.timeout)
        .max_history_bytes(args.max_history_bytes)
        .llm_retry(retry);
    if let Some(n) = limits.max_tool_calls {
        builder = builder.max_tool_calls(n);
    }
    builder = builder.format_options(ptc_subagent::FormatOptions {
        max_print_length: limits.max_print_length,
        ..Default::default()
    });
    builder = builder.limits(limits);
    if let Some(sig) = &args.signature {
        builder = builder.signature(sig.clone());
    }
    builder = args.seed_options(builder)?;
    if args.compress_history {
        builder = builder.compress_history(HistoryOptions {
            println_limit: args.println_limit,
            tool_call_limit: args.tool_call_limit,
        });
    }
    for t in tools {
        builder = builder.tool(t);
    }
    if let Some(rt) = &upstream_rt {
        builder = upstreams::attach(builder, rt, args.mode.into(), native);
    }
    let agent = builder.build().map_err(|e| anyhow!("{e}"))?;
    if args.dry_run {
        let (llm, resolved) = dry_model(&spec, args.llm_config.as_deref(), args.max_answer_bytes)?;
        return print_dry_run(&agent, llm.as_ref(), &resolved, args.output);
    }
    let llm = llm_from_spec(&spec, args.llm_config.as_deref(), args.record.as_deref(), args.max_answer_bytes)?;

    run_mission(&agent, llm.as_ref(), &args)
}

/// The retry policy of `--llm-retries`, `--llm-retry-delay-ms` and
/// `--llm-max-retry-delay-ms`.
fn llm_retry(args: &RunArgs) -> Result<LlmRetry> {
    if args.llm_retries == 0 {
        bail!("--llm-retries counts attempts and must be at least 1");
    }
    Ok(LlmRetry {
        max_attempts: args.llm_retries,
        base_delay: Duration::from_millis(args.llm_retry_delay_ms),
        max_delay: Duration::from_millis(args.llm_max_retry_delay_ms),
        ..LlmRetry::default()
    })
}

/// `--llm SPEC` to a model. `script:FILE` is built in; everything else goes to
/// `ptc-providers` (`openai:MODEL`, an alias, `replay:FILE`, ...). `--record` wraps either.
/// Runs a built mission with the trace and live-text observers the flags ask for, prints
/// its report and maps the outcome to the exit status.
fn run_mission(agent: &SubAgent, llm: &dyn Llm, args: &RunArgs) -> Result<ExitCode> {
    let mut observers: Vec<Arc<dyn Observer>> = Vec::new();
    if let Some(path) = &args.trace {
        let file = File::create(path).with_context(|| format!("cannot create trace file {}", path.display()))?;
        observers.push(Arc::new(TraceFile::new(file, args.max_trace_bytes, args.max_trace_event_bytes)));
    }
    let live = (args.output == Output::Text).then(|| Arc::new(LiveText::new(std::io::stderr().is_terminal())));
    if let Some(live) = &live {
        observers.push(live.clone());
    }
    let observer: Arc<dyn Observer> = Arc::new(Fanout(observers));

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut step = runtime.block_on(agent.run_observed(llm, Some(observer.clone())));
    upstreams::merge_native(&mut step, observer.as_ref());
    let shown = live.as_ref().and_then(|l| l.finish());
    if let Some(status) = command_tool::signal_status() {
        // SIGINT/SIGTERM/SIGHUP ended the run: its status, not the mission's
        return Ok(ExitCode::from(status));
    }
    report(&step, args.output, args.mode, shown.as_deref());
    Ok(if step.is_ok() { ExitCode::SUCCESS } else { Exit::MissionFailed.into() })
}

fn llm_from_spec(
    spec: &str,
    llm_config: Option<&Path>,
    record: Option<&Path>,
    max_answer_bytes: usize,
) -> Result<Arc<dyn Llm>> {
    let llm: Arc<dyn Llm> = match spec.split_once(':') {
        Some(("script", path)) if !path.is_empty() => {
            let text = ptc_files::Limit::new("the --llm script", ptc_files::SCRIPT_MAX_BYTES)
                .read_to_string(Path::new(path))?;
            Arc::new(ScriptedLlm::from_jsonl(&text).map_err(|e| anyhow!("--llm {spec}: {e}"))?)
        }
        _ => crate::models_cmd::provider_llm(spec, llm_config, max_answer_bytes)?,
    };
    crate::models_cmd::with_recording(llm, record)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolsFile {
    tools: BTreeMap<String, Json>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolDef {
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    command: Option<Vec<String>>,
    #[serde(default)]
    result: Option<Json>,
    #[serde(default)]
    cache: bool,
    #[serde(default)]
    expose: Option<String>,
    #[serde(default)]
    native_result: Option<NativeResultDef>,
    /// Environment variables a command gets, with their values.
    #[serde(default)]
    env: Option<BTreeMap<String, String>>,
    /// Names of `ptc`'s own environment variables a command gets.
    #[serde(default)]
    inherit_env: Option<Vec<String>>,
    /// The most stdout a command may print.
    #[serde(default)]
    max_output_bytes: Option<u64>,
    /// This tool's validation mode (`enabled`, `strict`, `warn_only`, `disabled`).
    #[serde(default)]
    validation: Option<String>,
}

impl ToolDef {
    /// The command of a `command` tool, checked; `Err` names the field. A fixed `result`
    /// tool cannot take the command-only fields.
    fn command_spec(&mut self) -> Result<Option<command_tool::CommandSpec>, (&'static str, String)> {
        let (env, inherit_env, max_output_bytes) =
            (self.env.take(), self.inherit_env.take(), self.max_output_bytes.take());
        match self.command.take() {
            Some(argv) => command_tool::CommandSpec::new(argv, env, inherit_env, max_output_bytes).map(Some),
            None => {
                for (field, given) in [
                    ("env", env.is_some()),
                    ("inherit_env", inherit_env.is_some()),
                    ("max_output_bytes", max_output_bytes.is_some()),
                ] {
                    if given {
                        return Err((field, "goes with \"command\" only".to_string()));
                    }
                }
                Ok(None)
            }
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeResultDef {
    preview: String,
    #[serde(default)]
    limit: Option<usize>,
}

/// Reads a tools file; every problem names the tool.
fn load_tools(path: &Path, tool_timeout: Duration) -> Result<Vec<Tool>> {
    let text = ptc_files::Limit::new("--tools", ptc_files::CONFIG_MAX_BYTES).read_to_string(path)?;
    let file: ToolsFile = serde_json::from_str(&text)
        .map_err(|e| anyhow!("tools file {}: {e}; expected {{\"tools\": {{\"NAME\": {{...}}}}}}", path.display()))?;
    let mut tools = Vec::new();
    for (name, raw) in file.tools {
        let mut def: ToolDef =
            serde_json::from_value(raw).map_err(|e| anyhow!("tools file {}: tool {name:?}: {e}", path.display()))?;
        let command = def
            .command_spec()
            .map_err(|(field, e)| anyhow!("tools file {}: tool {name:?}: \"{field}\" {e}", path.display()))?;
        let tool = match (command, def.result) {
            (Some(spec), None) => {
                let spec = Arc::new(spec);
                Tool::with_context(name.clone(), move |args, cx| {
                    command_tool::call(&spec, &args, cx.deadline, tool_timeout, &cx.cancel).map_err(ToolError::failed)
                })
            }
            (None, Some(value)) => Tool::fixed(name.clone(), value),
            (Some(_), Some(_)) => {
                bail!("tools file {}: tool {name:?}: give either \"command\" or \"result\", not both", path.display())
            }
            (None, None) => bail!(
                "tools file {}: tool {name:?}: needs \"command\": [\"prog\", \"arg\"] or \"result\": <JSON>",
                path.display()
            ),
        };
        let mut tool = tool.cache(def.cache);
        if let Some(mode) = def
            .validation
            .as_deref()
            .map(parse_validation)
            .transpose()
            .map_err(|e| anyhow!("tools file {}: tool {name:?}: validation: {e}", path.display()))?
        {
            tool = tool.validation(mode);
        }
        if let Some(e) = def.expose.as_deref() {
            tool = tool.expose(match e {
                "native" => Exposure::Native,
                "ptc_lisp" => Exposure::Program,
                "both" => Exposure::Both,
                other => bail!(
                    "tools file {}: tool {name:?}: \"expose\" is {other:?}; use \"native\", \"ptc_lisp\" or \"both\"",
                    path.display()
                ),
            });
        }
        if let Some(n) = def.native_result {
            tool = tool.native_result(match (n.preview.as_str(), n.limit) {
                ("metadata", None) => NativeResult::Metadata,
                ("rows", limit) => NativeResult::Rows { limit: limit.unwrap_or(20) },
                ("metadata", Some(_)) => {
                    bail!("tools file {}: tool {name:?}: \"limit\" goes with the \"rows\" preview", path.display())
                }
                (other, _) => bail!(
                    "tools file {}: tool {name:?}: native_result preview {other:?}; use \"metadata\" or \"rows\"",
                    path.display()
                ),
            });
        }
        if let Some(sig) = def.signature {
            ptc_signature::parse(&sig)
                .map_err(|e| anyhow!("tools file {}: tool {name:?}: bad signature: {e}", path.display()))?;
            tool = tool.signature(sig);
        }
        if let Some(d) = def.description {
            tool = tool.description(d);
        }
        tools.push(tool);
    }
    Ok(tools)
}

/// Prints the outcome: the Step as JSON, or the answer (stdout) / failure (stderr).
/// `shown` is the last model error the live view already printed: a failure that only
/// repeats it is not printed again.
fn report(step: &Step, output: Output, mode: ModeArg, shown: Option<&str>) {
    match output {
        Output::Json => match serde_json::to_string(step) {
            Ok(s) => out_line!("{s}"),
            Err(e) => warn_line!("ptc: cannot print the step as JSON: {e}"),
        },
        Output::Text => {
            let usage = &step.usage;
            let tally = format!(
                "{} turn(s), {} LLM request(s), {} input + {} output tokens, {} ms",
                usage.turns, usage.llm_requests, usage.input_tokens, usage.output_tokens, usage.duration_ms
            );
            match (&step.return_value, &step.fail) {
                (Some(Json::String(text)), _) if matches!(mode, ModeArg::Text | ModeArg::Combined) => {
                    out_line!("── answer ── ({tally})");
                    out_line!("{text}");
                }
                (Some(v), _) => {
                    out_line!("── answer ── ({tally})");
                    out_line!("{}", serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string()));
                }
                (None, Some(f)) => {
                    out_line!("── failed ── ({tally})");
                    if shown.is_some_and(|m| !m.is_empty() && f.message.contains(m)) {
                        warn_line!("Failed ({}): the model error above", f.reason);
                    } else {
                        warn_line!("Failed ({}): {}", f.reason, f.message);
                    }
                }
                (None, None) => out_line!("── answer ── ({tally})\nnull"),
            }
            if !step.children.is_empty() {
                out!("── agents ──\n{}", agent_file::tree(step));
            }
            if let Some(m) = &step.ptc_metrics {
                out_line!("── upstreams ── {}", upstreams::summary(m));
            }
        }
    }
}

/// Several observers as one.
struct Fanout(Vec<Arc<dyn Observer>>);

impl Observer for Fanout {
    fn event(&self, event: &Event) {
        for o in &self.0 {
            o.event(event);
        }
    }
}

/// `--trace FILE`: one JSON line per event, flushed as it happens. A line longer than
/// `max_event` has its longest texts cut (each saying how much); once the file reaches
/// `max_total`, one `trace_truncated` line ends it and later events are dropped.
struct TraceFile {
    out: Mutex<TraceState>,
    max_total: u64,
    max_event: usize,
}

struct TraceState {
    file: BufWriter<File>,
    written: u64,
    closed: bool,
}

impl TraceFile {
    fn new(file: File, max_total: u64, max_event: usize) -> Self {
        TraceFile {
            out: Mutex::new(TraceState { file: BufWriter::new(file), written: 0, closed: false }),
            max_total,
            max_event,
        }
    }
}

impl Observer for TraceFile {
    fn event(&self, event: &Event) {
        let Ok(mut state) = self.out.lock() else { return };
        if state.closed {
            return;
        }
        let Some(line) = trace_line(event, self.max_event) else { return };
        let state = &mut *state;
        let needed = line.len() as u64 + 1;
        if state.written + needed > self.max_total {
            let note = serde_json::json!({
                "event": "trace_truncated",
                "max_trace_bytes": self.max_total,
                "message": "the trace reached --max-trace-bytes; later events are not written",
            });
            let _ = writeln!(state.file, "{note}");
            let _ = state.file.flush();
            state.closed = true;
            return;
        }
        if writeln!(state.file, "{line}").and_then(|()| state.file.flush()).is_ok() {
            state.written += needed;
        }
    }
}

/// `event` as one JSON line of at most about `max` bytes: the longest strings are cut
/// (halving the allowance) until it fits; an event that still does not fit is replaced by
/// a stub naming its kind and size.
fn trace_line(event: &Event, max: usize) -> Option<String> {
    let line = serde_json::to_string(event).ok()?;
    if line.len() <= max {
        return Some(line);
    }
    let full = line.len();
    let stub = |kind: Json| {
        serde_json::json!({"event": kind, "truncated": true, "bytes": full, "max_trace_event_bytes": max}).to_string()
    };
    // (a line nested past serde_json's depth limit cannot be read back: it is a stub)
    let Ok(mut json) = serde_json::from_str::<Json>(&line) else { return Some(stub(Json::Null)) };
    drop(line);
    let mut allowance = max / 2;
    while allowance >= 64 {
        cut_strings(&mut json, allowance);
        let line = json.to_string();
        if line.len() <= max {
            return Some(line);
        }
        allowance /= 2;
    }
    let kind = json.get("event").cloned().unwrap_or(Json::Null);
    Some(stub(kind))
}

/// Cuts every string of `json` longer than `allowance` bytes to that length, noting the cut.
fn cut_strings(json: &mut Json, allowance: usize) {
    match json {
        Json::String(text) if text.len() > allowance => {
            let total = text.len();
            let mut end = allowance;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push_str(&format!("...[trace cut: {} of {total} bytes]", total - end));
        }
        Json::Array(items) => items.iter_mut().for_each(|item| cut_strings(item, allowance)),
        Json::Object(map) => map.values_mut().for_each(|value| cut_strings(value, allowance)),
        _ => {}
    }
}

/// `--output text`: each turn for a person, as it finishes. On a terminal a live line on
/// stderr says what the mission waits for (`waiting for the model (turn 2, 4 s)`), redrawn
/// every second and erased when the answer comes.
struct LiveText {
    state: Arc<Mutex<LiveState>>,
    /// The ticker of the live line (a terminal only); stops with `finish`.
    ticker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

#[derive(Default)]
struct LiveState {
    /// Since when the top-level mission waits for its model, on which turn.
    waiting: Option<(u32, std::time::Instant)>,
    /// Whether the live line is on the screen.
    drawn: bool,
    /// The last model error printed.
    last_error: Option<String>,
    done: bool,
}

/// The live line's text.
fn waiting_line(turn: u32, waited: Duration) -> String {
    format!("… waiting for the model (turn {turn}, {} s)", waited.as_secs())
}

impl LiveState {
    /// Erases the live line (before anything else is printed).
    fn clear(&mut self) {
        if self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.drawn = false;
        }
    }

    fn draw(&mut self) {
        if let Some((turn, since)) = self.waiting {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K{}", waiting_line(turn, since.elapsed()));
            let _ = err.flush();
            self.drawn = true;
        }
    }
}

impl LiveText {
    fn new(terminal: bool) -> Self {
        let state = Arc::new(Mutex::new(LiveState::default()));
        let ticker = terminal.then(|| {
            let state = state.clone();
            std::thread::spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_millis(1000));
                    let Ok(mut s) = state.lock() else { return };
                    if s.done {
                        s.clear();
                        return;
                    }
                    s.draw();
                }
            })
        });
        LiveText { state, ticker: Mutex::new(ticker) }
    }

    /// Stops the live line; returns the last model error it printed.
    fn finish(&self) -> Option<String> {
        let last = self.state.lock().ok().and_then(|mut s| {
            s.done = true;
            s.waiting = None;
            s.clear();
            s.last_error.clone()
        });
        if let Some(t) = self.ticker.lock().ok().and_then(|mut t| t.take()) {
            let _ = t.join();
        }
        last
    }
}

impl Observer for LiveText {
    fn event(&self, event: &Event) {
        let Ok(mut state) = self.state.lock() else { return };
        match event {
            Event::LlmRequest { turn, .. } => {
                state.waiting = Some((*turn, std::time::Instant::now()));
                return;
            }
            Event::LlmResponse { .. } | Event::LlmError { .. } | Event::TurnEnd { .. } => state.waiting = None,
            _ => {}
        }
        match event {
            Event::TurnEnd { turn } => {
                state.clear();
                print_turn(turn);
            }
            Event::Nested { agent, depth, inner } => {
                state.clear();
                agent_file::print_nested(agent, *depth, inner);
            }
            Event::LlmError { turn, kind, message, retry_in_ms, .. } => {
                state.clear();
                match retry_in_ms {
                    Some(ms) => warn_line!("turn {turn}: model error ({kind}: {message}); retrying in {ms} ms"),
                    None => warn_line!("turn {turn}: model error ({kind}: {message})"),
                }
                state.last_error = Some(message.clone());
            }
            Event::LlmResponse { .. } => state.clear(),
            _ => {}
        }
    }
}

fn print_turn(turn: &Turn) {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let _ = writeln!(out, "── turn {} ──", turn.number);
    match &turn.program {
        Some(p) => {
            let _ = writeln!(out, "{p}");
        }
        None if !turn.raw_response.trim().is_empty() => {
            let _ = writeln!(out, "{}", brief(turn.raw_response.trim(), 600));
        }
        None if turn.tool_calls.is_empty() => {
            let _ = writeln!(out, "(no program in the answer)");
        }
        None => {}
    }
    for call in &turn.tool_calls {
        let outcome = match (&call.result, &call.error) {
            (_, Some(e)) => format!("error: {e}"),
            (Some(r), None) => brief(&r.to_string(), 120),
            (None, None) => "nil".into(),
        };
        let how = if call.exposure_layer == "native" { "native " } else { "tool/" };
        let cached = if call.cached { ", cached" } else { "" };
        let _ = writeln!(out, "  {how}{} {} -> {} ({} ms{cached})", call.name, call.args, outcome, call.duration_ms);
    }
    for line in &turn.prints {
        let _ = writeln!(out, "  | {line}");
    }
    match (&turn.error, &turn.result) {
        (Some(e), _) => {
            let _ = writeln!(out, "✗ {e}");
        }
        (None, Some(r)) if turn.program.is_some() && (r != "nil" || turn.prints.is_empty()) => {
            let _ = writeln!(out, "=> {}", brief(r, 300));
        }
        (None, Some(_)) => {}
        (None, None) => {}
    }
    let _ = out.flush();
}

fn brief(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptc_subagent::{NativeToolCall, TokenUsage};

    fn response(content: String, args: Json) -> Event {
        Event::LlmResponse {
            turn: 1,
            attempt: 1,
            content,
            tool_calls: vec![NativeToolCall { id: "c1".into(), name: "f".into(), args, provider_data: None }],
            usage: TokenUsage::default(),
            duration_ms: 0,
        }
    }

    #[test]
    fn a_long_trace_event_is_cut_to_fit() {
        let line = trace_line(&response("x".repeat(100_000), Json::Null), 10_000).unwrap_or_default();
        assert!(line.len() <= 10_000, "{}", line.len());
        let json: Json = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(json["event"], "llm_response");
        assert!(json["content"].as_str().unwrap_or_default().contains("[trace cut:"), "{line}");
    }

    #[test]
    fn an_event_too_deep_to_cut_becomes_a_stub() {
        let mut deep = Json::Null;
        for _ in 0..300 {
            deep = Json::Array(vec![deep]);
        }
        let line = trace_line(&response("y".repeat(5_000), deep), 1_000).unwrap_or_default();
        let json: Json = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(json["truncated"], true, "{line}");
        assert!(json["bytes"].as_u64().unwrap_or_default() > 1_000);
    }
}
