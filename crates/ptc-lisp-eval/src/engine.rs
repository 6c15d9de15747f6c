//! The embedding front door: an [`Engine`] compiles programs once and runs them many times.
//!
//! The engine owns the guarantees an embedder should not have to think about: the limits,
//! the threads programs run on and the stack those threads have (see `stack.rs`), so deep
//! recursion ends in a clean `recursion_limit_exceeded` on every surface — CLI, MCP server,
//! agent loop — whatever thread the caller is on.
//!
//! ```
//! use ptc_lisp_eval::{Cancel, CompileEnv, Engine, Limits, NoTools, RunInput};
//! let engine = Engine::new(Limits::default());
//! let program = engine.compile("(->> data/xs (map inc) (reduce +))", &CompileEnv::new().with_data_keys(["xs"]))?;
//! for xs in [serde_json::json!([1, 2]), serde_json::json!([10, 20, 30])] {
//!     let input = RunInput::new().with_json_context(serde_json::json!({"xs": xs}).as_object().unwrap());
//!     let out = engine.run(&program, input, &NoTools, &Cancel::new());
//!     println!("{}", out.printed); // 5, then 63
//! }
//! # Ok::<(), ptc_lisp_eval::EvalError>(())
//! ```

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ptc_lisp_syntax::{ParseOptions, parse_program_with};

use crate::analyze::{self, AnalyzeEnv};
use crate::cancel::Cancel;
use crate::error::{ErrorKind, EvalError, Flow};
use crate::host::{Host, ToolSpec};
use crate::interp::Interp;
use crate::limits::{Limits, SharedBudget};
use crate::memory::Memory;
use crate::meter;
use crate::nesting::{MAX_VALUE_NESTING, Nesting, nesting};
use crate::outcome::{Outcome, RunResult, Usage};
use crate::pool::EvalPool;
use crate::printer::{PrintOptions, to_clojure_with};
use crate::stack;
use crate::value::{PMap, Value};

/// Longest error message a run returns (longer ones are clipped).
pub(crate) const MAX_MESSAGE_BYTES: usize = 4096;

/// Runs PTC-Lisp programs under one set of [`Limits`] on the threads of an [`EvalPool`].
/// Cheap to clone; `Send + Sync`.
///
/// [`Engine::new`] uses the process-wide pool ([`EvalPool::shared`]); a service that wants
/// its own sizes gives the engine a pool with [`Engine::with_pool`]. Building an engine is
/// cheap either way: the threads belong to the pool, not to the engine.
#[derive(Debug, Clone)]
pub struct Engine {
    limits: Arc<Limits>,
    pool: Option<EvalPool>,
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new(Limits::default())
    }
}

/// What a program is compiled against: the tools it may call, the `data/` keys and the
/// user definitions it may refer to by bare name.
#[derive(Debug, Clone, Default)]
pub struct CompileEnv {
    tools: Vec<ToolSpec>,
    data_keys: HashSet<String>,
    user_names: HashSet<String>,
}

impl CompileEnv {
    /// No tools, no data, no definitions.
    pub fn new() -> Self {
        CompileEnv::default()
    }

    /// The environment of one run: the host's tools, the input's data keys and memory.
    pub fn for_run(input: &RunInput, host: &dyn Host) -> Self {
        CompileEnv::new()
            .with_tools(host.tools())
            .with_data_keys(input.context.keys().filter_map(|k| k.as_str().map(str::to_string)))
            .with_memory(&input.memory)
    }

    /// Sets the tools (programs may call those whose exposure allows it).
    pub fn with_tools(mut self, tools: Vec<ToolSpec>) -> Self {
        self.tools = tools;
        self
    }

    /// Adds `data/` keys.
    pub fn with_data_keys<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Self {
        self.data_keys.extend(keys.into_iter().map(Into::into));
        self
    }

    /// Adds the names defined in `memory`.
    pub fn with_memory(mut self, memory: &Memory) -> Self {
        self.user_names.extend(memory.names().map(str::to_string));
        self
    }
}

/// A parsed and analyzed program: reusable across runs and threads.
#[derive(Debug, Clone)]
pub struct Program {
    inner: Arc<analyze::Program>,
}

impl Program {
    /// Names the program defines at top level (`def`, `defn`, `defonce`, `defn-`).
    pub fn defined_names(&self) -> &[String] {
        &self.inner.defined
    }
}

/// The per-run inputs of a program.
#[derive(Clone, Default)]
pub struct RunInput {
    /// Context data, readable as `data/<key>`.
    pub context: Arc<PMap>,
    /// User definitions from earlier runs.
    pub memory: Memory,
    /// Results of earlier turns, oldest first (`*1` is the last one).
    pub turn_history: Vec<Value>,
    /// A missing `data/` key is an error (MCP) instead of nil (default).
    pub strict_data: bool,
}

impl RunInput {
    /// Empty context, memory and history.
    pub fn new() -> Self {
        RunInput::default()
    }

    /// Sets the context from a JSON object (each key becomes `data/<key>`).
    pub fn with_json_context(mut self, obj: &serde_json::Map<String, serde_json::Value>) -> Self {
        self.context = Arc::new(crate::json::map_from_json(obj));
        self
    }

    /// Sets the memory (definitions of earlier runs).
    pub fn with_memory(mut self, memory: Memory) -> Self {
        self.memory = memory;
        self
    }
}

impl Engine {
    /// An engine enforcing `limits` on every run.
    pub fn new(limits: Limits) -> Self {
        Engine { limits: Arc::new(limits), pool: None }
    }

    /// This engine with its runs on `pool` instead of the process-wide one.
    pub fn with_pool(mut self, pool: EvalPool) -> Self {
        self.pool = Some(pool);
        self
    }

    /// The pool runs go to (`None` only when the process-wide pool could not start). The
    /// process-wide pool starts on the first run of an engine without a pool of its own,
    /// so an engine given [`with_pool`](Self::with_pool) never starts it.
    pub fn pool(&self) -> Option<&EvalPool> {
        match &self.pool {
            Some(own) => Some(own),
            None => EvalPool::shared_ref(),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Parses and analyzes `source` once. Fails with `program_too_large`, `parse_error`,
    /// `symbol_limit_exceeded` or an analysis error (`unbound_var`, `unknown_tool`,
    /// `invalid_form`...).
    pub fn compile(&self, source: &str, env: &CompileEnv) -> Result<Program, EvalError> {
        // parsing is iterative, but analysis recurses over the forms: give it the stack
        EvalPool::run_on(self.pool(), || self.compile_here(source, env)).unwrap_or_else(|f| Err(self.internal_error(f)))
    }

    /// `compile` on the current (evaluation) thread.
    fn compile_here(&self, source: &str, env: &CompileEnv) -> Result<Program, EvalError> {
        let limits = &self.limits;
        if source.len() > limits.max_program_bytes {
            return Err(EvalError::new(
                ErrorKind::ProgramTooLarge,
                format!(
                    "program size {} bytes exceeds limit of {} (max_program_bytes); send a shorter program",
                    source.len(),
                    limits.max_program_bytes
                ),
            ));
        }
        let forms = parse_program_with(source, &ParseOptions { max_depth: limits.max_nesting_depth })
            .map_err(|e| EvalError::new(ErrorKind::ParseError, e.message).at(e.span))?;
        let mut tools = std::collections::BTreeSet::new();
        let mut native_only = std::collections::BTreeSet::new();
        for t in &env.tools {
            if t.exposure.to_programs() {
                tools.insert(t.name.clone());
            } else {
                native_only.insert(t.name.clone());
            }
        }
        let aenv = AnalyzeEnv {
            user_names: env.user_names.clone(),
            tools,
            native_only,
            data_keys: env.data_keys.clone(),
            max_symbols: limits.max_symbols,
        };
        analyze::analyze_program(&forms, &aenv).map(|p| Program { inner: Arc::new(p) })
    }

    /// Runs a compiled program. Never panics; every failure is an [`Outcome`] error.
    pub fn run(&self, program: &Program, input: RunInput, host: &dyn Host, cancel: &Cancel) -> Outcome {
        let started = Instant::now();
        let fallback_memory = input.memory.clone();
        let limits = &self.limits;
        let mut out = EvalPool::run_on(self.pool(), || execute(limits, &program.inner, input, host, cancel))
            .unwrap_or_else(|f| Outcome::failure(self.internal_error(f), fallback_memory));
        out.usage.duration = started.elapsed();
        out
    }

    /// Compiles `source` against this input and host, then runs it.
    pub fn eval(&self, source: &str, input: RunInput, host: &dyn Host, cancel: &Cancel) -> Outcome {
        let started = Instant::now();
        let env = CompileEnv::for_run(&input, host);
        let fallback_memory = input.memory.clone();
        // compile and run in one trip to the pool
        let mut out = EvalPool::run_on(self.pool(), || match self.compile_here(source, &env) {
            Ok(p) => execute(&self.limits, &p.inner, input, host, cancel),
            Err(e) => Outcome::failure(e, input.memory),
        })
        .unwrap_or_else(|f| Outcome::failure(self.internal_error(f), fallback_memory));
        out.usage.duration = started.elapsed();
        out
    }

    fn internal_error(&self, f: stack::Failure) -> EvalError {
        let message = match f {
            stack::Failure::NoThread => {
                "internal error: the system refused a thread for the program (resources exhausted); retry later".to_string()
            }
            stack::Failure::Panicked => {
                "internal error: the interpreter failed on this program (a bug in ptc, not in the program); please report it — rewriting the step that failed usually avoids it".to_string()
            }
            stack::Failure::Saturated => {
                let (threads, queued) = self.pool().map_or((0, 0), |p| (p.options().threads, p.options().queue_bound));
                return EvalError::new(
                    ErrorKind::ParallelCapacityExceeded,
                    format!(
                        "the engine is saturated: {threads} run threads busy and {queued} runs already queued (PoolOptions::queue_bound); retry later, or give the engine's pool more threads or a longer queue"
                    ),
                );
            }
        };
        EvalError::new(ErrorKind::RuntimeError, message)
    }

    /// Runs `f` on one evaluation thread of the engine's pool and returns what it returns.
    /// Every compile and run `f` makes (with any engine) happens inline on that thread, with
    /// no handoff between threads per run: for loops of many small runs (`ptc eval
    /// --jsonl`, a batch job). The batch holds its thread until `f` returns, so a service
    /// answering many callers runs each program with [`Engine::run`] instead.
    ///
    /// ```
    /// use ptc_lisp_eval::{Engine, Limits, NoTools};
    /// let engine = Engine::new(Limits::default());
    /// let printed = engine.batch(|| (0..3).map(|i| engine.eval_with(&format!("(* {i} 2)"), &NoTools).printed).collect::<Vec<_>>())?;
    /// assert_eq!(printed, ["0", "2", "4"]);
    /// # Ok::<(), ptc_lisp_eval::EvalError>(())
    /// ```
    pub fn batch<R: Send>(&self, f: impl FnOnce() -> R + Send) -> Result<R, EvalError> {
        EvalPool::run_on(self.pool(), f).map_err(|e| self.internal_error(e))
    }

    /// Starts a thread of the caller's own that runs programs inline: it reserves the stack
    /// of an evaluation thread of the pool, so every [`Engine::eval`], [`Engine::run`] or
    /// [`Engine::batch`] made on it runs on it, with the same stack guarantee (deep
    /// recursion still ends in `recursion_limit_exceeded`) and no handoff to the pool. For
    /// a service's own reader thread that answers tiny programs itself (`ptc mcp` over
    /// stdio); a run on it holds that thread until it ends, so such a caller bounds its runs
    /// (a small `max_fuel` and `timeout`) and sends the rest to the pool.
    ///
    /// ```
    /// use ptc_lisp_eval::{Engine, Limits, NoTools};
    /// let engine = Engine::new(Limits::default());
    /// let here = Engine::spawn_eval_thread("reader", move || engine.eval_with("(+ 1 2)", &NoTools).printed)?;
    /// assert_eq!(here.join().ok().as_deref(), Some("3"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn spawn_eval_thread<T: Send + 'static>(
        name: impl Into<String>,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::io::Result<std::thread::JoinHandle<T>> {
        std::thread::Builder::new().name(name.into()).stack_size(stack::EVAL_STACK_BYTES).spawn(move || {
            stack::mark_eval_thread(stack::EVAL_STACK_BYTES);
            f()
        })
    }

    /// True on a thread whose stack the engine chose: a thread of an evaluation pool or
    /// one started by [`Engine::spawn_eval_thread`]. A run made here runs inline, with the
    /// stack guarantee, while the stack has room for it (a nested run short of room gets
    /// a fresh thread); elsewhere it is handed to the pool. A service that answers small
    /// programs on its own threads asks this before it runs one in place.
    ///
    /// ```
    /// use ptc_lisp_eval::Engine;
    /// assert!(!Engine::on_eval_thread());
    /// let there = Engine::spawn_eval_thread("worker", Engine::on_eval_thread)?;
    /// assert_eq!(there.join().ok(), Some(true));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn on_eval_thread() -> bool {
        stack::is_eval_thread()
    }

    /// Hands `f` to a run thread of the engine's pool and returns at once; the future
    /// resolves to what `f` returns. No thread waits meanwhile, so an async service awaits
    /// many runs on a few runtime threads; runs `f` starts happen inline on its run thread.
    /// The future is runtime-agnostic. Dropping it does not stop `f`: stop a run through
    /// its [`Cancel`] handle.
    pub fn spawn<R: Send + 'static, F: FnOnce() -> R + Send + 'static>(
        &self,
        f: F,
    ) -> impl std::future::Future<Output = Result<R, EvalError>> + Send + 'static + use<R, F> {
        let handle = EvalPool::spawn_on(self.pool(), f);
        let engine = self.clone();
        async move { handle.await.map_err(|e| engine.internal_error(e)) }
    }

    /// [`Engine::eval`] on a run thread, awaited without blocking the caller's thread.
    /// Dropping the future cancels the run (through a child of `cancel`).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use ptc_lisp_eval::{Cancel, Engine, Limits, NoTools, RunInput};
    /// let engine = Engine::new(Limits::default());
    /// let run = engine.eval_async("(+ 1 2)", RunInput::new(), Arc::new(NoTools), &Cancel::new());
    /// # let out = futures_lite_block_on(run);
    /// # fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     let mut f = std::pin::pin!(f);
    /// #     let waker = std::task::Waker::noop();
    /// #     loop {
    /// #         if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut std::task::Context::from_waker(waker)) { return v; }
    /// #         std::thread::yield_now();
    /// #     }
    /// # }
    /// assert_eq!(out.printed, "3");
    /// ```
    pub fn eval_async(
        &self,
        source: &str,
        input: RunInput,
        host: Arc<dyn Host>,
        cancel: &Cancel,
    ) -> impl std::future::Future<Output = Outcome> + Send + 'static + use<> {
        let source = source.to_string();
        self.spawn_cancellable(input, cancel, move |engine, input, cancel| {
            engine.eval(&source, input, host.as_ref(), cancel)
        })
    }

    /// [`Engine::run`] on a run thread, awaited without blocking the caller's thread.
    /// Dropping the future cancels the run (through a child of `cancel`).
    pub fn run_async(
        &self,
        program: &Program,
        input: RunInput,
        host: Arc<dyn Host>,
        cancel: &Cancel,
    ) -> impl std::future::Future<Output = Outcome> + Send + 'static + use<> {
        let program = program.clone();
        self.spawn_cancellable(input, cancel, move |engine, input, cancel| {
            engine.run(&program, input, host.as_ref(), cancel)
        })
    }

    /// Hands `work` to a run thread under a child of `cancel`; the future resolves to its
    /// outcome, and dropping it before then cancels the run.
    fn spawn_cancellable<W>(
        &self,
        input: RunInput,
        cancel: &Cancel,
        work: W,
    ) -> impl std::future::Future<Output = Outcome> + Send + 'static + use<W>
    where
        W: FnOnce(&Engine, RunInput, &Cancel) -> Outcome + Send + 'static,
    {
        let engine = self.clone();
        let fallback_memory = input.memory.clone();
        let guard = CancelOnDrop(Some(cancel.child()));
        let cancel = guard.0.clone().unwrap_or_default();
        let handle = EvalPool::spawn_on(self.pool(), {
            let engine = engine.clone();
            move || work(&engine, input, &cancel)
        });
        async move {
            let mut guard = guard;
            let out = handle.await.unwrap_or_else(|e| Outcome::failure(engine.internal_error(e), fallback_memory));
            guard.0 = None;
            out
        }
    }

    /// `eval` with no context, no memory and a fresh cancel handle.
    pub fn eval_with(&self, source: &str, host: &dyn Host) -> Outcome {
        self.eval(source, RunInput::new(), host, &Cancel::new())
    }
}

/// Cancels the run of a future that is dropped before it finished.
struct CancelOnDrop(Option<Cancel>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            c.cancel();
        }
    }
}

/// One run on the current (evaluation) thread.
fn execute(
    limits: &Arc<Limits>,
    program: &analyze::Program,
    input: RunInput,
    host: &dyn Host,
    cancel: &Cancel,
) -> Outcome {
    let budget = Arc::new(SharedBudget::new(limits, cancel.clone()));
    let _meter = meter::install(budget.clone());
    let memory_before = input.memory.clone();
    // a run whose handle is already cancelled or past its deadline does not start
    if let Err(Flow::Error(e)) = budget.check_time() {
        return Outcome::failure(*e, memory_before);
    }
    let mut interp =
        Interp::new(host, limits.clone(), budget.clone(), input.context, input.memory, Arc::new(input.turn_history));
    interp.set_strict_data(input.strict_data);
    let raw = interp.run_program(&program.nodes, program.frame_size);
    // lazy sequences in the result are realised here, under the run's limits, as
    // Clojure's printer would; an infinite one (which would print forever) is an error,
    // unless the value is too deep to hand out at all (refused below)
    let raw = {
        let mut cx = crate::builtins::BuiltinContext::new(&mut interp, "printing the result");
        let mut realise = |v: Value| match crate::lazy::realize_within(
            &mut cx,
            "printing the result",
            v.clone(),
            MAX_VALUE_NESTING,
        ) {
            Err(_) if nesting(&v, MAX_VALUE_NESTING) == Nesting::TooDeep => Ok(v),
            other => other,
        };
        match raw {
            Ok(v) => realise(v),
            Err(Flow::Return(v)) => realise(v).and_then(|v| Err(Flow::Return(v))),
            Err(Flow::Fail(v)) => realise(v).and_then(|v| Err(Flow::Fail(v))),
            other => other,
        }
    };
    let mut result = match raw {
        Ok(v) => RunResult::Value(v),
        Err(Flow::Return(v)) => RunResult::Returned(v),
        Err(Flow::Fail(v)) => RunResult::Failed(v),
        Err(Flow::Error(e)) => RunResult::Error(*e),
        Err(Flow::Recur) => RunResult::Error(EvalError::new(ErrorKind::InvalidForm, "recur outside of loop or fn")),
    };
    // values nested deeper than this cannot be printed, compared or converted safely off
    // the evaluation thread, so they become errors here; functions count with what they
    // hold (a closure over deep data is deep)
    let value_nesting = match &result {
        RunResult::Value(v) | RunResult::Returned(v) | RunResult::Failed(v) => nesting(v, MAX_VALUE_NESTING),
        RunResult::Error(_) => Nesting::Within,
    };
    let nesting = match value_nesting {
        Nesting::Within => interp
            .definitions()
            .iter()
            .map(|(_, v)| v)
            .map(|v| nesting(v, MAX_VALUE_NESTING))
            .find(|n| *n != Nesting::Within)
            .unwrap_or(Nesting::Within),
        other => other,
    };
    match nesting {
        Nesting::Within => {}
        Nesting::TooDeep => {
            result = RunResult::Error(EvalError::new(
                ErrorKind::OutputTooLarge,
                format!(
                    "the result (or a definition) is nested more than {MAX_VALUE_NESTING} levels deep, counting the values functions hold (closures, constantly, partial, comp, reduced...); return a flatter structure"
                ),
            ));
        }
        Nesting::Stopped => {
            if let Err(Flow::Error(e)) = budget.check_time() {
                result = RunResult::Error(*e);
            }
        }
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
    // no message leaves the engine larger than this, whatever a builtin put in it
    if let RunResult::Error(e) = &mut result
        && e.message.len() > MAX_MESSAGE_BYTES
    {
        e.message = crate::printer::clip(&e.message, MAX_MESSAGE_BYTES / 4).into_owned();
    }
    // a walk that stopped early (deadline, cancellation, stack) may have given a wrong
    // answer: the run ends in that error whatever it computed
    if let Err(Flow::Error(e)) = budget.check_time()
        && !matches!(result, RunResult::Error(_))
    {
        result = RunResult::Error(*e);
        printed.clear();
    }
    let ok = matches!(result, RunResult::Value(_) | RunResult::Returned(_));
    Outcome {
        result,
        printed,
        prints: interp.take_prints(),
        tool_calls: interp.take_tool_calls(),
        memory: if ok { interp.take_definitions() } else { memory_before },
        usage: Usage {
            duration: Duration::ZERO,
            fuel: interp.fuel(),
            heap_bytes: budget.heap_used.load(Ordering::Relaxed),
        },
    }
}
