//! Server configuration: limits, response profile, HTTP security settings.

use std::time::Duration;

/// How much a `tools/call` result carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
    /// Largest `program` argument, bytes.
    pub max_program_bytes: usize,
    /// Largest JSON-encoded `context`, bytes.
    pub max_context_bytes: usize,
    /// Calls evaluated at once; more get `busy` immediately.
    pub max_concurrent_calls: usize,
    /// Wall-clock limit per program.
    pub program_timeout: Duration,
    /// Memory budget per program, bytes.
    pub program_memory_limit_bytes: u64,
    /// Result shape.
    pub response_profile: ResponseProfile,
    /// HTTP: bearer token (required on non-loopback binds).
    pub http_auth_token: Option<String>,
    /// HTTP: extra allowed origins (`scheme://host[:port]`).
    pub http_allowed_origins: Vec<String>,
    /// HTTP: failed auth attempts per peer before blocking.
    pub http_auth_max_failures: u32,
    /// HTTP: window and block duration for failed-auth rate limiting.
    pub http_auth_block: Duration,
    /// HTTP: session cap.
    pub http_max_sessions: usize,
}

impl Default for McpConfig {
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        McpConfig {
            max_frame_bytes: 8 * 1024 * 1024,
            max_program_bytes: 65_536,
            max_context_bytes: 4 * 1024 * 1024,
            max_concurrent_calls: cpus.min(8),
            program_timeout: Duration::from_millis(1_000),
            program_memory_limit_bytes: 64 * 1024 * 1024,
            response_profile: ResponseProfile::Slim,
            http_auth_token: None,
            http_allowed_origins: Vec::new(),
            http_auth_max_failures: 5,
            http_auth_block: Duration::from_secs(60),
            http_max_sessions: 256,
        }
    }
}
