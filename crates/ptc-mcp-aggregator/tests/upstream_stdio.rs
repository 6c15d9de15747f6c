//! Aggregator mode against a real child process: the `ptc-upstream-fixture` MCP server
//! (built with this crate) reached through rmcp's client over stdio.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ptc_lisp_eval::contract::{Probe, check_host};
use ptc_lisp_eval::{Cancel, Engine, Limits, RunInput, Value};
use ptc_mcp_aggregator::upstream::{SnapshotMode, UpstreamOptions, UpstreamRuntime, config};

const FIXTURE: &str = env!("CARGO_BIN_EXE_ptc-upstream-fixture");

struct Setup {
    _dir: tempfile::TempDir,
    rt: UpstreamRuntime,
}

fn write_config(dir: &tempfile::TempDir, extra_fx: &str, credentials: &str) -> PathBuf {
    let path = dir.path().join("upstreams.json");
    let text = format!(
        r#"{{"credentials": {{{credentials}}},
            "upstreams": {{"fx": {{"transport": "mcp_stdio", "command": {cmd}, "description": "Test fixture"{extra_fx}}}}}}}"#,
        cmd = serde_json::json!(FIXTURE)
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn setup_with(extra_fx: &str, options: UpstreamOptions, env: &[(&str, &str)]) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(&dir, extra_fx, "");
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let lookup = move |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let cfg = config::load(&path, &lookup).unwrap();
    let rt = UpstreamRuntime::start(&cfg, options, &lookup).unwrap();
    Setup { _dir: dir, rt }
}

fn setup() -> Setup {
    setup_with("", UpstreamOptions::default(), &[])
}

fn engine() -> Engine {
    Engine::new(Limits { timeout: Duration::from_secs(20), ..Limits::default() })
}

fn run(s: &Setup, program: &str) -> ptc_lisp_eval::Outcome {
    let host = s.rt.program_host();
    engine().eval(program, RunInput::new(), &host, &Cancel::new())
}

fn printed(s: &Setup, program: &str) -> String {
    let out = run(s, program);
    assert!(out.is_ok(), "{program}: {:?}", out.result);
    out.printed
}

fn error(s: &Setup, program: &str) -> (String, String) {
    let out = run(s, program);
    let e = out.error().unwrap_or_else(|| panic!("{program} should fail, got {}", out.printed));
    (e.kind.as_str().to_string(), e.message.clone())
}

#[test]
fn text_and_structured_results_are_tagged() {
    let s = setup();
    assert_eq!(
        printed(&s, r#"(tool/call {:server "fx" :tool "echo" :args {:text "hi there"}})"#),
        r#"{:ok true :value "hi there" :value_kind :text}"#
    );
    assert_eq!(
        printed(&s, r#"(tool/call {:server "fx" :tool "echo" :args {:text "[1, 2]"}})"#),
        "{:ok true :value [1 2] :value_kind :json}"
    );
    // structuredContent wins over the text; the program filters inside the sandbox
    let p = r#"(let [r (tool/call {:server "fx" :tool "orders" :args {:n 6}})]
                 (if (:ok r) (->> (get (:value r) "items") (filter #(= "open" (get % "status"))) (map #(get % "id"))) (fail (:message r))))"#;
    assert_eq!(printed(&s, p), "[0 2 4]");
    // tool/call works in value position
    assert_eq!(
        printed(
            &s,
            r#"(count (filter :ok (map tool/call [{:server "fx" :tool "echo" :args {:text "a"}} {:server "fx" :tool "echo" :args {:text "b"}}])))"#
        ),
        "2"
    );
}

#[test]
fn world_faults_are_values_and_the_program_continues() {
    let s = setup_with(
        r#", "max_response_bytes": 4096"#,
        UpstreamOptions {
            call_timeout: Duration::from_millis(300),
            snapshot: SnapshotMode::Live,
            ..UpstreamOptions::default()
        },
        &[],
    );
    let fault = |tool: &str, args: &str| {
        printed(
            &s,
            &format!(r#"(let [r (tool/call {{:server "fx" :tool "{tool}" :args {args}}})] [(:ok r) (:reason r)])"#),
        )
    };
    assert_eq!(fault("fail", r#"{:message "nope"}"#), "[false :tool_error]");
    assert_eq!(fault("slow", "{:ms 5000}"), "[false :timeout]");
    assert_eq!(fault("big", "{:bytes 100000}"), "[false :response_too_large]");
    assert_eq!(fault("crash", "{}"), "[false :upstream_unavailable]");
    // live mode restarts the child on the next call
    assert_eq!(fault("echo", r#"{:text "back"}"#), "[true nil]");
    let msg = printed(&s, r#"(:message (tool/call {:server "fx" :tool "fail" :args {:message "why"}}))"#);
    assert!(msg.contains("failed: why"), "{msg}");
}

#[test]
fn per_upstream_request_timeout_wins_over_the_global_one() {
    let s = setup_with(
        r#", "request_timeout_ms": 150"#,
        UpstreamOptions { call_timeout: Duration::from_secs(10), ..UpstreamOptions::default() },
        &[],
    );
    let out = run(&s, r#"(:reason (tool/call {:server "fx" :tool "slow" :args {:ms 3000}}))"#);
    assert_eq!(out.printed, ":timeout");
    assert!(out.usage.duration < Duration::from_secs(3), "{:?}", out.usage.duration);
}

#[test]
fn the_per_program_call_cap_fires_and_resets_per_program() {
    let s = setup_with("", UpstreamOptions { max_calls_per_program: 2, ..UpstreamOptions::default() }, &[]);
    let p = r#"(map :reason (map (fn [t] (tool/call {:server "fx" :tool "echo" :args {:text t}})) ["a" "b" "c"]))"#;
    assert_eq!(printed(&s, p), "[nil nil :cap_exhausted]");
    assert_eq!(printed(&s, p), "[nil nil :cap_exhausted]");
}

#[test]
fn pmap_batches_run_concurrently() {
    let s = setup();
    let p = r#"(apply max (map (fn [r] (:value r)) (pmap (fn [i] (tool/call {:server "fx" :tool "gate" :args {:ms 400}})) [1 2 3 4])))"#;
    let most: i64 = printed(&s, p).parse().unwrap();
    assert!(most >= 2, "gate calls never overlapped (max in flight {most})");
}

#[test]
fn programmer_faults_raise_with_the_seed_messages() {
    let s = setup();
    let (k, m) = error(&s, r#"(tool/call {:tool "echo"})"#);
    assert_eq!(k, "invalid_tool_args");
    assert!(m.contains("tool/call requires :server (string), got nil"), "{m}");
    let (k, m) = error(&s, r#"(tool/call {:server "nope" :tool "echo"})"#);
    assert_eq!(k, "unknown_tool");
    assert!(m.contains("no upstream 'nope' configured"), "{m}");
    let (_, m) = error(&s, r#"(tool/call {:server "fx"})"#);
    assert!(m.contains("tool/call on upstream 'fx' requires :tool (string), got nil"), "{m}");
    let (k, m) = error(&s, r#"(tool/call {:server "fx" :tool "zzz"})"#);
    assert_eq!(k, "unknown_tool");
    assert!(m.contains("no tool 'zzz' in upstream 'fx'"), "{m}");
    let (_, m) = error(&s, r#"(tool/call {:server "fx" :tool "echo" :args [1 2]})"#);
    assert!(m.contains("tool 'fx.echo' rejected args: :args must be a map, got [1 2]"), "{m}");
    let (_, m) = error(&s, r#"(tool/call {:server "fx" :tool "echo" :args {:f inc}})"#);
    assert!(m.contains("tool 'fx.echo' rejected args: not JSON-encodable"), "{m}");
}

#[test]
fn stdio_children_get_a_minimal_environment_and_secrets_are_scrubbed() {
    let s = setup_with(
        r#", "env": {"FIXTURE_TOKEN": "${MY_TOKEN}"}"#,
        UpstreamOptions::default(),
        &[("MY_TOKEN", "tok-super-secret-1")],
    );
    // the declared env reaches the child, but its value never comes back to the program
    assert_eq!(
        printed(&s, r#"(:value (tool/call {:server "fx" :tool "env" :args {:name "FIXTURE_TOKEN"}}))"#),
        "\"[REDACTED]\""
    );
    // the server's own environment does not reach the child (cargo sets this for tests)
    assert_eq!(
        printed(&s, r#"(:value (tool/call {:server "fx" :tool "env" :args {:name "CARGO_MANIFEST_DIR"}}))"#),
        "\"<unset>\""
    );
    let out = run(&s, r#"(tool/call {:server "fx" :tool "echo" :args {:text "tok-super-secret-1"}})"#);
    assert!(!out.printed.contains("tok-super-secret-1"), "{}", out.printed);
    for r in &out.tool_calls {
        assert!(!serde_json::json!(r.meta).to_string().contains("tok-super-secret"));
    }
    assert!(!s.rt.catalog_text().contains("tok-super-secret"));
}

#[test]
fn discovery_forms_answer_from_the_catalog() {
    let s = setup();
    assert_eq!(
        printed(&s, "(tool/servers)"),
        r#"[{"catalog_loaded" true "description" "Test fixture" "name" "fx" "tool_count" 8}]"#
    );
    assert_eq!(printed(&s, r#"(first (dir "fx"))"#), "\"big - Return a text of the given size\"");
    assert_eq!(printed(&s, r#"(count (dir 'fx {:limit 2 :offset 1}))"#), "2");
    let doc = printed(&s, r#"(doc "fx/orders")"#);
    assert!(doc.contains("Args: {:n integer? :status enum<string>?}"), "{doc}");
    assert!(doc.contains(r#"(tool/call {:server \"fx\" :tool \"orders\" :args {}})"#), "{doc}");
    assert_eq!(printed(&s, r#"(first (apropos "echo"))"#), "\"fx/echo - Echo the text back\"");
    assert_eq!(printed(&s, r#"(get (meta 'fx/echo) "server")"#), "\"fx\"");
    let (k, m) = error(&s, r#"(doc "fx/zzz")"#);
    assert_eq!(k, "runtime_error");
    assert!(m.contains("no tool 'zzz' in upstream 'fx'"), "{m}");
    assert_eq!(error(&s, r#"(dir "fx" {:limit 0})"#).0, "runtime_error");
}

#[test]
fn the_discovery_budget_is_separate_and_ends_in_nil() {
    let s = setup_with(
        "",
        UpstreamOptions { max_catalog_ops_per_program: 2, max_calls_per_program: 1, ..UpstreamOptions::default() },
        &[],
    );
    assert_eq!(
        printed(
            &s,
            r#"[(some? (dir "fx")) (some? (meta 'fx/echo)) (meta 'fx/echo) (:ok (tool/call {:server "fx" :tool "echo" :args {:text "x"}}))]"#
        ),
        "[true true nil true]"
    );
}

#[test]
fn the_catalog_description_follows_the_inline_rules() {
    let s = setup();
    // 8 tools and under 800 characters: auto mode shows them inline
    insta::assert_snapshot!("catalog_auto_inline", s.rt.catalog_text());
    let opts = |o: UpstreamOptions| setup_with("", o, &[]).rt.catalog_text();
    let lazy = opts(UpstreamOptions { catalog_mode: "lazy".parse().unwrap(), ..UpstreamOptions::default() });
    insta::assert_snapshot!("catalog_lazy", lazy);
    // over the character budget, auto drops descriptions first
    let names_only = opts(UpstreamOptions { catalog_inline_max_chars: 650, ..UpstreamOptions::default() });
    insta::assert_snapshot!("catalog_auto_names_only", names_only);
    // then goes lazy; more tools than the inline cap goes lazy too
    assert_eq!(opts(UpstreamOptions { catalog_inline_max_chars: 100, ..UpstreamOptions::default() }), lazy);
    assert_eq!(opts(UpstreamOptions { catalog_inline_max_tools: 7, ..UpstreamOptions::default() }), lazy);
}

#[test]
fn the_upstream_host_passes_the_host_contract() {
    let s = setup();
    let host = Arc::new(s.rt.program_host());
    let probe = Probe::new(
        "call",
        Value::map([
            (Value::str("server"), Value::str("fx")),
            (Value::str("tool"), Value::str("echo")),
            (Value::str("args"), Value::map([(Value::str("text"), Value::str("x"))])),
        ]),
    )
    .with_slow(
        "call",
        Value::map([
            (Value::str("server"), Value::str("fx")),
            (Value::str("tool"), Value::str("slow")),
            (Value::str("args"), Value::map([(Value::str("ms"), Value::Int(3000))])),
        ]),
    )
    .with_slack(Duration::from_secs(1));
    let report = check_host(host.as_ref(), &probe);
    assert!(report.passed(), "{report}");
}

#[test]
fn frozen_start_fails_when_an_upstream_cannot_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.json");
    std::fs::write(
        &path,
        r#"{"upstreams": {"gone": {"transport": "mcp_stdio", "command": "/nonexistent/ptc-no-such-server"}}}"#,
    )
    .unwrap();
    let none = |_: &str| None;
    let cfg = config::load(&path, &none).unwrap();
    let err = UpstreamRuntime::start(&cfg, UpstreamOptions::default(), &none).unwrap_err().to_string();
    assert!(err.contains("upstream 'gone' could not start (upstream_unavailable)"), "{err}");
    // live mode starts, and the call is a world fault
    let rt = UpstreamRuntime::start(
        &cfg,
        UpstreamOptions { snapshot: SnapshotMode::Live, ..UpstreamOptions::default() },
        &none,
    )
    .unwrap();
    let host = rt.program_host();
    let out =
        engine().eval(r#"(:reason (tool/call {:server "gone" :tool "x"}))"#, RunInput::new(), &host, &Cancel::new());
    assert_eq!(out.printed, ":upstream_unavailable");
}

#[test]
fn the_debug_profile_carries_upstream_calls_and_ptc_metrics() {
    let s = setup();
    let config = ptc_mcp_aggregator::McpConfig {
        response_profile: ptc_mcp_aggregator::ResponseProfile::Debug,
        limits: Limits { timeout: Duration::from_secs(20), ..Limits::mcp() },
        ..ptc_mcp_aggregator::McpConfig::default()
    };
    let server = ptc_mcp_aggregator::PtcServer::new(config, Arc::new(s.rt.clone()));
    assert!(server.lisp_eval_tool().description.unwrap_or_default().contains("(tool/servers)"));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let program = r#"(count (get (:value (tool/call {:server "fx" :tool "orders" :args {:n 40}})) "items"))"#;
    let args = serde_json::json!({"program": program});
    let payload =
        runtime.block_on(server.call_lisp_eval(args.as_object().cloned(), tokio_util::sync::CancellationToken::new()));
    let s = payload.structured.unwrap();
    assert_eq!(s["status"], "ok", "{s}");
    let calls = s["upstream_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["server"], "fx");
    assert_eq!(calls[0]["status"], "ok");
    let m = &s["ptc_metrics"];
    assert_eq!(m["schema_version"], 1);
    assert_eq!(m["final_result_bytes"], "user=> 40".len());
    assert!(m["upstream_result_bytes"].as_u64().unwrap() > 1000, "{m}");
    assert!(m["payload_reduction_ratio"].as_f64().unwrap() > 100.0, "{m}");
    assert_eq!(m["token_estimate_method"], "utf8_bytes_div_4");
}

#[test]
fn the_handshake_timeout_fires_on_a_silent_child() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.json");
    std::fs::write(
        &path,
        r#"{"upstreams": {"mute": {"transport": "mcp_stdio", "command": "sleep", "args": ["30"], "handshake_timeout_ms": 200}}}"#,
    )
    .unwrap();
    let none = |_: &str| None;
    let cfg = config::load(&path, &none).unwrap();
    let started = std::time::Instant::now();
    let err = UpstreamRuntime::start(&cfg, UpstreamOptions::default(), &none).unwrap_err().to_string();
    assert!(err.contains("did not complete the MCP handshake within 200 ms"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn the_per_upstream_concurrency_bound_holds() {
    let s = setup_with("", UpstreamOptions { max_concurrent_calls_per_upstream: 1, ..UpstreamOptions::default() }, &[]);
    let p =
        r#"(apply max (map :value (pmap (fn [i] (tool/call {:server "fx" :tool "gate" :args {:ms 50}})) [1 2 3])))"#;
    assert_eq!(printed(&s, p), "1");
}

#[test]
fn the_discovery_result_cap_truncates_lists_and_nils_documents() {
    let s = setup_with("", UpstreamOptions { max_catalog_result_bytes: 80, ..UpstreamOptions::default() }, &[]);
    // 8 tools, but only what fits in 80 bytes of JSON
    let n: usize = printed(&s, r#"(count (dir "fx"))"#).parse().unwrap();
    assert!((1..8).contains(&n), "{n}");
    assert_eq!(printed(&s, r#"(doc "fx/orders")"#), "nil");
}

#[test]
fn live_apropos_hints_at_unloaded_servers_until_asked_to_load() {
    let s = setup_with("", UpstreamOptions { snapshot: SnapshotMode::Live, ..UpstreamOptions::default() }, &[]);
    let hint = printed(&s, r#"(first (apropos "fixture"))"#);
    assert!(hint.contains("catalog not loaded: (dir \\\"fx\\\") lists its tools"), "{hint}");
    assert_eq!(printed(&s, r#"(first (apropos "echo" {:load true}))"#), "\"fx/echo - Echo the text back\"");
    assert_eq!(printed(&s, r#"(get (first (tool/servers)) "catalog_loaded")"#), "true");
}

#[test]
fn a_message_over_the_frame_cap_ends_the_connection_not_the_process() {
    let s = setup_with("", UpstreamOptions { snapshot: SnapshotMode::Live, ..UpstreamOptions::default() }, &[]);
    // 9 MB on one line: over max(2 x 2 MiB, 8 MiB)
    let r = printed(&s, r#"(:reason (tool/call {:server "fx" :tool "big" :args {:bytes 9000000}}))"#);
    assert_eq!(r, ":upstream_unavailable");
    assert_eq!(
        printed(&s, r#"(:value (tool/call {:server "fx" :tool "echo" :args {:text "still here"}}))"#),
        "\"still here\""
    );
}

/// True once `pid` has exited (gone, or a zombie nobody reaped yet); waits for the kill
/// to land, at most five seconds.
fn exited(pid: u32) -> bool {
    let until = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next()));
        if matches!(state, None | Some('Z' | 'X')) {
            return true;
        }
        if std::time::Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn fixture_config(dir: &tempfile::TempDir, args: &[&str], extra: &str) -> config::UpstreamsConfig {
    let path = dir.path().join("u.json");
    let text = format!(
        r#"{{"upstreams": {{"fx": {{"transport": "mcp_stdio", "command": {}, "args": {}{extra}}}}}}}"#,
        serde_json::json!(FIXTURE),
        serde_json::json!(args)
    );
    std::fs::write(&path, text).unwrap();
    config::load(&path, &|_: &str| None).unwrap()
}

#[test]
fn an_upstream_that_answers_initialize_but_never_lists_fails_start_in_time_and_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let cfg = fixture_config(
        &dir,
        &["--never-list", "--pid-file", pid_file.to_str().unwrap()],
        r#", "handshake_timeout_ms": 300"#,
    );
    let started = std::time::Instant::now();
    let err = UpstreamRuntime::start(&cfg, UpstreamOptions::default(), &|_: &str| None).unwrap_err().to_string();
    assert!(err.contains("upstream 'fx' could not start (timeout)"), "{err}");
    assert!(err.contains("answered `initialize` but not `tools/list` within 300 ms"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    let pid: u32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    assert!(exited(pid), "the silent child {pid} outlived the failed start");
}

#[test]
fn start_stopped_by_a_signal_stops_the_children_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let cfg = fixture_config(&dir, &["--never-list", "--pid-file", pid_file.to_str().unwrap()], "");
    let stop = tokio_util::sync::CancellationToken::new();
    let stopper = {
        let stop = stop.clone();
        let pid_file = pid_file.clone();
        std::thread::spawn(move || {
            // the child is up once it wrote its pid
            let until = std::time::Instant::now() + Duration::from_secs(20);
            while !pid_file.exists() && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            stop.cancel();
        })
    };
    let started = std::time::Instant::now();
    let err = UpstreamRuntime::start_until(&cfg, UpstreamOptions::default(), &|_: &str| None, &stop).unwrap_err();
    stopper.join().unwrap();
    assert!(matches!(err, ptc_mcp_aggregator::upstream::StartError::Interrupted), "{err}");
    assert!(started.elapsed() < Duration::from_secs(9), "not the 10 s handshake timeout: {:?}", started.elapsed());
    let pid: u32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    assert!(exited(pid), "the child {pid} outlived the interrupted start");
}

#[test]
fn an_upstream_that_is_ptc_itself_is_refused_by_its_server_info() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let cfg = fixture_config(&dir, &["--name", "ptc", "--pid-file", pid_file.to_str().unwrap()], "");
    let err = UpstreamRuntime::start(&cfg, UpstreamOptions::default(), &|_: &str| None).unwrap_err().to_string();
    assert!(err.contains("could not start (self_upstream)"), "{err}");
    assert!(err.contains("answered `initialize` as the ptc MCP server itself"), "{err}");
    let pid: u32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    assert!(exited(pid), "the refused child {pid} is stopped");
}

#[test]
fn children_carry_the_nesting_marker_and_a_marked_process_starts_no_upstreams() {
    let s = setup();
    let depth = printed(&s, r#"(:value (tool/call {:server "fx" :tool "env" :args {:name "PTC_UPSTREAM_DEPTH"}}))"#);
    assert_eq!(depth, "1", "the marker (a JSON-looking text reads as a number)");
    let dir = tempfile::tempdir().unwrap();
    let cfg = fixture_config(&dir, &[], "");
    let marked = |k: &str| (k == ptc_mcp_aggregator::upstream::NESTING_ENV).then(|| "1".to_string());
    let err = UpstreamRuntime::start(&cfg, UpstreamOptions::default(), &marked).unwrap_err().to_string();
    assert!(err.contains("started as an upstream of another ptc (PTC_UPSTREAM_DEPTH=1)"), "{err}");
    assert!(err.contains("refuses to start upstreams of its own"), "{err}");
}

#[test]
fn credentials_written_into_an_upstream_url_never_appear_in_errors() {
    // a port nobody listens on: the transport error names the URL it tried
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.json");
    let url = format!("http://robot:PASSWORD-in-url-1@127.0.0.1:{port}/mcp?api_key=KEY-in-query-2&v=1");
    std::fs::write(
        &path,
        serde_json::json!({"upstreams": {"web": {"transport": "mcp_http", "url": url, "allow_insecure_http": true, "handshake_timeout_ms": 3000}}})
            .to_string(),
    )
    .unwrap();
    let none = |_: &str| None;
    let cfg = config::load(&path, &none).unwrap();
    let err = UpstreamRuntime::start(&cfg, UpstreamOptions::default(), &none).unwrap_err().to_string();
    assert!(err.contains("upstream 'web' could not start"), "{err}");
    assert!(!err.contains("PASSWORD-in-url-1") && !err.contains("KEY-in-query-2"), "{err}");
    // and in live mode, the program sees the fault scrubbed too
    let rt = UpstreamRuntime::start(
        &cfg,
        UpstreamOptions { snapshot: SnapshotMode::Live, ..UpstreamOptions::default() },
        &none,
    )
    .unwrap();
    let out = engine().eval(
        r#"(:message (tool/call {:server "web" :tool "x"}))"#,
        RunInput::new(),
        &rt.program_host(),
        &Cancel::new(),
    );
    assert!(!out.printed.contains("PASSWORD-in-url-1") && !out.printed.contains("KEY-in-query-2"), "{}", out.printed);
}

#[test]
fn a_child_that_dies_at_start_is_named_with_the_tail_of_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.json");
    let script = "for i in 1 2 3 4 5 6 7; do echo \"line $i\" >&2; done; echo \"cannot open $NOTES\" >&2; exit 3";
    let config = serde_json::json!({"upstreams": {"notes": {
        "transport": "mcp_stdio", "command": "sh", "args": ["-c", script],
        "env": {"NOTES": "/srv/notes/today.md", "NOTES_TOKEN": "tok-5ecret-value"}
    }}});
    std::fs::write(&path, config.to_string()).unwrap();
    let none = |_: &str| None;
    let cfg = config::load(&path, &none).unwrap();
    let err = UpstreamRuntime::start(&cfg, UpstreamOptions::default(), &none).unwrap_err().to_string();
    // whichever the runtime notices first: the exit, or the broken pipe of the handshake
    assert!(
        err.contains("upstream 'notes' (`sh`) exited during the MCP handshake")
            || err.contains("the MCP handshake with upstream 'notes' (`sh`) failed"),
        "{err}"
    );
    // the last five lines, in order, and not the earlier ones
    assert!(err.contains("line 4\n  line 5\n  line 6\n  line 7\n  cannot open /srv/notes/today.md"), "{err}");
    assert!(!err.contains("line 3"), "{err}");
    // a path under an ordinary name stays readable
    assert!(!err.contains("[REDACTED]"), "{err}");
}

#[test]
fn a_scoped_view_sees_and_calls_only_its_grants() {
    let s = setup();
    let view = Setup { _dir: tempfile::tempdir().unwrap(), rt: s.rt.scoped(&["fx/echo".to_string()]).unwrap() };
    assert_eq!(
        printed(&view, r#"(:value (tool/call {:server "fx" :tool "echo" :args {:text "in scope"}}))"#),
        "\"in scope\""
    );
    let (kind, message) = error(&view, r#"(tool/call {:server "fx" :tool "orders"})"#);
    assert_eq!(kind, "unknown_tool");
    assert!(message.contains("no tool 'orders' in upstream 'fx'"), "{message}");
    assert_eq!(printed(&view, r#"(dir "fx")"#), r#"["echo - Echo the text back"]"#);
    assert_eq!(printed(&view, r#"(get (first (tool/servers)) "tool_count")"#), "1");
    assert!(!view.rt.catalog_text().contains("orders"));
    // the whole runtime still has every tool
    assert_eq!(printed(&s, r#"(get (first (tool/servers)) "tool_count")"#), "8");
    // grants are checked against the configuration and the catalog
    let e = s.rt.scoped(&["fx/nope".to_string()]).unwrap_err();
    assert_eq!(e.grant, "fx/nope");
    assert!(e.message.contains("upstream \"fx\" has no tool \"nope\""), "{e}");
    let e = s.rt.scoped(&["gx/*".to_string()]).unwrap_err();
    assert!(e.message.contains("no upstream \"gx\" is configured (configured: fx)"), "{e}");
    // a view of a view is never wider
    let narrower = view.rt.scoped(&["fx".to_string()]).unwrap();
    assert!(!narrower.catalog_text().contains("orders"));
    assert!(view.rt.scoped(&["fx/orders".to_string()]).is_err());
}
