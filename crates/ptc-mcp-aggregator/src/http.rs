//! Streamable HTTP transport: `/mcp` (rmcp's service), `/health`, `/ready`, with bearer
//! authentication (constant-time), failed-auth rate limiting, Host/Origin checks and a
//! body cap.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::config::McpConfig;
use crate::server::PtcServer;

/// Why the HTTP server could not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// Configuration refused (e.g. a non-loopback bind without a token).
    #[error("{0}")]
    Config(String),
    /// Socket errors.
    #[error("cannot serve HTTP: {0}")]
    Io(#[from] std::io::Error),
}

struct Guard {
    token: Option<String>,
    max_failures: u32,
    block: std::time::Duration,
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

fn unauthorized(challenge: &'static str) -> Response {
    let mut r = (StatusCode::UNAUTHORIZED, "unauthorized: send Authorization: Bearer <token>\n").into_response();
    r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    r
}

async fn auth(
    State(guard): State<Arc<Guard>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request,
    next: Next,
) -> Response {
    let Some(token) = &guard.token else { return next.run(req).await };
    let ip = peer.ip();
    if let Ok(map) = guard.failures.lock()
        && let Some((n, since)) = map.get(&ip)
        && *n >= guard.max_failures
    {
        let left = guard.block.saturating_sub(since.elapsed());
        if !left.is_zero() {
            let mut r = (StatusCode::TOO_MANY_REQUESTS, "too many failed authentication attempts\n").into_response();
            let secs = left.as_secs().max(1).to_string();
            if let Ok(v) = HeaderValue::from_str(&secs) {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
            return r;
        }
    }
    let presented =
        req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    let outcome = match presented {
        None => Err(unauthorized("Bearer")),
        Some(p) if same_secret(p.as_bytes(), token.as_bytes()) => Ok(()),
        Some(_) => Err(unauthorized("Bearer error=\"invalid_token\"")),
    };
    match outcome {
        Ok(()) => {
            if let Ok(mut map) = guard.failures.lock() {
                map.remove(&ip);
            }
            next.run(req).await
        }
        Err(resp) => {
            if let Ok(mut map) = guard.failures.lock() {
                let e = map.entry(ip).or_insert((0, Instant::now()));
                if e.1.elapsed() > guard.block {
                    *e = (0, Instant::now());
                }
                e.0 += 1;
                e.1 = Instant::now();
                if map.len() > 10_000 {
                    map.clear();
                }
            }
            resp
        }
    }
}

/// Serves until `shutdown` is cancelled. Loopback binds need no token; any other bind
/// requires a bearer token of at least 32 characters.
pub async fn serve_http(
    server: PtcServer,
    config: &McpConfig,
    addr: SocketAddr,
    shutdown: CancellationToken,
) -> Result<(), HttpError> {
    let loopback = addr.ip().is_loopback();
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
    let port = addr.port();
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into(), "[::1]".into()];
    for h in ["localhost", "127.0.0.1", "[::1]"] {
        hosts.push(format!("{h}:{port}"));
    }
    if !loopback {
        hosts.push(addr.ip().to_string());
        hosts.push(addr.to_string());
    }
    let mut origins: Vec<String> =
        ["http://localhost", "http://127.0.0.1", "http://[::1]"].iter().map(|o| format!("{o}:{port}")).collect();
    origins.extend(["http://localhost".to_string(), "http://127.0.0.1".to_string()]);
    origins.extend(config.http_allowed_origins.iter().cloned());
    let http_config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(config.max_frame_bytes)
        .with_cancellation_token(shutdown.clone());
    let factory_server = server.clone();
    let service = StreamableHttpService::new(
        move || Ok(factory_server.clone()),
        Arc::new(LocalSessionManager::default()),
        http_config,
    );
    let guard = Arc::new(Guard {
        token: config.http_auth_token.clone(),
        max_failures: config.http_auth_max_failures,
        block: config.http_auth_block,
        failures: Mutex::new(HashMap::new()),
    });
    let mcp = Router::new().route_service("/mcp", service).layer(middleware::from_fn_with_state(guard, auth));
    let app = Router::new()
        .route("/health", get(|| async { "ok\n" }))
        .route("/ready", get(|| async { "ready\n" }))
        .merge(mcp)
        .fallback(|| async { (StatusCode::NOT_FOUND, Body::from("not found: the MCP endpoint is /mcp\n")) });
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, "serving MCP over Streamable HTTP at /mcp");
    axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await?;
    server.begin_shutdown();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_comparison() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
        assert!(!same_secret(b"", b"a"));
    }
}
