//! Agents over the upstreams: an [`UpstreamRuntime`](crate::UpstreamRuntime) is a
//! [`ptc_subagent::ProgramTools`], so an agent's programs reach `tool/call`, `tool/servers`
//! and discovery exactly as `lisp_eval` programs do (see `upstream/mod.rs`), and
//! `lisp_task` — the MCP tool that hands a task in words to a planner model which writes
//! and runs the programs — is built on it here.

mod native;

pub use native::{NativeCalls, native_name, native_tools, native_tools_recorded};

mod task;

pub use task::{
    AgenticError, AgenticOptions, LISP_TASK_CARD, MAX_PROMPT_SLOT_BYTES, MAX_TASK_BYTES, SubagentConfig, TaskTool,
};
