//! `ptc mcp`: the MCP server over stdio (default) or Streamable HTTP (`--http ADDR`).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use ptc_lisp_eval::Limits;
use ptc_mcp_aggregator::upstream::SnapshotMode;
use ptc_mcp_aggregator::{
    DiagnosticsConfig, McpConfig, NoUpstreams, PayloadPolicy, PtcServer, ResponseProfile, SessionConfig, ToolBackend,
};

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
    /// stdio: answer a plain `tools/call` of `lisp_eval` that finds a free slot without
    /// rmcp (the same answer, fewer thread handoffs); false sends every call through rmcp.
    #[arg(long, env = "PTC_MCP_STDIO_FAST_PATH", default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    stdio_fast_path: bool,
    /// HTTP: answer a plain `POST /mcp` `tools/call` of `lisp_eval` on an initialised
    /// session that finds a free slot without rmcp (the same answer, fewer handoffs); false
    /// sends every request through rmcp.
    #[arg(long, env = "PTC_MCP_HTTP_FAST_PATH", default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    http_fast_path: bool,
    /// HTTP: threads that serve connections; on them the fast path answers a tiny program
    /// without a handoff to the evaluation pool. 0 serves connections on the runtime's
    /// workers, every call going to the pool. Default: the number of CPUs, at most 8.
    #[arg(long, env = "PTC_MCP_HTTP_CONN_THREADS", value_name = "N")]
    http_conn_threads: Option<usize>,
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
    /// Start every upstream, print each one's tools or its problem, and exit (0: all usable).
    #[arg(long)]
    check: bool,
    /// slim (text only), structured (structuredContent + outputSchema) or debug.
    #[arg(long, env = "PTC_MCP_RESPONSE_PROFILE", default_value = "slim")]
    response_profile: String,
    /// Items of each collection the result preview shows (slim and structured profiles; debug
    /// shows the whole result up to --max-result-bytes).
    #[arg(long, env = "PTC_MCP_MAX_RESULT_ITEMS", default_value_t = 50, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    max_result_items: u32,
    /// Characters of the result preview line (slim and structured profiles).
    #[arg(long, env = "PTC_MCP_MAX_RESULT_CHARS", default_value_t = 250, value_name = "N",
          value_parser = clap::value_parser!(u32).range(40..=10_000_000))]
    max_result_chars: u32,
    /// HTTP: more accepted bearer tokens, comma-separated (32+ characters each; needs
    /// --http-auth-token). Each token's holders are one owner of stateful sessions.
    #[arg(long, env = "PTC_MCP_HTTP_EXTRA_AUTH_TOKENS", value_delimiter = ',', hide_env_values = true)]
    http_extra_auth_tokens: Vec<String>,
    /// A prelude file (`(ns name "doc")` then defn forms) loaded at start into every
    /// lisp_eval and session evaluation as `name/fn`; repeatable (comma-separated in the
    /// variable). Default: none.
    #[arg(long = "prelude", env = "PTC_MCP_PRELUDE", value_delimiter = ',', value_name = "FILE")]
    preludes: Vec<std::path::PathBuf>,
    // boxed: the session flags would make `ptc mcp`'s arguments the largest command
    #[command(flatten)]
    sessions: Box<SessionArgs>,
    #[command(flatten)]
    diagnostics: Box<DiagnosticArgs>,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    upstreams: UpstreamArgs,
    #[command(flatten)]
    agentic: Box<crate::agentic_flags::AgenticArgs>,
}

/// Operator diagnostics: `lisp_debug` and per-call traces.
#[derive(Args, Debug)]
struct DiagnosticArgs {
    /// Serve the lisp_debug tool (stats, recent, get over a ring of recent calls).
    #[arg(long, env = "PTC_MCP_DEBUG_TOOL")]
    debug_tool: bool,
    /// Call records lisp_debug keeps (10 to 5000).
    #[arg(long, env = "PTC_MCP_DEBUG_RING_SIZE", default_value_t = 500)]
    debug_ring_size: usize,
    /// Largest lisp_debug answer, bytes (at least 4096).
    #[arg(long, env = "PTC_MCP_MAX_DEBUG_RESPONSE_BYTES", default_value_t = 65_536)]
    max_debug_response_bytes: usize,
    /// Write one JSONL trace file per call into this directory (created if missing).
    #[arg(long, env = "PTC_MCP_TRACE_DIR", value_name = "DIR")]
    trace_dir: Option<std::path::PathBuf>,
    /// What records and traces keep of programs and results: none, summary or full.
    #[arg(long, env = "PTC_MCP_TRACE_PAYLOADS", default_value = "summary")]
    trace_payloads: String,
    /// Trace files kept in --trace-dir; the oldest are deleted first.
    #[arg(long, env = "PTC_MCP_TRACE_MAX_FILES", default_value_t = 1000)]
    trace_max_files: usize,
}

impl DiagnosticArgs {
    fn config(&self) -> Result<DiagnosticsConfig> {
        anyhow::ensure!((10..=5000).contains(&self.debug_ring_size), "--debug-ring-size must be between 10 and 5000");
        anyhow::ensure!(self.max_debug_response_bytes >= 4096, "--max-debug-response-bytes must be at least 4096");
        anyhow::ensure!(self.trace_max_files >= 1, "--trace-max-files must be at least 1");
        if let Some(dir) = &self.trace_dir {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("--trace-dir {}: cannot create the directory", dir.display()))?;
        }
        let mut c = DiagnosticsConfig::default();
        c.debug_tool = self.debug_tool;
        c.ring_size = self.debug_ring_size;
        c.max_response_bytes = self.max_debug_response_bytes;
        c.trace_dir = self.trace_dir.clone();
        c.trace_payloads = self.trace_payloads.parse::<PayloadPolicy>().map_err(anyhow::Error::msg)?;
        c.trace_max_files = self.trace_max_files;
        Ok(c)
    }
}

/// Stateful sessions: `--sessions` and the session limits.
#[derive(Args, Debug)]
struct SessionArgs {
    /// Serve the stateful session tools (lisp_session_*) instead of lisp_eval.
    #[arg(long, env = "PTC_MCP_SESSIONS")]
    sessions: bool,
    /// Live sessions in total; a start beyond it gets session_limit_exceeded.
    #[arg(long, env = "PTC_MCP_MAX_SESSIONS", default_value_t = 64)]
    max_sessions: usize,
    /// Live sessions per owner (the stdio client, or one HTTP token's holders).
    #[arg(long, env = "PTC_MCP_MAX_SESSIONS_PER_OWNER", default_value_t = 16)]
    max_sessions_per_owner: usize,
    /// A session's lifetime; also the largest ttl_ms a start may ask for.
    #[arg(long, env = "PTC_MCP_SESSION_TTL_MS", default_value_t = 1_800_000, value_name = "MS")]
    session_ttl_ms: u64,
    /// A session not used for this long ends.
    #[arg(long, env = "PTC_MCP_SESSION_IDLE_TIMEOUT_MS", default_value_t = 900_000, value_name = "MS")]
    session_idle_timeout_ms: u64,
    /// Bytes of all of a session's bindings (encoded).
    #[arg(long, env = "PTC_MCP_MAX_SESSION_MEMORY_BYTES", default_value_t = 1_048_576)]
    max_session_memory_bytes: usize,
    /// Bytes of one binding (encoded).
    #[arg(long, env = "PTC_MCP_MAX_SESSION_BINDING_BYTES", default_value_t = 262_144)]
    max_session_binding_bytes: usize,
    /// Bindings per session.
    #[arg(long, env = "PTC_MCP_MAX_SESSION_BINDINGS", default_value_t = 200)]
    max_session_bindings: usize,
    /// Bytes of one *1/*2/*3 entry; a larger result is not kept as history.
    #[arg(long, env = "PTC_MCP_MAX_SESSION_HISTORY_ENTRY_BYTES", default_value_t = 65_536)]
    max_session_history_entry_bytes: usize,
    /// println lines a session keeps (the oldest go first).
    #[arg(long, env = "PTC_MCP_MAX_SESSION_PRINT_ENTRIES", default_value_t = 50)]
    max_session_print_entries: usize,
    /// Bytes of the println lines a session keeps.
    #[arg(long, env = "PTC_MCP_MAX_SESSION_PRINT_BYTES", default_value_t = 65_536)]
    max_session_print_bytes: usize,
    /// Tool-call records a session keeps.
    #[arg(long, env = "PTC_MCP_MAX_SESSION_TOOL_CALL_ENTRIES", default_value_t = 50)]
    max_session_tool_call_entries: usize,
    /// Bytes of the tool-call records a session keeps.
    #[arg(long, env = "PTC_MCP_MAX_SESSION_TOOL_CALL_BYTES", default_value_t = 131_072)]
    max_session_tool_call_bytes: usize,
    /// Upstream-call records a session keeps.
    #[arg(long, env = "PTC_MCP_MAX_SESSION_UPSTREAM_CALL_ENTRIES", default_value_t = 50)]
    max_session_upstream_call_entries: usize,
    /// Bytes of the upstream-call records a session keeps.
    #[arg(long, env = "PTC_MCP_MAX_SESSION_UPSTREAM_CALL_BYTES", default_value_t = 131_072)]
    max_session_upstream_call_bytes: usize,
    /// Characters of a session eval's result preview.
    #[arg(long, env = "PTC_MCP_MAX_SESSION_PREVIEW_CHARS", default_value_t = 512)]
    max_session_preview_chars: usize,
    /// Where sessions live: `memory` (this process, the default) or
    /// redis://HOST:PORT/DB, shared by every instance pointed at it.
    #[arg(long, env = "PTC_MCP_SESSION_STORE", default_value = "memory", value_name = "memory|redis://HOST:PORT/DB")]
    session_store: String,
    /// How long a session eval's lease lasts unrenewed (renewed every third of it while
    /// the program runs): how long an instance that dies mid-eval blocks its session.
    #[arg(long, env = "PTC_MCP_SESSION_LEASE_MS", default_value_t = 10_000, value_name = "MS",
          value_parser = clap::value_parser!(u64).range(300..=600_000))]
    session_lease_ms: u64,
}

impl SessionArgs {
    /// The shared session store, when one is named (`None`: in process).
    fn store(&self) -> Result<Option<Arc<dyn ptc_mcp_aggregator::session::SessionStore>>> {
        if self.session_store == "memory" {
            return Ok(None);
        }
        let store = ptc_mcp_aggregator::session::RedisStore::open(&self.session_store).map_err(anyhow::Error::msg)?;
        anyhow::ensure!(self.sessions, "--session-store {} needs --sessions", store.describe());
        match store.ping() {
            Ok(()) => tracing::info!(store = %store.describe(), "sessions are kept in Redis"),
            // the server still starts: the session tools say session_store_unavailable
            // until Redis answers
            Err(e) => tracing::warn!(store = %store.describe(), error = %e, "the session store does not answer yet"),
        }
        Ok(Some(Arc::new(store)))
    }

    fn config(&self) -> Result<SessionConfig> {
        for (flag, v) in [
            ("--max-sessions", self.max_sessions as u64),
            ("--max-sessions-per-owner", self.max_sessions_per_owner as u64),
            ("--session-ttl-ms", self.session_ttl_ms),
            ("--session-idle-timeout-ms", self.session_idle_timeout_ms),
            ("--max-session-memory-bytes", self.max_session_memory_bytes as u64),
            ("--max-session-binding-bytes", self.max_session_binding_bytes as u64),
            ("--max-session-bindings", self.max_session_bindings as u64),
            ("--max-session-history-entry-bytes", self.max_session_history_entry_bytes as u64),
            ("--max-session-print-entries", self.max_session_print_entries as u64),
            ("--max-session-print-bytes", self.max_session_print_bytes as u64),
            ("--max-session-tool-call-entries", self.max_session_tool_call_entries as u64),
            ("--max-session-tool-call-bytes", self.max_session_tool_call_bytes as u64),
            ("--max-session-upstream-call-entries", self.max_session_upstream_call_entries as u64),
            ("--max-session-upstream-call-bytes", self.max_session_upstream_call_bytes as u64),
            ("--max-session-preview-chars", self.max_session_preview_chars as u64),
        ] {
            anyhow::ensure!(v >= 1, "{flag} must be at least 1");
        }
        let mut c = SessionConfig::default();
        c.enabled = self.sessions;
        c.max_sessions = self.max_sessions;
        c.max_sessions_per_owner = self.max_sessions_per_owner;
        c.ttl = Duration::from_millis(self.session_ttl_ms);
        c.idle_timeout = Duration::from_millis(self.session_idle_timeout_ms);
        c.max_memory_bytes = self.max_session_memory_bytes;
        c.max_binding_bytes = self.max_session_binding_bytes;
        c.max_bindings = self.max_session_bindings;
        c.max_history_entry_bytes = self.max_session_history_entry_bytes;
        c.max_print_entries = self.max_session_print_entries;
        c.max_print_bytes = self.max_session_print_bytes;
        c.max_tool_call_entries = self.max_session_tool_call_entries;
        c.max_tool_call_bytes = self.max_session_tool_call_bytes;
        c.max_upstream_call_entries = self.max_session_upstream_call_entries;
        c.max_upstream_call_bytes = self.max_session_upstream_call_bytes;
        c.max_preview_chars = self.max_session_preview_chars;
        c.lease = Duration::from_millis(self.session_lease_ms);
        Ok(c)
    }
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
        c.preview = ptc_mcp_aggregator::Preview {
            max_items: self.max_result_items as usize,
            max_chars: self.max_result_chars as usize,
        };
        c.http_auth_token = self.http_auth_token.clone();
        c.http_allowed_origins = self.http_allowed_origins.clone();
        c.http_extra_auth_tokens = self.http_extra_auth_tokens.clone();
        c.sessions = self.sessions.config()?;
        c.diagnostics = self.diagnostics.config()?;
        c.max_queued_calls = self.max_queued_calls;
        c.queue_timeout = Duration::from_millis(self.queue_timeout_ms);
        c.stdio_fast_path = self.stdio_fast_path;
        c.http_fast_path = self.http_fast_path;
        if let Some(n) = self.http_conn_threads {
            anyhow::ensure!(n <= 256, "--http-conn-threads must be at most 256 (got {n})");
            c.http_conn_threads = n;
        }
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

/// A prelude's namespace may not be an upstream server's name: `(dir crm)` and a program's
/// `crm/...` names would find only one of the two.
fn no_prelude_named_like_an_upstream(preludes: &ptc_mcp_aggregator::Preludes, upstreams: &[String]) -> Result<()> {
    match preludes.iter().find(|p| upstreams.contains(&p.id)) {
        Some(p) => anyhow::bail!(
            "--prelude {}: namespace {} is also the name of an upstream server in --upstreams; rename the prelude's (ns ...) or the server",
            p.path,
            p.id
        ),
        None => Ok(()),
    }
}

/// `ptc mcp --check`: starts every upstream, prints each one's tools or its problem, and
/// exits (0 when every upstream is usable, 1 when one is not, 2 for a bad config).
fn check(args: &McpArgs) -> Result<ExitCode> {
    let check_preludes = |tools: Vec<ptc_lisp_eval::ToolSpec>, upstreams: &[String]| -> Result<()> {
        let preludes = ptc_mcp_aggregator::Preludes::load(&args.preludes, &args.config()?.limits, tools)?;
        no_prelude_named_like_an_upstream(&preludes, upstreams)?;
        for p in preludes.iter() {
            out_line!("ok      prelude {} ({}): {} definition(s), {}", p.id, p.path, p.exports.len(), p.checksum);
        }
        Ok(())
    };
    if args.upstreams.path().is_none() {
        check_preludes(Vec::new(), &[])?;
        out_line!("no upstreams configured (--upstreams FILE or PTC_UPSTREAMS): ptc mcp serves lisp_eval alone");
        return Ok(ExitCode::SUCCESS);
    }
    // live: an upstream that fails is reported, not a reason to stop checking the others
    let Some(rt) = args.upstreams.start(SnapshotMode::Live)? else { return Ok(ExitCode::SUCCESS) };
    check_preludes(rt.host().tools(), &rt.names())?;
    let mut all_ok = true;
    for c in rt.check() {
        match &c.tools {
            Ok(tools) => out_line!(
                "ok      {} ({}, {} ms): {} tool(s): {}",
                c.name,
                c.transport,
                c.ms,
                tools.len(),
                tools.join(", ")
            ),
            Err(problem) => {
                all_ok = false;
                out_line!("FAILED  {} ({}, {} ms): {problem}", c.name, c.transport, c.ms);
            }
        }
    }
    Ok(if all_ok { ExitCode::SUCCESS } else { crate::exit::Exit::UpstreamUnusable.into() })
}

/// Runs the server until stdin closes (stdio) or SIGINT/SIGTERM (both transports: new
/// calls get `shutting_down`, running ones finish, then exit 0).
pub fn run(args: McpArgs) -> Result<ExitCode> {
    let config = args.config()?;
    if args.check {
        return check(&args);
    }
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
    let upstream_names = started.as_ref().map(|rt| rt.names()).unwrap_or_default();
    let backend: Arc<dyn ToolBackend> = match started {
        Some(rt) => {
            tracing::info!(upstreams = ?rt.names(), "aggregator mode");
            Arc::new(rt)
        }
        None => Arc::new(NoUpstreams),
    };
    // checked before serving: a prelude that does not load stops the start, naming its file
    let preludes = ptc_mcp_aggregator::Preludes::load(&args.preludes, &config.limits, backend.host().tools())?;
    no_prelude_named_like_an_upstream(&preludes, &upstream_names)?;
    for p in preludes.iter() {
        tracing::info!(prelude = %p.id, file = %p.path, checksum = %p.checksum, "prelude loaded");
    }
    let mut server = PtcServer::new(config.clone(), backend).with_preludes(preludes);
    if let Some(task) = task {
        tracing::info!(model = %args.agentic.agentic_model, "agentic mode: lisp_task offered");
        server = server.with_agentic(task);
    }
    if let Some(store) = args.sessions.store()? {
        server = server.with_session_store(store);
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
