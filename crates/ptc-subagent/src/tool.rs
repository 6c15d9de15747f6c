//! Tools an agent's programs can call as `(tool/name {:arg value})`.
//!
//! A tool is a name, an optional signature (shown in the prompt, used to coerce
//! arguments), a description, and a Rust function. Functions receive the arguments as
//! one JSON object (keys with `_`, as the signature writes them) and a [`ToolContext`]
//! holding the program's deadline and cancel handle; they answer with JSON or a [`ToolError`] the program
//! sees as a `tool_error`. A panicking function is caught and reported the same way.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use ptc_lisp_eval::ToolError;
use ptc_signature::Type;
use serde_json::Value as Json;

use crate::llm::BoxFuture;
use crate::mode::NativeResult;
use ptc_lisp_eval::Exposure;

/// What a tool function gets besides its arguments.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolContext {
    /// When the calling program's time runs out; a tool that blocks (a subprocess, a
    /// request) should give up by then.
    pub deadline: Instant,
    /// The 1-based turn of the agent loop.
    pub turn: u32,
    /// The calling program's cancel handle: set when the mission is cancelled or dropped.
    /// A tool that waits (a subprocess, a request) should stop when it is
    /// ([`Cancel::on_cancel`](ptc_lisp_eval::Cancel::on_cancel) wakes a waiter).
    pub cancel: ptc_lisp_eval::Cancel,
    /// The link to the mission tree (nested agents and LLM tools use it).
    pub(crate) nest: Option<crate::nesting::ToolNest>,
}

impl ToolContext {
    /// A context for calling a tool function directly (tests, adapters): no mission, so
    /// agent tools and LLM tools that use the caller's model report an error.
    pub fn new(deadline: Instant, turn: u32) -> Self {
        ToolContext { deadline, turn, cancel: ptc_lisp_eval::Cancel::new(), nest: None }
    }
}

impl ToolContext {
    /// The runtime the mission is awaited on, where tool tasks run.
    pub(crate) fn runtime(&self) -> Option<tokio::runtime::Handle> {
        self.nest.as_ref().and_then(|n| n.runtime.clone()).or_else(|| tokio::runtime::Handle::try_current().ok())
    }

    /// Time left before the deadline (zero when it has passed).
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// The function behind a synchronous tool.
pub type ToolFn = Arc<dyn Fn(Json, &ToolContext) -> Result<Json, ToolError> + Send + Sync>;

/// The function behind an async tool: it gets its own copy of the context, so the future
/// it returns may outlive the call.
pub type AsyncToolFn = Arc<dyn Fn(Json, ToolContext) -> BoxFuture<'static, Result<Json, ToolError>> + Send + Sync>;

/// What a tool runs.
#[derive(Clone)]
pub(crate) enum ToolBody {
    /// A blocking function: run on the runtime's blocking threads.
    Sync(ToolFn),
    /// A future: run as a task on the mission's runtime.
    Async(AsyncToolFn),
}

/// A tool: name, contract, description, function.
#[derive(Clone)]
pub struct Tool {
    pub(crate) name: String,
    pub(crate) signature: Option<String>,
    pub(crate) description: String,
    pub(crate) cache: bool,
    pub(crate) expose: Option<Exposure>,
    pub(crate) native_result: Option<NativeResult>,
    /// How strictly arguments and results are checked (`None`: the agent's mode).
    pub(crate) validation: Option<ptc_signature::Mode>,
    /// The signature's output type, set when the agent is built (results are checked
    /// against it).
    pub(crate) output: Option<Arc<ptc_signature::Type>>,
    pub(crate) func: ToolBody,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("signature", &self.signature)
            .field("description", &self.description)
            .field("cache", &self.cache)
            .field("expose", &self.expose)
            .field("native_result", &self.native_result)
            .field("validation", &self.validation)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// A tool backed by `f`, which gets the arguments object and returns JSON, or a message
    /// the program sees as a `tool_error`.
    ///
    /// ```
    /// use ptc_subagent::Tool;
    /// let double = Tool::new("double", |args| Ok(serde_json::json!(args["x"].as_i64().unwrap_or(0) * 2)))
    ///     .signature("(x :int) -> :int")
    ///     .description("Doubles x");
    /// assert_eq!(double.name(), "double");
    /// ```
    pub fn new<F>(name: impl Into<String>, f: F) -> Self
    where
        F: Fn(Json) -> Result<Json, String> + Send + Sync + 'static,
    {
        Tool::with_context(name, move |args, _cx| f(args).map_err(ToolError::from))
    }

    /// A tool whose function also receives the [`ToolContext`] (deadline, turn).
    ///
    /// A synchronous function runs on the blocking threads of the mission's tokio runtime
    /// (`spawn_blocking`), so a slow one cannot hold the program past its deadline; a
    /// service with many concurrent missions whose tools wait on I/O uses
    /// [`Tool::new_async`] instead, which takes no thread per call.
    pub fn with_context<F>(name: impl Into<String>, f: F) -> Self
    where
        F: Fn(Json, &ToolContext) -> Result<Json, ToolError> + Send + Sync + 'static,
    {
        Tool::with_body(name.into(), ToolBody::Sync(Arc::new(f)))
    }

    /// An async tool: `f` gets the arguments and the [`ToolContext`] and returns a future,
    /// which runs as a task on the tokio runtime that awaits the mission while the program
    /// waits for its answer on its evaluation thread. No thread is started per call. At the
    /// program's deadline, or when the mission is cancelled or dropped, the task is aborted
    /// and the program gets `timeout` or `cancelled`; a panic in the task becomes a
    /// `tool_error`. (Called outside any runtime, e.g. from [`CompiledAgent::execute`](crate::CompiledAgent::execute),
    /// the task runs on a small runtime this crate starts once.)
    ///
    /// ```
    /// use ptc_subagent::{ScriptedLlm, SubAgent, Tool, ToolError};
    /// use serde_json::json;
    ///
    /// let stock = Tool::new_async("stock", |args, _cx| async move {
    ///     // a database pool or an HTTP client would be awaited here
    ///     tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    ///     let sku = args["sku"].as_str().ok_or(ToolError::failed("sku must be a string"))?;
    ///     Ok(json!({"sku": sku, "count": 3}))
    /// })
    /// .signature("(sku :string) -> {sku :string, count :int}");
    /// let agent = SubAgent::builder("How many of {{sku}} are in stock?")
    ///     .signature(":int")
    ///     .context_value("sku", json!("A-1"))
    ///     .tool(stock)
    ///     .build()?;
    /// let llm = ScriptedLlm::texts(["```clojure\n(return (:count (tool/stock {:sku data/sku})))\n```"]);
    /// let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    /// let step = runtime.block_on(agent.run(&llm));
    /// assert_eq!(step.return_value, Some(json!(3)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new_async<F, Fut>(name: impl Into<String>, f: F) -> Self
    where
        F: Fn(Json, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Json, ToolError>> + Send + 'static,
    {
        let body: AsyncToolFn = Arc::new(move |args, cx| Box::pin(f(args, cx)));
        Tool::with_body(name.into(), ToolBody::Async(body))
    }

    /// A tool from a function over Rust types: the arguments object is deserialised into
    /// `A`, the result serialised from `R`. Arguments that do not fit `A` are a
    /// `tool_error` naming the field (`"tool 'stock': argument `sku`: invalid type: integer
    /// `7`, expected a string"`), so the program (and the model) can fix the call. Give the
    /// tool a [`signature`](Self::signature) matching `A` and `R` so that programs see the
    /// contract. Runs like [`Tool::with_context`].
    ///
    /// ```
    /// use ptc_subagent::{Tool, ToolContext, ToolError};
    /// #[derive(serde::Deserialize)]
    /// struct Query { sku: String, limit: Option<u32> }
    /// #[derive(serde::Serialize)]
    /// struct Stock { sku: String, count: u32 }
    ///
    /// let stock = Tool::typed("stock", |q: Query, _cx: &ToolContext| -> Result<Stock, ToolError> {
    ///     Ok(Stock { sku: q.sku, count: q.limit.unwrap_or(3) })
    /// })
    /// .signature("(sku :string, limit :int?) -> {sku :string, count :int}");
    /// # assert_eq!(stock.name(), "stock");
    /// ```
    pub fn typed<A, R, F>(name: impl Into<String>, f: F) -> Self
    where
        A: serde::de::DeserializeOwned,
        R: serde::Serialize,
        F: Fn(A, &ToolContext) -> Result<R, ToolError> + Send + Sync + 'static,
    {
        let name = name.into();
        let tool = name.clone();
        Tool::with_context(name, move |args, cx| {
            let args = typed_args::<A>(&tool, args)?;
            typed_result(&tool, f(args, cx)?)
        })
    }

    /// [`Tool::typed`] for an async function (runs like [`Tool::new_async`]).
    pub fn typed_async<A, R, F, Fut>(name: impl Into<String>, f: F) -> Self
    where
        A: serde::de::DeserializeOwned + Send + 'static,
        R: serde::Serialize,
        F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<R, ToolError>> + Send + 'static,
    {
        let name = name.into();
        let tool = name.clone();
        let f = Arc::new(f);
        Tool::new_async(name, move |args, cx| {
            let parsed = typed_args::<A>(&tool, args);
            let (f, tool) = (f.clone(), tool.clone());
            async move { typed_result(&tool, f(parsed?, cx).await?) }
        })
    }

    pub(crate) fn with_body(name: String, func: ToolBody) -> Self {
        Tool {
            name,
            signature: None,
            description: String::new(),
            cache: false,
            expose: None,
            native_result: None,
            validation: None,
            output: None,
            func,
        }
    }

    /// A tool that always answers `value` (demos, tests).
    pub fn fixed(name: impl Into<String>, value: Json) -> Self {
        Tool::with_context(name, move |_args, _cx| Ok(value.clone()))
    }

    /// Sets the signature, e.g. `(query :string, limit :int?) -> [{id :int}]`. It is
    /// parsed when the agent is built; a bad one is a build error naming the tool.
    pub fn signature(mut self, signature: impl Into<String>) -> Self {
        self.signature = Some(signature.into());
        self
    }

    /// Sets the description shown to the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Caches results for identical arguments within one run.
    pub fn cache(mut self, cache: bool) -> Self {
        self.cache = cache;
        self
    }

    /// Which layer may call the tool: the model natively, programs, or both. Unset, the
    /// mode decides (programs in the PTC-Lisp modes, native in the text modes).
    pub fn expose(mut self, expose: Exposure) -> Self {
        self.expose = Some(expose);
        self
    }

    /// The preview the model gets when it calls this tool natively (combined mode; the
    /// tool must be `expose: both` with `cache: true`, checked at build).
    pub fn native_result(mut self, preview: NativeResult) -> Self {
        self.native_result = Some(preview);
        self
    }

    /// How strictly this tool's arguments and result are checked against its signature
    /// (default: the agent's `signature_validation`). `strict` refuses arguments the
    /// signature does not name and extra fields in the result; `warn_only` logs a
    /// mismatch and goes ahead; `disabled` neither coerces nor checks.
    pub fn validation(mut self, mode: ptc_signature::Mode) -> Self {
        self.validation = Some(mode);
        self
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The signature text, if any.
    pub fn signature_text(&self) -> Option<&str> {
        self.signature.as_deref()
    }

    /// The description.
    pub fn description_text(&self) -> &str {
        &self.description
    }
}

/// The arguments as `A`, or a message naming the field that does not fit.
fn typed_args<A: serde::de::DeserializeOwned>(tool: &str, args: Json) -> Result<A, ToolError> {
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            ToolError::failed(format!("tool '{tool}': the arguments do not fit: {inner}"))
        } else {
            ToolError::failed(format!("tool '{tool}': argument `{path}`: {inner}"))
        }
    })
}

/// The result as JSON, or why it has no JSON form.
fn typed_result<R: serde::Serialize>(tool: &str, result: R) -> Result<Json, ToolError> {
    serde_json::to_value(result)
        .map_err(|e| ToolError::failed(format!("tool '{tool}': its result cannot be turned into JSON: {e}")))
}

/// A tool shown to the model for planning only (`tool_catalog`): it cannot be called.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CatalogEntry {
    /// Name.
    pub name: String,
    /// Signature text, if any.
    pub signature: Option<String>,
    /// Description.
    pub description: String,
}

impl CatalogEntry {
    /// A catalog entry.
    pub fn new(name: impl Into<String>, signature: Option<&str>, description: impl Into<String>) -> Self {
        CatalogEntry { name: name.into(), signature: signature.map(str::to_string), description: description.into() }
    }
}

/// The tree link of a tool call, or the error for a tool used outside a mission.
pub(crate) fn tool_nest<'a>(cx: &'a ToolContext, name: &str) -> Result<&'a crate::nesting::ToolNest, ToolError> {
    cx.nest.as_ref().ok_or_else(|| ToolError::failed(format!("tool/{name} runs only inside an agent mission")))
}

/// A tool ready to call: the tool, its parsed input type and the layers that may call it.
#[derive(Clone)]
pub(crate) struct PreparedTool {
    pub(crate) tool: Tool,
    /// The object type of the signature's inputs (for argument coercion).
    pub(crate) inputs: Option<Type>,
    /// Who may call it (the tool's own setting, or the mode's default).
    pub(crate) expose: Exposure,
}

/// The callable tools of an agent, by name.
pub(crate) type Toolbox = BTreeMap<String, PreparedTool>;
