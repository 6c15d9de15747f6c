//! `ptc mcp`: the MCP server over stdio (default) or Streamable HTTP (`--http ADDR`).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

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
    /// Largest JSON-RPC frame (stdio line or HTTP body), bytes.
    #[arg(long, env = "PTC_MCP_MAX_FRAME_BYTES", default_value_t = 8_388_608)]
    max_frame_bytes: usize,
    /// Largest JSON context, bytes.
    #[arg(long, env = "PTC_MCP_MAX_CONTEXT_BYTES", default_value_t = 4_194_304)]
    max_context_bytes: usize,
    /// Programs evaluated at once; more wait in the queue [default: min(8, CPUs)].
    #[arg(long, env = "PTC_MCP_MAX_CONCURRENT_CALLS")]
    max_concurrent_calls: Option<usize>,
    /// Calls that may wait for a free slot; one more gets `busy` at once.
    #[arg(long, env = "PTC_MCP_MAX_QUEUED_CALLS", default_value_t = 64)]
    max_queued_calls: usize,
    /// How long a queued call waits for a slot before it gets `busy` (0: no queue).
    #[arg(long, env = "PTC_MCP_QUEUE_TIMEOUT_MS", default_value_t = 10_000, value_name = "MS")]
    queue_timeout_ms: u64,
    /// HTTP: sessions in total; a new session evicts the least recently used.
    #[arg(long, env = "PTC_MCP_HTTP_MAX_SESSIONS", default_value_t = 256)]
    http_max_sessions: usize,
    /// HTTP: sessions per owner (the token, or the client address without one).
    #[arg(long, env = "PTC_MCP_HTTP_MAX_SESSIONS_PER_OWNER", default_value_t = 32)]
    http_max_sessions_per_owner: usize,
    /// HTTP: time allowed for a request's headers to arrive.
    #[arg(long, env = "PTC_MCP_HTTP_HEADER_TIMEOUT_MS", default_value_t = 10_000, value_name = "MS")]
    http_header_timeout_ms: u64,
    /// HTTP: time allowed for a request's body to arrive.
    #[arg(long, env = "PTC_MCP_HTTP_BODY_TIMEOUT_MS", default_value_t = 30_000, value_name = "MS")]
    http_body_timeout_ms: u64,
    /// slim (text only), structured (structuredContent + outputSchema) or debug.
    #[arg(long, env = "PTC_MCP_RESPONSE_PROFILE", default_value = "slim")]
    response_profile: String,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    upstreams: UpstreamArgs,
    #[command(flatten)]
    agentic: crate::agentic_flags::AgenticArgs,
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
            crate::limit_flags::with_upstreams(Limits::mcp())
        } else {
            Limits::mcp()
        };
        c.limits = self.limits.to_limits(base)?;
        c.response_profile = self.response_profile.parse::<ResponseProfile>().map_err(anyhow::Error::msg)?;
        c.http_auth_token = self.http_auth_token.clone();
        c.http_allowed_origins = self.http_allowed_origins.clone();
        c.max_queued_calls = self.max_queued_calls;
        c.queue_timeout = Duration::from_millis(self.queue_timeout_ms);
        anyhow::ensure!(self.http_max_sessions >= 1, "--http-max-sessions must be at least 1");
        anyhow::ensure!(self.http_max_sessions_per_owner >= 1, "--http-max-sessions-per-owner must be at least 1");
        anyhow::ensure!(self.http_header_timeout_ms >= 1, "--http-header-timeout-ms must be at least 1");
        anyhow::ensure!(self.http_body_timeout_ms >= 1, "--http-body-timeout-ms must be at least 1");
        // rmcp's own line limit behind our reader is 16 MiB
        anyhow::ensure!(
            (1024..=16 * 1024 * 1024).contains(&self.max_frame_bytes),
            "--max-frame-bytes must be between 1024 and 16777216"
        );
        c.http_max_sessions = self.http_max_sessions;
        c.http_max_sessions_per_owner = self.http_max_sessions_per_owner;
        c.http_header_timeout = Duration::from_millis(self.http_header_timeout_ms);
        c.http_body_timeout = Duration::from_millis(self.http_body_timeout_ms);
        Ok(c)
    }
}

/// Cancels `token` on SIGINT or SIGTERM (the first of either starts a drain). The
/// handlers are installed before this returns (call it inside the runtime), so a signal
/// that arrives while upstreams start is handled too instead of killing the process and
/// orphaning their children.
fn on_signals(token: tokio_util::sync::CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let term = signal(SignalKind::terminate());
        let int = signal(SignalKind::interrupt());
        tokio::spawn(async move {
            match (term, int) {
                (Ok(mut term), Ok(mut int)) => {
                    tokio::select! {
                        _ = int.recv() => tracing::info!("SIGINT received"),
                        _ = term.recv() => tracing::info!("SIGTERM received"),
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
            token.cancel();
        });
    }
    #[cfg(not(unix))]
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        token.cancel();
    });
}

/// Runs the server until stdin closes (stdio) or SIGINT/SIGTERM (both transports: new
/// calls get `shutting_down`, running ones finish, then exit 0).
pub fn run(args: McpArgs) -> Result<ExitCode> {
    let config = args.config()?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the async runtime")?;
    let shutdown = tokio_util::sync::CancellationToken::new();
    {
        let _inside = runtime.enter();
        on_signals(shutdown.clone());
    }
    // frozen snapshot: every upstream is started and listed before serving, or start
    // fails; a signal meanwhile stops the children started so far and ends here
    let started = args.upstreams.start_until(SnapshotMode::Frozen, &shutdown);
    if started.is_err() && shutdown.is_cancelled() {
        // a shutdown signal, not a failure: the same exit as a drained server
        tracing::info!("stopped while the upstreams were starting; their processes were stopped");
        return Ok(ExitCode::SUCCESS);
    }
    let started = started?;
    let task = args.agentic.task_tool(started.as_ref(), &config.limits)?;
    let backend: Arc<dyn ToolBackend> = match started {
        Some(rt) => {
            tracing::info!(upstreams = ?rt.names(), "aggregator mode");
            Arc::new(rt)
        }
        None => Arc::new(NoUpstreams),
    };
    let mut server = PtcServer::new(config.clone(), backend);
    if let Some(task) = task {
        tracing::info!(model = %args.agentic.agentic_model, "agentic mode: lisp_task offered");
        server = server.with_agentic(task);
    }
    {
        // each time the server goes idle after work, freed memory goes back to the system
        // (a large context leaves many small freed blocks in the allocator's arenas)
        let server = server.clone();
        runtime.spawn(async move {
            loop {
                server.went_idle().await;
                let _ = tokio::task::spawn_blocking(crate::heap::give_back_free_memory).await;
            }
        });
    }
    let result = runtime.block_on(async move {
        match args.http {
            None => {
                tracing::info!("serving MCP over stdio");
                ptc_mcp_aggregator::serve_stdio(server, shutdown).await?;
            }
            Some(addr) => {
                ptc_mcp_aggregator::serve_http(server, &config, addr, shutdown).await?;
            }
        }
        tracing::info!("stopped");
        anyhow::Ok(())
    });
    // the runtime's blocking threads may still hold a program past its grace: do not wait
    runtime.shutdown_timeout(Duration::from_millis(100));
    result?;
    Ok(ExitCode::SUCCESS)
}
