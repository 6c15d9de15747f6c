//! `ptc mcp` over stdio and over Streamable HTTP, and a JSON-RPC client for each.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

use super::cli::PTC;

/// The `initialize` parameters every test client sends.
pub fn initialize_params() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
}

/// The text of a `tools/call` result's first content block.
pub fn text(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_string()
}

// ---- stdio ----

/// `ptc mcp` over stdio, initialized; killed when dropped.
pub struct StdioServer {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: i64,
}

impl StdioServer {
    /// `ptc mcp ARGS`, stderr discarded, without `PTC_UPSTREAMS` from the environment.
    pub fn start(args: &[&str]) -> StdioServer {
        let mut command = Command::new(PTC);
        command.arg("mcp").args(args).env_remove("PTC_UPSTREAMS").stderr(Stdio::null());
        StdioServer::spawn(command)
    }

    /// Starts `command` (a `ptc mcp ...` the caller configured; stdin and stdout are
    /// piped here) and initializes the connection.
    pub fn spawn(mut command: Command) -> StdioServer {
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = StdioServer { child, stdin, stdout, next_id: 1 };
        let init = s.request("initialize", initialize_params());
        assert_eq!(init["result"]["serverInfo"]["name"], "ptc", "{init}");
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    /// Writes one JSON-RPC message.
    pub fn send(&mut self, v: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message the server writes.
    pub fn read(&mut self) -> Value {
        let mut line = String::new();
        assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the server closed its output");
        serde_json::from_str(&line).unwrap()
    }

    /// A request with the next id; the response with that id (other lines are skipped).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the server closed its output");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    /// `tools/call`; the result.
    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))["result"].clone()
    }

    /// The text of a `lisp_eval` call's answer.
    pub fn eval_text(&mut self, program: &str) -> String {
        text(&self.call("lisp_eval", json!({"program": program})))
    }

    /// Closes stdin and waits for a clean exit.
    pub fn stop(mut self) {
        drop(self.stdin.take());
        assert!(self.child.wait().unwrap().success());
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---- Streamable HTTP ----

/// `ptc mcp --http 127.0.0.1:0`; killed when dropped.
pub struct HttpServer {
    pub child: Child,
    pub port: u16,
}

impl HttpServer {
    /// `ptc mcp --http 127.0.0.1:0 --log-level info ARGS`, without `PTC_UPSTREAMS` from
    /// the environment; ready when this returns.
    pub fn start(args: &[&str]) -> HttpServer {
        let mut child = Command::new(PTC)
            .args(["mcp", "--http", "127.0.0.1:0", "--log-level", "info"])
            .args(args)
            .env_remove("PTC_UPSTREAMS")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // the "serving" line names the port really bound; the socket is bound before it
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let port = loop {
            line.clear();
            assert!(err.read_line(&mut line).unwrap() > 0, "server exited before serving");
            if let Some((_, rest)) = line.split_once("serving MCP over Streamable HTTP at http://127.0.0.1:") {
                break rest.split('/').next().unwrap().parse::<u16>().unwrap();
            }
        };
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        HttpServer { child, port }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response: status, headers (names lower-cased), body (de-chunked).
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// One request on a new connection (`Connection: close`, JSON body, the MCP `Accept`).
pub fn request(port: u16, method: &str, path: &str, headers: &[(String, String)], body: &str) -> Reply {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|c| c.parse().ok()).unwrap_or(0);
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_string())).collect();
    let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_string() };
    Reply { status, headers, body }
}

/// A chunked body's data.
fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// The JSON-RPC message in a JSON or SSE body (`null` when there is none).
pub fn message(body: &str) -> Value {
    let data = body.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).find(|d| d.starts_with('{'));
    serde_json::from_str(data.unwrap_or(body.trim())).unwrap_or(Value::Null)
}

/// One MCP client over HTTP: its MCP session and bearer token.
#[derive(Clone)]
pub struct Client {
    pub port: u16,
    pub token: Option<String>,
    pub mcp_session: String,
}

impl Client {
    /// Initializes an MCP session on the server at `port`.
    pub fn connect(port: u16, token: Option<&str>) -> Client {
        let mut headers = Vec::new();
        if let Some(t) = token {
            headers.push(("Authorization".to_string(), format!("Bearer {t}")));
        }
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()});
        let reply = request(port, "POST", "/mcp", &headers, &init.to_string());
        assert_eq!(reply.status, 200, "{}", reply.body);
        let mcp_session = reply.header("mcp-session-id").map(str::to_string).unwrap();
        let c = Client { port, token: token.map(str::to_string), mcp_session };
        c.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        c
    }

    pub fn headers(&self) -> Vec<(String, String)> {
        let mut h = vec![
            ("Mcp-Session-Id".to_string(), self.mcp_session.clone()),
            ("Mcp-Protocol-Version".to_string(), "2025-11-25".to_string()),
        ];
        if let Some(t) = &self.token {
            h.push(("Authorization".to_string(), format!("Bearer {t}")));
        }
        h
    }

    /// One POST of `body` to /mcp in this MCP session.
    pub fn post(&self, body: &Value) -> Reply {
        request(self.port, "POST", "/mcp", &self.headers(), &body.to_string())
    }

    /// A request; the response message (the HTTP status must be 200).
    pub fn rpc(&self, id: u64, method: &str, params: Value) -> Value {
        let reply = self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        assert_eq!(reply.status, 200, "{}", reply.body);
        message(&reply.body)
    }

    /// `tools/call`; the result.
    pub fn call(&self, id: u64, tool: &str, args: Value) -> Value {
        self.rpc(id, "tools/call", json!({"name": tool, "arguments": args}))["result"].clone()
    }

    /// The text of a `lisp_eval` call's answer.
    pub fn eval_text(&self, id: u64, program: &str) -> String {
        text(&self.call(id, "lisp_eval", json!({"program": program})))
    }
}
