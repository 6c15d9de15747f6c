//! The same logging flags on every subcommand: `--log-level`, `--log-format`, `-v`, `-q`
//! and `RUST_LOG`, with logs on stderr only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

fn ptc(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ptc"));
    cmd.args(args).env_remove("RUST_LOG").env_remove("PTC_LOG_LEVEL").env_remove("PTC_LOG_FORMAT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    // stdin is empty: `ptc mcp` logs its start and ends at EOF
    cmd.stdin(std::process::Stdio::null());
    cmd.output().expect("run ptc")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn mcp_logs_at_info_by_default_and_quiet_silences_it() {
    let loud = ptc(&["mcp"], &[]);
    assert!(stderr(&loud).contains("serving MCP over stdio"), "{}", stderr(&loud));
    for args in [&["-q", "mcp"][..], &["mcp", "-q"], &["mcp", "--log-level", "error"]] {
        let quiet = ptc(args, &[]);
        assert!(!stderr(&quiet).contains("serving MCP"), "{args:?}: {}", stderr(&quiet));
    }
}

#[test]
fn json_log_lines_are_json_on_every_subcommand() {
    let out = ptc(&["mcp", "--log-format", "json"], &[]);
    let line = stderr(&out).lines().find(|l| l.contains("serving MCP")).map(str::to_string).unwrap_or_default();
    let parsed: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    assert_eq!(parsed["level"], "INFO");
    // the flag parses on the other subcommands too, and leaves stdout alone
    let eval = ptc(&["eval", "--log-format", "json", "-vv", "-e", "(+ 1 2)"], &[]);
    assert!(eval.status.success(), "{}", stderr(&eval));
    assert_eq!(String::from_utf8_lossy(&eval.stdout), "3\n");
}

#[test]
fn rust_log_applies_when_no_flag_is_given_and_a_flag_wins_over_it() {
    let env_only = ptc(&["mcp"], &[("RUST_LOG", "error")]);
    assert!(!stderr(&env_only).contains("serving MCP"), "RUST_LOG=error: {}", stderr(&env_only));
    let flag = ptc(&["mcp", "-v"], &[("RUST_LOG", "error")]);
    assert!(stderr(&flag).contains("serving MCP"), "-v wins over RUST_LOG: {}", stderr(&flag));
}

#[test]
fn a_bad_level_is_a_usage_error_that_says_what_to_write() {
    let out = ptc(&["eval", "--log-level", "verbose", "-e", "1"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("use error, warn, info, debug or trace"), "{}", stderr(&out));
    let both = ptc(&["eval", "-v", "-q", "-e", "1"], &[]);
    assert_eq!(both.status.code(), Some(2), "-v and -q together: {}", stderr(&both));
}
