//! clojure.core's type tests and logic: `nil?`, `fn?`, `map?`, `type`, `not`, `boolean`...

use crate::builtins::context::BuiltinContext;
use crate::builtins::{Arity, Builtin, Category, Library, Table};
use crate::error::EvalResult;
use crate::value::Value;

use Arity::*;
use Category::{Core, Set};

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    // every type test takes a lazy sequence as it is (never realising it), and answers
    // for it as Clojure does for a seq: seq?, sequential?, coll? and seqable? hold, the
    // rest do not
    builtins: &[
        Builtin::new("not", Exact(1), Core, not).test(test_not).doc("True for nil and false.").ex(&[("(not nil)", "true")]).lazy(),
        Builtin::new("nil?", Exact(1), Core, is_nil).test(test_nil).doc("True for nil.").ex(&[("(nil? nil)", "true")]).lazy(),
        Builtin::new("some?", Exact(1), Core, is_some)
            .test(test_some)
            .doc("True for anything but nil.")
            .ex(&[("(some? false)", "true")])
            .lazy(),
        Builtin::new("fn?", Exact(1), Core, is_fn)
            .doc("True for functions (not for lazy sequences or reduced values).")
            .ex(&[("(fn? inc)", "true"), ("(fn? :a)", "false"), ("(fn? (range))", "false")])
            .lazy(),
        Builtin::new("map?", Exact(1), Core, is_map).doc("True for maps.").ex(&[("(map? {})", "true")]).lazy(),
        Builtin::new("vector?", Exact(1), Core, is_vector)
            .doc("True for vectors.")
            .ex(&[("(vector? [1])", "true")])
            .lazy(),
        Builtin::new("set?", Exact(1), Set, is_set).doc("True for sets.").ex(&[("(set? #{1})", "true")]).lazy(),
        Builtin::new("string?", Exact(1), Core, is_string)
            .doc("True for strings.")
            .ex(&[("(string? \"a\")", "true")])
            .lazy(),
        Builtin::new("keyword?", Exact(1), Core, is_keyword)
            .doc("True for keywords.")
            .ex(&[("(keyword? :a)", "true")])
            .lazy(),
        Builtin::new("qualified-keyword?", Exact(1), Core, is_qualified_keyword)
            .doc("True for keywords with a namespace (:order/paid); false for :paid and non-keywords.")
            .ex(&[("(qualified-keyword? :order/paid)", "true"), ("(qualified-keyword? :paid)", "false")])
            .lazy(),
        Builtin::new("boolean?", Exact(1), Core, is_boolean)
            .doc("True for true and false.")
            .ex(&[("(boolean? false)", "true")])
            .lazy(),
        Builtin::new("coll?", Exact(1), Core, is_coll)
            .doc("True for vectors, lists, maps, sets and lazy sequences.")
            .ex(&[("(coll? [1])", "true"), ("(coll? (range))", "true"), ("(coll? \"ab\")", "false")])
            .lazy(),
        Builtin::new("true?", Exact(1), Core, is_true).doc("True only for true.").ex(&[("(true? 1)", "false")]).lazy(),
        Builtin::new("false?", Exact(1), Core, is_false)
            .doc("True only for false.")
            .ex(&[("(false? false)", "true")])
            .lazy(),
        Builtin::new("type", Exact(1), Core, type_of)
            .doc(
                "Type keyword: :boolean :number :string :keyword :vector :list :map :set :regex :function :lazy-seq :reduced (nil for nil; DIV-28).",
            )
            .ex(&[("(type 1)", ":number"), ("(type {})", ":map"), ("(type (range))", ":lazy-seq"), ("(type (reduced 1))", ":reduced")])
            .lazy(),
        Builtin::new("boolean", Exact(1), Core, boolean)
            .doc("false for nil and false, true for anything else.")
            .ex(&[("(boolean 0)", "true")])
            .lazy(),
        Builtin::new("seq?", Exact(1), Core, is_seq)
            .doc("True for lists, lazy sequences and vectors (sequence functions return vectors; DIV-seq-vector).")
            .ex(&[("(seq? '(1))", "true"), ("(seq? (map inc (range)))", "true"), ("(seq? {})", "false")])
            .lazy(),
        Builtin::new("sequential?", Exact(1), Core, is_sequential)
            .doc("True for vectors, lists and lazy sequences.")
            .ex(&[("(sequential? [1])", "true"), ("(sequential? (range))", "true"), ("(sequential? #{1})", "false")])
            .lazy(),
        Builtin::new("indexed?", Exact(1), Core, is_indexed)
            .doc("True for vectors (read by index in constant time).")
            .ex(&[("(indexed? [1])", "true"), ("(indexed? '(1))", "false")])
            .lazy(),
        Builtin::new("reversible?", Exact(1), Core, is_reversible)
            .doc("True for vectors (what rseq takes).")
            .ex(&[("(reversible? [1])", "true"), ("(reversible? '(1))", "false")])
            .lazy(),
        Builtin::new("counted?", Exact(1), Core, is_counted)
            .doc("True for vectors, lists, maps and sets (count is immediate); false for lazy sequences and strings.")
            .ex(&[("(counted? {:a 1})", "true"), ("(counted? (range))", "false")])
            .lazy(),
        Builtin::new("associative?", Exact(1), Core, is_associative)
            .doc("True for maps and vectors (assoc takes them).")
            .ex(&[("(associative? [1])", "true"), ("(associative? '(1))", "false")])
            .lazy(),
        Builtin::new("list?", Exact(1), Core, is_list)
            .doc("True for lists.")
            .ex(&[("(list? '(1 2))", "true"), ("(list? [1 2])", "false")])
            .lazy(),
        Builtin::new("seqable?", Exact(1), Core, is_seqable)
            .doc("True for nil, collections, lazy sequences and strings.")
            .ex(&[("(seqable? \"ab\")", "true")])
            .lazy(),
        Builtin::new("ifn?", Exact(1), Core, is_ifn)
            .doc("True for anything callable: functions, keywords, maps, sets, vectors.")
            .ex(&[("(ifn? :a)", "true")])
            .lazy(),
        Builtin::new("char?", Exact(1), Core, is_char)
            .doc("True for 1-character strings (characters are strings in PTC-Lisp).")
            .ex(&[("(char? \\a)", "true")])
            .lazy(),
        Builtin::new("symbol?", Exact(1), Core, is_symbol)
            .doc("True for symbols: quoted names such as 'a, and (symbol \"a\").")
            .ex(&[("(symbol? 'a)", "true"), ("(symbol? :a)", "false")])
            .lazy(),
        Builtin::new("sorted?", Exact(1), Core, is_sorted)
            .doc("True for maps and sets (they are always sorted).")
            .ex(&[("(sorted? {})", "true")])
            .lazy(),
        Builtin::new("distinct?", AtLeast(1), Core, is_distinct)
            .doc("True when no two arguments are equal.")
            .ex(&[("(distinct? 1 2 3)", "true")]),
    ],
};

pub(crate) fn not(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(!args[0].truthy()))
}

// `nil?`, `some?` and `not` take any value as it is (a lazy sequence too), so the
// interpreter's test node always answers them in place.
fn test_nil(v: &Value) -> Option<bool> {
    Some(v.is_nil())
}

fn test_some(v: &Value) -> Option<bool> {
    Some(!v.is_nil())
}

fn test_not(v: &Value) -> Option<bool> {
    Some(!v.truthy())
}

fn is_nil(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(args[0].is_nil()))
}

fn is_some(_: &mut BuiltinContext, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(!args[0].is_nil()))
}

pub(crate) fn pred(args: &[Value], f: impl Fn(&Value) -> bool) -> EvalResult {
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

fn is_qualified_keyword(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Keyword(k) if crate::builtins::core::strings::split_name(k).0.is_some()))
}

fn is_boolean(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Bool(_)))
}

fn is_coll(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_) | Value::Lazy(_)))
}

fn is_true(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Bool(true)))
}

fn is_false(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    pred(a, |v| matches!(v, Value::Bool(false)))
}

pub(crate) fn b(v: bool) -> EvalResult {
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
        Value::Lazy(_) => Value::kw("lazy-seq"),
        Value::Reduced(_) => Value::kw("reduced"),
        Value::Var(_) => Value::kw("var"),
        Value::Symbol(_) => Value::kw("symbol"),
    })
}

pub(crate) fn boolean(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(a[0].truthy())
}

fn is_seq(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Vector(_) | Value::List(_) | Value::Lazy(_)))
}

fn is_sequential(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Vector(_) | Value::List(_) | Value::Lazy(_)))
}

fn is_indexed(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Vector(_)))
}

fn is_reversible(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Vector(_)))
}

fn is_counted(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_)))
}

fn is_associative(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Vector(_) | Value::Map(_)))
}

fn is_list(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::List(_)))
}

fn is_seqable(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Lazy(_)) || crate::builtins::is_seqable(&a[0]))
}

fn is_ifn(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Func(_) | Value::Keyword(_) | Value::Map(_) | Value::Set(_) | Value::Vector(_)))
}

fn is_char(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(&a[0], Value::Str(s) if s.chars().count() == 1))
}

fn is_symbol(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Symbol(_)))
}

fn is_sorted(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    b(matches!(a[0], Value::Map(_) | Value::Set(_)))
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
