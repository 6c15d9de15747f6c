//! `ptc run --agent FILE`: a whole mission tree declared in one file (JSON, or TOML by
//! extension) — prompt, signature, limits, model, tools, LLM tools and child agents — so
//! agents compose without writing Rust.
//!
//! ```json
//! {"prompt": "...", "signature": "...", "max_turns": 6, "llm": "SPEC or alias",
//!  "tools": {
//!    "researcher": {"agent": {"prompt": "Research {{topic}}", "signature": "(topic :string) -> {summary :string}",
//!                             "description": "...", "tools": {}}},
//!    "classify": {"llm_tool": {"prompt": "Is {{text}} urgent?", "signature": "(text :string) -> {urgent :bool}"}},
//!    "get-orders": {"command": ["python3", "orders.py"], "signature": "() -> [:map]"},
//!    "rate": {"result": 1.08},
//!    "again": "self"}}
//! ```
//!
//! Every error names the file, the agent (by its path in the tree: `root`,
//! `root.tools.researcher`) and the field. Child agents and LLM tools without an `llm` use
//! their caller's model, so with `--llm script:FILE` one script answers the whole tree in
//! the order the requests are made. Command paths are relative to the current directory;
//! `prompt_file` is relative to the agent file. A `command` tool takes the tools file's
//! `env`, `inherit_env` and `max_output_bytes` (see `command_tool.rs`): it sees none of
//! `ptc`'s environment beyond the safe set unless the file says so.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use ptc_subagent::{
    ConfigError, Event, LlmRef, LlmTool, MemoryStrategy, MultipleCodeBlocks, PromptLimit, Step, SubAgent,
    SubAgentBuilder, SystemPrompt, Tool, ToolError, Turn,
};
use serde::Deserialize;
use serde_json::Value as Json;

use super::{RunArgs, ToolDef, brief, command_tool};

/// One agent of the file (the root, or a child under `tools.NAME.agent`).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct AgentDef {
    prompt: Option<String>,
    prompt_file: Option<PathBuf>,
    signature: Option<String>,
    name: Option<String>,
    description: Option<String>,
    llm: Option<String>,
    max_turns: Option<u32>,
    retry_turns: Option<u32>,
    timeout_ms: Option<u64>,
    mission_timeout_ms: Option<u64>,
    max_tool_calls: Option<u32>,
    memory_limit: Option<u64>,
    memory_strategy: Option<String>,
    max_depth: Option<u32>,
    turn_budget: Option<u32>,
    context: Option<serde_json::Map<String, Json>>,
    #[serde(default)]
    tools: BTreeMap<String, Json>,
    signature_validation: Option<String>,
    max_consecutive_failures: Option<u32>,
    max_cost_usd: Option<f64>,
    /// Checkpoints after every turn (a directory relative to the current one, or
    /// `redis://HOST:PORT/DB/MISSION`).
    checkpoint_dir: Option<PathBuf>,
    /// A checkpoint to continue from (file, directory or Redis location).
    resume_from: Option<PathBuf>,
    /// A string replaces the generated system prompt; `{"prefix", "suffix"}` wraps it.
    system_prompt: Option<SystemPromptDef>,
    prompt_limit: Option<PromptLimitDef>,
    /// `refuse` or `sequential`.
    multiple_code_blocks: Option<String>,
    /// Upstream grants: `"fs"`, `"fs/*"`, `"fs/read_text_file"`, `"*"` (see `upstream_grants`).
    upstreams: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum SystemPromptDef {
    Replace(String),
    Wrap(WrapDef),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WrapDef {
    #[serde(default)]
    prefix: String,
    #[serde(default)]
    suffix: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PromptLimitDef {
    list: Option<usize>,
    string: Option<usize>,
}

/// `{"llm_tool": {...}}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LlmToolDef {
    prompt: String,
    signature: String,
    description: Option<String>,
    llm: Option<String>,
}

/// What every agent of the file shares while loading.
struct Loader<'a> {
    file: &'a Path,
    llm_config: Option<&'a Path>,
    tool_timeout: Duration,
    /// `--max-answer-bytes`, for every model of the file.
    max_answer_bytes: usize,
    /// `--max-history-bytes`, for every agent of the file.
    max_history_bytes: usize,
    /// `--dry-run`: models are resolved, not built (no key needed), and never asked.
    dry_run: bool,
    /// Prices for every agent of the file (built in, and the registry's).
    prices: ptc_subagent::PriceTable,
    /// The started upstreams of `--upstreams` / `PTC_UPSTREAMS`.
    upstreams: Option<&'a ptc_mcp_aggregator::UpstreamRuntime>,
    /// `--mode` and `--upstream-expose`, for the root agent.
    root_mode: ptc_subagent::Mode,
    root_native: Option<ptc_subagent::Exposure>,
}

impl Loader<'_> {
    fn err(&self, agent: &str, field: &str, message: impl std::fmt::Display) -> anyhow::Error {
        anyhow!("agent file {}: agent `{agent}`: {field}: {message}", self.file.display())
    }

    fn config_err(&self, agent: &str, e: &ConfigError) -> anyhow::Error {
        self.err(agent, e.option, &e.message)
    }

    /// A model spec or alias of the file (`llm` of an agent or LLM tool).
    fn model(&self, agent: &str, spec: &str) -> Result<Arc<dyn ptc_subagent::Llm>> {
        let built = if self.dry_run {
            super::dry_model(spec, self.llm_config, self.max_answer_bytes).map(|(llm, _)| llm)
        } else {
            super::llm_from_spec(spec, self.llm_config, None, self.max_answer_bytes)
        };
        built.map_err(|e| self.err(agent, "llm", format!("{e:#}")))
    }

    /// An agent's share of the upstreams. Each agent gets what its `upstreams` field
    /// grants: `"*"` every tool, `"fs"` or `"fs/*"` every tool of server `fs`,
    /// `"fs/read_text_file"` one tool. Without the field the root gets every upstream (as
    /// a single mission does) and a child none, so a child can read files its parent
    /// cannot. A grant naming a server or tool that does not exist is an error here,
    /// before any model is asked.
    fn upstream_grants(
        &self,
        grants: Option<&[String]>,
        path: &str,
    ) -> Result<Option<ptc_mcp_aggregator::UpstreamRuntime>> {
        let is_root = path == "root";
        let Some(rt) = self.upstreams else {
            return match grants {
                Some(g) if !g.is_empty() => Err(self.err(
                    path,
                    "upstreams",
                    "names upstream tools, but no upstreams file is configured; give --upstreams FILE or set PTC_UPSTREAMS",
                )),
                _ => Ok(None),
            };
        };
        match grants {
            None if is_root => Ok(Some(rt.clone())),
            None => Ok(None),
            Some([]) => Ok(None),
            Some(g) if g.iter().any(|x| x == "*") => Ok(Some(rt.clone())),
            Some(g) => rt.scoped(g).map(Some).map_err(|e| self.err(path, "upstreams", e)),
        }
    }

    /// The builder of one agent, its tools built recursively.
    fn builder(&self, def: AgentDef, path: &str, flags: Option<&RunArgs>) -> Result<SubAgentBuilder> {
        let prompt = match (def.prompt, &def.prompt_file) {
            (Some(p), None) => p,
            (None, Some(f)) => {
                let full = self.file.parent().map(|d| d.join(f)).unwrap_or_else(|| f.clone());
                ptc_files::Limit::new("prompt_file", ptc_files::CONFIG_MAX_BYTES)
                    .read_to_string(&full)
                    .map_err(|e| self.err(path, "prompt_file", e))?
            }
            (Some(_), Some(_)) => return Err(self.err(path, "prompt", "give either prompt or prompt_file, not both")),
            (None, None) => return Err(self.err(path, "prompt", "missing; say what the agent should do")),
        };
        let mut b = SubAgent::builder(prompt).max_history_bytes(self.max_history_bytes).prices(self.prices.clone());
        if let Some(args) = flags {
            b = args.seed_options(b)?;
        }
        if let Some(s) = def.signature {
            b = b.signature(s);
        }
        if let Some(n) = def.name {
            b = b.name(n);
        }
        if let Some(d) = def.description {
            b = b.description(d);
        }
        if let Some(n) = def.max_turns {
            b = b.max_turns(n);
        }
        if let Some(n) = def.retry_turns {
            b = b.retry_turns(n);
        }
        if let Some(ms) = def.timeout_ms {
            b = b.timeout(Duration::from_millis(ms));
        }
        match def.mission_timeout_ms {
            Some(0) => b = b.no_mission_timeout(),
            Some(ms) => b = b.mission_timeout(Duration::from_millis(ms)),
            None => {}
        }
        match def.system_prompt {
            Some(SystemPromptDef::Replace(text)) => b = b.system_prompt(text),
            Some(SystemPromptDef::Wrap(w)) => {
                b = b.system_prompt(SystemPrompt::Wrap { prefix: w.prefix, suffix: w.suffix });
            }
            None => {}
        }
        if let Some(p) = def.prompt_limit {
            let d = PromptLimit::default();
            b = b.prompt_limit(PromptLimit { list: p.list.unwrap_or(d.list), string: p.string.unwrap_or(d.string) });
        }
        match def.multiple_code_blocks.as_deref() {
            None => {}
            Some("refuse") => b = b.multiple_code_blocks(MultipleCodeBlocks::Refuse),
            Some("sequential") => b = b.multiple_code_blocks(MultipleCodeBlocks::Sequential),
            Some(other) => {
                return Err(self.err(
                    path,
                    "multiple_code_blocks",
                    format!("{other:?}: write \"refuse\" or \"sequential\""),
                ));
            }
        }
        if let Some(n) = def.max_tool_calls {
            b = b.max_tool_calls(n);
        }
        if def.memory_limit.is_some() || def.memory_strategy.is_some() {
            let strategy = match def.memory_strategy.as_deref() {
                None | Some("strict") => MemoryStrategy::Strict,
                Some("rollback") => MemoryStrategy::Rollback,
                Some(other) => {
                    return Err(self.err(
                        path,
                        "memory_strategy",
                        format!("{other:?}: write \"strict\" or \"rollback\""),
                    ));
                }
            };
            b = b.memory_limit(def.memory_limit.unwrap_or(1_048_576), strategy);
        }
        if let Some(n) = def.max_depth {
            b = b.max_depth(n);
        }
        if let Some(n) = def.turn_budget {
            b = b.turn_budget(n);
        }
        if let Some(c) = def.context {
            b = b.context(c);
        }
        if let Some(n) = def.max_consecutive_failures {
            b = b.max_consecutive_failures(n);
        }
        if let Some(usd) = def.max_cost_usd {
            b = b.max_cost_usd(usd);
        }
        if flags.is_none() && (def.checkpoint_dir.is_some() || def.resume_from.is_some()) {
            return Err(self.err(
                path,
                "checkpoint_dir",
                "checkpoints are the root agent's; a child's state is in them",
            ));
        }
        if let Some(at) = &def.checkpoint_dir {
            b = super::checkpoint_to(b, at).map_err(|e| self.err(path, "checkpoint_dir", e))?;
        }
        if let Some(at) = &def.resume_from {
            b = super::resume_from(b, at).map_err(|e| self.err(path, "resume_from", e))?;
        }
        if let Some(mode) = &def.signature_validation {
            b = b.signature_validation(
                super::parse_validation(mode).map_err(|e| self.err(path, "signature_validation", e))?,
            );
        }
        if let Some(spec) = &def.llm {
            b = b.llm(self.model(path, spec)?);
        }
        if let Some(rt) = self.upstream_grants(def.upstreams.as_deref(), path)? {
            let (mode, native) =
                if path == "root" { (self.root_mode, self.root_native) } else { (ptc_subagent::Mode::Lisp, None) };
            b = super::upstreams::attach(b, &rt, mode, native);
        }
        for (name, raw) in def.tools {
            let at = format!("{path}.tools.{name}");
            b = match raw {
                Json::String(s) if s == "self" => b.self_tool(name),
                Json::Object(mut m) if m.contains_key("agent") && m.len() == 1 => {
                    let child = m.remove("agent").unwrap_or_default();
                    let child: AgentDef = serde_json::from_value(child).map_err(|e| self.err(&at, "agent", e))?;
                    let tool = self.builder(child, &at, None)?.as_tool(name).map_err(|e| self.config_err(&at, &e))?;
                    b.tool(tool)
                }
                Json::Object(mut m) if m.contains_key("llm_tool") && m.len() == 1 => {
                    let def = m.remove("llm_tool").unwrap_or_default();
                    let def: LlmToolDef = serde_json::from_value(def).map_err(|e| self.err(&at, "llm_tool", e))?;
                    let mut tool = LlmTool::new(def.prompt, def.signature);
                    if let Some(d) = def.description {
                        tool = tool.description(d);
                    }
                    if let Some(spec) = &def.llm {
                        tool = tool.llm(LlmRef::Explicit(self.model(&at, spec)?));
                    }
                    b.tool(tool.into_tool(name).map_err(|e| self.config_err(&at, &e))?)
                }
                other => b.tool(self.plain_tool(&name, other, &at)?),
            };
        }
        Ok(b)
    }

    /// A tool of the tools file's kinds: `command` or a fixed `result`.
    fn plain_tool(&self, name: &str, raw: Json, at: &str) -> Result<Tool> {
        let mut def: ToolDef = serde_json::from_value(raw).map_err(|e| {
            self.err(at, "tool", format!("{e}; expected \"self\", {{\"agent\": ...}}, {{\"llm_tool\": ...}}, {{\"command\": [...]}} or {{\"result\": ...}}"))
        })?;
        let command = def.command_spec().map_err(|(field, e)| self.err(at, field, e))?;
        let tool = match (command, def.result) {
            (Some(spec), None) => {
                let spec = Arc::new(spec);
                let tool_timeout = self.tool_timeout;
                Tool::with_context(name, move |args, cx| {
                    command_tool::call(&spec, &args, cx.deadline, tool_timeout, &cx.cancel).map_err(ToolError::failed)
                })
            }
            (None, Some(value)) => Tool::fixed(name, value),
            (Some(_), Some(_)) => return Err(self.err(at, "tool", "give either \"command\" or \"result\", not both")),
            (None, None) => {
                return Err(self.err(at, "tool", "needs \"command\": [\"prog\", \"arg\"] or \"result\": <JSON>"));
            }
        };
        let mut tool = tool.cache(def.cache);
        if let Some(mode) = def
            .validation
            .as_deref()
            .map(super::parse_validation)
            .transpose()
            .map_err(|e| self.err(at, "validation", e))?
        {
            tool = tool.validation(mode);
        }
        if let Some(sig) = def.signature {
            ptc_signature::parse(&sig).map_err(|e| self.err(at, "signature", e))?;
            tool = tool.signature(sig);
        }
        if let Some(d) = def.description {
            tool = tool.description(d);
        }
        Ok(tool)
    }
}

/// Reads an agent file: TOML when it ends in `.toml`, JSON otherwise.
fn read(path: &Path) -> Result<(AgentDef, Option<String>)> {
    let text = ptc_files::Limit::new("--agent", ptc_files::CONFIG_MAX_BYTES).read_to_string(path)?;
    let is_toml = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    let raw: Json = if is_toml {
        toml::from_str(&text).map_err(|e| anyhow!("agent file {}: not valid TOML: {e}", path.display()))?
    } else {
        serde_json::from_str(&text).map_err(|e| anyhow!("agent file {}: not valid JSON: {e}", path.display()))?
    };
    let def: AgentDef =
        serde_json::from_value(raw).map_err(|e| anyhow!("agent file {}: agent `root`: {e}", path.display()))?;
    let llm = def.llm.clone();
    Ok((def, llm))
}

/// Runs the mission of an agent file; flags fill in what the file leaves out (`--llm`
/// wins over the file's `llm` for the root agent).
pub(super) fn run(path: &Path, args: RunArgs) -> Result<ExitCode> {
    let (mut def, file_llm) = read(path)?;
    let spec = args.llm.clone().or(file_llm).ok_or_else(|| {
        anyhow!("agent file {}: agent `root`: llm: no model; give \"llm\" in the file or --llm SPEC", path.display())
    })?;
    if args.prompt.is_some() || args.prompt_file.is_some() {
        bail!("--agent gives the prompt; leave out --prompt and --prompt-file");
    }
    // the root's model is the one handed to `run`, not an agent option
    def.llm = None;
    let mut context = def.context.take().unwrap_or_default();
    context.extend(args.data.load()?);
    def.context = Some(context);
    def.max_turns = def.max_turns.or(Some(args.max_turns));
    def.retry_turns = def.retry_turns.or(Some(args.retry_turns));
    if def.signature.is_none() {
        def.signature = args.signature.clone();
    }
    let base = crate::limit_flags::run_base();
    let base = if args.upstreams.path().is_some() { crate::limit_flags::with_upstreams(base) } else { base };
    let limits = args.limits.to_limits(base)?;
    def.timeout_ms = def.timeout_ms.or(Some(limits.timeout.as_millis() as u64));
    def.max_tool_calls = def.max_tool_calls.or(limits.max_tool_calls);
    let retry = super::llm_retry(&args)?;
    let root_native = super::upstreams::native_exposure(args.upstream_expose.as_deref(), args.mode.into())?;
    let upstreams = super::upstreams::start(&args)?;
    let loader = Loader {
        file: path,
        llm_config: args.llm_config.as_deref(),
        tool_timeout: Duration::from_millis(args.tool_timeout_ms),
        max_answer_bytes: args.max_answer_bytes,
        max_history_bytes: args.max_history_bytes,
        dry_run: args.dry_run,
        prices: super::prices(args.llm_config.as_deref())?,
        upstreams: upstreams.as_ref(),
        root_mode: args.mode.into(),
        root_native,
    };
    // flags first, then the root's own fields win
    let mut builder = loader.builder(def, "root", Some(&args))?;
    if let Some(extra) = &args.tools {
        for t in super::load_tools(extra, loader.tool_timeout)? {
            builder = builder.tool(t);
        }
    }
    // --mode and --compress-history apply to the root agent, as for a single mission
    builder = builder.mode(args.mode.into());
    if args.compress_history {
        builder = builder.compress_history(ptc_subagent::HistoryOptions {
            println_limit: args.println_limit,
            tool_call_limit: args.tool_call_limit,
        });
    }
    let builder = builder
        .llm_retry(retry)
        .format_options(ptc_subagent::FormatOptions { max_print_length: limits.max_print_length, ..Default::default() })
        .limits(limits.clone());
    let agent = builder.build().map_err(|e| loader.config_err("root", &e))?;
    if args.dry_run {
        let (llm, resolved) = super::dry_model(&spec, args.llm_config.as_deref(), args.max_answer_bytes)?;
        return super::print_dry_run(&agent, llm.as_ref(), &resolved, args.output);
    }
    let llm = super::llm_from_spec(&spec, args.llm_config.as_deref(), args.record.as_deref(), args.max_answer_bytes)?;

    super::run_mission(&agent, llm.as_ref(), &args)
}

/// `--output text` for a nested agent's event: its turns inside a box, indented by depth,
/// so a person can follow which agent did what.
pub(super) fn print_nested(agent: &str, depth: u32, event: &Event) {
    let bar = "│ ".repeat(depth.saturating_sub(1) as usize);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match event {
        Event::RunStart { max_turns, .. } => {
            let _ =
                writeln!(out, "{bar}╭─ {agent} · depth {depth} · up to {max_turns} turn(s) · called by the turn below");
        }
        Event::TurnEnd { turn } => print_turn(&mut out, &format!("{bar}│ "), turn),
        Event::RunEnd { status, return_value, fail, usage } => {
            let outcome = match (return_value, fail) {
                (_, Some(f)) => format!("failed ({}): {}", f.reason, f.message),
                (Some(v), None) => format!("=> {}", brief(&v.to_string(), 200)),
                (None, None) => format!("{status:?}"),
            };
            let _ = writeln!(out, "{bar}╰─ {agent} {outcome} ({} turn(s))", usage.turns);
        }
        _ => {}
    }
    let _ = out.flush();
}

fn print_turn(out: &mut impl Write, prefix: &str, turn: &Turn) {
    let _ = writeln!(out, "{prefix}── turn {} ──", turn.number);
    match &turn.program {
        Some(p) => {
            for line in p.lines() {
                let _ = writeln!(out, "{prefix}{line}");
            }
        }
        None if turn.raw_response.is_empty() => {}
        None => {
            let _ = writeln!(out, "{prefix}{}", brief(&turn.raw_response, 200));
        }
    }
    for call in &turn.tool_calls {
        let outcome = match (&call.result, &call.error) {
            (_, Some(e)) => format!("error: {e}"),
            (Some(r), None) => brief(&r.to_string(), 120),
            (None, None) => "nil".into(),
        };
        let _ = writeln!(out, "{prefix}  tool/{} {} -> {}", call.name, call.args, outcome);
    }
    for line in &turn.prints {
        let _ = writeln!(out, "{prefix}  | {line}");
    }
    match (&turn.error, &turn.result) {
        (Some(e), _) => {
            let _ = writeln!(out, "{prefix}✗ {e}");
        }
        (None, Some(r)) => {
            let _ = writeln!(out, "{prefix}=> {}", brief(r, 300));
        }
        (None, None) => {}
    }
}

/// The step tree as indented lines (`--output text` prints it after the answer when the
/// mission had nested runs).
pub(super) fn tree(step: &Step) -> String {
    fn walk(step: &Step, label: &str, depth: usize, out: &mut String) {
        let pad = "  ".repeat(depth);
        let outcome = match (&step.return_value, &step.fail) {
            (_, Some(f)) => format!("failed ({})", f.reason),
            (Some(v), None) => format!("=> {}", brief(&v.to_string(), 80)),
            (None, None) => "ok".into(),
        };
        out.push_str(&format!("{pad}{label} · {} turn(s) · {outcome}\n", step.own_usage().turns));
        for c in &step.children {
            let name = c.step.name.as_deref().unwrap_or(&c.tool);
            walk(&c.step, &format!("turn {} → tool/{} ({name})", c.turn, c.tool), depth + 1, out);
        }
    }
    // each step's own share: `usage` already counts the nested runs of its turns
    fn total(step: &Step, acc: &mut (u32, u32, u64, u64)) {
        let own = step.own_usage();
        acc.0 += own.turns;
        acc.1 += own.llm_requests;
        acc.2 += own.input_tokens;
        acc.3 += own.output_tokens;
        for c in &step.children {
            total(&c.step, acc);
        }
    }
    let mut out = String::new();
    walk(step, step.name.as_deref().unwrap_or("root"), 0, &mut out);
    let mut acc = (0, 0, 0, 0);
    total(step, &mut acc);
    out.push_str(&format!(
        "whole tree: {} turn(s), {} LLM request(s), {} input + {} output tokens\n",
        acc.0, acc.1, acc.2, acc.3
    ));
    out
}
