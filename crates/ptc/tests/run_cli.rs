//! `ptc run` end to end with the real binary and scripted models.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Runs `ptc` from the workspace root (the demo's tools file uses paths relative to it).
fn ptc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}
fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// A fresh scratch directory for one test.
fn scratch() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir =
        std::env::temp_dir().join(format!("ptc-run-cli-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst)));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().to_string()
}

/// A script file: one `{"content": ...}` line per program.
fn script(dir: &Path, programs: &[&str]) -> String {
    let lines: Vec<String> =
        programs.iter().map(|p| json!({"content": format!("```clojure\n{p}\n```")}).to_string()).collect();
    format!("script:{}", write(dir, "script.jsonl", &lines.join("\n")))
}

fn json_out(o: &Output) -> Value {
    serde_json::from_str(out(o).trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", out(o), err(o)))
}

const DEMO: [&str; 10] = [
    "run",
    "--prompt-file",
    "fixtures/missions/top-customer/prompt.txt",
    "--context",
    "fixtures/data/orders.json",
    "--tools",
    "fixtures/missions/top-customer/tools.json",
    "--signature",
    "{customer :string, name :string, total :int, total_usd :float}",
    "--llm",
];

#[test]
fn the_demo_mission_returns_its_answer_as_json() {
    let mut args = DEMO.to_vec();
    args.extend(["script:fixtures/missions/top-customer/script.jsonl", "--output", "json"]);
    let o = ptc(&args);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let step = json_out(&o);
    assert_eq!(step["status"], "ok");
    assert_eq!(step["return"], json!({"customer": "c16", "name": "Customer 16", "total": 1534, "total_usd": 1656.72}));
    assert_eq!(step["fail"], Value::Null);
    assert_eq!(step["usage"]["turns"], 3);
    assert_eq!(step["usage"]["llm_requests"], 3);
    assert_eq!(step["usage"]["input_tokens"], 5115);
    assert_eq!(step["usage"]["output_tokens"], 269);
    let t2 = &step["turns"][1];
    assert!(t2["program"].as_str().unwrap().contains("tool/customer_profile"));
    assert_eq!(t2["tool_calls"][0]["name"], "customer_profile");
    assert_eq!(t2["tool_calls"][0]["args"], json!({"id": "c16"}));
    assert_eq!(t2["tool_calls"][0]["result"]["name"], "Customer 16");
    assert_eq!(t2["tool_calls"][1]["name"], "fx_rate");
    assert_eq!(t2["prints"], json!(["Customer 16 1534 EUR rate 1.08"]));
    assert_eq!(step["turns"][2]["result"], "{:customer \"c16\" :name \"Customer 16\" :total 1534 :total-usd 1656.72}");
}

#[test]
fn text_output_shows_each_turn_then_the_answer() {
    let mut args = DEMO.to_vec();
    args.push("script:fixtures/missions/top-customer/script.jsonl");
    let o = ptc(&args);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    let t1 = text.find("── turn 1 ──").unwrap();
    let t2 = text.find("── turn 2 ──").unwrap();
    let answer = text.find("── answer ──").unwrap();
    assert!(t1 < t2 && t2 < answer, "{text}");
    assert!(text.contains("  | top 3: [{:customer \"c16\" :total 1534}"), "{text}");
    assert!(text.contains("  tool/customer_profile {\"id\":\"c16\"} -> "), "{text}");
    assert!(text.ends_with("\"total_usd\": 1656.72\n}\n"), "{text}");
}

#[test]
fn the_trace_holds_every_request_exactly_as_sent() {
    let dir = scratch();
    let trace = dir.join("trace.jsonl");
    let mut args = DEMO.to_vec();
    let trace_s = trace.to_string_lossy().to_string();
    args.extend(["script:fixtures/missions/top-customer/script.jsonl", "--output", "json", "--trace", &trace_s]);
    let o = ptc(&args);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let events: Vec<Value> =
        std::fs::read_to_string(&trace).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let requests: Vec<&Value> = events.iter().filter(|e| e["event"] == "llm_request").collect();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0]["turn"], 1);
    assert!(requests[0]["system"].as_str().unwrap().contains("<output_format>"));
    let msgs = requests[2]["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 5);
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
    assert!(msgs[0]["content"].as_str().unwrap().contains("<mission>\nWhich customer"));
    assert!(msgs[2]["content"].as_str().unwrap().contains("<untrusted_ptc_output source=\"println\">"));
    assert_eq!(events.iter().filter(|e| e["event"] == "llm_response").count(), 3);
    assert_eq!(events.iter().filter(|e| e["event"] == "tool_call").count(), 2);
    assert_eq!(events.last().unwrap()["event"], "run_end");
}

#[test]
fn a_failed_mission_exits_1_with_its_reason() {
    let dir = scratch();
    let llm = script(&dir, &["(fail {:reason :not_found :message \"nothing there\"})"]);
    let o = ptc(&["run", "--prompt", "Find it", "--llm", &llm, "--output", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let step = json_out(&o);
    assert_eq!(step["status"], "error");
    assert_eq!(step["fail"]["reason"], "not_found");
    assert_eq!(step["fail"]["message"], "nothing there");

    let o = ptc(&["run", "--prompt", "Find it", "--llm", &llm]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("Failed (not_found): nothing there"), "{}", err(&o));
}

/// A program that returns or defines a function holding 100,000-deep data, or passes such
/// data to a tool, gets a clean error as feedback; the mission goes on and ends normally.
#[test]
fn deep_values_held_by_functions_are_errors_the_mission_survives() {
    let dir = scratch();
    let tools = write(&dir, "tools.json", r#"{"tools": {"echo": {"command": ["cat"]}}}"#);
    let d = "(reduce (fn [a _] [a]) [] (range 100000))";
    let programs = [
        format!("(return (constantly {d}))"),
        format!("(def f (let [d {d}] (fn [] d))) 1"),
        format!("(return (partial conj {d}))"),
        format!("(fail (reduced {d}))"),
        format!("(tool/echo {{:x {d}}})"),
        "(return 42)".to_string(),
    ];
    let refs: Vec<&str> = programs.iter().map(String::as_str).collect();
    let llm = script(&dir, &refs);
    let o = ptc(&["run", "--prompt", "Go", "--llm", &llm, "--tools", &tools, "--max-turns", "10", "--output", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let step = json_out(&o);
    assert_eq!(step["return"], 42, "{step}");
    let turns = step["turns"].as_array().unwrap();
    assert_eq!(turns.len(), programs.len(), "{step}");
    let text = step["turns"].to_string();
    assert!(text.matches("output_too_large").count() >= 4, "{text:.2000}");
    assert!(text.contains("invalid_tool_args"), "{text:.2000}");
}

#[test]
fn max_turns_and_an_exhausted_script_end_cleanly() {
    let dir = scratch();
    let llm = script(&dir, &["(println 1)", "(println 2)"]);
    let o =
        ptc(&["run", "--prompt", "Loop", "--llm", &llm, "--max-turns", "2", "--signature", ":int", "--output", "json"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json_out(&o)["fail"]["reason"], "max_turns_exceeded");

    let o = ptc(&["run", "--prompt", "Loop", "--llm", &llm, "--output", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let step = json_out(&o);
    assert_eq!(step["fail"]["reason"], "llm_error");
    assert_eq!(step["usage"]["turns"], 2);
}

#[test]
fn rate_limits_are_retried() {
    let dir = scratch();
    let path = write(
        &dir,
        "s.jsonl",
        "{\"error\": \"rate_limit\", \"message\": \"slow down\"}\n{\"content\": \"(return 7)\", \"usage\": {\"input_tokens\": 3, \"output_tokens\": 1}}\n",
    );
    let llm = format!("script:{path}");
    let o = ptc(&["run", "--prompt", "Go", "--llm", &llm, "--llm-retry-delay-ms", "1", "--output", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let step = json_out(&o);
    assert_eq!(step["return"], 7);
    assert_eq!(step["usage"]["llm_requests"], 2);

    let o = ptc(&["run", "--prompt", "Go", "--llm", &llm, "--llm-retries", "1", "--output", "json"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json_out(&o)["fail"]["reason"], "llm_error");
}

#[test]
fn configuration_errors_exit_2_before_any_request() {
    let dir = scratch();
    let trace = dir.join("t.jsonl").to_string_lossy().to_string();
    let bad_script =
        format!("script:{}", write(&dir, "bad.jsonl", "{\"content\": \"(return 1)\"}\n{\"contnet\": 2}\n"));
    let o = ptc(&["run", "--prompt", "Go", "--llm", &bad_script, "--trace", &trace]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("script line 2"), "{}", err(&o));
    assert!(!Path::new(&trace).exists(), "a request was traced");

    let good = script(&dir, &["(return 1)"]);
    let o = ptc(&["run", "--prompt", "Summarise {{topic}}", "--llm", &good]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("{{topic}} has no value in the context"), "{}", err(&o));

    let tools = write(&dir, "tools.json", r#"{"tools": {"lookup": {"result": 1, "colour": "red"}}}"#);
    let o = ptc(&["run", "--prompt", "Go", "--llm", &good, "--tools", &tools]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("tool \"lookup\"") && err(&o).contains("colour"), "{}", err(&o));

    let tools = write(&dir, "tools2.json", r#"{"tools": {"lookup": {"result": 1, "signature": "(q :list) -> :int"}}}"#);
    let o = ptc(&["run", "--prompt", "Go", "--llm", &good, "--tools", &tools]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("tool \"lookup\": bad signature"), "{}", err(&o));

    let tools = write(&dir, "tools3.json", r#"{"tools": {"return": {"result": 1}}}"#);
    let o = ptc(&["run", "--prompt", "Go", "--llm", &good, "--tools", &tools]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("reserved"), "{}", err(&o));

    let o = ptc(&["run", "--prompt", "Go", "--llm", "teapot:earl-grey"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("script:FILE"), "{}", err(&o));

    let o = ptc(&["run", "--prompt", "Go", "--llm", &good, "--signature", "{n :list}"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("signature:"), "{}", err(&o));
}

#[test]
fn command_tools_get_json_on_stdin_and_errors_carry_stderr() {
    let dir = scratch();
    let tools = write(
        &dir,
        "tools.json",
        r#"{"tools": {
            "echo": {"command": ["cat"], "description": "echoes its arguments"},
            "broken": {"command": ["sh", "-c", "echo 'disk on fire' >&2; exit 4"]},
            "chatty": {"command": ["sh", "-c", "cat >/dev/null; echo not json"]}
        }}"#,
    );
    let llm =
        script(&dir, &["(tool/broken {})", "(tool/chatty {})", "(return (tool/echo {:user-id 7 :tags [\"a\"]}))"]);
    let o = ptc(&["run", "--prompt", "Go", "--llm", &llm, "--tools", &tools, "--output", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let step = json_out(&o);
    assert_eq!(step["return"], json!({"user_id": 7, "tags": ["a"]}));
    let e1 = step["turns"][0]["tool_calls"][0]["error"].as_str().unwrap();
    assert!(e1.contains("exit status: 4") && e1.contains("disk on fire"), "{e1}");
    let e2 = step["turns"][1]["tool_calls"][0]["error"].as_str().unwrap();
    assert!(e2.contains("not JSON"), "{e2}");
}

#[test]
fn a_hanging_command_tool_is_killed_with_its_process_group() {
    let dir = scratch();
    let pidfile = dir.join("child.pid");
    let cmd = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
    let tools = write(&dir, "tools.json", &json!({"tools": {"hang": {"command": ["sh", "-c", cmd]}}}).to_string());
    let llm = script(&dir, &["(tool/hang {})", "(return :recovered)"]);
    let started = Instant::now();
    let o = ptc(&[
        "run",
        "--prompt",
        "Go",
        "--llm",
        &llm,
        "--tools",
        &tools,
        "--tool-timeout-ms",
        "300",
        "--output",
        "json",
    ]);
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let step = json_out(&o);
    assert_eq!(step["return"], "recovered");
    let e = step["turns"][0]["tool_calls"][0]["error"].as_str().unwrap();
    assert!(e.contains("was killed") && e.contains("--tool-timeout-ms"), "{e}");
    // the background `sleep` was in the tool's process group: it is gone too
    let pid = std::fs::read_to_string(&pidfile).unwrap().trim().to_string();
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let gone = (0..100).any(|_| {
        let alive = std::fs::read_to_string(proc_dir.join("stat"))
            .map(|s| s.split_whitespace().nth(2).is_none_or(|state| state != "Z"))
            .unwrap_or(false);
        if alive {
            std::thread::sleep(Duration::from_millis(20));
        }
        !alive
    });
    assert!(gone, "the tool's child process {pid} survived");
}

#[test]
fn the_program_timeout_also_bounds_a_command_tool() {
    let dir = scratch();
    let tools = write(&dir, "tools.json", r#"{"tools": {"slow": {"command": ["sleep", "30"]}}}"#);
    let llm = script(&dir, &["(tool/slow {})", "(return 1)"]);
    let started = Instant::now();
    let o =
        ptc(&["run", "--prompt", "Go", "--llm", &llm, "--tools", &tools, "--timeout-ms", "300", "--output", "json"]);
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let step = json_out(&o);
    assert!(step["turns"][0]["error"].as_str().unwrap().starts_with("timeout:"), "{}", step["turns"][0]);
}

#[test]
fn text_output_shows_errors_and_the_failure() {
    let dir = scratch();
    let llm = script(&dir, &["(+ 1 nope)", "(fail {:reason :gave_up :message \"too hard\"})"]);
    let o = ptc(&["run", "--prompt", "Try", "--llm", &llm]);
    assert_eq!(o.status.code(), Some(1));
    let text = out(&o);
    assert!(text.contains("── turn 1 ──\n(+ 1 nope)\n✗ unbound_var: "), "{text}");
    assert!(text.contains("── failed ── (2 turn(s), 2 LLM request(s)"), "{text}");
    assert!(err(&o).contains("Failed (gave_up): too hard"), "{}", err(&o));
}

#[test]
fn placeholders_are_filled_from_inline_context() {
    let dir = scratch();
    let trace = dir.join("t.jsonl");
    let trace_s = trace.to_string_lossy().to_string();
    let llm = script(&dir, &["(return (count data/xs))"]);
    let o = ptc(&[
        "run",
        "--prompt",
        "Count the {{what}}",
        "--context-json",
        r#"{"what": "items", "xs": [1, 2, 3]}"#,
        "--signature",
        ":int",
        "--llm",
        &llm,
        "--trace",
        &trace_s,
        "--output",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(json_out(&o)["return"], 3);
    let first: Value = serde_json::from_str(std::fs::read_to_string(&trace).unwrap().lines().nth(1).unwrap()).unwrap();
    assert_eq!(first["event"], "llm_request");
    assert!(first["messages"][0]["content"].as_str().unwrap().ends_with("<mission>\nCount the items\n</mission>"));
}

// ---------- issue 13: modes, compression, tools-file exposure ----------

const COMBINED_DEMO: [&str; 9] = [
    "run",
    "--mode",
    "combined",
    "--prompt-file",
    "fixtures/missions/support-logs/prompt.txt",
    "--tools",
    "fixtures/missions/support-logs/tools.json",
    "--llm",
    "script:fixtures/missions/support-logs/script.jsonl",
];

fn trace_events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn the_combined_demo_answers_in_text_and_reuses_the_cached_result() {
    let o = ptc(&COMBINED_DEMO);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert!(text.contains("  native search_logs {\"query\":\"error\"} -> "), "{text}");
    assert!(text.contains("ms, cached)"), "{text}");
    let answer = text.find("── answer ── (3 turn(s), 3 LLM request(s), 2403 input + 95 output tokens").unwrap();
    assert!(text[answer..].ends_with(" ms)\n614 of the 1842 errors in the last hour have code 42.\n"), "{text}");

    let dir = scratch();
    let trace = dir.join("trace.jsonl");
    let trace_s = trace.to_string_lossy().to_string();
    let mut args = COMBINED_DEMO.to_vec();
    args.extend(["--output", "json", "--trace", &trace_s]);
    let o = ptc(&args);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(json_out(&o)["return"], json!("614 of the 1842 errors in the last hour have code 42."));
    let events = trace_events(&trace);
    let tools: Vec<&Value> = events.iter().filter(|e| e["event"] == "tool_call").collect();
    assert_eq!(tools.len(), 2);
    assert_eq!((tools[0]["exposure_layer"].clone(), tools[0]["cached"].clone()), (json!("native"), json!(false)));
    assert_eq!((tools[1]["exposure_layer"].clone(), tools[1]["cached"].clone()), (json!("ptc_lisp"), json!(true)));
    assert_eq!(tools[0]["args"], json!({"query": "error"}));
    let requests: Vec<&Value> = events.iter().filter(|e| e["event"] == "llm_request").collect();
    let offered: Vec<&str> =
        requests[0]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(offered, ["on_call", "search_logs", "lisp_eval"]);
    let msgs = requests[2]["messages"].as_array().unwrap();
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["tool_calls"][0]["id"], "call_1");
    assert_eq!(msgs[2]["role"], "tool");
    assert_eq!(msgs[2]["tool_call_id"], "call_1");
    let preview: Value = serde_json::from_str(msgs[2]["content"].as_str().unwrap()).unwrap();
    assert_eq!(preview["result_count"], 1842);
    assert_eq!(preview["full_result_cached"], true);
    let program: Value = serde_json::from_str(msgs[4]["content"].as_str().unwrap()).unwrap();
    assert_eq!(program["result"], "user=> {:code-42 614 :total 1842}");
}

#[test]
fn lisp_tool_mode_runs_programs_from_scripted_tool_calls() {
    let dir = scratch();
    let script = write(
        &dir,
        "s.jsonl",
        &[
            json!({"tool_calls": [{"id": "c1", "name": "lisp_eval", "args": {"program": "(def n 41)"}}]}).to_string(),
            json!({"tool_calls": [{"id": "c2", "name": "lisp_eval", "args": {"program": "(return {:n (inc n)})"}}]})
                .to_string(),
        ]
        .join("\n"),
    );
    let llm = format!("script:{script}");
    let o = ptc(&[
        "run",
        "--mode",
        "lisp-tool",
        "--prompt",
        "x",
        "--signature",
        "{n :int}",
        "--llm",
        &llm,
        "--output",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(json_out(&o)["return"], json!({"n": 42}));
}

#[test]
fn text_mode_validates_json_answers_with_a_retry() {
    let dir = scratch();
    let script = write(
        &dir,
        "s.jsonl",
        &[json!({"content": "five"}).to_string(), json!({"content": "{\"count\": 5}"}).to_string()].join("\n"),
    );
    let llm = format!("script:{script}");
    let o = ptc(&[
        "run",
        "--mode",
        "text",
        "--prompt",
        "Count",
        "--signature",
        "{count :int}",
        "--llm",
        &llm,
        "--output",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let step = json_out(&o);
    assert_eq!(step["return"], json!({"count": 5}));
    assert!(step["turns"][0]["feedback"].as_str().unwrap().starts_with("<error_feedback>"));
}

#[test]
fn compress_history_sends_one_user_message() {
    let dir = scratch();
    let trace = dir.join("t.jsonl");
    let trace_s = trace.to_string_lossy().to_string();
    let llm = script(&dir, &["(def xs [1 2 3])\n(println \"a\")\n(println \"b\")", "(return (count xs))"]);
    let o = ptc(&[
        "run",
        "--prompt",
        "Count xs",
        "--compress-history",
        "--println-limit",
        "1",
        "--llm",
        &llm,
        "--trace",
        &trace_s,
        "--output",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let events = trace_events(&trace);
    let requests: Vec<&Value> = events.iter().filter(|e| e["event"] == "llm_request").collect();
    assert_eq!(
        requests[1]["messages"],
        json!([{"role": "user", "content": "Count xs\n\n; No tool calls made\n; Defined: xs = list[3]\n; Output:\nb\n\nTurns left: 4"}])
    );
    // the full programs stay in the step
    assert!(json_out(&o)["turns"][0]["program"].as_str().unwrap().contains("(def xs [1 2 3])"));
    let o = ptc(&["run", "--prompt", "x", "--println-limit", "3", "--llm", &llm]);
    assert_eq!(o.status.code(), Some(2), "--println-limit needs --compress-history");
}

#[test]
fn tools_file_exposure_is_checked() {
    let dir = scratch();
    let llm = script(&dir, &["(return 1)"]);
    for (tool, needle) in [
        (json!({"result": 1, "expose": "everywhere"}), "\"expose\" is \"everywhere\""),
        (
            json!({"result": 1, "expose": "both", "native_result": {"preview": "rows"}}),
            "native_result needs expose both and cache true",
        ),
        (
            json!({"result": 1, "expose": "both", "cache": true, "native_result": {"preview": "table"}}),
            "native_result preview \"table\"",
        ),
    ] {
        let tools = write(&dir, "tools.json", &json!({"tools": {"t": tool}}).to_string());
        let o = ptc(&["run", "--mode", "combined", "--prompt", "x", "--tools", &tools, "--llm", &llm]);
        assert_eq!(o.status.code(), Some(2), "{}", err(&o));
        assert!(err(&o).contains(needle), "{}", err(&o));
    }
}

/// Whoever started `ptc run` may close its stdout and stderr (`| head -1`, an exited
/// supervisor): the mission still runs to its end, keeps its exit code and writes its trace.
#[test]
fn closed_stdout_and_stderr_keep_the_exit_code_and_the_trace() {
    let dir = scratch();
    let trace = dir.join("trace.jsonl");
    let trace_s = trace.to_string_lossy().to_string();
    for output in ["text", "json"] {
        let mut args = DEMO.to_vec();
        args.extend(["script:fixtures/missions/top-customer/script.jsonl", "--output", output, "--trace", &trace_s]);
        let (out_r, out_w) = std::io::pipe().unwrap();
        let (err_r, err_w) = std::io::pipe().unwrap();
        drop(out_r);
        drop(err_r);
        let status = Command::new(env!("CARGO_BIN_EXE_ptc"))
            .args(&args)
            .current_dir(root())
            .stdin(Stdio::null())
            .stdout(out_w)
            .stderr(err_w)
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(0), "--output {output}: {status:?}");
        let lines = std::fs::read_to_string(&trace).unwrap();
        assert!(lines.lines().count() >= 3, "--output {output}: {lines}");
        std::fs::remove_file(&trace).unwrap();
    }
    // A failing mission keeps its failure code the same way.
    let llm = script(&dir, &["(fail \"no data\")"]);
    let (out_r, out_w) = std::io::pipe().unwrap();
    drop(out_r);
    let status = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["run", "--prompt", "find it", "--llm", &llm])
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(out_w)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let open = ptc(&["run", "--prompt", "find it", "--llm", &llm]);
    assert_ne!(open.status.code(), Some(0), "{}", err(&open));
    assert_eq!(status.code(), open.status.code(), "closed stdout changed the exit code: {status:?}");
}
