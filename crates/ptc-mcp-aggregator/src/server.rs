//! The MCP server: one `lisp_eval` tool, isolated calls, a concurrency gate, cancellation.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ptc_lisp_eval::{Cancel, Engine, ErrorKind, Host, Limits, NoTools, RunInput, RunResult};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, DiscoverRequestMethod, DiscoverResult,
    Implementation, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Map, Value as Json, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::McpConfig;
use crate::context_stash::{ContextStash, PLACEHOLDER_PREFIX};
use crate::envelope::{self, CallPayload};
use crate::reason::McpReason;

/// The `serverInfo.name` of our `initialize` answer; the upstream client refuses a stdio
/// upstream that answers with it (a ptc nested in ptc).
pub(crate) const SERVER_NAME: &str = "ptc";

/// The tool description: a prompt card with a byte budget (checked by a test).
pub const LISP_EVAL_CARD: &str = include_str!("../prompts/lisp_eval.md");

/// The body of the prompt card (after its metadata header).
pub(crate) fn card_body(card: &str) -> &str {
    card.split_once("\n---\n").map(|(_, body)| body.trim()).unwrap_or(card.trim())
}

/// Where `tool/...` calls of a program go. The upstream aggregator (seed 002) implements
/// this; without upstreams programs have no tools.
pub trait ToolBackend: Send + Sync {
    /// The host that runs this program's tool calls.
    fn host(&self) -> Arc<dyn Host>;
    /// Text appended to the `lisp_eval` description (a catalog of upstream tools).
    fn catalog(&self) -> Option<String> {
        None
    }
    /// Adds backend accounting to a finished call's payload (`debug`: true in the debug
    /// profile). The default adds nothing.
    fn finish(&self, outcome: &ptc_lisp_eval::Outcome, payload: &mut CallPayload, debug: bool) {
        let _ = (outcome, payload, debug);
    }
    /// `text` with the backend's secrets replaced (for diagnostics). The default changes
    /// nothing.
    fn scrub(&self, text: &str) -> String {
        text.to_string()
    }
}

/// The backend without upstreams.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoUpstreams;

impl ToolBackend for NoUpstreams {
    fn host(&self) -> Arc<dyn Host> {
        Arc::new(NoTools)
    }
}

/// The MCP server handler.
#[derive(Clone)]
pub struct PtcServer {
    config: Arc<McpConfig>,
    engine: Engine,
    permits: Arc<Semaphore>,
    backend: Arc<dyn ToolBackend>,
    shutting_down: Arc<AtomicBool>,
    /// Calls waiting for a slot (bounded by `max_queued_calls`).
    queued: Arc<AtomicUsize>,
    /// Contexts the transports lifted out of frames, waiting for their calls.
    stash: Arc<ContextStash>,
    /// Notified when the last running program finishes after big work.
    went_idle: Arc<tokio::sync::Notify>,
    /// `lisp_task` (`--agentic`), when offered.
    agentic: Option<Arc<crate::agentic::TaskTool>>,
    /// Context and heap bytes of the calls since memory was last given back.
    heavy_bytes: Arc<AtomicU64>,
    /// Where sessions live (`--sessions`).
    session_store: Arc<dyn crate::session::SessionStore>,
    /// The call ring, `lisp_debug` and traces.
    diagnostics: Arc<crate::diagnostics::Diagnostics>,
    /// `--prelude` definitions, and the memory every run starts with.
    preludes: Arc<crate::prelude::Preludes>,
    prelude_memory: Arc<ptc_lisp_eval::Memory>,
    /// Calls answered on the stdio reader thread ([`PtcServer::eval_inline`]; for tests).
    inline_runs: Arc<AtomicU64>,
}

/// What `lisp_debug` takes, for its `args_error` feedback.
const LISP_DEBUG_ARGS: &str = "The lisp_debug arguments are invalid. Pass {\"op\": \"stats\"}, {\"op\": \"recent\", \"limit\": 20, \"since_seconds\": 600, \"errors_only\": true} or {\"op\": \"get\", \"request_id\": \"...\"}.";

/// Bytes of contexts and program heaps after which an idle server gives memory back.
const TRIM_AFTER_BYTES: u64 = 1024 * 1024;

/// Why a call got no evaluation slot.
pub(crate) enum NoSlot {
    Busy(String),
    Cancelled,
}

/// Decrements the queue count when a waiting call leaves the queue, however it leaves.
struct QueueTicket(Arc<AtomicUsize>);

impl Drop for QueueTicket {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl PtcServer {
    /// A server with the given configuration and tool backend.
    pub fn new(config: McpConfig, backend: Arc<dyn ToolBackend>) -> Self {
        let permits = Arc::new(Semaphore::new(config.max_concurrent_calls.max(1)));
        let engine = Engine::new(config.limits.clone());
        let stash = Arc::new(ContextStash::new(config.max_concurrent_calls.max(1) + config.max_queued_calls + 8));
        let scrub = {
            let backend = backend.clone();
            let tokens: Vec<String> =
                config.http_auth_token.iter().chain(&config.http_extra_auth_tokens).cloned().collect();
            Arc::new(move |text: &str| {
                let mut out = backend.scrub(text);
                for t in &tokens {
                    out = out.replace(t.as_str(), "[REDACTED]");
                }
                out
            })
        };
        let diagnostics = Arc::new(crate::diagnostics::Diagnostics::new(config.diagnostics.clone(), scrub));
        PtcServer {
            diagnostics,
            stash,
            went_idle: Arc::new(tokio::sync::Notify::new()),
            heavy_bytes: Arc::new(AtomicU64::new(0)),
            config: Arc::new(config),
            engine,
            permits,
            backend,
            shutting_down: Arc::new(AtomicBool::new(false)),
            queued: Arc::new(AtomicUsize::new(0)),
            agentic: None,
            session_store: Arc::new(crate::session::InProcessStore::new()),
            preludes: Arc::new(crate::prelude::Preludes::none()),
            prelude_memory: Arc::new(ptc_lisp_eval::Memory::default()),
            inline_runs: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Calls answered on the thread that read them (the stdio reader, an HTTP connection
    /// thread) so far (for tests).
    #[cfg(test)]
    pub(crate) fn inline_runs(&self) -> u64 {
        self.inline_runs.load(Ordering::Relaxed)
    }

    /// The same server with `preludes` loaded into every `lisp_eval`, session and
    /// `lisp_task` planner program.
    pub fn with_preludes(mut self, preludes: crate::prelude::Preludes) -> Self {
        self.prelude_memory = Arc::new(preludes.globals());
        self.preludes = Arc::new(preludes);
        if let Some(task) = self.agentic.take() {
            self.agentic = Some(Arc::new((*task).clone().with_preludes(self.preludes.clone())));
        }
        self
    }

    pub(crate) fn preludes(&self) -> &Arc<crate::prelude::Preludes> {
        &self.preludes
    }

    /// The host programs run against: the backend's, with discovery of every prelude.
    pub(crate) fn host(&self) -> Arc<dyn Host> {
        self.host_with(self.preludes.clone())
    }

    /// The backend's host, with discovery (`dir`, `ns-publics`, `all-ns`) of `preludes`
    /// (a session's own).
    pub(crate) fn host_with(&self, preludes: Arc<crate::prelude::Preludes>) -> Arc<dyn Host> {
        let inner = self.backend.host();
        if preludes.is_empty() {
            return inner;
        }
        Arc::new(crate::prelude::PreludeHost { inner, preludes })
    }

    /// The same server keeping its sessions in `store` instead of this process's memory.
    pub fn with_session_store(mut self, store: Arc<dyn crate::session::SessionStore>) -> Self {
        self.session_store = store;
        self
    }

    pub(crate) fn session_store(&self) -> Arc<dyn crate::session::SessionStore> {
        self.session_store.clone()
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    pub(crate) fn backend(&self) -> &Arc<dyn ToolBackend> {
        &self.backend
    }

    /// Tells the idle watcher when the last running program finished.
    pub(crate) fn notify_if_idle(&self) {
        if self.calls_in_flight() == 0 {
            self.went_idle.notify_one();
        }
    }

    /// Also offers `lisp_task` (agentic mode); its planner gets the server's preludes
    /// (whichever of this and [`with_preludes`](Self::with_preludes) comes first).
    pub fn with_agentic(mut self, task: crate::agentic::TaskTool) -> Self {
        self.agentic = Some(Arc::new(task.with_preludes(self.preludes.clone())));
        self
    }

    /// A `lisp_task` call: the same slot, queue and shutdown rules as `lisp_eval`.
    pub async fn call_lisp_task(
        &self,
        args: Option<Map<String, Json>>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> CallPayload {
        self.call_lisp_task_traced(args, cancel).await.0
    }

    /// [`call_lisp_task`](Self::call_lisp_task) with the planner previews for the trace
    /// (`--agentic-trace-prompts`).
    async fn call_lisp_task_traced(
        &self,
        args: Option<Map<String, Json>>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> (CallPayload, Option<Json>) {
        let profile = self.config.response_profile;
        let Some(task) = self.agentic.clone() else {
            return (
                envelope::error(McpReason::UnknownTool, "lisp_task is offered only with --agentic", None, &[], profile),
                None,
            );
        };
        if self.shutting_down.load(Ordering::SeqCst) {
            return (envelope::error(McpReason::ShuttingDown, "the server is shutting down", None, &[], profile), None);
        }
        let permit = match self.acquire_slot(&cancel).await {
            Ok(p) => p,
            Err(NoSlot::Busy(msg)) => return (envelope::error(McpReason::Busy, &msg, None, &[], profile), None),
            Err(NoSlot::Cancelled) => {
                let p = envelope::error(
                    McpReason::Eval(ErrorKind::Cancelled),
                    "the call was cancelled while it waited for a slot",
                    None,
                    &[],
                    profile,
                );
                return (p, None);
            }
        };
        let answer = tokio::select! {
            p = task.call_traced(args, profile) => p,
            _ = cancel.cancelled() => (envelope::error(McpReason::Eval(ErrorKind::Cancelled), "the client cancelled the task", None, &[], profile), None),
        };
        drop(permit);
        if self.calls_in_flight() == 0 {
            self.went_idle.notify_one();
        }
        answer
    }

    /// The configuration the server runs with.
    pub fn config(&self) -> &McpConfig {
        &self.config
    }

    /// Where the transports keep the contexts they lift out of frames.
    pub(crate) fn stash(&self) -> &ContextStash {
        &self.stash
    }

    /// The same, shared.
    pub(crate) fn stash_handle(&self) -> Arc<ContextStash> {
        self.stash.clone()
    }

    /// Waits until the server goes idle after big work: the last running program
    /// finished, and the calls since the previous wait loaded or built at least 1 MiB
    /// (at once when that happened since the previous wait). The binary returns freed
    /// memory to the system then.
    pub async fn went_idle(&self) {
        self.went_idle.notified().await;
    }

    /// Programs running right now.
    pub fn calls_in_flight(&self) -> usize {
        self.config.max_concurrent_calls.max(1).saturating_sub(self.permits.available_permits())
    }

    /// Waits until no program runs (or `grace` passes). Call after [`Self::begin_shutdown`]:
    /// queued calls then get `shutting_down` instead of a slot.
    pub async fn drain(&self, grace: Duration) {
        let all = u32::try_from(self.config.max_concurrent_calls.max(1)).unwrap_or(u32::MAX);
        match tokio::time::timeout(grace, self.permits.acquire_many(all)).await {
            Ok(Ok(permits)) => drop(permits),
            _ => tracing::warn!(in_flight = self.calls_in_flight(), "drain grace elapsed with calls still running"),
        }
    }

    /// A slot for one program: at once when one is free, else after waiting in a bounded
    /// queue for at most `queue_timeout`; `busy` when the queue is full or the wait ends.
    pub(crate) async fn acquire_slot(
        &self,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<OwnedSemaphorePermit, NoSlot> {
        if let Ok(p) = self.permits.clone().try_acquire_owned() {
            return Ok(p);
        }
        let cap = self.config.max_concurrent_calls;
        let ahead = self.queued.fetch_add(1, Ordering::SeqCst);
        let _ticket = QueueTicket(self.queued.clone());
        if ahead >= self.config.max_queued_calls || self.config.queue_timeout.is_zero() {
            return Err(NoSlot::Busy(format!(
                "the server is at its concurrent-call cap ({cap}) and its queue is full ({} waiting)",
                self.config.max_queued_calls
            )));
        }
        tokio::select! {
            r = tokio::time::timeout(self.config.queue_timeout, self.permits.clone().acquire_owned()) => match r {
                Ok(Ok(p)) => Ok(p),
                _ => Err(NoSlot::Busy(format!(
                    "the server is at its concurrent-call cap ({cap}); no slot freed within {} ms",
                    self.config.queue_timeout.as_millis()
                ))),
            },
            _ = cancel.cancelled() => Err(NoSlot::Cancelled),
        }
    }

    /// New calls get `shutting_down` from now on.
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    /// True once [`Self::begin_shutdown`] was called.
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// The `lisp_eval` tool definition.
    pub fn lisp_eval_tool(&self) -> Tool {
        let schema = json!({
            "type": "object",
            "properties": {
                "program": {"type": "string", "description": "PTC-Lisp source code. Must be non-empty after trimming whitespace."},
                "context": {"type": "object", "additionalProperties": true, "description": "Data for the program: each key becomes data/<key>."},
                "output_schema": {"type": "object", "description": "Optional JSON Schema (type, properties, required, items) the result must match."}
            },
            "required": ["program"],
            "additionalProperties": false
        });
        let Json::Object(schema) = schema else { unreachable_schema() };
        let mut description = card_body(LISP_EVAL_CARD).replace("{{limits}}", &self.engine.limits().summary());
        if self.config.response_profile != crate::config::ResponseProfile::Debug {
            description.push('\n');
            description.push_str(&self.config.preview.describe());
        }
        if let Some(c) = self.backend.catalog() {
            description.push_str("\n\n");
            description.push_str(&c);
        }
        let mut tool = Tool::new("lisp_eval", description, Arc::new(schema)).with_annotations(
            ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false),
        );
        if let Some(Json::Object(out)) = envelope::output_schema(self.config.response_profile) {
            tool.output_schema = Some(Arc::new(out));
        }
        tool
    }

    /// The tools `tools/list` shows: `lisp_eval`, or the session tools with `--sessions`.
    pub fn tools(&self) -> Vec<Tool> {
        let mut tools = if self.config.sessions.enabled { self.session_tools() } else { vec![self.lisp_eval_tool()] };
        tools.extend(self.agentic.as_ref().map(|t| t.tool()));
        if self.config.diagnostics.debug_tool {
            tools.push(self.lisp_debug_tool());
        }
        tools
    }

    /// The `lisp_debug` tool definition (`--debug-tool`).
    fn lisp_debug_tool(&self) -> Tool {
        let schema = json!({
            "type": "object",
            "properties": {
                "op": {"type": "string", "enum": ["stats", "recent", "get"]},
                "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 20},
                "since_seconds": {"type": "integer", "minimum": 1, "maximum": 86400},
                "errors_only": {"type": "boolean"},
                "request_id": {"type": "string", "maxLength": 256}
            },
            "required": ["op"],
            "additionalProperties": false
        });
        let Json::Object(schema) = schema else { unreachable_schema() };
        Tool::new("lisp_debug", card_body(crate::diagnostics::DEBUG_CARD).to_string(), Arc::new(schema))
            .with_annotations(
                ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false),
            )
    }

    /// A `lisp_debug` call.
    fn call_lisp_debug(&self, args: Option<&Map<String, Json>>) -> CallPayload {
        let profile = self.config.response_profile;
        match self.diagnostics.call(args) {
            Ok(answer) => {
                let text = answer.to_string();
                let structured = (profile != crate::config::ResponseProfile::Slim).then_some(answer);
                CallPayload { is_error: false, text, structured, reason: None }
            }
            Err(msg) => envelope::error_with_feedback(McpReason::ArgsError, &msg, LISP_DEBUG_ARGS, None, &[], profile),
        }
    }

    /// Validates arguments, evaluates, and shapes the result (no MCP types involved, so
    /// it is directly testable).
    pub async fn call_lisp_eval(
        &self,
        args: Option<Map<String, Json>>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> CallPayload {
        let profile = self.config.response_profile;
        if self.shutting_down.load(Ordering::SeqCst) {
            return envelope::error(McpReason::ShuttingDown, "the server is shutting down", None, &[], profile);
        }
        let parsed = match self.check_args(args) {
            Ok(p) => p,
            Err(msg) => return envelope::error(McpReason::ArgsError, &msg, None, &[], profile),
        };
        let permit = match self.acquire_slot(&cancel).await {
            Ok(p) => p,
            Err(NoSlot::Busy(msg)) => return envelope::error(McpReason::Busy, &msg, None, &[], profile),
            Err(NoSlot::Cancelled) => {
                return envelope::error(
                    McpReason::Eval(ErrorKind::Cancelled),
                    "the call was cancelled while it waited for a slot",
                    None,
                    &[],
                    profile,
                );
            }
        };
        if self.shutting_down.load(Ordering::SeqCst) {
            return envelope::error(McpReason::ShuttingDown, "the server is shutting down", None, &[], profile);
        }
        let run_cancel = Cancel::new();
        let context_bytes = parsed.context.as_ref().map_or(0, |t| t.len() as u64);
        // the context is parsed and the program runs on one of the engine's evaluation
        // threads; this task awaits it without holding a thread, and passes the client's
        // cancellation on to the run (no watcher task per call: spawning and aborting one
        // cost more than a small program)
        let job = self.eval_job(parsed.program, parsed.context, run_cancel.clone());
        let mut run = std::pin::pin!(self.engine.spawn(job));
        let joined = tokio::select! {
            joined = &mut run => joined,
            () = cancel.cancelled() => {
                run_cancel.cancel();
                run.await
            }
        };
        drop(permit);
        self.finish_eval(joined, parsed.output_type.as_ref(), context_bytes)
    }

    /// Runs a tiny `lisp_eval` call on this thread, which must have been started by
    /// [`Engine::spawn_eval_thread`] (the stdio reader): one handoff between threads fewer
    /// per call. The run gets at most [`INLINE_FUEL`] units of fuel and [`INLINE_TIME`],
    /// and no tool call (a tool's effects cannot be undone). When it finishes within that,
    /// its outcome is the call's, the same a pool thread would give; when it runs out of
    /// either, or calls a tool, its work is dropped (`None`) and the caller runs the
    /// program from the start on the pool, under the call's own limits. A context larger
    /// than [`INLINE_CONTEXT_BYTES`] goes to the pool at once (loading it twice would cost
    /// more than the handoff).
    fn eval_inline(
        &self,
        program: &str,
        context_text: Option<&str>,
        run_cancel: &Cancel,
    ) -> Option<Result<ptc_lisp_eval::Outcome, String>> {
        if context_text.is_some_and(|t| t.len() > INLINE_CONTEXT_BYTES) {
            return None;
        }
        let limits = self.engine.limits();
        let fuel = limits.max_fuel.map_or(INLINE_FUEL, |f| f.min(INLINE_FUEL));
        let time = limits.timeout.min(INLINE_TIME);
        let capped = Limits { max_fuel: Some(fuel), timeout: time, ..limits.clone() };
        let host = NoToolCalls { inner: self.host(), refused: AtomicBool::new(false) };
        let memory = (*self.prelude_memory).clone();
        let outcome = match run_lisp_eval(program, context_text, &capped, memory, &host, run_cancel) {
            Ok(outcome) => outcome,
            Err(msg) => return Some(Err(msg)),
        };
        if host.refused.load(Ordering::SeqCst) {
            return None;
        }
        if let RunResult::Error(e) = &outcome.result {
            let cut_short = match e.kind {
                ErrorKind::FuelExhausted => limits.max_fuel.is_none_or(|f| f > fuel),
                ErrorKind::Timeout => limits.timeout > time,
                _ => false,
            };
            if cut_short {
                return None;
            }
        }
        self.inline_runs.fetch_add(1, Ordering::Relaxed);
        Some(Ok(outcome))
    }

    /// The work of one `lisp_eval` run on its evaluation thread: load the context, then
    /// compile and run the program (an `Err` is an `args_error` about the context).
    fn eval_job(
        &self,
        program: String,
        context_text: Option<String>,
        run_cancel: Cancel,
    ) -> impl FnOnce() -> Result<ptc_lisp_eval::Outcome, String> + Send + 'static + use<> {
        let limits = self.engine.limits().clone();
        let host = self.host();
        let memory = (*self.prelude_memory).clone();
        // the context is loaded only now that the call has its slot, so at most
        // max_concurrent_calls contexts exist as values at once
        move || run_lisp_eval(&program, context_text.as_deref(), &limits, memory, host.as_ref(), &run_cancel)
    }

    /// Shapes a finished run (its slot already given back) into the call's payload, and
    /// hands memory back after big work.
    fn finish_eval(
        &self,
        joined: EvalJoin,
        output_type: Option<&ptc_signature::Type>,
        context_bytes: u64,
    ) -> CallPayload {
        let profile = self.config.response_profile;
        let heap = joined.as_ref().ok().and_then(|r| r.as_ref().ok()).map_or(0, |o| o.usage.heap_bytes);
        let heavy = self.heavy_bytes.fetch_add(context_bytes.saturating_add(heap), Ordering::SeqCst)
            + context_bytes.saturating_add(heap);
        // giving memory back walks every arena: worth it after big work, not after each
        // small call (it cost more than the call itself)
        if heavy >= TRIM_AFTER_BYTES && self.calls_in_flight() == 0 {
            self.heavy_bytes.store(0, Ordering::SeqCst);
            self.went_idle.notify_one();
        }
        let mut outcome = match joined {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(msg)) => return envelope::error(McpReason::ArgsError, &msg, None, &[], profile),
            Err(e) => return envelope::error(McpReason::Eval(e.kind), &e.message, None, &[], profile),
        };
        let mut validated = None;
        if let Some(ty) = output_type
            && ptc_signature::enforce(&mut outcome, ty)
        {
            validated = outcome.value().and_then(|v| ptc_lisp_eval::json::to_json(v).ok());
        }
        let mut payload = envelope::from_outcome(&outcome, profile, self.config.preview, validated);
        self.backend.finish(&outcome, &mut payload, profile == crate::config::ResponseProfile::Debug);
        payload
    }

    /// Starts a `tools/call` of `lisp_eval` without rmcp (the stdio fast path): when a
    /// slot is free at once, the program runs on an evaluation thread, which calls
    /// `answer` with the finished result, logged and recorded as [`ServerHandler::call_tool`]
    /// does. Everything else (sessions, shutdown, a full house that must queue) is handed
    /// back as `Err(arguments)` for rmcp's path. `answer` may also run on this thread (an
    /// `args_error`, a saturated pool). With `inline` (this thread was started by
    /// [`Engine::spawn_eval_thread`]), a tiny program is answered on this thread first
    /// (see [`PtcServer::eval_inline`]).
    pub(crate) fn start_fast_eval(
        &self,
        args: Option<Map<String, Json>>,
        run_cancel: Cancel,
        inline: bool,
        started: Instant,
        answer: impl FnOnce(CallToolResult) + Send + 'static,
    ) -> Result<(), Option<Map<String, Json>>> {
        if self.config.sessions.enabled || self.is_shutting_down() {
            return Err(args);
        }
        let Ok(permit) = self.permits.clone().try_acquire_owned() else { return Err(args) };
        if let Some(Json::String(program)) = args.as_ref().and_then(|a| a.get("program")) {
            tracing::debug!(tool = "lisp_eval", %program, "tools/call program");
        }
        let recorded =
            self.diagnostics.active().then(|| crate::diagnostics::CallStart::new("lisp_eval", args.as_ref()));
        let finish = {
            let diagnostics = self.diagnostics.clone();
            move |payload: CallPayload| {
                log_call("lisp_eval", started.elapsed(), &payload);
                if let Some(start) = recorded {
                    diagnostics.record_with(start, &payload, started.elapsed(), None);
                }
                answer(to_result(payload));
            }
        };
        let profile = self.config.response_profile;
        let parsed = match self.check_args(args) {
            Ok(p) => p,
            Err(msg) => {
                drop(permit);
                finish(envelope::error(McpReason::ArgsError, &msg, None, &[], profile));
                return Ok(());
            }
        };
        if self.is_shutting_down() {
            drop(permit);
            finish(envelope::error(McpReason::ShuttingDown, "the server is shutting down", None, &[], profile));
            return Ok(());
        }
        let context_bytes = parsed.context.as_ref().map_or(0, |t| t.len() as u64);
        let output_type = parsed.output_type;
        if inline && let Some(outcome) = self.eval_inline(&parsed.program, parsed.context.as_deref(), &run_cancel) {
            drop(permit);
            finish(self.finish_eval(Ok(outcome), output_type.as_ref(), context_bytes));
            return Ok(());
        }
        let was_cancelled = run_cancel.clone();
        let job = self.eval_job(parsed.program, parsed.context, run_cancel);
        // what the run thread needs to answer, or this thread when the pool refuses the job
        let rest = Arc::new(std::sync::Mutex::new(Some((permit, output_type, finish))));
        let server = self.clone();
        let taken = rest.clone();
        let mut spawned = std::pin::pin!(self.engine.spawn(move || {
            // inline on this run thread; a panic becomes the engine's internal error
            let joined = server.engine.batch(job);
            let Some((permit, output_type, finish)) = taken.lock().ok().and_then(|mut r| r.take()) else { return };
            if was_cancelled.is_cancelled() {
                // nothing is written for a cancelled call: its id is forgotten before its
                // slot is free, so a call that finds the slot free finds the id free too
                finish(server.finish_eval(joined, output_type.as_ref(), context_bytes));
                drop(permit);
                server.notify_if_idle();
            } else {
                // the slot is free before the answer is built (an idle server then gives
                // memory back) and written, so a client that sends its next call on
                // reading this answer finds the slot free
                drop(permit);
                finish(server.finish_eval(joined, output_type.as_ref(), context_bytes));
            }
        }));
        // a refused job (the pool saturated or out of threads) is known at once
        let waker = std::task::Waker::noop();
        if let std::task::Poll::Ready(Err(e)) = spawned.as_mut().poll(&mut std::task::Context::from_waker(waker))
            && let Some((permit, output_type, finish)) = rest.lock().ok().and_then(|mut r| r.take())
        {
            drop(permit);
            finish(self.finish_eval(Err(e), output_type.as_ref(), context_bytes));
        }
        Ok(())
    }

    pub(crate) fn check_args(&self, args: Option<Map<String, Json>>) -> Result<ParsedArgs, String> {
        let mut args = args.unwrap_or_default();
        for k in args.keys() {
            match k.as_str() {
                "program" | "context" | "output_schema" => {}
                "signature" => return Err("argument `signature` is no longer supported; use `output_schema`".into()),
                other => {
                    return Err(format!(
                        "unknown argument `{other}`; lisp_eval takes program, context and output_schema"
                    ));
                }
            }
        }
        let program = match args.get("program") {
            Some(Json::String(p)) if p.trim().is_empty() => {
                return Err("argument `program` is blank; pass PTC-Lisp source code".into());
            }
            Some(Json::String(p)) if p.len() > self.config.limits.max_program_bytes => {
                return Err(format!(
                    "argument `program` exceeds max_program_bytes ({} > {})",
                    p.len(),
                    self.config.limits.max_program_bytes
                ));
            }
            Some(Json::String(p)) => p.clone(),
            Some(_) => return Err("argument `program` must be a string".into()),
            None => return Err("missing argument `program`: pass {\"program\": \"(+ 1 2)\"}".into()),
        };
        let context = match args.remove("context") {
            None | Some(Json::Null) => None,
            // lifted out of the frame by the transport (see context_stash.rs)
            Some(Json::String(p)) if p.starts_with(PLACEHOLDER_PREFIX) => {
                let token = &p[PLACEHOLDER_PREFIX.len()..];
                Some(self.stash.take(token).ok_or_else(|| {
                    "argument `context` was dropped before the call ran (the server holds the contexts of at most \
                     max_concurrent_calls + max_queued_calls calls, for 60 s); send the call again"
                        .to_string()
                })?)
            }
            // a caller without a transport (an embedder, a test) hands the object itself:
            // its JSON text takes the same way, and the tree is freed before the run
            Some(Json::Object(c)) => Some(serde_json::to_string(&c).map_err(|e| format!("argument `context`: {e}"))?),
            Some(_) => return Err("argument `context` must be a JSON object; each key becomes data/<key>".into()),
        };
        if let Some(text) = &context
            && text.len() > self.config.max_context_bytes
        {
            return Err(format!(
                "argument `context` exceeds max_context_bytes ({} > {}); pass less data",
                text.len(),
                self.config.max_context_bytes
            ));
        }
        let output_type = match args.get("output_schema") {
            None | Some(Json::Null) => None,
            Some(s @ Json::Object(_)) => Some(
                ptc_signature::schema::schema_to_type(s)
                    .map_err(|e| format!("argument `output_schema` is invalid: {e}"))?,
            ),
            Some(_) => return Err("argument `output_schema` is invalid: it must be a JSON Schema object".into()),
        };
        Ok(ParsedArgs { program, context, output_type })
    }
}

/// What a `lisp_eval` run hands back from its evaluation thread.
type EvalJoin = Result<Result<ptc_lisp_eval::Outcome, String>, ptc_lisp_eval::EvalError>;

/// One `lisp_eval` run on this thread: the context loaded (and charged) under `limits`,
/// the program compiled and run with what the context left of the heap, and a memory
/// error told the context's share (an `Err` is an `args_error` about the context).
fn run_lisp_eval(
    program: &str,
    context_text: Option<&str>,
    limits: &Limits,
    memory: ptc_lisp_eval::Memory,
    host: &dyn Host,
    cancel: &Cancel,
) -> Result<ptc_lisp_eval::Outcome, String> {
    let (context, used) = load_context(context_text, limits.max_heap_bytes)?;
    let input = RunInput { strict_data: true, context: Arc::new(context), memory, ..RunInput::new() };
    let engine = Engine::new(Limits { max_heap_bytes: limits.max_heap_bytes.saturating_sub(used), ..limits.clone() });
    let mut outcome = engine.eval(program, input, host, cancel);
    explain_memory_error(&mut outcome, used, limits.max_heap_bytes);
    Ok(outcome)
}

/// The fuel a program answered on the stdio reader thread may use ([`PtcServer::eval_inline`]):
/// about 100 µs of work at most.
const INLINE_FUEL: u64 = 2_000;

/// The time a program answered on the stdio reader thread may take.
const INLINE_TIME: Duration = Duration::from_millis(2);

/// The largest context (JSON text) a program answered on the stdio reader thread may get.
const INLINE_CONTEXT_BYTES: usize = 16 * 1024;

/// The host of a run on the stdio reader thread: tools are listed (so the program compiles
/// as it would on the pool) and discovery answers, but a call is refused and noted, and the
/// run is dropped for one on the pool.
struct NoToolCalls {
    inner: Arc<dyn Host>,
    refused: AtomicBool,
}

impl Host for NoToolCalls {
    fn tools(&self) -> Vec<ptc_lisp_eval::ToolSpec> {
        self.inner.tools()
    }

    fn call(
        &self,
        _: &ptc_lisp_eval::ToolCall,
        _: &ptc_lisp_eval::CallCx<'_>,
    ) -> Result<ptc_lisp_eval::Value, ptc_lisp_eval::ToolError> {
        self.refused.store(true, Ordering::SeqCst);
        Err(ptc_lisp_eval::ToolError::failed("tool calls run on the pool (internal: this run is dropped)"))
    }

    fn discover(
        &self,
        query: &ptc_lisp_eval::Discovery<'_>,
        cx: &ptc_lisp_eval::CallCx<'_>,
    ) -> Option<Result<ptc_lisp_eval::Value, ptc_lisp_eval::ToolError>> {
        self.inner.discover(query, cx)
    }

    fn clock_millis(&self) -> Option<i64> {
        self.inner.clock_millis()
    }
}

pub(crate) struct ParsedArgs {
    pub(crate) program: String,
    /// The context's JSON text (an object), loaded when the call has its slot.
    pub(crate) context: Option<String>,
    pub(crate) output_type: Option<ptc_signature::Type>,
}

/// Loads a call's context straight from its JSON text into values, charged with the cost
/// model of the memory limit against `max_heap_bytes`: the context and what the program
/// builds share one limit. Returns the map and the bytes charged.
fn load_context(text: Option<&str>, max_heap_bytes: u64) -> Result<(ptc_lisp_eval::value::PMap, u64), String> {
    let Some(text) = text else { return Ok((ptc_lisp_eval::value::PMap::new(), 0)) };
    let (map, used) = ptc_lisp_eval::json::parse_context_charged(
        text,
        max_heap_bytes,
        "max_heap_bytes, which the context shares with the program",
    )
    .map_err(|e| format!("argument `context`: {e}"))?;
    for k in map.keys() {
        let ptc_lisp_eval::Value::Str(k) = k else { continue };
        if k.is_empty() || k.contains('/') {
            return Err(format!(
                "context key {k:?} is invalid: keys must be non-empty and must not contain '/' (it would shadow a PTC-Lisp namespace)"
            ));
        }
    }
    Ok((map, used))
}

/// A program that ran out of memory is told how much of the limit its context took.
fn explain_memory_error(outcome: &mut ptc_lisp_eval::Outcome, context_bytes: u64, max_heap_bytes: u64) {
    if context_bytes == 0 {
        return;
    }
    if let RunResult::Error(e) = &mut outcome.result
        && e.kind == ptc_lisp_eval::ErrorKind::MemoryExceeded
    {
        e.message
            .push_str(&format!(" (the context took {context_bytes} of the {max_heap_bytes} bytes of max_heap_bytes)"));
    }
}

fn unreachable_schema() -> ! {
    // the literal above is always an object; keep the signature total without panicking APIs
    std::process::abort()
}

pub(crate) fn to_result(p: CallPayload) -> CallToolResult {
    let mut r = if p.is_error {
        CallToolResult::error(vec![ContentBlock::text(p.text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(p.text)])
    };
    r.structured_content = p.structured;
    r
}

impl ServerHandler for PtcServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Run PTC-Lisp programs with the lisp_eval tool: filter, join and aggregate data in one call.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    /// Protocol versions: 2025-11-25 and 2025-06-18 through `initialize`. 2026-07-28 is
    /// listed only so that its `server/discover` opener reaches [`Self::discover`], which
    /// answers -32601 so clients fall back to `initialize`.
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(&[
            ProtocolVersion::V_2025_11_25,
            ProtocolVersion::V_2025_06_18,
            ProtocolVersion::V_2026_07_28,
        ])
    }

    /// The stateless `server/discover` opener of 2026-07-28 is not served: clients fall
    /// back to `initialize`, and the connection stays open.
    async fn discover(&self, _context: RequestContext<RoleServer>) -> Result<DiscoverResult, McpError> {
        Err(McpError::method_not_found::<DiscoverRequestMethod>())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let started = Instant::now();
        if let Some(Json::String(program)) = request.arguments.as_ref().and_then(|a| a.get("program")) {
            // the program text only at debug; context data may hold secrets and is never logged
            tracing::debug!(tool = %request.name, %program, "tools/call program");
        }
        let sessions = self.config.sessions.enabled;
        let debug_tool = self.config.diagnostics.debug_tool;
        let recorded = (self.diagnostics.active()
            && ((request.name == "lisp_eval" && !sessions)
                || (request.name == "lisp_task" && self.agentic.is_some())
                || (sessions && crate::session::is_session_tool(&request.name))))
        .then(|| crate::diagnostics::CallStart::new(&request.name, request.arguments.as_ref()));
        let mut planner_trace = None;
        let payload = if debug_tool && request.name == "lisp_debug" {
            self.call_lisp_debug(request.arguments.as_ref())
        } else if request.name == "lisp_eval" && !sessions {
            self.call_lisp_eval(request.arguments, context.ct.clone()).await
        } else if request.name == "lisp_task" && self.agentic.is_some() {
            let (payload, traced) = self.call_lisp_task_traced(request.arguments, context.ct.clone()).await;
            planner_trace = traced;
            payload
        } else if sessions && crate::session::is_session_tool(&request.name) {
            let owner = caller(&context);
            self.call_session_tool(&request.name, owner, request.arguments, context.ct.clone()).await
        } else {
            envelope::error(
                McpReason::UnknownTool,
                &format!("unknown tool {:?}", request.name),
                None,
                &[],
                self.config.response_profile,
            )
        };
        log_call(&request.name, started.elapsed(), &payload);
        if let Some(start) = recorded {
            let (diagnostics, record, took) = (self.diagnostics.clone(), payload.clone(), started.elapsed());
            // trace files are written off the async threads
            let _ =
                tokio::task::spawn_blocking(move || diagnostics.record_with(start, &record, took, planner_trace)).await;
        }
        Ok(CallToolResponse::Complete(to_result(payload)))
    }
}

/// Who is calling: the owner the HTTP transport attached to the request, else the stdio
/// client.
fn caller(context: &RequestContext<RoleServer>) -> crate::session::Owner {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.extensions.get::<crate::session::Owner>())
        .cloned()
        .unwrap_or_else(crate::session::Owner::stdio)
}

/// The one log line of a `tools/call`: method, tool, duration, status and reason.
fn log_call(tool: &str, took: Duration, payload: &CallPayload) {
    let duration_ms = (took.as_secs_f64() * 1e6).round() / 1e3;
    let status = if payload.is_error { "error" } else { "ok" };
    let reason = payload.reason.as_deref().unwrap_or("");
    tracing::info!(method = "tools/call", tool, duration_ms, status, reason, "call");
}

/// The arguments of `frame` when it is a `tools/call` a fast path (stdio or HTTP) may
/// take: `lisp_eval` with nothing but `name` and `arguments` in its parameters (a
/// `_meta`, a task request or anything else is `None` and goes to rmcp).
pub(crate) fn plain_lisp_eval_call(frame: &[u8]) -> Option<Option<Map<String, Json>>> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct PlainCall {
        #[allow(dead_code)]
        jsonrpc: serde::de::IgnoredAny,
        #[allow(dead_code)]
        id: serde::de::IgnoredAny,
        #[allow(dead_code)]
        method: serde::de::IgnoredAny,
        params: PlainParams,
    }
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct PlainParams {
        name: String,
        #[serde(default)]
        arguments: Option<Map<String, Json>>,
    }
    let call = serde_json::from_slice::<PlainCall>(frame).ok()?;
    (call.params.name == "lisp_eval").then_some(call.params.arguments)
}

/// The JSON-RPC response a fast path writes for a finished `tools/call` (`None`, logged,
/// when it cannot be encoded).
pub(crate) fn encode_call_answer(result: CallToolResult, id: rmcp::model::RequestId) -> Option<Vec<u8>> {
    let mut result = rmcp::model::ServerResult::from(rmcp::model::CallToolResponse::Complete(result));
    result.strip_result_type_for_legacy_peer();
    let message = rmcp::model::ServerJsonRpcMessage::response(result, id);
    serde_json::to_vec(&message).map_err(|e| tracing::error!(error = %e, "cannot encode an answer")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ResponseProfile;

    #[test]
    fn prompt_card_fits_its_budget() {
        let header = LISP_EVAL_CARD.split("\n---\n").next().unwrap_or("");
        let budget: usize = header
            .lines()
            .find_map(|l| l.strip_prefix("budget_bytes:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        assert!(budget > 0, "the card declares budget_bytes");
        let body = card_body(LISP_EVAL_CARD);
        assert!(body.len() <= budget, "lisp_eval card is {} bytes, budget {budget}", body.len());
        assert!(!body.starts_with("---"));
    }

    #[test]
    fn lisp_debug_argument_errors_name_its_own_arguments() {
        let mut config = McpConfig::default();
        config.diagnostics.debug_tool = true;
        config.response_profile = ResponseProfile::Structured;
        let server = PtcServer::new(config, Arc::new(NoUpstreams));
        let args = serde_json::json!({"op": "bogus"});
        let p = server.call_lisp_debug(args.as_object());
        assert!(p.is_error);
        assert_eq!(p.reason.as_deref(), Some("args_error"));
        let feedback = p.structured.as_ref().and_then(|s| s["feedback"].as_str()).unwrap_or_default().to_string();
        assert!(feedback.contains("{\"op\": \"recent\"") && !feedback.contains("program"), "{feedback}");
        assert!(p.text.contains("lisp_debug arguments") && !p.text.contains("\"program\""), "{}", p.text);
    }
}
