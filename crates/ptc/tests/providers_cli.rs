//! `ptc run --llm VENDOR:MODEL`, `--record`, `--llm replay:FILE`, `--dry-run` and
//! `ptc models` with the real binary; the vendor is a fake OpenAI server on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Output;

use common::cli::{command, err, out, scratch};
use common::vendor::FakeVendor;
use serde_json::{Value, json};

const KEY: &str = "sk-proj-cli-SECRET-5a4b3c2d1e";

/// `ptc ARGS` in `dir`, a scratch directory that is also its config directory (so no
/// real `./ptc-llms.json` or `~/.config/ptc/llms.json` is picked up), with no vendor
/// settings from the environment but `env`.
fn ptc(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = command();
    command.args(args).current_dir(dir);
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

fn completion(program: &str) -> Value {
    let usage = json!({"prompt_tokens": 321, "completion_tokens": 12, "prompt_tokens_details": {"cached_tokens": 300}});
    common::vendor::completion("test-model-001", program, usage)
}

#[test]
fn a_mission_runs_against_an_openai_server_and_replays_offline_from_its_recording() {
    let dir = scratch();
    let recording = dir.join("run.jsonl").display().to_string();
    let vendor = FakeVendor::start(vec![completion("(def n (count data/xs))"), completion("(return {:n n})")]);
    let base = format!("{}/v1", vendor.url);
    let mission =
        ["run", "--prompt", "Count the xs", "--context-json", r#"{"xs": [1, 2, 3]}"#, "--signature", "{n :int}"];

    let mut args = mission.to_vec();
    args.extend(["--llm", "openai:test-model", "--record", &recording, "--output", "json"]);
    let o = ptc(&dir, &args, &[("OPENAI_API_KEY", KEY), ("OPENAI_BASE_URL", &base)]);
    let seen = vendor.seen();
    assert_eq!(vendor.finish(), 2, "both replies were asked for");
    assert_eq!(o.status.code(), Some(0), "stdout: {}\nstderr: {}", out(&o), err(&o));
    let step: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert_eq!(step["return"], json!({"n": 3}));

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
