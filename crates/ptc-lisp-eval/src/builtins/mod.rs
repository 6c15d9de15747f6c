//! The one function registry: every builtin is declared once, in the [`Table`] of the file
//! that holds it (its library; per entry the name, aliases, arity, category, doc, examples,
//! extension flag and specialisations), and dispatched from that declaration. The
//! analyzer (arithmetic and comparison nodes, quoted names), the fuser (steps, sinks,
//! sources), transducer forms, laziness, `doc`/`dir`/`apropos`/`ns-publics`/`all-ns` and
//! `cargo xtask docs` read the same entries; no other place lists builtin names.
//! `table_checks.rs` checks the declarations against what reads them.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::error::{ErrorKind, EvalResult, err};
use crate::interp::Interp;
use crate::value::Value;

mod args;
mod constants;
pub(crate) mod context;
mod core;
pub(crate) use core::functions::made_of;
pub(crate) mod discovery;
mod format;
mod java;
mod java_regex;
mod json;
mod set;
mod string;
mod walk;

pub(crate) use args::*;
pub(crate) use context::BuiltinContext;
pub(crate) use core::collections::conj1;
pub(crate) use core::numbers::{add2, clojure_compare_items, compare_values};
pub(crate) use core::sequences::{count_arg, sort_items};
pub(crate) use core::transducers::{reduced_value, transducer_over_vectors};
pub use discovery::{names_in_namespace, namespaces};
pub(crate) use string::split_parts;

/// Signature of a builtin's implementation. Arguments may be taken (`std::mem::take`).
pub(crate) type BuiltinFn = fn(&mut BuiltinContext, &mut [Value]) -> EvalResult;

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
#[non_exhaustive]
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
#[non_exhaustive]
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
    pub(crate) f: BuiltinFn,
    /// Specialisation: the analyzer passes the first argument as a name, unevaluated
    /// (`(doc map)` is `(doc "map")`).
    pub(crate) quotes_name: bool,
    /// Specialisation: a step the pipeline fuser streams items through (`map`, `filter`).
    pub(crate) fused: Option<crate::fusion::Step>,
    /// Specialisation: an arithmetic node the interpreter computes on numbers in place.
    pub(crate) arith: Option<crate::node::ArithOp>,
    /// Specialisation: a one-argument test the interpreter answers in place, reading its
    /// argument where it lies (`(zero? n)`); `None` from it calls the builtin.
    pub(crate) test: Option<fn(&Value) -> Option<bool>>,
    /// Laziness: the builtin takes lazy sequences as they are (pulling only what it
    /// needs, or returning a lazy sequence). Any other builtin gets each finite lazy
    /// argument realised first (see `crate::lazy`).
    pub(crate) lazy: bool,
    /// Laziness: `(apply f x ... s)` with a lazy `s` calls this with the leading
    /// arguments and `s` instead of spreading it (`(apply concat (repeat [1 2]))`).
    pub(crate) spread_lazy: Option<SpreadLazyFn>,
    /// Specialisation: a comparison node the interpreter computes on numbers in place.
    pub(crate) compare: Option<crate::node::CmpOp>,
    /// Specialisation: a consumer the pipeline fuser ends a chain with (`reduce`, `count`).
    pub(crate) sink: Option<crate::fusion::Consumer>,
    /// Specialisation: a source whose items a fused chain takes one at a time without
    /// building them (`range`, `vals`).
    pub(crate) source: Option<crate::fusion::SourceKind>,
    /// Its transducer form (`(map f)`, `(take 3)`, `(distinct)`) or, for `cat`, that it is
    /// a transducer itself.
    pub(crate) transducer: Option<Transducer>,
    /// Its aliases are public names of its library too, listed by `dir` and `ns-publics`
    /// (`postwalk-replace`); other aliases only resolve (`upcase`, `int?`).
    pub(crate) lists_aliases: bool,
}

/// How a builtin takes part in transducers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Transducer {
    /// A call with this many arguments returns a transducer, made by `make` instead of
    /// the builtin's own function (`(map f)`, `(take 3)`, `(distinct)`).
    Form { args: u8, make: BuiltinFn },
    /// The builtin is a transducer itself (`cat`).
    Itself,
}

/// One file's declarations: the library its bare names belong to, and its entries. Names
/// with a namespace prefix (`json/parse-string`, `Math/pow`, `str/replace`) keep theirs.
#[derive(Debug)]
pub(crate) struct Table {
    /// The Clojure library of the file's names (`Library::Core` for the Java classes and
    /// `json/`, whose names carry their namespace).
    pub(crate) library: Library,
    /// The entries.
    pub(crate) builtins: &'static [Builtin],
}

/// How a builtin is applied to a lazy sequence of arguments: the leading arguments, then
/// the lazy sequence.
pub(crate) type SpreadLazyFn = fn(&mut BuiltinContext, Vec<Value>, &std::sync::Arc<crate::lazy::LazySeq>) -> EvalResult;

impl Builtin {
    /// Declares a builtin; chain `.doc()`, `.ex()`, `.alias()`, `.ext()`.
    pub(crate) const fn new(name: &'static str, arity: Arity, category: Category, f: BuiltinFn) -> Self {
        Builtin {
            name,
            aliases: &[],
            arity,
            category,
            doc: "",
            examples: &[],
            extension: false,
            constant: false,
            f,
            quotes_name: false,
            fused: None,
            arith: None,
            test: None,
            lazy: false,
            spread_lazy: None,
            compare: None,
            sink: None,
            source: None,
            transducer: None,
            lists_aliases: false,
        }
    }
    /// A call with two arguments becomes a comparison node.
    pub(crate) const fn compare(mut self, op: crate::node::CmpOp) -> Self {
        self.compare = Some(op);
        self
    }
    /// The pipeline fuser may end a chain with this builtin as `consumer`.
    pub(crate) const fn sink(mut self, consumer: crate::fusion::Consumer) -> Self {
        self.sink = Some(consumer);
        self
    }
    /// A fused chain may take its items from a call of this builtin one at a time.
    pub(crate) const fn source(mut self, kind: crate::fusion::SourceKind) -> Self {
        self.source = Some(kind);
        self
    }
    /// A call with `args` arguments is the transducer `make` returns.
    pub(crate) const fn transducer(mut self, args: u8, make: BuiltinFn) -> Self {
        self.transducer = Some(Transducer::Form { args, make });
        self
    }
    /// The builtin is a transducer itself (`cat`).
    pub(crate) const fn transducer_itself(mut self) -> Self {
        self.transducer = Some(Transducer::Itself);
        self
    }
    /// Its aliases are listed among its library's public names.
    pub(crate) const fn lists_aliases(mut self) -> Self {
        self.lists_aliases = true;
        self
    }
    /// Takes lazy sequences as they are (see the `lazy` field).
    pub(crate) const fn lazy(mut self) -> Self {
        self.lazy = true;
        self
    }
    /// `apply` with a lazy last argument calls `f` (see the `spread_lazy` field).
    pub(crate) const fn spread_lazy(mut self, f: SpreadLazyFn) -> Self {
        self.lazy = true;
        self.spread_lazy = Some(f);
        self
    }
    /// The analyzer passes the first argument as a name, unevaluated.
    pub(crate) const fn quotes_name(mut self) -> Self {
        self.quotes_name = true;
        self
    }
    /// The pipeline fuser streams items through this builtin as `step`.
    pub(crate) const fn fused(mut self, step: crate::fusion::Step) -> Self {
        self.fused = Some(step);
        self
    }
    /// A call with one argument becomes a test node answered by `test` where it can.
    pub(crate) const fn test(mut self, test: fn(&Value) -> Option<bool>) -> Self {
        self.test = Some(test);
        self
    }
    /// A call with `op`'s operand count becomes an arithmetic node.
    pub(crate) const fn arith(mut self, op: crate::node::ArithOp) -> Self {
        self.arith = Some(op);
        self
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

    #[cold]
    fn arity_error(&self, got: usize) -> EvalResult {
        let mut msg =
            format!("wrong number of arguments to {}: got {got}, expected {}", self.name, self.arity.describe());
        if got == 1 && self.category == Category::Sequence {
            let mut xfs: Vec<&str> = all().filter(|b| b.transducer.is_some()).map(|b| b.name).collect();
            xfs.sort_unstable();
            let last = xfs.pop().unwrap_or_default();
            msg.push_str(&format!(
                "; ({} f) is not a transducer here — the transducers are {} and {last}",
                self.name,
                xfs.join(", ")
            ));
        }
        err(ErrorKind::ArityError, msg)
    }

    /// Checks the argument count, then calls in a context of this builtin's name.
    #[inline]
    pub(crate) fn call(&'static self, interp: &mut Interp, args: &mut [Value]) -> EvalResult {
        if !self.arity.accepts(args.len()) {
            return self.arity_error(args.len());
        }
        let mut cx = BuiltinContext::new(interp, self.name);
        if !self.lazy && args.iter().any(crate::lazy::is_finite_lazy) {
            for a in args.iter_mut() {
                if crate::lazy::is_finite_lazy(a) {
                    *a = crate::lazy::realized(&mut cx, self.name, std::mem::take(a))?;
                }
            }
        }
        if let Some(Transducer::Form { args: n, make }) = self.transducer
            && args.len() == n as usize
        {
            return make(&mut cx, args);
        }
        (self.f)(&mut cx, args)
    }
}

/// Every file's table, in the order `all()` lists them. A new file of builtins adds its
/// table here; a new builtin in an existing file touches nothing here.
fn tables() -> [&'static Table; 20] {
    [
        &core::numbers::TABLE,
        &core::predicates::TABLE,
        &core::strings::TABLE,
        &core::io::TABLE,
        &core::regex::TABLE,
        &core::collections::TABLE,
        &core::sequences::TABLE,
        &core::map_filter::TABLE,
        &core::consume::TABLE,
        &core::lazy_seqs::TABLE,
        &core::transducers::TABLE,
        &core::functions::TABLE,
        &string::TABLE,
        &set::TABLE,
        &walk::TABLE,
        &json::TABLE,
        &java::TABLE,
        &java::math::TABLE,
        &constants::TABLE,
        &discovery::TABLE,
    ]
}

/// Every registry entry.
pub fn all() -> impl Iterator<Item = &'static Builtin> {
    tables().into_iter().flat_map(|t| t.builtins.iter())
}

/// Every name and alias, with its entry and the library of the entry's table.
fn index() -> &'static HashMap<&'static str, (&'static Builtin, Library)> {
    static INDEX: OnceLock<HashMap<&'static str, (&'static Builtin, Library)>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut m = HashMap::new();
        for t in tables() {
            for b in t.builtins {
                m.insert(b.name, (b, t.library));
                for a in b.aliases {
                    m.insert(*a, (b, t.library));
                }
            }
        }
        m
    })
}

/// Finds a builtin by name or alias.
pub fn lookup(name: &str) -> Option<&'static Builtin> {
    index().get(name).map(|(b, _)| *b)
}

/// The Clojure libraries PTC-Lisp offers, each with its own table of names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Library {
    /// `clojure.core` (also every bare name).
    Core,
    /// `clojure.string`.
    String,
    /// `clojure.set`.
    Set,
    /// `clojure.walk`.
    Walk,
}

impl Library {
    /// The library an alias names (`str`, `clojure.string`, `string` → `String`).
    pub fn of_alias(ns: &str) -> Option<Library> {
        Some(match ns {
            "clojure.core" | "core" | "regex" => Library::Core,
            "clojure.string" | "str" | "string" => Library::String,
            "clojure.set" | "set" => Library::Set,
            "clojure.walk" | "walk" => Library::Walk,
            _ => return None,
        })
    }

    /// The canonical namespace name.
    pub fn ns_name(self) -> &'static str {
        match self {
            Library::Core => "clojure.core",
            Library::String => "clojure.string",
            Library::Set => "clojure.set",
            Library::Walk => "clojure.walk",
        }
    }

    /// The short alias programs write (`str/`, `set/`).
    pub fn alias(self) -> &'static str {
        match self {
            Library::Core => "core",
            Library::String => "str",
            Library::Set => "set",
            Library::Walk => "walk",
        }
    }

    /// The short prefix PTC-Lisp registers library-only meanings under (`set/join`).
    fn prefix(self) -> Option<&'static str> {
        match self {
            Library::String => Some("str"),
            Library::Set => Some("set"),
            _ => None,
        }
    }

    /// The public names of the library, sorted: the names its tables declare (without
    /// their `str/`/`set/` prefix) and the aliases an entry lists (`postwalk-replace`).
    /// Empty for core, whose names are every other bare name.
    pub fn names(self) -> &'static [&'static str] {
        static NAMES: OnceLock<[Vec<&'static str>; 3]> = OnceLock::new();
        let [string, set, walk] = NAMES.get_or_init(|| {
            [Library::String, Library::Set, Library::Walk].map(|lib| {
                let mut names: Vec<&'static str> = tables()
                    .into_iter()
                    .filter(|t| t.library == lib)
                    .flat_map(|t| t.builtins.iter())
                    .flat_map(|b| {
                        let listed = if b.lists_aliases { b.aliases } else { &[] };
                        std::iter::once(short_name(b)).chain(listed.iter().copied())
                    })
                    .collect();
                names.sort_unstable();
                names
            })
        });
        match self {
            Library::Core => &[],
            Library::String => string,
            Library::Set => set,
            Library::Walk => walk,
        }
    }
}

/// The library a registry entry belongs to: the library of the table that declares it
/// (`str/reverse` and `upper-case` are clojure.string's, `union` clojure.set's, `map` and
/// the PTC extensions core's).
pub fn home_library(b: &Builtin) -> Library {
    index().get(b.name).map_or(Library::Core, |(_, lib)| *lib)
}

/// The name of an entry within its library: without the `str/` or `set/` prefix a
/// library-only meaning is registered under (`str/replace` is clojure.string's `replace`).
pub(crate) fn short_name(b: &Builtin) -> &'static str {
    match (home_library(b).prefix(), b.name.split_once('/')) {
        (Some(p), Some((q, n))) if p == q => n,
        _ => b.name,
    }
}

/// Resolves `ns/name` to a builtin. Each Clojure library has its own table, so
/// `set/join` is the relational join and `str/join` the string join, and a name from
/// one library is not found under another (`str/union` is not a function). Other
/// namespaces (`Math`, `json`, `Integer`...) are registered with their prefix.
pub fn lookup_ns(ns: &str, name: &str) -> Option<&'static Builtin> {
    if let Some(lib) = Library::of_alias(ns) {
        if let Some(p) = lib.prefix()
            && let Some(b) = lookup(&format!("{p}/{name}"))
        {
            return Some(b);
        }
        let b = lookup(name)?;
        let home = home_library(b);
        let found = match lib {
            // core/ reaches every bare name except the other libraries' own functions
            Library::Core => home == Library::Core,
            other => home == other,
        };
        return found.then_some(b);
    }
    let ns = ns.strip_prefix("java.time.").or_else(|| ns.strip_prefix("java.lang.")).unwrap_or(ns);
    lookup(&format!("{ns}/{name}"))
}

/// The libraries that do have `name`, for "did you mean" hints (`str/union` → `set/union`).
pub(crate) fn libraries_with(name: &str) -> Vec<Library> {
    [Library::String, Library::Set, Library::Walk, Library::Core]
        .into_iter()
        .filter(|lib| lookup_ns(lib.alias(), name).is_some())
        .collect()
}

/// Java's `Character.isWhitespace`: Unicode whitespace except the no-break spaces, which
/// is what Clojure's `trim` and `blank?` strip.
pub(crate) fn java_whitespace(c: char) -> bool {
    c.is_whitespace() && !matches!(c, '\u{a0}' | '\u{2007}' | '\u{202f}')
}

#[cfg(test)]
mod table_checks;

#[cfg(test)]
mod tests {
    use super::*;

    fn declaring(has: impl Fn(&Builtin) -> bool) -> Vec<&'static str> {
        let mut names: Vec<&str> = all().filter(|b| has(b)).map(|b| b.name).collect();
        names.sort_unstable();
        names
    }

    /// The analyzer's specialisations come from the entries, not from name lists.
    #[test]
    fn specialisations_are_declared_on_the_entries() {
        assert_eq!(declaring(|b| b.arith.is_some()), ["*", "+", "-", "dec", "inc", "mod", "quot", "rem"]);
        assert_eq!(
            declaring(|b| b.fused.is_some()),
            [
                "distinct",
                "drop",
                "drop-while",
                "filter",
                "filterv",
                "keep",
                "keep-indexed",
                "map",
                "map-indexed",
                "mapcat",
                "mapv",
                "remove",
                "take",
                "take-while"
            ]
        );
        assert_eq!(declaring(|b| b.quotes_name), ["dir", "doc", "meta", "ns-name", "ns-publics"]);
        assert_eq!(declaring(|b| b.spread_lazy.is_some()), ["concat"]);
        assert_eq!(declaring(|b| b.compare.is_some()), ["<", "<=", "=", ">", ">=", "not="]);
        assert_eq!(
            declaring(|b| b.sink.is_some()),
            [
                "apply",
                "count",
                "every?",
                "first",
                "frequencies",
                "into",
                "last",
                "not-any?",
                "not-every?",
                "reduce",
                "set",
                "some",
                "sort",
                "sum",
                "vec"
            ]
        );
        assert_eq!(declaring(|b| b.source.is_some()), ["keys", "range", "split", "vals"]);
        assert_eq!(
            declaring(|b| b.transducer.is_some()),
            [
                "cat",
                "dedupe",
                "distinct",
                "drop",
                "drop-while",
                "filter",
                "keep",
                "map",
                "map-indexed",
                "mapcat",
                "partition-all",
                "remove",
                "take",
                "take-while"
            ]
        );
        assert_eq!(declaring(|b| b.lists_aliases), ["prewalk-replace"]);
        assert!(declaring(|b| b.lazy).contains(&"take"));
        let inc = lookup("inc'").and_then(|b| crate::node::ArithOp::of(b, 1));
        assert_eq!(inc, Some(crate::node::ArithOp::Inc));
        assert_eq!(lookup("+").and_then(|b| crate::node::ArithOp::of(b, 3)), None);
    }
}
