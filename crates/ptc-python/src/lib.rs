//! `ptc-python`: the `ptc_runner` Python extension module (`ptc_runner._native`).
//!
//! It puts the embedding API of `ptc-lisp-eval` (an `Engine` on a pool of threads,
//! compiled `Program`s, the `Outcome` of a run, `Cancel` handles, the limits table) and
//! `ptc-subagent`'s `SubAgent` in front of Python, with Python callables as tools and
//! as the model. The Python package around it (`python/ptc_runner/`) adds the exception
//! hierarchy, the asyncio glue and the `Step` class; see `docs/python.md`.
//!
//! This crate must never hold the GIL while a program runs, and never let a Python
//! exception or a Python object cross into the engine: tools answer with values or
//! `ToolError`s, models with responses or `LlmError`s.
//!
//! It is built by maturin (`cargo xtask python`); a plain `cargo build` compiles it
//! without a Python toolchain (abi3, no libpython linked), but it has no Rust tests: its
//! tests are pytest's (`crates/ptc-python/tests/`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

mod agent;
mod convert;
mod engine;
mod tools;

/// `ptc_runner.ConfigError` (a `ValueError`) with `message`.
pub(crate) fn config_error(message: &str) -> PyErr {
    Python::attach(|py| {
        let made =
            py.import("ptc_runner._errors").and_then(|m| m.getattr("ConfigError")).and_then(|c| c.call1((message,)));
        match made {
            Ok(exc) => PyErr::from_value(exc),
            Err(_) => PyValueError::new_err(message.to_string()),
        }
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<engine::Engine>()?;
    m.add_class::<engine::Program>()?;
    m.add_class::<engine::Outcome>()?;
    m.add_class::<engine::Cancel>()?;
    m.add_class::<engine::Context>()?;
    m.add_class::<tools::Tool>()?;
    m.add_class::<agent::SubAgent>()?;
    m.add_function(wrap_pyfunction!(engine::limits_table, m)?)?;
    m.add_function(wrap_pyfunction!(engine::roundtrip, m)?)?;
    Ok(())
}
