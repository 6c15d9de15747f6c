//! History compression: old turns summarised instead of re-sent.
//!
//! With compression on, the model never sees its previous programs. Each request is
//! `[SYSTEM, USER]` where the one USER message holds the mission, a blank line, a summary
//! of every successful turn so far (tool calls made, functions and values defined, what
//! was printed) and `Turns left: N`. Failed turns stay as full assistant/user pairs after
//! it, so the model sees exactly what broke. The full programs stay in the step's turns.
//!
//! The summary's lines, in this order, each section only when it has entries:
//!
//! ```text
//! ; Tool calls:
//! ;   search-reviews({:category "Electronics"})
//! ; Function: fetch-users - "Fetches users by category"
//! ; Defined: users - "Active users" = list[5], sample: {:name "Alice"}
//! ; Output:
//! Found 5 users
//! ```
//!
//! (`; No tool calls made` stands in for the tool-call section when no turn called a
//! tool.) A value defined in a turn that printed nothing gets a sample; a turn that
//! printed shows its output instead, so nothing is shown twice.

use ptc_lisp_eval::printer::{PrintOptions, to_clojure_with};
use ptc_lisp_eval::{Memory, ToolCallRecord, Value};

/// How much history the summary keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryOptions {
    /// Most recent `println` calls shown (15); each call counts once, whatever it printed.
    pub println_limit: usize,
    /// Most recent tool calls shown (20).
    pub tool_call_limit: usize,
}

impl Default for HistoryOptions {
    fn default() -> Self {
        HistoryOptions { println_limit: 15, tool_call_limit: 20 }
    }
}

/// Sample options for `Defined` lines.
const SAMPLE: PrintOptions = PrintOptions { limit: Some(3), printable_limit: Some(80), max_bytes: 4096 };
/// Print options for tool-call arguments.
const ARGS: PrintOptions = PrintOptions { limit: Some(3), printable_limit: Some(60), max_bytes: 4096 };

/// One definition as the summary shows it.
#[derive(Debug, Clone)]
struct Definition {
    name: String,
    doc: Option<String>,
    value: Value,
    /// The defining turn printed nothing, so the line carries a sample.
    sample: bool,
}

/// What a successful turn left behind.
pub(crate) struct TurnRecord<'a> {
    pub(crate) tool_calls: &'a [ToolCallRecord],
    pub(crate) prints: &'a [String],
    /// Names defined at top level, in source order (repeats allowed).
    pub(crate) defined: &'a [String],
    /// Memory after the turn.
    pub(crate) memory: &'a Memory,
}

/// The summary accumulated over the successful turns of a mission.
#[derive(Debug, Clone, Default)]
pub(crate) struct Summary {
    tool_calls: Vec<String>,
    definitions: Vec<Definition>,
    prints: Vec<String>,
}

impl Summary {
    /// Adds a successful turn.
    pub(crate) fn add(&mut self, turn: &TurnRecord<'_>) {
        for call in turn.tool_calls {
            self.tool_calls.push(tool_call_line(call));
        }
        let printed = !turn.prints.is_empty();
        for name in turn.defined {
            let Some(value) = turn.memory.get(name.as_str()) else { continue };
            // a redefinition replaces the earlier entry; the latest definition's place wins
            self.definitions.retain(|d| &d.name != name);
            self.definitions.push(Definition {
                name: name.clone(),
                doc: turn.memory.doc(name.as_str()).map(sanitize).filter(|d| !d.is_empty()),
                value: value.clone(),
                sample: !printed,
            });
        }
        self.prints.extend(turn.prints.iter().cloned());
    }

    /// The summary lines (empty before the first successful turn).
    pub(crate) fn render(&self, opts: &HistoryOptions) -> String {
        let mut lines = Vec::new();
        if self.tool_calls.is_empty() {
            lines.push("; No tool calls made".to_string());
        } else {
            lines.push("; Tool calls:".to_string());
            let skip = self.tool_calls.len().saturating_sub(opts.tool_call_limit);
            lines.extend(self.tool_calls[skip..].iter().map(|c| format!(";   {c}")));
        }
        for d in self.definitions.iter().filter(|d| matches!(d.value, Value::Func(_))) {
            lines.push(match &d.doc {
                Some(doc) => format!("; Function: {} - \"{doc}\"", d.name),
                None => format!("; Function: {}", d.name),
            });
        }
        for d in self.definitions.iter().filter(|d| !matches!(d.value, Value::Func(_))) {
            let head = match &d.doc {
                Some(doc) => format!("; Defined: {} - \"{doc}\" = {}", d.name, type_label(&d.value)),
                None => format!("; Defined: {} = {}", d.name, type_label(&d.value)),
            };
            lines.push(match sample(&d.value).filter(|_| d.sample) {
                Some(s) => format!("{head}, sample: {s}"),
                None => head,
            });
        }
        if !self.prints.is_empty() {
            lines.push("; Output:".to_string());
            let skip = self.prints.len().saturating_sub(opts.println_limit);
            lines.extend(self.prints[skip..].iter().cloned());
        }
        lines.join("\n")
    }

    /// True before any successful turn.
    pub(crate) fn is_empty(&self) -> bool {
        self.tool_calls.is_empty() && self.definitions.is_empty() && self.prints.is_empty()
    }
}

/// The single USER message: mission, blank line, summary (when there is one), blank line,
/// `Turns left: N`.
pub(crate) fn user_message(mission: &str, summary: &Summary, opts: &HistoryOptions, turns_left: u32) -> String {
    if summary.is_empty() {
        format!("{mission}\n\nTurns left: {turns_left}")
    } else {
        format!("{mission}\n\n{}\n\nTurns left: {turns_left}", summary.render(opts))
    }
}

/// The names a program defines (`def`, `defn`, `defn-`, `defonce`), in source order.
pub(crate) fn definition_order(source: &str) -> Vec<String> {
    let Ok(forms) = ptc_lisp_syntax::parse_program(source) else { return Vec::new() };
    let mut out = Vec::new();
    // depth-first, left to right, without recursion
    let mut stack: Vec<&ptc_lisp_syntax::Form> = forms.iter().rev().collect();
    while let Some(f) = stack.pop() {
        use ptc_lisp_syntax::FormKind;
        let items = match &f.kind {
            FormKind::List(items) => {
                if let (Some(head), Some(name)) = (items.first(), items.get(1))
                    && let (Some(h), Some(n)) = (head.as_plain_symbol(), name.as_plain_symbol())
                    && matches!(h, "def" | "defn" | "defn-" | "defonce")
                {
                    out.push(n.to_string());
                }
                items
            }
            FormKind::Vector(items) | FormKind::Map(items) | FormKind::Set(items) | FormKind::ShortFn(items) => items,
            _ => continue,
        };
        stack.extend(items.iter().rev());
    }
    out
}

/// `name(args)`: the arguments in PTC-Lisp syntax, keys as programs write them.
fn tool_call_line(call: &ToolCallRecord) -> String {
    let args = match &call.args {
        Value::Map(m) if m.is_empty() => String::new(),
        other => to_clojure_with(&ptc_signature::keys::to_lisp_keys(other), &ARGS).0,
    };
    format!("{}({args})", call.name)
}

/// Semicolons would end the summary's comment syntax; they are dropped.
fn sanitize(doc: &str) -> String {
    doc.replace(';', "").replace('\n', " ").trim().to_string()
}

/// The type vocabulary: `list[N]`, `map[N]`, `string`, `integer`, `float`, `boolean`,
/// `keyword`, `nil`.
fn type_label(v: &Value) -> String {
    match v {
        Value::Vector(items) | Value::List(items) => format!("list[{}]", items.len()),
        Value::Set(items) => format!("list[{}]", items.len()),
        Value::Map(m) => format!("map[{}]", m.len()),
        Value::Str(_) => "string".into(),
        Value::Int(_) => "integer".into(),
        Value::Float(_) => "float".into(),
        Value::Bool(_) => "boolean".into(),
        Value::Keyword(_) => "keyword".into(),
        Value::Nil => "nil".into(),
        other => other.type_name().to_string(),
    }
}

/// A sample: a list's first item, any other value itself; none for nil and empty
/// collections.
fn sample(v: &Value) -> Option<String> {
    let shown = match v {
        Value::Nil => return None,
        Value::Vector(items) | Value::List(items) => items.iter().next()?.clone(),
        Value::Set(items) => items.iter().next()?.clone(),
        Value::Map(m) if m.is_empty() => return None,
        other => other.clone(),
    };
    // keyword keys, as programs read them (context data arrives with string keys)
    Some(to_clojure_with(&ptc_signature::keys::to_lisp_keys(&shown), &SAMPLE).0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globals(entries: &[(&str, Value)], docs: &[(&str, &str)]) -> Memory {
        let mut g = Memory::default();
        for (k, v) in entries {
            g.insert(*k, v.clone());
        }
        for (k, d) in docs {
            g.set_doc(*k, *d);
        }
        g
    }

    #[test]
    fn the_type_vocabulary() {
        let cases = [
            (Value::vector([]), "list[0]", None),
            (Value::vector([Value::Int(1), Value::Int(2), Value::Int(3)]), "list[3]", Some("1")),
            (Value::empty_map(), "map[0]", None),
            (Value::str("hello"), "string", Some("\"hello\"")),
            (Value::Int(42), "integer", Some("42")),
            (Value::Float(2.5), "float", Some("2.5")),
            (Value::Bool(true), "boolean", Some("true")),
            (Value::kw("active"), "keyword", Some(":active")),
            (Value::Nil, "nil", None),
        ];
        for (v, label, s) in cases {
            assert_eq!(type_label(&v), label);
            assert_eq!(sample(&v).as_deref(), s, "{label}");
        }
    }

    #[test]
    fn redefinition_keeps_the_final_value_and_docstrings_lose_semicolons() {
        let mut s = Summary::default();
        let mem = globals(&[("x", Value::Int(2))], &[("x", "first; second")]);
        s.add(&TurnRecord { tool_calls: &[], prints: &[], defined: &["x".into(), "x".into()], memory: &mem });
        assert_eq!(
            s.render(&HistoryOptions::default()),
            "; No tool calls made\n; Defined: x - \"first second\" = integer, sample: 2"
        );
    }

    #[test]
    fn definitions_come_in_source_order() {
        assert_eq!(definition_order("(def z 1) (defn a [] (def m 2)) (def z 3)"), ["z", "a", "m", "z"]);
        assert!(definition_order("(def").is_empty());
    }

    #[test]
    fn println_limit_counts_calls_not_lines() {
        let mut s = Summary::default();
        let prints: Vec<String> = vec!["a\nb".into(), "c".into(), "d".into()];
        s.add(&TurnRecord { tool_calls: &[], prints: &prints, defined: &[], memory: &Memory::default() });
        let out = s.render(&HistoryOptions { println_limit: 2, tool_call_limit: 20 });
        assert_eq!(out, "; No tool calls made\n; Output:\nc\nd");
    }
}
