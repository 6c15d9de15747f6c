//! A pooled thread keeps every stack page it touched, so a run or a branch that went deep
//! retires its set of threads: the next job runs on a fresh thread, and the old one ends
//! (its stack goes back to the system). Shallow work keeps its thread.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Mutex;
use std::thread::ThreadId;

use ptc_lisp_eval::{
    CallCx, Cancel, Engine, EvalPool, Host, Limits, PoolOptions, RunInput, ToolCall, ToolError, ToolSpec, Value,
};

/// A tool that records which thread called it.
#[derive(Default)]
struct Where(Mutex<Vec<ThreadId>>);

impl Host for Where {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec::named("where")]
    }

    fn call(&self, _call: &ToolCall, _cx: &CallCx<'_>) -> Result<Value, ToolError> {
        self.0.lock().unwrap().push(std::thread::current().id());
        Ok(Value::Int(1))
    }
}

impl Where {
    fn last(&self) -> ThreadId {
        *self.0.lock().unwrap().last().unwrap()
    }
}

/// Compares two values nested 100,000 levels deep: the comparison walks them on the stack.
const DEEP: &str =
    "(let [a (reduce (fn [a _] [a]) [] (range 100000)) b (reduce (fn [a _] [a]) [] (range 100000))] (= a b))";

fn engine() -> Engine {
    let pool = EvalPool::new(PoolOptions::default().threads(1).branch_threads(1)).unwrap();
    Engine::new(Limits { timeout: std::time::Duration::from_secs(30), max_heap_bytes: 1 << 30, ..Limits::default() })
        .with_pool(pool)
}

fn run(engine: &Engine, host: &Where, program: &str) -> String {
    let out = engine.eval(program, RunInput::new(), host, &Cancel::new());
    assert!(out.error().is_none(), "{program}: {:?}", out.error());
    out.printed
}

#[test]
fn a_deep_run_retires_its_thread_and_a_shallow_one_keeps_it() {
    let engine = engine();
    let host = Where::default();
    run(&engine, &host, "(tool/where {})");
    let first = host.last();
    run(&engine, &host, "(tool/where {})");
    assert_eq!(host.last(), first, "a shallow run keeps its thread");
    assert_eq!(run(&engine, &host, &format!("(tool/where {{}}) {DEEP}")), "true");
    assert_eq!(host.last(), first, "the deep run ran on the same thread");
    run(&engine, &host, "(tool/where {})");
    assert_ne!(host.last(), first, "the run after a deep one runs on a fresh thread");
}

#[test]
fn a_deep_branch_retires_the_branch_threads() {
    let engine = engine();
    let host = Where::default();
    // the run thread records itself, then both branches record theirs while busy: the
    // caller takes one, the branch thread the other
    const BUSY: &str = "(reduce + (range 1000000))";
    let threads = |host: &Where, work: &str| {
        let program = format!("(tool/where {{}}) (pmap (fn [i] (tool/where {{}}) {work}) [0 1])");
        // a deep branch may run out of its (smaller) stack: it went deep either way
        let _ = engine.eval(&program, RunInput::new(), host, &Cancel::new());
        let seen = host.0.lock().unwrap();
        let run = seen[seen.len() - 3];
        let branch: Vec<ThreadId> = seen[seen.len() - 2..].iter().copied().filter(|t| *t != run).collect();
        assert_eq!(branch.len(), 1, "one branch ran on a branch thread: {seen:?}");
        (run, branch[0])
    };
    let (run, branch) = threads(&host, BUSY);
    assert_eq!(threads(&host, BUSY), (run, branch), "shallow branches keep their threads");
    assert_eq!(threads(&host, DEEP), (run, branch), "the deep branches ran on the same threads");
    let (run_after, branch_after) = threads(&host, BUSY);
    assert_ne!(run_after, run, "the run thread went deep too: retired");
    assert_ne!(branch_after, branch, "branches after a deep one run on a fresh branch thread");
}
