//! Sandbox limits: one struct, every limit configurable, enforced by counting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::cancel::Cancel;
use crate::error::{ErrorKind, EvalError, Flow};

/// Every resource limit of a run. Defaults follow the upstream PtcRunner where it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock budget for evaluation (upstream default 1,000 ms).
    pub timeout: Duration,
    /// Bytes a program may build (strings, collections). Context handed in is free.
    pub max_heap_bytes: u64,
    /// `recur` jumps per loop (upstream default 1,000).
    pub max_loop_iterations: u64,
    /// Nested (non-tail) call depth.
    pub max_recursion_depth: u32,
    /// Program text size in bytes.
    pub max_program_bytes: usize,
    /// Unique symbols and keywords in the program text (every name it defines, binds,
    /// quotes or mentions); the keywords `keyword` makes at run time have a cap of the same
    /// size.
    pub max_symbols: usize,
    /// Characters per `println` call; longer lines are truncated.
    pub max_print_length: usize,
    /// Bytes of all `println` output of a run; later lines are dropped (with one marker).
    pub max_print_bytes: usize,
    /// Bytes of the printed result; a larger result is an `output_too_large` error.
    pub max_result_bytes: usize,
    /// Tool calls per run (`None` = unlimited).
    pub max_tool_calls: Option<u32>,
    /// Parallel worker threads available to `pmap`/`pcalls`.
    pub max_parallel_workers: u32,
    /// Collection nesting depth in the reader.
    pub max_nesting_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_millis(1_000),
            max_heap_bytes: 64 * 1024 * 1024,
            max_loop_iterations: 1_000,
            max_recursion_depth: 2_000,
            max_program_bytes: 1_000_000,
            max_symbols: 10_000,
            max_print_length: 2_000,
            max_print_bytes: 1_000_000,
            max_result_bytes: 1_000_000,
            max_tool_calls: None,
            max_parallel_workers: 8,
            max_nesting_depth: 256,
        }
    }
}

impl Limits {
    /// The limits `ptc mcp` starts from: the defaults, with programs capped at 64 KiB
    /// (a program arrives inside one JSON-RPC frame).
    pub fn mcp() -> Self {
        Limits { max_program_bytes: 65_536, ..Limits::default() }
    }

    /// One line for prompts and tool descriptions: the limits a program meets.
    ///
    /// ```
    /// assert_eq!(
    ///     ptc_lisp_eval::Limits::default().summary(),
    ///     "1 s per program, 64 MiB of built data, 1,000 recur steps per loop, 2,000 nested calls"
    /// );
    /// ```
    pub fn summary(&self) -> String {
        let ms = self.timeout.as_millis();
        let time = if ms.is_multiple_of(1000) { format!("{} s", ms / 1000) } else { format!("{ms} ms") };
        let mib = self.max_heap_bytes / (1024 * 1024);
        let heap = if mib > 0 { format!("{mib} MiB") } else { format!("{} bytes", self.max_heap_bytes) };
        let mut out = format!(
            "{time} per program, {heap} of built data, {} recur steps per loop, {} nested calls",
            thousands(self.max_loop_iterations),
            thousands(u64::from(self.max_recursion_depth))
        );
        if let Some(n) = self.max_tool_calls {
            out.push_str(&format!(", {} tool calls", thousands(u64::from(n))));
        }
        out
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Shared run state that parallel branches also see: deadline, memory, cancellation.
#[derive(Debug)]
pub struct SharedBudget {
    /// When evaluation must stop.
    pub deadline: Instant,
    /// The configured timeout (for messages).
    pub timeout: Duration,
    /// Bytes charged so far.
    pub heap_used: AtomicU64,
    /// Heap limit.
    pub heap_limit: u64,
    /// The run's cancel handle.
    pub cancel: Cancel,
    /// True when the deadline is a parent's (a mission's), earlier than this run's timeout.
    pub inherited_deadline: bool,
    /// Parallel workers currently running.
    pub workers_live: AtomicU64,
    /// Tool calls made so far.
    pub tool_calls: AtomicU64,
}

impl SharedBudget {
    /// A budget starting now.
    pub fn new(limits: &Limits, cancel: Cancel) -> Self {
        let own = Instant::now() + limits.timeout;
        let (deadline, inherited_deadline) = match cancel.deadline() {
            Some(parent) if parent < own => (parent, true),
            _ => (own, false),
        };
        SharedBudget {
            deadline,
            inherited_deadline,
            timeout: limits.timeout,
            heap_used: AtomicU64::new(0),
            heap_limit: limits.max_heap_bytes,
            cancel,
            workers_live: AtomicU64::new(0),
            tool_calls: AtomicU64::new(0),
        }
    }

    /// Charges `bytes` of memory; fails with `memory_exceeded` past the limit.
    #[inline]
    pub fn charge(&self, bytes: u64) -> Result<(), Flow> {
        // saturating: a charge computed from a program's count can be near u64::MAX
        let before = self.heap_used.fetch_add(bytes.min(self.heap_limit.saturating_add(1)), Ordering::Relaxed);
        let used = before.saturating_add(bytes);
        if used > self.heap_limit {
            return Err(EvalError::new(
                ErrorKind::MemoryExceeded,
                format!(
                    "memory limit exceeded: the program built more than {} bytes of data (max_heap_bytes); work on smaller slices, aggregate instead of collecting, or avoid doubling strings/collections in a loop",
                    self.heap_limit
                ),
            )
            .into());
        }
        Ok(())
    }

    /// Checks the deadline and cancellation.
    pub fn check_time(&self) -> Result<(), Flow> {
        if let Some(kind) = crate::meter::take_abort() {
            return Err(self.walk_error(kind).into());
        }
        if self.cancel.is_cancelled() {
            return Err(EvalError::new(ErrorKind::Cancelled, "the run was cancelled by the host").into());
        }
        if Instant::now() >= self.deadline {
            return Err(self.timeout_error().into());
        }
        Ok(())
    }

    /// The error of a run whose value walk (`=`, hashing, printing, JSON) stopped early.
    pub fn walk_error(&self, kind: ErrorKind) -> EvalError {
        match kind {
            ErrorKind::Timeout => self.timeout_error(),
            ErrorKind::Cancelled => EvalError::new(ErrorKind::Cancelled, "the run was cancelled by the host"),
            other => EvalError::new(
                other,
                "a value is nested too deeply to compare, hash, print or convert (the evaluation stack ran out); build flatter data",
            ),
        }
    }

    /// The error of a run that reached its deadline.
    pub fn timeout_error(&self) -> EvalError {
        let message = if self.inherited_deadline {
            "execution stopped at the mission's deadline (mission_timeout); do less work per program or return what you have".to_string()
        } else {
            format!(
                "execution exceeded {}ms limit (timeout); process less data per program or avoid unbounded loops",
                self.timeout.as_millis()
            )
        };
        EvalError::new(ErrorKind::Timeout, message)
    }
}

/// Approximate bytes a value of each shape occupies, for memory charging.
pub mod cost {
    /// Per collection element (a value slot plus tree overhead).
    pub const ELEM: u64 = 32;
    /// Per map entry.
    pub const ENTRY: u64 = 64;
    /// Fixed collection header.
    pub const HEADER: u64 = 48;

    /// A collection of `n` elements (saturating: a count from a program cannot wrap).
    #[inline]
    pub fn items(n: u64) -> u64 {
        HEADER.saturating_add(ELEM.saturating_mul(n))
    }

    /// A map of `n` entries (saturating).
    #[inline]
    pub fn entries(n: u64) -> u64 {
        HEADER.saturating_add(ENTRY.saturating_mul(n))
    }
}
