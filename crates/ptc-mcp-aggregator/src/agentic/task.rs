//! `lisp_task` (`ptc mcp --agentic`): an MCP client hands over a task in words; a planner
//! model (any `Llm`) writes PTC-Lisp programs that run against the configured upstreams
//! through the agent loop, and the client gets `{status, answer, program?,
//! upstream_calls, planner {model, turns, duration_ms, tokens}, ptc_metrics}`.
//!
//! Posture: read-only unless [`AgenticOptions::allow_writes`]. Read-only means the
//! planner's view of the upstreams holds only the tools that say they are read-only
//! (`readOnlyHint: true`; every OpenAPI tool is a GET); a server with no such tool is not
//! in the view, and a configuration with none at all cannot offer `lisp_task`.
//!
//! Limits: the whole task ends by `task_timeout`, each planner request by
//! `planner_timeout`, each answer is capped at `max_output_tokens`, the answer at
//! `max_result_bytes`, the turns at `max_turns` + `retry_turns`. Model credentials live in
//! the `Llm` the caller built; nothing here sees them, and every text that leaves (the
//! answer, the failure message) also goes through the upstream redactor.
//!
//! Preludes: the server's `--prelude` definitions are the planner's prelude (every
//! program starts with them, its first message lists the public ones), and its programs
//! discover them as `lisp_eval` programs do (`dir`, `ns-publics`, `all-ns`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ptc_lisp_eval::Limits;
use ptc_subagent::{
    BoxFuture, CompletionMode, Llm, LlmError, LlmErrorKind, LlmRequest, LlmResponse, LlmRetry, ProgramTools, SubAgent,
};
use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value as Json, json};

use crate::config::ResponseProfile;
use crate::envelope::CallPayload;
use crate::prelude::{PreludeHost, Preludes};
use crate::reason::McpReason;
use crate::upstream::UpstreamRuntime;

/// The tool description: a prompt card with a byte budget.
pub const LISP_TASK_CARD: &str = include_str!("../../prompts/lisp_task.md");

/// Largest `task` text, bytes.
pub const MAX_TASK_BYTES: usize = 16 * 1024;

/// The `--agentic-*` settings (defaults as the original server's).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AgenticOptions {
    /// The planner's name as configured (`--agentic-model`), reported in `planner.model`.
    pub model: String,
    /// Time for the whole task (45 s).
    pub task_timeout: Duration,
    /// Time for one planner request (15 s).
    pub planner_timeout: Duration,
    /// Most tokens of one planner answer (1,200).
    pub max_output_tokens: u32,
    /// Largest answer as JSON, bytes (4,096).
    pub max_result_bytes: usize,
    /// Whether the result carries the program (true).
    pub include_program: bool,
    /// Work turns of the planner (1).
    pub max_turns: u32,
    /// Extra turns to correct an answer (0).
    pub retry_turns: u32,
    /// Whether tools that may write are in the planner's view (false).
    pub allow_writes: bool,
    /// Text before the generated planner system prompt (`--agentic-subagent-config`).
    pub system_prefix: String,
    /// Text after the generated planner system prompt.
    pub system_suffix: String,
    /// Whether `--trace-dir` traces and `lisp_debug` records of `lisp_task` calls carry
    /// previews of the planner's prompts and answers (false: local debugging only).
    pub trace_prompts: bool,
    /// Byte cap of the generated capability summary in the tool description (800).
    pub capability_summary_max_bytes: usize,
    /// An operator's capability summary, used verbatim instead of the generated one.
    pub capability_summary: Option<String>,
}

/// Largest `system_prompt.prefix` or `.suffix` of a subagent config, bytes.
pub const MAX_PROMPT_SLOT_BYTES: usize = 4096;

/// `--agentic-subagent-config FILE`: the planner options an operator may set in a file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SubagentConfig {
    /// Planner work turns (≥ 1).
    pub max_turns: Option<u32>,
    /// Extra correction turns.
    pub retry_turns: Option<u32>,
    /// Text before the generated system prompt.
    pub prefix: String,
    /// Text after it.
    pub suffix: String,
}

impl SubagentConfig {
    /// Reads the file's JSON. Allowed keys: `max_turns`, `retry_turns`, `system_prompt`
    /// (`{prefix, suffix}`, each ≤ 4 KiB); any other key (the planner's tools, signature,
    /// completion mode, trace context, `_private` keys...) is refused by name.
    pub fn parse(text: &str) -> Result<SubagentConfig, String> {
        let v: Json = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let Json::Object(m) = v else { return Err("must be a JSON object".into()) };
        let mut c = SubagentConfig::default();
        for (k, v) in &m {
            match k.as_str() {
                "max_turns" => match v.as_u64().filter(|n| (1..=u64::from(u32::MAX)).contains(n)) {
                    Some(n) => c.max_turns = Some(n as u32),
                    None => return Err("`max_turns` must be an integer of at least 1".into()),
                },
                "retry_turns" => match v.as_u64().filter(|n| *n <= u64::from(u32::MAX)) {
                    Some(n) => c.retry_turns = Some(n as u32),
                    None => return Err("`retry_turns` must be an integer of at least 0".into()),
                },
                "system_prompt" => {
                    let Json::Object(sp) = v else {
                        return Err(
                            "`system_prompt` must be an object {\"prefix\": \"...\", \"suffix\": \"...\"}".into()
                        );
                    };
                    for (sk, sv) in sp {
                        let slot = match sk.as_str() {
                            "prefix" => &mut c.prefix,
                            "suffix" => &mut c.suffix,
                            other => {
                                return Err(format!(
                                    "`system_prompt.{other}` is not allowed; only prefix and suffix wrap the planner's prompt (it cannot be replaced)"
                                ));
                            }
                        };
                        let Json::String(text) = sv else {
                            return Err(format!("`system_prompt.{sk}` must be a string"));
                        };
                        if text.len() > MAX_PROMPT_SLOT_BYTES {
                            return Err(format!(
                                "`system_prompt.{sk}` is {} bytes, over the {MAX_PROMPT_SLOT_BYTES}-byte cap",
                                text.len()
                            ));
                        }
                        *slot = text.clone();
                    }
                }
                other => {
                    return Err(format!(
                        "key `{other}` is not allowed (reserved or unsupported); the file may set max_turns, retry_turns and system_prompt {{prefix, suffix}}"
                    ));
                }
            }
        }
        Ok(c)
    }
}

impl AgenticOptions {
    /// The defaults, for planner `model`.
    pub fn new(model: impl Into<String>) -> Self {
        AgenticOptions {
            model: model.into(),
            task_timeout: Duration::from_millis(45_000),
            planner_timeout: Duration::from_millis(15_000),
            max_output_tokens: 1_200,
            max_result_bytes: 4_096,
            include_program: true,
            max_turns: 1,
            retry_turns: 0,
            allow_writes: false,
            system_prefix: String::new(),
            system_suffix: String::new(),
            trace_prompts: false,
            capability_summary_max_bytes: 800,
            capability_summary: None,
        }
    }
}

/// Why `lisp_task` cannot be offered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgenticError {
    /// Read-only posture, and no upstream tool says it is read-only.
    #[error(
        "--agentic: no upstream tool is marked read-only (readOnlyHint), so the read-only planner would have no tools; \
         add --agentic-allow-writes to let it use every tool ({0})"
    )]
    NoReadOnlyTools(String),
    /// An option is out of range.
    #[error("{0}")]
    Option(String),
}

/// The `lisp_task` tool: the planner, its view of the upstreams, the server's preludes
/// and its limits.
#[derive(Clone)]
pub struct TaskTool {
    options: AgenticOptions,
    llm: Arc<dyn Llm>,
    view: UpstreamRuntime,
    limits: Limits,
    /// The server's `--prelude` files (the planner's programs call them and discover
    /// them), and the same as the planner's prelude (definitions and prompt listing).
    preludes: Arc<Preludes>,
    planner_prelude: ptc_subagent::Prelude,
}

impl std::fmt::Debug for TaskTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskTool").field("model", &self.options.model).finish_non_exhaustive()
    }
}

impl TaskTool {
    /// The tool over `upstreams` (cut to its read-only tools unless writes are allowed),
    /// with program `limits`.
    pub fn new(
        options: AgenticOptions,
        llm: Arc<dyn Llm>,
        upstreams: &UpstreamRuntime,
        limits: Limits,
    ) -> Result<Self, AgenticError> {
        if options.max_turns == 0 {
            return Err(AgenticError::Option("--agentic-max-turns must be at least 1".into()));
        }
        for (flag, zero) in [
            ("--agentic-task-timeout-ms", options.task_timeout.is_zero()),
            ("--agentic-planner-timeout-ms", options.planner_timeout.is_zero()),
            ("--agentic-max-output-tokens", options.max_output_tokens == 0),
            ("--agentic-max-result-bytes", options.max_result_bytes == 0),
        ] {
            if zero {
                return Err(AgenticError::Option(format!("{flag} must be more than 0")));
            }
        }
        if let Some(text) = &options.capability_summary
            && text.len() > options.capability_summary_max_bytes
        {
            return Err(AgenticError::Option(format!(
                "--agentic-capability-summary: the file is {} bytes, over --agentic-capability-summary-max-bytes ({})",
                text.len(),
                options.capability_summary_max_bytes
            )));
        }
        let view = if options.allow_writes {
            upstreams.clone()
        } else {
            let (read_only, other) = read_only_split(upstreams);
            if read_only.is_empty() {
                return Err(AgenticError::NoReadOnlyTools(format!("tools that may write: {}", other.join(", "))));
            }
            upstreams.scoped(&read_only).map_err(|e| AgenticError::Option(e.to_string()))?
        };
        Ok(TaskTool {
            options,
            llm,
            view,
            limits,
            preludes: Arc::new(Preludes::none()),
            planner_prelude: ptc_subagent::Prelude::default(),
        })
    }

    /// The same tool with the server's `preludes`: every planner program starts with
    /// their definitions, the planner's first message lists the public ones, and
    /// discovery (`dir`, `ns-publics`, `all-ns`) answers for their namespaces.
    pub(crate) fn with_preludes(mut self, preludes: Arc<Preludes>) -> Self {
        let mut prelude = ptc_subagent::Prelude::new(preludes.globals());
        for p in preludes.iter() {
            if let Some(doc) = &p.doc {
                prelude = prelude.namespace_doc(p.id.as_str(), doc.as_str());
            }
            for e in p.exports.iter().filter(|e| e.private) {
                prelude = prelude.unlisted(e.name.as_str());
            }
        }
        self.planner_prelude = prelude;
        self.preludes = preludes;
        self
    }

    /// The upstreams the planner sees.
    pub fn view(&self) -> &UpstreamRuntime {
        &self.view
    }

    /// The MCP tool definition.
    pub fn tool(&self) -> Tool {
        let schema = json!({
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "What you want done or answered, in words, naming the fields you need."},
                "context": {"type": "object", "additionalProperties": true, "description": "Data for the planner's programs: each key becomes data/<key>."},
                "constraints": {"type": "object", "additionalProperties": true, "description": "Soft hints, e.g. {\"max_items\": 10, \"preferred_fields\": [\"name\"]}."}
            },
            "required": ["task"],
            "additionalProperties": false
        });
        let posture = if self.options.allow_writes {
            "The planner may call upstream tools that change things."
        } else {
            "Read-only: the planner sees only upstream tools marked read-only."
        };
        let limits = format!(
            "{} ms per task, {} turn(s), answers up to {} bytes",
            self.options.task_timeout.as_millis(),
            self.options.max_turns + self.options.retry_turns,
            self.options.max_result_bytes
        );
        let mut description =
            crate::server::card_body(LISP_TASK_CARD).replace("{{posture}}", posture).replace("{{limits}}", &limits);
        description.push_str("\n\n");
        description.push_str(&self.capability_summary());
        let Json::Object(schema) = schema else { return Tool::new("lisp_task", description, Arc::new(Map::new())) };
        Tool::new("lisp_task", description, Arc::new(schema)).with_annotations(
            ToolAnnotations::new()
                .read_only(!self.options.allow_writes)
                .destructive(self.options.allow_writes)
                .idempotent(false)
                .open_world(true),
        )
    }

    /// What the tool description says the planner can reach: the operator's summary, or
    /// the generated catalog cut to `capability_summary_max_bytes` at a line boundary.
    pub fn capability_summary(&self) -> String {
        if let Some(text) = &self.options.capability_summary {
            return text.clone();
        }
        let mut full = String::from("Upstream tools the planner can use:");
        for u in self.view.inner.upstreams.values() {
            match self.view.inner.visible(u) {
                Some(tools) => {
                    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                    full.push_str(&format!("\n- {}: {}", u.name, names.join(", ")));
                }
                None => full.push_str(&format!("\n- {}: (its tools are listed on first use)", u.name)),
            }
        }
        let max = self.options.capability_summary_max_bytes;
        if full.len() <= max {
            return full;
        }
        let note = "\n...(more tools)";
        let budget = max.saturating_sub(note.len());
        let mut out = String::new();
        for line in full.lines() {
            if out.len() + line.len() + 1 > budget {
                break;
            }
            out.push_str(line);
            out.push('\n');
        }
        out.truncate(out.trim_end().len());
        out.push_str(note);
        out
    }

    /// Runs one task (the caller holds an evaluation slot).
    pub async fn call(&self, args: Option<Map<String, Json>>, profile: ResponseProfile) -> CallPayload {
        self.call_traced(args, profile).await.0
    }

    /// [`call`](Self::call), also returning previews of the planner's prompts and answers
    /// when `trace_prompts` is on (for the server's traces only; never sent to the client).
    pub async fn call_traced(
        &self,
        args: Option<Map<String, Json>>,
        profile: ResponseProfile,
    ) -> (CallPayload, Option<Json>) {
        let started = Instant::now();
        let task_text =
            args.as_ref().and_then(|a| a.get("task")).and_then(Json::as_str).unwrap_or_default().to_string();
        let (prompt, context) = match parse_args(args) {
            Ok(p) => p,
            Err(message) => return (self.payload(error_body(McpReason::ArgsError, &message), profile), None),
        };
        let mut builder = SubAgent::builder(prompt);
        if !self.options.system_prefix.is_empty() || !self.options.system_suffix.is_empty() {
            builder = builder.system_prompt(ptc_subagent::SystemPrompt::Wrap {
                prefix: self.options.system_prefix.clone(),
                suffix: self.options.system_suffix.clone(),
            });
        }
        let agent = builder
            .context(context)
            .max_turns(self.options.max_turns)
            .retry_turns(self.options.retry_turns)
            .completion_mode(CompletionMode::Explicit)
            .mission_timeout(self.options.task_timeout)
            .timeout(self.limits.timeout)
            .limits(self.limits.clone())
            .llm_retry(LlmRetry { max_attempts: 1, ..LlmRetry::default() })
            .name("lisp_task")
            .prelude(self.planner_prelude.clone())
            .program_tools(Arc::new(PlannerTools { view: self.view.clone(), preludes: self.preludes.clone() }))
            .build();
        let agent = match agent {
            Ok(a) => a,
            Err(e) => return (self.payload(error_body(McpReason::ArgsError, &e.to_string()), profile), None),
        };
        let planner = Planner {
            inner: self.llm.clone(),
            timeout: self.options.planner_timeout,
            max_output_tokens: self.options.max_output_tokens,
        };
        let step = agent.run(&planner).await;
        let redactor = self.view.redactor();
        let mut body = Map::new();
        match (&step.return_value, &step.fail) {
            (Some(answer), None) => {
                let bytes = answer.to_string().len();
                if bytes > self.options.max_result_bytes {
                    body = error_body(
                        McpReason::ResultTooLarge,
                        &format!(
                            "the planner's answer is {bytes} bytes, over --agentic-max-result-bytes ({}); ask for fewer items or fields",
                            self.options.max_result_bytes
                        ),
                    );
                } else {
                    let mut answer = answer.clone();
                    redactor.scrub_json(&mut answer);
                    body.insert("status".into(), json!("ok"));
                    body.insert("answer".into(), answer);
                }
            }
            (_, Some(f)) => {
                // a turn limit hides why the planner did not answer: say what its last
                // program ran into
                let mut message = f.message.clone();
                if let Some(e) = step.turns.last().and_then(|t| t.error.as_deref()) {
                    message.push_str(&format!("; the planner's last program failed: {e}"));
                }
                body = reason_body(&f.reason, &redactor.scrub(&message));
            }
            // a mission ends in an answer or a failure; this keeps the payload total
            (None, None) => {
                body = error_body(
                    McpReason::Eval(ptc_lisp_eval::ErrorKind::RuntimeError),
                    "internal error: the planner ended without an answer or a failure",
                )
            }
        }
        if self.options.include_program
            && let Some(program) = step.turns.iter().rev().find_map(|t| t.program.clone())
        {
            body.insert("program".into(), json!(redactor.scrub(&program)));
        }
        body.insert("upstream_calls".into(), Json::Array(step.upstream_calls.clone()));
        let usage = &step.usage;
        body.insert(
            "planner".into(),
            json!({
                "model": self.options.model,
                "turns": usage.turns,
                "duration_ms": started.elapsed().as_millis() as u64,
                "tokens": {"input": usage.input_tokens, "output": usage.output_tokens, "total": usage.total_tokens},
            }),
        );
        let mut metrics =
            step.ptc_metrics.clone().unwrap_or_else(|| crate::upstream::ptc_metrics(&step.upstream_calls, 0, 0));
        if let Json::Object(m) = &mut metrics {
            let prompt_bytes: usize = step.turns.iter().map(|t| t.feedback.as_deref().map_or(0, str::len)).sum();
            let completion_bytes: usize = step.turns.iter().map(|t| t.raw_response.len()).sum();
            m.insert(
                "server_side_llm".into(),
                json!({
                    "requests": usage.llm_requests,
                    "feedback_bytes": prompt_bytes,
                    "completion_bytes": completion_bytes,
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                }),
            );
            m.insert(
                "efficiency_note".into(),
                json!("the planner's tokens are spent by this server; the client reads only this result"),
            );
        }
        body.insert("ptc_metrics".into(), metrics);
        let traced = self.options.trace_prompts.then(|| {
            let cut = |t: &str| {
                let t = redactor.scrub(t);
                if t.len() <= 2048 {
                    return t;
                }
                let mut end = 2048;
                while !t.is_char_boundary(end) {
                    end -= 1;
                }
                format!("{}...[{} bytes]", &t[..end], t.len())
            };
            json!({
                "task": cut(&task_text),
                "system_prefix": cut(&self.options.system_prefix),
                "system_suffix": cut(&self.options.system_suffix),
                "turns": step.turns.iter().map(|t| json!({
                    "number": t.number,
                    "response": cut(&t.raw_response),
                    "feedback": t.feedback.as_deref().map(cut),
                })).collect::<Vec<_>>(),
            })
        });
        (self.payload(body, profile), traced)
    }

    fn payload(&self, body: Map<String, Json>, profile: ResponseProfile) -> CallPayload {
        let is_error = body.get("status").and_then(Json::as_str) != Some("ok");
        let reason = if is_error { body.get("reason").and_then(Json::as_str).map(str::to_string) } else { None };
        let json = Json::Object(body);
        CallPayload {
            is_error,
            text: json.to_string(),
            structured: (profile != ResponseProfile::Slim).then_some(json),
            reason,
        }
    }
}

fn error_body(reason: McpReason, message: &str) -> Map<String, Json> {
    reason_body(reason.as_str(), message)
}

/// An error body with the planner mission's own reason (the agent loop's, or the
/// program's `(fail {:reason ...})`).
fn reason_body(reason: &str, message: &str) -> Map<String, Json> {
    let mut m = Map::new();
    m.insert("status".into(), json!("error"));
    m.insert("reason".into(), json!(reason));
    m.insert("message".into(), json!(message));
    m
}

/// The mission prompt and context of a call's arguments.
fn parse_args(args: Option<Map<String, Json>>) -> Result<(String, Map<String, Json>), String> {
    let mut args = args.unwrap_or_default();
    if let Some(k) = args.keys().find(|k| !matches!(k.as_str(), "task" | "context" | "constraints")) {
        return Err(format!("unknown argument `{k}`; lisp_task takes task, context and constraints"));
    }
    let task = match args.remove("task") {
        Some(Json::String(t)) if t.trim().is_empty() => {
            return Err("argument `task` is blank; say what you need".into());
        }
        Some(Json::String(t)) if t.len() > MAX_TASK_BYTES => {
            return Err(format!("argument `task` is {} bytes, over {MAX_TASK_BYTES}; say it shorter", t.len()));
        }
        Some(Json::String(t)) => t,
        Some(_) => return Err("argument `task` must be a string".into()),
        None => return Err("missing argument `task`: pass {\"task\": \"what you need\"}".into()),
    };
    let mut context = match args.remove("context") {
        None | Some(Json::Null) => Map::new(),
        Some(Json::Object(c)) => c,
        Some(_) => return Err("argument `context` must be a JSON object; each key becomes data/<key>".into()),
    };
    if let Some(k) = context.keys().find(|k| k.is_empty() || k.contains('/') || k.as_str() == "task") {
        return Err(format!(
            "context key {k:?} is invalid: keys must be non-empty, without '/', and not \"task\" (the task itself)"
        ));
    }
    let mut prompt = "{{task}}".to_string();
    match args.remove("constraints") {
        None | Some(Json::Null) => {}
        Some(Json::Object(c)) => {
            prompt.push_str("\n\nConstraints (soft): {{constraints}}");
            context.insert("constraints".into(), Json::String(Json::Object(c).to_string()));
        }
        Some(_) => return Err("argument `constraints` must be a JSON object, e.g. {\"max_items\": 10}".into()),
    }
    context.insert("task".into(), Json::String(task));
    Ok((prompt, context))
}

/// The names (`server/tool`) of the tools in view that say they are read-only, and of
/// the others.
fn read_only_split(rt: &UpstreamRuntime) -> (Vec<String>, Vec<String>) {
    let (mut read_only, mut other) = (Vec::new(), Vec::new());
    for u in rt.inner.upstreams.values() {
        let Some(tools) = rt.inner.visible(u) else { continue };
        for t in tools.iter() {
            let name = format!("{}/{}", u.name, t.name);
            if t.annotations.get("readOnlyHint").and_then(Json::as_bool) == Some(true) {
                read_only.push(name);
            } else {
                other.push(name);
            }
        }
    }
    (read_only, other)
}

/// What the planner's programs reach besides their own definitions: the upstreams in
/// view, with discovery of the server's preludes over them (as `lisp_eval` has it).
struct PlannerTools {
    view: UpstreamRuntime,
    preludes: Arc<Preludes>,
}

impl ProgramTools for PlannerTools {
    fn host(&self) -> Arc<dyn ptc_lisp_eval::Host> {
        let inner = ProgramTools::host(&self.view);
        if self.preludes.is_empty() {
            return inner;
        }
        Arc::new(PreludeHost { inner, preludes: self.preludes.clone() })
    }

    fn prompt(&self) -> Option<String> {
        ProgramTools::prompt(&self.view)
    }

    fn calls(&self, outcome: &ptc_lisp_eval::Outcome) -> Vec<Json> {
        ProgramTools::calls(&self.view, outcome)
    }

    fn metrics(&self, calls: &[Json], answer_bytes: u64, prints_bytes: u64) -> Json {
        ProgramTools::metrics(&self.view, calls, answer_bytes, prints_bytes)
    }
}

/// The planner as the loop sees it: each request capped in time and output tokens.
struct Planner {
    inner: Arc<dyn Llm>,
    timeout: Duration,
    max_output_tokens: u32,
}

impl Llm for Planner {
    fn complete<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        Box::pin(async move {
            let mut request = request.clone();
            request.options.max_output_tokens = Some(
                request.options.max_output_tokens.map_or(self.max_output_tokens, |n| n.min(self.max_output_tokens)),
            );
            match tokio::time::timeout(self.timeout, self.inner.complete(&request)).await {
                Ok(answer) => answer,
                Err(_) => Err(LlmError::new(
                    LlmErrorKind::Timeout,
                    format!(
                        "the planner did not answer within {} ms (--agentic-planner-timeout-ms)",
                        self.timeout.as_millis()
                    ),
                )),
            }
        })
    }

    fn name(&self) -> String {
        self.inner.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_card_fits_its_budget() {
        let budget: usize = LISP_TASK_CARD
            .lines()
            .find_map(|l| l.strip_prefix("budget_bytes: "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        let body = crate::server::card_body(LISP_TASK_CARD);
        assert!(budget > 0 && body.len() <= budget, "lisp_task card is {} bytes, budget {budget}", body.len());
        assert!(body.contains("{{posture}}") && body.contains("{{limits}}"));
    }

    #[test]
    fn arguments_are_checked_and_the_task_is_never_a_template() {
        let args = |v: Json| v.as_object().cloned();
        let (prompt, ctx) =
            parse_args(args(json!({"task": "count {{x}}", "constraints": {"max_items": 3}}))).unwrap_or_default();
        assert_eq!(prompt, "{{task}}\n\nConstraints (soft): {{constraints}}");
        assert_eq!(ctx["task"], json!("count {{x}}"));
        for (bad, needle) in [
            (json!({}), "missing argument `task`"),
            (json!({"task": " "}), "blank"),
            (json!({"task": "x", "program": "(+ 1 2)"}), "unknown argument `program`"),
            (json!({"task": "x", "context": {"a/b": 1}}), "context key \"a/b\" is invalid"),
            (json!({"task": "x", "context": {"task": 1}}), "context key \"task\" is invalid"),
            (json!({"task": "x", "constraints": 3}), "`constraints` must be a JSON object"),
        ] {
            let e = parse_args(args(bad)).err().unwrap_or_default();
            assert!(e.contains(needle), "{e}");
        }
    }

    #[test]
    fn subagent_config_keeps_to_its_keys() {
        let c = SubagentConfig::parse(
            r#"{"max_turns": 2, "retry_turns": 0, "system_prompt": {"prefix": "P", "suffix": "S"}}"#,
        )
        .unwrap();
        assert_eq!((c.max_turns, c.retry_turns, c.prefix.as_str(), c.suffix.as_str()), (Some(2), Some(0), "P", "S"));
        for (text, needle) in [
            (r#"{"completion_mode": "x"}"#, "key `completion_mode` is not allowed"),
            (r#"{"_secret": 1}"#, "key `_secret`"),
            (r#"{"max_turns": 0}"#, "at least 1"),
            (r#"{"system_prompt": {"replace": "x"}}"#, "only prefix and suffix"),
            (r#"{"system_prompt": "x"}"#, "must be an object"),
            ("[1]", "JSON object"),
            ("{", "not JSON"),
        ] {
            let e = SubagentConfig::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
