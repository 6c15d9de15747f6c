//! OpenAI Chat Completions, and every server that speaks it (Ollama's `/v1`, vLLM,
//! LM Studio, OpenRouter, Groq).
//!
//! Mapping: the system prompt is the first `system` message; assistant tool calls are
//! `tool_calls[]` with JSON-encoded `arguments`; each tool result is a `tool` message
//! carrying the `tool_call_id` it answers. Usage comes from `usage.prompt_tokens`,
//! `completion_tokens` and `prompt_tokens_details.cached_tokens`.

use ptc_llm::{BoxFuture, Llm, LlmError, LlmErrorKind, LlmRequest, LlmResponse, Message, NativeToolCall, TokenUsage};
use serde_json::{Map, Value as Json, json};

use crate::http::{Auth, Http};
use crate::provider::{ProviderConfig, temperature_json};

/// The default base URL (`OPENAI_BASE_URL` overrides it; it includes `/v1`).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Which field caps the answer's length. OpenAI's own API wants `max_completion_tokens`
/// (its reasoning models reject `max_tokens`); compatible servers know `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MaxTokensField {
    MaxCompletionTokens,
    MaxTokens,
}

/// A Chat Completions model.
#[derive(Debug)]
pub struct OpenAi {
    config: ProviderConfig,
    http: Http,
    max_tokens_field: MaxTokensField,
}

impl OpenAi {
    /// OpenAI's own API (sends `max_completion_tokens`).
    pub fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        let http = Http::new("openai", &config)?;
        Ok(OpenAi { config, http, max_tokens_field: MaxTokensField::MaxCompletionTokens })
    }

    /// An OpenAI-compatible server such as Ollama, vLLM or OpenRouter (sends `max_tokens`).
    pub fn compatible(config: ProviderConfig) -> Result<Self, LlmError> {
        let http = Http::new("openai-compatible", &config)?;
        Ok(OpenAi { config, http, max_tokens_field: MaxTokensField::MaxTokens })
    }

    /// The JSON body for `request`.
    fn body(&self, request: &LlmRequest) -> Json {
        let mut messages = Vec::new();
        if !request.system.is_empty() {
            messages.push(json!({"role": "system", "content": request.system}));
        }
        for message in &request.messages {
            messages.push(wire_message(message));
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(self.config.model));
        body.insert("messages".into(), Json::Array(messages));
        if !request.tools.is_empty() {
            let tools: Vec<Json> = request
                .tools
                .iter()
                .map(|tool| {
                    json!({"type": "function", "function": {
                        "name": tool.name, "description": tool.description, "parameters": tool.parameters,
                    }})
                })
                .collect();
            body.insert("tools".into(), Json::Array(tools));
        }
        if let Some(temperature) = request.options.temperature.or(self.config.temperature) {
            body.insert("temperature".into(), temperature_json(temperature));
        }
        if let Some(max) = request.options.max_output_tokens.or(self.config.max_tokens) {
            let field = match self.max_tokens_field {
                MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
                MaxTokensField::MaxTokens => "max_tokens",
            };
            body.insert(field.into(), json!(max));
        }
        if let Some(schema) = &request.options.response_schema {
            body.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}),
            );
        }
        Json::Object(body)
    }
}

fn wire_message(message: &Message) -> Json {
    match message {
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant { content, tool_calls } => {
            let mut out = Map::new();
            out.insert("role".into(), json!("assistant"));
            // A tool-calling turn may have no text; the API wants null then, not "".
            let text = if content.is_empty() && !tool_calls.is_empty() { Json::Null } else { json!(content) };
            out.insert("content".into(), text);
            if !tool_calls.is_empty() {
                let calls: Vec<Json> = tool_calls
                    .iter()
                    .map(|call| {
                        json!({"id": call.id, "type": "function", "function": {
                            "name": call.name, "arguments": encode_arguments(&call.args),
                        }})
                    })
                    .collect();
                out.insert("tool_calls".into(), Json::Array(calls));
            }
            Json::Object(out)
        }
        Message::ToolResult { call_id, content, is_error, .. } => {
            // Chat Completions has no error flag on tool results; say it in the text.
            let content = if *is_error { format!("Error: {content}") } else { content.clone() };
            json!({"role": "tool", "tool_call_id": call_id, "content": content})
        }
        // `Message` is non-exhaustive; a future variant is sent as user text.
        other => json!({"role": "user", "content": serde_json::to_string(other).unwrap_or_default()}),
    }
}

/// Arguments travel as a JSON string; an argument we could not parse is sent back as is.
fn encode_arguments(args: &Json) -> String {
    match args {
        Json::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

/// Reads a Chat Completions answer.
fn parse_response(json: &Json) -> Result<LlmResponse, LlmError> {
    let Some(message) = json.pointer("/choices/0/message") else {
        // OpenRouter reports some upstream failures as a 200 with an `error` object.
        if let Some(error) = json.get("error") {
            let text = error.get("message").and_then(Json::as_str).unwrap_or("unknown error");
            let code = error.get("code").and_then(Json::as_u64);
            let kind = match code {
                Some(429) => LlmErrorKind::RateLimit,
                Some(500..=599) => LlmErrorKind::ServerError,
                Some(400..=499) => LlmErrorKind::ClientError,
                _ => LlmErrorKind::Unknown,
            };
            let mut e = LlmError::new(kind, format!("openai-compatible server reported an error: {text}"));
            e.status = code.and_then(|c| u16::try_from(c).ok());
            return Err(e);
        }
        return Err(LlmError::new(LlmErrorKind::Unknown, "openai: the answer has no choices[0].message"));
    };
    // A refusal comes instead of content; the loop should see it as the answer's text.
    let content = message
        .get("content")
        .and_then(Json::as_str)
        .filter(|text| !text.is_empty())
        .or_else(|| message.get("refusal").and_then(Json::as_str))
        .unwrap_or_default();
    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls").and_then(Json::as_array) {
        for (index, call) in calls.iter().enumerate() {
            let function = call.get("function").cloned().unwrap_or(Json::Null);
            let name = function.get("name").and_then(Json::as_str).unwrap_or_default().to_string();
            let raw = function.get("arguments");
            let args = match raw {
                Some(Json::String(text)) if text.trim().is_empty() => json!({}),
                Some(Json::String(text)) => serde_json::from_str(text).unwrap_or_else(|_| Json::String(text.clone())),
                Some(object @ Json::Object(_)) => object.clone(),
                _ => json!({}),
            };
            // Some compatible servers omit ids; results still need one to pair with.
            let id = call
                .get("id")
                .and_then(Json::as_str)
                .filter(|id| !id.is_empty())
                .map_or_else(|| format!("call_{index}"), str::to_string);
            tool_calls.push(NativeToolCall { id, name, args, provider_data: None });
        }
    }
    Ok(LlmResponse {
        content: strip_think(content),
        tool_calls,
        usage: parse_usage(json.get("usage")),
        model: json.get("model").and_then(Json::as_str).map(str::to_string),
    })
}

fn parse_usage(usage: Option<&Json>) -> TokenUsage {
    let Some(usage) = usage else { return TokenUsage::default() };
    let number = |pointer: &str| usage.pointer(pointer).and_then(Json::as_u64);
    TokenUsage {
        input: number("/prompt_tokens").unwrap_or(0),
        output: number("/completion_tokens").unwrap_or(0),
        // OpenAI and OpenRouter: prompt_tokens_details.cached_tokens; DeepSeek: prompt_cache_hit_tokens.
        cache_read: number("/prompt_tokens_details/cached_tokens")
            .or_else(|| number("/prompt_cache_hit_tokens"))
            .unwrap_or(0),
        cache_write: number("/prompt_tokens_details/cache_write_tokens").unwrap_or(0),
    }
}

/// Removes `<think>...</think>` reasoning that some local models put into the content.
fn strip_think(content: &str) -> String {
    let mut out = String::with_capacity(content.len());
    let mut rest = content;
    while let Some(start) = rest.find("<think>") {
        out.push_str(&rest[..start]);
        match rest[start..].find("</think>") {
            Some(end) => rest = &rest[start + end + "</think>".len()..],
            // An unclosed block is all reasoning.
            None => rest = "",
        }
    }
    out.push_str(rest);
    if out.len() == content.len() { out } else { out.trim_start().to_string() }
}

impl Llm for OpenAi {
    fn complete<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        Box::pin(async move {
            let url = format!("{}/chat/completions", self.config.base());
            let answer = self.http.post_json(&url, Auth::Bearer, &[], &self.body(request)).await?;
            parse_response(&answer)
        })
    }

    fn name(&self) -> String {
        self.config.label.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_blocks_are_removed() {
        assert_eq!(strip_think("<think>hmm</think>\n(+ 1 2)"), "(+ 1 2)");
        assert_eq!(strip_think("a<think>x</think>b<think>y"), "ab");
        assert_eq!(strip_think("  plain "), "  plain ");
    }

    #[test]
    fn unparseable_arguments_are_kept_as_text_and_missing_ids_are_made_up() {
        let answer = json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"type": "function", "function": {"name": "f", "arguments": "{not json"}}
        ]}}]});
        let response = parse_response(&answer).unwrap();
        assert_eq!(response.tool_calls[0].args, json!("{not json"));
        assert_eq!(response.tool_calls[0].id, "call_0");
        assert_eq!(encode_arguments(&response.tool_calls[0].args), "{not json");
    }

    #[test]
    fn a_refusal_is_the_text() {
        let answer = json!({"choices": [{"message": {"content": null, "refusal": "I can't help with that."}}]});
        assert_eq!(parse_response(&answer).unwrap().content, "I can't help with that.");
    }

    #[test]
    fn in_body_errors_are_classified() {
        let e = parse_response(&json!({"error": {"message": "upstream overloaded", "code": 502}})).unwrap_err();
        assert_eq!(e.kind, LlmErrorKind::ServerError);
        assert!(e.message.contains("upstream overloaded"));
    }
}
