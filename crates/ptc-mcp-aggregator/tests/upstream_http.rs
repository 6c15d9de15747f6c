//! HTTP upstreams on 127.0.0.1: this crate's own MCP server over Streamable HTTP (with
//! bearer auth) as an `mcp_http` upstream, and a loopback JSON service as an `openapi`
//! upstream with the committed schema `fixtures/upstreams/orders.openapi.json`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::time::Duration;

use axum::extract::{Path as AxPath, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use ptc_lisp_eval::{Cancel, Engine, Limits, RunInput};
use ptc_mcp_aggregator::upstream::{SnapshotMode, UpstreamOptions, UpstreamRuntime, config};
use ptc_mcp_aggregator::{McpConfig, NoUpstreams, PtcServer};
use serde_json::json;

const TOKEN: &str = "a-bearer-token-of-at-least-32-characters-xyz";

fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/upstreams/orders.openapi.json")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Waits (bounded) until something accepts connections on `addr`.
fn wait_listening(addr: SocketAddr) {
    for _ in 0..500 {
        if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(20)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("nothing listens on {addr}");
}

/// A runtime kept alive for the test's servers.
fn server_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn start_mcp_http(rt: &tokio::runtime::Runtime) -> SocketAddr {
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let config = McpConfig { http_auth_token: Some(TOKEN.into()), ..McpConfig::default() };
    let server = PtcServer::new(config.clone(), std::sync::Arc::new(NoUpstreams));
    let shutdown = tokio_util::sync::CancellationToken::new();
    rt.spawn(async move {
        let _ = ptc_mcp_aggregator::serve_http(server, &config, addr, shutdown).await;
    });
    wait_listening(addr);
    addr
}

fn authorized(h: &HeaderMap) -> bool {
    h.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"))
}

#[derive(serde::Deserialize)]
struct OrdersQuery {
    status: Option<String>,
    limit: Option<usize>,
}

fn start_orders_service(rt: &tokio::runtime::Runtime) -> SocketAddr {
    let orders = |h: HeaderMap, Query(q): Query<OrdersQuery>| async move {
        if !authorized(&h) {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        let all: Vec<serde_json::Value> = (1..=10)
            .map(|i| json!({"id": i, "status": if i % 3 == 0 { "paid" } else { "open" }, "amount": i * 10}))
            .filter(|o| q.status.as_deref().is_none_or(|s| o["status"] == s))
            .take(q.limit.unwrap_or(100))
            .collect();
        axum::Json(all).into_response()
    };
    let one = |h: HeaderMap, AxPath(id): AxPath<u64>| async move {
        if !authorized(&h) {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        if id > 10 {
            return (StatusCode::NOT_FOUND, "no such order").into_response();
        }
        axum::Json(json!({"id": id, "status": "open"})).into_response()
    };
    let export = || async { axum::Json(json!({"blob": "x".repeat(200_000)})) };
    let ping = || async { StatusCode::NO_CONTENT };
    let app = axum::Router::new()
        .route("/orders", get(orders))
        .route("/orders/{id}", get(one))
        .route("/export", get(export))
        .route("/ping", get(ping));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move {
        let l = tokio::net::TcpListener::from_std(listener).unwrap();
        let _ = axum::serve(l, app).await;
    });
    addr
}

fn start_runtime(text: &str, options: UpstreamOptions) -> Result<(tempfile::TempDir, UpstreamRuntime), String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("upstreams.json");
    std::fs::write(&path, text).unwrap();
    let none = |_: &str| None;
    let cfg = config::load(&path, &none).map_err(|e| e.to_string())?;
    let rt = UpstreamRuntime::start(&cfg, options, &none).map_err(|e| e.to_string())?;
    Ok((dir, rt))
}

fn eval(rt: &UpstreamRuntime, program: &str) -> String {
    let host = rt.program_host();
    let out = Engine::new(Limits { timeout: Duration::from_secs(20), ..Limits::default() }).eval(
        program,
        RunInput::new(),
        &host,
        &Cancel::new(),
    );
    assert!(out.is_ok(), "{program}: {:?}", out.result);
    out.printed
}

fn mcp_http_config(addr: SocketAddr, token: &str) -> String {
    json!({
        "credentials": {"tok": {"source": "literal", "value": token}},
        "upstreams": {"inner": {
            "transport": "mcp_http", "url": format!("http://{addr}/mcp"),
            "allow_insecure_http": true, "allow_insecure_auth": true,
            "auth": [{"scheme": "bearer", "binding": "tok"}],
            "static_headers": {"X-MCP-Readonly": "true"}
        }}
    })
    .to_string()
}

#[test]
fn mcp_http_upstream_with_bearer_auth() {
    let servers = server_runtime();
    let addr = start_mcp_http(&servers);
    let (_d, rt) = start_runtime(&mcp_http_config(addr, TOKEN), UpstreamOptions::default()).unwrap();
    assert_eq!(
        eval(
            &rt,
            r#"(let [r (tool/call {:server "inner" :tool "lisp_eval" :args {:program "(+ 40 2)"}})] [(:ok r) (:value_kind r) (:value r)])"#
        ),
        "[true :text \"user=> 42\"]"
    );
    // the token never reaches the program, the catalog or the ledger
    assert!(!rt.catalog_text().contains(TOKEN));
    let doc = eval(&rt, r#"(doc "inner/lisp_eval")"#);
    assert!(doc.contains("Args: {:program string :context object? :output_schema object?}"), "{doc}");
}

#[test]
fn a_wrong_token_is_auth_failed() {
    let servers = server_runtime();
    let addr = start_mcp_http(&servers);
    let wrong = "the-wrong-token-of-at-least-32-characters-abc";
    let err = start_runtime(&mcp_http_config(addr, wrong), UpstreamOptions::default()).err().unwrap();
    assert!(err.contains("could not start (auth_failed)"), "{err}");
    assert!(!err.contains(wrong), "{err}");
    let (_d, rt) = start_runtime(
        &mcp_http_config(addr, wrong),
        UpstreamOptions { snapshot: SnapshotMode::Live, ..UpstreamOptions::default() },
    )
    .unwrap();
    let out = eval(
        &rt,
        r#"(let [r (tool/call {:server "inner" :tool "lisp_eval" :args {:program "1"}})] [(:reason r) (:message r)])"#,
    );
    assert!(out.starts_with("[:auth_failed"), "{out}");
    assert!(!out.contains(wrong), "{out}");
}

fn openapi_config(addr: SocketAddr, token: &str, ops: &[&str], cap: usize) -> String {
    let overrides =
        if ops.contains(&"list_orders") { json!({"list_orders": {"default_args": {"limit": 50}}}) } else { json!({}) };
    json!({
        "credentials": {"tok": {"source": "literal", "value": token}},
        "upstreams": {"orders": {
            "transport": "openapi", "base_url": format!("http://{addr}"),
            "schema_file": schema_path(), "allow_insecure_http": true, "allow_insecure_auth": true,
            "auth": [{"scheme": "bearer", "binding": "tok"}],
            "include_operations": ops, "max_response_bytes": cap,
            "operation_overrides": overrides
        }}
    })
    .to_string()
}

#[test]
fn openapi_get_operations_are_tools() {
    let servers = server_runtime();
    let addr = start_orders_service(&servers);
    let ops = ["list_orders", "getOrder", "export_all", "ping"];
    let (_d, rt) = start_runtime(&openapi_config(addr, TOKEN, &ops, 100_000), UpstreamOptions::default()).unwrap();
    assert_eq!(
        eval(
            &rt,
            r#"(->> (tool/call {:server "orders" :tool "list_orders" :args {:status "paid"}}) :value (map #(get % "id")))"#
        ),
        "[3 6 9]"
    );
    // operationId normalised to a tool name, original kept in meta
    assert_eq!(
        eval(&rt, r#"(get-in (tool/call {:server "orders" :tool "get_order" :args {:id 4}}) [:value "id"])"#),
        "4"
    );
    assert_eq!(eval(&rt, r#"(get-in (meta 'orders/get_order) ["_ptc" "operationId"])"#), "\"getOrder\"");
    assert_eq!(
        eval(&rt, r#"(:reason (tool/call {:server "orders" :tool "get_order" :args {:id 99}}))"#),
        ":upstream_error"
    );
    assert_eq!(eval(&rt, r#"(:reason (tool/call {:server "orders" :tool "export_all"}))"#), ":response_too_large");
    assert_eq!(eval(&rt, r#"(tool/call {:server "orders" :tool "ping"})"#), "{:ok true :value nil :value_kind :none}");
    let doc = eval(&rt, r#"(doc "orders/list_orders")"#);
    assert!(doc.contains("Args: {:limit integer? :status enum<string>?}"), "{doc}");
    // excluded operations are not tools
    let out = Engine::new(Limits::default()).eval(
        r#"(tool/call {:server "orders" :tool "create_order"})"#,
        RunInput::new(),
        &rt.program_host(),
        &Cancel::new(),
    );
    assert!(out.error().is_some_and(|e| e.message.contains("no tool 'create_order' in upstream 'orders'")));
    let bad = Engine::new(Limits::default()).eval(
        r#"(tool/call {:server "orders" :tool "get_order" :args {:nope 1}})"#,
        RunInput::new(),
        &rt.program_host(),
        &Cancel::new(),
    );
    assert!(bad.error().is_some_and(|e| e.message.contains("unknown argument 'nope'")), "{:?}", bad.result);
}

#[test]
fn openapi_wrong_token_and_rejected_operations() {
    let servers = server_runtime();
    let addr = start_orders_service(&servers);
    let (_d, rt) = start_runtime(
        &openapi_config(addr, "wrong-token-value", &["list_orders"], 100_000),
        UpstreamOptions::default(),
    )
    .unwrap();
    assert_eq!(eval(&rt, r#"(:reason (tool/call {:server "orders" :tool "list_orders"}))"#), ":auth_failed");
    let err =
        start_runtime(&openapi_config(addr, TOKEN, &["create_order"], 1000), UpstreamOptions::default()).err().unwrap();
    assert!(err.contains("upstream 'orders', field `include_operations`: operation 'create_order' is POST"), "{err}");
    let err =
        start_runtime(&openapi_config(addr, TOKEN, &["tenant_info"], 1000), UpstreamOptions::default()).err().unwrap();
    assert!(err.contains("header parameter 'X-Tenant'"), "{err}");
    let err = start_runtime(&openapi_config(addr, TOKEN, &["nope"], 1000), UpstreamOptions::default()).err().unwrap();
    assert!(err.contains("no operation with operationId 'nope'"), "{err}");
}

#[test]
fn the_schema_size_cap_fires() {
    let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let mut cfg: serde_json::Value = serde_json::from_str(&openapi_config(addr, TOKEN, &["ping"], 1000)).unwrap();
    cfg["upstreams"]["orders"]["schema_max_bytes"] = json!(100);
    let err = start_runtime(&cfg.to_string(), UpstreamOptions::default()).err().unwrap();
    assert!(
        err.contains("field `schema_file`")
            && err.contains("larger than the 100-byte limit of the schema file")
            && err.contains("raise the upstream's schema_max_bytes"),
        "{err}"
    );
}

#[test]
fn a_schema_url_that_never_answers_fails_start_within_request_timeout_ms() {
    // a server that accepts connections and never answers (held open until the test ends)
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    let held = std::thread::spawn(move || silent.accept().map(|(conn, _)| conn));
    let mut cfg: serde_json::Value = serde_json::from_str(&openapi_config(addr, TOKEN, &["ping"], 1000)).unwrap();
    let orders = &mut cfg["upstreams"]["orders"];
    orders.as_object_mut().unwrap().remove("schema_file");
    orders["schema_url"] = json!(format!("http://{addr}/openapi.json"));
    orders["request_timeout_ms"] = json!(400);
    let started = std::time::Instant::now();
    let err = start_runtime(&cfg.to_string(), UpstreamOptions::default()).err().unwrap();
    assert!(err.contains("field `schema_url`") && err.contains("did not arrive within 400 ms"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "not a fixed 30 s: {:?}", started.elapsed());
    drop(held.join());
}
