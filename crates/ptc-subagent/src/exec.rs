//! The one place this crate drives `ptc-lisp-eval`: running a turn's program with the
//! agent's tools behind the evaluator's `Host` seam.
//!
//! Everything the loop needs from the interpreter goes through [`execute`], so a change
//! of the embedding API touches this file only.

use std::collections::{BTreeMap, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;

use ptc_lisp_eval::value::PMap;
use ptc_lisp_eval::{
    CallCx, Cancel, Engine, Exposure, Globals, Host, Outcome, RunInput, ToolCall, ToolError as EvalToolError,
    ToolErrorKind, ToolSpec, Value,
};
use ptc_signature::Type;
use serde_json::Value as Json;

use crate::observe::{Event, Observer, emit};
use crate::tool::{Tool, ToolContext};

/// A tool ready to call: the tool and its parsed input type.
pub(crate) struct PreparedTool {
    pub(crate) tool: Tool,
    /// The object type of the signature's inputs (for argument coercion).
    pub(crate) inputs: Option<Type>,
}

/// The callable tools of an agent, by name.
pub(crate) type Toolbox = BTreeMap<String, PreparedTool>;

/// One program run.
pub(crate) struct ExecRequest {
    pub(crate) source: String,
    pub(crate) context: Arc<PMap>,
    pub(crate) memory: Globals,
    pub(crate) turn_history: Vec<Value>,
    pub(crate) turn: u32,
    pub(crate) tools: Arc<Toolbox>,
    pub(crate) cache: Arc<Mutex<HashMap<String, Json>>>,
    pub(crate) observer: Option<Arc<dyn Observer>>,
    pub(crate) cancel: Cancel,
    pub(crate) span: tracing::Span,
    /// The mission tree, for agent tools and LLM tools.
    pub(crate) nest: Option<crate::compose::ToolNest>,
}

/// Runs the program (blocking: call it from a blocking thread).
pub(crate) fn execute(engine: &Engine, req: ExecRequest) -> Outcome {
    let host = AgentHost {
        tools: req.tools,
        cache: req.cache,
        observer: req.observer,
        turn: req.turn,
        span: req.span,
        nest: req.nest,
    };
    let input =
        RunInput { context: req.context, memory: req.memory, turn_history: req.turn_history, strict_data: false };
    engine.eval(&req.source, input, &host, &req.cancel)
}

/// The `tools()` view of a toolbox (what programs are compiled against).
pub(crate) fn tool_specs(tools: &Toolbox) -> Vec<ToolSpec> {
    tools
        .values()
        .map(|p| ToolSpec {
            name: p.tool.name.clone(),
            signature: p.tool.signature.clone(),
            description: p.tool.description.clone(),
            exposure: Exposure::Program,
        })
        .collect()
}

/// The evaluator's view of the agent's tools.
struct AgentHost {
    tools: Arc<Toolbox>,
    cache: Arc<Mutex<HashMap<String, Json>>>,
    observer: Option<Arc<dyn Observer>>,
    turn: u32,
    span: tracing::Span,
    nest: Option<crate::compose::ToolNest>,
}

impl Host for AgentHost {
    fn tools(&self) -> Vec<ToolSpec> {
        tool_specs(&self.tools)
    }

    fn call(&self, call: &ToolCall, cx: &CallCx<'_>) -> Result<Value, EvalToolError> {
        let name = call.name.as_str();
        let started = Instant::now();
        let span =
            tracing::info_span!(parent: &self.span, "tool", tool_name = name, duration_ms = tracing::field::Empty);
        let _enter = span.enter();
        let (args_json, outcome) = self.call_inner(call, cx);
        let duration_ms = started.elapsed().as_millis() as u64;
        span.record("duration_ms", duration_ms);
        match &outcome {
            Ok(_) => tracing::debug!(tool_name = name, duration_ms, "tool call finished"),
            Err(e) => tracing::debug!(tool_name = name, duration_ms, error = %e.message, "tool call failed"),
        }
        emit(self.observer.as_deref(), || Event::ToolCall {
            turn: self.turn,
            name: name.to_string(),
            args: args_json.clone(),
            result: outcome.as_ref().ok().cloned(),
            error: outcome.as_ref().err().map(|e| e.message.clone()),
            duration_ms,
        });
        outcome.map(|j| ptc_lisp_eval::json::from_json(&j))
    }
}

impl AgentHost {
    fn call_inner(&self, call: &ToolCall, cx: &CallCx<'_>) -> (Json, Result<Json, EvalToolError>) {
        let name = call.name.as_str();
        let Some(prepared) = self.tools.get(name) else {
            let known: Vec<&str> = self.tools.keys().map(String::as_str).collect();
            let message = format!("Unknown tool: {name}. Available: {}", known.join(", "));
            return (Json::Null, Err(EvalToolError { kind: ToolErrorKind::UnknownTool, message }));
        };
        let args = match &prepared.inputs {
            Some(ty) => {
                let (coerced, report) = ptc_signature::coerce(&call.args, ty);
                if !report.is_ok() {
                    let json = ptc_lisp_eval::json::to_json(&call.args).unwrap_or(Json::Null);
                    let msg = format!("invalid arguments for tool/{name}:\n{}", report.render_errors());
                    return (json, Err(EvalToolError::invalid_args(msg)));
                }
                coerced
            }
            None => call.args.clone(),
        };
        let args_json = match ptc_lisp_eval::json::to_json(&args) {
            Ok(j) => j,
            Err(e) => {
                let msg = format!("arguments cannot be sent to a tool: {e}");
                return (Json::Null, Err(EvalToolError::invalid_args(msg)));
            }
        };
        let key = prepared.tool.cache.then(|| format!("{name}\u{0}{args_json}"));
        if let Some(k) = &key
            && let Some(hit) = self.cache.lock().ok().and_then(|c| c.get(k).cloned())
        {
            return (args_json, Ok(hit));
        }
        let tcx = ToolContext { deadline: cx.deadline, turn: self.turn, nest: self.nest.clone() };
        let result = call_with_deadline(&prepared.tool, name, args_json.clone(), cx, tcx);
        if let (Some(k), Ok(v)) = (key, &result)
            && let Ok(mut c) = self.cache.lock()
        {
            c.insert(k, v.clone());
        }
        (args_json, result)
    }
}

/// Runs the tool function on its own thread so that neither a slow tool nor a panicking
/// one can hold or break the program: past the deadline the program gets a `timeout`
/// and the tool's late answer is dropped; a panic becomes a `tool_error`.
fn call_with_deadline(
    tool: &Tool,
    name: &str,
    args: Json,
    cx: &CallCx<'_>,
    tcx: ToolContext,
) -> Result<Json, EvalToolError> {
    let (tx, rx) = mpsc::channel();
    let func = tool.func.clone();
    let spawned = std::thread::Builder::new().name(format!("ptc-tool-{name}")).spawn(move || {
        let result = match catch_unwind(AssertUnwindSafe(|| func(args, &tcx))) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(EvalToolError::failed(e.message)),
            Err(panic) => Err(EvalToolError::failed(format!("the tool panicked: {}", panic_message(&panic)))),
        };
        let _ = tx.send(result);
    });
    if let Err(e) = spawned {
        return Err(EvalToolError::failed(format!("cannot start the tool: {e}")));
    }
    loop {
        let wait = cx.remaining().min(std::time::Duration::from_millis(50));
        match rx.recv_timeout(wait) {
            Ok(result) => return result,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(EvalToolError::failed("the tool stopped without an answer"));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if cx.cancel.is_cancelled() {
                    return Err(EvalToolError::cancelled(name));
                }
                if Instant::now() >= cx.deadline {
                    return Err(EvalToolError::timeout(name));
                }
            }
        }
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ptc_lisp_eval::contract::{Probe, check_host};

    use super::*;

    fn prepared(tool: Tool) -> (String, PreparedTool) {
        (tool.name.clone(), PreparedTool { tool, inputs: None })
    }

    #[test]
    fn the_agent_host_passes_the_host_contract() {
        let tools: Toolbox = [
            prepared(Tool::new("echo", Ok)),
            prepared(Tool::new("sleepy", |_| {
                std::thread::sleep(Duration::from_secs(3));
                Ok(Json::Null)
            })),
        ]
        .into_iter()
        .collect();
        let host = AgentHost {
            tools: Arc::new(tools),
            cache: Arc::new(Mutex::new(HashMap::new())),
            observer: None,
            turn: 1,
            span: tracing::Span::none(),
            nest: None,
        };
        let probe = Probe::new("echo", Value::empty_map()).with_slow("sleepy", Value::empty_map());
        let report = check_host(&host, &probe);
        assert!(report.passed(), "{report}");
    }
}
