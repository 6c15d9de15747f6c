//! The upstream catalog as text: the `lisp_eval` description tail, `doc` texts, argument
//! rendering, and the discovery forms (`dir`, `doc`, `apropos`, `meta`).
//!
//! Argument rendering rules (seed 002): required args first in the schema's `required`
//! order, then optional args alphabetically with a `?`; `enum<type>` when every enum value
//! shares one primitive type (else bare `enum`), `const<json>` (detected by key presence,
//! so falsy consts count), constraints before the primitive type; complex types bare.

use std::sync::Arc;

use ptc_lisp_eval::search::{score, tokens};
use ptc_lisp_eval::{CallCx, Discovery, ToolError, Value};
use serde_json::{Value as Json, json};

use super::{CatalogMode, Inner, ToolInfo, Upstream};

/// Longest one-line description in `dir` lists and inline catalogs.
const LINE_CHARS: usize = 120;

/// Prose normalised to one line and capped.
pub(crate) fn one_line(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        format!("{}…", flat.chars().take(max.saturating_sub(1)).collect::<String>())
    } else {
        flat
    }
}

fn primitive(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

/// The type label of one argument schema.
pub(crate) fn type_label(schema: &Json) -> String {
    let Json::Object(s) = schema else { return "any".into() };
    if let Some(c) = s.get("const") {
        return format!("const<{c}>");
    }
    if let Some(Json::Array(values)) = s.get("enum") {
        let first = values.first().map(primitive);
        return match first {
            Some(t) if values.iter().all(|v| primitive(v) == t) => format!("enum<{t}>"),
            _ => "enum".into(),
        };
    }
    match s.get("type") {
        Some(Json::String(t)) => t.clone(),
        Some(Json::Array(ts)) => {
            let names: Vec<&str> = ts.iter().filter_map(Json::as_str).filter(|t| *t != "null").collect();
            match names.as_slice() {
                [one] => one.to_string(),
                _ => "any".into(),
            }
        }
        _ => {
            if s.contains_key("properties") {
                "object".into()
            } else if s.contains_key("items") {
                "array".into()
            } else {
                "any".into()
            }
        }
    }
}

/// `(name, label, required)` in rendering order.
pub(crate) fn ordered_args(input_schema: &Json) -> Vec<(String, String, bool)> {
    let props = input_schema.get("properties").and_then(Json::as_object);
    let required: Vec<String> = input_schema
        .get("required")
        .and_then(Json::as_array)
        .map(|r| r.iter().filter_map(Json::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for r in &required {
        let schema = props.and_then(|p| p.get(r)).cloned().unwrap_or(Json::Null);
        if !out.iter().any(|(n, _, _): &(String, String, bool)| n == r) {
            out.push((r.clone(), type_label(&schema), true));
        }
    }
    if let Some(p) = props {
        let mut optional: Vec<&String> = p.keys().filter(|k| !required.contains(k)).collect();
        optional.sort();
        for k in optional {
            out.push((k.clone(), type_label(&p[k]), false));
        }
    }
    out
}

/// `{:path string :head integer?}`.
pub(crate) fn render_args(input_schema: &Json) -> String {
    let parts: Vec<String> = ordered_args(input_schema)
        .into_iter()
        .map(|(n, t, req)| format!(":{n} {t}{}", if req { "" } else { "?" }))
        .collect();
    format!("{{{}}}", parts.join(" "))
}

fn example_value(schema: &Json) -> String {
    if let Some(c) = schema.get("const") {
        return c.to_string();
    }
    if let Some(Json::Array(v)) = schema.get("enum")
        && let Some(first) = v.first()
    {
        return first.to_string();
    }
    match type_label(schema).as_str() {
        "string" => "\"...\"".into(),
        "integer" => "1".into(),
        "number" => "1.0".into(),
        "boolean" => "true".into(),
        "array" => "[]".into(),
        "object" => "{}".into(),
        "null" => "nil".into(),
        _ => "\"...\"".into(),
    }
}

fn lisp_string(s: &str) -> String {
    let mut out = String::new();
    ptc_lisp_eval::printer::quote_str(s, &mut out);
    out
}

/// The ready-to-edit call form with the required args filled with placeholders.
pub(crate) fn call_example(server: &str, t: &ToolInfo) -> String {
    let props = t.input_schema.get("properties");
    let args: Vec<String> = ordered_args(&t.input_schema)
        .into_iter()
        .filter(|(_, _, req)| *req)
        .map(|(n, _, _)| {
            let schema = props.and_then(|p| p.get(&n)).cloned().unwrap_or(Json::Null);
            format!(":{n} {}", example_value(&schema))
        })
        .collect();
    format!(
        "(tool/call {{:server {} :tool {} :args {{{}}}}})",
        lisp_string(server),
        lisp_string(&t.name),
        args.join(" ")
    )
}

/// `Result<...>`: the payload shape from the output schema when there is one.
pub(crate) fn result_shape(t: &ToolInfo) -> String {
    fn shape(s: &Json, depth: usize) -> String {
        let label = type_label(s);
        if depth > 2 {
            return label;
        }
        match label.as_str() {
            "object" => match s.get("properties").and_then(Json::as_object) {
                Some(p) if !p.is_empty() => {
                    let mut keys: Vec<&String> = p.keys().collect();
                    keys.sort();
                    let inner: Vec<String> =
                        keys.iter().map(|k| format!("\"{k}\" {}", shape(&p[*k], depth + 1))).collect();
                    format!("{{{}}}", inner.join(" "))
                }
                _ => "object".into(),
            },
            "array" => match s.get("items") {
                Some(i) => format!("[{}]", shape(i, depth + 1)),
                None => "array".into(),
            },
            other => other.to_string(),
        }
    }
    if t.output_schema.is_object() {
        format!("Result<{}>", shape(&t.output_schema, 0))
    } else {
        "Result<json|text>".into()
    }
}

/// The `doc` text of one upstream tool.
pub(crate) fn doc_text(server: &str, t: &ToolInfo) -> String {
    let required: Vec<String> =
        ordered_args(&t.input_schema).into_iter().filter(|(_, _, r)| *r).map(|(n, _, _)| n).collect();
    let desc =
        if t.description.trim().is_empty() { "(no description)".to_string() } else { t.description.trim().to_string() };
    format!(
        "{server}/{name}\n{desc}\n\nArgs: {args}\nRequired args: {req}\n\nCall:\n{call}\n\nReturns: {ret}\nUse `(:value r)` after checking `(:ok r)`.",
        name = t.name,
        args = render_args(&t.input_schema),
        req = if required.is_empty() { "none".to_string() } else { required.join(", ") },
        call = call_example(server, t),
        ret = result_shape(t),
    )
}

/// The `meta` map of one upstream tool.
pub(crate) fn meta_json(server: &str, t: &ToolInfo) -> Json {
    let mut m = json!({
        "server": server,
        "name": t.name,
        "description": t.description,
        "input_schema": t.input_schema,
        "output_schema": t.output_schema,
        "annotations": t.annotations,
    });
    if let Some(op) = &t.operation_id {
        m["_ptc"] = json!({"operationId": op});
    }
    m
}

/// A server's description for `(tool/servers)`: configured text, else transport and size.
pub(crate) fn server_description(rt: &Inner, u: &Upstream) -> String {
    match &u.description {
        Some(d) => one_line(d, LINE_CHARS),
        None => {
            let n = rt.visible(u).map(|t| format!(" {} tools.", t.len())).unwrap_or_default();
            format!("{} upstream.{n}", u.transport_name())
        }
    }
}

fn servers_transcript(rt: &Inner) -> String {
    let rows: Vec<String> = rt
        .upstreams
        .values()
        .map(|u| {
            let tools = rt.visible(u);
            format!(
                "{{\"name\" {} \"description\" {} \"tool_count\" {} \"catalog_loaded\" {}}}",
                lisp_string(&u.name),
                lisp_string(&server_description(rt, u)),
                tools.as_ref().map(|t| t.len().to_string()).unwrap_or_else(|| "nil".into()),
                tools.is_some()
            )
        })
        .collect();
    format!("(tool/servers)\n=> [{}]", rows.join("\n    "))
}

fn dir_line(t: &ToolInfo, with_desc: bool) -> String {
    let d = one_line(&t.description, LINE_CHARS);
    if with_desc && !d.is_empty() { format!("{} - {d}", t.name) } else { t.name.clone() }
}

fn inline_transcripts(rt: &Inner, with_desc: bool) -> String {
    let mut out = String::new();
    let mut first_doc: Option<String> = None;
    for u in rt.upstreams.values() {
        let Some(tools) = rt.visible(u) else { continue };
        let mut sorted: Vec<&ToolInfo> = tools.iter().collect();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        let lines: Vec<String> = sorted.iter().take(20).map(|t| lisp_string(&dir_line(t, with_desc))).collect();
        out.push_str(&format!("\n\n(dir {} {{:limit 20}})\n=> [{}]", lisp_string(&u.name), lines.join("\n    ")));
        if first_doc.is_none()
            && let Some(t) = sorted.first()
        {
            first_doc = Some(format!(
                "\n\n(doc {})\n=> {}",
                lisp_string(&format!("{}/{}", u.name, t.name)),
                lisp_string(&doc_text(&u.name, t))
            ));
        }
    }
    out.push_str(&first_doc.unwrap_or_default());
    out
}

/// The text appended to the `lisp_eval` description.
pub(crate) fn description(rt: &Inner) -> String {
    let head = "Upstream tools: programs call configured upstream MCP servers and APIs with \
(tool/call {:server \"s\" :tool \"t\" :args {...}}). Find tools with (apropos \"word\"), \
(dir \"server\") and (doc \"server/tool\"); call tool/call only with tools you found. A call returns \
{:ok true :value v :value_kind :json|:text|:none} or {:ok false :reason :kw :message \"...\"}: check (:ok r) \
before (:value r), and (filter :ok batch) after pmap. Return only the small joined answer.\n\nUpstream discovery snapshot:\n\n";
    let servers = servers_transcript(rt);
    let total: usize = rt.upstreams.values().map(|u| rt.visible(u).map(|t| t.len()).unwrap_or(0)).sum();
    let all_known = rt.upstreams.values().all(|u| rt.visible(u).is_some());
    let o = &rt.options;
    let inline = match o.catalog_mode {
        CatalogMode::Lazy => None,
        CatalogMode::Inline => Some(inline_transcripts(rt, true)),
        CatalogMode::Auto => {
            if !all_known || total > o.catalog_inline_max_tools {
                None
            } else {
                let full = inline_transcripts(rt, true);
                if full.chars().count() <= o.catalog_inline_max_chars {
                    Some(full)
                } else {
                    let names = inline_transcripts(rt, false);
                    (names.chars().count() <= o.catalog_inline_max_chars).then_some(names)
                }
            }
        }
    };
    let tail = inline.unwrap_or_else(|| {
        "\n\nThe tool lists are not shown here: use (dir \"server\") to list a server's tools and (doc \"server/tool\") for its arguments.".to_string()
    });
    rt.redactor.scrub(&format!("{head}{servers}{tail}"))
}

fn opt<'a>(options: &'a Value, key: &str) -> Option<&'a Value> {
    match options {
        Value::Map(m) => m.get(&Value::kw(key)).or_else(|| m.get(&Value::str(key))),
        _ => None,
    }
}

fn int_opt(options: &Value, key: &str, default: i64, lo: i64, hi: i64) -> Result<i64, ToolError> {
    match options {
        Value::Nil | Value::Map(_) => {}
        other => {
            return Err(ToolError::invalid_args(format!(
                "options must be a map like {{:limit 10}}, got {}",
                ptc_lisp_eval::to_clojure(other)
            )));
        }
    }
    match opt(options, key) {
        None | Some(Value::Nil) => Ok(default),
        Some(Value::Int(n)) if (lo..=hi).contains(n) => Ok(*n),
        Some(v) => Err(ToolError::invalid_args(format!(
            ":{key} must be an integer between {lo} and {hi}, got {}",
            ptc_lisp_eval::to_clojure(v)
        ))),
    }
}

fn split_ref(name: &str) -> Option<(&str, &str)> {
    let (s, t) = name.split_once('/')?;
    (!s.is_empty() && !t.is_empty()).then_some((s, t))
}

fn find_tool<'a>(tools: &'a [ToolInfo], server: &str, tool: &str) -> Result<&'a ToolInfo, ToolError> {
    tools.iter().find(|t| t.name == tool).ok_or_else(|| {
        ToolError::invalid_args(format!("no tool '{tool}' in upstream '{server}'; (dir \"{server}\") lists its tools"))
    })
}

/// Caps a list answer entry by entry at `max` bytes of JSON.
fn capped_list(items: Vec<String>, max: usize) -> Value {
    let mut used = 2;
    let mut out = Vec::new();
    for i in items {
        let size = i.len() + 4;
        if used + size > max {
            break;
        }
        used += size;
        out.push(Value::str(i));
    }
    Value::vector(out)
}

fn searchable(t: &ToolInfo) -> String {
    let keys: Vec<String> = ordered_args(&t.input_schema).into_iter().map(|(n, _, _)| n).collect();
    format!(
        "{} {} {}",
        t.description,
        keys.join(" "),
        if t.annotations.is_null() { String::new() } else { t.annotations.to_string() }
    )
}

fn apropos(rt: &Inner, q: &str, options: &Value, cx: &CallCx<'_>) -> Result<Value, ToolError> {
    if q.trim().is_empty() {
        return Err(ToolError::invalid_args("apropos: the query is empty; write (apropos \"read\")"));
    }
    let limit = int_opt(options, "limit", 8, 1, 50)? as usize;
    let load = match opt(options, "load") {
        None | Some(Value::Nil) => false,
        Some(Value::Bool(b)) => *b,
        Some(v) => {
            return Err(ToolError::invalid_args(format!(
                ":load must be true or false, got {}",
                ptc_lisp_eval::to_clojure(v)
            )));
        }
    };
    let query = tokens(q);
    let mut tool_hits: Vec<(i64, String, String, String)> = Vec::new();
    let mut server_hints: Vec<(i64, String, String)> = Vec::new();
    for u in rt.upstreams.values() {
        let tools = match rt.visible(u) {
            Some(t) => Some(t),
            None if load => rt.load_tools(u, cx).ok(),
            None => None,
        };
        match tools {
            Some(tools) => {
                for t in tools.iter() {
                    let s = score(&query, &format!("{} {}", u.name, t.name), &searchable(t));
                    if s > 0 {
                        tool_hits.push((s, u.name.clone(), t.name.clone(), one_line(&t.description, LINE_CHARS)));
                    }
                }
            }
            None if !load => {
                let s = score(&query, &u.name, u.description.as_deref().unwrap_or(""));
                server_hints.push((s.max(1), u.name.clone(), server_description(rt, u)));
            }
            None => {}
        }
    }
    tool_hits.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| (&a.1, &a.2).cmp(&(&b.1, &b.2))));
    server_hints.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut lines: Vec<String> = tool_hits
        .into_iter()
        .map(|(_, s, t, d)| if d.is_empty() { format!("{s}/{t}") } else { format!("{s}/{t} - {d}") })
        .collect();
    lines.extend(
        server_hints
            .into_iter()
            .map(|(_, s, d)| format!("{s} - {d} (catalog not loaded: (dir \"{s}\") lists its tools)")),
    );
    lines.truncate(limit);
    Ok(capped_list(lines, rt.options.max_catalog_result_bytes))
}

/// Answers one discovery question about upstreams.
pub(crate) fn discover(rt: &Inner, query: &Discovery<'_>, cx: &CallCx<'_>) -> Result<Value, ToolError> {
    let max = rt.options.max_catalog_result_bytes;
    let upstream = |name: &str| -> Result<&Arc<Upstream>, ToolError> {
        rt.upstreams.get(name).ok_or_else(|| ToolError::invalid_args(format!("no upstream '{name}' configured")))
    };
    let answer = match query {
        Discovery::Dir { namespace, options } => {
            let u = upstream(namespace)?;
            let limit = int_opt(options, "limit", 50, 1, 200)? as usize;
            let offset = int_opt(options, "offset", 0, 0, i64::MAX)? as usize;
            let tools = rt.load_tools(u, cx)?;
            let mut sorted: Vec<&ToolInfo> = tools.iter().collect();
            sorted.sort_by(|a, b| a.name.cmp(&b.name));
            let lines = sorted.into_iter().skip(offset).take(limit).map(|t| dir_line(t, true)).collect();
            capped_list(lines, max)
        }
        Discovery::Doc { name } | Discovery::Meta { name } => {
            let Some((s, t)) = split_ref(name) else {
                return Err(ToolError::invalid_args(format!(
                    "write a tool reference as \"server/tool\", got {name:?}"
                )));
            };
            let u = upstream(s)?;
            let tools = rt.load_tools(u, cx)?;
            let tool = find_tool(&tools, s, t)?;
            let (value, size) = if matches!(query, Discovery::Doc { .. }) {
                let text = doc_text(s, tool);
                let n = text.len();
                (Value::str(text), n)
            } else {
                let j = meta_json(s, tool);
                let n = j.to_string().len();
                (ptc_lisp_eval::json::from_json(&j), n)
            };
            if size > max {
                return Err(ToolError::data(
                    "response_too_large",
                    format!("the description of {name} is {size} bytes, over the {max}-byte discovery cap"),
                ));
            }
            value
        }
        Discovery::Apropos { query, options } => apropos(rt, query, options, cx)?,
        _ => Value::Nil,
    };
    Ok(scrub_value(rt, answer))
}

fn scrub_value(rt: &Inner, v: Value) -> Value {
    if rt.redactor.is_empty() {
        return v;
    }
    match ptc_lisp_eval::json::to_json(&v) {
        Ok(mut j) => {
            rt.redactor.scrub_json(&mut j);
            ptc_lisp_eval::json::from_json(&j)
        }
        Err(_) => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_follow_the_rules() {
        assert_eq!(type_label(&json!({"type": "string", "enum": ["open", "closed"]})), "enum<string>");
        assert_eq!(type_label(&json!({"enum": [1, "a"]})), "enum");
        assert_eq!(type_label(&json!({"type": "boolean", "const": false})), "const<false>");
        assert_eq!(type_label(&json!({"const": null})), "const<null>");
        assert_eq!(type_label(&json!({"const": ""})), "const<\"\">");
        assert_eq!(type_label(&json!({"const": 0})), "const<0>");
        assert_eq!(type_label(&json!({"type": "array", "items": {"type": "string"}})), "array");
    }

    #[test]
    fn required_then_optional_alphabetical() {
        let s = json!({"type": "object", "properties": {
            "z": {"type": "string"}, "b": {"type": "integer"}, "a": {"type": "number"}, "path": {"type": "string"}
        }, "required": ["path", "b"]});
        assert_eq!(render_args(&s), "{:path string :b integer :a number? :z string?}");
    }

    #[test]
    fn scores_names_above_descriptions() {
        let q = tokens("read");
        assert_eq!(score(&q, "fs read_text_file", ""), 12);
        assert_eq!(score(&q, "fs list", "read a directory"), 10);
        assert_eq!(score(&q, "fs readMe", ""), 12);
        assert_eq!(score(&q, "fs reader", ""), 7);
        assert_eq!(score(&q, "fs x", "unread"), 2);
    }
}
