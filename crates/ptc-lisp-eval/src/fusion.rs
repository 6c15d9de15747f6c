//! Pipeline fusion: a chain of one-collection step calls (`map`, `filter`, `remove`,
//! `keep`, `map-indexed`, `keep-indexed`, `mapcat`, `take`, `drop`, `take-while`,
//! `drop-while`, `distinct`) ending in a consumer (`reduce`, `frequencies`, `count`, `sum`,
//! `into`, `vec`, `first`, `last`, `some`, `every?`, `not-any?`, `not-every?`, `apply`,
//! `sort`, `set`, or simply the outermost step) is run item by item, without building the
//! intermediate vectors the eager builtins would return. Its source may be a `map` over
//! several collections, whose items are made in step as the chain asks.
//!
//! `(->> orders (filter paid?) (map :amount) (reduce +))` walks `orders` once: each order
//! goes through the predicate, then the key lookup, then the addition. The result is the
//! one the nested calls give; what changes is only the interleaving of the functions'
//! calls (as with Clojure's lazy sequences, whose chunks interleave them too) and that a
//! consumer or step that stops early (`first`, `some`, `every?`, `reduced`, `take`) stops
//! the steps under it as well (DIV-fused-take: Clojure realises a chunk of up to 32
//! items). Anything the streaming path does not cover — an infinite source (`(range)`,
//! `iterate`...) — falls back to calling the builtins one after the other, exactly as
//! written.
//!
//! The analyzer builds a [`Pipeline`] only from calls that resolve to these builtins (a
//! user definition named `map` is a global, not a builtin) and with exactly the argument
//! counts fused here; fuel is charged per step and item as the eager builtins do.

use ptc_lisp_syntax::Span;
use smallvec::SmallVec;
use std::collections::HashMap;
use std::sync::Arc;

use crate::builtins::{self, Builtin, BuiltinContext};
use crate::error::{EvalResult, Flow};
use crate::interp::{Interp, with_span};
use crate::limits::cost;
use crate::node::Node;
use crate::steps::{self, Fed};
use crate::value::{PSet, PVector, SetBuilder, Value};

type FastHash = foldhash::fast::RandomState;

/// One step of a fused chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// `(map f coll)` / `(mapv f coll)`.
    Map,
    /// `(filter pred coll)` / `(filterv pred coll)`.
    Filter,
    /// `(remove pred coll)`.
    Remove,
    /// `(keep f coll)`.
    Keep,
    /// `(map-indexed f coll)`.
    MapIndexed,
    /// `(keep-indexed f coll)`.
    KeepIndexed,
    /// `(mapcat f coll)`.
    Mapcat,
    /// `(take n coll)`.
    Take,
    /// `(drop n coll)`.
    Drop,
    /// `(take-while pred coll)`.
    TakeWhile,
    /// `(drop-while pred coll)`.
    DropWhile,
    /// `(distinct coll)`.
    Distinct,
}

impl Step {
    /// The step a builtin declares (`.fused(..)` on its registry entry).
    fn of(b: &Builtin) -> Option<Step> {
        b.fused
    }

    /// How many arguments the call takes before the collection (its function or count).
    pub(crate) const fn lead(self) -> usize {
        match self {
            Step::Distinct => 0,
            _ => 1,
        }
    }

    /// The step may end the chain before its input ends (as `steps::Step::may_end`).
    fn may_end(self) -> bool {
        matches!(self, Step::Take | Step::TakeWhile)
    }

    /// The step's one definition (`crate::steps`), with its leading argument (`Nil` for a
    /// step without one); a count that is not an integer fails as the builtin's does.
    fn make(self, name: &str, arg: Value) -> EvalResult<steps::Step> {
        Ok(match self {
            Step::Map => steps::Step::Map(arg),
            Step::Filter => steps::Step::Filter { pred: arg, keep: true },
            Step::Remove => steps::Step::Filter { pred: arg, keep: false },
            Step::Keep => steps::Step::Keep(arg),
            Step::MapIndexed => steps::Step::MapIndexed { f: arg, i: 0 },
            Step::KeepIndexed => steps::Step::KeepIndexed { f: arg, i: 0 },
            Step::Mapcat => steps::Step::Mapcat(Some(arg)),
            Step::Take => steps::Step::Take { left: builtins::count_arg(name, &arg)? },
            Step::Drop => steps::Step::Drop { left: builtins::count_arg(name, &arg)? },
            Step::TakeWhile => steps::Step::TakeWhile(arg),
            Step::DropWhile => steps::Step::drop_while(arg),
            Step::Distinct => steps::Step::distinct(),
        })
    }
}

/// Where each step's leading argument sits among a chain's step arguments (outermost
/// step first), `None` for a step without one.
fn lead_slots(steps: &[StepCall]) -> SmallVec<[Option<usize>; 8]> {
    let mut at = 0;
    steps
        .iter()
        .map(|(kind, _, _)| {
            let slot = (kind.lead() == 1).then_some(at);
            at += kind.lead();
            slot
        })
        .collect()
}

/// A step with the builtin that names it and the span of its call.
pub(crate) type StepCall = (Step, &'static Builtin, Span);

/// What consumes the items that come out of the last step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sink {
    /// The outermost step itself: its items are collected into a vector.
    Collect,
    /// `(reduce f coll)` (`init` false) / `(reduce f init coll)`.
    Reduce { init: bool },
    /// `(frequencies coll)`.
    Frequencies,
    /// `(count coll)`.
    Count,
    /// `(sum coll)`.
    Sum,
    /// `(into to coll)`.
    Into,
    /// `(vec coll)`.
    Vec,
    /// `(first coll)`.
    First,
    /// `(last coll)`.
    Last,
    /// `(some pred coll)` (`negate` false) / `(not-any? pred coll)`.
    Some { negate: bool },
    /// `(every? pred coll)` (`negate` false) / `(not-every? pred coll)`.
    Every { negate: bool },
    /// `(apply f coll)`.
    Apply,
    /// `(sort coll)` (`by` false) / `(sort comparator coll)`.
    Sort { by: bool },
    /// `(set coll)`.
    Set,
}

/// The consumers a builtin can declare (`.sink(..)` on its registry entry); with the
/// call's argument count they make a [`Sink`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Consumer {
    /// `(reduce f coll)` / `(reduce f init coll)`.
    Reduce,
    /// `(frequencies coll)`.
    Frequencies,
    /// `(count coll)`.
    Count,
    /// `(sum coll)`.
    Sum,
    /// `(into to coll)`.
    Into,
    /// `(vec coll)`.
    Vec,
    /// `(first coll)`.
    First,
    /// `(last coll)`.
    Last,
    /// `(some pred coll)`.
    Some,
    /// `(not-any? pred coll)`.
    NotAny,
    /// `(every? pred coll)`.
    Every,
    /// `(not-every? pred coll)`.
    NotEvery,
    /// `(apply f coll)`.
    Apply,
    /// `(sort coll)` / `(sort comparator coll)`.
    Sort,
    /// `(set coll)`.
    Set,
}

impl Sink {
    /// The consumer keeps none of the items it gets (what a reducing function builds is
    /// charged by the builtins that build it).
    fn keeps_nothing(self) -> bool {
        matches!(
            self,
            Sink::Reduce { .. }
                | Sink::Count
                | Sink::Sum
                | Sink::First
                | Sink::Last
                | Sink::Some { .. }
                | Sink::Every { .. }
        )
    }

    /// The consumer a builtin called with `argc` arguments is, if it declares one and
    /// the count is one the fuser handles.
    fn of(b: &Builtin, argc: usize) -> Option<Sink> {
        Some(match (b.sink?, argc) {
            (Consumer::Reduce, 2) => Sink::Reduce { init: false },
            (Consumer::Reduce, 3) => Sink::Reduce { init: true },
            (Consumer::Frequencies, 1) => Sink::Frequencies,
            (Consumer::Count, 1) => Sink::Count,
            (Consumer::Sum, 1) => Sink::Sum,
            (Consumer::Into, 2) => Sink::Into,
            (Consumer::Vec, 1) => Sink::Vec,
            (Consumer::First, 1) => Sink::First,
            (Consumer::Last, 1) => Sink::Last,
            (Consumer::Some, 2) => Sink::Some { negate: false },
            (Consumer::NotAny, 2) => Sink::Some { negate: true },
            (Consumer::Every, 2) => Sink::Every { negate: false },
            (Consumer::NotEvery, 2) => Sink::Every { negate: true },
            (Consumer::Apply, 2) => Sink::Apply,
            (Consumer::Sort, 1) => Sink::Sort { by: false },
            (Consumer::Sort, 2) => Sink::Sort { by: true },
            (Consumer::Set, 1) => Sink::Set,
            _ => return None,
        })
    }
}

/// A fused chain. `nodes` holds every argument expression in the order the nested calls
/// would evaluate them: the consumer's leading arguments, then each step's function from
/// the outermost step inwards, then the source collection.
#[derive(Debug, Clone)]
pub(crate) struct Pipeline {
    /// The consumer's builtin (the outermost step's own builtin for [`Sink::Collect`]).
    pub sink_builtin: &'static Builtin,
    /// What the consumer does.
    pub sink: Sink,
    /// Where the consumer's call is written.
    pub sink_span: Span,
    /// The steps, outermost first, each with its builtin and call span.
    pub steps: Vec<StepCall>,
    /// Argument expressions in evaluation order (see the type's doc).
    pub nodes: Vec<Node>,
    /// Where the items come from.
    pub source: Source,
}

/// Where a chain's items come from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Source {
    /// The value of the last node.
    Value,
    /// `(range ...)` whose arguments are the last `usize` nodes: integers are counted out one
    /// by one instead of being collected into a vector first. The memory the vector would
    /// take is still charged, so limits fire as they do for the call.
    Range(&'static Builtin, Span, usize),
    /// `(split s re limit?)` whose arguments are the last `usize` nodes: the pieces become
    /// values one at a time (the call's fuel and memory are charged as for the call).
    Split(Span, usize),
    /// `(vals m)` (`false`) or `(keys m)` (`true`) whose argument is the last node: a map's
    /// values or keys are read in place instead of being copied into a vector first.
    MapView(&'static Builtin, Span, bool),
    /// `(map f c1 c2 ...)` of two or more collections, whose function and collections are
    /// the last `usize` nodes: each item is `(f x1 x2 ...)` of the collections' items in
    /// step, made as the chain asks for it instead of collected into a vector first.
    Zip(&'static Builtin, Span, usize),
}

/// The sources a builtin can declare (`.source(..)` on its registry entry): calls whose
/// items a chain takes one at a time without building them first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SourceKind {
    /// `(range end)`, `(range start end)`, `(range start end step)`.
    Range,
    /// `(split s re)`, `(split s re limit)`.
    Split,
    /// `(vals m)`.
    Vals,
    /// `(keys m)`.
    Keys,
}

/// The source kind of a call of `b` with `argc` arguments, when `b` declares one and the
/// count is one the fuser handles.
fn source_kind(b: &Builtin, argc: usize) -> Option<SourceKind> {
    let kind = b.source?;
    let fits = match kind {
        SourceKind::Range => (1..=3).contains(&argc),
        SourceKind::Split => (2..=3).contains(&argc),
        SourceKind::Vals | SourceKind::Keys => argc == 1,
    };
    fits.then_some(kind)
}

/// The source of a chain: a call [`source_kind`] accepts, or any other expression. Its
/// argument (or value) nodes are appended to `nodes`.
fn source_of(node: Node, nodes: &mut Vec<Node>) -> Source {
    match node {
        Node::CallBuiltin(b, args, span) if source_kind(b, args.len()).is_some() => {
            let n = args.len();
            let kind = source_kind(b, n);
            nodes.extend(args);
            match kind {
                Some(SourceKind::Range) => Source::Range(b, span, n),
                Some(SourceKind::Split) => Source::Split(span, n),
                _ => Source::MapView(b, span, kind == Some(SourceKind::Keys)),
            }
        }
        other => {
            nodes.push(other);
            Source::Value
        }
    }
}

impl Pipeline {
    fn sink_args(&self) -> usize {
        match self.sink {
            Sink::Collect => 0,
            Sink::Reduce { init: false }
            | Sink::Into
            | Sink::Some { .. }
            | Sink::Every { .. }
            | Sink::Apply
            | Sink::Sort { by: true } => 1,
            Sink::Reduce { init: true } => 2,
            Sink::Frequencies
            | Sink::Count
            | Sink::Sum
            | Sink::Vec
            | Sink::First
            | Sink::Last
            | Sink::Sort { by: false }
            | Sink::Set => 0,
        }
    }
}

/// Steps (outermost first), argument nodes in evaluation order, and source of a chain.
type Chain = (Vec<StepCall>, Vec<Node>, Source);

/// The steps and source of a chain ending in `coll`: `coll` itself when it is a step call
/// (`(map f x)`...) or an already fused collecting chain, else `Err(coll)` unchanged.
fn peel(coll: Node) -> Result<Chain, Node> {
    match coll {
        // `(map f xs ys ...)`: the collections in step are the chain's source
        Node::CallBuiltin(b, args, span) if Step::of(b) == Some(Step::Map) && args.len() >= 3 => {
            let n = args.len();
            Ok((Vec::new(), args, Source::Zip(b, span, n)))
        }
        Node::CallBuiltin(b, mut args, span) => match Step::of(b) {
            Some(step) if args.len() == step.lead() + 1 => {
                let Some(inner) = args.pop() else { return Err(Node::CallBuiltin(b, args, span)) };
                let mut steps = vec![(step, b, span)];
                let mut nodes = args;
                let source = match peel(inner) {
                    Ok((more_steps, more_nodes, source)) => {
                        steps.extend(more_steps);
                        nodes.extend(more_nodes);
                        source
                    }
                    Err(inner) => source_of(inner, &mut nodes),
                };
                Ok((steps, nodes, source))
            }
            _ => Err(Node::CallBuiltin(b, args, span)),
        },
        Node::Pipeline(p) if p.sink == Sink::Collect => Ok((p.steps, p.nodes, p.source)),
        other => Err(other),
    }
}

/// The node for a call of builtin `b` with analyzed `args`: a [`Pipeline`] when the call
/// consumes (or is) a chain of steps, else a plain builtin call.
pub(crate) fn call_node(b: &'static Builtin, mut args: Vec<Node>, span: Span) -> Node {
    let sink = match (Step::of(b), Sink::of(b, args.len())) {
        // a step over another step: fused, collecting what comes out of the outer one
        (Some(step), _) if args.len() == step.lead() + 1 => Sink::Collect,
        (None, Some(sink)) => sink,
        _ => return Node::CallBuiltin(b, args, span),
    };
    let Some(coll) = args.pop() else { return Node::CallBuiltin(b, args, span) };
    let (steps, inner_nodes, source) = match peel(coll) {
        Ok(chain) => chain,
        // a consumer straight over a range, split, vals or keys takes their items one at a time
        Err(coll)
            if sink != Sink::Collect
                && matches!(&coll, Node::CallBuiltin(s, a, _) if source_kind(s, a.len()).is_some()) =>
        {
            let mut nodes = Vec::new();
            let source = source_of(coll, &mut nodes);
            (Vec::new(), nodes, source)
        }
        Err(coll) => {
            args.push(coll);
            return Node::CallBuiltin(b, args, span);
        }
    };
    let mut steps = steps;
    let mut nodes = args;
    if sink == Sink::Collect {
        // the outer step's own argument comes before the inner chain's (`nodes` holds it)
        if let Some(step) = Step::of(b) {
            steps.insert(0, (step, b, span));
        }
    }
    nodes.extend(inner_nodes);
    Node::Pipeline(Box::new(Pipeline { sink_builtin: b, sink, sink_span: span, steps, nodes, source }))
}

/// Evaluates a fused chain.
pub(crate) fn eval(interp: &mut Interp, p: &Pipeline) -> EvalResult {
    let mut vals: Vec<Value> = Vec::with_capacity(p.nodes.len());
    // the collections of a `map` over several are the last nodes, each its own source
    let zip_colls = match p.source {
        Source::Zip(_, _, argc) => argc.saturating_sub(1).min(p.nodes.len()),
        _ => 0,
    };
    let (plain, colls) = p.nodes.split_at(p.nodes.len() - zip_colls);
    for n in plain {
        vals.push(interp.eval(n)?);
    }
    let mut zipped: Vec<ZipColl> = Vec::with_capacity(colls.len());
    for n in colls {
        zipped.push(zip_coll(interp, p, n)?);
    }
    // one tick per call, as the nested builtin calls charge
    // (a collecting chain's consumer is its outermost step, already among the steps)
    let zip_call = matches!(p.source, Source::Zip(..)) as u64;
    let sink_call = (p.sink != Sink::Collect) as u64;
    interp.tick(sink_call + p.steps.len() as u64 + zip_call)?;
    // the source's arguments (or value) are the last nodes
    let items = match p.source {
        Source::Value => Items::Value(vals.pop().unwrap_or(Value::Nil)),
        Source::Range(b, span, argc) => {
            let mut args = vals.split_off(vals.len().saturating_sub(argc));
            match range_source(interp, p, b, span, &mut args)? {
                Ok(ints) => Items::Ints(ints),
                Err(value) => Items::Value(value),
            }
        }
        Source::Split(span, argc) => Items::Split(vals.split_off(vals.len().saturating_sub(argc)), span),
        Source::MapView(b, span, keys) => match vals.pop().unwrap_or(Value::Nil) {
            Value::Map(m) => Items::View { keys, map: m },
            // nil and the errors of anything else are the builtin's
            other => Items::Value(b.call(interp, &mut [other]).map_err(|e| with_span(e, span))?),
        },
        Source::Zip(b, span, _) => {
            let f = vals.pop().unwrap_or(Value::Nil);
            if zipped.iter().any(|c| matches!(c, ZipColl::Value(v) if crate::lazy::as_lazy(v).is_some())) {
                // a lazy collection among them: the builtin's own lazy `map`
                let mut args = vec![f];
                args.extend(zipped.drain(..).map(ZipColl::into_value));
                Items::Value(b.call(interp, &mut args).map_err(|e| with_span(e, span))?)
            } else {
                Items::Zip(f, span)
            }
        }
    };
    let k = p.sink_args().min(vals.len());
    let (sink_vals, fns) = vals.split_at_mut(k);
    let items = match items {
        Items::Value(v) if crate::lazy::as_lazy(&v).is_some() => return unfused(interp, p, sink_vals, fns, v),
        other => other,
    };
    let sink = Acc::new(p, sink_vals);
    let mut chain = Run::new(p, fns)?;
    match items {
        // `(count (range n))`: the fuel of counting the numbers out, without making them
        Items::Ints(IntRange { left: n, .. }) if p.steps.is_empty() && p.sink == Sink::Count => {
            interp.tick(n)?;
            Ok(Value::Int(i64::try_from(n).unwrap_or(i64::MAX)))
        }
        Items::Ints(ints) => drive(interp, p, &mut chain, sink, ints, true),
        // `(count (keys m))`: the walk would only count (no fuel, no memory per item)
        Items::View { map, .. } if p.steps.is_empty() && p.sink == Sink::Count => {
            Ok(Value::Int(i64::try_from(map.len()).unwrap_or(i64::MAX)))
        }
        Items::Split(args, span) => {
            let parts = builtins::split_parts(&mut BuiltinContext::new(interp, "split"), &args)
                .map_err(|e| with_span(e, span))?;
            drive(interp, p, &mut chain, sink, parts.into_iter().map(Value::str), false)
        }
        Items::View { keys: true, map } => drive_ref(interp, p, &mut chain, sink, map.keys()),
        Items::View { keys: false, map } => drive_ref(interp, p, &mut chain, sink, map.values()),
        Items::Zip(f, span) => drive_zip(interp, p, &mut chain, sink, f, &zipped, span),
        // items of a vector are read in place: only what a step keeps is cloned
        Items::Value(Value::Vector(v) | Value::List(v)) => drive_ref(interp, p, &mut chain, sink, v.iter()),
        Items::Value(source) => {
            // a source that is not a collection fails as the innermost call would
            let (name, span) = p.steps.last().map_or((p.sink_builtin.name, p.sink_span), |s| (s.1.name, s.2));
            let items = builtins::seq_iter(name, &source).map_err(|e| with_span(e, span))?;
            drive(interp, p, &mut chain, sink, items, false)
        }
    }
}

/// A chain's source, evaluated.
enum Items {
    /// Any value (a collection, nil, or what a source call fell back to).
    Value(Value),
    /// An all-integer finite range, counted out.
    Ints(IntRange),
    /// The arguments of a `split` call.
    Split(Vec<Value>, Span),
    /// A map whose keys or values are the items.
    View { keys: bool, map: std::sync::Arc<crate::value::PMap> },
    /// The function of a `map` over several (finite) collections, and its call's span.
    Zip(Value, Span),
}

/// The numbers of an all-integer finite range, made one at a time.
#[derive(Clone)]
struct IntRange {
    x: i128,
    left: u64,
    step: i64,
}

impl Iterator for IntRange {
    type Item = Value;

    #[inline]
    fn next(&mut self) -> Option<Value> {
        if self.left == 0 {
            return None;
        }
        let item = Value::Int(self.x as i64);
        self.x += self.step as i128;
        self.left -= 1;
        Some(item)
    }
}

/// An all-integer `range` call (its evaluated `args`) as a chain's source: its numbers
/// counted out (`Ok`), or the value the builtin makes (`Err`: a range of other numbers, or
/// one too long to hold under a chain that keeps what it gets and may end before its
/// source, which reads the lazy range the builtin makes). Counted out, it is charged as
/// `range` itself is: a range that fits in the heap left is held (and charged), a longer
/// one makes one number at a time and keeps none, so `(reduce + (range 3000000))` is not a
/// memory error. A consumer that keeps what it gets (a vector, `into`, `frequencies`) has
/// the range charged first.
fn range_source(
    interp: &mut Interp,
    p: &Pipeline,
    b: &'static Builtin,
    span: Span,
    args: &mut [Value],
) -> EvalResult<Result<IntRange, Value>> {
    let Some((start, n, step)) = int_range(args) else {
        return b.call(interp, args).map(Err).map_err(|e| with_span(e, span));
    };
    let fits = cost::items(n) <= interp.heap_left();
    let keeps = !p.sink.keeps_nothing();
    if !fits && keeps && p.steps.iter().any(|(k, _, _)| k.may_end()) {
        return b.call(interp, args).map(Err).map_err(|e| with_span(e, span));
    }
    if keeps || fits {
        interp.charge(cost::items(n)).map_err(|e| with_span(e, span))?;
    }
    Ok(Ok(IntRange { x: start as i128, left: n, step }))
}

/// A collection of a `map` over several, evaluated.
enum ZipColl {
    /// An all-integer finite range, counted out.
    Ints(IntRange),
    /// Any other value.
    Value(Value),
}

impl ZipColl {
    /// The collection as a value for the builtin `map` (a range as a lazy range of the same
    /// numbers: it is read once, and may be too long to hold).
    fn into_value(self) -> Value {
        match self {
            ZipColl::Value(v) => v,
            ZipColl::Ints(IntRange { x, left, step }) => {
                // one past the last number, kept within i64 (no number is skipped or added)
                let end = x + i128::from(left) * i128::from(step);
                let end = end.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
                crate::lazy::range_to(x as i64, end, step)
            }
        }
    }
}

/// Evaluates one collection of a `map` over several: an all-integer `range` call is a
/// [`range_source`] as the single source of a chain is, anything else is its value.
fn zip_coll(interp: &mut Interp, p: &Pipeline, node: &Node) -> EvalResult<ZipColl> {
    if let Node::CallBuiltin(b, args, span) = node
        && source_kind(b, args.len()) == Some(SourceKind::Range)
    {
        let mut vals = Vec::with_capacity(args.len());
        for a in args {
            vals.push(interp.eval(a)?);
        }
        interp.tick(1)?;
        return Ok(match range_source(interp, p, b, *span, &mut vals)? {
            Ok(ints) => ZipColl::Ints(ints),
            Err(value) => ZipColl::Value(value),
        });
    }
    Ok(ZipColl::Value(interp.eval(node)?))
}

/// The items of one collection of a `map` over several.
enum ZipIter<'a> {
    Ints(IntRange),
    Seq(builtins::SeqIter<'a>),
}

/// The steps of a chain, innermost first, as the shared step definitions
/// (`crate::steps`) with the span of each call.
struct Run {
    steps: Vec<steps::Step>,
    spans: Vec<Span>,
}

/// What pushing an item through a chain came to.
enum Ctl {
    /// Ready for the next item.
    Go,
    /// The consumer is done early: its result.
    Done(Value),
    /// A step has ended the sequence: the consumer finishes with what it has.
    End,
}

impl Run {
    /// The chain of `p`, its steps' arguments (outermost first) taken from `args`.
    fn new(p: &Pipeline, args: &mut [Value]) -> EvalResult<Run> {
        let mut steps = Vec::with_capacity(p.steps.len());
        let mut spans = Vec::with_capacity(p.steps.len());
        for ((kind, b, span), slot) in p.steps.iter().zip(lead_slots(&p.steps)).rev() {
            let arg = slot.and_then(|i| args.get_mut(i)).map(std::mem::take).unwrap_or(Value::Nil);
            steps.push(kind.make(b.name, arg).map_err(|e| with_span(e, *span))?);
            spans.push(*span);
        }
        Ok(Run { steps, spans })
    }

    /// Runs a borrowed item through the chain into the consumer.
    #[inline]
    fn push_ref(&mut self, interp: &mut Interp, p: &Pipeline, item: &Value, sink: &mut Acc) -> Result<Ctl, Flow> {
        let Some(step) = self.steps.first_mut() else { return push_sink(interp, p, item.clone(), sink) };
        interp.tick(1)?;
        let fed = step
            .feed_ref(&mut BuiltinContext::new(interp, step.name()), item)
            .map_err(|e| with_span(e, self.spans[0]))?;
        self.after(interp, p, 0, fed, sink)
    }

    /// Runs `x` through the steps from the `i`-th (innermost first) into the consumer.
    #[inline]
    fn through(
        &mut self,
        interp: &mut Interp,
        p: &Pipeline,
        i: usize,
        mut x: Value,
        sink: &mut Acc,
    ) -> Result<Ctl, Flow> {
        for j in i..self.steps.len() {
            interp.tick(1)?;
            let step = &mut self.steps[j];
            match step
                .feed(&mut BuiltinContext::new(interp, step.name()), x)
                .map_err(|e| with_span(e, self.spans[j]))?
            {
                Fed::One(y) => x = y,
                Fed::Skip => return Ok(Ctl::Go),
                other => return self.after(interp, p, j, other, sink),
            }
        }
        push_sink(interp, p, x, sink)
    }

    /// Hands what the `i`-th step made on to the steps after it.
    fn after(&mut self, interp: &mut Interp, p: &Pipeline, i: usize, fed: Fed, sink: &mut Acc) -> Result<Ctl, Flow> {
        match fed {
            Fed::Skip => Ok(Ctl::Go),
            Fed::One(x) => self.through(interp, p, i + 1, x, sink),
            Fed::Many(xs) => {
                for x in xs {
                    match self.through(interp, p, i + 1, x, sink)? {
                        Ctl::Go => {}
                        stop => return Ok(stop),
                    }
                }
                Ok(Ctl::Go)
            }
            Fed::End => self.flush(interp, p, i + 1, sink),
            Fed::Last(x) => match self.through(interp, p, i + 1, x, sink)? {
                Ctl::Go => self.flush(interp, p, i + 1, sink),
                stop => Ok(stop),
            },
        }
    }

    /// The input of the steps from the `i`-th on has ended: what each still holds goes
    /// through the ones after it, and the consumer finishes.
    fn flush(&mut self, interp: &mut Interp, p: &Pipeline, i: usize, sink: &mut Acc) -> Result<Ctl, Flow> {
        for j in i..self.steps.len() {
            loop {
                let step = &mut self.steps[j];
                let rest = step
                    .finish(&mut BuiltinContext::new(interp, step.name()))
                    .map_err(|e| with_span(e, self.spans[j]))?;
                let Some(x) = rest else { break };
                if let stop @ Ctl::Done(_) = self.through(interp, p, j + 1, x, sink)? {
                    return Ok(stop);
                }
            }
        }
        Ok(Ctl::End)
    }
}

#[inline]
fn push_sink(interp: &mut Interp, p: &Pipeline, x: Value, sink: &mut Acc) -> Result<Ctl, Flow> {
    Ok(match sink.push(interp, p, x)? {
        Some(done) => Ctl::Done(done),
        None => Ctl::Go,
    })
}

/// Pushes borrowed items (a vector's, a map's keys or values) through the steps into the
/// consumer: only what a step keeps is cloned.
fn drive_ref<'a>(
    interp: &mut Interp,
    p: &Pipeline,
    chain: &mut Run,
    mut sink: Acc,
    items: impl Iterator<Item = &'a Value>,
) -> EvalResult {
    for item in items {
        match chain.push_ref(interp, p, item, &mut sink)? {
            Ctl::Go => {}
            Ctl::Done(v) => return Ok(v),
            Ctl::End => return sink.finish(interp, p),
        }
    }
    finish(interp, p, chain, sink)
}

/// Pushes owned items through the steps into the consumer (`tick_each`: the source charges
/// one fuel unit per item, as the eager builtin building it would).
fn drive(
    interp: &mut Interp,
    p: &Pipeline,
    chain: &mut Run,
    mut sink: Acc,
    items: impl Iterator<Item = Value>,
    tick_each: bool,
) -> EvalResult {
    for item in items {
        if tick_each {
            interp.tick(1)?;
        }
        match chain.through(interp, p, 0, item, &mut sink)? {
            Ctl::Go => {}
            Ctl::Done(v) => return Ok(v),
            Ctl::End => return sink.finish(interp, p),
        }
    }
    finish(interp, p, chain, sink)
}

/// Pushes `(f x1 x2 ...)` of the items of `colls` in step
/// through the steps into the consumer, until the shortest collection ends. Fuel and
/// errors are the `map` builtin's: one unit per item, a bad collection named as its
/// argument, a failing call at the `map` call's span.
fn drive_zip(
    interp: &mut Interp,
    p: &Pipeline,
    chain: &mut Run,
    mut sink: Acc,
    f: Value,
    colls: &[ZipColl],
    span: Span,
) -> EvalResult {
    let mut iters = colls
        .iter()
        .map(|c| match c {
            ZipColl::Ints(ints) => Ok(ZipIter::Ints(ints.clone())),
            ZipColl::Value(v) => builtins::seq_iter("map", v).map(ZipIter::Seq),
        })
        .collect::<EvalResult<SmallVec<[ZipIter<'_>; 4]>>>()
        .map_err(|e| with_span(e, span))?;
    loop {
        let mut call: SmallVec<[Value; 4]> = SmallVec::with_capacity(iters.len());
        for it in iters.iter_mut() {
            let next = match it {
                ZipIter::Ints(ints) => {
                    let item = ints.next();
                    if item.is_some() {
                        // the range's own fuel, one unit per number
                        interp.tick(1)?;
                    }
                    item
                }
                ZipIter::Seq(items) => items.next(),
            };
            match next {
                Some(x) => call.push(x),
                None => return finish(interp, p, chain, sink),
            }
        }
        interp.tick(1)?;
        let item = BuiltinContext::new(interp, "map").apply(&f, &mut call).map_err(|e| with_span(e, span))?;
        match chain.through(interp, p, 0, item, &mut sink)? {
            Ctl::Go => {}
            Ctl::Done(v) => return Ok(v),
            Ctl::End => return sink.finish(interp, p),
        }
    }
}

/// The source has ended: the steps give out what they hold, and the consumer finishes.
fn finish(interp: &mut Interp, p: &Pipeline, chain: &mut Run, mut sink: Acc) -> EvalResult {
    match chain.flush(interp, p, 0, &mut sink)? {
        Ctl::Done(v) => Ok(v),
        Ctl::Go | Ctl::End => sink.finish(interp, p),
    }
}

/// `(start, count, step)` of an all-integer `range` call with a non-zero step (what the
/// builtin builds eagerly and a fused chain counts out); `None` for anything else.
pub(crate) fn int_range(args: &[Value]) -> Option<(i64, u64, i64)> {
    let (start, end, step) = match args {
        [Value::Int(e)] => (0, *e, 1),
        [Value::Int(s), Value::Int(e)] => (*s, *e, 1),
        [Value::Int(s), Value::Int(e), Value::Int(st)] if *st != 0 => (*s, *e, *st),
        _ => return None,
    };
    let n = if (step > 0 && end > start) || (step < 0 && end < start) {
        let span = (end as i128 - start as i128).unsigned_abs();
        span.div_ceil(step.unsigned_abs() as u128) as u64
    } else {
        0
    };
    Some((start, n, step))
}

/// The nested calls, one after the other (for sources the streaming path does not cover).
fn unfused(interp: &mut Interp, p: &Pipeline, sink_vals: &mut [Value], fns: &mut [Value], source: Value) -> EvalResult {
    let mut coll = source;
    for ((_, b, span), slot) in p.steps.iter().zip(lead_slots(&p.steps)).rev() {
        let mut args: SmallVec<[Value; 2]> = SmallVec::new();
        if let Some(f) = slot.and_then(|i| fns.get_mut(i)) {
            args.push(std::mem::take(f));
        }
        args.push(coll);
        coll = b.call(interp, &mut args).map_err(|e| with_span(e, *span))?;
    }
    if p.sink == Sink::Collect {
        return Ok(coll);
    }
    let mut args: Vec<Value> = sink_vals.iter_mut().map(std::mem::take).collect();
    args.push(coll);
    p.sink_builtin.call(interp, &mut args).map_err(|e| with_span(e, p.sink_span))
}

/// A consumer's state.
enum Acc {
    /// `vec` (or the outermost step): the items so far; `charge` as for `Gather` (the
    /// vector of a bare `range` or `split` source was charged whole, as the builtin's
    /// result is, and `vec` of a vector returns it).
    Collect(PVector, bool),
    Reduce {
        f: Value,
        acc: Option<Value>,
        plus: bool,
    },
    Frequencies(HashMap<Value, i64, FastHash>),
    Count(i64),
    Sum(Value),
    Into(Value),
    First,
    Last(Value),
    Some {
        pred: Value,
        negate: bool,
    },
    Every {
        pred: Value,
        negate: bool,
    },
    /// `apply` or `sort`: the items are gathered, then handed over whole. `charge`: each
    /// item is charged as it is kept (not when a range or split source without steps was
    /// charged whole already, as the builtin would have been).
    Gather {
        then: Then,
        lead: Option<Value>,
        items: Vec<Value>,
        charge: bool,
    },
    /// `set`: the members so far (the first of equal items stays); `charge` as for
    /// `Gather`.
    Set {
        members: Box<SetBuilder>,
        charge: bool,
    },
}

/// What a gathering consumer does with its items.
#[derive(Clone, Copy)]
enum Then {
    /// `(apply f items)`.
    Apply,
    /// `(sort items)` / `(sort comparator items)`.
    Sort,
}

impl Acc {
    fn new(p: &Pipeline, args: &mut [Value]) -> Acc {
        let sink = p.sink;
        let mut args = args.iter_mut().map(std::mem::take);
        match sink {
            Sink::Collect | Sink::Vec => Acc::Collect(PVector::new(), gathered_charge(p)),
            Sink::Reduce { init } => {
                let f = args.next().unwrap_or(Value::Nil);
                let acc = if init { Some(args.next().unwrap_or(Value::Nil)) } else { None };
                let plus = matches!(&f, Value::Func(func)
                    if matches!(func.repr(), crate::function::FnRepr::Builtin(b) if b.arith == Some(crate::node::ArithOp::Add)));
                Acc::Reduce { f, acc, plus }
            }
            Sink::Frequencies => Acc::Frequencies(HashMap::default()),
            Sink::Count => Acc::Count(0),
            Sink::Sum => Acc::Sum(Value::Int(0)),
            Sink::Into => Acc::Into(match args.next() {
                // conj onto nil builds a list, as (into nil coll) does unfused
                Some(Value::Nil) | None => Value::empty_list(),
                Some(to) => to,
            }),
            Sink::First => Acc::First,
            Sink::Last => Acc::Last(Value::Nil),
            Sink::Some { negate } => Acc::Some { pred: args.next().unwrap_or(Value::Nil), negate },
            Sink::Every { negate } => Acc::Every { pred: args.next().unwrap_or(Value::Nil), negate },
            Sink::Apply | Sink::Sort { .. } => Acc::Gather {
                then: if sink == Sink::Apply { Then::Apply } else { Then::Sort },
                lead: args.next(),
                items: Vec::new(),
                charge: gathered_charge(p),
            },
            Sink::Set => Acc::Set { members: Box::new(SetBuilder::new(PSet::new())), charge: gathered_charge(p) },
        }
    }

    #[inline]
    fn push(&mut self, interp: &mut Interp, p: &Pipeline, x: Value) -> Result<Option<Value>, Flow> {
        let span = p.sink_span;
        match self {
            // charged as each item is kept: a step that makes several items of one
            // (`mapcat`) cannot build past the limit before the end is charged
            Acc::Collect(v, charge) => {
                if *charge {
                    interp.charge(cost::ELEM).map_err(|e| with_span(e, span))?;
                }
                v.push_back(x)
            }
            Acc::Reduce { f, acc, plus } => match acc.take() {
                None => *acc = Some(x),
                Some(a) => {
                    interp.tick(1)?;
                    let next = if *plus {
                        builtins::add2(&a, &x).map_err(|e| with_span(e, span))?
                    } else {
                        interp.apply(f, &mut [a, x]).map_err(|e| with_span(e, span))?
                    };
                    if let Some(v) = builtins::reduced_value(&next) {
                        return Ok(Some(v.clone()));
                    }
                    *acc = Some(next);
                }
            },
            Acc::Frequencies(counts) => {
                interp.tick(1)?;
                match counts.get_mut(&x) {
                    Some(n) => *n += 1,
                    None => {
                        interp.charge(cost::ENTRY).map_err(|e| with_span(e, span))?;
                        counts.insert(x, 1);
                    }
                }
            }
            Acc::Count(n) => *n += 1,
            Acc::Sum(total) => {
                interp.tick(1)?;
                if !x.is_nil() {
                    *total = builtins::add2(total, &x).map_err(|e| with_span(e, span))?;
                }
            }
            Acc::Into(to) => {
                interp.tick(1)?;
                let coll = std::mem::take(to);
                *to = builtins::conj1(&mut BuiltinContext::new(interp, "conj"), coll, x)
                    .map_err(|e| with_span(e, span))?;
            }
            Acc::First => return Ok(Some(x)),
            Acc::Last(last) => *last = x,
            // one fuel unit per item tested, as the builtins charge
            Acc::Some { pred, negate } => {
                interp.tick(1)?;
                let r = interp.apply(pred, &mut [x]).map_err(|e| with_span(e, span))?;
                if r.truthy() {
                    return Ok(Some(if *negate { Value::Bool(false) } else { r }));
                }
            }
            Acc::Every { pred, negate } => {
                interp.tick(1)?;
                if !interp.apply(pred, &mut [x]).map_err(|e| with_span(e, span))?.truthy() {
                    return Ok(Some(Value::Bool(*negate)));
                }
            }
            // the arguments are held until the call, charged as `apply` charges them
            Acc::Gather { items, charge, .. } => {
                if *charge {
                    interp.charge(cost::ELEM).map_err(|e| with_span(e, span))?;
                }
                items.push(x);
            }
            // each item charged as the vector the unfused `set` reads would be; a
            // repeated item is dropped at once (`insert` keeps the member it has)
            Acc::Set { members, charge } => {
                if *charge {
                    interp.charge(cost::ELEM).map_err(|e| with_span(e, span))?;
                }
                members.push(x);
            }
        }
        Ok(None)
    }

    fn finish(self, interp: &mut Interp, p: &Pipeline) -> EvalResult {
        match self {
            Acc::Collect(v, charge) => {
                if charge {
                    interp.charge(cost::HEADER)?;
                }
                Ok(Value::from_pvec(v))
            }
            Acc::Reduce { f, acc, .. } => match acc {
                Some(a) => Ok(a),
                None => interp.apply(&f, &mut []).map_err(|e| with_span(e, p.sink_span)),
            },
            Acc::Frequencies(counts) => {
                interp.charge(cost::HEADER)?;
                Ok(Value::map(counts.into_iter().map(|(k, n)| (k, Value::Int(n)))))
            }
            Acc::Count(n) => Ok(Value::Int(n)),
            Acc::Sum(total) => Ok(total),
            Acc::Into(to) => Ok(to),
            Acc::First => Ok(Value::Nil),
            Acc::Last(last) => Ok(last),
            Acc::Some { negate, .. } => Ok(if negate { Value::Bool(true) } else { Value::Nil }),
            Acc::Every { negate, .. } => Ok(Value::Bool(!negate)),
            Acc::Gather { then, lead, mut items, charge } => {
                if charge {
                    interp.charge(cost::HEADER).map_err(|e| with_span(e, p.sink_span))?;
                }
                match then {
                    Then::Apply => interp.apply(&lead.unwrap_or(Value::Nil), &mut items),
                    Then::Sort => builtins::sort_items(&mut BuiltinContext::new(interp, "sort"), lead, items),
                }
                .map_err(|e| with_span(e, p.sink_span))
            }
            Acc::Set { members, charge } => {
                if charge {
                    interp.charge(cost::HEADER).map_err(|e| with_span(e, p.sink_span))?;
                }
                let set = members.finish();
                interp.charge(cost::items(set.len() as u64)).map_err(|e| with_span(e, p.sink_span))?;
                Ok(Value::Set(Arc::new(set)))
            }
        }
    }
}

/// Whether a gathering consumer charges each item it keeps: not when its items come
/// straight from a `range` or `split` source, which was charged whole already, as the
/// builtin's argument would have been.
fn gathered_charge(p: &Pipeline) -> bool {
    !(p.steps.is_empty() && matches!(p.source, Source::Range(..) | Source::Split(..)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sink_arities() {
        let b = |name| crate::builtins::lookup(name).expect("a builtin");
        assert_eq!(Sink::of(b("reduce"), 2), Some(Sink::Reduce { init: false }));
        assert_eq!(Sink::of(b("reduce"), 3), Some(Sink::Reduce { init: true }));
        assert_eq!(Sink::of(b("into"), 3), None);
        assert_eq!(Sink::of(b("map"), 2), None);
        assert_eq!(source_kind(b("range"), 0), None);
        assert_eq!(source_kind(b("keys"), 1), Some(SourceKind::Keys));
        let step = |name| crate::builtins::lookup(name).and_then(Step::of);
        assert_eq!(step("mapcat"), Some(Step::Mapcat));
        assert_eq!(step("partition"), None);
        assert_eq!(step("mapv"), Some(Step::Map));
        assert_eq!(step("filterv"), Some(Step::Filter));
    }
}
