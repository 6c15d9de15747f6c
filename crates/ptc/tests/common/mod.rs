//! What the `ptc` integration tests share: running the binary, scratch files and scripts
//! (`cli`), `ptc mcp` over stdio and Streamable HTTP with a JSON-RPC client (`mcp`), a
//! fake OpenAI vendor (`vendor`), a JSON service the test holds (`service`), a real
//! `redis-server` (`redis`) and a process's memory from /proc (`rss`).
//!
//! Each test file is its own crate and uses only part of this, hence `dead_code`.
#![allow(dead_code)]

pub mod cli;
pub mod mcp;
pub mod redis;
pub mod rss;
pub mod service;
pub mod vendor;
