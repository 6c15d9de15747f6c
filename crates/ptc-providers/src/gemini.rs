//! Gemini `generateContent`.
//!
//! Mapping: the system prompt is `systemInstruction`; the conversation is `contents` with
//! `user` and `model` roles; native tool calls are `functionCall` parts and their results
//! `functionResponse` parts (`{"result": ...}` or `{"error": ...}`) in the next user turn.
//! A call's `thoughtSignature` (Gemini 3 rejects a follow-up without it) is kept in
//! `NativeToolCall::provider_data` and sent back on the same part. Calls without a vendor
//! id get a local one for pairing; only vendor ids are sent back. Thought parts are never
//! returned as text. Usage: `promptTokenCount`, `candidatesTokenCount` plus
//! `thoughtsTokenCount`, `cachedContentTokenCount`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use ptc_llm::{BoxFuture, Llm, LlmError, LlmErrorKind, LlmRequest, LlmResponse, Message, NativeToolCall, TokenUsage};
use serde_json::{Map, Value as Json, json};

use crate::http::{Auth, Http};
use crate::provider::{ProviderConfig, temperature_json};

/// The default base URL (`GEMINI_BASE_URL` overrides it; host root, no version path).
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// `provider_data` key of the thought signature.
const SIGNATURE_KEY: &str = "thought_signature";
/// `provider_data` key saying the id came from Gemini (and must be echoed).
const VENDOR_ID_KEY: &str = "vendor_id";

/// A Gemini model.
#[derive(Debug)]
pub struct Gemini {
    config: ProviderConfig,
    http: Http,
    next_local_id: AtomicU64,
}

impl Gemini {
    /// A model with `config`.
    pub fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        let http = Http::new("gemini", &config)?;
        Ok(Gemini { config, http, next_local_id: AtomicU64::new(1) })
    }

    /// The JSON body for `request`.
    fn body(&self, request: &LlmRequest) -> Json {
        let mut body = Map::new();
        if !request.system.is_empty() {
            body.insert("systemInstruction".into(), json!({"parts": [{"text": request.system}]}));
        }
        body.insert("contents".into(), Json::Array(wire_contents(&request.messages)));
        if !request.tools.is_empty() {
            let declarations: Vec<Json> = request
                .tools
                .iter()
                .map(|tool| {
                    json!({"name": tool.name, "description": tool.description, "parametersJsonSchema": tool.parameters})
                })
                .collect();
            body.insert("tools".into(), json!([{"functionDeclarations": declarations}]));
        }
        let mut generation = Map::new();
        if let Some(temperature) = request.options.temperature.or(self.config.temperature) {
            generation.insert("temperature".into(), temperature_json(temperature));
        }
        if let Some(max) = request.options.max_output_tokens.or(self.config.max_tokens) {
            generation.insert("maxOutputTokens".into(), json!(max));
        }
        if let Some(schema) = &request.options.response_schema {
            generation.insert("responseMimeType".into(), json!("application/json"));
            generation.insert("responseJsonSchema".into(), schema.clone());
        }
        if !generation.is_empty() {
            body.insert("generationConfig".into(), Json::Object(generation));
        }
        Json::Object(body)
    }

    fn parse_response(&self, json: &Json) -> Result<LlmResponse, LlmError> {
        let Some(candidate) = json.pointer("/candidates/0") else {
            let reason = json.pointer("/promptFeedback/blockReason").and_then(Json::as_str);
            let message = match reason {
                Some(reason) => format!("gemini blocked the prompt: {reason}"),
                None => "gemini: the answer has no candidates".to_string(),
            };
            let kind = if reason.is_some() { LlmErrorKind::ClientError } else { LlmErrorKind::Unknown };
            return Err(LlmError::new(kind, message));
        };
        let parts = candidate.pointer("/content/parts").and_then(Json::as_array).cloned().unwrap_or_default();
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for part in &parts {
            if part.get("thought").and_then(Json::as_bool) == Some(true) {
                continue;
            }
            if let Some(call) = part.get("functionCall") {
                tool_calls.push(self.tool_call(call, part.get("thoughtSignature")));
            } else if let Some(chunk) = part.get("text").and_then(Json::as_str) {
                text.push_str(chunk);
            }
        }
        Ok(LlmResponse {
            content: text,
            tool_calls,
            usage: parse_usage(json.get("usageMetadata")),
            model: json.get("modelVersion").and_then(Json::as_str).map(str::to_string),
        })
    }

    fn tool_call(&self, call: &Json, signature: Option<&Json>) -> NativeToolCall {
        let vendor_id = call.get("id").and_then(Json::as_str).filter(|id| !id.is_empty());
        let id = match vendor_id {
            Some(id) => id.to_string(),
            None => format!("gemini-call-{}", self.next_local_id.fetch_add(1, Ordering::Relaxed)),
        };
        let mut data = Map::new();
        if let Some(signature) = signature.filter(|s| s.is_string()) {
            data.insert(SIGNATURE_KEY.into(), signature.clone());
        }
        if vendor_id.is_some() {
            data.insert(VENDOR_ID_KEY.into(), json!(true));
        }
        NativeToolCall {
            id,
            name: call.get("name").and_then(Json::as_str).unwrap_or_default().to_string(),
            args: call.get("args").cloned().unwrap_or_else(|| json!({})),
            provider_data: (!data.is_empty()).then_some(Json::Object(data)),
        }
    }
}

/// Our messages as Gemini `contents`, consecutive turns of one role merged.
fn wire_contents(messages: &[Message]) -> Vec<Json> {
    // Which call ids Gemini assigned (those are echoed in the function response).
    let mut vendor_ids: HashMap<&str, bool> = HashMap::new();
    for message in messages {
        if let Message::Assistant { tool_calls, .. } = message {
            for call in tool_calls {
                vendor_ids.insert(&call.id, data_flag(call, VENDOR_ID_KEY));
            }
        }
    }
    let mut turns: Vec<(&'static str, Vec<Json>)> = Vec::new();
    for message in messages {
        let (role, parts) = parts_of(message, &vendor_ids);
        if parts.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last_role, last_parts)) if *last_role == role => last_parts.extend(parts),
            _ => turns.push((role, parts)),
        }
    }
    turns.into_iter().map(|(role, parts)| json!({"role": role, "parts": parts})).collect()
}

fn parts_of(message: &Message, vendor_ids: &HashMap<&str, bool>) -> (&'static str, Vec<Json>) {
    match message {
        Message::User { content } => ("user", text_part(content)),
        Message::Assistant { content, tool_calls } => {
            let mut parts = text_part(content);
            for call in tool_calls {
                let mut function_call = Map::new();
                function_call.insert("name".into(), json!(call.name));
                function_call.insert("args".into(), if call.args.is_object() { call.args.clone() } else { json!({}) });
                if data_flag(call, VENDOR_ID_KEY) {
                    function_call.insert("id".into(), json!(call.id));
                }
                let mut part = Map::new();
                part.insert("functionCall".into(), Json::Object(function_call));
                if let Some(signature) = call.provider_data.as_ref().and_then(|d| d.get(SIGNATURE_KEY)) {
                    part.insert("thoughtSignature".into(), signature.clone());
                }
                parts.push(Json::Object(part));
            }
            ("model", parts)
        }
        Message::ToolResult { call_id, name, content, is_error } => {
            // Results are usually JSON text; anything else goes as a string.
            let value = serde_json::from_str::<Json>(content).unwrap_or_else(|_| json!(content));
            let response = if *is_error { json!({"error": value}) } else { json!({"result": value}) };
            let mut function_response = Map::new();
            function_response.insert("name".into(), json!(name));
            function_response.insert("response".into(), response);
            if vendor_ids.get(call_id.as_str()).copied().unwrap_or(false) {
                function_response.insert("id".into(), json!(call_id));
            }
            ("user", vec![json!({"functionResponse": function_response})])
        }
        // `Message` is non-exhaustive; a future variant is sent as user text.
        other => ("user", text_part(&serde_json::to_string(other).unwrap_or_default())),
    }
}

fn data_flag(call: &NativeToolCall, key: &str) -> bool {
    call.provider_data.as_ref().and_then(|d| d.get(key)).and_then(Json::as_bool).unwrap_or(false)
}

fn text_part(text: &str) -> Vec<Json> {
    if text.is_empty() { Vec::new() } else { vec![json!({"text": text})] }
}

fn parse_usage(usage: Option<&Json>) -> TokenUsage {
    let Some(usage) = usage else { return TokenUsage::default() };
    let number = |key: &str| usage.get(key).and_then(Json::as_u64).unwrap_or(0);
    TokenUsage {
        input: number("promptTokenCount"),
        // Thinking tokens are billed as output.
        output: number("candidatesTokenCount") + number("thoughtsTokenCount"),
        cache_read: number("cachedContentTokenCount"),
        cache_write: 0,
    }
}

impl Llm for Gemini {
    fn complete<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        Box::pin(async move {
            let model = self.config.model.trim_start_matches("models/");
            let url = format!("{}/v1beta/models/{model}:generateContent", self.config.base());
            let answer = self.http.post_json(&url, Auth::Header("x-goog-api-key"), &[], &self.body(request)).await?;
            self.parse_response(&answer)
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
    fn blocked_prompts_are_client_errors() {
        let gemini = Gemini::new(ProviderConfig::new("gemini:x", DEFAULT_BASE_URL, "x")).unwrap();
        let e = gemini.parse_response(&json!({"promptFeedback": {"blockReason": "SAFETY"}})).unwrap_err();
        assert_eq!(e.kind, LlmErrorKind::ClientError);
        assert!(e.message.contains("SAFETY"));
    }

    #[test]
    fn thought_parts_are_not_text_and_local_ids_are_not_echoed() {
        let gemini = Gemini::new(ProviderConfig::new("gemini:x", DEFAULT_BASE_URL, "x")).unwrap();
        let answer = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"text": "pondering", "thought": true},
            {"functionCall": {"name": "f", "args": {"a": 1}}}
        ]}}]});
        let response = gemini.parse_response(&answer).unwrap();
        assert_eq!(response.content, "");
        let call = response.tool_calls[0].clone();
        assert_eq!(call.id, "gemini-call-1");
        assert_eq!(call.provider_data, None);
        let contents = wire_contents(&[
            Message::Assistant { content: String::new(), tool_calls: vec![call] },
            Message::ToolResult {
                call_id: "gemini-call-1".into(),
                name: "f".into(),
                content: "nope".into(),
                is_error: true,
            },
        ]);
        assert_eq!(contents[0]["parts"][0], json!({"functionCall": {"name": "f", "args": {"a": 1}}}));
        assert_eq!(contents[1]["parts"][0], json!({"functionResponse": {"name": "f", "response": {"error": "nope"}}}));
    }
}
