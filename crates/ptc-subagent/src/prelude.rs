//! [`Prelude`]: definitions an agent's programs start with — helper functions and values
//! an embedder vetted (an MCP server's `--prelude` files, a team's own library) — and
//! what the model is told about them.
//!
//! The definitions are the mission's memory before its first turn, so every program can
//! call them as if an earlier turn had made them. They belong to the embedder, not to the
//! model: they do not count against `memory_limit`, and `Step.memory` (and a chat reply's
//! memory) holds only what programs defined. A prelude name a program redefines becomes
//! the program's own. The first user message lists the definitions after the tools and
//! data (see `prompt.rs`), except the names marked [`unlisted`](Prelude::unlisted).

use std::collections::{BTreeMap, BTreeSet};

use ptc_lisp_eval::{Memory, Value};

/// Definitions every program of an agent starts with, and how the prompt lists them
/// ([`SubAgentBuilder::prelude`](crate::SubAgentBuilder::prelude)).
///
/// ```
/// use ptc_lisp_eval::{Engine, Limits, Memory, NoTools, RunInput, Cancel};
/// use ptc_subagent::Prelude;
/// // the definitions, made by running the helper library once
/// let out = Engine::new(Limits::default()).eval(
///     "(defn double \"Twice x.\" [x] (* 2 x)) (def limit 10)",
///     RunInput::new(), &NoTools, &Cancel::new());
/// let prelude = Prelude::new(out.memory).unlisted("limit");
/// assert_eq!(prelude.memory().names().collect::<Vec<_>>(), ["double", "limit"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Prelude {
    memory: Memory,
    unlisted: BTreeSet<String>,
    namespaces: BTreeMap<String, String>,
}

impl Prelude {
    /// Every definition of `memory` (`crm/vips` or a bare `threshold`), each listed in the
    /// prompt with the first line of its docstring.
    pub fn new(memory: Memory) -> Self {
        Prelude { memory, ..Prelude::default() }
    }

    /// Keeps `name` out of the prompt (a helper the listed functions call); programs can
    /// still call it.
    pub fn unlisted(mut self, name: impl Into<String>) -> Self {
        self.unlisted.insert(name.into());
        self
    }

    /// A line about namespace `ns` (`crm`: "Customer helpers") above its definitions.
    pub fn namespace_doc(mut self, ns: impl Into<String>, doc: impl Into<String>) -> Self {
        self.namespaces.insert(ns.into(), doc.into());
        self
    }

    /// The definitions.
    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// Whether there are no definitions.
    pub fn is_empty(&self) -> bool {
        self.memory.is_empty()
    }

    /// The names the prompt lists, in name order.
    pub(crate) fn listed(&self) -> impl Iterator<Item = (&str, &Value)> + '_ {
        self.memory.iter().filter(|(name, _)| !self.unlisted.contains(*name))
    }

    /// The docstring of namespace `ns`, when one was given.
    pub(crate) fn namespace_text(&self, ns: &str) -> Option<&str> {
        self.namespaces.get(ns).map(String::as_str)
    }

    /// The names marked unlisted that are not definitions (a typo the builder reports).
    pub(crate) fn unknown_unlisted(&self) -> impl Iterator<Item = &str> + '_ {
        self.unlisted.iter().map(String::as_str).filter(|n| !self.memory.contains(n))
    }

    /// Whether `name` holds this prelude's own value still (not a program's redefinition).
    pub(crate) fn holds(&self, name: &str, value: &Value) -> bool {
        self.memory.get(name).is_some_and(|v| v == value)
    }

    /// The definitions of `memory` that programs made: the prelude's own, unchanged,
    /// left out.
    pub(crate) fn own<'m>(&'m self, memory: &'m Memory) -> impl Iterator<Item = (&'m str, &'m Value)> + 'm {
        memory.iter().filter(|(name, v)| !self.holds(name, v))
    }
}
