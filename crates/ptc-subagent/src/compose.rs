//! Agents calling agents: a [`SubAgentBuilder`] offered as a tool (`as_tool`), an agent
//! calling itself (`self_tool`), and what a mission tree shares — one turn budget, one
//! depth limit, the root's mission deadline, the LLM registry.
//!
//! A child agent runs inside the parent program's tool call, on that call's thread. Its
//! model requests go, by default, to the *caller's* model: they travel over a channel to
//! the parent mission, which answers them while it waits for its program (so a scripted
//! model answers parent and children in the order the requests are made, and the parent's
//! `&dyn Llm` never has to outlive its `run`). A child with its own model (`llm`, or a
//! registry alias) asks that one directly.
//!
//! Which model a child uses: its own (`SubAgentBuilder::llm` / `llm_alias`), else the one
//! bound with [`SubAgentBuilder::as_tool_with_llm`], else the caller's.

use std::sync::Arc;

use serde_json::Value as Json;

use crate::config::{ConfigError, SubAgent};
use crate::nesting::{LlmRef, ToolNest, resolve_llm};
use crate::observe::{Event, Observer};
use crate::reason::Reason;
use crate::step::{ChildStep, Fail, Step};
use crate::tool::{Tool, ToolContext, ToolError, tool_nest};

/// Builds the child agent of one call from the call's arguments (a map, merged over the
/// child builder's own context). The builder lives in `builder.rs`, above this module.
pub(crate) type ChildFactory =
    Arc<dyn Fn(serde_json::Map<String, Json>) -> Result<SubAgent, ConfigError> + Send + Sync>;

/// What an agent tool needs at call time.
pub(crate) struct AgentToolSpec {
    pub(crate) name: String,
    /// Builds the child with a call's arguments.
    pub(crate) build: ChildFactory,
    pub(crate) bound: LlmRef,
}

/// Wraps a child's events as [`Event::Nested`] for the parent's observer.
struct NestedObserver {
    parent: Arc<dyn Observer>,
    agent: String,
    depth: u32,
}

impl Observer for NestedObserver {
    fn event(&self, event: &Event) {
        if let Event::Nested { .. } = event {
            // a deeper descendant's event, already wrapped with its own depth
            self.parent.event(event);
        } else {
            let event = Box::new(event.clone());
            self.parent.event(&Event::Nested { agent: self.agent.clone(), depth: self.depth, inner: event });
        }
    }
}

/// An agent tool: the child mission runs as a task on the parent mission's runtime while
/// the calling program waits (no thread is held for it); aborting the task at the
/// program's deadline or on cancel drops the child mission, which cancels it.
pub(crate) fn agent_tool(name: String, spec: Arc<AgentToolSpec>) -> Tool {
    Tool::new_async(name, move |args, cx| {
        let spec = spec.clone();
        async move { run_agent_tool(&spec, args, &cx).await }
    })
}

async fn run_agent_tool(spec: &AgentToolSpec, args: Json, cx: &ToolContext) -> Result<Json, ToolError> {
    let nest = tool_nest(cx, &spec.name)?;
    let step = run_child(spec, args, cx, nest).await;
    let result = match (&step.return_value, &step.fail) {
        (_, Some(f)) => {
            Err(ToolError::failed(format!("agent tool {} failed ({}): {}", spec.name, f.reason, f.message)))
        }
        (Some(v), None) => Ok(v.clone()),
        (None, None) => Ok(Json::Null),
    };
    nest.nesting.record(ChildStep { turn: cx.turn, tool: spec.name.clone(), step });
    result
}

async fn run_child(spec: &AgentToolSpec, args: Json, cx: &ToolContext, nest: &ToolNest) -> Step {
    let depth = nest.nesting.depth() + 1;
    let max = nest.nesting.max_depth();
    if depth > max {
        return named(
            Step::failed(Fail::new(
                Reason::MaxDepthExceeded,
                format!("Nesting depth limit exceeded: agent tool {} would run at depth {depth} > {max}", spec.name),
            )),
            &spec.name,
        );
    }
    let arguments = match args {
        Json::Object(m) => m,
        Json::Null => serde_json::Map::new(),
        other => {
            return named(
                Step::failed(Fail::new(Reason::ValidationError, format!("arguments must be a map, got {other}"))),
                &spec.name,
            );
        }
    };
    let agent = match (spec.build)(arguments) {
        Ok(a) => a,
        Err(e) => {
            let reason = if e.option == "prompt" { Reason::TemplateError } else { Reason::ValidationError };
            return named(Step::failed(Fail::new(reason, e.to_string())), &spec.name);
        }
    };
    let llm = match resolve_llm(&agent.config.compose.llm, &spec.bound, nest) {
        Ok(l) => l,
        Err(f) => return named(Step::failed(f), &spec.name),
    };
    let nesting = nest.nesting.child(
        nest.cancel.clone(),
        nest.cancel.deadline().map_or(cx.deadline, |d| d.min(cx.deadline)),
        agent.config.max_cost_usd,
        agent.config.name.clone(),
    );
    let label = agent.config.name.clone().unwrap_or_else(|| spec.name.clone());
    let observer: Option<Arc<dyn Observer>> = nest
        .observer
        .clone()
        .map(|parent| Arc::new(NestedObserver { parent, agent: label.clone(), depth }) as Arc<dyn Observer>);
    let step = crate::mission::run_child(&agent, llm.as_ref(), observer, nesting).await;
    named(step, &label)
}

fn named(mut step: Step, name: &str) -> Step {
    if step.name.is_none() {
        step.name = Some(name.to_string());
    }
    step
}
