//! Service and in-process latency: the MCP server over stdio and HTTP, and programs timed
//! inside one `ptc eval --jsonl` process (each run's own `duration_ms`, JSON loading
//! excluded), next to the whole-process figures of the side-by-side suite.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::json;

use super::measure::{median, percentile, status_kib};

/// Runs `programs` through `ptc eval --jsonl` and returns each run's duration in ms.
pub fn ptc_durations(ptc: &Path, context: Option<&Path>, program: &str, runs: usize) -> Result<Vec<f64>> {
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

/// In-process figures: a tiny program's parse + analyze + eval, and `assoc`/`conj` inside
/// `reduce` at 10k and 100k items (linear, not quadratic).
pub fn in_process(ptc: &Path, runs: usize) -> Result<Vec<String>> {
    let tiny = median(ptc_durations(ptc, None, "(let [x 1 y 2] (+ x y))", runs.max(1) * 400)?);
    let mut lines = vec![format!(
        "tiny program `(let [x 1 y 2] (+ x y))`, parse + analyze + eval in one process: {:.1} µs",
        tiny * 1000.0
    )];
    for (name, prog) in [
        ("assoc", "(count (reduce (fn [m i] (assoc m i i)) {} (range N)))"),
        ("conj", "(count (reduce (fn [v i] (conj v i)) [] (range N)))"),
    ] {
        let small = median(ptc_durations(ptc, None, &prog.replace('N', "10000"), runs)?);
        let large = median(ptc_durations(ptc, None, &prog.replace('N', "100000"), runs)?);
        lines.push(format!(
            "`reduce` + `{name}`, 10k → 100k items, in one process: {small:.2} ms → {large:.2} ms ({:.1}× the time for 10× the items; quadratic would be 100×)",
            large / small
        ));
    }
    Ok(lines)
}

/// `tools/call` of `(+ 1 2)` over stdio from this process: 1,000 sequential calls.
pub fn mcp(ptc: &Path, http_secs: u64) -> Result<Vec<String>> {
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
    let idle = status_kib(child.id(), "VmRSS:");
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
    let mut lines = vec![format!(
        "MCP stdio `tools/call` of `(+ 1 2)`, 1,000 sequential calls: p50 {:.1} µs, p99 {:.1} µs (target p50 100 µs; upstream PtcRunner measured 197 µs)",
        percentile(&times, 0.5),
        percentile(&times, 0.99)
    )];
    if let Some(kib) = idle {
        lines.push(format!("MCP server idle RSS: {:.1} MiB", kib as f64 / 1024.0));
    }
    lines.push(http_load(ptc, http_secs)?);
    Ok(lines)
}

/// 8 concurrent clients for `secs` seconds against `ptc mcp --http`, one session each.
fn http_load(ptc: &Path, secs: u64) -> Result<String> {
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
    let duration = std::time::Duration::from_secs(secs);
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
    Ok(format!(
        "MCP HTTP, 8 clients × {secs} s of `(+ 1 2)`: {:.0} req/s, p99 {:.2} ms (a new TCP connection per request)",
        all.len() as f64 / duration.as_secs_f64(),
        percentile(&all, 0.99)
    ))
}
