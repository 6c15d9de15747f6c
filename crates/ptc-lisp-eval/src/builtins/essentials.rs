//! The functions data programs reach for most: predicates, ordering, grouping, slicing,
//! merging, and the everyday string helpers.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

/// Hashing for the builtins' working tables: seeded per table, much faster than SipHash
/// on short strings and keywords.
type FastHash = foldhash::fast::RandomState;
use std::sync::Arc;

use super::{Arity, Builtin, Category, compare_values, expected, int_arg, seq_iter, seq_len, str_arg};
use crate::builtins::context::BuiltinContext;
use crate::error::{ErrorKind, EvalResult, err};
use crate::function::{Function, Held};
use crate::interp::get_in_value;
use crate::limits::cost;
use crate::value::{PMap, PSet, PVector, Value};

use Arity::*;
use Category::{Collection, Core, Functional, Sequence, Set, String as Str};

/// Essential builtins.
pub static BUILTINS: &[Builtin] = &[
    Builtin::new("fn?", Exact(1), Core, is_fn)
        .doc("True for functions.")
        .ex(&[("(fn? inc)", "true"), ("(fn? :a)", "false")]),
    Builtin::new("map?", Exact(1), Core, is_map).doc("True for maps.").ex(&[("(map? {})", "true")]),
    Builtin::new("vector?", Exact(1), Core, is_vector).doc("True for vectors.").ex(&[("(vector? [1])", "true")]),
    Builtin::new("set?", Exact(1), Set, is_set).doc("True for sets.").ex(&[("(set? #{1})", "true")]),
    Builtin::new("string?", Exact(1), Core, is_string).doc("True for strings.").ex(&[("(string? \"a\")", "true")]),
    Builtin::new("keyword?", Exact(1), Core, is_keyword).doc("True for keywords.").ex(&[("(keyword? :a)", "true")]),
    Builtin::new("number?", Exact(1), Core, is_number)
        .doc("True for integers and floats.")
        .ex(&[("(number? 1.5)", "true")]),
    Builtin::new("integer?", Exact(1), Core, is_integer)
        .alias(&["int?"])
        .doc("True for integers.")
        .ex(&[("(integer? 1)", "true"), ("(integer? 1.0)", "false")]),
    Builtin::new("float?", Exact(1), Core, is_float)
        .alias(&["double?"])
        .doc("True for floats.")
        .ex(&[("(float? 1.0)", "true")]),
    Builtin::new("boolean?", Exact(1), Core, is_boolean)
        .doc("True for true and false.")
        .ex(&[("(boolean? false)", "true")]),
    Builtin::new("coll?", Exact(1), Core, is_coll)
        .doc("True for vectors, maps and sets.")
        .ex(&[("(coll? [1])", "true")]),
    Builtin::new("true?", Exact(1), Core, is_true).doc("True only for true.").ex(&[("(true? 1)", "false")]),
    Builtin::new("false?", Exact(1), Core, is_false).doc("True only for false.").ex(&[("(false? false)", "true")]),
    Builtin::new("empty?", Exact(1), Collection, is_empty).lazy()
        .doc("True for nil and empty collections or strings.")
        .ex(&[("(empty? [])", "true"), ("(empty? nil)", "true")]),
    Builtin::new("identity", Exact(1), Functional, identity).doc("Returns its argument.").ex(&[("(identity 3)", "3")]),
    Builtin::new("second", Exact(1), Sequence, second).lazy().doc("Second item, or nil.").ex(&[("(second [1 2 3])", "2")]),
    Builtin::new("last", Exact(1), Sequence, last).doc("Last item, or nil.").ex(&[("(last [1 2 3])", "3")]),
    Builtin::new("next", Exact(1), Sequence, next).lazy()
        .doc("All but the first item, or nil when nothing is left.")
        .ex(&[("(next [1])", "nil")]),
    Builtin::new("nth", Range(2, 3), Sequence, nth).lazy()
        .doc("Item at an index; nil (or the default) when out of range.")
        .ex(&[("(nth [10 20] 1)", "20"), ("(nth [10 20] 5 :none)", ":none")]),
    Builtin::new("take", Range(1, 2), Sequence, take).lazy().doc("The first n items.").ex(&[("(take 2 [1 2 3])", "[1 2]")]),
    Builtin::new("drop", Range(1, 2), Sequence, drop).lazy().doc("All but the first n items.").ex(&[("(drop 2 [1 2 3])", "[3]")]),
    Builtin::new("take-while", Range(1, 2), Sequence, take_while).lazy()
        .doc("Leading items while (pred item) is truthy.")
        .ex(&[("(take-while pos? [1 2 -1 3])", "[1 2]")]),
    Builtin::new("drop-while", Range(1, 2), Sequence, drop_while).lazy()
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
        .doc("Sorted items (numbers, strings or keywords; optional comparator fn, :asc or :desc).")
        .ex(&[("(sort [3 1 2])", "[1 2 3]"), ("(sort > [3 1 2])", "[3 2 1]")]),
    Builtin::new("sort-by", Range(2, 3), Sequence, sort_by)
        .doc("Items sorted by (keyfn item); optional comparator, :asc or :desc. Stable.")
        .ex(&[
            ("(sort-by :age [{:age 3} {:age 1}])", "[{:age 1} {:age 3}]"),
            ("(sort-by count > [\"a\" \"abc\"])", "[\"abc\" \"a\"]"),
        ]),
    Builtin::new("group-by", Exact(2), Sequence, group_by)
        .doc("Map from (f item) to the vector of items with that result.")
        .ex(&[("(group-by odd? [1 2 3])", "{false [2] true [1 3]}")]),
    Builtin::new("frequencies", Exact(1), Sequence, frequencies)
        .doc("Map from item to how often it occurs.")
        .ex(&[("(frequencies [:a :b :a])", "{:a 2 :b 1}")]),
    Builtin::new("distinct", Range(0, 1), Sequence, distinct).lazy()
        .doc("Items without repeats, first occurrence kept.")
        .ex(&[("(distinct [1 2 1 3])", "[1 2 3]")]),
    Builtin::new("some", Exact(2), Sequence, some).lazy()
        .doc("The first truthy (pred item), or nil.")
        .ex(&[("(some even? [1 4 5])", "true"), ("(some #{2} [1 2])", "2")]),
    Builtin::new("every?", Exact(2), Sequence, every)
        .doc("True when (pred item) is truthy for every item.")
        .ex(&[("(every? pos? [1 2])", "true")]),
    Builtin::new("not-any?", Exact(2), Sequence, not_any).lazy()
        .doc("True when (pred item) is falsy for every item.")
        .ex(&[("(not-any? neg? [1 2])", "true")]),
    Builtin::new("keep", Range(1, 2), Sequence, keep).lazy()
        .fused(crate::fusion::Step::Keep)
        .doc("Non-nil results of (f item).")
        .ex(&[("(keep :a [{:a 1} {:b 2}])", "[1]")]),
    Builtin::new("mapcat", AtLeast(1), Sequence, mapcat).lazy()
        .doc("Concatenation of (f item) for each item.")
        .ex(&[("(mapcat (fn [x] [x x]) [1 2])", "[1 1 2 2]")]),
    Builtin::new("partition", Range(2, 4), Sequence, partition).lazy()
        .doc("Groups of n items (step optional); an incomplete last group is dropped, or filled from a pad collection: (partition n step pad coll).")
        .ex(&[("(partition 2 [1 2 3 4 5])", "[[1 2] [3 4]]"), ("(partition 2 2 [0] [1 2 3])", "[[1 2] [3 0]]")]),
    Builtin::new("partition-all", Range(1, 3), Sequence, partition_all).lazy()
        .doc("Groups of n items; the last group may be shorter.")
        .ex(&[("(partition-all 2 [1 2 3])", "[[1 2] [3]]")]),
    Builtin::new("merge", AtLeast(0), Collection, merge)
        .doc("Maps merged left to right; later keys win.")
        .ex(&[("(merge {:a 1} {:a 2 :b 3})", "{:a 2 :b 3}")]),
    Builtin::new("merge-with", AtLeast(1), Collection, merge_with)
        .doc("Maps merged; values of repeated keys combined with f.")
        .ex(&[("(merge-with + {:a 1} {:a 2})", "{:a 3}")]),
    Builtin::new("select-keys", Exact(2), Collection, select_keys)
        .doc("Map with only the given keys.")
        .ex(&[("(select-keys {:a 1 :b 2} [:a :c])", "{:a 1}")]),
    Builtin::new("contains?", Exact(2), Collection, contains)
        .doc("Key present in a map, member of a set, or (DIV-27) element of a vector.")
        .ex(&[("(contains? {:a nil} :a)", "true"), ("(contains? [10 20] 10)", "true")]),
    Builtin::new("zipmap", Exact(2), Collection, zipmap)
        .doc("Map from keys to values, pairing in order.")
        .ex(&[("(zipmap [:a :b] [1 2])", "{:a 1 :b 2}")]),
    Builtin::new("assoc-in", Exact(3), Collection, assoc_in)
        .doc("Nested assoc along a path, creating maps as needed.")
        .ex(&[("(assoc-in {} [:a :b] 1)", "{:a {:b 1}}")]),
    Builtin::new("update-in", AtLeast(3), Collection, update_in)
        .doc("Nested update along a path.")
        .ex(&[("(update-in {:a {:b 1}} [:a :b] inc)", "{:a {:b 2}}")]),
    Builtin::new("set", Exact(1), Set, set).doc("A set of the items.").ex(&[("(set [1 2 2])", "#{1 2}")]),
    Builtin::new("hash-set", AtLeast(0), Set, hash_set)
        .doc("A set of the arguments.")
        .ex(&[("(hash-set 1 2)", "#{1 2}")]),
    Builtin::new("disj", AtLeast(1), Set, disj)
        .doc("Set without the given members.")
        .ex(&[("(disj #{1 2} 1)", "#{2}")]),
    Builtin::new("avg", Exact(1), Sequence, avg)
        .ext()
        .doc("Average of numbers as a float; nil when empty.")
        .ex(&[("(avg [10 20])", "15.0"), ("(avg [])", "nil")]),
    Builtin::new("sum-by", Exact(2), Sequence, sum_by)
        .ext()
        .doc("Sum of (f item), skipping nil.")
        .ex(&[("(sum-by :n [{:n 1} {:n 2} {}])", "3")]),
    Builtin::new("avg-by", Exact(2), Sequence, avg_by)
        .ext()
        .doc("Average of (f item), skipping nil; nil when nothing is left.")
        .ex(&[("(avg-by :n [{:n 1} {:n 2}])", "1.5")]),
    Builtin::new("min-by", Exact(2), Sequence, min_by)
        .ext()
        .doc("The item with the smallest (f item), skipping nil.")
        .ex(&[("(min-by :n [{:n 3} {:n 1}])", "{:n 1}")]),
    Builtin::new("max-by", Exact(2), Sequence, max_by)
        .ext()
        .doc("The item with the largest (f item), skipping nil.")
        .ex(&[("(max-by :n [{:n 3} {:n 1}])", "{:n 3}")]),
    Builtin::new("comp", AtLeast(0), Functional, comp)
        .doc("Composition, right to left.")
        .ex(&[("((comp inc inc) 1)", "3")]),
    Builtin::new("partial", AtLeast(1), Functional, partial)
        .doc("f with leading arguments fixed.")
        .ex(&[("((partial + 10) 1)", "11")]),
    Builtin::new("complement", Exact(1), Functional, complement)
        .doc("A function returning the boolean opposite of f.")
        .ex(&[("((complement even?) 3)", "true")]),
    Builtin::new("constantly", Exact(1), Functional, constantly)
        .doc("A function always returning x.")
        .ex(&[("((constantly 5) 1 2)", "5")]),
    Builtin::new("name", Exact(1), Str, name)
        .doc("Name of a keyword or symbol (without the colon or namespace), or a string.")
        .ex(&[("(name :user-id)", "\"user-id\""), ("(name :order/paid)", "\"paid\"")]),
    Builtin::new("keyword", Range(1, 2), Core, keyword)
        .doc("Keyword from a string, or from a namespace and a name (a keyword passes through; nil stays nil).")
        .ex(&[("(keyword \"a\")", ":a"), ("(keyword \"order\" \"paid\")", ":order/paid")]),
    Builtin::new("join", Range(1, 2), Str, join)
        .doc("Items as strings (nil as \"\") joined, with an optional separator.")
        .ex(&[("(join \", \" [1 2 3])", "\"1, 2, 3\"")]),
    Builtin::new("upper-case", Exact(1), Str, upper)
        .alias(&["upcase"])
        .doc("Upper-cased string.")
        .ex(&[("(upper-case \"abc\")", "\"ABC\"")]),
    Builtin::new("lower-case", Exact(1), Str, lower)
        .alias(&["downcase"])
        .doc("Lower-cased string.")
        .ex(&[("(lower-case \"ABC\")", "\"abc\"")]),
    Builtin::new("trim", Exact(1), Str, trim)
        .doc("String without surrounding whitespace.")
        .ex(&[("(trim \"  a \")", "\"a\"")]),
    Builtin::new("includes?", Exact(2), Str, includes)
        .doc("True when the string contains the substring.")
        .ex(&[("(includes? \"hello\" \"ell\")", "true")]),
    Builtin::new("starts-with?", Exact(2), Str, starts_with)
        .doc("True when the string starts with the prefix.")
        .ex(&[("(starts-with? \"hello\" \"he\")", "true")]),
    Builtin::new("ends-with?", Exact(2), Str, ends_with)
        .doc("True when the string ends with the suffix.")
        .ex(&[("(ends-with? \"hello\" \"lo\")", "true")]),
    Builtin::new("subs", Range(2, 3), Str, subs)
        .doc("Substring by character indexes [start, end); an end past the string is cut, a start out of range (or negative) gives \"\" (DIV-22).")
        .ex(&[("(subs \"hello\" 1 3)", "\"el\"")]),
    Builtin::new("update-vals", Exact(2), Collection, update_vals)
        .doc("Map with f applied to every value.")
        .ex(&[("(update-vals {:a 1 :b 2} inc)", "{:a 2 :b 3}")]),
    Builtin::new("update-keys", Exact(2), Collection, update_keys)
        .doc("Map with f applied to every key (colliding keys: last wins).")
        .ex(&[("(update-keys {:a 1} name)", "{\"a\" 1}")]),
    Builtin::new("sorted-map", AtLeast(0), Collection, sorted_map)
        .doc("A map of key/value arguments (every map is sorted by key).")
        .ex(&[("(sorted-map :b 2 :a 1)", "{:a 1 :b 2}")]),
    Builtin::new("sorted-set", AtLeast(0), Set, sorted_set)
        .doc("A set of the arguments (every set is sorted).")
        .ex(&[("(sorted-set 3 1 2)", "#{1 2 3}")]),
    Builtin::new("key", Exact(1), Collection, key)
        .doc("Key of a map entry [k v].")
        .ex(&[("(key (first {:a 1}))", ":a")]),
    Builtin::new("val", Exact(1), Collection, val)
        .doc("Value of a map entry [k v].")
        .ex(&[("(val (first {:a 1}))", "1")]),
    Builtin::new("ffirst", Exact(1), Sequence, ffirst).lazy()
        .doc("First item of the first item.")
        .ex(&[("(ffirst [[1 2] [3]])", "1")]),
    Builtin::new("reduce-kv", Exact(3), Sequence, reduce_kv)
        .doc("Folds (f acc k v) over a map (or index/item over a vector).")
        .ex(&[("(reduce-kv (fn [a k v] (+ a v)) 0 {:x 1 :y 2})", "3")]),
    Builtin::new("max-key", AtLeast(2), Sequence, max_key)
        .doc("The argument with the largest (f x); ties go to the last.")
        .ex(&[("(max-key count \"a\" \"abc\")", "\"abc\"")]),
    Builtin::new("min-key", AtLeast(2), Sequence, min_key)
        .doc("The argument with the smallest (f x); ties go to the last.")
        .ex(&[("(min-key count \"ab\" \"c\")", "\"c\"")]),
    Builtin::new("split", Range(2, 3), Str, split)
        .doc("Splits a string on a regex or a 1-character string; trailing empty strings are dropped (as in Java).")
        .ex(&[("(split \"a,b,,c,,\" #\",\")", "[\"a\" \"b\" \"\" \"c\"]"), ("(split \"a b\" \" \")", "[\"a\" \"b\"]")]),
    Builtin::new("mod", Exact(2), Category::Math, modulo)
        .arith(crate::node::ArithOp::Mod)
        .doc("Floored modulus: the result has the sign of the divisor.")
        .ex(&[("(mod -7 2)", "1"), ("(mod 5.5 2)", "1.5")]),
    Builtin::new("rem", Exact(2), Category::Math, rem)
        .arith(crate::node::ArithOp::Rem)
        .doc("Truncated remainder: the result has the sign of the dividend.")
        .ex(&[("(rem -7 2)", "-1")]),
    Builtin::new("quot", Exact(2), Category::Math, quot)
        .arith(crate::node::ArithOp::Quot)
        .doc("Integer quotient, truncated toward zero.")
        .ex(&[("(quot -7 2)", "-3")]),
    Builtin::new("blank?", Exact(1), Str, blank)
        .doc("True for nil, empty or whitespace-only strings.")
        .ex(&[("(blank? \"  \")", "true")]),
];

fn pred(args: &[Value], f: impl Fn(&Value) -> bool) -> EvalResult {
    Ok(Value::Bool(f(&args[0])))
}
fn is_fn(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Func(_)))
}
fn is_map(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Map(_)))
}
fn is_vector(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Vector(_)))
}
fn is_set(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Set(_)))
}
fn is_string(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Str(_)))
}
fn is_keyword(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Keyword(_)))
}
fn is_number(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Int(_) | Value::Float(_)))
}
fn is_integer(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Int(_)))
}
fn is_float(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Float(_)))
}
fn is_boolean(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Bool(_)))
}
fn is_coll(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_)))
}
fn is_true(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Bool(true)))
}
fn is_false(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Bool(false)))
}
fn is_empty(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    // an infinite sequence is never empty; a finite one is asked for its first item
    if let Some(l) = crate::lazy::as_lazy(&a[0]) {
        return Ok(Value::Bool(crate::lazy::is_empty(cx, &l.clone())?));
    }
    match seq_len(&a[0]) {
        Some(n) => Ok(Value::Bool(n == 0)),
        None => expected("empty?", "a collection, string or nil", &a[0]),
    }
}
fn identity(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(std::mem::take(&mut a[0]))
}

fn replace(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if a.len() == 3 {
        return super::text::replace(cx, a);
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

fn items(cx: &mut BuiltinContext, fname: &str, v: &Value) -> EvalResult<Vec<Value>> {
    super::collect_items(cx, fname, v)
}

fn vec_out(cx: &mut BuiltinContext, items: impl IntoIterator<Item = Value>) -> EvalResult {
    let v: PVector = items.into_iter().collect();
    cx.charge(cost::items(v.len() as u64))?;
    Ok(Value::from_pvec(v))
}

fn second(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let Some(l) = crate::lazy::as_lazy(&a[0]) {
        return crate::lazy::nth(cx, 1, l);
    }
    Ok(seq_iter("second", &a[0])?.nth(1).unwrap_or(Value::Nil))
}
fn last(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Vector(v) | Value::List(v) => Ok(v.back().cloned().unwrap_or(Value::Nil)),
        other => Ok(seq_iter("last", other)?.last().unwrap_or(Value::Nil)),
    }
}
fn next(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let Some(l) = crate::lazy::as_lazy(&a[0]) {
        let rest = crate::lazy::drop(1, l)?;
        return crate::lazy::nil_if_empty(cx, rest);
    }
    if let Value::List(v) = &a[0] {
        if v.len() <= 1 {
            return Ok(Value::Nil);
        }
        cx.charge(cost::HEADER)?;
        return Ok(Value::List(Arc::new(v.skip(1))));
    }
    cx.charge(super::materialized_cost(&a[0]))?;
    let rest: Vec<Value> = seq_iter("next", &a[0])?.skip(1).collect();
    if rest.is_empty() { Ok(Value::Nil) } else { vec_out(cx, rest) }
}
fn nth(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let i = int_arg("nth", &a[1])?;
    if let Some(l) = crate::lazy::as_lazy(&a[0]) {
        let l = l.clone();
        let found = if i < 0 { None } else { crate::lazy::nth_or(cx, i as usize, &l)? };
        return Ok(found.unwrap_or_else(|| a.get_mut(2).map(std::mem::take).unwrap_or(Value::Nil)));
    }
    // vectors and lists index directly; other seqables walk to the index without
    // building the items before it (a string's characters, a map's entries)
    let found = match &a[0] {
        _ if i < 0 => None,
        Value::Vector(v) | Value::List(v) => v.get(i as usize).cloned(),
        Value::Str(s) => s.chars().nth(i as usize).map(|c| Value::str(c.to_string())),
        Value::Map(m) => m.iter().nth(i as usize).map(|(k, v)| Value::vector([k.clone(), v.clone()])),
        other => seq_iter("nth", other)?.nth(i as usize),
    };
    Ok(found.unwrap_or_else(|| a.get_mut(2).map(std::mem::take).unwrap_or(Value::Nil)))
}
fn count_arg(fname: &str, v: &Value) -> EvalResult<usize> {
    Ok(int_arg(fname, v)?.max(0) as usize)
}
fn take(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = count_arg("take", &a[0])?;
    if a.len() == 1 {
        return Ok(super::transducers::xf_take(n as i64));
    }
    if let Some(l) = crate::lazy::as_lazy(&a[1]) {
        return crate::lazy::take(cx, n, l);
    }
    cx.charge(super::materialized_cost(&a[1]))?;
    let out: Vec<Value> = seq_iter("take", &a[1])?.take(n).collect();
    vec_out(cx, out)
}
fn drop(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let n = count_arg("drop", &a[0])?;
    if a.len() == 1 {
        return Ok(super::transducers::xf_drop(n as i64));
    }
    if let Some(l) = crate::lazy::as_lazy(&a[1]) {
        return crate::lazy::drop(n, l);
    }
    cx.charge(super::materialized_cost(&a[1]))?;
    let out: Vec<Value> = seq_iter("drop", &a[1])?.skip(n).collect();
    vec_out(cx, out)
}
fn take_while(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = a[0].clone();
    if a.len() == 1 {
        return Ok(super::transducers::xf_take_while(f));
    }
    if let Some(l) = crate::lazy::as_lazy(&a[1]) {
        return crate::lazy::take_while(f, l);
    }
    let mut out = Vec::new();
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for item in seq_iter("take-while", &coll)? {
        cx.tick(1)?;
        if !cx.apply(&f, &mut [item.clone()])?.truthy() {
            break;
        }
        out.push(item);
    }
    vec_out(cx, out)
}
fn drop_while(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = a[0].clone();
    if a.len() == 1 {
        return Ok(super::transducers::xf_drop_while(f));
    }
    if let Some(l) = crate::lazy::as_lazy(&a[1]) {
        return crate::lazy::drop_while(f, l);
    }
    let all = items(cx, "drop-while", &a[1])?;
    let mut start = all.len();
    for (i, item) in all.iter().enumerate() {
        cx.tick(1)?;
        if !cx.apply(&f, &mut [item.clone()])?.truthy() {
            start = i;
            break;
        }
    }
    vec_out(cx, all.into_iter().skip(start))
}
/// `(apply concat x ... s)` with a lazy `s`: the leading collections, then the items of
/// each collection `s` yields, lazily.
fn concat_lazy_tail(cx: &mut BuiltinContext, lead: Vec<Value>, tail: &Arc<crate::lazy::LazySeq>) -> EvalResult {
    let tail = crate::lazy::cat(tail)?;
    let mut args: Vec<Value> = lead;
    args.push(tail);
    concat(cx, &mut args)
}

fn concat(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
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
            cx.charge(cost::ELEM.saturating_mul(n).saturating_add(super::materialized_cost(c)))?;
            prefix.extend(seq_iter("concat", c)?);
        }
        cx.charge(cost::HEADER)?;
        if let Some(l) = crate::lazy::as_lazy(&a[k]) {
            return crate::lazy::concat(prefix, l);
        }
    }
    // the total is charged before anything is copied: (apply concat (repeat 1000 v))
    let mut total = cost::HEADER;
    for c in a.iter() {
        seq_iter("concat", c)?;
        let n = seq_len(c).unwrap_or(0) as u64;
        total = total.saturating_add(cost::ELEM.saturating_mul(n)).saturating_add(super::materialized_cost(c));
    }
    cx.charge(total)?;
    let mut out = PVector::new();
    for c in a.iter() {
        match c {
            Value::Vector(v) | Value::List(v) => out.append((**v).clone()),
            other => out.extend(seq_iter("concat", other)?),
        }
    }
    Ok(Value::from_pvec(out))
}
fn reverse(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let mut v = items(cx, "reverse", &a[0])?;
    v.reverse();
    vec_out(cx, v)
}

/// How `sort`/`sort-by` order two keys.
enum Order {
    Asc,
    Desc,
    Fn(Value),
}

fn order_arg(v: Value) -> Order {
    match &v {
        Value::Keyword(k) if &**k == "desc" => Order::Desc,
        Value::Keyword(k) if &**k == "asc" => Order::Asc,
        _ => Order::Fn(v),
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
            return expected(fname, "sortable keys (numbers, strings, keywords, booleans or vectors)", k);
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
                        super::brief(first),
                        super::brief(k)
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
            pairs.sort_by(|(a, _), (b, _)| {
                let o = compare_values(a, b).ok().flatten().unwrap_or_else(|| a.cmp(b));
                if desc { o.reverse() } else { o }
            });
            Ok(pairs)
        }
        Order::Fn(f) => {
            let keys: Vec<Value> = pairs.iter().map(|(k, _)| k.clone()).collect();
            let order = match known_comparator(f) {
                // `#(compare %2 %1)` and friends: the builtin, without a closure call each time
                Some(flipped) => merge_sort_by(cx, &keys, |_, a, b| {
                    // what the `compare` builtin answers for (f b a), read in place
                    let (x, y) = if flipped { (a, b) } else { (b, a) };
                    Ok(super::compare_values(x, y)? == Some(std::cmp::Ordering::Less))
                })?,
                None => {
                    merge_sort_by(cx, &keys, |cx, a, b| Ok(b_goes_first(&cx.apply(f, &mut [b.clone(), a.clone()])?)))?
                }
            };
            let mut slots: Vec<Option<(Value, Value)>> = pairs.into_iter().map(Some).collect();
            Ok(order.into_iter().filter_map(|i| slots.get_mut(i).and_then(Option::take)).collect())
        }
    }
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

/// A comparator that is exactly `(fn [x y] (compare x y))` or `(fn [x y] (compare y x))`
/// (`#(compare %1 %2)`, `#(compare %2 %1)`): whether the arguments are swapped.
fn known_comparator(f: &Value) -> Option<bool> {
    use crate::function::FnRepr;
    use crate::node::{Node, Pattern};
    let Value::Func(func) = f else { return None };
    let FnRepr::Closure(c) = func.repr() else { return None };
    let l = &c.lambda;
    if !c.captures.is_empty() || l.rest.is_some() || l.uses_self {
        return None;
    }
    let [Pattern::Bind(p0), Pattern::Bind(p1)] = l.params.as_slice() else { return None };
    let Node::CallBuiltin(b, args, _) = &l.body else { return None };
    if b.name != "compare" {
        return None;
    }
    let local = |n: &Node| match n {
        Node::Local(s) | Node::LocalMove(s) => Some(*s),
        _ => None,
    };
    match (args.first().and_then(local), args.get(1).and_then(local), args.len()) {
        (Some(x), Some(y), 2) if x == *p0 && y == *p1 => Some(false),
        (Some(x), Some(y), 2) if x == *p1 && y == *p0 => Some(true),
        _ => None,
    }
}

/// Stable bottom-up merge sort of `keys`' indices that tolerates any comparator answers (a
/// user function may be inconsistent): n log n calls of `b_first(a, b)`, which says whether
/// `b`, from the right run, goes before `a`.
fn merge_sort_by(
    cx: &mut BuiltinContext,
    keys: &[Value],
    mut b_first: impl FnMut(&mut BuiltinContext, &Value, &Value) -> EvalResult<bool>,
) -> EvalResult<Vec<usize>> {
    merge_sort_idx(cx, keys.len(), |cx, i, j| b_first(cx, &keys[i], &keys[j]))
}

/// [`merge_sort_by`] over the indices `0..n` themselves: `b_first(i, j)` says whether item
/// `j`, from the right run, goes before item `i`.
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
            Order::Fn(f) => {
                let flipped = known_comparator(f).unwrap_or(false);
                merge_sort_idx(cx, self.rows, |_, a, b| {
                    let (x, y) = if flipped { (a, b) } else { (b, a) };
                    Ok(self.compare(x, y)? == Some(Ordering::Less))
                })
            }
        }
    }
}

fn sort(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (order, coll) = if a.len() == 2 {
        (order_arg(std::mem::take(&mut a[0])), std::mem::take(&mut a[1]))
    } else {
        (Order::Asc, std::mem::take(&mut a[0]))
    };
    let vals = items(cx, "sort", &coll)?;
    if !matches!(order, Order::Fn(_)) {
        check_sortable("sort", &vals)?;
    }
    let pairs = vals.into_iter().map(|v| (v.clone(), v)).collect();
    let sorted = sort_pairs(cx, pairs, &order)?;
    vec_out(cx, sorted.into_iter().map(|(_, v)| v))
}

fn sort_by(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let keyfn = super::by_key(&a[0]);
    let (order, coll) = if a.len() == 3 {
        (order_arg(std::mem::take(&mut a[1])), std::mem::take(&mut a[2]))
    } else {
        (Order::Asc, std::mem::take(&mut a[1]))
    };
    let items = items(cx, "sort-by", &coll)?;
    // keys that are vectors of plain values of one width (`(juxt :a :b)`) are spread into
    // one table when only the builtin order looks at them
    let mut flat = match &order {
        Order::Asc | Order::Desc => Some(FlatKeys::new(false)),
        Order::Fn(f) => known_comparator(f).map(|_| FlatKeys::new(true)),
    };
    let mut pairs = Vec::new();
    // the items while their keys are in `flat`
    let mut vals = Vec::new();
    for item in items {
        cx.tick(1)?;
        let k = cx.apply(&keyfn, &mut [item.clone()])?;
        match &mut flat {
            Some(f) => match f.push(k) {
                Ok(()) => vals.push(item),
                Err(k) => {
                    pairs = f.unspread().into_iter().zip(std::mem::take(&mut vals)).collect();
                    pairs.push((k, item));
                    flat = None;
                }
            },
            None => pairs.push((k, item)),
        }
    }
    if let Some(f) = flat {
        let order = f.sort(cx, &order)?;
        let mut slots: Vec<Option<Value>> = vals.into_iter().map(Some).collect();
        return vec_out(cx, order.into_iter().filter_map(|i| slots.get_mut(i).and_then(Option::take)));
    }
    if !matches!(order, Order::Fn(_)) {
        let keys: Vec<Value> = pairs.iter().map(|(k, _)| k.clone()).collect();
        check_sortable("sort-by", &keys)?;
    }
    let sorted = sort_pairs(cx, pairs, &order)?;
    vec_out(cx, sorted.into_iter().map(|(_, v)| v))
}

fn group_by(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = super::by_key(&a[0]);
    let mut groups: HashMap<Value, PVector, FastHash> = HashMap::default();
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for item in seq_iter("group-by", &coll)? {
        cx.tick(1)?;
        let k = cx.apply(&f, &mut [item.clone()])?;
        cx.charge(cost::ELEM)?;
        groups.entry(k).or_default().push_back(item);
    }
    cx.charge(cost::entries(groups.len() as u64))?;
    Ok(Value::map(groups.into_iter().map(|(k, v)| (k, Value::from_pvec(v)))))
}

fn frequencies(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let mut counts: HashMap<Value, i64, FastHash> = HashMap::default();
    // one item at a time: nothing is collected first
    let coll = a[0].clone();
    for item in seq_iter("frequencies", &coll)? {
        cx.tick(1)?;
        *counts.entry(item).or_insert(0) += 1;
    }
    cx.charge(cost::entries(counts.len() as u64))?;
    Ok(Value::map(counts.into_iter().map(|(k, n)| (k, Value::Int(n)))))
}

fn distinct(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if a.is_empty() {
        return Ok(super::transducers::xf_distinct());
    }
    if let Some(l) = crate::lazy::as_lazy(&a[0]) {
        return crate::lazy::distinct(l);
    }
    let mut seen: HashSet<Value, FastHash> = HashSet::default();
    let mut out = Vec::new();
    // one item at a time: nothing is collected first
    let coll = a[0].clone();
    for item in seq_iter("distinct", &coll)? {
        cx.tick(1)?;
        if seen.insert(item.clone()) {
            out.push(item);
        }
    }
    vec_out(cx, out)
}

fn some(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut a[0]);
    if let Some(l) = crate::lazy::as_lazy(&a[1]) {
        return crate::lazy::some(cx, &f, l);
    }
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for item in seq_iter("some", &coll)? {
        cx.tick(1)?;
        let r = cx.apply(&f, &mut [item])?;
        if r.truthy() {
            return Ok(r);
        }
    }
    Ok(Value::Nil)
}
fn every(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut a[0]);
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for item in seq_iter("every?", &coll)? {
        cx.tick(1)?;
        if !cx.apply(&f, &mut [item])?.truthy() {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}
fn not_any(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let r = some(cx, a)?;
    Ok(Value::Bool(!r.truthy()))
}
fn keep(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut a[0]);
    if a.len() == 1 {
        return Ok(super::transducers::xf_keep(f));
    }
    if let Some(l) = crate::lazy::as_lazy(&a[1]) {
        return crate::lazy::keep(f, l);
    }
    let mut out = Vec::new();
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for item in seq_iter("keep", &coll)? {
        cx.tick(1)?;
        let r = cx.apply(&f, &mut [item])?;
        if !r.is_nil() {
            out.push(r);
        }
    }
    vec_out(cx, out)
}
fn mapcat(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let [f] = a {
        return Ok(super::transducers::xf_mapcat(std::mem::take(f)));
    }
    if let [f, coll] = a
        && let Some(l) = crate::lazy::as_lazy(coll)
    {
        return crate::lazy::mapcat(f.clone(), l);
    }
    let mapped = super::lookup("map").map(|b| cx.call(b, a)).unwrap_or_else(|| Ok(Value::Nil))?;
    let parts = items(cx, "mapcat", &mapped)?;
    concat(cx, &mut parts.into_iter().collect::<Vec<_>>())
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
                Some(l) => seq_iter(fname, &crate::lazy::take(cx, n.max(0) as usize, l)?)?.collect(),
                None => items(cx, fname, pad)?,
            };
            (int_arg(fname, step)?, Some(pad), &*coll)
        }
        _ => return err(ErrorKind::ArityError, format!("{fname}: expected (partition n step? pad? coll)")),
    };
    if n <= 0 || step <= 0 {
        return err(ErrorKind::RuntimeError, format!("{fname}: size and step must be positive, got {n} and {step}"));
    }
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
fn partition_all(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let [n] = a {
        let n = int_arg("partition-all", n)?;
        if n <= 0 {
            return err(ErrorKind::RuntimeError, format!("partition-all: size must be positive, got {n}"));
        }
        return Ok(super::transducers::xf_partition_all(n as usize));
    }
    chunks(cx, a, "partition-all", true)
}

fn merge(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let mut acc: Option<Value> = None;
    for m in a.iter_mut() {
        match std::mem::take(m) {
            Value::Nil => {}
            Value::Map(src) => {
                acc = Some(match acc.take() {
                    None => Value::Map(src),
                    Some(Value::Map(mut dst)) => {
                        cx.charge(cost::ENTRY * src.len() as u64)?;
                        let d = Arc::make_mut(&mut dst);
                        for (k, v) in src.iter() {
                            d.insert(k.clone(), v.clone());
                        }
                        Value::Map(dst)
                    }
                    Some(other) => other,
                })
            }
            other => return expected("merge", "maps (or nil)", &other),
        }
    }
    Ok(acc.unwrap_or(Value::Nil))
}
fn merge_with(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut a[0]);
    let mut out: Option<PMap> = None;
    for m in a[1..].iter() {
        match m {
            Value::Nil => {}
            Value::Map(src) => {
                let dst = out.get_or_insert_with(PMap::new);
                for (k, v) in src.iter() {
                    cx.tick(1)?;
                    let nv = match dst.get(k) {
                        Some(old) => cx.apply(&f, &mut [old.clone(), v.clone()])?,
                        None => {
                            cx.charge(cost::ENTRY)?;
                            v.clone()
                        }
                    };
                    dst.insert(k.clone(), nv);
                }
            }
            other => return expected("merge-with", "maps (or nil)", other),
        }
    }
    Ok(out.map(|m| Value::Map(Arc::new(m))).unwrap_or(Value::Nil))
}
fn select_keys(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let mut out = PMap::new();
    if let Value::Map(m) = &a[0] {
        // one item at a time: nothing is collected first
        let coll = a[1].clone();
        for k in seq_iter("select-keys", &coll)? {
            if let Some(v) = m.get(&k) {
                out.insert(k, v.clone());
            } else if let Some(stored) = crate::interp::flex_get_key(m, &k)
                && let Some(v) = m.get(&stored)
            {
                // DIV-46: a string keyseq finds keyword keys (and the reverse)
                out.insert(stored, v.clone());
            }
        }
    }
    cx.charge(cost::entries(out.len() as u64))?;
    Ok(Value::Map(Arc::new(out)))
}
fn contains(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(match &a[0] {
        Value::Map(m) => crate::interp::flex_get(m, &a[1]).is_some(),
        Value::Set(s) => s.contains(&a[1]),
        Value::Vector(v) => v.iter().any(|x| x.equiv(&a[1])),
        Value::Str(s) => matches!(&a[1], Value::Str(sub) if s.contains(&**sub)),
        Value::Nil => false,
        other => return expected("contains?", "a map, set, vector or string", other),
    }))
}
fn zipmap(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    // an infinite side is bounded by the finite one
    let bound = |i: usize, other: usize, a: &mut [Value], cx: &mut BuiltinContext| -> EvalResult<Vec<Value>> {
        match crate::lazy::as_lazy(&a[i]) {
            Some(l) => {
                let n = seq_len(&a[other]).unwrap_or(0);
                let taken = crate::lazy::take(cx, n, l)?;
                items(cx, "zipmap", &taken)
            }
            None => items(cx, "zipmap", &a[i]),
        }
    };
    let ks = bound(0, 1, a, cx)?;
    let vs = bound(1, 0, a, cx)?;
    cx.charge(cost::entries(ks.len().min(vs.len()) as u64))?;
    Ok(Value::map(ks.into_iter().zip(vs)))
}
fn path(fname: &str, v: &Value) -> EvalResult<Vec<Value>> {
    match v {
        Value::Vector(p) | Value::List(p) => Ok(p.iter().cloned().collect()),
        other => expected(fname, "a vector path like [:a :b]", other),
    }
}
fn assoc_path(cx: &mut BuiltinContext, coll: Value, keys: &[Value], v: Value) -> EvalResult {
    match keys {
        [] => Ok(v),
        [k, rest @ ..] => {
            let inner = get_in_value(&coll, k).unwrap_or(Value::Nil);
            let nv = assoc_path(cx, inner, rest, v)?;
            super::seq::assoc1(cx, coll, k.clone(), nv)
        }
    }
}
fn assoc_in(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let keys = path("assoc-in", &a[1])?;
    let v = std::mem::take(&mut a[2]);
    assoc_path(cx, std::mem::take(&mut a[0]), &keys, v)
}
fn update_in(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let keys = path("update-in", &a[1])?;
    let f = std::mem::take(&mut a[2]);
    let coll = std::mem::take(&mut a[0]);
    let mut old = coll.clone();
    for k in &keys {
        old = get_in_value(&old, k).unwrap_or(Value::Nil);
    }
    let mut call = vec![old];
    call.extend(a[3..].iter_mut().map(std::mem::take));
    let new = cx.apply(&f, &mut call)?;
    assoc_path(cx, coll, &keys, new)
}
fn set(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    cx.charge(super::materialized_cost(&a[0]))?;
    let s = PSet::from_items(seq_iter("set", &a[0])?);
    cx.charge(cost::items(s.len() as u64))?;
    Ok(Value::Set(Arc::new(s)))
}
fn hash_set(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    cx.charge(cost::items(a.len() as u64))?;
    Ok(Value::set(a.iter_mut().map(std::mem::take)))
}
fn disj(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match std::mem::take(&mut a[0]) {
        Value::Set(mut s) => {
            let m = Arc::make_mut(&mut s);
            for x in a[1..].iter() {
                m.remove(x);
            }
            Ok(Value::Set(s))
        }
        Value::Nil => Ok(Value::Nil),
        other => expected("disj", "a set", &other),
    }
}
fn numbers_of(cx: &mut BuiltinContext, fname: &str, f: Option<&Value>, coll: &Value) -> EvalResult<Vec<Value>> {
    let mut out = Vec::new();
    // one item at a time: nothing is collected first
    let coll = coll.clone();
    for item in seq_iter(fname, &coll)? {
        cx.tick(1)?;
        let v = match f {
            Some(f) => cx.apply(f, &mut [item])?,
            None => item,
        };
        match v {
            Value::Nil => {}
            Value::Int(_) | Value::Float(_) => out.push(v),
            other => {
                return err(
                    ErrorKind::ArithmeticError,
                    format!("{fname}: expected numbers, got {} {}", other.type_name(), super::brief(&other)),
                );
            }
        }
    }
    Ok(out)
}
fn mean(nums: &[Value]) -> Value {
    if nums.is_empty() {
        return Value::Nil;
    }
    let total: f64 = nums.iter().filter_map(Value::as_f64).sum();
    Value::Float(total / nums.len() as f64)
}
fn avg(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let nums = numbers_of(cx, "avg", None, &a[0])?;
    Ok(mean(&nums))
}
fn sum_by(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = super::by_key(&a[0]);
    let nums = numbers_of(cx, "sum-by", Some(&f), &a[1])?;
    nums.iter().try_fold(Value::Int(0), |acc, x| super::core::add2(&acc, x))
}
fn avg_by(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = super::by_key(&a[0]);
    let nums = numbers_of(cx, "avg-by", Some(&f), &a[1])?;
    Ok(mean(&nums))
}
fn extreme_by(cx: &mut BuiltinContext, a: &mut [Value], fname: &str, want: Ordering) -> EvalResult {
    let f = super::by_key(&a[0]);
    let mut best: Option<(Value, Value)> = None;
    // one item at a time: nothing is collected first
    let coll = a[1].clone();
    for item in seq_iter(fname, &coll)? {
        cx.tick(1)?;
        let k = cx.apply(&f, &mut [item.clone()])?;
        if k.is_nil() {
            continue;
        }
        let better = match &best {
            None => true,
            Some((bk, _)) => compare_values(&k, bk)? == Some(want),
        };
        if better {
            best = Some((k, item));
        }
    }
    Ok(best.map(|(_, v)| v).unwrap_or(Value::Nil))
}
fn min_by(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    extreme_by(cx, a, "min-by", Ordering::Less)
}
fn max_by(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    extreme_by(cx, a, "max-by", Ordering::Greater)
}
fn comp(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let fs: Vec<Value> = a.iter_mut().map(std::mem::take).collect();
    Ok(Function::native("comp", Held::values(fs), |cx, fs, args| {
        let Some((last, rest)) = fs.split_last() else {
            return Ok(args.first().cloned().unwrap_or(Value::Nil));
        };
        let mut v = cx.apply(last, args)?;
        for f in rest.iter().rev() {
            v = cx.apply(f, &mut [v])?;
        }
        Ok(v)
    }))
}
fn partial(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    // held: f, then the fixed arguments
    let held: Vec<Value> = a.iter_mut().map(std::mem::take).collect();
    Ok(Function::native("partial", Held::values(held), |cx, held, args| {
        let Some((f, fixed)) = held.split_first() else { return Ok(Value::Nil) };
        let mut call = Vec::with_capacity(fixed.len() + args.len());
        call.extend_from_slice(fixed);
        call.extend(args.iter_mut().map(std::mem::take));
        cx.apply(f, &mut call)
    }))
}
fn complement(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut a[0]);
    Ok(Function::native("complement", Held::values(vec![f]), |cx, held, args| {
        let Some(f) = held.first() else { return Ok(Value::Nil) };
        Ok(Value::Bool(!cx.apply(f, args)?.truthy()))
    }))
}
fn constantly(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let v = std::mem::take(&mut a[0]);
    Ok(Function::native("constantly", Held::values(vec![v]), |_, held, _| {
        Ok(held.first().cloned().unwrap_or_default())
    }))
}
fn name(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Keyword(k) | Value::Symbol(k) => match super::names::split_name(k) {
            (Some(_), name) => Ok(Value::str(name)),
            (None, _) => Ok(Value::Str(k.clone())),
        },
        Value::Str(_) => Ok(a[0].clone()),
        other => expected("name", "a keyword, symbol or string", other),
    }
}
fn keyword(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let [ns, name] = a {
        return match (&*ns, &*name) {
            (Value::Nil, Value::Str(n)) if !n.is_empty() => {
                cx.note_made_keyword(n)?;
                Ok(Value::Keyword(n.clone()))
            }
            (Value::Str(ns), Value::Str(n)) if !n.is_empty() => {
                let k: Arc<str> = Arc::from(format!("{ns}/{n}"));
                cx.note_made_keyword(&k)?;
                Ok(Value::Keyword(k))
            }
            _ => err(
                ErrorKind::TypeError,
                "keyword takes a namespace string (or nil) and a name string, like (keyword \"order\" \"paid\")",
            ),
        };
    }
    match &a[0] {
        Value::Str(s) if !s.is_empty() => {
            cx.note_made_keyword(s)?;
            Ok(Value::Keyword(s.clone()))
        }
        Value::Keyword(_) | Value::Nil => Ok(a[0].clone()),
        other => expected("keyword", "a non-empty string", other),
    }
}
fn join(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    // like Clojure, any separator is turned into a string first
    let (sep, coll) = if a.len() == 2 { (super::core::str_form(cx, &a[0])?, &a[1]) } else { (String::new(), &a[0]) };
    // the parts' sizes are summed and charged before the result is allocated
    seq_iter("join", coll)?;
    let parts = || seq_iter("join", coll).unwrap_or(super::SeqIter::Empty);
    let out = super::core::concat_str_forms(cx, parts, &sep)?;
    cx.charge(cost::HEADER)?;
    Ok(Value::str(out))
}
fn upper(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let Value::Str(s) = &a[0]
        && s.is_ascii()
        && !s.bytes().any(|b| b.is_ascii_lowercase())
    {
        // already upper case: the same string, no copy
        return Ok(std::mem::take(&mut a[0]));
    }
    super::core::case_mapped(cx, str_arg("upper-case", &a[0])?, str::to_uppercase)
}
fn lower(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let Value::Str(s) = &a[0]
        && s.is_ascii()
        && !s.bytes().any(|b| b.is_ascii_uppercase())
    {
        // already lower case: the same string, no copy
        return Ok(std::mem::take(&mut a[0]));
    }
    super::core::case_mapped(cx, str_arg("lower-case", &a[0])?, str::to_lowercase)
}
fn trim(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let out = str_arg("trim", &a[0])?.trim_matches(super::java_whitespace);
    super::core::charge_text(cx, out.len())?;
    Ok(Value::str(out))
}
fn includes(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(str_arg("includes?", &a[0])?.contains(str_arg("includes?", &a[1])?)))
}
fn starts_with(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(str_arg("starts-with?", &a[0])?.starts_with(str_arg("starts-with?", &a[1])?)))
}
fn ends_with(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(str_arg("ends-with?", &a[0])?.ends_with(str_arg("ends-with?", &a[1])?)))
}
/// A `subs` index: integers, or floats truncated toward zero as Clojure's interop does.
fn subs_index(v: &Value) -> EvalResult<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Float(f) if f.is_finite() => Ok(f.trunc() as i64),
        Value::Float(f) if f.is_nan() => Ok(0),
        other => expected("subs", "an integer index", other),
    }
}
fn subs(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = str_arg("subs", &a[0])?;
    let n = s.chars().count() as i64;
    let start = subs_index(&a[1])?;
    // DIV-22: out of range gives "" (a negative start, typically a -1 from .indexOf, too)
    // rather than an exception; an end past the string is cut to its length
    if start < 0 {
        return Ok(Value::str(""));
    }
    let start = start.min(n);
    let end = match a.get(2) {
        Some(e) => subs_index(e)?.clamp(start, n),
        None => n,
    };
    let from = s.char_indices().nth(start as usize).map_or(s.len(), |(b, _)| b);
    let to = s[from..].char_indices().nth((end - start) as usize).map_or(s.len(), |(b, _)| from + b);
    let out = s.get(from..to).unwrap_or("");
    super::core::charge_text(cx, out.len())?;
    Ok(Value::str(out))
}
fn blank(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Nil => Ok(Value::Bool(true)),
        Value::Str(s) => Ok(Value::Bool(s.chars().all(super::java_whitespace))),
        other => expected("blank?", "a string or nil", other),
    }
}

fn map_arg<'a>(fname: &str, v: &'a Value) -> EvalResult<Option<&'a PMap>> {
    match v {
        Value::Map(m) => Ok(Some(m)),
        Value::Nil => Ok(None),
        other => expected(fname, "a map", other),
    }
}
fn update_vals(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut a[1]);
    let mut out = PMap::new();
    if let Some(m) = map_arg("update-vals", &a[0])? {
        for (k, v) in m.iter() {
            cx.tick(1)?;
            out.insert(k.clone(), cx.apply(&f, &mut [v.clone()])?);
        }
    }
    cx.charge(cost::entries(out.len() as u64))?;
    Ok(Value::Map(Arc::new(out)))
}
fn update_keys(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut a[1]);
    let mut out = PMap::new();
    if let Some(m) = map_arg("update-keys", &a[0])? {
        for (k, v) in m.iter() {
            cx.tick(1)?;
            out.insert(cx.apply(&f, &mut [k.clone()])?, v.clone());
        }
    }
    cx.charge(cost::entries(out.len() as u64))?;
    Ok(Value::Map(Arc::new(out)))
}
fn sorted_map(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match super::lookup("hash-map") {
        Some(b) => cx.call(b, a),
        None => Ok(Value::empty_map()),
    }
}
fn sorted_set(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    hash_set(cx, a)
}
fn entry_part(fname: &str, v: &Value, i: usize) -> EvalResult {
    match v {
        Value::Vector(e) if e.len() == 2 => Ok(e[i].clone()),
        other => expected(fname, "a map entry [k v]", other),
    }
}
fn key(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    entry_part("key", &a[0], 0)
}
fn val(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    entry_part("val", &a[0], 1)
}
fn ffirst(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let first = match crate::lazy::as_lazy(&a[0]) {
        Some(l) => crate::lazy::nth(cx, 0, l)?,
        None => seq_iter("ffirst", &a[0])?.next().unwrap_or(Value::Nil),
    };
    if let Some(l) = crate::lazy::as_lazy(&first) {
        return crate::lazy::nth(cx, 0, l);
    }
    Ok(seq_iter("ffirst", &first)?.next().unwrap_or(Value::Nil))
}
fn reduce_kv(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut a[0]);
    let mut acc = std::mem::take(&mut a[1]);
    let pairs: Vec<(Value, Value)> = match &a[2] {
        Value::Map(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Value::Vector(v) => v.iter().enumerate().map(|(i, x)| (Value::Int(i as i64), x.clone())).collect(),
        Value::Nil => Vec::new(),
        other => return expected("reduce-kv", "a map or vector", other),
    };
    for (k, v) in pairs {
        cx.tick(1)?;
        acc = cx.apply(&f, &mut [acc, k, v])?;
    }
    Ok(acc)
}
fn extreme_key(cx: &mut BuiltinContext, a: &mut [Value], want: Ordering) -> EvalResult {
    let f = std::mem::take(&mut a[0]);
    let mut best: Option<(Value, Value)> = None;
    for x in a[1..].iter_mut() {
        let x = std::mem::take(x);
        let k = cx.apply(&f, &mut [x.clone()])?;
        let better = match &best {
            None => true,
            Some((bk, _)) => compare_values(&k, bk)? != Some(want.reverse()),
        };
        if better {
            best = Some((k, x));
        }
    }
    Ok(best.map(|(_, v)| v).unwrap_or(Value::Nil))
}
fn max_key(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    extreme_key(cx, a, Ordering::Greater)
}
fn min_key(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    extreme_key(cx, a, Ordering::Less)
}

fn split(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    super::text::split(cx, a)
}
fn int_pair(fname: &str, a: &[Value]) -> EvalResult<Option<(i64, i64)>> {
    match (&a[0], &a[1]) {
        (Value::Int(x), Value::Int(y)) => {
            if *y == 0 {
                return err(ErrorKind::ArithmeticError, format!("{fname}: division by zero"));
            }
            Ok(Some((*x, *y)))
        }
        (x, y) => {
            super::num_arg(fname, x)?;
            super::num_arg(fname, y)?;
            Ok(None)
        }
    }
}
/// Both operands as floats; a zero divisor is an error, as in Clojure.
fn floats(fname: &str, a: &[Value]) -> EvalResult<(f64, f64)> {
    let (x, y) = (a[0].as_f64().unwrap_or(f64::NAN), a[1].as_f64().unwrap_or(f64::NAN));
    if y == 0.0 {
        return err(ErrorKind::ArithmeticError, format!("{fname}: division by zero"));
    }
    Ok((x, y))
}
fn modulo(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match int_pair("mod", a)? {
        Some((x, y)) => {
            Ok(Value::Int(x.checked_rem(y).map(|r| if r != 0 && (r < 0) != (y < 0) { r + y } else { r }).unwrap_or(0)))
        }
        None => {
            let (x, y) = floats("mod", a)?;
            let r = x % y;
            Ok(Value::Float(if r != 0.0 && (r < 0.0) != (y < 0.0) { r + y } else { r }))
        }
    }
}
fn rem(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match int_pair("rem", a)? {
        Some((x, y)) => Ok(Value::Int(x.checked_rem(y).unwrap_or(0))),
        None => {
            let (x, y) = floats("rem", a)?;
            Ok(Value::Float(x % y))
        }
    }
}
fn quot(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match int_pair("quot", a)? {
        Some((x, y)) => match x.checked_div(y) {
            Some(q) => Ok(Value::Int(q)),
            None => err(ErrorKind::ArithmeticError, "integer overflow in quot"),
        },
        None => {
            let (x, y) = floats("quot", a)?;
            Ok(Value::Float((x / y).trunc()))
        }
    }
}
