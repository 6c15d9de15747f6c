//! `cargo xtask load`: a bounded HTTP load test of `ptc mcp --http` on 127.0.0.1.
//!
//! N clients (default 100), each with its own MCP session on a keep-alive connection,
//! call `lisp_eval` in a loop for S seconds (default 30). Reported: calls, errors (HTTP
//! or protocol failures), `busy` answers (the bounded queue pushing back), latency p50 and
//! p99 of answered calls, and the server's RSS before and after.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

struct Options {
    clients: usize,
    seconds: u64,
    release: bool,
    /// `--hostile`: the mix of [`hostile::CASES`] instead of one small program.
    hostile: bool,
    /// `--exclude a,b`: hostile cases left out of the mix.
    exclude: Vec<String>,
    /// `--sessions`: two instances sharing sessions through Redis, see [`sessions`].
    sessions: bool,
}

fn options(args: &[String]) -> Result<Options> {
    let mut o =
        Options { clients: 100, seconds: 0, release: false, hostile: false, exclude: Vec::new(), sessions: false };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--clients" => o.clients = it.next().context("--clients N")?.parse()?,
            "--seconds" => o.seconds = it.next().context("--seconds S")?.parse()?,
            "--release" => o.release = true,
            "--hostile" => o.hostile = true,
            "--sessions" => o.sessions = true,
            "--exclude" => {
                let list = it.next().context("--exclude CASE[,CASE...]")?;
                o.exclude.extend(list.split(',').map(|c| c.trim().to_string()).filter(|c| !c.is_empty()));
            }
            other => bail!(
                "unknown load option {other}; use --clients N, --seconds S, --release, --hostile, --exclude CASE[,CASE...], --sessions"
            ),
        }
    }
    if o.seconds == 0 {
        o.seconds = if o.hostile { 60 } else { 30 };
    }
    if o.sessions && o.hostile {
        bail!("--sessions and --hostile are separate runs; pick one");
    }
    if !o.exclude.is_empty() && !o.hostile {
        bail!("--exclude names hostile cases; use it with --hostile");
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
        self.request("POST", "/mcp", &body.to_string())
    }

    /// One request on the connection (a body only for POST).
    fn request(&mut self, method: &str, path: &str, body: &str) -> Result<(u16, Option<String>, String)> {
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n", self.port);
        if method == "POST" {
            req.push_str(&format!(
                "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        if let Some(s) = &self.session {
            req.push_str(&format!("Mcp-Session-Id: {s}\r\nMcp-Protocol-Version: 2025-11-25\r\n"));
        }
        req.push_str("\r\n");
        self.writer.write_all(req.as_bytes())?;
        if method == "POST" {
            self.writer.write_all(body.as_bytes())?;
        }
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

/// A `ptc mcp --http` child on 127.0.0.1, with the last lines of its stderr kept.
struct Server {
    child: std::process::Child,
    port: u16,
    tail: Arc<Mutex<VecDeque<String>>>,
}

impl Server {
    fn start(root: &Path, ptc: &Path, clients: usize) -> Result<Server> {
        Server::start_with(root, ptc, clients, &[])
    }

    fn start_with(root: &Path, ptc: &Path, clients: usize, extra: &[String]) -> Result<Server> {
        let sessions = (clients * 2 + 2).to_string();
        let mut child = Command::new(ptc)
            .current_dir(root)
            .args(["mcp", "--http", "127.0.0.1:0", "--log-level", "info"])
            .args(["--http-max-sessions", &sessions, "--http-max-sessions-per-owner", &sessions])
            .args(extra)
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
                let _ = child.wait();
                bail!("ptc mcp --http exited before serving");
            }
            if let Some((_, rest)) = line.split_once("at http://127.0.0.1:") {
                break rest.split('/').next().unwrap_or_default().parse::<u16>()?;
            }
        };
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let keep = tail.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while err.read_line(&mut line).is_ok_and(|n| n > 0) {
                if let Ok(mut t) = keep.lock() {
                    if t.len() == 20 {
                        t.pop_front();
                    }
                    t.push_back(line.trim_end().chars().take(400).collect());
                }
                line.clear();
            }
        });
        Ok(Server { child, port, tail })
    }

    /// The last lines the server wrote to stderr.
    fn tail(&self) -> String {
        self.tail.lock().map(|t| t.iter().cloned().collect::<Vec<_>>().join("\n")).unwrap_or_default()
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Builds `ptc` and returns its path and the profile name.
fn build_ptc(release: bool) -> Result<(PathBuf, &'static str)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let profile = if release { "release" } else { "debug" };
    let mut build = vec!["build", "-q", "-p", "ptc"];
    if release {
        build.push("--release");
    }
    crate::step(&format!("build ptc ({profile})"), &cargo, &build)?;
    Ok((crate::target_dir().join(profile).join("ptc"), profile))
}

/// Runs the load test; prints one report.
pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let o = options(args)?;
    let (ptc, profile) = build_ptc(o.release)?;
    if o.hostile {
        return hostile::run(root, &ptc, profile, &o);
    }
    if o.sessions {
        return sessions::run(root, &ptc, profile, &o);
    }
    let server = Server::start(root, &ptc, o.clients)?;
    let (port, pid) = (server.port, server.child.id());
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
    server.stop();
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

/// `cargo xtask load --sessions`: two `ptc mcp --http --sessions` instances sharing one
/// `redis-server` (started here on a free loopback port, no persistence), N clients.
///
/// Each client opens one MCP session (any instance honours it: the ids are shared through
/// Redis) and one lisp session, then increments its own counter, `(def c (inc c))`, sending
/// each eval to the two instances in turn. Halfway through, one instance is killed
/// (SIGKILL); its clients go on with the other. An eval the killed instance never answered
/// may or may not have committed, and the next answer says which. At the end every
/// counter is read back and must equal the increments the client saw commit (plus the one
/// unanswered eval, if it committed): no committed state lost, none applied twice. Evals
/// that met the killed instance's lease get `session_busy` until it expires (one
/// `--session-lease-ms`, nobody renewing it), and are retried.
pub(crate) mod sessions {
    use super::*;

    const PROGRAM: &str = "(def c (inc c)) c";

    /// A `redis-server` child on a free loopback port.
    pub(crate) struct Redis(std::process::Child, pub(crate) u16);

    impl Redis {
        pub(crate) fn start() -> Result<Redis> {
            let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            let mut child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .context("cannot run redis-server; install Debian's redis-server (.ci/run does)")?;
            let mut out = BufReader::new(child.stdout.take().context("no stdout")?);
            let mut line = String::new();
            while !line.contains("Ready to accept connections") {
                line.clear();
                if out.read_line(&mut line)? == 0 {
                    let _ = child.wait();
                    bail!("redis-server exited before it was ready");
                }
            }
            std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
            Ok(Redis(child, port))
        }
    }

    impl Drop for Redis {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[derive(Default)]
    struct Tally {
        latencies: Vec<Duration>,
        busy: u64,
        errors: u64,
        /// Calls the killed instance never answered.
        unanswered: u64,
        committed: u64,
        exact: bool,
        first_error: Option<String>,
    }

    struct Answer {
        ok: bool,
        reason: String,
        result: String,
    }

    fn call(c: &mut Conn, id: u64, tool: &str, args: Value) -> Result<Answer> {
        let body =
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}});
        let (status, _, body) = c.post(&body)?;
        if status != 200 {
            bail!("HTTP {status}: {}", body.chars().take(200).collect::<String>());
        }
        let m = message(&body);
        let s = &m["result"]["structuredContent"];
        Ok(Answer {
            ok: m["result"]["isError"] == json!(false),
            reason: s["reason"].as_str().unwrap_or_default().to_string(),
            result: s["result"].as_str().or(s["session_id"].as_str()).unwrap_or_default().to_string(),
        })
    }

    fn client(ports: [u16; 2], killed: &AtomicBool, stop: &AtomicBool, n: usize) -> Tally {
        let mut t = Tally::default();
        if let Err(e) = run_client(ports, killed, stop, n, &mut t) {
            t.errors += 1;
            t.first_error.get_or_insert(format!("client {n}: {e:#}"));
        }
        t
    }

    fn run_client(ports: [u16; 2], killed: &AtomicBool, stop: &AtomicBool, n: usize, t: &mut Tally) -> Result<()> {
        // instance 1 is the one killed; every client starts on instance 0 so that setting up
        // never meets the kill
        let first = start_session(ports[0])?;
        let mcp = first.session.clone();
        let mut conns: [Option<Conn>; 2] = [Some(first), None];
        let mut id = 1u64;
        let a = call(conns[0].as_mut().context("no connection")?, id, "lisp_session_start", json!({}))?;
        let sid = a.result;
        let a = call(
            conns[0].as_mut().context("no connection")?,
            2,
            "lisp_session_eval",
            json!({"session_id": sid, "program": "(def c 0)"}),
        )?;
        if !a.ok {
            bail!("(def c 0): {}", a.reason);
        }
        let (mut confirmed, mut maybe) = (0u64, false);
        let mut turn = n;
        while !stop.load(Ordering::Relaxed) {
            turn += 1;
            let i = if killed.load(Ordering::Relaxed) { 0 } else { turn % 2 };
            if conns[i].is_none() {
                match Conn::open(ports[i]) {
                    Ok(mut c) => {
                        c.session = mcp.clone();
                        conns[i] = Some(c);
                    }
                    // the killed instance, before the flag says so: nothing was sent
                    Err(_) if i == 1 => continue,
                    Err(e) => return Err(e),
                }
            }
            id += 1;
            let started = Instant::now();
            let answer = match conns[i].as_mut() {
                Some(c) => call(c, id, "lisp_session_eval", json!({"session_id": sid, "program": PROGRAM})),
                None => continue,
            };
            match answer {
                Ok(a) if a.ok => {
                    let got: u64 = a.result.trim_start_matches("user=> ").parse().unwrap_or(0);
                    if got == confirmed + 1 {
                        confirmed += 1;
                    } else if maybe && got == confirmed + 2 {
                        confirmed += 2;
                    } else {
                        t.errors += 1;
                        t.first_error.get_or_insert(format!("client {n}: counter {got} after {confirmed} commits"));
                        return Ok(());
                    }
                    maybe = false;
                    t.latencies.push(started.elapsed());
                }
                Ok(a) if a.reason == "session_busy" => {
                    // only the killed instance's lease can hold this session: wait it out
                    t.busy += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                Ok(a) => {
                    t.errors += 1;
                    t.first_error.get_or_insert(format!("client {n}: {} {}", a.reason, a.result));
                }
                Err(_) if i == 1 && killed.load(Ordering::Relaxed) => {
                    // the instance died under this call: it may have committed
                    conns[i] = None;
                    t.unanswered += 1;
                    maybe = true;
                }
                Err(e) => {
                    conns[i] = None;
                    t.errors += 1;
                    t.first_error.get_or_insert(format!("client {n}: transport: {e:#}"));
                }
            }
        }
        // read the counter back (past the dead instance's lease, if it held it)
        let deadline = Instant::now() + Duration::from_secs(60);
        let c = match conns[0].as_mut() {
            Some(c) => c,
            None => {
                let mut c = Conn::open(ports[0])?;
                c.session = mcp;
                conns[0].insert(c)
            }
        };
        loop {
            id += 1;
            let a = call(c, id, "lisp_session_eval", json!({"session_id": sid, "program": "c"}))?;
            if a.ok {
                let got: u64 = a.result.trim_start_matches("user=> ").parse().unwrap_or(u64::MAX);
                t.exact = got == confirmed || (maybe && got == confirmed + 1);
                t.committed = got;
                if !t.exact {
                    t.first_error.get_or_insert(format!("client {n}: counter {got}, {confirmed} commits seen"));
                }
                return Ok(());
            }
            if a.reason != "session_busy" || Instant::now() > deadline {
                bail!("reading the counter back: {}", a.reason);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub(super) fn run(root: &Path, ptc: &Path, profile: &str, o: &Options) -> Result<()> {
        let redis = Redis::start()?;
        let cap = (o.clients + 8).to_string();
        let extra: Vec<String> = [
            "--sessions",
            "--session-store",
            &format!("redis://127.0.0.1:{}/0", redis.1),
            "--max-sessions",
            &cap,
            "--max-sessions-per-owner",
            &cap,
            "--response-profile",
            "debug",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let a = Server::start_with(root, ptc, o.clients, &extra)?;
        let b = Server::start_with(root, ptc, o.clients, &extra)?;
        let ports = [a.port, b.port];
        eprintln!(
            "==> {} clients x {} s, sessions in redis on :{}, instances :{} and :{} (the second is killed halfway; {profile} build)",
            o.clients, o.seconds, redis.1, ports[0], ports[1]
        );
        let stop = Arc::new(AtomicBool::new(false));
        let killed = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let handles: Vec<_> = (0..o.clients)
            .map(|n| {
                let (stop, killed) = (stop.clone(), killed.clone());
                std::thread::spawn(move || client(ports, &killed, &stop, n))
            })
            .collect();
        std::thread::sleep(Duration::from_secs(o.seconds) / 2);
        let b_tail = b.tail();
        // clients stop choosing it first; calls already on their way die with it
        killed.store(true, Ordering::Relaxed);
        b.stop();
        eprintln!("==> killed the second instance at {:.1} s", started.elapsed().as_secs_f64());
        std::thread::sleep(Duration::from_secs(o.seconds).saturating_sub(started.elapsed()));
        stop.store(true, Ordering::Relaxed);
        let elapsed = started.elapsed().as_secs_f64();
        let mut all = Tally::default();
        let mut inexact = 0;
        for h in handles {
            let t = h.join().map_err(|_| anyhow::anyhow!("a load client panicked"))?;
            all.latencies.extend(t.latencies);
            all.busy += t.busy;
            all.errors += t.errors;
            all.unanswered += t.unanswered;
            all.committed += t.committed;
            if !t.exact {
                inexact += 1;
            }
            if all.first_error.is_none() {
                all.first_error = t.first_error;
            }
        }
        let a_tail = a.tail();
        a.stop();
        drop(redis);
        all.latencies.sort();
        println!("load --sessions: {} clients, {elapsed:.1} s, 2 instances + redis, {profile} build", o.clients);
        println!(
            "load --sessions: evals committed {} ({:.0}/s), session_busy {}, unanswered by the killed instance {}, errors {}",
            all.committed,
            all.committed as f64 / elapsed,
            all.busy,
            all.unanswered,
            all.errors
        );
        println!(
            "load --sessions: latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            percentile(&all.latencies, 0.50),
            percentile(&all.latencies, 0.99),
            percentile(&all.latencies, 1.0)
        );
        println!("load --sessions: counters exact {}/{}", o.clients - inexact, o.clients);
        if let Some(e) = &all.first_error {
            println!("load --sessions: first error: {e}");
            eprintln!("--- first instance, last lines ---\n{a_tail}\n--- second instance ---\n{b_tail}");
        }
        if all.errors > 0 || inexact > 0 {
            bail!("{} errors, {inexact} counters not exact", all.errors);
        }
        Ok(())
    }
}

/// `cargo xtask load --hostile`: what a hostile crowd of clients does to one server.
///
/// Every client runs its own MCP session (ending it when done) and, call after call,
/// picks a case from [`CASES`] (small programs more often than the rest): shared-structure comparisons,
/// string and collection builders far past the heap limit, 1 MB contexts, deep recursion,
/// data nested 100k deep, and closures capturing it. Meanwhile a separate client polls
/// `/health`, and the server's RSS is sampled. The run fails on
/// - a crash: the server process exits;
/// - an error other than a limit's: every answer is a success or one of [`LIMIT_REASONS`]
///   (HTTP, protocol and transport failures count as errors);
/// - `/health` p99 at or above [`HEALTH_P99_MS`] while the load runs;
/// - server RSS after the run above [`RSS_FACTOR`] times its idle RSS (measured after a
///   warm-up of small calls).
mod hostile {
    use super::*;

    /// Error reasons that are a limit doing its job.
    pub(super) const LIMIT_REASONS: &[&str] = &[
        "busy",
        "timeout",
        "memory_exceeded",
        "recursion_limit_exceeded",
        "loop_limit_exceeded",
        "output_too_large",
        "program_too_large",
        "symbol_limit_exceeded",
        "parallel_capacity_exceeded",
        "tool_call_limit_exceeded",
    ];
    /// `/health` p99 must stay under this while the load runs.
    const HEALTH_P99_MS: f64 = 100.0;
    /// Server RSS after the run must come back within this multiple of its idle RSS.
    const RSS_FACTOR: u64 = 2;
    /// How long RSS may take to come back after the last call.
    const RSS_SETTLE: Duration = Duration::from_secs(10);

    #[derive(Clone, Copy, PartialEq)]
    enum Ctx {
        Small,
        Megabyte,
    }

    pub(super) struct Case {
        pub(super) name: &'static str,
        program: &'static str,
        context: Ctx,
        /// Relative frequency in the mix.
        weight: u32,
    }

    /// The mix. Names are what `--exclude` takes.
    pub(super) const CASES: &[Case] = &[
        Case {
            name: "small",
            program: "(->> data/xs (filter odd?) (map inc) (reduce +))",
            context: Ctx::Small,
            weight: 8,
        },
        Case {
            name: "small-def",
            program: "(def n (count data/xs)) (println n) {:n n :ok true}",
            context: Ctx::Small,
            weight: 2,
        },
        Case {
            name: "shared-compare",
            program: "(let [a (vec (range 100000)) b (vec (range 100000))] (= [a a a] [b b b]))",
            context: Ctx::Small,
            weight: 1,
        },
        Case {
            name: "shared-print",
            program: "(let [a (vec (range 100000))] (count (str [a a a a a a a a a a])))",
            context: Ctx::Small,
            weight: 1,
        },
        Case {
            name: "shared-hash",
            program: "(let [a (vec (range 100000)) b (vec (range 100000))] (count (set [a b [a b] [b a]])))",
            context: Ctx::Small,
            weight: 1,
        },
        Case {
            name: "apply-str-bomb",
            program: "(let [s (.repeat \"x\" 1000000)] (count (apply str (repeat 3000 s))))",
            context: Ctx::Small,
            weight: 1,
        },
        Case {
            name: "str-join-bomb",
            program: "(let [s (.repeat \"x\" 1000000)] (count (str/join \",\" (repeat 3000 s))))",
            context: Ctx::Small,
            weight: 1,
        },
        Case {
            name: "str-bomb",
            program: "(let [s (.repeat \"x\" 8000000)] (count (str s s s s s s s s s s s s s s s s)))",
            context: Ctx::Small,
            weight: 1,
        },
        Case { name: "vec-bomb", program: "(count (vec (range 100000000)))", context: Ctx::Small, weight: 1 },
        Case {
            name: "map-bomb",
            program: "(count (into {} (map (fn [i] [i (str i i i i)]) (range 10000000))))",
            context: Ctx::Small,
            weight: 1,
        },
        Case {
            name: "context-1mb",
            program: "(->> data/rows (map :amount) (reduce +))",
            context: Ctx::Megabyte,
            weight: 2,
        },
        Case {
            name: "deep-recursion",
            program: "(defn f [n] (if (< n 1) 0 (+ 1 (f (dec n))))) (f 1000000)",
            context: Ctx::Small,
            weight: 1,
        },
        Case {
            name: "deep-data",
            program: "(reduce (fn [a _] [a]) [] (range 100000))",
            context: Ctx::Small,
            weight: 1,
        },
        Case {
            name: "deep-def",
            program: "(def d (reduce (fn [a k] {k a}) {} (range 100000))) 1",
            context: Ctx::Small,
            weight: 1,
        },
        Case {
            name: "deep-closure",
            program: "(constantly (reduce (fn [a _] [a]) [] (range 100000)))",
            context: Ctx::Small,
            weight: 1,
        },
        Case {
            name: "deep-closure-def",
            program: "(def f (memoize (comp (constantly (reduce (fn [a _] (list a)) nil (range 100000)))))) 1",
            context: Ctx::Small,
            weight: 1,
        },
        Case {
            name: "deep-closure-fail",
            program: "(fail (juxt (partial vector (reduce (fn [a _] {:a a}) nil (range 100000)))))",
            context: Ctx::Small,
            weight: 1,
        },
        Case { name: "endless-loop", program: "(loop [i 0] (recur (inc i)))", context: Ctx::Small, weight: 1 },
    ];

    /// What happened to the calls of one case.
    #[derive(Default, Clone)]
    struct CaseTally {
        ok: u64,
        limits: BTreeMap<String, u64>,
        errors: u64,
        first_error: Option<String>,
    }

    /// A 1 MB context: rows of ids, amounts and names.
    fn megabyte_context() -> String {
        let rows: Vec<Value> = (0..12_000)
            .map(|i| json!({"id": i, "amount": (i % 97) as f64 + 0.5, "name": format!("customer-{i:06}"), "tags": ["a", "b"]}))
            .collect();
        json!({ "rows": rows }).to_string()
    }

    /// A tiny xorshift, so each client's mix differs without a dependency.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    fn pick(cases: &[&Case], state: &mut u64) -> usize {
        let total: u64 = cases.iter().map(|c| u64::from(c.weight)).sum();
        let mut r = next(state) % total.max(1);
        for (i, c) in cases.iter().enumerate() {
            if r < u64::from(c.weight) {
                return i;
            }
            r -= u64::from(c.weight);
        }
        0
    }

    /// The reason of an error payload: `reason: message`, after a `<prints>` trail if any.
    fn reason(text: &str) -> &str {
        let body = text.split_once("<error>\n").map_or(text, |(_, e)| e);
        body.split_once(':').map_or(body, |(r, _)| r).trim()
    }

    fn call_body(id: u64, program: &str, context: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"lisp_eval","arguments":{{"program":{},"context":{context}}}}}}}"#,
            Value::String(program.to_string())
        )
    }

    fn client(port: u16, stop: &AtomicBool, n: usize, cases: &[&Case], big: &str) -> Vec<CaseTally> {
        let mut tallies = vec![CaseTally::default(); cases.len()];
        let small = json!({"xs": (0..50).map(|i| i * 3 + n as u64).collect::<Vec<_>>()}).to_string();
        let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ (n as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D);
        let mut conn: Option<Conn> = None;
        let mut id = 1u64;
        while !stop.load(Ordering::Relaxed) {
            let i = pick(cases, &mut state);
            let t = &mut tallies[i];
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
            let context = if cases[i].context == Ctx::Megabyte { big } else { small.as_str() };
            match c.request("POST", "/mcp", &call_body(id, cases[i].program, context)) {
                Ok((200, _, body)) => {
                    let m = message(&body);
                    let text = m["result"]["content"][0]["text"].as_str().unwrap_or_default();
                    if m["result"]["isError"] == json!(false) {
                        t.ok += 1;
                    } else if m["result"]["isError"] == json!(true) && LIMIT_REASONS.contains(&reason(text)) {
                        *t.limits.entry(reason(text).to_string()).or_default() += 1;
                    } else {
                        t.errors += 1;
                        t.first_error.get_or_insert(format!("call: {}", body.chars().take(300).collect::<String>()));
                    }
                }
                Ok((status, _, body)) => {
                    t.errors += 1;
                    t.first_error
                        .get_or_insert(format!("HTTP {status}: {}", body.chars().take(300).collect::<String>()));
                    conn = None;
                }
                Err(e) => {
                    t.errors += 1;
                    t.first_error.get_or_insert(format!("transport: {e:#}"));
                    conn = None;
                }
            }
        }
        // a client that is done ends its session, as the MCP transport asks
        if let Some(c) = conn.as_mut() {
            let _ = c.request("DELETE", "/mcp", "");
        }
        tallies
    }

    /// Polls `/health` on its own connection until `stop`; returns the latencies and the
    /// failures (with the first one).
    fn health(port: u16, stop: &AtomicBool) -> (Vec<Duration>, u64, Option<String>) {
        let (mut lat, mut failures, mut first) = (Vec::new(), 0u64, None);
        let mut conn: Option<Conn> = None;
        while !stop.load(Ordering::Relaxed) {
            let started = Instant::now();
            let answer = match conn.as_mut() {
                Some(c) => c.request("GET", "/health", ""),
                None => Conn::open(port).and_then(|c| conn.insert(c).request("GET", "/health", "")),
            };
            match answer {
                Ok((200, _, _)) => lat.push(started.elapsed()),
                Ok((status, _, body)) => {
                    failures += 1;
                    first.get_or_insert(format!("HTTP {status}: {}", body.chars().take(200).collect::<String>()));
                }
                Err(e) => {
                    failures += 1;
                    first.get_or_insert(format!("{e:#}"));
                    conn = None;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        (lat, failures, first)
    }

    /// Small calls so the server's pools and caches exist before idle RSS is taken.
    fn warm_up(port: u16) -> Result<()> {
        let mut c = start_session(port)?;
        for id in 1..=50 {
            let body = call_body(id, CASES[0].program, r#"{"xs": [1, 2, 3]}"#);
            let (status, _, text) = c.request("POST", "/mcp", &body)?;
            if status != 200 || message(&text)["result"]["isError"] != json!(false) {
                bail!("warm-up call failed: HTTP {status}: {}", text.chars().take(300).collect::<String>());
            }
        }
        Ok(())
    }

    pub(super) fn run(root: &Path, ptc: &Path, profile: &str, o: &Options) -> Result<()> {
        for name in &o.exclude {
            if !CASES.iter().any(|c| c.name == name) {
                let all: Vec<&str> = CASES.iter().map(|c| c.name).collect();
                bail!("--exclude: no hostile case {name}; cases: {}", all.join(", "));
            }
        }
        let cases: Vec<&'static Case> = CASES.iter().filter(|c| !o.exclude.iter().any(|e| e == c.name)).collect();
        if cases.is_empty() {
            bail!("--exclude left no case to run");
        }
        let mut server = Server::start(root, ptc, o.clients)?;
        let (port, pid) = (server.port, server.child.id());
        warm_up(port)?;
        let idle = rss_kib(pid);
        let big: Arc<str> = megabyte_context().into();
        eprintln!(
            "==> hostile load: {} clients x {} s against http://127.0.0.1:{port}/mcp ({profile} build), {} cases{}",
            o.clients,
            o.seconds,
            cases.len(),
            if o.exclude.is_empty() { String::new() } else { format!(" (excluded: {})", o.exclude.join(", ")) }
        );
        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let health_stop = stop.clone();
        let poller = std::thread::spawn(move || health(port, &health_stop));
        let handles: Vec<_> = (0..o.clients)
            .map(|n| {
                let (stop, cases, big) = (stop.clone(), cases.clone(), big.clone());
                std::thread::spawn(move || client(port, &stop, n, &cases, &big))
            })
            .collect();
        let mut peak = idle;
        let mut crash = None;
        while started.elapsed() < Duration::from_secs(o.seconds) {
            std::thread::sleep(Duration::from_millis(100));
            if let Ok(Some(status)) = server.child.try_wait() {
                crash = Some((status, started.elapsed()));
                break;
            }
            peak = peak.max(rss_kib(pid));
        }
        stop.store(true, Ordering::Relaxed);
        let mut tallies = vec![CaseTally::default(); cases.len()];
        for h in handles {
            let per = h.join().map_err(|_| anyhow::anyhow!("a load client panicked"))?;
            for (all, t) in tallies.iter_mut().zip(per) {
                all.ok += t.ok;
                all.errors += t.errors;
                for (r, k) in t.limits {
                    *all.limits.entry(r).or_default() += k;
                }
                if all.first_error.is_none() {
                    all.first_error = t.first_error;
                }
            }
        }
        let (mut health_lat, health_failures, health_first) =
            poller.join().map_err(|_| anyhow::anyhow!("the /health poller panicked"))?;
        let elapsed = started.elapsed().as_secs_f64();
        if crash.is_none()
            && let Ok(Some(status)) = server.child.try_wait()
        {
            crash = Some((status, started.elapsed()));
        }
        // RSS after the run: the lowest sample while it settles (freed memory may take a
        // moment to go back to the system)
        let mut after = rss_kib(pid);
        let settle = Instant::now();
        while crash.is_none() && after > idle * RSS_FACTOR && settle.elapsed() < RSS_SETTLE {
            std::thread::sleep(Duration::from_millis(250));
            after = after.min(rss_kib(pid));
        }
        let tail = server.tail();
        server.stop();

        health_lat.sort();
        println!("load --hostile: {} clients, {elapsed:.1} s, {profile} build", o.clients);
        println!("{:<20} {:>8} {:>8} {:>8}  limits", "case", "calls", "ok", "errors");
        let mut errors = 0;
        for (c, t) in cases.iter().zip(&tallies) {
            let limited: u64 = t.limits.values().sum();
            let limits: Vec<String> = t.limits.iter().map(|(r, k)| format!("{r} {k}")).collect();
            println!(
                "{:<20} {:>8} {:>8} {:>8}  {}",
                c.name,
                t.ok + limited + t.errors,
                t.ok,
                t.errors,
                limits.join(", ")
            );
            errors += t.errors;
        }
        let p99 = percentile(&health_lat, 0.99);
        println!(
            "/health: {} polls, p50 {:.1} ms, p99 {p99:.1} ms, max {:.1} ms, failures {health_failures}",
            health_lat.len(),
            percentile(&health_lat, 0.50),
            percentile(&health_lat, 1.0)
        );
        if crash.is_none() {
            println!("server RSS: idle {idle} KiB (after warm-up), peak {peak} KiB, after {after} KiB");
        } else {
            println!("server RSS: idle {idle} KiB (after warm-up), peak {peak} KiB before it exited");
        }
        let mut failures = Vec::new();
        if let Some((status, at)) = &crash {
            failures.push(format!(
                "the server crashed ({status}) after {:.1} s; its last stderr lines:\n{tail}",
                at.as_secs_f64()
            ));
        }
        if errors > 0 {
            let firsts: Vec<String> = cases
                .iter()
                .zip(&tallies)
                .filter_map(|(c, t)| t.first_error.as_ref().map(|e| format!("  {}: {e}", c.name)))
                .collect();
            failures.push(format!(
                "{errors} calls failed with something other than a limit ({}); first of each case:\n{}",
                LIMIT_REASONS.join(", "),
                firsts.join("\n")
            ));
        }
        if health_failures > 0 {
            failures.push(format!("/health failed {health_failures} times: {}", health_first.unwrap_or_default()));
        }
        if p99 >= HEALTH_P99_MS {
            failures.push(format!("/health p99 {p99:.1} ms is not under {HEALTH_P99_MS} ms"));
        }
        if crash.is_none() && after > idle * RSS_FACTOR {
            failures
                .push(format!("server RSS {after} KiB after the run is more than {RSS_FACTOR}x its idle {idle} KiB"));
        }
        if failures.is_empty() {
            println!(
                "load --hostile: passed (no crash, only limit errors, /health p99 under {HEALTH_P99_MS} ms, RSS back within {RSS_FACTOR}x idle)"
            );
            return Ok(());
        }
        for f in &failures {
            println!("FAIL: {f}");
        }
        bail!("hostile load failed {} of its checks", failures.len())
    }
}
