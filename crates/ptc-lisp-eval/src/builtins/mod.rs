//! The one function registry: every builtin is declared once (name, aliases, arity,
//! category, doc, examples, extension flag) and dispatched from that declaration.
//! `doc`/`dir`/`apropos` and `cargo xtask docs` read the same table.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::error::{ErrorKind, EvalResult, err};
use crate::interp::Interp;
use crate::value::Value;

mod args;
mod constants;
mod core;
mod describe;
mod discovery;
mod essentials;
mod java;
mod numbers;
mod seq;
mod shapes;
mod text;

pub use args::*;
pub use core::compare_loose;

/// Signature of a builtin's implementation. Arguments may be taken (`std::mem::take`).
pub type BuiltinFn = fn(&mut Interp, &mut [Value]) -> EvalResult;

/// How many arguments a builtin accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// Exactly n.
    Exact(u8),
    /// n or more.
    AtLeast(u8),
    /// Between min and max inclusive.
    Range(u8, u8),
}

impl Arity {
    /// True when `n` arguments are accepted.
    pub fn accepts(self, n: usize) -> bool {
        match self {
            Arity::Exact(k) => n == k as usize,
            Arity::AtLeast(k) => n >= k as usize,
            Arity::Range(a, b) => n >= a as usize && n <= b as usize,
        }
    }

    /// Human description ("2", "at least 1", "1 to 3").
    pub fn describe(self) -> String {
        match self {
            Arity::Exact(k) => k.to_string(),
            Arity::AtLeast(k) => format!("at least {k}"),
            Arity::Range(a, b) => format!("{a} to {b}"),
        }
    }
}

/// Function families, as listed in the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// Numbers, comparison, predicates.
    Core,
    /// Maps, vectors, sets as collections.
    Collection,
    /// Sequence functions (map, filter, reduce...).
    Sequence,
    /// Strings.
    String,
    /// Sets.
    Set,
    /// Regular expressions.
    Regex,
    /// Math.
    Math,
    /// Higher-order helpers (comp, partial, juxt, pmap...).
    Functional,
    /// Output (println).
    Io,
    /// JSON.
    Json,
    /// Java interop subset.
    Interop,
    /// Tree walking (clojure.walk).
    Walk,
    /// REPL discovery (doc, dir, apropos...).
    Discovery,
}

/// One registry entry.
#[derive(Debug)]
pub struct Builtin {
    /// Canonical name (`map`, `str/join` is registered as `join`, `Math/pow` as is).
    pub name: &'static str,
    /// Other names that resolve to this entry.
    pub aliases: &'static [&'static str],
    /// Accepted argument counts.
    pub arity: Arity,
    /// Family.
    pub category: Category,
    /// One-line description.
    pub doc: &'static str,
    /// Example programs and their printed results.
    pub examples: &'static [(&'static str, &'static str)],
    /// True for PTC extensions that Clojure does not have.
    pub extension: bool,
    /// A named constant (`Double/NaN`, `Math/PI`): referring to it yields its value.
    pub constant: bool,
    /// Implementation.
    pub f: BuiltinFn,
}

impl Builtin {
    /// Declares a builtin; chain `.doc()`, `.ex()`, `.alias()`, `.ext()`.
    pub const fn new(name: &'static str, arity: Arity, category: Category, f: BuiltinFn) -> Self {
        Builtin { name, aliases: &[], arity, category, doc: "", examples: &[], extension: false, constant: false, f }
    }
    /// Sets the one-line doc.
    pub const fn doc(mut self, doc: &'static str) -> Self {
        self.doc = doc;
        self
    }
    /// Sets examples.
    pub const fn ex(mut self, examples: &'static [(&'static str, &'static str)]) -> Self {
        self.examples = examples;
        self
    }
    /// Sets aliases.
    pub const fn alias(mut self, aliases: &'static [&'static str]) -> Self {
        self.aliases = aliases;
        self
    }
    /// Marks a zero-argument entry as a named constant.
    pub const fn constant(mut self) -> Self {
        self.constant = true;
        self
    }
    /// Marks as a PTC extension.
    pub const fn ext(mut self) -> Self {
        self.extension = true;
        self
    }

    /// Checks the argument count, then calls.
    #[inline]
    pub fn call(&'static self, interp: &mut Interp, args: &mut [Value]) -> EvalResult {
        if !self.arity.accepts(args.len()) {
            return err(
                ErrorKind::ArityError,
                format!(
                    "wrong number of arguments to {}: got {}, expected {}",
                    self.name,
                    args.len(),
                    self.arity.describe()
                ),
            );
        }
        (self.f)(interp, args)
    }
}

fn families() -> [&'static [Builtin]; 10] {
    [
        core::BUILTINS,
        describe::BUILTINS,
        java::BUILTINS,
        text::BUILTINS,
        numbers::BUILTINS,
        shapes::BUILTINS,
        essentials::BUILTINS,
        constants::BUILTINS,
        seq::BUILTINS,
        discovery::BUILTINS,
    ]
}

/// Every registry entry.
pub fn all() -> impl Iterator<Item = &'static Builtin> {
    families().into_iter().flat_map(|f| f.iter())
}

fn table() -> &'static HashMap<&'static str, &'static Builtin> {
    static TABLE: OnceLock<HashMap<&'static str, &'static Builtin>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut m = HashMap::new();
        for b in all() {
            m.insert(b.name, b);
            for a in b.aliases {
                m.insert(*a, b);
            }
        }
        m
    })
}

/// Finds a builtin by name or alias.
pub fn lookup(name: &str) -> Option<&'static Builtin> {
    table().get(name).copied()
}

/// Namespaces that are aliases of the core library (`str/join` is `join`).
pub const CLOJURE_ALIASES: &[&str] =
    &["clojure.core", "core", "clojure.string", "str", "string", "clojure.set", "set", "clojure.walk", "walk", "regex"];

/// Resolves `ns/name` to a builtin: Clojure aliases map to the plain name, other
/// namespaces (`Math`, `json`, `Integer`...) are registered with their prefix.
pub fn lookup_ns(ns: &str, name: &str) -> Option<&'static Builtin> {
    // names whose clojure.set / clojure.string meaning differs from the core one
    // (set/join, set/select, str/reverse...) are registered with the short prefix
    let prefix = match ns {
        "set" | "clojure.set" => Some("set"),
        "str" | "string" | "clojure.string" => Some("str"),
        _ => None,
    };
    if let Some(p) = prefix
        && let Some(b) = lookup(&format!("{p}/{name}"))
    {
        return Some(b);
    }
    if CLOJURE_ALIASES.contains(&ns) {
        return lookup(name);
    }
    let ns = ns.strip_prefix("java.time.").or_else(|| ns.strip_prefix("java.lang.")).unwrap_or(ns);
    lookup(&format!("{ns}/{name}"))
}

/// Java's `Character.isWhitespace`: Unicode whitespace except the no-break spaces, which
/// is what Clojure's `trim` and `blank?` strip.
pub fn java_whitespace(c: char) -> bool {
    c.is_whitespace() && !matches!(c, '\u{a0}' | '\u{2007}' | '\u{202f}')
}
