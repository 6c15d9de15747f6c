//! Python objects to PTC-Lisp values and back, without a JSON text in between.
//!
//! In: `None`, `bool`, `int` (64-bit), `float`, `str`, `dict`, `list`, `tuple`, `set`
//! and `frozenset`, and any object with a pydantic-style `model_dump()`. Out: plain
//! Python values — keywords become `str` (without the colon), vectors and lists `list`,
//! maps `dict`, sets `set`; in a place that must be hashable (a dict key, a set member)
//! a vector becomes a `tuple` and a map or set its printed text. Functions, regexes and
//! vars become their printed text. Both directions stop at [`MAX_DEPTH`] levels, so a
//! self-referencing list is an error, never a stack overflow.

use std::sync::Arc;

use ptc_lisp_eval::value::{PMap, PSet};
use ptc_lisp_eval::{MAX_VALUE_NESTING, Value, to_clojure};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString, PyTuple};
use serde_json::Value as Json;

/// Deepest nesting converted in either direction (the engine's own bound on values).
pub(crate) const MAX_DEPTH: usize = MAX_VALUE_NESTING;

/// A Python object as a PTC-Lisp value; `what` names it in errors (`"context"`, `"the
/// result of tool/search"`).
pub(crate) fn to_value(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    to_value_at(obj, what, 0)
}

fn too_deep(what: &str) -> PyErr {
    PyValueError::new_err(format!(
        "{what} is nested more than {MAX_DEPTH} levels deep (or refers to itself); pass a flatter structure"
    ))
}

fn to_value_at(obj: &Bound<'_, PyAny>, what: &str, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(too_deep(what));
    }
    if obj.is_none() {
        return Ok(Value::Nil);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::str(s.to_str()?));
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        return match obj.extract::<i64>() {
            Ok(i) => Ok(Value::Int(i)),
            Err(_) => Err(PyValueError::new_err(format!(
                "{what} holds the integer {obj}, which does not fit in 64 bits (PTC-Lisp integers are 64-bit); pass it as a str or float"
            ))),
        };
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Value::Float(f.value()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut m = PMap::new();
        for (k, v) in d.iter() {
            m.insert(to_value_at(&k, what, depth + 1)?, to_value_at(&v, what, depth + 1)?);
        }
        return Ok(Value::Map(Arc::new(m)));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        let mut items = Vec::with_capacity(l.len());
        for x in l.iter() {
            items.push(to_value_at(&x, what, depth + 1)?);
        }
        return Ok(Value::vector(items));
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        let mut items = Vec::with_capacity(t.len());
        for x in t.iter() {
            items.push(to_value_at(&x, what, depth + 1)?);
        }
        return Ok(Value::vector(items));
    }
    if let Ok(s) = obj.cast::<PySet>() {
        let mut set = PSet::new();
        for x in s.iter() {
            set.insert(to_value_at(&x, what, depth + 1)?);
        }
        return Ok(Value::Set(Arc::new(set)));
    }
    if let Ok(s) = obj.cast::<PyFrozenSet>() {
        let mut set = PSet::new();
        for x in s.iter() {
            set.insert(to_value_at(&x, what, depth + 1)?);
        }
        return Ok(Value::Set(Arc::new(set)));
    }
    // pydantic models (and anything shaped like them) pass as their plain dump
    if let Some(dump) = obj.getattr_opt("model_dump")?
        && dump.is_callable()
    {
        let plain = dump.call0()?;
        return to_value_at(&plain, what, depth + 1);
    }
    let type_name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".to_string());
    Err(PyTypeError::new_err(format!(
        "{what} holds a {type_name}, which PTC-Lisp has no value for; pass dict, list, tuple, set, str, int, float, bool or None"
    )))
}

/// A PTC-Lisp value as a plain Python object.
pub(crate) fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    to_py_at(py, v, 0, false)
}

fn to_py_at<'py>(py: Python<'py>, v: &Value, depth: usize, hashable: bool) -> PyResult<Bound<'py, PyAny>> {
    if depth > MAX_DEPTH + 1 {
        return Err(too_deep("the value"));
    }
    Ok(match v {
        Value::Nil => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => PyFloat::new(py, *f).into_any(),
        Value::Str(s) | Value::Keyword(s) => PyString::new(py, s).into_any(),
        Value::Vector(items) | Value::List(items) => {
            let mut out = Vec::with_capacity(items.len());
            for x in items.iter() {
                out.push(to_py_at(py, x, depth + 1, hashable)?);
            }
            if hashable { PyTuple::new(py, out)?.into_any() } else { PyList::new(py, out)?.into_any() }
        }
        Value::Map(m) => {
            if hashable {
                return Ok(PyString::new(py, &to_clojure(v)).into_any());
            }
            let d = PyDict::new(py);
            for (k, x) in m.iter() {
                d.set_item(to_py_at(py, k, depth + 1, true)?, to_py_at(py, x, depth + 1, false)?)?;
            }
            d.into_any()
        }
        Value::Set(s) => {
            if hashable {
                return Ok(PyString::new(py, &to_clojure(v)).into_any());
            }
            let out = PySet::empty(py)?;
            for x in s.iter() {
                out.add(to_py_at(py, x, depth + 1, true)?)?;
            }
            out.into_any()
        }
        Value::Regex(_) | Value::Func(_) | Value::Lazy(_) | Value::Reduced(_) | Value::Var(_) | Value::Symbol(_) => {
            PyString::new(py, &to_clojure(v)).into_any()
        }
    })
}

/// A Python object as JSON (the agent loop's tools, context and model answers).
pub(crate) fn to_json(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Json> {
    let v = to_value(obj, what)?;
    ptc_lisp_eval::json::to_json(&v).map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}

/// JSON as a plain Python object.
pub(crate) fn json_to_py<'py>(py: Python<'py>, j: &Json) -> PyResult<Bound<'py, PyAny>> {
    json_to_py_at(py, j, 0)
}

fn json_to_py_at<'py>(py: Python<'py>, j: &Json, depth: usize) -> PyResult<Bound<'py, PyAny>> {
    if depth > MAX_DEPTH + 1 {
        return Err(too_deep("the value"));
    }
    Ok(match j {
        Json::Null => py.None().into_bound(py),
        Json::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Json::Number(n) => match n.as_i64() {
            Some(i) => i.into_pyobject(py)?.into_any(),
            None => match n.as_u64() {
                Some(u) => u.into_pyobject(py)?.into_any(),
                None => PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any(),
            },
        },
        Json::String(s) => PyString::new(py, s).into_any(),
        Json::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for x in items {
                out.push(json_to_py_at(py, x, depth + 1)?);
            }
            PyList::new(py, out)?.into_any()
        }
        Json::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, json_to_py_at(py, x, depth + 1)?)?;
            }
            d.into_any()
        }
    })
}

/// A JSON object from a Python mapping (the context of a run or an agent).
pub(crate) fn context_map(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<PMap>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(Arc::new(PMap::new())) };
    let Ok(d) = obj.cast::<PyDict>() else {
        return Err(PyTypeError::new_err("context must be a dict of str keys (each key becomes data/<key>), or None"));
    };
    let mut m = PMap::new();
    for (k, v) in d.iter() {
        let Ok(key) = k.cast::<PyString>() else {
            return Err(PyTypeError::new_err(format!(
                "context keys must be str (each becomes data/<key>); got {}",
                k.repr().map(|r| r.to_string()).unwrap_or_default()
            )));
        };
        let key = key.to_str()?;
        m.insert(Value::str(key), to_value_at(&v, &format!("context key {key:?}"), 1)?);
    }
    Ok(Arc::new(m))
}
