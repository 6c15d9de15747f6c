//! Metering for walks over values that happen outside the interpreter's reach.
//!
//! `=`, `compare`, hashing (sets, map keys, `group-by`...), printing and JSON conversion
//! walk values inside trait methods (`Eq`, `Ord`, `Hash`) that cannot return an error. A
//! value that shares structure (a vector holding itself twice, sixty levels deep) makes such
//! a walk exponential, and a value nested a million levels deep makes it recurse that deep.
//! So every collection node a walk visits calls [`step`]: on an evaluation thread it
//! counts, checks the run's deadline and cancellation every few thousand nodes, and checks
//! the stack; when one of them runs out it records why and answers `false`, and the walk
//! stops early with an arbitrary answer. The interpreter turns the recorded reason into the
//! run's error at its next check ([`take_abort`]), before any tool call and at the end of
//! the run, so an aborted walk's answer is never trusted.
//!
//! Walks also run where no meter is installed: an embedder or the `ptc` binary printing,
//! converting or comparing values on its own threads (2 MiB for a tokio worker). There
//! each level a walk enters ([`within`]) is counted, and a walk stops at
//! [`UNMETERED_MAX_DEPTH`] levels with a placeholder answer ("...", a JSON error, equal)
//! instead of overflowing the stack. Values a run hands out are at most
//! [`MAX_VALUE_NESTING`](crate::MAX_VALUE_NESTING) deep (the engine checks), so for them
//! the answer is always complete.

use std::cell::Cell;
use std::sync::Arc;
use std::time::Instant;

use crate::error::ErrorKind;
use crate::limits::SharedBudget;
use crate::stack;

/// Nodes between deadline checks.
const CHECK_EVERY: u32 = 4096;

/// Levels a walk may enter on a thread without a meter: above the engine's
/// `MAX_VALUE_NESTING`, and a fraction of a 2 MiB stack even in a debug build.
pub(crate) const UNMETERED_MAX_DEPTH: u32 = 1_200;

struct State {
    budget: std::cell::RefCell<Option<Arc<SharedBudget>>>,
    /// Lowest stack address a walk may reach (0: no meter installed).
    stack_floor: Cell<usize>,
    count: Cell<u32>,
    abort: Cell<Option<ErrorKind>>,
    /// Levels the walks on this thread are in right now.
    depth: Cell<u32>,
}

thread_local! {
    static STATE: State = const {
        State {
            budget: std::cell::RefCell::new(None),
            stack_floor: Cell::new(0),
            count: Cell::new(0),
            abort: Cell::new(None),
            depth: Cell::new(0),
        }
    };
}

/// Meters walks on this thread against `budget` until the returned guard drops; then the
/// meter that was installed before (a run this thread was in when it took up a nested run
/// or another run's `pmap` branch) is back as it was.
pub(crate) fn install(budget: Arc<SharedBudget>) -> Installed {
    let (base, usable) = stack::budget_here();
    STATE.with(|s| {
        let previous = Saved {
            budget: s.budget.borrow_mut().replace(budget),
            stack_floor: s.stack_floor.replace(base.saturating_sub(usable)),
            count: s.count.replace(0),
            abort: s.abort.replace(None),
        };
        Installed(Some(previous))
    })
}

/// A meter set aside while another one is installed.
struct Saved {
    budget: Option<Arc<SharedBudget>>,
    stack_floor: usize,
    count: u32,
    abort: Option<ErrorKind>,
}

/// Puts the previous meter back when dropped.
pub(crate) struct Installed(Option<Saved>);

impl Drop for Installed {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = STATE.try_with(|s| {
                *s.budget.borrow_mut() = p.budget;
                s.stack_floor.set(p.stack_floor);
                s.count.set(p.count);
                s.abort.set(p.abort);
            });
        }
    }
}

/// Runs `walk` one level deeper into a value, or answers `stopped` when the walk must
/// stop here: on an evaluation thread when [`step`] says so, elsewhere past
/// [`UNMETERED_MAX_DEPTH`] levels.
#[inline]
pub(crate) fn within<R>(stopped: impl FnOnce() -> R, walk: impl FnOnce() -> R) -> R {
    let entered = STATE.try_with(|s| {
        let depth = s.depth.get();
        let go = if s.stack_floor.get() == 0 { depth < UNMETERED_MAX_DEPTH } else { step_in(s) };
        if go {
            s.depth.set(depth + 1);
        }
        go
    });
    if !matches!(entered, Ok(true)) {
        return stopped();
    }
    // the walk runs outside the thread-local access, so each level costs one small frame
    let _level = Level;
    walk()
}

/// Leaves a level entered by [`within`], also when the walk unwinds.
struct Level;

impl Drop for Level {
    #[inline]
    fn drop(&mut self) {
        let _ = STATE.try_with(|s| s.depth.set(s.depth.get().saturating_sub(1)));
    }
}

/// One collection node visited. `false`: stop walking (the reason is recorded).
#[inline]
pub(crate) fn step() -> bool {
    STATE.with(step_in)
}

#[inline]
fn step_in(s: &State) -> bool {
    if s.abort.get().is_some() {
        return false;
    }
    if stack::here() < s.stack_floor.get() {
        s.abort.set(Some(ErrorKind::RecursionLimitExceeded));
        return false;
    }
    let n = s.count.get().wrapping_add(1);
    s.count.set(n);
    if n.is_multiple_of(CHECK_EVERY) {
        stack::note_depth(stack::here());
        let stop = s.budget.borrow().as_ref().and_then(|b| {
            if b.cancel.is_cancelled() {
                Some(ErrorKind::Cancelled)
            } else if Instant::now() >= b.deadline {
                Some(ErrorKind::Timeout)
            } else {
                None
            }
        });
        if let Some(kind) = stop {
            s.abort.set(Some(kind));
            return false;
        }
    }
    true
}

/// The reason a walk stopped early on this thread, if one did (cleared by reading it).
pub(crate) fn take_abort() -> Option<ErrorKind> {
    STATE.with(|s| s.abort.take())
}

/// The error for a walk that just stopped early, for walkers that can return one (the
/// reason stays recorded, so the run's next check reports it the same way).
pub(crate) fn stopped() -> crate::error::EvalError {
    let kind = STATE.with(|s| s.abort.get()).unwrap_or(ErrorKind::Timeout);
    let message = match kind {
        ErrorKind::Cancelled => "the run was cancelled by the host",
        ErrorKind::Timeout => {
            "execution ran out of time while comparing values (timeout); compare smaller values or fewer of them"
        }
        _ => "a value is nested too deeply to compare (the evaluation stack ran out); build flatter data",
    };
    crate::error::EvalError::new(kind, message)
}
