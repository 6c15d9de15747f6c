//! `ptc mcp --agentic`: `lisp_task` driven over stdio by an MCP client (JSON-RPC lines,
//! as any client sends them) against the real binary, real upstream MCP server processes
//! (`fixtures/missions/two-servers/mini_mcp.py`) and a fake OpenAI vendor on 127.0.0.1
//! that records the exact requests the planner sends.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{Value, json};

const KEY: &str = "sk-proj-agentic-SECRET-9f8e7d6c5b";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn scratch() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "ptc-mcp-agentic-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One request the fake vendor saw: path, Authorization header, JSON body.
type Seen = (String, String, Value);

/// A fake OpenAI server: answers one connection per reply, then stops.
fn fake_openai(replies: Vec<Value>) -> (String, Arc<Mutex<Vec<Seen>>>, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let handle = std::thread::spawn(move || {
        for reply in replies {
            let (mut stream, _) = listener.accept().unwrap();
            let mut data = Vec::new();
            let mut buf = [0u8; 8192];
            let head_end = loop {
                let n = stream.read(&mut buf).unwrap();
                assert!(n > 0, "connection closed before the request ended");
                data.extend_from_slice(&buf[..n]);
                if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                    break i + 4;
                }
            };
            let head = String::from_utf8_lossy(&data[..head_end]).to_string();
            let header = |name: &str| {
                head.lines()
                    .find_map(|l| {
                        l.split_once(':')
                            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
                            .map(|(_, v)| v.trim().to_string())
                    })
                    .unwrap_or_default()
            };
            let length: usize = header("content-length").parse().unwrap();
            while data.len() < head_end + length {
                let n = stream.read(&mut buf).unwrap();
                assert!(n > 0, "connection closed inside the body");
                data.extend_from_slice(&buf[..n]);
            }
            let path = head.split_whitespace().nth(1).unwrap_or_default().to_string();
            let body: Value = serde_json::from_slice(&data[head_end..head_end + length]).unwrap();
            log.lock().unwrap().push((path, header("authorization"), body));
            let text = reply.to_string();
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            stream.write_all(response.as_bytes()).unwrap();
        }
    });
    (url, seen, handle)
}

fn completion(program: &str) -> Value {
    json!({
        "model": "planner-model-001",
        "choices": [{"message": {"role": "assistant", "content": format!("```clojure\n{program}\n```")}}],
        "usage": {"prompt_tokens": 2400, "completion_tokens": 60}
    })
}

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    fn start(args: &[&str], env: &[(&str, &str)], stderr: &Path) -> Server {
        let dir = scratch();
        let mut command = Command::new(env!("CARGO_BIN_EXE_ptc"));
        command
            .arg("mcp")
            .args(args)
            .args(["--log-level", "debug"])
            .current_dir(root())
            .env_remove("PTC_UPSTREAMS")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("PTC_LLM_CONFIG")
            .env("HOME", &dir)
            .env("XDG_CONFIG_HOME", &dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(stderr).unwrap());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Server { child, stdin, stdout };
        let init = s.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "ptc", "{init}");
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, v: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the server closed stdout");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    /// Closes stdin and waits for a clean exit.
    fn stop(mut self) {
        drop(self.stdin.take());
        assert!(self.child.wait().unwrap().success());
    }
}

#[test]
fn lisp_task_plans_calls_upstreams_and_answers_over_stdio() {
    let dir = scratch();
    let program = "(def cs (tool/call {:server \"crm\" :tool \"find_customers\" :args {:region \"eu\"}}))\n(return (map :name (:items (:value cs))))";
    let (url, seen, vendor) = fake_openai(vec![completion(program)]);
    let log = dir.join("stderr.log");
    let base = format!("{url}/v1");
    let mut server = Server::start(
        &[
            "--upstreams",
            "fixtures/missions/two-servers/upstreams.json",
            "--agentic",
            "--agentic-model",
            "openai:planner-model",
            "--agentic-max-output-tokens",
            "700",
        ],
        &[("OPENAI_API_KEY", KEY), ("OPENAI_BASE_URL", &base)],
        &log,
    );
    let list = server.request(2, "tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["lisp_eval", "lisp_task"]);
    let task_tool = &tools[1];
    assert_eq!(task_tool["inputSchema"]["required"], json!(["task"]));
    assert_eq!(task_tool["annotations"]["readOnlyHint"], true);
    let description = task_tool["description"].as_str().unwrap();
    assert!(description.contains("Read-only: the planner sees only upstream tools marked read-only"), "{description}");
    assert!(description.contains("find_customers"), "{description}");

    let call = server.request(
        3,
        "tools/call",
        json!({"name": "lisp_task", "arguments": {"task": "Names of our EU customers", "constraints": {"max_items": 5}}}),
    );
    vendor.join().unwrap();
    let result = &call["result"];
    assert_eq!(result["isError"], false, "{call}");
    let body: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["status"], "ok", "{body}");
    assert_eq!(body["answer"], json!(["Acme GmbH", "Initech"]));
    assert_eq!(body["program"], program);
    assert_eq!(body["upstream_calls"][0]["server"], "crm");
    assert_eq!(body["upstream_calls"][0]["status"], "ok");
    let planner = &body["planner"];
    assert_eq!(planner["model"], "openai:planner-model");
    assert_eq!(planner["turns"], 1);
    assert_eq!(planner["tokens"]["input"], 2400);
    assert_eq!(planner["tokens"]["output"], 60);
    assert!(planner["duration_ms"].is_u64());
    assert_eq!(body["ptc_metrics"]["upstream_call_count"], 1);
    assert_eq!(body["ptc_metrics"]["server_side_llm"]["requests"], 1);

    // the exact request the planner sent
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let (path, auth, request) = &seen[0];
    assert_eq!(path, "/v1/chat/completions");
    assert_eq!(auth, &format!("Bearer {KEY}"));
    assert_eq!(request["model"], "planner-model");
    assert_eq!(request["max_completion_tokens"].as_u64().or(request["max_tokens"].as_u64()), Some(700), "{request}");
    let system = request["messages"][0]["content"].as_str().unwrap();
    assert_eq!(request["messages"][0]["role"], "system");
    assert!(system.contains("<upstream_tools>") && system.contains("(dir \"crm\""), "{system}");
    let user = request["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("<mission>\nNames of our EU customers\n\nConstraints (soft): {\"max_items\":5}\n</mission>"),
        "{user}"
    );

    server.stop();
    // the key reached the vendor only: not the client, not the logs
    let logs = std::fs::read_to_string(&log).unwrap();
    assert!(logs.contains("agentic mode: lisp_task offered"), "{logs}");
    assert!(!logs.contains(KEY), "{logs}");
    assert!(!call.to_string().contains(KEY));
    assert!(!list.to_string().contains(KEY));
}

#[test]
fn a_planner_failure_is_an_error_result_and_lisp_task_needs_read_only_tools() {
    let dir = scratch();
    // the vendor answers with an unknown upstream: the program's error ends the one turn
    let (url, _seen, vendor) = fake_openai(vec![completion("(return (tool/call {:server \"flaky\" :tool \"boom\"}))")]);
    let base = format!("{url}/v1");
    let cfg = dir.join("upstreams.json");
    let script = root().join("fixtures/missions/two-servers/mini_mcp.py");
    std::fs::write(
        &cfg,
        json!({"upstreams": {
            "crm": {"transport": "mcp_stdio", "command": "python3", "args": [script, "crm"]},
            "flaky": {"transport": "mcp_stdio", "command": "python3", "args": [script, "flaky"]}
        }})
        .to_string(),
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap();
    let log = dir.join("stderr.log");
    let mut server = Server::start(
        &["--upstreams", cfg, "--agentic", "--agentic-model", "openai:m"],
        &[("OPENAI_API_KEY", KEY), ("OPENAI_BASE_URL", &base)],
        &log,
    );
    let call = server.request(2, "tools/call", json!({"name": "lisp_task", "arguments": {"task": "boom"}}));
    vendor.join().unwrap();
    assert_eq!(call["result"]["isError"], true, "{call}");
    let body: Value = serde_json::from_str(call["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["status"], "error");
    // flaky's tool says nothing about writes: it is not in the read-only planner's view
    assert!(body["message"].as_str().unwrap().contains("no upstream 'flaky' configured; configured: crm"), "{body}");
    let bad = server.request(3, "tools/call", json!({"name": "lisp_task", "arguments": {"program": "(+ 1 2)"}}));
    assert!(bad["result"]["content"][0]["text"].as_str().unwrap().contains("unknown argument `program`"), "{bad}");
    server.stop();

    // only tools that may write: no read-only planner can be offered (exit 2 at start)
    let only_flaky = dir.join("flaky.json");
    std::fs::write(
        &only_flaky,
        json!({"upstreams": {"flaky": {"transport": "mcp_stdio", "command": "python3", "args": [script, "flaky"]}}})
            .to_string(),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["mcp", "--upstreams", only_flaky.to_str().unwrap(), "--agentic", "--agentic-model", "openai:m"])
        .env("OPENAI_API_KEY", KEY)
        .env_remove("PTC_UPSTREAMS")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("no upstream tool is marked read-only") && e.contains("flaky/boom"), "{e}");
    assert!(e.contains("--agentic-allow-writes"), "{e}");
    // --agentic without upstreams
    let o = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["mcp", "--agentic"])
        .env_remove("PTC_UPSTREAMS")
        .env("HOME", &dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--agentic needs upstreams"));
}
