//! `ptc mcp --agentic`: `lisp_task` driven over stdio by an MCP client (JSON-RPC lines,
//! as any client sends them) against the real binary, real upstream MCP server processes
//! (`fixtures/missions/two-servers/mini_mcp.py`) and a fake OpenAI vendor on 127.0.0.1
//! that records the exact requests the planner sends.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::cli::{PTC, root, scratch};
use common::mcp::StdioServer;
use common::vendor::FakeVendor;
use serde_json::{Value, json};

const KEY: &str = "sk-proj-agentic-SECRET-9f8e7d6c5b";

fn completion(program: &str) -> Value {
    common::vendor::completion("planner-model-001", program, json!({"prompt_tokens": 2400, "completion_tokens": 60}))
}

/// `ptc mcp ARGS --log-level debug` over stdio from the workspace root, stderr to a file,
/// with no vendor or upstream settings from the environment but `env`.
fn start(args: &[&str], env: &[(&str, &str)], stderr: &Path) -> StdioServer {
    let dir = scratch();
    let mut command = Command::new(PTC);
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
        .stderr(std::fs::File::create(stderr).unwrap());
    for (k, v) in env {
        command.env(k, v);
    }
    StdioServer::spawn(command)
}

#[test]
fn lisp_task_plans_calls_upstreams_and_answers_over_stdio() {
    let dir = scratch();
    let program = "(def cs (tool/call {:server \"crm\" :tool \"find_customers\" :args {:region \"eu\"}}))\n(return (map :name (:items (:value cs))))";
    let vendor = FakeVendor::start(vec![completion(program)]);
    let log = dir.join("stderr.log");
    let base = format!("{}/v1", vendor.url);
    let mut server = start(
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
    let list = server.request("tools/list", json!({}));
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
        "tools/call",
        json!({"name": "lisp_task", "arguments": {"task": "Names of our EU customers", "constraints": {"max_items": 5}}}),
    );
    let seen = vendor.seen();
    assert_eq!(vendor.finish(), 1);
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
    let vendor = FakeVendor::start(vec![completion("(return (tool/call {:server \"flaky\" :tool \"boom\"}))")]);
    let base = format!("{}/v1", vendor.url);
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
    let mut server = start(
        &["--upstreams", cfg, "--agentic", "--agentic-model", "openai:m"],
        &[("OPENAI_API_KEY", KEY), ("OPENAI_BASE_URL", &base)],
        &log,
    );
    let call = server.request("tools/call", json!({"name": "lisp_task", "arguments": {"task": "boom"}}));
    assert_eq!(vendor.finish(), 1);
    assert_eq!(call["result"]["isError"], true, "{call}");
    let body: Value = serde_json::from_str(call["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["status"], "error");
    // flaky's tool says nothing about writes: it is not in the read-only planner's view
    assert!(body["message"].as_str().unwrap().contains("no upstream 'flaky' configured; configured: crm"), "{body}");
    let bad = server.request("tools/call", json!({"name": "lisp_task", "arguments": {"program": "(+ 1 2)"}}));
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
    let o = Command::new(PTC)
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
    let o = Command::new(PTC)
        .args(["mcp", "--agentic"])
        .env_remove("PTC_UPSTREAMS")
        .env("HOME", &dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--agentic needs upstreams"));
}

#[test]
fn lisp_task_planners_call_and_discover_the_server_preludes() {
    let dir = scratch();
    let prelude = dir.join("sales.clj");
    std::fs::write(
        &prelude,
        "(ns sales \"Sales helpers\")\n\
         (defn eu-names \"Names of the EU customers.\" [] (mapv :name (:items (:value (tool/call {:server \"crm\" :tool \"find_customers\" :args {:region \"eu\"}})))))\n\
         (defn- shout [s] (str s \"!\"))\n\
         (defn loud \"Each name, loudly.\" [xs] (mapv shout xs))\n",
    )
    .unwrap();
    let program = "(return {:names (sales/loud (sales/eu-names)) :ns (filterv #(= \"sales\" %) (all-ns)) :publics (vec (keys (ns-publics 'sales))) :dir (dir sales)})";
    let vendor = FakeVendor::start(vec![completion(program)]);
    let base = format!("{}/v1", vendor.url);
    let mut server = start(
        &[
            "--upstreams",
            "fixtures/missions/two-servers/upstreams.json",
            "--prelude",
            prelude.to_str().unwrap(),
            "--agentic",
            "--agentic-model",
            "openai:planner-model",
        ],
        &[("OPENAI_API_KEY", KEY), ("OPENAI_BASE_URL", &base)],
        &dir.join("stderr.log"),
    );
    let call =
        server.request("tools/call", json!({"name": "lisp_task", "arguments": {"task": "EU customers, loudly"}}));
    let seen = vendor.seen();
    assert_eq!(vendor.finish(), 1);
    let body: Value = serde_json::from_str(call["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["status"], "ok", "{body}");
    // the prelude's function ran in the planner's program, calling the upstream for it
    assert_eq!(body["answer"]["names"], json!(["Acme GmbH!", "Initech!"]), "{body}");
    assert_eq!(body["upstream_calls"][0]["server"], "crm", "{body}");
    // and discovery knows its namespace (its defn- helper is not listed)
    assert_eq!(body["answer"]["ns"], json!(["sales"]));
    assert_eq!(body["answer"]["publics"], json!(["sales/eu-names", "sales/loud"]));
    assert_eq!(
        body["answer"]["dir"],
        json!(["sales/eu-names - Names of the EU customers.", "sales/loud - Each name, loudly."])
    );
    // the planner was told about them next to its tools and data
    let user = seen[0].2["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains(";; === prelude") && user.contains(";; sales - Sales helpers"), "{user}");
    assert!(user.contains("sales/loud") && user.contains("; function - Names of the EU customers."), "{user}");
    assert!(!user.contains("sales/shout"), "{user}");
    server.stop();
}
