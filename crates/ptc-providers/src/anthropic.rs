//! Anthropic Messages.
//!
//! Mapping: the system prompt is the top-level `system` field (a cacheable text block when
//! `options.cache` is set); the conversation alternates `user`/`assistant` turns of content
//! blocks; native tool calls are `tool_use` blocks and their results `tool_result` blocks in
//! the next user turn, paired by `tool_use_id`. Thinking blocks never reach the text we
//! return; when the model thinks before calling tools they ride along in the first call's
//! `provider_data` and go back as thinking blocks (Anthropic requires that), never as text.
//! Usage: `input_tokens` excludes cached tokens, so input = input + cache read + cache write.

use ptc_llm::{BoxFuture, Llm, LlmError, LlmErrorKind, LlmRequest, LlmResponse, Message, NativeToolCall, TokenUsage};
use serde_json::{Map, Value as Json, json};

use crate::http::{Auth, Http};
use crate::provider::{ProviderConfig, temperature_json};

/// The default base URL (`ANTHROPIC_BASE_URL` overrides it; host root, no version path).
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The API version header we speak.
pub const API_VERSION: &str = "2023-06-01";

/// Anthropic requires `max_tokens`; this is used when neither request nor config sets it.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Where thinking blocks ride in `NativeToolCall::provider_data`.
const THINKING_KEY: &str = "anthropic_thinking";

/// A Messages API model.
#[derive(Debug)]
pub struct Anthropic {
    config: ProviderConfig,
    http: Http,
}

impl Anthropic {
    /// A model with `config`.
    pub fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        let http = Http::new("anthropic", &config)?;
        Ok(Anthropic { config, http })
    }

    /// The JSON body for `request`.
    fn body(&self, request: &LlmRequest) -> Json {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.config.model));
        let max_tokens = request.options.max_output_tokens.or(self.config.max_tokens).unwrap_or(DEFAULT_MAX_TOKENS);
        body.insert("max_tokens".into(), json!(max_tokens));
        if !request.system.is_empty() {
            let system = if request.options.cache {
                json!([{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}])
            } else {
                json!(request.system)
            };
            body.insert("system".into(), system);
        }
        body.insert("messages".into(), Json::Array(wire_messages(&request.messages)));
        if !request.tools.is_empty() {
            let mut tools: Vec<Json> = request
                .tools
                .iter()
                .map(
                    |tool| json!({"name": tool.name, "description": tool.description, "input_schema": tool.parameters}),
                )
                .collect();
            // Tools come before the system prompt in the cached prefix; mark their end too.
            if request.options.cache
                && let Some(Json::Object(last)) = tools.last_mut()
            {
                last.insert("cache_control".into(), json!({"type": "ephemeral"}));
            }
            body.insert("tools".into(), Json::Array(tools));
        }
        if let Some(temperature) = request.options.temperature.or(self.config.temperature) {
            body.insert("temperature".into(), temperature_json(temperature));
        }
        Json::Object(body)
    }
}

/// Our messages as alternating Anthropic turns: consecutive messages of one role (tool
/// results followed by loop feedback, say) merge into one turn, as the API requires.
fn wire_messages(messages: &[Message]) -> Vec<Json> {
    let mut turns: Vec<(&'static str, Vec<Json>)> = Vec::new();
    for message in messages {
        let (role, blocks) = blocks_of(message);
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect()
}

fn blocks_of(message: &Message) -> (&'static str, Vec<Json>) {
    match message {
        Message::User { content } => ("user", text_block(content)),
        Message::Assistant { content, tool_calls } => {
            let mut blocks = Vec::new();
            if let Some(Json::Array(thinking)) =
                tool_calls.first().and_then(|call| call.provider_data.as_ref()).and_then(|data| data.get(THINKING_KEY))
            {
                blocks.extend(thinking.iter().cloned());
            }
            blocks.extend(text_block(content));
            for call in tool_calls {
                let input = if call.args.is_object() { call.args.clone() } else { json!({}) };
                blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
            }
            ("assistant", blocks)
        }
        Message::ToolResult { call_id, content, is_error, .. } => {
            let mut block = json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
            if *is_error && let Json::Object(map) = &mut block {
                map.insert("is_error".into(), json!(true));
            }
            ("user", vec![block])
        }
        // `Message` is non-exhaustive; a future variant is sent as user text.
        other => ("user", text_block(&serde_json::to_string(other).unwrap_or_default())),
    }
}

/// A text block, or none for empty text (the API rejects empty text blocks).
fn text_block(text: &str) -> Vec<Json> {
    if text.is_empty() { Vec::new() } else { vec![json!({"type": "text", "text": text})] }
}

/// Reads a Messages answer.
fn parse_response(json: &Json) -> Result<LlmResponse, LlmError> {
    let Some(blocks) = json.get("content").and_then(Json::as_array) else {
        return Err(LlmError::new(LlmErrorKind::Unknown, "anthropic: the answer has no content array"));
    };
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    let mut thinking = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Json::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Json::as_str).unwrap_or_default()),
            Some("tool_use") => tool_calls.push(NativeToolCall {
                id: block.get("id").and_then(Json::as_str).unwrap_or_default().to_string(),
                name: block.get("name").and_then(Json::as_str).unwrap_or_default().to_string(),
                args: block.get("input").cloned().unwrap_or_else(|| json!({})),
                provider_data: None,
            }),
            Some("thinking" | "redacted_thinking") => thinking.push(block.clone()),
            other => tracing::debug!(block_type = ?other, "anthropic: ignoring a content block"),
        }
    }
    if !thinking.is_empty()
        && let Some(first) = tool_calls.first_mut()
    {
        first.provider_data = Some(json!({ THINKING_KEY: thinking }));
    }
    Ok(LlmResponse {
        content: text,
        tool_calls,
        usage: parse_usage(json.get("usage")),
        model: json.get("model").and_then(Json::as_str).map(str::to_string),
    })
}

fn parse_usage(usage: Option<&Json>) -> TokenUsage {
    let Some(usage) = usage else { return TokenUsage::default() };
    let number = |key: &str| usage.get(key).and_then(Json::as_u64).unwrap_or(0);
    let cache_read = number("cache_read_input_tokens");
    let cache_write = number("cache_creation_input_tokens");
    TokenUsage {
        input: number("input_tokens") + cache_read + cache_write,
        output: number("output_tokens"),
        cache_read,
        cache_write,
    }
}

impl Llm for Anthropic {
    fn complete<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        Box::pin(async move {
            let url = format!("{}/v1/messages", self.config.base());
            let headers = [("anthropic-version", API_VERSION)];
            let answer = self.http.post_json(&url, Auth::Header("x-api-key"), &headers, &self.body(request)).await?;
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
    fn consecutive_user_content_merges_and_empty_text_is_dropped() {
        let messages = vec![
            Message::user("go"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![NativeToolCall {
                    id: "t1".into(),
                    name: "f".into(),
                    args: json!({}),
                    provider_data: None,
                }],
            },
            Message::ToolResult { call_id: "t1".into(), name: "f".into(), content: "1".into(), is_error: false },
            Message::user("next"),
        ];
        let wire = wire_messages(&messages);
        assert_eq!(wire.len(), 3);
        assert_eq!(wire[1]["content"], json!([{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]));
        assert_eq!(
            wire[2]["content"],
            json!([{"type": "tool_result", "tool_use_id": "t1", "content": "1"}, {"type": "text", "text": "next"}])
        );
    }

    #[test]
    fn thinking_without_tool_calls_is_dropped() {
        let answer = json!({"content": [{"type": "thinking", "thinking": "hm", "signature": "s"}, {"type": "text", "text": "hi"}]});
        let response = parse_response(&answer).unwrap();
        assert_eq!(response.content, "hi");
        assert!(response.tool_calls.is_empty());
    }
}
