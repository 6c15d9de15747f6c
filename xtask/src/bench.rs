//! `cargo xtask bench`: benchmarks run side by side with their baselines, reported as
//! ratios. Nothing here asserts a timing; the numbers are for people.
//!
//! The interpreter is measured through the release `ptc` binary (`--jsonl` reports each
//! run's own duration, excluding JSON loading), so xtask itself can stay a debug build.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::json;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    if xs.is_empty() { f64::NAN } else { xs[xs.len() / 2] }
}

fn write_orders(path: &Path, n: usize) -> Result<()> {
    // deterministic pseudo-random data (LCG), no dependency on a random crate
    let mut seed: u64 = 42;
    let mut next = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    let statuses = ["paid", "pending", "refunded", "paid", "failed"];
    let orders: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            json!({
                "id": i,
                "status": statuses[next() % statuses.len()],
                "amount": (next() % 10_000) as i64,
                "customer": format!("c{}", next() % 1000),
            })
        })
        .collect();
    std::fs::write(path, json!({ "orders": orders }).to_string())?;
    Ok(())
}

/// Runs `programs` through `ptc eval --jsonl` and returns each run's duration in ms.
fn ptc_durations(ptc: &Path, context: Option<&Path>, program: &str, runs: usize) -> Result<Vec<f64>> {
    let mut cmd = Command::new(ptc);
    cmd.args([
        "eval",
        "--jsonl",
        "--timeout-ms",
        "60000",
        "--max-heap-bytes",
        "4000000000",
        "--max-result-bytes",
        "100000000",
    ]);
    if let Some(c) = context {
        cmd.arg("--context").arg(c);
    }
    // the batch comes from a file, so runs follow each other without waiting on a pipe
    let batch = std::env::temp_dir().join(format!("ptc-bench-{}.jsonl", std::process::id()));
    let line = json!({ "src": program }).to_string();
    let mut text = String::with_capacity((line.len() + 1) * runs);
    for _ in 0..runs {
        text.push_str(&line);
        text.push('\n');
    }
    std::fs::write(&batch, text)?;
    let out = cmd.stdin(std::fs::File::open(&batch)?).stdout(Stdio::piped()).output().context("cannot start ptc")?;
    let _ = std::fs::remove_file(&batch);
    let mut ds = Vec::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(l)?;
        if v["status"] != "ok" {
            bail!("benchmark program failed: {v}");
        }
        ds.push(v["usage"]["duration_ms"].as_f64().unwrap_or(f64::NAN));
    }
    Ok(ds)
}

fn python_orders_ms(data: &Path) -> Result<f64> {
    let script = r#"
import json, sys, time
orders = json.load(open(sys.argv[1]))["orders"]
ts = []
for _ in range(21):
    t = time.perf_counter()
    total = sum(o["amount"] for o in orders if o["status"] == "paid")
    ts.append((time.perf_counter() - t) * 1000)
ts.sort()
print(ts[len(ts)//2])
"#;
    let out = Command::new("python3").arg("-c").arg(script).arg(data).output().context("cannot run python3")?;
    if !out.status.success() {
        bail!("python3 failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().parse()?)
}

/// Runs every benchmark and prints a table.
pub fn run(root: &Path) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    crate::step("build release ptc", &cargo, &["build", "--release", "-p", "ptc", "--quiet"])?;
    let ptc = root.join("target/release/ptc");
    let dir = root.join("target/bench");
    std::fs::create_dir_all(&dir)?;
    let data = dir.join("orders-100k.json");
    if !data.exists() {
        write_orders(&data, 100_000)?;
    }
    println!("benchmark                                   ours            baseline         ratio");

    // 1. the 100k-orders pipeline vs CPython
    let pipeline = r#"(->> data/orders (filter #(= "paid" (:status %))) (map :amount) (reduce +))"#;
    let ours = median(ptc_durations(&ptc, Some(&data), pipeline, 21)?);
    let py = python_orders_ms(&data)?;
    println!("100k orders filter/map/reduce              {ours:8.2} ms     CPython {py:8.2} ms   {:.2}x", ours / py);

    // 2. parse + analyze + eval of a tiny program (in one process)
    let tiny = median(ptc_durations(&ptc, None, "(let [x 1 y 2] (+ x y))", 2001)?);
    println!("tiny program parse+analyze+eval            {:8.1} us", tiny * 1000.0);

    // 3. whole process `ptc eval '(+ 1 2)'`
    let mut wall = Vec::new();
    for _ in 0..30 {
        let t = Instant::now();
        let out = Command::new(&ptc).args(["eval", "(+ 1 2)"]).output()?;
        wall.push(t.elapsed().as_secs_f64() * 1000.0);
        if !out.status.success() {
            bail!("ptc eval failed");
        }
    }
    let startup = median(wall);
    println!(
        "process: ptc eval '(+ 1 2)'                {startup:8.2} ms     target   10.00 ms   {:.2}x",
        startup / 10.0
    );

    // 4. persistent collections: building with assoc/conj in reduce must scale linearly
    for (name, prog) in [
        ("assoc", "(count (reduce (fn [m i] (assoc m i i)) {} (range N)))"),
        ("conj", "(count (reduce (fn [v i] (conj v i)) [] (range N)))"),
    ] {
        let small = median(ptc_durations(&ptc, None, &prog.replace('N', "10000"), 5)?);
        let large = median(ptc_durations(&ptc, None, &prog.replace('N', "100000"), 5)?);
        println!(
            "reduce+{name:<6} 10k -> 100k items           {small:8.2} ms -> {large:8.2} ms   {:.1}x time for 10x items (quadratic would be 100x)",
            large / small
        );
    }
    Ok(())
}
