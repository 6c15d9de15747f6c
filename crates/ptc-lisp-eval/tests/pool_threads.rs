//! Many concurrent runs with `pmap` keep the process's thread count bounded by the pool:
//! counted in `/proc/self/task` (Linux), alone in this test binary so that no other test's
//! threads are counted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};

use ptc_lisp_eval::{
    CallCx, Cancel, Engine, EvalPool, Host, Limits, PoolOptions, RunInput, ToolCall, ToolError, ToolSpec, Value,
};

fn threads_now() -> usize {
    std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(0)
}

/// A tool that records the most threads the process had while programs ran.
struct Peak(AtomicUsize);

impl Host for Peak {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec::named("peak")]
    }

    fn call(&self, _call: &ToolCall, _cx: &CallCx<'_>) -> Result<Value, ToolError> {
        self.0.fetch_max(threads_now(), Ordering::SeqCst);
        Ok(Value::Int(1))
    }
}

#[test]
fn concurrent_runs_and_branches_never_add_threads_beyond_the_pool() {
    if !std::path::Path::new("/proc/self/task").exists() {
        return; // not Linux: nothing to count with
    }
    let pool = EvalPool::new(PoolOptions::default().threads(3).branch_threads(3)).unwrap();
    let engine = Engine::new(Limits::default()).with_pool(pool);
    let callers = 16;
    let before = threads_now();
    let host = Peak(AtomicUsize::new(0));
    std::thread::scope(|s| {
        for _ in 0..callers {
            s.spawn(|| {
                for _ in 0..10 {
                    let out = engine.eval(
                        "(reduce + (pmap (fn [_] (tool/peak {})) (range 8)))",
                        RunInput::new(),
                        &host,
                        &Cancel::new(),
                    );
                    assert_eq!(out.printed, "8", "{:?}", out.error());
                }
            });
        }
    });
    let peak = host.0.load(Ordering::SeqCst);
    // the pool's threads existed before; only the test's own callers came on top
    assert!(peak <= before + callers, "{peak} threads at peak, {before} before plus {callers} callers");
}
