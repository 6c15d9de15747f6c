//! One cancel token from the caller to everything a mission started: `run_with_cancel`
//! ends in `cancelled`, no tool call starts after it, a waiting tool wakes on it, and
//! dropping the `run` future cancels the mission.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use common::clj;
use ptc_lisp_eval::{Cancel, Limits};
use ptc_subagent::{ScriptedLlm, SubAgent, Tool, ToolError};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn patient() -> Limits {
    Limits { timeout: Duration::from_secs(60), max_loop_iterations: u64::MAX, ..Limits::default() }
}

#[test]
fn a_cancel_mid_mission_ends_it_as_cancelled_and_no_further_tool_call_starts() {
    let cancel = Cancel::new();
    let stopper = cancel.clone();
    let after = Arc::new(AtomicUsize::new(0));
    let after_calls = after.clone();
    let agent = SubAgent::builder("Do it")
        .max_turns(3)
        .limits(patient())
        .tool(Tool::new("stop", move |_| {
            stopper.cancel(); // the caller gives up while the program runs
            Ok(serde_json::json!(1))
        }))
        .tool(Tool::new("side_effect", move |_| {
            after_calls.fetch_add(1, Ordering::SeqCst);
            Ok(serde_json::json!(1))
        }))
        .build()
        .unwrap();
    let llm = ScriptedLlm::texts([
        clj("(tool/stop {}) (tool/side-effect {}) (return 1)"),
        clj("(tool/side-effect {}) (return 2)"),
        clj("(return 3)"),
    ]);
    let step = runtime().block_on(agent.run_with_cancel(&llm, &cancel));
    let fail = step.fail.expect("a cancelled mission fails");
    assert_eq!(fail.reason, "cancelled", "{}", fail.message);
    assert_eq!(after.load(Ordering::SeqCst), 0, "a tool call started after the cancel");
    assert_eq!(llm.requests().len(), 1, "no model request after the cancel");
}

#[test]
fn an_already_cancelled_token_runs_nothing() {
    let cancel = Cancel::new();
    cancel.cancel();
    let agent = SubAgent::builder("Do it").build().unwrap();
    let llm = ScriptedLlm::texts([clj("(return 1)")]);
    let step = runtime().block_on(agent.run_with_cancel(&llm, &cancel));
    assert_eq!(step.fail.map(|f| f.reason).as_deref(), Some("cancelled"));
    assert!(llm.requests().is_empty());
}

#[test]
fn dropping_the_run_future_cancels_the_waiting_tool_call_and_the_program() {
    let (entered_tx, entered) = mpsc::channel::<()>();
    let (heard_tx, heard) = mpsc::channel::<()>();
    let entered_tx = Mutex::new(entered_tx);
    let heard_tx = Mutex::new(heard_tx);
    let later = Arc::new(AtomicUsize::new(0));
    let later_calls = later.clone();
    let agent = SubAgent::builder("Wait")
        .max_turns(2)
        .limits(patient())
        .tool(Tool::with_context("wait", move |_, cx| {
            // blocks until its context's cancel fires
            let (tx, rx) = mpsc::channel();
            let _watch = cx.cancel.on_cancel(move || {
                let _ = tx.send(());
            });
            entered_tx.lock().unwrap().send(()).unwrap();
            rx.recv().map_err(|_| ToolError::failed("no cancel"))?;
            heard_tx.lock().unwrap().send(()).unwrap();
            Ok(serde_json::json!(1))
        }))
        .tool(Tool::new("later", move |_| {
            later_calls.fetch_add(1, Ordering::SeqCst);
            Ok(serde_json::json!(1))
        }))
        .build()
        .unwrap();
    let llm = ScriptedLlm::texts([clj("(tool/wait {}) (tool/later {}) (return 1)")]);
    let rt = runtime();
    let agent = Arc::new(agent);
    let llm = Arc::new(llm);
    let task = {
        let (agent, llm) = (agent.clone(), llm.clone());
        rt.spawn(async move { agent.run(llm.as_ref()).await })
    };
    entered.recv_timeout(Duration::from_secs(30)).expect("the tool was called");
    task.abort();
    // the tool hears the cancel through its context once the mission's future is dropped
    heard.recv_timeout(Duration::from_secs(10)).expect("dropping the mission cancelled its tool call");
    assert!(rt.block_on(task).unwrap_err().is_cancelled());
    // the pool's threads go idle: the program ended without starting `later`
    let pool = ptc_lisp_eval::EvalPool::shared().unwrap();
    let started = std::time::Instant::now();
    while pool.busy() > 0 && started.elapsed() < Duration::from_secs(10) {
        std::thread::yield_now();
    }
    assert_eq!(pool.busy(), 0, "the program still runs");
    assert_eq!(later.load(Ordering::SeqCst), 0, "a tool call started after the mission was dropped");
}

/// Sends on drop: tells the test that an async tool's future was dropped (its task aborted).
struct DropSignal(Mutex<mpsc::Sender<()>>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        let _ = self.0.lock().unwrap().send(());
    }
}

#[test]
fn dropping_the_run_future_aborts_an_async_tool_s_task() {
    let (entered_tx, entered) = mpsc::channel::<()>();
    let (dropped_tx, dropped) = mpsc::channel::<()>();
    let entered_tx = Mutex::new(entered_tx);
    let dropped_tx = Mutex::new(dropped_tx);
    let agent = SubAgent::builder("Wait")
        .max_turns(2)
        .limits(patient())
        .tool(Tool::new_async("wait", move |_, _cx| {
            let signal = DropSignal(Mutex::new(dropped_tx.lock().unwrap().clone()));
            entered_tx.lock().unwrap().send(()).unwrap();
            async move {
                let _signal = signal;
                std::future::pending::<()>().await; // never answers on its own
                Ok(serde_json::json!(1))
            }
        }))
        .build()
        .unwrap();
    let llm = Arc::new(ScriptedLlm::texts([clj("(return (tool/wait {}))")]));
    let agent = Arc::new(agent);
    let rt = runtime();
    let task = {
        let (agent, llm) = (agent.clone(), llm.clone());
        rt.spawn(async move { agent.run(llm.as_ref()).await })
    };
    entered.recv_timeout(Duration::from_secs(30)).expect("the tool was called");
    task.abort();
    dropped.recv_timeout(Duration::from_secs(10)).expect("dropping the mission aborted the tool's task");
    assert!(rt.block_on(task).unwrap_err().is_cancelled());
}

#[test]
fn an_async_tool_past_the_program_deadline_is_aborted_and_the_program_times_out() {
    let (dropped_tx, dropped) = mpsc::channel::<()>();
    let dropped_tx = Mutex::new(dropped_tx);
    let agent = SubAgent::builder("Wait")
        .max_turns(1)
        .timeout(Duration::from_millis(200))
        .tool(Tool::new_async("wait", move |_, _cx| {
            let signal = DropSignal(Mutex::new(dropped_tx.lock().unwrap().clone()));
            async move {
                let _signal = signal;
                std::future::pending::<()>().await;
                Ok(serde_json::json!(1))
            }
        }))
        .build()
        .unwrap();
    let llm = ScriptedLlm::texts([clj("(return (tool/wait {}))")]);
    let step = runtime().block_on(agent.run(&llm));
    let error = step.turns[0].error.clone().unwrap_or_default();
    assert!(error.contains("timeout"), "{error}");
    dropped.recv_timeout(Duration::from_secs(10)).expect("the tool's task was aborted at the deadline");
}
