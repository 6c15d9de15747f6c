//! [`SubAgentBuilder`]: every option of an agent, checked by [`build`](SubAgentBuilder::build)
//! before the first model request. Composition options (`llm`, `as_tool`, `self_tool`,
//! ...) are here too; what an agent tool does when called is `compose.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use ptc_lisp_eval::value::PMap;
use ptc_lisp_eval::{Limits, Value};
use ptc_signature::{Field, Signature, Template, Type};
use serde_json::Value as Json;

use crate::compaction::Compaction;
use crate::compose::{AgentToolSpec, agent_tool};
use crate::compress::HistoryOptions;
use crate::config::{
    CompletionMode, Config, ConfigError, DEFAULT_MISSION_TIMEOUT, MemoryStrategy, RESERVED_TOOL_NAMES, SubAgent,
};
use crate::cost::PriceTable;
use crate::extract::MultipleCodeBlocks;
use crate::feedback::FormatOptions;
use crate::llm::Llm;
use crate::mode::{Mode, NativeResult};
use crate::nesting::{ComposeOptions, LlmRef, LlmRegistry, RegistryMap};
use crate::prelude::Prelude;
use crate::program_tools::{Extra, ProgramTools};
use crate::prompt::{PromptLimit, SystemPrompt};
use crate::reason::Reason;
use crate::retry::LlmRetry;
use crate::step::{Fail, Step};
use crate::tool::{CatalogEntry, PreparedTool, Tool, Toolbox};
use crate::validation::ValidationMode;
use ptc_lisp_eval::Exposure;

/// Context values given already loaded (`context_values`).
#[derive(Clone)]
struct LoadedContext(Arc<PMap>);

impl std::fmt::Debug for LoadedContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LoadedContext({} entries)", self.0.len())
    }
}

/// Where a mission resumes from.
#[derive(Debug, Clone)]
enum ResumeFrom {
    /// A checkpoint file, or a directory's newest.
    Path(std::path::PathBuf),
    /// A store's newest checkpoint.
    Store(Arc<dyn crate::checkpoint::CheckpointStore>),
}

/// Builds a [`SubAgent`]; [`build`](SubAgentBuilder::build) checks every option.
///
/// Defaults: 5 turns, no retry turns, 5 s per program, 60 s per mission, 3 model
/// attempts with exponential backoff from 1 s, 1 MiB of definitions (strict), floats in
/// the answer rounded to 2 decimals, implicit completion.
#[derive(Debug, Clone)]
pub struct SubAgentBuilder {
    prompt: String,
    pub(crate) signature: Option<String>,
    tools: Vec<Tool>,
    catalog: Vec<CatalogEntry>,
    pub(crate) context: serde_json::Map<String, Json>,
    /// Context already loaded as values (`context_values`); `context` entries go over it.
    context_values: Option<LoadedContext>,
    context_signature: Option<String>,
    context_descriptions: BTreeMap<String, String>,
    field_descriptions: BTreeMap<String, String>,
    max_turns: u32,
    retry_turns: u32,
    timeout: Duration,
    mission_timeout: Option<Duration>,
    llm_retry: LlmRetry,
    memory_limit: u64,
    memory_strategy: MemoryStrategy,
    float_precision: Option<u32>,
    format: FormatOptions,
    completion_mode: CompletionMode,
    max_tool_calls: Option<u32>,
    name: Option<String>,
    pub(crate) description: Option<String>,
    limits: Limits,
    pub(crate) mode: Mode,
    compress_history: Option<HistoryOptions>,
    compaction: Option<Compaction>,
    max_history_bytes: usize,
    pub(crate) compose: ComposeOptions,
    signature_validation: ValidationMode,
    system_prompt: Option<SystemPrompt>,
    prompt_limit: PromptLimit,
    multiple_code_blocks: MultipleCodeBlocks,
    max_consecutive_failures: Option<u32>,
    max_cost_usd: Option<f64>,
    prices: Option<PriceTable>,
    checkpoint_store: Option<Arc<dyn crate::checkpoint::CheckpointStore>>,
    resume_from: Option<ResumeFrom>,
    pool: Option<ptc_lisp_eval::EvalPool>,
    prelude: Prelude,
}

impl SubAgentBuilder {
    pub(crate) fn new(prompt: impl Into<String>) -> Self {
        SubAgentBuilder {
            prompt: prompt.into(),
            signature: None,
            tools: Vec::new(),
            catalog: Vec::new(),
            context: serde_json::Map::new(),
            context_values: None,
            context_signature: None,
            context_descriptions: BTreeMap::new(),
            field_descriptions: BTreeMap::new(),
            max_turns: 5,
            retry_turns: 0,
            timeout: Duration::from_millis(5_000),
            mission_timeout: Some(DEFAULT_MISSION_TIMEOUT),
            llm_retry: LlmRetry::default(),
            memory_limit: 1_048_576,
            memory_strategy: MemoryStrategy::Strict,
            float_precision: Some(2),
            format: FormatOptions::default(),
            completion_mode: CompletionMode::Implicit,
            max_tool_calls: None,
            name: None,
            description: None,
            limits: Limits::default(),
            mode: Mode::Lisp,
            compress_history: None,
            compaction: None,
            max_history_bytes: crate::history_cap::DEFAULT_MAX_HISTORY_BYTES,
            compose: Default::default(),
            signature_validation: ValidationMode::Enabled,
            system_prompt: None,
            prompt_limit: PromptLimit::default(),
            multiple_code_blocks: MultipleCodeBlocks::Refuse,
            max_consecutive_failures: None,
            max_cost_usd: None,
            prices: None,
            checkpoint_store: None,
            resume_from: None,
            pool: None,
            prelude: Prelude::default(),
        }
    }

    /// Definitions every program of the mission starts with — helper functions and
    /// values, listed in the first user message after the tools and data (see
    /// [`Prelude`]; default: none). They do not count against
    /// [`memory_limit`](Self::memory_limit) and are not in `Step.memory`.
    pub fn prelude(mut self, prelude: Prelude) -> Self {
        self.prelude = prelude;
        self
    }

    /// Writes the mission's state to `dir` after every turn (`checkpoint-NNNN.json`, see
    /// [`Checkpoint`](crate::Checkpoint); default: no checkpoints).
    pub fn checkpoint_dir(self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.checkpoint_store(Arc::new(crate::checkpoint::DirStore::new(dir)))
    }

    /// Writes the mission's state to `store` after every turn (a directory, Redis with
    /// the `redis` feature, or the embedder's own [`CheckpointStore`](crate::CheckpointStore)).
    pub fn checkpoint_store(mut self, store: Arc<dyn crate::checkpoint::CheckpointStore>) -> Self {
        self.checkpoint_store = Some(store);
        self
    }

    /// Continues the mission from a checkpoint (a `checkpoint-NNNN.json`, or a directory:
    /// its newest), which [`build`](Self::build) reads and checks against this agent.
    /// Checkpoints go on being written to the checkpoint's directory unless
    /// [`checkpoint_dir`](Self::checkpoint_dir) says otherwise.
    pub fn resume_from(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.resume_from = Some(ResumeFrom::Path(path.into()));
        self
    }

    /// Continues the mission from the newest checkpoint in `store`, read and checked by
    /// [`build`](Self::build); checkpoints go on being written there unless
    /// [`checkpoint_store`](Self::checkpoint_store) says otherwise.
    pub fn resume_from_store(mut self, store: Arc<dyn crate::checkpoint::CheckpointStore>) -> Self {
        self.resume_from = Some(ResumeFrom::Store(store));
        self
    }

    /// Ends the mission with `consecutive_failures` once this many turns in a row failed
    /// (a program error, no program, several refused blocks, a rejected return value):
    /// an error loop stops early, while occasional errors between successful turns
    /// reset the count (default: off, `max_turns` is the only bound).
    pub fn max_consecutive_failures(mut self, n: u32) -> Self {
        self.max_consecutive_failures = Some(n);
        self
    }

    /// The most the mission's model requests may cost, in US dollars (default: no
    /// budget). Checked before each request with an estimate and kept up to date with
    /// each answer's actual cost; passing it ends the mission with
    /// `cost_budget_exceeded`. Needs a price for the model ([`prices`](Self::prices)).
    pub fn max_cost_usd(mut self, usd: f64) -> Self {
        self.max_cost_usd = Some(usd);
        self
    }

    /// Prices per model (default: [`PriceTable::builtin`]); the cost of each answer goes
    /// into `Step.usage.cost_usd` and the trace.
    pub fn prices(mut self, table: PriceTable) -> Self {
        self.prices = Some(table);
        self
    }

    /// Replaces or wraps the generated system prompt (a string replaces it; see
    /// [`SystemPrompt`]).
    pub fn system_prompt(mut self, prompt: impl Into<SystemPrompt>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// How much of large data the prompt shows (default `{list: 5, string: 1000}`).
    pub fn prompt_limit(mut self, limit: PromptLimit) -> Self {
        self.prompt_limit = limit;
        self
    }

    /// What an answer with several code blocks does (default
    /// [`MultipleCodeBlocks::Refuse`]; the lisp mode only).
    pub fn multiple_code_blocks(mut self, blocks: MultipleCodeBlocks) -> Self {
        self.multiple_code_blocks = blocks;
        self
    }

    /// The previous agent's step as this agent's input (the seed's auto-chaining): its
    /// return map becomes the context and its [`Step::signature`] the context signature.
    /// A failed step is `Err(chained_failure)`, a non-map return `Err(validation_error)`.
    pub fn context_from(self, step: &crate::Step) -> Result<Self, crate::Fail> {
        let mut b = self.context(step.chain_context()?);
        if let Some(sig) = &step.signature {
            b = b.context_signature(sig.clone());
        }
        Ok(b)
    }

    /// The output mode and transport (default [`Mode::Lisp`], programs in fenced blocks).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Replaces old turns by a summary inside one user message (the `lisp` mode only;
    /// off by default).
    pub fn compress_history(mut self, options: HistoryOptions) -> Self {
        self.compress_history = Some(options);
        self
    }

    /// Trims the middle of long conversations (multi-turn PTC-Lisp modes only; off by
    /// default).
    pub fn compaction(mut self, compaction: Compaction) -> Self {
        self.compaction = Some(compaction);
        self
    }

    /// The contract, e.g. `(topic :string) -> {count :int, names [:string]}` or just the
    /// output type `{count :int}`.
    pub fn signature(mut self, signature: impl Into<String>) -> Self {
        self.signature = Some(signature.into());
        self
    }

    /// Adds a callable tool.
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds a tool shown for planning only.
    pub fn catalog_tool(mut self, entry: CatalogEntry) -> Self {
        self.catalog.push(entry);
        self
    }

    /// The mission's data: each key becomes `data/<key>`.
    pub fn context(mut self, context: serde_json::Map<String, Json>) -> Self {
        self.context = context;
        self
    }

    /// The names of the context's entries, loaded and JSON.
    fn context_keys(&self) -> BTreeSet<String> {
        let loaded = self.context_values.iter().flat_map(|m| m.0.keys()).filter_map(|k| match k {
            Value::Str(s) | Value::Keyword(s) => Some(s.to_string()),
            _ => None,
        });
        loaded.chain(self.context.keys().cloned()).collect()
    }

    /// The context as values already loaded — by
    /// [`parse_context`](ptc_lisp_eval::json::parse_context), which builds them straight
    /// from JSON text at a fraction of a JSON tree's size (`ptc run --context` loads a
    /// large file this way). Entries given with [`context`](Self::context) or
    /// [`context_value`](Self::context_value) are added over these.
    pub fn context_values(mut self, values: Arc<PMap>) -> Self {
        self.context_values = Some(LoadedContext(values));
        self
    }

    /// One context entry.
    pub fn context_value(mut self, key: impl Into<String>, value: Json) -> Self {
        self.context.insert(key.into(), value);
        self
    }

    /// The context's type (a previous agent's signature, or a map type such as
    /// `{orders [{id :int}]}`); the context is checked against it and the prompt shows it.
    pub fn context_signature(mut self, signature: impl Into<String>) -> Self {
        self.context_signature = Some(signature.into());
        self
    }

    /// Describes a context key in the prompt's data inventory.
    pub fn context_description(mut self, key: impl Into<String>, text: impl Into<String>) -> Self {
        self.context_descriptions.insert(key.into(), text.into());
        self
    }

    /// Describes an output field in the prompt's expected output.
    pub fn field_description(mut self, field: impl Into<String>, text: impl Into<String>) -> Self {
        self.field_descriptions.insert(field.into(), text.into());
        self
    }

    /// How strictly the return value (and, by default, every tool's arguments and result)
    /// is checked against the signatures (default [`ValidationMode::Enabled`]: mismatches
    /// fail, extra map fields are allowed). `Strict` also rejects extra fields and refuses
    /// tools without a signature at build; `WarnOnly` logs mismatches, keeps them in
    /// `Step.warnings` and accepts the value; `Disabled` checks nothing. A tool's own
    /// [`Tool::validation`] wins over this default.
    pub fn signature_validation(mut self, mode: ValidationMode) -> Self {
        self.signature_validation = mode;
        self
    }

    /// Work turns (default 5).
    pub fn max_turns(mut self, n: u32) -> Self {
        self.max_turns = n;
        self
    }

    /// Extra turns granted after a return value failed validation (default 0).
    pub fn retry_turns(mut self, n: u32) -> Self {
        self.retry_turns = n;
        self
    }

    /// Time limit of each program (default 5 s).
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// Time limit of the whole mission (default 60 s, as the seed says).
    pub fn mission_timeout(mut self, t: Duration) -> Self {
        self.mission_timeout = Some(t);
        self
    }

    /// No time limit for the whole mission (each program keeps its `timeout`; a nested
    /// agent still ends with its parent).
    pub fn no_mission_timeout(mut self) -> Self {
        self.mission_timeout = None;
        self
    }

    /// Bytes of conversation the loop keeps after the mission (the model's answers, tool
    /// calls and results, feedback), and separately of answers and programs recorded in
    /// the step's turns (default 8 MiB each). Past it the oldest texts are replaced by a
    /// marker saying how much was dropped; a newest answer over it keeps its head.
    pub fn max_history_bytes(mut self, bytes: usize) -> Self {
        self.max_history_bytes = bytes;
        self
    }

    /// Retry policy for model requests.
    pub fn llm_retry(mut self, retry: LlmRetry) -> Self {
        self.llm_retry = retry;
        self
    }

    /// Bytes the definitions may take (printed size, default 1 MiB) and what happens past it.
    pub fn memory_limit(mut self, bytes: u64, strategy: MemoryStrategy) -> Self {
        self.memory_limit = bytes;
        self.memory_strategy = strategy;
        self
    }

    /// Decimals kept for floats in the answer (default 2; `None` keeps them all).
    pub fn float_precision(mut self, digits: Option<u32>) -> Self {
        self.float_precision = digits;
        self
    }

    /// Limits on feedback size.
    pub fn format_options(mut self, format: FormatOptions) -> Self {
        self.format = format;
        self
    }

    /// Implicit (default) or explicit completion.
    pub fn completion_mode(mut self, mode: CompletionMode) -> Self {
        self.completion_mode = mode;
        self
    }

    /// Tool calls allowed per program.
    pub fn max_tool_calls(mut self, n: u32) -> Self {
        self.max_tool_calls = Some(n);
        self
    }

    /// A display name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// What the agent does (needed when it is offered to another agent as a tool).
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// The evaluation threads this agent's programs run on (default: the process-wide
    /// [`EvalPool::shared`](ptc_lisp_eval::EvalPool::shared), twice the cores and at least
    /// 8 run threads). A program holds its run thread while it waits for a tool, so a
    /// service running many missions whose tools wait on I/O gives its agents a pool with
    /// more run threads (`PoolOptions::threads`): that number bounds how many tool calls
    /// wait at once, and it is the only thread cost of async tools.
    pub fn pool(mut self, pool: ptc_lisp_eval::EvalPool) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Sandbox limits for programs (heap, loop iterations, ...). Every field is kept:
    /// `timeout`, `max_tool_calls` and `max_print_length` set what
    /// [`timeout`](Self::timeout), [`max_tool_calls`](Self::max_tool_calls) and
    /// [`format_options`](Self::format_options) set, so whichever of them is called last
    /// wins. [`SubAgent::limits`] reads back what the agent's programs run under.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.timeout = limits.timeout;
        self.max_tool_calls = limits.max_tool_calls;
        self.format.max_print_length = limits.max_print_length;
        self.limits = limits;
        self
    }

    /// The agent's own model. A child agent uses it in preference to its caller's; the
    /// root agent uses the model handed to [`SubAgent::run`].
    pub fn llm(mut self, llm: Arc<dyn Llm>) -> Self {
        self.compose.llm = LlmRef::Explicit(llm);
        self
    }

    /// The agent's own model by registry alias (see [`llm_registry`](Self::llm_registry)).
    pub fn llm_alias(mut self, alias: impl Into<String>) -> Self {
        self.compose.llm = LlmRef::Alias(alias.into());
        self
    }

    /// Models by alias for this mission tree (children inherit the root's registry).
    pub fn llm_registry(mut self, registry: LlmRegistry) -> Self {
        self.compose.registry = Arc::new(RegistryMap(registry));
        self
    }

    /// How deep agents may nest below this one when it is the root (default 3).
    pub fn max_depth(mut self, depth: u32) -> Self {
        self.compose.max_depth = depth;
        self
    }

    /// Turns the whole mission tree may take when this agent is the root (default 20, or
    /// the root's own `max_turns + retry_turns` when that is more, so the default never
    /// cuts a lone agent short).
    pub fn turn_budget(mut self, turns: u32) -> Self {
        self.compose.turn_budget = Some(turns);
        self
    }

    /// Offers the agent to its own programs as `tool/NAME`: a call runs the same agent
    /// (same prompt, signature, tools) with the call's arguments as its context. Needs a
    /// signature with inputs.
    pub fn self_tool(mut self, name: impl Into<String>) -> Self {
        self.compose.self_tool =
            Some((name.into(), "Recursively invoke this agent on a subset of the input".to_string()));
        self
    }

    /// This agent as a tool for another agent's programs. The signature's inputs are the
    /// tool's arguments; a call runs the agent with its own context plus the arguments.
    /// A description is required.
    ///
    /// ```
    /// use ptc_subagent::SubAgent;
    /// let researcher = SubAgent::builder("Research {{topic}}")
    ///     .signature("(topic :string) -> {summary :string}")
    ///     .description("Researches one topic")
    ///     .as_tool("researcher")?;
    /// assert_eq!(researcher.signature_text(), Some("(topic :string) -> {summary :string}"));
    /// let err = SubAgent::builder("Research {{topic}}").signature("(topic :string) -> :string")
    ///     .as_tool("researcher").unwrap_err();
    /// assert_eq!(err.option, "description");
    /// # Ok::<(), ptc_subagent::ConfigError>(())
    /// ```
    pub fn as_tool(self, name: impl Into<String>) -> Result<Tool, ConfigError> {
        self.as_tool_with_llm(name, LlmRef::Caller)
    }

    /// Like [`as_tool`](Self::as_tool), binding the model the child uses when it has none
    /// of its own.
    pub fn as_tool_with_llm(self, name: impl Into<String>, bound: LlmRef) -> Result<Tool, ConfigError> {
        let name = name.into();
        let Some(description) = self.description.clone().filter(|d| !d.trim().is_empty()) else {
            return Err(ConfigError::new(
                "description",
                format!(
                    "agent tool {name:?} needs a description: say what it does, so the calling model knows when to use it"
                ),
            ));
        };
        let Some(signature) = self.signature.clone() else {
            return Err(ConfigError::new(
                "signature",
                format!("agent tool {name:?} needs a signature such as \"(topic :string) -> {{summary :string}}\""),
            ));
        };
        check_child(&self, &name)?;
        // the builder's own context stays: a call's arguments are added over it
        let spec = Arc::new(AgentToolSpec { name: name.clone(), build: child_factory(self), bound });
        Ok(agent_tool(name, spec).signature(signature).description(description))
    }

    /// Program tools beyond the agent's own (an MCP aggregator's `tool/call` and
    /// discovery); see [`ProgramTools`]. Only this agent gets them: child agents take their
    /// own.
    pub fn program_tools(mut self, tools: Arc<dyn ProgramTools>) -> Self {
        self.compose.program_tools = Some(Extra(tools));
        self
    }

    /// Runs this agent after `previous`: its context is the previous return (and
    /// `previous_signature`, or else the step's own [`Step::signature`], its context
    /// signature). A failed previous step gives a `chained_failure` step without asking
    /// the model.
    pub async fn run_after(self, previous: &Step, previous_signature: Option<&str>, llm: &dyn Llm) -> Step {
        let previous_signature = previous_signature.or(previous.signature.as_deref());
        let context = match previous.chain_context() {
            Ok(c) => c,
            Err(fail) => return Step::failed(fail),
        };
        let mut builder = self.context(context);
        if let Some(sig) = previous_signature {
            builder = builder.context_signature(sig);
        }
        match builder.build() {
            Ok(agent) => agent.run(llm).await,
            Err(e) => {
                let reason = if e.option == "prompt" { Reason::TemplateError } else { Reason::ValidationError };
                Step::failed(Fail::new(reason, e.to_string()))
            }
        }
    }

    /// Checks every option and builds the agent. A bad option is an error naming it:
    ///
    /// ```
    /// use ptc_subagent::{SubAgent, Tool};
    /// use serde_json::json;
    /// let err = SubAgent::builder("Summarise {{topic}}").build().unwrap_err();
    /// assert_eq!(err.option, "prompt");
    /// let err = SubAgent::builder("x").tool(Tool::fixed("return", json!(1))).build().unwrap_err();
    /// assert_eq!(err.to_string(), "tools: tool name \"return\" is reserved by the agent loop — choose a different name");
    /// ```
    pub fn build(mut self) -> Result<SubAgent, ConfigError> {
        if self.prompt.trim().is_empty() {
            return Err(ConfigError::new("prompt", "the mission prompt is empty; say what the agent should do"));
        }
        let prompt = Template::parse(&self.prompt).map_err(|e| ConfigError::new("prompt", e.0))?;
        let signature = match &self.signature {
            Some(text) => Some(ptc_signature::parse(text).map_err(|e| ConfigError::new("signature", e.to_string()))?),
            None => None,
        };
        let context_keys = self.context_keys();
        check_placeholders(&prompt, signature.as_ref(), &context_keys)?;
        check_numbers(&self)?;
        check_mode(&self)?;
        let mut tools = prepare_tools(&self.tools, &context_keys, self.mode, self.signature_validation)?;
        add_self_tool(&self, &mut tools)?;
        check_catalog(&self.catalog, &tools)?;
        if let Some(name) = self.prelude.unknown_unlisted().next() {
            return Err(ConfigError::new(
                "prelude",
                format!("{name:?} is marked unlisted but is not one of the prelude's definitions"),
            ));
        }
        // the context as values: the loaded ones with the JSON entries over them, converted
        // once (a large context is never copied as a JSON tree)
        let Value::Map(json_part) = ptc_lisp_eval::json::from_json(&Json::Object(std::mem::take(&mut self.context)))
        else {
            return Err(ConfigError::new("context", "the context must be a JSON object"));
        };
        let context = match self.context_values.take().map(|l| l.0) {
            Some(values) if json_part.is_empty() => values,
            Some(values) => {
                let mut merged = (*values).clone();
                for (k, v) in json_part.iter() {
                    merged.insert(k.clone(), v.clone());
                }
                Arc::new(merged)
            }
            None => json_part,
        };
        let context_types = match &self.context_signature {
            Some(text) => Some(context_fields(text, &context, self.signature_validation)?),
            None => None,
        };
        for key in self.context_descriptions.keys() {
            if !context_keys.contains(key) {
                return Err(ConfigError::new(
                    "context_descriptions",
                    format!("describes {key:?}, which is not a context key"),
                ));
            }
        }
        if let Some(name) = &self.name
            && name.trim().is_empty()
        {
            return Err(ConfigError::new("name", "the name is empty; leave it unset or give a name"));
        }
        let mut limits = self.limits;
        limits.timeout = self.timeout;
        limits.max_tool_calls = self.max_tool_calls;
        limits.max_print_length = self.format.max_print_length;
        let resume = match &self.resume_from {
            Some(ResumeFrom::Path(path)) => Some(crate::checkpoint::Checkpoint::load(path)),
            Some(ResumeFrom::Store(store)) => Some(store.load_latest()),
            None => None,
        };
        let resume = match resume {
            Some(loaded) => Some(Arc::new(loaded.map_err(|e| ConfigError::new("resume_from", e.0))?)),
            None => None,
        };
        // a resumed mission goes on checkpointing where it came from
        let checkpoint_store = self.checkpoint_store.clone().or_else(|| match &self.resume_from {
            Some(ResumeFrom::Path(p)) => {
                let dir = if p.is_dir() { p.clone() } else { p.parent().map(|d| d.to_path_buf()).unwrap_or_default() };
                Some(Arc::new(crate::checkpoint::DirStore::new(dir)) as Arc<dyn crate::checkpoint::CheckpointStore>)
            }
            Some(ResumeFrom::Store(store)) => Some(store.clone()),
            None => None,
        });
        let config = Config {
            prompt,
            signature,
            signature_text: self.signature,
            catalog: self.catalog,
            context,
            context_types,
            context_descriptions: self.context_descriptions,
            field_descriptions: self.field_descriptions,
            max_turns: self.max_turns,
            retry_turns: self.retry_turns,
            mission_timeout: self.mission_timeout,
            llm_retry: self.llm_retry,
            memory_limit: self.memory_limit,
            memory_strategy: self.memory_strategy,
            float_precision: self.float_precision,
            format: self.format,
            completion_mode: self.completion_mode,
            max_tool_calls: self.max_tool_calls,
            name: self.name,
            description: self.description,
            limits,
            mode: self.mode,
            compress_history: self.compress_history,
            compaction: self.compaction,
            max_history_bytes: self.max_history_bytes,
            compose: self.compose,
            signature_validation: self.signature_validation,
            system_prompt: self.system_prompt,
            prompt_limit: self.prompt_limit,
            multiple_code_blocks: self.multiple_code_blocks,
            max_consecutive_failures: self.max_consecutive_failures,
            max_cost_usd: self.max_cost_usd,
            prices: Arc::new(self.prices.unwrap_or_default()),
            checkpoint_store,
            resume: resume.clone(),
            pool: self.pool,
            prelude: self.prelude,
        };
        let agent = SubAgent { config: Arc::new(config), tools: Arc::new(tools) };
        if let Some(c) = &resume {
            crate::recording::check_agent(c, &agent).map_err(|e| ConfigError::new("resume_from", e.0))?;
        }
        Ok(agent)
    }
}

fn norm(s: &str) -> String {
    s.replace('-', "_")
}

fn check_placeholders(
    prompt: &Template,
    signature: Option<&Signature>,
    context: &BTreeSet<String>,
) -> Result<(), ConfigError> {
    if let Some(sig) = signature
        && !sig.inputs.is_empty()
    {
        prompt.validate_against(sig).map_err(|e| ConfigError::new("prompt", e.0))?;
        for input in &sig.inputs {
            let present = context.iter().any(|k| norm(k) == norm(&input.name));
            if !present && !input.ty.is_optional() {
                return Err(ConfigError::new(
                    "context",
                    format!("the signature's input `{}` has no value in the context", input.name),
                ));
            }
        }
    }
    for p in prompt.placeholders() {
        let root = p.split('.').next().unwrap_or(&p);
        if root == "." {
            continue;
        }
        if !context.iter().any(|k| norm(k) == norm(root)) {
            return Err(ConfigError::new(
                "prompt",
                format!("placeholder {{{{{p}}}}} has no value in the context; add \"{root}\" to the context"),
            ));
        }
    }
    Ok(())
}

fn check_numbers(b: &SubAgentBuilder) -> Result<(), ConfigError> {
    if b.max_turns == 0 {
        return Err(ConfigError::new("max_turns", "must be at least 1"));
    }
    if b.timeout.is_zero() {
        return Err(ConfigError::new("timeout", "must be more than 0 ms"));
    }
    if b.mission_timeout.is_some_and(|t| t.is_zero()) {
        return Err(ConfigError::new("mission_timeout", "must be more than 0 ms"));
    }
    if b.max_history_bytes < 1024 {
        return Err(ConfigError::new("max_history_bytes", "must be at least 1024"));
    }
    if b.llm_retry.max_attempts == 0 {
        return Err(ConfigError::new("llm_retry", "max_attempts must be at least 1 (1 means no retry)"));
    }
    if b.memory_limit == 0 {
        return Err(ConfigError::new("memory_limit", "must be more than 0 bytes"));
    }
    if b.float_precision.is_some_and(|p| p > 15) {
        return Err(ConfigError::new("float_precision", "at most 15 decimals"));
    }
    let f = &b.format;
    if f.feedback_max_chars == 0 || f.preview_max_chars == 0 || f.result_limit == 0 || f.max_print_length == 0 {
        return Err(ConfigError::new("format_options", "every limit must be more than 0"));
    }
    if b.max_consecutive_failures == Some(0) {
        return Err(ConfigError::new("max_consecutive_failures", "must be at least 1; leave it unset for no limit"));
    }
    if b.max_cost_usd.is_some_and(|c| !(c.is_finite() && c > 0.0)) {
        return Err(ConfigError::new(
            "max_cost_usd",
            "must be a number of US dollars above 0; leave it unset for no budget",
        ));
    }
    if b.prompt_limit.list == 0 || b.prompt_limit.string == 0 {
        return Err(ConfigError::new("prompt_limit", "list and string must be at least 1"));
    }
    match &b.system_prompt {
        Some(SystemPrompt::Replace(text)) if text.trim().is_empty() => {
            return Err(ConfigError::new(
                "system_prompt",
                "the replacement is empty; leave system_prompt unset to keep the generated prompt",
            ));
        }
        _ => {}
    }
    if b.multiple_code_blocks == MultipleCodeBlocks::Sequential && b.mode != Mode::Lisp {
        return Err(ConfigError::new(
            "multiple_code_blocks",
            format!("sequential applies to the lisp mode (programs in fenced blocks), not to {}", b.mode),
        ));
    }
    if b.max_tool_calls == Some(0) {
        return Err(ConfigError::new("max_tool_calls", "must be at least 1; leave it unset for no limit"));
    }
    Ok(())
}

fn valid_tool_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The combinations of mode, history compression and compaction that make sense.
fn check_mode(b: &SubAgentBuilder) -> Result<(), ConfigError> {
    if let Some(h) = &b.compress_history {
        if b.mode != Mode::Lisp {
            return Err(ConfigError::new(
                "compress_history",
                format!("works with the lisp mode (programs in fenced blocks), not with {}", b.mode),
            ));
        }
        if h.println_limit == 0 || h.tool_call_limit == 0 {
            return Err(ConfigError::new("compress_history", "println_limit and tool_call_limit must be at least 1"));
        }
    }
    if let Some(c) = &b.compaction {
        if b.mode.is_text() {
            return Err(ConfigError::new("compaction", format!("is not available in {} mode", b.mode)));
        }
        if b.max_turns <= 1 {
            return Err(ConfigError::new("compaction", "needs a multi-turn agent (max_turns > 1)"));
        }
        c.check().map_err(|m| ConfigError::new("compaction", m))?;
        if b.compress_history.is_some() {
            return Err(ConfigError::new("compaction", "choose compress_history or compaction, not both"));
        }
    }
    Ok(())
}

fn prepare_tools(
    tools: &[Tool],
    context: &BTreeSet<String>,
    mode: Mode,
    validation: ValidationMode,
) -> Result<Toolbox, ConfigError> {
    let mut out = Toolbox::new();
    for t in tools {
        let name = t.name.as_str();
        if RESERVED_TOOL_NAMES.contains(&name) {
            return Err(ConfigError::new(
                "tools",
                format!("tool name {name:?} is reserved by the agent loop — choose a different name"),
            ));
        }
        if !valid_tool_name(name) {
            return Err(ConfigError::new(
                "tools",
                format!("tool name {name:?} is not valid; use letters, digits, - and _, starting with a letter"),
            ));
        }
        if context.iter().any(|k| norm(k) == norm(name)) {
            return Err(ConfigError::new("tools", format!("{name} is both a tool and data - rename one")));
        }
        if out.keys().any(|k| norm(k) == norm(name)) {
            return Err(ConfigError::new("tools", format!("tool {name:?} is declared twice")));
        }
        let mut tool = t.clone();
        let own = *tool.validation.get_or_insert(validation);
        let inputs = match &t.signature {
            Some(text) => {
                let sig = ptc_signature::parse(text)
                    .map_err(|e| ConfigError::new("tools", format!("tool {name:?}: bad signature: {e}")))?;
                tool.output = crate::validation::output_type(&sig);
                Some(Type::Object { fields: sig.inputs, closed: false })
            }
            None if own == ValidationMode::Strict => {
                return Err(ConfigError::new(
                    "tools",
                    format!(
                        "tool {name:?} has no signature, and strict validation needs one for every tool; give it a signature such as \"(query :string) -> [:map]\", or set its validation to \"enabled\""
                    ),
                ));
            }
            None => None,
        };
        let expose = t.expose.unwrap_or(mode.default_expose());
        match mode {
            Mode::Lisp | Mode::LispTool if expose == Exposure::Native => {
                return Err(ConfigError::new(
                    "tools",
                    format!(
                        "tool {name:?} is exposed natively, but in {mode} mode the model only writes programs; expose it to ptc_lisp (or use combined mode)"
                    ),
                ));
            }
            Mode::Text if expose != Exposure::Native => {
                return Err(ConfigError::new(
                    "tools",
                    format!(
                        "tool {name:?} is exposed to programs, but text mode runs no programs; use combined mode or expose it natively"
                    ),
                ));
            }
            _ => {}
        }
        if t.native_result.is_some() {
            if expose != Exposure::Both || !t.cache {
                return Err(ConfigError::new(
                    "tools",
                    format!(
                        "tool {name:?}: native_result needs expose both and cache true (the preview stands for a cached result programs can read)"
                    ),
                ));
            }
            if let Some(NativeResult::Rows { limit: 0 }) = &t.native_result {
                return Err(ConfigError::new(
                    "tools",
                    format!("tool {name:?}: native_result rows limit must be at least 1"),
                ));
            }
        }
        out.insert(name.to_string(), PreparedTool { tool, inputs, expose });
    }
    Ok(out)
}

fn check_catalog(catalog: &[CatalogEntry], tools: &Toolbox) -> Result<(), ConfigError> {
    let mut seen = BTreeSet::new();
    for c in catalog {
        if tools.contains_key(&c.name) {
            return Err(ConfigError::new(
                "tool_catalog",
                format!("{:?} is both a callable tool and a catalog entry - keep one", c.name),
            ));
        }
        if !seen.insert(c.name.clone()) {
            return Err(ConfigError::new("tool_catalog", format!("{:?} is listed twice", c.name)));
        }
        if let Some(sig) = &c.signature {
            ptc_signature::parse(sig)
                .map_err(|e| ConfigError::new("tool_catalog", format!("{:?}: bad signature: {e}", c.name)))?;
        }
    }
    Ok(())
}

/// The fields of a context signature, after checking the context against them.
fn context_fields(text: &str, context: &Arc<PMap>, mode: ValidationMode) -> Result<Vec<Field>, ConfigError> {
    let sig = ptc_signature::parse(text).map_err(|e| ConfigError::new("context_signature", e.to_string()))?;
    let fields = match sig.output.required() {
        Type::Object { fields, .. } => fields.clone(),
        _ if !sig.inputs.is_empty() => sig.inputs.clone(),
        other => {
            return Err(ConfigError::new(
                "context_signature",
                format!("describes a {}, but the context is a map; write {{key :type, ...}}", other.describe()),
            ));
        }
    };
    let value = Value::Map(context.clone());
    // extra context keys are fine in every mode: the context signature types what it names
    let check = if mode == ValidationMode::Strict { ValidationMode::Enabled } else { mode };
    let report = ptc_signature::validate(&value, &Type::Object { fields: fields.clone(), closed: false }, check);
    for w in &report.warnings {
        tracing::warn!("context does not match the context signature (validation warn_only): {w}");
    }
    if !report.is_ok() {
        return Err(ConfigError::new(
            "context",
            format!("does not match the context signature:\n{}", report.render_errors()),
        ));
    }
    Ok(fields)
}

/// Builds the child once with placeholder inputs, so that every option error shows up
/// when the tool is made rather than when it is first called.
fn check_child(builder: &SubAgentBuilder, name: &str) -> Result<(), ConfigError> {
    let Some(text) = &builder.signature else { return Ok(()) };
    let sig =
        ptc_signature::parse(text).map_err(|e| ConfigError::new("signature", format!("agent tool {name:?}: {e}")))?;
    let mut context = builder.context.clone();
    for input in &sig.inputs {
        context.entry(input.name.clone()).or_insert(Json::Null);
    }
    builder.clone().context(context).build().map(|_| ())
}

/// Adds the `:self` tool to a toolbox being built (from [`SubAgentBuilder::build`]).
fn add_self_tool(builder: &SubAgentBuilder, tools: &mut Toolbox) -> Result<(), ConfigError> {
    let Some((name, description)) = builder.compose.self_tool.clone() else { return Ok(()) };
    let Some(signature) = builder.signature.clone() else {
        return Err(ConfigError::new(
            "tools",
            format!("the self tool {name:?} needs the agent's signature, e.g. \"(items [:int]) -> :int\""),
        ));
    };
    let sig = ptc_signature::parse(&signature).map_err(|e| ConfigError::new("signature", e.to_string()))?;
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid || RESERVED_TOOL_NAMES.contains(&name.as_str()) {
        return Err(ConfigError::new(
            "tools",
            format!("the self tool's name {name:?} is reserved or not valid; use letters, digits, - and _"),
        ));
    }
    if tools.contains_key(&name) || builder.context.contains_key(&name) {
        return Err(ConfigError::new("tools", format!("the self tool {name:?} clashes with a tool or context key")));
    }
    let spec = Arc::new(AgentToolSpec {
        name: name.clone(),
        build: child_factory(builder.clone().context(serde_json::Map::new())),
        bound: LlmRef::Caller,
    });
    let tool = agent_tool(name.clone(), spec).signature(signature).description(description);
    let inputs = Some(ptc_signature::Type::Object { fields: sig.inputs, closed: false });
    let expose = tool.expose.unwrap_or(builder.mode.default_expose());
    tools.insert(name, PreparedTool { tool, inputs, expose });
    Ok(())
}

/// What an agent tool made of `builder` builds at each call: the builder's own context
/// with the call's arguments over it.
fn child_factory(builder: SubAgentBuilder) -> crate::compose::ChildFactory {
    Arc::new(move |arguments| {
        let mut context = builder.context.clone();
        context.extend(arguments);
        builder.clone().context(context).build()
    })
}
