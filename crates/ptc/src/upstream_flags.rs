//! The aggregator flags every subcommand that runs programs takes (`mcp`, `eval`, `repl`):
//! where `upstreams.json` is, and the per-call and per-program upstream limits.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;
use ptc_mcp_aggregator::upstream::{CatalogMode, SnapshotMode, UpstreamOptions, UpstreamRuntime, config};

/// Aggregator flags.
#[derive(Args, Debug, Clone, Default)]
pub struct UpstreamArgs {
    /// Upstream MCP servers and OpenAPI services (JSON). Without it, PTC_UPSTREAMS, then
    /// ~/.config/ptc/upstreams.json when that file exists.
    #[arg(long, env = "PTC_UPSTREAMS", value_name = "FILE")]
    pub upstreams: Option<PathBuf>,
    /// Per upstream call timeout; an upstream's own request_timeout_ms takes precedence.
    #[arg(long, env = "PTC_UPSTREAM_CALL_TIMEOUT_MS", value_name = "MS")]
    pub upstream_call_timeout_ms: Option<u64>,
    /// tool/call operations one program may make [default: 50].
    #[arg(long, env = "PTC_MAX_UPSTREAM_CALLS_PER_PROGRAM", value_name = "N")]
    pub max_upstream_calls_per_program: Option<u32>,
    /// Discovery operations (dir, doc, apropos, meta, tool/servers) per program [default: 25].
    #[arg(long, env = "PTC_MAX_CATALOG_OPS_PER_PROGRAM", value_name = "N")]
    pub max_catalog_ops_per_program: Option<u32>,
    /// How much of the upstream catalog the tool description shows: auto, inline or lazy.
    #[arg(long, env = "PTC_CATALOG_MODE", value_name = "MODE")]
    pub catalog_mode: Option<String>,
    /// frozen (start and list every upstream first; fail fast) or live (start on first use).
    #[arg(long, env = "PTC_CATALOG_SNAPSHOT_MODE", value_name = "MODE")]
    pub catalog_snapshot_mode: Option<String>,
}

impl UpstreamArgs {
    /// The config file to use, if any.
    pub fn path(&self) -> Option<PathBuf> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        // the env var is already folded into the flag by clap
        config::resolve_path(self.upstreams.as_deref(), None, home.as_deref())
    }

    /// Loads and starts the upstreams (none configured: `None`).
    pub fn start(&self, default_snapshot: SnapshotMode) -> Result<Option<UpstreamRuntime>> {
        self.start_until(default_snapshot, &tokio_util::sync::CancellationToken::new())
    }

    /// [`Self::start`], given up (and every child started so far stopped) once `stop` is
    /// cancelled.
    pub fn start_until(
        &self,
        default_snapshot: SnapshotMode,
        stop: &tokio_util::sync::CancellationToken,
    ) -> Result<Option<UpstreamRuntime>> {
        let Some(path) = self.path() else { return Ok(None) };
        let env = |k: &str| std::env::var(k).ok();
        let cfg = config::load(&path, &env)?;
        let mut o = UpstreamOptions { snapshot: default_snapshot, ..UpstreamOptions::default() };
        if let Some(ms) = self.upstream_call_timeout_ms {
            if ms == 0 {
                bail!("--upstream-call-timeout-ms must be at least 1");
            }
            o.call_timeout = Duration::from_millis(ms);
        }
        if let Some(n) = self.max_upstream_calls_per_program {
            o.max_calls_per_program = n;
        }
        if let Some(n) = self.max_catalog_ops_per_program {
            o.max_catalog_ops_per_program = n;
        }
        if let Some(m) = &self.catalog_mode {
            o.catalog_mode = m.parse::<CatalogMode>().map_err(anyhow::Error::msg)?;
        }
        if let Some(m) = &self.catalog_snapshot_mode {
            o.snapshot = match m.as_str() {
                "frozen" => SnapshotMode::Frozen,
                "live" => SnapshotMode::Live,
                other => bail!("unknown --catalog-snapshot-mode {other:?}; use frozen or live"),
            };
        }
        Ok(Some(UpstreamRuntime::start_until(&cfg, o, &env, stop)?))
    }
}
