//! Fused `map`/`filter`/`remove`/`keep` chains give what the nested eager calls give.
//! The unfused reference is the same program with the steps called through locals
//! (`(let [map* map] (map* f xs))` is a call of a computed function, never fused).
mod common;
use common::*;
use proptest::prelude::*;
use ptc_lisp_eval::RunResult;

const STEPS: &[(&str, &str)] = &[
    ("map", "inc"),
    ("map", "#(if (nil? %) 0 (* 2 %))"),
    ("map", ":a"),
    ("map", "(fn [x] {:a x})"),
    ("mapv", "str"),
    ("map", "clojure.string/lower-case"),
    ("map", "parse-long"),
    ("remove", "empty?"),
    ("map", "(fn [x] (if (number? x) (- x) x))"),
    ("filter", "some?"),
    ("filter", "#(or (nil? %) (not (number? %)) (even? %))"),
    ("filterv", "identity"),
    ("remove", "nil?"),
    ("remove", "#(and (number? %) (> % 3))"),
    ("keep", "#(when (and (number? %) (odd? %)) %)"),
    ("keep", "(fn [x] (if (number? x) (< x 2) nil))"),
    ("keep", ":a"),
    ("take", "2"),
    ("drop", "1"),
    ("take-while", "#(or (not (number? %)) (< % 5))"),
    ("drop-while", "nil?"),
    ("distinct", ""),
    ("mapcat", "(fn [x] [x x])"),
    ("map-indexed", "vector"),
    ("keep-indexed", "#(when (odd? %1) %2)"),
];

/// Steps that may end a chain before its source ends: the nested eager calls run the
/// inner steps over every item first, so they can fail on an item the chain never reads.
fn ends_early(steps: &[usize]) -> bool {
    steps.iter().any(|&i| matches!(STEPS[i].0, "take" | "take-while"))
}

const SINKS: &[&str] = &[
    "",
    "reduce +",
    "reduce (fn [acc x] (conj acc x)) []",
    "reduce (fn [a b] (if (and (number? a) (number? b) (> a 5)) (reduced a) [a b]))",
    "reduce conj",
    "frequencies",
    "count",
    "sum",
    "into []",
    "into #{}",
    "into nil",
    "vec",
    "first",
    "last",
    "some #(when (number? %) (> % 2))",
    "some identity",
    "every? some?",
    "every? #(< (count (str %)) 3)",
    "not-any? nil?",
    "not-every? number?",
    "apply vector",
    "apply +",
    "apply str",
    "apply max",
    "apply merge",
    "sort",
    "sort >",
    "sort #(compare %2 %1)",
    "set",
];

/// Consumers that may stop before their input ends (the nested eager calls run every
/// step over every item first, so they can fail on an item the consumer never reads).
fn sink_stops_early(sink: &str) -> bool {
    sink == "first"
        || sink.contains("reduced")
        || ["some ", "every? ", "not-any? ", "not-every? "].iter().any(|s| sink.starts_with(s))
}

fn source() -> impl Strategy<Value = String> {
    let item = prop_oneof![
        4 => (-3i64..9).prop_map(|i| i.to_string()),
        1 => Just("nil".to_string()),
        1 => Just("\"s\"".to_string()),
        1 => (0i64..4).prop_map(|i| format!("{{:a {i}}}")),
    ];
    prop_oneof![
        6 => prop::collection::vec(item.clone(), 0..12).prop_map(|v| format!("[{}]", v.join(" "))),
        1 => prop::collection::vec(0i64..6, 0..6).prop_map(|v| {
            format!("(set [{}])", v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(" "))
        }),
        1 => Just("{:x 1 :y 2}".to_string()),
        1 => Just("\"abc\"".to_string()),
        1 => Just("nil".to_string()),
        1 => Just("(range 7)".to_string()),
        1 => Just("(range 2 20 3)".to_string()),
        1 => Just("(range 5 -5 -2)".to_string()),
        1 => Just("(range 0.5 4)".to_string()),
        1 => Just("(range 3 3)".to_string()),
        1 => Just("(vals {:x 1 :y nil :z 4 :w {:a 2}})".to_string()),
        1 => Just("(keys {1 :a 2 :b})".to_string()),
        1 => Just("(vals {})".to_string()),
        1 => Just("(split \" a B  a c \" #\"\\s+\")".to_string()),
        1 => Just("(split \"1,2,,3,,\" #\",\")".to_string()),
        1 => Just("(split \"1,2,,3,,\" \",\" -1)".to_string()),
    ]
}

fn program(steps: &[usize], sink: &str, src: &str, fused: bool) -> String {
    let mut expr = src.to_string();
    for &i in steps.iter().rev() {
        let (name, f) = STEPS[i];
        let name = if fused { name.to_string() } else { format!("{name}*") };
        expr = format!("({name} {f} {expr})");
    }
    let body = if sink.is_empty() { expr } else { format!("({sink} {expr})") };
    if fused {
        body
    } else {
        format!(
            "(let [map* map mapv* mapv filter* filter filterv* filterv remove* remove keep* keep take* take \
             drop* drop take-while* take-while drop-while* drop-while distinct* distinct mapcat* mapcat \
             map-indexed* map-indexed keep-indexed* keep-indexed] {body})"
        )
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn fused_chains_agree_with_nested_calls(
        steps in prop::collection::vec(0..STEPS.len(), 1..4),
        sink in 0..SINKS.len(),
        src in source(),
    ) {
        let sink = SINKS[sink];
        let fused_src = program(&steps, sink, &src, true);
        let plain_src = program(&steps, sink, &src, false);
        let fused = go(&fused_src);
        let plain = go(&plain_src);
        let stops_early = sink_stops_early(sink) || ends_early(&steps);
        match (&plain.result, &fused.result) {
            (RunResult::Error(_), RunResult::Error(_)) => {}
            (RunResult::Error(_), _) if stops_early => {}
            _ => prop_assert_eq!(show_outcome(&fused), show_outcome(&plain), "program {}", fused_src),
        }
    }
}

/// Functions of several arguments for `(map f xs ys ...)`.
const ZIP_FNS: &[&str] = &[
    "vector",
    "+",
    "list",
    "(fn [a b & more] (if (number? a) a [b (count more)]))",
    "#(when (some? %2) {:a %1})",
    "str",
];

/// A collection for a `map` over several: finite ones, and lazy ones with a finite partner.
fn zip_coll() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => source(),
        1 => Just("(range)".to_string()),
        1 => Just("(iterate inc 3)".to_string()),
        1 => Just("(take 4 (repeat 2))".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// `(map f xs ys ...)` under steps and a consumer streams its items in step, and
    /// answers (and fails) as the nested eager calls do.
    #[test]
    fn fused_zips_agree_with_nested_calls(
        f in 0..ZIP_FNS.len(),
        colls in prop::collection::vec(zip_coll(), 2..4),
        steps in prop::collection::vec(0..STEPS.len(), 0..3),
        sink in 0..SINKS.len(),
    ) {
        let sink = SINKS[sink];
        // an unbounded partner only where another collection ends (else both sides run
        // into the loop limit, which is not what this compares)
        prop_assume!(colls.iter().any(|c| c != "(range)" && !c.starts_with("(iterate")));
        let args = colls.join(" ");
        let fused_src = program(&steps, sink, &format!("(map {} {args})", ZIP_FNS[f]), true);
        let plain_src = program(&steps, sink, &format!("(map* {} {args})", ZIP_FNS[f]), false);
        prop_assume!(!steps.is_empty() || !sink.is_empty());
        let fused = go(&fused_src);
        let plain = go(&plain_src);
        let stops_early = sink_stops_early(sink) || ends_early(&steps);
        match (&plain.result, &fused.result) {
            (RunResult::Error(_), RunResult::Error(_)) => {}
            (RunResult::Error(_), _) if stops_early => {}
            _ => prop_assert_eq!(show_outcome(&fused), show_outcome(&plain), "program {}", fused_src),
        }
    }
}

#[test]
fn fused_chains() {
    check(&[
        ("(->> [{:s 1 :a 2} {:s 2 :a 3} {:s 1 :a 4}] (filter #(= 1 (:s %))) (map :a) (reduce +))", "6"),
        ("(->> \"a b a\" (remove #{\\space}) (map str) frequencies)", "{\"a\" 2 \"b\" 1}"),
        ("(->> {:a 1 :b 2} (map val) (filter odd?) count)", "1"),
        ("(->> [1 2 3 4] (map inc) (filter even?) (map #(* 10 %)))", "[20 40]"),
        ("(->> [1 2 3] (keep #(when (odd? %) %)) (into #{}))", "#{1 3}"),
        ("(->> (range) (map inc) (filter even?) first)", "2"),
        ("(->> (range) (map inc) (take 3))", "[1 2 3]"),
        ("(first (filter #(> % 2) [1 2 3 4]))", "3"),
        // a count straight over a map's keys or values is the map's size
        ("(count (keys {:a 1 :b nil :c 3}))", "3"),
        ("(count (vals {}))", "0"),
        ("(count (keys nil))", "0"),
        (
            "(let [m (zipmap (range 40) (range 40))] [(count (keys m)) (count (vals m)) (count (filter odd? (keys m)))])",
            "[40 40 20]",
        ),
        ("(->> [] (map inc) (reduce +))", "0"),
        ("(->> [5] (map inc) (reduce *))", "6"),
        ("(->> [1 2 3] (map inc) (reduce (fn [a x] (if (> a 3) (reduced a) (+ a x)))))", "5"),
        // consumers straight over a finite range count it out
        ("(reduce + (range 5))", "10"),
        ("(reduce (fn [m i] (assoc m i (* i i))) {} (range 1 4))", "{1 1 2 4 3 9}"),
        ("(count (range 0 10 3))", "4"),
        ("(vec (range 3 0 -1))", "[3 2 1]"),
        ("(into #{} (range 3))", "#{0 1 2}"),
        ("(sum (range 0.5 3))", "4.5"),
        ("(first (range 10 20))", "10"),
        // searching consumers stop at the answer, over ranges too long to hold
        ("(some even? (range 1 1000000000000))", "true"),
        ("(some #(when (> % 10) %) (map inc (range 1000000000000)))", "11"),
        ("(not-any? #(> % 10) (map inc (range 1000000000000)))", "false"),
        ("(every? #(< % 10) (map inc (range 1000000000000)))", "false"),
        ("(not-every? #(< % 10) (map inc (range 1000000000000)))", "true"),
        ("(some #(when (> % 10) %) (map inc (range)))", "11"),
        ("(some #{3} (map inc [1 2 3]))", "3"),
        ("(every? pos? (filter odd? (range 10)))", "true"),
        ("(not-any? neg? (map dec (range 1 4)))", "true"),
        ("(some pos? (map dec []))", "nil"),
        ("(last (map inc (range 5)))", "5"),
        ("(last (filter neg? (range 5)))", "nil"),
        ("(last (keys {:a 1 :b 2}))", ":b"),
        // apply over a chain: the items are the call's arguments
        ("(apply + (range 1000000))", "499999500000"),
        ("(apply str (map inc [1 2 3]))", "\"234\""),
        ("(apply max (map #(mod (* % 7) 10) (range 20)))", "9"),
        ("(apply max-key count (map str [1 22 3]))", "\"22\""),
        ("(apply hash-map (mapcat identity {:a 1 :b 2}))", "{:a 1 :b 2}"),
        ("(apply + (vals {:a 1 :b 2}))", "3"),
        ("(apply vector (split \"a,b\" #\",\"))", "[\"a\" \"b\"]"),
        // sort over a chain: the items are gathered, then sorted as the builtin sorts
        ("(sort (map - (range 5)))", "[-4 -3 -2 -1 0]"),
        ("(sort > (filter odd? (range 8)))", "[7 5 3 1]"),
        ("(sort (map str (range 12)))", "[\"0\" \"1\" \"10\" \"11\" \"2\" \"3\" \"4\" \"5\" \"6\" \"7\" \"8\" \"9\"]"),
        ("(sort (vals {:a 3 :b 1}))", "[1 3]"),
        ("(first (range 0 0))", "nil"),
        ("(reduce + (take 3 (range)))", "3"),
        ("(first (map inc (range 4 4 0)))", "nil"),
        ("(first (map inc (range 4 5 0)))", "5"),
        ("(->> (split \"The cat the\" #\"\\s+\") (map lower-case) frequencies)", "{\"cat\" 1 \"the\" 2}"),
        ("(frequencies (split \"a,b,a\" #\",\"))", "{\"a\" 2 \"b\" 1}"),
        ("(count (split \"a,b,,,\" \",\"))", "2"),
        ("(count (split \"a,b,,,\" \",\" -1))", "5"),
        ("(reduce + (vals {:a 1 :b 2}))", "3"),
        ("(reduce + (vals {}))", "0"),
        ("(sum (vals nil))", "0"),
        ("(first (keys {:b 1 :a 2}))", ":a"),
        ("(->> (zipmap (range 50) (range 50)) vals (filter even?) count)", "25"),
        ("(into [] (keys {:b 1 :a 2}))", "[:a :b]"),
        // a map over several collections streams them in step
        ("(reduce (fn [acc [a b]] (+ acc (* a b))) 0 (map vector (range 4) (range 10)))", "14"),
        ("(count (map + (range 1000000) (range 1000000)))", "1000000"),
        ("(->> (map + [1 2 3] [10 20 30] [100 200]) (filter even?) vec)", "[222]"),
        ("(first (map vector [1 2] (range)))", "[1 0]"),
        ("(count (map list \"abc\" {:a 1 :b 2}))", "2"),
        ("(into {} (map vector [:a :b] (iterate inc 1)))", "{:a 1 :b 2}"),
        // a range among them too long to hold stays lazy where the chain may not read it all
        ("(vec (take 3 (map + (range 1000000000000) (range 1000000000000))))", "[0 2 4]"),
        ("(first (map + (range 1000000000000) (iterate inc 5)))", "5"),
        ("(vec (take 2 (map vector (range 3 1000000000000 7) (iterate inc 0))))", "[[3 0] [10 1]]"),
        // a user definition named like a step is called, never fused
        ("(defn map [f xs] [f]) (->> [1 2] (map inc) (filter fn?) count)", "1"),
    ]);
}

#[test]
fn fused_chains_fail_like_the_steps() {
    check_err(&[
        ("(->> [1 nil 3] (map inc) (reduce +))", "type_error", ""),
        ("(->> 5 (map inc) (filter odd?) count)", "type_error", "map"),
        ("(->> [1 2] (map inc) (filter 7) count)", "not_callable", "not callable: 7"),
        ("(count (range 0 10 0))", "loop_limit_exceeded", "is infinite, so count would never finish"),
        ("(reduce + (range \"a\"))", "type_error", "range"),
        ("(count (split 5 #\",\"))", "type_error", "split"),
        ("(reduce + (vals [1 2]))", "type_error", "vals"),
        ("(->> (split \"a\" \",,\") (map inc) count)", "type_error", "plain-string separator"),
        ("(count (map vector [1 2] 5))", "type_error", "map"),
        ("(reduce + (map + [1 2] [3 nil]))", "type_error", ""),
        ("(count (map vector (range) (range)))", "loop_limit_exceeded", ""),
    ]);
}

/// A consumer over a bare `range` or `split` source charges what the nested calls
/// charge: the source's vector once (`vec` of a vector returns it; `set`, `sort` and
/// `apply` read it), never each item again.
#[test]
fn bare_sources_are_charged_once() {
    for (fused, plain) in [
        ("(vec (range 100000))", "(let [r (range 100000)] (vec r))"),
        (
            "(vec (split (apply str (repeat 1000 \"a,\")) #\",\"))",
            "(let [s (split (apply str (repeat 1000 \"a,\")) #\",\")] (vec s))",
        ),
        ("(count (vec (map inc (range 1000))))", "(let [m (map inc (range 1000))] (count (vec m)))"),
        ("(set (range 1000))", "(let [r (range 1000)] (set r))"),
        ("(sort (range 1000))", "(let [r (range 1000)] (sort r))"),
        ("(apply + (range 1000))", "(let [r (range 1000)] (apply + r))"),
    ] {
        let (f, p) = (go(fused), go(plain));
        assert_eq!(show_outcome(&f), show_outcome(&p), "{fused}");
        assert_eq!(f.usage.heap_bytes, p.usage.heap_bytes, "{fused} against {plain}");
    }
}
