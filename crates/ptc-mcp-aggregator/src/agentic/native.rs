//! Upstream tools offered to a model natively (the agent loop's `text` and `combined`
//! modes): one [`Tool`] per tool in scope, named `server__tool`, whose call goes through
//! the same `tool/call` path as a program's, so caps, timeouts, redaction and world
//! faults are the same. A world fault (upstream down, timeout, oversize) is a tool error
//! the model reads; it never ends the mission.

use ptc_lisp_eval::{CallCx, Cancel, Host, ToolCall, Value};
use ptc_subagent::{Expose, Tool, ToolError};
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

/// The upstream tools in `rt`'s scope (loaded catalogs only) as agent tools exposed as
/// `expose` says.
pub fn native_tools(rt: &UpstreamRuntime, expose: Expose) -> Vec<Tool> {
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
            let f = move |args: Json, cx: &ptc_subagent::ToolContext| call(&rt2, &server, &tool, args, cx.deadline);
            out.push(Tool::with_context(native_name(&u.name, &t.name), f).description(description).expose(expose));
        }
    }
    out
}

fn call(
    rt: &UpstreamRuntime,
    server: &str,
    tool: &str,
    args: Json,
    deadline: std::time::Instant,
) -> Result<Json, ToolError> {
    let host = rt.program_host();
    let args = match args {
        Json::Null => Json::Object(Default::default()),
        other => other,
    };
    let request = serde_json::json!({"server": server, "tool": tool, "args": args});
    let call = ToolCall { name: "call".into(), args: ptc_lisp_eval::json::from_json(&request) };
    let cancel = Cancel::new();
    let cx = CallCx::new(deadline, &cancel, None);
    match host.call(&call, &cx) {
        Ok(Value::Map(m)) => {
            let value = m.get(&Value::kw("value")).cloned().unwrap_or(Value::Nil);
            ptc_lisp_eval::json::to_json(&value).map_err(|e| ToolError::new(format!("{server}/{tool}: {e}")))
        }
        Ok(other) => ptc_lisp_eval::json::to_json(&other).map_err(|e| ToolError::new(e.to_string())),
        Err(e) => Err(ToolError::new(format!("upstream {server}/{tool} failed ({}): {}", e.kind, e.message))),
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
