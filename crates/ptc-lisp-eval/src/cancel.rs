//! Cancellation and deadlines that flow from a parent run to its children.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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

#[derive(Debug, Default)]
struct Node {
    flag: AtomicBool,
    deadline: Option<Instant>,
    parent: Option<Cancel>,
}

impl Cancel {
    /// A fresh handle with no deadline.
    pub fn new() -> Self {
        Cancel::default()
    }

    /// A child of `self` with the same deadline (cancelled when `self` is).
    pub fn child(&self) -> Cancel {
        Cancel { inner: Arc::new(Node { flag: AtomicBool::new(false), deadline: None, parent: Some(self.clone()) }) }
    }

    /// A child of `self` whose deadline is the earlier of `deadline` and `self`'s.
    pub fn with_deadline(&self, deadline: Instant) -> Cancel {
        Cancel {
            inner: Arc::new(Node {
                flag: AtomicBool::new(false),
                deadline: Some(deadline),
                parent: Some(self.clone()),
            }),
        }
    }

    /// Cancels this handle and every child of it.
    pub fn cancel(&self) {
        self.inner.flag.store(true, Ordering::SeqCst);
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
}
