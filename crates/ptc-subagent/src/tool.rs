//! Tools an agent's programs can call as `(tool/name {:arg value})`.
//!
//! A tool is a name, an optional signature (shown in the prompt, used to coerce
//! arguments), a description, and a Rust function. Functions receive the arguments as
//! one JSON object (keys with `_`, as the signature writes them) and a [`ToolContext`]
//! holding the program's deadline and cancel handle; they answer with JSON or a [`ToolError`] the program
//! sees as a `tool_error`. A panicking function is caught and reported the same way.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value as Json;

use crate::mode::{Expose, NativeResult};

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
    pub(crate) nest: Option<crate::compose::ToolNest>,
}

impl ToolContext {
    /// A context for calling a tool function directly (tests, adapters): no mission, so
    /// agent tools and LLM tools that use the caller's model report an error.
    pub fn new(deadline: Instant, turn: u32) -> Self {
        ToolContext { deadline, turn, cancel: ptc_lisp_eval::Cancel::new(), nest: None }
    }
}

impl ToolContext {
    /// Time left before the deadline (zero when it has passed).
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// A failed tool call; the message is shown to the model in the turn's feedback.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct ToolError {
    /// What went wrong, for the model.
    pub message: String,
}

impl ToolError {
    /// A tool error with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError { message: message.into() }
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError { message }
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError { message: message.to_string() }
    }
}

/// The function behind a tool.
pub type ToolFn = Arc<dyn Fn(Json, &ToolContext) -> Result<Json, ToolError> + Send + Sync>;

/// A tool: name, contract, description, function.
#[derive(Clone)]
pub struct Tool {
    pub(crate) name: String,
    pub(crate) signature: Option<String>,
    pub(crate) description: String,
    pub(crate) cache: bool,
    pub(crate) expose: Option<Expose>,
    pub(crate) native_result: Option<NativeResult>,
    /// How strictly arguments and results are checked (`None`: the agent's mode).
    pub(crate) validation: Option<ptc_signature::Mode>,
    /// The signature's output type, set when the agent is built (results are checked
    /// against it).
    pub(crate) output: Option<Arc<ptc_signature::Type>>,
    pub(crate) func: ToolFn,
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
    pub fn with_context<F>(name: impl Into<String>, f: F) -> Self
    where
        F: Fn(Json, &ToolContext) -> Result<Json, ToolError> + Send + Sync + 'static,
    {
        Tool {
            name: name.into(),
            signature: None,
            description: String::new(),
            cache: false,
            expose: None,
            native_result: None,
            validation: None,
            output: None,
            func: Arc::new(f),
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
    pub fn expose(mut self, expose: Expose) -> Self {
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
