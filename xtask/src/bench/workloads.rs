//! The agent workloads of the side-by-side suite: each one a question over generated data,
//! answered by an idiomatic PTC-Lisp program and by an idiomatic plain CPython 3 program
//! (standard library only). Both read the same context file and print their answer; the
//! answers must agree, so a fast wrong answer cannot win.

use super::data::DataSet;

/// One workload: a question, its data, and the two programs that answer it.
pub struct Workload {
    /// Short id used for file names and the table (`1`, `7a`, ...).
    pub id: &'static str,
    /// What the table calls it.
    pub title: &'static str,
    /// The context both programs read (`ptc eval --context FILE`, `python3 prog.py FILE`).
    pub data: DataSet,
    /// The PTC-Lisp program; its result is the answer.
    pub lisp: &'static str,
    /// The Python program; it prints its answer as JSON.
    pub python: &'static str,
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
        Workload {
            id: "2",
            title: "group-by + per-group count/sum/avg, 100k records",
            data: DataSet::Orders(100_000),
            lisp: r#"(->> data/orders
     (group-by :category)
     (map (fn [[category orders]]
            (let [total (reduce + (map :amount orders))
                  n (count orders)]
              [category {:count n :sum total :avg (/ total n)}])))
     (into {}))"#,
            python: r#"from collections import defaultdict
groups = defaultdict(list)
for o in data["orders"]:
    groups[o["category"]].append(o["amount"])
answer = {k: {"count": len(v), "sum": sum(v), "avg": sum(v) / len(v)} for k, v in groups.items()}
print(json.dumps(answer))"#,
        },
        Workload {
            id: "3",
            title: "sort-by two keys, top 10 of 100k",
            data: DataSet::Orders(100_000),
            lisp: r#"(->> data/orders
     (sort-by (juxt :priority :amount) #(compare %2 %1))
     (take 10)
     (map :id))"#,
            python: r#"top = sorted(data["orders"], key=lambda o: (o["priority"], o["amount"]), reverse=True)[:10]
print(json.dumps([o["id"] for o in top]))"#,
        },
        Workload {
            id: "4",
            title: "word frequencies of a 5 MB text",
            data: DataSet::Text(5_000_000),
            lisp: r#"(->> (split data/text #"\s+")
     (map lower-case)
     frequencies)"#,
            python: r#"from collections import Counter
print(json.dumps(Counter(w.lower() for w in data["text"].split())))"#,
        },
        Workload {
            id: "5",
            title: "regex (2 groups) over 50k log lines, count per status",
            data: DataSet::Logs(50_000),
            lisp: r#"(->> data/lines
     (keep #(re-find #"(GET|POST|PUT|DELETE) \S+ status=(\d+)" %))
     (map (fn [[_ _method status]] status))
     frequencies)"#,
            python: r#"import re
from collections import Counter
pattern = re.compile(r"(GET|POST|PUT|DELETE) \S+ status=(\d+)")
counts = Counter()
for line in data["lines"]:
    m = pattern.search(line)
    if m:
        counts[m.group(2)] += 1
print(json.dumps(counts))"#,
        },
        Workload {
            id: "6",
            title: "join 50k orders with 5k customers, total per tier",
            data: DataSet::Join(50_000, 5_000),
            lisp: r#"(let [by-id (into {} (map (juxt :id identity) data/customers))]
  (->> data/orders
       (map (fn [o] [(:tier (by-id (:customer o))) (:amount o)]))
       (reduce (fn [totals [tier amount]] (update totals tier (fnil + 0) amount)) {})))"#,
            python: r#"from collections import defaultdict
by_id = {c["id"]: c for c in data["customers"]}
totals = defaultdict(int)
for o in data["orders"]:
    totals[by_id[o["customer"]]["tier"]] += o["amount"]
print(json.dumps(totals))"#,
        },
        numeric_loop(10_000_000),
        assoc_update(100_000),
        Workload {
            id: "8",
            title: "50 MB JSON context, errors > 500 ms per country",
            data: DataSet::Events(50_000_000),
            lisp: EVENTS_LISP,
            python: r#"from collections import Counter
counts = Counter(e["user"]["country"] for e in data["events"]
                 if e["kind"] == "error" and e["latency_ms"] > 500)
print(json.dumps(counts))"#,
        },
    ]
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

/// Workload 1 at `n` orders (also its scaling series).
pub fn orders_pipeline(n: usize) -> Workload {
    Workload {
        id: "1",
        title: "100k orders: filter → map → sum",
        data: DataSet::Orders(n),
        lisp: r#"(->> data/orders
     (filter #(= "paid" (:status %)))
     (map :amount)
     (reduce +))"#,
        python: r#"print(json.dumps(sum(o["amount"] for o in data["orders"] if o["status"] == "paid")))"#,
    }
}

/// Workload 7a at `n` iterations.
pub fn numeric_loop(n: usize) -> Workload {
    Workload {
        id: "7a",
        title: "`loop`/`recur` numeric loop, 10 M iterations",
        data: DataSet::Size(n),
        lisp: r#"(loop [i 0 acc 0]
  (if (< i data/n)
    (recur (inc i) (+ acc (rem (* i i) 7)))
    acc))"#,
        python: r#"n = data["n"]
acc = 0
for i in range(n):
    acc += i * i % 7
print(json.dumps(acc))"#,
    }
}

/// Workload 7b at `n` keys.
pub fn assoc_update(n: usize) -> Workload {
    Workload {
        id: "7b",
        title: "`reduce` with `assoc`, then `update`, 100k string keys",
        data: DataSet::Size(n),
        lisp: r#"(let [n data/n
      m (reduce (fn [m i] (assoc m (str "k" i) i)) {} (range n))
      m (reduce (fn [m i] (update m (str "k" (rem (* i 7) n)) + i)) m (range n))]
  [(count m) (reduce + (vals m))])"#,
        python: r#"n = data["n"]
m = {}
for i in range(n):
    m["k" + str(i)] = i
for i in range(n):
    m["k" + str(i * 7 % n)] += i
print(json.dumps([len(m), sum(m.values())]))"#,
    }
}

impl Workload {
    /// The Python program as a file: load the context, then the workload's own lines.
    pub fn python_file(&self) -> String {
        format!("{PY_LOAD}{}\n", self.python)
    }
}
