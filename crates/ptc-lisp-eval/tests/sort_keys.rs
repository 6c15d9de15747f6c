//! sort-by with vector keys of one width (`(juxt :a :b)`) spreads them into a flat table;
//! these check it against the general path, which sees the same keys one vector each.
mod common;
use common::*;
use proptest::prelude::*;

fn item() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (-3i64..3).prop_map(|i| i.to_string()),
        1 => prop_oneof![Just("nil"), Just("1.0"), Just("-0.5"), Just("##NaN"), Just("2.0")].prop_map(String::from),
        1 => prop_oneof![Just("\"a\""), Just("\"b\""), Just(":k")].prop_map(String::from),
        1 => prop_oneof![Just("true"), Just("false")].prop_map(String::from),
    ]
}

fn records() -> impl Strategy<Value = String> {
    proptest::collection::vec((item(), item()), 0..24).prop_map(|rs| {
        let body: Vec<String> = rs.iter().enumerate().map(|(i, (a, b))| format!("{{:id {i} :a {a} :b {b}}}")).collect();
        format!("[{}]", body.join(" "))
    })
}

/// Ints only: the keys are totally ordered, so every path must agree on success.
fn int_records() -> impl Strategy<Value = String> {
    proptest::collection::vec((-3i64..3, -3i64..3), 0..40).prop_map(|rs| {
        let body: Vec<String> = rs.iter().enumerate().map(|(i, (a, b))| format!("{{:id {i} :a {a} :b {b}}}")).collect();
        format!("[{}]", body.join(" "))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn flat_keys_sort_like_general_keys_with_a_known_comparator(data in records()) {
        for (cmp, general) in [
            ("#(compare %2 %1)", "(fn [x y] (let [c (compare y x)] c))"),
            ("#(compare %1 %2)", "(fn [x y] (let [c (compare x y)] c))"),
        ] {
            let flat = show(&format!("(map :id (sort-by (juxt :a :b) {cmp} {data}))"));
            let slow = show(&format!("(map :id (sort-by (juxt :a :b) {general} {data}))"));
            prop_assert_eq!(flat, slow, "comparator {}", cmp);
        }
    }

    #[test]
    fn flat_keys_sort_like_nested_keys_in_order(data in records()) {
        for order in [":asc", ":desc"] {
            // a key wrapped in another vector is never spread; it compares the same
            let flat = show(&format!("(map :id (sort-by (juxt :a :b) {order} {data}))"));
            let nested = show(&format!("(map :id (sort-by (fn [r] [[(:a r) (:b r)]]) {order} {data}))"));
            prop_assert_eq!(flat, nested, "order {}", order);
        }
    }

    #[test]
    fn int_keys_sort_the_same_every_way(data in int_records()) {
        let want = show(&format!("(map :id (sort-by (fn [r] [[(:a r) (:b r)]]) {data}))"));
        prop_assert!(!want.starts_with('!'), "{}", want);
        prop_assert_eq!(show(&format!("(map :id (sort-by (juxt :a :b) {data}))")), want.clone());
        prop_assert_eq!(show(&format!("(map :id (sort-by (juxt :a :b) #(compare %1 %2) {data}))")), want);
    }
}

#[test]
fn keys_that_stop_fitting_fall_back() {
    check(&[
        // a shorter key after spread ones: compared by length first, as vectors are
        ("(sort-by identity #(compare %1 %2) [[2 1] [1 5] [3]])", "[[3] [1 5] [2 1]]"),
        ("(sort-by identity [[2 1] [1 5] [3]])", "[[3] [1 5] [2 1]]"),
        // a key that is not a vector after spread ones
        ("(sort-by identity #(compare %2 %1) [[2 1] [1 5] nil])", "[[2 1] [1 5] nil]"),
        // a vector with a collection inside
        ("(sort-by identity [[2 1] [1 [5]]])", "[[1 [5]] [2 1]]"),
        ("(sort-by identity #(compare %1 %2) [[2 1] [1 [5]]])", "[[1 [5]] [2 1]]"),
        ("(sort-by (juxt :a :b) #(compare %2 %1) [])", "[]"),
        ("(sort-by (juxt :a) [{:a \"b\"} {:a \"a\"} {:a nil}])", "[{:a nil} {:a \"a\"} {:a \"b\"}]"),
    ]);
}

/// Comparators of one key of each argument, each paired with the same comparator written
/// so that it is not recognised (its answer bound by a `let`): `sort` with the first
/// computes each key once and sorts by the keys, and must answer exactly what calling the
/// second at every comparison answers, errors included.
const KEY_COMPARATORS: &[(&str, &str)] = &[
    ("(fn [x y] (compare (:a x) (:a y)))", "(fn [x y] (let [c (compare (:a x) (:a y))] c))"),
    ("(fn [x y] (compare (:a y) (:a x)))", "(fn [x y] (let [c (compare (:a y) (:a x))] c))"),
    ("#(compare [(:a %2) (:b %2)] [(:a %1) (:b %1)])", "#(let [c (compare [(:a %2) (:b %2)] [(:a %1) (:b %1)])] c)"),
    (
        "(fn [x y] (compare [(:b x) (:a x)] [(:b y) (:a y)]))",
        "(fn [x y] (let [c (compare [(:b x) (:a x)] [(:b y) (:a y)])] c))",
    ),
    ("(fn [x y] (compare (get x :b) (get y :b)))", "(fn [x y] (let [c (compare (get x :b) (get y :b))] c))"),
    ("(fn [x y] (< (:a x) (:a y)))", "(fn [x y] (let [c (< (:a x) (:a y))] c))"),
    ("(fn [x y] (> (:b x) (:b y)))", "(fn [x y] (let [c (> (:b x) (:b y))] c))"),
    ("(fn [x y] (< (:a y) (:a x)))", "(fn [x y] (let [c (< (:a y) (:a x))] c))"),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    #[test]
    fn a_key_comparator_sorts_as_calling_it_does(data in records()) {
        for (keyed, called) in KEY_COMPARATORS {
            let want = show(&format!("(map :id (sort {called} {data}))"));
            prop_assert_eq!(show(&format!("(map :id (sort {keyed} {data}))")), want, "{}", keyed);
        }
    }

    #[test]
    fn a_key_comparator_over_numbers_sorts_as_calling_it_does(data in int_records()) {
        for (keyed, called) in KEY_COMPARATORS {
            let want = show(&format!("(map :id (sort {called} {data}))"));
            prop_assert!(!want.contains("error"), "{}", want);
            prop_assert_eq!(show(&format!("(map :id (sort {keyed} {data}))")), want, "{}", keyed);
        }
    }
}

#[test]
fn key_comparators_keep_what_a_program_can_see() {
    check(&[
        // one item: the comparator is never called, so its key is never computed
        ("(sort (fn [a b] (compare (nth a 5) (nth b 5))) [[1]])", "[[1]]"),
        ("(sort (fn [a b] (compare (:k b) (:k a))) [])", "[]"),
        // `<` puts nil first, as compare does
        ("(sort (fn [a b] (< (:k a) (:k b))) [{:k 2} {:k nil}])", "[{:k nil} {:k 2}]"),
        // a captured value in the key
        ("(let [w 10] (sort (fn [a b] (compare (mod (+ a w) 7) (mod (+ b w) 7))) [1 2 3 4 5 6 7]))", "[4 5 6 7 1 2 3]"),
    ]);
}

/// Items of one kind (or nil) that `sort` orders by `compare`, and some it refuses.
fn plain_list() -> impl Strategy<Value = String> {
    let ints = proptest::collection::vec((-5i64..5).prop_map(|i| i.to_string()), 0..40);
    let numbers = proptest::collection::vec(
        prop_oneof![
            3 => (-3i64..3).prop_map(|i| i.to_string()),
            1 => prop_oneof![Just("0.0"), Just("-0.0"), Just("1.5"), Just("nil"), Just("-2.0")].prop_map(String::from),
        ],
        0..40,
    );
    let mixed = proptest::collection::vec(item(), 0..12);
    prop_oneof![3 => ints, 3 => numbers, 1 => mixed].prop_map(|xs| format!("[{}]", xs.join(" ")))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// `sort` orders the items themselves (integers alone as machine integers); sort-by
    /// with the item as its key goes through keyed pairs: both keep equal items (0.0 and
    /// -0.0) in the order given and refuse the same mixtures.
    #[test]
    fn sort_of_plain_items_is_sort_by_the_item(data in plain_list()) {
        for order in ["", ":asc ", ":desc "] {
            let direct = show(&format!("(sort {order}{data})"));
            let keyed = show(&format!("(vec (map :v (sort-by :v {order}(map (fn [x] {{:v x}}) {data}))))"));
            if direct.starts_with('!') || keyed.starts_with('!') {
                prop_assert_eq!(direct.split(':').next(), keyed.split(':').next(), "order {:?}", order);
            } else {
                prop_assert_eq!(direct, keyed, "order {:?}", order);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// `<` and `>` passed as the comparator of `sort` and `sort-by` sort numeric keys
    /// without a call per comparison: the order (equal numbers, `1` and `1.0`, `0.0` and
    /// `-0.0`, `##NaN` and nil included) and the errors are those of the same builtin
    /// called through a function the sort cannot see into. `sort-by` makes each key once
    /// either way (its `println`s show it).
    #[test]
    fn lt_and_gt_comparators_sort_as_calling_them(data in plain_list(), recs in records()) {
        for op in ["<", ">"] {
            let wrapped = format!("(let [op {op}] (fn [a b] (op a b)))");
            let direct = show(&format!("(sort {op} {data})"));
            let called = show(&format!("(sort {wrapped} {data})"));
            prop_assert_eq!(&direct, &called, "(sort {} {})", op, data);
            let direct = go(&format!("(mapv :id (sort-by #(do (println (:id %)) (:a %)) {op} {recs}))"));
            let called = go(&format!("(mapv :id (sort-by #(do (println (:id %)) (:a %)) {wrapped} {recs}))"));
            prop_assert_eq!(show_outcome(&direct), show_outcome(&called), "sort-by :a {} {}", op, recs);
            prop_assert_eq!(direct.prints, called.prints);
        }
    }
}

#[test]
fn lt_and_gt_comparators() {
    check(&[
        ("(sort > [3 1 2])", "[3 2 1]"),
        ("(sort < [3 1.5 nil 2])", "[nil 1.5 2 3]"),
        ("(sort-by :n > [{:n 1 :i 0} {:n 2 :i 1} {:n 1.0 :i 2}])", "[{:i 1 :n 2} {:i 0 :n 1} {:i 2 :n 1.0}]"),
        ("(sort > [\"b\" \"a\" \"c\"])", "[\"c\" \"b\" \"a\"]"),
        ("(sort-by :s < [{:s \"b\"} {:s \"a\"}])", "[{:s \"a\"} {:s \"b\"}]"),
    ]);
}

/// A string literal of bytes that share prefixes around the 8-byte mark, with multi-byte
/// characters and a NUL.
fn name() -> impl Strategy<Value = String> {
    proptest::collection::vec(prop_oneof![Just("a"), Just("b"), Just("é"), Just("\\u0000"), Just("z")], 0..11)
        .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Strings (and keywords) alone sort by prefix beside an index; a vector of each,
    /// which takes the general path, must come out in the same order.
    #[test]
    fn strings_alone_sort_like_the_general_path(names in proptest::collection::vec(name(), 0..30)) {
        let strs: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
        let strs = strs.join(" ");
        for order in ["", "<"] {
            let fast = show(&format!("(sort {order} [{strs}])"));
            let general = show(&format!("(map first (sort {order} (map vector [{strs}])))"));
            prop_assert_eq!(&fast, &general);
        }
        for (fast, general) in [
            (format!("(sort [{strs}])"), format!("(map first (sort (map vector [{strs}])))")),
            (format!("(sort #(compare %2 %1) [{strs}])"), format!("(map first (sort #(compare %2 %1) (map vector [{strs}])))")),
            (format!("(sort (map keyword [{strs}]))"), format!("(map first (sort (map (comp vector keyword) [{strs}])))")),
        ] {
            prop_assert_eq!(show(&fast), show(&general));
        }
        // string keys of records, ties kept in the records' order either way
        let rows: Vec<String> = names.iter().enumerate().map(|(i, n)| format!("{{:id {i} :s \"{n}\"}}")).collect();
        let rows = rows.join(" ");
        for order in ["", ":asc", ":desc"] {
            let fast = show(&format!("(map :id (sort-by :s {order} [{rows}]))"));
            let general = show(&format!("(map :id (sort-by (fn [r] [[(:s r)]]) {order} [{rows}]))"));
            prop_assert_eq!(fast, general, "order {}", order);
        }
    }
}

#[test]
fn strings_alone_sort_by_their_bytes() {
    check(&[
        (
            "(sort [\"b\" \"a\" \"ab\" \"\" \"abcdefghi\" \"abcdefgh\" \"abcdefgha\"])",
            "[\"\" \"a\" \"ab\" \"abcdefgh\" \"abcdefgha\" \"abcdefghi\" \"b\"]",
        ),
        ("(sort #(compare %2 %1) [\"b\" \"a\" \"c\"])", "[\"c\" \"b\" \"a\"]"),
        ("(sort [:b :a :c])", "[:a :b :c]"),
        // a namespace orders first, none before any (as `compare`)
        ("(sort [:b :a/b :c/a :a])", "[:a :b :a/b :c/a]"),
        ("(sort [:a.b/c :a/c :a-b/c])", "[:a/c :a-b/c :a.b/c]"),
        ("(sort-by :k [{:k :b} {:k :a/b}])", "[{:k :b} {:k :a/b}]"),
        ("(sort (map symbol [\"b\" \"a/b\"]))", "[b a/b]"),
        ("(sort [\"b\" nil \"a\"])", "[nil \"a\" \"b\"]"),
    ]);
    check_err(&[("(sort [\"b\" :a])", "type_error", "cannot compare string with keyword")]);
}
