//! `ptc mcp --agentic` operator flags with the real binary, real upstream MCP server
//! processes (`fixtures/missions/two-servers/mini_mcp.py`) and a fake OpenAI vendor on
//! 127.0.0.1: `--agentic-subagent-config` (turns and a system prompt prefix/suffix; other
//! keys fail the start), `--agentic-capability-summary[-max-bytes]` (what lisp_task's
//! description says the planner can reach) and `--agentic-trace-prompts` (planner
//! previews in lisp_debug records and traces, never in the client's answer).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{Value, json};

const KEY: &str = "sk-proj-agentic-flags-SECRET-1a2b3c4d";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn scratch() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "ptc-mcp-agentic-flags-{}-{}",
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

const UPSTREAMS: &str = "fixtures/missions/two-servers/upstreams.json";

fn start_fails(args: &[&str]) -> String {
    let dir = scratch();
    let o = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .arg("mcp")
        .args(["--upstreams", UPSTREAMS, "--agentic", "--agentic-model", "openai:m"])
        .args(args)
        .current_dir(root())
        .env_remove("PTC_UPSTREAMS")
        .env("OPENAI_API_KEY", KEY)
        .env("HOME", &dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!o.status.success());
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn subagent_config_summary_and_trace_prompts_shape_the_planner() {
    let dir = scratch();
    let config = dir.join("planner.json");
    std::fs::write(
        &config,
        json!({"max_turns": 3, "retry_turns": 1, "system_prompt": {"prefix": "OPERATOR PREFIX: answer in English.", "suffix": "OPERATOR SUFFIX."}}).to_string(),
    )
    .unwrap();
    let summary = dir.join("summary.txt");
    std::fs::write(&summary, "CRM customers by region, billing invoices.").unwrap();
    let program = "(return (map :name (:items (:value (tool/call {:server \"crm\" :tool \"find_customers\" :args {:region \"eu\"}})))))";
    let (url, seen, vendor) = fake_openai(vec![completion(program)]);
    let base = format!("{url}/v1");
    let log = dir.join("stderr.log");
    let mut server = Server::start(
        &[
            "--upstreams",
            UPSTREAMS,
            "--agentic",
            "--agentic-model",
            "openai:planner-model",
            "--agentic-subagent-config",
            config.to_str().unwrap(),
            "--agentic-retry-turns",
            "0",
            "--agentic-capability-summary",
            summary.to_str().unwrap(),
            "--agentic-trace-prompts",
            "--debug-tool",
            "--response-profile",
            "structured",
        ],
        &[("OPENAI_API_KEY", KEY), ("OPENAI_BASE_URL", &base)],
        &log,
    );
    let list = server.request(2, "tools/list", json!({}));
    let task = list["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "lisp_task").unwrap().clone();
    let description = task["description"].as_str().unwrap();
    // the operator's summary replaces the generated catalog; the turns come from the file,
    // except retry_turns, which the flag overrides (3 + 0)
    assert!(description.ends_with("CRM customers by region, billing invoices."), "{description}");
    assert!(!description.contains("find_customers"), "{description}");
    assert!(description.contains("3 turn(s)"), "{description}");
    let call =
        server.request(3, "tools/call", json!({"name": "lisp_task", "arguments": {"task": "EU customer names"}}));
    vendor.join().unwrap();
    let body = &call["result"]["structuredContent"];
    assert_eq!(body["answer"], json!(["Acme GmbH", "Initech"]), "{call}");
    assert!(!call.to_string().contains("planner_prompts"), "previews never reach the client");
    let system = seen.lock().unwrap()[0].2["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(system.starts_with("OPERATOR PREFIX: answer in English."), "{system}");
    // the suffix closes the cards; the upstream catalog follows them
    let (cards, catalog) = system.split_once("OPERATOR SUFFIX.").unwrap();
    assert!(cards.contains("<ptc_lisp>") && catalog.contains("<upstream_tools>"), "{system}");
    // the debug record of the call carries the planner's previews
    let recent =
        server.request(4, "tools/call", json!({"name": "lisp_debug", "arguments": {"op": "recent", "limit": 5}}));
    let text = recent["result"].to_string();
    assert!(text.contains("planner_prompts"), "{text}");
    assert!(text.contains("EU customer names") && text.contains("find_customers"), "{text}");
    assert!(!text.contains(KEY));
    server.stop();
}

#[test]
fn the_generated_summary_is_capped_and_bad_operator_files_fail_the_start() {
    let dir = scratch();
    let log = dir.join("stderr.log");
    let mut server = Server::start(
        &[
            "--upstreams",
            UPSTREAMS,
            "--agentic",
            "--agentic-model",
            "openai:m",
            "--agentic-capability-summary-max-bytes",
            "60",
        ],
        &[("OPENAI_API_KEY", KEY)],
        &log,
    );
    let list = server.request(2, "tools/list", json!({}));
    let task = list["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "lisp_task").unwrap().clone();
    let description = task["description"].as_str().unwrap();
    let summary = description.rsplit("\n\n").next().unwrap();
    assert!(summary.len() <= 60 && summary.ends_with("...(more tools)"), "{summary}");
    server.stop();

    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"max_turns": 2, "tools": {}}"#).unwrap();
    let e = start_fails(&["--agentic-subagent-config", bad.to_str().unwrap()]);
    assert!(e.contains("--agentic-subagent-config") && e.contains("key `tools` is not allowed"), "{e}");
    std::fs::write(&bad, json!({"system_prompt": {"prefix": "x".repeat(5000)}}).to_string()).unwrap();
    let e = start_fails(&["--agentic-subagent-config", bad.to_str().unwrap()]);
    assert!(e.contains("system_prompt.prefix") && e.contains("4096"), "{e}");
    let big = dir.join("summary.txt");
    std::fs::write(&big, "y".repeat(900)).unwrap();
    let e = start_fails(&["--agentic-capability-summary", big.to_str().unwrap()]);
    assert!(e.contains("900 bytes") && e.contains("--agentic-capability-summary-max-bytes (800)"), "{e}");
}
