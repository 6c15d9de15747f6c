//! `Engine`, `Program`, `Outcome` and `Cancel`: the evaluator's embedding API in Python.
//!
//! Every run releases the GIL while the program runs on a thread of the engine's pool
//! (`EvalPool`), so Python threads run programs side by side; a tool call takes the GIL
//! back for as long as the Python function runs. The async forms hand the run to the pool
//! and return an `asyncio` future resolved from the pool thread (no Python thread waits);
//! cancelling the awaiting task cancels the run.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use ptc_lisp_eval::{
    Cancel as EvalCancel, CompileEnv, Engine as EvalEngine, EvalError, EvalPool, Limits, Outcome as EvalOutcome,
    PoolOptions, RunInput, RunResult, Value,
};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString};

use crate::convert;
use crate::tools::{PyHost, Tool, tool_set};

/// A cancel handle: `cancel()` from any thread stops the runs given it (they end in
/// `cancelled`).
#[pyclass(module = "ptc_runner._native", frozen)]
#[derive(Clone, Default)]
pub(crate) struct Cancel {
    pub(crate) inner: EvalCancel,
}

#[pymethods]
impl Cancel {
    #[new]
    fn py_new() -> Self {
        Cancel::default()
    }

    /// Stops every run given this handle, at its next check.
    fn cancel(&self) {
        self.inner.cancel();
    }

    /// True once `cancel()` was called.
    #[getter]
    fn cancelled(&self) -> bool {
        self.inner.is_cancelled()
    }
}

/// A run's context converted once: give it to many runs and none of them converts the
/// Python objects again (a large context costs its conversion on every run otherwise).
///
/// `Context(dict)` converts a dict (each key becomes `data/<key>`);
/// `Context.from_json(text)` parses JSON text straight into values, without Python
/// objects in between.
#[pyclass(module = "ptc_runner._native", frozen)]
pub(crate) struct Context {
    pub(crate) map: Arc<ptc_lisp_eval::value::PMap>,
}

#[pymethods]
impl Context {
    #[new]
    fn py_new(data: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Context { map: convert::context_map(Some(data))? })
    }

    /// Parses a JSON object (str or bytes) into a context; `max_bytes` caps what the
    /// loaded values may take (default: no cap).
    #[staticmethod]
    #[pyo3(signature = (text, max_bytes=None))]
    fn from_json(py: Python<'_>, text: &Bound<'_, PyAny>, max_bytes: Option<u64>) -> PyResult<Self> {
        let owned: String = if let Ok(s) = text.cast::<PyString>() {
            s.to_str()?.to_string()
        } else if let Ok(b) = text.extract::<Vec<u8>>() {
            String::from_utf8(b).map_err(|_| PyValueError::new_err("the context is not valid UTF-8"))?
        } else {
            return Err(PyTypeError::new_err("from_json takes the JSON text as str or bytes"));
        };
        let parsed = py.detach(|| ptc_lisp_eval::json::parse_context(&owned, max_bytes.unwrap_or(u64::MAX)));
        parsed.map(|m| Context { map: Arc::new(m) }).map_err(PyValueError::new_err)
    }

    /// The context's keys (the `data/` names).
    fn keys(&self) -> Vec<String> {
        self.map.keys().map(|k| k.as_str().map_or_else(|| ptc_lisp_eval::to_clojure(k), str::to_string)).collect()
    }

    /// The context back as a dict of plain Python values.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &Value::Map(self.map.clone()))
    }

    fn __len__(&self) -> usize {
        self.map.len()
    }

    fn __repr__(&self) -> String {
        format!("Context({})", self.keys().join(", "))
    }
}

/// Limits from a dict of the limits table's names (`{"timeout_ms": 500}`); `None` turns
/// an optional limit off. Every value is checked against the table's range.
pub(crate) fn limits_from(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Limits> {
    let mut limits = Limits::default();
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(limits) };
    let Ok(d) = obj.cast::<PyDict>() else {
        return Err(PyTypeError::new_err(
            "limits must be a dict such as {\"timeout_ms\": 500, \"max_heap_bytes\": 1048576}",
        ));
    };
    for (k, v) in d.iter() {
        let name: String = k.extract().map_err(|_| PyTypeError::new_err("limit names must be str"))?;
        let Some(spec) = Limits::spec(&name) else {
            let known: Vec<&str> = Limits::table().iter().map(|s| s.name).collect();
            return Err(PyValueError::new_err(format!("unknown limit {name:?}; the limits are {}", known.join(", "))));
        };
        let value = if v.is_none() {
            None
        } else {
            Some(v.extract::<u64>().map_err(|_| {
                PyValueError::new_err(format!(
                    "limit {name} must be a non-negative int ({}){}",
                    spec.range_text(),
                    if spec.optional { " or None" } else { "" }
                ))
            })?)
        };
        spec.set(&mut limits, value).map_err(|e| PyValueError::new_err(e.to_string()))?;
    }
    Ok(limits)
}

/// The limits as a dict of the table's names.
fn limits_dict<'py>(py: Python<'py>, limits: &Limits) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for spec in Limits::table() {
        d.set_item(spec.name, spec.get(limits))?;
    }
    Ok(d)
}

/// A parsed and analyzed program, with the tools it was compiled against: run it many
/// times with different context.
#[pyclass(module = "ptc_runner._native", frozen)]
pub(crate) struct Program {
    program: ptc_lisp_eval::Program,
    tools: Arc<std::collections::BTreeMap<String, Tool>>,
    source: String,
}

#[pymethods]
impl Program {
    /// Names the program defines at top level.
    #[getter]
    fn defined_names(&self) -> Vec<String> {
        self.program.defined_names().to_vec()
    }

    /// The source text.
    #[getter]
    fn source(&self) -> &str {
        &self.source
    }

    fn __repr__(&self) -> String {
        let shown: String = self.source.chars().take(60).collect();
        let more = if shown.len() < self.source.len() { "..." } else { "" };
        format!("Program({shown:?}{more})")
    }
}

/// How a run ended: value, prints, tool calls and usage, or the failure.
#[pyclass(module = "ptc_runner._native", frozen, get_all)]
pub(crate) struct Outcome {
    /// True for a value or a `(return v)`.
    ok: bool,
    /// `"ok"` or `"error"`.
    status: &'static str,
    /// The reason of a failure (`parse_error`, `timeout`, `fail`...); `None` when ok.
    reason: Option<&'static str>,
    /// What went wrong, for a person or a model; `None` when ok.
    message: Option<String>,
    /// 1-based line of the failure, when known.
    line: Option<u32>,
    /// 1-based column of the failure, when known.
    column: Option<u32>,
    /// The result as a plain Python value (the `(fail v)` value for `fail`; else None).
    value: Py<PyAny>,
    /// The result printed as PTC-Lisp (`{:total 160}`); empty on error.
    printed: String,
    /// True when the program ended with `(return v)`.
    returned: bool,
    /// `println` lines, in order.
    prints: Vec<String>,
    /// One dict per tool call: `name`, `args`, `result` or `error` (`{reason, message}`),
    /// `duration_ms`.
    tool_calls: Py<PyList>,
    /// `{"duration_ms": float, "fuel": int, "heap_bytes": int}`.
    usage: Py<PyDict>,
}

#[pymethods]
impl Outcome {
    /// The envelope `ptc eval --output json` prints for this run, as a dict.
    fn envelope<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("status", self.status)?;
        if self.ok {
            d.set_item("result", &self.printed)?;
            d.set_item("value", &self.value)?;
            if self.returned {
                d.set_item("returned", true)?;
            }
        } else {
            d.set_item("reason", self.reason)?;
            d.set_item("message", &self.message)?;
            if self.reason == Some("fail") {
                d.set_item("result", &self.printed)?;
                d.set_item("value", &self.value)?;
            }
            if let (Some(l), Some(c)) = (self.line, self.column) {
                d.set_item("line", l)?;
                d.set_item("column", c)?;
            }
        }
        d.set_item("prints", &self.prints)?;
        d.set_item("tool_calls", &self.tool_calls)?;
        d.set_item("usage", &self.usage)?;
        Ok(d)
    }

    /// Raises the failure as a `ptc_runner.PtcError` subclass; returns the value when ok.
    fn raise_for_error(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let this = slf.get();
        if this.ok {
            return Ok(this.value.clone_ref(slf.py()));
        }
        Err(error_for(slf))
    }

    fn __repr__(&self) -> String {
        if self.ok {
            format!("Outcome(ok, {})", clip(&self.printed, 80))
        } else {
            format!(
                "Outcome({}, {:?})",
                self.reason.unwrap_or("error"),
                clip(self.message.as_deref().unwrap_or(""), 80)
            )
        }
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n { s.to_string() } else { format!("{}...", s.chars().take(n).collect::<String>()) }
}

static ERROR_FOR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The `ptc_runner` exception for a failed outcome (built by `ptc_runner._errors`).
fn error_for(outcome: &Bound<'_, Outcome>) -> PyErr {
    let py = outcome.py();
    let made = ERROR_FOR.import(py, "ptc_runner._errors", "error_for").and_then(|f| f.call1((outcome,)));
    match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}

/// The `ptc_runner` exception for an engine error raised before any program ran
/// (compilation, a refused batch or a saturated pool).
fn error_before_run(py: Python<'_>, e: EvalError) -> PyErr {
    match outcome_to_py(py, EvalOutcome::failure(e, Default::default())) {
        Ok(out) => error_for(&out),
        Err(e) => e,
    }
}

/// Converts an engine outcome into the Python `Outcome`.
pub(crate) fn outcome_to_py<'py>(py: Python<'py>, out: EvalOutcome) -> PyResult<Bound<'py, Outcome>> {
    let (ok, returned, value) = match &out.result {
        RunResult::Value(v) => (true, false, Some(v)),
        RunResult::Returned(v) => (true, true, Some(v)),
        RunResult::Failed(v) => (false, false, Some(v)),
        RunResult::Error(_) => (false, false, None),
    };
    let value = match value {
        Some(v) => convert::to_py(py, v)?.unbind(),
        None => py.None(),
    };
    let (reason, message, line, column) = match &out.result {
        RunResult::Value(_) | RunResult::Returned(_) => (None, None, None, None),
        RunResult::Failed(_) => (Some("fail"), Some(format!("the program called (fail {})", out.printed)), None, None),
        RunResult::Error(e) => {
            (Some(e.kind.as_str()), Some(e.message.clone()), e.span.map(|s| s.line), e.span.map(|s| s.column))
        }
    };
    let calls = PyList::empty(py);
    for c in &out.tool_calls {
        let d = PyDict::new(py);
        d.set_item("name", &c.name)?;
        d.set_item("args", convert::to_py(py, &c.args)?)?;
        if let Some(r) = &c.result {
            d.set_item("result", convert::to_py(py, r)?)?;
        }
        if let Some(e) = &c.error {
            let err = PyDict::new(py);
            err.set_item("reason", e.kind.to_string())?;
            err.set_item("message", &e.message)?;
            d.set_item("error", err)?;
        }
        d.set_item("duration_ms", c.duration.as_secs_f64() * 1000.0)?;
        calls.append(d)?;
    }
    let usage = PyDict::new(py);
    usage.set_item("duration_ms", out.usage.duration.as_secs_f64() * 1000.0)?;
    usage.set_item("fuel", out.usage.fuel)?;
    usage.set_item("heap_bytes", out.usage.heap_bytes)?;
    Bound::new(
        py,
        Outcome {
            ok,
            status: if ok { "ok" } else { "error" },
            reason,
            message,
            line,
            column,
            value,
            printed: out.printed,
            returned,
            prints: out.prints,
            tool_calls: calls.unbind(),
            usage: usage.unbind(),
        },
    )
}

/// What one run needs, gathered under the GIL before it is released.
struct Prepared {
    program: Option<ptc_lisp_eval::Program>,
    source: Option<String>,
    input: RunInput,
    host: PyHost,
    signature: Option<ptc_signature::Signature>,
    cancel: EvalCancel,
}

/// Runs PTC-Lisp programs under one set of limits on a pool of threads.
///
/// `Engine(limits=None, threads=None)`: `limits` is a dict of the limits table's names
/// (`ptc_runner.limits_table()`); `threads` gives the engine a pool of its own with that
/// many run threads (default: the process-wide pool, twice the cores, at least 8).
#[pyclass(module = "ptc_runner._native", frozen)]
pub(crate) struct Engine {
    engine: EvalEngine,
}

#[pymethods]
impl Engine {
    #[new]
    #[pyo3(signature = (limits=None, threads=None))]
    fn py_new(limits: Option<&Bound<'_, PyAny>>, threads: Option<usize>) -> PyResult<Self> {
        let mut engine = EvalEngine::new(limits_from(limits)?);
        if let Some(n) = threads {
            if n == 0 {
                return Err(PyValueError::new_err("threads must be at least 1 (or None for the shared pool)"));
            }
            let pool =
                EvalPool::new(PoolOptions::default().threads(n)).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
            engine = engine.with_pool(pool);
        }
        Ok(Engine { engine })
    }

    /// The limits in force, as a dict of the table's names.
    #[getter]
    fn limits<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        limits_dict(py, self.engine.limits())
    }

    /// Parses and analyzes `source` once, against `tools` and the keys of `context` (a dict
    /// or a list of key names). Raises `ParseError`, `UnboundVarError`, `UnknownToolError`...
    #[pyo3(signature = (source, tools=None, context=None))]
    fn compile(
        &self,
        py: Python<'_>,
        source: String,
        tools: Option<&Bound<'_, PyAny>>,
        context: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Program> {
        let tools = tool_set(tools)?;
        let mut keys: Vec<String> = Vec::new();
        if let Some(ctx) = context.filter(|c| !c.is_none()) {
            if let Ok(c) = ctx.cast::<Context>() {
                keys = c.get().keys();
            } else if let Ok(d) = ctx.cast::<PyDict>() {
                for k in d.keys() {
                    keys.push(k.extract()?);
                }
            } else {
                for k in ctx.try_iter()? {
                    keys.push(k?.extract()?);
                }
            }
        }
        let specs = tools.values().map(Tool::spec).collect();
        let env = CompileEnv::new().with_tools(specs).with_data_keys(keys);
        let engine = self.engine.clone();
        let compiled = py.detach(|| engine.compile(&source, &env));
        match compiled {
            Ok(program) => Ok(Program { program, tools, source }),
            Err(e) => Err(error_before_run(py, e)),
        }
    }

    /// Runs `program` (source text or a `Program`) and returns its `Outcome`; a failure
    /// raises the `PtcError` subclass named after its reason.
    #[pyo3(signature = (program, context=None, tools=None, signature=None, cancel=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        program: &Bound<'py, PyAny>,
        context: Option<&Bound<'py, PyAny>>,
        tools: Option<&Bound<'py, PyAny>>,
        signature: Option<&str>,
        cancel: Option<&Bound<'py, Cancel>>,
    ) -> PyResult<Bound<'py, Outcome>> {
        let out = self.run_blocking(py, program, context, tools, signature, cancel)?;
        if out.get().ok { Ok(out) } else { Err(error_for(&out)) }
    }

    /// `run` that never raises for the program's failures: the `Outcome` says what
    /// happened (`ok`, `reason`, `message`, `line`, `column`, `envelope()`).
    #[pyo3(signature = (program, context=None, tools=None, signature=None, cancel=None))]
    fn try_run<'py>(
        &self,
        py: Python<'py>,
        program: &Bound<'py, PyAny>,
        context: Option<&Bound<'py, PyAny>>,
        tools: Option<&Bound<'py, PyAny>>,
        signature: Option<&str>,
        cancel: Option<&Bound<'py, Cancel>>,
    ) -> PyResult<Bound<'py, Outcome>> {
        self.run_blocking(py, program, context, tools, signature, cancel)
    }

    /// `run` awaited on the running event loop: the program runs on the pool, `async def`
    /// tools are awaited on this loop, and cancelling the awaiting task cancels the run.
    #[pyo3(signature = (program, context=None, tools=None, signature=None, cancel=None))]
    fn run_async<'py>(
        &self,
        py: Python<'py>,
        program: &Bound<'py, PyAny>,
        context: Option<&Bound<'py, PyAny>>,
        tools: Option<&Bound<'py, PyAny>>,
        signature: Option<&str>,
        cancel: Option<&Bound<'py, Cancel>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.start_async(py, program, context, tools, signature, cancel, true)
    }

    /// Calls `fn()` on a run thread of the engine's pool and returns what it returns. Every
    /// run `fn` makes (with any engine) happens inline on that thread, with no hand-off
    /// between threads per run: for loops of many small runs. The batch holds its run
    /// thread until `fn` returns.
    fn batch(&self, py: Python<'_>, func: Py<PyAny>) -> PyResult<Py<PyAny>> {
        let engine = self.engine.clone();
        let result = py.detach(|| engine.batch(|| Python::attach(|py| func.bind(py).call0().map(Bound::unbind))));
        match result {
            Ok(returned) => returned,
            Err(e) => Err(error_before_run(py, e)),
        }
    }

    /// `try_run` awaited on the running event loop.
    #[pyo3(signature = (program, context=None, tools=None, signature=None, cancel=None))]
    fn try_run_async<'py>(
        &self,
        py: Python<'py>,
        program: &Bound<'py, PyAny>,
        context: Option<&Bound<'py, PyAny>>,
        tools: Option<&Bound<'py, PyAny>>,
        signature: Option<&str>,
        cancel: Option<&Bound<'py, Cancel>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.start_async(py, program, context, tools, signature, cancel, false)
    }
}

impl Engine {
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        &self,
        program: &Bound<'_, PyAny>,
        context: Option<&Bound<'_, PyAny>>,
        tools: Option<&Bound<'_, PyAny>>,
        signature: Option<&str>,
        cancel: Option<&Bound<'_, Cancel>>,
        event_loop: Option<Py<PyAny>>,
    ) -> PyResult<Prepared> {
        let (compiled, source, program_tools) = if let Ok(p) = program.cast::<Program>() {
            let p = p.get();
            (Some(p.program.clone()), None, Some(p.tools.clone()))
        } else if let Ok(s) = program.cast::<PyString>() {
            (None, Some(s.to_str()?.to_string()), None)
        } else {
            return Err(PyTypeError::new_err(
                "program must be PTC-Lisp source text (str) or a Program from Engine.compile",
            ));
        };
        let tools = match (tools.filter(|t| !t.is_none()), program_tools) {
            (Some(t), _) => tool_set(Some(t))?,
            (None, Some(t)) => t,
            (None, None) => tool_set(None)?,
        };
        let signature = match signature {
            Some(text) => Some(ptc_signature::parse(text).map_err(|e| {
                PyValueError::new_err(format!("invalid signature {text:?} at column {}: {}", e.column, e.message))
            })?),
            None => None,
        };
        let context = match context.map(|c| c.cast::<Context>()) {
            Some(Ok(c)) => c.get().map.clone(),
            _ => convert::context_map(context)?,
        };
        let input = RunInput { context, ..RunInput::default() };
        Ok(Prepared {
            program: compiled,
            source,
            input,
            host: PyHost { tools, event_loop },
            signature,
            cancel: cancel.map(|c| c.get().inner.clone()).unwrap_or_default(),
        })
    }

    fn run_blocking<'py>(
        &self,
        py: Python<'py>,
        program: &Bound<'py, PyAny>,
        context: Option<&Bound<'py, PyAny>>,
        tools: Option<&Bound<'py, PyAny>>,
        signature: Option<&str>,
        cancel: Option<&Bound<'py, Cancel>>,
    ) -> PyResult<Bound<'py, Outcome>> {
        let prepared = self.prepare(program, context, tools, signature, cancel, None)?;
        let engine = self.engine.clone();
        let out = py.detach(move || execute(&engine, prepared));
        outcome_to_py(py, out)
    }

    #[allow(clippy::too_many_arguments)]
    fn start_async<'py>(
        &self,
        py: Python<'py>,
        program: &Bound<'py, PyAny>,
        context: Option<&Bound<'py, PyAny>>,
        tools: Option<&Bound<'py, PyAny>>,
        signature: Option<&str>,
        cancel: Option<&Bound<'py, Cancel>>,
        raise_errors: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let asyncio = py.import("asyncio")?;
        let event_loop = asyncio.call_method0("get_running_loop")?;
        let future = event_loop.call_method0("create_future")?;
        let mut prepared =
            self.prepare(program, context, tools, signature, cancel, Some(event_loop.clone().unbind()))?;
        // the run's own child handle: cancelling the awaiting task stops it
        let run_cancel = Cancel { inner: prepared.cancel.child() };
        prepared.cancel = run_cancel.inner.clone();
        let aio = crate::tools::aio(py)?;
        aio.call_method1("cancel_with", (&future, Bound::new(py, run_cancel)?))?;
        let resolver = Resolver { event_loop: event_loop.unbind(), future: future.clone().unbind(), done: false };
        let engine = self.engine.clone();
        let spawned = self.engine.spawn(move || {
            let mut resolver = resolver;
            let out = execute(&engine, prepared);
            Python::attach(|py| {
                let result = outcome_to_py(py, out)
                    .and_then(|o| if raise_errors && !o.get().ok { Err(error_for(&o)) } else { Ok(o.into_any()) });
                resolver.resolve(py, result);
            });
        });
        // a pool that refused the run says so at once (saturated, no thread)
        let mut spawned = std::pin::pin!(spawned);
        if let Poll::Ready(Err(e)) = spawned.as_mut().poll(&mut TaskContext::from_waker(std::task::Waker::noop())) {
            return Err(error_before_run(py, e));
        }
        Ok(future)
    }
}

/// Settles the asyncio future of an async run from the pool thread, through the loop's
/// `call_soon_threadsafe`; if the run ends without settling it (a panic), dropping the
/// resolver fails the future instead of leaving the awaiting task hanging.
struct Resolver {
    event_loop: Py<PyAny>,
    future: Py<PyAny>,
    done: bool,
}

impl Resolver {
    fn resolve(&mut self, py: Python<'_>, result: PyResult<Bound<'_, PyAny>>) {
        self.done = true;
        let (value, error) = match result {
            Ok(v) => (v.unbind(), py.None()),
            Err(e) => (py.None(), e.into_value(py).into_any()),
        };
        let settled = crate::tools::aio(py).and_then(|aio| {
            let settle = aio.getattr("settle")?;
            self.event_loop.bind(py).call_method1("call_soon_threadsafe", (settle, &self.future, value, error))
        });
        // the loop is closed: nobody awaits the run any more
        let _ = settled;
    }
}

impl Drop for Resolver {
    fn drop(&mut self) {
        if !self.done {
            Python::attach(|py| {
                let err = PyRuntimeError::new_err("internal error: the run ended without an outcome; please report it");
                self.resolve(py, Err(err));
            });
        }
    }
}

/// One run on the current thread (the GIL released): compile when needed, run, check the
/// result against the signature.
fn execute(engine: &EvalEngine, p: Prepared) -> EvalOutcome {
    let mut out = match p.program {
        Some(program) => engine.run(&program, p.input, &p.host, &p.cancel),
        None => engine.eval(p.source.as_deref().unwrap_or(""), p.input, &p.host, &p.cancel),
    };
    if let Some(sig) = &p.signature {
        ptc_signature::enforce(&mut out, &sig.output);
    }
    out
}

/// Every limit of the table: `name`, `doc`, `unit`, `default`, `min`, `max`, `optional`,
/// `exceeded` (the reason a run ends with past it).
#[pyfunction]
pub(crate) fn limits_table(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for spec in Limits::table() {
        let d = PyDict::new(py);
        d.set_item("name", spec.name)?;
        d.set_item("doc", spec.doc)?;
        d.set_item("unit", format!("{:?}", spec.unit).to_lowercase())?;
        d.set_item("default", spec.default_value())?;
        d.set_item("min", spec.min)?;
        d.set_item("max", spec.max)?;
        d.set_item("optional", spec.optional)?;
        d.set_item("exceeded", spec.exceeded)?;
        out.append(d)?;
    }
    Ok(out)
}

/// Converts a value for tests of the conversion itself: Python → PTC-Lisp → Python.
#[pyfunction]
pub(crate) fn roundtrip<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let v: Value = convert::to_value(obj, "the value")?;
    convert::to_py(py, &v)
}
