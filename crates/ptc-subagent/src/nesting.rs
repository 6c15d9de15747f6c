//! What a mission tree shares, and the link a tool call has back to its mission: depth
//! and the tree's turn budget (`Nesting`), the composition options an agent carries
//! (`ComposeOptions`: its own model, the registry, the limits of the tree), and the
//! channel over which a nested agent or LLM tool asks the calling mission's model
//! (`CallerLlm`, answered by [`serve_while`]).
//!
//! This module sits below tools, execution and the loop (each of them names `ToolNest`);
//! composition proper (an agent offered as a tool) is `compose.rs`, above the loop.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Instant;

use ptc_lisp_eval::Cancel;
use tokio::sync::{mpsc, oneshot};

use crate::cost::{CostScope, PriceTable};
use crate::llm::{BoxFuture, Llm, LlmError, LlmErrorKind, LlmRequest, LlmResponse};
use crate::observe::Observer;
use crate::reason::Reason;
use crate::step::{ChildStep, Fail};

/// Where a mission collects its `warn_only` warnings (`Step.warnings`).
pub(crate) type Warnings = Arc<Mutex<Vec<String>>>;

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
    cost: CostScope,
}

impl Nesting {
    /// The root of a tree: the root agent's composition options, its own turns
    /// (`max_turns + retry_turns`, the least default budget), its cost budget, name and
    /// prices.
    pub(crate) fn root(
        options: &ComposeOptions,
        own_turns: u32,
        max_cost_usd: Option<f64>,
        agent: Option<String>,
        prices: Arc<PriceTable>,
    ) -> Self {
        let turn_budget = options.turn_budget.unwrap_or(DEFAULT_TURN_BUDGET.max(own_turns));
        Nesting {
            depth: 0,
            shared: Arc::new(Shared {
                max_depth: options.max_depth,
                turn_budget,
                turns_left: AtomicI64::new(i64::from(turn_budget)),
                registry: options.registry.clone(),
            }),
            children: Arc::new(Mutex::new(Vec::new())),
            parent_cancel: None,
            inherited_deadline: None,
            cost: CostScope::root(max_cost_usd, agent, prices),
        }
    }

    /// The place of a child one level below this mission: it shares the tree, is
    /// cancelled with `parent_cancel`, ends by `deadline`, and has its own cost budget
    /// chained to this mission's.
    pub(crate) fn child(
        &self,
        parent_cancel: Cancel,
        deadline: Instant,
        max_cost_usd: Option<f64>,
        agent: Option<String>,
    ) -> Self {
        Nesting {
            depth: self.depth + 1,
            shared: self.shared.clone(),
            children: Arc::new(Mutex::new(Vec::new())),
            parent_cancel: Some(parent_cancel),
            inherited_deadline: Some(deadline),
            cost: self.cost.child(max_cost_usd, agent),
        }
    }

    /// This mission's depth (the root is 0).
    pub(crate) fn depth(&self) -> u32 {
        self.depth
    }

    /// How deep the tree may go.
    pub(crate) fn max_depth(&self) -> u32 {
        self.shared.max_depth
    }

    /// The mission's cost accounting (its budget and its ancestors').
    pub(crate) fn cost(&self) -> &CostScope {
        &self.cost
    }

    /// Takes one turn from the tree's budget, or says it is spent.
    pub(crate) fn take_turn(&self) -> Result<(), Fail> {
        let before = self.shared.turns_left.fetch_sub(1, Ordering::SeqCst);
        if before <= 0 {
            return Err(Fail::new(
                Reason::TurnBudgetExhausted,
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
                Reason::MaxDepthExceeded,
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
                Reason::ModelNotFound,
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
    pub(crate) warnings: Warnings,
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
