//! A session's state as a versioned record: what a [`SessionStore`] keeps as bytes.
//!
//! Bindings whose values are data are written with the codec (`codec.rs`). A binding that
//! holds a function is kept as the source of the top-level form that defined it (`(defn
//! f ...)`, `(def f (fn ...))`): such a form reads nothing when it runs (a function's body
//! looks names up when it is called), so running it again rebuilds exactly the same
//! function. A function that captured local values (`(let [a 1] (defn f [] a))`), one
//! built by `partial`/`comp`, or an infinite sequence cannot be rebuilt that way; the
//! evaluation that defines one is refused with a message saying what to write instead,
//! and the session keeps its previous state.
//!
//! [`FORMAT`] is written first in every record; a record of another format is refused
//! with a clear error, never guessed at.
//!
//! [`SessionStore`]: super::store::SessionStore

use std::collections::HashMap;
use std::sync::Arc;

use ptc_lisp_eval::{Cancel, CompileEnv, Engine, FunctionKind, Memory, NoTools, RunInput, RunResult, Value};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::codec::{self, NotData};

/// The record format this server writes and reads.
pub(crate) const FORMAT: u32 = 1;

/// One session's state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Record {
    /// Always [`FORMAT`] when written by this server.
    pub format: u32,
    /// `ptcs_...` (also in the store's metadata; kept here so bytes are self-describing).
    pub id: String,
    /// The title given at start.
    pub title: Option<String>,
    /// Unix ms.
    pub created_at_ms: u64,
    /// Unix ms of the last committed change.
    pub updated_at_ms: u64,
    /// Committed evaluations.
    pub turn: u64,
    /// The next definition sequence number (definitions are rebuilt in this order).
    pub next_seq: u64,
    /// The user's definitions.
    pub bindings: Vec<Binding>,
    /// `*3 *2 *1`, oldest first; `None` where a result was not kept.
    pub history: Vec<Option<Vec<Json>>>,
    /// The most recent `println` lines.
    pub prints: Vec<String>,
    /// The most recent tool calls (name, status, duration).
    pub tool_calls: Vec<Json>,
    /// The most recent upstream calls (`upstream_calls` entries).
    pub upstream_calls: Vec<Json>,
    /// The prelude refs frozen at start (`{id, version, checksum}`).
    #[serde(default)]
    pub preludes: Vec<Json>,
}

/// One definition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Binding {
    /// The name (`user/` namespace).
    pub name: String,
    /// When it was (re)defined, in the session's order.
    pub seq: u64,
    /// Its docstring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
    /// Encoded size, bytes (what the memory limits count).
    pub bytes: usize,
    /// The value or its defining form.
    #[serde(flatten)]
    pub stored: Stored,
}

/// How a binding is kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Stored {
    /// Codec operations.
    Data {
        /// The value's operations.
        ops: Vec<Json>,
    },
    /// The source of the top-level form that defined it.
    Form {
        /// `(defn f ...)`.
        source: String,
    },
}

/// Why a record's bytes could not be read.
#[derive(Debug, Clone, thiserror::Error)]
#[error("session record {0}")]
pub(crate) struct BadRecord(pub String);

#[derive(Deserialize)]
struct Header {
    format: Option<u32>,
}

impl Record {
    /// A new, empty session.
    pub(super) fn new(id: String, title: Option<String>, now_ms: u64) -> Record {
        Record {
            format: FORMAT,
            id,
            title,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            turn: 0,
            next_seq: 1,
            bindings: Vec::new(),
            history: Vec::new(),
            prints: Vec::new(),
            tool_calls: Vec::new(),
            upstream_calls: Vec::new(),
            preludes: Vec::new(),
        }
    }

    /// The record's bytes.
    pub(super) fn to_bytes(&self) -> Vec<u8> {
        // a Record is plain data (strings, numbers, JSON values): serialising cannot fail
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads a record, refusing other formats and foreign bytes.
    pub(super) fn from_bytes(bytes: &[u8]) -> Result<Record, BadRecord> {
        let header: Header = serde_json::from_slice(bytes)
            .map_err(|e| BadRecord(format!("is not a ptc session record (not JSON: {e})")))?;
        match header.format {
            Some(FORMAT) => {}
            Some(other) => {
                return Err(BadRecord(format!(
                    "has format {other}; this server reads format {FORMAT} (a newer or older ptc wrote it)"
                )));
            }
            None => return Err(BadRecord("is not a ptc session record (no format field)".into())),
        }
        serde_json::from_slice(bytes).map_err(|e| BadRecord(format!("is damaged: {e}")))
    }

    /// Bytes of all bindings.
    pub(super) fn memory_bytes(&self) -> usize {
        self.bindings.iter().map(|b| b.bytes).sum()
    }

    /// The binding names, sorted.
    pub(super) fn stored_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.bindings.iter().map(|b| b.name.clone()).collect();
        keys.sort();
        keys
    }

    /// Rebuilds the definitions, over `base` (the session's preludes), and `*1 *2 *3` as
    /// values. Forms run with no tools, under `engine`'s limits.
    pub(super) fn restore(&self, engine: &Engine, base: Memory) -> Result<(Memory, Vec<Value>), BadRecord> {
        let mut globals = base;
        let mut ordered: Vec<&Binding> = self.bindings.iter().collect();
        ordered.sort_by_key(|b| b.seq);
        let mut forms = String::new();
        for b in &ordered {
            let name: Arc<str> = Arc::from(b.name.as_str());
            match &b.stored {
                Stored::Data { ops } => {
                    let v = codec::decode(ops)
                        .map_err(|e| BadRecord(format!("binding `{}` is damaged: {}", b.name, e.0)))?;
                    globals.insert(name.clone(), v);
                }
                Stored::Form { source } => {
                    // declared first so that forms may name each other in any order
                    globals.insert(name.clone(), Value::Nil);
                    forms.push_str(source);
                    forms.push('\n');
                }
            }
            if let Some(d) = &b.doc {
                globals.set_doc(name, Arc::from(d.as_str()));
            }
        }
        if !forms.is_empty() {
            let input = RunInput { memory: globals, ..RunInput::new() };
            let program = engine
                .compile(&forms, &CompileEnv::new().with_memory(&input.memory))
                .map_err(|e| BadRecord(format!("cannot rebuild its functions: {}", e.message)))?;
            let outcome = engine.run(&program, input, &NoTools, &Cancel::new());
            if let RunResult::Error(e) = &outcome.result {
                return Err(BadRecord(format!("cannot rebuild its functions: {}", e.message)));
            }
            globals = outcome.memory;
        }
        let history = self
            .history
            .iter()
            .map(|h| match h {
                Some(ops) => codec::decode(ops).map_err(|e| BadRecord(format!("history is damaged: {}", e.0))),
                None => Ok(Value::Nil),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((globals, history))
    }
}

/// A definition the session cannot keep.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unkeepable {
    /// The binding.
    pub name: String,
    /// What to do instead.
    pub message: String,
}

/// The bindings after an evaluation: unchanged ones keep their stored form, changed ones
/// are encoded again. Returns them with the names that changed (sorted).
pub(crate) fn commit_bindings(
    previous: &Record,
    before: &Memory,
    after: &Memory,
    source: &str,
    next_seq: &mut u64,
) -> Result<(Vec<Binding>, Vec<String>), Unkeepable> {
    let old: HashMap<&str, &Binding> = previous.bindings.iter().map(|b| (b.name.as_str(), b)).collect();
    let mut forms: Option<HashMap<String, String>> = None;
    let mut out = Vec::with_capacity(after.len());
    let mut changed = Vec::new();
    for name in after.names() {
        // prelude definitions (`crm/get-user`) come from the server, not the session
        if crate::prelude::is_prelude_name(name) {
            continue;
        }
        let Some(value) = after.get(name) else { continue };
        let doc = after.doc(name).map(|d| d.to_string());
        let same = before.get(name).is_some_and(|b| b == value) && before.doc(name).map(|d| d.to_string()) == doc;
        if same && let Some(b) = old.get(name) {
            out.push((*b).clone());
            continue;
        }
        let stored = match codec::encode(value) {
            Ok(ops) => Stored::Data { ops },
            Err(why) => {
                let forms = forms.get_or_insert_with(|| defining_forms(source));
                let rebuildable =
                    matches!(value, Value::Func(f) if matches!(f.kind(), FunctionKind::Closure { captures: 0, .. }));
                match forms.get(name) {
                    Some(text) if rebuildable => Stored::Form { source: text.clone() },
                    _ => return Err(unkeepable(name, &why, value)),
                }
            }
        };
        let bytes = match &stored {
            Stored::Data { ops } => serde_json::to_string(ops).map(|s| s.len()).unwrap_or(0),
            Stored::Form { source } => source.len(),
        };
        let seq = *next_seq;
        *next_seq += 1;
        changed.push(name.to_string());
        out.push(Binding { name: name.to_string(), seq, doc, bytes, stored });
    }
    Ok((out, changed))
}

fn unkeepable(name: &str, why: &NotData, value: &Value) -> Unkeepable {
    let message = match (why, value) {
        (NotData::Lazy, _) => format!(
            "binding `{name}` holds {} (or data containing one), which a session cannot store; keep a finite part, e.g. (def {name} (vec (take 100 ...)))",
            why.what()
        ),
        (NotData::Function, Value::Func(_)) => format!(
            "binding `{name}` holds a function a session cannot store: sessions keep functions by their top-level defining form, so define it as (defn {name} [args] ...) or (def {name} (fn [args] ...)) at the top level of the program, not inside let/do, and not with partial, comp or a closure over local values"
        ),
        (NotData::Function, _) => format!(
            "binding `{name}` holds data that contains a user function, which a session cannot store; keep the functions in their own (defn ...) bindings and store only data in `{name}`"
        ),
    };
    Unkeepable { name: name.to_string(), message }
}

/// Top-level `(def name ...)`, `(defn name ...)`, `(defn- name ...)`, `(defonce name ...)`
/// forms of `source` by name (the last one wins, as it does when the program runs).
fn defining_forms(source: &str) -> HashMap<String, String> {
    use ptc_lisp_syntax::FormKind;
    let mut out = HashMap::new();
    let Ok(forms) = ptc_lisp_syntax::parse_program(source) else { return out };
    for f in forms {
        let FormKind::List(items) = &f.kind else { continue };
        let (Some(head), Some(name)) = (items.first().and_then(|h| h.as_plain_symbol()), items.get(1)) else {
            continue;
        };
        if !matches!(head, "def" | "defn" | "defn-" | "defonce") {
            continue;
        }
        let Some(name) = name.as_plain_symbol() else { continue };
        let (start, end) = (f.span.start as usize, f.span.end as usize);
        if let Some(text) = source.get(start..end) {
            out.insert(name.to_string(), text.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptc_lisp_eval::Limits;

    fn run(engine: &Engine, memory: Memory, src: &str) -> Memory {
        let out = engine.eval(src, RunInput { memory, ..RunInput::new() }, &NoTools, &Cancel::new());
        assert!(out.is_ok(), "{src}: {:?}", out.result);
        out.memory
    }

    #[test]
    fn definitions_survive_bytes() {
        let engine = Engine::new(Limits::default());
        let mut rec = Record::new("ptcs_x".into(), None, 0);
        let src = "(def base 10)\n(defn add-base \"adds base\" [x] (+ x base))\n(def xs [1 2 {:a #{:b}}])\n(def twice (fn [x] (* 2 (helper x))))\n(defn helper [x] x)";
        let after = run(&engine, Memory::default(), src);
        let mut seq = rec.next_seq;
        let (bindings, changed) = commit_bindings(&rec, &Memory::default(), &after, src, &mut seq).unwrap();
        assert_eq!(changed, ["add-base", "base", "helper", "twice", "xs"]);
        rec.bindings = bindings;
        rec.next_seq = seq;
        let back = Record::from_bytes(&rec.to_bytes()).unwrap();
        let (globals, _) = back.restore(&engine, Memory::default()).unwrap();
        let out = engine.eval(
            "[(add-base 1) (twice 4) xs]",
            RunInput { memory: globals.clone(), ..RunInput::new() },
            &NoTools,
            &Cancel::new(),
        );
        assert_eq!(out.printed, "[11 8 [1 2 {:a #{:b}}]]");
        assert_eq!(globals.doc("add-base").map(|d| d.to_string()), Some("adds base".into()));
        // unchanged bindings keep their stored form and sequence number
        let after2 = run(&engine, globals.clone(), "(def base 20)");
        let (b2, changed) = commit_bindings(&back, &globals, &after2, "(def base 20)", &mut seq).unwrap();
        assert_eq!(changed, ["base"]);
        let helper = b2.iter().find(|b| b.name == "helper").unwrap();
        assert_eq!(helper.seq, back.bindings.iter().find(|b| b.name == "helper").unwrap().seq);
    }

    #[test]
    fn functions_that_cannot_be_rebuilt_are_refused() {
        let engine = Engine::new(Limits::default());
        let rec = Record::new("ptcs_x".into(), None, 0);
        for (src, needle) in [
            ("(let [a 1] (defn f [] a))", "top level"),
            ("(def f (partial + 1))", "partial"),
            ("(def f {:g (fn [] 1)})", "contains a user function"),
            ("(def f (range))", "infinite"),
        ] {
            let after = run(&engine, Memory::default(), src);
            let mut seq = 1;
            let e = commit_bindings(&rec, &Memory::default(), &after, src, &mut seq).unwrap_err();
            assert_eq!(e.name, "f");
            assert!(e.message.contains(needle), "{src}: {}", e.message);
        }
    }

    #[test]
    fn foreign_and_future_records_are_refused() {
        assert!(Record::from_bytes(b"hello").unwrap_err().0.contains("not a ptc session record"));
        assert!(Record::from_bytes(br#"{"a":1}"#).unwrap_err().0.contains("no format"));
        assert!(Record::from_bytes(br#"{"format":9}"#).unwrap_err().0.contains("format 9"));
        assert!(Record::from_bytes(br#"{"format":1}"#).unwrap_err().0.contains("damaged"));
    }
}
