//! `ptc run` flags and agent-file fields of the seed's mission options and planned
//! features: validation modes, the system prompt, prompt limits, code blocks, dry runs,
//! failure streaks, cost budgets — with the real binary and scripted models.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::cli::{command, err, out, scratch, script, step_of, write};
use common::redis::Redis;
use common::vendor::FakeVendor;
use serde_json::{Value, json};

fn ptc(args: &[&str]) -> Output {
    command().args(args).env_remove("PTC_LLM_CONFIG").output().unwrap()
}

#[test]
fn signature_validation_flag_and_fields() {
    let dir = scratch();
    let answer = "(return {:count 5 :extra 1})";
    // the default allows the extra field; --signature-validation strict refuses it
    let llm = format!("script:{}", script(&dir, &[answer, answer]));
    let base = ["run", "--prompt", "Count", "--signature", "{count :int}", "--llm", &llm, "--output", "json"];
    let o = ptc(&base);
    assert!(o.status.success(), "{}", err(&o));
    let strict = [&base[..], &["--signature-validation", "strict", "--max-turns", "2"]].concat();
    let o = ptc(&strict);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert_eq!(step_of(&o)["fail"]["reason"], "max_turns_exceeded");
    let o = ptc(&[&base[..], &["--signature-validation", "lenient"]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("enabled, warn_only, strict or disabled"), "{}", err(&o));

    // agent file: strict refuses a tool without a signature, naming the agent and field
    let file = write(
        &dir,
        "strict.json",
        &json!({"prompt": "x", "signature_validation": "strict", "tools": {"rate": {"result": 1.08}}}).to_string(),
    );
    let o = ptc(&["run", "--agent", &file, "--llm", &llm]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("agent `root`: tools: tool \"rate\" has no signature"), "{}", err(&o));

    // a tool's own validation: warn_only accepts a result that does not fit its signature
    let llm = format!("script:{}", script(&dir, &["(return (tool/count {}))", "(return (tool/count {}))"]));
    let tool = |validation: &str| {
        json!({"prompt": "x", "max_turns": 2, "tools": {"count": {"result": {"n": "many"}, "signature": "() -> {n :int}",
                                                  "validation": validation}}})
        .to_string()
    };
    let file = write(&dir, "warn.json", &tool("warn_only"));
    let o = ptc(&["run", "--agent", &file, "--llm", &llm, "--output", "json"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(step_of(&o)["return"], json!({"n": "many"}));
    let file = write(&dir, "enabled.json", &tool("enabled"));
    let o = ptc(&["run", "--agent", &file, "--llm", &llm, "--output", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let tools =
        write(&dir, "tools.json", &json!({"tools": {"count": {"result": 1, "validation": "sometimes"}}}).to_string());
    let o = ptc(&["run", "--prompt", "x", "--tools", &tools, "--llm", &llm]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("tool \"count\": validation: unknown validation mode"), "{}", err(&o));
}

/// The `llm_request` events of a trace file.
fn requests(trace: &str) -> Vec<Value> {
    std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "llm_request")
        .collect()
}

#[test]
fn system_prompt_prompt_limit_code_blocks_and_mission_timeout_flags() {
    let dir = scratch();
    let two_blocks = "(def a 20)\n```\n\n```clojure\n(return (+ a 1))";
    let llm = format!("script:{}", script(&dir, &[two_blocks]));
    let trace = dir.join("trace.jsonl").to_string_lossy().to_string();
    let data = write(&dir, "data.json", &json!({"xs": (1..=9).collect::<Vec<_>>()}).to_string());
    let o = ptc(&[
        "run",
        "--prompt",
        "Go",
        "--llm",
        &llm,
        "--output",
        "json",
        "--trace",
        &trace,
        "--system-prompt",
        "You are terse.",
        "--prompt-limit-list",
        "3",
        "--context",
        &data,
        "--multiple-code-blocks",
        "sequential",
        "--mission-timeout-ms",
        "0",
    ]);
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    assert_eq!(step_of(&o)["return"], json!(21));
    let first = &requests(&trace)[0];
    assert_eq!(first["system"], "You are terse.");
    let user = first["messages"][0]["content"].as_str().unwrap();
    assert!(user.contains("[1 2 3 ...") && user.contains("showing 3 of 9 items"), "{user}");

    // the default refuses the two blocks
    let llm = format!("script:{}", script(&dir, &[two_blocks, "(return 0)"]));
    let o = ptc(&["run", "--prompt", "Go", "--llm", &llm, "--output", "json"]);
    assert_eq!(step_of(&o)["return"], json!(0));

    // agent file: system_prompt wraps, prompt_limit, multiple_code_blocks, mission_timeout_ms
    let llm = format!("script:{}", script(&dir, &[two_blocks]));
    let file = write(
        &dir,
        "agent.json",
        &json!({"prompt": "Go", "system_prompt": {"prefix": "BEFORE"}, "prompt_limit": {"list": 2},
                "multiple_code_blocks": "sequential", "mission_timeout_ms": 5000, "context": {"xs": [1, 2, 3]}})
        .to_string(),
    );
    let o = ptc(&["run", "--agent", &file, "--llm", &llm, "--output", "json", "--trace", &trace]);
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    let first = &requests(&trace)[0];
    assert!(first["system"].as_str().unwrap().starts_with("BEFORE\n\n"), "{}", first["system"]);
    assert!(first["messages"][0]["content"].as_str().unwrap().contains("showing 2 of 3 items"));
    let file = write(&dir, "bad.json", &json!({"prompt": "Go", "multiple_code_blocks": "all"}).to_string());
    let o = ptc(&["run", "--agent", &file, "--llm", &llm]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("multiple_code_blocks: \"all\": write \"refuse\" or \"sequential\""), "{}", err(&o));
}

#[test]
fn dry_run_checks_the_mission_and_prints_the_first_request_without_calling() {
    let dir = scratch();
    // a script that would fail the run if it were read for an answer
    let llm = format!("script:{}", write(&dir, "empty.jsonl", ""));
    let o =
        ptc(&["run", "--prompt", "Count {{xs}}", "--context-json", r#"{"xs": [1, 2]}"#, "--llm", &llm, "--dry-run"]);
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    let text = out(&o);
    assert!(text.contains("── first request (turn 1; nothing was sent) ──"), "{text}");
    assert!(text.contains("Count [1 2]"), "the mission as sent: {text}");
    // configuration errors show before anything is sent
    let o = ptc(&["run", "--prompt", "Count {{ys}}", "--llm", &llm, "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("placeholder {{ys}} has no value in the context"), "{}", err(&o));
    // a vendor model is resolved, not built: no key needed; a budget without a price is a problem
    let o = ptc(&["run", "--prompt", "x", "--llm", "openai:gpt-4.1-mini", "--dry-run", "--max-cost-usd", "1"]);
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    assert!(out(&o).contains("first request estimated at $0.00"), "{}", out(&o));
    let o = ptc(&["run", "--prompt", "x", "--llm", &llm, "--dry-run", "--max-cost-usd", "1", "--output", "json"]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    let dry = step_of(&o);
    assert!(dry["problems"][0].as_str().unwrap().contains("no price is known for the model \"scripted\""), "{dry}");
    assert_eq!(dry["first_request"]["turn"], 1);
    // agent file: every model of the tree is resolved; a bad one is named
    let file = write(
        &dir,
        "tree.json",
        &json!({"prompt": "x", "tools": {"judge": {"llm_tool": {"prompt": "Is {{t}} ok?", "signature": "(t :string) -> :bool",
                                                            "llm": "nosuchvendor:m"}}}})
        .to_string(),
    );
    let o = ptc(&["run", "--agent", &file, "--llm", &llm, "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("agent `root.tools.judge`: llm:"), "{}", err(&o));
}

#[test]
fn max_consecutive_failures_flag_and_field() {
    let dir = scratch();
    let llm = format!("script:{}", script(&dir, &["(nope)", "(nope)", "(return 1)"]));
    let o = ptc(&["run", "--prompt", "x", "--llm", &llm, "--output", "json", "--max-consecutive-failures", "2"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(step_of(&o)["fail"]["reason"], "consecutive_failures");
    let file = write(&dir, "a.json", &json!({"prompt": "x", "max_consecutive_failures": 3}).to_string());
    let o = ptc(&["run", "--agent", &file, "--llm", &llm, "--output", "json"]);
    assert_eq!(step_of(&o)["return"], json!(1), "three failures are allowed: {}", err(&o));
}

fn completion(program: &str, prompt_tokens: u64) -> Value {
    let usage = json!({"prompt_tokens": prompt_tokens, "completion_tokens": 100, "prompt_tokens_details": {"cached_tokens": 0}});
    common::vendor::completion("priced-model", program, usage)
}

#[test]
fn the_cost_budget_uses_the_registry_price_against_a_vendor_server() {
    let dir = scratch();
    // $10 per million input tokens, $20 per million output: each answer below costs
    // 100k * 10/1M + 100 * 20/1M = $1.002
    let registry = write(
        &dir,
        "llms.json",
        &json!({"priced": {"vendor": "openai", "model": "priced-model",
                           "price": {"input_per_mtok": 10.0, "output_per_mtok": 20.0}}})
        .to_string(),
    );
    let replies =
        vec![completion("(def a 1)", 100_000), completion("(def b 2)", 100_000), completion("(return 3)", 10)];
    let vendor = FakeVendor::start(replies);
    let url = format!("{}/v1", vendor.url);
    let o = Command::new(common::cli::PTC)
        .args(["run", "--prompt", "x", "--llm", "priced", "--llm-config", &registry, "--output", "json"])
        .args(["--max-cost-usd", "2.0", "--max-turns", "5"])
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", &url)
        .env_remove("PTC_LLM_CONFIG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let step = step_of(&o);
    assert_eq!(step["fail"]["reason"], "cost_budget_exceeded", "{step}");
    assert!((step["usage"]["cost_usd"].as_f64().unwrap() - 2.004).abs() < 1e-9, "{step}");
    // the third request was never sent
    assert_eq!(vendor.finish(), 2, "two requests reached the vendor");
    // a bad price in the registry is named
    let bad = write(
        &dir,
        "bad.json",
        &json!({"p": {"vendor": "openai", "model": "m", "price": {"input_per_mtok": -1.0, "output_per_mtok": 1.0}}})
            .to_string(),
    );
    let o = ptc(&["run", "--prompt", "x", "--llm", "p", "--llm-config", &bad]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("alias \"p\": price: input_per_mtok is -1"), "{}", err(&o));
}

/// Where a killed run's checkpoints are kept, and what the test can see of them.
trait Checkpoints {
    /// The `--checkpoint-dir` / `--resume` value.
    fn location(&self) -> String;
    /// The turn count of the newest checkpoint kept (0: none).
    fn newest(&self) -> u32;
}

struct Dir(String);

impl Checkpoints for Dir {
    fn location(&self) -> String {
        self.0.clone()
    }
    fn newest(&self) -> u32 {
        (1..100).take_while(|n| Path::new(&self.0).join(format!("checkpoint-{n:04}.json")).is_file()).count() as u32
    }
}

struct InRedis<'a>(&'a Redis, &'static str);

impl Checkpoints for InRedis<'_> {
    fn location(&self) -> String {
        format!("{}/{}", self.0.url(), self.1)
    }
    fn newest(&self) -> u32 {
        self.0.cmd(&["HGET", &format!("ptc:checkpoint:{}", self.1), "latest"]).parse().unwrap_or(0)
    }
}

/// `ptc run` checkpointing to `at`, SIGKILLed while its second turn's tool runs, then
/// resumed: the same answer as an uninterrupted run of the same script, and the first
/// turn's tool is not run again. The mission's directory and its `ptc run` arguments.
fn killed_and_resumed(at: &dyn Checkpoints) -> (std::path::PathBuf, Vec<String>) {
    use std::io::Read;
    let dir = scratch();
    let fifo = dir.join("started");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let log = dir.join("calls.log");
    let resumed_mark = dir.join("resumed");
    // `count` logs each call; `wait` (turn 2) says it started through the FIFO and
    // blocks until killed, unless the resume mark exists
    let wait = format!(
        "if [ -e {mark} ]; then echo 5; else echo $$ > {fifo}; exec sleep 600; fi",
        mark = resumed_mark.display(),
        fifo = fifo.display()
    );
    let count = format!("echo call >> {}; echo 37", log.display());
    let tools = write(
        &dir,
        "tools.json",
        &json!({"tools": {"count": {"command": ["sh", "-c", count]}, "wait": {"command": ["sh", "-c", wait]}}})
            .to_string(),
    );
    let llm = format!(
        "script:{}",
        script(&dir, &["(def a (tool/count {}))", "(def b (tool/wait {}))", "(return {:sum (+ a b)})"])
    );
    let checkpoints = at.location();
    let mission: Vec<String> =
        ["run", "--prompt", "Add", "--tools", &tools, "--llm", &llm, "--output", "json"].map(String::from).to_vec();
    let args = |extra: &[&str]| -> Vec<String> {
        mission.iter().cloned().chain(extra.iter().map(|s| s.to_string())).collect()
    };

    let mut child = Command::new(common::cli::PTC)
        .args(args(&["--checkpoint-dir", &checkpoints]))
        .env_remove("PTC_LLM_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // opening the FIFO waits for turn 2's tool: turn 1's checkpoint is written by then
    let mut pid = String::new();
    std::fs::File::open(&fifo).unwrap().read_to_string(&mut pid).unwrap();
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let _ = Command::new("kill").args(["-9", pid.trim()]).status();
    assert_eq!(at.newest(), 1, "killed inside turn 2, after turn 1's checkpoint");

    std::fs::write(&resumed_mark, "").unwrap();
    let resume = args(&["--resume", &checkpoints]);
    let o = ptc(&resume.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    let resumed = step_of(&o);
    assert_eq!(resumed["return"], json!({"sum": 42}));
    assert_eq!(resumed["usage"]["turns"], 3);
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 1, "turn 1's tool ran once, before the kill");
    assert_eq!(at.newest(), 2, "the resumed run went on checkpointing there");

    let whole = step_of(&ptc(&mission.iter().map(String::as_str).collect::<Vec<_>>()));
    assert_eq!(resumed["return"], whole["return"]);
    assert_eq!(resumed["memory"], whole["memory"]);
    (dir, resume)
}

#[test]
fn a_killed_run_resumes_from_its_checkpoint_with_the_uninterrupted_answer() {
    let at = Dir(scratch().join("checkpoints").to_string_lossy().to_string());
    let (_, resume) = killed_and_resumed(&at);
    let checkpoints = at.0.clone();
    let mission: Vec<&str> = resume.iter().map(String::as_str).collect();
    let mission = &mission[..mission.len() - 2];
    // a damaged checkpoint is a usage error naming the file
    std::fs::write(Path::new(&checkpoints).join("checkpoint-0009.json"), "{\"format\":").unwrap();
    let o = ptc(&[mission, &["--resume", &checkpoints]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("resume_from: checkpoint") && err(&o).contains("is not valid JSON"), "{}", err(&o));
}

/// The same over Redis: a checkpointed mission killed on one run resumes from the Redis
/// store; a missing mission and a foreign key are clear usage errors, the key left alone.
#[test]
fn a_killed_run_resumes_from_its_redis_checkpoint_with_the_uninterrupted_answer() {
    let redis = Redis::start();
    let (dir, resume) = killed_and_resumed(&InRedis(&redis, "nightly-sum"));
    assert_eq!(redis.cmd(&["HGET", "ptc:checkpoint:nightly-sum", "fmt"]), "ptc-checkpoint-hash-v1");
    let mission: Vec<&str> = resume.iter().map(String::as_str).collect();
    let mission = &mission[..mission.len() - 2];
    let at = |name: &str| format!("{}/{name}", redis.url());

    let o = ptc(&[mission, &["--resume", &at("never-ran")]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("no checkpoint in redis://127.0.0.1:"), "{}", err(&o));
    assert_eq!(redis.cmd(&["SET", "ptc:checkpoint:taken", "someone else's"]), "+OK");
    let o = ptc(&[mission, &["--resume", &at("taken")]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("is not a ptc checkpoint hash (type string)"), "{}", err(&o));
    let o = ptc(&[mission, &["--checkpoint-dir", &at("taken")]].concat());
    assert_eq!(o.status.code(), Some(1), "a store that refuses the checkpoint ends the mission");
    assert!(out(&o).contains("checkpoint_error") && out(&o).contains("left as it is"), "{}", out(&o));
    assert_eq!(redis.cmd(&["GET", "ptc:checkpoint:taken"]), "someone else's");
    let o = ptc(&[mission, &["--checkpoint-dir", "redis://127.0.0.1:1/m"]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--checkpoint-dir redis://127.0.0.1:1/m: no database and mission name"), "{}", err(&o));
    let _ = std::fs::remove_dir_all(dir);
}
