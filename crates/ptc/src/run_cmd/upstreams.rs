//! `ptc run --upstreams FILE`: the agent's programs reach upstream MCP servers and OpenAPI
//! services through `tool/call`, `tool/servers` and the discovery forms, exactly as
//! `ptc mcp` programs do (one `upstreams.json`, resolved as `ptc mcp` resolves it:
//! `--upstreams`, then `PTC_UPSTREAMS`, then `~/.config/ptc/upstreams.json`).
//!
//! Upstreams start in frozen mode: every server is started and listed before the first
//! model request, so a wrong config, a dead server or a grant naming a missing tool is a
//! configuration error (exit 2) that costs no tokens. In `text` and `combined` modes the
//! tools can also be offered natively (`--upstream-expose`, named `server__tool`).

use std::sync::Arc;

use anyhow::{Result, bail};
use ptc_mcp_aggregator::agentic::NativeCalls;
use ptc_mcp_aggregator::upstream::{SnapshotMode, UpstreamRuntime};
use ptc_subagent::{Exposure, Mode, SubAgentBuilder};

/// The upstreams of the flags (none configured: `None`), started and listed.
pub(super) fn start(args: &super::RunArgs) -> Result<Option<UpstreamRuntime>> {
    args.upstreams.start(SnapshotMode::Frozen)
}

/// `--upstream-expose`, checked against the mode: `None` when the model is offered no
/// upstream tool natively.
pub(super) fn native_exposure(flag: Option<&str>, mode: Mode) -> Result<Option<Exposure>> {
    let expose = match flag {
        None if mode == Mode::Text => Exposure::Native,
        None | Some("ptc_lisp") => Exposure::Program,
        Some("native") => Exposure::Native,
        Some("both") => Exposure::Both,
        Some(other) => bail!("--upstream-expose {other:?}: use ptc_lisp, native or both"),
    };
    match (mode, expose) {
        (Mode::Text, Exposure::Program | Exposure::Both) => {
            bail!("--upstream-expose: text mode runs no programs; use native, or --mode combined")
        }
        (Mode::Lisp | Mode::LispTool, Exposure::Native | Exposure::Both) => {
            bail!("--upstream-expose: in {mode} mode the model only writes programs; use --mode text or combined")
        }
        (_, Exposure::Program) => Ok(None),
        (_, e) => Ok(Some(e)),
    }
}

/// Gives an agent the upstreams of `rt`: to its programs (modes that run programs) and,
/// with `native`, to its model as `server__tool` tools.
pub(super) fn attach(
    mut builder: SubAgentBuilder,
    rt: &UpstreamRuntime,
    mode: Mode,
    native: Option<Exposure>,
) -> SubAgentBuilder {
    if mode != Mode::Text {
        builder = builder.program_tools(Arc::new(rt.clone()));
    }
    if let Some(expose) = native {
        for tool in ptc_mcp_aggregator::agentic::native_tools_recorded(rt, expose, native_ledger()) {
            builder = builder.tool(tool);
        }
    }
    builder
}

/// The native calls of this process's mission (one `ptc run`, one mission).
fn native_ledger() -> &'static NativeCalls {
    static LEDGER: std::sync::OnceLock<NativeCalls> = std::sync::OnceLock::new();
    LEDGER.get_or_init(NativeCalls::new)
}

/// Adds the calls models made natively (`server__tool`) to the step's `upstream_calls`
/// (after the programs' calls), recounts its `ptc_metrics`, and tells the observer (the
/// trace gets a final `upstream_summary`). Nothing when no native call was made.
pub(super) fn merge_native(step: &mut ptc_subagent::Step, observer: &dyn ptc_subagent::Observer) {
    let native = native_ledger().snapshot();
    if native.is_empty() {
        return;
    }
    step.upstream_calls.extend(native);
    let answer_bytes = step.return_value.as_ref().map_or(0, |v| v.to_string().len() as u64);
    let prints_bytes: u64 = step.turns.iter().flat_map(|t| &t.prints).map(|p| p.len() as u64).sum();
    let metrics = ptc_mcp_aggregator::upstream::ptc_metrics(&step.upstream_calls, answer_bytes, prints_bytes);
    step.ptc_metrics = Some(metrics.clone());
    observer.event(&ptc_subagent::Event::UpstreamSummary {
        upstream_calls: step.upstream_calls.clone(),
        ptc_metrics: metrics,
    });
}

/// One line for `--output text`: calls, bytes the programs read, bytes of the answer.
pub(super) fn summary(metrics: &serde_json::Value) -> String {
    let n = |k: &str| metrics.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
    format!(
        "{} call(s), {} ok, {} failed; {} bytes read from upstreams, {} bytes in the answer",
        n("upstream_call_count"),
        n("upstream_ok_count"),
        n("upstream_error_count"),
        n("upstream_result_bytes"),
        n("final_result_bytes")
    )
}
