//! Many concurrent missions on one tokio runtime: scripted model, two turns, one async
//! tool call of 100 ms each. Reports the wall time, the most OS threads the process had
//! (sampled from `/proc/self/task`) and its peak RSS (`VmHWM`), as one JSON line.
//!
//! Run by `cargo xtask bench` (`cargo bench -p ptc-subagent --bench missions -- N THREADS`):
//! N missions (default 10,000) on an evaluation pool of THREADS run threads (default
//! 256; a program holds its run thread while its tool call waits, so the run threads
//! bound how many tool calls wait at once). Nothing here asserts a timing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ptc_lisp_eval::{EvalPool, PoolOptions};
use ptc_subagent::{ScriptedLlm, SubAgent, Tool};
use serde_json::json;

fn threads_now() -> usize {
    std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(0)
}

/// A `/proc/self/status` field in KiB (`VmRSS:`, `VmHWM:`).
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    // `cargo bench` passes `--bench`; explicit figures may follow
    let mut numbers = std::env::args().skip(1).filter_map(|a| a.parse::<usize>().ok());
    let missions = numbers.next().unwrap_or(10_000);
    let run_threads = numbers.next().unwrap_or(256);
    let workers = 2;
    let pool = EvalPool::new(PoolOptions::default().threads(run_threads).branch_threads(2)).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build().unwrap();
    let agent = SubAgent::builder("Look up the order")
        .signature("{id :int, status :string}")
        .max_turns(2)
        .pool(pool)
        .tool(
            Tool::new_async("lookup", |args, _cx| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(json!({"id": args["id"], "status": "shipped"}))
            })
            .signature("(id :int) -> {id :int, status :string}"),
        )
        .build()
        .unwrap();
    let agent = Arc::new(agent);
    let threads_before = threads_now();
    let rss_before = status_kib("VmRSS:").unwrap_or(0);
    // a sampler thread (counted in the figures) records the most threads seen
    let peak = Arc::new(AtomicUsize::new(threads_before));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(threads_now(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let started = Instant::now();
    let ok = rt.block_on(async {
        let tasks: Vec<_> = (0..missions)
            .map(|id| {
                let agent = agent.clone();
                tokio::spawn(async move {
                    let llm = ScriptedLlm::texts([
                        format!("```clojure\n(def order (tool/lookup {{:id {id}}}))\n(println (:status order))\n```"),
                        "```clojure\n(return order)\n```".to_string(),
                    ]);
                    let step = agent.run(&llm).await;
                    if step.is_ok() && step.return_value == Some(json!({"id": id, "status": "shipped"})) {
                        Ok(())
                    } else {
                        let error = step.turns.iter().find_map(|t| t.error.clone());
                        Err(format!("{:?} {}", step.fail.map(|f| f.to_string()), error.unwrap_or_default()))
                    }
                })
            })
            .collect();
        let (mut ok, mut first_failure) = (0, None);
        for t in tasks {
            match t.await {
                Ok(Ok(())) => ok += 1,
                Ok(Err(why)) => first_failure = first_failure.or(Some(why)),
                Err(e) => first_failure = first_failure.or(Some(e.to_string())),
            }
        }
        (ok, first_failure)
    });
    let (ok, first_failure) = ok;
    let wall = started.elapsed();
    done.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let figures = json!({
        "missions": missions,
        "ok": ok,
        "first_failure": first_failure,
        "run_threads": run_threads,
        "branch_threads": 2,
        "tokio_workers": workers,
        "wall_s": wall.as_secs_f64(),
        "threads_before": threads_before,
        "threads_peak": peak.load(Ordering::Relaxed),
        "rss_before_mib": rss_before as f64 / 1024.0,
        "rss_peak_mib": status_kib("VmHWM:").unwrap_or(0) as f64 / 1024.0,
        "rss_after_mib": status_kib("VmRSS:").unwrap_or(0) as f64 / 1024.0,
    });
    println!("{figures}");
}
