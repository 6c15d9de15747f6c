//! The one place this crate drives `ptc-lisp-eval`: running a turn's program with the
//! agent's tools behind the evaluator's `Host` seam.
//!
//! Everything the loop needs from the interpreter goes through [`execute`], so a change
//! of the embedding API touches this file only.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use ptc_lisp_eval::value::PMap;
use ptc_lisp_eval::{
    CallCx, Cancel, CompileEnv, Engine, ErrorKind, Host, Interrupted, Memory, Outcome, RunInput, RunResult, ToolCall,
    ToolErrorKind, ToolSpec, Value,
};
use serde_json::Value as Json;

use crate::cache_key::{canonical_cache_key, key_hash};
use crate::nesting::ToolNest;
use crate::observe::{Event, Observer, emit};
use crate::tool::{CatalogEntry, Tool, ToolBody, ToolContext, ToolError, Toolbox};

/// The run's tool cache: full results by canonical cache key, shared by both layers.
pub(crate) type ToolCache = Arc<Mutex<HashMap<String, Json>>>;

/// A program calling a `tool_catalog` entry (planning only) gets an error that says so,
/// instead of a bare "Unknown tool".
pub(crate) fn explain_catalog_call(mut outcome: Outcome, catalog: &[CatalogEntry]) -> Outcome {
    if let RunResult::Error(e) = &mut outcome.result
        && e.kind == ErrorKind::UnknownTool
        && let Some(entry) = catalog.iter().find(|c| {
            let listed = e.message.strip_prefix("Unknown tool: ").and_then(|m| m.split(". ").next()).unwrap_or("");
            let declared = [c.name.clone()];
            listed.split(", ").any(|n| ptc_lisp_eval::tool_keys::resolve_tool_name(n, &declared).is_some())
        })
    {
        e.message = format!(
            "tool/{} is in the tool catalog for planning only and cannot be called; use a callable tool, or return a plan that names it",
            entry.name
        );
    }
    outcome
}

/// One program run.
pub(crate) struct ExecRequest {
    pub(crate) source: String,
    pub(crate) context: Arc<PMap>,
    pub(crate) memory: Memory,
    pub(crate) turn_history: Vec<Value>,
    pub(crate) turn: u32,
    pub(crate) tools: Arc<Toolbox>,
    pub(crate) cache: ToolCache,
    pub(crate) observer: Option<Arc<dyn Observer>>,
    pub(crate) cancel: Cancel,
    pub(crate) span: tracing::Span,
    /// The mission tree, for agent tools and LLM tools.
    pub(crate) nest: Option<ToolNest>,
    /// Tools of another host (an MCP aggregator's), for this run only.
    pub(crate) extra: Option<Arc<dyn Host>>,
}

/// What a program run produced, with the names it defines at top level in source order.
pub(crate) struct Executed {
    pub(crate) outcome: Outcome,
    pub(crate) defined: Vec<String>,
}

/// Runs the program (blocking: call it from a blocking thread).
pub(crate) fn execute(engine: &Engine, req: ExecRequest) -> Executed {
    let host = AgentHost {
        tools: req.tools,
        cache: req.cache,
        observer: req.observer,
        turn: req.turn,
        span: req.span,
        nest: req.nest,
        extra: req.extra,
    };
    let input =
        RunInput { context: req.context, memory: req.memory, turn_history: req.turn_history, strict_data: false };
    let env = CompileEnv::for_run(&input, &host);
    match engine.compile(&req.source, &env) {
        Ok(program) => {
            let known = program.defined_names();
            let defined =
                crate::compress::definition_order(&req.source).into_iter().filter(|n| known.contains(n)).collect();
            Executed { outcome: engine.run(&program, input, &host, &req.cancel), defined }
        }
        Err(e) => Executed { outcome: Outcome::failure(e, input.memory), defined: Vec::new() },
    }
}

/// The `tools()` view of a toolbox (what programs are compiled against): tools exposed
/// natively only are listed as such, so a program calling one is rejected before it runs.
pub(crate) fn tool_specs(tools: &Toolbox) -> Vec<ToolSpec> {
    tools
        .values()
        .map(|p| ToolSpec {
            name: p.tool.name.clone(),
            signature: p.tool.signature.clone(),
            description: p.tool.description.clone(),
            exposure: p.expose,
        })
        .collect()
}

/// Which layer made a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layer {
    /// The model, through native tool calling.
    Native,
    /// A program, through `(tool/name ...)`.
    PtcLisp,
}

impl Layer {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Layer::Native => "native",
            Layer::PtcLisp => "ptc_lisp",
        }
    }
}

/// One tool call's outcome, whichever layer made it.
pub(crate) struct Invocation {
    /// The arguments as the tool received them.
    pub(crate) args: Json,
    pub(crate) result: Result<Json, ToolError>,
    /// True when the result came from the cache (the tool did not run).
    pub(crate) cached: bool,
    /// The hash of the canonical cache key, for cached tools.
    pub(crate) key_hash: Option<String>,
    /// JSON bytes stored in the cache by this call.
    pub(crate) retained_bytes: Option<u64>,
    pub(crate) duration_ms: u64,
}

/// Calls a tool: coerces the arguments to its signature, serves it from the cache when
/// the tool is cached and the canonical key is known, runs it otherwise (bounded by
/// `deadline`), and reports the call to the observer.
#[allow(clippy::too_many_arguments)]
pub(crate) fn invoke(
    tools: &Toolbox,
    cache: &ToolCache,
    observer: Option<&dyn Observer>,
    layer: Layer,
    turn: u32,
    nest: Option<&ToolNest>,
    name: &str,
    args: &Value,
    deadline: Instant,
    cancel: &Cancel,
) -> Invocation {
    let started = Instant::now();
    let mut inv = invoke_inner(
        tools,
        cache,
        name,
        args,
        deadline,
        cancel,
        ToolContext { deadline, turn, cancel: cancel.clone(), nest: nest.cloned() },
    );
    inv.duration_ms = started.elapsed().as_millis() as u64;
    match &inv.result {
        Ok(_) => {
            tracing::debug!(tool_name = name, duration_ms = inv.duration_ms, cached = inv.cached, "tool call finished")
        }
        Err(e) => {
            tracing::debug!(tool_name = name, duration_ms = inv.duration_ms, error = %e.message, "tool call failed")
        }
    }
    emit(observer, || Event::ToolCall {
        turn,
        name: name.to_string(),
        args: inv.args.clone(),
        exposure_layer: layer.as_str().to_string(),
        cached: inv.cached,
        cache_key_hash: inv.key_hash.clone(),
        full_result_cached: inv.key_hash.is_some() && inv.result.is_ok(),
        retained_bytes: inv.retained_bytes,
        result: inv.result.as_ref().ok().cloned(),
        error: inv.result.as_ref().err().map(|e| e.message.clone()),
        duration_ms: inv.duration_ms,
    });
    inv
}

fn invoke_inner(
    tools: &Toolbox,
    cache: &ToolCache,
    name: &str,
    args: &Value,
    deadline: Instant,
    cancel: &Cancel,
    tcx: ToolContext,
) -> Invocation {
    let fail = |args: Json, e: ToolError| Invocation {
        args,
        result: Err(e),
        cached: false,
        key_hash: None,
        retained_bytes: None,
        duration_ms: 0,
    };
    let Some(prepared) = tools.get(name) else {
        let known: Vec<&str> = tools.keys().map(String::as_str).collect();
        let message = format!("Unknown tool: {name}. Available: {}", known.join(", "));
        return fail(Json::Null, ToolError { kind: ToolErrorKind::UnknownTool, message });
    };
    // warn_only warnings go to the mission's Step.warnings
    let warnings = tcx.nest.as_ref().map(|n| n.warnings.clone());
    let args = match crate::validation::tool_args(prepared, name, args, warnings.as_ref()) {
        Ok(checked) => checked,
        Err(e) => return fail(ptc_lisp_eval::json::to_json(args).unwrap_or(Json::Null), e),
    };
    let args_json = match ptc_lisp_eval::json::to_json(&args) {
        Ok(j) => j,
        Err(e) => {
            let msg = format!("arguments cannot be sent to a tool: {e}");
            return fail(Json::Null, ToolError::invalid_args(msg));
        }
    };
    let key = prepared.tool.cache.then(|| canonical_cache_key(name, &args_json));
    let key_hash = key.as_deref().map(key_hash);
    if let Some(k) = &key
        && let Some(hit) = cache.lock().ok().and_then(|c| c.get(k).cloned())
    {
        return Invocation {
            args: args_json,
            result: Ok(hit),
            cached: true,
            key_hash,
            retained_bytes: None,
            duration_ms: 0,
        };
    }
    let result = call_with_deadline(&prepared.tool, name, args_json.clone(), deadline, cancel, tcx)
        .and_then(|v| crate::validation::tool_result(prepared, name, &v, warnings.as_ref()).map(|()| v));
    let mut retained_bytes = None;
    if let (Some(k), Ok(v)) = (key, &result)
        && let Ok(mut c) = cache.lock()
    {
        retained_bytes = Some(v.to_string().len() as u64);
        c.insert(k, v.clone());
    }
    Invocation { args: args_json, result, cached: false, key_hash, retained_bytes, duration_ms: 0 }
}

/// Synchronous tool calls that run at once, process-wide; more wait for a thread.
const MAX_SYNC_TOOL_THREADS: usize = 512;

/// The evaluator's view of the agent's tools.
struct AgentHost {
    tools: Arc<Toolbox>,
    cache: ToolCache,
    observer: Option<Arc<dyn Observer>>,
    turn: u32,
    span: tracing::Span,
    nest: Option<ToolNest>,
    extra: Option<Arc<dyn Host>>,
}

impl Host for AgentHost {
    fn tools(&self) -> Vec<ToolSpec> {
        let mut specs = tool_specs(&self.tools);
        if let Some(extra) = &self.extra {
            specs.extend(extra.tools().into_iter().filter(|s| !self.tools.contains_key(&s.name)));
        }
        specs
    }

    fn discover(&self, query: &ptc_lisp_eval::Discovery<'_>, cx: &CallCx<'_>) -> Option<Result<Value, ToolError>> {
        self.extra.as_ref().and_then(|extra| extra.discover(query, cx))
    }

    fn call(&self, call: &ToolCall, cx: &CallCx<'_>) -> Result<Value, ToolError> {
        let name = call.name.as_str();
        if let Some(extra) = self.extra.as_ref().filter(|_| !self.tools.contains_key(name)) {
            return call_extra(extra.as_ref(), call, cx, self.observer.as_deref(), self.turn);
        }
        let span =
            tracing::info_span!(parent: &self.span, "tool", tool_name = name, duration_ms = tracing::field::Empty);
        let _enter = span.enter();
        let inv = invoke(
            &self.tools,
            &self.cache,
            self.observer.as_deref(),
            Layer::PtcLisp,
            self.turn,
            self.nest.as_ref(),
            name,
            &call.args,
            cx.deadline,
            cx.cancel,
        );
        span.record("duration_ms", inv.duration_ms);
        cx.record("exposure_layer", Json::from(Layer::PtcLisp.as_str()));
        cx.record("cached", Json::from(inv.cached));
        inv.result.map(|j| ptc_lisp_eval::json::from_json(&j))
    }
}

/// A call served by the extra host, reported to the observer like the agent's own.
fn call_extra(
    extra: &dyn Host,
    call: &ToolCall,
    cx: &CallCx<'_>,
    observer: Option<&dyn Observer>,
    turn: u32,
) -> Result<Value, ToolError> {
    let started = Instant::now();
    let result = extra.call(call, cx);
    cx.record("exposure_layer", Json::from(Layer::PtcLisp.as_str()));
    emit(observer, || Event::ToolCall {
        turn,
        name: call.name.clone(),
        args: ptc_lisp_eval::json::to_json(&call.args).unwrap_or(Json::Null),
        exposure_layer: Layer::PtcLisp.as_str().to_string(),
        cached: false,
        cache_key_hash: None,
        full_result_cached: false,
        retained_bytes: None,
        result: result.as_ref().ok().map(|v| ptc_lisp_eval::json::to_json(v).unwrap_or(Json::Null)),
        error: result.as_ref().err().map(|e| e.message.clone()),
        duration_ms: started.elapsed().as_millis() as u64,
    });
    result
}

/// Runs the tool without a thread of its own, so that neither a slow tool nor a panicking
/// one can hold or break the program: an async tool is a task on the mission's runtime, a
/// synchronous one runs on the reused blocking threads of this crate's tool runtime (not
/// the caller's: a runtime being dropped waits for its blocking tasks, and a tool
/// abandoned at its deadline must not hold the caller's shutdown). The caller (the
/// program's evaluation thread, or a native call's task) waits for the answer. Past the
/// deadline the caller gets a `timeout` and the task is aborted (a synchronous function's
/// late answer is dropped); a panic becomes a `tool_error`. A cancelled mission starts no
/// tool, and a waiting call wakes on the cancel at once.
fn call_with_deadline(
    tool: &Tool,
    name: &str,
    args: Json,
    deadline: Instant,
    cancel: &Cancel,
    tcx: ToolContext,
) -> Result<Json, ToolError> {
    if cancel.is_cancelled() {
        return Err(ToolError::cancelled(name));
    }
    let tools_runtime = || tool_runtime().map_err(|e| ToolError::failed(format!("cannot start the tool: {e}")));
    let task = match &tool.func {
        ToolBody::Async(func) => {
            let runtime = match tcx.runtime() {
                Some(handle) => handle,
                None => tools_runtime()?,
            };
            let func = func.clone();
            // building the future runs the tool's own code: contain a panic there too
            runtime.spawn(async move {
                match catch_unwind(AssertUnwindSafe(|| func(args, tcx))) {
                    Ok(future) => future.await,
                    Err(panic) => Err(ToolError::failed(format!("the tool panicked: {}", panic_message(&panic)))),
                }
            })
        }
        ToolBody::Sync(func) => {
            let func = func.clone();
            tools_runtime()?.spawn_blocking(move || func(args, &tcx))
        }
    };
    let abort = task.abort_handle();
    let answer = cancel.wait_for(task, deadline);
    match answer {
        Ok(Ok(Ok(v))) => Ok(v),
        Ok(Ok(Err(e))) => Err(e),
        Ok(Err(joined)) if joined.is_panic() => {
            Err(ToolError::failed(format!("the tool panicked: {}", panic_message(&joined.into_panic()))))
        }
        // the runtime shut down under the task
        Ok(Err(_)) if cancel.is_cancelled() => Err(ToolError::cancelled(name)),
        Ok(Err(_)) => {
            Err(ToolError::failed(format!("tool '{name}' stopped before answering: its runtime was shut down")))
        }
        Err(why) => {
            abort.abort();
            match why {
                Interrupted::Cancelled => Err(ToolError::cancelled(name)),
                _ if cancel.is_cancelled() => Err(ToolError::cancelled(name)),
                _ => Err(ToolError::timeout(name)),
            }
        }
    }
}

/// This crate's tool runtime: synchronous tools run on its blocking threads (reused, at
/// most [`MAX_SYNC_TOOL_THREADS`]; calls beyond wait in its queue, within their deadline),
/// and async tools called outside any runtime (a [`CompiledAgent`](crate::CompiledAgent)
/// executed from plain threads) run on its one worker. One per process, started on first
/// use, never shut down.
fn tool_runtime() -> Result<tokio::runtime::Handle, String> {
    static TOOL_RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    TOOL_RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .max_blocking_threads(MAX_SYNC_TOOL_THREADS)
                .thread_name("ptc-tools")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map(|rt| rt.handle().clone())
        .map_err(Clone::clone)
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

    use ptc_lisp_eval::Exposure;

    use crate::tool::PreparedTool;
    use ptc_lisp_eval::contract::{Probe, check_host};

    use super::*;

    fn prepared(tool: Tool) -> (String, PreparedTool) {
        (tool.name.clone(), PreparedTool { tool, inputs: None, expose: Exposure::Program })
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
            extra: None,
        };
        let probe = Probe::new("echo", Value::empty_map())
            .with_slow("sleepy", Value::empty_map())
            .with_slack(Duration::from_secs(1));
        let report = check_host(&host, &probe);
        assert!(report.passed(), "{report}");
    }
}
