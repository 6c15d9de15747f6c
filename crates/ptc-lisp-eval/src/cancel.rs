//! Cancellation and deadlines that flow from a parent run to its children.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

/// A cancel handle: cheap to clone, shared by everyone who may stop a run.
///
/// A handle may carry a deadline, and may be the child of another handle: a child is
/// cancelled when its parent is, and its deadline is never later than its parent's. A
/// nested agent started from a tool call passes `cx.cancel.child()` to its own runs, so
/// cancelling the mission stops every program under it, and the mission's deadline bounds
/// them all.
///
/// ```
/// use std::time::{Duration, Instant};
/// use ptc_lisp_eval::Cancel;
/// let mission = Cancel::new().with_deadline(Instant::now() + Duration::from_secs(60));
/// let child = mission.child();
/// assert!(!child.is_cancelled());
/// mission.cancel();
/// assert!(child.is_cancelled());
/// assert_eq!(child.deadline(), mission.deadline());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Cancel {
    inner: Arc<Node>,
}

/// Called when a handle (or an ancestor) is cancelled.
type Watcher = Arc<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct Node {
    flag: AtomicBool,
    deadline: Option<Instant>,
    parent: Option<Cancel>,
    /// Callbacks to run when this node is cancelled, by registration id.
    watchers: Mutex<Vec<(u64, Watcher)>>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("flag", &self.flag)
            .field("deadline", &self.deadline)
            .field("parent", &self.parent)
            .finish_non_exhaustive()
    }
}

/// Registration ids of watchers.
static NEXT_WATCH: AtomicU64 = AtomicU64::new(1);

/// A callback registered with [`Cancel::on_cancel`]; unregistered when dropped.
#[must_use = "the callback is unregistered when this is dropped"]
pub struct CancelWatch {
    id: u64,
    nodes: Vec<Cancel>,
}

impl std::fmt::Debug for CancelWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelWatch").field("id", &self.id).finish_non_exhaustive()
    }
}

impl Drop for CancelWatch {
    fn drop(&mut self) {
        for n in &self.nodes {
            if let Ok(mut w) = n.inner.watchers.lock() {
                w.retain(|(id, _)| *id != self.id);
            }
        }
    }
}

impl Cancel {
    /// A fresh handle with no deadline.
    pub fn new() -> Self {
        Cancel::default()
    }

    /// A child of `self` with the same deadline (cancelled when `self` is).
    pub fn child(&self) -> Cancel {
        Cancel { inner: Arc::new(Node { parent: Some(self.clone()), ..Node::default() }) }
    }

    /// A child of `self` whose deadline is the earlier of `deadline` and `self`'s.
    pub fn with_deadline(&self, deadline: Instant) -> Cancel {
        Cancel { inner: Arc::new(Node { deadline: Some(deadline), parent: Some(self.clone()), ..Node::default() }) }
    }

    /// Cancels this handle and every child of it, and runs the callbacks registered on
    /// them with [`on_cancel`](Self::on_cancel).
    pub fn cancel(&self) {
        self.inner.flag.store(true, Ordering::SeqCst);
        let watchers = match self.inner.watchers.lock() {
            Ok(mut w) => std::mem::take(&mut *w),
            Err(_) => Vec::new(),
        };
        for (_, w) in watchers {
            w();
        }
    }

    /// Runs `f` once this handle or an ancestor is cancelled (at once when it already
    /// is), until the returned guard is dropped: a thread waiting for a tool's answer
    /// wakes on it instead of polling. `f` may run more than once (an ancestor and the
    /// handle both cancelled), and runs on the cancelling thread, so it must be quick.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use ptc_lisp_eval::Cancel;
    /// let mission = Cancel::new();
    /// let run = mission.child();
    /// let (tx, rx) = mpsc::channel();
    /// let _watch = run.on_cancel(move || { let _ = tx.send("stop"); });
    /// mission.cancel();
    /// assert_eq!(rx.recv().unwrap(), "stop");
    /// ```
    pub fn on_cancel(&self, f: impl Fn() + Send + Sync + 'static) -> CancelWatch {
        let f: Watcher = Arc::new(f);
        let id = NEXT_WATCH.fetch_add(1, Ordering::Relaxed);
        let mut nodes = Vec::new();
        let mut node = Some(self);
        while let Some(c) = node {
            if let Ok(mut w) = c.inner.watchers.lock() {
                w.push((id, f.clone()));
            }
            nodes.push(c.clone());
            node = c.inner.parent.as_ref();
        }
        // a cancel that came before the registration finished still reaches `f`
        if self.is_cancelled() {
            f();
        }
        CancelWatch { id, nodes }
    }

    /// True when this handle or one of its ancestors was cancelled.
    pub fn is_cancelled(&self) -> bool {
        let mut node = Some(self);
        while let Some(c) = node {
            if c.inner.flag.load(Ordering::Relaxed) {
                return true;
            }
            node = c.inner.parent.as_ref();
        }
        false
    }

    /// The earliest deadline along the chain, if any.
    pub fn deadline(&self) -> Option<Instant> {
        let mut best: Option<Instant> = None;
        let mut node = Some(self);
        while let Some(c) = node {
            if let Some(d) = c.inner.deadline {
                best = Some(best.map_or(d, |b| b.min(d)));
            }
            node = c.inner.parent.as_ref();
        }
        best
    }

    /// True when the deadline (if any) has passed.
    pub fn is_expired(&self) -> bool {
        self.deadline().is_some_and(|d| Instant::now() >= d)
    }

    /// Waits on this thread for `future`, until it resolves, `deadline` (or the handle's
    /// own, when earlier) passes, or the handle is cancelled; then the future is dropped.
    ///
    /// This is how a [`Host`](crate::Host) serves an async tool without a thread per call:
    /// the evaluation thread waits here (parked, woken by the future's waker, the cancel or
    /// the deadline) while the work runs elsewhere. The future is polled on this thread and
    /// no runtime is entered, so a future that needs one (timers, sockets) is spawned on
    /// its runtime first and its join handle awaited here (dropping a tokio `JoinHandle`
    /// does not stop its task: abort it on `Err`).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use ptc_lisp_eval::{Cancel, Interrupted};
    /// let cancel = Cancel::new();
    /// let soon = Instant::now() + Duration::from_secs(5);
    /// assert_eq!(cancel.wait_for(async { 2 + 2 }, soon), Ok(4));
    /// cancel.cancel();
    /// assert_eq!(cancel.wait_for(std::future::pending::<()>(), soon), Err(Interrupted::Cancelled));
    /// ```
    pub fn wait_for<F: Future>(&self, future: F, deadline: Instant) -> Result<F::Output, Interrupted> {
        let deadline = self.deadline().map_or(deadline, |d| d.min(deadline));
        let thread = std::thread::current();
        let wake = Arc::new(Unpark(thread.clone()));
        let waker = Waker::from(wake);
        let mut cx = Context::from_waker(&waker);
        // cancellation unparks the waiting thread at once (no polling)
        let _watch = self.on_cancel(move || thread.unpark());
        let mut future = std::pin::pin!(future);
        loop {
            if self.is_cancelled() {
                return Err(Interrupted::Cancelled);
            }
            if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
                return Ok(v);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(if self.is_cancelled() { Interrupted::Cancelled } else { Interrupted::DeadlinePassed });
            }
            // a spurious wake-up only costs one more poll
            std::thread::park_timeout(left);
        }
    }
}

/// Why [`Cancel::wait_for`] stopped waiting before the future resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Interrupted {
    /// The handle (or an ancestor) was cancelled.
    Cancelled,
    /// The deadline passed.
    DeadlinePassed,
}

/// Wakes a thread parked in [`Cancel::wait_for`].
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    fn counter() -> (Arc<AtomicUsize>, impl Fn() + Send + Sync + 'static) {
        let n = Arc::new(AtomicUsize::new(0));
        let m = n.clone();
        (n, move || {
            m.fetch_add(1, Ordering::SeqCst);
        })
    }

    #[test]
    fn a_watcher_hears_its_own_cancel_and_every_ancestor_s() {
        let mission = Cancel::new();
        let run = mission.child().with_deadline(Instant::now() + std::time::Duration::from_secs(60));
        let (heard, f) = counter();
        let _watch = run.on_cancel(f);
        assert_eq!(heard.load(Ordering::SeqCst), 0);
        mission.cancel();
        assert_eq!(heard.load(Ordering::SeqCst), 1);
        let (late, g) = counter();
        let _late = run.on_cancel(g);
        assert_eq!(late.load(Ordering::SeqCst), 1, "registered after the cancel: runs at once");
    }

    /// A future completed by another thread after a while.
    fn answered_after(ms: u64, value: u32) -> impl Future<Output = u32> {
        let slot: Arc<Mutex<(Option<u32>, Option<Waker>)>> = Arc::new(Mutex::new((None, None)));
        let filler = slot.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(ms));
            let waker = filler.lock().ok().and_then(|mut s| {
                s.0 = Some(value);
                s.1.take()
            });
            if let Some(w) = waker {
                w.wake();
            }
        });
        std::future::poll_fn(move |cx| {
            let Ok(mut s) = slot.lock() else { return Poll::Pending };
            match s.0.take() {
                Some(v) => Poll::Ready(v),
                None => {
                    s.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
    }

    #[test]
    fn wait_for_wakes_on_the_future_s_waker() {
        let far = Instant::now() + std::time::Duration::from_secs(30);
        let started = Instant::now();
        assert_eq!(Cancel::new().wait_for(answered_after(20, 7), far), Ok(7));
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "woken by the waker, not the deadline");
    }

    #[test]
    fn wait_for_stops_at_the_deadline_and_on_cancel() {
        let soon = Instant::now() + std::time::Duration::from_millis(30);
        assert_eq!(Cancel::new().wait_for(std::future::pending::<()>(), soon), Err(Interrupted::DeadlinePassed));
        // the handle's own deadline counts too
        let own = Cancel::new().with_deadline(Instant::now() + std::time::Duration::from_millis(30));
        let far = Instant::now() + std::time::Duration::from_secs(30);
        assert_eq!(own.wait_for(std::future::pending::<()>(), far), Err(Interrupted::DeadlinePassed));
        let mission = Cancel::new();
        let run = mission.child();
        let canceller = mission.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            canceller.cancel();
        });
        let started = Instant::now();
        assert_eq!(run.wait_for(std::future::pending::<()>(), far), Err(Interrupted::Cancelled));
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "woken by the cancel");
        let _ = t.join();
    }

    #[test]
    fn a_dropped_watch_is_not_called() {
        let c = Cancel::new();
        let (heard, f) = counter();
        drop(c.on_cancel(f));
        c.cancel();
        assert_eq!(heard.load(Ordering::SeqCst), 0);
    }
}
