//! Many concurrent missions on one runtime, each calling an async tool that waits 100 ms:
//! the process's threads stay bounded by the evaluation pool plus the runtime's workers
//! (no thread per tool call). Counted in `/proc/self/task` (Linux), alone in this test
//! binary so that no other test's threads are counted. The 10,000-mission figures are in
//! `cargo xtask bench --missions`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ptc_lisp_eval::{EvalPool, PoolOptions};
use ptc_subagent::{ScriptedLlm, SubAgent, Tool};
use serde_json::json;

fn threads_now() -> usize {
    std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(0)
}

#[test]
fn five_hundred_missions_with_async_tools_add_no_thread_per_call() {
    if !std::path::Path::new("/proc/self/task").exists() {
        return; // not Linux: nothing to count with
    }
    let missions = 500;
    let run_threads = 32;
    let pool = EvalPool::new(PoolOptions::default().threads(run_threads).branch_threads(1)).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    // the pool's and the runtime's threads exist from here on
    let before = threads_now();
    let peak = Arc::new(AtomicUsize::new(before));
    let seen = peak.clone();
    let agent =
        SubAgent::builder("Look up order {{id}}").signature("{id :int, status :string}").max_turns(2).pool(pool).tool(
            Tool::new_async("lookup", move |args, _cx| {
                let seen = seen.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    seen.fetch_max(threads_now(), Ordering::SeqCst);
                    Ok(json!({"id": args["id"], "status": "shipped"}))
                }
            })
            .signature("(id :int) -> {id :int, status :string}"),
        );
    let steps = rt.block_on(async {
        let mut tasks = Vec::new();
        for id in 0..missions {
            let agent = agent.clone().context_value("id", json!(id)).build().unwrap();
            tasks.push(tokio::spawn(async move {
                let llm = ScriptedLlm::texts([
                    "```clojure\n(def order (tool/lookup {:id data/id}))\n(println (:status order))\n```",
                    "```clojure\n(return order)\n```",
                ]);
                agent.run(&llm).await
            }));
        }
        let mut steps = Vec::new();
        for t in tasks {
            steps.push(t.await.unwrap());
        }
        steps
    });
    for (id, step) in steps.iter().enumerate() {
        assert!(step.is_ok(), "mission {id}: {:?}", step.fail);
        assert_eq!(step.return_value, Some(json!({"id": id, "status": "shipped"})));
        assert_eq!(step.usage.turns, 2);
    }
    let peak = peak.load(Ordering::SeqCst);
    // at most `run_threads` tool calls wait at once; a thread per call would add that many
    let slack = 4;
    assert!(
        peak <= before + slack,
        "{peak} threads at peak, {before} before (pool {run_threads} + runtime 2 + harness)"
    );
}
