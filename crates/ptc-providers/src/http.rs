//! The HTTP plumbing shared by the vendor modules: one JSON POST with a timeout, its
//! answer read up to a cap and scrubbed of every known secret, and the classification of
//! everything that can go wrong into an [`LlmError`] the retry policy understands.

use std::sync::Once;
use std::time::{Duration, Instant, SystemTime};

use ptc_llm::{LlmError, LlmErrorKind};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value as Json;

use crate::provider::ProviderConfig;
use crate::redact::{Secrets, redact_url, url_secrets};
use crate::secret::ApiKey;

/// Longest vendor error text we carry into a message.
const MAX_ERROR_TEXT: usize = 600;

/// Most bytes of an error (non-2xx) body read: enough for any vendor's error object.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A configured client for one provider instance.
pub(crate) struct Http {
    client: reqwest::Client,
    key: Option<ApiKey>,
    vendor: &'static str,
    max_answer_bytes: usize,
    secrets: Secrets,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of Debug output.
        f.debug_struct("Http").field("vendor", &self.vendor).finish_non_exhaustive()
    }
}

/// How the key travels.
pub(crate) enum Auth {
    /// `Authorization: Bearer KEY`.
    #[cfg_attr(not(feature = "openai"), allow(dead_code))]
    Bearer,
    /// The key as the value of a named header (`x-api-key`, `x-goog-api-key`).
    #[cfg_attr(not(any(feature = "anthropic", feature = "gemini")), allow(dead_code))]
    Header(&'static str),
}

impl Http {
    /// A client with `config`'s timeout.
    pub(crate) fn new(vendor: &'static str, config: &ProviderConfig) -> Result<Self, LlmError> {
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout.min(Duration::from_secs(30)))
            .user_agent(concat!("ptc-runner/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                LlmError::new(LlmErrorKind::ConfigError, format!("{vendor}: cannot build the HTTP client: {e}"))
            })?;
        let mut secrets = Secrets::default();
        for key in config.api_key.iter().chain(&config.secrets) {
            secrets.add(key.expose());
        }
        for found in url_secrets(&config.base_url) {
            secrets.add(&found);
        }
        Ok(Http { client, key: config.api_key.clone(), vendor, max_answer_bytes: config.max_answer_bytes, secrets })
    }

    /// POSTs `body` to `url` and returns the parsed JSON answer of a 2xx response.
    pub(crate) async fn post_json(
        &self,
        url: &str,
        auth: Auth,
        extra_headers: &[(&'static str, &'static str)],
        body: &Json,
    ) -> Result<Json, LlmError> {
        let mut headers = HeaderMap::new();
        for (name, value) in extra_headers {
            headers.insert(HeaderName::from_static(name), HeaderValue::from_static(value));
        }
        if let Some(key) = &self.key {
            let (name, value) = match auth {
                Auth::Bearer => (reqwest::header::AUTHORIZATION, format!("Bearer {}", key.expose())),
                Auth::Header(name) => (HeaderName::from_static(name), key.expose().to_string()),
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                LlmError::new(
                    LlmErrorKind::ConfigError,
                    format!("{}: the API key contains invalid characters", self.vendor),
                )
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let started = Instant::now();
        let shown = redact_url(url);
        tracing::debug!(vendor = self.vendor, url = %shown, "llm request");
        let response =
            self.client.post(url).headers(headers).json(body).send().await.map_err(|e| self.transport_error(url, e))?;
        let status = response.status().as_u16();
        let response_headers = response.headers().clone();
        let ok = (200..300).contains(&status);
        let bytes = if ok {
            self.read_capped(url, response, self.max_answer_bytes, true).await?
        } else {
            self.read_capped(url, response, MAX_ERROR_BODY.min(self.max_answer_bytes), false).await?
        };
        tracing::debug!(
            vendor = self.vendor,
            status,
            bytes = bytes.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "llm response"
        );
        if !ok {
            let text = String::from_utf8_lossy(&bytes);
            let error = classify_status(self.vendor, status, &response_headers, &text);
            return Err(self.scrubbed(error));
        }
        match serde_json::from_slice::<Json>(&bytes) {
            Ok(mut json) => {
                // A vendor may echo the key (or another known secret) anywhere in its answer.
                self.secrets.scrub_json(&mut json);
                Ok(json)
            }
            Err(e) => Err(self.scrubbed(LlmError::new(
                LlmErrorKind::Unknown,
                format!(
                    "{}: the answer is not JSON ({e}): {}",
                    self.vendor,
                    truncate(&String::from_utf8_lossy(&bytes))
                ),
            ))),
        }
    }

    /// Reads `response`'s body chunk by chunk, never holding more than `cap` bytes. Past
    /// the cap, `fail_over` makes it an `answer_too_large` error (the rest is not read);
    /// otherwise the body is cut there.
    async fn read_capped(
        &self,
        url: &str,
        mut response: reqwest::Response,
        cap: usize,
        fail_over: bool,
    ) -> Result<Vec<u8>, LlmError> {
        if fail_over && let Some(announced) = response.content_length().filter(|&n| n > cap as u64) {
            return Err(self.too_large(url, cap, &format!("it announced {announced} bytes")));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.transport_error(url, e))? {
            let room = cap - body.len();
            if chunk.len() > room {
                if fail_over {
                    return Err(self.too_large(url, cap, "reading stopped there"));
                }
                body.extend_from_slice(&chunk[..room]);
                break;
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    fn too_large(&self, url: &str, cap: usize, detail: &str) -> LlmError {
        let message = format!(
            "{}: the answer from {} is larger than max_answer_bytes ({cap} bytes; {detail}). No model answer \
             is this long: check the server, or raise the cap (`ptc run --max-answer-bytes`, \
             ProviderConfig::max_answer_bytes)",
            self.vendor,
            redact_url(url)
        );
        self.scrubbed(LlmError::new(LlmErrorKind::AnswerTooLarge, message))
    }

    fn transport_error(&self, url: &str, error: reqwest::Error) -> LlmError {
        let kind = if error.is_timeout() { LlmErrorKind::Timeout } else { LlmErrorKind::Unknown };
        let what = if error.is_timeout() {
            "timed out"
        } else if error.is_connect() {
            "could not connect"
        } else {
            "request failed"
        };
        let detail = error_chain(&error.without_url());
        let shown = redact_url(url);
        self.scrubbed(LlmError::new(kind, format!("{}: {what} ({shown}): {detail}", self.vendor)))
    }

    fn scrubbed(&self, mut error: LlmError) -> LlmError {
        error.message = self.secrets.scrub(&error.message);
        error
    }
}

/// rustls needs one process-wide crypto provider; we bring ring. An embedder that has
/// installed its own keeps it.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Losing a race with another installer is fine: some provider is installed.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// The error for a non-2xx answer.
pub(crate) fn classify_status(vendor: &str, status: u16, headers: &HeaderMap, body: &str) -> LlmError {
    let kind = match status {
        429 => LlmErrorKind::RateLimit,
        500..=599 => LlmErrorKind::ServerError,
        400..=499 => LlmErrorKind::ClientError,
        _ => LlmErrorKind::Unknown,
    };
    let detail = vendor_message(body);
    let mut error = LlmError::new(kind, format!("{vendor} returned HTTP {status}: {detail}"));
    error.status = Some(status);
    if kind == LlmErrorKind::RateLimit || kind == LlmErrorKind::ServerError {
        error.retry_after = retry_after(headers, SystemTime::now());
    }
    error
}

/// The human part of a vendor's error body. OpenAI, Anthropic and Gemini all put it at
/// `error.message`; Ollama's native API uses `error` as a string; anything else is shown
/// as (truncated) text.
pub(crate) fn vendor_message(body: &str) -> String {
    if let Ok(json) = serde_json::from_str::<Json>(body) {
        let found = json
            .pointer("/error/message")
            .or_else(|| json.get("error").filter(|e| e.is_string()))
            .or_else(|| json.get("message"))
            .or_else(|| json.pointer("/0/error/message"))
            .and_then(Json::as_str);
        if let Some(message) = found {
            return truncate(message);
        }
    }
    if body.trim().is_empty() { "(empty body)".to_string() } else { truncate(body.trim()) }
}

/// The longest `Retry-After` taken from a header (a day); the retry policy's `max_delay`
/// (a minute by default) and the mission deadline cap the actual wait further.
const MAX_RETRY_AFTER_SECS: f64 = 86_400.0;

/// `Retry-After` (seconds or an HTTP date) or OpenAI's `retry-after-ms`, at most a day.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = header_str(headers, "retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return duration_from_secs(ms / 1000.0);
    }
    let value = header_str(headers, "retry-after")?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return duration_from_secs(secs);
    }
    let when = httpdate::parse_http_date(value).ok()?;
    let wait = when.duration_since(now).unwrap_or(Duration::ZERO);
    Some(wait.min(Duration::from_secs_f64(MAX_RETRY_AFTER_SECS)))
}

fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn duration_from_secs(secs: f64) -> Option<Duration> {
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(MAX_RETRY_AFTER_SECS)))
}

fn truncate(text: &str) -> String {
    if text.chars().count() <= MAX_ERROR_TEXT {
        text.to_string()
    } else {
        let head: String = text.chars().take(MAX_ERROR_TEXT).collect();
        format!("{head}...")
    }
}

/// An error and its sources, joined (reqwest's top-level message alone says little).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        let inner_text = inner.to_string();
        if !text.contains(&inner_text) {
            text.push_str(": ");
            text.push_str(&inner_text);
        }
        source = inner.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        map
    }

    #[test]
    fn statuses_are_classified_for_retry() {
        let h = headers(&[("retry-after", "7")]);
        let e = classify_status("openai", 429, &h, r#"{"error":{"message":"slow down"}}"#);
        assert_eq!(e.kind, LlmErrorKind::RateLimit);
        assert_eq!(e.retry_after, Some(Duration::from_secs(7)));
        assert_eq!(e.status, Some(429));
        assert!(e.message.contains("slow down"), "{}", e.message);
        assert_eq!(classify_status("x", 503, &HeaderMap::new(), "").kind, LlmErrorKind::ServerError);
        assert_eq!(classify_status("x", 529, &HeaderMap::new(), "").kind, LlmErrorKind::ServerError);
        let e = classify_status("x", 404, &HeaderMap::new(), r#"{"error":"model 'q' not found"}"#);
        assert_eq!(e.kind, LlmErrorKind::ClientError);
        assert!(e.message.ends_with("model 'q' not found"), "{}", e.message);
    }

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(retry_after(&headers(&[("retry-after", "2")]), now), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(&headers(&[("retry-after-ms", "1500")]), now), Some(Duration::from_millis(1500)));
        // 2001-09-09T01:46:40Z is the epoch + 1e9 s; ten seconds later:
        let date = headers(&[("retry-after", "Sun, 09 Sep 2001 01:46:50 GMT")]);
        assert_eq!(retry_after(&date, now), Some(Duration::from_secs(10)));
        // a date a month away asks for a day at most (the retry policy caps it further)
        let month = headers(&[("retry-after", "Tue, 09 Oct 2001 01:46:40 GMT")]);
        assert_eq!(retry_after(&month, now), Some(Duration::from_secs(86_400)));
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-3")]), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }

    #[test]
    fn vendor_messages_are_found_or_truncated() {
        assert_eq!(vendor_message(r#"{"type":"error","error":{"type":"x","message":"bad"}}"#), "bad");
        assert_eq!(vendor_message(r#"[{"error":{"code":400,"message":"gem"}}]"#), "gem");
        assert_eq!(vendor_message("  "), "(empty body)");
        assert!(vendor_message(&"x".repeat(2000)).ends_with("..."));
    }
}
