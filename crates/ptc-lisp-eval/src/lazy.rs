//! Lazy sequences: the one mechanism behind every sequence whose end is not known when it
//! is made.
//!
//! A [`LazySeq`] is an immutable description — a producer (`(range)`, `iterate`,
//! `repeat`, `cycle`, `repeatedly`, a range too long to hold, a `tree-seq` too big to
//! walk at once) or a step over another lazy sequence. Nothing runs when it is made. A
//! consumer pulls items through a [`Cursor`], the one iteration interface: each pull burns
//! fuel, what a step keeps (the seen set of `distinct`, a `partition-by` run) is charged
//! as memory, and a pull may end (`None`) when the sequence is finite.
//!
//! # Steps are defined once
//!
//! The one-source steps (`map`, `filter`, `remove`, `keep`, `map-indexed`,
//! `keep-indexed`, `take`, `drop`, `take-nth`, `take-while`, `drop-while`, `distinct`,
//! `dedupe`, `partition-by`, `partition`, `partition-all`, `mapcat`, `cat`) are [`Step`]s of `crate::steps`: what the
//! step does with one item and what it keeps. Here a step over a lazy source is
//! `Source::Step` ([`stepped`]); its producer pulls the source and feeds the step until it
//! gives an item. The same definition runs the eager builtin over a collection
//! (`steps::run_into_vector`), a fused pipeline (`crate::fusion`) and the transducer form
//! (`transducers::xf_step`). What is left here is what is not one item in, some out:
//! several sources in step (`map` of several, `interleave`), `concat`, `reductions`,
//! `drop-last`, user transducers (`sequence`), `tree-seq` and
//! `for`.
//!
//! Consumers that bound what they pull (`take`, `first`, `nth`, `some`, destructuring,
//! `reduce` with `reduced`, a finite partner of `map` or `zipmap`) work on any lazy
//! sequence; `take`, `drop`, `split-at` and `split-with` of a lazy sequence are lazy
//! themselves, so `(first (take 2 (map f (range))))` runs `f` once. A
//! builtin that is not declared lazy in the registry gets every finite lazy argument
//! realised first ([`realize`], charged like any collection it builds), and an infinite
//! one fails with an error naming the producer ([`unbounded`]). The result of a run is
//! realised the same way before it is printed, so a lazy sequence never reaches the host.
//!
//! # Items are made once
//!
//! As in Clojure, a lazy sequence caches what it has made: the function of
//! `(map f xs)` runs once per item however often the sequence is read, so a `println` or a
//! tool call inside it happens once. The cache lives in the [`LazySeq`] and is shared by
//! every copy of the value; the producer (a [`State`]) sits beside it and is advanced only
//! when a reader asks for an item past the cached ones. Each cached item is charged as
//! memory to the run that made it.
//!
//! Caching costs memory where nobody reads again, so a cursor that is the *only* reader a
//! sequence can ever have skips it: [`Cursor::owned`] on an `Arc` nobody else holds, and a
//! step's source held only by that step (its one producer reads it once). So
//! `(nth (range) 1000000)` and `(first (drop n (map f (range))))` keep nothing, while
//! `(let [r (map f xs)] (count r) (vec r))` runs `f` once per item.
//!
//! A producer is advanced by one thread at a time, without the cache's lock held (it
//! calls back into the program): another thread (`pmap`) asking for the next item waits
//! for it, checking the run's deadline; the same thread asking again from inside the
//! producer (a sequence defined in terms of itself) is an error, as it is unbounded
//! recursion in Clojure. If the producer fails, the next reader starts it again from the
//! description and skips the items already cached.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;
use std::time::Duration;

use crate::builtins::context::BuiltinContext;
use crate::error::{ErrorKind, EvalResult, Flow, err};
use crate::limits::cost;
use crate::steps::{Fed, Step};
use crate::value::{PVector, Value};

/// A lazy sequence (`(range)`, `(iterate f x)`, a `map` over one...): where its items
/// come from, how the program wrote it, and the items made so far. Opaque: a program
/// pulls its items; what leaves a run (a result, a tool call's arguments) is realised
/// first.
#[derive(Debug)]
pub struct LazySeq {
    /// The producer as written (`(range)`, `(iterate f x)`), for error messages.
    pub(crate) label: Arc<str>,
    /// How many lazy steps are stacked on the producer (pulling recurses through them).
    depth: usize,
    /// Known never to end: realising it is refused at once instead of running into a limit.
    infinite: bool,
    source: Source,
    /// The items made so far and the producer that makes the next one.
    cache: Mutex<Cache>,
    /// Signalled when the producer is handed back (an item made, the end, a failure).
    ready: Condvar,
}

/// What a shared lazy sequence has made so far.
#[derive(Default)]
struct Cache {
    items: PVector,
    producer: Producer,
    /// Readers waiting for the producer (only then is it worth waking anyone).
    waiting: usize,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cache({} items)", self.items.len())
    }
}

/// Where the producer of a cached sequence is.
#[derive(Default)]
enum Producer {
    /// Not started, or lost to a failure: started (again) from the description, skipping
    /// the items already cached.
    #[default]
    Unstarted,
    /// Ready to make the next item.
    Idle(Box<State>),
    /// A thread is making the next item.
    Busy(ThreadId),
    /// The sequence has ended: every item is cached.
    Ended,
}

/// How long a reader waits for another thread's item before checking the deadline again.
const WAIT_SLICE: Duration = Duration::from_millis(5);

/// The most lazy steps that may be stacked on one producer: pulling an item recurses
/// through every step, so the chain is bounded like the call depth.
pub(crate) const MAX_LAZY_DEPTH: usize = 1_000;

/// A `for` whose first binding is a lazy sequence: the comprehension and the frame of
/// locals it was evaluated in, so each item of the binding can run the rest of it later.
pub(crate) struct ForSeq {
    /// The comprehension.
    pub(crate) node: Arc<crate::node::ForNode>,
    /// The locals (and captured values) of the frame it was written in.
    pub(crate) frame: Vec<Value>,
    /// Where the captured values start in `frame`.
    pub(crate) captures_at: usize,
    /// Where the function itself sits in `frame` (named fns).
    pub(crate) self_at: usize,
    /// The clause of the lazy binding (0 for the first; further in when an endless
    /// binding follows finite ones).
    pub(crate) level: usize,
}

impl std::fmt::Debug for ForSeq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ForSeq")
    }
}

#[derive(Debug)]
enum Source {
    Range {
        start: Value,
        step: Value,
    },
    RangeTo {
        start: i64,
        end: i64,
        step: i64,
    },
    Iterate {
        f: Value,
        seed: Value,
    },
    Repeat(Value),
    Cycle(PVector),
    Repeatedly(Value),
    Map {
        f: Value,
        inputs: Vec<Arc<LazySeq>>,
    },
    /// A sequence step (`filter`, `take`, `distinct`...: see `crate::steps`) over one source.
    Step {
        step: Step,
        src: Arc<LazySeq>,
    },
    Concat {
        prefix: PVector,
        tail: Arc<LazySeq>,
    },
    Interleave(Vec<Arc<LazySeq>>),
    Reductions {
        f: Value,
        init: Option<Value>,
        src: Arc<LazySeq>,
    },
    DropLast {
        n: usize,
        src: Arc<LazySeq>,
    },
    Xform {
        xform: Value,
        src: Arc<LazySeq>,
    },
    TreeSeq {
        branch: Value,
        children: Value,
        root: Value,
    },
    For {
        comp: Arc<ForSeq>,
        src: Arc<LazySeq>,
    },
}

impl Drop for LazySeq {
    /// What the sequence was built from, and what it cached, is dropped by `release` (see
    /// `release.rs`).
    fn drop(&mut self) {
        crate::release::release(std::mem::replace(&mut self.source, Source::Repeat(Value::Nil)));
        let cache = self.cache.get_mut().unwrap_or_else(PoisonError::into_inner);
        crate::release::release(std::mem::take(cache));
    }
}

fn seq_value(s: &Arc<LazySeq>) -> Value {
    Value::Lazy(s.clone())
}

impl LazySeq {
    fn new(label: Arc<str>, depth: usize, infinite: bool, source: Source) -> LazySeq {
        LazySeq { label, depth, infinite, source, cache: Mutex::default(), ready: Condvar::new() }
    }

    fn cache(&self) -> MutexGuard<'_, Cache> {
        // a panic never happens while the lock is held; if one did, the cache is still whole
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The items cached so far (shared, not copied).
    fn cached(&self) -> PVector {
        self.cache().items.clone()
    }

    /// Calls `visit` with every value the sequence was built from and every item it has
    /// cached; an inner lazy step is visited as the lazy value it is.
    pub(crate) fn each_held(&self, visit: &mut dyn FnMut(Value)) {
        self.cached().iter().cloned().for_each(&mut *visit);
        match &self.source {
            Source::Range { start: a, step: b } | Source::Iterate { f: a, seed: b } => {
                visit(a.clone());
                visit(b.clone());
            }
            Source::RangeTo { .. } => {}
            Source::Repeat(x) | Source::Repeatedly(x) => visit(x.clone()),
            Source::Cycle(items) => items.iter().cloned().for_each(visit),
            Source::Map { f, inputs } => {
                visit(f.clone());
                inputs.iter().map(seq_value).for_each(visit);
            }
            Source::Xform { xform: f, src } => {
                visit(f.clone());
                visit(seq_value(src));
            }
            Source::Step { step, src } => {
                step.each_held(visit);
                visit(seq_value(src));
            }
            Source::Reductions { f, init, src } => {
                visit(f.clone());
                if let Some(i) = init {
                    visit(i.clone());
                }
                visit(seq_value(src));
            }
            Source::DropLast { src, .. } => visit(seq_value(src)),
            Source::Concat { prefix, tail } => {
                prefix.iter().cloned().for_each(&mut *visit);
                visit(seq_value(tail));
            }
            Source::Interleave(inputs) => inputs.iter().map(seq_value).for_each(visit),
            Source::TreeSeq { branch, children, root } => {
                visit(branch.clone());
                visit(children.clone());
                visit(root.clone());
            }
            Source::For { comp, src } => {
                comp.frame.iter().cloned().for_each(&mut *visit);
                visit(seq_value(src));
            }
        }
    }

    /// True when the sequence is known never to end.
    pub fn is_infinite(&self) -> bool {
        self.infinite
    }

    /// The producer as the program wrote it (`(range)`, `(iterate f x)`).
    pub fn label(&self) -> &str {
        &self.label
    }
}

fn value(label: impl Into<Arc<str>>, source: Source) -> Value {
    Value::Lazy(Arc::new(LazySeq::new(label.into(), 0, true, source)))
}

/// A lazy step over `srcs`, refused when the chain gets too deep.
fn step(label: Arc<str>, srcs: &[&Arc<LazySeq>], infinite: bool, source: Source) -> EvalResult {
    let depth = srcs.iter().map(|s| s.depth).max().unwrap_or(0) + 1;
    if depth > MAX_LAZY_DEPTH {
        return err(
            ErrorKind::RecursionLimitExceeded,
            format!(
                "more than {MAX_LAZY_DEPTH} lazy steps (map, filter, drop...) are stacked on {label}; realise part of it with (vec (take n ...)) before adding more"
            ),
        );
    }
    Ok(Value::Lazy(Arc::new(LazySeq::new(label, depth, infinite, source))))
}

/// A step over one source that ends when (and only when) the source does.
fn over(src: &Arc<LazySeq>, source: Source) -> EvalResult {
    step(src.label.clone(), &[src], src.infinite, source)
}

/// A step over one source that may end before it does.
fn ending(src: &Arc<LazySeq>, source: Source) -> EvalResult {
    step(src.label.clone(), &[src], false, source)
}

/// The lazy sequence a value is, if it is one.
#[inline]
pub(crate) fn as_lazy(v: &Value) -> Option<&Arc<LazySeq>> {
    match v {
        Value::Lazy(l) => Some(l),
        _ => None,
    }
}

/// The lazy sequence `v` is, taken out of it (`v` becomes nil), or `None` (and `v` kept)
/// when it is something else. A consumer done with its argument takes it this way, so a
/// sequence nobody else holds is read without caching ([`Cursor::owned`]).
#[inline]
pub(crate) fn take_lazy(v: &mut Value) -> Option<Arc<LazySeq>> {
    match std::mem::take(v) {
        Value::Lazy(l) => Some(l),
        other => {
            *v = other;
            None
        }
    }
}

/// True for a lazy sequence not known to be infinite (one a consumer may realise).
#[inline]
pub(crate) fn is_finite_lazy(v: &Value) -> bool {
    as_lazy(v).is_some_and(|l| !l.infinite)
}

/// The error for realising a whole lazy sequence where that cannot be done: an infinite
/// one, or a finite one that reached a function with no way to realise it.
#[cold]
pub(crate) fn unbounded<T>(fname: &str, seq: &LazySeq) -> EvalResult<T> {
    if !seq.infinite {
        return err(
            ErrorKind::TypeError,
            format!(
                "{fname} cannot take the lazy sequence built on {} here; realise it first with (vec ...) or bound it with (take n ...)",
                seq.label
            ),
        );
    }
    err(
        ErrorKind::LoopLimitExceeded,
        format!(
            "{} is infinite, so {fname} would never finish; bound it first, e.g. (take 10 {}), (take-while pred ...) or (first ...)",
            seq.label, seq.label
        ),
    )
}

/// `(range)`, or `(range start end 0)`: numbers from `start` by `step`, forever.
pub(crate) fn range(start: Value, step: Value) -> Value {
    let label = if matches!(step, Value::Int(0)) { "(range start end 0)" } else { "(range)" };
    value(label, Source::Range { start, step })
}
/// `(range start end step)` of integers, too long to hold at once: made one at a time.
pub(crate) fn range_to(start: i64, end: i64, step: i64) -> Value {
    let label = format!("(range {start} {end} {step})");
    Value::Lazy(Arc::new(LazySeq::new(label.into(), 0, false, Source::RangeTo { start, end, step })))
}
/// `(iterate f x)`: x, (f x), (f (f x)), ...
pub(crate) fn iterate(f: Value, seed: Value) -> Value {
    value("(iterate f x)", Source::Iterate { f, seed })
}
/// `(repeat x)`.
pub(crate) fn repeat(x: Value) -> Value {
    value("(repeat x)", Source::Repeat(x))
}
/// `(cycle coll)` of a non-empty collection.
pub(crate) fn cycle(items: PVector) -> Value {
    value("(cycle coll)", Source::Cycle(items))
}
/// `(repeatedly f)`.
pub(crate) fn repeatedly(f: Value) -> Value {
    value("(repeatedly f)", Source::Repeatedly(f))
}
/// `(tree-seq branch? children root)` of a tree too big to walk at once: depth first,
/// one node at a time.
pub(crate) fn tree_seq(branch: Value, children: Value, root: Value) -> Value {
    Value::Lazy(Arc::new(LazySeq::new(
        "(tree-seq branch? children root)".into(),
        0,
        false,
        Source::TreeSeq { branch, children, root },
    )))
}
/// `(map f s1 s2 ...)` over lazy sequences only: ends with the shortest.
pub(crate) fn map(f: Value, inputs: Vec<Arc<LazySeq>>) -> EvalResult {
    if let [src] = inputs.as_slice() {
        return stepped(Step::Map(f), src);
    }
    let label = inputs.first().map(|s| s.label.clone()).unwrap_or_else(|| Arc::from("(map ...)"));
    let srcs: Vec<&Arc<LazySeq>> = inputs.iter().collect();
    let infinite = inputs.iter().all(|s| s.infinite);
    step(label, &srcs, infinite, Source::Map { f, inputs: inputs.clone() })
}
/// `step` over the lazy sequence `src` (`(filter pred s)`, `(take n s)`, `(distinct s)`...):
/// infinite when `src` is and the step cannot end early.
pub(crate) fn stepped(step: Step, src: &Arc<LazySeq>) -> EvalResult {
    let infinite = src.infinite && !step.may_end();
    self::step(src.label.clone(), &[src], infinite, Source::Step { step, src: src.clone() })
}
/// `(drop n s)`, and `rest`/`next` of a lazy sequence (`n` = 1).
///
/// A drop of a drop is one drop over the first's source, so `(loop [xs s] ... (recur
/// (rest xs)))` reads `s` through one step at every turn instead of stacking a step per
/// turn (each of which cached its own copy of the items: memory that grew with the square
/// of the turns, and the stack of steps ended in an error after a thousand). That is only
/// the same sequence when the source's items are made once either way: when the first
/// drop has not started (nothing went through it yet), or when its source caches what it
/// makes (it is started, so every reader reads it through its cache; a source read by
/// its only reader keeps nothing, and skipping it again would make its items twice).
pub(crate) fn drop(n: usize, src: &Arc<LazySeq>) -> EvalResult {
    if let Source::Step { step: Step::Drop { left }, src: inner } = &src.source
        && (src.unstarted() || !inner.unstarted())
    {
        return stepped(Step::Drop { left: left.saturating_add(n) }, inner);
    }
    stepped(Step::Drop { left: n }, src)
}
/// `(reductions f s)` or `(reductions f init s)`.
pub(crate) fn reductions(f: Value, init: Option<Value>, src: &Arc<LazySeq>) -> EvalResult {
    let infinite = src.infinite;
    step(src.label.clone(), &[src], infinite, Source::Reductions { f, init, src: src.clone() })
}
/// `(drop-last n s)`: holds the last n items back.
pub(crate) fn drop_last(n: usize, src: &Arc<LazySeq>) -> EvalResult {
    over(src, Source::DropLast { n, src: src.clone() })
}
/// `(sequence xform s)`: the items a transducer makes of s, as they are asked for. A
/// transducer can end early (`(take n)`), so the result is never known to be infinite.
pub(crate) fn xform(xform: Value, src: &Arc<LazySeq>) -> EvalResult {
    ending(src, Source::Xform { xform, src: src.clone() })
}
/// A `for` whose first binding is the lazy sequence `src`.
pub(crate) fn comprehension(comp: ForSeq, src: &Arc<LazySeq>) -> EvalResult {
    over(src, Source::For { comp: Arc::new(comp), src: src.clone() })
}

/// `(concat c1 ... s)`: the finite items before the first lazy sequence, then it.
pub(crate) fn concat(prefix: PVector, tail: &Arc<LazySeq>) -> EvalResult {
    over(tail, Source::Concat { prefix, tail: tail.clone() })
}
/// `(mapcat f s)`.
pub(crate) fn mapcat(f: Value, src: &Arc<LazySeq>) -> EvalResult {
    stepped(Step::Mapcat(Some(f)), src)
}
/// `(apply concat s)`: the items of each collection s yields, in turn.
pub(crate) fn cat(src: &Arc<LazySeq>) -> EvalResult {
    stepped(Step::Mapcat(None), src)
}
/// `(interleave s1 s2 ...)` of lazy sequences: ends with the shortest.
pub(crate) fn interleave(srcs: Vec<Arc<LazySeq>>) -> EvalResult {
    let label = srcs.first().map(|s| s.label.clone()).unwrap_or_else(|| Arc::from("(interleave ...)"));
    let refs: Vec<&Arc<LazySeq>> = srcs.iter().collect();
    let infinite = srcs.iter().all(|s| s.infinite);
    step(label, &refs, infinite, Source::Interleave(srcs.clone()))
}
/// `(partition n step s)` (and `partition-all`, which keeps a short last group): vectors of n.
pub(crate) fn partition(n: usize, every: usize, keep_partial: bool, src: &Arc<LazySeq>) -> EvalResult {
    stepped(Step::partition(n, every, keep_partial), src)
}

/// A position in a lazy sequence: each [`Cursor::next`] yields the next item, or `None`
/// at the end of a finite one. This is the one way items leave a lazy sequence.
pub(crate) struct Cursor {
    pos: Pos,
}

enum Pos {
    /// The only reader the sequence can ever have: items straight from its producer,
    /// nothing cached.
    Sole(Box<State>),
    /// One of the sequence's readers: items through its cache, `at` the next index;
    /// `seen` is a copy of the cache as this reader last saw it (sharing its structure),
    /// read without taking the lock.
    Shared { seq: Arc<LazySeq>, at: usize, seen: PVector },
}

/// The producer of a lazy sequence: how far it has got and what it keeps.
enum State {
    Range {
        next: Value,
        step: Value,
    },
    RangeTo {
        next: i128,
        end: i128,
        step: i128,
    },
    Iterate {
        f: Value,
        cur: Value,
        started: bool,
    },
    Repeat(Value),
    Cycle {
        items: PVector,
        i: usize,
    },
    Repeatedly(Value),
    Map {
        f: Value,
        inputs: Vec<Cursor>,
    },
    /// A sequence step over its source: what it gave out in one go and has not been
    /// read yet (`mapcat`), and whether it has ended.
    Step {
        step: Step,
        buf: VecDeque<Value>,
        done: bool,
        src: Box<Cursor>,
    },
    Concat {
        prefix: PVector,
        i: usize,
        tail: Box<Cursor>,
    },
    Interleave {
        srcs: Vec<Cursor>,
        buf: VecDeque<Value>,
    },
    Reductions {
        f: Value,
        acc: Option<Value>,
        started: bool,
        done: bool,
        src: Box<Cursor>,
    },
    DropLast {
        n: usize,
        buf: VecDeque<Value>,
        src: Box<Cursor>,
    },
    Xform {
        xform: Value,
        xrf: Option<Value>,
        buf: VecDeque<Value>,
        done: bool,
        src: Box<Cursor>,
    },
    TreeSeq {
        branch: Value,
        children: Value,
        stack: Vec<VecDeque<Value>>,
    },
    For {
        comp: Arc<ForSeq>,
        buf: VecDeque<Value>,
        tail: Option<Box<Cursor>>,
        src: Box<Cursor>,
    },
}

/// A cursor over `src`, the source of a step being started: the step's one producer is
/// its only reader unless something else holds it too (or it has cached items already).
fn boxed(src: &Arc<LazySeq>) -> Box<Cursor> {
    Box::new(Cursor::of_source(src))
}

impl Cursor {
    /// A cursor at the start of `seq`, reading through its cache: whoever else holds the
    /// sequence sees the same items, made once.
    pub(crate) fn new(seq: &Arc<LazySeq>) -> Cursor {
        Cursor { pos: Pos::Shared { seq: seq.clone(), at: 0, seen: PVector::new() } }
    }

    /// A cursor at the start of `seq`, which the caller hands over: when nobody else holds
    /// it, nobody can read it again, so its items go straight from the producer to this
    /// cursor and nothing is cached.
    pub(crate) fn owned(seq: Arc<LazySeq>) -> Cursor {
        if Arc::strong_count(&seq) == 1 && seq.unstarted() {
            return Cursor { pos: Pos::Sole(Box::new(State::of(&seq.source))) };
        }
        Cursor { pos: Pos::Shared { seq, at: 0, seen: PVector::new() } }
    }

    /// A cursor over the source of a step that is being started. Held only by the step
    /// (the count of one), the source is read by that step's producer alone, which runs
    /// once (its items are cached, or its one reader is sole), so nothing is cached.
    fn of_source(src: &Arc<LazySeq>) -> Cursor {
        if Arc::strong_count(src) == 1 && src.unstarted() {
            return Cursor { pos: Pos::Sole(Box::new(State::of(&src.source))) };
        }
        Cursor::new(src)
    }

    /// The next item, or `None` at the end, charging one unit of fuel per item pulled.
    pub(crate) fn next(&mut self, cx: &mut BuiltinContext) -> EvalResult<Option<Value>> {
        cx.tick(1)?;
        match &mut self.pos {
            Pos::Sole(state) => state.step(cx),
            Pos::Shared { seq, at, seen } => {
                if let Some(x) = seen.get(*at) {
                    *at += 1;
                    return Ok(Some(x.clone()));
                }
                next_shared(seq, at, seen, cx)
            }
        }
    }

    /// Moves past up to `left` items that the sequence has cached already (a cursor
    /// through the cache only), taking them off `left`.
    fn skip_cached(&mut self, left: &mut usize) {
        if let Pos::Shared { seq, at, .. } = &mut self.pos {
            let cached = seq.cache().items.len();
            let k = (*left).min(cached.saturating_sub(*at));
            *at += k;
            *left -= k;
        }
    }

    /// The sequence this cursor reads through the cache, if it does.
    fn shared(&self) -> Option<&Arc<LazySeq>> {
        match &self.pos {
            Pos::Sole(_) => None,
            Pos::Shared { seq, .. } => Some(seq),
        }
    }
}

impl LazySeq {
    /// Nothing made yet (so a sole reader may start from the description).
    fn unstarted(&self) -> bool {
        let cache = self.cache();
        cache.items.is_empty() && matches!(cache.producer, Producer::Unstarted)
    }
}

/// The item at `at` of a shared sequence: from the cache, or made by its producer and
/// cached (and charged as memory) on the way.
fn next_shared(
    seq: &Arc<LazySeq>,
    at: &mut usize,
    seen: &mut PVector,
    cx: &mut BuiltinContext,
) -> EvalResult<Option<Value>> {
    let me = this_thread();
    let mut cache = seq.cache();
    let mut state = loop {
        if let Some(x) = cache.items.get(*at) {
            let x = x.clone();
            *at += 1;
            // more was cached than this reader has seen: read the rest without the lock
            if cache.items.len() > *at {
                *seen = cache.items.clone();
            }
            return Ok(Some(x));
        }
        match std::mem::replace(&mut cache.producer, Producer::Busy(me)) {
            Producer::Idle(state) => break state,
            Producer::Unstarted => {
                // started afresh (first read, or after a failure): skip what is cached
                let skip = cache.items.len();
                std::mem::drop(cache);
                let mut state = Box::new(State::of(&seq.source));
                let skipped = skip_items(&mut state, skip, cx);
                cache = seq.cache();
                if let Err(e) = skipped {
                    cache.producer = Producer::Unstarted;
                    hand_back(seq, cache);
                    return Err(e);
                }
                break state;
            }
            Producer::Ended => {
                cache.producer = Producer::Ended;
                return Ok(None);
            }
            Producer::Busy(owner) => {
                cache.producer = Producer::Busy(owner);
                if owner == me {
                    std::mem::drop(cache);
                    return err(
                        ErrorKind::RecursionLimitExceeded,
                        format!(
                            "the lazy sequence built on {} asks for its own next item while making it (it is defined in terms of itself); build it with (iterate f x) or loop/recur instead",
                            seq.label
                        ),
                    );
                }
                // another thread (pmap) is making this item: wait for it, within the deadline
                cache.waiting += 1;
                cache = seq.ready.wait_timeout(cache, WAIT_SLICE).unwrap_or_else(PoisonError::into_inner).0;
                cache.waiting -= 1;
                cx.check_time()?;
            }
        }
    };
    std::mem::drop(cache);
    let made = state.step(cx);
    let mut cache = seq.cache();
    match &made {
        Ok(Some(x)) => {
            cache.items.push_back(x.clone());
            cache.producer = Producer::Idle(state);
        }
        Ok(None) => cache.producer = Producer::Ended,
        Err(_) => cache.producer = Producer::Unstarted,
    }
    hand_back(seq, cache);
    let made = made?;
    if made.is_some() {
        *at += 1;
        // the cache keeps the item: memory of this run
        cx.charge(cost::ELEM)?;
    }
    Ok(made)
}

/// Releases the cache after the producer was put back, waking the readers waiting for it
/// (a wake is a system call: none is made when nobody waits).
fn hand_back(seq: &LazySeq, cache: MutexGuard<'_, Cache>) {
    let wake = cache.waiting > 0;
    std::mem::drop(cache);
    if wake {
        seq.ready.notify_all();
    }
}

/// This thread's id, without the cost of `thread::current()` on every item.
fn this_thread() -> ThreadId {
    thread_local! {
        static ME: ThreadId = std::thread::current().id();
    }
    ME.with(|id| *id)
}

/// Advances a restarted producer past `n` items (the ones already cached).
fn skip_items(state: &mut State, n: usize, cx: &mut BuiltinContext) -> EvalResult<()> {
    for _ in 0..n {
        if state.step(cx)?.is_none() {
            break;
        }
    }
    Ok(())
}

impl State {
    /// The producer at the start of `source`.
    fn of(source: &Source) -> State {
        match source {
            Source::Range { start, step } => State::Range { next: start.clone(), step: step.clone() },
            Source::RangeTo { start, end, step } => {
                State::RangeTo { next: *start as i128, end: *end as i128, step: *step as i128 }
            }
            Source::Iterate { f, seed } => State::Iterate { f: f.clone(), cur: seed.clone(), started: false },
            Source::Repeat(x) => State::Repeat(x.clone()),
            Source::Cycle(items) => State::Cycle { items: items.clone(), i: 0 },
            Source::Repeatedly(f) => State::Repeatedly(f.clone()),
            Source::Map { f, inputs } => {
                State::Map { f: f.clone(), inputs: inputs.iter().map(Cursor::of_source).collect() }
            }
            Source::Step { step, src } => {
                let mut src = boxed(src);
                let mut step = step.clone();
                // a drop passes over what its source has cached without reading it item by
                // item: `rest` of a cached sequence costs one step, as in Clojure
                if let Step::Drop { left } = &mut step {
                    src.skip_cached(left);
                }
                State::Step { done: step.is_spent(), step, buf: VecDeque::new(), src }
            }
            Source::Concat { prefix, tail } => State::Concat { prefix: prefix.clone(), i: 0, tail: boxed(tail) },
            Source::Interleave(srcs) => {
                State::Interleave { srcs: srcs.iter().map(Cursor::of_source).collect(), buf: VecDeque::new() }
            }
            Source::Reductions { f, init, src } => {
                State::Reductions { f: f.clone(), acc: init.clone(), started: false, done: false, src: boxed(src) }
            }
            Source::DropLast { n, src } => State::DropLast { n: *n, buf: VecDeque::new(), src: boxed(src) },
            Source::Xform { xform, src } => {
                State::Xform { xform: xform.clone(), xrf: None, buf: VecDeque::new(), done: false, src: boxed(src) }
            }
            Source::TreeSeq { branch, children, root } => State::TreeSeq {
                branch: branch.clone(),
                children: children.clone(),
                stack: vec![VecDeque::from([root.clone()])],
            },
            Source::For { comp, src } => {
                State::For { comp: comp.clone(), buf: VecDeque::new(), tail: None, src: boxed(src) }
            }
        }
    }

    /// Makes the next item, or `None` at the end (the fuel is charged by the cursor).
    fn step(&mut self, cx: &mut BuiltinContext) -> EvalResult<Option<Value>> {
        match self {
            State::Range { next, step } => {
                let out = next.clone();
                *next = crate::builtins::add2(next, step)?;
                Ok(Some(out))
            }
            State::RangeTo { next, end, step } => {
                if (*step > 0 && *next >= *end) || (*step < 0 && *next <= *end) {
                    return Ok(None);
                }
                let out = Value::Int(*next as i64);
                *next += *step;
                Ok(Some(out))
            }
            State::Iterate { f, cur, started } => {
                if *started {
                    let f = f.clone();
                    *cur = cx.apply(&f, &mut [cur.clone()])?;
                }
                *started = true;
                Ok(Some(cur.clone()))
            }
            State::Repeat(x) => Ok(Some(x.clone())),
            State::Cycle { items, i } => {
                let out = items.get(*i % items.len().max(1)).cloned().unwrap_or(Value::Nil);
                *i = (*i + 1) % items.len().max(1);
                Ok(Some(out))
            }
            State::Repeatedly(f) => {
                let f = f.clone();
                cx.apply(&f, &mut []).map(Some)
            }
            State::Map { f, inputs } => {
                let mut args = Vec::with_capacity(inputs.len());
                for c in inputs.iter_mut() {
                    match c.next(cx)? {
                        Some(x) => args.push(x),
                        None => return Ok(None),
                    }
                }
                let f = f.clone();
                cx.apply(&f, &mut args).map(Some)
            }
            State::Step { step, buf, done, src } => loop {
                if let Some(x) = buf.pop_front() {
                    return Ok(Some(x));
                }
                if *done {
                    // what the step still holds, item by item (nothing, for most steps)
                    return step.finish(cx);
                }
                let Some(x) = src.next(cx)? else {
                    *done = true;
                    return step.finish(cx);
                };
                match step.feed(cx, x)? {
                    Fed::Skip => {}
                    Fed::One(y) => return Ok(Some(y)),
                    Fed::Many(ys) => buf.extend(ys),
                    Fed::End => {
                        *done = true;
                        return step.finish(cx);
                    }
                    Fed::Last(y) => {
                        *done = true;
                        return Ok(Some(y));
                    }
                }
            },
            State::Concat { prefix, i, tail } => match prefix.get(*i) {
                Some(x) => {
                    *i += 1;
                    Ok(Some(x.clone()))
                }
                None => tail.next(cx),
            },
            State::Interleave { srcs, buf } => {
                // a round is only given out when every input has its item
                if buf.is_empty() {
                    for c in srcs.iter_mut() {
                        match c.next(cx)? {
                            Some(x) => buf.push_back(x),
                            None => return Ok(None),
                        }
                    }
                }
                Ok(buf.pop_front())
            }
            State::Reductions { f, acc, started, done, src } => {
                if *done {
                    return Ok(None);
                }
                if !*started {
                    *started = true;
                    let first = match acc.take() {
                        Some(init) => init,
                        None => match src.next(cx)? {
                            Some(x) => x,
                            None => {
                                *done = true;
                                return cx.apply(f, &mut []).map(Some);
                            }
                        },
                    };
                    *acc = Some(first.clone());
                    return Ok(Some(first));
                }
                let Some(x) = src.next(cx)? else { return Ok(None) };
                let prev = acc.take().unwrap_or(Value::Nil);
                let next = cx.apply(f, &mut [prev, x])?;
                if let Some(v) = crate::builtins::reduced_value(&next) {
                    *done = true;
                    return Ok(Some(v.clone()));
                }
                *acc = Some(next.clone());
                Ok(Some(next))
            }
            State::DropLast { n, buf, src } => {
                while buf.len() <= *n {
                    match src.next(cx)? {
                        Some(x) => {
                            cx.charge(cost::ELEM)?;
                            buf.push_back(x);
                        }
                        None => return Ok(None),
                    }
                }
                Ok(buf.pop_front())
            }
            State::Xform { xform, xrf, buf, done, src } => loop {
                if let Some(x) = buf.pop_front() {
                    return Ok(Some(x));
                }
                if *done {
                    return Ok(None);
                }
                let rf = match xrf {
                    Some(rf) => rf.clone(),
                    None => {
                        let rf = crate::builtins::transducer_over_vectors(cx, xform)?;
                        *xrf = Some(rf.clone());
                        rf
                    }
                };
                // each step conjs what the transducer makes of one item onto an empty vector
                let out = match src.next(cx)? {
                    Some(x) => {
                        let r = cx.apply(&rf, &mut [Value::vector([]), x])?;
                        match crate::builtins::reduced_value(&r) {
                            Some(v) => {
                                *done = true;
                                let v = v.clone();
                                let tail = cx.apply(&rf, &mut [Value::vector([])])?;
                                buf.extend(finite_items(cx, "sequence", &v)?);
                                tail
                            }
                            None => r,
                        }
                    }
                    None => {
                        *done = true;
                        cx.apply(&rf, &mut [Value::vector([])])?
                    }
                };
                buf.extend(finite_items(cx, "sequence", &out)?);
            },
            State::TreeSeq { branch, children, stack } => {
                let node = loop {
                    let Some(top) = stack.last_mut() else { return Ok(None) };
                    match top.pop_front() {
                        Some(node) => break node,
                        None => {
                            stack.pop();
                        }
                    }
                };
                if cx.apply(branch, &mut [node.clone()])?.truthy() {
                    let kids = cx.apply(children, &mut [node.clone()])?;
                    let kids: VecDeque<Value> = finite_items(cx, "tree-seq", &kids)?.into_iter().collect();
                    cx.charge(cost::items(kids.len() as u64))?;
                    stack.push(kids);
                }
                Ok(Some(node))
            }
            State::For { comp, buf, tail, src } => loop {
                if let Some(x) = buf.pop_front() {
                    return Ok(Some(x));
                }
                if let Some(t) = tail {
                    match t.next(cx)? {
                        Some(x) => return Ok(Some(x)),
                        None => *tail = None,
                    }
                }
                let Some(x) = src.next(cx)? else { return Ok(None) };
                match cx.for_rest(comp, x)? {
                    Value::Lazy(l) => *tail = Some(Box::new(Cursor::owned(l))),
                    made => buf.extend(finite_items(cx, "for", &made)?),
                }
            },
        }
    }
}

/// The items of a collection a lazy step got (`mapcat`'s results, a transducer's output,
/// `tree-seq`'s children), charged as they are built; a finite lazy one is realised.
pub(crate) fn finite_items(cx: &mut BuiltinContext, fname: &str, v: &Value) -> EvalResult<Vec<Value>> {
    if let Some(l) = as_lazy(v) {
        let all = realize(cx, fname, l.clone())?;
        return crate::builtins::collect_items(cx, fname, &all);
    }
    crate::builtins::collect_items(cx, fname, v)
}

/// Every item of a lazy sequence, as a vector charged item by item; an infinite one is
/// the [`unbounded`] error naming `fname`, and a finite one that is too long runs into
/// the fuel or memory limit. A sequence someone else holds too is realised into its
/// cache, and the vector is that cache (shared, not copied, and charged once).
pub(crate) fn realize(cx: &mut BuiltinContext, fname: &str, seq: Arc<LazySeq>) -> EvalResult {
    if seq.infinite {
        return unbounded(fname, &seq);
    }
    let mut c = Cursor::owned(seq);
    cx.charge(cost::HEADER)?;
    if let Some(seq) = c.shared().cloned() {
        while c.next(cx)?.is_some() {}
        return Ok(Value::from_pvec(seq.cached()));
    }
    let mut out = PVector::new();
    while let Some(x) = c.next(cx)? {
        cx.charge(cost::ELEM)?;
        out.push_back(x);
    }
    Ok(Value::from_pvec(out))
}

/// `v` with a finite lazy sequence realised as a vector (anything else as it is).
pub(crate) fn realized(cx: &mut BuiltinContext, fname: &str, v: Value) -> EvalResult {
    match v {
        Value::Lazy(l) if !l.infinite => realize(cx, fname, l),
        _ => Ok(v),
    }
}

/// `v` with every finite lazy sequence in it — itself, or held at any depth of vectors,
/// lists, maps and sets — realised: what leaves the program (its result, a tool call's
/// arguments) holds no lazy sequence. An infinite one is the [`unbounded`] error naming
/// `fname`; levels past `max_depth` are left as they are (the caller refuses values that
/// deep).
pub(crate) fn realize_within(cx: &mut BuiltinContext, fname: &str, v: Value, max_depth: usize) -> EvalResult {
    let mut walk = Walk::default();
    Ok(realized_copy(cx, &mut walk, fname, &v, max_depth)?.unwrap_or(v))
}

/// What a [`realize_within`] walk remembers: the collections already found to hold no lazy
/// sequence (by address: a value that shares structure, `[a a]` sixty levels deep, is
/// walked once per distinct node, not once per path), and a count for deadline checks.
#[derive(Default)]
struct Walk {
    clean: HashSet<usize>,
    visited: u32,
}

impl Walk {
    /// `Some(address)` of a collection not known clean yet; `None` when it is known clean.
    fn enter(&mut self, cx: &BuiltinContext, address: usize) -> Result<Option<usize>, Flow> {
        if self.clean.contains(&address) {
            return Ok(None);
        }
        self.visited = self.visited.wrapping_add(1);
        if self.visited.is_multiple_of(256) {
            cx.check_time()?;
        }
        Ok(Some(address))
    }

    fn leave<T>(&mut self, address: usize, copy: Option<T>) -> Option<T> {
        if copy.is_none() {
            self.clean.insert(address);
        }
        copy
    }
}

/// The copy of `v` with its finite lazy sequences realised, or `None` when it has none.
fn realized_copy(
    cx: &mut BuiltinContext,
    walk: &mut Walk,
    fname: &str,
    v: &Value,
    depth_left: usize,
) -> EvalResult<Option<Value>> {
    if depth_left == 0 {
        return Ok(None);
    }
    Ok(match v {
        Value::Lazy(_) => {
            let all = realized(cx, fname, v.clone())?;
            if let Some(l) = as_lazy(&all) {
                return unbounded(fname, l);
            }
            Some(realized_copy(cx, walk, fname, &all, depth_left - 1)?.unwrap_or(all))
        }
        Value::Vector(items) | Value::List(items) => {
            let Some(address) = walk.enter(cx, Arc::as_ptr(items) as usize)? else { return Ok(None) };
            let mut copy: Option<PVector> = None;
            for (i, x) in items.iter().enumerate() {
                if let Some(y) = realized_copy(cx, walk, fname, x, depth_left - 1)? {
                    copy.get_or_insert_with(|| (**items).clone()).set(i, y);
                }
            }
            let copy =
                copy.map(|c| if matches!(v, Value::List(_)) { Value::List(Arc::new(c)) } else { Value::from_pvec(c) });
            walk.leave(address, copy)
        }
        Value::Map(m) => {
            let Some(address) = walk.enter(cx, Arc::as_ptr(m) as usize)? else { return Ok(None) };
            let mut changed = false;
            let mut entries = Vec::new();
            for (k, x) in m.iter() {
                let k2 = realized_copy(cx, walk, fname, k, depth_left - 1)?;
                let x2 = realized_copy(cx, walk, fname, x, depth_left - 1)?;
                changed |= k2.is_some() || x2.is_some();
                entries.push((k2.unwrap_or_else(|| k.clone()), x2.unwrap_or_else(|| x.clone())));
            }
            walk.leave(address, changed.then(|| Value::map(entries)))
        }
        Value::Set(items) => {
            let Some(address) = walk.enter(cx, Arc::as_ptr(items) as usize)? else { return Ok(None) };
            let mut changed = false;
            let mut members = Vec::new();
            for x in items.iter() {
                let x2 = realized_copy(cx, walk, fname, x, depth_left - 1)?;
                changed |= x2.is_some();
                members.push(x2.unwrap_or_else(|| x.clone()));
            }
            walk.leave(address, changed.then(|| Value::set(members)))
        }
        _ => None,
    })
}

/// The first `n` items (fewer when it ends) as a vector, charging memory per item kept.
pub(crate) fn take(cx: &mut BuiltinContext, n: usize, seq: Arc<LazySeq>) -> EvalResult {
    let mut c = Cursor::owned(seq);
    let mut out = PVector::new();
    cx.charge(cost::HEADER)?;
    for _ in 0..n {
        let Some(x) = c.next(cx)? else { break };
        cx.charge(cost::ELEM)?;
        out.push_back(x);
    }
    Ok(Value::from_pvec(out))
}

/// True when the sequence has no item.
pub(crate) fn is_empty(cx: &mut BuiltinContext, seq: Arc<LazySeq>) -> EvalResult<bool> {
    if seq.infinite {
        return Ok(false);
    }
    Ok(Cursor::owned(seq).next(cx)?.is_none())
}

/// `seq` (a lazy sequence or anything else), or nil when it is an empty lazy sequence:
/// `next` and friends say "nothing left" with nil. The first item, made to find out, is
/// cached for whoever reads the sequence next.
pub(crate) fn nil_if_empty(cx: &mut BuiltinContext, seq: Value) -> EvalResult {
    match as_lazy(&seq) {
        Some(l) if is_empty(cx, l.clone())? => Ok(Value::Nil),
        _ => Ok(seq),
    }
}

/// The item at index `i`, or `None` past the end.
pub(crate) fn nth_or(cx: &mut BuiltinContext, i: usize, seq: Arc<LazySeq>) -> EvalResult<Option<Value>> {
    let mut c = Cursor::owned(seq);
    for _ in 0..i {
        if c.next(cx)?.is_none() {
            return Ok(None);
        }
    }
    c.next(cx)
}

/// The item at index `i` (nil past the end).
pub(crate) fn nth(cx: &mut BuiltinContext, i: usize, seq: Arc<LazySeq>) -> EvalResult {
    Ok(nth_or(cx, i, seq)?.unwrap_or(Value::Nil))
}

/// The first truthy `(pred x)`, or nil at the end; over an infinite sequence with none it
/// never ends by itself (fuel and time bound it).
pub(crate) fn some(cx: &mut BuiltinContext, pred: &Value, seq: Arc<LazySeq>) -> EvalResult {
    let mut c = Cursor::owned(seq);
    while let Some(x) = c.next(cx)? {
        let r = cx.apply(pred, &mut [x])?;
        if r.truthy() {
            return Ok(r);
        }
    }
    Ok(Value::Nil)
}

/// `(every? pred s)`: false at the first item `pred` rejects, read one item at a time
/// (nothing is kept); on an endless sequence whose items all pass, the run's limits end
/// it, as Clojure would loop forever.
pub(crate) fn every(cx: &mut BuiltinContext, pred: &Value, seq: Arc<LazySeq>) -> EvalResult<bool> {
    let mut c = Cursor::owned(seq);
    while let Some(x) = c.next(cx)? {
        if !cx.apply(pred, &mut [x])?.truthy() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `(last s)` of a finite lazy sequence, read one item at a time (nothing is kept); an
/// endless one is an error naming its producer.
pub(crate) fn last(cx: &mut BuiltinContext, seq: Arc<LazySeq>) -> EvalResult {
    if seq.infinite {
        return unbounded("last", &seq);
    }
    let mut c = Cursor::owned(seq);
    let mut last = Value::Nil;
    while let Some(x) = c.next(cx)? {
        last = x;
    }
    Ok(last)
}

/// `(count s)`: the items of a finite lazy sequence counted as they come, none kept
/// (unless another reader shares the sequence, whose cache keeps them as it would).
pub(crate) fn count(cx: &mut BuiltinContext, seq: Arc<LazySeq>) -> EvalResult {
    if seq.infinite {
        return unbounded("count", &seq);
    }
    let mut c = Cursor::owned(seq);
    let mut n: i64 = 0;
    while c.next(cx)?.is_some() {
        n += 1;
    }
    Ok(Value::Int(n))
}

/// Items of a finite collection or a lazy sequence, for consumers that stop on their own
/// (a finite partner of `map`/`zipmap`, or `reduce` with `reduced`).
pub(crate) enum Items<'a> {
    /// A finite collection.
    Finite(crate::builtins::SeqIter<'a>),
    /// A lazy sequence.
    Lazy(Cursor),
}

impl<'a> Items<'a> {
    /// Items of `v`.
    pub(crate) fn of(fname: &str, v: &'a Value) -> EvalResult<Items<'a>> {
        Ok(match as_lazy(v) {
            Some(l) => Items::Lazy(Cursor::new(l)),
            None => Items::Finite(crate::builtins::seq_iter(fname, v)?),
        })
    }

    /// The next item, or `None` at the end.
    pub(crate) fn next(&mut self, cx: &mut BuiltinContext) -> EvalResult<Option<Value>> {
        match self {
            Items::Finite(it) => Ok(it.next()),
            Items::Lazy(c) => c.next(cx),
        }
    }
}

/// `(map f c1 c2 ...)` where some collection is lazy: lazy when all are, else a vector
/// as long as the shortest.
pub(crate) fn map_mixed(cx: &mut BuiltinContext, f: Value, colls: &[Value]) -> EvalResult {
    let lazies: Vec<Arc<LazySeq>> = colls.iter().filter_map(|c| as_lazy(c).cloned()).collect();
    if lazies.len() == colls.len() {
        return map(f, lazies);
    }
    let mut its = colls.iter().map(|c| Items::of("map", c)).collect::<EvalResult<Vec<_>>>()?;
    let mut out = PVector::new();
    cx.charge(cost::HEADER)?;
    'outer: loop {
        let mut args = Vec::with_capacity(its.len());
        for it in its.iter_mut() {
            match it.next(cx)? {
                Some(x) => args.push(x),
                None => break 'outer,
            }
        }
        let y = cx.apply(&f, &mut args)?;
        cx.charge(cost::ELEM)?;
        out.push_back(y);
    }
    Ok(Value::from_pvec(out))
}
