//! Read-only JSON HTTP APIs as upstream tools, compiled from an OpenAPI document.
//!
//! Only the `GET` operations listed in `include_operations` become tools. Operations
//! with a request body or with header/cookie parameters are refused at load (their
//! parameters could carry secrets or side effects the aggregator cannot reason about).
//! Successful responses must be JSON or an empty 204.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value as Json, json};

use super::config::{AuthEmitter, OpenApiConfig, SchemaSource};
use super::fault::Fault;
use super::secrets::{Redactor, Resolved};
use super::{Called, ToolInfo};

/// How long fetching a `schema_url` may take when the upstream sets no `request_timeout_ms`.
const SCHEMA_FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// Why an OpenAPI upstream could not be loaded.
#[derive(Debug, Clone)]
pub(crate) struct LoadError {
    /// The config field at fault.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn lerr(field: &str, message: impl Into<String>) -> LoadError {
    LoadError { field: field.to_string(), message: message.into() }
}

#[derive(Debug, Clone, PartialEq)]
enum Location {
    Path,
    Query,
}

#[derive(Debug, Clone)]
struct Param {
    name: String,
    location: Location,
    required: bool,
}

#[derive(Debug, Clone)]
struct Operation {
    tool: String,
    path: String,
    params: Vec<Param>,
    defaults: Map<String, Json>,
}

/// A loaded OpenAPI upstream.
pub(crate) struct Service {
    name: String,
    base_url: String,
    config: OpenApiConfig,
    client: reqwest::Client,
    ops: Vec<Operation>,
    tools: Vec<ToolInfo>,
}

/// `listOrders` → `list_orders`; names that are already valid stay as they are.
pub(super) fn tool_name(operation_id: &str) -> String {
    let valid = operation_id.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && operation_id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !operation_id.chars().any(|c| c.is_ascii_uppercase());
    if valid {
        return operation_id.to_string();
    }
    let mut out = String::new();
    let mut prev_lower = false;
    for c in operation_id.chars() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && prev_lower {
                out.push('_');
            }
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            out.push(c.to_ascii_lowercase());
        } else {
            if !out.ends_with('_') {
                out.push('_');
            }
            prev_lower = false;
        }
    }
    let trimmed = out.trim_matches('_').to_string();
    if trimmed.chars().next().is_some_and(|c| c.is_ascii_digit()) { format!("op_{trimmed}") } else { trimmed }
}

fn resolve_ref<'a>(doc: &'a Json, v: &'a Json) -> &'a Json {
    if let Some(r) = v.get("$ref").and_then(Json::as_str)
        && let Some(ptr) = r.strip_prefix('#')
    {
        return doc.pointer(ptr).unwrap_or(v);
    }
    v
}

async fn read_capped(resp: reqwest::Response, cap: usize) -> Result<Vec<u8>, Fault> {
    let mut resp = resp;
    if let Some(len) = resp.content_length()
        && len as usize > cap
    {
        return Err(Fault::new("response_too_large", format!("the response is {len} bytes, over the {cap}-byte cap")));
    }
    let mut body = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(c)) => {
                if body.len() + c.len() > cap {
                    return Err(Fault::new(
                        "response_too_large",
                        format!("the response is over the {cap}-byte cap (max_response_bytes)"),
                    ));
                }
                body.extend_from_slice(&c);
            }
            Ok(None) => return Ok(body),
            Err(e) => return Err(Fault::unavailable(format!("reading the response failed: {}", e.without_url()))),
        }
    }
}

impl Service {
    /// Loads the document and compiles the included operations.
    pub(crate) async fn load(
        name: &str,
        config: &OpenApiConfig,
        secrets: Arc<Resolved>,
        redactor: Redactor,
    ) -> Result<Service, LoadError> {
        let client = super::mcp_client::http_client(&config.common, &secrets).map_err(|f| lerr("auth", f.message))?;
        let bytes = match &config.schema {
            SchemaSource::File(p) => {
                let max = u64::try_from(config.schema_max_bytes).unwrap_or(u64::MAX);
                ptc_files::Limit::new("the schema file", max)
                    .raise_with("raise the upstream's schema_max_bytes")
                    .read(p)
                    .map_err(|e| lerr("schema_file", e.to_string()))?
            }
            SchemaSource::Url(u) => {
                // the whole fetch, body included, within the upstream's request_timeout_ms
                let limit = config.common.request_timeout.unwrap_or(SCHEMA_FETCH_TIMEOUT);
                let fetch = async {
                    let resp = client.get(u).send().await.map_err(|e| {
                        lerr("schema_url", redactor.scrub(&format!("cannot fetch the schema: {}", e.without_url())))
                    })?;
                    if !resp.status().is_success() {
                        return Err(lerr(
                            "schema_url",
                            format!("fetching the schema answered HTTP {}", resp.status().as_u16()),
                        ));
                    }
                    read_capped(resp, config.schema_max_bytes).await.map_err(|f| lerr("schema_url", f.message))
                };
                tokio::time::timeout(limit, fetch).await.map_err(|_| {
                    lerr(
                        "schema_url",
                        format!(
                            "the schema did not arrive within {} ms (request_timeout_ms, default {} ms)",
                            limit.as_millis(),
                            SCHEMA_FETCH_TIMEOUT.as_millis()
                        ),
                    )
                })??
            }
        };
        let field = match config.schema {
            SchemaSource::File(_) => "schema_file",
            SchemaSource::Url(_) => "schema_url",
        };
        let doc: Json = serde_json::from_slice(&bytes).map_err(|e| {
            lerr(field, format!("the OpenAPI document is not JSON ({e}); YAML documents are not supported"))
        })?;
        let paths =
            doc.get("paths").and_then(Json::as_object).ok_or_else(|| lerr(field, "the document has no \"paths\""))?;
        let mut ops = Vec::new();
        let mut tools = Vec::new();
        for op_id in &config.include_operations {
            let mut found = None;
            for (path, item) in paths {
                let Some(item) = item.as_object() else { continue };
                for (method, op) in item {
                    if op.get("operationId").and_then(Json::as_str) == Some(op_id.as_str()) {
                        found = Some((path.clone(), method.clone(), op.clone(), item.get("parameters").cloned()));
                    }
                }
            }
            let Some((path, method, op, path_params)) = found else {
                return Err(lerr(
                    "include_operations",
                    format!("no operation with operationId '{op_id}' in the document"),
                ));
            };
            if method != "get" {
                return Err(lerr(
                    "include_operations",
                    format!("operation '{op_id}' is {}; only GET operations can be exposed", method.to_uppercase()),
                ));
            }
            if op.get("requestBody").is_some() {
                return Err(lerr(
                    "include_operations",
                    format!("operation '{op_id}' has a request body; it cannot be exposed"),
                ));
            }
            let mut params = Vec::new();
            let mut props = Map::new();
            let mut required = Vec::new();
            let all = path_params
                .as_ref()
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
                .chain(op.get("parameters").and_then(Json::as_array).into_iter().flatten());
            for p in all {
                let p = resolve_ref(&doc, p);
                let pname = p.get("name").and_then(Json::as_str).unwrap_or("").to_string();
                let location = match p.get("in").and_then(Json::as_str) {
                    Some("path") => Location::Path,
                    Some("query") => Location::Query,
                    Some(other) => {
                        return Err(lerr(
                            "include_operations",
                            format!(
                                "operation '{op_id}' takes a {other} parameter '{pname}'; header and cookie parameters are not supported"
                            ),
                        ));
                    }
                    None => {
                        return Err(lerr(
                            "include_operations",
                            format!("operation '{op_id}' has a parameter without \"in\""),
                        ));
                    }
                };
                if pname.is_empty() {
                    return Err(lerr(
                        "include_operations",
                        format!("operation '{op_id}' has a parameter without a name"),
                    ));
                }
                let req = location == Location::Path || p.get("required").and_then(Json::as_bool).unwrap_or(false);
                let mut schema = resolve_ref(&doc, p.get("schema").unwrap_or(&Json::Null)).clone();
                if let (Json::Object(s), Some(d)) = (&mut schema, p.get("description")) {
                    s.entry("description").or_insert(d.clone());
                }
                params.retain(|x: &Param| x.name != pname);
                params.push(Param { name: pname.clone(), location, required: req });
                props.insert(pname.clone(), if schema.is_null() { json!({}) } else { schema });
                if req && !required.contains(&Json::String(pname.clone())) {
                    required.push(Json::String(pname));
                }
            }
            let tool = tool_name(op_id);
            if tools.iter().any(|t: &ToolInfo| t.name == tool) {
                return Err(lerr("include_operations", format!("two operations become the tool name '{tool}'")));
            }
            let description =
                op.get("summary").or_else(|| op.get("description")).and_then(Json::as_str).unwrap_or("").to_string();
            let output_schema = op
                .pointer("/responses/200/content/application~1json/schema")
                .map(|s| resolve_ref(&doc, s).clone())
                .unwrap_or(Json::Null);
            let mut input_schema = json!({"type": "object", "properties": props, "required": required});
            redactor.scrub_json(&mut input_schema);
            tools.push(ToolInfo {
                name: tool.clone(),
                description: redactor.scrub(&description),
                input_schema,
                output_schema,
                annotations: json!({"readOnlyHint": true}),
                operation_id: Some(op_id.clone()),
            });
            ops.push(Operation {
                tool,
                path,
                params,
                defaults: config.operation_overrides.get(op_id).cloned().unwrap_or_default(),
            });
        }
        Ok(Service {
            name: name.to_string(),
            base_url: config.base_url.trim_end_matches('/').to_string(),
            config: config.clone(),
            client,
            ops,
            tools,
        })
    }

    /// The compiled tools.
    pub(crate) fn tools(&self) -> Vec<ToolInfo> {
        self.tools.clone()
    }

    pub(crate) fn request_timeout(&self) -> Option<Duration> {
        self.config.common.request_timeout
    }

    pub(crate) fn max_response_bytes(&self) -> usize {
        self.config.common.max_response_bytes
    }

    pub(crate) fn auth(&self) -> &[AuthEmitter] {
        &self.config.common.auth
    }

    /// One GET.
    pub(crate) async fn call(&self, tool: &str, args: Map<String, Json>, cap: usize) -> Result<Called, Fault> {
        let Some(op) = self.ops.iter().find(|o| o.tool == tool) else {
            return Err(Fault::new("invalid_args", format!("no tool '{tool}' in upstream '{}'", self.name)));
        };
        let mut merged = op.defaults.clone();
        merged.extend(args);
        for k in merged.keys() {
            if !op.params.iter().any(|p| &p.name == k) {
                let known: Vec<&str> = op.params.iter().map(|p| p.name.as_str()).collect();
                return Err(Fault::new(
                    "invalid_args",
                    format!(
                        "tool '{}.{tool}' rejected args: unknown argument '{k}'; it takes {}",
                        self.name,
                        known.join(", ")
                    ),
                ));
            }
        }
        let mut path = op.path.clone();
        let mut query = Vec::new();
        for p in &op.params {
            let v = merged.get(&p.name);
            let text = match v {
                None | Some(Json::Null) if p.required => {
                    return Err(Fault::new(
                        "invalid_args",
                        format!("tool '{}.{tool}' rejected args: missing required argument '{}'", self.name, p.name),
                    ));
                }
                None | Some(Json::Null) => continue,
                Some(Json::String(s)) => s.clone(),
                Some(Json::Array(items)) if p.location == Location::Query => {
                    for i in items {
                        let s = match i {
                            Json::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        query.push((p.name.clone(), s));
                    }
                    continue;
                }
                Some(other) => other.to_string(),
            };
            match p.location {
                Location::Path => path = path.replace(&format!("{{{}}}", p.name), &encode_segment(&text)),
                Location::Query => query.push((p.name.clone(), text)),
            }
        }
        let mut url = reqwest::Url::parse(&format!("{}{}", self.base_url, path))
            .map_err(|e| Fault::new("invalid_args", format!("the request URL is invalid: {e}")))?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query.iter());
        }
        let resp = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| Fault::unavailable(format!("the request failed: {}", e.without_url())))?;
        let status = resp.status().as_u16();
        let fault_for = |reason, m: String| Err(Fault::new(reason, m));
        match status {
            401 | 403 => {
                return fault_for("auth_failed", format!("HTTP {status}: the service refused the credentials"));
            }
            429 => return fault_for("rate_limited", "HTTP 429: the service is rate limiting".into()),
            204 => return Ok(Called { value: Json::Null, kind: "none", bytes: 0, http_status: Some(204) }),
            s if !(200..300).contains(&s) => {
                let body = read_capped(resp, 4096).await.unwrap_or_default();
                let text: String = String::from_utf8_lossy(&body).chars().take(300).collect();
                return fault_for("upstream_error", format!("HTTP {status}: {text}"));
            }
            _ => {}
        }
        let body = read_capped(resp, cap).await?;
        if body.is_empty() {
            return Ok(Called { value: Json::Null, kind: "none", bytes: 0, http_status: Some(status) });
        }
        let value: Json = serde_json::from_slice(&body)
            .map_err(|_| Fault::new("upstream_error", format!("HTTP {status}: the response is not JSON")))?;
        Ok(Called { value, kind: "json", bytes: body.len(), http_status: Some(status) })
    }
}

fn encode_segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(tool_name("list_orders"), "list_orders");
        assert_eq!(tool_name("listOrders"), "list_orders");
        assert_eq!(tool_name("get-trace.cost"), "get_trace_cost");
        assert_eq!(tool_name("2fa"), "op_2fa");
    }

    #[test]
    fn segments_are_encoded() {
        assert_eq!(encode_segment("a b/c"), "a%20b%2Fc");
    }
}
