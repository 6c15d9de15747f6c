//! `cargo xtask load`: a bounded HTTP load test of `ptc mcp --http` on 127.0.0.1.
//!
//! N clients (default 100), each with its own MCP session on a keep-alive connection,
//! call `lisp_eval` in a loop for S seconds (default 30). Reported: calls, errors (HTTP
//! or protocol failures), `busy` answers (the bounded queue pushing back), latency p50 and
//! p99 of answered calls, and the server's RSS before and after.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

struct Options {
    clients: usize,
    seconds: u64,
    release: bool,
}

fn options(args: &[String]) -> Result<Options> {
    let mut o = Options { clients: 100, seconds: 30, release: false };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--clients" => o.clients = it.next().context("--clients N")?.parse()?,
            "--seconds" => o.seconds = it.next().context("--seconds S")?.parse()?,
            "--release" => o.release = true,
            other => bail!("unknown load option {other}; use --clients N, --seconds S, --release"),
        }
    }
    if o.clients == 0 || o.clients > 1000 || o.seconds == 0 || o.seconds > 600 {
        bail!("the load test is bounded: 1..=1000 clients, 1..=600 seconds");
    }
    Ok(o)
}

/// A keep-alive HTTP/1.1 connection speaking just enough HTTP for MCP.
struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    port: u16,
    session: Option<String>,
}

impl Conn {
    fn open(port: u16) -> Result<Conn> {
        let s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        s.set_nodelay(true)?;
        Ok(Conn { reader: BufReader::new(s.try_clone()?), writer: s, port, session: None })
    }

    /// POSTs one JSON-RPC message; returns the status, the session header and the body.
    fn post(&mut self, body: &Value) -> Result<(u16, Option<String>, String)> {
        let body = body.to_string();
        let mut req = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.port,
            body.len()
        );
        if let Some(s) = &self.session {
            req.push_str(&format!("Mcp-Session-Id: {s}\r\nMcp-Protocol-Version: 2025-11-25\r\n"));
        }
        req.push_str("\r\n");
        req.push_str(&body);
        self.writer.write_all(req.as_bytes())?;
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        let status: u16 = line.split_whitespace().nth(1).and_then(|c| c.parse().ok()).context("no status line")?;
        let (mut length, mut chunked, mut session) = (None, false, None);
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
                match k.as_str() {
                    "content-length" => length = v.parse::<usize>().ok(),
                    "transfer-encoding" => chunked = v.eq_ignore_ascii_case("chunked"),
                    "mcp-session-id" => session = Some(v.to_string()),
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        if chunked {
            loop {
                line.clear();
                self.reader.read_line(&mut line)?;
                let n = usize::from_str_radix(line.trim(), 16).context("bad chunk size")?;
                let mut chunk = vec![0; n + 2];
                self.reader.read_exact(&mut chunk)?;
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&chunk[..n]);
            }
        } else if let Some(n) = length {
            out.resize(n, 0);
            self.reader.read_exact(&mut out)?;
        }
        Ok((status, session, String::from_utf8_lossy(&out).to_string()))
    }
}

/// The JSON-RPC message in a JSON or SSE body.
fn message(body: &str) -> Value {
    let data = body.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).find(|d| d.starts_with('{'));
    serde_json::from_str(data.unwrap_or(body.trim())).unwrap_or(Value::Null)
}

fn start_session(port: u16) -> Result<Conn> {
    let mut c = Conn::open(port)?;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "xtask-load", "version": "1"}}});
    let (status, session, _) = c.post(&init)?;
    if status != 200 {
        bail!("initialize answered {status}");
    }
    c.session = Some(session.context("no session id")?);
    let (status, _, _) = c.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    if status != 202 && status != 200 {
        bail!("notifications/initialized answered {status}");
    }
    Ok(c)
}

#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    errors: u64,
    busy: u64,
    first_error: Option<String>,
}

fn client(port: u16, stop: &AtomicBool, n: usize) -> Tally {
    let mut t = Tally::default();
    let mut conn = None;
    let mut id = 1u64;
    let ctx: Vec<u64> = (0..50).map(|i| i * 3 + n as u64).collect();
    while !stop.load(Ordering::Relaxed) {
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match start_session(port) {
                Ok(c) => conn.insert(c),
                Err(e) => {
                    t.errors += 1;
                    t.first_error.get_or_insert(format!("session: {e:#}"));
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            },
        };
        id += 1;
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(->> data/xs (filter odd?) (map inc) (reduce +))", "context": {"xs": ctx}}}});
        let started = Instant::now();
        match c.post(&call) {
            Ok((200, _, body)) => {
                let m = message(&body);
                let text = m["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
                if text.starts_with("busy") {
                    t.busy += 1;
                } else if m["result"]["isError"] == json!(false) && text.starts_with("user=> ") {
                    t.latencies.push(started.elapsed());
                } else {
                    t.errors += 1;
                    t.first_error.get_or_insert(format!("call: {}", body.chars().take(300).collect::<String>()));
                }
            }
            Ok((status, _, body)) => {
                t.errors += 1;
                t.first_error.get_or_insert(format!("HTTP {status}: {}", body.chars().take(300).collect::<String>()));
                conn = None;
            }
            Err(e) => {
                t.errors += 1;
                t.first_error.get_or_insert(format!("transport: {e:#}"));
                conn = None;
            }
        }
    }
    t
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

/// Runs the load test; prints one report.
pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let o = options(args)?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let profile = if o.release { "release" } else { "debug" };
    let mut build = vec!["build", "-q", "-p", "ptc"];
    if o.release {
        build.push("--release");
    }
    crate::step(&format!("build ptc ({profile})"), &cargo, &build)?;
    let ptc = crate::target_dir().join(profile).join("ptc");
    let sessions = (o.clients * 2).to_string();
    let mut child = Command::new(&ptc)
        .current_dir(root)
        .args(["mcp", "--http", "127.0.0.1:0", "--log-level", "info"])
        .args(["--http-max-sessions", &sessions, "--http-max-sessions-per-owner", &sessions])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start ptc mcp --http")?;
    let mut err = BufReader::new(child.stderr.take().context("no stderr")?);
    let mut line = String::new();
    let port = loop {
        line.clear();
        if err.read_line(&mut line)? == 0 {
            bail!("ptc mcp --http exited before serving");
        }
        if let Some((_, rest)) = line.split_once("at http://127.0.0.1:") {
            break rest.split('/').next().unwrap_or_default().parse::<u16>()?;
        }
    };
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let pid = child.id();
    let rss_before = rss_kib(pid);
    eprintln!("==> {} clients x {} s against http://127.0.0.1:{port}/mcp ({profile} build)", o.clients, o.seconds);
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let handles: Vec<_> = (0..o.clients)
        .map(|n| {
            let stop = stop.clone();
            std::thread::spawn(move || client(port, &stop, n))
        })
        .collect();
    let mut peak = rss_before;
    while started.elapsed() < Duration::from_secs(o.seconds) {
        std::thread::sleep(Duration::from_millis(250));
        peak = peak.max(rss_kib(pid));
    }
    stop.store(true, Ordering::Relaxed);
    let mut all = Tally::default();
    for h in handles {
        let t = h.join().map_err(|_| anyhow::anyhow!("a load client panicked"))?;
        all.latencies.extend(t.latencies);
        all.errors += t.errors;
        all.busy += t.busy;
        if all.first_error.is_none() {
            all.first_error = t.first_error;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let rss_after = rss_kib(pid);
    let _ = child.kill();
    let _ = child.wait();
    all.latencies.sort();
    let ok = all.latencies.len() as u64;
    println!("load: {} clients, {elapsed:.1} s, {profile} build", o.clients);
    println!("load: calls answered {ok} ({:.0}/s), busy {}, errors {}", ok as f64 / elapsed, all.busy, all.errors);
    println!(
        "load: latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        percentile(&all.latencies, 0.50),
        percentile(&all.latencies, 0.99),
        percentile(&all.latencies, 1.0)
    );
    println!("load: server RSS before {rss_before} KiB, peak {peak} KiB, after {rss_after} KiB");
    if let Some(e) = &all.first_error {
        println!("load: first error: {e}");
    }
    if all.errors > 0 {
        bail!("{} calls failed", all.errors);
    }
    Ok(())
}
