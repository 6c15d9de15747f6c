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

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Instant;

use ptc_lisp_eval::{Cancel, ErrorKind, Outcome, RunResult};
use serde_json::Value as Json;
use tokio::sync::{mpsc, oneshot};

use crate::agent::{ConfigError, SubAgent, SubAgentBuilder};
use crate::exec::{PreparedTool, Toolbox};
use crate::llm::{BoxFuture, Llm, LlmError, LlmErrorKind, LlmRequest, LlmResponse};
use crate::observe::{Event, Observer};
use crate::step::{ChildStep, Fail, Step};
use crate::tool::{CatalogEntry, Tool, ToolContext, ToolError};

/// Default nesting depth: root → child → grandchild → great-grandchild.
pub const DEFAULT_MAX_DEPTH: u32 = 3;
/// Default turn budget of a whole mission tree.
pub const DEFAULT_TURN_BUDGET: u32 = 20;

/// Models by alias, for agents and LLM tools that name one (`llm_alias("haiku")`).
pub type LlmRegistry = BTreeMap<String, Arc<dyn Llm>>;

/// Which model a child agent or an LLM tool asks.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum LlmRef {
    /// The model of the agent whose program made the call (the default).
    #[default]
    Caller,
    /// A name looked up in the mission's [`LlmRegistry`]; a missing one is `model_not_found`.
    Alias(String),
    /// This model.
    Explicit(Arc<dyn Llm>),
}

impl fmt::Debug for LlmRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LlmRef::Caller => f.write_str("Caller"),
            LlmRef::Alias(a) => write!(f, "Alias({a:?})"),
            LlmRef::Explicit(l) => write!(f, "Explicit({})", l.name()),
        }
    }
}

/// The composition options of an agent (a builder field, kept in its config).
#[derive(Clone, Debug)]
pub(crate) struct ComposeOptions {
    pub(crate) llm: LlmRef,
    pub(crate) registry: Arc<RegistryMap>,
    pub(crate) max_depth: u32,
    /// `None`: the default, 20 turns or the root's own turns if it has more.
    pub(crate) turn_budget: Option<u32>,
    /// `tools: {"NAME": :self}`: name and description.
    pub(crate) self_tool: Option<(String, String)>,
    /// Tools from another host (an MCP aggregator), for this agent only.
    pub(crate) program_tools: Option<crate::program_tools::Extra>,
}

/// A registry with a `Debug` that lists names only.
#[derive(Clone, Default)]
pub(crate) struct RegistryMap(pub(crate) LlmRegistry);

impl fmt::Debug for RegistryMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

impl Default for ComposeOptions {
    fn default() -> Self {
        ComposeOptions {
            llm: LlmRef::Caller,
            registry: Arc::new(RegistryMap::default()),
            max_depth: DEFAULT_MAX_DEPTH,
            turn_budget: None,
            self_tool: None,
            program_tools: None,
        }
    }
}

impl SubAgentBuilder {
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
        let spec = Arc::new(AgentToolSpec { name: name.clone(), builder: self, bound });
        Ok(agent_tool(name, spec).signature(signature).description(description))
    }
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
pub(crate) fn add_self_tool(builder: &SubAgentBuilder, tools: &mut Toolbox) -> Result<(), ConfigError> {
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
    if !valid || crate::agent::RESERVED_TOOL_NAMES.contains(&name.as_str()) {
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
        builder: builder.clone().context(serde_json::Map::new()),
        bound: LlmRef::Caller,
    });
    let tool = agent_tool(name.clone(), spec).signature(signature).description(description);
    let inputs = Some(ptc_signature::Type::Object { fields: sig.inputs, closed: false });
    let expose = tool.expose.unwrap_or(builder.mode.default_expose());
    tools.insert(name, PreparedTool { tool, inputs, expose });
    Ok(())
}

/// What an agent tool needs at call time.
struct AgentToolSpec {
    name: String,
    builder: SubAgentBuilder,
    bound: LlmRef,
}

/// State a mission tree shares.
struct Shared {
    max_depth: u32,
    turn_budget: u32,
    turns_left: AtomicI64,
    registry: Arc<RegistryMap>,
}

/// Where a mission sits in its tree.
#[derive(Clone)]
pub(crate) struct Nesting {
    depth: u32,
    shared: Arc<Shared>,
    children: Arc<Mutex<Vec<ChildStep>>>,
    /// The parent's cancel handle (children only).
    parent_cancel: Option<Cancel>,
    /// The latest a child may end: the parent's mission deadline and its tool call's.
    inherited_deadline: Option<Instant>,
    /// This mission's cost accounting, chained to its ancestors' budgets.
    cost: crate::cost::CostScope,
}

impl Nesting {
    /// The root of a tree, with the root agent's budget, depth and registry.
    pub(crate) fn root(agent: &SubAgent) -> Self {
        let c = &agent.config.compose;
        let own = agent.config.max_turns.saturating_add(agent.config.retry_turns);
        let turn_budget = c.turn_budget.unwrap_or(DEFAULT_TURN_BUDGET.max(own));
        Nesting {
            depth: 0,
            shared: Arc::new(Shared {
                max_depth: c.max_depth,
                turn_budget,
                turns_left: AtomicI64::new(i64::from(turn_budget)),
                registry: c.registry.clone(),
            }),
            children: Arc::new(Mutex::new(Vec::new())),
            parent_cancel: None,
            inherited_deadline: None,
            cost: crate::cost::CostScope::root(
                agent.config.max_cost_usd,
                agent.config.name.clone(),
                agent.config.prices.clone(),
            ),
        }
    }

    /// The mission's cost accounting (its budget and its ancestors').
    pub(crate) fn cost(&self) -> &crate::cost::CostScope {
        &self.cost
    }

    /// Takes one turn from the tree's budget, or says it is spent.
    pub(crate) fn take_turn(&self) -> Result<(), Fail> {
        let before = self.shared.turns_left.fetch_sub(1, Ordering::SeqCst);
        if before <= 0 {
            return Err(Fail::new(
                "turn_budget_exhausted",
                format!(
                    "The mission tree used its whole turn budget of {} turn(s) (parent and nested agents together)",
                    self.shared.turn_budget
                ),
            ));
        }
        Ok(())
    }

    /// The mission's deadline: its own, capped by what it inherited.
    pub(crate) fn deadline(&self, own: Option<Instant>) -> Option<Instant> {
        match (own, self.inherited_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The mission's cancel handle (a child of the parent program's, for children).
    pub(crate) fn cancel(&self, deadline: Option<Instant>) -> Cancel {
        let base = self.parent_cancel.clone().unwrap_or_default();
        match deadline {
            Some(d) => base.with_deadline(d),
            None => base.child(),
        }
    }

    /// Admits a single-turn nested call (an LLM tool) named `tool`: it runs at this
    /// mission's depth + 1 and takes one turn of the tree's budget, so the tree's limits
    /// bind it exactly as they bind a child agent.
    pub(crate) fn admit_nested_turn(&self, tool: &str) -> Result<u32, Fail> {
        let depth = self.depth + 1;
        let max = self.shared.max_depth;
        if depth > max {
            return Err(Fail::new(
                "max_depth_exceeded",
                format!("Nesting depth limit exceeded: LLM tool {tool} would run at depth {depth} > {max}"),
            ));
        }
        self.take_turn()?;
        Ok(depth)
    }

    /// The child runs made by this mission, in the order they finished.
    pub(crate) fn take_children(&self) -> Vec<ChildStep> {
        self.children.lock().map(|mut c| std::mem::take(&mut *c)).unwrap_or_default()
    }

    /// The child runs so far, without taking them (checkpoints).
    pub(crate) fn children_so_far(&self) -> Vec<ChildStep> {
        self.children.lock().map(|c| c.clone()).unwrap_or_default()
    }

    pub(crate) fn record(&self, child: ChildStep) {
        if let Ok(mut c) = self.children.lock() {
            c.push(child);
        }
    }

    /// The registry entry for `alias`.
    fn lookup(&self, alias: &str) -> Result<Arc<dyn Llm>, Fail> {
        self.shared.registry.0.get(alias).cloned().ok_or_else(|| {
            let known: Vec<&str> = self.shared.registry.0.keys().map(String::as_str).collect();
            Fail::new(
                "model_not_found",
                format!(
                    "no model named {alias:?} in the LLM registry (known: {})",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                ),
            )
        })
    }
}

/// What a tool function running inside a mission can reach (the `ToolContext`'s link
/// back to the mission tree).
#[derive(Clone)]
pub(crate) struct ToolNest {
    pub(crate) nesting: Nesting,
    pub(crate) caller: CallerLlm,
    pub(crate) cancel: Cancel,
    pub(crate) observer: Option<Arc<dyn Observer>>,
    /// The mission's runtime, where nested missions and model requests run.
    pub(crate) runtime: Option<tokio::runtime::Handle>,
    /// The mission's `warn_only` validation warnings (`Step.warnings`).
    pub(crate) warnings: crate::validation::Warnings,
}

impl fmt::Debug for ToolNest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolNest").field("depth", &self.nesting.depth).finish_non_exhaustive()
    }
}

/// One model request a nested agent or LLM tool asks the calling mission to make.
pub(crate) struct Ask {
    request: LlmRequest,
    reply: oneshot::Sender<Result<LlmResponse, LlmError>>,
}

/// The caller's model, reached over the channel its mission serves.
#[derive(Clone)]
pub(crate) struct CallerLlm {
    tx: mpsc::UnboundedSender<Ask>,
    name: String,
    /// The caller's model's [`Llm::retry_waits`].
    waits: bool,
}

impl Llm for CallerLlm {
    fn complete<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            if self.tx.send(Ask { request: request.clone(), reply }).is_err() {
                return Err(LlmError::new(LlmErrorKind::Unknown, "the calling mission has ended"));
            }
            answer.await.unwrap_or_else(|_| Err(LlmError::new(LlmErrorKind::Unknown, "the calling mission has ended")))
        })
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn retry_waits(&self) -> bool {
        self.waits
    }
}

/// A channel for one program run: the sender goes into the tools' context, the receiver
/// to [`serve_while`].
pub(crate) fn caller_channel(llm: &dyn Llm) -> (CallerLlm, mpsc::UnboundedReceiver<Ask>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (CallerLlm { tx, name: llm.name(), waits: llm.retry_waits() }, rx)
}

/// Waits for `work` (a program on the engine's pool, or a tool call), answering the model requests of
/// nested agents with `llm` meanwhile — several at once when the program runs children
/// in parallel (`pmap`). Requests reach `llm` in the order they arrive.
pub(crate) async fn serve_while<T>(
    llm: &dyn Llm,
    mut rx: mpsc::UnboundedReceiver<Ask>,
    work: impl Future<Output = T>,
) -> T {
    let mut work = std::pin::pin!(work);
    type Answering<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
    let mut answering: Vec<Answering<'_>> = Vec::new();
    std::future::poll_fn(|cx| {
        while let Poll::Ready(Some(ask)) = rx.poll_recv(cx) {
            answering.push(Box::pin(async move {
                let answer = crate::llm::complete_contained(llm, &ask.request).await;
                let _ = ask.reply.send(answer);
            }));
        }
        answering.retain_mut(|a| a.as_mut().poll(cx).is_pending());
        // requests still unanswered when the program ends are dropped: their askers are
        // gone with it (or abandoned at the program's deadline)
        work.as_mut().poll(cx)
    })
    .await
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

/// Resolves the model of a child or an LLM tool: `own` > `bound` > the caller's.
pub(crate) fn resolve_llm(own: &LlmRef, bound: &LlmRef, nest: &ToolNest) -> Result<Arc<dyn Llm>, Fail> {
    for r in [own, bound] {
        match r {
            LlmRef::Explicit(l) => return Ok(l.clone()),
            LlmRef::Alias(a) => return nest.nesting.lookup(a),
            LlmRef::Caller => {}
        }
    }
    Ok(Arc::new(nest.caller.clone()))
}

/// The tree link of a tool call, or the error for a tool used outside a mission.
pub(crate) fn tool_nest<'a>(cx: &'a ToolContext, name: &str) -> Result<&'a ToolNest, ToolError> {
    cx.nest.as_ref().ok_or_else(|| ToolError::new(format!("tool/{name} runs only inside an agent mission")))
}

/// An agent tool: the child mission runs as a task on the parent mission's runtime while
/// the calling program waits (no thread is held for it); aborting the task at the
/// program's deadline or on cancel drops the child mission, which cancels it.
fn agent_tool(name: String, spec: Arc<AgentToolSpec>) -> Tool {
    Tool::new_async(name, move |args, cx| {
        let spec = spec.clone();
        async move { run_agent_tool(&spec, args, &cx).await }
    })
}

async fn run_agent_tool(spec: &AgentToolSpec, args: Json, cx: &ToolContext) -> Result<Json, ToolError> {
    let nest = tool_nest(cx, &spec.name)?;
    let step = run_child(spec, args, cx, nest).await;
    let result = match (&step.return_value, &step.fail) {
        (_, Some(f)) => Err(ToolError::new(format!("agent tool {} failed ({}): {}", spec.name, f.reason, f.message))),
        (Some(v), None) => Ok(v.clone()),
        (None, None) => Ok(Json::Null),
    };
    nest.nesting.record(ChildStep { turn: cx.turn, tool: spec.name.clone(), step });
    result
}

async fn run_child(spec: &AgentToolSpec, args: Json, cx: &ToolContext, nest: &ToolNest) -> Step {
    let depth = nest.nesting.depth + 1;
    let max = nest.nesting.shared.max_depth;
    if depth > max {
        return named(
            Step::failed(Fail::new(
                "max_depth_exceeded",
                format!("Nesting depth limit exceeded: agent tool {} would run at depth {depth} > {max}", spec.name),
            )),
            &spec.name,
        );
    }
    let mut context = spec.builder.context.clone();
    match args {
        Json::Object(m) => context.extend(m),
        Json::Null => {}
        other => {
            return named(
                Step::failed(Fail::new("validation_error", format!("arguments must be a map, got {other}"))),
                &spec.name,
            );
        }
    }
    let agent = match spec.builder.clone().context(context).build() {
        Ok(a) => a,
        Err(e) => {
            let reason = if e.option == "prompt" { "template_error" } else { "validation_error" };
            return named(Step::failed(Fail::new(reason, e.to_string())), &spec.name);
        }
    };
    let llm = match resolve_llm(&agent.config.compose.llm, &spec.bound, nest) {
        Ok(l) => l,
        Err(f) => return named(Step::failed(f), &spec.name),
    };
    let nesting = Nesting {
        depth,
        shared: nest.nesting.shared.clone(),
        children: Arc::new(Mutex::new(Vec::new())),
        parent_cancel: Some(nest.cancel.clone()),
        inherited_deadline: Some(nest.cancel.deadline().map_or(cx.deadline, |d| d.min(cx.deadline))),
        cost: nest.nesting.cost.child(agent.config.max_cost_usd, agent.config.name.clone()),
    };
    let label = agent.config.name.clone().unwrap_or_else(|| spec.name.clone());
    let observer: Option<Arc<dyn Observer>> = nest
        .observer
        .clone()
        .map(|parent| Arc::new(NestedObserver { parent, agent: label.clone(), depth }) as Arc<dyn Observer>);
    let step = crate::mission::run_child(&agent, llm.as_ref(), observer, nesting).await;
    named(step, &label)
}

/// A program calling a `tool_catalog` entry (planning only) gets an error that says so,
/// instead of a bare "Unknown tool".
pub(crate) fn explain_catalog_call(mut outcome: Outcome, catalog: &[CatalogEntry]) -> Outcome {
    if let RunResult::Error(e) = &mut outcome.result
        && e.kind == ErrorKind::UnknownTool
        && let Some(entry) = catalog.iter().find(|c| {
            let listed = e.message.strip_prefix("Unknown tool: ").and_then(|m| m.split(". ").next()).unwrap_or("");
            let declared = [c.name.clone()];
            listed.split(", ").any(|n| ptc_lisp_eval::tool_keys::resolve_tool_name(n, &declared).is_some())
        })
    {
        e.message = format!(
            "tool/{} is in the tool catalog for planning only and cannot be called; use a callable tool, or return a plan that names it",
            entry.name
        );
    }
    outcome
}

fn named(mut step: Step, name: &str) -> Step {
    if step.name.is_none() {
        step.name = Some(name.to_string());
    }
    step
}
