//! Infinite sequences — `(range)`, `iterate`, `repeat`, `cycle`, `repeatedly` — and the
//! lazy steps over them (`map`, `filter`, `remove`, `keep`, `map-indexed`, `drop`,
//! `drop-while`). A lazy sequence is an immutable description; a consumer that bounds it
//! (`take`, `take-while`, `first`, `nth`, `some`, `reduce` with `reduced`, `map` or
//! `zipmap` with a finite partner, a transducer with `take`) pulls items through a
//! [`Cursor`], charging fuel per item and memory for what it keeps. Anything that would
//! realise the whole sequence (`count`, `vec`, `sort`, printing...) is a limit error that
//! names the producer.

use std::sync::Arc;

use crate::builtins::context::BuiltinContext;
use crate::error::{ErrorKind, EvalResult, err};
use crate::function::Function;
use crate::value::{PVector, Value};

/// An infinite sequence: where its items come from, and how the program wrote it.
#[derive(Debug)]
pub struct LazySeq {
    /// The producer as written (`(range)`, `(iterate f x)`), for error messages.
    pub label: Arc<str>,
    /// How many lazy steps are stacked on the producer (pulling recurses through them).
    depth: usize,
    source: Source,
}

/// The most lazy steps that may be stacked on one producer: pulling an item recurses
/// through every step, so the chain is bounded like the call depth.
pub const MAX_LAZY_DEPTH: usize = 1_000;

#[derive(Debug)]
enum Source {
    Range { start: Value, step: Value },
    Iterate { f: Value, seed: Value },
    Repeat(Value),
    Cycle(PVector),
    Repeatedly(Value),
    Map { f: Value, inputs: Vec<Arc<LazySeq>> },
    Filter { pred: Value, keep_truthy: bool, src: Arc<LazySeq> },
    Keep { f: Value, src: Arc<LazySeq> },
    MapIndexed { f: Value, src: Arc<LazySeq> },
    Drop { n: usize, src: Arc<LazySeq> },
    DropWhile { pred: Value, src: Arc<LazySeq> },
    Concat { prefix: PVector, tail: Arc<LazySeq> },
    Mapcat { f: Value, src: Arc<LazySeq> },
    Interleave(Vec<Arc<LazySeq>>),
    Partition { n: usize, step: usize, src: Arc<LazySeq> },
}

impl Drop for LazySeq {
    /// What the sequence was built from is dropped by `release` (see `release.rs`).
    fn drop(&mut self) {
        crate::release::release(std::mem::replace(&mut self.source, Source::Repeat(Value::Nil)));
    }
}

impl LazySeq {
    /// Calls `visit` with every value the sequence was built from; an inner lazy step is
    /// visited as the function value it is.
    pub(crate) fn each_held(&self, visit: &mut dyn FnMut(Value)) {
        let seq = |s: &Arc<LazySeq>| Value::Func(Arc::new(Function::Lazy(s.clone())));
        match &self.source {
            Source::Range { start, step } => {
                visit(start.clone());
                visit(step.clone());
            }
            Source::Iterate { f, seed } => {
                visit(f.clone());
                visit(seed.clone());
            }
            Source::Repeat(x) | Source::Repeatedly(x) => visit(x.clone()),
            Source::Cycle(items) => items.iter().cloned().for_each(visit),
            Source::Map { f, inputs } => {
                visit(f.clone());
                inputs.iter().map(seq).for_each(visit);
            }
            Source::Filter { pred: f, src, .. }
            | Source::Keep { f, src }
            | Source::MapIndexed { f, src }
            | Source::DropWhile { pred: f, src }
            | Source::Mapcat { f, src } => {
                visit(f.clone());
                visit(seq(src));
            }
            Source::Drop { src, .. } | Source::Partition { src, .. } => visit(seq(src)),
            Source::Concat { prefix, tail } => {
                prefix.iter().cloned().for_each(&mut *visit);
                visit(seq(tail));
            }
            Source::Interleave(inputs) => inputs.iter().map(seq).for_each(visit),
        }
    }
}

fn value(label: impl Into<Arc<str>>, source: Source) -> Value {
    Value::Func(Arc::new(Function::Lazy(Arc::new(LazySeq { label: label.into(), depth: 0, source }))))
}

/// A lazy step over `srcs`, refused when the chain gets too deep.
fn step(label: Arc<str>, srcs: &[&Arc<LazySeq>], source: Source) -> EvalResult {
    let depth = srcs.iter().map(|s| s.depth).max().unwrap_or(0) + 1;
    if depth > MAX_LAZY_DEPTH {
        return err(
            ErrorKind::RecursionLimitExceeded,
            format!(
                "more than {MAX_LAZY_DEPTH} lazy steps (map, filter, drop...) are stacked on {label}; realise part of it with (vec (take n ...)) before adding more"
            ),
        );
    }
    Ok(Value::Func(Arc::new(Function::Lazy(Arc::new(LazySeq { label, depth, source })))))
}

/// The lazy sequence a value is, if it is one.
#[inline]
pub fn as_lazy(v: &Value) -> Option<&Arc<LazySeq>> {
    match v {
        Value::Func(f) => match &**f {
            Function::Lazy(l) => Some(l),
            _ => None,
        },
        _ => None,
    }
}

/// The error for realising a whole infinite sequence.
#[cold]
pub fn unbounded<T>(fname: &str, seq: &LazySeq) -> EvalResult<T> {
    err(
        ErrorKind::LoopLimitExceeded,
        format!(
            "{} is infinite, so {fname} would never finish; bound it first, e.g. (take 10 {}), (take-while pred ...) or (first ...)",
            seq.label, seq.label
        ),
    )
}

/// `(range)`, or `(range start end 0)`: numbers from `start` by `step`, forever.
pub fn range(start: Value, step: Value) -> Value {
    let label = if matches!(step, Value::Int(0)) { "(range start end 0)" } else { "(range)" };
    value(label, Source::Range { start, step })
}
/// `(iterate f x)`: x, (f x), (f (f x)), ...
pub fn iterate(f: Value, seed: Value) -> Value {
    value("(iterate f x)", Source::Iterate { f, seed })
}
/// `(repeat x)`.
pub fn repeat(x: Value) -> Value {
    value("(repeat x)", Source::Repeat(x))
}
/// `(cycle coll)` of a non-empty collection.
pub fn cycle(items: PVector) -> Value {
    value("(cycle coll)", Source::Cycle(items))
}
/// `(repeatedly f)`.
pub fn repeatedly(f: Value) -> Value {
    value("(repeatedly f)", Source::Repeatedly(f))
}
/// `(map f s1 s2 ...)` over infinite sequences only.
pub fn map(f: Value, inputs: Vec<Arc<LazySeq>>) -> EvalResult {
    let label = inputs.first().map(|s| s.label.clone()).unwrap_or_else(|| Arc::from("(map ...)"));
    let srcs: Vec<&Arc<LazySeq>> = inputs.iter().collect();
    step(label, &srcs, Source::Map { f, inputs: inputs.clone() })
}
/// `(filter pred s)` (`keep_truthy`) or `(remove pred s)`.
pub fn filter(pred: Value, keep_truthy: bool, src: &Arc<LazySeq>) -> EvalResult {
    step(src.label.clone(), &[src], Source::Filter { pred, keep_truthy, src: src.clone() })
}
/// `(keep f s)`.
pub fn keep(f: Value, src: &Arc<LazySeq>) -> EvalResult {
    step(src.label.clone(), &[src], Source::Keep { f, src: src.clone() })
}
/// `(map-indexed f s)`.
pub fn map_indexed(f: Value, src: &Arc<LazySeq>) -> EvalResult {
    step(src.label.clone(), &[src], Source::MapIndexed { f, src: src.clone() })
}
/// `(drop n s)`.
pub fn drop(n: usize, src: &Arc<LazySeq>) -> EvalResult {
    step(src.label.clone(), &[src], Source::Drop { n, src: src.clone() })
}
/// `(drop-while pred s)`.
pub fn drop_while(pred: Value, src: &Arc<LazySeq>) -> EvalResult {
    step(src.label.clone(), &[src], Source::DropWhile { pred, src: src.clone() })
}

/// `(concat c1 ... (range) ...)`: the finite items before the first infinite sequence, then it.
pub fn concat(prefix: PVector, tail: &Arc<LazySeq>) -> EvalResult {
    step(tail.label.clone(), &[tail], Source::Concat { prefix, tail: tail.clone() })
}
/// `(mapcat f s)`.
pub fn mapcat(f: Value, src: &Arc<LazySeq>) -> EvalResult {
    step(src.label.clone(), &[src], Source::Mapcat { f, src: src.clone() })
}
/// `(interleave s1 s2 ...)` of infinite sequences.
pub fn interleave(srcs: Vec<Arc<LazySeq>>) -> EvalResult {
    let label = srcs.first().map(|s| s.label.clone()).unwrap_or_else(|| Arc::from("(interleave ...)"));
    let refs: Vec<&Arc<LazySeq>> = srcs.iter().collect();
    step(label, &refs, Source::Interleave(srcs.clone()))
}
/// `(partition n step s)` (and `partition-all`) of an infinite sequence: vectors of n.
pub fn partition(n: usize, every: usize, src: &Arc<LazySeq>) -> EvalResult {
    step(src.label.clone(), &[src], Source::Partition { n, step: every, src: src.clone() })
}

/// A position in a lazy sequence: each [`Cursor::next`] yields the next item.
pub struct Cursor {
    state: State,
}

enum State {
    Range { next: Value, step: Value },
    Iterate { f: Value, cur: Value, started: bool },
    Repeat(Value),
    Cycle { items: PVector, i: usize },
    Repeatedly(Value),
    Map { f: Value, inputs: Vec<Cursor> },
    Filter { pred: Value, keep_truthy: bool, src: Box<Cursor> },
    Keep { f: Value, src: Box<Cursor> },
    MapIndexed { f: Value, i: i64, src: Box<Cursor> },
    Drop { n: usize, src: Box<Cursor> },
    DropWhile { pred: Value, dropping: bool, src: Box<Cursor> },
    Concat { prefix: PVector, i: usize, tail: Box<Cursor> },
    Mapcat { f: Value, buf: std::collections::VecDeque<Value>, src: Box<Cursor> },
    Interleave { srcs: Vec<Cursor>, i: usize },
    Partition { n: usize, step: usize, window: std::collections::VecDeque<Value>, src: Box<Cursor> },
}

impl Cursor {
    /// A cursor at the start of `seq`.
    pub fn new(seq: &LazySeq) -> Cursor {
        let state = match &seq.source {
            Source::Range { start, step } => State::Range { next: start.clone(), step: step.clone() },
            Source::Iterate { f, seed } => State::Iterate { f: f.clone(), cur: seed.clone(), started: false },
            Source::Repeat(x) => State::Repeat(x.clone()),
            Source::Cycle(items) => State::Cycle { items: items.clone(), i: 0 },
            Source::Repeatedly(f) => State::Repeatedly(f.clone()),
            Source::Map { f, inputs } => {
                State::Map { f: f.clone(), inputs: inputs.iter().map(|s| Cursor::new(s)).collect() }
            }
            Source::Filter { pred, keep_truthy, src } => {
                State::Filter { pred: pred.clone(), keep_truthy: *keep_truthy, src: Box::new(Cursor::new(src)) }
            }
            Source::Keep { f, src } => State::Keep { f: f.clone(), src: Box::new(Cursor::new(src)) },
            Source::MapIndexed { f, src } => State::MapIndexed { f: f.clone(), i: 0, src: Box::new(Cursor::new(src)) },
            Source::Drop { n, src } => State::Drop { n: *n, src: Box::new(Cursor::new(src)) },
            Source::DropWhile { pred, src } => {
                State::DropWhile { pred: pred.clone(), dropping: true, src: Box::new(Cursor::new(src)) }
            }
            Source::Concat { prefix, tail } => {
                State::Concat { prefix: prefix.clone(), i: 0, tail: Box::new(Cursor::new(tail)) }
            }
            Source::Mapcat { f, src } => {
                State::Mapcat { f: f.clone(), buf: Default::default(), src: Box::new(Cursor::new(src)) }
            }
            Source::Interleave(srcs) => State::Interleave { srcs: srcs.iter().map(|s| Cursor::new(s)).collect(), i: 0 },
            Source::Partition { n, step, src } => {
                State::Partition { n: *n, step: *step, window: Default::default(), src: Box::new(Cursor::new(src)) }
            }
        };
        Cursor { state }
    }

    /// The next item (there always is one), charging one unit of fuel per item pulled.
    pub fn next(&mut self, cx: &mut BuiltinContext) -> EvalResult {
        cx.tick(1)?;
        match &mut self.state {
            State::Range { next, step } => {
                let out = next.clone();
                *next = crate::builtins::add2(next, step)?;
                Ok(out)
            }
            State::Iterate { f, cur, started } => {
                if *started {
                    let f = f.clone();
                    *cur = cx.apply(&f, &mut [cur.clone()])?;
                }
                *started = true;
                Ok(cur.clone())
            }
            State::Repeat(x) => Ok(x.clone()),
            State::Cycle { items, i } => {
                let out = items.get(*i % items.len().max(1)).cloned().unwrap_or(Value::Nil);
                *i = (*i + 1) % items.len().max(1);
                Ok(out)
            }
            State::Repeatedly(f) => {
                let f = f.clone();
                cx.apply(&f, &mut [])
            }
            State::Map { f, inputs } => {
                let mut args = Vec::with_capacity(inputs.len());
                for c in inputs.iter_mut() {
                    args.push(c.next(cx)?);
                }
                let f = f.clone();
                cx.apply(&f, &mut args)
            }
            State::Filter { pred, keep_truthy, src } => loop {
                let x = src.next(cx)?;
                if cx.apply(pred, &mut [x.clone()])?.truthy() == *keep_truthy {
                    return Ok(x);
                }
            },
            State::Keep { f, src } => loop {
                let x = src.next(cx)?;
                let r = cx.apply(f, &mut [x])?;
                if !r.is_nil() {
                    return Ok(r);
                }
            },
            State::MapIndexed { f, i, src } => {
                let x = src.next(cx)?;
                let idx = Value::Int(*i);
                *i += 1;
                cx.apply(f, &mut [idx, x])
            }
            State::Drop { n, src } => {
                while *n > 0 {
                    src.next(cx)?;
                    *n -= 1;
                }
                src.next(cx)
            }
            State::Concat { prefix, i, tail } => match prefix.get(*i) {
                Some(x) => {
                    *i += 1;
                    Ok(x.clone())
                }
                None => tail.next(cx),
            },
            State::Mapcat { f, buf, src } => loop {
                if let Some(x) = buf.pop_front() {
                    return Ok(x);
                }
                let x = src.next(cx)?;
                let ys = cx.apply(f, &mut [x])?;
                buf.extend(crate::builtins::seq_iter("mapcat", &ys)?);
            },
            State::Interleave { srcs, i } => {
                let n = srcs.len().max(1);
                let k = *i % n;
                *i = (*i + 1) % n;
                match srcs.get_mut(k) {
                    Some(c) => c.next(cx),
                    None => Ok(Value::Nil),
                }
            }
            State::Partition { n, step, window, src } => {
                while window.len() < *n {
                    window.push_back(src.next(cx)?);
                }
                let out = Value::vector(window.iter().cloned());
                cx.charge(crate::limits::cost::HEADER + crate::limits::cost::ELEM * *n as u64)?;
                for _ in 0..*step {
                    if window.pop_front().is_none() {
                        src.next(cx)?;
                    }
                }
                Ok(out)
            }
            State::DropWhile { pred, dropping, src } => loop {
                let x = src.next(cx)?;
                if !*dropping || !cx.apply(pred, &mut [x.clone()])?.truthy() {
                    *dropping = false;
                    return Ok(x);
                }
            },
        }
    }
}

/// The first `n` items as a vector, charging memory per item as it is kept.
pub fn take(cx: &mut BuiltinContext, n: usize, seq: &LazySeq) -> EvalResult {
    let mut c = Cursor::new(seq);
    let mut out = PVector::new();
    cx.charge(crate::limits::cost::HEADER)?;
    for _ in 0..n {
        let x = c.next(cx)?;
        cx.charge(crate::limits::cost::ELEM)?;
        out.push_back(x);
    }
    Ok(Value::from_pvec(out))
}

/// The leading items while `pred` holds.
pub fn take_while(cx: &mut BuiltinContext, pred: &Value, seq: &LazySeq) -> EvalResult {
    let mut c = Cursor::new(seq);
    let mut out = PVector::new();
    cx.charge(crate::limits::cost::HEADER)?;
    loop {
        let x = c.next(cx)?;
        if !cx.apply(pred, &mut [x.clone()])?.truthy() {
            return Ok(Value::from_pvec(out));
        }
        cx.charge(crate::limits::cost::ELEM)?;
        out.push_back(x);
    }
}

/// The item at index `i`.
pub fn nth(cx: &mut BuiltinContext, i: usize, seq: &LazySeq) -> EvalResult {
    let mut c = Cursor::new(seq);
    for _ in 0..i {
        c.next(cx)?;
    }
    c.next(cx)
}

/// The first truthy `(pred x)`; never ends when there is none (fuel and time bound it).
pub fn some(cx: &mut BuiltinContext, pred: &Value, seq: &LazySeq) -> EvalResult {
    let mut c = Cursor::new(seq);
    loop {
        let x = c.next(cx)?;
        let r = cx.apply(pred, &mut [x])?;
        if r.truthy() {
            return Ok(r);
        }
    }
}

/// Items of a finite collection or a lazy sequence, for consumers that stop on their own
/// (a finite partner of `map`/`zipmap`, or `reduce` with `reduced`).
pub enum Items<'a> {
    /// A finite collection.
    Finite(crate::builtins::SeqIter<'a>),
    /// An infinite sequence.
    Lazy(Cursor),
}

impl<'a> Items<'a> {
    /// Items of `v`.
    pub fn of(fname: &str, v: &'a Value) -> EvalResult<Items<'a>> {
        Ok(match as_lazy(v) {
            Some(l) => Items::Lazy(Cursor::new(l)),
            None => Items::Finite(crate::builtins::seq_iter(fname, v)?),
        })
    }

    /// The next item, or `None` at the end of a finite collection.
    pub fn next(&mut self, cx: &mut BuiltinContext) -> EvalResult<Option<Value>> {
        match self {
            Items::Finite(it) => Ok(it.next()),
            Items::Lazy(c) => c.next(cx).map(Some),
        }
    }
}

/// `(map f c1 c2 ...)` where some collection is infinite: lazy when all are, else a vector
/// as long as the shortest finite one.
pub fn map_mixed(cx: &mut BuiltinContext, f: Value, colls: &[Value]) -> EvalResult {
    let lazies: Vec<Arc<LazySeq>> = colls.iter().filter_map(|c| as_lazy(c).cloned()).collect();
    if lazies.len() == colls.len() {
        return map(f, lazies);
    }
    let mut its = colls.iter().map(|c| Items::of("map", c)).collect::<EvalResult<Vec<_>>>()?;
    let mut out = PVector::new();
    cx.charge(crate::limits::cost::HEADER)?;
    'outer: loop {
        let mut args = Vec::with_capacity(its.len());
        for it in its.iter_mut() {
            match it.next(cx)? {
                Some(x) => args.push(x),
                None => break 'outer,
            }
        }
        let y = cx.apply(&f, &mut args)?;
        cx.charge(crate::limits::cost::ELEM)?;
        out.push_back(y);
    }
    Ok(Value::from_pvec(out))
}
