//! The embedding boundary: Engine, Program, RunInput, Cancel and the Host contract.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ptc_lisp_eval::contract::{Probe, check_host};
use ptc_lisp_eval::{
    CallCx, Cancel, CompileEnv, Discovery, Engine, Exposure, FnHost, Host, Limits, Memory, NoTools, RunInput,
    RunResult, ToolCall, ToolError, ToolErrorKind, ToolSpec, Value,
};

fn engine() -> Engine {
    Engine::new(Limits::default())
}

fn reason(src: &str, host: &dyn Host, limits: Limits) -> (String, String) {
    let out = Engine::new(limits).eval(src, RunInput::new(), host, &Cancel::new());
    match out.result {
        RunResult::Error(e) => (e.kind.as_str().to_string(), e.message),
        other => ("ok".into(), format!("{other:?}")),
    }
}

#[test]
fn a_program_compiles_once_and_runs_many_times_from_many_threads() {
    let e = engine();
    let program = e.compile("(->> data/xs (map inc) (reduce +))", &CompileEnv::new().with_data_keys(["xs"])).unwrap();
    std::thread::scope(|s| {
        for n in 1..=4i64 {
            let (e, program) = (&e, &program);
            s.spawn(move || {
                let xs: Vec<i64> = (0..n).collect();
                let ctx = serde_json::json!({ "xs": xs });
                let out = e.run(
                    program,
                    RunInput::new().with_json_context(ctx.as_object().unwrap()),
                    &NoTools,
                    &Cancel::new(),
                );
                assert_eq!(out.printed, ((0..n).map(|x| x + 1).sum::<i64>()).to_string());
            });
        }
    });
}

#[test]
fn compile_errors_come_before_anything_runs() {
    let e = engine();
    let err = e.compile("(+ 1", &CompileEnv::new()).unwrap_err();
    assert_eq!(err.kind.as_str(), "parse_error");
    let err = e.compile("(tool/nope {})", &CompileEnv::new()).unwrap_err();
    assert_eq!(err.kind.as_str(), "unknown_tool");
    let small = Engine::new(Limits { max_program_bytes: 10, ..Limits::default() });
    assert_eq!(small.compile("(+ 1 2 3 4 5 6)", &CompileEnv::new()).unwrap_err().kind.as_str(), "program_too_large");
}

#[test]
fn every_defining_form_defines_its_name() {
    for (src, want) in [
        ("(def x 1) x", "1"),
        ("(defonce x 2) x", "2"),
        ("(defn f [] 3) (f)", "3"),
        ("(defn- f [] 4) (f)", "4"),
        ("(defn- g \"doc\" [a] (* a 5)) (g 1)", "5"),
    ] {
        let out = engine().eval_with(src, &NoTools);
        assert_eq!(out.printed, want, "{src}: {:?}", out.result);
    }
    // and they persist across runs through memory, defn- included
    let first = engine().eval_with("(defn- helper [n] (* n 10))", &NoTools);
    let input = RunInput::new().with_memory(first.memory);
    let out = engine().eval("(helper 4)", input, &NoTools, &Cancel::new());
    assert_eq!(out.printed, "40");
    let p = engine().compile("(def a 1) (defn- b [] 2) (defonce c 3) (defn d [] 4)", &CompileEnv::new()).unwrap();
    assert_eq!(p.defined_names(), ["a", "b", "c", "d"]);
}

#[test]
fn deep_recursion_is_a_clean_error_on_any_calling_thread() {
    // a caller thread with a small stack: the engine, not the caller, chooses the stack
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let limits = Limits { max_recursion_depth: 100_000, timeout: Duration::from_secs(20), ..Limits::default() };
            let e = Engine::new(limits);
            let ok = e.eval_with("(defn f [n] (if (= n 0) 0 (+ 1 (f (dec n))))) (f 1000)", &NoTools);
            let deep = e.eval_with("(defn f [n] (if (= n 0) 0 (+ 1 (f (dec n))))) (f 1000000)", &NoTools);
            let mutual = e.eval_with(
                "(defn ev? [n] (if (= n 0) true (od? (dec n)))) (defn od? [n] (if (= n 0) false (ev? (dec n)))) (ev? 1000000)",
                &NoTools,
            );
            (ok.printed, deep.error().map(|e| e.kind), mutual.error().map(|e| e.kind))
        })
        .unwrap();
    let (ok, deep, mutual) = handle.join().expect("the caller's thread must not overflow");
    assert_eq!(ok, "1000");
    assert_eq!(deep.map(|k| k.as_str()), Some("recursion_limit_exceeded"));
    assert_eq!(mutual.map(|k| k.as_str()), Some("recursion_limit_exceeded"));
}

#[test]
fn deeply_nested_data_prints_or_fails_cleanly() {
    let out = engine().eval_with("(count (str (reduce (fn [a _] [a]) [] (range 900))))", &NoTools);
    assert_eq!(out.printed, "1802");
    let (kind, _) = reason("(reduce (fn [a _] {:a a}) {} (range 5000))", &NoTools, Limits::default());
    assert_eq!(kind, "output_too_large");
}

#[test]
fn a_slow_tool_cannot_hold_a_program_past_its_deadline() {
    let host = FnHost::new().with_tool("slow", |_| {
        std::thread::sleep(Duration::from_secs(5));
        Ok(Value::Nil)
    });
    let started = Instant::now();
    let (kind, msg) =
        reason("(tool/slow {})", &host, Limits { timeout: Duration::from_millis(150), ..Limits::default() });
    assert_eq!(kind, "timeout", "{msg}");
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
}

/// A host that ignores the deadline entirely: the engine still reports the overrun.
struct Stubborn;

impl Host for Stubborn {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec::named("stall")]
    }
    fn call(&self, _call: &ToolCall, _cx: &CallCx<'_>) -> Result<Value, ToolError> {
        std::thread::sleep(Duration::from_millis(300));
        Ok(Value::Int(1))
    }
}

#[test]
fn a_host_that_ignores_the_deadline_still_ends_the_run_in_timeout() {
    let (kind, _) = reason(
        "(tool/stall {}) (+ 1 2)",
        &Stubborn,
        Limits { timeout: Duration::from_millis(100), ..Limits::default() },
    );
    assert_eq!(kind, "timeout");
}

#[test]
fn cancel_handles_flow_to_children_with_the_earliest_deadline() {
    let parent = Cancel::new().with_deadline(Instant::now() + Duration::from_millis(100));
    let child = parent.child().with_deadline(Instant::now() + Duration::from_secs(60));
    assert_eq!(child.deadline(), parent.deadline());
    let limits = Limits { timeout: Duration::from_secs(30), max_loop_iterations: u64::MAX, ..Limits::default() };
    let started = Instant::now();
    let out = Engine::new(limits).eval("(loop [i 0] (recur (inc i)))", RunInput::new(), &NoTools, &child);
    let e = out.error().unwrap();
    assert_eq!(e.kind.as_str(), "timeout");
    assert!(e.message.contains("mission"), "{}", e.message);
    assert!(started.elapsed() < Duration::from_secs(5));
    let parent = Cancel::new();
    let child = parent.child();
    parent.cancel();
    let out = engine().eval("(+ 1 2)", RunInput::new(), &NoTools, &child);
    assert_eq!(out.error().map(|e| e.kind.as_str()), Some("cancelled"));
}

/// A tool that runs a nested program with the engine (as a nested agent would).
struct Nested {
    engine: Engine,
}

impl Host for Nested {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec::named("child").describe("runs a child program")]
    }
    fn call(&self, call: &ToolCall, cx: &CallCx<'_>) -> Result<Value, ToolError> {
        let src = match &call.args {
            Value::Map(m) => m.get(&Value::str("src")).cloned(),
            _ => None,
        };
        let Some(Value::Str(src)) = src else { return Err(ToolError::invalid_args("pass {:src \"...\"}")) };
        let out = self.engine.eval(&src, RunInput::new(), &NoTools, &cx.cancel.child());
        out.value()
            .cloned()
            .ok_or_else(|| ToolError::failed(out.error().map(|e| e.message.clone()).unwrap_or_default()))
    }
}

#[test]
fn nested_runs_from_a_tool_call_share_the_stack_guarantee() {
    // about the stack, not time: a debug build on a loaded machine takes seconds to
    // recurse that deep, so neither run's deadline may end it first
    let patient = Limits { timeout: std::time::Duration::from_secs(300), ..Limits::default() };
    let host = Nested { engine: Engine::new(patient.clone()) };
    let out = engine()
        .eval_with("(+ 1 (tool/child {:src \"(defn f [n] (if (= n 0) 0 (+ 1 (f (dec n))))) (f 500)\"}))", &host);
    assert_eq!(out.printed, "501", "{:?}", out.result);
    let (kind, msg) =
        reason("(tool/child {:src \"(defn f [n] (if (= n 0) 0 (+ 1 (f (dec n))))) (f 10000000)\"})", &host, patient);
    assert_eq!(kind, "tool_error");
    assert!(msg.contains("recursion"), "{msg}");
}

/// A host whose tool reports world faults as data and offers a catalog.
struct Catalog;

impl Host for Catalog {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec::named("fetch"),
            ToolSpec::named("native_search").exposure(Exposure::Native),
            ToolSpec::named("both").exposure(Exposure::Both),
        ]
    }
    fn call(&self, call: &ToolCall, cx: &CallCx<'_>) -> Result<Value, ToolError> {
        cx.record("server", serde_json::json!("store"));
        match call.name.as_str() {
            "fetch" => Err(ToolError::data("upstream_unavailable", "store is restarting")),
            "both" => Ok(Value::Int(7)),
            "native_search" => Err(ToolError::failed("native only")),
            other => Err(ToolError { kind: ToolErrorKind::UnknownTool, message: format!("Unknown tool: {other}") }),
        }
    }
    fn discover(&self, query: &Discovery<'_>, _cx: &CallCx<'_>) -> Option<Result<Value, ToolError>> {
        match query {
            Discovery::Dir { namespace: "store", .. } => Some(Ok(Value::vector([Value::str("store/fetch")]))),
            Discovery::Doc { name: "store/fetch" } => Some(Ok(Value::str("store/fetch\n  fetches an item"))),
            Discovery::Meta { name: "store/fetch" } => {
                Some(Ok(Value::map([(Value::kw("name"), Value::str("store/fetch"))])))
            }
            Discovery::Apropos { query: "fetch", .. } => Some(Ok(Value::vector([Value::str("store/fetch - fetches")]))),
            Discovery::Namespaces => Some(Ok(Value::vector([Value::str("crm")]))),
            Discovery::Publics { namespace: "crm" } => {
                Some(Ok(Value::map([(Value::str("crm/vips"), Value::str("The VIP customers."))])))
            }
            _ => None,
        }
    }
}

#[test]
fn world_faults_are_data_and_the_ledger_carries_host_metadata() {
    let out = engine().eval_with("(let [r (tool/fetch {:id 1})] [(:ok r) (:reason r) (:message r)])", &Catalog);
    assert_eq!(out.printed, "[false :upstream_unavailable \"store is restarting\"]");
    let entry = &out.tool_calls[0];
    assert_eq!(entry.meta.get("server"), Some(&serde_json::json!("store")));
    assert!(entry.error.as_ref().is_some_and(|e| e.is_data()));
    let json = entry.to_json();
    assert_eq!(json["error"]["reason"], "upstream_unavailable");
    assert_eq!(json["meta"]["server"], "store");
}

#[test]
fn exposure_decides_what_programs_may_call() {
    assert_eq!(engine().eval_with("(tool/both {})", &Catalog).printed, "7");
    let (kind, msg) = reason("(tool/native-search {:q 1})", &Catalog, Limits::default());
    assert_eq!(kind, "unknown_tool");
    assert!(msg.contains("native tool only"), "{msg}");
}

#[test]
fn discovery_falls_through_to_the_host_catalog() {
    assert_eq!(engine().eval_with("(dir 'store)", &Catalog).printed, "[\"store/fetch\"]");
    let out = engine().eval_with("(doc store/fetch)", &Catalog);
    assert_eq!(out.prints, ["store/fetch\n  fetches an item"]);
    // a host's doc text is also the value, so programs can read it
    assert_eq!(out.value(), Some(&Value::str("store/fetch\n  fetches an item")));
    assert_eq!(engine().eval_with("(:name (meta 'store/fetch))", &Catalog).printed, "\"store/fetch\"");
    assert_eq!(engine().eval_with("(first (apropos \"fetch\"))", &Catalog).printed, "\"store/fetch - fetches\"");
    // a core name still answers from the registry, and an unknown namespace still errors
    assert_eq!(engine().eval_with("(:ns (meta 'inc))", &Catalog).printed, "\"clojure.core\"");
    assert_eq!(reason("(dir 'nowhere)", &Catalog, Limits::default()).0, "runtime_error");
}

#[test]
fn a_host_adds_namespaces_to_all_ns_and_ns_publics() {
    let all = engine().eval_with("(all-ns)", &Catalog).printed;
    assert!(all.contains("\"crm\"") && all.contains("\"clojure.string\"") && all.contains("\"user\""), "{all}");
    // sorted with the core library's, once
    let sorted = engine().eval_with("(= (all-ns) (vec (sort (distinct (all-ns)))))", &Catalog).printed;
    assert_eq!(sorted, "true");
    assert_eq!(engine().eval_with("(ns-publics 'crm)", &Catalog).printed, "{\"crm/vips\" \"The VIP customers.\"}");
    assert_eq!(engine().eval_with("(ns-name crm)", &Catalog).printed, "\"crm\"");
    // a namespace neither knows stays an error; without a host nothing is added
    assert_eq!(reason("(ns-publics 'nowhere)", &Catalog, Limits::default()).0, "runtime_error");
    assert_eq!(reason("(ns-name nowhere)", &Catalog, Limits::default()).0, "runtime_error");
    assert!(!engine().eval_with("(all-ns)", &NoTools).printed.contains("\"crm\""));
}

#[test]
fn qualified_definitions_belong_to_their_namespace_not_user() {
    // a host's prelude puts `crm/vips` in the memory; a program's own names are bare
    let mut memory = Memory::new();
    memory.insert("crm/vips", Value::Int(1));
    memory.insert("mine", Value::Int(2));
    let run = |src: &str| engine().eval(src, RunInput::new().with_memory(memory.clone()), &NoTools, &Cancel::new());
    let out = run("[(dir user) (ns-publics 'user) (:ns (meta crm/vips)) (:ns (meta mine))]");
    assert_eq!(out.printed, "[[\"mine\"] {\"mine\" \"\"} \"crm\" \"user\"]");
    assert!(run("(doc crm/vips)").prints[0].starts_with("crm/vips\n  crm definition: "));
    assert!(run("(doc mine)").prints[0].starts_with("mine\n  user definition: "));
}

#[test]
fn tool_call_limit_reports_remaining_calls_to_the_host() {
    let seen = Arc::new(AtomicUsize::new(usize::MAX));
    struct Counting(Arc<AtomicUsize>);
    impl Host for Counting {
        fn tools(&self) -> Vec<ToolSpec> {
            vec![ToolSpec::named("t")]
        }
        fn call(&self, _: &ToolCall, cx: &CallCx<'_>) -> Result<Value, ToolError> {
            self.0.store(cx.remaining_tool_calls.map_or(usize::MAX, |n| n as usize), Ordering::SeqCst);
            Ok(Value::Nil)
        }
    }
    let host = Counting(seen.clone());
    let limits = Limits { max_tool_calls: Some(3), ..Limits::default() };
    let out = Engine::new(limits.clone()).eval_with("(tool/t) (tool/t)", &host);
    assert!(out.is_ok());
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    assert_eq!(reason("(tool/t) (tool/t) (tool/t) (tool/t)", &host, limits).0, "tool_call_limit_exceeded");
}

#[test]
fn fn_host_reuses_its_tool_threads() {
    let seen = Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
    let ids = seen.clone();
    let host = FnHost::new().with_tool("who", move |_| {
        ids.lock().unwrap().insert(std::thread::current().id());
        Ok(Value::Nil)
    });
    let calls = 20;
    let out = engine().eval_with(&format!("(dotimes [_ {calls}] (tool/who {{}}))"), &host);
    assert!(out.is_ok(), "{:?}", out.error());
    // a thread per call would give 20 distinct threads (ids are never reused)
    let distinct = seen.lock().unwrap().len();
    assert!(distinct < calls / 2, "{distinct} threads for {calls} sequential calls");
}

#[test]
fn fn_host_passes_the_host_contract() {
    let host = FnHost::new().with_tool("echo", Ok).with_tool("sleepy", |_| {
        std::thread::sleep(Duration::from_secs(3));
        Ok(Value::Nil)
    });
    let report = check_host(
        &host,
        &Probe::new("echo", Value::empty_map())
            .with_slow("sleepy", Value::empty_map())
            .with_slack(Duration::from_secs(1)),
    );
    assert!(report.passed(), "{report}");
}

/// A future that never resolves on its own, counting how often it was polled and whether
/// it was dropped (what an abandoned async tool call must do).
struct Stalled(Arc<AtomicUsize>);

impl std::future::Future for Stalled {
    type Output = Result<Value, String>;
    fn poll(self: std::pin::Pin<&mut Self>, _cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        std::task::Poll::Pending
    }
}

impl Drop for Stalled {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn async_fn_host_tools_pass_the_host_contract_and_their_futures_are_dropped() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let counter = dropped.clone();
    let host = FnHost::new()
        .with_async_tool("echo", |args| async move { Ok(args) })
        .with_async_tool("sleepy", move |_| Stalled(counter.clone()));
    let report = check_host(
        &host,
        &Probe::new("echo", Value::empty_map())
            .with_slow("sleepy", Value::empty_map())
            .with_slack(Duration::from_secs(1)),
    );
    assert!(report.passed(), "{report}");
    // every abandoned call (deadline, cancel, engine timeout) dropped its future
    assert_eq!(dropped.load(Ordering::SeqCst), 3);
    let out = engine().eval_with("(get (tool/echo {:user-id 7}) \"user_id\")", &host);
    assert_eq!(out.printed, "7");
    let failing = FnHost::new().with_async_tool("bad", |_| async { Err::<Value, _>("no such order".to_string()) });
    let (kind, msg) = reason("(tool/bad {})", &failing, Limits::default());
    assert_eq!(kind, "tool_error");
    assert!(msg.contains("no such order"), "{msg}");
}

#[test]
fn no_tools_and_catalog_pass_the_host_contract() {
    let report = check_host(&NoTools, &Probe::new("anything", Value::empty_map()));
    // NoTools has no tool for the engine check to record: that single check must fail
    let failed: Vec<&str> = report.checks.iter().filter(|(_, r)| r.is_err()).map(|(n, _)| *n).collect();
    assert_eq!(failed, ["engine records the call in the ledger"], "{report}");
    let report = check_host(&Catalog, &Probe::new("both", Value::empty_map()));
    assert!(report.passed(), "{report}");
}

#[test]
fn the_contract_catches_a_host_that_ignores_deadlines() {
    let report = check_host(&Stubborn, &Probe::new("stall", Value::empty_map()).with_slow("stall", Value::empty_map()));
    let failed: Vec<&str> = report.checks.iter().filter(|(_, r)| r.is_err()).map(|(n, _)| *n).collect();
    assert!(failed.contains(&"unknown tool is answered with UnknownTool"), "{report}");
    assert!(failed.contains(&"slow call stops on cancellation"), "{report}");
}

#[test]
fn tool_call_accepts_a_server_tool_reference() {
    let host = FnHost::new().with_tool("call", Ok).with_tool("other", Ok);
    let e = engine();
    assert_eq!(
        e.eval_with("(tool/call 'fs/read-file {:max-lines 2})", &host).printed,
        r#"{"args" {"max_lines" 2} "server" "fs" "tool" "read-file"}"#
    );
    assert_eq!(e.eval_with("(tool/call \"fs/list\")", &host).printed, r#"{"args" {} "server" "fs" "tool" "list"}"#);
    // the map shape is unchanged, and other shapes keep the teaching message
    assert_eq!(e.eval_with("(tool/call {:server \"a\"})", &host).printed, r#"{"server" "a"}"#);
    for src in ["(tool/call 'nope)", "(tool/other 'fs/read {:a 1})", "(tool/call 'fs/read 1 2)"] {
        let (kind, msg) = reason(src, &host, Limits::default());
        assert_eq!(kind, "invalid_tool_args", "{src}");
        assert!(msg.contains("named arguments"), "{src}: {msg}");
    }
}
