//! The evaluation threads: a fixed set of big-stack threads, reused by every run.
//!
//! Starting a 256 MiB-stack thread for each run cost more than running a small program, and
//! a service running thousands of programs at once ended with thousands of threads. So an
//! [`EvalPool`] starts its threads once and hands them runs and `pmap`/`pcalls` branches.
//!
//! Two sets of threads, both reserving [`EVAL_STACK_BYTES`](crate::stack::EVAL_STACK_BYTES)
//! of stack (virtual memory, committed as touched) and marked as evaluation threads, so the
//! stack guarantee of `stack.rs` holds on them:
//!
//! - **run threads** take whole runs (and compilations). A caller off the pool blocks while
//!   its run is queued and running. Runs wait in one queue, first come first served; at most
//!   `threads + queue_bound` runs are admitted at once, the next one fails at once with
//!   `parallel_capacity_exceeded` (load is shed, never a new thread). An idle run thread
//!   sleeps on the queue's condition variable and one handed run wakes one thread: rayon's
//!   idle loop, which yields the CPU over and over before it sleeps, cost a service of small
//!   runs more than the runs (the threads are still rayon's, so that a blocking caller's run,
//!   which borrows from the caller, crosses over in a rayon scope; the queue then holds a
//!   nudge for it). A run thread waiting for its `pmap` branches may take such a blocking
//!   caller's queued run meanwhile (rayon's work stealing), never a spawned one.
//! - **branch threads** take `pmap`/`pcalls` branches. The thread that calls `pmap` runs
//!   branches itself: it and the helpers it queued share one list of calls, each taking the
//!   next call when done with its last, so a `pmap` finishes even when no branch thread is
//!   free (the caller then does all the work, like `map`). A branch thread that waits for a
//!   nested `pmap`'s helpers runs other queued branches meanwhile (work stealing), so nested
//!   `pmap` cannot deadlock the pool whatever its size: every wait is for a helper that is
//!   running or that the waiter can run itself.
//!
//! A nested run (a nested agent started from a tool call) runs inline on the thread that
//! asked, when that thread is an evaluation thread with enough stack left. Only when an
//! evaluation thread is short of stack does the nested run get a fresh thread of its own;
//! that is bounded by how deep agents nest, never by load. A run started on a thread of no
//! pool, with no pool available (the system refused threads), also gets a fresh thread.
//!
//! A panic inside a run or a branch is contained (the run ends in an internal error) and the
//! thread stays in the pool.
//!
//! A thread keeps every stack page it touched for as long as it lives, so after a run (or
//! a branch) that went more than [`DEEP_BYTES`](crate::stack::DEEP_BYTES) deep, its set of
//! threads is replaced by a fresh one: new jobs go to the new threads, the old ones end as
//! soon as they finish what they hold, and their stacks go back to the system. (Deep runs
//! on several long-lived threads used to add up: a server that had answered a handful of
//! hostile programs sat at 770 MB.) Callers that do not build a pool share one process-wide pool
//! ([`EvalPool::shared`]), started on first use.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::task::{Context, Poll, Waker};

use crate::stack::{self, EVAL_STACK_BYTES, Failure};

/// Sizes of an [`EvalPool`]. The defaults suit a service on the machine it runs on; a
/// service whose programs wait long on tools wants more run threads (a run holds its thread
/// while it waits).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolOptions {
    /// Threads that run programs (default: twice the available cores, at least 8).
    pub threads: usize,
    /// Threads that help with `pmap`/`pcalls` branches (default: twice the available
    /// cores, at least 8). Each program's share is still capped by
    /// `Limits::max_parallel_workers`.
    pub branch_threads: usize,
    /// Runs that may wait for a free run thread (default 65,536). A run beyond it fails at
    /// once with `parallel_capacity_exceeded`.
    pub queue_bound: usize,
}

impl Default for PoolOptions {
    /// Twice the cores for each kind (at least 8), fewer under an address-space limit
    /// (`ulimit -v`): the stacks then reserve at most a quarter of it (one of each at least).
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let mut each = (2 * cores).max(8);
        if let Some(limit) = address_space_limit() {
            let fit = usize::try_from(limit / 4 / EVAL_STACK_BYTES as u64).unwrap_or(usize::MAX);
            each = each.min(fit / 2).max(1);
        }
        PoolOptions { threads: each, branch_threads: each, queue_bound: 65_536 }
    }
}

/// The process's address-space limit in bytes, when it has one (Linux; `None` elsewhere).
fn address_space_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max address space"))?;
    // "Max address space   <soft>   <hard>   bytes"
    line.trim_start_matches("Max address space").split_whitespace().next()?.parse().ok()
}

impl PoolOptions {
    /// Sets the number of run threads (at least 1).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
        self
    }

    /// Sets the number of branch threads (at least 1).
    pub fn branch_threads(mut self, n: usize) -> Self {
        self.branch_threads = n.max(1);
        self
    }

    /// Sets how many runs may wait for a run thread.
    pub fn queue_bound(mut self, n: usize) -> Self {
        self.queue_bound = n;
        self
    }
}

/// The pool could not start its threads.
#[derive(Debug, thiserror::Error)]
#[error("cannot start the evaluation threads: {0}; lower PoolOptions::threads or free resources")]
pub struct PoolError(String);

/// A pool of evaluation threads, shared by the engines given it. Cheap to clone.
///
/// ```
/// use ptc_lisp_eval::{Engine, EvalPool, Limits, NoTools, PoolOptions};
/// let pool = EvalPool::new(PoolOptions::default().threads(2).branch_threads(2))?;
/// let engine = Engine::new(Limits::default()).with_pool(pool);
/// assert_eq!(engine.eval_with("(+ 1 2)", &NoTools).printed, "3");
/// # Ok::<(), ptc_lisp_eval::PoolError>(())
/// ```
#[derive(Clone)]
pub struct EvalPool {
    inner: Arc<Inner>,
}

struct Inner {
    runs: Threads<RunSet>,
    branches: Arc<Threads<rayon_core::ThreadPool>>,
    /// Runs queued or running right now.
    admitted: AtomicUsize,
    options: PoolOptions,
}

impl std::fmt::Debug for EvalPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EvalPool")
            .field("options", &self.inner.options)
            .field("admitted", &self.inner.admitted.load(Ordering::Relaxed))
            .finish()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // threads hold only weak handles on their sets; the sets end with the pool
        self.runs.close();
        self.branches.close();
    }
}

/// What the current thread is to the pools.
#[derive(Clone)]
enum Role {
    /// A run thread (or a nested run's own thread): branches go to these threads.
    Run(Weak<Threads<rayon_core::ThreadPool>>),
    /// A branch thread: branches go to its own set (this is its handle, to renew it).
    Branch(Weak<Threads<rayon_core::ThreadPool>>),
}

/// A set of threads (`P`: the run threads' [`RunSet`], or the branch threads' rayon pool)
/// that can be replaced by a fresh set of the same kind.
struct Threads<P> {
    current: Mutex<Generation<P>>,
    start: Box<dyn Fn() -> Option<P> + Send + Sync>,
}

struct Generation<P> {
    number: u64,
    pool: Option<Arc<P>>,
}

impl<P> Clone for Generation<P> {
    fn clone(&self) -> Self {
        Generation { number: self.number, pool: self.pool.clone() }
    }
}

impl<P> Threads<P> {
    /// A set that starts its threads with `start` (see [`Threads::open`]).
    fn new(start: impl Fn() -> Option<P> + Send + Sync + 'static) -> Threads<P> {
        Threads { current: Mutex::new(Generation { number: 0, pool: None }), start: Box::new(start) }
    }

    /// Starts the first generation of threads.
    fn open(&self, kind: &str) -> Result<(), PoolError> {
        let pool = (self.start)().ok_or_else(|| PoolError(format!("the system refused the {kind} threads")))?;
        let mut g = self.current.lock().map_err(|_| PoolError(format!("the {kind} threads' lock is poisoned")))?;
        *g = Generation { number: 0, pool: Some(Arc::new(pool)) };
        Ok(())
    }

    /// The set new work goes to (`None` once the pool is gone).
    fn current(&self) -> Generation<P> {
        match self.current.lock() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces generation `number` by a fresh set of threads (once, however many deep jobs
    /// of that generation ask). When the system refuses new threads, the old set stays.
    fn renew(&self, number: u64) {
        let Ok(mut g) = self.current.lock() else { return };
        if g.number != number || g.pool.is_none() {
            return;
        }
        if let Some(fresh) = (self.start)() {
            *g = Generation { number: number + 1, pool: Some(Arc::new(fresh)) };
        }
    }

    fn close(&self) {
        if let Ok(mut g) = self.current.lock() {
            g.pool = None;
        }
    }
}

/// One generation of run threads. They are rayon threads only so that a blocking caller's
/// run, which borrows from the caller, can be handed over through a rayon scope; they wait
/// for work on [`RunQueue`], asleep on a condition variable, never in rayon's idle loop
/// (which yields the CPU in a loop before it sleeps: with a service's stream of small runs,
/// idle run threads spent more time there than the runs took).
struct RunSet {
    rayon: rayon_core::ThreadPool,
    queue: Arc<RunQueue>,
}

impl Drop for RunSet {
    fn drop(&mut self) {
        // the threads finish what is queued, then leave; rayon then ends them
        self.queue.close();
    }
}

/// Work for the run threads, first come first served.
#[derive(Default)]
struct RunQueue {
    state: Mutex<QueueState>,
    ready: Condvar,
}

#[derive(Default)]
struct QueueState {
    work: VecDeque<Work>,
    closed: bool,
}

enum Work {
    /// A spawned run (it contains its own panics).
    Job(Box<dyn FnOnce() + Send>),
    /// A run a blocking caller put in the set's rayon queue: take one job from there.
    Scoped,
}

impl RunQueue {
    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `work` and wakes one thread; hands it back when the queue is closed.
    fn push(&self, work: Work) -> Result<(), Work> {
        let mut state = self.lock();
        if state.closed {
            return Err(work);
        }
        state.work.push_back(work);
        drop(state);
        self.ready.notify_one();
        Ok(())
    }

    fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }

    /// A run thread's life: take work, or sleep until there is some; return once the
    /// queue is closed and empty.
    fn serve(&self) {
        loop {
            let work = {
                let mut state = self.lock();
                loop {
                    if let Some(work) = state.work.pop_front() {
                        break work;
                    }
                    if state.closed {
                        return;
                    }
                    state = self.ready.wait(state).unwrap_or_else(PoisonError::into_inner);
                }
            };
            match work {
                Work::Job(job) => {
                    let _ = catch_unwind(AssertUnwindSafe(job));
                }
                // the scoped job was queued before its nudge; when a run thread waiting
                // for its `pmap` branches took it meanwhile, there is nothing to do
                Work::Scoped => {
                    rayon_core::yield_now();
                }
            }
        }
    }
}

/// Stack of a branch thread: a `pmap` branch recurses less deeply than a whole run may, as
/// before the pool. A pooled thread keeps the stack pages it touched, so every branch
/// thread with a 256 MiB stack could hold that much after one deep branch.
const BRANCH_STACK_BYTES: usize = 64 * 1024 * 1024;

thread_local! {
    static ROLE: RefCell<Option<Role>> = const { RefCell::new(None) };
}

impl EvalPool {
    /// Starts `options.threads + options.branch_threads` evaluation threads.
    pub fn new(options: PoolOptions) -> Result<EvalPool, PoolError> {
        let branch_count = options.branch_threads.max(1);
        let branches = Arc::new_cyclic(|me: &Weak<Threads<rayon_core::ThreadPool>>| {
            let me = me.clone();
            Threads::new(move || {
                let me = me.clone();
                rayon_core::ThreadPoolBuilder::new()
                    .num_threads(branch_count)
                    .stack_size(BRANCH_STACK_BYTES)
                    .thread_name(|i| format!("ptc-branch-{i}"))
                    .start_handler(move |_| {
                        stack::mark_eval_thread(BRANCH_STACK_BYTES);
                        ROLE.with(|r| *r.borrow_mut() = Some(Role::Branch(me.clone())));
                    })
                    .build()
                    .ok()
            })
        });
        branches.open("branch")?;
        let for_runs = Arc::downgrade(&branches);
        let run_count = options.threads.max(1);
        let runs = Threads::new(move || {
            let for_runs = for_runs.clone();
            let rayon = rayon_core::ThreadPoolBuilder::new()
                .num_threads(run_count)
                .stack_size(EVAL_STACK_BYTES)
                .thread_name(|i| format!("ptc-eval-{i}"))
                .start_handler(move |_| {
                    stack::mark_eval_thread(EVAL_STACK_BYTES);
                    ROLE.with(|r| *r.borrow_mut() = Some(Role::Run(for_runs.clone())));
                })
                .build()
                .ok()?;
            let queue = Arc::new(RunQueue::default());
            let served = queue.clone();
            // every thread of the set serves the queue until the set is dropped
            rayon.spawn_broadcast(move |_| served.serve());
            Some(RunSet { rayon, queue })
        });
        runs.open("run")?;
        Ok(EvalPool { inner: Arc::new(Inner { runs, branches, admitted: AtomicUsize::new(0), options }) })
    }

    /// The process-wide pool with default options, started on first use (`None` when the
    /// system refused its threads; runs then get a thread each, as a last resort).
    pub fn shared() -> Option<EvalPool> {
        EvalPool::shared_ref().cloned()
    }

    /// [`EvalPool::shared`] by reference.
    pub(crate) fn shared_ref() -> Option<&'static EvalPool> {
        static SHARED: OnceLock<Option<EvalPool>> = OnceLock::new();
        SHARED.get_or_init(|| EvalPool::new(PoolOptions::default()).ok()).as_ref()
    }

    /// The options the pool was started with.
    pub fn options(&self) -> &PoolOptions {
        &self.inner.options
    }

    /// Runs queued or running on this pool right now.
    pub fn busy(&self) -> usize {
        self.inner.admitted.load(Ordering::Relaxed)
    }

    /// Runs `f` where the stack guarantee holds, on `pool` when there is one.
    pub(crate) fn run_on<R: Send>(pool: Option<&EvalPool>, f: impl FnOnce() -> R + Send) -> Result<R, Failure> {
        let f = match try_inline(f) {
            Ok(done) => return done,
            Err(f) => f,
        };
        // a thread of some pool short of stack: a thread of its own (bounded by nesting)
        let on_pool_thread = ROLE.with(|r| r.borrow().is_some());
        let Some(pool) = pool.filter(|_| !on_pool_thread) else {
            let branches = pool.map(|p| Arc::downgrade(&p.inner.branches));
            return stack::on_fresh_thread(EVAL_STACK_BYTES, move || {
                ROLE.with(|r| *r.borrow_mut() = branches.map(Role::Run));
                f()
            });
        };
        let inner = &pool.inner;
        let limit = inner.options.threads.saturating_add(inner.options.queue_bound);
        if inner.admitted.fetch_add(1, Ordering::SeqCst) >= limit {
            inner.admitted.fetch_sub(1, Ordering::SeqCst);
            return Err(Failure::Saturated);
        }
        let _admitted = Admitted(&inner.admitted);
        let Generation { number, pool: Some(set) } = inner.runs.current() else {
            return Err(Failure::NoThread);
        };
        // `f` borrows from this caller, so it crosses through a rayon scope (which returns
        // only once `f` has run); the nudge on the queue sends a run thread to take it
        let mut done = None;
        set.rayon.in_place_scope(|s| {
            let done = &mut done;
            s.spawn(move |_| {
                let result = catch_unwind(AssertUnwindSafe(f)).map_err(|_| Failure::Panicked);
                *done = Some((result, stack::take_went_deep()));
            });
            // the queue closes only when the set is dropped, and `set` holds it
            let _ = set.queue.push(Work::Scoped);
        });
        let (result, went_deep) = done.unwrap_or((Err(Failure::Panicked), false));
        // after the caller has its answer in hand: starting threads takes a while
        if went_deep {
            inner.runs.renew(number);
        }
        result
    }
}

impl EvalPool {
    /// Hands `f` to a run thread of `pool` and returns at once; the returned future
    /// resolves to what `f` returns. Nothing waits on a thread meanwhile: an async caller
    /// awaits it on its own runtime. Runs `f` starts happen inline on the run thread.
    pub(crate) fn spawn_on<R: Send + 'static>(
        pool: Option<&EvalPool>,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> RunFuture<R> {
        let slot = Arc::new(Mutex::new(Slot { value: None, waker: None }));
        let done = slot.clone();
        let job = move |admitted: Option<(Arc<Inner>, u64)>| {
            let result = catch_unwind(AssertUnwindSafe(f)).map_err(|_| Failure::Panicked);
            let went_deep = stack::take_went_deep();
            if let Some((inner, _)) = &admitted {
                inner.admitted.fetch_sub(1, Ordering::SeqCst);
            }
            fill(&done, result);
            if let Some((inner, number)) = admitted
                && went_deep
            {
                inner.runs.renew(number);
            }
        };
        let Some(pool) = pool else {
            let spawned =
                std::thread::Builder::new().name("ptc-eval".into()).stack_size(EVAL_STACK_BYTES).spawn(move || {
                    stack::mark_eval_thread(EVAL_STACK_BYTES);
                    job(None);
                });
            if spawned.is_err() {
                fill(&slot, Err(Failure::NoThread));
            }
            return RunFuture { slot };
        };
        let inner = pool.inner.clone();
        let limit = inner.options.threads.saturating_add(inner.options.queue_bound);
        if inner.admitted.fetch_add(1, Ordering::SeqCst) >= limit {
            inner.admitted.fetch_sub(1, Ordering::SeqCst);
            fill(&slot, Err(Failure::Saturated));
            return RunFuture { slot };
        }
        let Generation { number, pool: Some(set) } = inner.runs.current() else {
            inner.admitted.fetch_sub(1, Ordering::SeqCst);
            fill(&slot, Err(Failure::NoThread));
            return RunFuture { slot };
        };
        let admitted = inner.clone();
        if set.queue.push(Work::Job(Box::new(move || job(Some((admitted, number)))))).is_err() {
            // not while `set` is held (the queue closes when the set is dropped)
            inner.admitted.fetch_sub(1, Ordering::SeqCst);
            fill(&slot, Err(Failure::NoThread));
        }
        RunFuture { slot }
    }
}

/// Stores a spawned job's result and wakes whoever awaits it.
fn fill<R>(slot: &Mutex<Slot<R>>, result: Result<R, Failure>) {
    let waker = match slot.lock() {
        Ok(mut s) => {
            s.value = Some(result);
            s.waker.take()
        }
        Err(_) => None,
    };
    if let Some(w) = waker {
        w.wake();
    }
}

struct Slot<R> {
    value: Option<Result<R, Failure>>,
    waker: Option<Waker>,
}

/// Work handed to the pool; resolves to its result. Dropping it does not stop the work.
pub(crate) struct RunFuture<R> {
    slot: Arc<Mutex<Slot<R>>>,
}

impl<R> std::fmt::Debug for RunFuture<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunFuture").finish_non_exhaustive()
    }
}

impl<R> Future for RunFuture<R> {
    type Output = Result<R, Failure>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Ok(mut s) = self.slot.lock() else { return Poll::Ready(Err(Failure::Panicked)) };
        match s.value.take() {
            Some(v) => Poll::Ready(v),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Gives an admission back when the run ends (also when it panics).
struct Admitted<'a>(&'a AtomicUsize);

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs `f` right here when this is an evaluation thread with room for a whole run;
/// otherwise hands `f` back.
fn try_inline<R: Send, F: FnOnce() -> R + Send>(f: F) -> Result<Result<R, Failure>, F> {
    if stack::has_room_for_nested_run() {
        Ok(catch_unwind(AssertUnwindSafe(f)).map_err(|_| Failure::Panicked))
    } else {
        Err(f)
    }
}

/// Runs every job and returns their results in order: the first on this thread, the others
/// on branch threads when this thread belongs to a pool (on this thread too when they are
/// still queued once the first is done and nobody took them: see the module doc), all on
/// this thread otherwise. A panicking job gives `Err(Failure::Panicked)` in its slot.
pub(crate) fn fan_out<R: Send, F: FnOnce() -> R + Send>(jobs: Vec<F>) -> Vec<Result<R, Failure>> {
    let mut slots: Vec<Option<Result<R, Failure>>> = (0..jobs.len()).map(|_| None).collect();
    let role = ROLE.with(|r| r.borrow().clone());
    let went_deep = AtomicBool::new(false);
    let branches = match &role {
        Some(Role::Run(b) | Role::Branch(b)) => b.upgrade(),
        None => None,
    };
    let current = branches.as_ref().map(|b| b.current());
    match (role, current) {
        (Some(Role::Run(_)), Some(Generation { number, pool: Some(threads) })) => {
            threads.in_place_scope(|s| spread(s, &mut slots, jobs, &went_deep));
            renew_if(&went_deep, branches.as_deref(), number);
        }
        // a branch thread spreads on its own set (work stealing; it may be a set that was
        // replaced, which still runs until its jobs are done)
        (Some(Role::Branch(_)), current) => {
            rayon_core::in_place_scope(|s| spread(s, &mut slots, jobs, &went_deep));
            if let Some(Generation { number, .. }) = current {
                renew_if(&went_deep, branches.as_deref(), number);
            }
        }
        _ => {
            for (job, slot) in jobs.into_iter().zip(slots.iter_mut()) {
                *slot = Some(contained(job));
            }
        }
    }
    slots.into_iter().map(|s| s.unwrap_or(Err(Failure::Panicked))).collect()
}

/// Replaces the branch threads when a branch went deep on one of them.
fn renew_if<P>(went_deep: &AtomicBool, branches: Option<&Threads<P>>, number: u64) {
    if went_deep.load(Ordering::Relaxed)
        && let Some(b) = branches
    {
        b.renew(number);
    }
}

/// Queues all jobs but the first on the scope's pool, then runs the first here. A queued
/// job that went deep on a branch thread sets `went_deep` (on a run thread that took it,
/// the run's own check sees it).
fn spread<'scope, R: Send + 'scope, F: FnOnce() -> R + Send + 'scope>(
    s: &rayon_core::Scope<'scope>,
    slots: &'scope mut [Option<Result<R, Failure>>],
    jobs: Vec<F>,
    went_deep: &'scope AtomicBool,
) {
    let mut pairs = jobs.into_iter().zip(slots.iter_mut());
    let first = pairs.next();
    for (job, slot) in pairs {
        s.spawn(move |_| {
            *slot = Some(contained(job));
            let on_branch_thread = ROLE.with(|r| matches!(*r.borrow(), Some(Role::Branch(_))));
            if on_branch_thread && stack::take_went_deep() {
                went_deep.store(true, Ordering::Relaxed);
            }
        });
    }
    if let Some((job, slot)) = first {
        *slot = Some(contained(job));
    }
}

fn contained<R>(job: impl FnOnce() -> R) -> Result<R, Failure> {
    catch_unwind(AssertUnwindSafe(job)).map_err(|_| Failure::Panicked)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::sync::Arc;
    use std::thread::ThreadId;

    use super::{EvalPool, PoolOptions};
    use crate::{CallCx, Cancel, Engine, Host, Limits, NoTools, RunInput, ToolCall, ToolError, ToolSpec, Value};

    fn pool(threads: usize) -> EvalPool {
        EvalPool::new(PoolOptions::default().threads(threads).branch_threads(1)).unwrap()
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
    fn blocking_and_spawned_runs_share_one_run_thread() {
        // one run thread: blocking callers' runs (handed over through the rayon scope and a
        // nudge) and spawned runs (on the queue) take turns on it, some with pmap waits
        let engine = Engine::new(Limits::default()).with_pool(pool(1));
        std::thread::scope(|s| {
            for t in 0..4 {
                let engine = engine.clone();
                s.spawn(move || {
                    for i in 0..25 {
                        let program = format!("(reduce + (pmap inc [{t} {i}]))");
                        assert_eq!(engine.eval_with(&program, &NoTools).printed, (t + i + 2).to_string());
                    }
                });
            }
            for t in 0..4 {
                let engine = engine.clone();
                s.spawn(move || {
                    let runs: Vec<_> = (0..25)
                        .map(|i| {
                            let program = format!("(* {t} {i})");
                            engine.eval_async(&program, RunInput::new(), Arc::new(NoTools), &Cancel::new())
                        })
                        .collect();
                    for (i, run) in runs.into_iter().enumerate() {
                        assert_eq!(block_on(run).printed, (t * i).to_string());
                    }
                });
            }
        });
        assert_eq!(engine.pool().unwrap().busy(), 0);
    }

    /// The run thread a run of `engine` is on, asked the blocking way or spawned.
    fn run_thread(engine: &Engine, spawned: bool) -> ThreadId {
        if spawned {
            block_on(engine.spawn(|| std::thread::current().id())).unwrap()
        } else {
            engine.batch(|| std::thread::current().id()).unwrap()
        }
    }

    #[test]
    fn a_deep_run_replaces_the_run_thread_whichever_way_it_came() {
        // a long deadline: a debug build beside other builds is slow
        let limits =
            Limits { max_recursion_depth: u32::MAX, timeout: std::time::Duration::from_secs(300), ..Limits::default() };
        // fills the stack: the stack guarantee ends it
        let deep = "(defn f [n] (if (= n 0) 0 (+ 1 (f (- n 1))))) (f 100000000)";
        let shallow = "(defn f [n] (if (= n 0) 0 (+ 1 (f (- n 1))))) (f 10)";
        for spawned in [false, true] {
            let engine = Engine::new(limits.clone()).with_pool(pool(1));
            let eval = |program: &str| {
                if spawned {
                    block_on(engine.eval_async(program, RunInput::new(), Arc::new(NoTools), &Cancel::new()))
                } else {
                    engine.eval_with(program, &NoTools)
                }
            };
            let before = run_thread(&engine, spawned);
            assert_eq!(eval(shallow).printed, "10");
            assert_eq!(run_thread(&engine, spawned), before, "a shallow run keeps the thread");
            let out = eval(deep);
            assert_eq!(out.error().map(|e| e.kind.as_str()), Some("recursion_limit_exceeded"));
            // a spawned run's caller has its answer before the set is replaced: the next
            // runs may still find the old thread for a moment
            let started = std::time::Instant::now();
            let mut after = run_thread(&engine, spawned);
            while after == before && spawned && started.elapsed() < std::time::Duration::from_secs(60) {
                after = run_thread(&engine, spawned);
            }
            assert_ne!(after, before, "the deep run's thread was retired (spawned: {spawned})");
            // the fresh set serves both kinds of caller
            assert_eq!(run_thread(&engine, !spawned), after);
        }
    }

    #[test]
    fn a_panicking_spawned_run_leaves_the_run_thread_serving() {
        let engine = Engine::new(Limits::default()).with_pool(pool(1));
        struct Boom;
        impl Host for Boom {
            fn tools(&self) -> Vec<ToolSpec> {
                vec![ToolSpec::named("boom")]
            }
            fn call(&self, _call: &ToolCall, _cx: &CallCx<'_>) -> Result<Value, ToolError> {
                panic!("the host broke")
            }
        }
        let host = Arc::new(Boom);
        for _ in 0..3 {
            let out = block_on(engine.eval_async("(tool/boom {})", RunInput::new(), host.clone(), &Cancel::new()));
            assert!(out.error().is_some_and(|e| e.message.contains("internal error")), "{:?}", out.error());
            assert!(block_on(engine.spawn(|| -> u8 { panic!("broke") })).is_err());
        }
        assert_eq!(engine.eval_with("(+ 1 2)", &NoTools).printed, "3");
        assert_eq!(block_on(engine.spawn(|| 7)).unwrap(), 7);
    }
}
