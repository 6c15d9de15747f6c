//! Aggregator mode (seed 002): upstream MCP servers and OpenAPI services behind
//! `(tool/call {:server "s" :tool "t" :args {...}})`.
//!
//! [`UpstreamRuntime::start`] reads nothing itself: it takes a checked
//! [`config::UpstreamsConfig`], resolves credentials once, and (in
//! [`SnapshotMode::Frozen`]) starts and lists every upstream, failing if any cannot. It
//! owns a small tokio runtime for the clients; programs reach it through
//! [`UpstreamRuntime::program_host`], a [`Host`](ptc_lisp_eval::Host) with per-program call
//! and discovery budgets. It also implements the server's [`ToolBackend`].
//!
//! Layout: `config.rs` (the file format and its errors), `secrets.rs` (credentials and
//! the redactor), `mcp_client.rs` (rmcp clients), `openapi.rs` (GET operations as
//! tools), `host.rs` (the program-facing `Host`), `catalog.rs` (description and
//! discovery text), `metrics.rs` (`upstream_calls`, `ptc_metrics`). `host.rs` uses
//! `catalog.rs`, never the other way: both load catalogs through `Inner::load_tools` here.

pub(crate) mod catalog;
pub mod config;
mod fault;
mod host;
mod mcp_client;
pub(crate) mod metrics;
mod openapi;
mod secrets;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::{Map, Value as Json};
use tokio::sync::Semaphore;

use self::config::{Transport, UpstreamsConfig};
use self::fault::Fault;
use self::mcp_client::McpConn;
use self::secrets::Resolved;
use crate::server::ToolBackend;

pub use self::config::ConfigError;
pub use self::host::ProgramHost;
pub use self::metrics::{TOKEN_ESTIMATE_METHOD, ptc_metrics, upstream_calls};
pub use self::secrets::Redactor;

impl ptc_subagent::ProgramTools for UpstreamRuntime {
    fn host(&self) -> Arc<dyn ptc_lisp_eval::Host> {
        Arc::new(self.program_host())
    }

    fn prompt(&self) -> Option<String> {
        Some(self.catalog_text())
    }

    fn calls(&self, outcome: &ptc_lisp_eval::Outcome) -> Vec<Json> {
        upstream_calls(outcome)
    }

    fn metrics(&self, calls: &[Json], answer_bytes: u64, prints_bytes: u64) -> Json {
        ptc_metrics(calls, answer_bytes, prints_bytes)
    }
}

/// When upstreams are started and listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SnapshotMode {
    /// At start; any failure aborts start; the catalog never changes (`ptc mcp`).
    #[default]
    Frozen,
    /// On first use (discovery or call); a dead child is restarted (`ptc repl`, `ptc eval`).
    Live,
}

/// How much of the catalog the `lisp_eval` description carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CatalogMode {
    /// Inline when small (≤ `inline_max_tools` tools and ≤ `inline_max_chars`), else lazy.
    #[default]
    Auto,
    /// Every tool with a one-line description.
    Inline,
    /// Server names and discovery guidance only.
    Lazy,
}

impl std::str::FromStr for CatalogMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(CatalogMode::Auto),
            "inline" => Ok(CatalogMode::Inline),
            "lazy" => Ok(CatalogMode::Lazy),
            other => Err(format!("unknown catalog mode {other:?}; use auto, inline or lazy")),
        }
    }
}

/// Aggregator limits and modes (defaults from seed 002).
#[derive(Debug, Clone)]
pub struct UpstreamOptions {
    /// Per-call timeout unless an upstream sets `request_timeout_ms` (5 s).
    pub call_timeout: Duration,
    /// `tool/call`s per program (50).
    pub max_calls_per_program: u32,
    /// Discovery operations per program (25), counted apart from calls.
    pub max_catalog_ops_per_program: u32,
    /// Largest discovery answer as JSON (256 KiB).
    pub max_catalog_result_bytes: usize,
    /// Calls in flight to one upstream (a `pmap` batch runs this many at once).
    pub max_concurrent_calls_per_upstream: usize,
    /// Frozen or live.
    pub snapshot: SnapshotMode,
    /// Catalog rendering in the tool description.
    pub catalog_mode: CatalogMode,
    /// Auto mode: most tools shown inline (8).
    pub catalog_inline_max_tools: usize,
    /// Auto mode: most characters of inline catalog (800).
    pub catalog_inline_max_chars: usize,
}

impl Default for UpstreamOptions {
    fn default() -> Self {
        UpstreamOptions {
            call_timeout: Duration::from_millis(5_000),
            max_calls_per_program: 50,
            max_catalog_ops_per_program: 25,
            max_catalog_result_bytes: 256 * 1024,
            max_concurrent_calls_per_upstream: 8,
            snapshot: SnapshotMode::Frozen,
            catalog_mode: CatalogMode::Auto,
            catalog_inline_max_tools: 8,
            catalog_inline_max_chars: 800,
        }
    }
}

/// One tool of an upstream's catalog (scrubbed).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolInfo {
    /// The upstream's tool name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: Json,
    /// JSON Schema of its structured result (or null).
    pub output_schema: Json,
    /// MCP annotations (or null).
    pub annotations: Json,
    /// OpenAPI: the original operationId.
    pub operation_id: Option<String>,
}

/// Why start failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The config (or a credential) is wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An upstream could not be started or listed (frozen mode).
    #[error("upstream '{upstream}' could not start ({reason}): {message}")]
    Upstream {
        /// Its name.
        upstream: String,
        /// The fault's reason.
        reason: String,
        /// Detail (scrubbed).
        message: String,
    },
    /// The async runtime could not be built.
    #[error("cannot start the upstream runtime: {0}")]
    Runtime(String),
    /// This process is itself a stdio upstream of a `ptc` (its environment carries
    /// [`NESTING_ENV`]); starting upstreams here could nest servers without end.
    #[error(
        "ptc was started as an upstream of another ptc ({var}={depth}) and refuses to start upstreams of its own: \
         an upstream that runs ptc (a copy of the binary, a wrapper script, `sh -c 'exec ptc mcp'`) would nest \
         servers without end; remove that upstream from the parent's config"
    )]
    Nested {
        /// The variable that says so.
        var: &'static str,
        /// Its value: how many `ptc` aggregators are above this process.
        depth: String,
    },
    /// Start was interrupted (a shutdown signal) before every upstream was ready; the
    /// children started so far were stopped.
    #[error("interrupted while starting the upstreams; the upstream processes started so far were stopped")]
    Interrupted,
}

pub use self::mcp_client::NESTING_ENV;

/// One upstream as [`UpstreamRuntime::check`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpstreamCheck {
    /// Its name in the config.
    pub name: String,
    /// `mcp_stdio`, `mcp_http` or `openapi`.
    pub transport: &'static str,
    /// How long starting and listing it took.
    pub ms: u64,
    /// Its tools' names, or the problem (reason and message, secrets scrubbed).
    pub tools: Result<Vec<String>, String>,
}

pub(crate) enum Kind {
    Stdio(config::StdioConfig),
    Http(config::HttpConfig),
    OpenApi(openapi::Service),
}

/// The upstream's own `request_timeout_ms`, if it sets one.
fn kind_request_timeout(kind: &Kind) -> Option<Duration> {
    match kind {
        Kind::Stdio(c) => c.request_timeout,
        Kind::Http(c) => c.common.request_timeout,
        Kind::OpenApi(s) => s.request_timeout(),
    }
}

/// One configured upstream and its connection.
pub(crate) struct Upstream {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) kind: Kind,
    conn: tokio::sync::Mutex<Option<Arc<McpConn>>>,
    catalog: RwLock<Option<Arc<Vec<ToolInfo>>>>,
    permits: Arc<Semaphore>,
    secrets: Arc<Resolved>,
    redactor: Redactor,
    /// Bound on `tools/list`: the upstream's `handshake_timeout_ms` (which covers
    /// `initialize` and `tools/list`).
    list_timeout: Duration,
}

/// What a successful upstream call brought back.
pub(crate) struct Called {
    /// The payload: `structuredContent`, parsed JSON text, text or nothing.
    pub value: Json,
    /// `json`, `text` or `none`.
    pub kind: &'static str,
    /// Size of the answer as received (JSON), bytes.
    pub bytes: usize,
    /// HTTP status (OpenAPI).
    pub http_status: Option<u16>,
}

impl Upstream {
    pub(crate) fn transport_name(&self) -> &'static str {
        match self.kind {
            Kind::Stdio(_) => "mcp_stdio",
            Kind::Http(_) => "mcp_http",
            Kind::OpenApi(_) => "openapi",
        }
    }

    fn request_timeout(&self) -> Option<Duration> {
        kind_request_timeout(&self.kind)
    }

    fn max_response_bytes(&self) -> usize {
        match &self.kind {
            Kind::Stdio(c) => c.max_response_bytes,
            Kind::Http(c) => c.common.max_response_bytes,
            Kind::OpenApi(s) => s.max_response_bytes(),
        }
    }

    /// The first auth emitter, for the ledger (`{scheme, binding}`; never the value).
    pub(crate) fn auth_summary(&self) -> Option<Json> {
        let auth = match &self.kind {
            Kind::Http(c) => &c.common.auth,
            Kind::OpenApi(s) => s.auth(),
            Kind::Stdio(_) => return None,
        };
        auth.first().map(|a| serde_json::json!({"scheme": a.scheme.name(), "binding": a.binding}))
    }

    /// The loaded catalog, if any.
    pub(crate) fn cached_tools(&self) -> Option<Arc<Vec<ToolInfo>>> {
        self.catalog.read().ok().and_then(|c| c.clone())
    }

    /// A live connection (started on demand; a dead one is replaced).
    async fn connection(&self) -> Result<Arc<McpConn>, Fault> {
        let mut slot = self.conn.lock().await;
        if let Some(c) = slot.as_ref()
            && !c.is_dead()
        {
            return Ok(c.clone());
        }
        *slot = None;
        let started = std::time::Instant::now();
        tracing::info!(upstream = %self.name, transport = self.transport_name(), "starting upstream");
        let conn = match &self.kind {
            Kind::Stdio(c) => mcp_client::connect_stdio(&self.name, c, &self.redactor).await,
            Kind::Http(c) => mcp_client::connect_http(c, &self.secrets).await,
            Kind::OpenApi(_) => return Err(Fault::unavailable("not an MCP upstream")),
        };
        let conn = match conn {
            Ok(conn) => {
                tracing::info!(upstream = %self.name, ms = started.elapsed().as_millis() as u64, "upstream connected");
                conn
            }
            Err(f) => {
                tracing::warn!(upstream = %self.name, reason = f.reason, "upstream did not start: {}", f.message);
                return Err(f);
            }
        };
        let conn = Arc::new(conn);
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// Drops a connection that failed at the transport level (restarted on next use).
    async fn forget(&self, conn: &Arc<McpConn>) {
        let mut slot = self.conn.lock().await;
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            *slot = None;
        }
    }

    /// The catalog, listing the upstream when it is not loaded yet.
    pub(crate) async fn tools(&self) -> Result<Arc<Vec<ToolInfo>>, Fault> {
        if let Some(t) = self.cached_tools() {
            return Ok(t);
        }
        let tools = match &self.kind {
            Kind::OpenApi(s) => s.tools(),
            _ => {
                let conn = self.connection().await?;
                let listed = tokio::time::timeout(self.list_timeout, conn.list_tools(&self.redactor)).await;
                match listed {
                    Ok(Ok(t)) => t,
                    Ok(Err(f)) => {
                        if f.reason == "upstream_unavailable" {
                            self.forget(&conn).await;
                        }
                        return Err(f);
                    }
                    Err(_) => {
                        // a server that does not list its tools is of no use: drop it (this
                        // stops a stdio child) and start afresh on the next use
                        self.forget(&conn).await;
                        return Err(Fault::new(
                            "timeout",
                            format!(
                                "upstream '{}' answered `initialize` but not `tools/list` within {} ms \
                                 (handshake_timeout_ms); its process was stopped",
                                self.name,
                                self.list_timeout.as_millis()
                            ),
                        ));
                    }
                }
            }
        };
        let tools = Arc::new(tools);
        if let Ok(mut c) = self.catalog.write() {
            *c = Some(tools.clone());
        }
        Ok(tools)
    }

    /// One call, bounded by `timeout`, with the response cap applied.
    pub(crate) async fn call(&self, tool: &str, args: Map<String, Json>, timeout: Duration) -> Result<Called, Fault> {
        let Ok(_permit) = self.permits.clone().acquire_owned().await else {
            return Err(Fault::unavailable("the upstream is shutting down"));
        };
        let cap = self.max_response_bytes();
        let timed_out = || {
            Fault::new(
                "timeout",
                format!(
                    "upstream '{}' tool '{tool}' did not answer within {} ms (upstream call timeout)",
                    self.name,
                    timeout.as_millis()
                ),
            )
        };
        if let Kind::OpenApi(s) = &self.kind {
            return tokio::time::timeout(timeout, s.call(tool, args, cap)).await.unwrap_or_else(|_| Err(timed_out()));
        }
        // starting a child (live mode) is bounded by its handshake timeout, not by the
        // call's: a cold `npx` start is not a slow tool
        let conn = self.connection().await?;
        let result = match tokio::time::timeout(timeout, conn.call(tool, args)).await {
            Ok(Ok(r)) => r,
            Ok(Err(f)) => {
                if f.reason == "upstream_unavailable" {
                    self.forget(&conn).await;
                }
                return Err(f);
            }
            Err(_) => return Err(timed_out()),
        };
        host::tag_mcp_result(result, cap)
    }
}

pub(crate) struct Inner {
    /// Shared by every scoped view of the same upstreams.
    runtime: Arc<OwnedRuntime>,
    handle: tokio::runtime::Handle,
    pub(crate) upstreams: BTreeMap<String, Arc<Upstream>>,
    pub(crate) redactor: Redactor,
    pub(crate) options: UpstreamOptions,
    /// A scoped view ([`UpstreamRuntime::scoped`]): per server, the tools it may use
    /// (`None`: all of them). Servers outside the scope are not in `upstreams`.
    pub(crate) scope: Option<BTreeMap<String, Option<std::collections::BTreeSet<String>>>>,
}

/// The clients' runtime, shut down when the last view of the upstreams goes.
struct OwnedRuntime(Mutex<Option<tokio::runtime::Runtime>>);

impl Inner {
    /// Whether `tool` of `server` is in scope (true for every tool without a scope).
    pub(crate) fn allows(&self, server: &str, tool: &str) -> bool {
        match self.scope.as_ref().and_then(|s| s.get(server)) {
            Some(Some(tools)) => tools.contains(tool),
            _ => true,
        }
    }

    /// The loaded catalog of `u` as far as the scope shows it.
    pub(crate) fn visible(&self, u: &Upstream) -> Option<Arc<Vec<ToolInfo>>> {
        let tools = u.cached_tools()?;
        Some(self.in_scope(u, tools))
    }

    /// `tools` of `u` cut to the scope.
    pub(crate) fn in_scope(&self, u: &Upstream, tools: Arc<Vec<ToolInfo>>) -> Arc<Vec<ToolInfo>> {
        match self.scope.as_ref().and_then(|s| s.get(&u.name)) {
            Some(Some(allowed)) => Arc::new(tools.iter().filter(|t| allowed.contains(&t.name)).cloned().collect()),
            _ => tools,
        }
    }
}

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        // dropping a runtime inside another runtime's thread panics; this never does
        if let Ok(mut rt) = self.0.lock()
            && let Some(rt) = rt.take()
        {
            rt.shutdown_background();
        }
    }
}

/// Why a blocking wait ended without an answer.
pub(crate) enum Interrupted {
    Deadline,
    Cancelled,
}

impl Inner {
    /// Runs `fut` on the upstream runtime and waits for it from a plain thread, giving up
    /// at `deadline` or when `cancel` fires (the future is then aborted).
    pub(crate) fn wait<T: Send + 'static>(
        &self,
        fut: impl std::future::Future<Output = T> + Send + 'static,
        deadline: Instant,
        cancel: &ptc_lisp_eval::Cancel,
    ) -> Result<T, Interrupted> {
        let (tx, rx) = std::sync::mpsc::channel();
        let task = self.handle.spawn(async move {
            let _ = tx.send(fut.await);
        });
        let poll = Duration::from_millis(10);
        loop {
            if cancel.is_cancelled() {
                task.abort();
                return Err(Interrupted::Cancelled);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                task.abort();
                return Err(Interrupted::Deadline);
            }
            match rx.recv_timeout(left.min(poll)) {
                Ok(v) => return Ok(v),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Interrupted::Cancelled);
                }
            }
        }
    }
}

impl Inner {
    /// [`Inner::wait`] within a program's tool call: its deadline and cancel, ending in the
    /// tool error the evaluator turns into `timeout` or `cancelled` (`what` names the work).
    pub(crate) fn wait_within<T: Send + 'static>(
        &self,
        fut: impl std::future::Future<Output = T> + Send + 'static,
        cx: &ptc_lisp_eval::CallCx<'_>,
        what: &str,
    ) -> Result<T, ptc_lisp_eval::ToolError> {
        self.wait(fut, cx.deadline, cx.cancel).map_err(|i| match i {
            Interrupted::Deadline => ptc_lisp_eval::ToolError::timeout(what),
            Interrupted::Cancelled => ptc_lisp_eval::ToolError::cancelled(what),
        })
    }

    /// The catalog of `u` as far as the scope shows it, loading it when needed (live
    /// mode). Used by the program host's discovery and the catalog's `dir`/`doc`/`apropos`
    /// alike, which is why it lives here and not on either of them.
    pub(crate) fn load_tools(
        &self,
        u: &Arc<Upstream>,
        cx: &ptc_lisp_eval::CallCx<'_>,
    ) -> Result<Arc<Vec<ToolInfo>>, ptc_lisp_eval::ToolError> {
        if let Some(t) = self.visible(u) {
            return Ok(t);
        }
        let u2 = u.clone();
        let r = self.wait_within(async move { u2.tools().await }, cx, "discovery")?;
        r.map(|t| self.in_scope(u, t))
            .map_err(|f| ptc_lisp_eval::ToolError::data(f.reason, self.redactor.scrub(&f.message)))
    }
}

/// The upstreams of one server or REPL: connections, catalogs, secrets, limits.
#[derive(Clone)]
pub struct UpstreamRuntime {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for UpstreamRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamRuntime").field("upstreams", &self.inner.upstreams.keys().collect::<Vec<_>>()).finish()
    }
}

/// Runs `fut` to completion on `handle`; from inside another runtime (an async embedder)
/// it waits on a scoped plain thread, since blocking a runtime thread would panic.
fn block_on<F: std::future::Future + Send>(handle: &tokio::runtime::Handle, fut: F) -> F::Output
where
    F::Output: Send,
{
    if tokio::runtime::Handle::try_current().is_err() {
        return handle.block_on(fut);
    }
    std::thread::scope(|s| {
        let waiter = s.spawn(|| handle.block_on(fut));
        match waiter.join() {
            Ok(v) => v,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// Query parameters whose values are treated as credentials (matched as substrings of
/// the lowercased name: `api_key`, `access_token`, `client_secret`, `sig`...).
const CREDENTIAL_PARAMS: &[&str] = &["key", "token", "secret", "pass", "auth", "sig", "credential", "session", "code"];

/// The credentials a URL carries, in the forms an error could print them: the user and
/// password of its userinfo, and the values of credential-like query parameters (both as
/// written and percent-decoded).
fn url_credentials(url: &str) -> Vec<String> {
    let Ok(u) = reqwest::Url::parse(url) else { return Vec::new() };
    let mut out = Vec::new();
    for part in [Some(u.username()), u.password()].into_iter().flatten().filter(|p| !p.is_empty()) {
        out.push(part.to_string());
        out.push(percent_decoded(part));
    }
    let credential = |name: &str| {
        let name = name.to_ascii_lowercase();
        CREDENTIAL_PARAMS.iter().any(|c| name.contains(c))
    };
    for pair in u.query().unwrap_or("").split('&') {
        if let Some((name, value)) = pair.split_once('=')
            && !value.is_empty()
            && credential(&percent_decoded(name))
        {
            out.push(value.to_string());
        }
    }
    out.extend(u.query_pairs().filter(|(n, v)| !v.is_empty() && credential(n)).map(|(_, v)| v.into_owned()));
    out
}

/// `%XX` escapes decoded (invalid escapes kept as written).
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && let (Some(h), Some(l)) = (b.get(i + 1).and_then(|c| hex(*c)), b.get(i + 2).and_then(|c| hex(*c)))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Runs `fut` unless `stop` fires first (`None`).
async fn until<F: std::future::Future>(stop: &tokio_util::sync::CancellationToken, fut: F) -> Option<F::Output> {
    tokio::select! {
        r = fut => Some(r),
        _ = stop.cancelled() => None,
    }
}

/// Paths a stdio `command` must not resolve to (this very binary).
fn is_self(command: &str) -> bool {
    let Ok(me) = std::env::current_exe().and_then(|p| p.canonicalize()) else {
        return false;
    };
    let candidate = std::path::Path::new(command);
    let resolved = if candidate.components().count() > 1 {
        candidate.canonicalize().ok()
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(command))
                .find(|p| p.is_file())
                .and_then(|p| p.canonicalize().ok())
        })
    };
    resolved.is_some_and(|r| r == me)
}

impl UpstreamRuntime {
    /// Resolves credentials and prepares every upstream; in frozen mode also starts and
    /// lists each MCP upstream (failing start if one cannot). OpenAPI documents are
    /// loaded in both modes. `env` reads the server's environment (credentials).
    pub fn start(
        config: &UpstreamsConfig,
        options: UpstreamOptions,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, StartError> {
        Self::start_until(config, options, env, &tokio_util::sync::CancellationToken::new())
    }

    /// [`Self::start`], given up when `stop` is cancelled (a shutdown signal during start):
    /// it then returns [`StartError::Interrupted`] after stopping every child it started.
    /// Refuses with [`StartError::Nested`] when `env` says this process is itself a stdio
    /// upstream of a `ptc`.
    pub fn start_until(
        config: &UpstreamsConfig,
        options: UpstreamOptions,
        env: &dyn Fn(&str) -> Option<String>,
        stop: &tokio_util::sync::CancellationToken,
    ) -> Result<Self, StartError> {
        if !config.upstreams.is_empty()
            && let Some(depth) = env(NESTING_ENV).filter(|d| !d.trim().is_empty() && d.trim() != "0")
        {
            return Err(StartError::Nested { var: NESTING_ENV, depth });
        }
        let secrets = Arc::new(secrets::resolve(config, env)?);
        let mut redactor = Redactor::new(secrets.values());
        // stdio env values may carry secrets expanded from ${VAR}; a path or a number that
        // is not named like a secret stays readable, so errors still say which file failed
        let env_values: Vec<String> = config
            .upstreams
            .values()
            .filter_map(|u| match &u.transport {
                Transport::Stdio(s) => Some(
                    s.env.iter().filter(|(k, v)| env_value_is_secret(k, v)).map(|(_, v)| v.clone()).collect::<Vec<_>>(),
                ),
                _ => None,
            })
            .flatten()
            .collect();
        redactor = redactor.with(env_values);
        // credentials written into an upstream URL (user:password@, ?api_key=...) travel in
        // transport errors (reqwest and rmcp print the URL): scrub them like resolved ones
        let url_values: Vec<String> = config
            .upstreams
            .values()
            .flat_map(|u| match &u.transport {
                Transport::Http(h) => vec![h.url.as_str()],
                Transport::OpenApi(o) => match &o.schema {
                    config::SchemaSource::Url(s) => vec![o.base_url.as_str(), s.as_str()],
                    _ => vec![o.base_url.as_str()],
                },
                _ => Vec::new(),
            })
            .flat_map(url_credentials)
            .collect();
        redactor = redactor.with(url_values);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("ptc-upstream")
            .enable_all()
            .build()
            .map_err(|e| StartError::Runtime(e.to_string()))?;
        let handle = runtime.handle().clone();
        let mut upstreams = BTreeMap::new();
        for (name, u) in &config.upstreams {
            let kind = match &u.transport {
                Transport::Stdio(s) => {
                    if is_self(&s.command) {
                        return Err(StartError::Config(ConfigError {
                            file: config.path.clone(),
                            place: format!("upstream '{name}', field `command`"),
                            message: "this is ptc itself; an aggregator cannot be its own upstream".into(),
                        }));
                    }
                    Kind::Stdio(s.clone())
                }
                Transport::Http(h) => Kind::Http(h.clone()),
                Transport::OpenApi(o) => {
                    let load = openapi::Service::load(name, o, secrets.clone(), redactor.clone());
                    let svc = block_on(&handle, until(stop, load)).ok_or(StartError::Interrupted)?.map_err(|e| {
                        StartError::Config(ConfigError {
                            file: config.path.clone(),
                            place: format!("upstream '{name}', field `{}`", e.field),
                            message: e.message,
                        })
                    })?;
                    Kind::OpenApi(svc)
                }
            };
            let list_timeout = match &kind {
                Kind::Stdio(c) => c.handshake_timeout,
                Kind::Http(c) => c.handshake_timeout,
                Kind::OpenApi(_) => options.call_timeout,
            };
            upstreams.insert(
                name.clone(),
                Arc::new(Upstream {
                    name: name.clone(),
                    description: u.description.as_ref().map(|d| redactor.scrub(d)),
                    kind,
                    conn: tokio::sync::Mutex::new(None),
                    catalog: RwLock::new(None),
                    permits: Arc::new(Semaphore::new(options.max_concurrent_calls_per_upstream.max(1))),
                    secrets: secrets.clone(),
                    redactor: redactor.clone(),
                    list_timeout,
                }),
            );
        }
        let frozen = options.snapshot == SnapshotMode::Frozen;
        let inner = Arc::new(Inner {
            runtime: Arc::new(OwnedRuntime(Mutex::new(Some(runtime)))),
            handle: handle.clone(),
            upstreams,
            redactor,
            options,
            scope: None,
        });
        // OpenAPI catalogs are compiled already; load them into the cache in both modes
        for u in inner.upstreams.values() {
            if let Kind::OpenApi(_) = u.kind {
                let u = u.clone();
                let _ = block_on(&handle, async move { u.tools().await });
            }
        }
        if frozen {
            let all: Vec<Arc<Upstream>> = inner.upstreams.values().cloned().collect();
            let stop = stop.clone();
            let results = block_on(&handle, async move {
                let mut set = Vec::new();
                for u in all {
                    set.push(tokio::spawn(async move {
                        let r = u.tools().await;
                        (u.name.clone(), r)
                    }));
                }
                let mut out = Vec::new();
                for h in &mut set {
                    tokio::select! {
                        r = h => if let Ok(r) = r { out.push(r) },
                        _ = stop.cancelled() => {
                            // abandon every start under way: the dropped futures kill their
                            // children (see mcp_client::StartGuard); wait until they are gone
                            for h in &set {
                                h.abort();
                            }
                            for h in set {
                                let _ = h.await;
                            }
                            return None;
                        }
                    }
                }
                Some(out)
            });
            // on interruption, dropping `inner` stops the children already connected
            let results = results.ok_or(StartError::Interrupted)?;
            for (name, r) in results {
                if let Err(f) = r {
                    return Err(StartError::Upstream {
                        upstream: name,
                        reason: f.reason.to_string(),
                        message: inner.redactor.scrub(&f.message),
                    });
                }
            }
        }
        Ok(UpstreamRuntime { inner })
    }

    /// A host for one program: fresh call and discovery budgets.
    pub fn program_host(&self) -> ProgramHost {
        ProgramHost::new(self.inner.clone())
    }

    /// Starts (or lists) every upstream and reports each: its transport and tools, or why
    /// it is not usable. Upstreams are checked one after the other, each under its own
    /// handshake timeout, so one that hangs does not hide the others' problems.
    pub fn check(&self) -> Vec<UpstreamCheck> {
        let mut out = Vec::new();
        for (name, u) in &self.inner.upstreams {
            let started = std::time::Instant::now();
            let listed = block_on(&self.inner.handle, u.tools());
            out.push(UpstreamCheck {
                name: name.clone(),
                transport: u.transport_name(),
                ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                tools: match listed {
                    Ok(tools) => Ok(tools.iter().map(|t| t.name.clone()).collect()),
                    Err(f) => Err(format!("{}: {}", f.reason, self.inner.redactor.scrub(&f.message))),
                },
            });
        }
        out
    }

    /// Configured upstream names.
    pub fn names(&self) -> Vec<String> {
        self.inner.upstreams.keys().cloned().collect()
    }

    /// The redactor holding every resolved secret.
    pub fn redactor(&self) -> &Redactor {
        &self.inner.redactor
    }

    /// The text appended to the `lisp_eval` description.
    pub fn catalog_text(&self) -> String {
        catalog::description(&self.inner)
    }

    /// A view of these upstreams limited to `grants`: `"fs"` or `"fs/*"` (every tool of
    /// server `fs`), `"fs/read_text_file"` (one tool). Calls, `tool/servers`, discovery
    /// and the catalog text of the view see nothing else; the connections are shared.
    /// `Err` names the grant at fault: a server that is not configured, a tool its
    /// catalog does not have (checked when the catalog is loaded, as in frozen mode), or
    /// a malformed grant.
    pub fn scoped(&self, grants: &[String]) -> Result<UpstreamRuntime, ScopeError> {
        let mut scope: BTreeMap<String, Option<std::collections::BTreeSet<String>>> = BTreeMap::new();
        for grant in grants {
            let (server, tool) = match grant.split_once('/') {
                Some((s, "*")) => (s, None),
                Some((s, t)) => (s, Some(t)),
                None => (grant.as_str(), None),
            };
            let bad = |message: String| ScopeError { grant: grant.clone(), message };
            if server.is_empty() || tool.is_some_and(|t| t.is_empty() || t.contains('/')) {
                return Err(bad("write \"server\", \"server/*\" or \"server/tool\"".into()));
            }
            let Some(u) = self.inner.upstreams.get(server) else {
                let known: Vec<&str> = self.inner.upstreams.keys().map(String::as_str).collect();
                return Err(bad(format!(
                    "no upstream {server:?} is configured (configured: {})",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                )));
            };
            if let Some(t) = tool
                && let Some(tools) = self.inner.visible(u)
                && !tools.iter().any(|x| x.name == t)
            {
                let mut names: Vec<&str> = tools.iter().map(|x| x.name.as_str()).collect();
                names.sort_unstable();
                return Err(bad(format!("upstream {server:?} has no tool {t:?} (its tools: {})", names.join(", "))));
            }
            let entry = scope.entry(server.to_string()).or_insert_with(|| Some(Default::default()));
            match (tool, entry) {
                (None, e) => *e = None,
                (Some(_), None) => {}
                (Some(t), Some(set)) => {
                    set.insert(t.to_string());
                }
            }
        }
        // a view of a view keeps the narrower of the two scopes per server
        if let Some(outer) = &self.inner.scope {
            for (server, tools) in scope.iter_mut() {
                if let (None, Some(Some(o))) = (&tools, outer.get(server)) {
                    *tools = Some(o.clone());
                }
            }
        }
        let upstreams = self
            .inner
            .upstreams
            .iter()
            .filter(|(n, _)| scope.contains_key(*n))
            .map(|(n, u)| (n.clone(), u.clone()))
            .collect();
        Ok(UpstreamRuntime {
            inner: Arc::new(Inner {
                runtime: self.inner.runtime.clone(),
                handle: self.inner.handle.clone(),
                upstreams,
                redactor: self.inner.redactor.clone(),
                options: self.inner.options.clone(),
                scope: Some(scope),
            }),
        })
    }
}

/// A grant of [`UpstreamRuntime::scoped`] that names no configured server or tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{grant:?}: {message}")]
#[non_exhaustive]
pub struct ScopeError {
    /// The grant as written.
    pub grant: String,
    /// What is wrong with it.
    pub message: String,
}

impl ToolBackend for UpstreamRuntime {
    fn host(&self) -> Arc<dyn ptc_lisp_eval::Host> {
        Arc::new(self.program_host())
    }

    fn catalog(&self) -> Option<String> {
        Some(self.catalog_text())
    }

    fn finish(&self, outcome: &ptc_lisp_eval::Outcome, payload: &mut crate::envelope::CallPayload, debug: bool) {
        if debug {
            metrics::attach(outcome, payload);
        }
    }

    fn scrub(&self, text: &str) -> String {
        self.inner.redactor.scrub(text)
    }
}

/// Whether a stdio upstream's `env` value is scrubbed from errors and logs: always when its
/// name says secret (`*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASS*`, `*AUTH*`, `*CREDENTIAL*`,
/// `*PRIVATE*`, `*COOKIE*`, `*SESSION*`), otherwise unless it is plainly not one: a
/// filesystem path, a number or a boolean. `MEMORY_FILE_PATH=/home/me/m.jsonl` then no
/// longer turns every error about that file into `[REDACTED]`.
fn env_value_is_secret(key: &str, value: &str) -> bool {
    const SECRET_WORDS: [&str; 9] =
        ["KEY", "TOKEN", "SECRET", "PASS", "AUTH", "CREDENTIAL", "PRIVATE", "COOKIE", "SESSION"];
    let upper = key.to_ascii_uppercase();
    if SECRET_WORDS.iter().any(|w| upper.contains(w)) {
        return true;
    }
    let v = value.trim();
    let path_like = v.starts_with('/')
        || v.starts_with("./")
        || v.starts_with("../")
        || v.starts_with('~')
        || (v.len() > 2 && v.as_bytes()[1] == b':' && (v.as_bytes()[2] == b'\\' || v.as_bytes()[2] == b'/'));
    let plain = v.parse::<f64>().is_ok() || matches!(v.to_ascii_lowercase().as_str(), "true" | "false" | "yes" | "no");
    !(path_like || plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_urls_are_found_in_every_written_form() {
        let found = url_credentials("https://bot:p%40ss-w0rd@api.example.com/v1?api_key=K3Y-s3cret&format=json&x=1");
        for needle in ["bot", "p%40ss-w0rd", "p@ss-w0rd", "K3Y-s3cret"] {
            assert!(found.iter().any(|f| f == needle), "{needle} in {found:?}");
        }
        assert!(!found.iter().any(|f| f == "json"), "ordinary parameters are not secrets: {found:?}");
        assert!(url_credentials("https://api.example.com/v1").is_empty());
        assert_eq!(percent_decoded("a%2Fb%zz%4"), "a/b%zz%4");
    }

    #[test]
    fn env_values_are_secrets_unless_plainly_paths_or_numbers_under_ordinary_names() {
        assert!(env_value_is_secret("GITHUB_TOKEN", "/not/really/a/path"), "a secret name wins");
        assert!(env_value_is_secret("DB_PASSWORD", "42"));
        assert!(env_value_is_secret("UPSTREAM_URL", "https://user:pw@host/x"), "unknown shapes stay scrubbed");
        assert!(!env_value_is_secret("MEMORY_FILE_PATH", "/home/me/.cache/ptc-memory.jsonl"));
        assert!(!env_value_is_secret("ROOT", "~/notes"));
        assert!(!env_value_is_secret("WORKERS", "4"));
        assert!(!env_value_is_secret("DEBUG", "true"));
        assert!(!env_value_is_secret("DATA", r"C:\data"));
    }
}
