//! `ptc run --llm VENDOR:MODEL`, `--record`, `--llm replay:FILE`, `--dry-run` and
//! `ptc models` with the real binary; the vendor is a fake OpenAI server on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{Value, json};

const KEY: &str = "sk-proj-cli-SECRET-5a4b3c2d1e";

/// A fresh scratch directory (also the child's working and config directory, so no real
/// `./ptc-llms.json` or `~/.config/ptc/llms.json` is picked up).
fn scratch() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "ptc-providers-cli-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn ptc(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ptc"));
    command.args(args).current_dir(dir).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for var in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "OPENROUTER_API_KEY",
        "OLLAMA_HOST",
        "PTC_LLM_CONFIG",
    ] {
        command.env_remove(var);
    }
    command.env("XDG_CONFIG_HOME", dir).env("HOME", dir);
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}
fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// One request the fake server saw: path, Authorization header, JSON body.
type Seen = (String, String, Value);

/// Answers one connection per reply (HTTP/1.1, `Connection: close`), then stops.
fn fake_openai(replies: Vec<Value>) -> (String, Arc<Mutex<Vec<Seen>>>, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let handle = std::thread::spawn(move || {
        for reply in replies {
            let (mut stream, _) = listener.accept().unwrap();
            let mut data = Vec::new();
            let mut buf = [0u8; 8192];
            let head_end = loop {
                let n = stream.read(&mut buf).unwrap();
                assert!(n > 0, "connection closed before the request ended");
                data.extend_from_slice(&buf[..n]);
                if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                    break i + 4;
                }
            };
            let head = String::from_utf8_lossy(&data[..head_end]).to_string();
            let header = |name: &str| {
                head.lines()
                    .find_map(|l| {
                        l.split_once(':')
                            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
                            .map(|(_, v)| v.trim().to_string())
                    })
                    .unwrap_or_default()
            };
            let length: usize = header("content-length").parse().unwrap();
            while data.len() < head_end + length {
                let n = stream.read(&mut buf).unwrap();
                assert!(n > 0, "connection closed inside the body");
                data.extend_from_slice(&buf[..n]);
            }
            let path = head.split_whitespace().nth(1).unwrap_or_default().to_string();
            let body: Value = serde_json::from_slice(&data[head_end..head_end + length]).unwrap();
            log.lock().unwrap().push((path, header("authorization"), body));
            let text = reply.to_string();
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            stream.write_all(response.as_bytes()).unwrap();
        }
    });
    (url, seen, handle)
}

fn completion(program: &str) -> Value {
    json!({
        "model": "test-model-001",
        "choices": [{"message": {"role": "assistant", "content": format!("```clojure\n{program}\n```")}}],
        "usage": {"prompt_tokens": 321, "completion_tokens": 12, "prompt_tokens_details": {"cached_tokens": 300}}
    })
}

#[test]
fn a_mission_runs_against_an_openai_server_and_replays_offline_from_its_recording() {
    let dir = scratch();
    let recording = dir.join("run.jsonl").display().to_string();
    let (url, seen, server) = fake_openai(vec![completion("(def n (count data/xs))"), completion("(return {:n n})")]);
    let base = format!("{url}/v1");
    let mission =
        ["run", "--prompt", "Count the xs", "--context-json", r#"{"xs": [1, 2, 3]}"#, "--signature", "{n :int}"];

    let mut args = mission.to_vec();
    args.extend(["--llm", "openai:test-model", "--record", &recording, "--output", "json"]);
    let o = ptc(&dir, &args, &[("OPENAI_API_KEY", KEY), ("OPENAI_BASE_URL", &base)]);
    server.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "stdout: {}\nstderr: {}", out(&o), err(&o));
    let step: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert_eq!(step["return"], json!({"n": 3}));

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    let (path, auth, body) = &seen[0];
    assert_eq!(path, "/v1/chat/completions");
    assert_eq!(auth, &format!("Bearer {KEY}"));
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["messages"][0]["role"], "system");
    assert!(body["messages"][1]["content"].as_str().unwrap().contains("Count the xs"), "{body}");

    let text = std::fs::read_to_string(&recording).unwrap();
    assert_eq!(text.lines().count(), 2);
    assert!(!text.contains(KEY) && !text.to_lowercase().contains("bearer"), "{text}");
    assert!(!out(&o).contains(KEY) && !err(&o).contains(KEY));

    // Replay: no server, no key, same answer.
    let replay = format!("replay:{recording}");
    let mut args = mission.to_vec();
    args.extend(["--llm", &replay, "--output", "json"]);
    let o = ptc(&dir, &args, &[]);
    assert_eq!(o.status.code(), Some(0), "stdout: {}\nstderr: {}", out(&o), err(&o));
    let replayed: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert_eq!(replayed["return"], json!({"n": 3}));

    // Drift: another mission text. Exit 1, naming the first differing request.
    let o = ptc(
        &dir,
        &[
            "run",
            "--prompt",
            "Count the ys",
            "--context-json",
            r#"{"xs": [1, 2, 3]}"#,
            "--signature",
            "{n :int}",
            "--llm",
            &replay,
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "stdout: {}\nstderr: {}", out(&o), err(&o));
    let all = format!("{}{}", out(&o), err(&o));
    assert!(all.contains("request #1 (turn 1) differs from the recording"), "{all}");
    assert!(all.contains("Count the ys"), "shows what changed: {all}");
}

#[test]
fn models_and_dry_run_resolve_without_calling_or_showing_the_key() {
    let dir = scratch();
    let o = ptc(&dir, &["models", "openai:gpt-4.1-mini"], &[("OPENAI_API_KEY", KEY)]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert!(text.contains("vendor:      openai (OpenAI Chat Completions)"), "{text}");
    assert!(text.contains("base url:    https://api.openai.com/v1"), "{text}");
    assert!(text.contains("key:         $OPENAI_API_KEY (set)"), "{text}");
    assert!(!text.contains(KEY), "{text}");

    std::fs::write(
        dir.join("ptc-llms.json"),
        r#"{"haiku": {"vendor": "anthropic", "model": "claude-haiku-4-5", "max_tokens": 1024},
            "local": {"vendor": "ollama", "model": "qwen3:8b"}}"#,
    )
    .unwrap();
    let o = ptc(&dir, &["models", "haiku", "--output", "json"], &[("OLLAMA_HOST", "gpu-box:11434")]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let resolved: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(resolved["vendor"], "anthropic");
    assert_eq!(resolved["model"], "claude-haiku-4-5");
    assert_eq!(resolved["key_var"], "ANTHROPIC_API_KEY");
    assert_eq!(resolved["key_set"], false);
    assert_eq!(resolved["registry"], "./ptc-llms.json");

    let o = ptc(&dir, &["models"], &[("OLLAMA_HOST", "gpu-box:11434")]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("local  ollama:qwen3:8b  http://gpu-box:11434/v1  no key"), "{}", out(&o));

    let o = ptc(&dir, &["run", "--prompt", "x", "--llm", "local", "--dry-run"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("base url:    http://127.0.0.1:11434/v1"), "{}", out(&o));

    let o = ptc(&dir, &["models", "sonnet"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("model_not_found") && err(&o).contains("haiku, local"), "{}", err(&o));
}

#[test]
fn a_missing_key_is_a_usage_error_naming_the_variable() {
    let dir = scratch();
    let o = ptc(&dir, &["run", "--prompt", "x", "--llm", "anthropic:claude-haiku-4-5"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("missing API key: set ANTHROPIC_API_KEY"), "{}", err(&o));
    let o = ptc(&dir, &["run", "--prompt", "x", "--llm", "openai:m", "--llm-config", "/nonexistent/llms.json"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("/nonexistent/llms.json"), "{}", err(&o));
}
