//! Every exit reason of the `ptc` binary is reachable: for each `Exit`, the binary run as a
//! user would run it exits with that reason's status and prints what `docs/reasons/cli.md`
//! says it prints. `exit.rs` is compiled into this test as it is, so the `match` in
//! [`reach`] is exhaustive: a new reason does not compile until it has a case here.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

#[allow(dead_code)]
#[path = "../src/exit.rs"]
mod exit;

use std::io::Read;
use std::process::{Command, Stdio};

use common::cli::{PTC, err, out, ptc, scratch, script, step_of, write};
use exit::Exit;
use serde_json::json;

/// Runs the binary into `reason`; its exit status, after checking what it printed.
fn reach(reason: Exit) -> Option<i32> {
    let dir = scratch();
    let status = match reason {
        Exit::UsageError => {
            let o = ptc(&["eval", "--output", "json"]);
            let env: serde_json::Value = serde_json::from_str(out(&o).trim()).unwrap();
            assert_eq!(env["reason"], reason.as_str(), "{env}");
            assert!(env["message"].as_str().unwrap().contains("give a program"), "{env}");
            let text = ptc(&["eval", "--no-such-flag", "1"]);
            assert_eq!(text.status.code(), o.status.code(), "a text-mode usage error exits the same");
            o.status.code()
        }
        Exit::ProgramFailed => {
            let o = ptc(&["eval", "--output", "json", "(quot 1 0)"]);
            let env: serde_json::Value = serde_json::from_str(out(&o).trim()).unwrap();
            assert_eq!(env["reason"], "arithmetic_error", "the evaluator's reason: {env}");
            let text = ptc(&["eval", "(quot 1 0)"]);
            assert!(err(&text).starts_with("Eval error: "), "{}", err(&text));
            o.status.code()
        }
        Exit::MissionFailed => {
            let llm = format!("script:{}", script(&dir, &["(fail {:reason :out-of-stock :message \"none left\"})"]));
            let o = ptc(&["run", "--prompt", "Buy one", "--llm", &llm, "--output", "json"]);
            let step = step_of(&o);
            assert_eq!(step["fail"]["reason"], "out-of-stock", "the mission's reason: {step}");
            let text = ptc(&["run", "--prompt", "Buy one", "--llm", &llm]);
            assert!(err(&text).contains("Failed (out-of-stock): none left"), "{}", err(&text));
            o.status.code()
        }
        Exit::UpstreamUnusable => {
            let config =
                json!({"upstreams": {"broken": {"transport": "mcp_stdio", "command": "sh", "args": ["-c", "exit 4"]}}});
            let path = write(&dir, "upstreams.json", &config.to_string());
            let o = ptc(&["mcp", "--check", "--upstreams", &path]);
            assert!(out(&o).contains("FAILED  broken (mcp_stdio"), "{}", out(&o));
            o.status.code()
        }
        Exit::DryRunFailed => {
            let llm = format!("script:{}", write(&dir, "empty.jsonl", ""));
            let o =
                ptc(&["run", "--prompt", "x", "--llm", &llm, "--dry-run", "--max-cost-usd", "1", "--output", "json"]);
            let dry = step_of(&o);
            assert!(dry["problems"][0].as_str().unwrap().contains("no price is known"), "{dry}");
            o.status.code()
        }
        Exit::Interrupted => {
            // a command tool that says when it runs, then blocks; SIGTERM to ptc ends both
            let fifo = dir.join("started");
            assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
            let tools = json!({"tools": {"hangs": {"command": ["sh", "-c", format!("cat >/dev/null; echo up > {}; sleep 300", fifo.display())]}}});
            let tools = write(&dir, "tools.json", &tools.to_string());
            let llm = format!("script:{}", script(&dir, &["(tool/hangs {})"]));
            let mut child = Command::new(PTC)
                .args(["run", "--prompt", "Go", "--llm", &llm, "--tools", &tools])
                .args(["--timeout-ms", "60000", "--tool-timeout-ms", "60000"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut up = String::new();
            std::fs::File::open(&fifo).unwrap().read_to_string(&mut up).unwrap();
            assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
            let status = child.wait().unwrap();
            assert_eq!(status.code(), Some(i32::from(reason.with_signal(15))), "SIGTERM is 15: {status:?}");
            status.code()
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    status
}

#[test]
fn every_exit_reason_is_reachable_through_the_binary() {
    let mut failures = Vec::new();
    for reason in Exit::ALL {
        let want = if reason == Exit::Interrupted { reason.with_signal(15) } else { reason.code() };
        let got = reach(reason);
        if got != Some(i32::from(want)) {
            failures.push(format!("  {reason}: exit {got:?}, want {want}"));
        }
    }
    assert!(failures.is_empty(), "{} reason(s) not reached:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn help_lists_every_exit_status() {
    let o = ptc(&["--help"]);
    let help = out(&o);
    for reason in Exit::ALL {
        assert!(help.contains(reason.as_str()) && help.contains(reason.description()), "{reason} in:\n{help}");
    }
}
