//! Type predicates, `type`, and the remaining sequence and collection helpers
//! (slicing, interleaving, trees, set algebra, walking).

use std::collections::HashSet;
use std::sync::Arc;

use super::{Arity, Builtin, Category, expected, int_arg, seq_iter, seq_len};
use crate::builtins::context::BuiltinContext;
use crate::error::{ErrorKind, EvalResult, err};
use crate::function::{Function, Held};
use crate::limits::cost;
use crate::value::{PMap, PSet, PVector, Value};

use Arity::*;
use Category::{Collection, Core, Functional, Sequence, Set, Walk};

/// Builtins of this file.
pub static BUILTINS: &[Builtin] = &[
    Builtin::new("type", Exact(1), Core, type_of)
        .doc(
            "Type keyword: :boolean :number :string :keyword :vector :list :map :set :regex :function (nil for nil; DIV-28).",
        )
        .ex(&[("(type 1)", ":number"), ("(type {})", ":map")]),
    Builtin::new("boolean", Exact(1), Core, boolean)
        .doc("false for nil and false, true for anything else.")
        .ex(&[("(boolean 0)", "true")]),
    Builtin::new("seq?", Exact(1), Core, is_sequential)
        .alias(&["sequential?", "indexed?", "reversible?", "counted?", "associative?"])
        .doc("True for lists and vectors (sequence functions return vectors); associative?/counted? also hold for maps.")
        .ex(&[("(seq? [1])", "true"), ("(seq? '(1))", "true")]),
    Builtin::new("list?", Exact(1), Core, is_list).doc("True for lists.").ex(&[("(list? '(1 2))", "true"), ("(list? [1 2])", "false")]),
    Builtin::new("seqable?", Exact(1), Core, is_seqable)
        .doc("True for nil, collections and strings.")
        .ex(&[("(seqable? \"ab\")", "true")]),
    Builtin::new("ifn?", Exact(1), Core, is_ifn)
        .doc("True for anything callable: functions, keywords, maps, sets, vectors.")
        .ex(&[("(ifn? :a)", "true")]),
    Builtin::new("char?", Exact(1), Core, is_char)
        .doc("True for 1-character strings (characters are strings in PTC-Lisp).")
        .ex(&[("(char? \\a)", "true")]),
    Builtin::new("symbol?", Exact(1), Core, is_symbol)
        .doc("True for symbols: quoted names such as 'a, and (symbol \"a\").")
        .ex(&[("(symbol? 'a)", "true"), ("(symbol? :a)", "false")]),
    Builtin::new("ratio?", Exact(1), Core, always_false)
        .alias(&["decimal?", "map-entry?"])
        .doc("Always false: PTC-Lisp has no ratios, decimals or map-entry type (DIV-20, DIV-49).")
        .ex(&[("(ratio? 1)", "false")]),
    Builtin::new("rational?", Exact(1), Core, is_rational)
        .doc("Same as integer? (no ratios; DIV-20).")
        .ex(&[("(rational? 1)", "true")]),
    Builtin::new("pos-int?", Exact(1), Core, pos_int).doc("Integer above zero.").ex(&[("(pos-int? 3)", "true")]),
    Builtin::new("neg-int?", Exact(1), Core, neg_int).doc("Integer below zero.").ex(&[("(neg-int? -3)", "true")]),
    Builtin::new("nat-int?", Exact(1), Core, nat_int).doc("Integer zero or above.").ex(&[("(nat-int? 0)", "true")]),
    Builtin::new("infinite?", Exact(1), Core, infinite)
        .doc("True for ##Inf and ##-Inf.")
        .ex(&[("(infinite? ##Inf)", "true")]),
    Builtin::new("sorted?", Exact(1), Core, is_sorted)
        .doc("True for maps and sets (they are always sorted).")
        .ex(&[("(sorted? {})", "true")]),
    Builtin::new("compare", Exact(2), Core, compare)
        .doc("-1, 0 or 1 comparing numbers, strings, keywords or vectors; nil sorts first.")
        .ex(&[("(compare 1 2)", "-1"), ("(compare \"b\" \"a\")", "1")]),
    Builtin::new("distinct?", AtLeast(1), Core, is_distinct)
        .doc("True when no two arguments are equal.")
        .ex(&[("(distinct? 1 2 3)", "true")]),
    Builtin::new("not-every?", Exact(2), Sequence, not_every)
        .doc("True when (pred item) is falsy for some item.")
        .ex(&[("(not-every? odd? [1 2])", "true")]),
    Builtin::new("not-empty", Exact(1), Collection, not_empty).lazy()
        .doc("The collection, or nil when empty.")
        .ex(&[("(not-empty [])", "nil")]),
    Builtin::new("empty", Exact(1), Collection, empty)
        .doc("An empty collection of the same kind.")
        .ex(&[("(empty {:a 1})", "{}")]),
    Builtin::new("butlast", Exact(1), Sequence, butlast)
        .doc("All but the last item, or nil.")
        .ex(&[("(butlast [1 2 3])", "[1 2]")]),
    Builtin::new("drop-last", Range(1, 2), Sequence, drop_last).lazy()
        .doc("All but the last n (1) items.")
        .ex(&[("(drop-last 2 [1 2 3])", "[1]")]),
    Builtin::new("take-last", Exact(2), Sequence, take_last)
        .doc("The last n items, or nil.")
        .ex(&[("(take-last 2 [1 2 3])", "[2 3]")]),
    Builtin::new("fnext", Exact(1), Sequence, fnext).lazy().doc("Same as second.").ex(&[("(fnext [1 2])", "2")]),
    Builtin::new("nfirst", Exact(1), Sequence, nfirst).lazy()
        .doc("(next (first coll)).")
        .ex(&[("(nfirst [[1 2 3]])", "[2 3]")]),
    Builtin::new("nnext", Exact(1), Sequence, nnext).lazy().doc("(next (next coll)).").ex(&[("(nnext [1 2 3])", "[3]")]),
    Builtin::new("nthnext", Exact(2), Sequence, nthnext).lazy()
        .doc("Items from index n on, or nil.")
        .ex(&[("(nthnext [1 2 3] 1)", "[2 3]")]),
    Builtin::new("nthrest", Exact(2), Sequence, nthrest).lazy()
        .doc("Items from index n on.")
        .ex(&[("(nthrest [1 2 3] 2)", "[3]")]),
    Builtin::new("cons", Exact(2), Sequence, cons).lazy()
        .doc("A list with x in front of the items.")
        .ex(&[("(cons 0 [1 2])", "(0 1 2)")]),
    Builtin::new("list*", AtLeast(1), Sequence, list_star)
        .doc("A list of the leading arguments followed by the items of the last one.")
        .ex(&[("(list* 1 2 [3 4])", "(1 2 3 4)")]),
    Builtin::new("peek", Exact(1), Collection, peek)
        .doc("Last item of a vector, first item of a list, or nil.")
        .ex(&[("(peek [1 2])", "2"), ("(peek '(1 2))", "1")]),
    Builtin::new("pop", Exact(1), Collection, pop)
        .doc("A vector without its last item, a list without its first; nil for an empty vector (Clojure throws), an error for an empty list.")
        .ex(&[("(pop [1 2])", "[1]"), ("(pop '(1 2))", "(2)")]),
    Builtin::new("subvec", Range(2, 3), Collection, subvec)
        .doc("Items from start (inclusive) to end (exclusive); indexes are clamped.")
        .ex(&[("(subvec [1 2 3 4] 1 3)", "[2 3]")]),
    Builtin::new("split-at", Exact(2), Sequence, split_at)
        .doc("[(take n coll) (drop n coll)].")
        .ex(&[("(split-at 1 [1 2 3])", "[[1] [2 3]]")]),
    Builtin::new("split-with", Exact(2), Sequence, split_with)
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
    Builtin::new("dedupe", Range(0, 1), Sequence, dedupe).lazy()
        .doc("Items without consecutive repeats.")
        .ex(&[("(dedupe [1 1 2 1])", "[1 2 1]")]),
    Builtin::new("distinct-by", Exact(2), Sequence, distinct_by)
        .ext()
        .doc("Items whose (f item) was not seen before.")
        .ex(&[("(distinct-by :id [{:id 1 :v 1} {:id 1 :v 2}])", "[{:id 1 :v 1}]")]),
    Builtin::new("partition-by", Exact(2), Sequence, partition_by).lazy()
        .doc("Splits into runs with the same (f item).")
        .ex(&[("(partition-by odd? [1 3 2 4 5])", "[[1 3] [2 4] [5]]")]),
    Builtin::new("keep-indexed", Exact(2), Sequence, keep_indexed).lazy()
        .doc("Non-nil results of (f index item).")
        .ex(&[("(keep-indexed (fn [i x] (when (odd? i) x)) [:a :b :c])", "[:b]")]),
    Builtin::new("find", Exact(2), Collection, find)
        .doc("The entry [k v] for a key of a map (or [i v] for a vector index), or nil.")
        .ex(&[("(find {:a 1} :a)", "[:a 1]")]),
    Builtin::new("entries", Exact(1), Collection, entries)
        .ext()
        .doc("The [k v] entries of a map, sorted by key.")
        .ex(&[("(entries {:b 2 :a 1})", "[[:a 1] [:b 2]]")]),
    Builtin::new("zip", AtLeast(1), Sequence, zip)
        .ext()
        .doc("Vectors of the i-th items of each collection.")
        .ex(&[("(zip [1 2] [:a :b])", "[[1 :a] [2 :b]]")]),
    Builtin::new("combinations", Exact(2), Sequence, combinations)
        .ext()
        .doc("All n-item combinations, in order.")
        .ex(&[("(combinations [1 2 3] 2)", "[[1 2] [1 3] [2 3]]")]),
    Builtin::new("repeat", Range(1, 2), Sequence, repeat)
        .doc("(repeat n x): a vector of n copies of x; (repeat x) repeats forever, for take and friends.")
        .ex(&[("(repeat 3 :x)", "[:x :x :x]")]),
    Builtin::new("tree-seq", Exact(3), Sequence, tree_seq)
        .doc("Depth-first nodes of a tree: (tree-seq branch? children root).")
        .ex(&[("(tree-seq vector? identity [1 [2]])", "[[1 [2]] 1 [2] 2]")]),
    Builtin::new("reductions", Range(2, 3), Sequence, reductions).lazy()
        .doc("The intermediate results of a reduce, as a vector.")
        .ex(&[("(reductions + [1 2 3])", "[1 3 6]"), ("(reductions + 10 [1 2])", "[10 11 13]")]),
    Builtin::new("take-nth", Exact(2), Sequence, take_nth).lazy()
        .doc("Every nth item, starting with the first.")
        .ex(&[("(take-nth 2 [1 2 3 4 5])", "[1 3 5]")]),
    Builtin::new("rseq", Exact(1), Sequence, rseq)
        .doc("Items of a vector in reverse order, or nil when empty.")
        .ex(&[("(rseq [1 2 3])", "[3 2 1]")]),
    Builtin::new("doall", Exact(1), Sequence, doall)
        .alias(&["seque"])
        .doc("The collection itself (sequences are already eager).")
        .ex(&[("(doall (map inc [1 2]))", "[2 3]")]),
    Builtin::new("dorun", Exact(1), Sequence, dorun)
        .doc("nil (sequences are already eager).")
        .ex(&[("(dorun [1 2])", "nil")]),
    Builtin::new("run!", Exact(2), Sequence, run_bang)
        .doc("Calls f on each item for its effect (println); returns nil.")
        .ex(&[("(run! println [1 2])", "nil")]),
    Builtin::new("memoize", Exact(1), Functional, memoize)
        .doc("The function itself: PTC-Lisp functions are pure, so callers may cache results themselves.")
        .ex(&[("((memoize inc) 1)", "2")]),
    Builtin::new("every-pred", AtLeast(1), Functional, every_pred)
        .doc("A predicate true when every given predicate holds for every argument.")
        .ex(&[("((every-pred pos? even?) 2 4)", "true")]),
    Builtin::new("some-fn", AtLeast(1), Functional, some_fn)
        .doc("A function returning the first truthy result of the given functions.")
        .ex(&[("((some-fn :a :b) {:b 2})", "2")]),
    Builtin::new("union", AtLeast(0), Set, union).doc("Set union.").ex(&[("(union #{1} #{2})", "#{1 2}")]),
    Builtin::new("intersection", AtLeast(1), Set, intersection)
        .doc("Set intersection.")
        .ex(&[("(intersection #{1 2} #{2 3})", "#{2}")]),
    Builtin::new("difference", AtLeast(1), Set, difference)
        .doc("Members of the first set not in the others.")
        .ex(&[("(difference #{1 2} #{2})", "#{1}")]),
    Builtin::new("subset?", Exact(2), Set, subset)
        .doc("True when every member of the first set is in the second.")
        .ex(&[("(subset? #{1} #{1 2})", "true")]),
    Builtin::new("superset?", Exact(2), Set, superset)
        .doc("True when the first set has every member of the second.")
        .ex(&[("(superset? #{1 2} #{1})", "true")]),
    Builtin::new("map-invert", Exact(1), Set, map_invert)
        .doc("Map with keys and values swapped.")
        .ex(&[("(map-invert {:a 1})", "{1 :a}")]),
    Builtin::new("rename-keys", Exact(2), Set, rename_keys)
        .doc("Map with keys renamed by a {old new} map.")
        .ex(&[("(rename-keys {:a 1} {:a :b})", "{:b 1}")]),
    Builtin::new("set/select", Exact(2), Set, set_select)
        .doc("Members of a set for which (pred x) holds.")
        .ex(&[("(set/select odd? #{1 2 3})", "#{1 3}")]),
    Builtin::new("set/join", Range(2, 3), Set, set_join)
        .doc("Relational join of two sets of maps on their shared keys (or on a {x-key y-key} map); no shared keys gives every pair merged.")
        .ex(&[("(set/join #{{:id 1 :a 2}} #{{:id 1 :b 3}})", "#{{:a 2 :b 3 :id 1}}")]),
    Builtin::new("set/rename", Exact(2), Set, set_rename)
        .doc("A set of maps with keys renamed by a {old new} map.")
        .ex(&[("(set/rename #{{:a 1}} {:a :b})", "#{{:b 1}}")]),
    Builtin::new("set/project", Exact(2), Set, set_project)
        .doc("A set of maps with only the given keys.")
        .ex(&[("(set/project #{{:a 1 :b 2}} [:a])", "#{{:a 1}}")]),
    Builtin::new("set/index", Exact(2), Set, set_index)
        .doc("Map from {key values} to the set of maps having them.")
        .ex(&[("(set/index #{{:a 1 :b 2}} [:a])", "{{:a 1} #{{:a 1 :b 2}}}")]),
    Builtin::new("walk", Exact(3), Walk, walk)
        .doc("(walk inner outer form): inner on each child, outer on the rebuilt form.")
        .ex(&[("(walk inc identity [1 2])", "[2 3]")]),
    Builtin::new("postwalk", Exact(2), Walk, postwalk)
        .doc("Applies f to every node, children first.")
        .ex(&[("(postwalk #(if (number? %) (inc %) %) [1 [2]])", "[2 [3]]")]),
    Builtin::new("prewalk", Exact(2), Walk, prewalk)
        .doc("Applies f to every node, parent first.")
        .ex(&[("(prewalk #(if (number? %) (inc %) %) [1 [2]])", "[2 [3]]")]),
    Builtin::new("keywordize-keys", Exact(1), Walk, keywordize_keys)
        .doc("String map keys become keywords, recursively.")
        .ex(&[("(keywordize-keys {\"a\" {\"b\" 1}})", "{:a {:b 1}}")]),
    Builtin::new("stringify-keys", Exact(1), Walk, stringify_keys)
        .doc("Keyword map keys become strings, recursively.")
        .ex(&[("(stringify-keys {:a 1})", "{\"a\" 1}")]),
    Builtin::new("prewalk-replace", Exact(2), Walk, prewalk_replace)
        .alias(&["postwalk-replace"])
        .doc("Replaces every node found as a key of the map by its value.")
        .ex(&[("(prewalk-replace {:a :b} [:a [:a]])", "[:b [:b]]")]),
];

fn out_vec(cx: &mut BuiltinContext, items: impl IntoIterator<Item = Value>) -> EvalResult {
    let v: PVector = items.into_iter().collect();
    cx.charge(cost::items(v.len() as u64))?;
    Ok(Value::from_pvec(v))
}
fn all(cx: &mut BuiltinContext, fname: &str, v: &Value) -> EvalResult<Vec<Value>> {
    super::collect_items(cx, fname, v)
}
fn b(v: bool) -> EvalResult {
    Ok(Value::Bool(v))
}

fn type_of(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(match &a[0] {
        Value::Nil => Value::Nil,
        Value::Bool(_) => Value::kw("boolean"),
        Value::Int(_) | Value::Float(_) => Value::kw("number"),
        Value::Str(_) => Value::kw("string"),
        Value::Keyword(_) => Value::kw("keyword"),
        Value::Vector(_) => Value::kw("vector"),
        Value::List(_) => Value::kw("list"),
        Value::Map(_) => Value::kw("map"),
        Value::Set(_) => Value::kw("set"),
        Value::Regex(_) => Value::kw("regex"),
        Value::Func(_) => Value::kw("function"),
        Value::Var(_) => Value::kw("var"),
        Value::Symbol(_) => Value::kw("symbol"),
    })
}
fn boolean(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(a[0].truthy())
}
fn is_sequential(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Vector(_) | Value::List(_)))
}
fn is_list(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::List(_)))
}
fn is_seqable(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(super::is_seqable(&a[0]))
}
fn is_ifn(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Func(_) | Value::Keyword(_) | Value::Map(_) | Value::Set(_) | Value::Vector(_)))
}
fn is_char(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(&a[0], Value::Str(s) if s.chars().count() == 1))
}
fn always_false(_: &mut BuiltinContext, _: &mut [Value]) -> EvalResult {
    b(false)
}
fn is_symbol(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Symbol(_)))
}
fn is_rational(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Int(_)))
}
fn pos_int(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Int(i) if i > 0))
}
fn neg_int(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Int(i) if i < 0))
}
fn nat_int(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Int(i) if i >= 0))
}
fn infinite(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Float(f) if f.is_infinite()))
}
fn is_sorted(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Map(_) | Value::Set(_)))
}
fn compare(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    // strings, keywords and symbols compare as Java does: the difference of the first
    // differing characters, else of the lengths ((compare "a" "c") is -2)
    match (&a[0], &a[1]) {
        (Value::Str(x), Value::Str(y)) => return Ok(Value::Int(java_compare(x, y))),
        (Value::Keyword(x), Value::Keyword(y)) | (Value::Symbol(x), Value::Symbol(y)) => {
            let split = |s: &str| match s.split_once('/') {
                Some((ns, name)) if !ns.is_empty() && !name.is_empty() => (Some(ns.to_string()), name.to_string()),
                _ => (None, s.to_string()),
            };
            let ((nx, x), (ny, y)) = (split(x), split(y));
            let by_ns = match (nx, ny) {
                (None, None) => 0,
                (None, Some(_)) => -1,
                (Some(_), None) => 1,
                (Some(p), Some(q)) => java_compare(&p, &q),
            };
            return Ok(Value::Int(if by_ns != 0 { by_ns } else { java_compare(&x, &y) }));
        }
        _ => {}
    }
    let o = super::compare_values(&a[0], &a[1])?.unwrap_or(std::cmp::Ordering::Equal);
    Ok(Value::Int(o as i64))
}
/// Java's `String.compareTo`: over UTF-16 code units.
fn java_compare(x: &str, y: &str) -> i64 {
    let (mut p, mut q) = (x.encode_utf16(), y.encode_utf16());
    loop {
        match (p.next(), q.next()) {
            (Some(c), Some(d)) if c != d => return c as i64 - d as i64,
            (Some(_), Some(_)) => {}
            _ => return x.encode_utf16().count() as i64 - y.encode_utf16().count() as i64,
        }
    }
}
fn is_distinct(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    for i in 0..a.len() {
        for j in i + 1..a.len() {
            if a[i].equiv(&a[j]) {
                return b(false);
            }
        }
    }
    b(true)
}
fn not_every(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = a[0].clone();
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for item in seq_iter("not-every?", &coll)? {
        cx.tick(1)?;
        if !cx.apply(&f, &mut [item])?.truthy() {
            return b(true);
        }
    }
    b(false)
}
fn not_empty(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if crate::lazy::as_lazy(&a[0]).is_some() {
        return crate::lazy::nil_if_empty(cx, std::mem::take(&mut a[0]));
    }
    match seq_len(&a[0]) {
        Some(0) => Ok(Value::Nil),
        Some(_) => Ok(std::mem::take(&mut a[0])),
        None => expected("not-empty", "a collection or string", &a[0]),
    }
}
fn empty(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(match &a[0] {
        Value::Map(_) => Value::empty_map(),
        Value::Set(_) => Value::set([]),
        Value::Vector(_) => Value::vector([]),
        Value::List(_) => Value::empty_list(),
        Value::Str(_) => Value::str(""),
        _ => Value::Nil,
    })
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
fn fnext(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let Some(l) = crate::lazy::as_lazy(&a[0]) {
        return crate::lazy::nth(cx, 1, l);
    }
    Ok(seq_iter("fnext", &a[0])?.nth(1).unwrap_or(Value::Nil))
}
fn tail(cx: &mut BuiltinContext, v: &Value, n: usize, fname: &str, nil_when_empty: bool) -> EvalResult {
    // an infinite sequence stays lazy: its items from n on
    if let Some(l) = crate::lazy::as_lazy(v) {
        let rest = crate::lazy::drop(n, l)?;
        return if nil_when_empty { crate::lazy::nil_if_empty(cx, rest) } else { Ok(rest) };
    }
    cx.charge(super::materialized_cost(v))?;
    let rest: Vec<Value> = seq_iter(fname, v)?.skip(n).collect();
    if rest.is_empty() && nil_when_empty {
        Ok(Value::Nil)
    } else if let Value::List(_) = v {
        cx.charge(cost::items(rest.len() as u64))?;
        Ok(Value::list(rest))
    } else {
        out_vec(cx, rest)
    }
}
fn nfirst(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let first = match crate::lazy::as_lazy(&a[0]) {
        Some(l) => crate::lazy::nth(cx, 0, l)?,
        None => seq_iter("nfirst", &a[0])?.next().unwrap_or(Value::Nil),
    };
    tail(cx, &first, 1, "nfirst", true)
}
fn nnext(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    tail(cx, &a[0], 2, "nnext", true)
}
fn nthnext(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = int_arg("nthnext", &a[1])?.max(0) as usize;
    tail(cx, &a[0], n, "nthnext", true)
}
fn nthrest(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = int_arg("nthrest", &a[1])?.max(0) as usize;
    tail(cx, &a[0], n, "nthrest", false)
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
    cx.charge(super::materialized_cost(&a[1]))?;
    v.extend(seq_iter("cons", &a[1])?);
    cx.charge(cost::items(v.len() as u64))?;
    Ok(Value::list(v))
}
fn list_star(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = a.len();
    let last = std::mem::take(&mut a[n - 1]);
    cx.charge(super::materialized_cost(&last))?;
    let mut v: Vec<Value> = a[..n - 1].iter_mut().map(std::mem::take).collect();
    v.extend(seq_iter("list*", &last)?);
    cx.charge(cost::items(v.len() as u64))?;
    Ok(if v.is_empty() { Value::Nil } else { Value::list(v) })
}
fn peek(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Vector(v) => Ok(v.back().cloned().unwrap_or(Value::Nil)),
        Value::List(v) => Ok(v.front().cloned().unwrap_or(Value::Nil)),
        Value::Nil => Ok(Value::Nil),
        other => expected("peek", "a vector or list", other),
    }
}
fn pop(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match std::mem::take(&mut a[0]) {
        Value::Vector(v) if v.is_empty() => Ok(Value::Nil),
        Value::Vector(mut v) => {
            Arc::make_mut(&mut v).pop_back();
            Ok(Value::Vector(v))
        }
        Value::List(v) if v.is_empty() => {
            err(ErrorKind::RuntimeError, "pop: the list is empty; check (empty? xs) before popping")
        }
        Value::List(mut v) => {
            Arc::make_mut(&mut v).pop_front();
            Ok(Value::List(v))
        }
        Value::Nil => Ok(Value::Nil),
        other => expected("pop", "a vector or list", &other),
    }
}
fn subvec(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let v = all(cx, "subvec", &a[0])?;
    let n = v.len() as i64;
    let start = int_arg("subvec", &a[1])?.clamp(0, n);
    let end = match a.get(2) {
        Some(e) => int_arg("subvec", e)?.clamp(start, n),
        None => n,
    };
    out_vec(cx, v.into_iter().skip(start as usize).take((end - start) as usize))
}
fn split_at(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = int_arg("split-at", &a[0])?.max(0) as usize;
    let v = all(cx, "split-at", &a[1])?;
    let n = n.min(v.len());
    let (l, r) = v.split_at(n);
    out_vec(cx, [Value::vector(l.iter().cloned()), Value::vector(r.iter().cloned())])
}
fn split_with(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = a[0].clone();
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
                let taken = crate::lazy::take(cx, n, l)?;
                all(cx, "interleave", &taken)?
            }
            None => {
                cx.charge(super::materialized_cost(c))?;
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
    cx.charge(cost::items(n.saturating_mul(2)).saturating_add(super::materialized_cost(&a[1])))?;
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
fn dedupe(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if a.is_empty() {
        return Ok(super::transducers::xf_dedupe());
    }
    if let Some(l) = crate::lazy::as_lazy(&a[0]) {
        return crate::lazy::dedupe(l);
    }
    let mut out: Vec<Value> = Vec::new();
    for item in seq_iter("dedupe", &a[0])? {
        if out.last().is_none_or(|l| !l.equiv(&item)) {
            cx.charge(super::kept_item_cost(&a[0]))?;
            out.push(item);
        }
    }
    out_vec(cx, out)
}
fn distinct_by(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = super::by_key(&a[0]);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for item in seq_iter("distinct-by", &coll)? {
        cx.tick(1)?;
        if seen.insert(cx.apply(&f, &mut [item.clone()])?) {
            cx.charge(super::kept_item_cost(&coll))?;
            out.push(item);
        }
    }
    out_vec(cx, out)
}
fn partition_by(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = super::by_key(&a[0]);
    if let Some(l) = crate::lazy::as_lazy(&a[1]) {
        return crate::lazy::partition_by(f, l);
    }
    let mut out: Vec<Value> = Vec::new();
    let mut run: Vec<Value> = Vec::new();
    let mut last: Option<Value> = None;
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for item in seq_iter("partition-by", &coll)? {
        cx.tick(1)?;
        let k = cx.apply(&f, &mut [item.clone()])?;
        if last.as_ref().is_some_and(|l| !l.equiv(&k)) {
            out.push(Value::vector(std::mem::take(&mut run)));
        }
        last = Some(k);
        cx.charge(super::kept_item_cost(&coll).max(cost::ELEM))?;
        run.push(item);
    }
    if !run.is_empty() {
        out.push(Value::vector(run));
    }
    out_vec(cx, out)
}
fn keep_indexed(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let Some(l) = crate::lazy::as_lazy(&a[1]) {
        // over an infinite sequence: keep the non-nil results of a lazy map-indexed
        let indexed = crate::lazy::map_indexed(a[0].clone(), l)?;
        let same =
            Function::native("identity", Held::values(Vec::new()), |_, _, call| Ok(std::mem::take(&mut call[0])));
        return match crate::lazy::as_lazy(&indexed) {
            Some(i) => crate::lazy::keep(same, i),
            None => Ok(indexed),
        };
    }
    let f = a[0].clone();
    let mut out = Vec::new();
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for (i, item) in seq_iter("keep-indexed", &coll)?.enumerate() {
        cx.tick(1)?;
        let r = cx.apply(&f, &mut [Value::Int(i as i64), item])?;
        if !r.is_nil() {
            cx.charge(super::kept_item_cost(&coll))?;
            out.push(r);
        }
    }
    out_vec(cx, out)
}
fn find(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Map(m) => Ok(m.get(&a[1]).map(|v| Value::vector([a[1].clone(), v.clone()])).unwrap_or(Value::Nil)),
        Value::Vector(v) => Ok(match &a[1] {
            Value::Int(i) if *i >= 0 && (*i as usize) < v.len() => {
                Value::vector([a[1].clone(), v[*i as usize].clone()])
            }
            _ => Value::Nil,
        }),
        Value::Nil => Ok(Value::Nil),
        other => expected("find", "a map or vector", other),
    }
}
fn entries(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Map(_) | Value::Nil => {
            let v = all(cx, "entries", &a[0])?;
            out_vec(cx, v)
        }
        other => expected("entries", "a map", other),
    }
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
        cx.charge(super::materialized_cost(c))?;
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
fn repeat(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let [x] = a {
        return Ok(crate::lazy::repeat(std::mem::take(x)));
    }
    let n = int_arg("repeat", &a[0])?.max(0) as u64;
    cx.charge(cost::items(n))?;
    cx.tick(n)?;
    Ok(Value::vector((0..n).map(|_| a[1].clone())))
}
/// Nodes `tree-seq` walks at once; a bigger (or infinite) tree becomes a lazy sequence
/// walked again one node at a time, so `(take n (tree-seq ...))` of an endless tree works.
const TREE_SEQ_EAGER_NODES: usize = 10_000;

fn tree_seq(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (branch, children) = (a[0].clone(), a[1].clone());
    let root = a[2].clone();
    let mut out = Vec::new();
    let mut stack = vec![std::mem::take(&mut a[2])];
    while let Some(node) = stack.pop() {
        if out.len() >= TREE_SEQ_EAGER_NODES {
            return Ok(crate::lazy::tree_seq(branch, children, root));
        }
        cx.tick(1)?;
        cx.charge(cost::ELEM)?;
        out.push(node.clone());
        if cx.apply(&branch, &mut [node.clone()])?.truthy() {
            let kids = cx.apply(&children, &mut [node])?;
            let mut kids = all(cx, "tree-seq", &kids)?;
            kids.reverse();
            stack.extend(kids);
        }
    }
    Ok(Value::vector(out))
}
fn every_pred(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let ps: Vec<Value> = a.iter_mut().map(std::mem::take).collect();
    Ok(Function::native("every-pred", Held::values(ps), |cx, ps, args| {
        for p in ps {
            for x in args.iter() {
                if !cx.apply(p, &mut [x.clone()])?.truthy() {
                    return Ok(Value::Bool(false));
                }
            }
        }
        Ok(Value::Bool(true))
    }))
}
fn some_fn(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let ps: Vec<Value> = a.iter_mut().map(std::mem::take).collect();
    Ok(Function::native("some-fn", Held::values(ps), |cx, ps, args| {
        // like Clojure's (or (p1 x) (p1 y) (p2 x) ...): the first truthy result, else the last one
        let mut last = Value::Nil;
        for p in ps {
            for x in args.iter() {
                last = cx.apply(p, &mut [x.clone()])?;
                if last.truthy() {
                    return Ok(last);
                }
            }
        }
        Ok(last)
    }))
}
fn set_arg(fname: &str, v: &Value) -> EvalResult<PSet> {
    match v {
        Value::Set(s) => Ok((**s).clone()),
        Value::Nil => Ok(PSet::new()),
        other => expected(fname, "a set", other),
    }
}
fn union(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let mut out = PSet::new();
    for s in a.iter() {
        for x in set_arg("union", s)?.iter() {
            out.insert(x.clone());
        }
    }
    cx.charge(cost::items(out.len() as u64))?;
    Ok(Value::Set(Arc::new(out)))
}
fn intersection(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let mut out = set_arg("intersection", &a[0])?;
    for s in a[1..].iter() {
        let other = set_arg("intersection", s)?;
        out = PSet::from_items(out.iter().filter(|x| other.contains(x)).cloned());
    }
    Ok(Value::Set(Arc::new(out)))
}
fn difference(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let mut out = set_arg("difference", &a[0])?;
    for s in a[1..].iter() {
        for x in set_arg("difference", s)?.iter() {
            out.remove(x);
        }
    }
    Ok(Value::Set(Arc::new(out)))
}
fn subset(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, y) = (set_arg("subset?", &a[0])?, set_arg("subset?", &a[1])?);
    b(x.iter().all(|v| y.contains(v)))
}
fn superset(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, y) = (set_arg("superset?", &a[0])?, set_arg("superset?", &a[1])?);
    b(y.iter().all(|v| x.contains(v)))
}
fn map_of<'a>(fname: &str, v: &'a Value) -> EvalResult<Option<&'a PMap>> {
    match v {
        Value::Map(m) => Ok(Some(m)),
        Value::Nil => Ok(None),
        other => expected(fname, "a map", other),
    }
}
fn map_invert(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let m = map_of("map-invert", &a[0])?;
    Ok(Value::map(m.into_iter().flat_map(|m| m.iter().map(|(k, v)| (v.clone(), k.clone())))))
}
fn rename_keys(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let Some(m) = map_of("rename-keys", &a[0])? else { return Ok(Value::Nil) };
    let renames = map_of("rename-keys", &a[1])?;
    let mut out = m.clone();
    if let Some(r) = renames {
        for (old, _) in r.iter() {
            out.remove(old);
        }
        for (old, new) in r.iter() {
            if let Some(v) = m.get(old) {
                out.insert(new.clone(), v.clone());
            }
        }
    }
    Ok(Value::Map(Arc::new(out)))
}
fn set_select(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = a[0].clone();
    let mut out = PSet::new();
    for x in set_arg("set/select", &a[1])?.iter() {
        cx.tick(1)?;
        if cx.apply(&f, &mut [x.clone()])?.truthy() {
            out.insert(x.clone());
        }
    }
    Ok(Value::Set(Arc::new(out)))
}
fn select_keys_of(m: &Value, ks: &[Value]) -> Value {
    match m {
        Value::Map(m) => Value::map(ks.iter().filter_map(|k| m.get(k).map(|v| (k.clone(), v.clone())))),
        _ => Value::empty_map(),
    }
}
fn set_join(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let xs = all(cx, "set/join", &a[0])?;
    let ys = all(cx, "set/join", &a[1])?;
    let mut out = PSet::new();
    let (Some(x0), Some(y0)) = (xs.first(), ys.first()) else {
        return Ok(Value::Set(Arc::new(out)));
    };
    // (key in x, key in y) pairs that must hold equal values
    let pairs: Vec<(Value, Value)> = match a.get(2) {
        Some(km) => match map_of("set/join", km)? {
            Some(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            None => Vec::new(),
        },
        None => match (x0, y0) {
            (Value::Map(x), Value::Map(y)) => {
                x.keys().filter(|k| y.contains_key(k)).map(|k| (k.clone(), k.clone())).collect()
            }
            _ => Vec::new(),
        },
    };
    // as in Clojure, the larger relation's values win when the merged maps share a key
    let y_wins = xs.len() <= ys.len();
    for x in &xs {
        let Value::Map(xm) = x else { return expected("set/join", "a set of maps", x) };
        for y in &ys {
            cx.tick(1)?;
            let Value::Map(ym) = y else { return expected("set/join", "a set of maps", y) };
            if pairs.iter().all(|(kx, ky)| xm.get(kx) == ym.get(ky)) {
                let (mut base, top) = if y_wins { ((**xm).clone(), ym) } else { ((**ym).clone(), xm) };
                for (k, v) in top.iter() {
                    base.insert(k.clone(), v.clone());
                }
                cx.charge(cost::HEADER + cost::ELEM * base.len() as u64)?;
                out.insert(Value::Map(Arc::new(base)));
            }
        }
    }
    Ok(Value::Set(Arc::new(out)))
}
fn set_rename(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let kmap = a[1].clone();
    let mut out = PSet::new();
    // one item at a time: nothing is collected first
    let coll = a[0].clone();
    for m in seq_iter("set/rename", &coll)? {
        out.insert(rename_keys(cx, &mut [m, kmap.clone()])?);
    }
    Ok(Value::Set(Arc::new(out)))
}
fn set_project(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let ks = all(cx, "set/project", &a[1])?;
    Ok(Value::set(set_arg("set/project", &a[0])?.iter().map(|m| select_keys_of(m, &ks))))
}
fn set_index(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let ks = all(cx, "set/index", &a[1])?;
    let mut out = PMap::new();
    for m in set_arg("set/index", &a[0])?.iter() {
        let k = select_keys_of(m, &ks);
        let mut members = match out.get(&k) {
            Some(Value::Set(s)) => (**s).clone(),
            _ => PSet::new(),
        };
        members.insert(m.clone());
        out.insert(k, Value::Set(Arc::new(members)));
    }
    Ok(Value::Map(Arc::new(out)))
}
fn rebuild(
    cx: &mut BuiltinContext,
    form: &Value,
    inner: &mut dyn FnMut(&mut BuiltinContext, Value) -> EvalResult,
) -> EvalResult {
    cx.tick(1)?;
    if let Value::Vector(c) | Value::List(c) = form {
        cx.check_stack()?;
        cx.charge(cost::items(c.len() as u64))?;
    } else if let Value::Set(c) = form {
        cx.check_stack()?;
        cx.charge(cost::items(c.len() as u64))?;
    } else if let Value::Map(c) = form {
        cx.check_stack()?;
        cx.charge(cost::entries(c.len() as u64))?;
    }
    Ok(match form {
        Value::Vector(items) => {
            let mut out = PVector::new();
            for x in items.iter() {
                out.push_back(inner(cx, x.clone())?);
            }
            Value::from_pvec(out)
        }
        Value::List(items) => {
            let mut out = PVector::new();
            for x in items.iter() {
                out.push_back(inner(cx, x.clone())?);
            }
            Value::List(Arc::new(out))
        }
        Value::Set(items) => {
            let mut out = PSet::new();
            for x in items.iter() {
                out.insert(inner(cx, x.clone())?);
            }
            Value::Set(Arc::new(out))
        }
        Value::Map(m) => {
            let mut out = PMap::new();
            for (k, v) in m.iter() {
                let entry = inner(cx, Value::vector([k.clone(), v.clone()]))?;
                match entry {
                    Value::Vector(e) if e.len() == 2 => out.insert(e[0].clone(), e[1].clone()),
                    other => return expected("walk", "map entries to stay [k v] pairs", &other),
                }
            }
            Value::Map(Arc::new(out))
        }
        other => other.clone(),
    })
}
fn walk(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (inner, outer) = (a[0].clone(), a[1].clone());
    let rebuilt = rebuild(cx, &a[2], &mut |cx, x| cx.apply(&inner, &mut [x]))?;
    cx.apply(&outer, &mut [rebuilt])
}
fn postwalk_with(
    cx: &mut BuiltinContext,
    f: &mut dyn FnMut(&mut BuiltinContext, Value) -> EvalResult,
    form: Value,
) -> EvalResult {
    let rebuilt = rebuild(cx, &form, &mut |cx, x| postwalk_with(cx, f, x))?;
    f(cx, rebuilt)
}
fn prewalk_with(
    cx: &mut BuiltinContext,
    f: &mut dyn FnMut(&mut BuiltinContext, Value) -> EvalResult,
    form: Value,
) -> EvalResult {
    let replaced = f(cx, form)?;
    rebuild(cx, &replaced, &mut |cx, x| prewalk_with(cx, f, x))
}
fn postwalk(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let fv = a[0].clone();
    postwalk_with(cx, &mut |cx, x| cx.apply(&fv, &mut [x]), std::mem::take(&mut a[1]))
}
fn prewalk(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let fv = a[0].clone();
    prewalk_with(cx, &mut |cx, x| cx.apply(&fv, &mut [x]), std::mem::take(&mut a[1]))
}
fn rekey(cx: &mut BuiltinContext, form: Value, to_keyword: bool) -> EvalResult {
    postwalk_with(
        cx,
        &mut |_, x| {
            Ok(match x {
                Value::Map(m) => Value::map(m.iter().map(|(k, v)| {
                    let k = match (k, to_keyword) {
                        (Value::Str(s), true) => Value::Keyword(s.clone()),
                        (Value::Keyword(s), false) => Value::Str(s.clone()),
                        (other, _) => other.clone(),
                    };
                    (k, v.clone())
                })),
                other => other,
            })
        },
        form,
    )
}
fn keywordize_keys(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    rekey(cx, std::mem::take(&mut a[0]), true)
}
fn stringify_keys(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    rekey(cx, std::mem::take(&mut a[0]), false)
}
fn prewalk_replace(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let smap = match &a[0] {
        Value::Map(m) => m.clone(),
        other => return expected("prewalk-replace", "a replacement map", other),
    };
    prewalk_with(cx, &mut |_, x| Ok(smap.get(&x).cloned().unwrap_or(x)), std::mem::take(&mut a[1]))
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
        cx.charge(super::kept_item_cost(coll))?;
        out.push(acc.clone());
    }
    out_vec(cx, out)
}
fn take_nth(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = int_arg("take-nth", &a[0])?;
    if n <= 0 {
        return err(ErrorKind::RuntimeError, "take-nth: n must be positive (a step of 0 would never end)");
    }
    if let Some(l) = crate::lazy::as_lazy(&a[1]) {
        // over an infinite sequence: every n-th item, lazily (items may be nil)
        let every = Function::native("take-nth", Held::values(vec![Value::Int(n)]), |_, held, call| {
            let n = match held.first() {
                Some(Value::Int(n)) => *n,
                _ => 1,
            };
            let hit = matches!(call.first(), Some(Value::Int(i)) if i % n == 0);
            Ok(if hit { Value::vector(call.get_mut(1).map(std::mem::take)) } else { Value::vector([]) })
        });
        let tagged = crate::lazy::map_indexed(every, l)?;
        let same =
            Function::native("identity", Held::values(Vec::new()), |_, _, call| Ok(std::mem::take(&mut call[0])));
        return match crate::lazy::as_lazy(&tagged) {
            Some(t) => crate::lazy::mapcat(same, t),
            None => Ok(tagged),
        };
    }
    cx.charge(super::materialized_cost(&a[1]))?;
    let v: Vec<Value> = seq_iter("take-nth", &a[1])?.step_by(n as usize).collect();
    out_vec(cx, v)
}
fn rseq(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Vector(v) if v.is_empty() => Ok(Value::Nil),
        Value::Vector(v) => out_vec(cx, v.iter().rev().cloned()),
        Value::Nil => Ok(Value::Nil),
        other => expected("rseq", "a vector", other),
    }
}
fn doall(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(std::mem::take(&mut a[0]))
}
fn dorun(_: &mut BuiltinContext, _: &mut [Value]) -> EvalResult {
    Ok(Value::Nil)
}
fn run_bang(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = a[0].clone();
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for x in seq_iter("run!", &coll)? {
        cx.tick(1)?;
        cx.apply(&f, &mut [x])?;
    }
    Ok(Value::Nil)
}
fn memoize(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(std::mem::take(&mut a[0]))
}
