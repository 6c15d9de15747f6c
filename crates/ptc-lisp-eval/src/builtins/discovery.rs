//! REPL discovery over the registry and the user's definitions: `doc` (prints), `dir`,
//! `apropos`, `meta`, `ns-publics`, `all-ns`, `ns-name`. The analyzer quotes their first
//! argument, so `(doc map)` means `(doc "map")`.

use super::{expected, int_arg};
use std::collections::BTreeMap;

use crate::builtins::context::BuiltinContext;
use crate::builtins::{Arity, Builtin, Category, Library, Table};
use crate::error::{ErrorKind, EvalResult, err};
use crate::function::FnRepr;
use crate::host::Discovery as Ask;
use crate::printer::{PrintOptions, to_clojure_with};
use crate::value::Value;

use Arity::*;
use Category::Discovery;

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    builtins: &[
        Builtin::new("doc", Exact(1), Discovery, doc).quotes_name().doc("Prints the documentation of a function or definition; returns nil.").ex(&[("(doc inc)", "nil")]),
        Builtin::new("dir", Range(1, 2), Discovery, dir).quotes_name().doc("Names in a namespace (str, set, walk, core, json, Math, user...); options {:limit 50 :offset 0}.").ex(&[("(take 2 (dir json))", "[\"json/generate-string\" \"json/parse-lines\"]")]),
        Builtin::new("apropos", Range(1, 2), Discovery, apropos).ext().doc("Functions whose name or description matches the query, best first (ties: shorter names), as \"name - description\"; options {:limit 8}.").ex(&[("(first (apropos \"upper case\"))", "\"upper-case - Upper-cased string.\"")]),
        Builtin::new("meta", Exact(1), Discovery, meta).quotes_name().doc("Metadata map of a function or definition: name, ns, doc, arity, examples.").ex(&[("(:ns (meta join))", "\"clojure.string\"")]),
        Builtin::new("ns-publics", Exact(1), Discovery, ns_publics).quotes_name().doc("Map from each public name of a namespace to a short description.").ex(&[("(count (ns-publics \"json\"))", "3")]),
        Builtin::new("all-ns", Exact(0), Discovery, all_ns).doc("Names of the available namespaces, the host's (a server's preludes) included.").ex(&[("(first (all-ns))", "\"Boolean\"")]),
        Builtin::new("ns-name", Exact(1), Discovery, ns_name).quotes_name().doc("The canonical name of a namespace or alias.").ex(&[("(ns-name str)", "\"clojure.string\"")]),
        Builtin::new("describe", Arity::Range(1, 2), Category::Core, describe)
        .ext()
        .doc("Bounded summary of a value: type, count, key types of maps (also across a vector of maps), a few short examples. Options {:sample 1..3}.")
        .ex(&[("(describe [{:id 1 :name \"a\"} {:id 2}])", "{:count 2 :examples [\"{:id 1 :name \\\"a\\\"}\" \"{:id 2}\"] :keys {:id :number :name :string} :type :vector}")]),
    ],
};

/// The namespace a registry entry belongs to.
fn ns_of(b: &Builtin) -> &'static str {
    if let Some((ns, _)) = b.name.split_once('/')
        && !ns.is_empty()
        && super::short_name(b) == b.name
    {
        return ns;
    }
    match (b.category, super::home_library(b)) {
        (Category::Interop, super::Library::Core) => "java.lang.String",
        (_, lib) => lib.ns_name(),
    }
}

/// Canonical namespace for a name or alias.
fn canonical_ns(ns: &str) -> Option<&'static str> {
    Some(match ns {
        "core" | "clojure.core" => "clojure.core",
        "str" | "string" | "clojure.string" => "clojure.string",
        "set" | "clojure.set" => "clojure.set",
        "walk" | "clojure.walk" => "clojure.walk",
        "json" => "json",
        "user" => "user",
        "Math" | "java.lang.Math" => "Math",
        "String" | "java.lang.String" => "java.lang.String",
        _ => return super::all().map(ns_of).find(|n| *n == ns),
    })
}

fn ref_name(fname: &str, v: &Value) -> EvalResult<String> {
    match v {
        Value::Str(s) | Value::Symbol(s) | Value::Var(s) => Ok(s.to_string()),
        Value::Keyword(k) => Ok(k.to_string()),
        Value::Func(f) => match f.repr() {
            FnRepr::Builtin(b) => Ok(b.name.to_string()),
            FnRepr::Closure(c) => Ok(c.lambda.name.as_deref().unwrap_or("fn").to_string()),
            _ => expected(fname, "a name", v),
        },
        other => expected(fname, "a name, e.g. (doc map) or (doc \"str/join\")", other),
    }
}

fn find_builtin(name: &str) -> Option<&'static Builtin> {
    match name.split_once('/') {
        Some((ns, n)) if !ns.is_empty() && !n.is_empty() => super::lookup_ns(ns, n),
        _ => super::lookup(name),
    }
}

fn arity_text(a: Arity) -> String {
    match a {
        Arity::Exact(n) | Arity::AtLeast(n) if n == 1 => format!("{} argument", a.describe()),
        other => format!("{} arguments", other.describe()),
    }
}

fn doc(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let name = ref_name("doc", &a[0])?;
    let text = if let Some(v) = cx.definition(name.as_str()) {
        // a qualified definition is a host's (an MCP server's prelude), not the program's
        let owner = name.split_once('/').map_or("user", |(ns, _)| ns);
        let mut t = format!("{name}\n  {owner} definition: {}", crate::builtins::brief(v));
        if let Some(d) = cx.definition_doc(name.as_str()) {
            t.push_str(&format!("\n  {d}"));
        }
        t
    } else if let Some(b) = find_builtin(&name) {
        let mut t = format!(
            "{}/{}\n  {}\n  {}",
            ns_of(b),
            b.name.rsplit('/').next().unwrap_or(b.name),
            arity_text(b.arity),
            b.doc
        );
        if b.constant {
            t = format!("{}\n  constant\n  {}", b.name, b.doc);
        }
        for (src, out) in b.examples {
            t.push_str(&format!("\n  {src} ;=> {out}"));
        }
        t
    } else {
        match cx.discover(&Ask::Doc { name: &name }) {
            Some(answer) => match answer? {
                Value::Nil => format!("no documentation for {name}; try (apropos \"{name}\")"),
                // a host's documentation (an upstream tool) is printed and also returned
                // as text, so a program can read it
                Value::Str(s) => {
                    cx.print(s.to_string())?;
                    return Ok(Value::Str(s));
                }
                other => crate::printer::to_clojure(&other),
            },
            None => format!("no documentation for {name}; try (apropos \"{name}\")"),
        }
    };
    cx.print(text)?;
    Ok(Value::Nil)
}

fn names_in(cx: &BuiltinContext, ns: &str) -> Vec<String> {
    if ns == "user" {
        // a program defines bare names only: a qualified definition (`crm/vips`, a
        // host's prelude) belongs to its own namespace, which the host lists
        let mut names: Vec<String> =
            cx.definitions().map(|(k, _)| k).filter(|k| !k.contains('/')).map(str::to_string).collect();
        names.sort();
        return names;
    }
    names_in_namespace(ns)
}

/// Every name of a builtin namespace, sorted, as `(dir ns)` lists them: a Clojure
/// library's names bare (`upper-case` for `str`), other namespaces' names qualified
/// (`Math/sin`), `java.lang.String`'s methods with their dot (`.toUpperCase`). A core
/// function that also has a qualified alias (`pow` as `Math/pow`) is listed under
/// `clojure.core` only; the aliases are on its registry entry. Takes a namespace or an
/// alias (`str`, `clojure.string`); empty for `user` (the definitions belong to a run, not
/// to the registry) and for unknown names. Editors use it for completion.
///
/// ```
/// use ptc_lisp_eval::registry::names_in_namespace;
/// assert!(names_in_namespace("str").contains(&"upper-case".to_string()));
/// assert!(names_in_namespace("Math").contains(&"Math/sin".to_string()));
/// ```
pub fn names_in_namespace(ns: &str) -> Vec<String> {
    let Some(ns) = canonical_ns(ns).filter(|n| *n != "user") else { return Vec::new() };
    let mut names: Vec<String> = super::all()
        .filter(|b| ns_of(b) == ns)
        .flat_map(|b| {
            // a library's other Clojure names (postwalk-replace) are listed too
            let lib = super::home_library(b);
            let aliases = b.aliases.iter().filter(move |a| lib.names().contains(a)).copied();
            std::iter::once(super::short_name(b)).chain(aliases)
        })
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The builtin namespaces (`clojure.string`, `json`, `Math`...), sorted: what `(all-ns)`
/// lists besides `user`.
pub fn namespaces() -> Vec<&'static str> {
    let mut names: Vec<&str> = super::all().map(ns_of).collect();
    names.sort_unstable();
    names.dedup();
    names
}

fn opt_int(opts: Option<&Value>, key: &str, default: i64, range: std::ops::RangeInclusive<i64>) -> EvalResult<i64> {
    match opts {
        None | Some(Value::Nil) => Ok(default),
        Some(Value::Map(m)) => match m.get(&Value::kw(key)) {
            None => Ok(default),
            Some(v) => {
                let n = int_arg(key, v)?;
                if range.contains(&n) {
                    Ok(n)
                } else {
                    err(
                        ErrorKind::RuntimeError,
                        format!(":{key} must be between {} and {}, got {n}", range.start(), range.end()),
                    )
                }
            }
        },
        Some(other) => expected("options", "a map like {:limit 10}", other),
    }
}

fn dir(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let raw = ref_name("dir", &a[0])?;
    let Some(ns) = canonical_ns(&raw) else {
        let options = a.get(1).cloned().unwrap_or(Value::Nil);
        if let Some(answer) = cx.discover(&Ask::Dir { namespace: &raw, options: &options }) {
            return answer;
        }
        return err(
            ErrorKind::RuntimeError,
            format!(
                "dir: unknown namespace {raw}; (all-ns) lists the namespaces, (apropos \"word\") searches by topic"
            ),
        );
    };
    let limit = opt_int(a.get(1), "limit", 50, 1..=200)? as usize;
    let offset = opt_int(a.get(1), "offset", 0, 0..=i64::MAX)? as usize;
    Ok(Value::vector(names_in(cx, ns).into_iter().skip(offset).take(limit).map(Value::str)))
}

/// Splits on `-`, `_`, `/`, `.`, `?`, `!`, spaces and camelCase, lower-cased.
pub fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in s.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn token_score(q: &str, field: &[String]) -> i64 {
    field
        .iter()
        .map(|t| {
            if t == q {
                10
            } else if t.starts_with(q) {
                5
            } else if t.contains(q) {
                2
            } else {
                0
            }
        })
        .max()
        .unwrap_or(0)
}

/// The score `apropos` gives the core library and the program's definitions: [`score`],
/// except that a query found only inside a description's word (`read` in "already",
/// `sort` in "unsorted") does not count. Hundreds of builtins have prose docs, so such
/// hits buried the names that were asked for; names still match anywhere inside.
fn local_score(query: &[String], name: &str, description: &str) -> i64 {
    let (n, d) = (tokens(name), tokens(description));
    query
        .iter()
        .map(|q| {
            let in_name = token_score(q, &n);
            if in_name > 0 {
                in_name + 2
            } else {
                match token_score(q, &d) {
                    2 => 0,
                    s => s,
                }
            }
        })
        .sum()
}

/// Seed 002's lexical score: per query token, exact 10 / prefix 5 / substring 2 against
/// the name's tokens (plus 2), or else against the description's. `apropos` and the MCP
/// aggregator's tool search both rank with it.
pub fn score(query: &[String], name: &str, description: &str) -> i64 {
    let (n, d) = (tokens(name), tokens(description));
    query
        .iter()
        .map(|q| {
            let in_name = token_score(q, &n);
            if in_name > 0 { in_name + 2 } else { token_score(q, &d) }
        })
        .sum()
}

fn apropos(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let q = match &a[0] {
        Value::Str(s) if !s.trim().is_empty() => s.to_string(),
        Value::Str(_) => return err(ErrorKind::RuntimeError, "apropos: the query is empty; write (apropos \"sort\")"),
        other => ref_name("apropos", other)?,
    };
    let limit = opt_int(a.get(1), "limit", 8, 1..=50)? as usize;
    let query = tokens(&q);
    let mut hits: Vec<(i64, String, String)> = super::all()
        .flat_map(|b| std::iter::once(b.name).chain(b.aliases.iter().copied()).map(move |n| (n, b.doc)))
        .filter_map(|(n, d)| {
            let s = local_score(&query, n, d);
            (s > 0).then(|| (s, n.to_string(), d.to_string()))
        })
        .collect();
    for (name, v) in cx.definitions() {
        let d = cx
            .definition_doc(name)
            .map(|d| d.to_string())
            .unwrap_or_else(|| format!("user definition ({})", v.type_name()));
        let s = local_score(&query, name, &d);
        if s > 0 {
            hits.push((s, name.to_string(), d));
        }
    }
    hits.sort_by(|x, y| y.0.cmp(&x.0).then_with(|| x.1.len().cmp(&y.1.len())).then_with(|| x.1.cmp(&y.1)));
    hits.dedup_by(|x, y| x.1 == y.1);
    // the host's catalog (upstream tools) comes first: it is what a search is usually for
    let options = a.get(1).cloned().unwrap_or(Value::Nil);
    let mut out: Vec<Value> = match cx.discover(&Ask::Apropos { query: &q, options: &options }) {
        Some(answer) => match answer? {
            Value::Vector(items) | Value::List(items) => items.iter().cloned().collect(),
            Value::Nil => Vec::new(),
            other => vec![other],
        },
        None => Vec::new(),
    };
    out.extend(hits.into_iter().map(|(_, n, d)| Value::str(format!("{n} - {d}"))));
    out.truncate(limit);
    Ok(Value::vector(out))
}

fn meta_of(b: &Builtin) -> Value {
    Value::map([
        (Value::kw("name"), Value::str(b.name)),
        (Value::kw("ns"), Value::str(ns_of(b))),
        (Value::kw("doc"), Value::str(b.doc)),
        (Value::kw("arity"), Value::str(b.arity.describe())),
        (Value::kw("category"), Value::kw(format!("{:?}", b.category).to_lowercase())),
        (Value::kw("extension"), Value::Bool(b.extension)),
        (
            Value::kw("examples"),
            Value::vector(b.examples.iter().map(|(src, out)| Value::str(format!("{src} ;=> {out}")))),
        ),
    ])
}

fn meta(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let name = ref_name("meta", &a[0])?;
    if let Some(v) = cx.definition(name.as_str()) {
        // a qualified definition (a host's prelude, `crm/vips`) is in its own namespace
        let ns = name.split_once('/').map_or("user", |(ns, _)| ns);
        let mut entries = vec![(Value::kw("name"), Value::str(name.as_str())), (Value::kw("ns"), Value::str(ns))];
        if let Some(d) = cx.definition_doc(name.as_str()) {
            entries.push((Value::kw("doc"), Value::str(d)));
        }
        entries.push((Value::kw("type"), Value::kw(v.type_name())));
        return Ok(Value::map(entries));
    }
    if let Some(b) = find_builtin(&name) {
        return Ok(meta_of(b));
    }
    cx.discover(&Ask::Meta { name: &name }).unwrap_or(Ok(Value::Nil))
}

fn ns_publics(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let raw = ref_name("ns-publics", &a[0])?;
    let Some(ns) = canonical_ns(&raw) else {
        if let Some(answer) = cx.discover(&Ask::Publics { namespace: &raw }) {
            return answer;
        }
        return err(
            ErrorKind::RuntimeError,
            format!("ns-publics: unknown namespace {raw}; (all-ns) lists the namespaces"),
        );
    };
    let mut out = BTreeMap::new();
    for n in names_in(cx, ns) {
        // names of a library are looked up in its own table (set/join, not the string join)
        let found = if n.contains('/') { find_builtin(&n) } else { find_builtin(&format!("{ns}/{n}")) };
        let d = match found.or_else(|| find_builtin(&n)) {
            Some(b) if ns != "user" => b.doc.to_string(),
            _ => cx.definition_doc(n.as_str()).map(|d| d.to_string()).unwrap_or_default(),
        };
        out.insert(Value::str(n), Value::str(d));
    }
    Ok(Value::map(out))
}

/// The namespaces the host adds (`Discovery::Namespaces`): the names in its answer.
fn host_namespaces(cx: &mut BuiltinContext) -> EvalResult<Vec<String>> {
    let Some(answer) = cx.discover(&Ask::Namespaces) else { return Ok(Vec::new()) };
    Ok(match answer? {
        Value::Vector(items) | Value::List(items) => {
            items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()
        }
        _ => Vec::new(),
    })
}

fn all_ns(cx: &mut BuiltinContext, _: &mut [Value]) -> EvalResult {
    let mut names: Vec<String> = namespaces().into_iter().map(str::to_string).collect();
    names.push("user".into());
    names.extend(host_namespaces(cx)?);
    names.sort_unstable();
    names.dedup();
    Ok(Value::vector(names.into_iter().map(Value::str)))
}

fn ns_name(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let raw = ref_name("ns-name", &a[0])?;
    match canonical_ns(&raw) {
        Some(ns) => Ok(Value::str(ns)),
        None if host_namespaces(cx)?.contains(&raw) => Ok(Value::str(raw)),
        None => {
            err(ErrorKind::RuntimeError, format!("ns-name: unknown namespace {raw}; (all-ns) lists the namespaces"))
        }
    }
}

/// Items inspected at the root; keys reported per map; characters per example.
const MAX_ITEMS: usize = 1_000;

const MAX_KEYS: usize = 100;

const EXAMPLE_CHARS: usize = 120;

fn type_kw(v: &Value) -> Value {
    Value::kw(match v {
        Value::Nil => "nil",
        Value::Bool(_) => "boolean",
        Value::Int(_) | Value::Float(_) => "number",
        Value::Str(_) => "string",
        Value::Keyword(_) => "keyword",
        Value::Vector(_) => "vector",
        Value::List(_) => "list",
        Value::Map(_) => "map",
        Value::Set(_) => "set",
        Value::Regex(_) => "regex",
        Value::Func(_) => "function",
        Value::Lazy(_) => "lazy-seq",
        Value::Reduced(_) => "reduced",
        Value::Var(_) => "var",
        Value::Symbol(_) => "symbol",
    })
}

fn example(v: &Value) -> Value {
    let opts = PrintOptions { limit: Some(5), printable_limit: Some(40), max_bytes: EXAMPLE_CHARS };
    Value::str(to_clojure_with(v, &opts).0)
}

fn key_types<'a>(maps: impl Iterator<Item = &'a Value>, out: &mut BTreeMap<Value, Value>) -> bool {
    let mut capped = false;
    for m in maps {
        if let Value::Map(m) = m {
            for (k, v) in m.iter() {
                if out.len() >= MAX_KEYS && !out.contains_key(k) {
                    capped = true;
                    continue;
                }
                let slot = out.entry(k.clone()).or_insert(Value::Nil);
                if slot.is_nil() && !v.is_nil() {
                    *slot = type_kw(v);
                } else if slot.is_nil() {
                    *slot = Value::kw("nil");
                }
            }
        }
    }
    capped
}

fn describe(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let sample = match a.get(1) {
        Some(Value::Map(o)) => match o.get(&Value::kw("sample")) {
            Some(Value::Int(n)) => (*n).clamp(1, 3) as usize,
            _ => 2,
        },
        _ => 2,
    };
    let v = &a[0];
    let mut out: Vec<(Value, Value)> = vec![(Value::kw("type"), type_kw(v))];
    match v {
        Value::Vector(_) | Value::List(_) | Value::Set(_) => {
            let items: Vec<Value> = super::seq_iter("describe", v)?.take(MAX_ITEMS).collect();
            cx.tick(items.len() as u64)?;
            let total = super::seq_len(v).unwrap_or(0);
            out.push((Value::kw("count"), Value::Int(total as i64)));
            let mut types: BTreeMap<Value, i64> = BTreeMap::new();
            for i in &items {
                *types.entry(type_kw(i)).or_insert(0) += 1;
            }
            if types.len() > 1 {
                out.push((Value::kw("types"), Value::map(types.into_iter().map(|(k, n)| (k, Value::Int(n))))));
            }
            let mut keys = BTreeMap::new();
            let capped = key_types(items.iter(), &mut keys);
            if !keys.is_empty() {
                out.push((Value::kw("keys"), Value::map(keys)));
            }
            out.push((Value::kw("examples"), Value::vector(items.iter().take(sample).map(example))));
            if capped || total > MAX_ITEMS {
                out.push((Value::kw("truncated"), Value::Bool(true)));
            }
        }
        Value::Map(m) => {
            out.push((Value::kw("count"), Value::Int(m.len() as i64)));
            let mut keys = BTreeMap::new();
            let capped = key_types(std::iter::once(v), &mut keys);
            out.push((Value::kw("keys"), Value::map(keys)));
            if capped {
                out.push((Value::kw("truncated"), Value::Bool(true)));
            }
        }
        Value::Str(s) => {
            out.push((Value::kw("count"), Value::Int(s.chars().count() as i64)));
            out.push((Value::kw("example"), example(v)));
        }
        Value::Nil => {}
        other => out.push((Value::kw("value"), example(other))),
    }
    Ok(Value::map(out))
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_and_score() {
        assert_eq!(tokens("parseLong-value_x?"), vec!["parse", "long", "value", "x"]);
        assert_eq!(score(&tokens("sort"), "sort-by", "Items sorted by key"), 12);
        assert_eq!(score(&tokens("sor"), "sort", ""), 7);
        assert_eq!(score(&tokens("xyz"), "sort", "nothing"), 0);
    }

    #[test]
    fn local_search_ignores_words_that_merely_contain_the_query() {
        let read = tokens("read");
        assert_eq!(score(&read, "swap!", "Swaps the value already held"), 2);
        assert_eq!(local_score(&read, "swap!", "Swaps the value already held"), 0);
        assert_eq!(local_score(&read, "slurp", "Reads a file"), 5);
        assert_eq!(local_score(&read, "unread-x", ""), 4);
    }
}
