//! `ptc-mcp-aggregator`: MCP both ways, through the official `rmcp` SDK kept behind this
//! crate's types. A [`PtcServer`] exposes `lisp_eval` over stdio ([`serve_stdio`]) and
//! Streamable HTTP ([`serve_http`]); the [`upstream`] runtime aggregates upstream MCP
//! servers and read-only OpenAPI services so one program can call and join their tools.
//!
//! The seam between the two is [`ToolBackend`]: the server asks it for the extra tools a
//! program may call (`tool/...`) and for the `Host` that runs them. [`NoUpstreams`] has no
//! tools; [`UpstreamRuntime`] implements the same trait over `upstreams.json`.
//!
//! This crate never evaluates programs on an async thread: each call runs on the
//! evaluator's own blocking worker, and cancellation reaches it through a flag. It is the
//! only crate of the workspace that speaks MCP; the `rmcp` types that cross its API are the
//! `ServerHandler` that [`PtcServer`] implements and the tool definition it lists.
//!
//! A `lisp_eval` call without the transport around it:
//!
//! ```
//! use std::sync::Arc;
//! use ptc_mcp_aggregator::{McpConfig, NoUpstreams, PtcServer, ResponseProfile};
//! use serde_json::json;
//!
//! let mut config = McpConfig::default();
//! config.response_profile = ResponseProfile::Structured;
//! let server = PtcServer::new(config, Arc::new(NoUpstreams));
//!
//! let args = json!({"program": "(count (filter odd? data/xs))", "context": {"xs": [1, 2, 3]}});
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let payload = runtime.block_on(server.call_lisp_eval(args.as_object().cloned(), Default::default()));
//! assert!(!payload.is_error);
//! assert_eq!(payload.text, "user=> 2");
//! assert_eq!(payload.structured, Some(json!({"status": "ok", "result": "user=> 2"})));
//! # Ok::<(), std::io::Error>(())
//! ```

#![deny(missing_docs)]
#![warn(unreachable_pub)]

pub mod agentic;
mod config;
mod context_stash;
mod diagnostics;
mod envelope;
// Public only for the fuzz target (`fuzz/fuzz_targets/frame.rs`); not part of the API.
#[doc(hidden)]
pub mod frame;
mod http;
mod http_fast;
pub mod prelude;
mod reason;
mod server;
pub mod session;
mod stdio;
#[cfg(test)]
mod test_support;
pub mod upstream;

pub use config::{McpConfig, ResponseProfile};
pub use diagnostics::{DiagnosticsConfig, PayloadPolicy};
pub use envelope::{CallPayload, Preview};
pub use http::{HttpError, serve_http};
pub use prelude::{PreludeError, Preludes};
pub use reason::McpReason;
pub use server::{LISP_EVAL_CARD, NoUpstreams, PtcServer, ToolBackend};
pub use session::{Owner, SessionConfig};
pub use stdio::{StdioError, serve_stdio};
pub use upstream::{UpstreamOptions, UpstreamRuntime};

/// The examples of `docs/embedding.md`, compiled and run as doctests (this crate depends
/// on `ptc-lisp-eval`, whose crate the guide is about).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/embedding.md")]
pub struct EmbeddingGuide;

/// The examples of this crate's `README.md`, compiled and run as doctests so that the
/// page crates.io shows cannot drift from the code.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
