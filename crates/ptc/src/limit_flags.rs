//! One set of sandbox-limit flags shared by `eval`, `repl` and `mcp` (and `run`).
//!
//! Each flag overrides one field of a base [`Limits`]; the base is the library default
//! for `eval`/`repl` and [`Limits::mcp`] for the MCP server, so a difference in defaults is
//! a named choice in one place. Every flag also reads a `PTC_*` environment variable
//! (the flag wins).

use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;
use ptc_lisp_eval::Limits;

/// Every sandbox limit, as flags.
#[derive(Args, Debug, Default, Clone)]
pub struct LimitArgs {
    /// Wall-clock limit per program, in milliseconds [default: 1000; `ptc run`: 5000].
    #[arg(long, env = "PTC_TIMEOUT_MS", visible_alias = "program-timeout-ms", value_name = "MS")]
    pub timeout_ms: Option<u64>,
    /// Bytes a program may build (strings, collections; context data is free) [default: 67108864].
    #[arg(long, env = "PTC_MAX_HEAP_BYTES", visible_alias = "program-memory-limit-bytes", value_name = "BYTES")]
    pub max_heap_bytes: Option<u64>,
    /// recur jumps per loop [default: 1000].
    #[arg(long, env = "PTC_MAX_LOOP_ITERATIONS", value_name = "N")]
    pub max_loop_iterations: Option<u64>,
    /// Nested function call depth [default: 2000].
    #[arg(long, env = "PTC_MAX_RECURSION_DEPTH", value_name = "N")]
    pub max_recursion_depth: Option<u32>,
    /// Program size in bytes [default: 1000000; mcp: 65536].
    #[arg(long, env = "PTC_MAX_PROGRAM_BYTES", value_name = "BYTES")]
    pub max_program_bytes: Option<usize>,
    /// Unique symbols and keywords in the program [default: 10000].
    #[arg(long, env = "PTC_MAX_SYMBOLS", value_name = "N")]
    pub max_symbols: Option<usize>,
    /// Characters per println line [default: 2000].
    #[arg(long, env = "PTC_MAX_PRINT_LENGTH", value_name = "N")]
    pub max_print_length: Option<usize>,
    /// Bytes of all println output of a program; later lines are dropped [default: 1000000].
    #[arg(long, env = "PTC_MAX_PRINT_BYTES", value_name = "BYTES")]
    pub max_print_bytes: Option<usize>,
    /// Bytes of the printed result [default: 1000000].
    #[arg(long, env = "PTC_MAX_RESULT_BYTES", value_name = "BYTES")]
    pub max_result_bytes: Option<usize>,
    /// Tool calls per program [default: unlimited].
    #[arg(long, env = "PTC_MAX_TOOL_CALLS", value_name = "N")]
    pub max_tool_calls: Option<u32>,
    /// Parallel workers for pmap/pcalls [default: 8].
    #[arg(long, env = "PTC_MAX_PARALLEL_WORKERS", value_name = "N")]
    pub max_parallel_workers: Option<u32>,
}

impl LimitArgs {
    /// `base` with every given flag applied; out-of-range values are usage errors.
    pub fn to_limits(&self, base: Limits) -> Result<Limits> {
        let mut l = base;
        if let Some(v) = self.timeout_ms {
            if v == 0 {
                bail!("--timeout-ms must be at least 1");
            }
            l.timeout = Duration::from_millis(v);
        }
        if let Some(v) = self.max_heap_bytes {
            l.max_heap_bytes = v;
        }
        if let Some(v) = self.max_loop_iterations {
            l.max_loop_iterations = v;
        }
        if let Some(v) = self.max_recursion_depth {
            if v > 100_000 {
                bail!("--max-recursion-depth must be at most 100000");
            }
            l.max_recursion_depth = v;
        }
        if let Some(v) = self.max_program_bytes {
            l.max_program_bytes = v;
        }
        if let Some(v) = self.max_symbols {
            l.max_symbols = v;
        }
        if let Some(v) = self.max_print_length {
            l.max_print_length = v;
        }
        if let Some(v) = self.max_print_bytes {
            l.max_print_bytes = v;
        }
        if let Some(v) = self.max_result_bytes {
            l.max_result_bytes = v;
        }
        if self.max_tool_calls.is_some() {
            l.max_tool_calls = self.max_tool_calls;
        }
        if let Some(v) = self.max_parallel_workers {
            if v == 0 {
                bail!("--max-parallel-workers must be at least 1");
            }
            l.max_parallel_workers = v;
        }
        Ok(l)
    }
}
