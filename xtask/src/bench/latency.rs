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

/// The tiny program of the latency rows, and the same statements in Python.
const TINY: &str = "(let [x 1 y 2] (+ x y))";
const TINY_PY: &str = "x = 1\ny = 2\nr = x + y";

/// Calls timed one by one for each in-process latency figure.
const CALLS: usize = 20_000;

/// In-process figures: a tiny program compiled and run, and run precompiled, through the
/// embedding API (a release bench binary, `crates/ptc-lisp-eval/benches/latency.rs`), next
/// to CPython's `exec` and pydantic-monty on the same statements; `ptc eval --jsonl`
/// throughput; `assoc`/`conj` inside `reduce` at 10k and 100k items (linear, not quadratic).
pub fn in_process(ptc: &Path, runs: usize, python: &Path) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(&cargo)
        .args(["bench", "--quiet", "-p", "ptc-lisp-eval", "--bench", "latency", "--", &CALLS.to_string()])
        .current_dir(crate::root())
        .stderr(Stdio::inherit())
        .output()
        .context("cannot run the latency bench")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(json_line) = text.lines().find(|l| l.starts_with('{')) else {
        bail!("the latency bench printed no figures: {text}");
    };
    let f: serde_json::Value = serde_json::from_str(json_line)?;
    let us = |k: &str| f[k].as_f64().unwrap_or(f64::NAN);
    let py = python_exec(python)?;
    let monty = monty_feed(python);
    lines.push(format!(
        "tiny program `{TINY}` in-process, median of {CALLS} calls: compile + run {:.2} µs, run precompiled {:.2} µs (goals ≤ 10 µs and ≤ 3 µs); each call handed to a pool thread and back (`Engine::eval`/`Engine::run` from an outside thread): {:.2} µs and {:.2} µs",
        us("batch_compile_run_us"),
        us("batch_run_us"),
        us("compile_run_us"),
        us("run_us"),
    ));
    lines.push(format!(
        "  peers on `{}`: CPython `exec` of the precompiled code object {:.2} µs, `compile` + `exec` {:.2} µs; {}",
        TINY_PY.replace('\n', "; "),
        py.0,
        py.1,
        match monty {
            Ok(m) => format!("pydantic-monty `feed_run` (a worker subprocess per session) {m:.1} µs"),
            Err(e) => format!("pydantic-monty not measured ({e})"),
        }
    ));
    let (n, secs) = jsonl_throughput(ptc, 50_000)?;
    lines.push(format!(
        "`ptc eval --jsonl`, {n} lines of `{TINY}` from a file, whole process (fastest of 3): {:.0} programs/s ({:.1} µs per line; goal ≥ 50,000/s)",
        n as f64 / secs,
        secs * 1e6 / n as f64
    ));
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

/// Missions of the many-missions figure, and the run threads of their engine pool.
const MISSIONS: usize = 10_000;
const MISSION_RUN_THREADS: usize = 256;

/// Many concurrent missions on one runtime (`crates/ptc-subagent/benches/missions.rs`):
/// scripted model, two turns, one async tool call of 100 ms each; wall time, peak OS
/// threads and peak RSS.
pub fn missions() -> Result<Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(&cargo)
        .args(["bench", "--quiet", "-p", "ptc-subagent", "--bench", "missions", "--"])
        .args([MISSIONS.to_string(), MISSION_RUN_THREADS.to_string()])
        .current_dir(crate::root())
        .stderr(Stdio::inherit())
        .output()
        .context("cannot run the missions bench")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(json_line) = text.lines().find(|l| l.starts_with('{')) else {
        bail!("the missions bench printed no figures: {text}");
    };
    let f: serde_json::Value = serde_json::from_str(json_line)?;
    let n = |k: &str| f[k].as_f64().unwrap_or(f64::NAN);
    if f["ok"] != f["missions"] {
        bail!("{} of {} missions failed; first: {}", n("missions") - n("ok"), n("missions"), f["first_failure"]);
    }
    let fixed = n("run_threads") + n("branch_threads") + n("tokio_workers");
    Ok(vec![format!(
        "{MISSIONS} concurrent missions on one tokio runtime ({} workers), scripted model, two turns, one async tool call of 100 ms each, engine pool of {} run threads: {:.1} s wall ({:.0} missions/s), at most {} OS threads (pool and runtime {fixed}, process before the missions {}; no thread per mission or tool call), peak RSS {:.0} MiB ({:.0} MiB before)",
        n("tokio_workers"),
        n("run_threads"),
        n("wall_s"),
        n("missions") / n("wall_s"),
        n("threads_peak"),
        n("threads_before"),
        n("rss_peak_mib"),
        n("rss_before_mib"),
    )])
}

/// CPython's median µs for `exec` of the precompiled snippet, and for `compile` + `exec`.
fn python_exec(python: &Path) -> Result<(f64, f64)> {
    let script = format!(
        r#"
import time
src = {TINY_PY:?}
code = compile(src, "<tiny>", "exec")
def med(f, n={CALLS}):
    for _ in range(n // 10): f()
    ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    ts.sort(); return ts[n // 2] * 1e6
print(med(lambda: exec(code, {{}})), med(lambda: exec(compile(src, "<tiny>", "exec"), {{}})))
"#
    );
    let out = Command::new(python).args(["-c", &script]).output().context("cannot run python3")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text.split_whitespace().filter_map(|x| x.parse::<f64>().ok());
    match (it.next(), it.next()) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => bail!("python3 printed no figures: {text} {}", String::from_utf8_lossy(&out.stderr)),
    }
}

/// pydantic-monty's median µs for `feed_run` of the snippet (parse + run), if installed
/// (`pip install pydantic-monty`), or in the venv the bench's peers are installed into
/// (`target/peers/venv`, made by the full bench on a machine without it).
fn monty_feed(python: &Path) -> Result<f64, String> {
    let venv = crate::target_dir().join("peers/venv/bin/python");
    let python = if venv.exists() { venv.as_path() } else { python };
    let script = format!(
        r#"
import time, pydantic_monty as m
src = {TINY_PY:?}
with m.Monty() as mon:
    with mon.checkout() as s:
        n = 2000
        for _ in range(n // 10): s.feed_run(src)
        ts = []
        for _ in range(n):
            t = time.perf_counter(); s.feed_run(src); ts.append(time.perf_counter() - t)
        ts.sort(); print(ts[n // 2] * 1e6)
"#
    );
    let out = Command::new(python).args(["-c", &script]).output().map_err(|e| e.to_string())?;
    String::from_utf8_lossy(&out.stdout).trim().parse().map_err(|_| {
        let err = String::from_utf8_lossy(&out.stderr);
        err.lines().last().unwrap_or("no output").to_string()
    })
}

/// Wall time of one `ptc eval --jsonl` process over `n` lines of the tiny program.
fn jsonl_throughput(ptc: &Path, n: usize) -> Result<(usize, f64)> {
    let batch = std::env::temp_dir().join(format!("ptc-bench-tiny-{}.jsonl", std::process::id()));
    let line = json!(TINY).to_string();
    let mut text = String::with_capacity((line.len() + 1) * n);
    for _ in 0..n {
        text.push_str(&line);
        text.push('\n');
    }
    std::fs::write(&batch, text)?;
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        let out = Command::new(ptc)
            .args(["eval", "--jsonl"])
            .stdin(std::fs::File::open(&batch)?)
            .stdout(Stdio::piped())
            .output()
            .context("cannot start ptc")?;
        let secs = t.elapsed().as_secs_f64();
        let answers = String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("\"status\":\"ok\"")).count();
        if answers != n {
            bail!("ptc eval --jsonl answered {answers} of {n} lines");
        }
        best = best.min(secs);
    }
    let _ = std::fs::remove_file(&batch);
    Ok((n, best))
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
        // one write per frame, as an MCP client sends it: `writeln!` of a `json!` value
        // would write it token by token, one syscall (and one wake-up of the server's
        // reader) each, and time this client instead of the server
        let mut call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(+ 1 2)"}}}).to_string();
        call.push('\n');
        let t = Instant::now();
        stdin.write_all(call.as_bytes())?;
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
        "MCP stdio `tools/call` of `(+ 1 2)`, 1,000 sequential calls: p50 {:.1} µs, p99 {:.1} µs (goals p50 ≤ 50 µs, p99 ≤ 200 µs; upstream PtcRunner measured 197 µs)",
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
    use std::io::{BufRead, BufReader, Write};
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
    // one keep-alive connection per client, as an MCP client library keeps one
    let post = move |conn: &mut BufReader<TcpStream>, session: Option<&str>, body: &str| -> Result<(String, String)> {
        let req = mcp_post(port, session, body);
        conn.get_mut().write_all(req.as_bytes())?;
        let (headers, body) = read_response(conn)?;
        let sid = headers
            .lines()
            .find_map(|h| h.to_ascii_lowercase().starts_with("mcp-session-id:").then(|| h[15..].trim().to_string()))
            .unwrap_or_default();
        Ok((sid, body))
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "load", "version": "1"}}}).to_string();
    let duration = std::time::Duration::from_secs(secs);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(+ 1 2)"}}}).to_string();
    // each client opens its session with blocking calls, then all 8 are driven from one
    // thread by readiness (as `wrk` and `oha` do), so the load generator spends its CPU on
    // the requests and not on switching between 8 blocked threads
    let mut clients = Vec::new();
    for _ in 0..8 {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        let mut conn = BufReader::new(stream);
        let (sid, _) = post(&mut conn, None, &init)?;
        post(&mut conn, Some(&sid), &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())?;
        if !conn.buffer().is_empty() {
            bail!("the server sent more than the handshake's answers");
        }
        let request = mcp_post(port, Some(&sid), &call);
        clients.push((conn.into_inner(), request.into_bytes()));
    }
    // CPU of the server and of this process (the load thread) over the run, so that a
    // reader can tell whether the load generator, not the server, is the ceiling
    let cpu_before = (cpu_secs(child.id()), cpu_secs(std::process::id()));
    let mut all = drive_clients(clients, duration, "user=> 3")?;
    let cpu_after = (cpu_secs(child.id()), cpu_secs(std::process::id()));
    let per_request = |before: Option<f64>, after: Option<f64>| match (before, after) {
        (Some(b), Some(a)) if !all.is_empty() => format!("{:.0} µs", (a - b) * 1e6 / all.len() as f64),
        _ => "?".to_string(),
    };
    let cpu = format!(
        "; CPU per request: server {}, load generator {}",
        per_request(cpu_before.0, cpu_after.0),
        per_request(cpu_before.1, cpu_after.1)
    );
    let _ = child.kill();
    let _ = child.wait();
    all.sort_by(|a, b| a.total_cmp(b));
    Ok(format!(
        "MCP HTTP, 8 clients × {secs} s of `(+ 1 2)`, one keep-alive connection each: {:.0} req/s, p99 {:.2} ms (goal ≥ 20,000 req/s){cpu}",
        all.len() as f64 / duration.as_secs_f64(),
        percentile(&all, 0.99)
    ))
}

/// A `POST /mcp` of `body` on a keep-alive connection to 127.0.0.1:`port`, in `session`.
fn mcp_post(port: u16, session: Option<&str>, body: &str) -> String {
    let sid = session.map(|s| format!("Mcp-Session-Id: {s}\r\n")).unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: keep-alive\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-11-25\r\n{sid}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Runs each client's request in a closed loop for `duration` (one request in flight
/// per connection), all from one thread on a current-thread tokio runtime; returns every
/// request's round trip in ms. A reply that lacks `expect` fails the run.
fn drive_clients(
    clients: Vec<(std::net::TcpStream, Vec<u8>)>,
    duration: std::time::Duration,
    expect: &str,
) -> Result<Vec<f64>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // a server that stops answering fails the run instead of hanging it
    const REQUEST_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build()?;
    rt.block_on(async move {
        let mut set = tokio::task::JoinSet::new();
        for (stream, request) in clients {
            stream.set_nonblocking(true)?;
            let mut stream = tokio::net::TcpStream::from_std(stream)?;
            let expect = expect.to_string();
            set.spawn(async move {
                let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
                let mut times = Vec::new();
                let start = Instant::now();
                while start.elapsed() < duration {
                    let t = Instant::now();
                    let exchange = async {
                        stream.write_all(&request).await?;
                        loop {
                            if let Some((used, body)) = parse_response(&buf)? {
                                buf.drain(..used);
                                return Ok::<_, anyhow::Error>(body);
                            }
                            if stream.read_buf(&mut buf).await? == 0 {
                                bail!("the server closed the connection mid-response");
                            }
                        }
                    };
                    let Ok(body) = tokio::time::timeout(REQUEST_LIMIT, exchange).await else {
                        bail!("no answer within {} s", REQUEST_LIMIT.as_secs());
                    };
                    let body = body?;
                    times.push(t.elapsed().as_secs_f64() * 1000.0);
                    if !String::from_utf8_lossy(&body).contains(&expect) {
                        bail!("unexpected HTTP reply: {}", String::from_utf8_lossy(&body));
                    }
                }
                Ok::<_, anyhow::Error>(times)
            });
        }
        let mut all = Vec::new();
        while let Some(r) = set.join_next().await {
            all.extend(r.context("a load task panicked")??);
        }
        Ok(all)
    })
}

/// One whole HTTP/1.1 response at the start of `buf`, if it has arrived: the bytes it
/// takes and its body (sized by `Content-Length` or sent in chunks).
fn parse_response(buf: &[u8]) -> Result<Option<(usize, Vec<u8>)>> {
    let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else { return Ok(None) };
    let head = std::str::from_utf8(&buf[..head_end]).context("a response head that is not UTF-8")?;
    let header = |name: &str| {
        head.lines().find_map(|h| {
            let (k, v) = h.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_ascii_lowercase())
        })
    };
    let mut at = head_end + 4;
    if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        let mut body = Vec::new();
        loop {
            let Some(eol) = buf[at..].windows(2).position(|w| w == b"\r\n") else { return Ok(None) };
            let line = std::str::from_utf8(&buf[at..at + eol]).unwrap_or("");
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .with_context(|| format!("bad chunk size {line:?}"))?;
            let data = at + eol + 2;
            if buf.len() < data + size + 2 {
                return Ok(None);
            }
            body.extend_from_slice(&buf[data..data + size]);
            at = data + size + 2;
            if size == 0 {
                return Ok(Some((at, body)));
            }
        }
    }
    let len: usize = header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    if buf.len() < at + len {
        return Ok(None);
    }
    Ok(Some((at + len, buf[at..at + len].to_vec())))
}

/// User and system CPU seconds of a process so far, its finished threads included (Linux's
/// `/proc/PID/stat`, in clock ticks of 1/100 s, the fixed `USER_HZ` of its ABI).
fn cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the fields after the command name, which is in parentheses and may hold spaces
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// Reads one HTTP/1.1 response from a keep-alive connection ([`parse_response`] over
/// what arrives), leaving what follows it: its head (status line and headers) and body.
fn read_response(conn: &mut impl std::io::BufRead) -> Result<(String, String)> {
    let mut got: Vec<u8> = Vec::new();
    loop {
        let fresh = conn.fill_buf()?;
        if fresh.is_empty() {
            bail!("the server closed the connection mid-response: {}", String::from_utf8_lossy(&got));
        }
        let before = got.len();
        got.extend_from_slice(fresh);
        let Some((used, body)) = parse_response(&got)? else {
            let n = fresh.len();
            conn.consume(n);
            continue;
        };
        // the response ends in what just arrived (the bytes before did not hold it whole)
        conn.consume(used - before);
        let head_end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(used);
        return Ok((
            String::from_utf8_lossy(&got[..head_end]).into_owned(),
            String::from_utf8_lossy(&body).into_owned(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::{cpu_secs, parse_response, read_response};

    #[test]
    fn cpu_time_of_a_process_grows_with_its_work() {
        let start = cpu_secs(std::process::id()).expect("this process's CPU time");
        let began = std::time::Instant::now();
        let mut x = 0u64;
        // burn CPU until the kernel has counted at least two ticks of it
        while cpu_secs(std::process::id()).unwrap_or(start) < start + 0.02 {
            for i in 0..100_000u64 {
                x = x.wrapping_mul(31).wrapping_add(i);
            }
            std::hint::black_box(x);
            assert!(began.elapsed() < std::time::Duration::from_secs(30), "CPU time never grew");
        }
        assert_eq!(cpu_secs(u32::MAX), None, "no such process");
    }

    #[test]
    fn responses_are_read_by_length_or_by_chunks_leaving_the_next_one() {
        let wire = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nMcp-Session-Id: s1\r\n\r\nhello\
                    HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n\
                    HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n";
        let mut conn = std::io::BufReader::new(wire.as_bytes());
        let (head, body) = read_response(&mut conn).unwrap();
        assert!(head.contains("Mcp-Session-Id: s1"));
        assert_eq!(body, "hello");
        assert_eq!(read_response(&mut conn).unwrap().1, "abcde");
        let (head, body) = read_response(&mut conn).unwrap();
        assert!(head.starts_with("HTTP/1.1 202"));
        assert_eq!(body, "");
        assert!(read_response(&mut conn).is_err(), "nothing more on the wire");
    }

    #[test]
    fn a_buffered_response_is_parsed_only_once_it_is_whole() {
        let wire: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let first = wire.windows(5).position(|w| w == b"hello").unwrap() + 5;
        for cut in 0..first {
            assert_eq!(parse_response(&wire[..cut]).unwrap(), None, "cut at {cut}");
        }
        assert_eq!(parse_response(wire).unwrap(), Some((first, b"hello".to_vec())));
        let rest = &wire[first..];
        for cut in 0..rest.len() {
            assert_eq!(parse_response(&rest[..cut]).unwrap(), None, "cut at {cut}");
        }
        assert_eq!(parse_response(rest).unwrap(), Some((rest.len(), b"abcde".to_vec())));
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").is_err());
    }
}
