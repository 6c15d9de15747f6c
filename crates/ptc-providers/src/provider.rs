//! What every HTTP provider is configured with.

use crate::resolve::DEFAULT_MAX_ANSWER_BYTES;
use std::fmt;
use std::time::Duration;

use crate::secret::ApiKey;

/// The default whole-request timeout: generous, because a long answer from a slow model is
/// normal, but finite, so a stuck connection surfaces as a `timeout` the loop can retry.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Configuration of one provider instance (one vendor, one model).
///
/// `Debug` never shows the key.
#[derive(Clone)]
#[non_exhaustive]
pub struct ProviderConfig {
    /// The model id sent to the vendor (`gpt-4.1-mini`, `claude-haiku-4-5`, ...).
    pub model: String,
    /// Base URL. OpenAI-compatible: including the version path (`https://api.openai.com/v1`);
    /// Anthropic and Gemini: the host root (`https://api.anthropic.com`).
    pub base_url: String,
    /// The API key, if the vendor needs one.
    pub api_key: Option<ApiKey>,
    /// Whole-request timeout (connect, send, wait, read).
    pub timeout: Duration,
    /// Default cap on output tokens when the request does not set one.
    pub max_tokens: Option<u32>,
    /// Default temperature when the request does not set one.
    pub temperature: Option<f32>,
    /// The name reported by `Llm::name` (`openai:gpt-4.1-mini`).
    pub label: String,
    /// Most bytes of one answer's body. Reading stops there and the request fails with
    /// [`LlmErrorKind::AnswerTooLarge`](ptc_llm::LlmErrorKind::AnswerTooLarge).
    pub max_answer_bytes: usize,
    /// Other secrets (keys of other vendors, tokens) to scrub from everything the vendor
    /// returns, besides `api_key` and credentials in `base_url`, which are always scrubbed.
    pub secrets: Vec<ApiKey>,
}

impl ProviderConfig {
    /// A configuration with the default timeout and no defaults for tokens or temperature.
    pub fn new(label: impl Into<String>, base_url: impl Into<String>, model: impl Into<String>) -> Self {
        ProviderConfig {
            model: model.into(),
            base_url: base_url.into(),
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
            max_tokens: None,
            temperature: None,
            label: label.into(),
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            secrets: Vec::new(),
        }
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: ApiKey) -> Self {
        self.api_key = Some(key);
        self
    }

    /// Sets the whole-request timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the cap on one answer's body.
    pub fn with_max_answer_bytes(mut self, bytes: usize) -> Self {
        self.max_answer_bytes = bytes;
        self
    }

    /// Adds a secret to scrub from the vendor's answers and errors.
    pub fn with_secret(mut self, secret: ApiKey) -> Self {
        self.secrets.push(secret);
        self
    }

    /// The base URL without a trailing slash.
    pub(crate) fn base(&self) -> &str {
        self.base_url.trim_end_matches('/')
    }
}

/// A temperature as JSON: `0.2f32` is sent as `0.2`, not as its widened binary value
/// `0.20000000298023224`.
pub(crate) fn temperature_json(temperature: f32) -> serde_json::Value {
    temperature
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(serde_json::Value::Null, serde_json::Value::Number)
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("label", &self.label)
            .field("model", &self.model)
            .field("base_url", &crate::redact::redact_url(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("timeout", &self.timeout)
            .field("max_tokens", &self.max_tokens)
            .field("temperature", &self.temperature)
            .field("max_answer_bytes", &self.max_answer_bytes)
            .field("secrets", &self.secrets.len())
            .finish()
    }
}
