//! Every config error names the file, the upstream (or credential) and the field.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use ptc_mcp_aggregator::upstream::config::{self, AuthScheme, Transport};

fn err(text: &str) -> String {
    let look = |v: &str| (v == "SET").then(|| "value".to_string());
    match config::parse(Path::new("upstreams.json"), text, &look) {
        Ok(_) => "OK".into(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn config_errors_teach() {
    let cases = [
        "[]",
        "{}",
        r#"{"upstreams": {}}"#,
        r#"{"upstreams": {"fs": {"command": "x"}}}"#,
        r#"{"upstreams": {"fs": {"transport": "stdio", "command": "x"}}}"#,
        r#"{"upstreams": {"fs": {"transport": "mcp_stdio"}}}"#,
        r#"{"upstreams": {"fs": {"transport": "mcp_stdio", "command": "x", "env": {"T": "${UNSET}"}}}}"#,
        r#"{"upstreams": {"fs": {"transport": "mcp_stdio", "command": "x", "url": "https://a"}}}"#,
        r#"{"upstreams": {"fs": {"transport": "mcp_stdio", "command": "x", "handshake_timeout_ms": -1}}}"#,
        r#"{"upstreams": {"gh": {"transport": "mcp_http", "url": "http://example.com/mcp"}}}"#,
        r#"{"credentials": {"t": {"source": "literal", "value": "x"}}, "upstreams": {"gh": {"transport": "mcp_http", "url": "http://127.0.0.1:1/mcp", "allow_insecure_http": true, "auth": [{"scheme": "bearer", "binding": "t"}]}}}"#,
        r#"{"upstreams": {"gh": {"transport": "mcp_http", "url": "https://a/mcp", "auth": [{"scheme": "bearer", "binding": "missing"}]}}}"#,
        r#"{"credentials": {"t": {"source": "literal", "value": "x"}}, "upstreams": {"gh": {"transport": "mcp_http", "url": "https://a/mcp", "auth": [{"scheme": "custom_header", "binding": "t", "header": "Authorization"}]}}}"#,
        r#"{"credentials": {"t": {"source": "literal", "value": "x"}}, "upstreams": {"gh": {"transport": "mcp_http", "url": "https://a/mcp", "auth": [{"scheme": "custom_header", "binding": "t", "header": "Bad Header"}]}}}"#,
        r#"{"upstreams": {"gh": {"transport": "mcp_http", "url": "https://a/mcp", "static_headers": {"Cookie": "a=b"}}}}"#,
        r#"{"upstreams": {"gh": {"transport": "mcp_http", "url": "https://a/mcp", "static_headers": {"Mcp-Session-Id": "1"}}}}"#,
        r#"{"credentials": {"t": {"source": "exec"}}, "upstreams": {"gh": {"transport": "mcp_http", "url": "https://a/mcp"}}}"#,
        r#"{"upstreams": {"api": {"transport": "openapi", "base_url": "https://a", "include_operations": ["x"]}}}"#,
        r#"{"upstreams": {"api": {"transport": "openapi", "base_url": "https://a", "schema_file": "s.json", "include_operations": []}}}"#,
        r#"{"upstreams": {"api": {"transport": "openapi", "base_url": "https://a", "schema_file": "s.json", "include_operations": ["x"], "operation_overrides": {"y": {}}}}}"#,
        r#"{"upstreams": {"9bad": {"transport": "mcp_stdio", "command": "x"}}}"#,
    ];
    let report: Vec<String> = cases.iter().map(|c| format!("{c}\n  -> {}", err(c))).collect();
    insta::assert_snapshot!("config_errors", report.join("\n\n"));
}

#[test]
fn a_full_config_parses() {
    let text = r#"{
      "credentials": {"tok": {"source": "env", "var": "GH"}, "basic": {"source": "literal", "value": "u:p"}},
      "upstreams": {
        "fs": {"transport": "mcp_stdio", "command": "npx", "args": ["-y", "x"], "env": {"A": "pre-${SET}"}, "cwd": "/tmp"},
        "gh": {"transport": "mcp_http", "url": "https://api.example/mcp", "auth": [{"scheme": "bearer", "binding": "tok"}, {"scheme": "api_key", "binding": "basic"}], "static_headers": {"X-MCP-Readonly": "true"}, "request_timeout_ms": 1000},
        "api": {"transport": "openapi", "base_url": "https://api.example", "schema_file": "api.json", "include_operations": ["list_orders"], "operation_overrides": {"list_orders": {"default_args": {"limit": 5}}}}
      }}"#;
    let look = |v: &str| (v == "SET").then(|| "value".to_string());
    let cfg = config::parse(Path::new("/etc/ptc/upstreams.json"), text, &look).unwrap();
    let Transport::Stdio(fs) = &cfg.upstreams["fs"].transport else { panic!("fs is stdio") };
    assert_eq!(fs.env["A"], "pre-value");
    let Transport::Http(gh) = &cfg.upstreams["gh"].transport else { panic!("gh is http") };
    assert_eq!(gh.common.auth[1].scheme, AuthScheme::ApiKey("X-Api-Key".into()));
    let Transport::OpenApi(api) = &cfg.upstreams["api"].transport else { panic!("api is openapi") };
    assert_eq!(api.schema, config::SchemaSource::File("/etc/ptc/api.json".into()));
    // a literal credential never shows in Debug output
    assert!(!format!("{:?}", cfg.credentials).contains("u:p"));
}
