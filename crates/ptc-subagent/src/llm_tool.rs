//! [`LlmTool`]: a single-turn judgment tool. A program calls it like any tool; the call's
//! arguments fill a prompt template, one model request is made, and the model's JSON
//! answer is checked (and coerced) against the signature's output before the program
//! sees it.
//!
//! Templates: `{{var}}`, `{{a.b}}` (nested fields), `{{#items}}...{{/items}}` (once per
//! element, with the element's fields in scope; an empty list renders as nothing). Every
//! placeholder must name a signature input — checked when the tool is made.
//!
//! The model is the caller's (default), a registry alias, or an explicit one
//! ([`LlmRef`]). With [`LlmTool::tools`] the tool becomes a multi-turn agent tool instead.

use std::sync::Arc;
use std::time::Instant;

use ptc_lisp_eval::Value;
use ptc_signature::{KeyStyle, Signature, Template, Type};
use serde_json::Value as Json;

use crate::config::{ConfigError, SubAgent};
use crate::llm::{Llm, LlmOptions, LlmRequest, LlmResponse, Message};
use crate::nesting::{LlmRef, resolve_llm};
use crate::observe::Event;
use crate::reason::Reason;
use crate::retry::LlmRetry;
use crate::step::{ChildStep, Fail, Status, Step, StepUsage, Turn, TurnKind};
use crate::tool::{Tool, ToolContext, ToolError};

/// The system prompt of every judgment request.
pub const JUDGMENT_SYSTEM_PROMPT: &str = "You are a judgment function called by a program. Read the task and answer with one JSON value only: no prose, no code fences, no comments. The value must match the type given after the task exactly (field names as written).";

/// A templated single-turn judgment tool; see the module documentation.
///
/// ```
/// use ptc_subagent::LlmTool;
/// let urgent = LlmTool::new("Is this email urgent? Subject: {{subject}}",
///                           "(subject :string) -> {urgent :bool, reason :string}")
///     .into_tool("evaluate")?;
/// assert_eq!(urgent.name(), "evaluate");
/// let err = LlmTool::new("Is {{body}} urgent?", "(subject :string) -> :bool").into_tool("x").unwrap_err();
/// assert_eq!(err.option, "prompt");
/// # Ok::<(), ptc_subagent::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct LlmTool {
    prompt: String,
    signature: String,
    llm: LlmRef,
    description: Option<String>,
    retry: LlmRetry,
    tools: Option<Vec<Tool>>,
}

impl LlmTool {
    /// A judgment tool: `prompt` is a template over the inputs of `signature`.
    pub fn new(prompt: impl Into<String>, signature: impl Into<String>) -> Self {
        LlmTool {
            prompt: prompt.into(),
            signature: signature.into(),
            llm: LlmRef::Caller,
            description: None,
            retry: LlmRetry::default(),
            tools: None,
        }
    }

    /// The model to ask (default: the caller's).
    pub fn llm(mut self, llm: LlmRef) -> Self {
        self.llm = llm;
        self
    }

    /// What the tool does, for the calling model (default: the prompt's first line).
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// Retry policy of the model request.
    pub fn llm_retry(mut self, retry: LlmRetry) -> Self {
        self.retry = retry;
        self
    }

    /// Tools for the judgment: the tool then runs as a multi-turn agent (an agent tool)
    /// rather than a single request.
    pub fn tools(mut self, tools: Vec<Tool>) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Checks the template against the signature and makes the tool `name`.
    pub fn into_tool(self, name: impl Into<String>) -> Result<Tool, ConfigError> {
        let name = name.into();
        let description = self.description.clone().unwrap_or_else(|| {
            let first = self.prompt.lines().next().unwrap_or_default().trim();
            format!("LLM judgment: {first}")
        });
        if let Some(tools) = self.tools {
            let mut builder =
                SubAgent::builder(self.prompt).signature(self.signature).description(description).name(name.clone());
            for t in tools {
                builder = builder.tool(t);
            }
            builder.compose.llm = self.llm;
            return builder.as_tool(name);
        }
        let template = Template::parse(&self.prompt).map_err(|e| ConfigError::new("prompt", e.0))?;
        let signature = ptc_signature::parse(&self.signature)
            .map_err(|e| ConfigError::new("signature", format!("LLM tool {name:?}: {e}")))?;
        template
            .validate_against(&signature)
            .map_err(|e| ConfigError::new("prompt", format!("LLM tool {name:?}: {}", e.0)))?;
        let spec = Arc::new(Judgment { name: name.clone(), template, signature, llm: self.llm, retry: self.retry });
        // the model request runs as a task on the mission's runtime (no thread held)
        Ok(Tool::new_async(name, move |args, cx| {
            let spec = spec.clone();
            async move { spec.call(args, &cx).await }
        })
        .signature(self.signature)
        .description(description))
    }
}

/// A made judgment tool.
struct Judgment {
    name: String,
    template: Template,
    signature: Signature,
    llm: LlmRef,
    retry: LlmRetry,
}

impl Judgment {
    async fn call(&self, args: Json, cx: &ToolContext) -> Result<Json, ToolError> {
        let started = Instant::now();
        // inside a mission tree the judgment is a nested turn: one turn of the shared
        // budget, at the caller's depth + 1
        let mut depth = 1;
        if let Some(nest) = cx.nest.as_ref() {
            match nest.nesting.admit_nested_turn(&self.name) {
                Ok(d) => depth = d,
                Err(f) => {
                    let step = self.step("", &Err(f.clone()), Default::default(), 0, started);
                    nest.nesting.record(ChildStep { turn: cx.turn, tool: self.name.clone(), step });
                    return Err(self.error(&f));
                }
            }
        }
        let llm = match (&self.llm, cx.nest.as_ref()) {
            (LlmRef::Explicit(l), _) => l.clone(),
            (_, Some(nest)) => resolve_llm(&LlmRef::Caller, &self.llm, nest).map_err(|f| self.error(&f))?,
            (_, None) => {
                return Err(ToolError::failed(format!(
                    "tool/{} uses the caller's model and runs only inside an agent mission",
                    self.name
                )));
            }
        };
        let task = self.template.render(&ptc_lisp_eval::json::from_json(&args));
        let expected = ptc_signature::render_type(&self.signature.output, KeyStyle::AsWritten);
        let request = LlmRequest {
            system: JUDGMENT_SYSTEM_PROMPT.to_string(),
            messages: vec![Message::user(format!("{task}\n\nAnswer with JSON of type: {expected}"))],
            turn: cx.turn,
            tools: Vec::new(),
            options: LlmOptions {
                response_schema: Some(ptc_signature::schema::type_to_schema(&self.signature.output)),
                ..LlmOptions::default()
            },
        };
        let report = |event: Event| {
            if let Some(nest) = cx.nest.as_ref()
                && let Some(observer) = &nest.observer
            {
                let inner = Box::new(event);
                observer.event(&Event::Nested { agent: self.name.clone(), depth, inner });
            }
        };
        report(Event::RunStart { agent: Some(self.name.clone()), max_turns: 1 });
        // inside a mission tree the request is charged to the tree's budgets
        let model = llm.name();
        let cost = cx.nest.as_ref().map(|n| n.nesting.cost());
        let price = cost.and_then(|c| c.price(None, &model));
        let charge = cost.map(|c| (c, price.as_ref()));
        let (answer, usage, requests) = ask(llm.as_ref(), &request, &self.retry, cx.deadline, &report, charge).await;
        let (raw, result) = match answer {
            Ok(r) => {
                let checked = self.check(&r.content);
                (r.content, checked)
            }
            Err(f) => (String::new(), Err(f)),
        };
        let mut step = self.step(&raw, &result, usage, requests, started);
        step.usage.cost_usd = price.map(|p| p.cost(&usage));
        if let Some(turn) = step.turns.first() {
            report(Event::TurnEnd { turn: turn.clone() });
        }
        report(Event::RunEnd {
            status: step.status,
            return_value: step.return_value.clone(),
            fail: step.fail.clone(),
            usage: step.usage.clone(),
        });
        if let Some(nest) = cx.nest.as_ref() {
            nest.nesting.record(ChildStep { turn: cx.turn, tool: self.name.clone(), step });
        }
        result.map_err(|f| self.error(&f))
    }

    /// The answer's JSON, coerced to the output type, or why it does not fit.
    fn check(&self, content: &str) -> Result<Json, Fail> {
        let Some(json) = find_json(content) else {
            return Err(Fail::new(
                Reason::ValidationError,
                format!("the model's answer is not JSON: {}", preview(content, 200)),
            ));
        };
        let value = ptc_lisp_eval::json::from_json(&json);
        let ty: &Type = &self.signature.output;
        let (coerced, report) = ptc_signature::coerce(&value, ty);
        if !report.is_ok() {
            return Err(Fail::new(
                Reason::ValidationError,
                format!(
                    "the model's answer does not match {}:\n{}",
                    ptc_signature::render_type(ty, KeyStyle::AsWritten),
                    report.render_errors()
                ),
            ));
        }
        let normalized: Value = crate::mission::normalize_keys(&coerced);
        ptc_lisp_eval::json::to_json(&normalized).map_err(|e| Fail::new(Reason::ValidationError, e.to_string()))
    }

    fn error(&self, f: &Fail) -> ToolError {
        ToolError::failed(format!("LLM tool {} failed ({}): {}", self.name, f.reason, f.message))
    }

    /// The judgment as a one-turn step (kept in the caller's step as a child).
    fn step(
        &self,
        raw: &str,
        result: &Result<Json, Fail>,
        usage: crate::llm::TokenUsage,
        requests: u32,
        started: Instant,
    ) -> Step {
        let duration_ms = started.elapsed().as_millis() as u64;
        let turns = if raw.is_empty() {
            Vec::new()
        } else {
            vec![Turn {
                number: 1,
                kind: TurnKind::MustReturn,
                raw_response: raw.to_string(),
                program: None,
                result: result.as_ref().ok().map(|j| j.to_string()),
                error: result.as_ref().err().map(|f| format!("{}: {}", f.reason, f.message)),
                prints: Vec::new(),
                tool_calls: Vec::new(),
                feedback: None,
                input_tokens: usage.input,
                output_tokens: usage.output,
                duration_ms,
                upstream_calls: Vec::new(),
            }]
        };
        Step {
            status: if result.is_ok() { Status::Ok } else { Status::Error },
            return_value: result.as_ref().ok().cloned(),
            fail: result.as_ref().err().cloned(),
            memory: Default::default(),
            usage: StepUsage {
                turns: turns.len() as u32,
                llm_requests: requests,
                input_tokens: usage.input,
                output_tokens: usage.output,
                cache_read_tokens: usage.cache_read,
                cache_write_tokens: usage.cache_write,
                total_tokens: usage.input + usage.output,
                duration_ms,
                ..StepUsage::default()
            },
            own_usage: None,
            turns,
            name: Some(self.name.clone()),
            children: Vec::new(),
            signature: Some(ptc_signature::render(&self.signature)),
            warnings: Vec::new(),
            upstream_calls: Vec::new(),
            ptc_metrics: None,
        }
    }
}

/// One request with retries, within `deadline`: the answer (or the failure), the tokens,
/// the number of requests sent.
async fn ask(
    llm: &dyn Llm,
    request: &LlmRequest,
    retry: &LlmRetry,
    deadline: Instant,
    report: &(dyn Fn(Event) + Sync),
    charge: Option<(&crate::cost::CostScope, Option<&crate::llm::ModelPrice>)>,
) -> (Result<LlmResponse, Fail>, crate::llm::TokenUsage, u32) {
    let mut usage = crate::llm::TokenUsage::default();
    let mut attempt = 0;
    loop {
        attempt += 1;
        // the estimate is reserved in the tree's budgets, and replaced by the actual cost
        let reservation = match charge {
            Some((scope, price)) => {
                match scope.reserve(price, &llm.name(), |p| crate::cost::estimate(p, request, 0), request.turn) {
                    Ok(r) => r,
                    Err(fail) => return (Err(fail), usage, attempt - 1),
                }
            }
            None => crate::cost::Reservation::default(),
        };
        let settle = |actual: Option<&crate::llm::TokenUsage>| {
            if let Some((scope, price)) = charge {
                let usd = actual.zip(price).map_or(0.0, |(u, p)| p.cost(u));
                scope.settle(reservation, usd);
            }
        };
        report(Event::LlmRequest {
            turn: 1,
            attempt,
            system: request.system.clone(),
            messages: request.messages.clone(),
            tools: request.tools.clone(),
        });
        let started = Instant::now();
        let answer = match tokio::time::timeout_at(deadline.into(), crate::llm::complete_contained(llm, request)).await
        {
            Ok(a) => a,
            Err(_) => {
                settle(None);
                return (
                    Err(Fail::new(Reason::Timeout, "the model did not answer before the program's deadline")),
                    usage,
                    attempt,
                );
            }
        };
        match answer {
            Ok(r) => {
                settle(Some(&r.usage));
                usage.add(&r.usage);
                report(Event::LlmResponse {
                    turn: 1,
                    attempt,
                    content: r.content.clone(),
                    tool_calls: r.tool_calls.clone(),
                    usage: r.usage,
                    duration_ms: started.elapsed().as_millis() as u64,
                });
                return (Ok(r), usage, attempt);
            }
            Err(e) => {
                settle(None);
                let again = retry.should_retry(&e, attempt);
                report(Event::LlmError {
                    turn: 1,
                    attempt,
                    kind: e.kind.to_string(),
                    message: e.message.clone(),
                    retry_in_ms: again.then(|| retry.delay(&e, attempt).as_millis() as u64),
                });
                if !again {
                    let fail =
                        Fail::new(Reason::LlmError, format!("LLM request failed after {attempt} attempt(s): {e}"));
                    return (Err(fail), usage, attempt);
                }
                let delay = retry.delay(&e, attempt);
                if Instant::now() + delay >= deadline {
                    return (
                        Err(Fail::new(Reason::Timeout, format!("no time left to retry the model: {e}"))),
                        usage,
                        attempt,
                    );
                }
                tokio::time::sleep(delay).await;
            }
        }
    }
}

fn preview(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// The JSON in a model's answer: the whole text, a fenced block, or the outermost
/// `{...}` / `[...]`.
pub(crate) fn find_json(text: &str) -> Option<Json> {
    let t = text.trim();
    if let Ok(j) = serde_json::from_str::<Json>(t) {
        return Some(j);
    }
    if let Some(start) = t.find("```") {
        let body = &t[start + 3..];
        let body = body.split_once('\n').map_or(body, |(_, rest)| rest);
        if let Some(end) = body.find("```")
            && let Ok(j) = serde_json::from_str::<Json>(body[..end].trim())
        {
            return Some(j);
        }
    }
    for (open, close) in [('{', '}'), ('[', ']')] {
        if let (Some(a), Some(b)) = (t.find(open), t.rfind(close))
            && a < b
            && let Ok(j) = serde_json::from_str::<Json>(&t[a..=b])
        {
            return Some(j);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::find_json;

    #[test]
    fn json_is_found_bare_fenced_or_inside_prose() {
        assert_eq!(find_json("{\"a\": 1}"), Some(json!({"a": 1})));
        assert_eq!(find_json("```json\n[1, 2]\n```"), Some(json!([1, 2])));
        assert_eq!(find_json("Sure! {\"urgent\": true} hope that helps"), Some(json!({"urgent": true})));
        assert_eq!(find_json("true"), Some(json!(true)));
        assert_eq!(find_json("no idea"), None);
    }
}
