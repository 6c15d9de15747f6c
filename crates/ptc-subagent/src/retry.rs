//! Retrying failed model requests.
//!
//! Only infrastructure failures retry (a rate limit, a timeout, a 5xx). Mistakes the model
//! can fix itself (bad syntax, a wrong return shape) are fed back as a new turn instead
//! and never spend these attempts.

use std::time::Duration;

use crate::llm::{LlmError, LlmErrorKind};

/// How the delay grows between attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Backoff {
    /// `base · 2^(attempt−1)`.
    #[default]
    Exponential,
    /// `base · attempt`.
    Linear,
    /// `base`.
    Constant,
}

/// Retry policy for model requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmRetry {
    /// Total attempts, the first included (1 = no retry).
    pub max_attempts: u32,
    /// Delay growth.
    pub backoff: Backoff,
    /// Delay before the first retry.
    pub base_delay: Duration,
    /// Error classes worth retrying.
    pub retryable: Vec<LlmErrorKind>,
    /// The longest wait between two attempts, whatever the backoff computes or the server
    /// asks for in `Retry-After` (a date a month away, a number of a day). The mission
    /// deadline caps it further: a retry that could not start before the deadline is not
    /// waited for.
    pub max_delay: Duration,
}

/// The default [`LlmRetry::max_delay`]: one minute.
pub const DEFAULT_MAX_RETRY_DELAY: Duration = Duration::from_secs(60);

impl Default for LlmRetry {
    /// 3 attempts, exponential from 1 s, retrying rate limits, timeouts and server errors,
    /// never waiting more than [`DEFAULT_MAX_RETRY_DELAY`].
    fn default() -> Self {
        LlmRetry {
            max_attempts: 3,
            backoff: Backoff::Exponential,
            base_delay: Duration::from_secs(1),
            retryable: vec![LlmErrorKind::RateLimit, LlmErrorKind::Timeout, LlmErrorKind::ServerError],
            max_delay: DEFAULT_MAX_RETRY_DELAY,
        }
    }
}

impl LlmRetry {
    /// No retries at all.
    pub fn none() -> Self {
        LlmRetry { max_attempts: 1, ..LlmRetry::default() }
    }

    /// Whether `error`, seen on attempt `attempt` (1-based), is retried.
    pub fn should_retry(&self, error: &LlmError, attempt: u32) -> bool {
        attempt < self.max_attempts && self.retryable.contains(&error.kind)
    }

    /// The wait before attempt `attempt + 1`; a server's `Retry-After` wins when longer,
    /// and neither exceeds [`max_delay`](Self::max_delay).
    pub fn delay(&self, error: &LlmError, attempt: u32) -> Duration {
        let n = attempt.max(1);
        let computed = match self.backoff {
            Backoff::Exponential => self.base_delay.saturating_mul(1u32 << (n - 1).min(20)),
            Backoff::Linear => self.base_delay.saturating_mul(n),
            Backoff::Constant => self.base_delay,
        };
        let wanted = match error.retry_after {
            Some(server) if server > computed => server,
            _ => computed,
        };
        wanted.min(self.max_delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(kind: LlmErrorKind) -> LlmError {
        LlmError::new(kind, "x")
    }

    #[test]
    fn delays_follow_the_backoff() {
        let mut r = LlmRetry { base_delay: Duration::from_millis(100), ..LlmRetry::default() };
        let e = err(LlmErrorKind::RateLimit);
        assert_eq!(r.delay(&e, 1), Duration::from_millis(100));
        assert_eq!(r.delay(&e, 3), Duration::from_millis(400));
        r.backoff = Backoff::Linear;
        assert_eq!(r.delay(&e, 3), Duration::from_millis(300));
        r.backoff = Backoff::Constant;
        assert_eq!(r.delay(&e, 3), Duration::from_millis(100));
    }

    #[test]
    fn retry_after_wins_when_longer() {
        let r = LlmRetry { base_delay: Duration::from_millis(100), ..LlmRetry::default() };
        let mut e = err(LlmErrorKind::RateLimit);
        e.retry_after = Some(Duration::from_secs(2));
        assert_eq!(r.delay(&e, 1), Duration::from_secs(2));
    }

    #[test]
    fn no_wait_exceeds_max_delay() {
        let r = LlmRetry {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(250),
            ..LlmRetry::default()
        };
        let mut e = err(LlmErrorKind::RateLimit);
        // a Retry-After a month away (an HTTP date) or a day (the numeric form)
        e.retry_after = Some(Duration::from_secs(30 * 86_400));
        assert_eq!(r.delay(&e, 1), Duration::from_millis(250));
        e.retry_after = None;
        assert_eq!(r.delay(&e, 10), Duration::from_millis(250), "exponential growth is capped too");
        assert_eq!(LlmRetry::default().delay(&err(LlmErrorKind::Timeout), 30), DEFAULT_MAX_RETRY_DELAY);
    }

    #[test]
    fn client_and_config_errors_never_retry() {
        let r = LlmRetry::default();
        assert!(r.should_retry(&err(LlmErrorKind::ServerError), 1));
        assert!(r.should_retry(&err(LlmErrorKind::Timeout), 2));
        assert!(!r.should_retry(&err(LlmErrorKind::Timeout), 3));
        assert!(!r.should_retry(&err(LlmErrorKind::ClientError), 1));
        assert!(!r.should_retry(&err(LlmErrorKind::ConfigError), 1));
    }
}
