//! `cargo xtask interop`, aggregator part: `ptc mcp --upstreams` against real upstreams —
//! the reference MCP servers from the npm registry over stdio (`server-everything`,
//! `server-memory`, `server-filesystem` on a temp directory), the shared Python SDK
//! server over Streamable HTTP behind bearer auth, a loopback OpenAPI service with the
//! committed schema, and this repository's fixture server for the crash case. It runs the
//! seed's three example programs, every world fault, and checks that no secret leaks.
//! Everything it installs or writes lives under `target/interop/`.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

const NPM_SERVERS: &[&str] = &[
    "@modelcontextprotocol/server-everything",
    "@modelcontextprotocol/server-memory",
    "@modelcontextprotocol/server-filesystem",
];
const GOOD_TOKEN: &str = "interop-bearer-9f2c51d07a6e4b83";
const WRONG_TOKEN: &str = "interop-wrong-token-77aa10c3";
const PLANNER_KEY: &str = "sk-interop-planner-5d1e0a9b77c3";

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Waits (bounded) until `port` accepts connections.
fn wait_port(port: u16, child: &mut Child, what: &str) -> Result<()> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    for _ in 0..300 {
        if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(50)).is_ok() {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            bail!("{what} exited before listening ({status})");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("{what} did not listen on {port}")
}

fn npm_servers(dir: &Path) -> Result<PathBuf> {
    let prefix = dir.join("upstream-servers");
    let bin = prefix.join("node_modules/.bin");
    if !bin.join("mcp-server-everything").exists() || !bin.join("mcp-server-memory").exists() {
        eprintln!("interop: installing the reference MCP servers from the npm registry");
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
            .arg(&prefix)
            .args(NPM_SERVERS)
            .output()
            .context("cannot run npm")?;
        if !out.status.success() {
            bail!("npm install failed: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    Ok(bin)
}

/// The Python SDK upstream of the repository (`fixtures/upstreams/py_tools.py`).
fn py_upstream(root: &Path) -> Result<PathBuf> {
    let p = root.join("fixtures/upstreams/py_tools.py");
    if !p.exists() {
        bail!("{} is missing", p.display());
    }
    Ok(p)
}

struct Run {
    text: String,
    everything: String,
}

/// One `lisp_eval` through the Python SDK client against `ptc mcp` (debug profile).
fn eval(py: &Path, client: &Path, ptc: &Path, config: &Path, extra: &[&str], program: &str) -> Result<Run> {
    let args = json!({"program": program}).to_string();
    let mut cmd = Command::new(py);
    cmd.arg(client).args(["--call", "lisp_eval", "--args", &args, "--timeout", "60", "--stdio"]).arg(ptc).args([
        "mcp",
        "--response-profile",
        "debug",
        "--upstreams",
    ]);
    cmd.arg(config).args(extra);
    let out = cmd.output().context("cannot run the Python MCP client")?;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    if !out.status.success() {
        bail!("client failed: {stderr}");
    }
    let report: Value = serde_json::from_str(&stdout).context("client output is not JSON")?;
    let text = report["call"]["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
    Ok(Run { text, everything: format!("{stdout}\n{stderr}") })
}

fn result_of(run: &Run) -> Result<(String, Value)> {
    let v: Value =
        serde_json::from_str(&run.text).with_context(|| format!("debug payload is not JSON: {}", run.text))?;
    if v["status"] != "ok" {
        bail!("{}: {}", v["reason"], v["message"]);
    }
    Ok((v["result"].as_str().unwrap_or_default().to_string(), v))
}

/// Runs the aggregator interop; returns (passed, failures).
pub fn run(root: &Path, ptc: &Path, py: &Path, dir: &Path) -> Result<(usize, Vec<String>)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    crate::step(
        "build the fixture upstream",
        &cargo,
        &["build", "-q", "-p", "ptc-mcp-aggregator", "--bin", "ptc-upstream-fixture"],
    )?;
    let fixture = crate::target_dir().join("debug/ptc-upstream-fixture");
    let bin = npm_servers(dir)?;
    let client = root.join("xtask/interop/mcp_client.py");
    let work = dir.join("upstreams-run");
    let _ = std::fs::remove_dir_all(&work);
    let sandbox = work.join("sandbox");
    std::fs::create_dir_all(&sandbox)?;
    std::fs::write(sandbox.join("notes.md"), "# Notes\nship the aggregator\n")?;
    std::fs::write(sandbox.join("watched.txt"), "3\n4\n6\n")?;
    let token_file = work.join("py-token");
    std::fs::write(&token_file, format!("{GOOD_TOKEN}\n"))?;

    let py_port = free_port()?;
    let mut py_child = Command::new(py)
        .arg(root.join("fixtures/upstreams/py_bearer_upstream.py"))
        .arg(py_upstream(root)?)
        .arg(py_port.to_string())
        .arg(&token_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start the Python upstream")?;
    wait_port(py_port, &mut py_child, "py_bearer_upstream.py")?;
    let _py = Killed(py_child);

    let api_port = free_port()?;
    let mut api_child = Command::new(py)
        .arg(root.join("fixtures/upstreams/orders_service.py"))
        .arg(api_port.to_string())
        .arg(&token_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start the orders service")?;
    let mut line = String::new();
    BufReader::new(api_child.stdout.take().context("no stdout")?).read_line(&mut line)?;
    let _api = Killed(api_child);

    let config = |py_token_source: Value| {
        json!({
            "credentials": {
                "py-token": py_token_source,
                "api-token": {"source": "file", "path": token_file, "scheme_hint": "bearer"}
            },
            "upstreams": {
                "fs": {"transport": "mcp_stdio", "command": bin.join("mcp-server-filesystem"), "args": [sandbox], "description": "Files of the sandbox directory"},
                "memory": {"transport": "mcp_stdio", "command": bin.join("mcp-server-memory"), "env": {"MEMORY_FILE_PATH": work.join("memory.jsonl")}},
                "everything": {"transport": "mcp_stdio", "command": bin.join("mcp-server-everything"), "args": ["stdio"], "request_timeout_ms": 1500, "max_response_bytes": 600},
                "crashy": {"transport": "mcp_stdio", "command": fixture, "description": "Fixture server that can crash"},
                "py": {"transport": "mcp_http", "url": format!("http://127.0.0.1:{py_port}/mcp"), "allow_insecure_http": true, "allow_insecure_auth": true,
                       "auth": [{"scheme": "bearer", "binding": "py-token"}], "description": "Python SDK server: add, get_orders, fail"},
                "orders": {"transport": "openapi", "base_url": format!("http://127.0.0.1:{api_port}"), "allow_insecure_http": true, "allow_insecure_auth": true,
                           "schema_file": root.join("fixtures/upstreams/orders.openapi.json"),
                           "auth": [{"scheme": "bearer", "binding": "api-token"}],
                           "include_operations": ["list_orders", "getOrder", "export_all"],
                           "max_response_bytes": 100000}
            }
        })
    };
    let good = work.join("upstreams.json");
    std::fs::write(&good, serde_json::to_string_pretty(&config(json!({"source": "file", "path": token_file})))?)?;
    let bad = work.join("upstreams-wrong-token.json");
    std::fs::write(&bad, serde_json::to_string_pretty(&config(json!({"source": "literal", "value": WRONG_TOKEN})))?)?;

    let cases: &[(&str, &str, &str)] = &[
        (
            "example 1: simple read (fs)",
            &format!(
                r#"(let [r (tool/call {{:server "fs" :tool "read_text_file" :args {{:path "{}"}}}})] (if (:ok r) (:value r) (fail (:message r))))"#,
                sandbox.join("notes.md").display()
            ),
            "ship the aggregator",
        ),
        (
            "example 2: cross-server filter (fs + openapi + py over http)",
            &format!(
                r#"(def unwrap (fn [r] (if (:ok r) (:value r) (fail (:message r)))))
(def watched (set (map parse-long (clojure.string/split-lines (unwrap (tool/call {{:server "fs" :tool "read_text_file" :args {{:path "{}"}}}}))))))
(def paid (unwrap (tool/call {{:server "orders" :tool "list_orders" :args {{:status "paid"}}}})))
(def py-orders (unwrap (tool/call {{:server "py" :tool "get_orders" :args {{:n 8}}}})))
{{:paid-watched (vec (sort (filter watched (map #(get % "id") paid))))
 :py-paid-watched (vec (sort (filter watched (map #(get % "id") (filter #(= "paid" (get % "status")) py-orders)))))}}"#,
                sandbox.join("watched.txt").display()
            ),
            "{:paid-watched [3 6] :py-paid-watched [3]}",
        ),
        (
            "example 3: parallel batch with pmap (py over http)",
            r#"(def items (pmap (fn [i] (tool/call {:server "py" :tool "add" :args {:a i :b 100}})) (range 10)))
(def good (map :value (filter :ok items)))
[(count good) (reduce + good)]"#,
            "[10 1045]",
        ),
        (
            "reference servers answer (everything echo, memory read_graph, tool/servers)",
            r#"[(:value (tool/call {:server "everything" :tool "echo" :args {:message "hi"}}))
 (:ok (tool/call {:server "memory" :tool "read_graph"}))
 (count (tool/servers))]"#,
            "true 6]",
        ),
        (
            "discovery over real catalogs",
            r#"[(some? (first (apropos "read file" {:limit 3}))) (string? (doc "fs/read_text_file")) (pos? (count (dir "everything")))]"#,
            "[true true true]",
        ),
        (
            "world fault: crashing upstream",
            r#"[(:reason (tool/call {:server "crashy" :tool "crash"})) (:ok (tool/call {:server "crashy" :tool "echo" :args {:text "again"}}))]"#,
            "[:upstream_unavailable true]",
        ),
        (
            "world fault: slow upstream past its timeout",
            r#"(:reason (tool/call {:server "everything" :tool "trigger-long-running-operation" :args {:duration 5 :steps 1}}))"#,
            ":timeout",
        ),
        (
            "world fault: oversized response",
            r#"(:reason (tool/call {:server "everything" :tool "get-tiny-image"}))"#,
            ":response_too_large",
        ),
        (
            "world fault: tool error and oversize (py, openapi)",
            r#"[(:reason (tool/call {:server "py" :tool "fail" :args {:message "boom"}})) (:reason (tool/call {:server "orders" :tool "export_all"}))]"#,
            "[:tool_error :response_too_large]",
        ),
    ];
    let mut passed = 0;
    let mut failures = Vec::new();
    let mut transcripts = String::new();
    for (name, program, want) in cases {
        match eval(py, &client, ptc, &good, &[], program) {
            Ok(run) => {
                transcripts.push_str(&run.everything);
                match result_of(&run) {
                    Ok((result, payload)) if result.contains(want) => {
                        if payload["ptc_metrics"]["schema_version"] != 1 {
                            failures.push(format!("{name}: no ptc_metrics in the debug payload"));
                        } else {
                            passed += 1;
                        }
                    }
                    Ok((result, _)) => failures.push(format!("{name}: got {result}, want {want}")),
                    Err(e) => failures.push(format!("{name}: {e:#}")),
                }
            }
            Err(e) => failures.push(format!("{name}: {e:#}")),
        }
    }
    // a wrong token: frozen start fails; live mode gives the program a tagged auth_failed
    let frozen = Command::new(ptc).args(["mcp", "--upstreams"]).arg(&bad).stdin(Stdio::null()).output()?;
    let frozen_err = String::from_utf8_lossy(&frozen.stderr).to_string();
    transcripts.push_str(&frozen_err);
    if !frozen.status.success() && frozen_err.contains("auth_failed") {
        passed += 1;
    } else {
        failures.push(format!("wrong token (frozen start): {frozen_err}"));
    }
    match eval(
        py,
        &client,
        ptc,
        &bad,
        &["--catalog-snapshot-mode", "live"],
        r#"(:reason (tool/call {:server "py" :tool "add" :args {:a 1 :b 2}}))"#,
    ) {
        Ok(run) => {
            transcripts.push_str(&run.everything);
            match result_of(&run) {
                Ok((r, _)) if r.contains(":auth_failed") => passed += 1,
                other => failures.push(format!("wrong token (live): {:?}", other.map(|(r, _)| r))),
            }
        }
        Err(e) => failures.push(format!("wrong token (live): {e:#}")),
    }
    // agents over the same upstreams: a mission tree where only the child may read files
    // and write the knowledge graph, and lisp_task driven by the Python SDK client
    match agent_mission(ptc, &good, &sandbox, &work) {
        Ok(()) => passed += 1,
        Err(e) => failures.push(format!("agent mission (fs + memory, per-agent grants): {e:#}")),
    }
    match lisp_task(root, py, &client, ptc, &good, &sandbox, &work) {
        Ok(everything) => {
            transcripts.push_str(&everything);
            passed += 1;
        }
        Err(e) => failures.push(format!("lisp_task (Python SDK client, fake vendor): {e:#}")),
    }
    // no secret in any response, catalog, error or log line
    for secret in [GOOD_TOKEN, WRONG_TOKEN, PLANNER_KEY] {
        if transcripts.contains(secret) {
            failures.push(format!("secret leak: a token appeared in the output ({}...)", &secret[..8]));
        } else {
            passed += 1;
        }
    }
    Ok((passed, failures))
}

/// `ptc run --agent` with a scripted model over the reference servers: the root has no
/// upstreams, its `librarian` child is granted `fs/read_text_file` and `memory/*`, reads
/// the sandbox's notes and files their heading in the knowledge graph.
fn agent_mission(ptc: &Path, config: &Path, sandbox: &Path, work: &Path) -> Result<()> {
    let agent = json!({
        "prompt": "Record the heading of the notes at {{path}} in the knowledge graph and report how many entities it holds",
        "signature": "{heading :string, entities :int}",
        "upstreams": [],
        "max_turns": 2,
        "tools": {"librarian": {"agent": {
            "prompt": "Read {{path}} and store its first heading as a note entity",
            "signature": "(path :string) -> {heading :string, entities :int}",
            "description": "Files a note's heading in the knowledge graph",
            "upstreams": ["fs/read_text_file", "memory/*"]
        }}}
    });
    let programs = [
        "(def r (tool/librarian {:path data/path}))\n(println r)",
        "(def text (:value (tool/call {:server \"fs\" :tool \"read_text_file\" :args {:path data/path}})))\n(def heading (str/trim (subs (first (str/split-lines text)) 2)))\n(tool/call {:server \"memory\" :tool \"create_entities\" :args {:entities [{:name heading :entityType \"note\" :observations [\"from notes.md\"]}]}})\n(def graph (tool/call {:server \"memory\" :tool \"read_graph\"}))\n(return {:heading heading :entities (count (:entities (:value graph)))})",
        "(return r)",
    ];
    let script: Vec<String> =
        programs.iter().map(|p| json!({"content": format!("```clojure\n{p}\n```")}).to_string()).collect();
    let agent_file = work.join("agent.json");
    std::fs::write(&agent_file, agent.to_string())?;
    let script_file = work.join("agent-script.jsonl");
    std::fs::write(&script_file, script.join("\n") + "\n")?;
    let context = json!({"path": sandbox.join("notes.md")}).to_string();
    let out = Command::new(ptc)
        .args(["run", "--upstreams"])
        .arg(config)
        .arg("--agent")
        .arg(&agent_file)
        .args(["--context-json", &context, "--output", "json", "--llm"])
        .arg(format!("script:{}", script_file.display()))
        .stdin(Stdio::null())
        .output()
        .context("cannot run ptc run")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let step: Value = serde_json::from_str(&stdout)
        .with_context(|| format!("not a step: {stdout} {}", String::from_utf8_lossy(&out.stderr)))?;
    if step["return"]["heading"] != "Notes" || step["return"]["entities"].as_u64().unwrap_or(0) < 1 {
        bail!("unexpected answer: {}", step["return"]);
    }
    let calls: Vec<String> = step["children"][0]["step"]["upstream_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{}/{} {}",
                c["server"].as_str().unwrap_or(""),
                c["tool"].as_str().unwrap_or(""),
                c["status"].as_str().unwrap_or("")
            )
        })
        .collect();
    let want = ["fs/read_text_file ok", "memory/create_entities ok", "memory/read_graph ok"];
    if calls != want {
        bail!("the child's upstream calls were {calls:?}, want {want:?}");
    }
    if !step["upstream_calls"].is_null() {
        bail!("the root has no upstreams but made calls: {}", step["upstream_calls"]);
    }
    Ok(())
}

/// `lisp_task` through the Python SDK client against `ptc mcp --agentic`, the planner
/// being a fake OpenAI vendor (`fixtures/upstreams/fake_openai.py`) that logs the exact
/// requests. Returns everything printed, for the secret check.
fn lisp_task(
    root: &Path,
    py: &Path,
    client: &Path,
    ptc: &Path,
    config: &Path,
    sandbox: &Path,
    work: &Path,
) -> Result<String> {
    let program = format!(
        "(def r (tool/call {{:server \"fs\" :tool \"read_text_file\" :args {{:path \"{}\"}}}}))\n(return (second (str/split-lines (:value r))))",
        sandbox.join("notes.md").display()
    );
    let program_file = work.join("planner-program.clj");
    std::fs::write(&program_file, &program)?;
    let log = work.join("vendor-requests.jsonl");
    let _ = std::fs::remove_file(&log);
    let mut vendor = Command::new(py)
        .arg(root.join("fixtures/upstreams/fake_openai.py"))
        .arg(&log)
        .arg(&program_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start the fake vendor")?;
    let mut port = String::new();
    BufReader::new(vendor.stdout.take().context("no stdout")?).read_line(&mut port)?;
    let _vendor = Killed(vendor);
    let args = json!({"task": "What does the second line of notes.md say?"}).to_string();
    let out = Command::new(py)
        .arg(client)
        .args(["--call", "lisp_task", "--args", &args, "--timeout", "60"])
        .args(["--env", &format!("OPENAI_API_KEY={PLANNER_KEY}")])
        .args(["--env", &format!("OPENAI_BASE_URL=http://127.0.0.1:{}/v1", port.trim())])
        .arg("--stdio")
        .arg(ptc)
        .args([
            "mcp",
            "--response-profile",
            "structured",
            "--agentic",
            "--agentic-model",
            "openai:interop-planner",
            "--upstreams",
        ])
        .arg(config)
        .output()
        .context("cannot run the Python MCP client")?;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let everything = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value =
        serde_json::from_str(&stdout).with_context(|| format!("client output is not JSON: {everything}"))?;
    let text = report["call"]["result"]["content"][0]["text"].as_str().unwrap_or_default();
    let body: Value = serde_json::from_str(text).with_context(|| format!("lisp_task result is not JSON: {text}"))?;
    if body["status"] != "ok" || body["answer"] != "ship the aggregator" {
        bail!("unexpected result: {body}");
    }
    if body["upstream_calls"][0]["server"] != "fs" || body["planner"]["model"] != "openai:interop-planner" {
        bail!("unexpected accounting: {body}");
    }
    let requests = std::fs::read_to_string(&log)?;
    let first: Value = serde_json::from_str(requests.lines().next().unwrap_or("{}"))?;
    let max = first["body"]["max_completion_tokens"].as_u64().or(first["body"]["max_tokens"].as_u64());
    if first["path"] != "/v1/chat/completions"
        || first["authorization"] != format!("Bearer {PLANNER_KEY}")
        || first["body"]["model"] != "interop-planner"
        || max != Some(1200)
    {
        bail!("unexpected vendor request: {first}");
    }
    let user = first["body"]["messages"][1]["content"].as_str().unwrap_or_default();
    if !user.contains("What does the second line of notes.md say?") {
        bail!("the task is not in the planner's request: {user}");
    }
    Ok(everything)
}
