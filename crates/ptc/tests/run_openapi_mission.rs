//! `ptc run --upstreams` against a loopback OpenAPI service (a plain HTTP server this test
//! runs on 127.0.0.1, described by `fixtures/upstreams/orders.openapi.json`), with
//! scripted models: a program joins the service's answers and the service sees the exact
//! requests; in text mode the model calls `orders__list_orders` natively and the call is
//! in the step's `upstream_calls`, its `ptc_metrics` and the trace; a service that is gone
//! is a tool error the mission survives.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;

use serde_json::{Value, json};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn scratch() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "ptc-openapi-mission-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn ptc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(args)
        .current_dir(root())
        .env_remove("PTC_UPSTREAMS")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The orders service: answers `GET /orders?...` and `GET /orders/{id}`, and reports each
/// request line (`GET /orders?status=open&limit=2`) on the channel.
fn orders_service() -> (u16, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut first = String::new();
            if reader.read_line(&mut first).unwrap_or(0) == 0 {
                continue;
            }
            loop {
                let mut l = String::new();
                if reader.read_line(&mut l).unwrap_or(0) == 0 || l == "\r\n" {
                    break;
                }
            }
            let target = first.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
            let _ = tx.send(target.clone());
            let body = if target.starts_with("GET /orders?") {
                json!([{"id": 7, "customer": "Acme", "total": 120.5}, {"id": 9, "customer": "Globex", "total": 80.0}])
            } else if let Some(id) = target.strip_prefix("GET /orders/") {
                json!({"id": id.parse::<u64>().unwrap_or(0), "items": 3})
            } else {
                json!({"error": "not found"})
            };
            let body = body.to_string();
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(resp.as_bytes());
        }
    });
    (port, rx)
}

fn upstreams(dir: &Path, port: u16) -> String {
    let schema = root().join("fixtures/upstreams/orders.openapi.json");
    let p = dir.join("upstreams.json");
    std::fs::write(
        &p,
        json!({"upstreams": {"orders": {
            "transport": "openapi", "base_url": format!("http://127.0.0.1:{port}"),
            "schema_file": schema, "allow_insecure_http": true,
            "include_operations": ["list_orders", "getOrder"]
        }}})
        .to_string(),
    )
    .unwrap();
    p.to_string_lossy().to_string()
}

fn script(dir: &Path, lines: &[Value]) -> String {
    let p = dir.join("script.jsonl");
    std::fs::write(&p, lines.iter().map(Value::to_string).collect::<Vec<_>>().join("\n") + "\n").unwrap();
    format!("script:{}", p.display())
}

#[test]
fn a_program_joins_a_loopback_openapi_service() {
    let dir = scratch();
    let (port, requests) = orders_service();
    let config = upstreams(&dir, port);
    let program = r#"(let [r (tool/call {:server "orders" :tool "list_orders" :args {:status "open" :limit 2}})
      big (first (filter #(> (:total %) 100) (:value r)))
      detail (tool/call {:server "orders" :tool "get_order" :args {:id (:id big)}})]
  (return {:customer (:customer big) :items (:items (:value detail))}))"#;
    let llm = script(&dir, &[json!({"content": format!("```clojure\n{program}\n```")})]);
    let trace = dir.join("trace.jsonl");
    let o = ptc(&[
        "run",
        "--upstreams",
        &config,
        "--prompt",
        "Which open order is over 100, and how many items has it?",
        "--llm",
        &llm,
        "--output",
        "json",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let step: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(step["return"], json!({"customer": "Acme", "items": 3}));
    // the service saw exactly these requests, in order
    let seen: Vec<String> = requests.try_iter().collect();
    assert_eq!(seen, ["GET /orders?status=open&limit=2", "GET /orders/7"]);
    let calls: Vec<(&str, &str)> = step["upstream_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["tool"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(calls, [("list_orders", "ok"), ("get_order", "ok")]);
    assert_eq!(step["ptc_metrics"]["upstream_call_count"], 2);
    let trace = std::fs::read_to_string(&trace).unwrap();
    assert!(trace.contains("\"event\":\"upstream_summary\""), "{trace}");
}

#[test]
fn native_calls_are_in_upstream_calls_metrics_and_the_trace() {
    let dir = scratch();
    let (port, requests) = orders_service();
    let config = upstreams(&dir, port);
    let llm = script(
        &dir,
        &[
            json!({"content": "", "tool_calls": [{"id": "c1", "name": "orders__list_orders", "args": {"status": "open"}}]}),
            json!({"content": "Acme and Globex have open orders."}),
        ],
    );
    let trace = dir.join("trace.jsonl");
    let o = ptc(&[
        "run",
        "--upstreams",
        &config,
        "--mode",
        "text",
        "--prompt",
        "Who has open orders?",
        "--llm",
        &llm,
        "--output",
        "json",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let step: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(requests.try_iter().collect::<Vec<_>>(), ["GET /orders?status=open"]);
    let calls = step["upstream_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{step}");
    assert_eq!(calls[0]["server"], "orders");
    assert_eq!(calls[0]["tool"], "list_orders");
    assert_eq!(calls[0]["exposure"], "native");
    assert_eq!(calls[0]["status"], "ok");
    assert!(calls[0]["result_bytes"].as_u64().unwrap() > 0);
    assert_eq!(step["ptc_metrics"]["upstream_call_count"], 1);
    assert_eq!(step["ptc_metrics"]["upstream_ok_count"], 1);
    let summary: Value = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .rfind(|e| e["event"] == "upstream_summary")
        .unwrap();
    assert_eq!(summary["upstream_calls"][0]["exposure"], "native", "{summary}");
}

#[test]
fn a_service_that_is_gone_is_a_tool_error_the_mission_survives() {
    let dir = scratch();
    // a port nobody listens on any more
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = upstreams(&dir, port);
    let llm = script(
        &dir,
        &[
            json!({"content": "", "tool_calls": [{"id": "c1", "name": "orders__list_orders", "args": {}}]}),
            json!({"content": "The orders service is down; I cannot tell."}),
        ],
    );
    let o = ptc(&[
        "run",
        "--upstreams",
        &config,
        "--mode",
        "text",
        "--prompt",
        "Open orders?",
        "--llm",
        &llm,
        "--output",
        "json",
    ]);
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let step: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(step["return"], json!("The orders service is down; I cannot tell."));
    let call = &step["upstream_calls"][0];
    assert_eq!(call["status"], "error", "{step}");
    assert_eq!(call["exposure"], "native");
    assert!(call["reason"].as_str().is_some_and(|r| !r.is_empty()), "{call}");
    assert_eq!(step["ptc_metrics"]["upstream_error_count"], 1);
    let tool_result = step["turns"][0]["tool_calls"][0].to_string();
    assert!(tool_result.contains("orders/list_orders failed"), "{tool_result}");
}
