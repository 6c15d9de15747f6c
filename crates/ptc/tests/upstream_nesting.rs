//! `ptc mcp` against upstreams that are ptc itself or never finish starting: a wrapper
//! (`sh -c 'exec ptc mcp ...'`) or a copy of the binary is refused at once instead of
//! nesting servers, a server that answers `initialize` but not `tools/list` fails start
//! within its handshake timeout, and SIGTERM during start stops ptc and its children.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PTC: &str = env!("CARGO_BIN_EXE_ptc");

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("ptc-nesting-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write_config(dir: &Path, upstream: serde_json::Value) -> String {
    let path = dir.join("upstreams.json");
    std::fs::write(&path, serde_json::json!({"upstreams": {"me": upstream}}).to_string()).unwrap();
    path.to_string_lossy().to_string()
}

/// Runs `ptc mcp --upstreams config` with stdin closed; (exit code, stderr, time taken).
fn mcp_start(config: &str) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let o = Command::new(PTC)
        .args(["mcp", "--upstreams", config])
        .env_remove("PTC_UPSTREAMS")
        .env_remove("PTC_UPSTREAM_DEPTH")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stderr).to_string(), started.elapsed())
}

/// True once `pid` has exited (gone or a zombie); waits for a kill to land, at most 5 s.
fn exited(pid: u32) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next()));
        if matches!(state, None | Some('Z' | 'X')) {
            return true;
        }
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_wrapper_that_runs_ptc_with_the_same_config_is_refused_without_nesting() {
    let dir = TempDir::new("sh");
    let path = dir.0.join("upstreams.json");
    let config = path.to_string_lossy().to_string();
    // the upstream is this same server, through a shell: the old check saw only "sh"
    write_config(
        &dir.0,
        serde_json::json!({"transport": "mcp_stdio", "command": "sh",
            "args": ["-c", format!("exec {PTC} mcp --upstreams {config}")]}),
    );
    let (code, err, took) = mcp_start(&config);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("upstream 'me' could not start"), "{err}");
    assert!(err.contains("refuses to start upstreams of its own"), "the child's reason reaches the operator: {err}");
    assert!(took < Duration::from_secs(8), "refused at once, not after timeouts: {took:?}");
}

#[test]
fn a_copy_of_the_binary_is_refused_by_its_server_info() {
    let dir = TempDir::new("copy");
    let copy = dir.0.join("not-ptc");
    if std::fs::hard_link(PTC, &copy).is_err() {
        std::fs::copy(PTC, &copy).unwrap();
    }
    let config = write_config(&dir.0, serde_json::json!({"transport": "mcp_stdio", "command": copy, "args": ["mcp"]}));
    let (code, err, _) = mcp_start(&config);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("could not start (self_upstream)"), "{err}");
    assert!(err.contains("answered `initialize` as the ptc MCP server itself"), "{err}");
}

/// A shell script MCP server that answers `initialize` and then never answers again,
/// writing its pid first.
fn mute_server(dir: &Path) -> (PathBuf, PathBuf) {
    let pid_file = dir.join("pid");
    let script = dir.join("mute.sh");
    std::fs::write(
        &script,
        format!(
            r#"echo $$ > {pid}.tmp && mv {pid}.tmp {pid}
read -r line
id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
version=$(printf '%s' "$line" | sed 's/.*"protocolVersion":"\([^"]*\)".*/\1/')
printf '{{"jsonrpc":"2.0","id":%s,"result":{{"protocolVersion":"%s","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"mute","version":"1"}}}}}}\n' "$id" "$version"
while read -r line; do :; done
"#,
            pid = pid_file.display()
        ),
    )
    .unwrap();
    (script, pid_file)
}

#[test]
fn a_server_that_never_lists_its_tools_fails_start_within_the_handshake_timeout() {
    let dir = TempDir::new("mute");
    let (script, pid_file) = mute_server(&dir.0);
    let config = write_config(
        &dir.0,
        serde_json::json!({"transport": "mcp_stdio", "command": "sh", "args": [script], "handshake_timeout_ms": 500}),
    );
    let (code, err, took) = mcp_start(&config);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("answered `initialize` but not `tools/list` within 500 ms"), "{err}");
    assert!(took < Duration::from_secs(8), "{took:?}");
    let pid: u32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    assert!(exited(pid), "the mute server {pid} outlived ptc");
}

#[test]
fn sigterm_while_upstreams_start_stops_ptc_and_its_children() {
    let dir = TempDir::new("term");
    let (script, pid_file) = mute_server(&dir.0);
    let config = write_config(
        &dir.0,
        serde_json::json!({"transport": "mcp_stdio", "command": "sh", "args": [script], "handshake_timeout_ms": 60000}),
    );
    let mut ptc = Command::new(PTC)
        .args(["mcp", "--upstreams", &config])
        .env_remove("PTC_UPSTREAM_DEPTH")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // the child is up (and ptc waits for its tool list) once its pid file exists
    let until = Instant::now() + Duration::from_secs(20);
    while !pid_file.exists() {
        assert!(Instant::now() < until, "the upstream never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let child: u32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    let signalled = Instant::now();
    assert!(Command::new("kill").args(["-TERM", &ptc.id().to_string()]).status().unwrap().success());
    let status = ptc.wait().unwrap();
    assert!(signalled.elapsed() < Duration::from_secs(5), "{:?}", signalled.elapsed());
    let mut err = String::new();
    ptc.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(0), "a signal during start is a clean stop: {err}");
    assert!(exited(child), "the upstream {child} outlived ptc");
}
