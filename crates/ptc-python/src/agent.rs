//! `SubAgent` with a Python callable as the model.
//!
//! The model is any callable taking the request as a dict (`system`, `messages`, `turn`,
//! `tools`, `options` — the `LlmRequest` of the Rust API, as JSON) and returning the
//! answer: a dict (`content`, optional `tool_calls`, `usage` with `input`/`output`
//! tokens, `model`) or just the text. An `async def` model is awaited: on the caller's
//! loop under `run_async`, on the package's background loop under `run`. An exception the
//! model raises is an `llm_error`; one with a `kind` attribute naming an `LlmErrorKind`
//! (`rate_limit`, `timeout`, `server_error`...) is retried as the Rust API retries it.
//!
//! The mission runs on a process-wide Tokio runtime with the GIL released; the step
//! comes back as the `Step` dict of the Rust API (`ptc_runner.Step` wraps it).

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use ptc_lisp_eval::Cancel as EvalCancel;
use ptc_subagent::{
    BoxFuture, Llm, LlmError, LlmErrorKind, LlmRequest, LlmResponse, MemoryStrategy, Mode, MultipleCodeBlocks,
    SubAgent as RustAgent, SubAgentBuilder, SystemPrompt, TokenUsage, Tool as AgentTool, ToolContext, ToolError,
    ValidationMode,
};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::Value as Json;

use crate::convert;
use crate::engine::{Cancel, limits_from};
use crate::tools::{AwaitFailure, Tool, await_blocking, describe_exception, is_awaitable, tool_set};

/// The runtime missions run on (two workers: the programs themselves run on the
/// evaluator's pool, the runtime only waits for models, tools and timers).
fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    static RT: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("ptc-agent")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| PyRuntimeError::new_err(format!("cannot start the agent runtime: {e}")))
}

/// Wakes a Tokio task when a `concurrent.futures.Future` is done (its done-callback).
#[pyclass(module = "ptc_runner._native", frozen)]
struct Notify {
    tx: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
}

#[pymethods]
impl Notify {
    fn __call__(&self, _future: &Bound<'_, PyAny>) {
        if let Some(tx) = self.tx.lock().ok().and_then(|mut t| t.take()) {
            let _ = tx.send(());
        }
    }
}

/// A Python callable as the agent's model.
struct PyLlm {
    func: Py<PyAny>,
    event_loop: Option<Py<PyAny>>,
    name: String,
}

/// The error kind a model's exception names in its `kind` attribute, if any.
fn error_kind(py: Python<'_>, e: &PyErr) -> LlmErrorKind {
    let kind = e.value(py).getattr_opt("kind").ok().flatten().and_then(|k| k.extract::<String>().ok());
    kind.and_then(|k| serde_json::from_value(Json::String(k)).ok()).unwrap_or(LlmErrorKind::Unknown)
}

fn llm_error(py: Python<'_>, e: &PyErr) -> LlmError {
    LlmError::new(error_kind(py, e), format!("the model raised {}", describe_exception(py, e)))
}

/// The model's answer as an `LlmResponse`.
fn response_from(obj: &Bound<'_, PyAny>) -> Result<LlmResponse, LlmError> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(LlmResponse::text(s.to_string()));
    }
    let bad = |detail: String| {
        LlmError::new(
            LlmErrorKind::ClientError,
            format!(
                "the model returned {detail}; return the answer's text (str) or a dict {{\"content\": str, \"tool_calls\": [...], \"usage\": {{\"input\": int, \"output\": int}}}}"
            ),
        )
    };
    if obj.cast::<PyDict>().is_err() {
        let type_name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        return Err(bad(format!("a {type_name}")));
    }
    let json = convert::to_json(obj, "the model's answer").map_err(|e| bad(e.to_string()))?;
    let mut response = LlmResponse::default();
    match json.get("content") {
        None | Some(Json::Null) => {}
        Some(Json::String(s)) => response.content = s.clone(),
        Some(_) => return Err(bad("a dict whose content is not a str".to_string())),
    }
    if let Some(calls) = json.get("tool_calls").filter(|c| !c.is_null()) {
        response.tool_calls = serde_json::from_value(calls.clone())
            .map_err(|e| bad(format!("a dict with malformed tool_calls ({e})")))?;
    }
    if let Some(usage) = json.get("usage").filter(|u| !u.is_null()) {
        let tokens = |k: &str| usage.get(k).and_then(Json::as_u64).unwrap_or(0);
        response.usage = TokenUsage {
            input: tokens("input"),
            output: tokens("output"),
            cache_read: tokens("cache_read"),
            cache_write: tokens("cache_write"),
        };
    }
    response.model = json.get("model").and_then(Json::as_str).map(str::to_string);
    Ok(response)
}

impl Llm for PyLlm {
    fn complete<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        Box::pin(async move {
            let request = serde_json::to_value(request)
                .map_err(|e| LlmError::new(LlmErrorKind::Unknown, format!("the request has no JSON form: {e}")))?;
            /// What calling the Python model gave.
            enum Called {
                Ready(Result<LlmResponse, LlmError>),
                Pending(Py<PyAny>, tokio::sync::oneshot::Receiver<()>),
            }
            let called = Python::attach(|py| -> Result<Called, LlmError> {
                let arg = convert::json_to_py(py, &request).map_err(|e| llm_error(py, &e))?;
                let answer = self.func.bind(py).call1((arg,)).map_err(|e| llm_error(py, &e))?;
                if !is_awaitable(&answer) {
                    return Ok(Called::Ready(response_from(&answer)));
                }
                let aio = crate::tools::aio(py).map_err(|e| llm_error(py, &e))?;
                let future = match &self.event_loop {
                    Some(l) => aio.call_method1("submit", (answer, l.bind(py))),
                    None => aio.call_method1("submit_own_loop", (answer,)),
                }
                .map_err(|e| llm_error(py, &e))?;
                let (tx, rx) = tokio::sync::oneshot::channel();
                let notify = Bound::new(py, Notify { tx: Mutex::new(Some(tx)) }).map_err(|e| llm_error(py, &e))?;
                future.call_method1("add_done_callback", (notify,)).map_err(|e| llm_error(py, &e))?;
                Ok(Called::Pending(future.unbind(), rx))
            })?;
            let (future, rx) = match called {
                Called::Ready(r) => return r,
                Called::Pending(f, rx) => (f, rx),
            };
            /// Cancels the model's coroutine when the mission stops waiting for it.
            struct CancelOnDrop(Option<Py<PyAny>>);
            impl Drop for CancelOnDrop {
                fn drop(&mut self) {
                    if let Some(f) = self.0.take() {
                        Python::attach(|py| {
                            let _ = f.bind(py).call_method0("cancel");
                        });
                    }
                }
            }
            let mut guard = CancelOnDrop(Some(future));
            let _ = rx.await;
            let future = guard.0.take();
            Python::attach(|py| {
                let Some(future) = future else {
                    return Err(LlmError::new(LlmErrorKind::Unknown, "the model's answer was lost"));
                };
                let answer = future.bind(py).call_method0("result").map_err(|e| llm_error(py, &e))?;
                response_from(&answer)
            })
        })
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}

/// An agent tool over a Python function (the agent checks signatures itself).
fn agent_tool(tool: &Tool, event_loop: Option<Arc<Py<PyAny>>>) -> AgentTool {
    let func = tool.func.clone();
    let name = tool.name.clone();
    let mut out = AgentTool::with_context(tool.name.clone(), move |args: Json, cx: &ToolContext| {
        Python::attach(|py| -> Result<Json, ToolError> {
            let failed = |e: PyErr| ToolError::failed(describe_exception(py, &e));
            let kwargs = PyDict::new(py);
            if let Json::Object(m) = &args {
                for (k, v) in m {
                    kwargs.set_item(k, convert::json_to_py(py, v).map_err(failed)?).map_err(failed)?;
                }
            }
            let returned = func.bind(py).call((), Some(&kwargs)).map_err(failed)?;
            let returned = if is_awaitable(&returned) {
                let timeout = cx.remaining().as_secs_f64();
                match await_blocking(py, returned, event_loop.as_deref(), timeout, &cx.cancel) {
                    Ok(v) => v.into_bound(py),
                    Err(AwaitFailure::Raised(e)) => return Err(failed(e)),
                    Err(AwaitFailure::Timeout) => {
                        return Err(ToolError::failed(format!(
                            "tool '{name}' did not answer before the program's time limit"
                        )));
                    }
                    Err(AwaitFailure::Cancelled) => {
                        return Err(ToolError::failed(format!("tool '{name}' was cancelled with the run")));
                    }
                }
            } else {
                returned
            };
            convert::to_json(&returned, &format!("the result of tool/{name}")).map_err(failed)
        })
    });
    if let Some(s) = &tool.signature {
        out = out.signature(s.clone());
    }
    out.description(tool.description.clone())
}

/// An agent: a mission (prompt), its signature, tools and options, run against a Python
/// model. The options are the Rust builder's, named as in agent files (`max_turns`,
/// `timeout_ms`, `mission_timeout_ms`, `signature_validation`...).
#[pyclass(module = "ptc_runner._native", frozen)]
pub(crate) struct SubAgent {
    builder: SubAgentBuilder,
    tools: Vec<Tool>,
}

fn parse_mode(text: &str) -> PyResult<Mode> {
    Ok(match text {
        "lisp" => Mode::Lisp,
        "lisp-tool" | "lisp_tool" => Mode::LispTool,
        "text" => Mode::Text,
        "combined" => Mode::Combined,
        other => {
            return Err(PyValueError::new_err(format!(
                "mode {other:?} is not one of \"lisp\", \"lisp-tool\", \"text\", \"combined\""
            )));
        }
    })
}

#[pymethods]
impl SubAgent {
    #[new]
    #[pyo3(signature = (
        prompt, *, signature=None, tools=None, context=None, context_signature=None, name=None,
        description=None, mode=None, max_turns=None, retry_turns=None, timeout_ms=None,
        mission_timeout_ms=None, max_tool_calls=None, signature_validation=None,
        max_consecutive_failures=None, max_cost_usd=None, system_prompt=None,
        multiple_code_blocks=None, memory_limit=None, memory_strategy=None, limits=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        prompt: String,
        signature: Option<String>,
        tools: Option<&Bound<'_, PyAny>>,
        context: Option<&Bound<'_, PyAny>>,
        context_signature: Option<String>,
        name: Option<String>,
        description: Option<String>,
        mode: Option<&str>,
        max_turns: Option<u32>,
        retry_turns: Option<u32>,
        timeout_ms: Option<u64>,
        mission_timeout_ms: Option<u64>,
        max_tool_calls: Option<u32>,
        signature_validation: Option<&str>,
        max_consecutive_failures: Option<u32>,
        max_cost_usd: Option<f64>,
        system_prompt: Option<&Bound<'_, PyAny>>,
        multiple_code_blocks: Option<&str>,
        memory_limit: Option<u64>,
        memory_strategy: Option<&str>,
        limits: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut b = RustAgent::builder(prompt);
        if let Some(l) = limits.filter(|l| !l.is_none()) {
            b = b.limits(limits_from(Some(l))?);
        }
        if let Some(s) = signature {
            b = b.signature(s);
        }
        if let Some(ctx) = context.filter(|c| !c.is_none()) {
            match convert::to_json(ctx, "context")? {
                Json::Object(m) => b = b.context(m),
                _ => return Err(PyTypeError::new_err("context must be a dict of str keys (each becomes data/<key>)")),
            }
        }
        if let Some(s) = context_signature {
            b = b.context_signature(s);
        }
        if let Some(n) = name {
            b = b.name(n);
        }
        if let Some(d) = description {
            b = b.description(d);
        }
        if let Some(m) = mode {
            b = b.mode(parse_mode(m)?);
        }
        if let Some(n) = max_turns {
            b = b.max_turns(n);
        }
        if let Some(n) = retry_turns {
            b = b.retry_turns(n);
        }
        if let Some(ms) = timeout_ms {
            b = b.timeout(Duration::from_millis(ms));
        }
        match mission_timeout_ms {
            Some(0) => b = b.no_mission_timeout(),
            Some(ms) => b = b.mission_timeout(Duration::from_millis(ms)),
            None => {}
        }
        if let Some(n) = max_tool_calls {
            b = b.max_tool_calls(n);
        }
        if let Some(v) = signature_validation {
            let mode: ValidationMode = v.parse().map_err(|e: String| PyValueError::new_err(e))?;
            b = b.signature_validation(mode);
        }
        if let Some(n) = max_consecutive_failures {
            b = b.max_consecutive_failures(n);
        }
        if let Some(usd) = max_cost_usd {
            b = b.max_cost_usd(usd);
        }
        if let Some(sp) = system_prompt.filter(|s| !s.is_none()) {
            if let Ok(text) = sp.extract::<String>() {
                b = b.system_prompt(SystemPrompt::Replace(text));
            } else if let Ok(d) = sp.cast::<PyDict>() {
                let part = |k: &str| -> PyResult<String> {
                    Ok(d.get_item(k)?.map(|v| v.extract::<String>()).transpose()?.unwrap_or_default())
                };
                b = b.system_prompt(SystemPrompt::Wrap { prefix: part("prefix")?, suffix: part("suffix")? });
            } else {
                return Err(PyTypeError::new_err(
                    "system_prompt must be a str (replaces the generated prompt) or a dict {\"prefix\": str, \"suffix\": str}",
                ));
            }
        }
        match multiple_code_blocks {
            None => {}
            Some("refuse") => b = b.multiple_code_blocks(MultipleCodeBlocks::Refuse),
            Some("sequential") => b = b.multiple_code_blocks(MultipleCodeBlocks::Sequential),
            Some(other) => {
                return Err(PyValueError::new_err(format!(
                    "multiple_code_blocks {other:?}: write \"refuse\" or \"sequential\""
                )));
            }
        }
        if memory_limit.is_some() || memory_strategy.is_some() {
            let strategy = match memory_strategy {
                None | Some("strict") => MemoryStrategy::Strict,
                Some("rollback") => MemoryStrategy::Rollback,
                Some(other) => {
                    return Err(PyValueError::new_err(format!(
                        "memory_strategy {other:?}: write \"strict\" or \"rollback\""
                    )));
                }
            };
            b = b.memory_limit(memory_limit.unwrap_or(1_048_576), strategy);
        }
        let tools: Vec<Tool> = tool_set(tools)?.values().cloned().collect();
        let agent = SubAgent { builder: b, tools };
        // every option is checked now, not at the first run
        agent.build(None)?;
        Ok(agent)
    }

    /// Runs the mission with `llm` as the model; returns the step as a dict.
    #[pyo3(signature = (llm, cancel=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        llm: &Bound<'py, PyAny>,
        cancel: Option<&Bound<'py, Cancel>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let agent = self.build(None)?;
        let llm = model(llm, None)?;
        let cancel = cancel.map(|c| c.get().inner.clone()).unwrap_or_default();
        let rt = runtime()?;
        let step = py.detach(|| rt.block_on(async { agent.run_with_cancel(&llm, &cancel).await }));
        step_to_py(py, &step)
    }

    /// `run` awaited on the running event loop (an async model and async tools are
    /// awaited on it); cancelling the awaiting task cancels the mission.
    #[pyo3(signature = (llm, cancel=None))]
    fn run_async<'py>(
        &self,
        py: Python<'py>,
        llm: &Bound<'py, PyAny>,
        cancel: Option<&Bound<'py, Cancel>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let asyncio = py.import("asyncio")?;
        let event_loop = asyncio.call_method0("get_running_loop")?;
        let future = event_loop.call_method0("create_future")?;
        let agent = self.build(Some(Arc::new(event_loop.clone().unbind())))?;
        let llm = model(llm, Some(event_loop.clone().unbind()))?;
        let parent = cancel.map(|c| c.get().inner.clone()).unwrap_or_default();
        let run_cancel = Cancel { inner: parent.child() };
        let mission_cancel: EvalCancel = run_cancel.inner.clone();
        crate::tools::aio(py)?.call_method1("cancel_with", (&future, Bound::new(py, run_cancel)?))?;
        let loop_ref = event_loop.unbind();
        let fut_ref = future.clone().unbind();
        runtime()?.spawn(async move {
            let step = agent.run_with_cancel(&llm, &mission_cancel).await;
            Python::attach(|py| {
                let (value, error) = match step_to_py(py, &step) {
                    Ok(v) => (v.unbind(), py.None()),
                    Err(e) => (py.None(), e.into_value(py).into_any()),
                };
                if let Ok(aio) = crate::tools::aio(py)
                    && let Ok(settle) = aio.getattr("settle")
                {
                    let _ = loop_ref.bind(py).call_method1("call_soon_threadsafe", (settle, &fut_ref, value, error));
                }
            });
        });
        Ok(future)
    }
}

impl SubAgent {
    /// The agent with its tools bound to `event_loop` (the async run's), or to none.
    fn build(&self, event_loop: Option<Arc<Py<PyAny>>>) -> PyResult<RustAgent> {
        let mut b = self.builder.clone();
        for t in &self.tools {
            b = b.tool(agent_tool(t, event_loop.clone()));
        }
        b.build().map_err(|e| crate::config_error(&format!("{}: {}", e.option, e.message)))
    }
}

fn model(llm: &Bound<'_, PyAny>, event_loop: Option<Py<PyAny>>) -> PyResult<PyLlm> {
    if !llm.is_callable() {
        return Err(PyTypeError::new_err(
            "llm must be a callable taking the request dict and returning the answer (str or dict), sync or async",
        ));
    }
    let name = llm
        .getattr("__name__")
        .and_then(|n| n.extract::<String>())
        .map(|n| format!("python:{n}"))
        .unwrap_or_else(|_| "python".to_string());
    Ok(PyLlm { func: llm.clone().unbind(), event_loop, name })
}

fn step_to_py<'py>(py: Python<'py>, step: &ptc_subagent::Step) -> PyResult<Bound<'py, PyAny>> {
    let json =
        serde_json::to_value(step).map_err(|e| PyRuntimeError::new_err(format!("the step has no JSON form: {e}")))?;
    convert::json_to_py(py, &json)
}
