//! Streamable HTTP transport: `/mcp` (rmcp's service), `/health`, `/ready`.
//!
//! Around rmcp's service this module adds what a server on a network needs:
//! - bearer authentication (constant-time) with failed-attempt rate limiting per peer
//!   address that never locks out the valid token;
//! - Host and Origin checks, origins matched with their port;
//! - a frame guard: the body is read with a size cap and a deadline, and a body that is
//!   not a valid JSON-RPC message gets a JSON-RPC error (not rmcp's plain text);
//! - session caps per owner and in total, evicting the least recently used session;
//! - a header read timeout (slow clients cannot hold a connection open forever);
//! - a request reusing the id of one still running in its session gets an error (rmcp
//!   routes answers by id, so the first would never be answered);
//! - `DELETE /mcp` answered with 200 (clients treat rmcp's 202 as a failed termination);
//! - draining on shutdown: new calls get `shutting_down`, running ones may finish.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::config::McpConfig;
use crate::frame::{self, Rejection, Verdict};
use crate::http_fast::{FastHttp, FastHttpConfig};
use crate::server::PtcServer;

/// How long a finished response stays available to a client resuming its stream.
const RESUME_CACHE_TTL: Duration = Duration::from_secs(5);

/// How long running calls may finish after a shutdown signal.
pub(crate) const DRAIN_GRACE: Duration = Duration::from_secs(10);

const SESSION_HEADER: &str = "mcp-session-id";

/// Why the HTTP server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// Configuration refused (e.g. a non-loopback bind without a token).
    #[error("{0}")]
    Config(String),
    /// The address cannot be bound.
    #[error("cannot listen on {addr}: {why}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// One sentence saying why and what to do.
        why: String,
    },
    /// Socket errors.
    #[error("cannot serve HTTP: {0}")]
    Io(#[from] std::io::Error),
}

struct Guard {
    /// The accepted tokens (none: no authentication). Each token's holders are one
    /// session owner.
    tokens: Vec<String>,
    max_failures: u32,
    block: Duration,
    failures: Mutex<HashMap<IpAddr, (u32, Instant)>>,
}

/// Constant-time comparison (no early exit on the first differing byte).
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

/// The token of an `Authorization: Bearer <token>` value. The scheme is matched without
/// regard to case and may be followed by several spaces (RFC 9110 §11.1, §11.4), so
/// `bearer <token>` from a client that lowercases it is accepted.
fn bearer_token(value: &str) -> Option<&str> {
    let value = value.trim_matches([' ', '\t']);
    let (scheme, rest) = value.split_once([' ', '\t'])?;
    let token = rest.trim_start_matches([' ', '\t']);
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn unauthorized(challenge: &'static str) -> Response {
    let mut r = (StatusCode::UNAUTHORIZED, "unauthorized: send Authorization: Bearer <token>\n").into_response();
    r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    r
}

impl Guard {
    /// Seconds left on a block of this address, if it is blocked.
    fn blocked_for(&self, ip: IpAddr) -> Option<u64> {
        let map = self.failures.lock().ok()?;
        let (n, since) = map.get(&ip)?;
        if *n < self.max_failures {
            return None;
        }
        let left = self.block.saturating_sub(since.elapsed());
        (!left.is_zero()).then(|| left.as_secs().max(1))
    }

    fn record_failure(&self, ip: IpAddr) {
        let Ok(mut map) = self.failures.lock() else { return };
        if map.len() >= 10_000 {
            let block = self.block;
            map.retain(|_, (_, since)| since.elapsed() <= block);
            if map.len() >= 10_000 {
                map.clear();
            }
        }
        let e = map.entry(ip).or_insert((0, Instant::now()));
        if e.1.elapsed() > self.block {
            *e = (0, Instant::now());
        }
        e.0 = e.0.saturating_add(1);
        e.1 = Instant::now();
    }
}

/// The valid token always passes, even from an address that is blocked: the block only
/// stops that address's wrong guesses (`429` + `Retry-After`), so an attacker sharing an
/// address with a real client cannot lock the client out.
async fn auth(
    State(guard): State<Arc<Guard>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut req: Request,
    next: Next,
) -> Response {
    if guard.tokens.is_empty() {
        return next.run(req).await;
    }
    let ip = peer.ip();
    let presented = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(bearer_token);
    // every token is compared (no early exit that would tell which one came close)
    let matched = presented.and_then(|p| {
        let mut hit = None;
        for t in &guard.tokens {
            if same_secret(p.as_bytes(), t.as_bytes()) {
                hit = Some(t);
            }
        }
        hit
    });
    if let Some(token) = matched {
        req.extensions_mut().insert(crate::session::Owner::token(token));
        return next.run(req).await;
    }
    if let Some(secs) = guard.blocked_for(ip) {
        tracing::info!(%ip, "failed authentication from a blocked address");
        let mut r = (StatusCode::TOO_MANY_REQUESTS, "too many failed authentication attempts\n").into_response();
        if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return r;
    }
    match presented {
        None => unauthorized("Bearer"),
        Some(_) => {
            guard.record_failure(ip);
            tracing::info!(%ip, "failed authentication");
            unauthorized("Bearer error=\"invalid_token\"")
        }
    }
}

struct SessionEntry {
    owner: String,
    last_used: Instant,
    /// rmcp accepted the session's `notifications/initialized`: the HTTP fast path may
    /// answer its calls.
    ready: bool,
}

/// The sessions rmcp holds, with their owners, so that they can be capped.
struct Sessions {
    manager: Arc<LocalSessionManager>,
    table: Mutex<HashMap<String, SessionEntry>>,
    max_total: usize,
    max_per_owner: usize,
}

impl Sessions {
    /// Notes a use of the session; true when its handshake is over (see `ready`).
    fn touch(&self, id: &str) -> bool {
        if let Ok(mut t) = self.table.lock()
            && let Some(e) = t.get_mut(id)
        {
            e.last_used = Instant::now();
            return e.ready;
        }
        false
    }

    fn register(&self, id: &str, owner: &str) {
        if let Ok(mut t) = self.table.lock() {
            t.insert(
                id.to_string(),
                SessionEntry { owner: owner.to_string(), last_used: Instant::now(), ready: false },
            );
        }
    }

    fn mark_ready(&self, id: &str) {
        if let Ok(mut t) = self.table.lock()
            && let Some(e) = t.get_mut(id)
        {
            e.ready = true;
        }
    }

    fn forget(&self, id: &str) {
        if let Ok(mut t) = self.table.lock() {
            t.remove(id);
        }
    }

    /// Makes room for one more session of `owner`: the owner's least recently used
    /// session goes when the owner is at its cap, the server's when the total is.
    async fn make_room(&self, owner: &str) {
        let live: std::collections::HashSet<String> =
            self.manager.sessions.read().await.keys().map(|k| k.to_string()).collect();
        let victims = {
            let Ok(mut t) = self.table.lock() else { return };
            // sessions rmcp already closed (idle keep-alive, errors) no longer count
            t.retain(|id, _| live.contains(id));
            let mut victims = Vec::new();
            loop {
                let owned = t.values().filter(|e| e.owner == owner).count();
                let pick = if owned >= self.max_per_owner {
                    t.iter().filter(|(_, e)| e.owner == owner).min_by_key(|(_, e)| e.last_used)
                } else if t.len() >= self.max_total {
                    t.iter().min_by_key(|(_, e)| e.last_used)
                } else {
                    None
                };
                let Some(id) = pick.map(|(id, _)| id.clone()) else { break };
                t.remove(&id);
                victims.push(id);
            }
            victims
        };
        for id in victims {
            tracing::info!(session = %short(&id), "session evicted: the session cap was reached");
            let _ = self.manager.close_session(&id.as_str().into()).await;
        }
    }
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// Request ids in flight, per session: rmcp routes answers by id, so a second request
/// with the id of a running one would leave the first without an answer.
#[derive(Default)]
struct InFlight(Mutex<std::collections::HashSet<String>>);

/// Holds one (session, id) in flight until the response body ends or is dropped.
struct InFlightTicket {
    owner: Arc<GuardState>,
    key: String,
}

impl Drop for InFlightTicket {
    fn drop(&mut self) {
        if let Ok(mut set) = self.owner.in_flight.0.lock() {
            set.remove(&self.key);
        }
    }
}

/// A response body that releases its request id when it ends.
struct TrackedBody {
    inner: Body,
    _ticket: InFlightTicket,
}

impl hyper::body::Body for TrackedBody {
    type Data = hyper::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

struct GuardState {
    in_flight: InFlight,
    sessions: Sessions,
    max_frame: usize,
    body_timeout: Duration,
    /// The server's lifted contexts.
    stash: Arc<crate::context_stash::ContextStash>,
    /// Plain `lisp_eval` calls answered without rmcp (`http_fast.rs`).
    fast: Arc<FastHttp>,
}

fn json_rpc_error(status: StatusCode, r: &Rejection) -> Response {
    let mut resp = (status, r.to_json().to_string()).into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// Reads and checks POST bodies, tracks sessions, answers DELETE with 200.
async fn frame_guard(
    State(st): State<Arc<GuardState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut req: Request,
    next: Next,
) -> Response {
    // without a token, the client's address owns its stateful sessions
    if req.extensions().get::<crate::session::Owner>().is_none() {
        req.extensions_mut().insert(crate::session::Owner::peer(peer.ip()));
    }
    let session = req.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
    let ready = session.as_deref().is_some_and(|s| st.sessions.touch(s));
    if req.method() == Method::DELETE {
        let mut resp = next.run(req).await;
        if resp.status() == StatusCode::ACCEPTED {
            if let Some(s) = &session {
                st.sessions.forget(s);
            }
            *resp.status_mut() = StatusCode::OK;
        }
        return resp;
    }
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let declared = parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    let too_large = || {
        json_rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &Rejection::parse_error(format!("Parse error: the body is over max_frame_bytes ({})", st.max_frame)),
        )
    };
    if declared.is_some_and(|n| n > st.max_frame) {
        return too_large();
    }
    let bytes = match tokio::time::timeout(st.body_timeout, axum::body::to_bytes(body, st.max_frame)).await {
        Err(_) => {
            tracing::info!(%peer, "request body timed out");
            return json_rpc_error(
                StatusCode::REQUEST_TIMEOUT,
                &Rejection::parse_error(format!(
                    "Parse error: the body did not arrive within {} ms",
                    st.body_timeout.as_millis()
                )),
            );
        }
        Ok(Err(e)) => {
            let text = format!("{e:?}");
            if text.to_ascii_lowercase().contains("length limit") {
                return too_large();
            }
            return json_rpc_error(
                StatusCode::BAD_REQUEST,
                &Rejection::parse_error(format!("Parse error: the body could not be read: {e}")),
            );
        }
        Ok(Ok(b)) => b,
    };
    let (method, id) = match frame::check(&bytes) {
        Verdict::Reject(r) => {
            let status = if r.code == frame::PARSE_ERROR || r.code == frame::INVALID_REQUEST {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::OK
            };
            return json_rpc_error(status, &r);
        }
        Verdict::Drop(why) => {
            tracing::debug!(%why, "bad notification dropped");
            return StatusCode::ACCEPTED.into_response();
        }
        Verdict::Pass { method, id } => (method, id),
    };
    let ticket = match (&session, &id) {
        (Some(sid), Some(id)) => {
            let key = format!("{sid} {id}");
            let fresh = st.in_flight.0.lock().map(|mut set| set.insert(key.clone())).unwrap_or(true);
            if !fresh {
                let r = Rejection {
                    id: id.clone(),
                    code: frame::INVALID_REQUEST,
                    message: format!("Invalid Request: a request with id {id} is still in flight in this session"),
                };
                return json_rpc_error(StatusCode::BAD_REQUEST, &r);
            }
            Some(InFlightTicket { owner: st.clone(), key })
        }
        _ => None,
    };
    // a lisp_eval context never reaches rmcp's decoder (context_stash.rs)
    let bytes = if method.as_deref() == Some("tools/call") {
        match st.stash.lift(&bytes, id.as_ref().unwrap_or(&serde_json::Value::Null)) {
            Ok(Some(lifted)) => axum::body::Bytes::from(lifted),
            Ok(None) => bytes,
            Err(r) if id.is_some() => return json_rpc_error(StatusCode::OK, &r),
            Err(_) => return StatusCode::ACCEPTED.into_response(),
        }
    } else {
        bytes
    };
    let opens_session = session.is_none() && method.as_deref() == Some("initialize");
    // one token's holders (or, without a token, one address) share the session caps
    let owner = match parts.extensions.get::<crate::session::Owner>() {
        Some(o) => o.as_str().to_string(),
        None => peer.ip().to_string(),
    };
    if opens_session {
        st.sessions.make_room(&owner).await;
    }
    let started = Instant::now();
    let mut fast = None;
    if let Some(sid) = &session {
        match method.as_deref() {
            Some("notifications/cancelled") => st.fast.cancel(sid, &bytes),
            Some("tools/call") if ready && st.fast.headers_allow(&parts.headers) => {
                if let Some(id) = &id
                    && st.sessions.manager.has_session(&sid.as_str().into()).await.unwrap_or(false)
                {
                    fast = st.fast.call(sid, id, &bytes).await;
                }
            }
            _ => {}
        }
    }
    let resp = match fast {
        Some(resp) => resp,
        None => next.run(Request::from_parts(parts, Body::from(bytes))).await,
    };
    if method.as_deref() == Some("notifications/initialized")
        && resp.status() == StatusCode::ACCEPTED
        && let Some(sid) = &session
    {
        st.sessions.mark_ready(sid);
    }
    if opens_session && let Some(id) = resp.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
        st.sessions.register(id, &owner);
    }
    let resp = match ticket {
        Some(ticket) => resp.map(|inner| Body::new(TrackedBody { inner, _ticket: ticket })),
        None => resp,
    };
    tracing::debug!(
        method = method.as_deref().unwrap_or("-"),
        status = resp.status().as_u16(),
        duration_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
        session = session.as_deref().map(short).unwrap_or("-"),
        "POST /mcp"
    );
    resp
}

/// Polls `done` until it holds or `limit` passes (shutdown only).
pub(crate) async fn wait_until(limit: Duration, done: impl Fn() -> bool) {
    let until = Instant::now() + limit;
    while !done() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `scheme://host[:port]` with the scheme's default port made explicit, so that every
/// allowed origin is matched with its port.
pub(crate) fn origin_with_port(origin: &str) -> String {
    let o = origin.trim().trim_end_matches('/');
    let Some((scheme, rest)) = o.split_once("://") else { return o.to_string() };
    let has_port = match rest.rfind(']') {
        Some(close) => rest[close..].contains(':'),
        None => rest.contains(':'),
    };
    if has_port {
        return o.to_string();
    }
    match scheme.to_ascii_lowercase().as_str() {
        "http" => format!("{o}:80"),
        "https" => format!("{o}:443"),
        _ => o.to_string(),
    }
}

fn bind_error(addr: SocketAddr, e: &std::io::Error) -> HttpError {
    let why = match e.kind() {
        std::io::ErrorKind::AddrInUse => {
            "the address is already in use; stop the other server or pick another port (--http 127.0.0.1:0 picks a free one)".to_string()
        }
        std::io::ErrorKind::PermissionDenied => {
            "permission denied; ports below 1024 need privileges, pick a port above 1024".to_string()
        }
        std::io::ErrorKind::AddrNotAvailable => "that address does not belong to this machine".to_string(),
        _ => e.to_string(),
    };
    HttpError::Bind { addr, why }
}

/// Serves until `shutdown` is cancelled, then drains. Loopback binds need no token; any
/// other bind requires a bearer token of at least 32 characters.
pub async fn serve_http(
    server: PtcServer,
    config: &McpConfig,
    addr: SocketAddr,
    shutdown: CancellationToken,
) -> Result<(), HttpError> {
    let loopback = addr.ip().is_loopback();
    if config.http_extra_auth_tokens.iter().any(|t| t.len() < 32) {
        return Err(HttpError::Config("every extra HTTP auth token must be at least 32 characters".into()));
    }
    if config.http_auth_token.is_none() && !config.http_extra_auth_tokens.is_empty() {
        return Err(HttpError::Config("extra HTTP auth tokens need --http-auth-token as well".into()));
    }
    match &config.http_auth_token {
        Some(t) if t.len() < 32 => {
            return Err(HttpError::Config("the HTTP auth token must be at least 32 characters".into()));
        }
        None if !loopback => {
            return Err(HttpError::Config(format!(
                "binding {addr} (not loopback) requires --http-auth-token (at least 32 characters)"
            )));
        }
        _ => {}
    }
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| bind_error(addr, &e))?;
    serve_listener(server, config, listener, shutdown, None).await
}

/// [`serve_http`] on a bound listener whose configuration was checked; `probe` receives
/// the fast path's state (for tests).
pub(crate) async fn serve_listener(
    server: PtcServer,
    config: &McpConfig,
    listener: tokio::net::TcpListener,
    shutdown: CancellationToken,
    probe: Option<Arc<std::sync::OnceLock<Arc<FastHttp>>>>,
) -> Result<(), HttpError> {
    let local = listener.local_addr()?;
    let loopback = local.ip().is_loopback();
    let port = local.port();
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into(), "[::1]".into()];
    for h in ["localhost", "127.0.0.1", "[::1]"] {
        hosts.push(format!("{h}:{port}"));
    }
    if !loopback {
        hosts.push(local.ip().to_string());
        hosts.push(local.to_string());
    }
    let mut origins: Vec<String> =
        ["http://localhost", "http://127.0.0.1", "http://[::1]"].iter().map(|o| format!("{o}:{port}")).collect();
    origins.extend(config.http_allowed_origins.iter().map(|o| origin_with_port(o)));
    let rmcp_stop = CancellationToken::new();
    let (fast_hosts, fast_origins) = (hosts.clone(), origins.clone());
    let mut http_config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(config.max_frame_bytes)
        .with_cancellation_token(rmcp_stop.clone());
    // with a shared session store, every instance can take over a client's MCP session
    http_config.session_store = server.session_store().mcp_sessions();
    // rmcp keeps each finished response for late `Last-Event-ID` resumes, 60 s by default,
    // evicting only when the session sees its next request: a busy session's last minute of
    // answers stayed in memory after its client went quiet (85 MB after a 60 s load against
    // 14 MB idle). Clients retry a broken stream after `sse_retry` (3 s), so a few seconds
    // more keep resumes working.
    let mut manager = LocalSessionManager::default();
    manager.session_config.completed_cache_ttl = RESUME_CACHE_TTL;
    let manager = Arc::new(manager);
    let fast = Arc::new(FastHttp::new(
        server.clone(),
        FastHttpConfig {
            enabled: config.http_fast_path,
            hosts: fast_hosts,
            origins: fast_origins,
            retry: manager.session_config.sse_retry,
        },
    ));
    if let Some(probe) = probe {
        let _ = probe.set(fast.clone());
    }
    let factory_server = server.clone();
    let service = StreamableHttpService::new(move || Ok(factory_server.clone()), manager.clone(), http_config);
    let guard = Arc::new(Guard {
        tokens: config.http_auth_token.iter().chain(&config.http_extra_auth_tokens).cloned().collect(),
        max_failures: config.http_auth_max_failures,
        block: config.http_auth_block,
        failures: Mutex::new(HashMap::new()),
    });
    let guard_state = Arc::new(GuardState {
        in_flight: InFlight::default(),
        sessions: Sessions {
            manager,
            table: Mutex::new(HashMap::new()),
            max_total: config.http_max_sessions.max(1),
            max_per_owner: config.http_max_sessions_per_owner.max(1),
        },
        max_frame: config.max_frame_bytes,
        body_timeout: config.http_body_timeout,
        stash: server.stash_handle(),
        fast,
    });
    let answering = guard_state.clone();
    let mcp = Router::new()
        .route_service("/mcp", service)
        .layer(middleware::from_fn_with_state(guard_state, frame_guard))
        .layer(middleware::from_fn_with_state(guard, auth));
    let ready_server = server.clone();
    let app = Router::new()
        .route("/health", get(|| async { "ok\n" }))
        .route(
            "/ready",
            get(move || {
                let s = ready_server.clone();
                async move {
                    if s.is_shutting_down() {
                        (StatusCode::SERVICE_UNAVAILABLE, "draining\n")
                    } else {
                        (StatusCode::OK, "ready\n")
                    }
                }
            }),
        )
        .merge(mcp)
        .fallback(|| async { (StatusCode::NOT_FOUND, Body::from("not found: the MCP endpoint is /mcp\n")) });
    tracing::info!(addr = %local, "serving MCP over Streamable HTTP at http://{local}/mcp");

    let stop_conns = CancellationToken::new();
    let (alive_tx, mut alive_rx) = tokio::sync::mpsc::channel::<()>(1);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(config.http_header_timeout).keep_alive(true);
    let builder = Arc::new(builder);
    let conn_threads = ConnThreads::start(config.http_conn_threads);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // out of descriptors and the like: wait a little instead of spinning
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
        // an answer goes out in several small writes (head, then the event stream's
        // chunks): with Nagle's algorithm each waited on the client's delayed ACK, about
        // 40 ms a call on a keep-alive connection
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(%peer, error = %e, "cannot set TCP_NODELAY");
        }
        let conn = Conn {
            peer,
            app: app.clone(),
            builder: builder.clone(),
            stop: stop_conns.clone(),
            alive: alive_tx.clone(),
        };
        match conn_threads.next() {
            // the socket moves to that thread's runtime, whose reactor then wakes it
            Some(thread) => match stream.into_std() {
                Ok(stream) => {
                    thread.spawn(async move {
                        match tokio::net::TcpStream::from_std(stream) {
                            Ok(stream) => conn.serve(stream).await,
                            Err(e) => tracing::debug!(%peer, error = %e, "cannot register the connection"),
                        }
                    });
                }
                Err(e) => tracing::debug!(%peer, error = %e, "cannot hand the connection over"),
            },
            None => {
                tokio::spawn(conn.serve(stream));
            }
        }
    }
    drop(listener);
    tracing::info!("shutting down: draining calls in flight");
    server.begin_shutdown();
    server.drain(DRAIN_GRACE).await;
    // a finished program's answer is still on its way to the client: let it arrive
    wait_until(Duration::from_secs(2), || answering.in_flight.0.lock().map(|s| s.is_empty()).unwrap_or(true)).await;
    rmcp_stop.cancel();
    stop_conns.cancel();
    drop(alive_tx);
    let _ = tokio::time::timeout(Duration::from_secs(5), alive_rx.recv()).await;
    conn_threads.stop().await;
    Ok(())
}

/// One accepted connection and what serving it needs.
struct Conn {
    peer: SocketAddr,
    app: Router,
    builder: Arc<hyper::server::conn::http1::Builder>,
    stop: CancellationToken,
    /// Dropped when the connection ends (shutdown waits for every one).
    alive: tokio::sync::mpsc::Sender<()>,
}

impl Conn {
    async fn serve(self, stream: tokio::net::TcpStream) {
        let Conn { peer, app, builder, stop, alive } = self;
        let svc = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            app.clone().oneshot(req.map(Body::new))
        });
        let conn = builder.serve_connection(TokioIo::new(stream), svc).with_upgrades();
        tokio::pin!(conn);
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
            }
            _ = stop.cancelled() => {
                conn.as_mut().graceful_shutdown();
                let _ = tokio::time::timeout(Duration::from_secs(2), conn).await;
            }
        }
        drop(alive);
    }
}

/// The threads that serve connections: each an evaluation thread
/// ([`Engine::spawn_eval_thread`](ptc_lisp_eval::Engine::spawn_eval_thread)) running a
/// current-thread runtime, so the fast path answers a tiny `lisp_eval` on the
/// connection's own thread, with the stack guarantee and no handoff to the pool (as the
/// stdio reader does). Connections are dealt out in turn; everything a connection's
/// requests start (rmcp's sessions and handlers) runs on its thread's runtime. With no
/// thread (none asked for, or the OS refused them) connections stay on the caller's
/// runtime and every fast-path call goes to the pool.
struct ConnThreads {
    threads: Vec<ConnThread>,
    next: std::sync::atomic::AtomicUsize,
}

struct ConnThread {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// Resolves when the thread's runtime has shut down.
    done: tokio::sync::oneshot::Receiver<()>,
}

impl ConnThreads {
    fn start(count: usize) -> ConnThreads {
        let mut threads = Vec::with_capacity(count);
        for i in 0..count {
            let (handle_tx, handle_rx) = std::sync::mpsc::channel();
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
            let started = ptc_lisp_eval::Engine::spawn_eval_thread(format!("ptc-http-{i}"), move || {
                let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot start a connection thread's runtime");
                        return;
                    }
                };
                if handle_tx.send(runtime.handle().clone()).is_err() {
                    return;
                }
                let _ = runtime.block_on(stop_rx);
                // connections still open after the server's own grace period end here
                runtime.shutdown_timeout(Duration::from_secs(1));
                let _ = done_tx.send(());
            });
            if let Err(e) = started {
                tracing::warn!(error = %e, "cannot start a connection thread; serving on the runtime's workers");
                continue;
            }
            if let Ok(handle) = handle_rx.recv() {
                threads.push(ConnThread { handle, stop: Some(stop_tx), done: done_rx });
            }
        }
        ConnThreads { threads, next: std::sync::atomic::AtomicUsize::new(0) }
    }

    /// The runtime of the thread whose turn it is.
    fn next(&self) -> Option<&tokio::runtime::Handle> {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.threads.get(n.checked_rem(self.threads.len())?).map(|t| &t.handle)
    }

    /// Ends every thread and waits (briefly) until they have.
    async fn stop(mut self) {
        for t in &mut self.threads {
            if let Some(stop) = t.stop.take() {
                let _ = stop.send(());
            }
        }
        for t in self.threads {
            let _ = tokio::time::timeout(Duration::from_secs(3), t.done).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_scheme_is_case_insensitive() {
        for v in ["Bearer tok", "bearer tok", "BEARER tok", "bEaReR  tok", "Bearer\ttok", " Bearer tok "] {
            assert_eq!(bearer_token(v), Some("tok"), "{v:?}");
        }
        for v in ["Basic tok", "Bearer", "Bearer ", "Bearertok", "tok", ""] {
            assert_eq!(bearer_token(v), None, "{v:?}");
        }
    }

    #[test]
    fn secret_comparison() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
        assert!(!same_secret(b"", b"a"));
    }

    #[test]
    fn origins_get_their_default_port() {
        assert_eq!(origin_with_port("http://example.com"), "http://example.com:80");
        assert_eq!(origin_with_port("https://example.com/"), "https://example.com:443");
        assert_eq!(origin_with_port("http://example.com:8080"), "http://example.com:8080");
        assert_eq!(origin_with_port("http://[::1]"), "http://[::1]:80");
        assert_eq!(origin_with_port("http://[::1]:9"), "http://[::1]:9");
        assert_eq!(origin_with_port("http://localhost:*"), "http://localhost:*");
    }
}

#[cfg(test)]
#[path = "http_fast_tests.rs"]
mod fast_path_tests;
