//! Chaining: one agent's [`Step`] becomes the next agent's context.
//!
//! A successful step hands over its return map as the context and its agent's signature
//! as the context signature (so the next prompt shows the types). A failed step is never
//! chained onto: the next stage ends at once with `chained_failure`, and the original
//! failure is kept in `fail.details.original_failure`.
//!
//! ```
//! use ptc_subagent::{ScriptedLlm, SubAgent};
//! use serde_json::json;
//!
//! let find = SubAgent::builder("Find urgent emails").signature("{count :int, ids [:int]}").build()?;
//! let draft = SubAgent::builder("Draft replies to {{count}} emails").signature("{drafts [:string]}");
//! let llm = ScriptedLlm::texts([
//!     "```clojure\n(return {:count 2 :ids [4 9]})\n```",
//!     "```clojure\n(return {:drafts (map #(str \"Re: \" %) data/ids)})\n```",
//! ]);
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let step = runtime.block_on(find.then(draft).run(&llm));
//! assert_eq!(step.return_value, Some(json!({"drafts": ["Re: 4", "Re: 9"]})));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use serde_json::Value as Json;

use crate::builder::SubAgentBuilder;
use crate::config::SubAgent;
use crate::llm::Llm;
use crate::reason::Reason;
use crate::step::{Fail, Step};

impl Step {
    /// This step as the next agent's context: its return map, or `chained_failure` (the
    /// original failure in `details.original_failure`) when the step failed.
    pub fn chain_context(&self) -> Result<serde_json::Map<String, Json>, Fail> {
        if let Some(original) = &self.fail {
            let mut fail = Fail::new(Reason::ChainedFailure, format!("Upstream agent failed: {}", original.reason));
            fail.details = Some(serde_json::json!({ "original_failure": original }));
            return Err(fail);
        }
        match &self.return_value {
            Some(Json::Object(m)) => Ok(m.clone()),
            Some(other) => Err(Fail::new(
                Reason::ValidationError,
                format!(
                    "the upstream agent returned {}, but only a map can become the next agent's context",
                    kind(other)
                ),
            )),
            None => Ok(serde_json::Map::new()),
        }
    }
}

fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "nil",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "a map",
    }
}

/// What [`SubAgent::then`] does.
pub(crate) fn then(agent: &SubAgent, next: SubAgentBuilder) -> Chain {
    Chain { first: agent.clone(), rest: vec![next] }
}

/// Agents run one after the other, each on the previous one's return.
#[derive(Debug, Clone)]
pub struct Chain {
    first: SubAgent,
    rest: Vec<SubAgentBuilder>,
}

impl Chain {
    /// Adds a stage.
    pub fn then(mut self, next: SubAgentBuilder) -> Chain {
        self.rest.push(next);
        self
    }

    /// Runs every stage and returns the last step (a `chained_failure` when an earlier
    /// stage failed).
    pub async fn run(&self, llm: &dyn Llm) -> Step {
        self.run_all(llm).await.pop().unwrap_or_else(|| Step::failed(Fail::new(Reason::ChainedFailure, "empty chain")))
    }

    /// Runs the stages and returns every step, in order; it stops after the first failure
    /// (whose `chained_failure` successor is the last step).
    pub async fn run_all(&self, llm: &dyn Llm) -> Vec<Step> {
        let mut steps = vec![self.first.run(llm).await];
        let mut signature = self.first.signature().map(str::to_string);
        for next in &self.rest {
            let Some(previous) = steps.last() else { break };
            let failed = !previous.is_ok();
            let next_signature = next.signature.clone();
            let step = next.clone().run_after(previous, signature.as_deref(), llm).await;
            steps.push(step);
            if failed {
                break;
            }
            signature = next_signature;
        }
        steps
    }
}
