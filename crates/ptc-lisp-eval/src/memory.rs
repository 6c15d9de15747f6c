//! [`Memory`]: the user definitions a run starts from and leaves behind.
//!
//! Sorted by name, so everything that walks it (the agent loop's feedback, a session's
//! stored record, `(dir)`) sees the same order on every run and every machine.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::value::Value;

/// User definitions (`def`, `defn`...): name → value, with the docstring when one was
/// given. Iteration is in name order.
///
/// ```
/// use ptc_lisp_eval::{Engine, Limits, Memory, NoTools, RunInput, Cancel, Value};
/// let mut memory = Memory::new();
/// memory.insert("base", Value::Int(10));
/// let engine = Engine::new(Limits::default());
/// let out = engine.eval("(defn add-base \"adds base\" [x] (+ x base)) (add-base 1)",
///     RunInput::new().with_memory(memory), &NoTools, &Cancel::new());
/// assert_eq!(out.printed, "11");
/// assert_eq!(out.memory.names().collect::<Vec<_>>(), ["add-base", "base"]);
/// assert_eq!(out.memory.doc("add-base"), Some("adds base"));
/// ```
#[derive(Clone, Default, Debug, PartialEq)]
pub struct Memory {
    values: BTreeMap<Arc<str>, Value>,
    docs: BTreeMap<Arc<str>, Arc<str>>,
}

impl Memory {
    /// No definitions.
    pub fn new() -> Self {
        Memory::default()
    }

    /// The value defined under `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values.get(name)
    }

    /// Whether `name` is defined.
    pub fn contains(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    /// The docstring of `name`, when its definition had one.
    pub fn doc(&self, name: &str) -> Option<&str> {
        self.docs.get(name).map(|d| &**d)
    }

    /// Defines `name` (replacing an earlier value, keeping its docstring); returns the
    /// value it replaced.
    pub fn insert(&mut self, name: impl Into<Arc<str>>, value: Value) -> Option<Value> {
        self.values.insert(name.into(), value)
    }

    /// Sets the docstring of `name`.
    pub fn set_doc(&mut self, name: impl Into<Arc<str>>, doc: impl Into<Arc<str>>) {
        self.docs.insert(name.into(), doc.into());
    }

    /// Removes `name` and its docstring; returns its value.
    pub fn remove(&mut self, name: &str) -> Option<Value> {
        self.docs.remove(name);
        self.values.remove(name)
    }

    /// How many names are defined.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether nothing is defined.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The defined names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.values.keys().map(|k| &**k)
    }

    /// Every definition, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> + '_ {
        self.values.iter().map(|(k, v)| (&**k, v))
    }

    /// Every docstring, in name order.
    pub fn docs(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.docs.iter().map(|(k, d)| (&**k, &**d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterates_in_name_order_whatever_the_insertion_order() {
        let mut m = Memory::new();
        for name in ["zeta", "alpha", "mid", "beta"] {
            m.insert(name, Value::Nil);
        }
        assert_eq!(m.names().collect::<Vec<_>>(), ["alpha", "beta", "mid", "zeta"]);
        assert_eq!(m.iter().map(|(k, _)| k).collect::<Vec<_>>(), ["alpha", "beta", "mid", "zeta"]);
    }

    #[test]
    fn remove_drops_the_docstring_too() {
        let mut m = Memory::new();
        m.insert("f", Value::Int(1));
        m.set_doc("f", "one");
        assert_eq!(m.doc("f"), Some("one"));
        assert_eq!(m.remove("f"), Some(Value::Int(1)));
        assert_eq!(m.doc("f"), None);
        assert!(m.is_empty());
    }
}
