//! A turn of the native-tool modes (`lisp-tool`, `text`, `combined`): the model answers
//! with text (the final answer) or with native tool calls, and every call gets exactly one
//! tool result — also when it is refused — before the next request.

use std::time::Instant;

use ptc_lisp_eval::RunResult;
use ptc_signature::Type;
use serde_json::{Value as Json, json};

use crate::exec::{self, Layer};
use crate::llm::{Message, NativeToolCall, TokenUsage};
use crate::mission::{LastTurn, Mission, Next, error_text, user_fail};
use crate::mode::{Mode, NativeResult};
use crate::preview;
use crate::protocol::{self, LISP_EVAL};
use crate::step::{ToolCallTrace, Turn, TurnKind};
use ptc_lisp_eval::Exposure;

/// One paired tool result.
struct Reply {
    call_id: String,
    name: String,
    content: Json,
    is_error: bool,
}

impl Reply {
    fn new(call: &NativeToolCall, content: Json) -> Self {
        let is_error = content.get("status").and_then(Json::as_str) == Some("error");
        Reply { call_id: call.id.clone(), name: call.name.clone(), content, is_error }
    }
}

impl Mission<'_> {
    /// One turn of a native-tool mode.
    pub(crate) async fn tool_turn(&mut self, number: u32, kind: TurnKind, span: tracing::Span) -> Next {
        let started = Instant::now();
        let request = self.request(number);
        let mut tokens = TokenUsage::default();
        let response = match self.ask(&request, &mut tokens).await {
            Ok(r) => r,
            Err(fail) => return Next::Done(Err(fail)),
        };
        span.record("input_tokens", tokens.input);
        span.record("output_tokens", tokens.output);
        self.consume_turn();
        let mut turn = Turn::start(number, kind, &tokens);
        turn.raw_response = response.content.clone();
        let next = if response.tool_calls.is_empty() {
            self.messages.push(Message::assistant(response.content.clone()));
            self.final_answer(kind, &response.content, &mut turn)
        } else {
            self.messages.push(Message::Assistant {
                content: response.content.clone(),
                tool_calls: response.tool_calls.clone(),
            });
            let (replies, next) = self.answer_calls(number, &response.tool_calls, &mut turn, &span).await;
            // universal pairing: one result per call, in the calls' order
            for r in replies {
                let content = serde_json::to_string(&r.content).unwrap_or_else(|_| r.content.to_string());
                self.messages.push(Message::ToolResult {
                    call_id: r.call_id,
                    name: r.name,
                    content,
                    is_error: r.is_error,
                });
            }
            next
        };
        self.end_turn(turn, &next, started, &span);
        next
    }

    /// A text answer: the final answer when it fits the signature, else feedback.
    fn final_answer(&mut self, kind: TurnKind, content: &str, turn: &mut Turn) -> Next {
        turn.result = Some(content.to_string());
        let cfg = self.agent.config.clone();
        match self.parse_answer(content) {
            Ok(json) => Next::Done(Ok(json)),
            Err(problem) => {
                turn.error = Some(problem.clone());
                self.last = LastTurn::Other;
                if self.budget.work_left == 0 && cfg.retry_turns > 0 {
                    self.budget.in_retry = true;
                }
                let expected = cfg
                    .signature
                    .as_ref()
                    .map(|s| ptc_signature::render_type(&s.output, ptc_signature::KeyStyle::AsWritten))
                    .unwrap_or_else(|| ":string".into());
                self.after_non_return(kind, json_error(&problem, content, &expected))
            }
        }
    }

    /// The answer as JSON, validated against the signature: raw text for no signature or
    /// `:string`/`:any`; JSON for maps and lists (lists may come wrapped as
    /// `{"items": [...]}`); a coerced scalar otherwise.
    fn parse_answer(&self, content: &str) -> Result<Json, String> {
        let cfg = &self.agent.config;
        let Some(sig) = &cfg.signature else { return Ok(Json::String(content.to_string())) };
        let output = sig.output.required();
        if matches!(output, Type::String | Type::Any) {
            return Ok(Json::String(content.to_string()));
        }
        if crate::extract::trim(content).is_empty() {
            return Err("the answer is empty".into());
        }
        let text = strip_json_fence(content);
        let value = match output {
            Type::Object { .. } | Type::Map | Type::List(_) => {
                let mut parsed: Json =
                    serde_json::from_str(text).map_err(|e| format!("the answer is not valid JSON: {e}"))?;
                if let (Type::List(_), Json::Object(m)) = (output, &parsed)
                    && m.len() == 1
                    && let Some(items) = m.get("items")
                {
                    parsed = items.clone();
                }
                ptc_lisp_eval::json::from_json(&parsed)
            }
            _ => {
                let raw = serde_json::from_str::<Json>(text).unwrap_or_else(|_| Json::String(text.to_string()));
                let (coerced, report) = ptc_signature::coerce(&ptc_lisp_eval::json::from_json(&raw), &sig.output);
                if !report.is_ok() {
                    return Err(format!("the answer does not match the expected type:\n{}", report.render_errors()));
                }
                coerced
            }
        };
        self.accept(&value).map_err(|feedback| feedback.replace("call (return ...) with", "answer with"))
    }

    /// Runs or refuses the calls of one answer. Returns the replies (one per call) and
    /// what the mission does next.
    async fn answer_calls(
        &mut self,
        number: u32,
        calls: &[NativeToolCall],
        turn: &mut Turn,
        span: &tracing::Span,
    ) -> (Vec<Reply>, Next) {
        let mode = self.agent.config.mode;
        let lisp_calls = calls.iter().filter(|c| c.name == LISP_EVAL).count();
        let offered: Vec<String> = self.offered.iter().map(|t| t.name.clone()).collect();
        if mode.has_lisp_eval() && calls.len() > 1 && (mode == Mode::LispTool || lisp_calls > 0) {
            let error = if mode == Mode::LispTool || lisp_calls == calls.len() {
                protocol::multiple_tool_calls()
            } else {
                protocol::mixed_with_lisp_eval()
            };
            self.last = LastTurn::Other;
            turn.error = error["message"].as_str().map(str::to_string);
            return (calls.iter().map(|c| Reply::new(c, error.clone())).collect(), Next::Proceed);
        }
        if lisp_calls == 1 && calls.len() == 1 && mode.has_lisp_eval() {
            return self.lisp_eval(number, &calls[0], turn, span).await;
        }
        let mut replies = Vec::new();
        for call in calls {
            if !offered.contains(&call.name) || call.name == LISP_EVAL {
                replies.push(Reply::new(call, protocol::unknown_tool(&call.name, &offered)));
                continue;
            }
            replies.push(self.native_call(number, call, turn).await);
        }
        self.last = LastTurn::Other;
        (replies, Next::Proceed)
    }

    /// One app tool called natively: counted against `max_tool_calls`, served from the
    /// shared cache when possible, its result (or preview) as the reply.
    async fn native_call(&mut self, number: u32, call: &NativeToolCall, turn: &mut Turn) -> Reply {
        let cfg = self.agent.config.clone();
        if let Some(max) = cfg.max_tool_calls
            && self.native_calls >= max
        {
            let message = format!(
                "Tool call limit reached: at most {max} native tool calls per run (max_tool_calls); lisp_eval does not count."
            );
            return Reply::new(call, protocol::error_json("tool_call_limit_exceeded", &message));
        }
        self.native_calls += 1;
        let tools = self.agent.tools.clone();
        let cache = self.cache.clone();
        let observer = self.observer.clone();
        let cancel = self.cancel.child();
        let name = call.name.clone();
        let args = ptc_lisp_eval::json::from_json(&call.args);
        let deadline = Instant::now() + cfg.limits.timeout;
        // a native call of an agent tool or LLM tool reaches the mission tree like a
        // program's call does: the nest, with this mission's model answering meanwhile
        let (nest, asks) = self.tool_nest(&cancel);
        let work = tokio::task::spawn_blocking(move || {
            exec::invoke(
                &tools,
                &cache,
                observer.as_deref(),
                Layer::Native,
                number,
                Some(&nest),
                &name,
                &args,
                deadline,
                &cancel,
            )
        });
        let inv = crate::nesting::serve_while(self.llm(), asks, work).await;
        let inv = match inv {
            Ok(inv) => inv,
            Err(e) => {
                return Reply::new(
                    call,
                    protocol::error_json("tool_error", &format!("internal error: the tool's thread failed: {e}")),
                );
            }
        };
        turn.tool_calls.push(ToolCallTrace {
            name: call.name.clone(),
            args: inv.args.clone(),
            result: inv.result.as_ref().ok().cloned(),
            error: inv.result.as_ref().err().map(|e| e.message.clone()),
            duration_ms: inv.duration_ms,
            exposure_layer: Layer::Native.as_str().into(),
            cached: inv.cached,
        });
        match inv.result {
            Ok(result) => {
                let prepared = self.agent.tools.get(&call.name);
                let previewed =
                    cfg.mode == Mode::Combined && prepared.is_some_and(|p| p.expose == Exposure::Both && p.tool.cache);
                if previewed {
                    let how = prepared.and_then(|p| p.tool.native_result.clone()).unwrap_or(NativeResult::Metadata);
                    Reply::new(call, preview::render(&call.name, &inv.args, &result, &how))
                } else {
                    Reply::new(call, result)
                }
            }
            Err(e) => Reply::new(call, protocol::error_json(&e.kind.to_string(), &e.message)),
        }
    }

    /// A `lisp_eval` call: run the program and answer with its outcome. In `lisp-tool`
    /// mode `(return v)` and `(fail v)` end the mission; in combined mode they are tool
    /// results like any other and the model writes the answer.
    async fn lisp_eval(
        &mut self,
        number: u32,
        call: &NativeToolCall,
        turn: &mut Turn,
        span: &tracing::Span,
    ) -> (Vec<Reply>, Next) {
        let cfg = self.agent.config.clone();
        let program = match protocol::program_arg(&call.args) {
            Ok(p) => p,
            Err(message) => {
                turn.error = Some(message.clone());
                self.last = LastTurn::Other;
                return (vec![Reply::new(call, protocol::error_json("args_error", &message))], Next::Proceed);
            }
        };
        turn.program = Some(program.clone());
        let executed = self.execute(number, program, span.clone()).await;
        let outcome = executed.outcome;
        turn.prints = outcome.prints.clone();
        turn.tool_calls.extend(outcome.tool_calls.iter().map(crate::mission::trace_call));
        self.account_upstream(&outcome, turn);
        let old_memory = self.memory.clone();
        let short_circuit = cfg.mode == Mode::LispTool;
        let info = self.turn_info().trim().to_string();
        let rendered = |m: &Mission<'_>| protocol::outcome_json(&outcome, &old_memory, &m.agent.config.format, &info);
        match &outcome.result {
            RunResult::Error(e) => {
                turn.error = Some(error_text(e));
                self.last = LastTurn::Error { reason: e.kind.as_str().to_string(), message: e.message.clone() };
                (vec![Reply::new(call, rendered(self))], Next::Proceed)
            }
            RunResult::Failed(v) => {
                turn.result = Some(outcome.printed.clone());
                let reply = Reply::new(call, rendered(self));
                self.memory = outcome.memory.clone();
                self.last = LastTurn::Other;
                if short_circuit { (vec![reply], Next::Done(Err(user_fail(v)))) } else { (vec![reply], Next::Proceed) }
            }
            RunResult::Returned(v) | RunResult::Value(v) => {
                turn.result = Some(outcome.printed.clone());
                if let Err(next) = self.check_memory(&outcome.memory) {
                    let message = match &next {
                        Next::Continue(m) => m.clone(),
                        _ => "Memory limit exceeded.".into(),
                    };
                    let reply = Reply::new(call, protocol::error_json("memory_limit", &message));
                    let next = if let Next::Done(_) = next { next } else { Next::Proceed };
                    return (vec![reply], next);
                }
                let returned = matches!(outcome.result, RunResult::Returned(_));
                if short_circuit && returned {
                    return match self.accept(v) {
                        Ok(json) => {
                            self.memory = outcome.memory.clone();
                            (vec![Reply::new(call, rendered(self))], Next::Done(Ok(json)))
                        }
                        Err(feedback) => {
                            self.rejected = true;
                            if self.budget.work_left == 0 && cfg.retry_turns > 0 {
                                self.budget.in_retry = true;
                            }
                            self.memory = outcome.memory.clone();
                            self.last = LastTurn::Other;
                            let mut reply = protocol::error_json("validation_error", &feedback);
                            reply["feedback"] = json!(info);
                            (vec![Reply::new(call, reply)], Next::Proceed)
                        }
                    };
                }
                let reply = Reply::new(call, rendered(self));
                self.memory = outcome.memory.clone();
                if !returned {
                    self.history.push(crate::feedback::truncate_for_history(v, cfg.format.history_max_bytes));
                    if self.history.len() > 3 {
                        self.history.remove(0);
                    }
                }
                // combined mode has no implicit answer: the model writes it
                self.last = if short_circuit { LastTurn::Value(v.clone()) } else { LastTurn::Other };
                (vec![reply], Next::Proceed)
            }
        }
    }
}

/// The JSON-error retry message.
fn json_error(problem: &str, answer: &str, expected: &str) -> String {
    let shown: String = answer.chars().take(500).collect();
    format!(
        "<error_feedback>\nYour answer could not be used: {problem}\n\nYour answer was:\n{shown}\n\nAnswer again with only the final answer, matching `{expected}` (JSON for maps and lists, no code fences, no prose).\n</error_feedback>"
    )
}

/// The JSON inside a ```json fence, or the trimmed text.
fn strip_json_fence(text: &str) -> &str {
    let t = text.trim();
    for open in ["```json", "```JSON", "```"] {
        if let Some(rest) = t.strip_prefix(open)
            && let Some(inner) = rest.trim_end().strip_suffix("```")
        {
            return inner.trim();
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_are_optional() {
        assert_eq!(strip_json_fence("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(strip_json_fence("  [1, 2] "), "[1, 2]");
    }

    #[test]
    fn the_json_error_names_problem_answer_and_format() {
        let m = json_error("the answer is not valid JSON: EOF", "{", "{count :int}");
        assert!(m.starts_with("<error_feedback>\nYour answer could not be used: the answer is not valid JSON"));
        assert!(m.contains("Your answer was:\n{\n") && m.contains("`{count :int}`"));
    }
}
