//! Every string and collection builder charges the memory budget before it allocates: a
//! program that asks for gigabytes ends in `memory_exceeded` while the process's peak
//! resident memory stays near the limit.
//!
//! Each case runs in a child process (this test binary again, running the ignored
//! `one_case` test) under a 2 GiB address-space cap, so a builder that builds first and
//! charges after fails the case instead of taking the machine; the child reports its
//! outcome and its peak RSS (`VmHWM`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use ptc_lisp_eval::{Limits, RunOptions, run};

const LIMIT: u64 = 16 * 1024 * 1024;
/// Peak RSS a case may reach (kB): the limit, a copy of the largest result (a string
/// becomes a shared string by copying), and the test process itself.
const BOUND_KB: u64 = 3 * LIMIT / 1024 + 48 * 1024;

/// A 1 MB string, built and charged by the program itself.
const S: &str = "(def s (.repeat \"x\" 1000000))";

/// (program, expected outcome: an error kind, or "ok").
fn cases() -> Vec<(String, &'static str)> {
    let with_s = |body: &str| format!("{S} {body}");
    vec![
        // the strings of finding 2: sizes summed and charged before the result exists
        (with_s("(count (apply str (repeat 3000 s)))"), "memory_exceeded"),
        (with_s("(count (str/join (repeat 3000 s)))"), "memory_exceeded"),
        (with_s("(count (str/join \",\" (repeat 3000 s)))"), "memory_exceeded"),
        (with_s("(count (String/join \",\" (repeat 3000 s)))"), "memory_exceeded"),
        (with_s("(count (.repeat s 3000))"), "memory_exceeded"),
        (with_s("(count (apply format (apply str (repeat 3000 \"%s\")) (repeat 3000 s)))"), "memory_exceeded"),
        (with_s("(count (reduce (fn [a _] (.concat a s)) \"\" (range 100)))"), "memory_exceeded"),
        // printed forms: printed within what is left of the budget, never cut silently
        (with_s("(count (str (vec (repeat 3000 s))))"), "memory_exceeded"),
        (with_s("(count (pr-str (vec (repeat 3000 s))))"), "memory_exceeded"),
        (with_s("(count (prn-str (vec (repeat 3000 s))))"), "memory_exceeded"),
        (with_s("(count (print-str (vec (repeat 3000 s))))"), "memory_exceeded"),
        (with_s("(count (.toString (vec (repeat 3000 s))))"), "memory_exceeded"),
        (with_s("(count (String/valueOf (vec (repeat 3000 s))))"), "memory_exceeded"),
        (with_s("(count (format \"%s\" (vec (repeat 3000 s))))"), "memory_exceeded"),
        // replacements that multiply the match, or return a huge value
        (with_s("(count (str/replace s #\"x+\" (apply str (repeat 3000 \"$0\"))))"), "memory_exceeded"),
        (with_s("(count (str/replace \"abc\" #\"b\" (fn [_] (vec (repeat 3000 s)))))"), "memory_exceeded"),
        (with_s("(count (str/escape (.repeat \"a\" 3000) {\\a s}))"), "memory_exceeded"),
        // copies of one input, kept many times: each copy is charged before it is made
        (with_s("(count (mapv (fn [_] (upper-case s)) (range 100)))"), "memory_exceeded"),
        (with_s("(count (mapv (fn [_] (.toLowerCase s)) (range 100)))"), "memory_exceeded"),
        (with_s("(count (mapv (fn [i] (subs s i)) (range 100)))"), "memory_exceeded"),
        (with_s("(count (mapv (fn [_] (str/reverse s)) (range 100)))"), "memory_exceeded"),
        (with_s("(count (mapv (fn [_] (str/trim s)) (range 100)))"), "memory_exceeded"),
        (with_s("(count (mapv (fn [_] (re-find #\"((x+))\" s)) (range 100)))"), "memory_exceeded"),
        (with_s("(count (re-seq #\"(((((((((((x+)))))))))))\" (.repeat s 5)))"), "memory_exceeded"),
        // collections whose size multiplies their inputs
        ("(def v (vec (range 10000))) (count (apply interleave (repeat 1000 v)))".into(), "memory_exceeded"),
        ("(def v (vec (range 10000))) (count (apply zip (repeat 1000 v)))".into(), "memory_exceeded"),
        ("(def v (vec (range 10000))) (count (apply concat (repeat 1000 v)))".into(), "memory_exceeded"),
        ("(def v (vec (range 10000))) (count (vec (mapcat (fn [_] v) (range 1000))))".into(), "memory_exceeded"),
        // a chain that keeps nothing builds nothing: counted as the items stream
        ("(def v (vec (range 10000))) (count (mapcat (fn [_] v) (range 100)))".into(), "ok"),
        ("(count (partition 50000 1 (range 100000)))".into(), "memory_exceeded"),
        ("(def v (vec (range 1000))) (count (for [a v b v c v] 1))".into(), "memory_exceeded"),
        ("(def d (reduce (fn [a _] [a a]) [1] (range 30))) (count (flatten d))".into(), "memory_exceeded"),
        ("(count (group-by identity (repeat 400000 1)))".into(), "memory_exceeded"),
        // a long string read as characters: each character is a string of its own
        ("(def s (.repeat \"x\" 3000000)) (count (vec s))".into(), "memory_exceeded"),
        ("(def s (.repeat \"x\" 3000000)) (count (set s))".into(), "memory_exceeded"),
        ("(def s (.repeat \"x\" 3000000)) (count (reverse s))".into(), "memory_exceeded"),
        ("(def s (.repeat \"x\" 3000000)) (count (concat s s))".into(), "memory_exceeded"),
        ("(def s (.repeat \"x\" 3000000)) (count (interpose \",\" s))".into(), "memory_exceeded"),
        ("(def s (.repeat \"x\" 3000000)) (count (partition-by identity s))".into(), "memory_exceeded"),
        ("(def s (.repeat \"xy\" 1500000)) (count (dedupe s))".into(), "memory_exceeded"),
        ("(def s (.repeat \"xy\" 1500000)) (count (vec (map-indexed (fn [_ c] c) s)))".into(), "memory_exceeded"),
        // splits count their pieces against the budget as they find them
        ("(def s (.repeat \"x\" 10000000)) (count (str/split s #\"\"))".into(), "memory_exceeded"),
        ("(def s (.repeat \"x\" 10000000)) (count (re-split #\"\" s))".into(), "memory_exceeded"),
        ("(def s (.repeat \"\\n\" 10000000)) (count (split-lines s))".into(), "memory_exceeded"),
        // what is only read is not built: no charge, no memory
        ("(def s (.repeat \"x\" 3000000)) (let [[a b] s] (str a b))".into(), "ok"),
        ("(def s (.repeat \"x\" 3000000)) (some #{\"y\"} s)".into(), "ok"),
        ("(def s (.repeat \"x\" 3000000)) (count (frequencies s))".into(), "ok"),
    ]
}

const CASE_VAR: &str = "PTC_BUILDER_MEMORY_CASE";

/// Peak resident memory of this process (kB).
fn own_peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The child: runs the case named by `PTC_BUILDER_MEMORY_CASE` and prints
/// `CASE <kind> <peak kB> <message>`.
#[test]
#[ignore = "run by builders_charge_before_they_allocate in a child process"]
fn one_case() {
    let Some(i) = std::env::var(CASE_VAR).ok().and_then(|v| v.parse::<usize>().ok()) else { return };
    let (program, _) = cases().swap_remove(i);
    let limits = Limits { max_heap_bytes: LIMIT, timeout: std::time::Duration::from_secs(20), ..Limits::default() };
    let outcome = run(&program, RunOptions { limits, ..RunOptions::default() });
    let (kind, message) = match outcome.error() {
        Some(e) => (e.kind.to_string(), e.message.replace('\n', " ")),
        None => ("ok".to_string(), String::new()),
    };
    println!("CASE {kind} {} {message}", own_peak_rss_kb());
}

#[test]
fn builders_charge_before_they_allocate() {
    let exe = std::env::current_exe().unwrap();
    let mut failures = Vec::new();
    for (i, (program, want)) in cases().into_iter().enumerate() {
        let out = Command::new("sh")
            .args(["-c", "ulimit -v 2097152 && exec \"$0\" \"$@\""])
            .arg(&exe)
            .args(["one_case", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(CASE_VAR, i.to_string())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let Some(line) = stdout.lines().find_map(|l| l.split_once("CASE ").map(|(_, rest)| rest)) else {
            failures.push(format!(
                "{program}: the child reported nothing ({:?}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).chars().take(300).collect::<String>()
            ));
            continue;
        };
        let mut parts = line.splitn(3, ' ');
        let kind = parts.next().unwrap_or_default();
        let peak_kb: u64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(u64::MAX);
        let message = parts.next().unwrap_or_default();
        if kind != want {
            failures.push(format!("{program}: {kind} (want {want}) {message:.200}"));
        }
        if kind == "memory_exceeded" && !message.contains("max_heap_bytes") {
            failures.push(format!("{program}: the message does not name the limit: {message:.200}"));
        }
        if peak_kb > BOUND_KB {
            failures.push(format!("{program}: peak RSS {} MiB (bound {} MiB)", peak_kb >> 10, BOUND_KB >> 10));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
