//! [`Step`]: the outcome of a mission, serialisable as one JSON object.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::compaction::CompactionStats;
use crate::reason::Reason;

/// How a mission ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Status {
    /// The program returned a value that matches the signature.
    Ok,
    /// The mission failed; see [`Step::fail`].
    Error,
}

/// Why a mission failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Fail {
    /// Machine-readable reason: `max_turns_exceeded`, `llm_error`, `mission_timeout`, ...
    /// or the program's own `(fail {:reason :not_found ...})`.
    pub reason: String,
    /// What happened, for a person.
    pub message: String,
    /// The operation that failed, when the program said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// More context (the program's `:details`, or the loop's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Json>,
}

impl Fail {
    /// A failure with `reason` and `message`.
    pub fn new(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Fail { reason: reason.into(), message: message.into(), op: None, details: None }
    }
}

impl std::fmt::Display for Fail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.reason, self.message)
    }
}

impl std::error::Error for Fail {}

/// Resource usage of a mission.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StepUsage {
    /// Turns taken.
    pub turns: u32,
    /// Requests sent to the model (retries included).
    pub llm_requests: u32,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write_tokens: u64,
    /// Input plus output tokens.
    pub total_tokens: u64,
    /// Wall-clock time of the whole mission.
    pub duration_ms: u64,
    /// What the model requests cost in US dollars, when the model's price is known
    /// (see [`PriceTable`](crate::PriceTable)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// What compaction did (when it is configured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionStats>,
}

/// What kind of turn it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TurnKind {
    /// A work turn.
    Normal,
    /// The last work turn: the model is told to return or fail.
    MustReturn,
    /// A turn granted to correct a return value that did not match the signature.
    Retry,
}

/// One tool call made by a turn's program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCallTrace {
    /// Tool name.
    pub name: String,
    /// Arguments as the tool received them.
    pub args: Json,
    /// The result, when the call succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Json>,
    /// The error, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long the call took.
    pub duration_ms: u64,
    /// `native` (the model called it) or `ptc_lisp` (a program did).
    #[serde(default = "default_layer")]
    pub exposure_layer: String,
    /// True when the result came from the run's cache.
    #[serde(default)]
    pub cached: bool,
}

fn default_layer() -> String {
    "ptc_lisp".into()
}

/// One turn of the loop: what the model said, what ran, what we answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Turn {
    /// 1-based.
    pub number: u32,
    /// Work, final work, or retry turn.
    #[serde(rename = "type")]
    pub kind: TurnKind,
    /// The model's answer as received.
    pub raw_response: String,
    /// The program found in it (none when extraction failed).
    pub program: Option<String>,
    /// The program's result printed as PTC-Lisp (none on error or without a program).
    pub result: Option<String>,
    /// The program's error as `kind: message` (none when it ran cleanly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `println` lines.
    pub prints: Vec<String>,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCallTrace>,
    /// The feedback sent back for the next turn (none when the turn ended the mission).
    pub feedback: Option<String>,
    /// Tokens of this turn's model request(s).
    pub input_tokens: u64,
    /// Completion tokens of this turn.
    pub output_tokens: u64,
    /// Wall-clock time of the turn (model and program).
    pub duration_ms: u64,
    /// The program's calls to upstream servers (agents given
    /// [`ProgramTools`](crate::ProgramTools)), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upstream_calls: Vec<Json>,
}

impl Turn {
    /// A turn whose model answer just arrived.
    pub(crate) fn start(number: u32, kind: TurnKind, tokens: &crate::llm::TokenUsage) -> Self {
        Turn {
            number,
            kind,
            raw_response: String::new(),
            program: None,
            result: None,
            error: None,
            prints: Vec::new(),
            tool_calls: Vec::new(),
            feedback: None,
            input_tokens: tokens.input,
            output_tokens: tokens.output,
            duration_ms: 0,
            upstream_calls: Vec::new(),
        }
    }
}

/// The outcome of a mission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Step {
    /// `ok` or `error`.
    pub status: Status,
    /// The validated return value (map keys normalised to `snake_case` strings).
    #[serde(rename = "return")]
    pub return_value: Option<Json>,
    /// Why it failed.
    pub fail: Option<Fail>,
    /// Definitions at the end of the mission, by name (values with no JSON form are shown
    /// as PTC-Lisp text).
    pub memory: BTreeMap<String, Json>,
    /// Turns, tokens and time of the whole tree: this agent's own plus every nested run's
    /// (agent tools, LLM tools), so `llm_requests`, tokens and cost are what the mission
    /// spent. `turns`, `duration_ms` and `compaction` stay this agent's own (children
    /// ran inside its turns and its wall clock). See [`Step::own_usage`].
    pub usage: StepUsage,
    /// This agent's own share of [`usage`](Self::usage), when it has nested runs (the
    /// same as `usage` otherwise; read it with [`Step::own_usage`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_usage: Option<StepUsage>,
    /// Every turn, in order.
    pub turns: Vec<Turn>,
    /// The agent's name, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Nested runs made by this mission's programs (agent tools, LLM tools), in the order
    /// they finished.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ChildStep>,
    /// The agent's signature as written (kept for chaining: the next agent's context
    /// signature, see [`SubAgentBuilder::context_from`](crate::SubAgentBuilder::context_from)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Validation mismatches accepted under `signature_validation: warn_only`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Every upstream call of the mission's programs, in order, each with its `turn`
    /// (agents given [`ProgramTools`](crate::ProgramTools)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upstream_calls: Vec<Json>,
    /// What the upstream calls brought in against what the answer gives back (agents
    /// given [`ProgramTools`](crate::ProgramTools)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ptc_metrics: Option<Json>,
}

/// A nested run inside a mission: which turn's program called which tool, and the
/// child's own step (with its children, and so on down the tree).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChildStep {
    /// The parent's turn whose program made the call.
    pub turn: u32,
    /// The tool that was called.
    pub tool: String,
    /// The child's outcome.
    pub step: Step,
}

impl Step {
    /// True when the mission returned.
    pub fn is_ok(&self) -> bool {
        self.status == Status::Ok
    }

    /// This agent's own usage, without its nested runs'.
    pub fn own_usage(&self) -> &StepUsage {
        self.own_usage.as_ref().unwrap_or(&self.usage)
    }

    /// Sets `usage` to the tree's (own plus children's) and keeps the own share apart
    /// when there are children.
    pub(crate) fn total_usage(mut self) -> Self {
        if self.children.is_empty() {
            return self;
        }
        let own = self.own_usage.take().unwrap_or_else(|| self.usage.clone());
        let mut tree = own.clone();
        for child in &self.children {
            let u = &child.step.usage;
            tree.llm_requests += u.llm_requests;
            tree.input_tokens += u.input_tokens;
            tree.output_tokens += u.output_tokens;
            tree.cache_read_tokens += u.cache_read_tokens;
            tree.cache_write_tokens += u.cache_write_tokens;
            tree.total_tokens += u.total_tokens;
            tree.cost_usd = match (tree.cost_usd, u.cost_usd) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
        }
        self.usage = tree;
        self.own_usage = Some(own);
        self
    }

    /// The answer as a Rust type: the return value deserialised into `T`, or the mission's
    /// [`Fail`] (a value that does not fit `T` is a `validation_error` naming the field).
    /// Usable with `?` wherever a `Fail` or a boxed error is returned.
    ///
    /// ```
    /// use ptc_subagent::{ScriptedLlm, SubAgent};
    /// #[derive(serde::Deserialize)]
    /// struct Totals { count: u32, total: f64 }
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let agent = SubAgent::builder("Sum the orders").signature("{count :int, total :float}").build()?;
    /// let llm = ScriptedLlm::texts(["```clojure\n(return {:count 2 :total 19.75})\n```"]);
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    /// let totals: Totals = runtime.block_on(agent.run(&llm)).answer()?;
    /// assert_eq!((totals.count, totals.total), (2, 19.75));
    /// # Ok(())
    /// # }
    /// ```
    pub fn answer<T: serde::de::DeserializeOwned>(&self) -> Result<T, Fail> {
        if let Some(fail) = &self.fail {
            return Err(fail.clone());
        }
        let value = self.return_value.clone().unwrap_or(Json::Null);
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let wanted = std::any::type_name::<T>();
            let inner = e.into_inner();
            let at = if path == "." { String::new() } else { format!(" at `{path}`") };
            Fail::new(
                Reason::ValidationError,
                format!("the answer does not fit the Rust type {wanted}{at}: {inner}; make the agent's signature match the type"),
            )
        })
    }

    /// A failed step without turns (configuration and pre-run failures).
    pub fn failed(fail: Fail) -> Self {
        Step {
            status: Status::Error,
            return_value: None,
            fail: Some(fail),
            memory: BTreeMap::new(),
            usage: StepUsage::default(),
            own_usage: None,
            turns: Vec::new(),
            name: None,
            children: Vec::new(),
            signature: None,
            warnings: Vec::new(),
            upstream_calls: Vec::new(),
            ptc_metrics: None,
        }
    }
}
