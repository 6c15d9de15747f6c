//! Sandbox limits: one struct, every limit configurable, enforced by counting.
//!
//! [`Limits`] holds the values of one run; [`Limits::table`] describes each limit once — its
//! name, meaning, unit, default, allowed range and the reason a run ends with when it is
//! exceeded — and [`Limits::validate`] checks a whole set against it. Front ends (the
//! `ptc` flags, configuration files) read names, defaults and ranges from the table
//! instead of restating them, and set values through [`LimitSpec::set`], which checks the
//! range.

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
    /// Fuel units a run may burn (`None`: no limit, the default). Fuel counts steps of
    /// work — calls, loop iterations, items inside iterating builtins — so unlike the
    /// wall-clock `timeout` it ends the same program at the same point on any machine;
    /// past it the run ends in `fuel_exhausted`. Parallel branches' fuel counts too.
    pub max_fuel: Option<u64>,
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
            max_fuel: None,
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

/// The unit a limit is counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitUnit {
    /// Milliseconds.
    Millis,
    /// Bytes.
    Bytes,
    /// Characters.
    Chars,
    /// A count of things (steps, calls, names, levels, workers).
    Count,
}

impl LimitUnit {
    /// A short placeholder for the value (`MS`, `BYTES`, `N`).
    pub fn placeholder(self) -> &'static str {
        match self {
            LimitUnit::Millis => "MS",
            LimitUnit::Bytes => "BYTES",
            LimitUnit::Chars | LimitUnit::Count => "N",
        }
    }
}

/// One limit: what it bounds, its default, its allowed range and what happens past it.
/// Values are read and set as `u64` in the limit's [`LimitUnit`]; an optional limit (`None`:
/// off or unlimited) reads as `None`.
#[derive(Debug)]
#[non_exhaustive]
pub struct LimitSpec {
    /// Stable snake_case name (`timeout_ms`, `max_heap_bytes`); `ptc` derives its flag
    /// (`--timeout-ms`) and environment variable (`PTC_TIMEOUT_MS`) from it.
    pub name: &'static str,
    /// One line: what the limit bounds.
    pub doc: &'static str,
    /// The unit of the value.
    pub unit: LimitUnit,
    /// Smallest allowed value.
    pub min: u64,
    /// Largest allowed value.
    pub max: u64,
    /// True when the limit may be off (`None`).
    pub optional: bool,
    /// What happens when a run passes it: an error kind's name, or what is cut.
    pub exceeded: &'static str,
    get: fn(&Limits) -> Option<u64>,
    put: fn(&mut Limits, Option<u64>),
}

/// A limit value outside its allowed range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{limit} must be {range} (got {value}); {hint}")]
#[non_exhaustive]
pub struct LimitError {
    /// The limit's name.
    pub limit: &'static str,
    /// The value given.
    pub value: String,
    /// The allowed range, in words.
    pub range: String,
    /// What to write instead.
    pub hint: String,
}

impl LimitSpec {
    /// The default value (`None`: off by default).
    pub fn default_value(&self) -> Option<u64> {
        (self.get)(&Limits::default())
    }

    /// The value in `limits`.
    pub fn get(&self, limits: &Limits) -> Option<u64> {
        (self.get)(limits)
    }

    /// Sets the value in `limits` after checking its range (`None` turns an optional
    /// limit off).
    pub fn set(&self, limits: &mut Limits, value: Option<u64>) -> Result<(), LimitError> {
        self.check(value)?;
        (self.put)(limits, value);
        Ok(())
    }

    /// Checks a value against the allowed range.
    pub fn check(&self, value: Option<u64>) -> Result<(), LimitError> {
        match value {
            Some(v) if (self.min..=self.max).contains(&v) => Ok(()),
            None if self.optional => Ok(()),
            other => Err(LimitError {
                limit: self.name,
                value: other.map_or_else(|| "none".to_string(), |v| v.to_string()),
                range: self.range_text(),
                hint: match self.default_value() {
                    Some(d) => format!("the default is {d}"),
                    None => "leave it unset to turn it off".to_string(),
                },
            }),
        }
    }

    /// The allowed range in words (`between 1 and 100000`, `at least 1`).
    pub fn range_text(&self) -> String {
        if self.max == u64::MAX {
            format!("at least {}", self.min)
        } else {
            format!("between {} and {}", self.min, self.max)
        }
    }
}

fn usize_of(v: Option<u64>) -> usize {
    v.map_or(usize::MAX, |v| usize::try_from(v).unwrap_or(usize::MAX))
}

fn u32_of(v: Option<u64>) -> u32 {
    v.map_or(u32::MAX, |v| u32::try_from(v).unwrap_or(u32::MAX))
}

/// 24 hours, the longest `timeout` (an `Instant` cannot be pushed arbitrarily far).
const DAY_MS: u64 = 86_400_000;

static TABLE: &[LimitSpec] = &[
    LimitSpec {
        name: "timeout_ms",
        doc: "Wall-clock time a program may run",
        unit: LimitUnit::Millis,
        min: 1,
        max: DAY_MS,
        optional: false,
        exceeded: "timeout",
        get: |l| Some(u64::try_from(l.timeout.as_millis()).unwrap_or(u64::MAX)),
        put: |l, v| l.timeout = Duration::from_millis(v.unwrap_or(DAY_MS)),
    },
    LimitSpec {
        name: "max_heap_bytes",
        doc: "Bytes a program may build (strings, collections; context data is free)",
        unit: LimitUnit::Bytes,
        min: 0,
        max: u64::MAX,
        optional: false,
        exceeded: "memory_exceeded",
        get: |l| Some(l.max_heap_bytes),
        put: |l, v| l.max_heap_bytes = v.unwrap_or(u64::MAX),
    },
    LimitSpec {
        name: "max_loop_iterations",
        doc: "recur jumps per loop",
        unit: LimitUnit::Count,
        min: 1,
        max: u64::MAX,
        optional: false,
        exceeded: "loop_limit_exceeded",
        get: |l| Some(l.max_loop_iterations),
        put: |l, v| l.max_loop_iterations = v.unwrap_or(u64::MAX),
    },
    LimitSpec {
        name: "max_recursion_depth",
        doc: "Nested (non-tail) function call depth",
        unit: LimitUnit::Count,
        min: 1,
        max: 100_000,
        optional: false,
        exceeded: "recursion_limit_exceeded",
        get: |l| Some(u64::from(l.max_recursion_depth)),
        put: |l, v| l.max_recursion_depth = u32_of(v),
    },
    LimitSpec {
        name: "max_program_bytes",
        doc: "Program text size",
        unit: LimitUnit::Bytes,
        min: 1,
        max: 1 << 30,
        optional: false,
        exceeded: "program_too_large",
        get: |l| Some(l.max_program_bytes as u64),
        put: |l, v| l.max_program_bytes = usize_of(v),
    },
    LimitSpec {
        name: "max_symbols",
        doc: "Unique symbols and keywords in the program text (and keywords made at run time)",
        unit: LimitUnit::Count,
        min: 1,
        max: 10_000_000,
        optional: false,
        exceeded: "symbol_limit_exceeded",
        get: |l| Some(l.max_symbols as u64),
        put: |l, v| l.max_symbols = usize_of(v),
    },
    LimitSpec {
        name: "max_print_length",
        doc: "Characters per printed line (println, doc)",
        unit: LimitUnit::Chars,
        min: 1,
        max: 1 << 30,
        optional: false,
        exceeded: "the line is cut, saying how long it was",
        get: |l| Some(l.max_print_length as u64),
        put: |l, v| l.max_print_length = usize_of(v),
    },
    LimitSpec {
        name: "max_print_bytes",
        doc: "Bytes of all printed output of a program",
        unit: LimitUnit::Bytes,
        min: 0,
        max: 1 << 40,
        optional: false,
        exceeded: "later lines are dropped, one marker line says so",
        get: |l| Some(l.max_print_bytes as u64),
        put: |l, v| l.max_print_bytes = usize_of(v),
    },
    LimitSpec {
        name: "max_result_bytes",
        doc: "Bytes of the printed result",
        unit: LimitUnit::Bytes,
        min: 1,
        max: 1 << 40,
        optional: false,
        exceeded: "output_too_large",
        get: |l| Some(l.max_result_bytes as u64),
        put: |l, v| l.max_result_bytes = usize_of(v),
    },
    LimitSpec {
        name: "max_tool_calls",
        doc: "Tool calls per program (unset: unlimited)",
        unit: LimitUnit::Count,
        min: 0,
        max: u32::MAX as u64,
        optional: true,
        exceeded: "tool_call_limit_exceeded",
        get: |l| l.max_tool_calls.map(u64::from),
        put: |l, v| l.max_tool_calls = v.map(|v| u32_of(Some(v))),
    },
    LimitSpec {
        name: "max_parallel_workers",
        doc: "Parallel workers for pmap/pcalls",
        unit: LimitUnit::Count,
        min: 1,
        max: 256,
        optional: false,
        exceeded: "parallel_capacity_exceeded when all are busy",
        get: |l| Some(u64::from(l.max_parallel_workers)),
        put: |l, v| l.max_parallel_workers = u32_of(v),
    },
    LimitSpec {
        name: "max_nesting_depth",
        doc: "Collection nesting depth in the program text",
        unit: LimitUnit::Count,
        min: 1,
        max: 1_000,
        optional: false,
        exceeded: "parse_error",
        get: |l| Some(l.max_nesting_depth as u64),
        put: |l, v| l.max_nesting_depth = usize_of(v),
    },
    LimitSpec {
        name: "max_fuel",
        doc: "Fuel units (steps of work) a program may burn: a deterministic budget beside the deadline (unset: off)",
        unit: LimitUnit::Count,
        min: 1,
        max: u64::MAX,
        optional: true,
        exceeded: "fuel_exhausted",
        get: |l| l.max_fuel,
        put: |l, v| l.max_fuel = v,
    },
];

impl Limits {
    /// Every limit, in the order the reference lists them.
    pub fn table() -> &'static [LimitSpec] {
        TABLE
    }

    /// The limit named `name` (`max_heap_bytes`).
    pub fn spec(name: &str) -> Option<&'static LimitSpec> {
        TABLE.iter().find(|s| s.name == name)
    }

    /// Checks every limit against its allowed range ([`Limits::table`]).
    ///
    /// ```
    /// use ptc_lisp_eval::Limits;
    /// assert!(Limits::default().validate().is_ok());
    /// let err = Limits { max_parallel_workers: 0, ..Limits::default() }.validate().unwrap_err();
    /// assert_eq!(err.to_string(), "max_parallel_workers must be between 1 and 256 (got 0); the default is 8");
    /// ```
    pub fn validate(&self) -> Result<(), LimitError> {
        TABLE.iter().try_for_each(|s| s.check(s.get(self)))
    }
}

/// Shared run state that parallel branches also see: deadline, memory, cancellation.
#[derive(Debug)]
pub(crate) struct SharedBudget {
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
    pub(crate) fn new(limits: &Limits, cancel: Cancel) -> Self {
        let now = Instant::now();
        // a timeout too far out for the clock (an unchecked `Limits`) is as good as none
        let own = now.checked_add(limits.timeout).unwrap_or_else(|| now + Duration::from_millis(DAY_MS));
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
    pub(crate) fn charge(&self, bytes: u64) -> Result<(), Flow> {
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
    pub(crate) fn check_time(&self) -> Result<(), Flow> {
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
    pub(crate) fn walk_error(&self, kind: ErrorKind) -> EvalError {
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
    pub(crate) fn timeout_error(&self) -> EvalError {
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
pub(crate) mod cost {
    /// Per collection element (a value slot plus tree overhead).
    pub(crate) const ELEM: u64 = 32;
    /// Per map entry.
    pub(crate) const ENTRY: u64 = 64;
    /// Fixed collection header.
    pub(crate) const HEADER: u64 = 48;

    /// A collection of `n` elements (saturating: a count from a program cannot wrap).
    #[inline]
    pub(crate) fn items(n: u64) -> u64 {
        HEADER.saturating_add(ELEM.saturating_mul(n))
    }

    /// A map of `n` entries (saturating).
    #[inline]
    pub(crate) fn entries(n: u64) -> u64 {
        HEADER.saturating_add(ENTRY.saturating_mul(n))
    }
}
