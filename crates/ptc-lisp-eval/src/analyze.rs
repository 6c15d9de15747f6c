//! The analyzer: forms -> nodes. Resolves every symbol (local slot, capture, user
//! definition, builtin, tool, data key), checks special forms, places `recur` only in
//! tail position, and reports undefined names and unknown tools before anything runs.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use ptc_lisp_syntax::{Form, FormKind, Span};

use crate::builtins::{self, Builtin};
use crate::desugar;
use crate::error::{ErrorKind, EvalError};
use crate::node::{CaptureFrom, CaseNode, ForClause, ForNode, Lambda, LoopNode, MapBinding, Node, Pattern};
use crate::regex_value::RegexValue;
use crate::special_form::SpecialForm;
use crate::special_form::SpecialForm as SF;
use crate::tool_keys;
use crate::value::{PMap, PSet, Value};

type R<T> = Result<T, EvalError>;

/// Deepest expression nesting a program may have after macro expansion.
pub(crate) const MAX_NODE_DEPTH: u32 = 1_000;

/// What the analyzer needs to know about the world.
#[derive(Debug, Default, Clone)]
pub(crate) struct AnalyzeEnv {
    /// Names defined by earlier runs (memory).
    pub user_names: HashSet<String>,
    /// Tools programs may call.
    pub tools: BTreeSet<String>,
    /// Tools offered to the model natively only (a program calling one is rejected).
    pub native_only: BTreeSet<String>,
    /// Keys of the context (`data/`).
    pub data_keys: HashSet<String>,
    /// Unique symbol/keyword cap.
    pub max_symbols: usize,
}

/// An analyzed program.
#[derive(Debug)]
pub(crate) struct Program {
    /// Top-level nodes.
    pub nodes: Vec<Node>,
    /// Slots of the top-level frame.
    pub frame_size: u32,
    /// Names this program may define.
    pub defined: Vec<String>,
}

#[derive(Default)]
struct FnScope {
    locals: Vec<(Arc<str>, u32)>,
    next_slot: u32,
    max_slot: u32,
    captures: Vec<(Arc<str>, CaptureFrom)>,
    self_name: Option<Arc<str>>,
    /// In a `letfn` function: the names of its group's functions (itself included), which
    /// it reaches through the function in its self slot.
    siblings: Vec<Arc<str>>,
    uses_self: bool,
}

enum LocalRef {
    Local(u32),
    Capture(u32),
    SelfFn,
    Sibling(u32),
}

struct Analyzer<'e> {
    env: &'e AnalyzeEnv,
    defined: HashSet<String>,
    scopes: Vec<FnScope>,
    /// Arity of the innermost recur target (loop or fn), when in tail position.
    recur_arity: Option<usize>,
    in_short_fn: bool,
    /// Undefined names: where each is first used, and the closest names in scope there.
    undefined: BTreeMap<String, (Span, Vec<String>)>,
    unknown_tools: BTreeSet<String>,
    symbols: HashSet<String>,
    gensym: u32,
    /// Current expression depth (see `MAX_NODE_DEPTH`).
    depth: u32,
}

/// Analyzes a whole program.
pub(crate) fn analyze_program(forms: &[Form], env: &AnalyzeEnv) -> Result<Program, EvalError> {
    let mut defined = HashSet::new();
    for f in forms {
        collect_defs(f, &mut defined);
    }
    let mut a = Analyzer {
        env,
        defined,
        scopes: vec![FnScope::default()],
        recur_arity: None,
        in_short_fn: false,
        undefined: BTreeMap::new(),
        unknown_tools: BTreeSet::new(),
        symbols: HashSet::new(),
        gensym: 0,
        depth: 0,
    };
    let mut nodes = Vec::with_capacity(forms.len());
    let mut first_err = None;
    for f in forms {
        match a.form(f, false) {
            Ok(n) => nodes.push(n),
            Err(e) => {
                first_err = Some(e);
                break;
            }
        }
    }
    // every name written in the text counts, wherever it stands: the names a program
    // defines (`def`, `defn`, `letfn`), binds, quotes or only mentions
    for f in forms {
        if a.symbols.len() > env.max_symbols {
            break;
        }
        text_symbols(f, &mut a.symbols);
    }
    if a.symbols.len() > env.max_symbols {
        return Err(EvalError::new(
            ErrorKind::SymbolLimitExceeded,
            format!(
                "program uses {} unique symbols and keywords, more than the limit of {} (max_symbols); reuse names, or keep varying names as strings or map keys in data",
                a.symbols.len(),
                env.max_symbols
            ),
        ));
    }
    if let Some(native) = a.unknown_tools.iter().find_map(|n| tool_keys::resolve_tool_name(n, &env.native_only)) {
        return Err(EvalError::new(
            ErrorKind::UnknownTool,
            format!(
                "tool/{native} is offered to you as a native tool only and cannot be called from a program; call it directly as a tool, then work on its result in a later program"
            ),
        ));
    }
    if !a.unknown_tools.is_empty() {
        let names: Vec<&str> = a.unknown_tools.iter().map(String::as_str).collect();
        let avail = if env.tools.is_empty() {
            "No tools available.".to_string()
        } else {
            format!("Available tools: {}", env.tools.iter().cloned().collect::<Vec<_>>().join(", "))
        };
        let near: Vec<String> = names
            .iter()
            .flat_map(|n| crate::suggest::closest(n, env.tools.iter().map(String::as_str), 1))
            .map(|t| format!("`tool/{t}`"))
            .collect();
        let hint = if near.is_empty() { String::new() } else { format!(" Did you mean {}?", near.join(" or ")) };
        return Err(EvalError::new(
            ErrorKind::UnknownTool,
            format!("Unknown tool: {}.{hint} {avail}", names.join(", ")),
        ));
    }
    if !a.undefined.is_empty() {
        // one name: the error's span locates it (renderers add line and column); several:
        // each name carries its own location in the message
        let located = a.undefined.len() > 1;
        let mut first: Option<Span> = None;
        // in the order the program uses them: the first ones are those with near names
        let mut in_order: Vec<_> = a.undefined.iter().collect();
        in_order.sort_by_key(|(_, (span, _))| (span.line, span.column));
        let described: Vec<String> = in_order
            .into_iter()
            .take(LISTED_UNDEFINED)
            .map(|(n, (span, near))| {
                if first.is_none_or(|f| (span.line, span.column) < (f.line, f.column)) {
                    first = Some(*span);
                }
                let mut d =
                    if located { format!("{n} (line {}, column {})", span.line, span.column) } else { n.to_string() };
                if let Some(h) = hint_for(n) {
                    d.push_str(&format!(": {h}"));
                } else if !near.is_empty() {
                    let near: Vec<String> = near.iter().map(|n| format!("`{n}`")).collect();
                    d.push_str(&format!("; did you mean {}?", near.join(" or ")));
                }
                d
            })
            .collect();
        let more = a.undefined.len().saturating_sub(LISTED_UNDEFINED);
        let msg = if described.len() == 1 {
            format!("Undefined variable: {}", described[0])
        } else if more > 0 {
            format!("Undefined variables: {}, and {more} more", described.join(", "))
        } else {
            format!("Undefined variables: {}", described.join(", "))
        };
        let e = EvalError::new(ErrorKind::UnboundVar, msg);
        return Err(match first {
            Some(s) => e.at(s),
            None => e,
        });
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let frame_size = a.scopes.first().map(|s| s.max_slot).unwrap_or(0);
    let mut nodes = nodes;
    let _ = crate::moves::mark_moves(&mut [], None, &mut nodes);
    let mut defined: Vec<String> = a.defined.into_iter().collect();
    defined.sort();
    Ok(Program { nodes, frame_size, defined })
}

/// Adds the name of every symbol, keyword and var written in `f` to `out`.
fn text_symbols(f: &Form, out: &mut HashSet<String>) {
    match &f.kind {
        FormKind::Keyword(name) | FormKind::Symbol { name, .. } | FormKind::Var(name)
            if !out.contains(name.as_str()) =>
        {
            out.insert(name.clone());
        }
        FormKind::List(items)
        | FormKind::Vector(items)
        | FormKind::Map(items)
        | FormKind::Set(items)
        | FormKind::ShortFn(items) => {
            for i in items {
                text_symbols(i, out);
            }
        }
        FormKind::Quote(inner) => text_symbols(inner, out),
        _ => {}
    }
}

fn collect_defs(f: &Form, out: &mut HashSet<String>) {
    match &f.kind {
        FormKind::List(items) => {
            if let (Some(head), Some(name)) = (items.first(), items.get(1))
                && let (Some(h), Some(n)) = (head.as_plain_symbol(), name.as_plain_symbol())
                && SpecialForm::lookup(h).is_some_and(SpecialForm::defines_name)
            {
                out.insert(n.to_string());
            }
            for i in items {
                collect_defs(i, out);
            }
        }
        FormKind::Vector(items) | FormKind::Map(items) | FormKind::Set(items) | FormKind::ShortFn(items) => {
            for i in items {
                collect_defs(i, out);
            }
        }
        _ => {}
    }
}

/// How many undefined names an error lists (each with its near names); the rest are counted.
const LISTED_UNDEFINED: usize = 8;

/// Hints for names LLMs reach for that PTC-Lisp does not have.
fn hint_for(name: &str) -> Option<&'static str> {
    Some(match name {
        "atom" | "swap!" | "reset!" | "deref" | "ref" | "agent" => {
            "PTC-Lisp has no mutable state: thread values through let, loop/recur or reduce"
        }
        "try" | "catch" | "throw" | "finally" => {
            "try/catch is not supported: errors end the program; check values first (if, some?, number?) or stop with (fail {:reason ...})"
        }
        "defmacro" | "eval" | "read-string" | "macroexpand" => "macros and eval are not supported",
        "lazy-seq" | "lazy-cat" => {
            "lazy-seq is not supported: build infinite sequences with (range), (iterate f x), repeat, cycle or (repeatedly f), e.g. (take 3 (iterate inc 0)) instead of a recursive lazy-seq, or collect with loop/recur"
        }
        "sorted-map-by" => {
            "sorted-map-by is not supported: a map keeps its keys in the order of compare (like sorted-map), and no function can change it; for another order sort the entries, e.g. (sort-by key > m) or (sort-by key #(compare %2 %1) m), or sort the keys when reading: (map m (sort > (keys m)))"
        }
        "sorted-set-by" => {
            "sorted-set-by is not supported: a set keeps its items in the order of compare (like sorted-set), and no function can change it; for another order sort the items into a vector, e.g. (sort > (set xs)) or (sort (comparator >) (distinct xs))"
        }
        "defmulti" | "defmethod" => {
            "defmulti is not supported: dispatch with case or cond on the dispatch value, e.g. (defn area [s] (case (:shape s) :circle (* 3.14 (:r s) (:r s)) :square (* (:side s) (:side s))))"
        }
        "defrecord" | "deftype" | "defprotocol" | "reify" => {
            "records and types are not supported: use plain maps like {:x 1 :y 2} and functions over them (a constructor is (defn ->point [x y] {:x x :y y}))"
        }
        "while" => "while needs mutable state: use loop/recur, or doseq over (range n)",
        "doto" => "doto is for mutable Java objects: use (do (f x) x), or thread the value with ->",
        "import" | "use" | "in-ns" => {
            "namespaces cannot be created; string/set/walk functions are available as str/, set/, walk/"
        }
        "print" | "prn" | "printf" | "pr" => "use println to print, or str/format to build text",
        "with-out-str" => {
            "with-out-str is not supported: println output goes to the run's prints, not to a string; build the text with str, format or str/join instead"
        }
        "future" | "promise" | "delay" | "deliver" => "use pmap or pcalls for parallel work",
        "rand" | "rand-int" | "rand-nth" | "shuffle" | "random-sample" | "random-uuid" => {
            "randomness is not available: a program's answer depends only on its input, so a rerun gives the same answer; choose deterministically, e.g. (first xs), (nth xs (mod i (count xs))), (take n (sort-by :id xs)), or ask a tool for random values"
        }
        "replicate" => "replicate is deprecated in Clojure: write (repeat n x)",
        "identical?" => {
            "identical? asks whether two values are the same object, which PTC-Lisp values do not expose: compare with = (or nil? for nil)"
        }
        "data" => "data is a namespace: write data/<key> to read one context key",
        "tool" => "tool is a namespace: write (tool/<name> {:arg value}) to call a tool",
        _ => return None,
    })
}

impl Analyzer<'_> {
    fn scope(&mut self) -> &mut FnScope {
        // scopes always holds at least the top-level frame
        let n = self.scopes.len() - 1;
        &mut self.scopes[n]
    }

    fn new_slot(&mut self, name: &str) -> u32 {
        let s = self.scope();
        let slot = s.next_slot;
        s.next_slot += 1;
        s.max_slot = s.max_slot.max(s.next_slot);
        s.locals.push((Arc::from(name), slot));
        slot
    }

    /// Saves the local-binding state so a scope can be closed.
    fn mark(&mut self) -> (usize, u32) {
        let s = self.scope();
        (s.locals.len(), s.next_slot)
    }

    fn reset(&mut self, m: (usize, u32)) {
        let s = self.scope();
        s.locals.truncate(m.0);
        s.next_slot = m.1;
    }

    fn lookup_local(&mut self, level: usize, name: &str) -> Option<LocalRef> {
        let scope = &mut self.scopes[level];
        if let Some((_, slot)) = scope.locals.iter().rev().find(|(n, _)| &**n == name) {
            return Some(LocalRef::Local(*slot));
        }
        if scope.self_name.as_deref() == Some(name) {
            scope.uses_self = true;
            return Some(LocalRef::SelfFn);
        }
        // a name written twice in one letfn is the later function, as in Clojure
        if let Some(j) = scope.siblings.iter().rposition(|n| &**n == name) {
            scope.uses_self = true;
            return Some(LocalRef::Sibling(j as u32));
        }
        if let Some(i) = scope.captures.iter().position(|(n, _)| &**n == name) {
            return Some(LocalRef::Capture(i as u32));
        }
        if level == 0 {
            return None;
        }
        let outer = self.lookup_local(level - 1, name)?;
        let from = match outer {
            LocalRef::Local(s) => CaptureFrom::Local(s),
            LocalRef::Capture(i) => CaptureFrom::Capture(i),
            LocalRef::SelfFn => CaptureFrom::SelfFn,
            LocalRef::Sibling(j) => CaptureFrom::Sibling(j),
        };
        let scope = &mut self.scopes[level];
        scope.captures.push((Arc::from(name), from));
        Some(LocalRef::Capture(scope.captures.len() as u32 - 1))
    }

    fn resolve_local(&mut self, name: &str) -> Option<Node> {
        let level = self.scopes.len() - 1;
        self.lookup_local(level, name).map(|r| match r {
            LocalRef::Local(s) => Node::Local(s),
            LocalRef::Capture(i) => Node::Capture(i),
            LocalRef::SelfFn => Node::SelfFn,
            LocalRef::Sibling(j) => Node::Sibling(j),
        })
    }

    fn is_user_name(&self, name: &str) -> bool {
        self.defined.contains(name) || self.env.user_names.contains(name)
    }

    fn note_symbol(&mut self, s: &str) {
        if self.symbols.len() <= self.env.max_symbols {
            self.symbols.insert(s.to_string());
        }
    }

    fn body(&mut self, forms: &[Form], tail: bool) -> R<Node> {
        match forms {
            [] => Ok(Node::Const(Value::Nil)),
            [one] => self.form(one, tail),
            many => {
                let mut nodes = Vec::with_capacity(many.len());
                for (i, f) in many.iter().enumerate() {
                    nodes.push(self.form(f, tail && i + 1 == many.len())?);
                }
                Ok(Node::Do(nodes))
            }
        }
    }

    fn form(&mut self, f: &Form, tail: bool) -> R<Node> {
        // macros (threading, cond) can nest far deeper than the reader allows; the
        // evaluator recurses over this depth, so it is capped here, before anything runs
        if self.depth >= MAX_NODE_DEPTH {
            return Err(EvalError::new(
                ErrorKind::InvalidForm,
                format!(
                    "the program nests more than {MAX_NODE_DEPTH} levels deep once threading and cond forms are expanded; split long pipelines with let or def"
                ),
            )
            .at(f.span));
        }
        self.depth += 1;
        let node = self.form_inner(f, tail);
        self.depth -= 1;
        node
    }

    fn form_inner(&mut self, f: &Form, tail: bool) -> R<Node> {
        let span = f.span;
        match &f.kind {
            FormKind::Nil => Ok(Node::Const(Value::Nil)),
            FormKind::Bool(b) => Ok(Node::Const(Value::Bool(*b))),
            FormKind::Int(i) => Ok(Node::Const(Value::Int(*i))),
            FormKind::Float(x) => Ok(Node::Const(Value::Float(*x))),
            FormKind::Str(s) => Ok(Node::Const(Value::str(s.as_str()))),
            FormKind::Char(c) => Ok(Node::Const(Value::str(c.to_string()))),
            FormKind::Keyword(k) => {
                self.note_symbol(k);
                Ok(Node::Const(Value::kw(k.as_str())))
            }
            FormKind::Regex(src) => match RegexValue::compile(src) {
                Ok(r) => Ok(Node::Const(Value::Regex(Arc::new(r)))),
                Err(m) => Err(EvalError::new(ErrorKind::InvalidForm, m).at(span)),
            },
            FormKind::Var(name) => Ok(Node::Const(Value::Var(Arc::from(name.as_str())))),
            FormKind::Quote(inner) => self.quote(inner, span),
            FormKind::Symbol { ns, name } => {
                self.note_symbol(name);
                self.symbol(ns.as_deref(), name, span)
            }
            FormKind::Vector(items) => {
                let nodes = self.forms(items)?;
                Ok(match all_const(&nodes) {
                    Some(vals) => Node::Const(Value::vector(vals)),
                    None => Node::Vector(nodes),
                })
            }
            FormKind::Set(items) => {
                let nodes = self.forms(items)?;
                if let Some(vals) = all_const(&nodes) {
                    let set = PSet::from_items(vals.iter().cloned());
                    if set.len() != vals.len() {
                        return Err(EvalError::new(
                            ErrorKind::InvalidForm,
                            "duplicate element in set literal #{...}; each member must be unique",
                        )
                        .at(span));
                    }
                    return Ok(Node::Const(Value::Set(Arc::new(set))));
                }
                Ok(Node::Set(nodes))
            }
            FormKind::Map(items) => {
                let nodes = self.forms(items)?;
                let mut pairs = Vec::with_capacity(nodes.len() / 2);
                let mut it = nodes.into_iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    pairs.push((k, v));
                }
                let mut seen = Vec::new();
                for (k, _) in &pairs {
                    if let Node::Const(kv) = k {
                        if seen.contains(kv) {
                            return Err(EvalError::new(
                                ErrorKind::InvalidForm,
                                format!(
                                    "duplicate key {} in map literal; each key may appear once",
                                    crate::printer::to_clojure(kv)
                                ),
                            )
                            .at(span));
                        }
                        seen.push(kv.clone());
                    }
                }
                if pairs.iter().all(|(k, v)| matches!((k, v), (Node::Const(_), Node::Const(_)))) {
                    let mut m = PMap::new();
                    for (k, v) in pairs {
                        if let (Node::Const(k), Node::Const(v)) = (k, v) {
                            m.insert(k, v);
                        }
                    }
                    return Ok(Node::Const(Value::Map(Arc::new(m))));
                }
                Ok(keyed_map(pairs))
            }
            FormKind::ShortFn(body) => self.short_fn(body, span),
            FormKind::List(items) => self.list(items, span, tail),
        }
    }

    fn forms(&mut self, items: &[Form]) -> R<Vec<Node>> {
        items.iter().map(|f| self.form(f, false)).collect()
    }

    fn quote(&mut self, inner: &Form, span: Span) -> R<Node> {
        let _ = span;
        Ok(Node::Const(quoted(inner)?))
    }

    fn symbol(&mut self, ns: Option<&str>, name: &str, span: Span) -> R<Node> {
        match ns {
            None => self.plain_symbol(name, span, false),
            Some("data") => Ok(Node::Data(Arc::from(name), span)),
            Some("tool") => {
                if self.tool_exists(name) {
                    Ok(Node::ToolRef(Arc::from(self.tool_name(name))))
                } else {
                    self.unknown_tools.insert(name.to_string());
                    Ok(Node::Const(Value::Nil))
                }
            }
            Some(ns) => match builtins::lookup_ns(ns, name) {
                Some(b) if b.constant => Ok(Node::CallBuiltin(b, Vec::new(), span)),
                Some(b) => Ok(Node::Builtin(b)),
                // a host-provided namespaced definition (an MCP prelude's `crm/get-user`),
                // present in the memory the run starts with
                None if self.env.user_names.contains(&format!("{ns}/{name}")) => {
                    Ok(Node::Global(Arc::from(format!("{ns}/{name}")), None, span))
                }
                None => Err(unknown_ns_member(ns, name, span)),
            },
        }
    }

    /// The names in scope closest to a misspelled one: locals, definitions, builtins,
    /// `data/` keys and tools.
    fn names_near(&self, name: &str) -> Vec<String> {
        let locals = self.scopes.iter().rev().flat_map(|s| s.locals.iter().map(|(n, _)| n.to_string()));
        let mut user: Vec<String> = self.defined.iter().chain(self.env.user_names.iter()).cloned().collect();
        user.sort();
        let builtins = builtins::all()
            .filter(|b| !b.name.contains('/') || builtins::short_name(b) != b.name)
            .flat_map(|b| std::iter::once(b.name).chain(b.aliases.iter().copied()))
            .map(str::to_string);
        let mut data: Vec<String> = self.env.data_keys.iter().map(|k| format!("data/{k}")).collect();
        data.sort();
        let tools = self.env.tools.iter().map(|t| format!("tool/{t}"));
        let all: Vec<String> = locals.chain(user).chain(builtins).chain(data).chain(tools).collect();
        crate::suggest::closest(name, all.iter().map(String::as_str), 2)
    }

    fn tool_exists(&self, name: &str) -> bool {
        tool_keys::resolve_tool_name(name, &self.env.tools).is_some()
    }

    fn tool_name(&self, name: &str) -> String {
        tool_keys::resolve_tool_name(name, &self.env.tools).unwrap_or_else(|| tool_keys::tool_key(name))
    }

    fn plain_symbol(&mut self, name: &str, span: Span, call_position: bool) -> R<Node> {
        if let Some(n) = self.resolve_local(name) {
            return Ok(n);
        }
        if let Some(n) = name.strip_prefix('%') {
            if self.in_short_fn {
                let target = if n.is_empty() { "%1".to_string() } else { name.to_string() };
                if let Some(node) = self.resolve_local(&target) {
                    return Ok(node);
                }
            }
            if n.is_empty() || n == "&" || n.chars().all(|c| c.is_ascii_digit()) {
                return Err(EvalError::new(
                    ErrorKind::InvalidPlaceholder,
                    format!(
                        "placeholder '{name}' can only be used inside #(...); write (fn [x] ...) to name the argument"
                    ),
                )
                .at(span));
            }
        }
        if let Some(n) = name.strip_prefix('*').and_then(|r| r.parse::<u8>().ok()).filter(|n| (1..=3).contains(n)) {
            return Ok(Node::TurnHistory(n));
        }
        let builtin = builtins::lookup(name);
        if self.is_user_name(name) {
            return Ok(Node::Global(Arc::from(name), builtin, span));
        }
        if let Some(b) = builtin {
            // a builtin passed as a value (`(update m k inc)`, `(reduce + xs)`) is made once
            // here, not allocated each time the expression runs
            return Ok(if call_position {
                Node::Builtin(b)
            } else {
                Node::Const(Value::Func(crate::function::Function::arc(crate::function::FnRepr::Builtin(b))))
            });
        }
        if name.starts_with('.') && name.len() > 1 {
            return Err(unsupported_method(name, span));
        }
        // auto-fallback to tool/ and data/
        let is_tool = self.tool_exists(name);
        let is_data = self.env.data_keys.contains(name);
        match (is_tool, is_data) {
            (true, true) => Err(EvalError::new(
                ErrorKind::UnboundVar,
                format!("ambiguous reference {name}: both tool/{name} and data/{name} exist; write tool/{name} or data/{name}"),
            )
            .at(span)),
            (true, false) => Ok(Node::ToolRef(Arc::from(self.tool_name(name)))),
            (false, true) => Ok(Node::Data(Arc::from(name), span)),
            (false, false) => {
                let _ = call_position;
                if !self.undefined.contains_key(name) {
                    // suggestions for the first few names only: a program of thousands of
                    // unknown names must not spend seconds finding near names for each
                    let near =
                        if self.undefined.len() < LISTED_UNDEFINED { self.names_near(name) } else { Vec::new() };
                    self.undefined.insert(name.to_string(), (span, near));
                }
                Ok(Node::Const(Value::Nil))
            }
        }
    }

    fn short_fn(&mut self, body: &[Form], span: Span) -> R<Node> {
        if self.in_short_fn {
            return Err(EvalError::new(
                ErrorKind::InvalidForm,
                "nested #() short functions are not allowed; use (fn [x] ...) for the inner one",
            )
            .at(span));
        }
        let mut max = 0usize;
        let mut rest = false;
        scan_placeholders(body, &mut max, &mut rest);
        let mut params = Vec::new();
        for i in 1..=max {
            params.push(desugar::sym(&format!("%{i}"), span));
        }
        if rest {
            params.push(desugar::sym("&", span));
            params.push(desugar::sym("%&", span));
        }
        let call = desugar::list(body.to_vec(), span);
        self.in_short_fn = true;
        let r = self.lambda(None, &params, std::slice::from_ref(&call));
        self.in_short_fn = false;
        r
    }

    fn list(&mut self, items: &[Form], span: Span, tail: bool) -> R<Node> {
        // `()` evaluates to the empty list, as in Clojure
        let Some(head) = items.first() else {
            return Ok(Node::Const(Value::empty_list()));
        };
        let args = &items[1..];
        if let FormKind::Symbol { ns, name } = &head.kind {
            self.note_symbol(name);
            match ns.as_deref() {
                None => {
                    if self.resolve_local(name).is_none()
                        && let Some(node) = self.special(name, args, span, tail)?
                    {
                        return Ok(node);
                    }
                }
                Some("tool") => return self.tool_call(name, args, span),
                Some("data") => {
                    return Err(EvalError::new(
                        ErrorKind::InvalidForm,
                        format!("data/{name} is a value, not a function; write data/{name} without parentheses"),
                    )
                    .at(span));
                }
                _ => {}
            }
            if ns.is_none()
                && !self.is_user_name(name)
                && self.resolve_local(name).is_none()
                && builtins::lookup(name).is_none()
            {
                if name.starts_with('.') && name.len() > 1 {
                    return Err(unsupported_method(name, span));
                }
                if self.tool_exists(name) && !self.env.data_keys.contains(name) {
                    let tname = self.tool_name(name);
                    return self.tool_call(&tname, args, span);
                }
            }
        }
        // discovery forms take their first argument unevaluated: (doc map) = (doc "map")
        if let FormKind::Symbol { ns: None, name } = &head.kind
            && crate::builtins::lookup(name).is_some_and(|b| b.quotes_name)
            && !self.is_user_name(name)
            && self.resolve_local(name).is_none()
            && let Some(Form { kind: FormKind::Symbol { ns, name: target }, span: s }) = args.first()
        {
            let full = match ns {
                Some(ns) => format!("{ns}/{target}"),
                None => target.clone(),
            };
            let mut rewritten = args.to_vec();
            rewritten[0] = Form::new(FormKind::Str(full), *s);
            let mut items = vec![head.clone()];
            items.extend(rewritten);
            return self.list(&items, span, tail);
        }
        if let (FormKind::Keyword(k), 1..=2) = (&head.kind, args.len()) {
            self.note_symbol(k);
            let target = self.form(&args[0], false)?;
            let default = match args.get(1) {
                Some(d) => Some(Box::new(self.form(d, false)?)),
                None => None,
            };
            return Ok(Node::GetKey(Value::kw(k.as_str()), Box::new(target), default));
        }
        // `(Integer/MAX_VALUE)`: Clojure reads a static field in parentheses as the field
        if let FormKind::Symbol { ns: Some(ns), name } = &head.kind
            && args.is_empty()
            && let Some(b) = builtins::lookup_ns(ns, name)
            && b.constant
        {
            return Ok(Node::CallBuiltin(b, Vec::new(), span));
        }
        let f = match &head.kind {
            FormKind::Symbol { ns: None, name } => self.plain_symbol(name, head.span, true)?,
            _ => self.form(head, false)?,
        };
        let mut args = self.forms(args)?;
        // two vector literals compared: their items are compared without building them
        if let Node::Builtin(b) = &f
            && let [Node::Vector(x), Node::Vector(y)] = args.as_mut_slice()
            && let Some(how) = crate::node::ItemsCmp::of(b, x.len(), y.len())
        {
            let sides = (std::mem::take(x), std::mem::take(y));
            return Ok(Node::CompareItems(how, Box::new(sides), span));
        }
        Ok(match f {
            Node::Builtin(b) if args.len() == 2 && b.compare.is_some() => {
                let mut it = args.into_iter();
                match (b.compare, it.next(), it.next()) {
                    (Some(op), Some(x), Some(y)) => Node::Compare(op, Box::new((x, y))),
                    _ => return Err(EvalError::new(ErrorKind::RuntimeError, "internal error: comparison arity")),
                }
            }
            Node::Builtin(b) if crate::node::ArithOp::of(b, args.len()).is_some() => {
                let op = crate::node::ArithOp::of(b, args.len());
                let mut it = args.into_iter();
                match (op, it.next()) {
                    (Some(op), Some(x)) => Node::Arith(op, b, Box::new((x, it.next())), span),
                    _ => return Err(EvalError::new(ErrorKind::RuntimeError, "internal error: arithmetic arity")),
                }
            }
            Node::Builtin(b) if args.len() == 1 && b.test.is_some() => match args.pop() {
                Some(x) => Node::Test(b, Box::new(x), span),
                None => return Err(EvalError::new(ErrorKind::RuntimeError, "internal error: test arity")),
            },
            Node::Builtin(b) => match made_of_constants(b, &args) {
                // `(fnil inc 0)`: the function is made here, once; the call still burns
                // its unit of fuel each time it runs, as `identity` of the made function
                Some(f) => Node::CallBuiltin(builtin("identity")?, vec![Node::Const(f)], span),
                None => crate::fusion::call_node(b, args, span),
            },
            Node::Sibling(j) => Node::CallSibling(j, args, span),
            other => Node::Call(Box::new(other), args, span),
        })
    }

    fn tool_call(&mut self, name: &str, args: &[Form], span: Span) -> R<Node> {
        if !self.tool_exists(name) {
            self.unknown_tools.insert(name.to_string());
        }
        let nodes = self.forms(args)?;
        Ok(Node::ToolCall(Arc::from(self.tool_name(name)), nodes, span))
    }

    fn special(&mut self, name: &str, args: &[Form], span: Span, tail: bool) -> R<Option<Node>> {
        let Some(form) = SpecialForm::lookup(name) else {
            return Ok(None);
        };
        let node = match form {
            SF::Quote => match args {
                [one] => self.quote(one, span)?,
                _ => return Err(arity_form("quote", "(quote sym)", span)),
            },
            SF::Comment => Node::Const(Value::Nil),
            SF::Do => self.body(args, tail)?,
            SF::If => match args {
                [c, t] => Node::If(Box::new((self.form(c, false)?, self.form(t, tail)?, Node::Const(Value::Nil)))),
                [c, t, e] => Node::If(Box::new((self.form(c, false)?, self.form(t, tail)?, self.form(e, tail)?))),
                _ => return Err(arity_form("if", "(if test then else?)", span)),
            },
            SF::IfNot => match args {
                [c, t] => Node::If(Box::new((self.form(c, false)?, Node::Const(Value::Nil), self.form(t, tail)?))),
                [c, t, e] => Node::If(Box::new((self.form(c, false)?, self.form(e, tail)?, self.form(t, tail)?))),
                _ => return Err(arity_form("if-not", "(if-not test then else?)", span)),
            },
            SF::When | SF::WhenNot => {
                let Some((c, body)) = args.split_first() else {
                    return Err(arity_form(name, "(when test body...)", span));
                };
                let c = self.form(c, false)?;
                let b = self.body(body, tail)?;
                if name == "when" {
                    Node::If(Box::new((c, b, Node::Const(Value::Nil))))
                } else {
                    Node::If(Box::new((c, Node::Const(Value::Nil), b)))
                }
            }
            SF::Cond => {
                let f = desugar::cond(args, span)?;
                self.form(&f, tail)?
            }
            SF::Condp => {
                let f = self.with_gensym(|g| desugar::condp(args, span, g))?;
                self.form(&f, tail)?
            }
            SF::Case => self.case(args, span, tail)?,
            SF::And | SF::Or => {
                let nodes: Vec<Node> = args
                    .iter()
                    .enumerate()
                    .map(|(i, f)| self.form(f, tail && i + 1 == args.len()))
                    .collect::<R<_>>()?;
                match (name, nodes.len()) {
                    ("and", 0) => Node::Const(Value::Bool(true)),
                    ("or", 0) => Node::Const(Value::Nil),
                    ("and", _) => Node::And(nodes),
                    _ => Node::Or(nodes),
                }
            }
            SF::Let => self.let_form(args, span, tail)?,
            SF::Loop => self.loop_form(args, span)?,
            SF::Recur => {
                let Some(arity) = self.recur_arity.filter(|_| tail) else {
                    return Err(EvalError::new(
                        ErrorKind::InvalidForm,
                        "recur can only be used in tail position of a loop or fn (as the last expression); move it to the end or use reduce",
                    )
                    .at(span));
                };
                if args.len() != arity {
                    return Err(EvalError::new(
                        ErrorKind::InvalidForm,
                        format!("recur called with {} arguments but the loop/fn binds {arity}", args.len()),
                    )
                    .at(span));
                }
                Node::Recur(self.forms(args)?)
            }
            SF::Fn => self.fn_form(args, span)?,
            SF::Def | SF::Defonce => self.def_form(name, args, span)?,
            SF::Defn | SF::DefnPrivate => self.defn_form(args, span)?,
            SF::IfLet | SF::WhenLet | SF::IfSome | SF::WhenSome => self.if_let(name, args, span, tail)?,
            SF::WhenFirst => self.when_first(args, span, tail)?,
            SF::Thread | SF::ThreadLast => {
                let f = desugar::thread(args, name == "->>", span)?;
                self.form(&f, tail)?
            }
            SF::AsThread => {
                let f = desugar::as_thread(args, span)?;
                self.form(&f, tail)?
            }
            SF::CondThread | SF::CondThreadLast => {
                let f = self.with_gensym(|g| desugar::cond_thread(args, name == "cond->>", span, g))?;
                self.form(&f, tail)?
            }
            SF::SomeThread | SF::SomeThreadLast => {
                let f = self.with_gensym(|g| desugar::some_thread(args, name == "some->>", span, g))?;
                self.form(&f, tail)?
            }
            SF::For | SF::Doseq => self.for_form(name, args, span)?,
            SF::Return | SF::Fail => {
                let v = match args {
                    [] => Node::Const(Value::Nil),
                    [one] => self.form(one, false)?,
                    _ => return Err(arity_form(name, &format!("({name} value)"), span)),
                };
                if name == "return" { Node::Return(Box::new(v)) } else { Node::Fail(Box::new(v)) }
            }
            SF::Dot => {
                return Err(EvalError::new(
                    ErrorKind::InvalidForm,
                    "(. obj method) is not supported. Use (.method obj) instead",
                )
                .at(span));
            }
            SF::Letfn => self.letfn_form(args, span, tail)?,
            SF::Dotimes => match args.split_first() {
                Some((Form { kind: FormKind::Vector(b), span: bspan }, body)) if b.len() == 2 => {
                    let range = desugar::list(vec![desugar::sym("range", *bspan), b[1].clone()], *bspan);
                    let mut items =
                        vec![desugar::sym("doseq", span), desugar::vector(vec![b[0].clone(), range], *bspan)];
                    items.extend(body.iter().cloned());
                    self.form(&desugar::list(items, span), tail)?
                }
                _ => return Err(arity_form("dotimes", "(dotimes [i n] body...)", span)),
            },
            SF::Require => {
                check_requires(name, args, span)?;
                Node::Const(Value::Nil)
            }
            SF::ArityError => match args {
                [Form { kind: FormKind::Str(m), .. }] => Node::Raise(ErrorKind::ArityError, Arc::from(m.as_str())),
                _ => return Err(EvalError::new(ErrorKind::InvalidForm, "internal error: arity-error form")),
            },
            SF::Raise => match args {
                [Form { kind: FormKind::Str(m), .. }] => Node::Raise(ErrorKind::RuntimeError, Arc::from(m.as_str())),
                _ => return Err(EvalError::new(ErrorKind::InvalidForm, "internal error: raise form")),
            },
            SF::Declare => {
                if let Some(bad) = args.iter().find(|a| a.as_plain_symbol().is_none()) {
                    return Err(EvalError::new(
                        ErrorKind::InvalidForm,
                        format!(
                            "declare takes the names of functions defined later, like (declare helper); got {}",
                            ptc_lisp_syntax::print_form(bad)
                        ),
                    )
                    .at(bad.span));
                }
                // functions may call ones defined later in the program anyway
                Node::Const(Value::Nil)
            }
            SF::Assert => {
                let f = desugar::assert(args, span)?;
                self.form(&f, tail)?
            }
            SF::Unsupported => {
                let hint = hint_for(name).unwrap_or("this form is outside the PTC-Lisp subset");
                return Err(EvalError::new(
                    ErrorKind::InvalidForm,
                    format!("{name} is not supported in PTC-Lisp: {hint}"),
                )
                .at(span));
            }
        };
        Ok(Some(node))
    }

    /// Runs a desugaring with a generator of fresh, unreadable local names.
    fn with_gensym<T>(&mut self, f: impl FnOnce(&mut dyn FnMut() -> String) -> T) -> T {
        let mut counter = self.gensym;
        let mut next = || {
            counter += 1;
            // contains a space, so no program can refer to it
            format!("gen {counter}")
        };
        let out = f(&mut next);
        self.gensym = counter;
        out
    }

    fn patterns_let(&mut self, bindings: &[Form], span: Span, what: &str) -> R<Vec<(Pattern, Node)>> {
        if !bindings.len().is_multiple_of(2) {
            return Err(EvalError::new(
                ErrorKind::InvalidForm,
                format!("{what} bindings require an even number of forms: [name value ...]"),
            )
            .at(span));
        }
        let mut out = Vec::with_capacity(bindings.len() / 2);
        for pair in bindings.chunks(2) {
            let value = self.form(&pair[1], false)?;
            let pat = self.pattern(&pair[0])?;
            out.push((pat, value));
        }
        Ok(out)
    }

    fn binding_vector<'f>(&self, args: &'f [Form], what: &str, span: Span) -> R<(&'f [Form], &'f [Form])> {
        match args.split_first() {
            Some((Form { kind: FormKind::Vector(b), .. }, body)) => Ok((b.as_slice(), body)),
            _ => Err(EvalError::new(
                ErrorKind::InvalidForm,
                format!("{what} needs a binding vector: ({what} [name value ...] body...)"),
            )
            .at(span)),
        }
    }

    fn let_form(&mut self, args: &[Form], span: Span, tail: bool) -> R<Node> {
        let (bindings, body) = self.binding_vector(args, "let", span)?;
        let m = self.mark();
        let bs = self.patterns_let(bindings, span, "let")?;
        let body = self.body(body, tail)?;
        self.reset(m);
        Ok(Node::Let(bs, Box::new(body)))
    }

    fn loop_form(&mut self, args: &[Form], span: Span) -> R<Node> {
        let (bindings, body) = self.binding_vector(args, "loop", span)?;
        let m = self.mark();
        let bs = self.patterns_let(bindings, span, "loop")?;
        let saved = self.recur_arity.replace(bs.len());
        let body = self.body(body, true);
        self.recur_arity = saved;
        let body = body?;
        self.reset(m);
        Ok(Node::Loop(Box::new(LoopNode { bindings: bs, body })))
    }

    fn fn_form(&mut self, args: &[Form], span: Span) -> R<Node> {
        let (name, rest) = match args.split_first() {
            Some((Form { kind: FormKind::Symbol { ns: None, name }, .. }, rest)) => (Some(name.as_str()), rest),
            _ => (None, args),
        };
        match rest.split_first() {
            Some((Form { kind: FormKind::Vector(params), .. }, body)) => self.lambda(name, params, body),
            Some((Form { kind: FormKind::List(_), .. }, _)) => {
                let (params, body) = self.with_gensym(|g| desugar::multi_arity(name.unwrap_or("fn"), rest, span, g))?;
                self.lambda(name, &params, std::slice::from_ref(&body))
            }
            _ => {
                Err(EvalError::new(ErrorKind::InvalidForm, "fn needs a parameter vector: (fn [x y] body...)").at(span))
            }
        }
    }

    fn lambda(&mut self, name: Option<&str>, params: &[Form], body: &[Form]) -> R<Node> {
        let scope = FnScope { self_name: name.map(Arc::from), ..FnScope::default() };
        let (lambda, scope) = self.lambda_in(scope, name, params, body)?;
        let captures = scope.captures.iter().map(|(_, c)| *c).collect();
        Ok(Node::Fn(Arc::new(lambda), captures))
    }

    /// A function body analysed in `scope` (pushed for it), and the scope as it ends.
    fn lambda_in(
        &mut self,
        scope: FnScope,
        name: Option<&str>,
        params: &[Form],
        body: &[Form],
    ) -> R<(Lambda, FnScope)> {
        self.scopes.push(scope);
        let result = self.lambda_inner(name, params, body);
        let scope = self.scopes.pop().unwrap_or_default();
        let mut lambda = result?;
        let keeps_params =
            crate::moves::mark_moves(&mut lambda.params, lambda.rest.as_mut(), std::slice::from_mut(&mut lambda.body));
        let plain_params = lambda.rest.is_none()
            && lambda.params.iter().enumerate().all(|(i, p)| matches!(p, Pattern::Bind(s) if *s as usize == i))
            && lambda.params.len() <= scope.max_slot as usize;
        let lambda =
            Lambda { frame_size: scope.max_slot, uses_self: scope.uses_self, keeps_params, plain_params, ..lambda };
        Ok((lambda, scope))
    }

    /// `(letfn [(f [x] ...) (g [y] ...)] body...)`. Each function is analysed in a scope
    /// that knows the group's names (a call by one of them is [`Node::CallSibling`]) and
    /// starts from the captures of the functions before it, so the last scope's list is
    /// the whole group's and every function's capture indices hold in it.
    fn letfn_form(&mut self, args: &[Form], span: Span, tail: bool) -> R<Node> {
        let (specs, body) = desugar::letfn_specs(args, span)?;
        let names: Vec<Arc<str>> = specs.iter().map(|(n, _)| Arc::from(*n)).collect();
        let mut captures = Vec::new();
        let mut group = Vec::with_capacity(specs.len());
        for (name, rest) in &specs {
            let multi;
            let rest: &[Form] = match rest.first() {
                Some(Form { kind: FormKind::List(_), .. }) => {
                    let (params, body) = self.with_gensym(|g| desugar::multi_arity(name, rest, span, g))?;
                    multi = [desugar::vector(params, span), body];
                    &multi[..]
                }
                _ => rest,
            };
            let Some((Form { kind: FormKind::Vector(params), .. }, fn_body)) = rest.split_first() else {
                return Err(EvalError::new(
                    ErrorKind::InvalidForm,
                    format!("letfn function {name} needs a parameter vector: ({name} [x] body...)"),
                )
                .at(span));
            };
            let scope = FnScope { siblings: names.clone(), captures, ..FnScope::default() };
            let (lambda, scope) = self.lambda_in(scope, Some(name), params, fn_body)?;
            captures = scope.captures;
            group.push(Arc::new(lambda));
        }
        let m = self.mark();
        let slots = names.iter().map(|n| self.new_slot(n)).collect();
        let body = self.body(body, tail);
        self.reset(m);
        Ok(Node::Letfn(Box::new(crate::node::LetfnNode {
            group: group.into(),
            captures: captures.iter().map(|(_, c)| *c).collect(),
            slots,
            body: body?,
        })))
    }

    fn lambda_inner(&mut self, name: Option<&str>, params: &[Form], body: &[Form]) -> R<Lambda> {
        let mut fixed = Vec::new();
        let mut rest = None;
        let mut names = Vec::new();
        let mut i = 0;
        while i < params.len() {
            let p = &params[i];
            if p.as_plain_symbol() == Some("&") {
                let Some(r) = params.get(i + 1) else {
                    return Err(EvalError::new(
                        ErrorKind::InvalidForm,
                        "& in a parameter vector must be followed by a name: [x & more]",
                    )
                    .at(p.span));
                };
                if params.len() > i + 2 {
                    return Err(EvalError::new(ErrorKind::InvalidForm, "only one parameter may follow &: [x & more]")
                        .at(p.span));
                }
                names.push("&".to_string());
                names.push(param_name(r));
                rest = Some(self.pattern(r)?);
                break;
            }
            names.push(param_name(p));
            fixed.push(self.pattern(p)?);
            i += 1;
        }
        let arity = fixed.len() + usize::from(rest.is_some());
        let saved = self.recur_arity.replace(arity);
        let saved_short = self.in_short_fn;
        let body = self.body(body, true);
        self.recur_arity = saved;
        self.in_short_fn = saved_short;
        let body = body?;
        Ok(Lambda {
            name: name.map(Arc::from),
            params: fixed,
            rest,
            param_names: names,
            frame_size: 0,
            uses_self: false,
            keeps_params: false,
            plain_params: false,
            body,
        })
    }

    fn def_form(&mut self, which: &str, args: &[Form], span: Span) -> R<Node> {
        let (name, doc, value) = match args {
            [n, v] => (n, None, Some(v)),
            [n, Form { kind: FormKind::Str(d), .. }, v] => (n, Some(Arc::from(d.as_str())), Some(v)),
            [n] => (n, None, None),
            _ => return Err(arity_form(which, &format!("({which} name value) or ({which} name \"doc\" value)"), span)),
        };
        let name = match &name.kind {
            FormKind::Symbol { ns: None, name } => name.clone(),
            FormKind::Symbol { ns: Some(ns), name } => {
                return Err(EvalError::new(
                    ErrorKind::InvalidForm,
                    format!("cannot define {ns}/{name}: {ns} is a protected namespace; use a plain name like (def {name} ...)"),
                )
                .at(span));
            }
            _ => {
                return Err(EvalError::new(
                    ErrorKind::InvalidForm,
                    format!("{which} needs a symbol name: ({which} name value); destructuring is not supported in def"),
                )
                .at(span));
            }
        };
        check_definable(&name, span)?;
        let value = match value {
            Some(v) => self.form(v, false)?,
            None => Node::Const(Value::Nil),
        };
        Ok(Node::Def { name: Arc::from(name.as_str()), doc, value: Box::new(value), once: which == "defonce" })
    }

    fn defn_form(&mut self, args: &[Form], span: Span) -> R<Node> {
        let Some((name_form, mut rest)) = args.split_first() else {
            return Err(arity_form("defn", "(defn name [params] body...)", span));
        };
        let Some(name) = name_form.as_plain_symbol() else {
            return Err(
                EvalError::new(ErrorKind::InvalidForm, "defn needs a name: (defn name [params] body...)").at(span)
            );
        };
        check_definable(name, span)?;
        let mut doc = None;
        if let Some((Form { kind: FormKind::Str(d), .. }, r)) = rest.split_first() {
            doc = Some(Arc::from(d.as_str()));
            rest = r;
        }
        if let Some((Form { kind: FormKind::Map(_), .. }, r)) = rest.split_first() {
            rest = r;
        }
        let multi;
        let rest = match rest.first() {
            Some(Form { kind: FormKind::List(_), .. }) => {
                let (params, body) = self.with_gensym(|g| desugar::multi_arity(name, rest, span, g))?;
                multi = [desugar::vector(params, span), body];
                &multi[..]
            }
            _ => rest,
        };
        let node = match rest.split_first() {
            Some((Form { kind: FormKind::Vector(params), .. }, body)) => {
                // self-recursion goes through the user definition, so no self name here
                let n = self.lambda(None, params, body)?;
                match n {
                    Node::Fn(l, caps) => {
                        let l = Arc::try_unwrap(l).map(|mut l| {
                            l.name = Some(Arc::from(name));
                            l
                        });
                        match l {
                            Ok(l) => Node::Fn(Arc::new(l), caps),
                            Err(l) => Node::Fn(l, caps),
                        }
                    }
                    other => other,
                }
            }
            _ => {
                return Err(EvalError::new(
                    ErrorKind::InvalidForm,
                    format!("defn {name} needs a parameter vector: (defn {name} [x] body...)"),
                )
                .at(span));
            }
        };
        Ok(Node::Def { name: Arc::from(name), doc, value: Box::new(node), once: false })
    }

    fn if_let(&mut self, which: &str, args: &[Form], span: Span, tail: bool) -> R<Node> {
        let (bindings, body) = self.binding_vector(args, which, span)?;
        if bindings.len() != 2 {
            return Err(EvalError::new(
                ErrorKind::InvalidForm,
                format!("{which} takes exactly one binding: ({which} [x expr] ...)"),
            )
            .at(span));
        }
        let is_if = which.starts_with("if");
        if is_if && !(1..=2).contains(&body.len()) {
            return Err(arity_form(which, &format!("({which} [x expr] then else?)"), span));
        }
        let value = self.form(&bindings[1], false)?;
        let m = self.mark();
        let tmp = self.new_slot(" if-let");
        let test = if which.ends_with("some") {
            Node::Test(builtin("some?")?, Box::new(Node::Local(tmp)), span)
        } else {
            Node::Local(tmp)
        };
        let m2 = self.mark();
        let pat = self.pattern(&bindings[0])?;
        let then = if is_if { self.form(&body[0], tail)? } else { self.body(body, tail)? };
        self.reset(m2);
        let els = if is_if && body.len() == 2 { self.form(&body[1], tail)? } else { Node::Const(Value::Nil) };
        self.reset(m);
        Ok(Node::Let(
            vec![(Pattern::Bind(tmp), value)],
            Box::new(Node::If(Box::new((test, Node::Let(vec![(pat, Node::Local(tmp))], Box::new(then)), els)))),
        ))
    }

    fn when_first(&mut self, args: &[Form], span: Span, tail: bool) -> R<Node> {
        let (bindings, body) = self.binding_vector(args, "when-first", span)?;
        if bindings.len() != 2 {
            return Err(EvalError::new(
                ErrorKind::InvalidForm,
                "when-first takes one binding: (when-first [x coll] ...)",
            )
            .at(span));
        }
        let coll = self.form(&bindings[1], false)?;
        let m = self.mark();
        let tmp = self.new_slot(" when-first");
        let pat = self.pattern(&bindings[0])?;
        let body = self.body(body, tail)?;
        self.reset(m);
        let test = Node::CallBuiltin(builtin("seq")?, vec![Node::Local(tmp)], span);
        let first = Node::CallBuiltin(builtin("first")?, vec![Node::Local(tmp)], span);
        Ok(Node::Let(
            vec![(Pattern::Bind(tmp), coll)],
            Box::new(Node::If(Box::new((
                test,
                Node::Let(vec![(pat, first)], Box::new(body)),
                Node::Const(Value::Nil),
            )))),
        ))
    }

    fn case(&mut self, args: &[Form], span: Span, tail: bool) -> R<Node> {
        let Some((expr, clauses)) = args.split_first() else {
            return Err(arity_form("case", "(case expr test result ... default?)", span));
        };
        let expr = self.form(expr, false)?;
        let (pairs, default) = if clauses.len() % 2 == 1 {
            (&clauses[..clauses.len() - 1], Some(&clauses[clauses.len() - 1]))
        } else {
            (clauses, None)
        };
        let mut out = Vec::new();
        for pair in pairs.chunks(2) {
            let tests = match &pair[0].kind {
                FormKind::List(items) => items.iter().map(case_const).collect::<R<Vec<_>>>()?,
                _ => vec![case_const(&pair[0])?],
            };
            out.push((tests, self.form(&pair[1], tail)?));
        }
        let default = match default {
            Some(d) => Some(self.form(d, tail)?),
            None => None,
        };
        Ok(Node::Case(Box::new(CaseNode { expr, clauses: out, default })))
    }

    fn for_form(&mut self, which: &str, args: &[Form], span: Span) -> R<Node> {
        let (bindings, body) = self.binding_vector(args, which, span)?;
        if which == "for" && body.is_empty() {
            return Err(EvalError::new(
                ErrorKind::InvalidForm,
                "for needs a body that gives each element: (for [x coll] (f x)); use doseq to only run effects",
            )
            .at(span));
        }
        if bindings.is_empty() || bindings.len() % 2 != 0 {
            return Err(EvalError::new(
                ErrorKind::InvalidForm,
                format!("{which} needs binding pairs: ({which} [x coll :when test] body)"),
            )
            .at(span));
        }
        let m = self.mark();
        let mut clauses = Vec::new();
        for pair in bindings.chunks(2) {
            match &pair[0].kind {
                FormKind::Keyword(k) if k == "when" => clauses.push(ForClause::When(self.form(&pair[1], false)?)),
                FormKind::Keyword(k) if k == "while" => clauses.push(ForClause::While(self.form(&pair[1], false)?)),
                FormKind::Keyword(k) if k == "let" => {
                    let FormKind::Vector(lb) = &pair[1].kind else {
                        return Err(EvalError::new(
                            ErrorKind::InvalidForm,
                            ":let in for needs a binding vector: :let [y (f x)]",
                        )
                        .at(pair[1].span));
                    };
                    clauses.push(ForClause::Let(self.patterns_let(lb, pair[1].span, ":let")?));
                }
                FormKind::Keyword(k) => {
                    return Err(EvalError::new(
                        ErrorKind::InvalidForm,
                        format!("unknown {which} modifier :{k}; use :when, :let or :while"),
                    )
                    .at(pair[0].span));
                }
                _ => {
                    let coll = self.form(&pair[1], false)?;
                    let pat = self.pattern(&pair[0])?;
                    clauses.push(ForClause::Bind(pat, coll));
                }
            }
        }
        let saved = self.recur_arity.take();
        let body = self.body(body, false);
        self.recur_arity = saved;
        let body = body?;
        self.reset(m);
        Ok(Node::For(Box::new(ForNode { clauses, body, discard: which == "doseq" })))
    }

    /// Compiles a binding pattern, allocating slots for its names.
    fn pattern(&mut self, f: &Form) -> R<Pattern> {
        match &f.kind {
            FormKind::Symbol { ns: None, name } if name == "_" => Ok(Pattern::Ignore),
            FormKind::Symbol { ns: None, name } => {
                if matches!(name.as_str(), "nil" | "true" | "false") {
                    return Err(EvalError::new(ErrorKind::InvalidForm, format!("cannot bind {name}")).at(f.span));
                }
                self.note_symbol(name);
                Ok(Pattern::Bind(self.new_slot(name)))
            }
            FormKind::Vector(items) => {
                let mut pats = Vec::new();
                let mut rest = None;
                let mut as_slot = None;
                let mut i = 0;
                while i < items.len() {
                    let it = &items[i];
                    if it.as_plain_symbol() == Some("&") {
                        let Some(r) = items.get(i + 1) else {
                            return Err(EvalError::new(ErrorKind::InvalidForm, "& in a vector pattern must be followed by a name: [x & more]").at(it.span));
                        };
                        rest = Some(Box::new(self.pattern(r)?));
                        i += 2;
                        if let Some(extra) = items.get(i)
                            && !matches!(&extra.kind, FormKind::Keyword(k) if k == "as")
                        {
                            return Err(EvalError::new(
                                ErrorKind::InvalidForm,
                                "only one name may follow & in a vector pattern (then :as all): [x & more :as all]",
                            )
                            .at(extra.span));
                        }
                        continue;
                    }
                    if matches!(&it.kind, FormKind::Keyword(k) if k == "as") {
                        let Some(n) = items.get(i + 1).and_then(|n| n.as_plain_symbol()) else {
                            return Err(EvalError::new(ErrorKind::InvalidForm, ":as in a vector pattern must be followed by a name").at(it.span));
                        };
                        as_slot = Some(self.new_slot(n));
                        i += 2;
                        continue;
                    }
                    pats.push(self.pattern(it)?);
                    i += 1;
                }
                Ok(Pattern::Seq { items: pats, rest, as_slot })
            }
            FormKind::Map(items) => self.map_pattern(items, f.span),
            _ => Err(EvalError::new(
                ErrorKind::InvalidForm,
                format!(
                    "cannot bind to {}; a binding must be a name, a vector pattern [a b] or a map pattern {{:keys [a b]}}",
                    ptc_lisp_syntax::print_form(f)
                ),
            )
            .at(f.span)),
        }
    }

    fn map_pattern(&mut self, items: &[Form], span: Span) -> R<Pattern> {
        let mut entries = Vec::new();
        let mut as_slot = None;
        let mut defaults: Vec<(String, &Form)> = Vec::new();
        for pair in items.chunks(2) {
            if let [Form { kind: FormKind::Keyword(k), .. }, Form { kind: FormKind::Map(or), .. }] = pair
                && k == "or"
            {
                for d in or.chunks(2) {
                    if let [n, v] = d
                        && let Some(n) = n.as_plain_symbol()
                    {
                        defaults.push((n.to_string(), v));
                    }
                }
            }
        }
        for pair in items.chunks(2) {
            let [k, v] = pair else { continue };
            match &k.kind {
                FormKind::Keyword(kw) if kw == "or" => {}
                FormKind::Keyword(kw) if kw == "as" => {
                    let Some(n) = v.as_plain_symbol() else {
                        return Err(EvalError::new(
                            ErrorKind::InvalidForm,
                            ":as in a map pattern must be followed by a name",
                        )
                        .at(v.span));
                    };
                    as_slot = Some(self.new_slot(n));
                }
                FormKind::Keyword(kw) if kw == "keys" || kw == "strs" => {
                    let FormKind::Vector(names) = &v.kind else {
                        return Err(EvalError::new(
                            ErrorKind::InvalidForm,
                            format!(":{kw} needs a vector of names: {{:{kw} [a b]}}"),
                        )
                        .at(v.span));
                    };
                    for n in names {
                        let (key_name, bind_name) = match &n.kind {
                            FormKind::Symbol { ns: None, name } => (name.clone(), name.clone()),
                            // {:keys [user/id]} and {:keys [:user/id]} bind id to :user/id
                            FormKind::Symbol { ns: Some(ns), name } if kw == "keys" => {
                                (format!("{ns}/{name}"), name.clone())
                            }
                            FormKind::Keyword(name) if kw == "keys" && name.contains('/') => {
                                let local = name.rsplit('/').next().unwrap_or(name).to_string();
                                (name.clone(), local)
                            }
                            FormKind::Keyword(name) => (name.clone(), name.clone()),
                            _ => {
                                return Err(EvalError::new(
                                    ErrorKind::InvalidForm,
                                    format!(":{kw} needs plain names like [a b]"),
                                )
                                .at(n.span));
                            }
                        };
                        let default = match defaults.iter().find(|(d, _)| *d == bind_name) {
                            Some((_, f)) => Some(self.form(f, false)?),
                            None => None,
                        };
                        let key =
                            if kw == "keys" { Value::kw(key_name.as_str()) } else { Value::str(key_name.as_str()) };
                        let slot = self.new_slot(&bind_name);
                        entries.push(MapBinding { key, pattern: Pattern::Bind(slot), default });
                    }
                }
                FormKind::Keyword(kw) if kw == "syms" => {
                    return Err(EvalError::new(
                        ErrorKind::InvalidForm,
                        ":syms destructuring is not supported; use :keys or :strs",
                    )
                    .at(k.span));
                }
                _ => {
                    // rename: {local-pattern key}
                    let key = match &v.kind {
                        FormKind::Symbol { .. } | FormKind::List(_) | FormKind::ShortFn(_) => {
                            return Err(EvalError::new(ErrorKind::InvalidForm, "map pattern entries look like {name :key}; the key must be a literal (keyword, string, number, boolean, nil or a quoted value)").at(v.span));
                        }
                        FormKind::Quote(inner) => quoted(inner)?,
                        _ => quoted(v)?,
                    };
                    let default = match k.as_plain_symbol().and_then(|n| defaults.iter().find(|(d, _)| d == n)) {
                        Some((_, f)) => Some(self.form(f, false)?),
                        None => None,
                    };
                    let pattern = self.pattern(k)?;
                    entries.push(MapBinding { key, pattern, default });
                }
            }
        }
        let _ = span;
        Ok(Pattern::Map { entries, as_slot })
    }
}

fn param_name(f: &Form) -> String {
    match f.as_plain_symbol() {
        // a generated name (multi-arity dispatch) prints as args
        Some(n) if n.contains(' ') => "args".to_string(),
        Some(n) => n.to_string(),
        None => "_".to_string(),
    }
}

fn scan_placeholders(forms: &[Form], max: &mut usize, rest: &mut bool) {
    for f in forms {
        match &f.kind {
            FormKind::Symbol { ns: None, name } => {
                if name == "%" {
                    *max = (*max).max(1);
                } else if name == "%&" {
                    *rest = true;
                } else if let Some(n) = name.strip_prefix('%').and_then(|d| d.parse::<usize>().ok()) {
                    *max = (*max).max(n.min(20));
                }
            }
            FormKind::List(items) | FormKind::Vector(items) | FormKind::Map(items) | FormKind::Set(items) => {
                scan_placeholders(items, max, rest)
            }
            _ => {}
        }
    }
}

/// A map literal's node: when every key is a constant, the keys are put in map order here,
/// once, and each value expression remembers its key's place (values still run in the
/// order written); otherwise the literal sorts its entries each time it is built.
fn keyed_map(pairs: Vec<(Node, Node)>) -> Node {
    let mut keys: Vec<(Value, usize)> = Vec::with_capacity(pairs.len());
    for (i, (k, _)) in pairs.iter().enumerate() {
        match k {
            Node::Const(v) => keys.push((v.clone(), i)),
            _ => return Node::Map(pairs),
        }
    }
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    if keys.windows(2).any(|w| w[0].0 == w[1].0) {
        // equal constant keys are refused before this; the general node keeps the last
        return Node::Map(pairs);
    }
    let mut place = vec![0u32; pairs.len()];
    for (at, (_, written)) in keys.iter().enumerate() {
        place[*written] = at as u32;
    }
    Node::KeyedMap(Box::new(crate::node::KeyedMap {
        keys: keys.into_iter().map(|(k, _)| k).collect(),
        values: pairs.into_iter().zip(place).map(|((_, v), at)| (at, v)).collect(),
    }))
}

fn all_const(nodes: &[Node]) -> Option<Vec<Value>> {
    nodes
        .iter()
        .map(|n| match n {
            Node::Const(v) => Some(v.clone()),
            _ => None,
        })
        .collect()
}

/// The value of a quoted form: symbols stay symbols, lists stay lists, collections are
/// quoted member by member.
fn quoted(f: &Form) -> R<Value> {
    Ok(match &f.kind {
        FormKind::Nil => Value::Nil,
        FormKind::Bool(b) => Value::Bool(*b),
        FormKind::Int(i) => Value::Int(*i),
        FormKind::Float(x) => Value::Float(*x),
        FormKind::Str(s) => Value::str(s.as_str()),
        FormKind::Char(c) => Value::str(c.to_string()),
        FormKind::Keyword(k) => Value::kw(k.as_str()),
        FormKind::Symbol { ns, name } => Value::Symbol(Arc::from(match ns {
            Some(ns) => format!("{ns}/{name}"),
            None => name.clone(),
        })),
        FormKind::List(items) => Value::list(items.iter().map(quoted).collect::<R<Vec<_>>>()?),
        FormKind::Vector(items) => Value::vector(items.iter().map(quoted).collect::<R<Vec<_>>>()?),
        FormKind::Set(items) => Value::set(items.iter().map(quoted).collect::<R<Vec<_>>>()?),
        FormKind::Map(items) => {
            let vals = items.iter().map(quoted).collect::<R<Vec<_>>>()?;
            Value::map(vals.chunks(2).filter_map(|c| match c {
                [k, v] => Some((k.clone(), v.clone())),
                _ => None,
            }))
        }
        FormKind::Quote(inner) => Value::list([Value::Symbol(Arc::from("quote")), quoted(inner)?]),
        FormKind::Regex(src) => match RegexValue::compile(src) {
            Ok(r) => Value::Regex(Arc::new(r)),
            Err(m) => return Err(EvalError::new(ErrorKind::InvalidForm, m).at(f.span)),
        },
        _ => {
            return Err(EvalError::new(
                ErrorKind::InvalidForm,
                "this form cannot be quoted; quote symbols, literals and collections of them",
            )
            .at(f.span));
        }
    })
}

fn case_const(f: &Form) -> R<Value> {
    Ok(match &f.kind {
        FormKind::Nil => Value::Nil,
        FormKind::Bool(b) => Value::Bool(*b),
        FormKind::Int(i) => Value::Int(*i),
        FormKind::Float(x) => Value::Float(*x),
        FormKind::Str(s) => Value::str(s.as_str()),
        FormKind::Char(c) => Value::str(c.to_string()),
        FormKind::Keyword(k) => Value::kw(k.as_str()),
        FormKind::Symbol { name, .. } => Value::Symbol(Arc::from(name.as_str())),
        FormKind::Vector(items) => Value::vector(items.iter().map(case_const).collect::<R<Vec<_>>>()?),
        _ => {
            return Err(EvalError::new(
                ErrorKind::InvalidForm,
                "case tests must be constants (keywords, strings, numbers, booleans, nil) or lists of constants",
            )
            .at(f.span));
        }
    })
}

/// `(require '[clojure.string :as str])` and `(ns x (:require [clojure.set :as set]))` are
/// accepted when they ask for a library PTC-Lisp has under the alias it already gives it.
fn check_requires(which: &str, args: &[Form], span: Span) -> R<()> {
    let specs: Vec<&Form> = if which == "ns" {
        args.iter()
            .filter_map(|f| match &f.kind {
                FormKind::List(items) if matches!(items.first().map(|h| &h.kind), Some(FormKind::Keyword(k)) if k == "require") => {
                    Some(&items[1..])
                }
                _ => None,
            })
            .flatten()
            .collect()
    } else {
        args.iter().collect()
    };
    for spec in specs {
        let inner = match &spec.kind {
            FormKind::Quote(q) => &**q,
            _ => spec,
        };
        let (lib, alias) = match &inner.kind {
            FormKind::Symbol { ns: None, name } => (name.as_str(), None),
            FormKind::Vector(items) => {
                let lib = items.first().and_then(|f| f.as_plain_symbol()).unwrap_or("");
                let alias = items
                    .windows(2)
                    .find(|w| matches!(&w[0].kind, FormKind::Keyword(k) if k == "as"))
                    .and_then(|w| w[1].as_plain_symbol());
                (lib, alias)
            }
            _ => ("", None),
        };
        let known = builtins::Library::of_alias(lib).filter(|l| l.ns_name() == lib);
        let alias_ok = match (known, alias) {
            (Some(_), None) => true,
            (Some(l), Some(a)) => builtins::Library::of_alias(a) == Some(l),
            (None, _) => false,
        };
        if !alias_ok {
            return Err(EvalError::new(
                ErrorKind::InvalidForm,
                format!(
                    "{which}: {} cannot be loaded; clojure.string, clojure.set and clojure.walk are always available as str/, set/ and walk/ (no require needed), and namespaces cannot be created",
                    ptc_lisp_syntax::print_form(inner)
                ),
            )
            .at(span));
        }
    }
    Ok(())
}

fn check_definable(name: &str, span: Span) -> R<()> {
    if matches!(name, "nil" | "true" | "false") || name.starts_with('%') {
        return Err(EvalError::new(ErrorKind::InvalidForm, format!("cannot define {name}")).at(span));
    }
    Ok(())
}

/// The function a function-building builtin (`fnil`, `partial`, `comp`...) makes when
/// every argument is a constant and the arity holds (`builtins::core::functions::made_of`).
fn made_of_constants(b: &'static Builtin, args: &[Node]) -> Option<Value> {
    if !b.arity.accepts(args.len()) {
        return None;
    }
    let mut vals = Vec::with_capacity(args.len());
    for a in args {
        match a {
            Node::Const(v) if !matches!(v, Value::Lazy(_)) => vals.push(v.clone()),
            _ => return None,
        }
    }
    builtins::made_of(b.name, &mut vals)
}

fn builtin(name: &str) -> R<&'static Builtin> {
    builtins::lookup(name)
        .ok_or_else(|| EvalError::new(ErrorKind::RuntimeError, format!("internal error: builtin {name} missing")))
}

fn arity_form(name: &str, usage: &str, span: Span) -> EvalError {
    EvalError::new(ErrorKind::InvalidForm, format!("wrong number of forms in {name}; usage: {usage}")).at(span)
}

fn unsupported_method(name: &str, span: Span) -> EvalError {
    let mut methods: Vec<&str> = builtins::all().map(|b| b.name).filter(|n| n.starts_with('.')).collect();
    methods.sort_unstable();
    EvalError::new(
        ErrorKind::UnsupportedMethod,
        format!(
            "Unsupported method '{name}'. Supported interop methods: {}. Use (.method obj) syntax.",
            methods.join(", ")
        ),
    )
    .at(span)
}

fn unknown_ns_member(ns: &str, name: &str, span: Span) -> EvalError {
    let msg = match builtins::Library::of_alias(ns) {
        Some(lib) => {
            let elsewhere: Vec<String> =
                builtins::libraries_with(name)
                    .into_iter()
                    .map(|l| {
                        if l == builtins::Library::Core {
                            format!("`{name}`")
                        } else {
                            format!("`{}/{name}`", l.alias())
                        }
                    })
                    .collect();
            let mut m = format!("{ns}/{name} is not a function of {}", lib.ns_name());
            let near: Vec<String> = crate::suggest::closest(name, lib.names().iter().copied(), 2)
                .into_iter()
                .map(|n| format!("`{ns}/{n}`"))
                .collect();
            if !elsewhere.is_empty() {
                m.push_str(&format!("; did you mean {}?", elsewhere.join(" or ")));
            } else if !near.is_empty() {
                m.push_str(&format!("; did you mean {}?", near.join(" or ")));
            } else if lib != builtins::Library::Core {
                m.push_str(&format!(". Its functions: {}", lib.names().join(", ")));
            }
            m
        }
        None if matches!(ns, "Math" | "java.lang.Math") => {
            let mut names: Vec<&str> =
                builtins::all().filter(|b| b.category == builtins::Category::Math).map(|b| b.name).collect();
            names.sort_unstable();
            names.truncate(40);
            format!("{ns}/{name} is not available. Functions in this family: {}", names.join(", "))
        }
        None => format!(
            "unknown namespace {ns} in {ns}/{name}; available namespaces: data/, tool/, str/, set/, walk/, json/, Math/, and the Java classes of the interop subset"
        ),
    };
    EvalError::new(ErrorKind::UnboundVar, msg).at(span)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(src: &str) -> String {
        let forms = ptc_lisp_syntax::parse_program(src).unwrap();
        let env = AnalyzeEnv { max_symbols: 10_000, ..AnalyzeEnv::default() };
        format!("{:?}", analyze_program(&forms, &env).unwrap().nodes)
    }

    #[test]
    fn map_literals_with_constant_keys_are_put_in_key_order_once() {
        let text = nodes("(fn [x] {:z x :a (inc x) \"s\" 1 :m 2})");
        // sorted keys (keywords before strings, by name), each value at its key's place,
        // the values kept in the order written
        assert!(text.contains("KeyedMap"), "{text}");
        let keys = text.find("keys: [").map(|at| &text[at..]).unwrap_or("");
        assert!(keys.starts_with("keys: [:a, :m, :z, \"s\"]"), "{text}");
        assert!(text.contains("values: [(2, Local"), "{text}");
        // a computed key keeps the general node
        assert!(nodes("(fn [x] {x 1 :a x})").contains("Map([("), "{}", nodes("(fn [x] {x 1 :a x})"));
    }

    #[test]
    fn a_builtin_passed_as_a_value_is_made_once() {
        let text = nodes("(fn [m k z] (update m k (fnil inc z)))");
        assert!(text.contains("Const(#<builtin>)"), "{text}");
        assert_eq!(text.matches("Builtin(").count(), text.matches("CallBuiltin(").count(), "{text}");
    }

    #[test]
    fn a_function_built_of_constants_is_made_once() {
        // `(fnil inc 0)`: made here, called as `identity` of the made function (one unit
        // of fuel, as the call)
        let text = nodes("(fn [m k] (update m k (fnil inc 0)))");
        assert!(text.contains("name: \"identity\""), "{text}");
        assert!(text.contains("[Const(#fn[...])]"), "{text}");
        assert!(!text.contains("name: \"fnil\""), "{text}");
        // an argument that is not a constant, or a wrong arity, keeps the call
        assert!(nodes("(fn [z] (fnil inc z))").contains("name: \"fnil\""));
        assert!(nodes("(fn [] (fnil inc))").contains("name: \"fnil\""));
    }

    #[test]
    fn vector_literals_compared_keep_their_items_unbuilt() {
        for (src, how) in [
            ("(fn [a b] (compare [(:k b) (:w b)] [(:k a) (:w a)]))", "CompareItems(Compare,"),
            ("(fn [a b] (= [a 1] [b 2 3]))", "CompareItems(Eq,"),
            ("(fn [a b] (not= [a 1] [b 2]))", "CompareItems(NotEq,"),
        ] {
            let text = nodes(src);
            assert!(text.contains(how) && !text.contains("Vector("), "{src}: {text}");
        }
        // `compare` of vectors of different lengths, `<` and a computed vector: ordinary calls
        for src in ["(fn [a] (compare [a 1] [a]))", "(fn [a] (< [a 1] [a 2]))", "(fn [a] (compare [a 1] (vec a)))"] {
            assert!(!nodes(src).contains("CompareItems"), "{src}: {}", nodes(src));
        }
    }
}
