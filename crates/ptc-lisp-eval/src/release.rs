//! Dropping values of any depth on any thread.
//!
//! A value's destructor is recursive: dropping a vector drops its items, each of which may
//! be a vector, a map, or a function whose captured values are vectors... A program can
//! build a value nested 100,000 levels deep in a few bytes of source (`(reduce (fn [a _]
//! [a]) [] (range 100000))`, or a chain of `constantly`s), and its destructor would then
//! recurse 100,000 times, enough to overflow any thread but the interpreter's own. Values
//! leave that thread (results, definitions, tool-call records, a cancelled run's frames),
//! so recursion depth, not the thread, has to bound the drop.
//!
//! Every type that holds values and can sit inside another value — [`PVector`], [`PMap`],
//! [`PSet`], [`Function`] (closure captures, a native function's body, `reduced`) and
//! [`LazySeq`] — hands its contents to [`release`] from its `Drop` impl. `release` counts
//! how many such drops are nested on this thread; below [`MAX_NESTED_DROPS`] it drops the
//! contents at once (the common case: one thread-local counter bumped and restored), and
//! at that depth it parks them in a thread-local list instead. The outermost `release` on
//! the thread drops the parked contents one by one after its own, each starting from
//! depth one again. So a drop never recurses more than `MAX_NESTED_DROPS` levels of
//! values, whatever their depth, whether or not their nodes are shared (a shared node is
//! only released by its last owner, wherever that is), and without looking inside an
//! `imbl` tree.
//!
//! [`PVector`]: crate::value::PVector
//! [`PMap`]: crate::value::PMap
//! [`PSet`]: crate::value::PSet
//! [`Function`]: crate::function::Function
//! [`LazySeq`]: crate::lazy::LazySeq

use std::any::Any;
use std::cell::{Cell, RefCell};

/// Value levels one drop may recurse through before parking the rest. Each level costs a
/// few hundred bytes of stack, so this stays far below even a 2 MiB thread's stack.
pub(crate) const MAX_NESTED_DROPS: u32 = 64;

/// Parked contents above this many are not kept allocated once the list is empty again.
const KEEP_CAPACITY: usize = 256;

thread_local! {
    /// Nested `release` calls on this thread right now.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Contents parked by releases that were too deep, dropped by the outermost one.
    static PARKED: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
    /// Whether anything was parked since the last drain (checked on every outermost
    /// release, so it is a plain cell: no destructor, no borrow).
    static ANY_PARKED: Cell<bool> = const { Cell::new(false) };
}

/// Drops `contents` (what a value node owned) without deep recursion; see the module docs.
#[inline]
pub(crate) fn release<T: 'static>(contents: T) {
    let Ok(depth) = DEPTH.try_with(|d| {
        let n = d.get();
        d.set(n + 1);
        n
    }) else {
        // the thread is being torn down and its locals are gone: nothing to count with
        drop(contents);
        return;
    };
    if depth >= MAX_NESTED_DROPS {
        park(Box::new(contents));
    } else {
        drop(contents);
        if depth == 0 && ANY_PARKED.try_with(Cell::get).unwrap_or(false) {
            drain();
        }
    }
    let _ = DEPTH.try_with(|d| d.set(depth));
}

#[cold]
fn park(contents: Box<dyn Any>) {
    // if the list is gone (thread teardown), dropping here is all that is left to do
    let _ = PARKED.try_with(|p| p.borrow_mut().push(contents));
    let _ = ANY_PARKED.try_with(|a| a.set(true));
}

/// Drops everything parked on this thread; runs in the outermost `release` (depth 1), so
/// each parked item may again recurse `MAX_NESTED_DROPS` levels and park what is deeper.
#[inline]
fn drain() {
    loop {
        let next = PARKED.try_with(|p| {
            let mut p = p.borrow_mut();
            let next = p.pop();
            if next.is_none() {
                let _ = ANY_PARKED.try_with(|a| a.set(false));
                if p.capacity() > KEEP_CAPACITY {
                    *p = Vec::new();
                }
            }
            next
        });
        match next {
            Ok(Some(item)) => drop(item),
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parked_contents_are_dropped_by_the_outermost_release() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        struct Node(Option<Box<Node>>, Arc<AtomicUsize>);
        impl Drop for Node {
            fn drop(&mut self) {
                self.1.fetch_add(1, Ordering::Relaxed);
                release(self.0.take());
            }
        }
        let dropped = Arc::new(AtomicUsize::new(0));
        let mut n = Node(None, dropped.clone());
        for _ in 0..200_000 {
            n = Node(Some(Box::new(n)), dropped.clone());
        }
        // a small stack: without parking this recursion would need far more
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || drop(n))
            .map(|h| h.join().is_ok())
            .map_or_else(|_| panic!("no thread"), |ok| assert!(ok));
        assert_eq!(dropped.load(Ordering::Relaxed), 200_001);
        assert_eq!(DEPTH.with(Cell::get), 0);
    }
}
