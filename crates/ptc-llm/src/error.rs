//! A failed model request, classified for retry decisions.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Why a model request failed, classified for retry decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LlmErrorKind {
    /// 429 or a provider's rate-limit signal (retryable, honour `retry_after`).
    RateLimit,
    /// Connection or read timeout (retryable).
    Timeout,
    /// 5xx (retryable).
    ServerError,
    /// 4xx other than 429: the request is wrong (not retryable).
    ClientError,
    /// Missing key, unknown model, bad base URL (not retryable).
    ConfigError,
    /// The answer exceeded the size cap and was not read further (not retryable: the
    /// same request would bring the same answer).
    AnswerTooLarge,
    /// Anything else.
    Unknown,
}

impl LlmErrorKind {
    /// Stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            LlmErrorKind::RateLimit => "rate_limit",
            LlmErrorKind::Timeout => "timeout",
            LlmErrorKind::ServerError => "server_error",
            LlmErrorKind::ClientError => "client_error",
            LlmErrorKind::ConfigError => "config_error",
            LlmErrorKind::AnswerTooLarge => "answer_too_large",
            LlmErrorKind::Unknown => "unknown",
        }
    }
}

impl fmt::Display for LlmErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed model request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{kind}: {message}")]
#[non_exhaustive]
pub struct LlmError {
    /// The class of failure.
    pub kind: LlmErrorKind,
    /// What went wrong (the vendor's message where there is one).
    pub message: String,
    /// HTTP status, when the failure came from one.
    pub status: Option<u16>,
    /// How long the vendor asked us to wait (`Retry-After`).
    pub retry_after: Option<Duration>,
}

impl LlmError {
    /// A new error of `kind`.
    pub fn new(kind: LlmErrorKind, message: impl Into<String>) -> Self {
        LlmError { kind, message: message.into(), status: None, retry_after: None }
    }

    /// True for kinds worth retrying (rate limit, timeout, server error).
    pub fn is_retryable(&self) -> bool {
        matches!(self.kind, LlmErrorKind::RateLimit | LlmErrorKind::Timeout | LlmErrorKind::ServerError)
    }
}
