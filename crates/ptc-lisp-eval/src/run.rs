//! The one-call convenience API over [`Engine`]: [`run`] and its [`RunOptions`].

use std::sync::Arc;

use crate::cancel::Cancel;
use crate::engine::{Engine, RunInput};
use crate::host::{Host, NoTools};
use crate::limits::Limits;
use crate::memory::Memory;
use crate::outcome::Outcome;
use crate::value::{PMap, Value};

/// Everything [`run`] needs besides the source.
#[derive(Clone)]
pub struct RunOptions {
    /// Context data, readable as `data/<key>`.
    pub context: Arc<PMap>,
    /// User definitions from earlier runs.
    pub memory: Memory,
    /// The host that executes tool calls.
    pub host: Arc<dyn Host>,
    /// Results of earlier turns, oldest first (`*1` is the last one).
    pub turn_history: Vec<Value>,
    /// Resource limits.
    pub limits: Limits,
    /// A missing `data/` key is an error (MCP) instead of nil (default).
    pub strict_data: bool,
    /// Cancel handle (and optional deadline) of the run.
    pub cancel: Cancel,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            context: Arc::new(PMap::new()),
            memory: Memory::default(),
            host: Arc::new(NoTools),
            turn_history: Vec::new(),
            limits: Limits::default(),
            strict_data: false,
            cancel: Cancel::new(),
        }
    }
}

impl RunOptions {
    /// Sets the context from a JSON object.
    pub fn with_json_context(mut self, obj: &serde_json::Map<String, serde_json::Value>) -> Self {
        self.context = Arc::new(crate::json::map_from_json(obj));
        self
    }
}

/// Parses, analyzes and evaluates `source` in one call (an [`Engine`] with
/// `opts.limits`). Embedders that run many programs keep an `Engine` instead.
///
/// ```
/// use ptc_lisp_eval::{run, RunOptions};
/// let out = run("(->> [1 2 3 4] (filter #(> % 2)) (map inc) (reduce +))", RunOptions::default());
/// assert_eq!(out.printed, "9");
/// ```
pub fn run(source: &str, opts: RunOptions) -> Outcome {
    let input = RunInput {
        context: opts.context,
        memory: opts.memory,
        turn_history: opts.turn_history,
        strict_data: opts.strict_data,
    };
    Engine::new(opts.limits).eval(source, input, opts.host.as_ref(), &opts.cancel)
}
