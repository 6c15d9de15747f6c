//! Upstream tools offered to a model natively (the agent loop's `text` and `combined`
//! modes): one [`Tool`] per tool in scope, named `server__tool`, whose call goes through
//! the same `tool/call` path as a program's, so caps, timeouts, redaction and world
//! faults are the same. A world fault (upstream down, timeout, oversize) is a tool error
//! the model reads; it never ends the mission.

use ptc_lisp_eval::{CallCx, Cancel, Host, ToolCall, Value};
use ptc_subagent::{Exposure, Tool, ToolError};
use serde_json::Value as Json;

use crate::upstream::UpstreamRuntime;

/// The native name of `server`'s `tool`: `server__tool`, every character outside
/// `[A-Za-z0-9_-]` written as `_` (the loop's and the vendors' tool-name rule).
pub fn native_name(server: &str, tool: &str) -> String {
    let clean =
        |s: &str| s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect::<String>();
    let name = format!("{}__{}", clean(server), clean(tool));
    if name.starts_with(|c: char| c.is_ascii_alphabetic()) { name } else { format!("u_{name}") }
}

/// The record of the upstream calls models made natively (`server__tool`), in order, each
/// an `upstream_calls` entry with `"exposure": "native"`. Clones share one record.
#[derive(Debug, Clone, Default)]
pub struct NativeCalls(std::sync::Arc<std::sync::Mutex<Vec<Json>>>);

impl NativeCalls {
    /// An empty record.
    pub fn new() -> Self {
        NativeCalls::default()
    }

    /// The calls so far, in order.
    pub fn snapshot(&self) -> Vec<Json> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }

    fn push(&self, entry: Json) {
        if let Ok(mut v) = self.0.lock() {
            v.push(entry);
        }
    }
}

/// The upstream tools in `rt`'s scope (loaded catalogs only) as agent tools exposed as
/// `expose` says.
pub fn native_tools(rt: &UpstreamRuntime, expose: Exposure) -> Vec<Tool> {
    native_tools_recorded(rt, expose, &NativeCalls::new())
}

/// [`native_tools`], each call also written to `ledger`.
pub fn native_tools_recorded(rt: &UpstreamRuntime, expose: Exposure, ledger: &NativeCalls) -> Vec<Tool> {
    let mut out = Vec::new();
    for u in rt.inner.upstreams.values() {
        let Some(tools) = rt.inner.visible(u) else { continue };
        for t in tools.iter() {
            let (server, tool) = (u.name.clone(), t.name.clone());
            let rt2 = rt.clone();
            let description = format!(
                "{} (upstream {server}, tool {tool}; arguments {})",
                crate::upstream::catalog::one_line(&t.description, 300),
                crate::upstream::catalog::render_args(&t.input_schema)
            );
            let ledger = ledger.clone();
            let f = move |args: Json, cx: &ptc_subagent::ToolContext| {
                let started = std::time::Instant::now();
                let result = call(&rt2, &server, &tool, args, cx.deadline);
                let mut entry = serde_json::json!({
                    "server": server,
                    "tool": tool,
                    "exposure": "native",
                    "duration_ms": started.elapsed().as_millis() as u64,
                });
                match &result {
                    Ok(v) => {
                        entry["status"] = "ok".into();
                        entry["result_bytes"] = (v.to_string().len() as u64).into();
                    }
                    Err((reason, e)) => {
                        entry["status"] = "error".into();
                        entry["reason"] = reason.as_str().into();
                        entry["error"] = rt2.redactor().scrub(&e.message).into();
                    }
                }
                ledger.push(entry);
                result.map_err(|(_, e)| e)
            };
            out.push(Tool::with_context(native_name(&u.name, &t.name), f).description(description).expose(expose));
        }
    }
    out
}

/// One native call: the answer, or the failure with its reason (`upstream_unavailable`,
/// `timeout`, ...: what `upstream_calls` records).
fn call(
    rt: &UpstreamRuntime,
    server: &str,
    tool: &str,
    args: Json,
    deadline: std::time::Instant,
) -> Result<Json, (String, ToolError)> {
    let host = rt.program_host();
    let args = match args {
        Json::Null => Json::Object(Default::default()),
        other => other,
    };
    let request = serde_json::json!({"server": server, "tool": tool, "args": args});
    let call = ToolCall { name: "call".into(), args: ptc_lisp_eval::json::from_json(&request) };
    let cancel = Cancel::new();
    let cx = CallCx::new(deadline, &cancel, None);
    let failed = |reason: String, message: String| {
        let text = format!("upstream {server}/{tool} failed ({reason}): {message}");
        (reason, ToolError::failed(text))
    };
    match host.call(&call, &cx) {
        Ok(Value::Map(m)) => {
            // a world fault (down, timeout, oversize) comes back as {:ok false :reason ...}
            if m.get(&Value::kw("ok")) == Some(&Value::Bool(false)) {
                let reason = match m.get(&Value::kw("reason")) {
                    Some(Value::Keyword(k)) => k.to_string(),
                    Some(Value::Str(s)) => s.to_string(),
                    _ => "upstream_error".to_string(),
                };
                let message = match m.get(&Value::kw("message")) {
                    Some(Value::Str(s)) => s.to_string(),
                    _ => "the upstream call failed".to_string(),
                };
                return Err(failed(reason, message));
            }
            let value = m.get(&Value::kw("value")).cloned().unwrap_or(Value::Nil);
            ptc_lisp_eval::json::to_json(&value)
                .map_err(|e| ("result_not_json".into(), ToolError::failed(format!("{server}/{tool}: {e}"))))
        }
        Ok(other) => ptc_lisp_eval::json::to_json(&other)
            .map_err(|e| ("result_not_json".into(), ToolError::failed(e.to_string()))),
        Err(e) => Err(failed(e.kind.to_string(), e.message)),
    }
}

#[cfg(test)]
mod tests {
    use super::native_name;

    #[test]
    fn native_names_follow_the_tool_name_rule() {
        assert_eq!(native_name("fs", "read_text_file"), "fs__read_text_file");
        assert_eq!(native_name("my.api", "get/items"), "my_api__get_items");
        assert_eq!(native_name("9s", "x"), "u_9s__x");
    }
}
