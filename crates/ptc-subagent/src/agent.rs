//! [`SubAgent`]'s public front: every public method of an agent is here, and each
//! delegates to the module that does the work (`mission.rs` runs, `chat.rs`,
//! `chain.rs`, `compiled.rs`, `dry_run.rs`, `request.rs` for what the model is sent).
//! The struct and its checked configuration are in `config.rs`; the builder in
//! `builder.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ptc_lisp_eval::{Cancel, Limits};
use serde_json::Value as Json;

use crate::builder::SubAgentBuilder;
use crate::chain::Chain;
use crate::chat::ChatReply;
use crate::compiled::CompiledAgent;
use crate::config::SubAgent;
use crate::dry_run::DryRun;
use crate::llm::{Llm, LlmRequest, Message, ToolSchema};
use crate::observe::Observer;
use crate::step::Step;

impl SubAgent {
    /// Starts a builder for the mission `prompt` (`{{placeholders}}` are filled from the
    /// context).
    pub fn builder(prompt: impl Into<String>) -> SubAgentBuilder {
        SubAgentBuilder::new(prompt)
    }

    /// The agent's name.
    pub fn name(&self) -> Option<&str> {
        self.config.name.as_deref()
    }

    /// The agent's description (what it does, when used as a tool).
    pub fn description(&self) -> Option<&str> {
        self.config.description.as_deref()
    }

    /// The signature as written.
    pub fn signature(&self) -> Option<&str> {
        self.config.signature_text.as_deref()
    }

    /// Work turns.
    pub fn max_turns(&self) -> u32 {
        self.config.max_turns
    }

    /// The time limit of the whole mission (`None`: unbounded).
    pub fn mission_timeout(&self) -> Option<Duration> {
        self.config.mission_timeout
    }

    /// The sandbox limits each of the agent's programs runs under (with the builder's
    /// `timeout`, `max_tool_calls` and `max_print_length` in them).
    pub fn limits(&self) -> &Limits {
        &self.config.limits
    }

    /// Runs the mission against `llm` and returns its [`Step`]. Never panics: every
    /// failure (model errors, limits, `(fail ...)`) is a step with `status: error`.
    ///
    /// Needs a Tokio runtime (async tools run as its tasks; retries and the mission
    /// timeout use its timer). Programs run on the agent's evaluation pool, awaited
    /// without holding a runtime thread.
    pub async fn run(&self, llm: &dyn Llm) -> Step {
        crate::mission::run(self, llm, None, None).await
    }

    /// Like [`run`](Self::run), stopped by `cancel`: once it is cancelled no tool call or
    /// model request starts, the running program stops at its next check (within
    /// milliseconds), a waiting tool call returns at once, and the step fails with reason
    /// `cancelled`. Dropping the future of any `run*` method cancels the mission the same
    /// way (the step is then never seen).
    ///
    /// ```
    /// # async fn demo(agent: ptc_subagent::SubAgent, llm: &dyn ptc_subagent::Llm) {
    /// let cancel = ptc_lisp_eval::Cancel::new();
    /// let stop = cancel.clone(); // e.g. moved into a Ctrl-C handler
    /// # stop.cancel();
    /// let step = agent.run_with_cancel(llm, &cancel).await;
    /// # assert_eq!(step.fail.map(|f| f.reason).as_deref(), Some("cancelled"));
    /// # }
    /// ```
    pub async fn run_with_cancel(&self, llm: &dyn Llm, cancel: &Cancel) -> Step {
        crate::mission::run(self, llm, None, Some(cancel)).await
    }

    /// Like [`run`](Self::run), reporting every [`Event`](crate::Event) to `observer` as it happens.
    pub async fn run_observed(&self, llm: &dyn Llm, observer: Option<Arc<dyn Observer>>) -> Step {
        crate::mission::run(self, llm, observer, None).await
    }

    /// [`run_observed`](Self::run_observed) and [`run_with_cancel`](Self::run_with_cancel)
    /// at once: a service reporting progress of a mission its caller may cancel.
    pub async fn run_observed_with_cancel(
        &self,
        llm: &dyn Llm,
        observer: Option<Arc<dyn Observer>>,
        cancel: &Cancel,
    ) -> Step {
        crate::mission::run(self, llm, observer, Some(cancel)).await
    }

    /// Sends `user_message` after `history` and runs until the model answers. In the
    /// text modes the signature is set aside and the answer is plain text; in the
    /// PTC-Lisp modes the signature holds and `memory` (from the previous reply) is
    /// available to programs.
    pub async fn chat(
        &self,
        llm: &dyn Llm,
        user_message: &str,
        history: Vec<Message>,
        memory: BTreeMap<String, Json>,
        observer: Option<Arc<dyn Observer>>,
    ) -> ChatReply {
        crate::chat::chat(self, llm, user_message, history, memory, observer).await
    }

    /// A chain starting with this agent: each next stage is built with the previous
    /// stage's return as its context (see the module documentation).
    pub fn then(&self, next: SubAgentBuilder) -> Chain {
        crate::chain::then(self, next)
    }

    /// Derives the agent's program with one model turn over its own context (the
    /// sample). The failed step when no valid program came back.
    pub async fn compile(&self, llm: &dyn Llm) -> Result<CompiledAgent, Step> {
        crate::compiled::compile(self, llm).await
    }

    /// Checks the mission against `llm` without calling it, and shows the first request.
    pub fn dry_run(&self, llm: &dyn Llm) -> DryRun {
        crate::dry_run::dry_run(self, llm)
    }

    /// The system prompt the model gets.
    pub fn system_prompt(&self) -> String {
        crate::request::system_prompt(self)
    }

    /// The first user message: tools and data inventory, expected output, mission (with
    /// history compression: the mission and `Turns left: N`).
    pub fn first_user_message(&self) -> String {
        crate::request::first_user_message(self)
    }

    /// The tools offered natively: none (lisp mode), `lisp_eval` alone (lisp-tool), the
    /// natively exposed tools (text), both (combined).
    pub fn native_tools(&self) -> Vec<ToolSchema> {
        crate::request::native_tools(self)
    }

    /// The first request the model would receive (for previews and tests).
    pub fn first_request(&self) -> LlmRequest {
        crate::request::first_request(self)
    }
}
