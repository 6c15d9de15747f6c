//! The contract every [`Host`] implementation should pass, as checks any test can run.
//!
//! The agent loop's tool table, the MCP aggregator's upstream runtime and embedders' own
//! hosts all sit behind the same trait; these checks pin what the evaluator relies on:
//! a stable, well-formed tool list; unknown tools answered with `UnknownTool`; calls that
//! return by the deadline and stop on cancellation; no panics; a ledger entry per call.
//!
//! ```
//! use ptc_lisp_eval::contract::{Probe, check_host};
//! use ptc_lisp_eval::{FnHost, Value};
//! let host = FnHost::new()
//!     .with_tool("echo", |args| Ok(args))
//!     .with_tool("sleepy", |_| { std::thread::sleep(std::time::Duration::from_secs(5)); Ok(Value::Nil) });
//! let probe = Probe::new("echo", Value::empty_map()).with_slow("sleepy", Value::empty_map());
//! let report = check_host(&host, &probe);
//! assert!(report.passed(), "{report}");
//! ```

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use crate::cancel::Cancel;
use crate::engine::{Engine, RunInput};
use crate::host::{CallCx, Discovery, Host, ToolCall, ToolErrorKind};
use crate::limits::Limits;
use crate::value::Value;

/// How late a call may return after its deadline or cancellation, unless the probe says
/// otherwise ([`Probe::with_slack`]).
pub const SLACK: Duration = Duration::from_millis(250);

/// What to call while checking a host.
#[derive(Debug, Clone)]
pub struct Probe {
    /// A quick call that should succeed or fail cleanly.
    pub call: ToolCall,
    /// A call that takes longer than a second, to check deadlines and cancellation.
    pub slow: Option<ToolCall>,
    /// How late the slow call may return after its deadline or cancellation ([`SLACK`]
    /// unless set).
    pub slack: Duration,
}

impl Probe {
    /// A probe with one quick call.
    pub fn new(tool: &str, args: Value) -> Self {
        Probe { call: ToolCall { name: tool.to_string(), args }, slow: None, slack: SLACK }
    }

    /// Adds a slow call.
    pub fn with_slow(mut self, tool: &str, args: Value) -> Self {
        self.slow = Some(ToolCall { name: tool.to_string(), args });
        self
    }

    /// Allows the slow call to return up to `slack` after its deadline or cancellation
    /// (a loaded test machine may need more than [`SLACK`]). The checks only mean something
    /// while the slow call takes longer than 200 ms plus the slack.
    pub fn with_slack(mut self, slack: Duration) -> Self {
        self.slack = slack;
        self
    }
}

/// The result of every check, by name.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Report {
    /// `(check, Ok or why it failed)`.
    pub checks: Vec<(&'static str, Result<(), String>)>,
}

impl Report {
    /// True when every check passed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|(_, r)| r.is_ok())
    }

    fn push(&mut self, name: &'static str, r: Result<(), String>) {
        self.checks.push((name, r));
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, r) in &self.checks {
            match r {
                Ok(()) => writeln!(f, "ok   {name}")?,
                Err(why) => writeln!(f, "FAIL {name}: {why}")?,
            }
        }
        Ok(())
    }
}

/// Runs every check against `host`.
pub fn check_host(host: &dyn Host, probe: &Probe) -> Report {
    let mut report = Report::default();
    report.push("tool list is well formed and stable", tool_list(host));
    report.push("unknown tool is answered with UnknownTool", unknown_tool(host));
    report.push("quick call answers without panicking", quick_call(host, &probe.call));
    report.push("discovery answers nothing or a value", discovery(host));
    report.push("engine records the call in the ledger", through_engine(host, &probe.call));
    if let Some(slow) = &probe.slow {
        report.push("slow call returns by the deadline", slow_deadline(host, slow, probe.slack));
        report.push("slow call stops on cancellation", slow_cancel(host, slow, probe.slack));
        report.push("slow call through the engine ends in timeout", slow_through_engine(host, slow, probe.slack));
    }
    report
}

fn tool_list(host: &dyn Host) -> Result<(), String> {
    let first = host.tools();
    let second = host.tools();
    if first != second {
        return Err("two calls of tools() returned different lists".into());
    }
    let mut seen = std::collections::HashSet::new();
    for t in &first {
        if t.name.is_empty() || t.name.contains('/') || t.name.chars().any(char::is_whitespace) {
            return Err(format!("tool name {:?} is empty or contains '/' or whitespace", t.name));
        }
        if matches!(t.name.as_str(), "return" | "fail") {
            return Err(format!("tool name {:?} is reserved", t.name));
        }
        if !seen.insert(&t.name) {
            return Err(format!("tool {:?} is listed twice", t.name));
        }
    }
    Ok(())
}

fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|_| "the host panicked".to_string())
}

fn unknown_tool(host: &dyn Host) -> Result<(), String> {
    let cancel = Cancel::new();
    let cx = CallCx::new(Instant::now() + Duration::from_secs(5), &cancel, None);
    let call = ToolCall { name: "no_such_tool_for_contract_check".into(), args: Value::empty_map() };
    match guarded(|| host.call(&call, &cx))? {
        Err(e) if e.kind == ToolErrorKind::UnknownTool => Ok(()),
        Err(e) => Err(format!("expected UnknownTool, got {:?}: {}", e.kind, e.message)),
        Ok(v) => Err(format!("expected UnknownTool, got a value: {}", crate::printer::to_clojure(&v))),
    }
}

fn quick_call(host: &dyn Host, call: &ToolCall) -> Result<(), String> {
    let cancel = Cancel::new();
    let cx = CallCx::new(Instant::now() + Duration::from_secs(10), &cancel, None);
    guarded(|| host.call(call, &cx)).map(|_| ())
}

fn discovery(host: &dyn Host) -> Result<(), String> {
    let cancel = Cancel::new();
    let cx = CallCx::new(Instant::now() + Duration::from_secs(5), &cancel, None);
    guarded(|| host.discover(&Discovery::Doc { name: "no_such_ns/no_such_name" }, &cx))?;
    guarded(|| host.discover(&Discovery::Publics { namespace: "no_such_ns" }, &cx))?;
    guarded(|| host.discover(&Discovery::Namespaces, &cx)).map(|_| ())
}

fn through_engine(host: &dyn Host, call: &ToolCall) -> Result<(), String> {
    let program = format!("(tool/{} {})", call.name, crate::printer::to_clojure(&call.args));
    let out = guarded(|| {
        Engine::new(Limits { timeout: Duration::from_secs(10), ..Limits::default() }).eval(
            &program,
            RunInput::new(),
            host,
            &Cancel::new(),
        )
    })?;
    match out.tool_calls.as_slice() {
        [one] if one.name == call.name && matches!(one.args, Value::Map(_)) => Ok(()),
        other => Err(format!("expected one ledger entry for {}, got {}: {:?}", call.name, other.len(), out.result)),
    }
}

fn slow_deadline(host: &dyn Host, slow: &ToolCall, slack: Duration) -> Result<(), String> {
    let cancel = Cancel::new();
    let budget = Duration::from_millis(200);
    let started = Instant::now();
    let cx = CallCx::new(started + budget, &cancel, None);
    let _answer = guarded(|| host.call(slow, &cx))?;
    let took = started.elapsed();
    if took > budget + slack {
        return Err(format!("returned {took:?} after a call with a {budget:?} deadline"));
    }
    Ok(())
}

fn slow_cancel(host: &dyn Host, slow: &ToolCall, slack: Duration) -> Result<(), String> {
    let cancel = Cancel::new();
    let started = Instant::now();
    let after = Duration::from_millis(100);
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(after);
            cancel.cancel();
        });
        let cx = CallCx::new(started + Duration::from_secs(30), &cancel, None);
        guarded(|| host.call(slow, &cx))
    })?;
    let took = started.elapsed();
    if took > after + slack {
        return Err(format!("returned {took:?} after cancellation at {after:?}"));
    }
    match r {
        Err(e) if matches!(e.kind, ToolErrorKind::Cancelled | ToolErrorKind::Timeout) => Ok(()),
        Err(e) => Err(format!("expected Cancelled, got {:?}", e.kind)),
        Ok(_) => Err("a cancelled slow call returned a value".into()),
    }
}

fn slow_through_engine(host: &dyn Host, slow: &ToolCall, slack: Duration) -> Result<(), String> {
    let program = format!("(tool/{} {})", slow.name, crate::printer::to_clojure(&slow.args));
    let limit = Duration::from_millis(200);
    let started = Instant::now();
    let out = guarded(|| {
        Engine::new(Limits { timeout: limit, ..Limits::default() }).eval(
            &program,
            RunInput::new(),
            host,
            &Cancel::new(),
        )
    })?;
    let took = started.elapsed();
    if took > limit + slack {
        return Err(format!("the program ran {took:?} with a {limit:?} time limit"));
    }
    match out.error() {
        Some(e) if e.kind == crate::ErrorKind::Timeout => Ok(()),
        other => Err(format!("expected a timeout error, got {other:?}")),
    }
}
