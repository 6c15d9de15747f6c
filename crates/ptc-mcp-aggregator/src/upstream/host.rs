//! The program-facing [`Host`]: `tool/call`, `tool/servers` and discovery, with a
//! per-program call cap and a separate discovery budget.
//!
//! Programmer faults (bad call shape, unknown server or tool) raise; world faults
//! (upstream down, timeout, oversize, cap) come back as `{:ok false :reason ...}`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use ptc_lisp_eval::{CallCx, Discovery, Host, ToolCall, ToolError, ToolErrorKind, ToolSpec, Value};
use rmcp::model::CallToolResult;
use serde_json::{Map, Value as Json, json};

use super::fault::Fault;
use super::{Called, Inner, Upstream, catalog};

/// The `call` tool's description.
const CALL_DOC: &str = "Call a configured upstream tool: (tool/call {:server \"fs\" :tool \"read_text_file\" :args {:path \"a.txt\"}}). Returns {:ok true :value v :value_kind :json|:text|:none} or {:ok false :reason :kw :message \"...\"}; check (:ok r) before (:value r).";
/// The `servers` tool's description.
const SERVERS_DOC: &str = "(tool/servers) lists the configured upstreams: [{\"name\" ... \"description\" ... \"tool_count\" n \"catalog_loaded\" bool}].";

/// Serves one program's upstream calls and discovery.
pub struct ProgramHost {
    rt: Arc<Inner>,
    calls: AtomicU32,
    catalog_ops: AtomicU32,
}

impl std::fmt::Debug for ProgramHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramHost").field("calls", &self.calls).finish()
    }
}

fn shown(v: Option<&Value>) -> String {
    match v {
        None => "nil".into(),
        Some(v) => {
            let s = ptc_lisp_eval::to_clojure(v);
            if s.chars().count() > 80 { format!("{}...", s.chars().take(80).collect::<String>()) } else { s }
        }
    }
}

fn get<'a>(m: &'a Value, key: &str) -> Option<&'a Value> {
    match m {
        Value::Map(map) => map.get(&Value::str(key)),
        _ => None,
    }
}

/// A non-empty string (or symbol) argument.
fn name_arg(v: Option<&Value>) -> Option<String> {
    match v {
        Some(Value::Str(s)) | Some(Value::Symbol(s)) | Some(Value::Keyword(s)) if !s.trim().is_empty() => {
            Some(s.to_string())
        }
        _ => None,
    }
}

/// The common domain payload of a `structuredContent`: SDKs wrap non-object results as
/// `{"result": v}` (Python's MCPServer) and file servers answer `{"content": "text"}`; a
/// single-key object with one of those keys is unwrapped (a string becomes `:text`).
fn unwrap_payload(s: Json) -> (Json, &'static str) {
    if let Json::Object(m) = &s
        && m.len() == 1
        && let Some((k, v)) = m.iter().next()
        && (k == "result" || k == "content")
    {
        let kind = if v.is_string() { "text" } else { "json" };
        return (v.clone(), kind);
    }
    (s, "json")
}

/// Turns an MCP `tools/call` result into a payload, applying the response cap.
pub(crate) fn tag_mcp_result(result: CallToolResult, cap: usize) -> Result<Called, Fault> {
    let bytes = super::mcp_client::result_bytes(&result);
    if bytes > cap {
        return Err(Fault::new(
            "response_too_large",
            format!("the upstream's answer is {bytes} bytes, over the {cap}-byte cap (max_response_bytes)"),
        ));
    }
    let first_text = result.content.iter().find_map(|c| c.as_text().map(|t| t.text.clone()));
    if result.is_error == Some(true) {
        let msg = first_text.unwrap_or_else(|| "the tool reported an error (isError: true)".into());
        return Err(Fault::new("tool_error", msg.chars().take(2000).collect::<String>()));
    }
    let (value, kind) = if let Some(s) = result.structured_content {
        unwrap_payload(s)
    } else if let Some(t) = first_text {
        match serde_json::from_str::<Json>(&t) {
            Ok(j) => (j, "json"),
            Err(_) => (Json::String(t), "text"),
        }
    } else {
        (Json::Null, "none")
    };
    Ok(Called { value, kind, bytes, http_status: None })
}

impl ProgramHost {
    pub(crate) fn new(rt: Arc<Inner>) -> Self {
        ProgramHost { rt, calls: AtomicU32::new(0), catalog_ops: AtomicU32::new(0) }
    }

    fn upstream(&self, name: &str) -> Result<&Arc<Upstream>, ToolError> {
        self.rt.upstreams.get(name).ok_or_else(|| ToolError {
            kind: ToolErrorKind::UnknownTool,
            message: format!(
                "no upstream '{name}' configured; configured: {}",
                self.rt.upstreams.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        })
    }

    fn wait<T: Send + 'static>(
        &self,
        fut: impl std::future::Future<Output = T> + Send + 'static,
        cx: &CallCx<'_>,
        what: &str,
    ) -> Result<T, ToolError> {
        self.rt.wait_within(fut, cx, what)
    }

    fn tool_call(&self, args: &Value, cx: &CallCx<'_>) -> Result<Value, ToolError> {
        let Some(server) = name_arg(get(args, "server")) else {
            return Err(ToolError::invalid_args(format!(
                "tool/call requires :server (string), got {}",
                shown(get(args, "server"))
            )));
        };
        let upstream = self.upstream(&server)?.clone();
        let Some(tool) = name_arg(get(args, "tool")) else {
            return Err(ToolError::invalid_args(format!(
                "tool/call on upstream '{server}' requires :tool (string), got {}",
                shown(get(args, "tool"))
            )));
        };
        let call_args = match get(args, "args") {
            None | Some(Value::Nil) => Map::new(),
            Some(v @ Value::Map(_)) => match ptc_lisp_eval::json::to_json(v) {
                Ok(Json::Object(m)) => m,
                Ok(_) => Map::new(),
                Err(e) => {
                    return Err(ToolError::invalid_args(format!(
                        "tool '{server}.{tool}' rejected args: not JSON-encodable ({e})"
                    )));
                }
            },
            Some(other) => {
                return Err(ToolError::invalid_args(format!(
                    "tool '{server}.{tool}' rejected args: :args must be a map, got {}",
                    shown(Some(other))
                )));
            }
        };
        cx.record("server", json!(server));
        cx.record("tool", json!(tool));
        cx.record("transport", json!(upstream.transport_name()));
        if let Some(a) = upstream.auth_summary() {
            cx.record("auth", a);
        }
        let started = Instant::now();
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let max = self.rt.options.max_calls_per_program;
        let outcome = if n > max {
            Err(Fault::new(
                "cap_exhausted",
                format!(
                    "upstream call cap reached: at most {max} tool/call per program (max_upstream_calls_per_program)"
                ),
            ))
        } else {
            // an unknown tool on a healthy upstream whose catalog proves absence is a
            // programmer fault
            let out_of_scope = !self.rt.allows(&server, &tool);
            if out_of_scope || self.rt.visible(&upstream).is_some_and(|tools| !tools.iter().any(|t| t.name == tool)) {
                return Err(ToolError {
                    kind: ToolErrorKind::UnknownTool,
                    message: format!("no tool '{tool}' in upstream '{server}'; (dir \"{server}\") lists its tools"),
                });
            }
            let timeout = upstream.request_timeout().unwrap_or(self.rt.options.call_timeout);
            let u = upstream.clone();
            let t = tool.clone();
            self.wait(async move { u.call(&t, call_args, timeout).await }, cx, "call")?
        };
        cx.record("duration_ms", json!(started.elapsed().as_millis() as u64));
        match outcome {
            Ok(mut called) => {
                self.rt.redactor.scrub_json(&mut called.value);
                cx.record("status", json!("ok"));
                cx.record("result_bytes", json!(called.bytes));
                cx.record("oversize", json!(false));
                cx.record("value_kind", json!(called.kind));
                if let Some(s) = called.http_status {
                    cx.record("http_status", json!(s));
                }
                let value = ptc_lisp_eval::json::from_json(&called.value);
                Ok(Value::map([
                    (Value::kw("ok"), Value::Bool(true)),
                    (Value::kw("value"), value),
                    (Value::kw("value_kind"), Value::kw(called.kind)),
                ]))
            }
            Err(f) if f.reason == "invalid_args" => {
                cx.record("status", json!("error"));
                cx.record("reason", json!(ptc_lisp_eval::ErrorKind::InvalidToolArgs.as_str()));
                Err(ToolError::invalid_args(self.rt.redactor.scrub(&f.message)))
            }
            Err(f) => {
                let message = self.rt.redactor.scrub(&f.message);
                cx.record("status", json!("error"));
                cx.record("reason", json!(f.reason));
                cx.record("error", json!(message));
                let oversize = f.reason == "response_too_large";
                cx.record("oversize", json!(oversize));
                cx.record("result_bytes", Json::Null);
                tracing::debug!(upstream = %server, tool = %tool, reason = f.reason, "upstream call failed");
                Err(ToolError::data(f.reason, message))
            }
        }
    }

    /// Counts one discovery operation; past the budget it is a world fault (nil).
    fn catalog_op(&self) -> Result<(), ToolError> {
        let n = self.catalog_ops.fetch_add(1, Ordering::SeqCst) + 1;
        let max = self.rt.options.max_catalog_ops_per_program;
        if n > max {
            return Err(ToolError::data(
                "cap_exhausted",
                format!("discovery budget reached: at most {max} discovery operations per program"),
            ));
        }
        Ok(())
    }

    fn servers(&self, cx: &CallCx<'_>) -> Result<Value, ToolError> {
        if let Err(e) = self.catalog_op() {
            cx.record("catalog_op", json!("servers"));
            return Err(e);
        }
        let list: Vec<Json> = self
            .rt
            .upstreams
            .values()
            .map(|u| {
                let tools = self.rt.visible(u);
                json!({
                    "name": u.name,
                    "description": catalog::server_description(&self.rt, u),
                    "tool_count": tools.as_ref().map(|t| t.len()),
                    "catalog_loaded": tools.is_some(),
                })
            })
            .collect();
        Ok(ptc_lisp_eval::json::from_json(&Json::Array(list)))
    }
}

impl Host for ProgramHost {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec::named("call").describe(CALL_DOC), ToolSpec::named("servers").describe(SERVERS_DOC)]
    }

    fn call(&self, call: &ToolCall, cx: &CallCx<'_>) -> Result<Value, ToolError> {
        match call.name.as_str() {
            "call" => self.tool_call(&call.args, cx),
            "servers" => self.servers(cx),
            other => Err(ToolError {
                kind: ToolErrorKind::UnknownTool,
                message: format!(
                    "Unknown tool: {other}. Upstream tools are called with (tool/call {{:server ... :tool ...}})"
                ),
            }),
        }
    }

    fn discover(&self, query: &Discovery<'_>, cx: &CallCx<'_>) -> Option<Result<Value, ToolError>> {
        // only names that concern upstreams are answered; the rest go to the core library
        let relevant = match query {
            Discovery::Dir { namespace, .. } => self.rt.upstreams.contains_key(*namespace),
            Discovery::Doc { name } | Discovery::Meta { name } => {
                name.split_once('/').is_some_and(|(s, _)| self.rt.upstreams.contains_key(s))
            }
            Discovery::Apropos { .. } => true,
            _ => false,
        };
        if !relevant {
            return None;
        }
        if let Err(e) = self.catalog_op() {
            return Some(Err(e));
        }
        Some(catalog::discover(&self.rt, query, cx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_are_unwrapped() {
        assert_eq!(unwrap_payload(json!({"result": [1, 2]})), (json!([1, 2]), "json"));
        assert_eq!(unwrap_payload(json!({"content": "body"})), (json!("body"), "text"));
        assert_eq!(unwrap_payload(json!({"items": []})), (json!({"items": []}), "json"));
        assert_eq!(unwrap_payload(json!({"result": 1, "x": 2})), (json!({"result": 1, "x": 2}), "json"));
    }
}
