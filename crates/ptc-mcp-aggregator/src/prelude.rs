//! Preludes (`ptc mcp --prelude FILE`): vetted helper functions an operator ships with the
//! server, loaded once at start and present in every `lisp_eval` evaluation, session
//! evaluation and `lisp_task` planner program.
//!
//! A prelude file opens with `(ns name "doc"?)` and then holds only top-level
//! `(defn f ...)`, `(defn- f ...)` (a helper, not listed) and `(def x ...)` forms. Inside
//! the file its definitions call each other by their bare names; programs call them as
//! `name/f`. Loading reads the file, qualifies every reference to one of its own
//! definitions (`f` becomes `name/f`), runs each form once under the server's limits with
//! no tool reachable (a prelude function may call `tool/...` when a program calls it, not
//! while it loads), and keeps the values under their qualified names. A program cannot
//! redefine them: `def` takes bare names only. Every error names the file, line and
//! column.
//!
//! A prelude's identity is `{id, version, checksum}`: its namespace, version 1, and the
//! SHA-256 of its text, so that instances behind one load balancer can tell whether they
//! run the same helpers (a session records the refs it started with).

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use ptc_lisp_eval::{Cancel, CompileEnv, Engine, Host, Limits, Memory, NoTools, RunInput, RunResult, ToolSpec, Value};
use ptc_lisp_syntax::{Form, FormKind};
use serde_json::{Value as Json, json};

/// Namespaces a prelude may not take: the evaluator's own and its aliases.
const RESERVED: &[&str] = &[
    "tool",
    "data",
    "budget",
    "user",
    "core",
    "clojure.core",
    "str",
    "string",
    "clojure.string",
    "set",
    "clojure.set",
    "walk",
    "clojure.walk",
    "json",
    "Math",
    "String",
    "java.lang.String",
    "ptc.core",
    "mcp",
];

/// Largest prelude file, bytes.
pub const MAX_PRELUDE_BYTES: usize = 256 * 1024;

/// One definition of a prelude.
#[derive(Debug, Clone)]
pub struct Export {
    /// Qualified name (`crm/get-user`).
    pub name: String,
    /// Its docstring.
    pub doc: Option<String>,
    /// `defn-`: callable by the prelude's other functions (and by programs that know the
    /// name), not listed by `dir` or in the session start answer.
    pub private: bool,
}

/// One loaded prelude.
#[derive(Debug)]
pub struct Prelude {
    /// The namespace, also the id a session start names it by.
    pub id: String,
    /// Always 1 (a file is one version; a changed file has another checksum).
    pub version: u32,
    /// `sha256:` + hex of the file's bytes.
    pub checksum: String,
    /// The `ns` docstring.
    pub doc: Option<String>,
    /// The file it came from.
    pub path: String,
    /// Its definitions, in file order.
    pub exports: Vec<Export>,
    values: Vec<(Arc<str>, Value)>,
}

impl Prelude {
    /// The definitions a program is told about (not the `defn-` helpers), in file order.
    pub(crate) fn public(&self) -> impl Iterator<Item = &Export> {
        self.exports.iter().filter(|e| !e.private)
    }

    /// `{id, version, checksum}`.
    pub(crate) fn reference(&self) -> Json {
        json!({"id": self.id, "version": self.version, "checksum": self.checksum})
    }

    /// What a session start tells the model about it.
    pub(crate) fn summary(&self) -> Json {
        let public: Vec<&Export> = self.public().collect();
        let functions: Vec<Json> =
            public.iter().map(|e| json!({"name": e.name, "doc": e.doc.clone().unwrap_or_default()})).collect();
        let mut hints = vec![format!("(dir {})", self.id)];
        if let Some(first) = public.first() {
            hints.push(format!("(doc {})", first.name));
        }
        json!({
            "id": self.id,
            "version": self.version,
            "checksum": self.checksum,
            "doc": self.doc.clone().unwrap_or_default(),
            "functions": functions,
            "discovery": hints,
        })
    }
}

/// The preludes of a server, in `--prelude` order.
#[derive(Debug, Default, Clone)]
pub struct Preludes {
    list: Vec<Arc<Prelude>>,
}

/// A prelude that could not be loaded; the message names the file and place.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct PreludeError(pub String);

/// Why a session's prelude refs cannot be honoured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NoSuchPrelude(pub(crate) String);

impl Preludes {
    /// No preludes.
    pub fn none() -> Self {
        Preludes::default()
    }

    /// Loads `paths` in order (a later prelude may call an earlier one's functions).
    /// `tools` are the tools programs will have, so that a prelude function calling
    /// `tool/...` compiles.
    pub fn load(paths: &[impl AsRef<Path>], limits: &Limits, tools: Vec<ToolSpec>) -> Result<Self, PreludeError> {
        let mut out = Preludes::default();
        for p in paths {
            let path = p.as_ref();
            let shown = path.display().to_string();
            let bytes = std::fs::read(path)
                .map_err(|e| PreludeError(format!("--prelude {shown}: cannot read the file: {e}")))?;
            if bytes.len() > MAX_PRELUDE_BYTES {
                return Err(PreludeError(format!(
                    "--prelude {shown}: the file is {} bytes, over the {MAX_PRELUDE_BYTES}-byte limit for a prelude",
                    bytes.len()
                )));
            }
            let text = String::from_utf8(bytes)
                .map_err(|_| PreludeError(format!("--prelude {shown}: the file is not UTF-8 text")))?;
            let prelude = compile(&shown, &text, limits, tools.clone(), &out)?;
            out.list.push(Arc::new(prelude));
        }
        Ok(out)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The loaded preludes.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Prelude>> {
        self.list.iter()
    }

    /// The definitions of every prelude, as the memory a run starts with.
    pub(crate) fn globals(&self) -> Memory {
        let mut g = Memory::default();
        for p in &self.list {
            add(&mut g, p);
        }
        g
    }

    /// The definitions of the preludes `refs` name (a session's frozen refs). A ref this
    /// server cannot honour (no such id, or a different checksum: another instance runs
    /// another file) is an error naming it.
    pub(crate) fn globals_for(&self, refs: &[Json]) -> Result<Memory, NoSuchPrelude> {
        Ok(self.subset(refs)?.globals())
    }

    /// The preludes `refs` name (a session's frozen refs), in their order; errors as
    /// [`globals_for`](Self::globals_for).
    pub(crate) fn subset(&self, refs: &[Json]) -> Result<Preludes, NoSuchPrelude> {
        let mut out = Preludes::default();
        for r in refs {
            let id = r.get("id").and_then(Json::as_str).unwrap_or_default();
            let checksum = r.get("checksum").and_then(Json::as_str);
            let Some(p) = self.list.iter().find(|p| p.id == id) else {
                return Err(NoSuchPrelude(format!(
                    "the session uses prelude {id}, which this server instance has not loaded (start every instance with the same --prelude files)"
                )));
            };
            if checksum.is_some_and(|c| c != p.checksum) {
                return Err(NoSuchPrelude(format!(
                    "the session uses prelude {id} with checksum {}, but this server instance loaded {} (start every instance with the same --prelude files)",
                    checksum.unwrap_or_default(),
                    p.checksum
                )));
            }
            if !out.list.iter().any(|q| q.id == p.id) {
                out.list.push(p.clone());
            }
        }
        Ok(out)
    }

    /// The preludes a `lisp_session_start` asks for (`preludes` argument): absent means
    /// all; otherwise each item is an id or `{id, version, checksum?}`.
    pub(crate) fn select(&self, arg: Option<&Json>) -> Result<Vec<Arc<Prelude>>, String> {
        let items = match arg {
            None | Some(Json::Null) => return Ok(self.list.clone()),
            Some(Json::Array(items)) => items,
            Some(_) => {
                return Err(
                    "argument `preludes` must be an array of prelude ids or {id, version, checksum} objects".into()
                );
            }
        };
        let loaded = || {
            if self.list.is_empty() {
                "this server loads no preludes (it was started without --prelude)".to_string()
            } else {
                format!("loaded preludes: {}", self.list.iter().map(|p| p.id.as_str()).collect::<Vec<_>>().join(", "))
            }
        };
        let mut out: Vec<Arc<Prelude>> = Vec::new();
        for item in items {
            let (id, version, checksum) = match item {
                Json::String(s) => (s.as_str(), None, None),
                Json::Object(o) => {
                    if let Some(k) = o.keys().find(|k| !matches!(k.as_str(), "id" | "version" | "checksum")) {
                        return Err(format!(
                            "argument `preludes`: unknown key `{k}`; an item is an id or {{id, version, checksum}}"
                        ));
                    }
                    let Some(id) = o.get("id").and_then(Json::as_str) else {
                        return Err("argument `preludes`: an object item needs a string `id`".into());
                    };
                    let version = match o.get("version") {
                        None => None,
                        Some(v) => match v.as_u64().filter(|n| *n >= 1) {
                            Some(n) => Some(n),
                            None => {
                                return Err(format!(
                                    "argument `preludes`: prelude {id}: `version` must be an integer ≥ 1"
                                ));
                            }
                        },
                    };
                    let checksum = match o.get("checksum") {
                        None => None,
                        Some(Json::String(c)) => Some(c.as_str()),
                        Some(_) => {
                            return Err(format!("argument `preludes`: prelude {id}: `checksum` must be a string"));
                        }
                    };
                    (id, version, checksum)
                }
                _ => return Err("argument `preludes`: each item is a prelude id or {id, version, checksum}".into()),
            };
            let Some(p) = self.list.iter().find(|p| p.id == id) else {
                return Err(format!("no prelude {id} is loaded on this server; {}", loaded()));
            };
            if let Some(v) = version.filter(|v| *v != u64::from(p.version)) {
                return Err(format!("prelude {id} has version {}, not {v}", p.version));
            }
            if let Some(c) = checksum.filter(|c| *c != p.checksum) {
                return Err(format!(
                    "prelude {id} has checksum {}, not {c} (the server runs another file)",
                    p.checksum
                ));
            }
            if !out.iter().any(|q| q.id == p.id) {
                out.push(p.clone());
            }
        }
        Ok(out)
    }

    /// The prelude whose namespace is `ns`.
    pub fn get(&self, ns: &str) -> Option<&Arc<Prelude>> {
        self.list.iter().find(|p| p.id == ns)
    }
}

fn add(g: &mut Memory, p: &Prelude) {
    for (name, v) in &p.values {
        g.insert(name.clone(), v.clone());
    }
    for e in &p.exports {
        if let Some(d) = &e.doc {
            g.set_doc(Arc::from(e.name.as_str()), Arc::from(d.as_str()));
        }
    }
}

fn at(path: &str, line: u32, column: u32, message: impl std::fmt::Display) -> PreludeError {
    PreludeError(format!("--prelude {path}:{line}:{column}: {message}"))
}

/// Reads, checks, qualifies and runs one prelude file.
fn compile(
    path: &str,
    text: &str,
    limits: &Limits,
    tools: Vec<ToolSpec>,
    earlier: &Preludes,
) -> Result<Prelude, PreludeError> {
    let forms = ptc_lisp_syntax::parse_program(text).map_err(|e| at(path, e.line, e.column, &e.message))?;
    let Some((head, body)) = forms.split_first() else {
        return Err(PreludeError(format!(
            "--prelude {path}: the file is empty; a prelude starts with (ns name \"doc\") and holds defn forms"
        )));
    };
    let (id, doc) = ns_form(path, head)?;
    if earlier.get(&id).is_some() {
        return Err(at(
            path,
            head.span.line,
            head.span.column,
            format!("namespace {id} is already taken by an earlier --prelude"),
        ));
    }
    // the definitions: name -> (private, form)
    let mut names: Vec<(String, bool, &Form)> = Vec::new();
    let mut seen = HashSet::new();
    for f in body {
        let bad = || {
            at(
                path,
                f.span.line,
                f.span.column,
                "a prelude holds only top-level (defn name ...), (defn- name ...) and (def name ...) forms after its (ns ...)",
            )
        };
        let FormKind::List(items) = &f.kind else { return Err(bad()) };
        let (Some(h), Some(n)) = (items.first().and_then(Form::as_plain_symbol), items.get(1)) else {
            return Err(bad());
        };
        let private = match h {
            "defn" | "def" => false,
            "defn-" => true,
            _ => return Err(bad()),
        };
        let Some(name) = n.as_plain_symbol() else {
            return Err(at(
                path,
                n.span.line,
                n.span.column,
                format!("({h} ...) needs a plain name here, e.g. ({h} get-user ...)"),
            ));
        };
        if !seen.insert(name.to_string()) {
            return Err(at(path, n.span.line, n.span.column, format!("{name} is defined twice in prelude {id}")));
        }
        names.push((name.to_string(), private, f));
    }
    let defined: HashSet<&str> = names.iter().map(|(n, _, _)| n.as_str()).collect();
    // the memory every form compiles against: earlier preludes, then this one's names
    let mut memory = earlier.globals();
    for (n, _, _) in &names {
        memory.insert(Arc::from(format!("{id}/{n}")), Value::Nil);
    }
    let engine = Engine::new(limits.clone());
    let mut exports = Vec::new();
    let mut values = Vec::new();
    for (name, private, form) in &names {
        let source = qualify(text, form, &id, &defined);
        let env = CompileEnv::new().with_tools(tools.clone()).with_memory(&memory);
        let located = |e: &ptc_lisp_eval::EvalError| {
            let (line, column) = match e.span {
                Some(s) if s.line <= 1 => (form.span.line, form.span.column + s.column.saturating_sub(1)),
                Some(s) => (form.span.line + s.line - 1, s.column),
                None => (form.span.line, form.span.column),
            };
            let hint = if e.message.contains(&format!("{id}/")) {
                format!(" (inside a prelude, a local name may not reuse a definition's name such as {name})")
            } else {
                String::new()
            };
            at(path, line, column, format!("{}{hint}", e.message))
        };
        let program = engine.compile(&source, &env).map_err(|e| located(&e))?;
        let input = RunInput { memory: memory.clone(), ..RunInput::new() };
        let outcome = engine.run(&program, input, &NoTools, &Cancel::new());
        if let RunResult::Error(e) = &outcome.result {
            return Err(located(e));
        }
        let value = outcome.memory.get(name.as_str()).cloned().unwrap_or(Value::Nil);
        let doc = outcome.memory.doc(name.as_str()).map(|d| d.to_string());
        let qualified: Arc<str> = Arc::from(format!("{id}/{name}"));
        memory.insert(qualified.clone(), value.clone());
        if let Some(d) = &doc {
            memory.set_doc(qualified.clone(), Arc::from(d.as_str()));
        }
        values.push((qualified.clone(), value));
        exports.push(Export { name: qualified.to_string(), doc, private: *private });
    }
    Ok(Prelude {
        id,
        version: 1,
        checksum: format!("sha256:{}", crate::diagnostics::sha256(text)),
        doc,
        path: path.to_string(),
        exports,
        values,
    })
}

/// `(ns name "doc"? {meta}?)`.
fn ns_form(path: &str, head: &Form) -> Result<(String, Option<String>), PreludeError> {
    let expected = || {
        at(
            path,
            head.span.line,
            head.span.column,
            "a prelude starts with (ns name \"what it offers\"), e.g. (ns crm \"Customer helpers\")",
        )
    };
    let FormKind::List(items) = &head.kind else { return Err(expected()) };
    if items.first().and_then(Form::as_plain_symbol) != Some("ns") {
        return Err(expected());
    }
    let Some(name_form) = items.get(1) else { return Err(expected()) };
    let Some(name) = name_form.as_plain_symbol() else { return Err(expected()) };
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !valid {
        return Err(at(
            path,
            name_form.span.line,
            name_form.span.column,
            format!("namespace {name}: use letters, digits, '-', '_' and '.', starting with a letter"),
        ));
    }
    let builtin = ptc_lisp_eval::registry::namespaces().contains(&name);
    if RESERVED.contains(&name) || builtin || name.starts_with("clojure.") || name.starts_with("java.") {
        return Err(at(
            path,
            name_form.span.line,
            name_form.span.column,
            format!("namespace {name} is reserved (the evaluator's own); pick another name"),
        ));
    }
    let mut doc = None;
    for extra in &items[2..] {
        match &extra.kind {
            FormKind::Str(s) if doc.is_none() => doc = Some(s.clone()),
            FormKind::Map(_) => {}
            _ => {
                return Err(at(
                    path,
                    extra.span.line,
                    extra.span.column,
                    "(ns name ...) takes an optional docstring and an optional metadata map only",
                ));
            }
        }
    }
    Ok((name.to_string(), doc))
}

/// The text of top-level `form` with every reference to one of the prelude's own
/// definitions written `ns/name` (the defining name itself stays bare).
fn qualify(text: &str, form: &Form, ns: &str, defined: &HashSet<&str>) -> String {
    let mut spots: Vec<(usize, usize, String)> = Vec::new();
    if let FormKind::List(items) = &form.kind {
        for (i, item) in items.iter().enumerate() {
            if i != 1 {
                collect(item, ns, defined, &mut spots);
            }
        }
    }
    spots.sort_by_key(|s| s.0);
    let (start, end) = (form.span.start as usize, form.span.end as usize);
    let mut out = String::new();
    let mut pos = start;
    for (s, e, replacement) in spots {
        out.push_str(text.get(pos..s).unwrap_or_default());
        out.push_str(&replacement);
        pos = e;
    }
    out.push_str(text.get(pos..end).unwrap_or_default());
    out
}

fn collect(f: &Form, ns: &str, defined: &HashSet<&str>, out: &mut Vec<(usize, usize, String)>) {
    match &f.kind {
        FormKind::Symbol { ns: None, name } if defined.contains(name.as_str()) => {
            out.push((f.span.start as usize, f.span.end as usize, format!("{ns}/{name}")));
        }
        FormKind::List(items)
        | FormKind::Vector(items)
        | FormKind::Map(items)
        | FormKind::Set(items)
        | FormKind::ShortFn(items) => {
            for i in items {
                collect(i, ns, defined, out);
            }
        }
        _ => {}
    }
}

/// A host that answers discovery of prelude namespaces — `(dir ns)`, `(ns-publics 'ns)`,
/// `(all-ns)` — and passes everything else to the backend's host. Programs reach the
/// prelude functions themselves through their memory; `doc` and `apropos` find them
/// there.
pub(crate) struct PreludeHost {
    pub inner: Arc<dyn Host>,
    pub preludes: Arc<Preludes>,
}

impl Host for PreludeHost {
    fn tools(&self) -> Vec<ToolSpec> {
        self.inner.tools()
    }

    fn call(
        &self,
        call: &ptc_lisp_eval::ToolCall,
        cx: &ptc_lisp_eval::CallCx<'_>,
    ) -> Result<Value, ptc_lisp_eval::ToolError> {
        self.inner.call(call, cx)
    }

    fn discover(
        &self,
        query: &ptc_lisp_eval::Discovery<'_>,
        cx: &ptc_lisp_eval::CallCx<'_>,
    ) -> Option<Result<Value, ptc_lisp_eval::ToolError>> {
        use ptc_lisp_eval::Discovery;
        let first_line = |e: &Export| e.doc.as_deref().and_then(|d| d.lines().next()).unwrap_or_default().to_string();
        match query {
            Discovery::Dir { namespace, options } => {
                let Some(p) = self.preludes.get(namespace) else { return self.inner.discover(query, cx) };
                let opt = |key: &str, default: usize| match options {
                    Value::Map(m) => match m.get(&Value::kw(key)) {
                        Some(Value::Int(n)) if *n >= 0 => *n as usize,
                        _ => default,
                    },
                    _ => default,
                };
                let (limit, offset) = (opt("limit", 50).clamp(1, 200), opt("offset", 0));
                let names = p.public().skip(offset).take(limit).map(|e| {
                    Value::str(match first_line(e) {
                        d if d.is_empty() => e.name.clone(),
                        d => format!("{} - {d}", e.name),
                    })
                });
                Some(Ok(Value::vector(names)))
            }
            Discovery::Publics { namespace } => {
                let Some(p) = self.preludes.get(namespace) else { return self.inner.discover(query, cx) };
                Some(Ok(Value::map(p.public().map(|e| (Value::str(e.name.as_str()), Value::str(first_line(e)))))))
            }
            // the prelude namespaces, and whatever the backend adds
            Discovery::Namespaces => {
                let mut names: Vec<Value> = self.preludes.iter().map(|p| Value::str(p.id.as_str())).collect();
                if let Some(Ok(Value::Vector(more) | Value::List(more))) = self.inner.discover(query, cx) {
                    names.extend(more.iter().cloned());
                }
                Some(Ok(Value::vector(names)))
            }
            _ => self.inner.discover(query, cx),
        }
    }

    fn clock_millis(&self) -> Option<i64> {
        self.inner.clock_millis()
    }
}

/// Prelude names present in a memory map (they are never session bindings).
pub(crate) fn is_prelude_name(name: &str) -> bool {
    name.contains('/')
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn load(files: &[&str]) -> Result<Preludes, PreludeError> {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<_> = files
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let p = dir.path().join(format!("p{i}.clj"));
                std::fs::write(&p, text).unwrap();
                p
            })
            .collect();
        Preludes::load(&paths, &Limits::default(), Vec::new())
    }

    fn eval(p: &Preludes, program: &str) -> String {
        let out = Engine::new(Limits::default()).eval(
            program,
            RunInput { memory: p.globals(), ..RunInput::new() },
            &NoTools,
            &Cancel::new(),
        );
        match &out.result {
            RunResult::Error(e) => format!("error: {}", e.message),
            _ => out.printed.clone(),
        }
    }

    const CRM: &str = "(ns crm \"Customer helpers\")\n(def vip-limit 100)\n(defn- score [c] (* 2 (:spend c)))\n(defn vip? \"True for big spenders.\" [c] (> (score c) vip-limit))\n(defn vips [cs] (filterv vip? cs))\n";

    #[test]
    fn definitions_call_each_other_and_programs_call_them_qualified() {
        let p = load(&[CRM]).unwrap();
        assert_eq!(eval(&p, "(crm/vips [{:spend 10} {:spend 60}])"), "[{:spend 60}]");
        assert_eq!(eval(&p, "crm/vip-limit"), "100");
        // a program's own `score` does not capture the prelude's helper, nor the reverse
        assert_eq!(eval(&p, "(defn score [c] 0) [(score {}) (crm/vip? {:spend 60})]"), "[0 true]");
        let crm = p.get("crm").unwrap();
        assert_eq!(
            crm.exports.iter().filter(|e| e.private).map(|e| e.name.as_str()).collect::<Vec<_>>(),
            ["crm/score"]
        );
        assert!(crm.checksum.starts_with("sha256:") && crm.checksum.len() == 7 + 64);
        assert_eq!(p.globals().doc("crm/vip?").map(|d| d.to_string()), Some("True for big spenders.".into()));
    }

    #[test]
    fn a_later_prelude_uses_an_earlier_one() {
        let p = load(&[CRM, "(ns report)\n(defn count-vips [cs] (count (crm/vips cs)))"]).unwrap();
        assert_eq!(eval(&p, "(report/count-vips [{:spend 60} {:spend 70} {:spend 1}])"), "2");
    }

    #[test]
    fn programs_cannot_redefine_a_prelude_name() {
        let p = load(&[CRM]).unwrap();
        let out = eval(&p, "(def crm/vip-limit 0)");
        assert!(out.starts_with("error:"), "{out}");
        assert_eq!(eval(&p, "crm/vip-limit"), "100");
    }

    #[test]
    fn bad_files_are_refused_with_file_line_and_column() {
        for (text, needle) in [
            ("(defn f [] 1)", ":1:1: a prelude starts with (ns name"),
            ("(ns str)\n(defn f [] 1)", ":1:5: namespace str is reserved"),
            ("(ns crm)\n(println 1)", ":2:1: a prelude holds only top-level"),
            ("(ns crm)\n(defn f [] 1)\n(defn f [] 2)", ":3:7: f is defined twice"),
            ("(ns crm)\n(defn f [x]\n  (+ x nope))", "nope"),
            ("(ns crm)\n(defn f [x] (+ x 1)", "--prelude"),
            ("(ns crm)\n(def x (/ 1 0))", ":2:8: division by zero"),
            ("", "the file is empty"),
        ] {
            let e = load(&[text]).unwrap_err().0;
            assert!(e.contains("--prelude ") && e.contains("p0.clj"), "{text}: {e}");
            assert!(e.contains(needle), "{text}: {e}");
        }
        // an undefined name is located on its own line
        let e = load(&["(ns crm)\n(defn f [x]\n  (+ x nope))"]).unwrap_err().0;
        assert!(e.contains("p0.clj:3:"), "{e}");
        let e = load(&[CRM, CRM]).unwrap_err().0;
        assert!(e.contains("p1.clj") && e.contains("already taken"), "{e}");
    }

    #[test]
    fn sessions_select_by_id_version_and_checksum() {
        let p = load(&[CRM, "(ns other)\n(def x 1)"]).unwrap();
        assert_eq!(p.select(None).unwrap().len(), 2);
        let sum = p.get("crm").unwrap().checksum.clone();
        let picked = p.select(Some(&json!(["crm"]))).unwrap();
        assert_eq!(picked.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(), ["crm"]);
        assert_eq!(p.select(Some(&json!([{"id": "crm", "version": 1, "checksum": sum}]))).unwrap().len(), 1);
        assert!(p.select(Some(&json!([{"id": "crm", "version": 2}]))).unwrap_err().contains("version 1, not 2"));
        assert!(p.select(Some(&json!([{"id": "crm", "checksum": "sha256:00"}]))).unwrap_err().contains("checksum"));
        assert!(p.select(Some(&json!(["nope"]))).unwrap_err().contains("loaded preludes: crm, other"));
        assert!(p.select(Some(&json!("crm"))).unwrap_err().contains("must be an array"));
        // a session's refs: another instance with another file is told so
        let refs = vec![json!({"id": "crm", "version": 1, "checksum": "sha256:00"})];
        assert!(p.globals_for(&refs).unwrap_err().0.contains("same --prelude files"));
        assert!(p.globals_for(&[json!({"id": "gone"})]).unwrap_err().0.contains("has not loaded"));
    }
}
