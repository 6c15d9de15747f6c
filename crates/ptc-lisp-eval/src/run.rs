//! The run API: one call from source text to an [`Outcome`].

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use ptc_lisp_syntax::{ParseOptions, parse_program_with};

use crate::analyze::{AnalyzeEnv, analyze_program};
use crate::error::{ErrorKind, EvalError, Flow};
use crate::host::{Host, NoTools, ToolCallRecord};
use crate::interp::{Globals, Interp};
use crate::limits::{Limits, SharedBudget};
use crate::printer::{PrintOptions, to_clojure_with};
use crate::value::{PMap, Value};

/// Stack reserved (virtually) for the evaluation thread. Calls check the remaining
/// stack, so deep recursion ends in `recursion_limit_exceeded`, never a crash.
const EVAL_STACK_BYTES: usize = 512 * 1024 * 1024;

/// Everything a run needs besides the source.
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
    /// Set to true from another thread to stop the run.
    pub cancel: Arc<AtomicBool>,
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
            cancel: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl RunOptions {
    /// Sets the context from a JSON object.
    pub fn with_json_context(mut self, obj: &serde_json::Map<String, serde_json::Value>) -> Self {
        let whole = crate::json::from_json(&serde_json::Value::Object(obj.clone()));
        if let Value::Map(m) = whole {
            self.context = m;
        }
        self
    }
}

/// Deepest collection nesting a result or definition may have.
pub const MAX_VALUE_NESTING: usize = 1_000;

/// True when `v` nests collections deeper than `max`. Iterative, and shared
/// sub-values are visited once, so it is linear in the distinct nodes.
fn nesting_exceeds(v: &Value, max: usize) -> bool {
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
}

/// Parses, analyzes and evaluates `source`.
///
/// Evaluation runs on a worker thread with a large stack (workers are kept for reuse, so
/// a run costs no thread start), so deep recursion ends in a `recursion_limit_exceeded`
/// error instead of a crashed process.
pub fn run(source: &str, opts: RunOptions) -> Outcome {
    let started = Instant::now();
    let fallback_memory = opts.memory.clone();
    // the host's context is released after timing, so usage reflects the program's work
    let context = opts.context.clone();
    let (reply_tx, reply_rx) = mpsc::channel();
    let mut job = Some(Job { source: source.to_string(), opts, reply: reply_tx });
    // an idle worker may have exited; retry with a fresh one
    for _ in 0..3 {
        let Some(j) = job.take() else { break };
        let worker = idle_workers().lock().ok().and_then(|mut w| w.pop()).or_else(spawn_worker);
        match worker {
            Some(w) => {
                if let Err(mpsc::SendError(j)) = w.send(j) {
                    job = Some(j);
                }
            }
            None => job = Some(j),
        }
    }
    let mut outcome = match (job, reply_rx.recv()) {
        (None, Ok(o)) => o,
        _ => Outcome {
            result: RunResult::Error(EvalError::new(
                ErrorKind::RuntimeError,
                "internal error: no evaluation thread could run the program",
            )),
            printed: String::new(),
            prints: Vec::new(),
            tool_calls: Vec::new(),
            memory: fallback_memory,
            usage: Usage::default(),
        },
    };
    outcome.usage.duration = started.elapsed();
    drop(context);
    outcome
}

struct Job {
    source: String,
    opts: RunOptions,
    reply: mpsc::Sender<Outcome>,
}

/// Idle evaluation threads, each waiting on its own channel.
fn idle_workers() -> &'static Mutex<Vec<mpsc::Sender<Job>>> {
    static IDLE: OnceLock<Mutex<Vec<mpsc::Sender<Job>>>> = OnceLock::new();
    IDLE.get_or_init(|| Mutex::new(Vec::new()))
}

/// Idle workers kept for reuse; more can run at once, extra ones exit when done.
const MAX_IDLE_WORKERS: usize = 16;

fn spawn_worker() -> Option<mpsc::Sender<Job>> {
    let (tx, rx) = mpsc::channel::<Job>();
    let me = tx.clone();
    std::thread::Builder::new()
        .name("ptc-eval".into())
        .stack_size(EVAL_STACK_BYTES)
        .spawn(move || {
            for job in rx {
                let out = run_inner(&job.source, job.opts, EVAL_STACK_BYTES - 16 * 1024 * 1024);
                let _ = job.reply.send(out);
                match idle_workers().lock() {
                    Ok(mut idle) if idle.len() < MAX_IDLE_WORKERS => idle.push(me.clone()),
                    _ => return,
                }
            }
        })
        .ok()?;
    Some(tx)
}

/// Like [`run`] but on the calling thread, assuming it has at least 6 MiB of stack left.
pub fn run_on_this_thread(source: &str, opts: RunOptions) -> Outcome {
    run_with_stack(source, opts, 6 * 1024 * 1024)
}

/// Like [`run`] but on the calling thread, which the caller guarantees has `stack_bytes`
/// of stack to spare (hosts that build their threads with large stacks skip a hand-off).
pub fn run_with_stack(source: &str, opts: RunOptions, stack_bytes: usize) -> Outcome {
    let started = Instant::now();
    let context = opts.context.clone();
    let mut out = run_inner(source, opts, stack_bytes);
    out.usage.duration = started.elapsed();
    drop(context);
    out
}

fn run_inner(source: &str, opts: RunOptions, stack_bytes: usize) -> Outcome {
    let limits = Arc::new(opts.limits.clone());
    let budget = Arc::new(SharedBudget::new(&limits, opts.cancel.clone()));
    let memory_before = opts.memory.clone();
    let fail = |e: EvalError, memory: Globals| Outcome {
        result: RunResult::Error(e),
        printed: String::new(),
        prints: Vec::new(),
        tool_calls: Vec::new(),
        memory,
        usage: Usage::default(),
    };
    if source.len() > limits.max_program_bytes {
        return fail(
            EvalError::new(
                ErrorKind::ProgramTooLarge,
                format!(
                    "program size {} bytes exceeds limit of {} (max_program_bytes)",
                    source.len(),
                    limits.max_program_bytes
                ),
            ),
            memory_before,
        );
    }
    let forms = match parse_program_with(source, &ParseOptions { max_depth: limits.max_nesting_depth }) {
        Ok(f) => f,
        Err(e) => {
            let span = e.span;
            return fail(EvalError::new(ErrorKind::ParseError, e.message).at(span), memory_before);
        }
    };
    let env = AnalyzeEnv {
        user_names: opts.memory.values.keys().map(|k| k.to_string()).collect(),
        tools: opts.host.tool_names().into_iter().collect(),
        data_keys: opts.context.keys().filter_map(|k| k.as_str().map(str::to_string)).collect::<HashSet<_>>(),
        max_symbols: limits.max_symbols,
    };
    let program = match analyze_program(&forms, &env) {
        Ok(p) => p,
        Err(e) => return fail(e, memory_before),
    };
    let mut interp = Interp::new(
        opts.host.clone(),
        limits.clone(),
        budget.clone(),
        opts.context.clone(),
        opts.memory,
        Arc::new(opts.turn_history),
    );
    interp.strict_data = opts.strict_data;
    interp.set_stack(stack_bytes);
    let raw = interp.run_program(&program.nodes, program.frame_size);
    let mut result = match raw {
        Ok(v) => RunResult::Value(v),
        Err(Flow::Return(v)) => RunResult::Returned(v),
        Err(Flow::Fail(v)) => RunResult::Failed(v),
        Err(Flow::Error(e)) => RunResult::Error(*e),
        Err(Flow::Recur) => RunResult::Error(EvalError::new(ErrorKind::InvalidForm, "recur outside of loop or fn")),
    };
    // values nested deeper than this cannot leave the evaluation thread safely
    // (their destructor recursion would need a deep stack), so they become errors here
    let too_deep = match &result {
        RunResult::Value(v) | RunResult::Returned(v) | RunResult::Failed(v) => nesting_exceeds(v, MAX_VALUE_NESTING),
        RunResult::Error(_) => false,
    } || interp.globals.values.values().any(|v| nesting_exceeds(v, MAX_VALUE_NESTING));
    if too_deep {
        result = RunResult::Error(EvalError::new(
            ErrorKind::OutputTooLarge,
            format!(
                "the result (or a definition) is nested more than {MAX_VALUE_NESTING} levels deep; return a flatter structure"
            ),
        ));
    }
    let mut printed = String::new();
    if let RunResult::Value(v) | RunResult::Returned(v) | RunResult::Failed(v) = &result {
        let opts = PrintOptions { max_bytes: limits.max_result_bytes, ..PrintOptions::default() };
        let (text, truncated) = to_clojure_with(v, &opts);
        if truncated {
            result = RunResult::Error(EvalError::new(
                ErrorKind::OutputTooLarge,
                format!(
                    "the result is larger than {} bytes when printed (max_result_bytes); return a summary (count, first few items, aggregates) instead",
                    limits.max_result_bytes
                ),
            ));
        } else {
            printed = text;
        }
    }
    let ok = matches!(result, RunResult::Value(_) | RunResult::Returned(_));
    Outcome {
        result,
        printed,
        prints: std::mem::take(&mut interp.prints),
        tool_calls: std::mem::take(&mut interp.tool_calls),
        memory: if ok { std::mem::take(&mut interp.globals) } else { memory_before },
        usage: Usage {
            duration: Duration::ZERO,
            fuel: interp.fuel(),
            heap_bytes: budget.heap_used.load(std::sync::atomic::Ordering::Relaxed),
        },
    }
}
