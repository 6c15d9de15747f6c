//! The stack guarantee: every program runs on a thread whose stack the interpreter knows.
//!
//! The evaluator recurses on the native stack (a call in the program is a call in Rust), so
//! deep recursion must end in `recursion_limit_exceeded`, never in a crashed process. The
//! interpreter checks how far below its starting address the stack has grown against a
//! budget; that budget is only honest when this module chose the thread. So callers never
//! pick a stack size: runs go to the threads of an evaluation pool (`pool.rs`), each with
//! [`EVAL_STACK_BYTES`] (reserved virtually, committed as touched), or inline when the
//! current thread already is such a thread with room to spare (a nested agent's program
//! started from a tool call of its parent's program).

use std::cell::Cell;

/// Stack reserved for each evaluation thread.
pub(crate) const EVAL_STACK_BYTES: usize = 256 * 1024 * 1024;

/// Stack kept free below the interpreter's budget for builtins, printing and drops.
const SAFETY_MARGIN: usize = 24 * 1024 * 1024;

/// A nested run starts inline only when at least this much of the stack is left.
const NESTED_MIN_BYTES: usize = 64 * 1024 * 1024;

/// A run that used more stack than this has its thread retired (see [`take_went_deep`]).
pub(crate) const DEEP_BYTES: usize = 2 * 1024 * 1024;

thread_local! {
    /// On an evaluation thread: (address near the stack's top, usable bytes from there).
    static EVAL_THREAD: Cell<Option<(usize, usize)>> = const { Cell::new(None) };
    /// This thread's stack went deeper than [`DEEP_BYTES`] since [`take_went_deep`].
    static WENT_DEEP: Cell<bool> = const { Cell::new(false) };
}

/// Records that the stack at `at` is deep, when it is (called on slow paths only).
#[cold]
pub(crate) fn note_depth(at: usize) {
    if let Some((top, _)) = EVAL_THREAD.with(Cell::get)
        && top.saturating_sub(at) > DEEP_BYTES
    {
        WENT_DEEP.with(|d| d.set(true));
    }
}

/// True (once) when this thread's stack went deeper than [`DEEP_BYTES`] since the last
/// call. A pooled thread keeps every stack page it touched for as long as it lives, so the
/// pool retires threads that went deep (`pool.rs`).
pub(crate) fn take_went_deep() -> bool {
    WENT_DEEP.with(|d| d.replace(false))
}

/// An address on the current stack (stacks grow down on every supported target).
#[inline(always)]
pub(crate) fn here() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

/// Where the current thread's usable stack ends: `(base address, budget bytes)` for an
/// interpreter starting here. Off an evaluation thread the budget is small (4 MiB), so
/// a stray caller gets early `recursion_limit_exceeded` rather than a crash.
pub(crate) fn budget_here() -> (usize, usize) {
    let now = here();
    match EVAL_THREAD.with(Cell::get) {
        Some((top, usable)) => {
            let used = top.saturating_sub(now);
            (now, usable.saturating_sub(used))
        }
        None => (now, 4 * 1024 * 1024),
    }
}

/// Why an evaluation could not produce its own outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The OS refused a thread.
    NoThread,
    /// The interpreter panicked (a bug); the panic was contained.
    Panicked,
    /// The pool's run queue is full.
    Saturated,
}

/// True on a thread this module chose the stack of.
pub(crate) fn is_eval_thread() -> bool {
    EVAL_THREAD.with(Cell::get).is_some()
}

/// True on an evaluation thread with room for a whole nested run.
pub(crate) fn has_room_for_nested_run() -> bool {
    let (_, left) = budget_here();
    EVAL_THREAD.with(Cell::get).is_some() && left >= NESTED_MIN_BYTES
}

/// Runs `f` on a new scoped thread with `stack` bytes, marked as an evaluation thread.
pub(crate) fn on_fresh_thread<R: Send>(stack: usize, f: impl FnOnce() -> R + Send) -> Result<R, Failure> {
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("ptc-eval".into())
            .stack_size(stack)
            .spawn_scoped(s, move || {
                mark_eval_thread(stack);
                f()
            })
            .map_err(|_| Failure::NoThread)?;
        handle.join().map_err(|_| Failure::Panicked)
    })
}

/// Declares the current thread (just started with `stack` bytes) an evaluation thread.
pub(crate) fn mark_eval_thread(stack: usize) {
    EVAL_THREAD.with(|t| t.set(Some((here(), stack.saturating_sub(SAFETY_MARGIN)))));
}
