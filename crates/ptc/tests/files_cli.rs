//! Every file a flag or a configuration names is read through one bounded reader: a
//! device, a FIFO or a directory is refused by its type (never read), a file over its
//! limit is refused without being read whole, and the message names the flag or field,
//! the file and what to do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

fn ptc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(args)
        .env_remove("PTC_UPSTREAMS")
        .env_remove("PTC_LLM_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn scratch() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir =
        std::env::temp_dir().join(format!("ptc-files-cli-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst)));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().to_string()
}

/// A file of `len` bytes that takes no disk (sparse).
fn sparse(dir: &Path, name: &str, len: u64) -> String {
    let p = dir.join(name);
    std::fs::File::create(&p).unwrap().set_len(len).unwrap();
    p.to_string_lossy().to_string()
}

/// Each command line names `FILE` where the file under test goes; `what` is how the
/// message names the flag or field.
fn surfaces(dir: &Path) -> Vec<(&'static str, Vec<String>)> {
    let script = write(dir, "script.jsonl", r#"{"content": "```clojure\n(return 1)\n```"}"#);
    let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let llm = format!("script:{script}");
    vec![
        ("--context", args(&["eval", "--context", "FILE", "1"])),
        ("--file", args(&["eval", "-f", "FILE"])),
        ("--prompt-file", args(&["run", "--prompt-file", "FILE", "--llm", &llm])),
        ("--tools", args(&["run", "--prompt", "Go", "--tools", "FILE", "--llm", &llm])),
        ("--agent", args(&["run", "--agent", "FILE", "--llm", &llm])),
        ("the --llm script", args(&["run", "--prompt", "Go", "--llm", "script:FILE"])),
        ("the recording", args(&["run", "--prompt", "Go", "--llm", "replay:FILE"])),
        ("the LLM registry", args(&["run", "--prompt", "Go", "--llm-config", "FILE", "--llm", "some-alias"])),
        ("the upstreams config", args(&["eval", "--upstreams", "FILE", "1"])),
    ]
}

fn run_with(cmd: &[String], file: &str) -> Output {
    let replaced: Vec<String> = cmd.iter().map(|a| a.replace("FILE", file)).collect();
    let refs: Vec<&str> = replaced.iter().map(String::as_str).collect();
    ptc(&refs)
}

#[cfg(unix)]
#[test]
fn devices_are_refused_by_every_file_flag_without_being_read() {
    let dir = scratch();
    for (what, cmd) in surfaces(&dir) {
        for device in ["/dev/zero", "/dev/urandom"] {
            let o = run_with(&cmd, device);
            let e = err(&o);
            assert_eq!(o.status.code(), Some(2), "{what} {device}: {e}");
            assert!(
                e.contains(&format!("{what} {device}: is a character device, not a regular file")),
                "{what} {device}: {e}"
            );
            assert!(e.contains("save the content to a file and give its path"), "{e}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_directory_is_refused_by_every_file_flag() {
    let dir = scratch();
    let sub = dir.join("a-directory");
    std::fs::create_dir_all(&sub).unwrap();
    let sub = sub.to_string_lossy().to_string();
    for (what, cmd) in surfaces(&dir) {
        let o = run_with(&cmd, &sub);
        assert_eq!(o.status.code(), Some(2), "{what}: {}", err(&o));
        assert!(err(&o).contains(&format!("{what} {sub}: is a directory, not a regular file")), "{what}: {}", err(&o));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(target_os = "linux")]
#[test]
fn a_fifo_nobody_writes_to_is_refused_at_once() {
    let dir = scratch();
    let fifo = dir.join("pipe");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let fifo = fifo.to_string_lossy().to_string();
    for (what, cmd) in surfaces(&dir) {
        // a plain open of the FIFO would block this test forever
        let o = run_with(&cmd, &fifo);
        assert_eq!(o.status.code(), Some(2), "{what}: {}", err(&o));
        assert!(err(&o).contains("is a FIFO (named pipe), not a regular file"), "{what}: {}", err(&o));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn oversize_files_are_refused_with_their_limit_and_the_fix() {
    let dir = scratch();
    let mib = 1024 * 1024;
    let over_config = sparse(&dir, "big-config", 4 * mib + 1);
    let over_script = sparse(&dir, "big-script", 64 * mib + 1);
    for (what, cmd) in surfaces(&dir) {
        let (file, limit) = match what {
            "--context" | "--file" => continue, // bounded by their own flags, below
            "the --llm script" | "the recording" => (&over_script, "64 MiB"),
            _ => (&over_config, "4 MiB"),
        };
        let o = run_with(&cmd, file);
        assert_eq!(o.status.code(), Some(2), "{what}: {}", err(&o));
        assert!(
            err(&o).contains(&format!("{what} {file}: larger than the {limit} limit of {what}")),
            "{what}: {}",
            err(&o)
        );
    }
    // --context is bounded by --max-context-bytes, the program file by --max-program-bytes
    let ctx = write(&dir, "ctx.json", &format!("{{\"a\": \"{}\"}}", "x".repeat(200)));
    let o = ptc(&["eval", "--context", &ctx, "--max-context-bytes", "100", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("larger than the 100-byte limit of --context"), "{}", err(&o));
    assert!(err(&o).contains("raise --max-context-bytes"), "{}", err(&o));
    let prog = write(&dir, "prog.clj", &format!("(count \"{}\")", "x".repeat(200)));
    let o = ptc(&["eval", "-f", &prog, "--max-program-bytes", "100"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("larger than the 100-byte limit of --file"), "{}", err(&o));
    assert!(err(&o).contains("raise --max-program-bytes"), "{}", err(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn files_within_their_limits_are_read() {
    let dir = scratch();
    let ctx = write(&dir, "ctx.json", r#"{"n": 41}"#);
    let prog = write(&dir, "prog.clj", "(inc data/n)");
    let o = ptc(&["eval", "-f", &prog, "--context", &ctx]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "42");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Files named inside the upstreams configuration: a credential's `path` and an OpenAPI
/// upstream's `schema_file`.
#[cfg(unix)]
#[test]
fn files_named_by_the_upstreams_config_are_bounded_too() {
    let dir = scratch();
    let credential = |path: &str| {
        serde_json::json!({
            "credentials": {"t": {"source": "file", "path": path}},
            "upstreams": {"gh": {"transport": "mcp_http", "url": "http://127.0.0.1:1/mcp",
                "allow_insecure_http": true, "allow_insecure_auth": true,
                "auth": [{"scheme": "bearer", "binding": "t"}]}}
        })
        .to_string()
    };
    let cfg = write(&dir, "cred-dev.json", &credential("/dev/zero"));
    let o = ptc(&["eval", "--upstreams", &cfg, "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("credential 't', field `path`: the credential file /dev/zero: is a character device"),
        "{}",
        err(&o)
    );
    let big = sparse(&dir, "big-secret", 64 * 1024 + 1);
    let cfg = write(&dir, "cred-big.json", &credential(&big));
    let o = ptc(&["eval", "--upstreams", &cfg, "1"]);
    assert!(err(&o).contains(&format!("the credential file {big}: larger than the 64 KiB limit")), "{}", err(&o));

    let schema = |path: &str| {
        serde_json::json!({"upstreams": {"api": {"transport": "openapi", "base_url": "http://127.0.0.1:1",
            "allow_insecure_http": true, "schema_file": path, "include_operations": ["x"]}}})
        .to_string()
    };
    let cfg = write(&dir, "schema-dev.json", &schema("/dev/urandom"));
    let o = ptc(&["eval", "--upstreams", &cfg, "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("field `schema_file`: the schema file /dev/urandom: is a character device"),
        "{}",
        err(&o)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
