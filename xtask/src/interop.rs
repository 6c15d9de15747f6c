//! `cargo xtask interop`: `ptc mcp` against real peers — the Python MCP SDK client over
//! stdio and HTTP in every response profile, the MCP Inspector CLI, and every scenario of
//! the official conformance suite (`@modelcontextprotocol/conformance@0.1.16`, Node 22)
//! in server mode against a baseline of expected failures. Everything it installs lives
//! under `target/interop/`.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::Value;

const PYTHON_MCP: &str = "mcp==2.3.0";
const CONFORMANCE: &str = "@modelcontextprotocol/conformance@0.1.16";
const INSPECTOR: &str = "@modelcontextprotocol/inspector@2.12.0";
/// The conformance scenarios allowed to fail, one per line (`server:` list, the suite's
/// own baseline format). Each must belong to a capability `ptc mcp` does not advertise.
const EXPECTED_FAILURES: &str = "xtask/interop/conformance-expected-failures.yml";

/// Scenario name prefixes of capabilities the server does not advertise (it advertises
/// `tools` only): an expected failure outside these is a mistake in the baseline...
const UNADVERTISED: &[&str] = &[
    "resources-",
    "prompts-",
    "logging-",
    "completion-",
    "elicitation-",
    "tools-call-sampling",
    "tools-call-elicitation",
    "tools-call-with-logging",
];

/// ... except these, which call fixture tools that only the suite's reference server has
/// (`test_image_content`, `test_tool_with_progress`, `json_schema_2020_12_tool`, ...).
const FIXTURE_TOOL_SCENARIOS: &[&str] = &[
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-progress",
    "json-schema-2020-12",
    "server-sse-polling",
];

/// The scenario names of the baseline file.
fn expected_failures(root: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(root.join(EXPECTED_FAILURES)).context("cannot read the conformance baseline")?;
    let names: Vec<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(|n| n.split('#').next().unwrap_or_default().trim().to_string())
        .collect();
    for n in &names {
        if !UNADVERTISED.iter().any(|p| n.starts_with(p)) && !FIXTURE_TOOL_SCENARIOS.contains(&n.as_str()) {
            bail!("{EXPECTED_FAILURES} lists {n}, which belongs to an advertised capability: fix the server instead");
        }
    }
    Ok(names)
}

/// True when the tools the suite needs exist on this machine.
pub fn available() -> bool {
    let ok =
        |cmd: &str| Command::new(cmd).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    ok("python3") && ok("npm")
}

fn run_quiet(cmd: &mut Command, what: &str) -> Result<()> {
    let out = cmd.output().with_context(|| format!("cannot run {what}"))?;
    if !out.status.success() {
        bail!("{what} failed:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

pub(crate) fn python(dir: &Path) -> Result<PathBuf> {
    let venv = dir.join("venv");
    let py = venv.join("bin/python");
    if !py.exists() {
        eprintln!("interop: creating a Python venv with {PYTHON_MCP}");
        run_quiet(Command::new("python3").args(["-m", "venv"]).arg(&venv), "python3 -m venv")?;
    }
    let has = Command::new(&py).args(["-c", "import mcp"]).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !has {
        run_quiet(Command::new(&py).args(["-m", "pip", "install", "-q", PYTHON_MCP]), "pip install mcp")?;
    }
    Ok(py)
}

fn node(dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let prefix = dir.join("node");
    let node = prefix.join("node_modules/node/bin/node");
    let conformance = prefix.join("node_modules/@modelcontextprotocol/conformance");
    if !node.exists() || !conformance.exists() {
        eprintln!("interop: installing Node 22 and {CONFORMANCE} from the npm registry");
        run_quiet(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
                .arg(&prefix)
                .args(["node@22", CONFORMANCE]),
            "npm install",
        )?;
    }
    let bin = prefix.join("node_modules/.bin/conformance");
    Ok((node, bin))
}

/// The MCP Inspector's CLI (installed beside Node 22, which it needs).
fn inspector(dir: &Path) -> Result<PathBuf> {
    let prefix = dir.join("inspector");
    let bin = prefix.join("node_modules/.bin/mcp-inspector");
    if !bin.exists() {
        eprintln!("interop: installing {INSPECTOR} from the npm registry");
        run_quiet(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
                .arg(&prefix)
                .arg(INSPECTOR),
            "npm install inspector",
        )?;
    }
    Ok(bin)
}

/// One Inspector CLI run against `target` (a command line or a URL); returns its stdout.
fn inspect(bin: &Path, path: &str, home: &Path, target: &[String], args: &[&str]) -> Result<Value> {
    let out = Command::new(bin)
        .arg("--cli")
        .args(target)
        .args(args)
        .env("PATH", path)
        .env("HOME", home)
        .output()
        .context("cannot run the MCP Inspector")?;
    if !out.status.success() {
        bail!("inspector failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let json = text.find('{').map(|i| &text[i..]).unwrap_or("null");
    serde_json::from_str(json).with_context(|| format!("inspector printed no JSON: {text}"))
}

struct HttpServer {
    child: Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_http(ptc: &Path, profile: &str) -> Result<HttpServer> {
    start_http_with(ptc, &["--response-profile", profile])
}

fn start_http_with(ptc: &Path, extra: &[&str]) -> Result<HttpServer> {
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut child = Command::new(ptc)
        .args(["mcp", "--http", &format!("127.0.0.1:{port}")])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start ptc mcp --http")?;
    let mut err = BufReader::new(child.stderr.take().context("no stderr")?);
    let mut line = String::new();
    loop {
        line.clear();
        if err.read_line(&mut line)? == 0 {
            bail!("ptc mcp --http exited before serving");
        }
        if line.contains("serving MCP over Streamable HTTP") {
            break;
        }
    }
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    Ok(HttpServer { child, url: format!("http://127.0.0.1:{port}/mcp") })
}

/// One client run; returns the parsed JSON report.
fn client(py: &Path, script: &Path, target: &[String], program: &str, mode: &str) -> Result<Value> {
    let args = serde_json::json!({"program": program}).to_string();
    let out = Command::new(py)
        .arg(script)
        .args(["--mode", mode, "--call", "lisp_eval", "--args", &args, "--timeout", "20"])
        .args(target)
        .output()
        .context("cannot run the Python MCP client")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("python client failed: {stderr}");
    }
    // the SDK logs this when DELETE /mcp is not answered with 200 or 204
    if stderr.contains("Session termination failed") {
        bail!("the client could not end its session: {stderr}");
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

fn check(report: &Value, want_error: bool, want_text: &str) -> Result<()> {
    let result = &report["call"]["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let is_error = result["isError"].as_bool().unwrap_or(false);
    if is_error != want_error || !text.contains(want_text) {
        bail!("unexpected result (isError {is_error}): {text}");
    }
    if report["tools"] != serde_json::json!(["lisp_eval"]) {
        bail!("tools/list gave {}", report["tools"]);
    }
    Ok(())
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Runs the whole interop suite.
pub fn run(root: &Path) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    crate::step("build ptc", &cargo, &["build", "-q", "-p", "ptc"])?;
    let ptc = crate::target_dir().join("debug/ptc");
    let dir = crate::target_dir().join("interop");
    std::fs::create_dir_all(&dir)?;
    let script = root.join("xtask/interop/mcp_client.py");
    let py = python(&dir)?;
    let mut passed = 0;
    let mut failures = Vec::new();
    let cases = [("(+ 1 2)", false, "3"), ("(+ 1", true, "parse_error"), ("(fail {:reason :x})", true, "fail")];
    for profile in ["slim", "structured", "debug"] {
        let stdio: Vec<String> = ["--stdio", &ptc.to_string_lossy(), "mcp", "--response-profile", profile]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let server = start_http(&ptc, profile)?;
        let http = vec!["--http".to_string(), server.url.clone()];
        for (transport, target) in [("stdio", &stdio), ("http", &http)] {
            for (program, want_error, want) in cases {
                let name = format!("python sdk / {transport} / {profile} / {program}");
                match client(&py, &script, target, program, "legacy").and_then(|r| check(&r, want_error, want)) {
                    Ok(()) => passed += 1,
                    Err(e) => failures.push(format!("{name}: {e:#}")),
                }
            }
        }
    }
    // the 2.x client's discover-first lifecycle falls back to initialize
    match client(
        &py,
        &script,
        &["--stdio".to_string(), ptc.to_string_lossy().to_string(), "mcp".into()],
        "(* 6 7)",
        "auto",
    )
    .and_then(|r| check(&r, false, "42"))
    {
        Ok(()) => passed += 1,
        Err(e) => failures.push(format!("python sdk / stdio / auto mode: {e:#}")),
    }
    let (node_bin, conformance) = node(&dir)?;
    let node_dir = node_bin.parent().map(Path::to_path_buf).unwrap_or_default();
    let path = format!("{}:{}", node_dir.display(), std::env::var("PATH").unwrap_or_default());
    // the MCP Inspector CLI, as the troubleshooting section of docs/mcp.md uses it
    let insp = inspector(&dir)?;
    let home = dir.join("inspector-home");
    std::fs::create_dir_all(&home)?;
    let http_server = start_http(&ptc, "slim")?;
    let targets = [
        ("stdio", vec![ptc.to_string_lossy().to_string(), "mcp".to_string()]),
        ("http", vec![http_server.url.clone()]),
    ];
    for (transport, target) in &targets {
        let r = inspect(&insp, &path, &home, target, &["--method", "tools/list"])
            .and_then(|v| if v["tools"][0]["name"] == "lisp_eval" { Ok(()) } else { bail!("tools/list gave {v}") });
        let call = inspect(
            &insp,
            &path,
            &home,
            target,
            &["--method", "tools/call", "--tool-name", "lisp_eval", "--tool-arg", "program=(+ 1 2)"],
        )
        .and_then(|v| if v["content"][0]["text"] == "user=> 3" { Ok(()) } else { bail!("tools/call gave {v}") });
        for (what, r) in [("tools/list", r), ("tools/call", call)] {
            match r {
                Ok(()) => passed += 1,
                Err(e) => failures.push(format!("inspector / {transport} / {what}: {e:#}")),
            }
        }
    }
    drop(http_server);

    let server = start_http(&ptc, "slim")?;
    let expected = expected_failures(root)?;
    let log = dir.join("conformance.log");
    let results = dir.join("conformance-results");
    let _ = std::fs::remove_dir_all(&results);
    // every scenario of the suite, active and pending; failures outside the baseline, and
    // baseline entries that now pass, make the run fail
    let out = Command::new(&conformance)
        .args(["server", "--url", &server.url, "--suite", "all", "--expected-failures"])
        .arg(root.join(EXPECTED_FAILURES))
        .arg("-o")
        .arg(&results)
        .env("PATH", &path)
        .env("NODE_OPTIONS", format!("--require {}", root.join("xtask/interop/loopback.cjs").display()))
        .output()
        .context("cannot run the conformance suite")?;
    std::fs::write(&log, [out.stdout.as_slice(), out.stderr.as_slice()].concat())?;
    let summary = strip_ansi(&String::from_utf8_lossy(&out.stdout));
    let scenarios = summary.lines().filter(|l| l.starts_with('✓') || l.starts_with('✗')).count();
    let failed: Vec<&str> = summary.lines().filter(|l| l.starts_with('✗')).collect();
    eprintln!(
        "interop: conformance suite: {scenarios} scenarios, {} failed, {} expected to fail (log: {})",
        failed.len(),
        expected.len(),
        log.display()
    );
    if out.status.success() {
        passed += 1;
    } else {
        for f in &failed {
            let name = f.trim_start_matches(['✓', '✗', ' ']).split(':').next().unwrap_or_default();
            if !expected.iter().any(|e| e == name) {
                failures.push(format!("conformance {name}: unexpected failure"));
            }
        }
        failures.push(format!("conformance suite failed against the baseline (see {})", log.display()));
    }
    // stateful sessions across two instances sharing Redis (issue #25)
    match python_sessions(root, &ptc, &py) {
        Ok(n) => passed += n,
        Err(e) => failures.push(format!("python sdk / sessions: {e:#}")),
    }
    // aggregator mode against real upstreams (issue #16)
    let (agg_passed, agg_failures) = crate::interop_upstreams::run(root, &ptc, &py, &dir)?;
    passed += agg_passed;
    failures.extend(agg_failures.into_iter().map(|f| format!("aggregator: {f}")));
    for f in &failures {
        eprintln!("interop: FAIL {f}");
    }
    eprintln!("interop: {passed} checks passed, {} failed", failures.len());
    if !failures.is_empty() {
        bail!("{} interop checks failed", failures.len());
    }
    Ok(())
}

/// The Python SDK drives `lisp_session_*` end to end over Streamable HTTP against two
/// `ptc mcp --sessions` instances sharing one `redis-server` (started here on a free
/// loopback port) and one prelude (`xtask/interop/mcp_sessions.py` checks each step).
/// Returns the number of steps that passed.
fn python_sessions(root: &Path, ptc: &Path, py: &Path) -> Result<usize> {
    let redis = crate::load::sessions::Redis::start()?;
    let store = format!("redis://127.0.0.1:{}/0", redis.1);
    let prelude = root.join("fixtures/preludes/crm.clj");
    let prelude = prelude.to_string_lossy();
    let flags = ["--sessions", "--session-store", &store, "--response-profile", "structured", "--prelude", &prelude];
    let (a, b) = (start_http_with(ptc, &flags)?, start_http_with(ptc, &flags)?);
    let out = Command::new(py)
        .arg(root.join("xtask/interop/mcp_sessions.py"))
        .args(["--http", &a.url, "--http", &b.url])
        .output()
        .context("cannot run the Python MCP sessions client")?;
    let report: Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("the sessions client printed no report: {}", String::from_utf8_lossy(&out.stderr)))?;
    let steps = report["steps"].as_array().map_or(0, Vec::len);
    if !out.status.success() || report["ok"] != true {
        bail!("{}", report["error"].as_str().unwrap_or("the sessions client failed"));
    }
    eprintln!("interop: python sdk drove sessions across two instances + redis: {steps} steps passed");
    Ok(steps)
}

/// Only the sessions part (`cargo xtask interop-sessions`).
pub fn run_sessions_only(root: &Path) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    crate::step("build ptc", &cargo, &["build", "-q", "-p", "ptc"])?;
    let ptc = crate::target_dir().join("debug/ptc");
    let dir = crate::target_dir().join("interop");
    std::fs::create_dir_all(&dir)?;
    let py = python(&dir)?;
    python_sessions(root, &ptc, &py).map(|_| ())
}

/// Only the aggregator part (`cargo xtask interop-upstreams`).
pub fn run_upstreams_only(root: &Path) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    crate::step("build ptc", &cargo, &["build", "-q", "-p", "ptc"])?;
    let ptc = crate::target_dir().join("debug/ptc");
    let dir = crate::target_dir().join("interop");
    std::fs::create_dir_all(&dir)?;
    let py = python(&dir)?;
    let (passed, failures) = crate::interop_upstreams::run(root, &ptc, &py, &dir)?;
    for f in &failures {
        eprintln!("interop: FAIL {f}");
    }
    eprintln!("interop (aggregator): {passed} checks passed, {} failed", failures.len());
    if !failures.is_empty() {
        bail!("{} aggregator interop checks failed", failures.len());
    }
    Ok(())
}
