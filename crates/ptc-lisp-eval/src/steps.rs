//! Sequence steps: what `map`, `filter`, `remove`, `keep`, `map-indexed`,
//! `keep-indexed`, `take`, `drop`, `take-nth`, `take-while`, `drop-while`, `distinct`, `dedupe`,
//! `partition-by`, `partition`, `partition-all`, `mapcat` and `cat` do with one item, and the state
//! they keep between items — each written once, here.
//!
//! A [`Step`] is fed one item at a time ([`Step::feed`]) and answers what comes out
//! ([`Fed`]): nothing, one item, several, or the end of the sequence. When its input
//! ends, [`Step::finish`] gives out what it still holds (the last run of `partition-by`,
//! the short windows of `partition-all`), one item per call until it has nothing left.
//! Every way a program runs a step drives this one definition:
//!
//! - the eager builtins over a finite collection ([`run_into_vector`]: the step over the
//!   items, into a vector);
//! - a lazy sequence's producer (`crate::lazy`, `Source::Step`), which pulls its source
//!   until the step gives an item;
//! - a fused pipeline (`crate::fusion`), which passes each item through its steps into the
//!   consumer;
//! - the transducer forms (`(map f)`, `(take n)`..., in `builtins::core::transducers`),
//!   which wrap a reducing function around a fresh copy of the step.
//!
//! Fuel is charged by whoever drives the step (one unit per item pulled or walked), as
//! before; memory is charged by the step for what it keeps (the seen set of `distinct`,
//! the run of `partition-by`, a `partition-all` group) and by the driver for what it
//! collects.

use std::collections::{HashSet, VecDeque};

use crate::builtins::context::BuiltinContext;
use crate::error::EvalResult;
use crate::interp::get_in_value;
use crate::limits::cost;
use crate::value::{PVector, Value};

type FastHash = foldhash::fast::RandomState;

/// One sequence step with its state. A fresh step (as built) is the description; a clone
/// of it starts over.
#[derive(Clone)]
pub(crate) enum Step {
    /// `(map f)`: `(f x)` for each item (a keyword is looked up without a call).
    Map(Value),
    /// `(filter pred)` (`keep` true) or `(remove pred)` (`keep` false).
    Filter { pred: Value, keep: bool },
    /// `(keep f)`: the non-nil `(f x)`.
    Keep(Value),
    /// `(map-indexed f)`: `(f i x)`.
    MapIndexed { f: Value, i: i64 },
    /// `(keep-indexed f)`: the non-nil `(f i x)`.
    KeepIndexed { f: Value, i: i64 },
    /// `(take n)`: `left` more items, then the end.
    Take { left: usize },
    /// `(take-nth n)`: every n-th item, from the first (`i` counts the items seen).
    TakeNth { n: u64, i: u64 },
    /// `(drop n)`: skips `left` more items.
    Drop { left: usize },
    /// `(take-while pred)`.
    TakeWhile(Value),
    /// `(drop-while pred)`.
    DropWhile { pred: Value, dropping: bool },
    /// `(distinct)`: the items seen so far are kept (and charged).
    Distinct(HashSet<Value, FastHash>),
    /// `(dedupe)`: the last item given out.
    Dedupe(Option<Value>),
    /// `(partition-by f)`: the current run and its key.
    PartitionBy { f: Value, run: Vec<Value>, key: Option<Value> },
    /// `(partition n step)` (`keep_partial` false) or `(partition-all n step)`: windows of
    /// `n` items, each `step` items after the last; `skip` items still to pass over when the
    /// step is longer than the window.
    Partition { n: usize, step: usize, keep_partial: bool, window: VecDeque<Value>, skip: usize },
    /// `(mapcat f)`, or `cat` (`None`): the items of `(f x)` (of `x`).
    Mapcat(Option<Value>),
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Step({})", self.name())
    }
}

/// What a step makes of one item.
pub(crate) enum Fed {
    /// Nothing (filtered out, dropped, or held for later).
    Skip,
    /// One item.
    One(Value),
    /// Several items, in order (`mapcat`).
    Many(Vec<Value>),
    /// The sequence ends here; this item is not part of it (`take-while`).
    End,
    /// This item is the last one (`take`).
    Last(Value),
}

impl Step {
    /// The name the step's function is known by, for messages.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Step::Map(_) => "map",
            Step::Filter { keep: true, .. } => "filter",
            Step::Filter { keep: false, .. } => "remove",
            Step::Keep(_) => "keep",
            Step::MapIndexed { .. } => "map-indexed",
            Step::KeepIndexed { .. } => "keep-indexed",
            Step::Take { .. } => "take",
            Step::Drop { .. } => "drop",
            Step::TakeNth { .. } => "take-nth",
            Step::TakeWhile(_) => "take-while",
            Step::DropWhile { .. } => "drop-while",
            Step::Distinct(_) => "distinct",
            Step::Dedupe(_) => "dedupe",
            Step::PartitionBy { .. } => "partition-by",
            Step::Partition { keep_partial: false, .. } => "partition",
            Step::Partition { keep_partial: true, .. } => "partition-all",
            Step::Mapcat(Some(_)) => "mapcat",
            Step::Mapcat(None) => "cat",
        }
    }

    /// `(distinct)` at its start.
    pub(crate) fn distinct() -> Step {
        Step::Distinct(HashSet::default())
    }

    /// `(partition-by f)` at its start.
    pub(crate) fn partition_by(f: Value) -> Step {
        Step::PartitionBy { f, run: Vec::new(), key: None }
    }

    /// `(partition n step)` or `(partition-all n step)` at its start.
    pub(crate) fn partition(n: usize, step: usize, keep_partial: bool) -> Step {
        Step::Partition { n, step, keep_partial, window: VecDeque::new(), skip: 0 }
    }

    /// `(drop-while pred)` at its start.
    pub(crate) fn drop_while(pred: Value) -> Step {
        Step::DropWhile { pred, dropping: true }
    }

    /// True when the step may end before its input does (so a step over an infinite
    /// sequence is not known to be infinite).
    pub(crate) fn may_end(&self) -> bool {
        matches!(self, Step::Take { .. } | Step::TakeWhile(_))
    }

    /// True when the step gives nothing more whatever it is fed (`(take 0)`): its input
    /// need not be read at all.
    pub(crate) fn is_spent(&self) -> bool {
        matches!(self, Step::Take { left: 0 })
    }

    /// Calls `visit` with every value the step holds (its function, what it keeps).
    pub(crate) fn each_held(&self, visit: &mut dyn FnMut(Value)) {
        match self {
            Step::Map(f)
            | Step::Filter { pred: f, .. }
            | Step::Keep(f)
            | Step::MapIndexed { f, .. }
            | Step::KeepIndexed { f, .. }
            | Step::TakeWhile(f)
            | Step::DropWhile { pred: f, .. }
            | Step::Mapcat(Some(f)) => visit(f.clone()),
            Step::PartitionBy { f, run, key } => {
                visit(f.clone());
                run.iter().cloned().for_each(&mut *visit);
                if let Some(k) = key {
                    visit(k.clone());
                }
            }
            Step::Distinct(seen) => seen.iter().cloned().for_each(visit),
            Step::Dedupe(Some(last)) => visit(last.clone()),
            Step::Partition { window, .. } => window.iter().cloned().for_each(visit),
            Step::Take { .. } | Step::Drop { .. } | Step::TakeNth { .. } | Step::Dedupe(None) | Step::Mapcat(None) => {}
        }
    }

    /// [`Step::feed`] of an item lent, not given (a vector's, read in place): a keyword
    /// `map` looks it up without copying the item.
    #[inline]
    pub(crate) fn feed_ref(&mut self, cx: &mut BuiltinContext, x: &Value) -> EvalResult<Fed> {
        match self {
            Step::Map(f @ Value::Keyword(_)) => Ok(Fed::One(match x {
                Value::Map(m) => crate::interp::flex_get(m, f).cloned().unwrap_or(Value::Nil),
                other => get_in_value(other, f).unwrap_or(Value::Nil),
            })),
            _ => self.feed(cx, x.clone()),
        }
    }

    /// What the step makes of the next item `x`.
    #[inline]
    pub(crate) fn feed(&mut self, cx: &mut BuiltinContext, x: Value) -> EvalResult<Fed> {
        Ok(match self {
            Step::Map(f) => Fed::One(match f {
                Value::Keyword(_) => get_in_value(&x, f).unwrap_or(Value::Nil),
                _ => cx.apply(f, &mut [x])?,
            }),
            Step::Filter { pred, keep } => {
                if cx.apply(pred, &mut [x.clone()])?.truthy() == *keep {
                    Fed::One(x)
                } else {
                    Fed::Skip
                }
            }
            Step::Keep(f) => non_nil(cx.apply(f, &mut [x])?),
            Step::MapIndexed { f, i } => {
                let idx = Value::Int(*i);
                *i += 1;
                Fed::One(cx.apply(f, &mut [idx, x])?)
            }
            Step::KeepIndexed { f, i } => {
                let idx = Value::Int(*i);
                *i += 1;
                non_nil(cx.apply(f, &mut [idx, x])?)
            }
            Step::Take { left } => match *left {
                0 => Fed::End,
                1 => {
                    *left = 0;
                    Fed::Last(x)
                }
                _ => {
                    *left -= 1;
                    Fed::One(x)
                }
            },
            Step::Drop { left } => {
                if *left > 0 {
                    *left -= 1;
                    Fed::Skip
                } else {
                    Fed::One(x)
                }
            }
            Step::TakeNth { n, i } => {
                let hit = (*i).is_multiple_of(*n);
                *i += 1;
                if hit { Fed::One(x) } else { Fed::Skip }
            }
            Step::TakeWhile(pred) => {
                if cx.apply(pred, &mut [x.clone()])?.truthy() {
                    Fed::One(x)
                } else {
                    Fed::End
                }
            }
            Step::DropWhile { pred, dropping } => {
                if *dropping && cx.apply(pred, &mut [x.clone()])?.truthy() {
                    Fed::Skip
                } else {
                    *dropping = false;
                    Fed::One(x)
                }
            }
            Step::Distinct(seen) => {
                if seen.contains(&x) {
                    Fed::Skip
                } else {
                    // the seen set grows with every new item: it is what this step keeps
                    cx.charge(cost::ELEM)?;
                    seen.insert(x.clone());
                    Fed::One(x)
                }
            }
            Step::Dedupe(last) => {
                if last.as_ref().is_some_and(|l| l.equiv(&x)) {
                    Fed::Skip
                } else {
                    *last = Some(x.clone());
                    Fed::One(x)
                }
            }
            Step::PartitionBy { f, run, key } => {
                let k = cx.apply(f, &mut [x.clone()])?;
                let split = key.as_ref().is_some_and(|old| !old.equiv(&k));
                *key = Some(k);
                cx.charge(cost::ELEM)?;
                if split {
                    let out = Value::vector(std::mem::take(run));
                    run.push(x);
                    Fed::One(out)
                } else {
                    run.push(x);
                    Fed::Skip
                }
            }
            Step::Partition { n, step, window, skip, .. } => {
                if *skip > 0 {
                    *skip -= 1;
                    return Ok(Fed::Skip);
                }
                window.push_back(x);
                if window.len() < *n {
                    return Ok(Fed::Skip);
                }
                // each window is a copy (windows overlap when the step is shorter)
                cx.charge(cost::items(*n as u64))?;
                let out = Value::vector(window.iter().cloned());
                slide(window, skip, *step);
                Fed::One(out)
            }
            Step::Mapcat(f) => {
                let ys = match f {
                    Some(f) => cx.apply(f, &mut [x])?,
                    None => x,
                };
                let fname = if f.is_some() { "mapcat" } else { "concat" };
                match ys {
                    // a vector made for this item alone (`(fn [x] [x x])`) gives up its
                    // items without a copy
                    Value::Vector(v) => Fed::Many(match std::sync::Arc::try_unwrap(v) {
                        Ok(owned) => owned.into_vec(),
                        Err(shared) => shared.iter().cloned().collect(),
                    }),
                    ys => Fed::Many(crate::lazy::finite_items(cx, fname, &ys)?),
                }
            }
        })
    }

    /// What the step still holds when its input has ended (the last `partition-by` run,
    /// the short last windows of `partition-all`): one item per call, `None` once nothing
    /// is left.
    pub(crate) fn finish(&mut self, cx: &mut BuiltinContext) -> EvalResult<Option<Value>> {
        Ok(match self {
            Step::PartitionBy { run, key, .. } => {
                *key = None;
                (!run.is_empty()).then(|| Value::vector(std::mem::take(run)))
            }
            Step::Partition { keep_partial: false, window, .. } => {
                window.clear();
                None
            }
            Step::Partition { step, window, skip, .. } if !window.is_empty() => {
                cx.charge(cost::items(window.len() as u64))?;
                let out = Value::vector(window.iter().cloned());
                slide(window, skip, *step);
                Some(out)
            }
            _ => None,
        })
    }
}

impl crate::function::StepState for std::sync::Mutex<Option<Step>> {
    fn each(&self, visit: &mut dyn FnMut(Value)) {
        // a poisoned lock still holds its step
        let mut held = Vec::new();
        if let Some(step) = &*self.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
            step.each_held(&mut |v| held.push(v));
        }
        held.into_iter().for_each(visit);
    }
}

/// Moves a window `step` items on: what it lacks is skipped from the items to come.
/// In one go, not item by item: `(partition-all 10000000000 xs)` steps that far.
fn slide(window: &mut VecDeque<Value>, skip: &mut usize, step: usize) {
    let popped = step.min(window.len());
    window.drain(..popped);
    *skip = skip.saturating_add(step - popped);
}

#[inline]
fn non_nil(y: Value) -> Fed {
    if y.is_nil() { Fed::Skip } else { Fed::One(y) }
}

/// The eager form of a step: `step` over the items of a finite collection, into a
/// vector. One fuel unit per item walked; each item kept is charged before it is kept (a
/// long string's characters are made one by one).
pub(crate) fn run_into_vector(cx: &mut BuiltinContext, mut step: Step, coll: &Value) -> EvalResult {
    let mut out = PVector::new();
    cx.charge(cost::HEADER)?;
    let keep = |cx: &mut BuiltinContext, out: &mut PVector, y: Value| -> EvalResult<()> {
        cx.charge(cost::ELEM)?;
        out.push_back(y);
        Ok(())
    };
    // true when the step has ended
    let put = |cx: &mut BuiltinContext, out: &mut PVector, fed: Fed| -> EvalResult<bool> {
        Ok(match fed {
            Fed::Skip => false,
            Fed::One(y) => {
                keep(cx, out, y)?;
                false
            }
            Fed::Many(ys) => {
                for y in ys {
                    keep(cx, out, y)?;
                }
                false
            }
            Fed::End => true,
            Fed::Last(y) => {
                keep(cx, out, y)?;
                true
            }
        })
    };
    if !step.is_spent() {
        if let Value::Vector(items) | Value::List(items) = coll {
            // read in place: an item is copied only for a call or to be kept
            for x in items.iter() {
                cx.tick(1)?;
                let fed = step.feed_ref(cx, x)?;
                if put(cx, &mut out, fed)? {
                    break;
                }
            }
        } else {
            for x in crate::builtins::seq_iter(step.name(), coll)? {
                cx.tick(1)?;
                let fed = step.feed(cx, x)?;
                if put(cx, &mut out, fed)? {
                    break;
                }
            }
        }
    }
    while let Some(y) = step.finish(cx)? {
        keep(cx, &mut out, y)?;
    }
    Ok(Value::from_pvec(out))
}
