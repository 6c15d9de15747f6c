//! Server configuration: limits, response profile, HTTP security settings.

use std::time::Duration;

use ptc_lisp_eval::Limits;

/// How much a `tools/call` result carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ResponseProfile {
    /// Text only (default): smallest responses for the model's context.
    #[default]
    Slim,
    /// Text plus compact `structuredContent`, with an `outputSchema` in `tools/list`.
    Structured,
    /// Everything: the full payload mirrored as text and structured content.
    Debug,
}

impl std::str::FromStr for ResponseProfile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "slim" => Ok(ResponseProfile::Slim),
            "structured" => Ok(ResponseProfile::Structured),
            "debug" => Ok(ResponseProfile::Debug),
            other => Err(format!("unknown response profile {other:?}; use slim, structured or debug")),
        }
    }
}

impl ResponseProfile {
    /// (max print entries, max print bytes, max feedback bytes, envelope guard bytes)
    pub fn output_limits(self) -> (usize, usize, usize, usize) {
        match self {
            ResponseProfile::Slim => (20, 8 * 1024, 8 * 1024, 32 * 1024),
            ResponseProfile::Structured => (50, 16 * 1024, 16 * 1024, 96 * 1024),
            ResponseProfile::Debug => (200, 64 * 1024, 64 * 1024, 512 * 1024),
        }
    }
}

/// Everything the server needs to know.
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// Largest JSON-RPC frame (stdio line or HTTP body), bytes.
    pub max_frame_bytes: usize,
    /// Largest JSON-encoded `context`, bytes.
    pub max_context_bytes: usize,
    /// Calls evaluated at once; more wait in the queue.
    pub max_concurrent_calls: usize,
    /// Calls that may wait for a slot; one more gets `busy` at once.
    pub max_queued_calls: usize,
    /// How long a queued call waits for a slot before it gets `busy` (zero: no queue).
    pub queue_timeout: Duration,
    /// The sandbox limits of every program (the same `Limits` `ptc eval` uses;
    /// `max_program_bytes` also caps the `program` argument).
    pub limits: Limits,
    /// Result shape.
    pub response_profile: ResponseProfile,
    /// How much of a result the `user=> ...` preview shows (the `debug` profile shows it
    /// whole, up to `max_result_bytes`).
    pub preview: crate::envelope::Preview,
    /// HTTP: bearer token (required on non-loopback binds).
    pub http_auth_token: Option<String>,
    /// HTTP: more accepted bearer tokens (at least 32 characters each), one per team or
    /// client group: each token's holders are one owner of stateful sessions.
    pub http_extra_auth_tokens: Vec<String>,
    /// HTTP: extra allowed origins (`scheme://host[:port]`).
    pub http_allowed_origins: Vec<String>,
    /// HTTP: failed auth attempts per peer before blocking.
    pub http_auth_max_failures: u32,
    /// HTTP: window and block duration for failed-auth rate limiting.
    pub http_auth_block: Duration,
    /// HTTP: sessions in total; a new one evicts the least recently used.
    pub http_max_sessions: usize,
    /// HTTP: sessions per owner (the token holder, or the peer address without a token);
    /// a new one evicts that owner's least recently used.
    pub http_max_sessions_per_owner: usize,
    /// HTTP: time allowed for a request's headers to arrive.
    pub http_header_timeout: Duration,
    /// HTTP: time allowed for a request's body to arrive.
    pub http_body_timeout: Duration,
    /// Stateful sessions (`--sessions`) and their limits.
    pub sessions: crate::session::SessionConfig,
    /// `lisp_debug` (`--debug-tool`) and per-call traces (`--trace-dir`).
    pub diagnostics: crate::diagnostics::DiagnosticsConfig,
    /// stdio: run a plain `tools/call` of `lisp_eval` that finds a free slot without
    /// rmcp, from the stdin reader straight to an evaluation thread (the same answer,
    /// fewer thread handoffs). Off: every call takes rmcp's path (for comparisons).
    pub stdio_fast_path: bool,
    /// HTTP: answer a plain `POST /mcp` `tools/call` of `lisp_eval` on an initialised
    /// session that finds a free slot without rmcp, from the connection's task straight to
    /// an evaluation thread (the same answer, fewer handoffs; see `http_fast.rs`). Off:
    /// every request takes rmcp's path (for comparisons).
    pub http_fast_path: bool,
    /// HTTP: threads that serve connections, each an evaluation thread with a runtime of
    /// its own, on which the fast path answers a tiny program without a handoff to the
    /// pool (a bigger one still goes to the pool). 0: connections are served on the
    /// caller's runtime and every call goes to the pool.
    pub http_conn_threads: usize,
}

impl Default for McpConfig {
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        McpConfig {
            max_frame_bytes: 8 * 1024 * 1024,
            max_context_bytes: 4 * 1024 * 1024,
            max_concurrent_calls: cpus.min(8),
            max_queued_calls: 64,
            queue_timeout: Duration::from_secs(10),
            limits: Limits::mcp(),
            response_profile: ResponseProfile::Slim,
            preview: crate::envelope::Preview::default(),
            http_auth_token: None,
            http_extra_auth_tokens: Vec::new(),
            http_allowed_origins: Vec::new(),
            http_auth_max_failures: 5,
            http_auth_block: Duration::from_secs(60),
            http_max_sessions: 256,
            http_max_sessions_per_owner: 32,
            http_header_timeout: Duration::from_secs(10),
            http_body_timeout: Duration::from_secs(30),
            sessions: crate::session::SessionConfig::default(),
            diagnostics: crate::diagnostics::DiagnosticsConfig::default(),
            stdio_fast_path: true,
            http_fast_path: true,
            http_conn_threads: cpus.min(8),
        }
    }
}
