//! `ptc mcp`: the MCP server over stdio (default) or Streamable HTTP (`--http ADDR`).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use ptc_lisp_eval::Limits;
use ptc_mcp_aggregator::upstream::SnapshotMode;
use ptc_mcp_aggregator::{McpConfig, NoUpstreams, PtcServer, ResponseProfile, ToolBackend};

use crate::limit_flags::LimitArgs;
use crate::upstream_flags::UpstreamArgs;

/// Flags of `ptc mcp`; each also reads a `PTC_MCP_*` environment variable (the flag wins).
#[derive(Args, Debug)]
pub struct McpArgs {
    /// Serve Streamable HTTP on this address (e.g. 127.0.0.1:7332) instead of stdio.
    #[arg(long, env = "PTC_MCP_HTTP", value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Bearer token required on HTTP (at least 32 characters; mandatory off loopback).
    #[arg(long, env = "PTC_MCP_HTTP_AUTH_TOKEN", hide_env_values = true)]
    http_auth_token: Option<String>,
    /// Extra allowed browser origins for HTTP (scheme://host[:port]), comma-separated.
    #[arg(long, env = "PTC_MCP_HTTP_ALLOWED_ORIGINS", value_delimiter = ',')]
    http_allowed_origins: Vec<String>,
    /// Largest JSON-RPC frame or HTTP body, bytes.
    #[arg(long, env = "PTC_MCP_MAX_FRAME_BYTES", default_value_t = 8_388_608)]
    max_frame_bytes: usize,
    /// Largest JSON context, bytes.
    #[arg(long, env = "PTC_MCP_MAX_CONTEXT_BYTES", default_value_t = 4_194_304)]
    max_context_bytes: usize,
    /// Programs evaluated at once; more get `busy` immediately [default: min(8, CPUs)].
    #[arg(long, env = "PTC_MCP_MAX_CONCURRENT_CALLS")]
    max_concurrent_calls: Option<usize>,
    /// slim (text only), structured (structuredContent + outputSchema) or debug.
    #[arg(long, env = "PTC_MCP_RESPONSE_PROFILE", default_value = "slim")]
    response_profile: String,
    /// error, warn, info, debug or trace (logs go to stderr).
    #[arg(long, env = "PTC_MCP_LOG_LEVEL", default_value = "info")]
    log_level: String,
    /// text or json log lines.
    #[arg(long, env = "PTC_MCP_LOG_FORMAT", default_value = "text")]
    log_format: String,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    upstreams: UpstreamArgs,
}

impl McpArgs {
    fn config(&self) -> Result<McpConfig> {
        let mut c = McpConfig {
            max_frame_bytes: self.max_frame_bytes,
            max_context_bytes: self.max_context_bytes,
            ..McpConfig::default()
        };
        if let Some(n) = self.max_concurrent_calls {
            anyhow::ensure!(n >= 1, "--max-concurrent-calls must be at least 1");
            c.max_concurrent_calls = n;
        }
        // aggregator programs wait on upstreams: 10 s unless --timeout-ms says otherwise
        let base = if self.upstreams.path().is_some() {
            Limits { timeout: std::time::Duration::from_millis(10_000), ..Limits::mcp() }
        } else {
            Limits::mcp()
        };
        c.limits = self.limits.to_limits(base)?;
        c.response_profile = self.response_profile.parse::<ResponseProfile>().map_err(anyhow::Error::msg)?;
        c.http_auth_token = self.http_auth_token.clone();
        c.http_allowed_origins = self.http_allowed_origins.clone();
        Ok(c)
    }
}

fn init_logs(level: &str, format: &str) -> Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(format!("{level},rmcp=warn")).context("invalid --log-level")?;
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(false);
    let result = match format {
        "json" => builder.json().try_init(),
        "text" => builder.try_init(),
        other => anyhow::bail!("unknown --log-format {other:?}; use text or json"),
    };
    result.map_err(|e| anyhow::anyhow!("cannot start logging: {e}"))
}

/// Runs the server until stdin closes (stdio) or Ctrl-C (HTTP).
pub fn run(args: McpArgs) -> Result<ExitCode> {
    let config = args.config()?;
    init_logs(&args.log_level, &args.log_format)?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the async runtime")?;
    // frozen snapshot: every upstream is started and listed before serving, or start fails
    let backend: Arc<dyn ToolBackend> = match args.upstreams.start(SnapshotMode::Frozen)? {
        Some(rt) => {
            tracing::info!(upstreams = ?rt.names(), "aggregator mode");
            Arc::new(rt)
        }
        None => Arc::new(NoUpstreams),
    };
    let server = PtcServer::new(config.clone(), backend);
    runtime.block_on(async move {
        match args.http {
            None => {
                tracing::info!("serving MCP over stdio");
                ptc_mcp_aggregator::serve_stdio(server).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            }
            Some(addr) => {
                let shutdown = tokio_util::sync::CancellationToken::new();
                let on_signal = shutdown.clone();
                tokio::spawn(async move {
                    let _ = tokio::signal::ctrl_c().await;
                    on_signal.cancel();
                });
                ptc_mcp_aggregator::http::serve_http(server, &config, addr, shutdown).await?;
            }
        }
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
