//! The `Host` trait: the evaluator's only door to the outside world.
//!
//! A host offers tools (with the specs the analyzer and prompts need), answers tool calls
//! within the program's deadline, and may answer discovery forms (`dir`, `doc`,
//! `apropos`, `meta`) for names the core library does not know — the MCP
//! aggregator's upstream catalog lives behind this. The agent loop's app tools, an MCP
//! aggregator and a test table of closures all implement the same trait;
//! [`contract`](crate::contract) holds the checks every implementation should pass.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::cancel::Cancel;
use crate::value::Value;

/// Who may call a tool: programs (`(tool/x ...)`), the model natively, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Exposure {
    /// Callable from programs only (the default for PTC-Lisp agents).
    #[default]
    Program,
    /// Offered to the model as a native tool only; a program calling it is rejected
    /// before it runs.
    Native,
    /// Both.
    Both,
}

impl Exposure {
    /// True when programs may call the tool.
    pub fn to_programs(self) -> bool {
        matches!(self, Exposure::Program | Exposure::Both)
    }

    /// True when the model may call the tool natively (an agent offers it as a tool).
    pub fn to_model(self) -> bool {
        matches!(self, Exposure::Native | Exposure::Both)
    }
}

/// What a host says about one of its tools.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolSpec {
    /// The name programs write after `tool/` (`search_orders`; `(tool/search-orders ...)`
    /// finds it too).
    pub name: String,
    /// Its signature (`"(query :string) -> [{id :int}]"`), when it has one.
    pub signature: Option<String>,
    /// What it does, for prompts and `doc`.
    pub description: String,
    /// Who may call it.
    pub exposure: Exposure,
}

impl ToolSpec {
    /// A program-callable tool without signature or description.
    pub fn named(name: impl Into<String>) -> Self {
        ToolSpec { name: name.into(), ..ToolSpec::default() }
    }

    /// Sets the description.
    pub fn describe(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the signature.
    pub fn signature(mut self, signature: impl Into<String>) -> Self {
        self.signature = Some(signature.into());
        self
    }

    /// Sets the exposure.
    pub fn exposure(mut self, exposure: Exposure) -> Self {
        self.exposure = exposure;
        self
    }
}

/// One tool call as the host receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool's name as the host declared it.
    pub name: String,
    /// The arguments: always a map with string keys, `-` already turned into `_`
    /// (`:user-id` arrives as `"user_id"`), keyword values as plain strings
    /// (see [`tool_keys`](crate::tool_keys)).
    pub args: Value,
}

/// What a host knows about the run while it serves a call.
pub struct CallCx<'a> {
    /// When the program's time runs out; a call still blocked then is abandoned.
    pub deadline: Instant,
    /// The run's cancel handle (pass `cancel.child()` to nested runs).
    pub cancel: &'a Cancel,
    /// Tool calls the program may still make after this one (`None`: no limit).
    pub remaining_tool_calls: Option<u64>,
    meta: RefCell<BTreeMap<String, serde_json::Value>>,
}

impl<'a> CallCx<'a> {
    /// A context for one call.
    pub fn new(deadline: Instant, cancel: &'a Cancel, remaining_tool_calls: Option<u64>) -> Self {
        CallCx { deadline, cancel, remaining_tool_calls, meta: RefCell::new(BTreeMap::new()) }
    }

    /// Time left before the deadline (zero once it has passed).
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Attaches host-owned metadata to this call's ledger entry (`server`, `bytes`,
    /// `status`, `cached`...). Later values replace earlier ones.
    pub fn record(&self, key: &str, value: serde_json::Value) {
        self.meta.borrow_mut().insert(key.to_string(), value);
    }

    /// Waits on this (evaluation) thread for an async tool's answer, until the deadline or
    /// the run's cancellation; see [`Cancel::wait_for`]. A deadline that passes gives
    /// [`ToolError::timeout`], a cancel [`ToolError::cancelled`], both naming `tool`.
    pub fn wait<F: std::future::Future>(&self, tool: &str, future: F) -> Result<F::Output, ToolError> {
        self.cancel.wait_for(future, self.deadline).map_err(|why| match why {
            crate::cancel::Interrupted::Cancelled => ToolError::cancelled(tool),
            _ => ToolError::timeout(tool),
        })
    }

    pub(crate) fn take_meta(&self) -> BTreeMap<String, serde_json::Value> {
        std::mem::take(&mut *self.meta.borrow_mut())
    }
}

/// How a failed tool call reaches the program.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// The tool failed; the program raises `tool_error` ("Tool 'x' failed: ...").
    Failed,
    /// The arguments were wrong; the program raises `invalid_tool_args`.
    InvalidArgs,
    /// No such tool; the program raises `unknown_tool`.
    UnknownTool,
    /// The call did not finish within the program's deadline; the run ends in `timeout`.
    Timeout,
    /// The run was cancelled while the call was under way; the run ends in `cancelled`.
    Cancelled,
    /// A fault of the world, not of the program (an upstream is down, a cap is
    /// exhausted): the program *receives* `{:ok false :reason :<reason> :message "..."}`
    /// and keeps running.
    Data {
        /// The reason keyword (`upstream_unavailable`, `cap_exhausted`...).
        reason: String,
    },
}

/// A failed tool call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// How the program sees it.
    pub kind: ToolErrorKind,
    /// What went wrong, for the program's author.
    pub message: String,
}

/// A plain message is a failure the program raises as `tool_error` (so a tool function
/// can answer `Err("disk on fire".into())`).
impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError::failed(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError::failed(message)
    }
}

impl ToolError {
    /// A failure the program raises as `tool_error`.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError { kind: ToolErrorKind::Failed, message: message.into() }
    }

    /// Bad arguments (`invalid_tool_args`).
    pub fn invalid_args(message: impl Into<String>) -> Self {
        ToolError { kind: ToolErrorKind::InvalidArgs, message: message.into() }
    }

    /// No such tool (`unknown_tool`).
    pub fn unknown_tool(name: &str) -> Self {
        ToolError { kind: ToolErrorKind::UnknownTool, message: format!("Unknown tool: {name}") }
    }

    /// A world fault the program receives as data.
    pub fn data(reason: impl Into<String>, message: impl Into<String>) -> Self {
        ToolError { kind: ToolErrorKind::Data { reason: reason.into() }, message: message.into() }
    }

    /// A call that outlived the deadline.
    pub fn timeout(tool: &str) -> Self {
        ToolError {
            kind: ToolErrorKind::Timeout,
            message: format!(
                "tool '{tool}' did not answer before the program's time limit; call it with less work or fewer items per call"
            ),
        }
    }

    /// A call stopped by cancellation.
    pub fn cancelled(tool: &str) -> Self {
        ToolError { kind: ToolErrorKind::Cancelled, message: format!("tool '{tool}' was cancelled with the run") }
    }

    /// True when the program receives this error as a value instead of raising.
    pub fn is_data(&self) -> bool {
        matches!(self.kind, ToolErrorKind::Data { .. })
    }
}

/// A discovery question a program asks, for names the core library does not know.
/// (`(tool/servers)` needs no variant: a host that has servers declares a `servers` tool.)
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Discovery<'a> {
    /// `(dir 'ns)` / `(dir 'ns {:limit 100})` for a namespace that is not a core one.
    Dir {
        /// The namespace.
        namespace: &'a str,
        /// The options map (or nil).
        options: &'a Value,
    },
    /// `(doc 'ns/name)` for a name the core library does not have.
    Doc {
        /// The (possibly qualified) name.
        name: &'a str,
    },
    /// `(apropos "q" opts)`: host matches are added to the core library's.
    Apropos {
        /// The query.
        query: &'a str,
        /// The options map (or nil).
        options: &'a Value,
    },
    /// `(meta 'ns/name)` for a name the core library does not have.
    Meta {
        /// The (possibly qualified) name.
        name: &'a str,
    },
    /// `(all-ns)` (and `(ns-name 'ns)` for a name the core library does not have): the
    /// namespaces the host adds, as a vector of names, listed with the core library's.
    /// An MCP server's prelude namespaces (`crm`) answer here.
    Namespaces,
    /// `(ns-publics 'ns)` for a namespace that is not a core one: a map from each public
    /// name to a one-line description, as the core namespaces answer.
    Publics {
        /// The namespace.
        namespace: &'a str,
    },
}

/// What the evaluator needs from its embedder.
///
/// Implementations must be quick to answer [`tools`](Host::tools) (it is read when a
/// program is compiled) and must respect `cx.deadline` and `cx.cancel` in
/// [`call`](Host::call): a call blocked past the deadline makes the program overrun its
/// time limit. An async host spawns the call's work on its runtime and waits for it with
/// [`CallCx::wait`], which ends at the deadline or on cancel without a thread per call.
pub trait Host: Send + Sync {
    /// The tools this host offers.
    fn tools(&self) -> Vec<ToolSpec>;

    /// Serves one tool call.
    fn call(&self, call: &ToolCall, cx: &CallCx<'_>) -> Result<Value, ToolError>;

    /// Answers a discovery question; `None` means "not mine" (the core library answers or
    /// reports the name as unknown). The default answers nothing.
    fn discover(&self, query: &Discovery<'_>, cx: &CallCx<'_>) -> Option<Result<Value, ToolError>> {
        let _ = (query, cx);
        None
    }

    /// The current time in milliseconds since the Unix epoch, for the programs that ask
    /// (`System/currentTimeMillis`, `(java.util.Date.)`). The interpreter has no clock of
    /// its own, so a run stays a function of its program, data and tool results; the
    /// default, `None`, makes those calls fail with `unsupported_method` and a message
    /// telling the program to take the time from its context or a tool. A host that wants
    /// programs to read the time returns it here (and gives up that determinism).
    fn clock_millis(&self) -> Option<i64> {
        None
    }
}

impl<H: Host + ?Sized> Host for Arc<H> {
    fn tools(&self) -> Vec<ToolSpec> {
        (**self).tools()
    }
    fn call(&self, call: &ToolCall, cx: &CallCx<'_>) -> Result<Value, ToolError> {
        (**self).call(call, cx)
    }
    fn discover(&self, query: &Discovery<'_>, cx: &CallCx<'_>) -> Option<Result<Value, ToolError>> {
        (**self).discover(query, cx)
    }
    fn clock_millis(&self) -> Option<i64> {
        (**self).clock_millis()
    }
}

/// A host without tools.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoTools;

impl Host for NoTools {
    fn tools(&self) -> Vec<ToolSpec> {
        Vec::new()
    }
    fn call(&self, call: &ToolCall, _cx: &CallCx<'_>) -> Result<Value, ToolError> {
        Err(ToolError {
            kind: ToolErrorKind::UnknownTool,
            message: format!("Unknown tool: {}. No tools available.", call.name),
        })
    }
}

/// A tool implemented by a Rust closure: string-keyed argument map in, value or message out.
pub type ToolFn = Arc<dyn Fn(Value) -> Result<Value, String> + Send + Sync>;

/// The future an async [`FnHost`] tool returns.
pub type ToolFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, String>> + Send>>;

/// An async tool of a [`FnHost`]: arguments in, a future of the answer out.
pub type AsyncToolFn = Arc<dyn Fn(Value) -> ToolFuture + Send + Sync>;

/// What a [`FnHost`] entry runs.
#[derive(Clone)]
enum FnBody {
    Sync(ToolFn),
    Async(AsyncToolFn),
}

/// A host backed by a table of Rust closures; handy for tests and small embeddings.
///
/// A synchronous closure runs on a thread of a set of reused tool threads (not the
/// evaluation thread), so that a slow one cannot hold the program past its deadline: when the deadline passes (or the run is cancelled) the
/// program gets a `timeout` (or `cancelled`) and the closure's eventual answer is dropped.
/// An async tool ([`FnHost::with_async_tool`]) takes no thread: the program's evaluation
/// thread waits for its future ([`CallCx::wait`]) and drops it at the deadline or on
/// cancel. A service with many concurrent programs uses async tools.
///
/// ```
/// use ptc_lisp_eval::{Engine, FnHost, Limits, Value};
/// // tools receive string keys with `-` turned into `_`
/// let host = FnHost::new().with_tool("echo", |args| Ok(args));
/// let out = Engine::new(Limits::default()).eval_with("(get (tool/echo {:user-id 7}) \"user_id\")", &host);
/// assert_eq!(out.printed, "7");
/// ```
#[derive(Default, Clone)]
pub struct FnHost {
    tools: BTreeMap<String, (ToolSpec, FnBody)>,
}

impl FnHost {
    /// An empty table.
    pub fn new() -> Self {
        FnHost::default()
    }

    /// Adds a program-callable tool.
    pub fn with_tool(self, name: &str, f: impl Fn(Value) -> Result<Value, String> + Send + Sync + 'static) -> Self {
        self.with_spec(ToolSpec::named(name), f)
    }

    /// Adds a tool with a full spec (signature, description, exposure).
    pub fn with_spec(
        mut self,
        spec: ToolSpec,
        f: impl Fn(Value) -> Result<Value, String> + Send + Sync + 'static,
    ) -> Self {
        self.tools.insert(spec.name.clone(), (spec, FnBody::Sync(Arc::new(f))));
        self
    }

    /// Adds a program-callable async tool. Its future is polled on the program's evaluation
    /// thread, which waits for it (no thread per call) and drops it at the deadline or on
    /// cancel; a future that needs a runtime (tokio timers, sockets) is spawned on that
    /// runtime inside `f` and its join handle awaited.
    ///
    /// ```
    /// use ptc_lisp_eval::{Engine, FnHost, Limits, Value};
    /// let host = FnHost::new().with_async_tool("lookup", |args: Value| async move {
    ///     // e.g. `handle.spawn(query(args)).await` on the service's runtime
    ///     Ok(Value::vector([args, Value::str("found")]))
    /// });
    /// let out = Engine::new(Limits::default()).eval_with("(tool/lookup {:id 7})", &host);
    /// assert_eq!(out.printed, r#"[{"id" 7} "found"]"#);
    /// ```
    pub fn with_async_tool<F, Fut>(mut self, name: &str, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Value, String>> + Send + 'static,
    {
        let body: AsyncToolFn = Arc::new(move |args| Box::pin(f(args)));
        self.tools.insert(name.to_string(), (ToolSpec::named(name), FnBody::Async(body)));
        self
    }
}

impl Host for FnHost {
    fn tools(&self) -> Vec<ToolSpec> {
        self.tools.values().map(|(s, _)| s.clone()).collect()
    }

    fn call(&self, call: &ToolCall, cx: &CallCx<'_>) -> Result<Value, ToolError> {
        let f = match self.tools.get(&call.name) {
            None => {
                return Err(ToolError {
                    kind: ToolErrorKind::UnknownTool,
                    message: format!("Unknown tool: {}", call.name),
                });
            }
            Some((_, FnBody::Async(f))) => {
                let name = call.name.clone();
                let future = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(call.args.clone())))
                    .map_err(|_| ToolError::failed(format!("tool '{name}' panicked")))?;
                let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cx.wait(&name, future)))
                    .map_err(|_| ToolError::failed(format!("tool '{name}' panicked")))?;
                return polled?.map_err(ToolError::failed);
            }
            Some((_, FnBody::Sync(f))) => f,
        };
        /// What the waiting program hears: the tool's answer, or the run's cancellation.
        enum Heard {
            Answer(Result<Value, String>),
            Cancelled,
        }
        let (tx, rx) = mpsc::channel();
        let wake = tx.clone();
        // cancellation wakes the wait at once (no polling)
        let _watch = cx.cancel.on_cancel(move || {
            let _ = wake.send(Heard::Cancelled);
        });
        let f = f.clone();
        let args = call.args.clone();
        let name = call.name.clone();
        let started = tool_threads::run(Box::new(move || {
            let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(args)))
                .unwrap_or_else(|_| Err(format!("tool '{name}' panicked")));
            let _ = tx.send(Heard::Answer(answer));
        }));
        if !started {
            return Err(ToolError::failed("no thread could be started for the tool call"));
        }
        match rx.recv_timeout(cx.remaining()) {
            Ok(Heard::Answer(r)) => r.map_err(ToolError::failed),
            Ok(Heard::Cancelled) => Err(ToolError::cancelled(&call.name)),
            Err(_) if cx.cancel.is_cancelled() => Err(ToolError::cancelled(&call.name)),
            Err(_) => Err(ToolError::timeout(&call.name)),
        }
    }
}

/// The threads [`FnHost`]'s synchronous closures run on: reused from call to call (a
/// thread whose closure returned waits for the next one, and ends after
/// [`IDLE`](tool_threads::IDLE) without work), so a call costs a channel send, not a new
/// thread; a new thread starts only when every thread holds a closure.
mod tool_threads {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
    use std::time::Duration;

    /// A closure to run.
    pub(super) type Job = Box<dyn FnOnce() + Send>;

    /// How long an idle thread waits for work before it ends.
    pub(super) const IDLE: Duration = Duration::from_secs(10);

    /// Idle threads' inboxes, by thread number. A caller takes an inbox out of the list
    /// before sending to it, so a thread that finds its own inbox still listed knows that
    /// nothing is on its way.
    static IDLE_THREADS: Mutex<Vec<(u64, Sender<Job>)>> = Mutex::new(Vec::new());
    static NEXT: AtomicU64 = AtomicU64::new(0);

    /// Runs `job` on an idle thread, or on a new one; false when no thread could start.
    pub(super) fn run(job: Job) -> bool {
        let idle = IDLE_THREADS.lock().ok().and_then(|mut v| v.pop());
        let job = match idle {
            Some((_, inbox)) => match inbox.send(job) {
                Ok(()) => return true,
                Err(mpsc::SendError(back)) => back,
            },
            None => job,
        };
        let (tx, rx) = mpsc::channel();
        if tx.send(job).is_err() {
            return false;
        }
        let number = NEXT.fetch_add(1, Ordering::Relaxed);
        std::thread::Builder::new().name("ptc-tool".into()).spawn(move || serve(number, tx, rx)).is_ok()
    }

    fn serve(number: u64, me: Sender<Job>, inbox: Receiver<Job>) {
        loop {
            let job = match inbox.recv_timeout(IDLE) {
                Ok(job) => job,
                Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => {
                    let Ok(mut idle) = IDLE_THREADS.lock() else { return };
                    match idle.iter().position(|(n, _)| *n == number) {
                        // still listed: nobody is sending; leave the list and end
                        Some(i) => {
                            idle.swap_remove(i);
                            return;
                        }
                        // taken by a caller that is about to send: wait for its job
                        None => {
                            drop(idle);
                            match inbox.recv() {
                                Ok(job) => job,
                                Err(_) => return,
                            }
                        }
                    }
                }
            };
            job();
            match IDLE_THREADS.lock() {
                Ok(mut v) => v.push((number, me.clone())),
                Err(_) => return,
            }
        }
    }
}

/// One entry of the tool-call ledger.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolCallRecord {
    /// Tool name.
    pub name: String,
    /// Arguments as sent (string-keyed map).
    pub args: Value,
    /// Result when the call succeeded.
    pub result: Option<Value>,
    /// The error when it failed.
    pub error: Option<ToolError>,
    /// How long the call took.
    pub duration: Duration,
    /// Metadata the host attached ([`CallCx::record`]).
    pub meta: BTreeMap<String, serde_json::Value>,
}

impl fmt::Display for ToolErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolErrorKind::Failed => f.write_str("tool_error"),
            ToolErrorKind::InvalidArgs => f.write_str("invalid_tool_args"),
            ToolErrorKind::UnknownTool => f.write_str("unknown_tool"),
            ToolErrorKind::Timeout => f.write_str("timeout"),
            ToolErrorKind::Cancelled => f.write_str("cancelled"),
            ToolErrorKind::Data { reason } => f.write_str(reason),
        }
    }
}

impl ToolCallRecord {
    /// The ledger entry as JSON: `name`, `args`, `result` or `error` (`{reason, message}`),
    /// `duration_ms`, and the host's metadata under `meta` when there is any.
    pub fn to_json(&self) -> serde_json::Value {
        let mut obj = serde_json::Map::new();
        obj.insert("name".into(), self.name.clone().into());
        obj.insert("args".into(), crate::json::to_json(&self.args).unwrap_or(serde_json::Value::Null));
        if let Some(r) = &self.result {
            obj.insert("result".into(), crate::json::to_json(r).unwrap_or(serde_json::Value::Null));
        }
        if let Some(e) = &self.error {
            obj.insert("error".into(), serde_json::json!({"reason": e.kind.to_string(), "message": e.message}));
        }
        obj.insert("duration_ms".into(), serde_json::json!(self.duration.as_secs_f64() * 1000.0));
        if !self.meta.is_empty() {
            obj.insert("meta".into(), serde_json::Value::Object(self.meta.clone().into_iter().collect()));
        }
        serde_json::Value::Object(obj)
    }
}
