//! Upstream MCP servers through rmcp's client: stdio children and Streamable HTTP.
//!
//! A stdio child runs in its own process group with a minimal environment (`PATH`,
//! `HOME`, locale, plus its declared `env`), so credentials held in the server's own
//! environment cannot reach it. Dropping a [`McpConn`] kills the whole group.

use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use serde_json::{Map, Value as Json};
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;

use super::ToolInfo;
use super::config::{HttpCommon, HttpConfig, StdioConfig};
use super::fault::Fault;
use super::secrets::{Redactor, Resolved};

/// Environment variables a stdio child inherits from the server (besides its `env`).
const INHERITED_ENV: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TMPDIR", "USER"];

/// Set in every stdio child's environment: a `ptc` that finds it was started as an
/// upstream of another `ptc` (through a copy of the binary, a wrapper script or
/// `sh -c 'exec ptc mcp'`) and refuses to start upstreams of its own, so a config that
/// reaches back to `ptc` cannot nest servers without end.
pub const NESTING_ENV: &str = "PTC_UPSTREAM_DEPTH";

// the `serverInfo.name` our own MCP server answers `initialize` with
use crate::server::SERVER_NAME as OUR_SERVER_NAME;

/// Refuses a stdio upstream that answered `initialize` as `ptc` itself (a copy of the
/// binary, a wrapper script): the path check of the config cannot see through those, and
/// a ptc child only runs `lisp_eval` inside `lisp_eval` while nesting processes.
fn refuse_ourselves(service: &RunningService<RoleClient, ()>, what: &str) -> Result<(), Fault> {
    let is_ptc = service.peer_info().is_some_and(|i| i.server_info.as_ref().is_some_and(|s| s.name == OUR_SERVER_NAME));
    if is_ptc {
        return Err(Fault::new(
            "self_upstream",
            format!(
                "{what} answered `initialize` as the ptc MCP server itself; an aggregator cannot aggregate ptc \
                 (remove this upstream, and give its tools to ptc as upstreams directly)"
            ),
        ));
    }
    Ok(())
}

/// Kills a starting child's process group unless disarmed: a handshake that fails, times
/// out or is abandoned (shutdown during start) never leaves the child running.
struct StartGuard {
    pid: Option<u32>,
    kill: CancellationToken,
    armed: bool,
}

impl Drop for StartGuard {
    fn drop(&mut self) {
        if self.armed {
            self.kill.cancel();
            kill_group(self.pid);
        }
    }
}

/// A live connection to one MCP upstream.
pub(crate) struct McpConn {
    service: RunningService<RoleClient, ()>,
    /// Cancelled when the child exited (stdio) — calls under way fail at once.
    dead: CancellationToken,
    /// Cancelled on drop: kills the child's process group.
    kill: CancellationToken,
    /// The stdio child's pid (its process group id).
    pid: Option<u32>,
}

impl Drop for McpConn {
    fn drop(&mut self) {
        self.kill.cancel();
        // also here, not only in the watcher task: at shutdown the runtime may drop the
        // task before it runs, and grandchildren (npx → node) share the group
        if self.pid.is_some() && !self.dead.is_cancelled() {
            kill_group(self.pid);
        }
    }
}

impl McpConn {
    /// True once the stdio child has exited.
    pub(crate) fn is_dead(&self) -> bool {
        self.dead.is_cancelled() || self.service.is_closed()
    }

    /// Lists every tool (all pages).
    pub(crate) async fn list_tools(&self, redactor: &Redactor) -> Result<Vec<ToolInfo>, Fault> {
        let tools = tokio::select! {
            r = self.service.peer().list_all_tools() => r.map_err(|e| service_fault(&e, "tools/list"))?,
            _ = self.dead.cancelled() => return Err(Fault::unavailable("the upstream process exited")),
        };
        Ok(tools
            .into_iter()
            .map(|t| {
                let mut input = Json::Object((*t.input_schema).clone());
                let mut output = t.output_schema.map(|o| Json::Object((*o).clone())).unwrap_or(Json::Null);
                let mut annotations = t.annotations.and_then(|a| serde_json::to_value(a).ok()).unwrap_or(Json::Null);
                redactor.scrub_json(&mut input);
                redactor.scrub_json(&mut output);
                redactor.scrub_json(&mut annotations);
                ToolInfo {
                    name: redactor.scrub(&t.name),
                    description: redactor.scrub(t.description.as_deref().unwrap_or("")),
                    input_schema: input,
                    output_schema: output,
                    annotations,
                    operation_id: None,
                }
            })
            .collect())
    }

    /// One `tools/call`.
    pub(crate) async fn call(&self, tool: &str, args: Map<String, Json>) -> Result<CallToolResult, Fault> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = Some(args);
        tokio::select! {
            r = self.service.peer().call_tool(params) => r.map_err(|e| service_fault(&e, "tools/call")),
            _ = self.dead.cancelled() => Err(Fault::unavailable("the upstream process exited during the call")),
        }
    }
}

/// Maps an rmcp error to a world fault.
fn service_fault(e: &ServiceError, what: &str) -> Fault {
    match e {
        ServiceError::McpError(err) => {
            Fault::new("upstream_error", format!("{what} failed with JSON-RPC error {}: {}", err.code.0, err.message))
        }
        ServiceError::Timeout { .. } => Fault::new("timeout", format!("{what} timed out")),
        other => transport_fault(&other.to_string(), what),
    }
}

/// Classifies a transport error text (HTTP status, auth) into a reason.
pub(crate) fn transport_fault(text: &str, what: &str) -> Fault {
    let t = text.to_ascii_lowercase();
    if t.contains("auth required")
        || t.contains("insufficient scope")
        || t.contains("http 401")
        || t.contains("http 403")
        || t.contains("401 unauthorized")
        || t.contains("403 forbidden")
    {
        Fault::new("auth_failed", format!("{what}: the upstream refused the credentials (HTTP 401/403)"))
    } else if t.contains("exceeded the maximum size") || t.contains("line over the frame cap") {
        Fault::new("response_too_large", format!("{what}: the upstream's answer is over the size cap"))
    } else if t.contains("http 429") {
        Fault::new("rate_limited", format!("{what}: the upstream is rate limiting (HTTP 429)"))
    } else {
        Fault::unavailable(format!("{what}: {text}"))
    }
}

/// Fails the read once a single line (one JSON-RPC message) grows past `cap` bytes, so an
/// upstream cannot make the client buffer an unbounded message.
struct FrameCap<R> {
    inner: R,
    since_newline: usize,
    cap: usize,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for FrameCap<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let polled = std::pin::Pin::new(&mut this.inner).poll_read(cx, buf);
        if let std::task::Poll::Ready(Ok(())) = &polled {
            let mut over = false;
            for &b in &buf.filled()[before..] {
                this.since_newline = if b == b'\n' { 0 } else { this.since_newline + 1 };
                over |= this.since_newline > this.cap;
            }
            if over {
                // an error must not leave bytes behind in the caller's buffer
                buf.set_filled(before);
                return std::task::Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("an upstream message line over the frame cap ({} bytes)", this.cap),
                )));
            }
        }
        polled
    }
}

/// The largest single message a stdio upstream may send: room for a capped result and
/// for large `tools/list` answers.
fn frame_cap(max_response_bytes: usize) -> usize {
    max_response_bytes.saturating_mul(2).max(8 * 1024 * 1024)
}

/// Lines of a child's stderr kept for the error that says why it failed.
const STDERR_TAIL_LINES: usize = 5;

/// Starts a stdio child (the upstream called `name`) and completes the MCP handshake. Its
/// stderr is logged at `info`, tagged with `name`; the last lines of it go into the error
/// when the child does not come up.
pub(crate) async fn connect_stdio(name: &str, cfg: &StdioConfig, redactor: &Redactor) -> Result<McpConn, Fault> {
    let mut cmd = tokio::process::Command::new(&cfg.command);
    cmd.args(&cfg.args).env_clear();
    for k in INHERITED_ENV {
        if let Some(v) = std::env::var_os(k) {
            cmd.env(k, v);
        }
    }
    cmd.envs(&cfg.env);
    let depth = std::env::var(NESTING_ENV).ok().and_then(|d| d.trim().parse::<u32>().ok()).unwrap_or(0);
    cmd.env(NESTING_ENV, depth.saturating_add(1).to_string());
    if let Some(d) = &cfg.cwd {
        cmd.current_dir(d);
    }
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd
        .spawn()
        .map_err(|e| Fault::unavailable(format!("upstream '{name}': cannot start `{}`: {e}", cfg.command)))?;
    let pid = child.id();
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(Fault::unavailable("the child's stdio could not be captured"));
    };
    let kill = CancellationToken::new();
    let mut guard = StartGuard { pid, kill: kill.clone(), armed: true };
    let stdout = FrameCap { inner: stdout, since_newline: 0, cap: frame_cap(cfg.max_response_bytes) };
    // the last lines the child wrote to stderr (scrubbed, cut): why it exited, if it says
    let tail: std::sync::Arc<std::sync::Mutex<std::collections::VecDeque<String>>> = std::sync::Arc::default();
    let mut stderr_reader: Option<tokio::task::JoinHandle<()>> = None;
    if let Some(stderr) = child.stderr.take() {
        let upstream = name.to_string();
        let redactor = redactor.clone();
        let tail = tail.clone();
        stderr_reader = Some(tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            let mut n = 0u32;
            while let Ok(Some(line)) = lines.next_line().await {
                let line = redactor.scrub(&line.chars().take(500).collect::<String>());
                // bounded: a chatty child cannot flood the logs
                if n < 200 {
                    tracing::info!(upstream = %upstream, "stderr: {line}");
                } else if n == 200 {
                    tracing::info!(upstream = %upstream, "stderr: further lines are not logged");
                }
                if !line.trim().is_empty()
                    && let Ok(mut t) = tail.lock()
                {
                    if t.len() == STDERR_TAIL_LINES {
                        t.pop_front();
                    }
                    t.push_back(line);
                }
                n = n.saturating_add(1);
            }
        }));
    }
    let said = || {
        let lines: Vec<String> = tail.lock().map(|t| t.iter().cloned().collect()).unwrap_or_default();
        if lines.is_empty() {
            "; it wrote nothing to stderr".to_string()
        } else {
            format!("; the last lines it wrote to stderr:\n  {}", lines.join("\n  "))
        }
    };
    let dead = CancellationToken::new();
    {
        let dead = dead.clone();
        let kill = kill.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = child.wait() => {}
                _ = kill.cancelled() => {
                    let _ = child.start_kill();
                    kill_group(pid);
                    let _ = child.wait().await;
                }
            }
            dead.cancel();
            // grandchildren (npx → node) share the group
            kill_group(pid);
        });
    }
    // every way out below but success kills the child (the guard), also when this future
    // is dropped half-way because the server is shutting down
    // the child's last words may still be in the pipe when it is gone: read them (briefly;
    // a grandchild may hold stderr open)
    let drain_stderr = |reader: Option<tokio::task::JoinHandle<()>>| async move {
        if let Some(reader) = reader {
            let _ = tokio::time::timeout(std::time::Duration::from_millis(500), reader).await;
        }
    };
    let handshake = tokio::select! {
        r = tokio::time::timeout(cfg.handshake_timeout, ().serve((stdout, stdin))) => r,
        _ = dead.cancelled() => {
            drain_stderr(stderr_reader).await;
            return Err(Fault::unavailable(format!(
                "upstream '{name}' (`{}`) exited during the MCP handshake{}",
                cfg.command,
                said()
            )));
        }
    };
    match handshake {
        Ok(Ok(service)) => {
            refuse_ourselves(&service, &format!("`{}`", cfg.command))?;
            guard.armed = false;
            Ok(McpConn { service, dead, kill, pid })
        }
        Ok(Err(e)) => {
            drain_stderr(stderr_reader).await;
            Err(Fault::unavailable(format!(
                "the MCP handshake with upstream '{name}' (`{}`) failed: {e}{}",
                cfg.command,
                said()
            )))
        }
        Err(_) => Err(Fault::unavailable(format!(
            "upstream '{name}' (`{}`) did not complete the MCP handshake within {} ms; raise its handshake_timeout_ms \
             (a first `npx -y` download can take a minute){}",
            cfg.command,
            cfg.handshake_timeout.as_millis(),
            said()
        ))),
    }
}

/// Kills a process group by its leader's pid (the child was started as a group leader).
fn kill_group(pid: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = pid {
        // no libc/unsafe in this workspace: the kill(1) utility signals the group
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    #[cfg(not(unix))]
    let _ = pid;
}

/// Installs the ring crypto provider for rustls once (reqwest is built without one).
pub(crate) fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// The headers an HTTP upstream sends: static ones, then auth emitters.
pub(crate) fn build_headers(common: &HttpCommon, secrets: &Resolved) -> Result<reqwest::header::HeaderMap, String> {
    use base64::Engine as _;
    use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
    let mut h = HeaderMap::new();
    for (k, v) in &common.static_headers {
        let name = HeaderName::from_bytes(k.as_bytes()).map_err(|_| format!("invalid header name {k}"))?;
        let value = HeaderValue::from_str(v).map_err(|_| format!("invalid value for header {k}"))?;
        h.insert(name, value);
    }
    for e in &common.auth {
        let Some(secret) = secrets.get(&e.binding) else {
            return Err(format!("credential '{}' is not resolved", e.binding));
        };
        let (name, value) = match &e.scheme {
            super::config::AuthScheme::Bearer => (AUTHORIZATION, format!("Bearer {}", secret.expose())),
            super::config::AuthScheme::Basic => {
                let Some(pair) = super::secrets::basic_pair(secret.expose()) else {
                    return Err(format!(
                        "credential '{}' is not `user:pass` or {{\"user\": ..., \"pass\": ...}} as basic auth needs",
                        e.binding
                    ));
                };
                (AUTHORIZATION, format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair)))
            }
            super::config::AuthScheme::CustomHeader(hn) | super::config::AuthScheme::ApiKey(hn) => (
                HeaderName::from_bytes(hn.as_bytes()).map_err(|_| format!("invalid header name {hn}"))?,
                secret.expose().to_string(),
            ),
        };
        let mut value = HeaderValue::from_str(&value)
            .map_err(|_| format!("credential '{}' holds characters a header cannot carry", e.binding))?;
        value.set_sensitive(true);
        h.insert(name, value);
    }
    Ok(h)
}

/// A reqwest client carrying the upstream's headers.
pub(crate) fn http_client(common: &HttpCommon, secrets: &Resolved) -> Result<reqwest::Client, Fault> {
    install_crypto_provider();
    let headers = build_headers(common, secrets).map_err(Fault::unavailable)?;
    reqwest::Client::builder()
        .default_headers(headers)
        .connect_timeout(common.connect_timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| Fault::unavailable(format!("cannot build the HTTP client: {e}")))
}

/// Connects to a Streamable HTTP MCP server and completes the handshake.
pub(crate) async fn connect_http(cfg: &HttpConfig, secrets: &Resolved) -> Result<McpConn, Fault> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let client = http_client(&cfg.common, secrets)?;
    let transport = StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(cfg.url.clone()),
    );
    match tokio::time::timeout(cfg.handshake_timeout, ().serve(transport)).await {
        // a remote ptc over HTTP is a service like any other (no process nests)
        Ok(Ok(service)) => {
            Ok(McpConn { service, dead: CancellationToken::new(), kill: CancellationToken::new(), pid: None })
        }
        Ok(Err(e)) => Err(transport_fault(&e.to_string(), "the MCP handshake")),
        Err(_) => Err(Fault::unavailable(format!(
            "no MCP handshake within {} ms (handshake_timeout_ms)",
            cfg.handshake_timeout.as_millis()
        ))),
    }
}

/// Size of a result as JSON, bytes (what `result_bytes` and the response cap measure).
pub(crate) fn result_bytes(r: &CallToolResult) -> usize {
    serde_json::to_vec(r).map(|v| v.len()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::config::{AuthEmitter, AuthScheme, DEFAULT_CONNECT};
    use crate::upstream::secrets::Secret;

    fn common(auth: Vec<AuthEmitter>) -> HttpCommon {
        HttpCommon {
            auth,
            static_headers: vec![("X-Tenant".into(), "acme".into())],
            allow_insecure_http: false,
            allow_insecure_auth: false,
            request_timeout: None,
            connect_timeout: DEFAULT_CONNECT,
            max_response_bytes: 1,
        }
    }

    fn secrets(pairs: &[(&str, &str)]) -> Resolved {
        pairs.iter().map(|(k, v)| (k.to_string(), Secret::for_tests(v))).collect()
    }

    #[test]
    fn auth_emitters_build_their_headers() {
        let e = |scheme, binding: &str| AuthEmitter { scheme, binding: binding.into() };
        let s = secrets(&[("tok", "abc123"), ("up", "{\"user\":\"u\",\"pass\":\"p\"}"), ("key", "k-1")]);
        let h = build_headers(&common(vec![e(AuthScheme::Bearer, "tok")]), &s).unwrap();
        assert_eq!(h["authorization"], "Bearer abc123");
        assert!(h["authorization"].is_sensitive());
        assert_eq!(h["x-tenant"], "acme");
        let h = build_headers(&common(vec![e(AuthScheme::Basic, "up")]), &s).unwrap();
        assert_eq!(h["authorization"], "Basic dTpw");
        let h = build_headers(&common(vec![e(AuthScheme::ApiKey("X-Api-Key".into()), "key")]), &s).unwrap();
        assert_eq!(h["x-api-key"], "k-1");
        let h = build_headers(&common(vec![e(AuthScheme::CustomHeader("X-Token".into()), "key")]), &s).unwrap();
        assert_eq!(h["x-token"], "k-1");
        let err = build_headers(&common(vec![e(AuthScheme::Basic, "tok")]), &s).unwrap_err();
        assert!(err.contains("basic auth needs") && !err.contains("abc123"), "{err}");
    }

    #[test]
    fn transport_errors_are_classified() {
        assert_eq!(transport_fault("Auth required", "x").reason, "auth_failed");
        assert_eq!(transport_fault("unexpected server response: HTTP 403 Forbidden: no", "x").reason, "auth_failed");
        assert_eq!(transport_fault("HTTP 429", "x").reason, "rate_limited");
        assert_eq!(transport_fault("connection refused", "x").reason, "upstream_unavailable");
        assert_eq!(
            transport_fault("HTTP response body exceeded the maximum size of 10 bytes", "x").reason,
            "response_too_large"
        );
    }

    #[tokio::test]
    async fn a_line_over_the_frame_cap_fails_the_read() {
        use tokio::io::AsyncReadExt;
        let data: &[u8] = b"short\nthis line is far too long\n";
        let mut r = FrameCap { inner: data, since_newline: 0, cap: 10 };
        let mut out = Vec::new();
        let err = r.read_to_end(&mut out).await.unwrap_err();
        assert!(err.to_string().contains("over the frame cap"), "{err}");
        let mut ok = FrameCap { inner: &b"a\nb\n"[..], since_newline: 0, cap: 10 };
        let mut out = Vec::new();
        ok.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, b"a\nb\n");
    }
}
