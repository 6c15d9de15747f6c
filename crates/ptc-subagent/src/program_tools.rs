//! [`ProgramTools`]: tools a program reaches through a `Host` of someone else's making —
//! in practice an MCP aggregator's `tool/call`, `tool/servers` and the discovery forms
//! (`dir`, `doc`, `apropos`, `meta`) over its upstream servers.
//!
//! This crate never speaks MCP: the aggregator implements the trait, an agent is given
//! one with [`SubAgentBuilder::program_tools`], and the loop then (1) adds the host's
//! tools and discovery to every program the agent runs, with a fresh host (fresh per-program
//! budgets) each time, (2) appends the host's catalog text to the system prompt, and (3)
//! keeps the host's account of each program's calls in the turn (`upstream_calls`) and
//! sums them in the step with [`ProgramTools::metrics`] (`ptc_metrics`).
//!
//! Each agent of a mission tree has its own (or none): a child can reach a filesystem
//! server that its parent cannot.

use std::fmt;
use std::sync::Arc;

use ptc_lisp_eval::{Host, Outcome};
use serde_json::Value as Json;

/// A source of program-callable tools beyond the agent's own; see the module docs.
pub trait ProgramTools: Send + Sync {
    /// A host for one program run. Its tools must not clash with the agent's own (the
    /// agent's win); calls and discovery questions the agent's tools do not answer go here.
    fn host(&self) -> Arc<dyn Host>;

    /// Text for the system prompt: what the tools are and how to find and call them.
    fn prompt(&self) -> Option<String>;

    /// The account of one program's calls to these tools (JSON objects, in call order).
    fn calls(&self, outcome: &Outcome) -> Vec<Json>;

    /// The summary of a whole run's calls, given the bytes of its answer and of its prints.
    fn metrics(&self, calls: &[Json], answer_bytes: u64, prints_bytes: u64) -> Json;
}

/// The agent's [`ProgramTools`], with a `Debug` that does not look inside.
#[derive(Clone)]
pub(crate) struct Extra(pub(crate) Arc<dyn ProgramTools>);

impl fmt::Debug for Extra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgramTools")
    }
}
