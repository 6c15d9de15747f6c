//! The evaluation pool: runs and branches on reused threads, the stack guarantee kept,
//! a bounded queue, and a pool that survives a panicking run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use ptc_lisp_eval::{
    CallCx, Cancel, Engine, EvalPool, Host, Limits, NoTools, PoolOptions, RunInput, RunResult, ToolCall, ToolError,
    ToolSpec, Value,
};

fn pool(threads: usize, branch_threads: usize) -> EvalPool {
    EvalPool::new(PoolOptions::default().threads(threads).branch_threads(branch_threads)).unwrap()
}

fn reason(out: &ptc_lisp_eval::Outcome) -> String {
    match &out.result {
        RunResult::Error(e) => e.kind.as_str().to_string(),
        _ => format!("ok {}", out.printed),
    }
}

/// A host whose one tool, `where`, records the thread it was called on.
#[derive(Default)]
struct Where {
    threads: Mutex<HashSet<ThreadId>>,
    names: Mutex<HashSet<String>>,
}

impl Host for Where {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec::named("where")]
    }

    fn call(&self, _call: &ToolCall, _cx: &CallCx<'_>) -> Result<Value, ToolError> {
        let me = std::thread::current();
        self.threads.lock().unwrap().insert(me.id());
        self.names.lock().unwrap().insert(me.name().unwrap_or("").to_string());
        Ok(Value::Int(1))
    }
}

#[test]
fn deep_recursion_on_a_pooled_thread_ends_in_the_recursion_limit_and_the_thread_is_reused() {
    // a long deadline: a debug build filling its stack beside other builds can pass a second
    let long = Limits { timeout: std::time::Duration::from_secs(300), ..Limits::default() };
    let engine = Engine::new(long.clone()).with_pool(pool(1, 1));
    let deep = "(defn f [n] (if (= n 0) 0 (+ 1 (f (- n 1))))) (f 100000000)";
    // the depth limit, then the stack itself (depth limit raised past what the stack holds)
    assert_eq!(reason(&engine.eval_with(deep, &NoTools)), "recursion_limit_exceeded");
    let unbounded =
        Engine::new(Limits { max_recursion_depth: u32::MAX, ..long }).with_pool(engine.pool().unwrap().clone());
    for _ in 0..3 {
        let out = unbounded.eval_with(deep, &NoTools);
        assert_eq!(reason(&out), "recursion_limit_exceeded", "{:?}", out.error());
    }
    // the one thread is still there and still has its whole stack
    assert_eq!(
        reason(&engine.eval_with("(defn f [n] (if (= n 0) 0 (+ 1 (f (- n 1))))) (f 1500)", &NoTools)),
        "ok 1500"
    );
}

#[test]
fn runs_from_many_callers_share_the_pool_threads() {
    let engine = Engine::new(Limits::default()).with_pool(pool(2, 1));
    let host = Where::default();
    std::thread::scope(|s| {
        for _ in 0..12 {
            s.spawn(|| {
                for _ in 0..10 {
                    let out = engine.eval("(tool/where {})", RunInput::new(), &host, &Cancel::new());
                    assert_eq!(out.printed, "1");
                }
            });
        }
    });
    let threads = host.threads.lock().unwrap().len();
    assert!((1..=2).contains(&threads), "120 runs used {threads} threads, the pool has 2");
    let names = host.names.lock().unwrap();
    assert!(names.iter().all(|n| n.starts_with("ptc-eval-")), "{names:?}");
}

/// A host whose `boom` tool panics.
struct Boom;

impl Host for Boom {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec::named("boom")]
    }

    fn call(&self, _call: &ToolCall, _cx: &CallCx<'_>) -> Result<Value, ToolError> {
        panic!("the host broke")
    }
}

#[test]
fn a_panic_in_one_run_leaves_the_pool_working() {
    let engine = Engine::new(Limits::default()).with_pool(pool(1, 1));
    for _ in 0..3 {
        let out = engine.eval_with("(tool/boom {})", &Boom);
        let e = out.error().expect("a panicking host ends the run in an error");
        assert!(e.message.contains("internal error"), "{}", e.message);
    }
    assert_eq!(engine.eval_with("(+ 1 2)", &NoTools).printed, "3");
}

/// A host whose `hold` tool waits until the test lets it go.
struct Hold {
    entered: Mutex<mpsc::Sender<()>>,
    release: Mutex<mpsc::Receiver<()>>,
}

impl Host for Hold {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec::named("hold")]
    }

    fn call(&self, _call: &ToolCall, _cx: &CallCx<'_>) -> Result<Value, ToolError> {
        self.entered.lock().unwrap().send(()).unwrap();
        self.release.lock().unwrap().recv().unwrap();
        Ok(Value::Int(7))
    }
}

#[test]
fn a_full_queue_sheds_the_run_instead_of_starting_a_thread() {
    let pool = EvalPool::new(PoolOptions::default().threads(1).branch_threads(1).queue_bound(0)).unwrap();
    let engine = Engine::new(Limits::default()).with_pool(pool.clone());
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let host = Arc::new(Hold { entered: Mutex::new(entered_tx), release: Mutex::new(release_rx) });
    std::thread::scope(|s| {
        let busy = s.spawn(|| engine.eval_with("(tool/hold {})", host.as_ref()));
        entered.recv().unwrap();
        assert_eq!(pool.busy(), 1);
        let shed = engine.eval_with("(+ 1 2)", &NoTools);
        let e = shed.error().expect("no room: the run is refused");
        assert_eq!(e.kind.as_str(), "parallel_capacity_exceeded");
        assert!(e.message.contains("queue_bound"), "{}", e.message);
        release.send(()).unwrap();
        assert_eq!(busy.join().unwrap().printed, "7");
    });
    assert_eq!(pool.busy(), 0);
    assert_eq!(engine.eval_with("(+ 1 2)", &NoTools).printed, "3");
}

#[test]
fn a_nested_run_from_a_tool_call_runs_on_the_same_pool_thread() {
    struct Nested {
        engine: Engine,
        seen: Mutex<Vec<ThreadId>>,
    }
    impl Host for Nested {
        fn tools(&self) -> Vec<ToolSpec> {
            vec![ToolSpec::named("child")]
        }
        fn call(&self, _call: &ToolCall, cx: &CallCx<'_>) -> Result<Value, ToolError> {
            self.seen.lock().unwrap().push(std::thread::current().id());
            let out = self.engine.eval("(+ 40 2)", RunInput::new(), &NoTools, &cx.cancel.child());
            out.value().cloned().ok_or_else(|| ToolError::failed("child failed"))
        }
    }
    let engine = Engine::new(Limits::default()).with_pool(pool(1, 1));
    let host = Nested { engine: engine.clone(), seen: Mutex::new(Vec::new()) };
    // one run thread: the nested run can only finish by running inline on it
    let out = engine.eval_with("(+ (tool/child {}) (tool/child {}))", &host);
    assert_eq!(out.printed, "84");
    assert_eq!(host.seen.lock().unwrap().len(), 2);
}

/// Polls `f` to completion on this thread, parking between polls.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

#[test]
fn an_async_run_is_awaited_without_a_waiting_thread() {
    let engine = Engine::new(Limits::default()).with_pool(pool(1, 1));
    let host = Arc::new(Where::default());
    let runs: Vec<_> = (0..20)
        .map(|i| {
            engine.eval_async(&format!("(+ {i} (tool/where {{}}))"), RunInput::new(), host.clone(), &Cancel::new())
        })
        .collect();
    // all twenty are queued before any is awaited: nothing blocked the caller
    let printed: Vec<String> = runs.into_iter().map(|r| block_on(r).printed).collect();
    assert_eq!(printed, (1..=20).map(|i| i.to_string()).collect::<Vec<_>>());
    assert_eq!(host.threads.lock().unwrap().len(), 1);
    let spawned = block_on(engine.spawn(|| std::thread::current().name().unwrap_or("").to_string())).unwrap();
    assert!(spawned.starts_with("ptc-eval-"), "{spawned}");
}

#[test]
fn dropping_an_async_run_cancels_it() {
    let engine = Engine::new(Limits {
        timeout: std::time::Duration::from_secs(60),
        max_loop_iterations: u64::MAX,
        ..Limits::default()
    })
    .with_pool(pool(1, 1));
    let (entered_tx, entered) = mpsc::channel();
    let host = Arc::new(ptc_lisp_eval::FnHost::new().with_tool("mark", move |_| {
        let _ = entered_tx.send(());
        Ok(Value::Nil)
    }));
    let started = std::time::Instant::now();
    let run = engine.eval_async("(tool/mark {}) (loop [i 0] (recur (inc i)))", RunInput::new(), host, &Cancel::new());
    let run = std::thread::spawn(move || {
        // polled once (queued), then dropped once the program is inside its endless loop
        let mut run = Box::pin(run);
        let waker = std::task::Waker::noop();
        assert!(run.as_mut().poll(&mut std::task::Context::from_waker(waker)).is_pending());
        run
    })
    .join()
    .unwrap();
    entered.recv().unwrap();
    drop(run);
    // the pool's only thread is free again only once the cancelled run has stopped
    assert_eq!(engine.eval_with("(+ 1 2)", &NoTools).printed, "3");
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "the dropped run went on: {:?}", started.elapsed());
}

#[test]
fn nested_pmap_with_more_branches_than_threads_finishes() {
    let limits = Limits { max_parallel_workers: 64, ..Limits::default() };
    let engine = Engine::new(limits).with_pool(pool(1, 2));
    // 6 × 6 branches on 2 branch threads and the one run thread
    let out =
        engine.eval_with("(reduce + (pmap (fn [i] (reduce + (pmap (fn [j] (* i j)) (range 6)))) (range 6)))", &NoTools);
    assert_eq!(out.printed, "225", "{:?}", out.error());
    let out = engine
        .eval_with("(count (pcalls #(pmap inc (range 10)) #(pmap dec (range 10)) #(pmap - (range 10))))", &NoTools);
    assert_eq!(out.printed, "3", "{:?}", out.error());
}

#[test]
fn deep_recursion_inside_a_pmap_branch_ends_in_the_recursion_limit() {
    let limits =
        Limits { max_recursion_depth: u32::MAX, timeout: std::time::Duration::from_secs(120), ..Limits::default() };
    let engine = Engine::new(limits).with_pool(pool(1, 1));
    let out = engine.eval_with("(defn f [n] (if (= n 0) 0 (+ 1 (f (- n 1))))) (pmap f [10 100000000 20])", &NoTools);
    // a branch's error is reported as the pmap's, naming the branch and the cause
    let e = out.error().expect("the deep branch fails");
    assert_eq!(e.kind.as_str(), "pmap_error");
    assert!(e.message.contains("branch 1") && e.message.contains("recursion too deep"), "{}", e.message);
    // the branch threads survive it
    assert_eq!(engine.eval_with("(pmap inc [1 2 3])", &NoTools).printed, "[2 3 4]");
}

#[test]
fn pmap_branches_run_on_the_branch_threads_and_the_caller() {
    let engine = Engine::new(Limits::default()).with_pool(pool(1, 2));
    let host = Where::default();
    for _ in 0..20 {
        let out =
            engine.eval("(count (pmap (fn [_] (tool/where {})) (range 8)))", RunInput::new(), &host, &Cancel::new());
        assert_eq!(out.printed, "8");
    }
    let names = host.names.lock().unwrap();
    assert!(names.iter().all(|n| n.starts_with("ptc-eval-") || n.starts_with("ptc-branch-")), "{names:?}");
    assert!(host.threads.lock().unwrap().len() <= 3, "one run thread and two branch threads");
}
