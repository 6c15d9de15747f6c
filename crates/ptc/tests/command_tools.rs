//! Command tools as a hostile or careless tool would use them: they see only the
//! environment the tools file declares, their output is capped, a result is collected as
//! soon as the command exits, and nothing they start outlives the call or `ptc`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::cli::{command, err, scratch, write};
use serde_json::{Value, json};

const SECRET: &str = "sk-test-do-not-leak-4242";

/// Runs `ptc` with vendor secrets in its environment, as an operator's shell would have.
fn ptc(args: &[&str]) -> Output {
    command().args(args).env("OPENAI_API_KEY", SECRET).env("PTC_TEST_UPSTREAM_TOKEN", SECRET).output().unwrap()
}

fn script(dir: &Path, programs: &[&str]) -> String {
    format!("script:{}", common::cli::script(dir, programs))
}

/// `ptc run --output json` with `tools` and a script of `programs`; the Step.
fn run(dir: &Path, tools: &Value, programs: &[&str], extra: &[&str]) -> (Output, Value) {
    let tools = write(dir, "tools.json", &tools.to_string());
    let llm = script(dir, programs);
    let mut args = vec!["run", "--prompt", "Go", "--llm", &llm, "--tools", &tools, "--output", "json"];
    args.extend(extra);
    let o = ptc(&args);
    let step = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o, step)
}

/// A shell tool printing, as JSON, the environment variables named in `names`
/// (`null` when unset).
fn env_printer(names: &[&str]) -> Vec<String> {
    let fields: Vec<String> = names
        .iter()
        .map(|n| {
            format!("printf '\"{n}\": '; if [ -n \"${{{n}+x}}\" ]; then printf '\"%s\"' \"${n}\"; else printf null; fi")
        })
        .collect();
    vec![
        "sh".into(),
        "-c".into(),
        format!("cat >/dev/null; printf '{{'; {}; printf '}}'", fields.join("; printf ', '; ")),
    ]
}

#[test]
fn a_tool_sees_no_secret_unless_the_tools_file_hands_it_over() {
    let dir = scratch();
    let names = ["OPENAI_API_KEY", "PTC_TEST_UPSTREAM_TOKEN", "PATH", "MODE"];
    let tools = json!({"tools": {
        "plain": {"command": env_printer(&names)},
        "trusted": {"command": env_printer(&names), "inherit_env": ["OPENAI_API_KEY"], "env": {"MODE": "fast"}},
    }});
    let (o, step) = run(&dir, &tools, &["(return {:plain (tool/plain {}) :trusted (tool/trusted {})})"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let plain = &step["return"]["plain"];
    assert_eq!(plain["OPENAI_API_KEY"], Value::Null, "{step}");
    assert_eq!(plain["PTC_TEST_UPSTREAM_TOKEN"], Value::Null, "{step}");
    assert_eq!(plain["MODE"], Value::Null, "{step}");
    assert!(plain["PATH"].is_string(), "PATH is in the safe set: {step}");
    let trusted = &step["return"]["trusted"];
    assert_eq!(trusted["OPENAI_API_KEY"], SECRET, "{step}");
    assert_eq!(trusted["PTC_TEST_UPSTREAM_TOKEN"], Value::Null, "{step}");
    assert_eq!(trusted["MODE"], "fast", "{step}");
    assert!(!String::from_utf8_lossy(&o.stdout).contains("PTC_TEST_UPSTREAM_TOKEN\": \"sk"), "{step}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn env_declarations_are_checked_with_the_tool_and_field_named() {
    let dir = scratch();
    let cases = [
        (json!({"t": {"result": 1, "env": {"A": "1"}}}), "tool \"t\": \"env\" goes with \"command\" only"),
        (
            json!({"t": {"command": ["cat"], "env": {"A=B": "1"}}}),
            "tool \"t\": \"env\" \"A=B\" is not an environment variable name",
        ),
        (
            json!({"t": {"command": ["cat"], "inherit_env": [""]}}),
            "tool \"t\": \"inherit_env\" \"\" is not an environment variable name",
        ),
        (
            json!({"t": {"command": ["cat"], "env": {"K": "v"}, "inherit_env": ["K"]}}),
            "tool \"t\": \"inherit_env\" K is also set in \"env\"",
        ),
        (json!({"t": {"command": ["cat"], "inherit_env": "PATH"}}), "tool \"t\": invalid type"),
        (
            json!({"t": {"command": ["cat"], "max_output_bytes": 0}}),
            "tool \"t\": \"max_output_bytes\" 0 is out of range",
        ),
    ];
    for (tools, expected) in cases {
        let (o, _) = run(&dir, &json!({"tools": tools}), &["(return 1)"], &[]);
        assert_eq!(o.status.code(), Some(2), "{tools}: {}", err(&o));
        assert!(err(&o).contains(expected), "{tools}: {}", err(&o));
    }
    // the agent file takes the same fields
    let agent = json!({"prompt": "Go", "tools": {"t": {"result": 1, "inherit_env": ["HOME"]}}});
    let agent = write(&dir, "agent.json", &agent.to_string());
    let llm = script(&dir, &["(return 1)"]);
    let o = ptc(&["run", "--agent", &agent, "--llm", &llm]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("`root.tools.t`: inherit_env: goes with \"command\" only"), "{}", err(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn output_over_the_cap_kills_the_tool_with_a_clear_error() {
    let dir = scratch();
    let tools = json!({"tools": {
        // prints without end: only the cap stops it
        "flood": {"command": ["sh", "-c", "cat >/dev/null; yes"], "max_output_bytes": 100000},
        // 5 MB against the default of 4 MiB
        "big": {"command": ["sh", "-c", "cat >/dev/null; head -c 5000000 /dev/zero | tr '\\\\0' x"]},
        "small": {"command": ["sh", "-c", "cat >/dev/null; echo '[1, 2]'"], "max_output_bytes": 7},
    }});
    let (o, step) = run(
        &dir,
        &tools,
        &["(tool/flood {})", "(tool/big {})", "(return (tool/small {}))"],
        &["--timeout-ms", "60000", "--tool-timeout-ms", "60000"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let e1 = step["turns"][0]["tool_calls"][0]["error"].as_str().unwrap_or_default();
    assert!(
        e1.contains("printed more than 100000 bytes on stdout (max_output_bytes of the tool) and was killed"),
        "{}",
        step["turns"][0]
    );
    let e2 = step["turns"][1]["tool_calls"][0]["error"].as_str().unwrap_or_default();
    assert!(e2.contains("printed more than 4194304 bytes"), "{}", step["turns"][1]);
    assert_eq!(step["return"], json!([1, 2]), "{step}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Whether `pid` still runs as a process whose command line holds `marker` (a zombie
/// counts as gone; another process reusing the pid does not count).
#[cfg(target_os = "linux")]
fn alive(pid: &str, marker: &str) -> bool {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let zombie = state.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
    !zombie && String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(marker)
}

#[cfg(target_os = "linux")]
#[test]
fn a_result_is_collected_when_the_tool_exits_even_if_a_child_holds_stdout() {
    let dir = scratch();
    // each tool answers at once but leaves a process holding its stdout: one in its group,
    // one that left it with setsid
    let tools = json!({"tools": {
        "grouped": {"command": ["sh", "-c", "cat >/dev/null; sleep 301 & echo '{\"ok\": 1}'"]},
        "escaped": {"command": ["sh", "-c", "cat >/dev/null; setsid sleep 302 & echo '{\"ok\": 2}'"]},
    }});
    let started = Instant::now();
    let (o, step) = run(
        &dir,
        &tools,
        &["(return [(tool/grouped {}) (tool/escaped {})])"],
        &["--timeout-ms", "60000", "--tool-timeout-ms", "60000"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    // before, each call waited for end of file until the 60 s limit and was a timeout
    assert_eq!(step["return"], json!([{"ok": 1}, {"ok": 2}]), "{step}");
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(target_os = "linux")]
#[test]
fn no_process_a_tool_started_outlives_the_call_or_ptc() {
    let dir = scratch();
    let pid = |name: &str| dir.join(name).to_string_lossy().to_string();
    let (done, escaped, hung_child, hung_escaped) =
        (pid("done"), pid("escaped"), pid("hung-child"), pid("hung-escaped"));
    let report = pid("report");
    let tools = json!({"tools": {
        // answers, leaving a setsid process behind
        "leaves": {"command": ["sh", "-c", format!(
            "cat >/dev/null; sleep 303 >/dev/null 2>&1 & echo $! > {done}; setsid sleep 304 >/dev/null 2>&1 & echo $! > {escaped}; echo 1")]},
        // never answers; still running when the mission ends
        "hangs": {"command": ["sh", "-c", format!(
            "cat >/dev/null; for f in {done} {escaped}; do if kill -0 $(cat $f) 2>/dev/null; then echo alive; else echo gone; fi; done > {report}; \
             sleep 305 & echo $! > {hung_child}; setsid sleep 306 >/dev/null 2>&1 & echo $! > {hung_escaped}; wait")]},
    }});
    let (o, step) = run(
        &dir,
        &tools,
        &["(tool/leaves {})", "(tool/hangs {})"],
        &["--timeout-ms", "60000", "--tool-timeout-ms", "60000", "--mission-timeout-ms", "5000"],
    );
    // the mission ended by its time limit while `hangs` was running
    assert_eq!(o.status.code(), Some(1), "{}\n{step}", err(&o));
    // what `leaves` left behind was gone when the next call started
    let report = std::fs::read_to_string(&report).unwrap_or_else(|e| panic!("{report}: {e}\n{step}"));
    assert_eq!(report, "gone\ngone\n", "{step}");
    for (file, marker) in
        [(&done, "sleep 303"), (&escaped, "sleep 304"), (&hung_child, "sleep 305"), (&hung_escaped, "sleep 306")]
    {
        let pid = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file}: {e}\n{step}"));
        assert!(!alive(pid.trim(), marker), "{marker} (pid {}) outlived ptc", pid.trim());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SIGTERM (or Ctrl-C's SIGINT) while a tool runs: the tool's group is not the terminal's
/// foreground group, so `ptc` kills it, and what escaped it, before exiting.
#[cfg(target_os = "linux")]
#[test]
fn a_signal_to_ptc_ends_its_tools_too() {
    use std::io::Read;
    let dir = scratch();
    let fifo = dir.join("started");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let tools = json!({"tools": {"hangs": {"command": ["sh", "-c", format!(
        "cat >/dev/null; sleep 308 & a=$!; setsid sleep 309 >/dev/null 2>&1 & echo \"$a $!\" > {}; wait", fifo.display())]}}});
    let tools = write(&dir, "tools.json", &tools.to_string());
    let llm = script(&dir, &["(tool/hangs {})"]);
    let mut child = Command::new(common::cli::PTC)
        .args([
            "run",
            "--prompt",
            "Go",
            "--llm",
            &llm,
            "--tools",
            &tools,
            "--timeout-ms",
            "60000",
            "--tool-timeout-ms",
            "60000",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // opening the FIFO waits for the tool to write its processes' pids
    let mut pids = String::new();
    std::fs::File::open(&fifo).unwrap().read_to_string(&mut pids).unwrap();
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + 15), "{status:?}");
    let pids: Vec<&str> = pids.split_whitespace().collect();
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert!(!alive(pids[0], "sleep 308"), "the tool's child {} outlived ptc", pids[0]);
    assert!(!alive(pids[1], "sleep 309"), "the tool's setsid child {} outlived ptc", pids[1]);
    std::fs::remove_dir_all(&dir).unwrap();
}
