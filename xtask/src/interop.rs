//! `cargo xtask interop`: `ptc mcp` against real peers — the Python MCP SDK client over
//! stdio and HTTP in every response profile, and the official conformance suite
//! (`@modelcontextprotocol/conformance@0.1.16`, Node 22) in server mode. Everything it
//! installs lives under `target/interop/`.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::Value;

const PYTHON_MCP: &str = "mcp==2.3.0";
const CONFORMANCE: &str = "@modelcontextprotocol/conformance@0.1.16";
const SCENARIOS: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-error",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];

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
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut child = Command::new(ptc)
        .args(["mcp", "--http", &format!("127.0.0.1:{port}"), "--response-profile", profile])
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
    if !out.status.success() {
        bail!("python client failed: {}", String::from_utf8_lossy(&out.stderr));
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
    let server = start_http(&ptc, "slim")?;
    for scenario in SCENARIOS {
        let log = dir.join(format!("conformance-{scenario}.log"));
        let out = Command::new(&conformance)
            .args(["server", "--url", &server.url, "--scenario", scenario])
            .env("PATH", &path)
            .env("NODE_OPTIONS", format!("--require {}", root.join("xtask/interop/loopback.cjs").display()))
            .output()
            .context("cannot run the conformance suite")?;
        std::fs::write(&log, [out.stdout.as_slice(), out.stderr.as_slice()].concat())?;
        if out.status.success() {
            passed += 1;
        } else {
            failures.push(format!("conformance {scenario}: failed (see {})", log.display()));
        }
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
