//! `ptc mcp --agentic`: the flags of the `lisp_task` tool (each also reads a
//! `PTC_MCP_AGENTIC_*` environment variable; the flag wins).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use clap::Args;
use ptc_lisp_eval::Limits;
use ptc_mcp_aggregator::UpstreamRuntime;
use ptc_mcp_aggregator::agentic::{AgenticOptions, SubagentConfig, TaskTool};

/// `--agentic*` flags.
#[derive(Args, Debug, Clone)]
pub struct AgenticArgs {
    /// Offer `lisp_task`: a planner model writes and runs programs against the upstreams
    /// (needs --upstreams).
    #[arg(long, env = "PTC_MCP_AGENTIC")]
    pub agentic: bool,
    /// The planner: any --llm spec (VENDOR:MODEL, a registry alias).
    #[arg(
        long,
        env = "PTC_MCP_AGENTIC_MODEL",
        value_name = "SPEC",
        default_value = "openrouter:google/gemini-3.1-flash-lite"
    )]
    pub agentic_model: String,
    /// LLM registry file for --agentic-model aliases [default: as ptc run].
    #[arg(long, env = "PTC_LLM_CONFIG", value_name = "FILE")]
    pub agentic_llm_config: Option<PathBuf>,
    /// Time for one whole task.
    #[arg(long, env = "PTC_MCP_AGENTIC_TASK_TIMEOUT_MS", default_value_t = 45_000, value_name = "MS")]
    pub agentic_task_timeout_ms: u64,
    /// Time for one planner request.
    #[arg(long, env = "PTC_MCP_AGENTIC_PLANNER_TIMEOUT_MS", default_value_t = 15_000, value_name = "MS")]
    pub agentic_planner_timeout_ms: u64,
    /// Most tokens of one planner answer.
    #[arg(long, env = "PTC_MCP_AGENTIC_MAX_OUTPUT_TOKENS", default_value_t = 1_200, value_name = "N")]
    pub agentic_max_output_tokens: u32,
    /// Largest answer (JSON bytes) a task may return; larger is `result_too_large`.
    #[arg(long, env = "PTC_MCP_AGENTIC_MAX_RESULT_BYTES", default_value_t = 4_096, value_name = "BYTES")]
    pub agentic_max_result_bytes: usize,
    /// Include the planner's program in the result.
    #[arg(long, env = "PTC_MCP_AGENTIC_INCLUDE_PROGRAM", default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub agentic_include_program: bool,
    /// Planner work turns per task [default: the subagent config's, else 1].
    #[arg(long, env = "PTC_MCP_AGENTIC_MAX_TURNS", value_name = "N")]
    pub agentic_max_turns: Option<u32>,
    /// Extra planner turns to correct an answer [default: the subagent config's, else 0].
    #[arg(long, env = "PTC_MCP_AGENTIC_RETRY_TURNS", value_name = "N")]
    pub agentic_retry_turns: Option<u32>,
    /// Put previews of the planner's prompts and answers in --trace-dir traces and
    /// lisp_debug records (local debugging only).
    #[arg(long, env = "PTC_MCP_AGENTIC_TRACE_PROMPTS")]
    pub agentic_trace_prompts: bool,
    /// JSON file: max_turns, retry_turns, system_prompt {prefix, suffix} for the planner
    /// (the flags win over the file; other keys fail the start).
    #[arg(long, env = "PTC_MCP_AGENTIC_SUBAGENT_CONFIG", value_name = "FILE")]
    pub agentic_subagent_config: Option<PathBuf>,
    /// Byte cap of the generated capability summary in lisp_task's description.
    #[arg(long, env = "PTC_MCP_AGENTIC_CAPABILITY_SUMMARY_MAX_BYTES", default_value_t = 800, value_name = "BYTES",
          value_parser = clap::value_parser!(u64).range(50..=65_536))]
    pub agentic_capability_summary_max_bytes: u64,
    /// A file whose text replaces the generated capability summary (at most
    /// --agentic-capability-summary-max-bytes).
    #[arg(long, env = "PTC_MCP_AGENTIC_CAPABILITY_SUMMARY", value_name = "FILE")]
    pub agentic_capability_summary: Option<PathBuf>,
    /// Let the planner use upstream tools not marked read-only (readOnlyHint).
    #[arg(long, env = "PTC_MCP_AGENTIC_ALLOW_WRITES")]
    pub agentic_allow_writes: bool,
}

impl AgenticArgs {
    /// The `lisp_task` tool, when `--agentic` is on.
    pub fn task_tool(&self, upstreams: Option<&UpstreamRuntime>, limits: &Limits) -> Result<Option<TaskTool>> {
        if !self.agentic {
            return Ok(None);
        }
        let Some(rt) = upstreams else {
            bail!("--agentic needs upstreams for the planner to use; give --upstreams FILE or set PTC_UPSTREAMS")
        };
        let llm = crate::models_cmd::provider_llm(
            &self.agentic_model,
            self.agentic_llm_config.as_deref(),
            ptc_providers::DEFAULT_MAX_ANSWER_BYTES,
        )
        .map_err(|e| anyhow!("--agentic-model: {e:#}"))?;
        let mut o = AgenticOptions::new(self.agentic_model.clone());
        o.task_timeout = Duration::from_millis(self.agentic_task_timeout_ms);
        o.planner_timeout = Duration::from_millis(self.agentic_planner_timeout_ms);
        o.max_output_tokens = self.agentic_max_output_tokens;
        o.max_result_bytes = self.agentic_max_result_bytes;
        o.include_program = self.agentic_include_program;
        let file = match &self.agentic_subagent_config {
            None => SubagentConfig::default(),
            Some(path) => {
                let text = ptc_files::Limit::new("--agentic-subagent-config", ptc_files::CONFIG_MAX_BYTES)
                    .read_to_string(path)?;
                SubagentConfig::parse(&text)
                    .map_err(|e| anyhow!("--agentic-subagent-config {}: {e}", path.display()))?
            }
        };
        // flag (or variable), then the file, then the default
        o.max_turns = self.agentic_max_turns.or(file.max_turns).unwrap_or(1);
        o.retry_turns = self.agentic_retry_turns.or(file.retry_turns).unwrap_or(0);
        o.system_prefix = file.prefix;
        o.system_suffix = file.suffix;
        o.allow_writes = self.agentic_allow_writes;
        o.trace_prompts = self.agentic_trace_prompts;
        o.capability_summary_max_bytes = self.agentic_capability_summary_max_bytes as usize;
        if let Some(path) = &self.agentic_capability_summary {
            let text = std::fs::read(path)
                .map_err(|e| anyhow!("--agentic-capability-summary {}: cannot read the file: {e}", path.display()))?;
            let text = String::from_utf8(text)
                .map_err(|_| anyhow!("--agentic-capability-summary {}: the file is not UTF-8 text", path.display()))?;
            o.capability_summary = Some(text);
        }
        Ok(Some(TaskTool::new(o, llm, rt, limits.clone()).map_err(|e| anyhow!("{e}"))?))
    }
}
