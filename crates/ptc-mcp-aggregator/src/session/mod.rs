//! Stateful sessions (`--sessions`): definitions that persist across calls, per owner.
//!
//! Seven tools (`lisp_session_start`, `_list`, `_list_preludes`, `_eval`, `_inspect`,
//! `_forget`, `_close`) replace `lisp_eval` in `tools/list` while sessions are on. A
//! session belongs to the owner that started it — the stdio client, or on HTTP the
//! holders of one bearer token (the client address without a token) — and nobody else
//! can see or touch it.
//!
//! The state lives behind the [`SessionStore`] seam as a versioned record (`record.rs`),
//! so the same tools run over the in-process store or a shared one. An evaluation takes
//! the session's lease (a second evaluation at the same time gets `session_busy`, never
//! a queue), runs the program against the restored definitions, checks every limit, and
//! commits only if all of that succeeded and nobody wrote meanwhile: an error, a failed
//! `output_schema`, an oversized binding or a lost race commit nothing.

mod codec;
mod eval;
mod record;
mod redis_store;
pub mod store;
mod tools;
mod views;

use std::time::Duration;

pub use redis_store::RedisStore;
pub use store::{InProcessStore, SessionStore};

/// The prompt cards of the session tools (each checked against its budget).
pub(crate) const CARDS: [(&str, &str); 7] = [
    ("lisp_session_start", include_str!("../../prompts/lisp_session_start.md")),
    ("lisp_session_list", include_str!("../../prompts/lisp_session_list.md")),
    ("lisp_session_list_preludes", include_str!("../../prompts/lisp_session_list_preludes.md")),
    ("lisp_session_eval", include_str!("../../prompts/lisp_session_eval.md")),
    ("lisp_session_inspect", include_str!("../../prompts/lisp_session_inspect.md")),
    ("lisp_session_forget", include_str!("../../prompts/lisp_session_forget.md")),
    ("lisp_session_close", include_str!("../../prompts/lisp_session_close.md")),
];

/// True for the names of the session tools.
pub(crate) fn is_session_tool(name: &str) -> bool {
    CARDS.iter().any(|(n, _)| *n == name)
}

/// Session limits and switches (`ptc mcp --sessions` and the `--*session*` flags).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SessionConfig {
    /// Serve the session tools (and hide `lisp_eval`).
    pub enabled: bool,
    /// Live sessions in total.
    pub max_sessions: usize,
    /// Live sessions per owner.
    pub max_sessions_per_owner: usize,
    /// A session's lifetime (also the largest `ttl_ms` a start may ask for).
    pub ttl: Duration,
    /// A session unused this long ends.
    pub idle_timeout: Duration,
    /// All bindings of a session, encoded bytes.
    pub max_memory_bytes: usize,
    /// One binding, encoded bytes.
    pub max_binding_bytes: usize,
    /// Bindings per session.
    pub max_bindings: usize,
    /// One `*1`/`*2`/`*3` entry, encoded bytes; a larger result is not kept as history.
    pub max_history_entry_bytes: usize,
    /// `println` lines kept (most recent first to go... the oldest are dropped).
    pub max_print_entries: usize,
    /// Bytes of the `println` lines kept.
    pub max_print_bytes: usize,
    /// Tool-call records kept.
    pub max_tool_call_entries: usize,
    /// Bytes of the tool-call records kept.
    pub max_tool_call_bytes: usize,
    /// Upstream-call records kept.
    pub max_upstream_call_entries: usize,
    /// Bytes of the upstream-call records kept.
    pub max_upstream_call_bytes: usize,
    /// Characters of an eval's result preview.
    pub max_preview_chars: usize,
    /// How long an evaluation's lease lasts without renewal. A running evaluation renews
    /// it every third of this; an instance that dies mid-evaluation blocks its session
    /// for at most this long.
    pub lease: Duration,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            enabled: false,
            max_sessions: 64,
            max_sessions_per_owner: 16,
            ttl: Duration::from_millis(1_800_000),
            idle_timeout: Duration::from_millis(900_000),
            max_memory_bytes: 1024 * 1024,
            max_binding_bytes: 256 * 1024,
            max_bindings: 200,
            max_history_entry_bytes: 64 * 1024,
            max_print_entries: 50,
            max_print_bytes: 64 * 1024,
            max_tool_call_entries: 50,
            max_tool_call_bytes: 128 * 1024,
            max_upstream_call_entries: 50,
            max_upstream_call_bytes: 128 * 1024,
            max_preview_chars: 512,
            lease: Duration::from_millis(10_000),
        }
    }
}

impl SessionConfig {
    /// The limits as a session's `limits` payload shows them.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "ttl_ms": self.ttl.as_millis() as u64,
            "max_idle_ms": self.idle_timeout.as_millis() as u64,
            "max_memory_bytes": self.max_memory_bytes,
            "max_binding_bytes": self.max_binding_bytes,
            "max_bindings": self.max_bindings,
            "max_history_entry_bytes": self.max_history_entry_bytes,
            "max_print_entries": self.max_print_entries,
            "max_print_bytes": self.max_print_bytes,
            "max_tool_call_entries": self.max_tool_call_entries,
            "max_tool_call_bytes": self.max_tool_call_bytes,
            "max_upstream_call_entries": self.max_upstream_call_entries,
            "max_upstream_call_bytes": self.max_upstream_call_bytes,
            "max_preview_chars": self.max_preview_chars,
        })
    }
}

/// Who is calling: sessions are visible only to the owner that started them. The value is
/// a fingerprint, never a secret (a token's owner is a hash of it).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner(pub(crate) String);

impl Owner {
    /// The one owner of a stdio server (its single client).
    pub fn stdio() -> Owner {
        Owner("stdio".into())
    }

    /// The holders of an HTTP bearer token.
    pub fn token(token: &str) -> Owner {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(token.as_bytes());
        let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        Owner(format!("token:{hex}"))
    }

    /// An HTTP client without a token (loopback only), by address.
    pub fn peer(ip: std::net::IpAddr) -> Owner {
        Owner(format!("peer:{ip}"))
    }

    /// The fingerprint.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_cards_fit_their_budgets() {
        for (name, card) in CARDS {
            let header = card.split("\n---\n").next().unwrap_or("");
            assert!(header.contains(&format!("name: {name}")), "{name}: the card names its tool");
            let budget: usize = header
                .lines()
                .find_map(|l| l.strip_prefix("budget_bytes:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            let body = crate::server::card_body(card);
            assert!(budget > 0 && body.len() <= budget, "{name}: {} bytes, budget {budget}", body.len());
        }
    }

    #[test]
    fn owners_are_fingerprints() {
        let a = Owner::token("a-secret-token-of-at-least-32-characters");
        assert!(a.as_str().starts_with("token:") && !a.as_str().contains("secret"));
        assert_eq!(a, Owner::token("a-secret-token-of-at-least-32-characters"));
        assert_ne!(a, Owner::token("another-token-of-at-least-32-characters"));
        assert_ne!(Owner::stdio(), Owner::peer(std::net::Ipv4Addr::LOCALHOST.into()));
    }
}
