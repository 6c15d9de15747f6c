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
pub fn run() -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    crate::step("build release ptc", &cargo, &["build", "--release", "-p", "ptc", "--quiet"])?;
    let ptc = crate::target_dir().join("release/ptc");
    let dir = crate::target_dir().join("bench");
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

    // 4. MCP: stdio round trip, HTTP throughput, idle memory
    mcp(&ptc)?;

    // 5. persistent collections: building with assoc/conj in reduce must scale linearly
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

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// `tools/call` of `(+ 1 2)` over stdio from this process: 1,000 sequential calls.
fn mcp(ptc: &Path) -> Result<()> {
    use std::io::{BufRead, BufReader, Write};
    let mut child = Command::new(ptc)
        .args(["mcp", "--log-level", "error"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start ptc mcp")?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().context("stdout")?);
    let mut line = String::new();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
    writeln!(stdin, "{init}")?;
    stdout.read_line(&mut line)?;
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    std::thread::sleep(std::time::Duration::from_millis(200));
    let idle = rss_kib(child.id());
    let mut times = Vec::with_capacity(1000);
    for id in 1..=1000 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(+ 1 2)"}}});
        let t = Instant::now();
        writeln!(stdin, "{call}")?;
        stdin.flush()?;
        line.clear();
        stdout.read_line(&mut line)?;
        times.push(t.elapsed().as_secs_f64() * 1e6);
        if !line.contains("user=> 3") {
            bail!("unexpected MCP reply: {line}");
        }
    }
    drop(stdin);
    let _ = child.wait();
    times.sort_by(|a, b| a.total_cmp(b));
    println!(
        "MCP stdio tools/call (+ 1 2), 1000 calls    p50 {:7.1} us  p99 {:7.1} us   target p50 100 us; upstream measured 197 us",
        percentile(&times, 0.5),
        percentile(&times, 0.99)
    );
    if let Some(kib) = idle {
        println!("MCP server idle RSS                         {:7.1} MiB", kib as f64 / 1024.0);
    }
    http_load(ptc)
}

/// 8 concurrent clients for 5 seconds against `ptc mcp --http`, one session each.
fn http_load(ptc: &Path) -> Result<()> {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut child = Command::new(ptc)
        .args(["mcp", "--http", &format!("127.0.0.1:{port}"), "--max-concurrent-calls", "8"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut err = BufReader::new(child.stderr.take().context("stderr")?);
    let mut l = String::new();
    while err.read_line(&mut l)? > 0 && !l.contains("serving MCP") {
        l.clear();
    }
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let post = move |session: Option<&str>, body: &str| -> Result<(String, String)> {
        let mut s = TcpStream::connect(("127.0.0.1", port))?;
        let mut req = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n",
            body.len()
        );
        if let Some(sid) = session {
            req.push_str(&format!("Mcp-Session-Id: {sid}\r\n"));
        }
        req.push_str("\r\n");
        req.push_str(body);
        s.write_all(req.as_bytes())?;
        let mut raw = String::new();
        s.read_to_string(&mut raw)?;
        let sid = raw
            .lines()
            .find_map(|h| h.to_ascii_lowercase().starts_with("mcp-session-id:").then(|| h[15..].trim().to_string()))
            .unwrap_or_default();
        Ok((sid, raw))
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "load", "version": "1"}}}).to_string();
    let duration = std::time::Duration::from_secs(5);
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let init = init.clone();
            std::thread::spawn(move || -> Result<Vec<f64>> {
                let (sid, _) = post(None, &init)?;
                post(Some(&sid), &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())?;
                let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(+ 1 2)"}}}).to_string();
                let start = Instant::now();
                let mut times = Vec::new();
                while start.elapsed() < duration {
                    let t = Instant::now();
                    let (_, raw) = post(Some(&sid), &call)?;
                    if !raw.contains("user=> 3") {
                        bail!("unexpected HTTP reply: {raw}");
                    }
                    times.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                Ok(times)
            })
        })
        .collect();
    let mut all = Vec::new();
    for h in handles {
        match h.join() {
            Ok(r) => all.extend(r?),
            Err(_) => bail!("a load thread panicked"),
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    all.sort_by(|a, b| a.total_cmp(b));
    println!(
        "MCP HTTP 8 clients x 5 s, (+ 1 2)           {:7.0} req/s  p99 {:6.2} ms (new TCP connection per request)",
        all.len() as f64 / duration.as_secs_f64(),
        percentile(&all, 0.99)
    );
    Ok(())
}
