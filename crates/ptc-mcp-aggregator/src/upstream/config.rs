//! `upstreams.json`: parsing with errors that name the file, the upstream and the field.
//!
//! Parsing is done by hand over `serde_json::Value` (not derive) so that every error can
//! say exactly which field is wrong and what to write instead, and so unknown fields are
//! rejected instead of silently ignored. Nothing here resolves credentials: bindings are
//! only named; `secrets.rs` resolves them once when the runtime starts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value as Json};

/// Default per-upstream response cap (2 MiB).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 2 * 1024 * 1024;
/// Default handshake (initialize + tools/list) timeout.
pub const DEFAULT_HANDSHAKE: Duration = Duration::from_millis(10_000);
/// Default HTTP connect timeout.
pub const DEFAULT_CONNECT: Duration = Duration::from_millis(5_000);

/// A configuration error: which file, which upstream (or credential), which field, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {place}: {message}", file = file.display())]
#[non_exhaustive]
pub struct ConfigError {
    /// The configuration file.
    pub file: PathBuf,
    /// `upstream 'fs', field `command`` or `credential 'gh'`...
    pub place: String,
    /// What is wrong and what to write instead.
    pub message: String,
}

/// The whole file.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct UpstreamsConfig {
    /// Where it was read from (relative `schema_file` paths are resolved against its directory).
    pub path: PathBuf,
    /// Named credential bindings.
    pub credentials: BTreeMap<String, CredentialSpec>,
    /// Upstreams by name.
    pub upstreams: BTreeMap<String, UpstreamConfig>,
}

/// Where a credential comes from (resolved once, at runtime start).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CredentialSource {
    /// An environment variable of the server process.
    Env(String),
    /// A file, read and trimmed of trailing whitespace.
    File(PathBuf),
    /// The value itself, in the config file.
    Literal(String),
}

/// One named credential.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CredentialSpec {
    /// Where its value comes from.
    pub source: CredentialSource,
    /// Informational (`bearer`...).
    pub scheme_hint: Option<String>,
}

impl std::fmt::Debug for CredentialSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let src = match &self.source {
            CredentialSource::Env(v) => format!("env {v}"),
            CredentialSource::File(p) => format!("file {}", p.display()),
            CredentialSource::Literal(_) => "literal [REDACTED]".to_string(),
        };
        f.debug_struct("CredentialSpec").field("source", &src).field("scheme_hint", &self.scheme_hint).finish()
    }
}

/// One upstream.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct UpstreamConfig {
    /// Its configured name (what programs pass as `:server`).
    pub name: String,
    /// Optional human description (shown by `(tool/servers)`).
    pub description: Option<String>,
    /// Transport and its settings.
    pub transport: Transport,
}

/// The three transports.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Transport {
    /// A child process speaking MCP over stdio.
    Stdio(StdioConfig),
    /// An MCP server over Streamable HTTP.
    Http(HttpConfig),
    /// A read-only JSON HTTP API described by an OpenAPI document.
    OpenApi(OpenApiConfig),
}

/// `transport: "mcp_stdio"`.
#[derive(Clone)]
#[non_exhaustive]
pub struct StdioConfig {
    /// Program to start (looked up on `PATH`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment, `${VAR}` already expanded (values may be secrets: never logged).
    pub env: BTreeMap<String, String>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// initialize + tools/list budget.
    pub handshake_timeout: Duration,
    /// Per-call timeout (overrides `--upstream-call-timeout-ms`).
    pub request_timeout: Option<Duration>,
    /// Largest accepted result, bytes.
    pub max_response_bytes: usize,
}

impl std::fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioConfig")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .finish()
    }
}

/// An auth emitter: which header a credential becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthEmitter {
    /// How the value is sent.
    pub scheme: AuthScheme,
    /// The credential binding's name.
    pub binding: String,
}

/// Auth schemes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthScheme {
    /// `Authorization: Bearer <value>`.
    Bearer,
    /// `Authorization: Basic base64(user:pass)`.
    Basic,
    /// `<header>: <value>`.
    CustomHeader(String),
    /// `<header>: <value>`, header defaulting to `X-Api-Key`.
    ApiKey(String),
}

impl AuthScheme {
    /// The scheme's name as written in the config.
    pub fn name(&self) -> &'static str {
        match self {
            AuthScheme::Bearer => "bearer",
            AuthScheme::Basic => "basic",
            AuthScheme::CustomHeader(_) => "custom_header",
            AuthScheme::ApiKey(_) => "api_key",
        }
    }
}

/// Settings shared by the HTTP transports.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpCommon {
    /// Auth emitters, in order.
    pub auth: Vec<AuthEmitter>,
    /// Literal, non-secret headers.
    pub static_headers: Vec<(String, String)>,
    /// Plain http allowed.
    pub allow_insecure_http: bool,
    /// Auth over plain http allowed.
    pub allow_insecure_auth: bool,
    /// Per-call timeout (overrides `--upstream-call-timeout-ms`).
    pub request_timeout: Option<Duration>,
    /// TCP/TLS connect timeout.
    pub connect_timeout: Duration,
    /// Largest accepted result, bytes.
    pub max_response_bytes: usize,
}

/// `transport: "mcp_http"`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// Endpoint URL.
    pub url: String,
    /// initialize + tools/list budget.
    pub handshake_timeout: Duration,
    /// Headers, auth, timeouts.
    pub common: HttpCommon,
}

/// Where an OpenAPI document comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaSource {
    /// A file (relative paths against the config file's directory).
    File(PathBuf),
    /// A URL fetched at start.
    Url(String),
}

/// `transport: "openapi"`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OpenApiConfig {
    /// Base URL the operation paths are appended to.
    pub base_url: String,
    /// The document.
    pub schema: SchemaSource,
    /// Largest accepted document, bytes.
    pub schema_max_bytes: usize,
    /// operationIds to expose (only GET).
    pub include_operations: Vec<String>,
    /// Per-operation overrides (`default_args`).
    pub operation_overrides: BTreeMap<String, Map<String, Json>>,
    /// Headers, auth, timeouts.
    pub common: HttpCommon,
}

/// Headers a config may never set by hand (`static_headers`); secrets go through `auth`.
const FORBIDDEN_STATIC: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "mcp-protocol-version",
    "mcp-session-id",
    "user-agent",
];
/// Headers an auth emitter may not target.
const FORBIDDEN_AUTH_HEADER: &[&str] = &["authorization", "mcp-protocol-version", "mcp-session-id", "user-agent"];

/// Where to read the config: the flag, then `PTC_UPSTREAMS`, then
/// `$XDG_CONFIG_HOME/ptc/upstreams.json` (or `~/.config/ptc/upstreams.json`) when it exists.
pub fn resolve_path(flag: Option<&Path>, env_value: Option<&str>, home: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = flag {
        return Some(p.to_path_buf());
    }
    if let Some(v) = env_value.filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(v));
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join(".config")))?;
    let p = base.join("ptc").join("upstreams.json");
    p.is_file().then_some(p)
}

/// Reads and checks a config file. `lookup` reads the server's environment for `${VAR}`
/// in stdio `env` values.
pub fn load(path: &Path, lookup: &dyn Fn(&str) -> Option<String>) -> Result<UpstreamsConfig, ConfigError> {
    let top = |msg: String| ConfigError { file: path.to_path_buf(), place: "file".into(), message: msg };
    let text = ptc_files::Limit::new("the upstreams config", ptc_files::CONFIG_MAX_BYTES)
        .read_to_string(path)
        .map_err(|e| top(e.to_string()))?;
    parse(path, &text, lookup)
}

/// Parses config text (see [`load`]).
pub fn parse(path: &Path, text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<UpstreamsConfig, ConfigError> {
    let json: Json = serde_json::from_str(text).map_err(|e| ConfigError {
        file: path.to_path_buf(),
        place: "file".into(),
        message: format!("not valid JSON: {e}"),
    })?;
    let p = Parser { file: path.to_path_buf() };
    let Json::Object(root) = json else {
        return Err(p.err("file", "the top level must be an object: {\"upstreams\": {...}, \"credentials\": {...}}"));
    };
    for k in root.keys() {
        if k != "upstreams" && k != "credentials" {
            return Err(p.err("file", &format!("unknown top-level key \"{k}\"; allowed: upstreams, credentials")));
        }
    }
    let mut credentials = BTreeMap::new();
    match root.get("credentials") {
        None | Some(Json::Null) => {}
        Some(Json::Object(c)) => {
            for (name, spec) in c {
                credentials.insert(name.clone(), p.credential(name, spec)?);
            }
        }
        Some(_) => return Err(p.err("field `credentials`", "must be an object of named bindings")),
    }
    let mut upstreams = BTreeMap::new();
    match root.get("upstreams") {
        Some(Json::Object(u)) if !u.is_empty() => {
            for (name, spec) in u {
                let cfg = p.upstream(name, spec, &credentials, lookup)?;
                upstreams.insert(name.clone(), cfg);
            }
        }
        Some(Json::Object(_)) => return Err(p.err("field `upstreams`", "is empty; configure at least one upstream")),
        None => {
            return Err(p.err(
                "file",
                "missing \"upstreams\": write {\"upstreams\": {\"fs\": {\"transport\": \"mcp_stdio\", \"command\": \"...\"}}}",
            ));
        }
        Some(_) => return Err(p.err("field `upstreams`", "must be an object keyed by upstream name")),
    }
    Ok(UpstreamsConfig { path: path.to_path_buf(), credentials, upstreams })
}

struct Parser {
    file: PathBuf,
}

type Obj = Map<String, Json>;

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
}

/// RFC 7230 token characters.
fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

impl Parser {
    fn err(&self, place: &str, message: &str) -> ConfigError {
        ConfigError { file: self.file.clone(), place: place.to_string(), message: message.to_string() }
    }

    fn ferr(&self, up: &str, field: &str, message: &str) -> ConfigError {
        self.err(&format!("upstream '{up}', field `{field}`"), message)
    }

    fn credential(&self, name: &str, spec: &Json) -> Result<CredentialSpec, ConfigError> {
        let place = |f: &str| format!("credential '{name}', field `{f}`");
        let Json::Object(o) = spec else {
            return Err(self.err(
                &format!("credential '{name}'"),
                "must be an object like {\"source\": \"env\", \"var\": \"TOKEN\"}",
            ));
        };
        let str_field = |f: &str| -> Result<String, ConfigError> {
            match o.get(f) {
                Some(Json::String(s)) if !s.is_empty() => Ok(s.clone()),
                _ => Err(self.err(&place(f), "required, a non-empty string")),
            }
        };
        let source = match o.get("source").and_then(Json::as_str) {
            Some("env") => CredentialSource::Env(str_field("var")?),
            Some("file") => CredentialSource::File(PathBuf::from(str_field("path")?)),
            Some("literal") => CredentialSource::Literal(str_field("value")?),
            Some("exec") => {
                return Err(
                    self.err(&place("source"), "\"exec\" is reserved and not supported; use env, file or literal")
                );
            }
            _ => return Err(self.err(&place("source"), "required: one of \"env\", \"file\", \"literal\"")),
        };
        for k in o.keys() {
            if !["source", "var", "path", "value", "scheme_hint"].contains(&k.as_str()) {
                return Err(self.err(&place(k), "unknown field; allowed: source, var, path, value, scheme_hint"));
            }
        }
        let scheme_hint = o.get("scheme_hint").and_then(Json::as_str).map(str::to_string);
        Ok(CredentialSpec { source, scheme_hint })
    }

    fn upstream(
        &self,
        name: &str,
        spec: &Json,
        creds: &BTreeMap<String, CredentialSpec>,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<UpstreamConfig, ConfigError> {
        if !valid_name(name) {
            return Err(self.err(
                &format!("upstream '{name}'"),
                "upstream names start with a letter and use letters, digits, '_' and '-' (at most 64)",
            ));
        }
        let Json::Object(o) = spec else {
            return Err(self.err(&format!("upstream '{name}'"), "must be an object with a \"transport\""));
        };
        let transport = match o.get("transport") {
            Some(Json::String(t)) => t.as_str(),
            None => {
                return Err(self.ferr(
                    name,
                    "transport",
                    &format!("upstream {name} requires explicit transport: \"mcp_stdio\", \"mcp_http\" or \"openapi\""),
                ));
            }
            Some(_) => return Err(self.ferr(name, "transport", "must be a string")),
        };
        let description = self.opt_str(name, o, "description")?;
        let transport = match transport {
            "mcp_stdio" => Transport::Stdio(self.stdio(name, o, lookup)?),
            "mcp_http" => Transport::Http(self.http(name, o, creds)?),
            "openapi" => Transport::OpenApi(self.openapi(name, o, creds)?),
            "stdio" | "http" => {
                return Err(self.ferr(
                    name,
                    "transport",
                    &format!("\"{transport}\" is not accepted: use mcp_stdio or mcp_http"),
                ));
            }
            other => {
                return Err(self.ferr(
                    name,
                    "transport",
                    &format!("unknown transport \"{other}\"; use mcp_stdio, mcp_http or openapi"),
                ));
            }
        };
        Ok(UpstreamConfig { name: name.to_string(), description, transport })
    }

    fn allowed(&self, up: &str, o: &Obj, allowed: &[&str]) -> Result<(), ConfigError> {
        for k in o.keys() {
            if k != "transport" && k != "description" && !allowed.contains(&k.as_str()) {
                return Err(self.ferr(
                    up,
                    k,
                    &format!(
                        "unknown field for this transport; allowed: transport, description, {}",
                        allowed.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    fn opt_str(&self, up: &str, o: &Obj, f: &str) -> Result<Option<String>, ConfigError> {
        match o.get(f) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.ferr(up, f, "must be a string")),
        }
    }

    fn req_str(&self, up: &str, o: &Obj, f: &str) -> Result<String, ConfigError> {
        match self.opt_str(up, o, f)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            _ => Err(self.ferr(up, f, "required, a non-empty string")),
        }
    }

    fn opt_bool(&self, up: &str, o: &Obj, f: &str) -> Result<bool, ConfigError> {
        match o.get(f) {
            None | Some(Json::Null) => Ok(false),
            Some(Json::Bool(b)) => Ok(*b),
            Some(_) => Err(self.ferr(up, f, "must be true or false")),
        }
    }

    fn opt_ms(&self, up: &str, o: &Obj, f: &str) -> Result<Option<Duration>, ConfigError> {
        match o.get(f) {
            None | Some(Json::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if (1..=3_600_000).contains(&n) => Ok(Some(Duration::from_millis(n))),
                _ => Err(self.ferr(up, f, "must be an integer number of milliseconds between 1 and 3600000")),
            },
        }
    }

    fn opt_bytes(&self, up: &str, o: &Obj, f: &str, default: usize) -> Result<usize, ConfigError> {
        match o.get(f) {
            None | Some(Json::Null) => Ok(default),
            Some(v) => match v.as_u64() {
                Some(n) if (1..=(1u64 << 30)).contains(&n) => Ok(n as usize),
                _ => Err(self.ferr(up, f, "must be a positive integer number of bytes (at most 1 GiB)")),
            },
        }
    }

    fn stdio(&self, up: &str, o: &Obj, lookup: &dyn Fn(&str) -> Option<String>) -> Result<StdioConfig, ConfigError> {
        self.allowed(
            up,
            o,
            &[
                "command",
                "args",
                "env",
                "cwd",
                "cd",
                "handshake_timeout_ms",
                "request_timeout_ms",
                "max_response_bytes",
            ],
        )?;
        let command = self.req_str(up, o, "command")?;
        let args = match o.get("args") {
            None | Some(Json::Null) => Vec::new(),
            Some(Json::Array(a)) => a
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| self.ferr(up, "args", "must be an array of strings"))?,
            Some(_) => return Err(self.ferr(up, "args", "must be an array of strings")),
        };
        let mut env = BTreeMap::new();
        match o.get("env") {
            None | Some(Json::Null) => {}
            Some(Json::Object(m)) => {
                for (k, v) in m {
                    let field = format!("env.{k}");
                    if k.is_empty() || k.contains('=') || k.contains('\0') {
                        return Err(self.ferr(up, &field, "not a valid environment variable name"));
                    }
                    let Json::String(v) = v else {
                        return Err(self.ferr(up, &field, "must be a string"));
                    };
                    let expanded = expand_vars(v, lookup).map_err(|m| self.ferr(up, &field, &m))?;
                    env.insert(k.clone(), expanded);
                }
            }
            Some(_) => return Err(self.ferr(up, "env", "must be an object of strings")),
        }
        let cwd = match (self.opt_str(up, o, "cwd")?, self.opt_str(up, o, "cd")?) {
            (Some(_), Some(_)) => return Err(self.ferr(up, "cwd", "give cwd or cd, not both")),
            (a, b) => a.or(b).map(PathBuf::from),
        };
        Ok(StdioConfig {
            command,
            args,
            env,
            cwd,
            handshake_timeout: self.opt_ms(up, o, "handshake_timeout_ms")?.unwrap_or(DEFAULT_HANDSHAKE),
            request_timeout: self.opt_ms(up, o, "request_timeout_ms")?,
            max_response_bytes: self.opt_bytes(up, o, "max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES)?,
        })
    }

    fn common(
        &self,
        up: &str,
        o: &Obj,
        url_field: &str,
        url: &str,
        creds: &BTreeMap<String, CredentialSpec>,
    ) -> Result<HttpCommon, ConfigError> {
        let allow_insecure_http = self.opt_bool(up, o, "allow_insecure_http")?;
        let allow_insecure_auth = self.opt_bool(up, o, "allow_insecure_auth")?;
        let lower = url.to_ascii_lowercase();
        let insecure = if lower.starts_with("https://") {
            false
        } else if lower.starts_with("http://") {
            true
        } else {
            return Err(self.ferr(up, url_field, "must be an absolute https:// URL"));
        };
        if reqwest::Url::parse(url).is_err() {
            return Err(self.ferr(up, url_field, "is not a valid URL"));
        }
        if insecure && !allow_insecure_http {
            return Err(self.ferr(
                up,
                url_field,
                "plain http:// is refused; use https:// or set \"allow_insecure_http\": true (local services only)",
            ));
        }
        let mut auth = Vec::new();
        match o.get("auth") {
            None | Some(Json::Null) => {}
            Some(Json::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    auth.push(self.emitter(up, i, item, creds)?);
                }
            }
            Some(_) => return Err(self.ferr(up, "auth", "must be a list of {\"scheme\": ..., \"binding\": ...}")),
        }
        if insecure && !auth.is_empty() && !allow_insecure_auth {
            return Err(self.ferr(
                up,
                "auth",
                "credentials over plain http:// are refused; use https:// or also set \"allow_insecure_auth\": true",
            ));
        }
        let mut static_headers = Vec::new();
        match o.get("static_headers") {
            None | Some(Json::Null) => {}
            Some(Json::Object(h)) => {
                for (k, v) in h {
                    let field = format!("static_headers.{k}");
                    if !is_token(k) {
                        return Err(self.ferr(up, &field, "not a valid HTTP header name"));
                    }
                    if FORBIDDEN_STATIC.contains(&k.to_ascii_lowercase().as_str()) {
                        return Err(self.ferr(
                            up,
                            &field,
                            "this header may not be set statically; send secrets with an \"auth\" emitter",
                        ));
                    }
                    let Json::String(v) = v else {
                        return Err(self.ferr(up, &field, "must be a string"));
                    };
                    if reqwest::header::HeaderValue::from_str(v).is_err() {
                        return Err(self.ferr(up, &field, "not a valid header value"));
                    }
                    static_headers.push((k.clone(), v.clone()));
                }
            }
            Some(_) => return Err(self.ferr(up, "static_headers", "must be an object of strings")),
        }
        Ok(HttpCommon {
            auth,
            static_headers,
            allow_insecure_http,
            allow_insecure_auth,
            request_timeout: self.opt_ms(up, o, "request_timeout_ms")?,
            connect_timeout: self.opt_ms(up, o, "connect_timeout_ms")?.unwrap_or(DEFAULT_CONNECT),
            max_response_bytes: self.opt_bytes(up, o, "max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES)?,
        })
    }

    fn emitter(
        &self,
        up: &str,
        i: usize,
        item: &Json,
        creds: &BTreeMap<String, CredentialSpec>,
    ) -> Result<AuthEmitter, ConfigError> {
        let field = |f: &str| format!("auth[{i}].{f}");
        let Json::Object(e) = item else {
            return Err(self.ferr(
                up,
                &format!("auth[{i}]"),
                "must be {\"scheme\": \"bearer\", \"binding\": \"name\"}",
            ));
        };
        for k in e.keys() {
            if !["scheme", "binding", "header"].contains(&k.as_str()) {
                return Err(self.ferr(up, &field(k), "unknown field; allowed: scheme, binding, header"));
            }
        }
        let binding = match e.get("binding") {
            Some(Json::String(b)) if creds.contains_key(b) => b.clone(),
            Some(Json::String(b)) => {
                return Err(self.ferr(
                    up,
                    &field("binding"),
                    &format!("no credential named '{b}'; declare it under \"credentials\""),
                ));
            }
            _ => return Err(self.ferr(up, &field("binding"), "required: the name of a credential")),
        };
        let header = match e.get("header") {
            None | Some(Json::Null) => None,
            Some(Json::String(h)) => {
                if !is_token(h) {
                    return Err(self.ferr(up, &field("header"), "not a valid HTTP header name (RFC 7230 token)"));
                }
                if FORBIDDEN_AUTH_HEADER.contains(&h.to_ascii_lowercase().as_str()) {
                    return Err(self.ferr(
                        up,
                        &field("header"),
                        "may not be Authorization (use bearer or basic) or a protocol header (MCP-Protocol-Version, Mcp-Session-Id, User-Agent)",
                    ));
                }
                Some(h.clone())
            }
            Some(_) => return Err(self.ferr(up, &field("header"), "must be a string")),
        };
        let scheme = match e.get("scheme").and_then(Json::as_str) {
            Some("bearer") | Some("basic") if header.is_some() => {
                return Err(self.ferr(up, &field("header"), "only custom_header and api_key take a header"));
            }
            Some("bearer") => AuthScheme::Bearer,
            Some("basic") => AuthScheme::Basic,
            Some("custom_header") => match header {
                Some(h) => AuthScheme::CustomHeader(h),
                None => return Err(self.ferr(up, &field("header"), "custom_header requires a header name")),
            },
            Some("api_key") => AuthScheme::ApiKey(header.unwrap_or_else(|| "X-Api-Key".to_string())),
            _ => {
                return Err(self.ferr(up, &field("scheme"), "required: one of bearer, basic, custom_header, api_key"));
            }
        };
        Ok(AuthEmitter { scheme, binding })
    }

    fn http(&self, up: &str, o: &Obj, creds: &BTreeMap<String, CredentialSpec>) -> Result<HttpConfig, ConfigError> {
        self.allowed(
            up,
            o,
            &[
                "url",
                "auth",
                "static_headers",
                "allow_insecure_http",
                "allow_insecure_auth",
                "handshake_timeout_ms",
                "request_timeout_ms",
                "connect_timeout_ms",
                "max_response_bytes",
            ],
        )?;
        let url = self.req_str(up, o, "url")?;
        let common = self.common(up, o, "url", &url, creds)?;
        Ok(HttpConfig {
            url,
            handshake_timeout: self.opt_ms(up, o, "handshake_timeout_ms")?.unwrap_or(DEFAULT_HANDSHAKE),
            common,
        })
    }

    fn openapi(
        &self,
        up: &str,
        o: &Obj,
        creds: &BTreeMap<String, CredentialSpec>,
    ) -> Result<OpenApiConfig, ConfigError> {
        self.allowed(
            up,
            o,
            &[
                "base_url",
                "schema_file",
                "schema_url",
                "schema_max_bytes",
                "include_operations",
                "operation_overrides",
                "auth",
                "static_headers",
                "allow_insecure_http",
                "allow_insecure_auth",
                "request_timeout_ms",
                "connect_timeout_ms",
                "max_response_bytes",
            ],
        )?;
        let base_url = self.req_str(up, o, "base_url")?;
        let common = self.common(up, o, "base_url", &base_url, creds)?;
        let schema = match (self.opt_str(up, o, "schema_file")?, self.opt_str(up, o, "schema_url")?) {
            (Some(f), None) => {
                let p = PathBuf::from(&f);
                let p = if p.is_absolute() { p } else { self.file.parent().map(|d| d.join(&p)).unwrap_or(p) };
                SchemaSource::File(p)
            }
            (None, Some(u)) => {
                let l = u.to_ascii_lowercase();
                if !(l.starts_with("https://") || (l.starts_with("http://") && common.allow_insecure_http)) {
                    return Err(self.ferr(
                        up,
                        "schema_url",
                        "must be an https:// URL (or http:// with allow_insecure_http)",
                    ));
                }
                SchemaSource::Url(u)
            }
            (Some(_), Some(_)) => {
                return Err(self.ferr(up, "schema_file", "give exactly one of schema_file and schema_url"));
            }
            (None, None) => {
                return Err(self.ferr(up, "schema_file", "required: schema_file (preferred) or schema_url"));
            }
        };
        let include_operations = match o.get("include_operations") {
            Some(Json::Array(a)) if !a.is_empty() => a
                .iter()
                .map(|v| v.as_str().filter(|s| !s.is_empty()).map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| self.ferr(up, "include_operations", "must list operationIds as strings"))?,
            _ => {
                return Err(self.ferr(
                    up,
                    "include_operations",
                    "required: a non-empty list of the GET operationIds to expose",
                ));
            }
        };
        let mut operation_overrides = BTreeMap::new();
        match o.get("operation_overrides") {
            None | Some(Json::Null) => {}
            Some(Json::Object(m)) => {
                for (op, ov) in m {
                    let field = format!("operation_overrides.{op}");
                    if !include_operations.contains(op) {
                        return Err(self.ferr(up, &field, "overrides an operation that is not in include_operations"));
                    }
                    let Json::Object(ov) = ov else {
                        return Err(self.ferr(up, &field, "must be {\"default_args\": {...}}"));
                    };
                    for k in ov.keys() {
                        if k != "default_args" {
                            return Err(self.ferr(
                                up,
                                &format!("{field}.{k}"),
                                "unknown override; allowed: default_args",
                            ));
                        }
                    }
                    let defaults = match ov.get("default_args") {
                        None | Some(Json::Null) => Map::new(),
                        Some(Json::Object(d)) => d.clone(),
                        Some(_) => return Err(self.ferr(up, &format!("{field}.default_args"), "must be an object")),
                    };
                    operation_overrides.insert(op.clone(), defaults);
                }
            }
            Some(_) => return Err(self.ferr(up, "operation_overrides", "must be an object keyed by operationId")),
        }
        Ok(OpenApiConfig {
            base_url,
            schema,
            schema_max_bytes: self.opt_bytes(up, o, "schema_max_bytes", DEFAULT_MAX_RESPONSE_BYTES)?,
            include_operations,
            operation_overrides,
            common,
        })
    }
}

/// Expands `${VAR}` from `lookup`; `$$` is not special. An unset variable is an error.
fn expand_vars(s: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(end) = after.find('}') else {
            return Err("unclosed ${ in value; write ${VAR}".into());
        };
        let var = &after[..end];
        if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("invalid variable name in ${{{var}}}"));
        }
        match lookup(var) {
            Some(v) => out.push_str(&v),
            None => return Err(format!("environment variable {var} is not set (referenced as ${{{var}}})")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_vars_and_reports_unset() {
        let look = |v: &str| (v == "A").then(|| "x".to_string());
        assert_eq!(expand_vars("a-${A}-b", &look).unwrap(), "a-x-b");
        assert!(expand_vars("${B}", &look).unwrap_err().contains("B is not set"));
        assert!(expand_vars("${A", &look).is_err());
    }

    #[test]
    fn tokens() {
        assert!(is_token("X-Tenant"));
        assert!(!is_token("X Tenant"));
        assert!(!is_token(""));
    }
}
