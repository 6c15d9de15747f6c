//! [`SubAgent`]: a built agent, its checked configuration (`Config`) and its tools.
//! [`SubAgentBuilder`](crate::SubAgentBuilder) (in `builder.rs`) makes one.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ptc_lisp_eval::Limits;
use ptc_lisp_eval::value::PMap;
use ptc_signature::{Field, Signature, Template};

use crate::compaction::Compaction;
use crate::compress::HistoryOptions;
use crate::cost::PriceTable;
use crate::extract::MultipleCodeBlocks;
use crate::feedback::FormatOptions;
use crate::mode::Mode;
use crate::prompt::{PromptLimit, SystemPrompt};
use crate::retry::LlmRetry;
use crate::tool::{CatalogEntry, Toolbox};
use crate::validation::ValidationMode;

/// Tool names the loop keeps for itself.
pub const RESERVED_TOOL_NAMES: [&str; 3] = ["return", "fail", "lisp_eval"];

/// A bad agent option. The message names the option and says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{option}: {message}")]
#[non_exhaustive]
pub struct ConfigError {
    /// The option at fault (`prompt`, `signature`, `tools`, `max_turns`, ...).
    pub option: &'static str,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    pub(crate) fn new(option: &'static str, message: impl Into<String>) -> Self {
        ConfigError { option, message: message.into() }
    }
}

/// What happens when the definitions outgrow `memory_limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MemoryStrategy {
    /// The mission fails with `memory_exceeded` (the word the evaluator uses for its heap limit).
    #[default]
    Strict,
    /// The turn's new definitions are dropped and the model is told so.
    Rollback,
}

/// Whether a mission may end without an explicit `(return v)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CompletionMode {
    /// When turns run out, the last turn's value is the answer if it matches the signature.
    #[default]
    Implicit,
    /// The final (and retry) turns must call `(return v)` or `(fail v)`, else the mission
    /// fails with `must_return_missing`.
    Explicit,
}

/// Everything a built agent knows. Fields are checked by [`SubAgentBuilder::build`].
#[derive(Clone)]
pub(crate) struct Config {
    pub(crate) prompt: Template,
    pub(crate) signature: Option<Signature>,
    pub(crate) signature_text: Option<String>,
    pub(crate) catalog: Vec<CatalogEntry>,
    pub(crate) context: Arc<PMap>,
    pub(crate) context_types: Option<Vec<Field>>,
    pub(crate) context_descriptions: BTreeMap<String, String>,
    pub(crate) field_descriptions: BTreeMap<String, String>,
    pub(crate) max_turns: u32,
    pub(crate) retry_turns: u32,
    pub(crate) mission_timeout: Option<Duration>,
    pub(crate) llm_retry: LlmRetry,
    pub(crate) memory_limit: u64,
    pub(crate) memory_strategy: MemoryStrategy,
    pub(crate) float_precision: Option<u32>,
    pub(crate) format: FormatOptions,
    pub(crate) completion_mode: CompletionMode,
    pub(crate) max_tool_calls: Option<u32>,
    pub(crate) name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) limits: Limits,
    pub(crate) mode: Mode,
    pub(crate) compress_history: Option<HistoryOptions>,
    pub(crate) compaction: Option<Compaction>,
    pub(crate) max_history_bytes: usize,
    pub(crate) compose: crate::nesting::ComposeOptions,
    pub(crate) signature_validation: ValidationMode,
    pub(crate) system_prompt: Option<SystemPrompt>,
    pub(crate) prompt_limit: PromptLimit,
    pub(crate) multiple_code_blocks: MultipleCodeBlocks,
    pub(crate) max_consecutive_failures: Option<u32>,
    pub(crate) max_cost_usd: Option<f64>,
    pub(crate) prices: Arc<PriceTable>,
    pub(crate) checkpoint_store: Option<Arc<dyn crate::checkpoint::CheckpointStore>>,
    pub(crate) resume: Option<Arc<crate::checkpoint::Checkpoint>>,
    /// The evaluation threads programs run on (`None`: the process-wide pool).
    pub(crate) pool: Option<ptc_lisp_eval::EvalPool>,
    /// Definitions every program starts with.
    pub(crate) prelude: crate::prelude::Prelude,
}

/// The engine an agent's programs run on: its limits, on its pool when it has one.
pub(crate) fn engine_for(cfg: &Config) -> ptc_lisp_eval::Engine {
    let engine = ptc_lisp_eval::Engine::new(cfg.limits.clone());
    match &cfg.pool {
        Some(pool) => engine.with_pool(pool.clone()),
        None => engine,
    }
}

/// The seed's default time limit of a whole mission: 60 s.
pub const DEFAULT_MISSION_TIMEOUT: Duration = Duration::from_millis(60_000);

/// An agent: a mission, a contract, tools and limits. Build one with
/// [`SubAgent::builder`], run it with [`SubAgent::run`]; it can run many times.
#[derive(Clone)]
pub struct SubAgent {
    pub(crate) config: Arc<Config>,
    pub(crate) tools: Arc<Toolbox>,
}

impl std::fmt::Debug for SubAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubAgent")
            .field("name", &self.config.name)
            .field("signature", &self.config.signature_text)
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("max_turns", &self.config.max_turns)
            .finish_non_exhaustive()
    }
}
