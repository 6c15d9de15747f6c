//! The system prompt and the first user message.
//!
//! The system prompt is static for an agent (so providers can cache it): the PTC-Lisp
//! reference card, the behaviour cards for single- or multi-turn work, and the output
//! format. The first user message carries what changes per mission: the tools and data
//! inventory, the expected output, and the mission itself. Card texts live in this crate's
//! `prompts/*.md` (a metadata header with a byte budget, then the text), embedded at
//! compile time.

use std::collections::BTreeMap;

use ptc_lisp_eval::Value;
use ptc_lisp_eval::printer::{PrintOptions, to_clojure_with};
use ptc_lisp_eval::value::PMap;
use ptc_signature::{KeyStyle, Signature, Type, render_type};

use crate::prelude::Prelude;
use crate::tool::CatalogEntry;

const REFERENCE: &str = include_str!("../prompts/reference.md");
const SINGLE_SHOT: &str = include_str!("../prompts/behavior-single-shot.md");
const MULTI_TURN: &str = include_str!("../prompts/behavior-multi-turn.md");
const RETURN_EXPLICIT: &str = include_str!("../prompts/behavior-return-explicit.md");
const OUTPUT_FORMAT: &str = include_str!("../prompts/output-format.md");
const OUTPUT_FORMAT_TOOL_CALL: &str = include_str!("../prompts/output-format-tool-call.md");
const TEXT_MODE: &str = include_str!("../prompts/text-mode.md");
const COMPACT_REFERENCE: &str = include_str!("../prompts/text-mode-compact-reference.md");

/// How much of large data the prompt shows (the seed's `prompt_limit`, default
/// `{list: 5, string: 1000}`): the data inventory samples each `data/` value with at most
/// `list` items per list and `string` bytes per string (and per sample line); a cut
/// value is followed by a note with its full size, so the model knows to read the rest
/// in a program. Feedback after a turn has its own limits ([`FormatOptions`](crate::FormatOptions)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptLimit {
    /// Items shown from the start of a list (5).
    pub list: usize,
    /// Bytes shown of a string (1000).
    pub string: usize,
}

impl Default for PromptLimit {
    fn default() -> Self {
        PromptLimit { list: 5, string: 1000 }
    }
}

/// Replaces or wraps the generated system prompt (the seed's `system_prompt` option).
///
/// What is replaced or wrapped is the static part: the language reference, behaviour
/// and output-format cards (the text card in text modes). What a mission adds to the
/// system prompt itself — the inventory under history compression, combined mode's list
/// of program-callable tools — is still appended, so the model keeps seeing its tools.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SystemPrompt {
    /// This text instead of the generated cards.
    Replace(String),
    /// The generated cards between `prefix` and `suffix` (either may be empty).
    Wrap {
        /// Text before the cards.
        prefix: String,
        /// Text after the cards.
        suffix: String,
    },
}

impl From<String> for SystemPrompt {
    fn from(text: String) -> Self {
        SystemPrompt::Replace(text)
    }
}

impl From<&str> for SystemPrompt {
    fn from(text: &str) -> Self {
        SystemPrompt::Replace(text.to_string())
    }
}

impl SystemPrompt {
    /// The cards `generated`, replaced or wrapped.
    pub(crate) fn apply(&self, generated: String) -> String {
        match self {
            SystemPrompt::Replace(text) => text.clone(),
            SystemPrompt::Wrap { prefix, suffix } => {
                let mut parts = Vec::new();
                if !prefix.is_empty() {
                    parts.push(prefix.as_str());
                }
                parts.push(generated.as_str());
                if !suffix.is_empty() {
                    parts.push(suffix.as_str());
                }
                parts.join("\n\n")
            }
        }
    }
}

/// A prompt card: its name, byte budget and text.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) struct PromptCard {
    /// The card's `name:`.
    pub name: String,
    /// The card's `budget_bytes:` (0 when missing).
    pub budget_bytes: usize,
    /// The text after the header.
    pub body: String,
}

impl PromptCard {
    /// Parses a card: a `---` header of `key: value` lines, a closing `---`, then the text
    /// (its final newline dropped).
    pub(crate) fn parse(raw: &str) -> PromptCard {
        let mut name = String::new();
        let mut budget_bytes = 0;
        let mut body = raw;
        if let Some(rest) = raw.strip_prefix("---\n")
            && let Some(end) = rest.find("\n---\n")
        {
            for line in rest[..end].lines() {
                if let Some((k, v)) = line.split_once(':') {
                    match k.trim() {
                        "name" => name = v.trim().to_string(),
                        "budget_bytes" => budget_bytes = v.trim().parse().unwrap_or(0),
                        _ => {}
                    }
                }
            }
            body = &rest[end + 5..];
        }
        PromptCard { name, budget_bytes, body: body.strip_suffix('\n').unwrap_or(body).to_string() }
    }
}

/// The agent prompt cards compiled into this crate.
#[cfg(test)]
pub(crate) fn cards() -> Vec<PromptCard> {
    [
        REFERENCE,
        SINGLE_SHOT,
        MULTI_TURN,
        RETURN_EXPLICIT,
        OUTPUT_FORMAT,
        OUTPUT_FORMAT_TOOL_CALL,
        TEXT_MODE,
        COMPACT_REFERENCE,
    ]
    .into_iter()
    .map(PromptCard::parse)
    .collect()
}

fn body(raw: &str) -> String {
    PromptCard::parse(raw).body
}

/// The system prompt: language reference and behaviour, then the output format (fenced
/// blocks, or the `lisp_eval` tool when `tool_call`).
pub(crate) fn system_prompt(max_turns: u32, tool_call: bool) -> String {
    let mut parts = vec![body(REFERENCE)];
    if max_turns <= 1 {
        parts.push(body(SINGLE_SHOT));
    } else {
        parts.push(body(MULTI_TURN));
        parts.push(body(RETURN_EXPLICIT));
    }
    parts.push(body(if tool_call { OUTPUT_FORMAT_TOOL_CALL } else { OUTPUT_FORMAT }));
    parts.join("\n\n")
}

/// The text-mode system prompt; in combined mode followed by the compact PTC-Lisp card
/// and the inventory of tools programs may call.
pub(crate) fn text_system_prompt(combined: Option<&[ToolLine<'_>]>) -> String {
    let mut parts = vec![body(TEXT_MODE)];
    if let Some(tools) = combined {
        parts.push(body(COMPACT_REFERENCE));
        parts.push(program_tools_inventory(tools));
    }
    parts.join("\n\n")
}

/// `;; Program-callable tools` and one line per tool (or that there are none).
fn program_tools_inventory(tools: &[ToolLine<'_>]) -> String {
    let mut lines = vec![";; Program-callable tools (inside lisp_eval):".to_string()];
    if tools.is_empty() {
        lines.push(";; none - lisp_eval works on data/ and on values you pass in".into());
    }
    for t in tools {
        let head = match t.signature {
            Some(sig) => format!("tool/{}{}", t.name, plain_signature(sig)),
            None => format!("tool/{}", t.name),
        };
        lines.push(if t.description.is_empty() { head } else { format!("{head}  ; {}", t.description) });
    }
    lines.join("\n")
}

/// The first user message of a text agent: the data inventory (combined mode), the
/// expected output as JSON (structured signatures), the mission.
pub(crate) fn text_user_message(view: &MissionView<'_>, combined: bool) -> String {
    let mut sections = Vec::new();
    if combined && !view.context.is_empty() {
        let data_only = MissionView {
            tools: Vec::new(),
            catalog: &[],
            context: view.context,
            context_types: view.context_types,
            context_descriptions: view.context_descriptions,
            signature: None,
            field_descriptions: view.field_descriptions,
            max_tool_calls: None,
            mission: String::new(),
            prompt_limit: view.prompt_limit,
            prelude: view.prelude,
        };
        let inv = namespace(&data_only);
        if let Some(i) = inv.find(";; === data/ ===") {
            sections.push(inv[i..].to_string());
        }
    }
    if combined && let Some(p) = prelude_section(view.prelude, &view.prompt_limit) {
        sections.push(p);
    }
    if let Some(sig) = view.signature
        && let Some(schema) = json_answer_schema(&sig.output)
    {
        let mut s = format!(
            "# Expected Output\n\nAnswer with JSON only, matching `{}`.\nJSON Schema: {schema}",
            render_type(&sig.output, KeyStyle::AsWritten)
        );
        for (field, d) in view.field_descriptions {
            s.push_str(&format!("\n  - `{field}`: {d}"));
        }
        sections.push(s);
    }
    sections.push(view.mission.clone());
    sections.join("\n\n")
}

/// The JSON Schema a structured answer follows (`None` for text and scalar answers);
/// lists are wrapped as `{"items": [...]}` because structured output must be an object.
pub(crate) fn json_answer_schema(t: &Type) -> Option<serde_json::Value> {
    match t.required() {
        Type::Object { .. } | Type::Map | Type::List(_) => Some(ptc_signature::schema::output_schema(t)),
        _ => None,
    }
}

/// What the first user message is built from.
pub(crate) struct MissionView<'a> {
    pub(crate) tools: Vec<ToolLine<'a>>,
    pub(crate) catalog: &'a [CatalogEntry],
    pub(crate) context: &'a PMap,
    pub(crate) context_types: Option<&'a [ptc_signature::Field]>,
    pub(crate) context_descriptions: &'a BTreeMap<String, String>,
    pub(crate) signature: Option<&'a Signature>,
    pub(crate) field_descriptions: &'a BTreeMap<String, String>,
    pub(crate) max_tool_calls: Option<u32>,
    pub(crate) mission: String,
    pub(crate) prompt_limit: PromptLimit,
    pub(crate) prelude: &'a Prelude,
}

/// One callable tool as the prompt shows it.
#[derive(Clone, Copy)]
pub(crate) struct ToolLine<'a> {
    pub(crate) name: &'a str,
    pub(crate) signature: Option<&'a Signature>,
    pub(crate) description: &'a str,
}

pub(crate) fn first_user_message(view: &MissionView<'_>) -> String {
    let mut sections = vec![inventory(view)];
    sections.push(format!("<mission>\n{}\n</mission>", view.mission));
    sections.join("\n\n")
}

/// The tool and data inventory, the expected output and the tool-call constraint (the
/// first user message without its mission; with history compression, part of the
/// system prompt).
pub(crate) fn inventory(view: &MissionView<'_>) -> String {
    let mut sections = vec![namespace(view)];
    if let Some(p) = prelude_section(view.prelude, &view.prompt_limit) {
        sections.push(p);
    }
    if let Some(sig) = view.signature {
        sections.push(expected_output(sig, view.field_descriptions));
    }
    if let Some(n) = view.max_tool_calls {
        sections.push(format!("Constraint: maximum {n} tool calls per turn. Plan efficiently."));
    }
    sections.join("\n\n")
}

/// `(query string, limit int) -> [{id int}]`: a signature without the type colons.
fn plain_signature(sig: &Signature) -> String {
    ptc_signature::render::render(sig, KeyStyle::AsWritten).replace(':', "")
}

fn namespace(view: &MissionView<'_>) -> String {
    let mut lines = vec![";; === tools ===".to_string()];
    if view.tools.is_empty() {
        lines.push(";; No tools available".into());
    }
    for t in &view.tools {
        let head = match t.signature {
            Some(sig) => format!("tool/{}{}", t.name, plain_signature(sig)),
            None => format!("tool/{}", t.name),
        };
        lines.push(if t.description.is_empty() { head } else { format!("{head}  ; {}", t.description) });
        let example = match t.signature {
            Some(sig) if !sig.inputs.is_empty() => {
                let args: Vec<String> =
                    sig.inputs.iter().map(|f| format!(":{} ...", f.name.replace('_', "-"))).collect();
                format!(";; Example: (tool/{} {{{}}})", t.name, args.join(" "))
            }
            Some(_) => format!(";; Example: (tool/{} {{}})", t.name),
            None => format!(";; Call with named args: (tool/{} {{:key value}})", t.name),
        };
        lines.push(example);
    }
    if !view.catalog.is_empty() {
        lines.push(String::new());
        lines.push(";; === tool catalog (for planning only; these cannot be called) ===".into());
        for c in view.catalog {
            let sig = c.signature.as_deref().and_then(|s| ptc_signature::parse(s).ok()).map(|s| plain_signature(&s));
            let head = format!("{}{}", c.name, sig.unwrap_or_default());
            lines.push(if c.description.is_empty() { head } else { format!("{head}  ; {}", c.description) });
        }
    }
    if !view.context.is_empty() {
        lines.push(String::new());
        lines.push(";; === data/ ===".into());
        for (k, v) in view.context.iter() {
            let Some(name) = k.as_str() else { continue };
            let declared = view
                .context_types
                .and_then(|fs| fs.iter().find(|f| f.name.replace('-', "_") == name.replace('-', "_")))
                .map(|f| render_type(&f.ty, KeyStyle::Lisp));
            let label = declared.unwrap_or_else(|| type_label(v));
            let (shown, note) = sample(v, &view.prompt_limit);
            let mut line = format!("{:<30}; {label}, sample: {shown}", format!("data/{name}"));
            if let Some(d) = view.context_descriptions.get(name) {
                line.push_str(&format!(" -- {d}"));
            }
            lines.push(line);
            if let Some(note) = note {
                lines.push(format!(";; (data/{name}: {note}; read it in a program for the rest)"));
            }
        }
    }
    lines.join("\n")
}

/// Definitions the prelude section lists per namespace; the rest are counted, and
/// `apropos` finds them.
const PRELUDE_NAMES_PER_NAMESPACE: usize = 20;

/// Characters of a definition's docstring the prelude section shows (its first line).
const PRELUDE_DOC_CHARS: usize = 160;

/// The prelude section: the definitions programs start with, grouped by namespace (bare
/// names first), each with what it is and the first line of its docstring; `None` when
/// nothing is listed.
///
/// ```text
/// ;; === prelude: defined before your program runs; call them as written ===
/// ;; crm - Customer helpers
/// crm/vip?                      ; function - True for big spenders.
/// crm/vip-limit                 ; int, sample: 100
/// ;; (doc name) shows a definition's documentation; (apropos "word") searches them
/// ```
fn prelude_section(prelude: &Prelude, limit: &PromptLimit) -> Option<String> {
    let mut groups: BTreeMap<&str, Vec<(&str, &Value)>> = BTreeMap::new();
    for (name, v) in prelude.listed() {
        let ns = name.split_once('/').map_or("", |(ns, _)| ns);
        groups.entry(ns).or_default().push((name, v));
    }
    if groups.is_empty() {
        return None;
    }
    let mut lines = vec![";; === prelude: defined before your program runs; call them as written ===".to_string()];
    for (ns, entries) in &groups {
        if !ns.is_empty() {
            lines.push(match prelude.namespace_text(ns).map(one_line).filter(|d| !d.is_empty()) {
                Some(doc) => format!(";; {ns} - {doc}"),
                None => format!(";; {ns}"),
            });
        }
        for (name, v) in entries.iter().take(PRELUDE_NAMES_PER_NAMESPACE) {
            let what = match v {
                Value::Func(_) => "function".to_string(),
                other => format!("{}, sample: {}", type_label(other), sample(other, limit).0),
            };
            let mut line = format!("{name:<30}; {what}");
            if let Some(doc) = prelude.memory().doc(name).map(one_line).filter(|d| !d.is_empty()) {
                line.push_str(&format!(" - {doc}"));
            }
            lines.push(line);
        }
        if entries.len() > PRELUDE_NAMES_PER_NAMESPACE {
            let more = entries.len() - PRELUDE_NAMES_PER_NAMESPACE;
            let search = if ns.is_empty() { String::new() } else { format!(": (apropos \"{ns}\" {{:limit 50}})") };
            lines.push(format!(";; ...and {more} more{search}"));
        }
    }
    lines.push(";; (doc name) shows a definition's documentation; (apropos \"word\") searches them".into());
    Some(lines.join("\n"))
}

/// The first line of `text`, cut to [`PRELUDE_DOC_CHARS`] characters.
fn one_line(text: &str) -> String {
    let first = text.trim().lines().next().unwrap_or_default().trim();
    match first.char_indices().nth(PRELUDE_DOC_CHARS) {
        Some((at, _)) => format!("{}...", &first[..at]),
        None => first.to_string(),
    }
}

/// A short description of a value's shape: `list of 3 maps`, `map with 2 keys`, `string`.
fn type_label(v: &Value) -> String {
    match v {
        Value::Vector(items) | Value::List(items) => {
            let kinds: std::collections::BTreeSet<&str> = items.iter().map(Value::type_name).collect();
            match (items.len(), kinds.len()) {
                (0, _) => "empty list".into(),
                (n, 1) => format!("list of {n} {}", kinds.iter().next().map(|k| plural(k)).unwrap_or_default()),
                (n, _) => format!("list of {n} mixed items"),
            }
        }
        Value::Map(m) => format!("map with {} key{}", m.len(), if m.len() == 1 { "" } else { "s" }),
        other => other.type_name().to_string(),
    }
}

fn plural(kind: &str) -> String {
    match kind {
        "map" | "string" | "keyword" | "vector" | "set" | "boolean" => format!("{kind}s"),
        other => other.to_string(),
    }
}

/// A sample of a value within `limit` (items per list, bytes per string and per line),
/// and the system note saying what was cut, if anything.
fn sample(v: &Value, limit: &PromptLimit) -> (String, Option<String>) {
    let opts =
        PrintOptions { limit: Some(limit.list), printable_limit: Some(limit.string), max_bytes: limit.string * 4 + 64 };
    let (mut text, _) = to_clojure_with(v, &opts);
    let mut cut_line = false;
    if text.len() > limit.string {
        let mut end = limit.string;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
        cut_line = true;
    }
    let note = match v {
        Value::Vector(items) | Value::List(items) if items.len() > limit.list => {
            Some(format!("showing {} of {} items", limit.list, items.len()))
        }
        Value::Str(s) if s.len() > limit.string => Some(format!("showing about {} of {} bytes", limit.string, s.len())),
        _ if cut_line => Some(format!("sample cut at {} bytes", limit.string)),
        _ => None,
    };
    (text, note)
}

fn expected_output(sig: &Signature, descriptions: &BTreeMap<String, String>) -> String {
    let mut out = format!(
        "# Expected Output\n\nYour final answer must match this format: `{}`",
        render_type(&sig.output, KeyStyle::Lisp)
    );
    if !descriptions.is_empty() {
        out.push_str("\n\nField descriptions:");
        for (field, d) in descriptions {
            out.push_str(&format!("\n  - `{field}`: {d}"));
        }
    }
    out.push_str(&format!("\n\nCall `(return {})` when complete.", example(&sig.output)));
    out
}

/// An example value of a type, written as PTC-Lisp.
fn example(t: &Type) -> String {
    match t {
        Type::Int => "42".into(),
        Type::Float => "3.14".into(),
        Type::String => "\"result\"".into(),
        Type::Bool => "true".into(),
        Type::Keyword => ":ok".into(),
        Type::Datetime => "\"2026-01-15T10:00:00Z\"".into(),
        Type::Any => "\"result\"".into(),
        Type::Map => "{}".into(),
        Type::List(_) => "[]".into(),
        Type::Optional(inner) => example(inner),
        Type::Object { fields, .. } => {
            let parts: Vec<String> =
                fields.iter().map(|f| format!(":{} {}", f.name.replace('_', "-"), example(&f.ty))).collect();
            format!("{{{}}}", parts.join(" "))
        }
        // A type added to ptc-signature later: a string is as good an example as any.
        _ => "\"result\"".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_parse_with_their_budgets() {
        let cards = cards();
        assert_eq!(cards.len(), 8);
        for c in &cards {
            assert!(!c.name.is_empty(), "a card without a name");
            assert!(c.budget_bytes > 0, "{} has no budget", c.name);
            assert!(c.body.len() <= c.budget_bytes, "{} is {} bytes, budget {}", c.name, c.body.len(), c.budget_bytes);
            assert!(!c.body.starts_with("---"));
        }
    }

    #[test]
    fn system_prompt_profiles() {
        let single = system_prompt(1, false);
        assert!(single.contains("<single_shot>") && !single.contains("<multi_turn_rules>"));
        let multi = system_prompt(5, false);
        assert!(multi.contains("<multi_turn_rules>") && multi.contains("<return_rules>"));
        assert!(multi.ends_with("</output_format>"));
    }

    #[test]
    fn examples_follow_the_type() {
        let sig = ptc_signature::parse("{order_count :int, top [:string], ok :bool?}").ok();
        let sig = sig.map(|s| example(&s.output));
        assert_eq!(sig.as_deref(), Some("{:order-count 42 :top [] :ok true}"));
    }
}
