//! `ptc-mcp-aggregator`: MCP both ways. Today: a server exposing `lisp_eval` over stdio
//! and Streamable HTTP, through the official `rmcp` SDK kept behind this crate's types.
//!
//! The seam for upstream aggregation (seed 002) is [`ToolBackend`]: the server asks it
//! for the extra tools a program may call (`tool/...`) and for the `Host` that runs them.
//! The default backend has no tools; an upstream runtime implements the same trait.
//!
//! This crate never evaluates programs on an async thread: each call runs on the
//! evaluator's own blocking worker, and cancellation reaches it through a flag.

mod config;
mod envelope;
/// Public only for the fuzz target (`fuzz/fuzz_targets/frame.rs`); not part of the API.
#[doc(hidden)]
pub mod frame;
mod http;
mod server;
mod stdio;
pub mod upstream;

pub use config::{McpConfig, ResponseProfile};
pub use envelope::CallPayload;
pub use http::{HttpError, serve_http};
pub use server::{LISP_EVAL_CARD, NoUpstreams, PtcServer, ToolBackend};
pub use stdio::{StdioError, serve_stdio};
pub use upstream::{UpstreamOptions, UpstreamRuntime};

/// The examples of `docs/embedding.md`, compiled and run as doctests (this crate depends
/// on `ptc-lisp-eval`, whose crate the guide is about).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/embedding.md")]
pub struct EmbeddingGuide;
