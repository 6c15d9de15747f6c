//! A tiny MCP server over stdio for the aggregator's tests (a real child process, not a
//! mock): `echo`, `orders`, `slow`, `crash`, `big`, `fail`, `env`.
//!
//! Flags make it misbehave on purpose: `--never-list` answers `initialize` but never
//! `tools/list`; `--name NAME` answers `initialize` under another server name;
//! `--pid-file PATH` writes its pid there first.
//!
//! Not part of the product; it exists so that integration tests exercise rmcp's client
//! against a real process boundary.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Calls of `gate` under way, and the most seen at once.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
static MAX_IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value as Json, json};

#[derive(Clone)]
struct Fixture {
    name: String,
    never_list: bool,
}

fn tool(name: &'static str, description: &'static str, schema: Json) -> Tool {
    let Json::Object(schema) = schema else { return Tool::new(name, description, Arc::new(Map::new())) };
    Tool::new(name, description, Arc::new(schema))
}

fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s.into())])
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(self.name.clone(), "0.1.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        if self.never_list {
            std::future::pending::<()>().await;
        }
        Ok(ListToolsResult::with_all_items(vec![
            tool(
                "echo",
                "Echo the text back",
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            ),
            tool(
                "orders",
                "List orders as structured content",
                json!({"type": "object", "properties": {"n": {"type": "integer"}, "status": {"type": "string", "enum": ["open", "paid"]}}}),
            ),
            tool(
                "slow",
                "Answer after ms milliseconds",
                json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
            ),
            tool("crash", "Exit the process mid-call", json!({"type": "object", "properties": {}})),
            tool(
                "big",
                "Return a text of the given size",
                json!({"type": "object", "properties": {"bytes": {"type": "integer"}}, "required": ["bytes"]}),
            ),
            tool(
                "fail",
                "Always report a tool error",
                json!({"type": "object", "properties": {"message": {"type": "string"}}}),
            ),
            tool(
                "gate",
                "Wait ms milliseconds; answer the most gate calls seen in flight at once",
                json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
            ),
            tool(
                "env",
                "Read one environment variable of this process",
                json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        let int = |k: &str| args.get(k).and_then(Json::as_u64).unwrap_or(0);
        let s = |k: &str| args.get(k).and_then(Json::as_str).unwrap_or("").to_string();
        let result = match &*request.name {
            "echo" => text(s("text")),
            "orders" => {
                let n = args.get("n").and_then(Json::as_u64).unwrap_or(3);
                let items: Vec<Json> = (0..n)
                    .map(|i| json!({"id": i, "amount": 10 * i, "status": if i % 2 == 0 { "open" } else { "paid" }}))
                    .collect();
                let mut r = text(Json::Array(items.clone()).to_string());
                r.structured_content = Some(json!({"items": items}));
                r
            }
            "slow" => {
                tokio::time::sleep(std::time::Duration::from_millis(int("ms"))).await;
                text("done")
            }
            "gate" => {
                let now = IN_FLIGHT.fetch_add(1, Ordering::SeqCst) + 1;
                MAX_IN_FLIGHT.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(int("ms"))).await;
                IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
                text(MAX_IN_FLIGHT.load(Ordering::SeqCst).to_string())
            }
            "crash" => std::process::exit(3),
            "big" => text("x".repeat(int("bytes") as usize)),
            "fail" => CallToolResult::error(vec![ContentBlock::text(format!("failed: {}", s("message")))]),
            "env" => text(std::env::var(s("name")).unwrap_or_else(|_| "<unset>".into())),
            other => return Err(McpError::invalid_params(format!("unknown tool {other}"), None)),
        };
        Ok(CallToolResponse::Complete(result))
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    if let Some(path) = value("--pid-file") {
        let _ = std::fs::write(path, std::process::id().to_string());
    }
    let fixture = Fixture {
        name: value("--name").unwrap_or_else(|| "ptc-upstream-fixture".into()),
        never_list: args.iter().any(|a| a == "--never-list"),
    };
    if let Ok(service) = fixture.serve(rmcp::transport::stdio()).await {
        let _ = service.waiting().await;
    }
}
