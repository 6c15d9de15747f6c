//! `--upstreams` on the CLI: config errors stop `eval`, `repl` and `mcp` with exit code 2
//! and a message naming the file, the upstream and the field; a failing upstream is a
//! world fault the program sees.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output, Stdio};

fn ptc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(args)
        .env_remove("PTC_UPSTREAMS")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn write(dir: &std::path::Path, text: &str) -> String {
    let p = dir.join("upstreams.json");
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().to_string()
}

#[test]
fn config_errors_exit_2_and_name_file_upstream_and_field() {
    let dir = std::env::temp_dir().join(format!("ptc-upstreams-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = write(&dir, r#"{"upstreams": {"fs": {"transport": "stdio", "command": "x"}}}"#);
    for cmd in [&["eval", "--upstreams", &path, "1"][..], &["mcp", "--upstreams", &path][..]] {
        let o = ptc(cmd);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}: {err}");
        assert!(
            err.contains(&format!(
                "{path}: upstream 'fs', field `transport`: \"stdio\" is not accepted: use mcp_stdio or mcp_http"
            )),
            "{err}"
        );
    }
    let o = ptc(&["eval", "--upstreams", "/nonexistent/upstreams.json", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("the upstreams config /nonexistent/upstreams.json: cannot read it")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_upstream_that_cannot_start_is_a_world_fault_in_eval_and_fails_mcp_start() {
    let dir = std::env::temp_dir().join(format!("ptc-upstreams-cli2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = write(
        &dir,
        r#"{"credentials": {"t": {"source": "literal", "value": "sekret-literal-value"}},
            "upstreams": {"gone": {"transport": "mcp_stdio", "command": "/nonexistent/server", "env": {"T": "sekret-literal-value"}}}}"#,
    );
    let o = ptc(&[
        "eval",
        "--upstreams",
        &path,
        "--output",
        "json",
        "(:reason (tool/call {:server \"gone\" :tool \"x\"}))",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(out.contains(":upstream_unavailable"), "{out}");
    assert!(out.contains("\"upstream_calls\""), "{out}");
    let o = ptc(&["mcp", "--upstreams", &path]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("upstream 'gone' could not start (upstream_unavailable)"), "{err}");
    assert!(!err.contains("sekret-literal-value"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `ptc mcp --check`: every upstream started and listed, each one's tools or its problem
/// printed, exit 1 when one is not usable.
#[test]
fn mcp_check_lists_each_upstream_s_tools_or_its_problem() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
    let script = root.join("fixtures/missions/two-servers/mini_mcp.py");
    let dir = tempfile::tempdir().unwrap();
    let config = serde_json::json!({"upstreams": {
        "crm": {"transport": "mcp_stdio", "command": "python3", "args": [script, "crm"]},
        "broken": {"transport": "mcp_stdio", "command": "sh", "args": ["-c", "echo 'cannot read config.yaml' >&2; exit 4"]}
    }});
    let path = write(dir.path(), &config.to_string());
    let out = ptc(&["mcp", "--check", "--upstreams", &path]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let crm = stdout.lines().find(|l| l.contains("crm")).unwrap_or_default();
    assert!(crm.starts_with("ok      crm (mcp_stdio"), "{stdout}");
    assert!(crm.contains("tool(s):"), "{stdout}");
    let broken = stdout.lines().find(|l| l.contains("broken")).unwrap_or_default();
    assert!(broken.starts_with("FAILED  broken (mcp_stdio"), "{stdout}");
    assert!(stdout.contains("cannot read config.yaml"), "its stderr is quoted: {stdout}");
    // without upstreams there is nothing to check
    let none = ptc(&["mcp", "--check"]);
    assert_eq!(none.status.code(), Some(0));
}
