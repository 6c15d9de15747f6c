//! The agent workloads of the side-by-side suite: each one a question over generated data,
//! answered by an idiomatic PTC-Lisp program and by an idiomatic plain CPython 3 program
//! (standard library only). Both read the same context file and print their answer; the
//! answers must agree, so a fast wrong answer cannot win.

use super::data::DataSet;

/// One workload: a question and the programs that answer it. Each workload is asked in
/// several phrasings a model really writes (threading macro or nested calls, `fn` or `#()`,
/// `for` or `map`, `reduce` or `loop`/`recur`, data from the context or built in the
/// program); every phrasing is checked against CPython's answer over the same data, and the
/// table reports the worst one, so a fast path tuned on one spelling cannot carry the row.
pub struct Workload {
    /// Short id used for file names and the table (`1`, `7a`, ...).
    pub id: &'static str,
    /// What the table calls it.
    pub title: &'static str,
    /// The context the context-fed phrasings read (`ptc eval --context FILE`, `python3 prog.py FILE`).
    pub data: DataSet,
    /// The Python program over the context; it prints its answer as JSON.
    pub python: String,
    /// The data set and Python program of the phrasings that build their own data.
    pub built: Option<(DataSet, String)>,
    /// The PTC-Lisp phrasings; the first is the canonical one (used by the scaling series).
    pub phrasings: Vec<Phrasing>,
}

/// Where a phrasing's data comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The workload's context file.
    Context,
    /// Built by the program itself from `data/n`.
    Built,
}

/// One way of writing a workload's program.
pub struct Phrasing {
    /// Short name for the table (`->> #()`, `nested fn`, ...).
    pub name: &'static str,
    pub source: Source,
    /// The PTC-Lisp program; its result is the answer.
    pub lisp: String,
}

fn ctx(name: &'static str, lisp: &str) -> Phrasing {
    Phrasing { name, source: Source::Context, lisp: lisp.to_string() }
}

fn built(name: &'static str, lisp: String) -> Phrasing {
    Phrasing { name, source: Source::Built, lisp }
}

/// Limits large enough for every workload: the defaults are sized for LLM-written programs
/// on a shared server, not for a 50 MB context or ten million `recur` jumps.
pub const PTC_LIMITS: &[&str] = &[
    "--timeout-ms",
    "600000",
    "--max-heap-bytes",
    "16000000000",
    "--max-context-bytes",
    "16000000000",
    "--max-loop-iterations",
    "1000000000",
    "--max-result-bytes",
    "100000000",
];

const PY_LOAD: &str = "import json, sys\ndata = json.load(open(sys.argv[1]))\n";

/// The eight workloads of issue 17 (the seventh in its two halves), at full size.
pub fn all() -> Vec<Workload> {
    vec![
        orders_pipeline(100_000),
        group_by(),
        sort_top(),
        word_frequencies(),
        regex_groups(),
        join(),
        numeric_loop(10_000_000),
        assoc_update(100_000),
        events(),
    ]
}

/// `orders`, built from `data/n` the same way on both sides; `body` sees `orders`.
fn lisp_orders(body: &str) -> String {
    format!(
        r#"(let [statuses ["paid" "pending" "refunded" "paid" "failed"]
      cats ["books" "games" "garden" "grocery" "health" "home" "kids" "music" "office" "pets" "sports" "tools"]
      orders (mapv (fn [i] {{:id i
                             :status (nth statuses (mod i 5))
                             :amount (mod (* i 7919) 10000)
                             :customer (str "c" (mod i 5000))
                             :category (nth cats (mod i 12))
                             :priority (inc (mod (* i 31) 5))}})
                   (range data/n))]
  {body})"#
    )
}

const PY_ORDERS: &str = r#"statuses = ["paid", "pending", "refunded", "paid", "failed"]
cats = ["books", "games", "garden", "grocery", "health", "home", "kids", "music", "office", "pets", "sports", "tools"]
orders = [{"id": i, "status": statuses[i % 5], "amount": i * 7919 % 10000, "customer": "c" + str(i % 5000),
           "category": cats[i % 12], "priority": 1 + i * 31 % 5} for i in range(data["n"])]
"#;

fn py_ctx(key: &str, body: &str) -> String {
    format!("{key} = data[\"{key}\"]\n{body}")
}

/// Workload 1 at `n` orders (also its scaling series).
pub fn orders_pipeline(n: usize) -> Workload {
    let py = r#"print(json.dumps(sum(o["amount"] for o in orders if o["status"] == "paid")))"#;
    Workload {
        id: "1",
        title: "100k orders: filter → map → sum",
        data: DataSet::Orders(n),
        python: py_ctx("orders", py),
        built: Some((DataSet::Size(n), format!("{PY_ORDERS}{py}"))),
        phrasings: vec![
            ctx(
                "->> #() ctx",
                r#"(->> data/orders
     (filter #(= "paid" (:status %)))
     (map :amount)
     (reduce +))"#,
            ),
            ctx(
                "nested fn ctx",
                r#"(reduce + (map (fn [o] (get o :amount)) (filter (fn [o] (= (:status o) "paid")) data/orders)))"#,
            ),
            ctx(
                "reduce fn ctx",
                r#"(reduce (fn [acc {:keys [status amount]}] (if (= status "paid") (+ acc amount) acc)) 0 data/orders)"#,
            ),
            built(
                "mapv-built ->> apply",
                lisp_orders(r#"(->> orders (filter #(= (:status %) "paid")) (map :amount) (apply +))"#),
            ),
            built(
                "built for :when",
                lisp_orders(r#"(reduce + (for [o orders :when (= "paid" (:status o))] (:amount o)))"#),
            ),
        ],
    }
}

fn group_by() -> Workload {
    let py = r#"from collections import defaultdict
groups = defaultdict(list)
for o in orders:
    groups[o["category"]].append(o["amount"])
answer = {k: {"count": len(v), "sum": sum(v), "avg": sum(v) / len(v)} for k, v in groups.items()}
print(json.dumps(answer))"#;
    Workload {
        id: "2",
        title: "group-by + per-group count/sum/avg, 100k records",
        data: DataSet::Orders(100_000),
        python: py_ctx("orders", py),
        built: Some((DataSet::Size(100_000), format!("{PY_ORDERS}{py}"))),
        phrasings: vec![
            ctx(
                "->> group-by map fn",
                r#"(->> data/orders
     (group-by :category)
     (map (fn [[category orders]]
            (let [total (reduce + (map :amount orders))
                  n (count orders)]
              [category {:count n :sum total :avg (/ total n)}])))
     (into {}))"#,
            ),
            ctx(
                "for over group-by",
                r#"(into {} (for [[c os] (group-by :category data/orders)]
            (let [amounts (map :amount os)
                  total (apply + amounts)]
              [c {:count (count os) :sum total :avg (/ total (count os))}])))"#,
            ),
            ctx(
                "reduce update fnil",
                r#"(let [groups (reduce (fn [m o] (update m (:category o) (fnil conj []) (:amount o))) {} data/orders)]
  (reduce-kv (fn [acc k v]
               (let [s (reduce + v)]
                 (assoc acc k {:count (count v) :sum s :avg (/ s (count v))})))
             {} groups))"#,
            ),
            built(
                "built ->> group-by",
                lisp_orders(
                    r#"(->> orders
       (group-by :category)
       (map (fn [[k os]] (let [s (reduce + (map :amount os))] [k {:count (count os) :sum s :avg (/ s (count os))}])))
       (into {}))"#,
                ),
            ),
        ],
    }
}

fn sort_top() -> Workload {
    let py = r#"top = sorted(orders, key=lambda o: (o["priority"], o["amount"]), reverse=True)[:10]
print(json.dumps([o["id"] for o in top]))"#;
    Workload {
        id: "3",
        title: "sort-by two keys, top 10 of 100k",
        data: DataSet::Orders(100_000),
        python: py_ctx("orders", py),
        built: Some((DataSet::Size(100_000), format!("{PY_ORDERS}{py}"))),
        phrasings: vec![
            ctx(
                "->> juxt #(compare)",
                r#"(->> data/orders
     (sort-by (juxt :priority :amount) #(compare %2 %1))
     (take 10)
     (map :id))"#,
            ),
            ctx(
                "nested fn negated keys",
                r#"(map :id (take 10 (sort-by (fn [o] [(- (:priority o)) (- (:amount o))]) data/orders)))"#,
            ),
            ctx(
                "sort comparator fn",
                r#"(->> data/orders
     (sort (fn [a b] (compare [(:priority b) (:amount b)] [(:priority a) (:amount a)])))
     (take 10)
     (mapv :id))"#,
            ),
            built(
                "built ->> juxt",
                lisp_orders(r#"(->> orders (sort-by (juxt :priority :amount) #(compare %2 %1)) (take 10) (map :id))"#),
            ),
        ],
    }
}

const LISP_TEXT: &str = r#"(let [syl ["ka" "lo" "mi" "ne" "su" "ta" "ri" "po" "ve" "do" "an" "el"]
      vocab (mapv (fn [j] (str (nth syl (mod j 12)) (nth syl (mod (* j 7) 12)) (if (even? j) "" (nth syl (mod (* j 5) 12))))) (range 300))
      text (join " " (map (fn [i] (let [w (nth vocab (mod (* i 7919) 300))] (if (zero? (mod i 5)) (upper-case w) w))) (range data/n)))]
"#;

fn word_frequencies() -> Workload {
    let py = r#"from collections import Counter
print(json.dumps(Counter(w.lower() for w in text.split())))"#;
    let py_built = format!(
        r#"syl = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "do", "an", "el"]
vocab = [syl[j % 12] + syl[j * 7 % 12] + ("" if j % 2 == 0 else syl[j * 5 % 12]) for j in range(300)]
words = []
for i in range(data["n"]):
    w = vocab[i * 7919 % 300]
    words.append(w.upper() if i % 5 == 0 else w)
text = " ".join(words)
{py}"#
    );
    Workload {
        id: "4",
        title: "word frequencies of a 5 MB text (built: 300k words)",
        data: DataSet::Text(5_000_000),
        python: py_ctx("text", py),
        built: Some((DataSet::Size(300_000), py_built)),
        phrasings: vec![
            ctx(
                "->> split map frequencies",
                r#"(->> (split data/text #"\s+")
     (map lower-case)
     frequencies)"#,
            ),
            ctx("nested calls", r#"(frequencies (map lower-case (split data/text #"\s+")))"#),
            ctx(
                "reduce update fnil inc",
                r#"(reduce (fn [m w] (update m (lower-case w) (fnil inc 0))) {} (split data/text #"\s+"))"#,
            ),
            built(
                "built ->> frequencies",
                format!("{LISP_TEXT}  (->> (split text #\"\\s+\") (map lower-case) frequencies))"),
            ),
            built(
                "built reduce assoc get",
                format!(
                    "{LISP_TEXT}  (reduce (fn [m w] (let [k (lower-case w)] (assoc m k (inc (get m k 0))))) {{}} (split text #\" \")))"
                ),
            ),
        ],
    }
}

const LISP_LOGS: &str = r#"(let [methods ["GET" "GET" "POST" "PUT" "DELETE"]
      codes ["200" "200" "200" "201" "204" "301" "400" "404" "500" "503"]
      lines (for [i (range data/n)]
              (if (zero? (mod i 10))
                (str "2026-11-24 INFO worker heartbeat " i " ok")
                (str "2026-11-24 INFO " (nth methods (mod i 5)) " /api/items/" (mod (* i 13) 1000)
                     " status=" (nth codes (mod (* i 7) 10)) " latency=" (mod i 2000) "ms")))]
"#;

fn regex_groups() -> Workload {
    let py = r#"import re
from collections import Counter
pattern = re.compile(r"(GET|POST|PUT|DELETE) \S+ status=(\d+)")
counts = Counter()
for line in lines:
    m = pattern.search(line)
    if m:
        counts[m.group(2)] += 1
print(json.dumps(counts))"#;
    let py_built = format!(
        r#"methods = ["GET", "GET", "POST", "PUT", "DELETE"]
codes = ["200", "200", "200", "201", "204", "301", "400", "404", "500", "503"]
lines = []
for i in range(data["n"]):
    if i % 10 == 0:
        lines.append("2026-11-24 INFO worker heartbeat " + str(i) + " ok")
    else:
        lines.append("2026-11-24 INFO " + methods[i % 5] + " /api/items/" + str(i * 13 % 1000)
                     + " status=" + codes[i * 7 % 10] + " latency=" + str(i % 2000) + "ms")
{py}"#
    );
    Workload {
        id: "5",
        title: "regex (2 groups) over 50k log lines, count per status",
        data: DataSet::Logs(50_000),
        python: py_ctx("lines", py),
        built: Some((DataSet::Size(50_000), py_built)),
        phrasings: vec![
            ctx(
                "->> keep #() fn destructure",
                r#"(->> data/lines
     (keep #(re-find #"(GET|POST|PUT|DELETE) \S+ status=(\d+)" %))
     (map (fn [[_ _method status]] status))
     frequencies)"#,
            ),
            ctx(
                "for :let :when nth",
                r#"(frequencies (for [line data/lines
                   :let [m (re-find #"(GET|POST|PUT|DELETE) \S+ status=(\d+)" line)]
                   :when m]
               (nth m 2)))"#,
            ),
            ctx(
                "reduce if-let update",
                r#"(reduce (fn [acc line]
          (if-let [[_ _ status] (re-find #"(GET|POST|PUT|DELETE) \S+ status=(\d+)" line)]
            (update acc status (fnil inc 0))
            acc))
        {} data/lines)"#,
            ),
            built(
                "built ->> keep last",
                format!(
                    "{LISP_LOGS}  (->> lines (keep #(re-find #\"(GET|POST|PUT|DELETE) \\S+ status=(\\d+)\" %)) (map last) frequencies))"
                ),
            ),
        ],
    }
}

fn join() -> Workload {
    let py = r#"from collections import defaultdict
by_id = {c["id"]: c for c in customers}
totals = defaultdict(int)
for o in orders:
    totals[by_id[o["customer"]]["tier"]] += o["amount"]
print(json.dumps(totals))"#;
    let py_built = format!(
        r#"{PY_ORDERS}tiers = ["bronze", "silver", "gold", "platinum"]
customers = [{{"id": "c" + str(i), "name": "Customer " + str(i), "tier": tiers[i * 3 % 4 if i % 7 else 3]}} for i in range(5000)]
{py}"#
    );
    let lisp_customers = |body: &str| {
        lisp_orders(&format!(
            r#"(let [tiers ["bronze" "silver" "gold" "platinum"]
        customers (mapv (fn [i] {{:id (str "c" i) :name (str "Customer " i)
                                  :tier (nth tiers (if (zero? (mod i 7)) 3 (mod (* i 3) 4)))}})
                        (range 5000))]
    {body})"#
        ))
    };
    Workload {
        id: "6",
        title: "join 50k orders with 5k customers, total per tier",
        data: DataSet::Join(50_000, 5_000),
        python: format!("orders = data[\"orders\"]\n{}", py_ctx("customers", py)),
        built: Some((DataSet::Size(50_000), py_built)),
        phrasings: vec![
            ctx(
                "->> juxt reduce update",
                r#"(let [by-id (into {} (map (juxt :id identity) data/customers))]
  (->> data/orders
       (map (fn [o] [(:tier (by-id (:customer o))) (:amount o)]))
       (reduce (fn [totals [tier amount]] (update totals tier (fnil + 0) amount)) {})))"#,
            ),
            ctx(
                "for map, reduce assoc get",
                r#"(let [tier-of (into {} (for [c data/customers] [(:id c) (:tier c)]))]
  (reduce (fn [acc o]
            (let [t (get tier-of (:customer o))]
              (assoc acc t (+ (get acc t 0) (:amount o)))))
          {} data/orders))"#,
            ),
            ctx(
                "zipmap group-by",
                r#"(let [tier-of (zipmap (map :id data/customers) (map :tier data/customers))]
  (->> data/orders
       (group-by #(tier-of (:customer %)))
       (map (fn [[t os]] [t (reduce + (map :amount os))]))
       (into {})))"#,
            ),
            built(
                "built ->> juxt update",
                lisp_customers(
                    r#"(let [by-id (into {} (map (juxt :id identity) customers))]
      (->> orders
           (map (fn [o] [(:tier (by-id (:customer o))) (:amount o)]))
           (reduce (fn [totals [tier amount]] (update totals tier (fnil + 0) amount)) {})))"#,
                ),
            ),
        ],
    }
}

fn events() -> Workload {
    Workload {
        id: "8",
        title: "50 MB JSON context, errors > 500 ms per country",
        data: DataSet::Events(50_000_000),
        python: r#"from collections import Counter
counts = Counter(e["user"]["country"] for e in data["events"]
                 if e["kind"] == "error" and e["latency_ms"] > 500)
print(json.dumps(counts))"#
            .into(),
        built: None,
        phrasings: vec![
            ctx("->> filter #() get-in", EVENTS_LISP),
            ctx(
                "nested fn keyword chain",
                r#"(frequencies (map (fn [e] (:country (:user e)))
                  (filter (fn [e] (and (= (:kind e) "error") (> (:latency_ms e) 500))) data/events)))"#,
            ),
            ctx(
                "reduce destructure update",
                r#"(reduce (fn [acc {:keys [kind latency_ms user]}]
          (if (and (= kind "error") (> latency_ms 500))
            (update acc (:country user) (fnil inc 0))
            acc))
        {} data/events)"#,
            ),
        ],
    }
}

const EVENTS_LISP: &str = r#"(->> data/events
     (filter #(and (= "error" (:kind %)) (> (:latency_ms %) 500)))
     (map #(get-in % [:user :country]))
     frequencies)"#;

/// The serde_json floor of workload 8: read the file, parse it into a `serde_json::Value`,
/// answer the same question. Compiled by `rustc -O` against the release build's serde_json.
pub const EVENTS_FLOOR_RS: &str = r#"use std::collections::BTreeMap;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let bytes = std::fs::read(path).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for e in v["events"].as_array().unwrap() {
        if e["kind"] == "error" && e["latency_ms"].as_i64().unwrap() > 500 {
            *counts.entry(e["user"]["country"].as_str().unwrap()).or_default() += 1;
        }
    }
    println!("{}", serde_json::to_string(&counts).unwrap());
}
"#;

/// Workload 7a at `n` iterations; every phrasing builds its own numbers from `data/n`.
pub fn numeric_loop(n: usize) -> Workload {
    Workload {
        id: "7a",
        title: "`loop`/`recur` numeric loop, 10 M iterations",
        data: DataSet::Size(n),
        python: r#"n = data["n"]
acc = 0
for i in range(n):
    acc += i * i % 7
print(json.dumps(acc))"#
            .into(),
        built: None,
        phrasings: vec![
            ctx(
                "loop/recur rem inc",
                r#"(loop [i 0 acc 0]
  (if (< i data/n)
    (recur (inc i) (+ acc (rem (* i i) 7)))
    acc))"#,
            ),
            ctx(
                "let n, loop/recur mod +1",
                r#"(let [n data/n]
  (loop [i 0 acc 0]
    (if (>= i n)
      acc
      (recur (+ i 1) (+ acc (mod (* i i) 7))))))"#,
            ),
            ctx("reduce fn over range", r#"(reduce (fn [acc i] (+ acc (mod (* i i) 7))) 0 (range data/n))"#),
            ctx("->> range map #() reduce", r#"(->> (range data/n) (map #(rem (* % %) 7)) (reduce +))"#),
        ],
    }
}

/// Workload 7b at `n` keys; every phrasing builds its own map from `data/n`.
pub fn assoc_update(n: usize) -> Workload {
    Workload {
        id: "7b",
        title: "`reduce` with `assoc`, then `update`, 100k string keys",
        data: DataSet::Size(n),
        python: r#"n = data["n"]
m = {}
for i in range(n):
    m["k" + str(i)] = i
for i in range(n):
    m["k" + str(i * 7 % n)] += i
print(json.dumps([len(m), sum(m.values())]))"#
            .into(),
        built: None,
        phrasings: vec![
            ctx(
                "reduce assoc, reduce update",
                r#"(let [n data/n
      m (reduce (fn [m i] (assoc m (str "k" i) i)) {} (range n))
      m (reduce (fn [m i] (update m (str "k" (rem (* i 7) n)) + i)) m (range n))]
  [(count m) (reduce + (vals m))])"#,
            ),
            ctx(
                "loop/recur assoc get",
                r#"(let [n data/n
      m (loop [i 0 m {}] (if (< i n) (recur (inc i) (assoc m (str "k" i) i)) m))
      m (loop [i 0 m m]
          (if (< i n)
            (let [k (str "k" (mod (* i 7) n))] (recur (inc i) (assoc m k (+ (get m k) i))))
            m))]
  [(count m) (apply + (vals m))])"#,
            ),
            ctx(
                "into for, ->> reduce #()",
                r#"(let [n data/n
      m (into {} (for [i (range n)] [(str "k" i) i]))
      m (->> (range n) (reduce #(update %1 (str "k" (mod (* %2 7) n)) + %2) m))]
  [(count m) (reduce + (vals m))])"#,
            ),
        ],
    }
}

impl Workload {
    /// The data set and the Python program (a whole file: load the context, then the
    /// workload's own lines) that answer the workload for phrasings fed from `source`.
    pub fn baseline(&self, source: Source) -> (DataSet, String) {
        match (source, &self.built) {
            (Source::Built, Some((data, python))) => (*data, format!("{PY_LOAD}{python}\n")),
            _ => (self.data, format!("{PY_LOAD}{}\n", self.python)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workload_has_three_phrasings_and_a_baseline_for_each_source() {
        for w in all() {
            assert!(w.phrasings.len() >= 3, "workload {} has {} phrasings", w.id, w.phrasings.len());
            for p in &w.phrasings {
                let (data, python) = w.baseline(p.source);
                assert!(python.starts_with(PY_LOAD), "{} {}", w.id, p.name);
                if p.source == Source::Built {
                    assert!(matches!(data, DataSet::Size(_)), "{} {}: built data comes from n", w.id, p.name);
                    assert!(w.built.is_some(), "{} {}: no Python program for built data", w.id, p.name);
                }
            }
        }
    }
}
