//! `ptc-subagent`: the agent loop. An LLM writes PTC-Lisp turn after turn; each program
//! runs in the sandbox, what happened is fed back, and the run ends on a `(return v)` that
//! matches the signature (or on a limit).
//!
//! This crate talks to models only through the [`Llm`] trait: it never speaks HTTP
//! (`ptc-providers` does) and never speaks MCP (`ptc-mcp-aggregator` does).
//!
//! Four [`Mode`]s: programs in fenced blocks (the default), programs through one native
//! `lisp_eval` tool, text answers with native tools, and combined mode (text plus
//! `lisp_eval`, with tools exposed to the model, to programs or to both, sharing one
//! cache per run under one canonical key). Every native tool call gets exactly
//! one tool result. Long missions can [compress](HistoryOptions) old turns into one user message
//! or [trim](Compaction) the middle of the conversation; [`SubAgent::chat`] continues a
//! conversation the caller keeps.
//!
//! An agent with two Rust closures as tools, answered by a scripted model:
//!
//! ```
//! use ptc_subagent::{ScriptedLlm, SubAgent, Tool};
//! use serde_json::json;
//!
//! let agent = SubAgent::builder("How many orders does {{customer}} have, and what do they total?")
//!     .signature("{count :int, total :float}")
//!     .context_value("customer", json!("acme"))
//!     .tool(
//!         Tool::new("orders", |args| Ok(json!([{"id": 1, "customer": args["customer"], "amount": 12.5},
//!                                                           {"id": 2, "customer": args["customer"], "amount": 7.25}])))
//!             .signature("(customer :string) -> [{id :int, amount :float}]")
//!             .description("Orders of one customer"),
//!     )
//!     .tool(Tool::new("total", |args| {
//!         let sum: f64 = args["amounts"].as_array().into_iter().flatten().filter_map(|a| a.as_f64()).sum();
//!         Ok(json!(sum))
//!     }))
//!     .build()?;
//!
//! let llm = ScriptedLlm::texts([
//!     "```clojure\n(def os (tool/orders {:customer data/customer}))\n(println (count os))\n```",
//!     "```clojure\n(return {:count (count os) :total (tool/total {:amounts (map :amount os)})})\n```",
//! ]);
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let step = runtime.block_on(agent.run(&llm));
//!
//! assert!(step.is_ok());
//! assert_eq!(step.return_value, Some(json!({"count": 2, "total": 19.75})));
//! assert_eq!(step.usage.turns, 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod agent;
mod builder;
mod cache_key;
mod chain;
mod chat;
mod checkpoint;
#[cfg(feature = "redis")]
mod checkpoint_redis;
mod compaction;
mod compiled;
mod compose;
mod compress;
mod config;
mod cost;
mod dry_run;
mod exec;
mod extract;
mod feedback;
mod history_cap;
mod llm;
mod llm_tool;
mod mission;
mod mode;
mod nesting;
mod observe;
mod prelude;
mod preview;
mod program_tools;
mod prompt;
mod protocol;
mod reason;
mod recording;
mod request;
mod retry;
mod scripted;
mod step;
mod tool;
mod tool_turn;
mod validation;

pub use builder::SubAgentBuilder;
pub use chain::Chain;
pub use chat::ChatReply;
pub use checkpoint::{
    CHECKPOINT_FORMAT, CHECKPOINT_VERSION, Checkpoint, CheckpointError, CheckpointStore, DirStore, ToolRecord,
};
#[cfg(feature = "redis")]
pub use checkpoint_redis::RedisCheckpointStore;
pub use compaction::{Compaction, CompactionStats, estimate_tokens};
pub use compiled::CompiledAgent;
pub use compress::HistoryOptions;
pub use config::{CompletionMode, ConfigError, DEFAULT_MISSION_TIMEOUT, MemoryStrategy, RESERVED_TOOL_NAMES, SubAgent};
pub use cost::PriceTable;
pub use dry_run::DryRun;
pub use extract::MultipleCodeBlocks;
pub use feedback::FormatOptions;
pub use history_cap::DEFAULT_MAX_HISTORY_BYTES;
pub use llm::{
    BoxFuture, Llm, LlmError, LlmErrorKind, LlmOptions, LlmRequest, LlmResponse, Message, ModelPrice, NativeToolCall,
    TokenUsage, ToolSchema,
};
pub use llm_tool::{JUDGMENT_SYSTEM_PROMPT, LlmTool};
pub use mode::{Mode, NativeResult, PreviewFn};
pub use nesting::{DEFAULT_MAX_DEPTH, DEFAULT_TURN_BUDGET, LlmRef, LlmRegistry};
pub use observe::{Event, Observer};
pub use prelude::Prelude;
pub use program_tools::ProgramTools;
pub use prompt::{PromptLimit, SystemPrompt};
pub use ptc_lisp_eval::Exposure;
pub use reason::Reason;
pub use retry::{Backoff, DEFAULT_MAX_RETRY_DELAY, LlmRetry};
pub use scripted::{ScriptEntry, ScriptError, ScriptedLlm};
pub use step::{ChildStep, Fail, Status, Step, StepUsage, ToolCallTrace, Turn, TurnKind};
pub use tool::{AsyncToolFn, CatalogEntry, Tool, ToolContext, ToolError, ToolFn};
pub use validation::ValidationMode;

/// How the loop reads a model's answer and wraps what a program printed before the model
/// sees it: public for the fuzz target and for hosts that parse answers themselves.
pub mod answer {
    pub use crate::extract::{Extracted, extract_code, normalize, strip_thinking};
    pub use crate::feedback::envelope;
}

/// The examples of this crate's `README.md`, compiled and run as doctests so that the
/// page crates.io shows cannot drift from the code.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
