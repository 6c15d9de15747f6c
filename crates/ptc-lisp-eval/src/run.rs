//! The one-call convenience API and the [`Outcome`] every run produces.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::cancel::Cancel;
use crate::engine::{Engine, RunInput};
use crate::error::{ErrorKind, EvalError};
use crate::function::Function;
use crate::host::{Host, NoTools, ToolCallRecord};
use crate::interp::Globals;
use crate::limits::Limits;
use crate::meter;
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

/// What [`nesting`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nesting {
    /// Nothing deeper than the limit.
    Within,
    /// Some value sits deeper than the limit.
    TooDeep,
    /// The walk stopped early (deadline or cancellation; the meter recorded which).
    Stopped,
}

/// Whether `v` holds anything more than `max` levels below it, counting every level a
/// value can hold another at: collection items, map keys and values, and what functions
/// hold (a closure's captures, a native function's values and state, `reduced`, what a
/// lazy sequence was built from). A value nested too deep here could not be printed,
/// compared or converted safely off the evaluation thread.
///
/// Iterative (an explicit stack, never deeper than `max` frames), metered per node, and
/// linear in the distinct nodes: a shared node's height (levels down to its deepest leaf)
/// is computed once and remembered, so a node reached again at a greater depth is still
/// judged by its full height.
pub(crate) fn nesting(v: &Value, max: usize) -> Nesting {
    struct Frame {
        key: usize,
        /// Where this node's held values begin in `pending`.
        start: usize,
        /// Levels from this node to its deepest leaf found so far (the node itself is 1).
        height: usize,
    }
    // the held values still to visit, of every open node (each node's after its parent's)
    let mut pending: Vec<Value> = Vec::new();
    let Some(key) = identity(v) else { return Nesting::Within };
    let leaves = add_held(v, &mut pending);
    if leaves && max < 1 {
        return Nesting::TooDeep;
    }
    let mut heights: HashMap<usize, usize> = HashMap::new();
    let mut stack = vec![Frame { key, start: 0, height: if leaves { 2 } else { 1 } }];
    loop {
        // the depth of the held values of the node on top
        let depth = stack.len();
        let Some(top) = stack.last_mut() else { return Nesting::Within };
        let next = if pending.len() > top.start { pending.pop() } else { None };
        if let Some(kid) = next {
            let Some(key) = identity(&kid) else { continue };
            if let Some(&h) = heights.get(&key) {
                if depth + h - 1 > max {
                    return Nesting::TooDeep;
                }
                top.height = top.height.max(h + 1);
                continue;
            }
            if depth > max || !meter::step() {
                return if depth > max { Nesting::TooDeep } else { Nesting::Stopped };
            }
            let start = pending.len();
            let leaves = add_held(&kid, &mut pending);
            if leaves && depth + 1 > max {
                return Nesting::TooDeep;
            }
            stack.push(Frame { key, start, height: if leaves { 2 } else { 1 } });
        } else {
            let (key, h) = (top.key, top.height);
            heights.insert(key, h);
            stack.pop();
            if let Some(parent) = stack.last_mut() {
                parent.height = parent.height.max(h + 1);
            }
        }
    }
}

/// The identity of a value that can hold others (`None` for plain values). A lazy step is
/// handed out as a fresh function value each time, so its identity is the sequence's.
fn identity(v: &Value) -> Option<usize> {
    Some(match v {
        Value::Vector(a) | Value::List(a) => Arc::as_ptr(a) as *const u8 as usize,
        Value::Set(a) => Arc::as_ptr(a) as *const u8 as usize,
        Value::Map(a) => Arc::as_ptr(a) as *const u8 as usize,
        Value::Func(f) => match &**f {
            Function::Lazy(l) => Arc::as_ptr(l) as *const u8 as usize,
            _ => Arc::as_ptr(f) as *const u8 as usize,
        },
        _ => return None,
    })
}

/// Pushes the values `v` holds that can hold others in turn onto `pending`; `true` when
/// it also holds plain values (leaves one level down).
fn add_held(v: &Value, pending: &mut Vec<Value>) -> bool {
    let mut leaves = false;
    let mut add = |x: &Value| {
        if matches!(x, Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_) | Value::Func(_)) {
            pending.push(x.clone());
        } else {
            leaves = true;
        }
    };
    match v {
        Value::Vector(a) | Value::List(a) => a.iter().for_each(&mut add),
        Value::Set(a) => a.iter().for_each(&mut add),
        Value::Map(a) => {
            for (k, x) in a.iter() {
                add(k);
                add(x);
            }
        }
        Value::Func(f) => f.each_held(&mut |x| add(&x)),
        _ => {}
    }
    leaves
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

    /// The reason of a failed run: the error's kind, or [`ErrorKind::Fail`] for `(fail v)`.
    pub fn failure_kind(&self) -> Option<ErrorKind> {
        match &self.result {
            RunResult::Error(e) => Some(e.kind),
            RunResult::Failed(_) => Some(ErrorKind::Fail),
            _ => None,
        }
    }

    /// The stable reason of a failed run: the error kind's name, or `fail` for `(fail v)`.
    pub fn reason(&self) -> Option<&'static str> {
        self.failure_kind().map(ErrorKind::as_str)
    }
}
