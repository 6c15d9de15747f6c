//! The one-call convenience API and the [`Outcome`] every run produces.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::cancel::Cancel;
use crate::engine::{Engine, RunInput};
use crate::error::EvalError;
use crate::host::{Host, NoTools, ToolCallRecord};
use crate::interp::Globals;
use crate::limits::Limits;
use crate::value::{PMap, Value};

/// Everything [`run`] needs besides the source.
#[derive(Clone)]
pub struct RunOptions {
    /// Context data, readable as `data/<key>`.
    pub context: Arc<PMap>,
    /// User definitions from earlier runs.
    pub memory: Globals,
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
            memory: Globals::default(),
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

/// True when `v` nests collections deeper than `max`. Iterative, and shared
/// sub-values are visited once, so it is linear in the distinct nodes.
pub(crate) fn nesting_exceeds(v: &Value, max: usize) -> bool {
    let mut seen: HashSet<usize> = HashSet::new();
    let mut stack: Vec<(&Value, usize)> = vec![(v, 0)];
    while let Some((v, depth)) = stack.pop() {
        if depth > max {
            return true;
        }
        let ptr = match v {
            Value::Vector(a) => Arc::as_ptr(a) as *const u8 as usize,
            Value::Map(a) => Arc::as_ptr(a) as *const u8 as usize,
            Value::Set(a) => Arc::as_ptr(a) as *const u8 as usize,
            _ => continue,
        };
        if !seen.insert(ptr) {
            continue;
        }
        match v {
            Value::Vector(items) => stack.extend(items.iter().map(|x| (x, depth + 1))),
            Value::Set(items) => stack.extend(items.iter().map(|x| (x, depth + 1))),
            Value::Map(m) => {
                for (k, x) in m.iter() {
                    stack.push((k, depth + 1));
                    stack.push((x, depth + 1));
                }
            }
            _ => {}
        }
    }
    false
}

/// How a run ended.
#[derive(Debug, Clone)]
pub enum RunResult {
    /// The value of the last form.
    Value(Value),
    /// `(return v)`.
    Returned(Value),
    /// `(fail v)`.
    Failed(Value),
    /// An error.
    Error(EvalError),
}

/// Resource usage of a run.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Usage {
    /// Wall-clock time of parse + analyze + eval.
    pub duration: Duration,
    /// Fuel units burned (calls, iterations, builtin work).
    pub fuel: u64,
    /// Bytes charged to the memory budget.
    pub heap_bytes: u64,
}

/// The result of a run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Outcome {
    /// Value, return, fail or error.
    pub result: RunResult,
    /// The result printed with `to_clojure` (untruncated; empty on error).
    pub printed: String,
    /// `println` lines in order.
    pub prints: Vec<String>,
    /// Tool calls in order.
    pub tool_calls: Vec<ToolCallRecord>,
    /// User definitions after the run (unchanged when the run failed).
    pub memory: Globals,
    /// Resource usage.
    pub usage: Usage,
}

impl Outcome {
    /// An outcome that failed before the program ran (or could not run at all).
    pub fn failure(e: EvalError, memory: Globals) -> Self {
        Outcome {
            result: RunResult::Error(e),
            printed: String::new(),
            prints: Vec::new(),
            tool_calls: Vec::new(),
            memory,
            usage: Usage::default(),
        }
    }

    /// True for value and return results.
    pub fn is_ok(&self) -> bool {
        matches!(self.result, RunResult::Value(_) | RunResult::Returned(_))
    }

    /// The result value for value/return/fail outcomes.
    pub fn value(&self) -> Option<&Value> {
        match &self.result {
            RunResult::Value(v) | RunResult::Returned(v) | RunResult::Failed(v) => Some(v),
            RunResult::Error(_) => None,
        }
    }

    /// The error, if the run failed with one.
    pub fn error(&self) -> Option<&EvalError> {
        match &self.result {
            RunResult::Error(e) => Some(e),
            _ => None,
        }
    }

    /// The stable reason of a failed run: the error kind's name, or `fail` for `(fail v)`.
    pub fn reason(&self) -> Option<&'static str> {
        match &self.result {
            RunResult::Error(e) => Some(e.kind.as_str()),
            RunResult::Failed(_) => Some("fail"),
            _ => None,
        }
    }
}
