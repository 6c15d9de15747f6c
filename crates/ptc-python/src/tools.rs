//! Python callables as tools: the [`Tool`] class, and [`PyHost`], the evaluator's `Host`
//! over a set of them.
//!
//! A program's `(tool/search {:query "x" :limit 2})` calls `search(query="x", limit=2)`:
//! the argument map arrives as keyword arguments (`-` already `_`). A tool with a
//! signature gets its arguments coerced to it (`"42"` → 42; a mismatch is
//! `invalid_tool_args`, and the function is not called) and its result checked against
//! the signature's output (a mismatch is a `tool_error`). An exception the function
//! raises becomes a `tool_error` the program sees ("Tool 'search' failed: ValueError:
//! ..."). An `async def` tool is awaited: on the caller's event loop when the run was
//! started by an async `run`, else on a fresh loop of its own; either way within the
//! program's deadline, and cancelled with the run.

use std::collections::BTreeMap;
use std::sync::Arc;

use ptc_lisp_eval::{CallCx, Host, ToolCall, ToolError, ToolSpec, Value};
use ptc_signature::{KeyStyle, Type};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};

use crate::convert;

/// A Python function offered to programs as `tool/<name>`.
///
/// `Tool(func, name=None, signature=None, description=None)`: the name defaults to the
/// function's `__name__`, the description to the first paragraph of its docstring. The
/// signature (`"(query :string, limit :int?) -> [{id :int}]"`) is checked at once.
#[pyclass(module = "ptc_runner._native", frozen)]
#[derive(Clone)]
pub(crate) struct Tool {
    pub(crate) name: String,
    pub(crate) func: Arc<Py<PyAny>>,
    pub(crate) signature: Option<String>,
    pub(crate) description: String,
    /// The object type of the signature's inputs (arguments are coerced to it).
    pub(crate) inputs: Option<Arc<Type>>,
    /// The output type a result is checked against (`None`: no signature or `:any`).
    pub(crate) output: Option<Arc<Type>>,
}

#[pymethods]
impl Tool {
    #[new]
    #[pyo3(signature = (func, name=None, signature=None, description=None))]
    fn py_new(
        func: &Bound<'_, PyAny>,
        name: Option<String>,
        signature: Option<String>,
        description: Option<String>,
    ) -> PyResult<Self> {
        Tool::build(func, name, signature, description)
    }

    /// The name programs call (`tool/<name>`).
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The signature, when the tool has one.
    #[getter]
    fn signature(&self) -> Option<&str> {
        self.signature.as_deref()
    }

    /// What the tool does (for prompts and `doc`).
    #[getter]
    fn description(&self) -> &str {
        &self.description
    }

    /// The Python function.
    #[getter]
    fn func(&self, py: Python<'_>) -> Py<PyAny> {
        self.func.clone_ref(py)
    }

    /// Calls the function directly, as Python code would.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, pyo3::types::PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.func.bind(py).call(args, kwargs)
    }

    fn __repr__(&self) -> String {
        match &self.signature {
            Some(s) => format!("Tool({:?}, signature={s:?})", self.name),
            None => format!("Tool({:?})", self.name),
        }
    }
}

impl Tool {
    pub(crate) fn build(
        func: &Bound<'_, PyAny>,
        name: Option<String>,
        signature: Option<String>,
        description: Option<String>,
    ) -> PyResult<Self> {
        if !func.is_callable() {
            return Err(PyTypeError::new_err(format!(
                "a tool must be a callable (a function, async function or object with __call__); got {}",
                func.repr()?
            )));
        }
        let name = match name {
            Some(n) => n,
            None => func.getattr("__name__").and_then(|n| n.extract::<String>()).map_err(|_| {
                PyTypeError::new_err("this callable has no __name__: give the tool a name (Tool(func, name=\"...\"))")
            })?,
        };
        if name.is_empty() || name.contains('/') || name.chars().any(char::is_whitespace) {
            return Err(PyValueError::new_err(format!(
                "tool name {name:?} cannot be called as tool/<name>; use letters, digits, _ and -"
            )));
        }
        let description = match description {
            Some(d) => d,
            None => first_paragraph(func),
        };
        let (inputs, output) = match &signature {
            Some(text) => {
                let sig = ptc_signature::parse(text).map_err(|e| {
                    PyValueError::new_err(format!(
                        "tool {name:?}: invalid signature {text:?} at column {}: {}",
                        e.column, e.message
                    ))
                })?;
                let output = match sig.output {
                    Type::Any => None,
                    other => Some(Arc::new(other)),
                };
                (Some(Arc::new(Type::Object { fields: sig.inputs, closed: false })), output)
            }
            None => (None, None),
        };
        Ok(Tool { name, func: Arc::new(func.clone().unbind()), signature, description, inputs, output })
    }

    pub(crate) fn spec(&self) -> ToolSpec {
        let mut spec = ToolSpec::named(&self.name).describe(&self.description);
        if let Some(s) = &self.signature {
            spec = spec.signature(s);
        }
        spec
    }
}

/// The first paragraph of a callable's docstring, on one line.
fn first_paragraph(func: &Bound<'_, PyAny>) -> String {
    let Ok(Some(doc)) = func.getattr("__doc__").and_then(|d| d.extract::<Option<String>>()) else {
        return String::new();
    };
    doc.trim().split("\n\n").next().unwrap_or("").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The tools of a run, by name: from a dict (`{"name": func_or_Tool}`), a list or tuple of
/// functions and `Tool`s, or `None`.
pub(crate) fn tool_set(tools: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<BTreeMap<String, Tool>>> {
    let mut out = BTreeMap::new();
    let Some(tools) = tools.filter(|t| !t.is_none()) else { return Ok(Arc::new(out)) };
    let mut add = |name: Option<String>, item: &Bound<'_, PyAny>| -> PyResult<()> {
        let tool = match item.cast::<Tool>() {
            Ok(t) => {
                let mut t = t.get().clone();
                if let Some(n) = name {
                    t.name = n;
                }
                t
            }
            Err(_) => Tool::build(item, name, None, None)?,
        };
        if out.insert(tool.name.clone(), tool.clone()).is_some() {
            return Err(PyValueError::new_err(format!("two tools are named {:?}; give one another name", tool.name)));
        }
        Ok(())
    };
    if let Ok(d) = tools.cast::<PyDict>() {
        for (k, v) in d.iter() {
            let name: String =
                k.extract().map_err(|_| PyTypeError::new_err("tool names (the dict's keys) must be str"))?;
            add(Some(name), &v)?;
        }
    } else if let Ok(it) = tools.try_iter() {
        for item in it {
            add(None, &item?)?;
        }
    } else {
        return Err(PyTypeError::new_err(
            "tools must be a dict {name: function}, a list of functions or Tool objects, or None",
        ));
    }
    Ok(Arc::new(out))
}

static AIO: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The package's asyncio helpers (`ptc_runner._aio`).
pub(crate) fn aio(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    AIO.get_or_try_init(py, || py.import("ptc_runner._aio").map(Bound::unbind)).map(|m| m.bind(py))
}

/// True for a coroutine or other awaitable (what an `async def` returns).
pub(crate) fn is_awaitable(obj: &Bound<'_, PyAny>) -> bool {
    obj.hasattr("__await__").unwrap_or(false)
}

/// Why waiting for an awaitable ended without its value.
pub(crate) enum AwaitFailure {
    /// The coroutine raised.
    Raised(PyErr),
    /// The deadline passed first.
    Timeout,
    /// The run was cancelled.
    Cancelled,
}

/// Awaits `awaitable` from a thread that is not the loop's: on `event_loop` when there is
/// one (the caller's), else on a fresh loop; gives up at `timeout_s` or on `cancel`.
pub(crate) fn await_blocking(
    py: Python<'_>,
    awaitable: Bound<'_, PyAny>,
    event_loop: Option<&Py<PyAny>>,
    timeout_s: f64,
    cancel: &ptc_lisp_eval::Cancel,
) -> Result<Py<PyAny>, AwaitFailure> {
    let aio = aio(py).map_err(AwaitFailure::Raised)?;
    let future = match event_loop {
        Some(l) => aio.call_method1("submit", (awaitable, l.bind(py))),
        None => aio.call_method1("submit_own_loop", (awaitable,)),
    }
    .map_err(AwaitFailure::Raised)?;
    let watched = future.clone().unbind();
    let _watch = cancel.on_cancel(move || {
        Python::attach(|py| {
            let _ = watched.bind(py).call_method0("cancel");
        })
    });
    match aio.call_method1("wait", (&future, timeout_s)) {
        Ok(outcome) => {
            let (state, value): (String, Bound<'_, PyAny>) = outcome.extract().map_err(AwaitFailure::Raised)?;
            match state.as_str() {
                "ok" => Ok(value.unbind()),
                "timeout" => Err(AwaitFailure::Timeout),
                _ => Err(AwaitFailure::Cancelled),
            }
        }
        Err(e) => Err(AwaitFailure::Raised(e)),
    }
}

/// `Type: message` of a Python exception, for a tool error or a model error.
pub(crate) fn describe_exception(py: Python<'_>, e: &PyErr) -> String {
    let type_name = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "Exception".to_string());
    let text = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    if text.is_empty() { type_name } else { format!("{type_name}: {text}") }
}

/// The evaluator's `Host` over Python tools.
pub(crate) struct PyHost {
    pub(crate) tools: Arc<BTreeMap<String, Tool>>,
    /// The caller's event loop, when the run was started by an async `run`.
    pub(crate) event_loop: Option<Py<PyAny>>,
}

impl Host for PyHost {
    fn tools(&self) -> Vec<ToolSpec> {
        self.tools.values().map(Tool::spec).collect()
    }

    fn call(&self, call: &ToolCall, cx: &CallCx<'_>) -> Result<Value, ToolError> {
        let Some(tool) = self.tools.get(&call.name) else {
            let known: Vec<&str> = self.tools.keys().map(String::as_str).collect();
            return Err(ToolError::unknown_tool(&format!("{}. Available: {}", call.name, known.join(", "))));
        };
        let args = match &tool.inputs {
            Some(ty) => {
                let (coerced, report) = ptc_signature::coerce(&call.args, ty);
                if !report.is_ok() {
                    let lines: Vec<String> = report.errors.iter().map(|e| format!("- {e}")).collect();
                    return Err(ToolError::invalid_args(format!(
                        "invalid arguments for tool/{}:\n{}",
                        call.name,
                        lines.join("\n")
                    )));
                }
                coerced
            }
            None => call.args.clone(),
        };
        if cx.cancel.is_cancelled() {
            return Err(ToolError::cancelled(&call.name));
        }
        let result = Python::attach(|py| self.call_python(py, tool, &args, cx))?;
        if let Some(output) = &tool.output {
            let report = ptc_signature::validate(&result, output, ptc_signature::Mode::Enabled);
            if !report.is_ok() {
                let lines: Vec<String> = report.errors.iter().map(|e| format!("- {e}")).collect();
                return Err(ToolError::failed(format!(
                    "tool/{} returned a value that does not match its signature's output `{}`:\n{}",
                    call.name,
                    ptc_signature::render_type(output, KeyStyle::Lisp),
                    lines.join("\n")
                )));
            }
        }
        Ok(result)
    }
}

impl PyHost {
    fn call_python(&self, py: Python<'_>, tool: &Tool, args: &Value, cx: &CallCx<'_>) -> Result<Value, ToolError> {
        let failed = |e: PyErr| ToolError::failed(describe_exception(py, &e));
        let kwargs = PyDict::new(py);
        if let Value::Map(m) = args {
            for (k, v) in m.iter() {
                let key = match k {
                    Value::Str(s) | Value::Keyword(s) => PyString::new(py, s),
                    other => PyString::new(py, &ptc_lisp_eval::to_clojure(other)),
                };
                kwargs.set_item(key, convert::to_py(py, v).map_err(failed)?).map_err(failed)?;
            }
        }
        let returned = tool.func.bind(py).call((), Some(&kwargs)).map_err(failed)?;
        let returned = if is_awaitable(&returned) {
            let timeout = cx.remaining().as_secs_f64();
            match await_blocking(py, returned, self.event_loop.as_ref(), timeout, cx.cancel) {
                Ok(v) => v.into_bound(py),
                Err(AwaitFailure::Raised(e)) => return Err(failed(e)),
                Err(AwaitFailure::Timeout) => return Err(ToolError::timeout(&tool.name)),
                Err(AwaitFailure::Cancelled) => return Err(ToolError::cancelled(&tool.name)),
            }
        } else {
            returned
        };
        convert::to_value(&returned, &format!("the result of tool/{}", tool.name)).map_err(failed)
    }
}
