//! clojure.core's sequences, seq in and seq out: `map`, `filter`, `take`, `drop`,
//! `concat`, `sort`, `partition`, `distinct`, `interleave`...

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use crate::builtins::context::BuiltinContext;
use crate::builtins::core::comparators::{key_comparator, known_comparator, numeric_comparator};
use crate::builtins::core::transducers::xf_step;
use crate::builtins::{Arity, Builtin, Category, Library, Table, compare_values, expected, int_arg, seq_iter, seq_len};
use crate::error::{ErrorKind, EvalResult, err};
use crate::function::{Function, Held};
use crate::limits::cost;
use crate::steps::{Step, run_into_vector};
use crate::value::{PVector, Value};

use Arity::*;
use Category::Sequence;

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    builtins: &[
        Builtin::new("take", Range(1, 2), Sequence, take).transducer(1, take_xf).lazy().fused(crate::fusion::Step::Take).doc("The first n items.").ex(&[("(take 2 [1 2 3])", "[1 2]")]),
        Builtin::new("drop", Range(1, 2), Sequence, drop).transducer(1, drop_xf).lazy().fused(crate::fusion::Step::Drop).doc("All but the first n items.").ex(&[("(drop 2 [1 2 3])", "[3]")]),
        Builtin::new("take-while", Range(1, 2), Sequence, take_while).transducer(1, take_while_xf).lazy().fused(crate::fusion::Step::TakeWhile)
            .doc("Leading items while (pred item) is truthy.")
            .ex(&[("(take-while pos? [1 2 -1 3])", "[1 2]")]),
        Builtin::new("drop-while", Range(1, 2), Sequence, drop_while).transducer(1, drop_while_xf).lazy().fused(crate::fusion::Step::DropWhile)
            .doc("Items after the leading run where (pred item) is truthy.")
            .ex(&[("(drop-while pos? [1 2 -1 3])", "[-1 3]")]),
        Builtin::new("concat", AtLeast(0), Sequence, concat).spread_lazy(concat_lazy_tail)
            .doc("All items of the collections, in order.")
            .ex(&[("(concat [1 2] [3] nil)", "[1 2 3]")]),
        Builtin::new("reverse", Exact(1), Sequence, reverse)
            .doc("Items in reverse order.")
            .ex(&[("(reverse [1 2 3])", "[3 2 1]")]),
        Builtin::new("replace", Range(2, 3), Sequence, replace).lazy()
            .doc("(replace smap coll): each item that is a key of smap (a map, or a vector by index) becomes its value. (replace s match replacement) is str/replace (PTC extension).")
            .ex(&[("(replace {:a 1} [:a :b])", "[1 :b]"), ("(replace [:x :y] [0 1 5])", "[:x :y 5]")]),
        Builtin::new("sort", Range(1, 2), Sequence, sort)
            .sink(crate::fusion::Consumer::Sort)
            .doc("Sorted items (numbers, strings, keywords or symbols; optional comparator fn, :asc or :desc).")
            .ex(&[("(sort [3 1 2])", "[1 2 3]"), ("(sort > [3 1 2])", "[3 2 1]")]),
        Builtin::new("sort-by", Range(2, 3), Sequence, sort_by)
            .doc("Items sorted by (keyfn item); optional comparator, :asc or :desc. Stable.")
            .ex(&[
                ("(sort-by :age [{:age 3} {:age 1}])", "[{:age 1} {:age 3}]"),
                ("(sort-by count > [\"a\" \"abc\"])", "[\"abc\" \"a\"]"),
            ]),
        Builtin::new("distinct", Range(0, 1), Sequence, distinct).transducer(0, distinct_xf).lazy().fused(crate::fusion::Step::Distinct)
            .doc("Items without repeats, first occurrence kept.")
            .ex(&[("(distinct [1 2 1 3])", "[1 2 3]")]),
        Builtin::new("partition", Range(2, 4), Sequence, partition).lazy()
            .doc("Groups of n items (step optional); an incomplete last group is dropped, or filled from a pad collection: (partition n step pad coll).")
            .ex(&[("(partition 2 [1 2 3 4 5])", "[[1 2] [3 4]]"), ("(partition 2 2 [0] [1 2 3])", "[[1 2] [3 0]]")]),
        Builtin::new("partition-all", Range(1, 3), Sequence, partition_all).transducer(1, partition_all_xf).lazy()
            .doc("Groups of n items; the last group may be shorter.")
            .ex(&[("(partition-all 2 [1 2 3])", "[[1 2] [3]]")]),
        Builtin::new("butlast", Exact(1), Sequence, butlast)
            .doc("All but the last item, or nil.")
            .ex(&[("(butlast [1 2 3])", "[1 2]")]),
        Builtin::new("drop-last", Range(1, 2), Sequence, drop_last).lazy()
            .doc("All but the last n (1) items.")
            .ex(&[("(drop-last 2 [1 2 3])", "[1]")]),
        Builtin::new("take-last", Exact(2), Sequence, take_last)
            .doc("The last n items, or nil.")
            .ex(&[("(take-last 2 [1 2 3])", "[2 3]")]),
        Builtin::new("cons", Exact(2), Sequence, cons).lazy()
            .doc("A list with x in front of the items.")
            .ex(&[("(cons 0 [1 2])", "(0 1 2)")]),
        Builtin::new("list*", AtLeast(1), Sequence, list_star)
            .doc("A list of the leading arguments followed by the items of the last one.")
            .ex(&[("(list* 1 2 [3 4])", "(1 2 3 4)")]),
        Builtin::new("split-at", Exact(2), Sequence, split_at).lazy()
            .doc("[(take n coll) (drop n coll)].")
            .ex(&[("(split-at 1 [1 2 3])", "[[1] [2 3]]")]),
        Builtin::new("split-with", Exact(2), Sequence, split_with).lazy()
            .doc("[(take-while pred coll) (drop-while pred coll)].")
            .ex(&[("(split-with odd? [1 3 4 5])", "[[1 3] [4 5]]")]),
        Builtin::new("interleave", AtLeast(0), Sequence, interleave).lazy()
            .doc("First items of each collection, then second items..., stopping at the shortest.")
            .ex(&[("(interleave [1 2] [:a :b])", "[1 :a 2 :b]")]),
        Builtin::new("interpose", Exact(2), Sequence, interpose).lazy()
            .doc("Items with sep between them.")
            .ex(&[("(interpose 0 [1 2 3])", "[1 0 2 0 3]")]),
        Builtin::new("flatten", Exact(1), Sequence, flatten).lazy()
            .doc("Items of nested vectors and lists in one flat vector (maps, sets, strings are kept whole); lazy over an infinite sequence.")
            .ex(&[("(flatten [1 [2 [3]]])", "[1 2 3]")]),
        Builtin::new("dedupe", Range(0, 1), Sequence, dedupe).transducer(0, dedupe_xf).lazy()
            .doc("Items without consecutive repeats.")
            .ex(&[("(dedupe [1 1 2 1])", "[1 2 1]")]),
        Builtin::new("distinct-by", Exact(2), Sequence, distinct_by)
            .ext()
            .doc("Items whose (f item) was not seen before.")
            .ex(&[("(distinct-by :id [{:id 1 :v 1} {:id 1 :v 2}])", "[{:id 1 :v 1}]")]),
        Builtin::new("partition-by", Exact(2), Sequence, partition_by).lazy()
            .doc("Splits into runs with the same (f item).")
            .ex(&[("(partition-by odd? [1 3 2 4 5])", "[[1 3] [2 4] [5]]")]),
        Builtin::new("zip", AtLeast(1), Sequence, zip)
            .ext()
            .doc("Vectors of the i-th items of each collection.")
            .ex(&[("(zip [1 2] [:a :b])", "[[1 :a] [2 :b]]")]),
        Builtin::new("combinations", Exact(2), Sequence, combinations)
            .ext()
            .doc("All n-item combinations, in order.")
            .ex(&[("(combinations [1 2 3] 2)", "[[1 2] [1 3] [2 3]]")]),
        Builtin::new("reductions", Range(2, 3), Sequence, reductions).lazy()
            .doc("The intermediate results of a reduce, as a vector.")
            .ex(&[("(reductions + [1 2 3])", "[1 3 6]"), ("(reductions + 10 [1 2])", "[10 11 13]")]),
        Builtin::new("take-nth", Exact(2), Sequence, take_nth).lazy()
            .doc("Every nth item, starting with the first.")
            .ex(&[("(take-nth 2 [1 2 3 4 5])", "[1 3 5]")]),
        Builtin::new("rseq", Exact(1), Sequence, rseq)
            .doc("Items of a vector in reverse order, or nil when empty.")
            .ex(&[("(rseq [1 2 3])", "[3 2 1]")]),
        Builtin::new("seq", Exact(1), Sequence, seq).lazy().doc("The items as a vector, or nil when empty.").ex(&[("(seq [])", "nil"), ("(seq {:a 1})", "[[:a 1]]")]),
    ],
};

fn replace(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if a.len() == 3 {
        return crate::builtins::string::replace(cx, a);
    }
    if let Some(l) = crate::lazy::as_lazy(&a[1]) {
        // over an infinite sequence: a lazy map of the lookup
        let l = l.clone();
        let smap = std::mem::take(&mut a[0]);
        let f = Function::native("replace", Held::values(vec![smap]), |_, held, call| {
            let x = std::mem::take(&mut call[0]);
            Ok(match (held.first(), &x) {
                (Some(Value::Map(m)), k) => m.get(k).cloned().unwrap_or(x),
                (Some(Value::Vector(v)), Value::Int(i)) if *i >= 0 => v.get(*i as usize).cloned().unwrap_or(x),
                _ => x,
            })
        });
        return crate::lazy::map(f, vec![l]);
    }
    let smap = std::mem::take(&mut a[0]);
    if !matches!(smap, Value::Map(_) | Value::Vector(_) | Value::Nil) {
        return expected("replace", "a map or vector of replacements", &smap);
    }
    let lookup = |x: &Value| -> Option<Value> {
        match (&smap, x) {
            (Value::Map(m), k) => m.get(k).cloned(),
            (Value::Vector(v), Value::Int(i)) if *i >= 0 => v.get(*i as usize).cloned(),
            _ => None,
        }
    };
    let mut out = PVector::new();
    for x in seq_iter("replace", &a[1])? {
        cx.tick(1)?;
        out.push_back(lookup(&x).unwrap_or(x));
    }
    vec_out(cx, out)
}

pub(crate) fn items(cx: &mut BuiltinContext, fname: &str, v: &Value) -> EvalResult<Vec<Value>> {
    crate::builtins::collect_items(cx, fname, v)
}

pub(crate) fn vec_out(cx: &mut BuiltinContext, items: impl IntoIterator<Item = Value>) -> EvalResult {
    let v: PVector = items.into_iter().collect();
    cx.charge(cost::items(v.len() as u64))?;
    Ok(Value::from_pvec(v))
}

/// A count argument (`take`, `drop`): an integer, negative ones as 0.
pub(crate) fn count_arg(fname: &str, v: &Value) -> EvalResult<usize> {
    Ok(int_arg(fname, v)?.max(0) as usize)
}

/// `(take n)`: the transducer form.
fn take_xf(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(xf_step(Step::Take { left: count_arg("take", &a[0])? }))
}

/// `(f coll)` of a one-collection step: lazy over a lazy sequence (what a consumer does
/// not pull is never made), else the step run over the collection into a vector.
fn eager_or_lazy(cx: &mut BuiltinContext, step: Step, coll: &Value) -> EvalResult {
    match crate::lazy::as_lazy(coll) {
        Some(l) => crate::lazy::stepped(step, l),
        None => run_into_vector(cx, step, coll),
    }
}

pub(crate) fn take(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = count_arg("take", &a[0])?;
    if n == 0 && crate::lazy::as_lazy(&a[1]).is_some() {
        return Ok(Value::vector([]));
    }
    eager_or_lazy(cx, Step::Take { left: n }, &a[1])
}

/// `(drop n)`: the transducer form.
fn drop_xf(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(xf_step(Step::Drop { left: count_arg("drop", &a[0])? }))
}

pub(crate) fn drop(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = count_arg("drop", &a[0])?;
    match &a[1] {
        // the rest of a vector or list shares its items (a `loop` that drops one item a
        // turn would otherwise copy what is left at every turn)
        Value::Vector(v) | Value::List(v) => {
            cx.charge(cost::HEADER)?;
            Ok(Value::from_pvec(v.skip(n)))
        }
        coll => match crate::lazy::as_lazy(coll) {
            Some(l) => crate::lazy::drop(n, l),
            None => run_into_vector(cx, Step::Drop { left: n }, coll),
        },
    }
}

/// `(take-while pred)`: the transducer form.
fn take_while_xf(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(xf_step(Step::TakeWhile(std::mem::take(&mut a[0]))))
}

fn take_while(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    eager_or_lazy(cx, Step::TakeWhile(std::mem::take(&mut a[0])), &a[1])
}

/// `(drop-while pred)`: the transducer form.
fn drop_while_xf(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(xf_step(Step::drop_while(std::mem::take(&mut a[0]))))
}

fn drop_while(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    eager_or_lazy(cx, Step::drop_while(std::mem::take(&mut a[0])), &a[1])
}

/// `(apply concat x ... s)` with a lazy `s`: the leading collections, then the items of
/// each collection `s` yields, lazily.
fn concat_lazy_tail(cx: &mut BuiltinContext, lead: Vec<Value>, tail: &Arc<crate::lazy::LazySeq>) -> EvalResult {
    let tail = crate::lazy::cat(tail)?;
    let mut args: Vec<Value> = lead;
    args.push(tail);
    concat(cx, &mut args)
}

pub(crate) fn concat(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    // a finite lazy sequence before the last argument is realised: what follows it must
    // still come after it
    let n = a.len();
    for c in a.iter_mut().take(n.saturating_sub(1)) {
        if crate::lazy::is_finite_lazy(c) {
            *c = crate::lazy::realized(cx, "concat", std::mem::take(c))?;
        }
    }
    if let Some(k) = a.iter().position(|c| crate::lazy::as_lazy(c).is_some()) {
        let mut prefix = PVector::new();
        for c in &a[..k] {
            let n = seq_len(c).unwrap_or(0) as u64;
            cx.charge(cost::ELEM.saturating_mul(n).saturating_add(crate::builtins::materialized_cost(c)))?;
            prefix.extend(seq_iter("concat", c)?);
        }
        cx.charge(cost::HEADER)?;
        if let Some(l) = crate::lazy::as_lazy(&a[k]) {
            return crate::lazy::concat(prefix, l);
        }
    }
    // a first vector or list is shared, not copied: a vector grown a turn at a time by
    // (concat acc [x]) was copied whole (and charged) at every turn. The total of the
    // rest is charged before anything is copied: (apply concat (repeat 1000 v))
    let shares_first = matches!(a.first(), Some(Value::Vector(_) | Value::List(_)));
    let mut total = cost::HEADER;
    for (i, c) in a.iter().enumerate() {
        seq_iter("concat", c)?;
        if i == 0 && shares_first {
            continue;
        }
        let n = seq_len(c).unwrap_or(0) as u64;
        total =
            total.saturating_add(cost::ELEM.saturating_mul(n)).saturating_add(crate::builtins::materialized_cost(c));
    }
    cx.charge(total)?;
    let mut out = PVector::new();
    for (i, c) in a.iter().enumerate() {
        match c {
            Value::Vector(v) | Value::List(v) if i == 0 => out = (**v).clone(),
            Value::Vector(v) | Value::List(v) => out.append((**v).clone()),
            other => out.extend(seq_iter("concat", other)?),
        }
    }
    Ok(Value::from_pvec(out))
}

pub(crate) fn reverse(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let mut v = items(cx, "reverse", &a[0])?;
    v.reverse();
    vec_out(cx, v)
}

/// How `sort`/`sort-by` order two keys.
enum Order {
    Asc,
    Desc,
    /// What the `compare` builtin answers, with the arguments swapped when true
    /// (`#(compare %1 %2)`, `#(compare %2 %1)`): no call per comparison.
    Compare(bool),
    Fn(Value),
}

fn order_arg(v: Value) -> Order {
    match &v {
        Value::Keyword(k) if &**k == "desc" => Order::Desc,
        Value::Keyword(k) if &**k == "asc" => Order::Asc,
        _ => match known_comparator(&v) {
            Some(flipped) => Order::Compare(flipped),
            None => Order::Fn(v),
        },
    }
}

/// Keys must be mutually comparable (all numbers, all strings, all keywords...): mixing
/// kinds is a program error, as in Clojure.
fn check_sortable(fname: &str, keys: &[Value]) -> EvalResult<()> {
    fn kind(v: &Value) -> u8 {
        match v {
            Value::Nil => 0,
            Value::Int(_) | Value::Float(_) => 1,
            Value::Str(_) => 2,
            Value::Keyword(_) => 3,
            Value::Bool(_) => 4,
            Value::Vector(_) | Value::List(_) => 5,
            Value::Symbol(_) => 7,
            _ => 6,
        }
    }
    let mut seen = None;
    for k in keys {
        let kd = kind(k);
        if kd == 0 {
            continue;
        }
        if kd == 6 {
            return expected(fname, "sortable keys (numbers, strings, keywords, symbols, booleans or vectors)", k);
        }
        match seen {
            None => seen = Some((kd, k.clone())),
            Some((s, ref first)) if s != kd => {
                return err(
                    ErrorKind::TypeError,
                    format!(
                        "{fname}: cannot compare {} with {} ({} vs {}); make the keys one type, e.g. (sort-by (comp str :k) ...)",
                        first.type_name(),
                        k.type_name(),
                        crate::builtins::brief(first),
                        crate::builtins::brief(k)
                    ),
                );
            }
            _ => {}
        }
    }
    Ok(())
}

/// Stable merge sort that tolerates any comparator answers (a user fn may be inconsistent).
fn sort_pairs(
    cx: &mut BuiltinContext,
    mut pairs: Vec<(Value, Value)>,
    order: &Order,
) -> EvalResult<Vec<(Value, Value)>> {
    match order {
        Order::Asc | Order::Desc => {
            let desc = matches!(order, Order::Desc);
            cx.tick(pairs.len() as u64)?;
            if let Some(order) = name_order(&pairs, |(k, _)| k, desc) {
                return Ok(in_order(pairs, order));
            }
            pairs.sort_by(|(a, _), (b, _)| {
                let o = compare_values(a, b).ok().flatten().unwrap_or_else(|| a.cmp(b));
                if desc { o.reverse() } else { o }
            });
            Ok(pairs)
        }
        // `#(compare %2 %1)` and friends: the builtin, without a closure call each time
        &Order::Compare(flipped) => merge_sort_moving(
            cx,
            pairs,
            |_, (a, _), (b, _)| {
                // what the `compare` builtin answers for (f b a), read in place
                let (x, y) = if flipped { (a, b) } else { (b, a) };
                Ok(crate::builtins::core::numbers::clojure_compare(x, y)? < 0)
            },
            warm_key,
        ),
        // the keys are lent to the comparator: a closure that only reads its
        // arguments gets them without a reference count changing on each call
        Order::Fn(f) => merge_sort_moving(
            cx,
            pairs,
            |cx, (a, _), (b, _)| Ok(b_goes_first(&cx.apply_lent(f, &mut [b, a])?)),
            warm_key,
        ),
    }
}

/// [`Value::warm`] of a sort key, or with `header_only` [`Value::warm_header`].
fn warm_key((k, _): &(Value, Value), header_only: bool) {
    if header_only { k.warm_header() } else { k.warm() }
}

/// How a comparator's answer for `(f b a)` orders `b` (from the right run) against `a`:
/// true or a negative number puts `b` first.
fn b_goes_first(res: &Value) -> bool {
    match res {
        Value::Bool(x) => *x,
        Value::Int(i) => *i < 0,
        Value::Float(x) => *x < 0.0,
        Value::Nil => false,
        _ => true,
    }
}

/// Stable bottom-up merge sort of `items` that tolerates any comparator answers (a user
/// function may be inconsistent): n log n calls of `b_first(a, b)`, which says whether `b`,
/// from the right run, goes before `a`. It makes the merges of [`merge_sort_idx`], in a
/// cache-friendly order: the items themselves move from run to run (each pass reads them
/// in order, where indices read them scattered), and each block of [`SORT_BLOCK`] items
/// goes through all its passes before the next block starts, so a comparator reading
/// records (maps of 100k orders) finds them in cache for all but the last few passes.
fn merge_sort_moving<T: Default>(
    cx: &mut BuiltinContext,
    mut items: Vec<T>,
    mut b_first: impl FnMut(&mut BuiltinContext, &mut T, &mut T) -> EvalResult<bool>,
    warm: fn(&T, bool),
) -> EvalResult<Vec<T>> {
    let n = items.len();
    let mut buf: Vec<T> = Vec::with_capacity(n);
    buf.resize_with(n, T::default);
    // the passes of runs shorter than a block, block by block
    let mut passes = 0;
    let mut width = 1;
    while width < SORT_BLOCK.min(n) {
        passes += 1;
        width *= 2;
    }
    let mut lo = 0;
    while lo < n {
        let hi = (lo + SORT_BLOCK).min(n);
        let (a, b) = (&mut items[lo..hi], &mut buf[lo..hi]);
        for p in 0..passes {
            let (src, dst) = if p % 2 == 0 { (&mut *a, &mut *b) } else { (&mut *b, &mut *a) };
            merge_pass(cx, src, dst, 1 << p, &mut b_first, warm)?;
        }
        lo = hi;
    }
    if passes % 2 == 1 {
        std::mem::swap(&mut items, &mut buf);
    }
    // then runs of a block and longer, over all items
    while width < n {
        merge_pass(cx, &mut items, &mut buf, width, &mut b_first, warm)?;
        std::mem::swap(&mut items, &mut buf);
        width *= 2;
    }
    Ok(items)
}

/// Items per block of [`merge_sort_moving`]'s first passes: 2048 records of a few hundred
/// bytes fit in a core's L2 cache.
const SORT_BLOCK: usize = 2048;

/// One pass of the merge sort: each pair of neighbouring runs of `width` items in `src`
/// merged into `dst` (whose items must be defaults; `src` is left holding them).
fn merge_pass<T>(
    cx: &mut BuiltinContext,
    src: &mut [T],
    dst: &mut [T],
    width: usize,
    b_first: &mut impl FnMut(&mut BuiltinContext, &mut T, &mut T) -> EvalResult<bool>,
    warm: fn(&T, bool),
) -> EvalResult<()> {
    let n = src.len().min(dst.len());
    let mut start = 0;
    while start < n {
        let mid = (start + width).min(n);
        let end = (start + 2 * width).min(n);
        let (mut i, mut j, mut k) = (start, mid, start);
        while i < mid && j < end {
            cx.tick(1)?;
            // the next comparison reads one of the next items: start their loads now,
            // and the headers of the ones after them (so that the next step's loads of
            // their entries do not wait on the header first)
            for (at, stop) in [(i + 1, mid), (j + 1, end)] {
                if at < stop
                    && let Some(x) = src.get(at)
                {
                    warm(x, false);
                }
                if at + 1 < stop
                    && let Some(x) = src.get(at + 1)
                {
                    warm(x, true);
                }
            }
            let (left, right) = src.split_at_mut(j);
            let (Some(a), Some(b), Some(out)) = (left.get_mut(i), right.first_mut(), dst.get_mut(k)) else { break };
            if b_first(cx, a, b)? {
                std::mem::swap(out, b);
                j += 1;
            } else {
                std::mem::swap(out, a);
                i += 1;
            }
            k += 1;
        }
        dst[k..k + (mid - i)].swap_with_slice(&mut src[i..mid]);
        k += mid - i;
        dst[k..k + (end - j)].swap_with_slice(&mut src[j..end]);
        start = end;
    }
    Ok(())
}

/// The merge sort of [`merge_sort_moving`] over the indices `0..n`: `b_first(i, j)` says
/// whether item `j`, from the right run, goes before item `i`.
fn merge_sort_idx(
    cx: &mut BuiltinContext,
    n: usize,
    mut b_first: impl FnMut(&mut BuiltinContext, usize, usize) -> EvalResult<bool>,
) -> EvalResult<Vec<usize>> {
    let mut idx: Vec<usize> = (0..n).collect();
    let mut buf = vec![0usize; n];
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j, mut k) = (start, mid, start);
            while i < mid && j < end {
                cx.tick(1)?;
                if b_first(cx, idx[i], idx[j])? {
                    buf[k] = idx[j];
                    j += 1;
                } else {
                    buf[k] = idx[i];
                    i += 1;
                }
                k += 1;
            }
            buf[k..k + (mid - i)].copy_from_slice(&idx[i..mid]);
            k += mid - i;
            buf[k..k + (end - j)].copy_from_slice(&idx[j..end]);
            start = end;
        }
        std::mem::swap(&mut idx, &mut buf);
        width *= 2;
    }
    Ok(idx)
}

/// Sort keys that are all vectors of the same width (at most [`FlatKeys::MAX_WIDTH`]) of
/// plain values (nil, booleans, numbers, strings, keywords, symbols), spread into one table
/// of rows: no vector per item stays alive, and comparing two keys reads their items in
/// place. Comparing two rows item by item is what `compare` does for two such vectors of
/// one length, and plain items never make it fail on a vector compared with itself.
struct FlatKeys {
    width: usize,
    rows: usize,
    items: Vec<Value>,
    /// Floats may be spread (the merge sort makes the same comparisons whatever the order
    /// answers); with `:asc`/`:desc` they are not, so the order stays a total one.
    floats: bool,
}

impl FlatKeys {
    const MAX_WIDTH: usize = 8;

    fn new(floats: bool) -> Self {
        FlatKeys { width: 0, rows: 0, items: Vec::new(), floats }
    }

    fn plain(&self, v: &Value) -> bool {
        match v {
            Value::Nil | Value::Bool(_) | Value::Int(_) | Value::Str(_) | Value::Keyword(_) | Value::Symbol(_) => true,
            Value::Float(_) => self.floats,
            _ => false,
        }
    }

    /// Adds the next key as a row; gives it back when it does not fit the table.
    fn push(&mut self, key: Value) -> Result<(), Value> {
        let Value::Vector(v) = &key else { return Err(key) };
        let fits = if self.rows == 0 { (1..=Self::MAX_WIDTH).contains(&v.len()) } else { v.len() == self.width };
        if !fits || !v.iter().all(|x| self.plain(x)) {
            return Err(key);
        }
        self.width = v.len();
        self.rows += 1;
        let Value::Vector(v) = key else { return Ok(()) };
        match std::sync::Arc::try_unwrap(v) {
            Ok(owned) => self.items.extend(owned),
            Err(shared) => self.items.extend(shared.iter().cloned()),
        }
        Ok(())
    }

    /// The rows so far as the vectors they came from (equal values).
    fn unspread(&mut self) -> Vec<Value> {
        let items = std::mem::take(&mut self.items);
        if self.width == 0 {
            return Vec::new();
        }
        items.chunks(self.width).map(|row| Value::vector(row.iter().cloned())).collect()
    }

    fn row(&self, i: usize) -> &[Value] {
        self.items.get(i * self.width..(i + 1) * self.width).unwrap_or(&[])
    }

    /// `compare` of two rows as vectors of one length.
    fn compare(&self, i: usize, j: usize) -> EvalResult<Option<Ordering>> {
        for (p, q) in self.row(i).iter().zip(self.row(j)) {
            match compare_values(p, q)? {
                Some(Ordering::Equal) => {}
                other => return Ok(other),
            }
        }
        Ok(Some(Ordering::Equal))
    }

    /// What the `compare` builtin answers for two rows as vectors of one length: the
    /// answer for their first items that differ (a NaN against a number is 0, and the
    /// next items decide).
    fn compare_as_builtin(&self, i: usize, j: usize) -> EvalResult<i64> {
        for (p, q) in self.row(i).iter().zip(self.row(j)) {
            let c = crate::builtins::core::numbers::clojure_compare(p, q)?;
            if c != 0 {
                return Ok(c);
            }
        }
        Ok(0)
    }

    /// The sorted order of the rows, as [`sort_pairs`] would sort the vectors (same fuel).
    fn sort(&self, cx: &mut BuiltinContext, order: &Order) -> EvalResult<Vec<usize>> {
        match order {
            Order::Asc | Order::Desc => {
                let desc = matches!(order, Order::Desc);
                cx.tick(self.rows as u64)?;
                let mut idx: Vec<usize> = (0..self.rows).collect();
                idx.sort_by(|&i, &j| {
                    // one step per comparison, as comparing two vectors takes
                    if !crate::meter::step() {
                        return Ordering::Equal;
                    }
                    let o = self.compare(i, j).ok().flatten().unwrap_or_else(|| self.row(i).cmp(self.row(j)));
                    if desc { o.reverse() } else { o }
                });
                Ok(idx)
            }
            &Order::Compare(flipped) => {
                // single integer keys: the same merge sort and comparisons, on machine integers
                if self.width == 1
                    && let Some(ints) = all_ints(&self.items)
                {
                    return merge_sort_idx(cx, self.rows, |_, a, b| {
                        let (x, y) = if flipped { (a, b) } else { (b, a) };
                        Ok(ints[x] < ints[y])
                    });
                }
                merge_sort_idx(cx, self.rows, |_, a, b| {
                    let (x, y) = if flipped { (a, b) } else { (b, a) };
                    Ok(self.compare_as_builtin(x, y)? < 0)
                })
            }
            // a table is only made for the orders above
            Order::Fn(_) => err(ErrorKind::RuntimeError, "sort: internal error: a spread key table with a comparator"),
        }
    }
}

/// The order (as indices, ascending or with `desc` descending) of rows whose keys are all
/// strings or all keywords without a namespace, in `compare`'s order for them (their
/// bytes); `None` for anything else. Each key's first 8 bytes sit beside its index, so most
/// comparisons read no string: a sort of 300k strings otherwise waits on memory for two
/// strings at every comparison. Rows with equal keys keep their order (the sort is
/// stable), as the general sort keeps them.
fn name_order<T>(rows: &[T], key: impl Fn(&T) -> &Value, desc: bool) -> Option<Vec<usize>> {
    fn name(v: &Value) -> Option<&[u8]> {
        match v {
            Value::Str(s) => Some(s.as_bytes()),
            // a keyword with a namespace orders by it first (`compare_values`)
            Value::Keyword(k) if !k.contains('/') => Some(k.as_bytes()),
            _ => None,
        }
    }
    let kind = std::mem::discriminant(key(rows.first()?));
    let mut keyed: Vec<(u64, usize)> = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let k = key(row);
        if std::mem::discriminant(k) != kind {
            return None;
        }
        keyed.push((crate::value::prefix8(name(k)?), i));
    }
    let full = |i: usize| rows.get(i).map(&key).and_then(name);
    keyed.sort_by(|(pa, a), (pb, b)| {
        let o = pa.cmp(pb).then_with(|| full(*a).cmp(&full(*b)));
        if desc { o.reverse() } else { o }
    });
    Some(keyed.into_iter().map(|(_, i)| i).collect())
}

/// The rows in the order `order` gives as indices.
fn in_order<T>(rows: Vec<T>, order: Vec<usize>) -> Vec<T> {
    let mut slots: Vec<Option<T>> = rows.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots.get_mut(i).and_then(Option::take)).collect()
}

/// The values as machine integers, when every one is an integer.
fn all_ints(vals: &[Value]) -> Option<Vec<i64>> {
    vals.iter().map(|v| if let Value::Int(i) = v { Some(*i) } else { None }).collect()
}

pub(crate) fn sort(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (order, coll) = if a.len() == 2 {
        (Some(std::mem::take(&mut a[0])), std::mem::take(&mut a[1]))
    } else {
        (None, std::mem::take(&mut a[0]))
    };
    let vals = items(cx, "sort", &coll)?;
    sort_items(cx, order, vals)
}

/// `(sort vals)` or, with a comparator or order, `(sort order vals)` of items already
/// gathered (the builtin's, and a fused chain's under `sort`).
pub(crate) fn sort_items(cx: &mut BuiltinContext, order: Option<Value>, mut vals: Vec<Value>) -> EvalResult {
    let order = order.map_or(Order::Asc, order_arg);
    // `(sort > xs)`: numbers (and nil) sorted as `compare` sorts them, without a call each
    if let Order::Fn(f) = &order
        && vals.len() > 1
        && let Some(flipped) = numeric_comparator(f)
    {
        let key = |_: &mut BuiltinContext, item: &Value| Ok(item.clone());
        match sort_by_key(cx, key, Order::Compare(flipped), vals, true)? {
            Ok(sorted) => return Ok(sorted),
            Err(back) => vals = back,
        }
    }
    // `(fn [a b] (compare (:k b) (:k a)))`: sorted by the key, each key made once (with
    // fewer than two items the comparator is never called, nor the key computed)
    if let Order::Fn(f) = &order
        && vals.len() > 1
        && let Some(kc) = key_comparator(f)
    {
        let key = |cx: &mut BuiltinContext, item: &Value| cx.apply(&kc.key, &mut [item.clone(), item.clone()]);
        match sort_by_key(cx, key, Order::Compare(kc.flipped), vals, kc.numbers_only)? {
            Ok(sorted) => return Ok(sorted),
            Err(back) => vals = back,
        }
    }
    if let Order::Asc | Order::Desc = order {
        // each item is its own key: sorted in place, with no key beside it
        check_sortable("sort", &vals)?;
        let desc = matches!(order, Order::Desc);
        cx.tick(vals.len() as u64)?;
        if let Some(mut xs) = all_ints(&vals) {
            // integers alone sort as machine integers (two equal ones cannot be told
            // apart, so which comes first does not matter)
            std::mem::drop(vals);
            xs.sort_unstable();
            if desc {
                xs.reverse();
            }
            return vec_out(cx, xs.into_iter().map(Value::Int));
        }
        if let Some(order) = name_order(&vals, |v| v, desc) {
            return vec_out(cx, in_order(vals, order));
        }
        vals.sort_by(|a, b| {
            let o = compare_values(a, b).ok().flatten().unwrap_or_else(|| a.cmp(b));
            if desc { o.reverse() } else { o }
        });
        return vec_out(cx, vals);
    }
    let pairs = vals.into_iter().map(|v| (v.clone(), v)).collect();
    let sorted = sort_pairs(cx, pairs, &order)?;
    vec_out(cx, sorted.into_iter().map(|(_, v)| v))
}

fn sort_by(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let keyfn = crate::builtins::by_key(&a[0]);
    let (order, coll) = if a.len() == 3 {
        (order_arg(std::mem::take(&mut a[1])), std::mem::take(&mut a[2]))
    } else {
        (Order::Asc, std::mem::take(&mut a[1]))
    };
    let items = items(cx, "sort-by", &coll)?;
    // `(sort-by :score > rows)`: numeric keys sorted as `compare` sorts them, without a
    // call per comparison. The keys are made first, once each, to see whether they all are
    // numbers (or nil); any other key leaves the order to the builtin.
    let mut made = None;
    let mut order = order;
    if let Order::Fn(f) = &order
        && items.len() > 1
        && let Some(flipped) = numeric_comparator(f)
    {
        let mut keys = Vec::with_capacity(items.len());
        for item in &items {
            keys.push(cx.apply(&keyfn, &mut [item.clone()])?);
        }
        if keys.iter().all(|k| matches!(k, Value::Int(_) | Value::Float(_) | Value::Nil)) {
            order = Order::Compare(flipped);
        }
        made = Some(keys.into_iter());
    }
    let key = |cx: &mut BuiltinContext, item: &Value| match &mut made {
        Some(keys) => Ok(keys.next().unwrap_or(Value::Nil)),
        None => cx.apply(&keyfn, &mut [item.clone()]),
    };
    match sort_by_key(cx, key, order, items, false)? {
        Ok(sorted) => Ok(sorted),
        Err(_) => err(ErrorKind::RuntimeError, "sort-by: internal error: keys refused"),
    }
}

/// `items` sorted by their keys (`key` of each, in order) in `order`. With `numbers_only`,
/// a key that is neither a number nor nil gives the items back (`Ok(Err(items))`) for the
/// caller's comparator to sort (`<` and `>` order those two as `compare` does).
fn sort_by_key(
    cx: &mut BuiltinContext,
    mut key: impl FnMut(&mut BuiltinContext, &Value) -> EvalResult,
    order: Order,
    items: Vec<Value>,
    numbers_only: bool,
) -> EvalResult<Result<Value, Vec<Value>>> {
    // keys that are vectors of plain values of one width (`(juxt :a :b)`) are spread into
    // one table when only the builtin order looks at them
    let mut flat = match &order {
        Order::Asc | Order::Desc => Some(FlatKeys::new(false)),
        Order::Compare(_) => Some(FlatKeys::new(true)),
        Order::Fn(_) => None,
    };
    let mut pairs = Vec::new();
    // the items while their keys are in `flat`
    let mut vals = Vec::new();
    for item in &items {
        cx.tick(1)?;
        let k = key(cx, item)?;
        if numbers_only && !matches!(k, Value::Int(_) | Value::Float(_) | Value::Nil) {
            return Ok(Err(items));
        }
        match &mut flat {
            Some(f) => match f.push(k) {
                Ok(()) => vals.push(item.clone()),
                Err(k) => {
                    pairs = f.unspread().into_iter().zip(std::mem::take(&mut vals)).collect();
                    pairs.push((k, item.clone()));
                    flat = None;
                }
            },
            None => pairs.push((k, item.clone())),
        }
    }
    std::mem::drop(items);
    if let Some(f) = flat {
        let order = f.sort(cx, &order)?;
        let mut slots: Vec<Option<Value>> = vals.into_iter().map(Some).collect();
        return vec_out(cx, order.into_iter().filter_map(|i| slots.get_mut(i).and_then(Option::take))).map(Ok);
    }
    if matches!(order, Order::Asc | Order::Desc) {
        let keys: Vec<Value> = pairs.iter().map(|(k, _)| k.clone()).collect();
        check_sortable("sort-by", &keys)?;
    }
    let sorted = sort_pairs(cx, pairs, &order)?;
    vec_out(cx, sorted.into_iter().map(|(_, v)| v)).map(Ok)
}

/// `(distinct)`: the transducer form.
fn distinct_xf(_: &mut BuiltinContext, _: &mut [Value]) -> EvalResult {
    Ok(xf_step(Step::distinct()))
}

pub(crate) fn distinct(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    eager_or_lazy(cx, Step::distinct(), &a[0])
}

fn chunks(cx: &mut BuiltinContext, a: &mut [Value], fname: &str, keep_partial: bool) -> EvalResult {
    let n = int_arg(fname, &a[0])?;
    if let Some(l) = a.last().and_then(crate::lazy::as_lazy) {
        let step = if a.len() >= 3 { int_arg(fname, &a[1])? } else { n };
        if n <= 0 || step <= 0 {
            return err(
                ErrorKind::RuntimeError,
                format!("{fname}: size and step must be positive, got {n} and {step}"),
            );
        }
        if a.len() < 4 || l.is_infinite() {
            return crate::lazy::partition(n as usize, step as usize, keep_partial, l);
        }
    }
    // the padded form over a finite lazy sequence: realised, then cut as a collection
    if let Some(c) = a.last_mut()
        && crate::lazy::is_finite_lazy(c)
    {
        *c = crate::lazy::realized(cx, fname, std::mem::take(c))?;
    }
    let (step, pad, coll) = match a {
        [_, coll] => (n, None, &*coll),
        [_, step, coll] => (int_arg(fname, step)?, None, &*coll),
        [_, step, pad, coll] => {
            // at most n pad items are ever used, so an infinite pad like (repeat "-") is fine
            let pad = match crate::lazy::as_lazy(pad) {
                Some(l) => seq_iter(fname, &crate::lazy::take(cx, n.max(0) as usize, l.clone())?)?.collect(),
                None => items(cx, fname, pad)?,
            };
            (int_arg(fname, step)?, Some(pad), &*coll)
        }
        _ => return err(ErrorKind::ArityError, format!("{fname}: expected (partition n step? pad? coll)")),
    };
    if n <= 0 || step <= 0 {
        return err(ErrorKind::RuntimeError, format!("{fname}: size and step must be positive, got {n} and {step}"));
    }
    let Some(pad) = pad else {
        return run_into_vector(cx, Step::partition(n as usize, step as usize, keep_partial), coll);
    };
    let pad = Some(pad);
    let all = items(cx, fname, coll)?;
    let mut out = Vec::new();
    let mut i = 0usize;
    while i < all.len() {
        cx.tick(1)?;
        let end = (i + n as usize).min(all.len());
        // each window is a copy: with a small step, n items per step (charged before)
        cx.charge(cost::items(n as u64))?;
        if end - i < n as usize && !keep_partial {
            // as in Clojure, a pad fills the first incomplete group, and that group ends it
            if let Some(pad) = &pad {
                let missing = n as usize - (end - i);
                out.push(Value::vector(all[i..end].iter().chain(pad.iter().take(missing)).cloned()));
            }
            break;
        }
        out.push(Value::vector(all[i..end].iter().cloned()));
        i += step as usize;
    }
    vec_out(cx, out)
}

fn partition(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    chunks(cx, a, "partition", false)
}

/// `(partition-all n)`: the transducer form.
fn partition_all_xf(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = int_arg("partition-all", &a[0])?;
    if n <= 0 {
        return err(ErrorKind::RuntimeError, format!("partition-all: size must be positive, got {n}"));
    }
    Ok(xf_step(Step::partition(n as usize, n as usize, true)))
}

fn partition_all(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    chunks(cx, a, "partition-all", true)
}

pub(crate) fn out_vec(cx: &mut BuiltinContext, items: impl IntoIterator<Item = Value>) -> EvalResult {
    let v: PVector = items.into_iter().collect();
    cx.charge(cost::items(v.len() as u64))?;
    Ok(Value::from_pvec(v))
}

pub(crate) fn all(cx: &mut BuiltinContext, fname: &str, v: &Value) -> EvalResult<Vec<Value>> {
    crate::builtins::collect_items(cx, fname, v)
}

fn butlast(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let mut v = all(cx, "butlast", &a[0])?;
    v.pop();
    if v.is_empty() { Ok(Value::Nil) } else { out_vec(cx, v) }
}

fn drop_last(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (n, coll) = if a.len() == 2 { (int_arg("drop-last", &a[0])?, &a[1]) } else { (1, &a[0]) };
    if let Some(l) = crate::lazy::as_lazy(coll) {
        return crate::lazy::drop_last(n.max(0) as usize, l);
    }
    let mut v = all(cx, "drop-last", coll)?;
    v.truncate(v.len().saturating_sub(n.max(0) as usize));
    out_vec(cx, v)
}

fn take_last(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = int_arg("take-last", &a[0])?.max(0) as usize;
    let v = all(cx, "take-last", &a[1])?;
    if v.is_empty() || n == 0 {
        return Ok(Value::Nil);
    }
    let start = v.len().saturating_sub(n);
    out_vec(cx, v.into_iter().skip(start))
}

fn cons(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    // a list: anything conj'd onto the result goes to its front, as on Clojure's seq
    let x = std::mem::take(&mut a[0]);
    if let Some(l) = crate::lazy::as_lazy(&a[1]) {
        return crate::lazy::concat(std::iter::once(x).collect(), l);
    }
    if let Value::List(items) = &mut a[1] {
        cx.charge(cost::ELEM)?;
        let mut items = std::mem::take(items);
        Arc::make_mut(&mut items).push_front(x);
        return Ok(Value::List(items));
    }
    let mut v = vec![x];
    cx.charge(crate::builtins::materialized_cost(&a[1]))?;
    v.extend(seq_iter("cons", &a[1])?);
    cx.charge(cost::items(v.len() as u64))?;
    Ok(Value::list(v))
}

fn list_star(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = a.len();
    let last = std::mem::take(&mut a[n - 1]);
    cx.charge(crate::builtins::materialized_cost(&last))?;
    let mut v: Vec<Value> = a[..n - 1].iter_mut().map(std::mem::take).collect();
    v.extend(seq_iter("list*", &last)?);
    cx.charge(cost::items(v.len() as u64))?;
    Ok(if v.is_empty() { Value::Nil } else { Value::list(v) })
}

fn split_at(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = int_arg("split-at", &a[0])?.max(0) as usize;
    if let Some(l) = crate::lazy::as_lazy(&a[1]) {
        // [(take n s) (drop n s)]: both lazy, reading one cache
        let head = if n == 0 { Value::vector([]) } else { crate::lazy::stepped(Step::Take { left: n }, l)? };
        return out_vec(cx, [head, crate::lazy::drop(n, l)?]);
    }
    let v = all(cx, "split-at", &a[1])?;
    let n = n.min(v.len());
    let (l, r) = v.split_at(n);
    out_vec(cx, [Value::vector(l.iter().cloned()), Value::vector(r.iter().cloned())])
}

fn split_with(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = a[0].clone();
    if let Some(l) = crate::lazy::as_lazy(&a[1]) {
        // [(take-while pred s) (drop-while pred s)]: both lazy, reading one cache
        let head = crate::lazy::stepped(Step::TakeWhile(f.clone()), l)?;
        return out_vec(cx, [head, crate::lazy::stepped(Step::drop_while(f), l)?]);
    }
    let v = all(cx, "split-with", &a[1])?;
    let mut n = v.len();
    for (i, item) in v.iter().enumerate() {
        cx.tick(1)?;
        if !cx.apply(&f, &mut [item.clone()])?.truthy() {
            n = i;
            break;
        }
    }
    let (l, r) = v.split_at(n);
    out_vec(cx, [Value::vector(l.iter().cloned()), Value::vector(r.iter().cloned())])
}

fn interleave(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let lazies: Vec<_> = a.iter().filter_map(|c| crate::lazy::as_lazy(c).cloned()).collect();
    if !lazies.is_empty() && lazies.len() == a.len() {
        return crate::lazy::interleave(lazies);
    }
    // infinite sequences are bounded by the shortest finite collection
    let n = a.iter().filter(|c| crate::lazy::as_lazy(c).is_none()).map(|c| seq_len(c).unwrap_or(0)).min().unwrap_or(0);
    // n items of every collection, the same one possibly many times: the rows and the
    // result are charged before anything is copied
    let rows = (n as u64).saturating_mul(a.len() as u64);
    cx.charge(cost::items(rows).saturating_mul(2))?;
    let mut colls: Vec<Vec<Value>> = Vec::with_capacity(a.len());
    for c in a.iter() {
        colls.push(match crate::lazy::as_lazy(c) {
            Some(l) => {
                let taken = crate::lazy::take(cx, n, l.clone())?;
                all(cx, "interleave", &taken)?
            }
            None => {
                cx.charge(crate::builtins::materialized_cost(c))?;
                seq_iter("interleave", c)?.take(n).collect()
            }
        });
    }
    let n = colls.iter().map(Vec::len).min().unwrap_or(0);
    let mut out = Vec::new();
    for i in 0..n {
        for c in &colls {
            out.push(c[i].clone());
        }
    }
    Ok(Value::vector(out))
}

fn interpose(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let Some(l) = crate::lazy::as_lazy(&a[1]) {
        // over an infinite sequence: sep x sep y ..., lazily, without the leading sep
        let l = l.clone();
        let sep = std::mem::take(&mut a[0]);
        let f = Function::native("interpose", Held::values(vec![sep]), |_, held, call| {
            Ok(Value::vector([held.first().cloned().unwrap_or_default(), std::mem::take(&mut call[0])]))
        });
        let pairs = crate::lazy::mapcat(f, &l)?;
        return match crate::lazy::as_lazy(&pairs) {
            Some(p) => crate::lazy::drop(1, p),
            None => Ok(pairs),
        };
    }
    seq_iter("interpose", &a[1])?;
    let n = seq_len(&a[1]).unwrap_or(0) as u64;
    cx.charge(cost::items(n.saturating_mul(2)).saturating_add(crate::builtins::materialized_cost(&a[1])))?;
    let mut out = Vec::new();
    for (i, item) in seq_iter("interpose", &a[1])?.enumerate() {
        if i > 0 {
            out.push(a[0].clone());
        }
        out.push(item);
    }
    Ok(Value::vector(out))
}

fn flatten(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    fn go(cx: &mut BuiltinContext, v: &Value, out: &mut Vec<Value>) -> EvalResult<()> {
        cx.tick(1)?;
        match v {
            Value::Vector(items) | Value::List(items) => {
                cx.check_stack()?;
                for x in items.iter() {
                    go(cx, x, out)?;
                }
            }
            other => {
                // a shared structure flattens to far more leaves than it holds
                cx.charge(cost::ELEM)?;
                out.push(other.clone())
            }
        }
        Ok(())
    }
    // over an infinite sequence: each item flattened in turn, as a lazy mapcat
    if let Some(l) = crate::lazy::as_lazy(&a[0]) {
        let one = Function::native("flatten", Held::values(Vec::new()), |interp, _, call| {
            let mut out = Vec::new();
            go(interp, &call[0], &mut out)?;
            Ok(Value::vector(out))
        });
        return crate::lazy::mapcat(one, l);
    }
    let mut out = Vec::new();
    match &a[0] {
        Value::Vector(_) | Value::List(_) => go(cx, &a[0], &mut out)?,
        _ => return Ok(Value::vector([])),
    }
    cx.charge(cost::HEADER)?;
    Ok(Value::vector(out))
}

/// `(dedupe)`: the transducer form.
fn dedupe_xf(_: &mut BuiltinContext, _: &mut [Value]) -> EvalResult {
    Ok(xf_step(Step::Dedupe(None)))
}

fn dedupe(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    eager_or_lazy(cx, Step::Dedupe(None), &a[0])
}

fn distinct_by(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = crate::builtins::by_key(&a[0]);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for item in seq_iter("distinct-by", &coll)? {
        cx.tick(1)?;
        if seen.insert(cx.apply(&f, &mut [item.clone()])?) {
            cx.charge(crate::builtins::kept_item_cost(&coll))?;
            out.push(item);
        }
    }
    out_vec(cx, out)
}

fn partition_by(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    eager_or_lazy(cx, Step::partition_by(crate::builtins::by_key(&a[0])), &a[1])
}

fn zip(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    for c in a.iter() {
        seq_iter("zip", c)?;
    }
    // n tuples of every collection (possibly the same one many times): the copies and the
    // tuples are charged before anything is built
    let n = a.iter().map(|c| seq_len(c).unwrap_or(0)).min().unwrap_or(0);
    let k = a.len() as u64;
    cx.charge(cost::items((n as u64).saturating_mul(k)).saturating_add((n as u64).saturating_mul(cost::items(k))))?;
    let mut colls: Vec<Vec<Value>> = Vec::with_capacity(a.len());
    for c in a.iter() {
        cx.charge(crate::builtins::materialized_cost(c))?;
        colls.push(seq_iter("zip", c)?.take(n).collect());
    }
    cx.charge(cost::HEADER)?;
    Ok(Value::vector((0..n).map(|i| Value::vector(colls.iter().map(|c| c[i].clone())))))
}

fn combinations(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let items = all(cx, "combinations", &a[0])?;
    let k = int_arg("combinations", &a[1])?;
    if k < 0 {
        return Ok(Value::vector([]));
    }
    let k = k as usize;
    if k > items.len() {
        return Ok(Value::vector([]));
    }
    let mut out = Vec::new();
    let mut idx: Vec<usize> = (0..k).collect();
    loop {
        cx.tick(1)?;
        cx.charge(cost::items(k as u64))?;
        out.push(Value::vector(idx.iter().map(|&i| items[i].clone())));
        // advance the rightmost index that can move
        let mut i = k;
        loop {
            if i == 0 {
                return out_vec(cx, out);
            }
            i -= 1;
            if idx[i] < items.len() - k + i {
                idx[i] += 1;
                for j in i + 1..k {
                    idx[j] = idx[j - 1] + 1;
                }
                break;
            }
        }
    }
}

fn reductions(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = a[0].clone();
    let (init, coll) = if a.len() == 3 { (Some(a[1].clone()), &a[2]) } else { (None, &a[1]) };
    if let Some(l) = crate::lazy::as_lazy(coll) {
        return crate::lazy::reductions(f, init, l);
    }
    let mut items = seq_iter("reductions", coll)?;
    let mut acc = match init.or_else(|| items.next()) {
        Some(v) => v,
        None => return Ok(Value::vector([cx.apply(&f, &mut [])?])),
    };
    let mut out = vec![acc.clone()];
    for x in items {
        cx.tick(1)?;
        acc = cx.apply(&f, &mut [acc, x])?;
        cx.charge(crate::builtins::kept_item_cost(coll))?;
        out.push(acc.clone());
    }
    out_vec(cx, out)
}

fn take_nth(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = int_arg("take-nth", &a[0])?;
    if n <= 0 {
        return err(ErrorKind::RuntimeError, "take-nth: n must be positive (a step of 0 would never end)");
    }
    eager_or_lazy(cx, Step::TakeNth { n: n as u64, i: 0 }, &a[1])
}

fn rseq(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Vector(v) if v.is_empty() => Ok(Value::Nil),
        Value::Vector(v) => out_vec(cx, v.iter().rev().cloned()),
        Value::Nil => Ok(Value::Nil),
        other => expected("rseq", "a vector", other),
    }
}

pub(crate) fn seq(cx: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    if let Some(l) = crate::lazy::as_lazy(&args[0]) {
        // nil for an empty sequence; otherwise the sequence itself, still lazy
        let empty = crate::lazy::is_empty(cx, l.clone())?;
        return Ok(if empty { Value::Nil } else { std::mem::take(&mut args[0]) });
    }
    match &args[0] {
        Value::Vector(v) | Value::List(v) if !v.is_empty() => Ok(args[0].clone()),
        other => {
            cx.charge(crate::builtins::materialized_cost(other))?;
            let items: PVector = seq_iter("seq", other)?.collect();
            cx.charge(cost::items(items.len() as u64))?;
            Ok(if items.is_empty() { Value::Nil } else { Value::from_pvec(items) })
        }
    }
}
