//! MCP over stdin/stdout: our own size-capped line reader in front of rmcp's transport,
//! and a fast path for `tools/call` of `lisp_eval`.
//!
//! rmcp reads newline-delimited JSON itself, with its own 16 MiB line cap and no reply to
//! frames it cannot decode. Here a thread of our own reads stdin with `max_frame_bytes` as
//! the cap, and every line is checked by [`crate::frame::check`]; bad frames are answered
//! here. Once the `initialize` handshake is done, a `tools/call` of `lisp_eval` whose
//! parameters are plain (`name` and `arguments`, nothing else) and which finds a free
//! evaluation slot at once goes straight from this thread to an evaluation thread, which
//! writes the answer to stdout itself: one handoff between threads instead of four (tokio's
//! stdin thread, a runtime worker, the evaluation thread, a worker, tokio's stdout thread).
//! Every other frame (and such a call when it would have to queue, during shutdown, with
//! sessions) reaches rmcp through an in-memory pipe; rmcp's output is copied line by line
//! to stdout. Both paths answer with the same bytes (checked by `stdio_tests.rs`).
//!
//! Requests leave the in-flight set when their answer is written: a second request with
//! an id that is still running is answered with an error instead of being run.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ptc_lisp_eval::Cancel;
use rmcp::ServiceExt;
use rmcp::model::{CallToolResult, ProtocolVersion, RequestId};
use serde_json::Value as Json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use crate::frame::{self, Rejection, Verdict};
use crate::server::PtcServer;

/// Why the stdio server stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StdioError {
    /// rmcp could not start the session.
    #[error("cannot start the MCP session: {0}")]
    Start(String),
    /// Reading stdin or writing stdout failed.
    #[error("stdio: {0}")]
    Io(#[from] std::io::Error),
}

/// How long in-flight calls may run on after a shutdown signal.
pub(crate) const DRAIN_GRACE: Duration = Duration::from_secs(10);

/// How long fast-path calls may run on after stdin closed (rmcp gives its own calls as
/// long).
const EOF_GRACE: Duration = Duration::from_secs(5);

/// One line of input, capped.
enum Line {
    Frame(Vec<u8>),
    TooLong(usize),
    Eof,
}

/// Reads up to and including the next `\n`, keeping at most `cap` bytes; a longer line is
/// consumed to its end and reported with its length.
fn read_line<R: BufRead>(r: &mut R, cap: usize) -> std::io::Result<Line> {
    let mut buf = Vec::new();
    let mut total = 0usize;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(if total == 0 {
                Line::Eof
            } else if total > cap {
                Line::TooLong(total)
            } else {
                Line::Frame(buf)
            });
        }
        let (part, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        total = total.saturating_add(part.len());
        if total <= cap {
            buf.extend_from_slice(part);
        } else if !buf.is_empty() {
            buf = Vec::new();
        }
        let used = done.unwrap_or(chunk.len());
        r.consume(used);
        if done.is_some() {
            if total > cap {
                return Ok(Line::TooLong(total));
            }
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(Line::Frame(buf));
        }
    }
}

/// Stdout, shared by rmcp's forwarder and the evaluation threads: one line per lock.
type Out = Arc<Mutex<Box<dyn Write + Send>>>;

fn write_line(out: &Out, bytes: &[u8]) -> std::io::Result<()> {
    let mut w = out.lock().map_err(|_| std::io::Error::other("stdout writer poisoned"))?;
    w.write_all(bytes)?;
    w.write_all(b"\n")?;
    w.flush()
}

fn id_key(id: &Json) -> String {
    id.to_string()
}

/// Fast-path calls running now, by request id.
#[derive(Default)]
struct FastCalls {
    /// Off: every call takes rmcp's path (`McpConfig::stdio_fast_path`).
    enabled: bool,
    /// Set once rmcp finished the `initialize` handshake of a session before 2026-07-28.
    ready: AtomicBool,
    /// The protocol version rmcp's `initialize` answer named, seen on its way out.
    negotiated: Mutex<Option<String>>,
    running: Mutex<HashMap<String, FastRun>>,
    /// Calls that took the fast path (for tests).
    taken: AtomicU64,
}

struct FastRun {
    cancel: Cancel,
    /// The client cancelled it: its answer is dropped, as rmcp drops a cancelled call's.
    cancelled: bool,
}

impl FastCalls {
    /// Notes the version of rmcp's `initialize` answer (the first one).
    fn saw_answer(&self, line: &[u8]) {
        #[derive(serde::Deserialize)]
        struct Answer {
            result: Initialized,
        }
        #[derive(serde::Deserialize)]
        struct Initialized {
            #[serde(rename = "protocolVersion")]
            protocol_version: String,
            #[serde(rename = "serverInfo")]
            #[allow(dead_code)]
            server_info: serde::de::IgnoredAny,
        }
        if let Ok(mut negotiated) = self.negotiated.lock()
            && negotiated.is_none()
            && let Ok(answer) = serde_json::from_slice::<Answer>(line)
        {
            *negotiated = Some(answer.result.protocol_version);
        }
    }

    /// `notifications/initialized` went to rmcp after its `initialize` answer went out:
    /// rmcp finishes the handshake on it before it reads any later frame, so later calls
    /// may take the fast path (the same rule as when the handshake is seen to finish).
    fn initialized(&self) {
        if let Ok(negotiated) = self.negotiated.lock()
            && let Some(v) = negotiated.as_deref()
        {
            self.ready.store(is_legacy(v), Ordering::SeqCst);
        }
    }

    fn is_idle(&self) -> bool {
        self.running.lock().map(|r| r.is_empty()).unwrap_or(true)
    }

    fn cancel_all(&self) {
        if let Ok(running) = self.running.lock() {
            for run in running.values() {
                run.cancel.cancel();
            }
        }
    }

    /// A `notifications/cancelled` frame: cancels the fast-path call it names, if any.
    fn cancel(&self, frame: &[u8]) {
        #[derive(serde::Deserialize)]
        struct Note {
            params: Params,
        }
        #[derive(serde::Deserialize)]
        struct Params {
            #[serde(rename = "requestId")]
            request_id: Json,
        }
        let Ok(note) = serde_json::from_slice::<Note>(frame) else { return };
        if let Ok(mut running) = self.running.lock()
            && let Some(run) = running.get_mut(&id_key(&note.params.request_id))
        {
            tracing::info!(id = %note.params.request_id, "cancelled");
            run.cancelled = true;
            run.cancel.cancel();
        }
    }
}

/// What the reader thread shares with the evaluation threads and the forwarder.
struct Link {
    server: PtcServer,
    out: Out,
    in_flight: Arc<Mutex<HashSet<String>>>,
    fast: Arc<FastCalls>,
}

impl Link {
    fn forget(&self, id: &Json) {
        if let Ok(mut set) = self.in_flight.lock() {
            set.remove(&id_key(id));
        }
    }

    /// Runs a `tools/call` on the fast path; false when it must take rmcp's.
    fn try_fast(&self, id: &Json, frame: &[u8]) -> bool {
        if !self.fast.enabled || !self.fast.ready.load(Ordering::SeqCst) {
            return false;
        }
        let Some(arguments) = crate::server::plain_lisp_eval_call(frame) else { return false };
        let Ok(request_id) = serde_json::from_value::<RequestId>(id.clone()) else { return false };
        let key = id_key(id);
        let cancel = Cancel::new();
        if let Ok(mut running) = self.fast.running.lock() {
            running.insert(key.clone(), FastRun { cancel: cancel.clone(), cancelled: false });
        }
        let answer = {
            let (fast, out, in_flight, key) =
                (self.fast.clone(), self.out.clone(), self.in_flight.clone(), key.clone());
            move |result: CallToolResult| {
                let cancelled = fast.running.lock().ok().and_then(|mut r| r.remove(&key)).is_some_and(|r| r.cancelled);
                if let Ok(mut set) = in_flight.lock() {
                    set.remove(&key);
                }
                if cancelled {
                    tracing::debug!(id = %key, "dropping response for cancelled request");
                    return;
                }
                if let Some(bytes) = crate::server::encode_call_answer(result, request_id)
                    && let Err(e) = write_line(&out, &bytes)
                {
                    tracing::warn!(error = %e, "cannot write an answer to stdout");
                }
            }
        };
        match self.server.start_fast_eval(arguments, cancel, true, Instant::now(), answer) {
            Ok(()) => {
                self.fast.taken.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(_) => {
                if let Ok(mut running) = self.fast.running.lock() {
                    running.remove(&key);
                }
                false
            }
        }
    }
}

/// Serves MCP over stdin/stdout until stdin closes or `shutdown` is cancelled; then new
/// calls get `shutting_down` and running ones get up to ten seconds to finish.
pub async fn serve_stdio(server: PtcServer, shutdown: CancellationToken) -> Result<(), StdioError> {
    serve(server, shutdown, std::io::stdin(), Box::new(std::io::stdout())).await.map(|_| ())
}

/// Reads stdin on a thread of its own: checks frames, starts fast-path calls, hands the
/// rest to rmcp.
fn read_loop<R: Read>(
    input: R,
    link: &Link,
    runtime: &tokio::runtime::Handle,
    mut to_rmcp: tokio::io::DuplexStream,
) -> std::io::Result<()> {
    let max_frame = link.server.config().max_frame_bytes;
    let mut input = std::io::BufReader::with_capacity(64 * 1024, input);
    let out = &link.out;
    loop {
        let line = read_line(&mut input, max_frame)?;
        let bytes = match line {
            Line::Eof => break,
            Line::TooLong(n) => {
                let r = Rejection::parse_error(format!(
                    "Parse error: the frame is {n} bytes, over max_frame_bytes ({max_frame})"
                ));
                tracing::warn!(bytes = n, max_frame, "oversized frame answered with a parse error");
                write_line(out, r.to_json().to_string().as_bytes())?;
                continue;
            }
            Line::Frame(b) => b,
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match frame::check(&bytes) {
            Verdict::Reject(r) => {
                tracing::debug!(code = r.code, message = %r.message, "bad frame answered");
                write_line(out, r.to_json().to_string().as_bytes())?;
            }
            Verdict::Drop(why) => tracing::debug!(%why, "bad notification dropped"),
            Verdict::Pass { id, method } => {
                if let Some(id) = &id {
                    let fresh = link.in_flight.lock().map(|mut s| s.insert(id_key(id))).unwrap_or(true);
                    if !fresh {
                        let r = Rejection {
                            id: id.clone(),
                            code: frame::INVALID_REQUEST,
                            message: format!("Invalid Request: a request with id {id} is still in flight"),
                        };
                        write_line(out, r.to_json().to_string().as_bytes())?;
                        continue;
                    }
                }
                // a lisp_eval context never reaches rmcp's decoder (context_stash.rs)
                let bytes = match method.as_deref() {
                    Some("tools/call") => match link.server.stash().lift(&bytes, id.as_ref().unwrap_or(&Json::Null)) {
                        Ok(Some(lifted)) => lifted,
                        Ok(None) => bytes,
                        Err(r) => {
                            if let Some(id) = &id {
                                link.forget(id);
                                write_line(out, r.to_json().to_string().as_bytes())?;
                            }
                            continue;
                        }
                    },
                    Some("notifications/cancelled") => {
                        // rmcp hears it too, for the calls it runs
                        link.fast.cancel(&bytes);
                        bytes
                    }
                    _ => bytes,
                };
                if method.as_deref() == Some("tools/call")
                    && let Some(id) = &id
                    && link.try_fast(id, &bytes)
                {
                    continue;
                }
                runtime.block_on(async {
                    to_rmcp.write_all(&bytes).await?;
                    to_rmcp.write_all(b"\n").await?;
                    to_rmcp.flush().await
                })?;
                if method.as_deref() == Some("notifications/initialized") {
                    link.fast.initialized();
                }
            }
        }
    }
    runtime.block_on(to_rmcp.shutdown())
}

/// [`serve_stdio`] over any byte streams (used by tests); returns how many calls took the
/// fast path.
pub(crate) async fn serve<R>(
    server: PtcServer,
    shutdown: CancellationToken,
    input: R,
    output: Box<dyn Write + Send>,
) -> Result<u64, StdioError>
where
    R: Read + Send + 'static,
{
    let (to_rmcp, rmcp_in) = tokio::io::duplex(256 * 1024);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(256 * 1024);
    let fast = Arc::new(FastCalls { enabled: server.config().stdio_fast_path, ..FastCalls::default() });
    let link = Arc::new(Link {
        server: server.clone(),
        out: Arc::new(Mutex::new(output)),
        in_flight: Arc::new(Mutex::new(HashSet::new())),
        fast: fast.clone(),
    });

    // rmcp's answers go to stdout, and leave the in-flight set
    let forward = {
        let link = link.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(from_rmcp);
            let mut line = Vec::new();
            loop {
                line.clear();
                match lines.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                    line.pop();
                }
                if let Some(id) = frame::read_id(&line)
                    && !is_request(&line)
                {
                    link.forget(&id);
                    if line.windows(17).any(|w| w == b"\"protocolVersion\"") {
                        link.fast.saw_answer(&line);
                    }
                }
                if write_line(&link.out, &line).is_err() {
                    break;
                }
            }
        })
    };

    // the reader runs before rmcp's handshake: the handshake reads `initialize` through it
    let (done_tx, mut reader) = tokio::sync::oneshot::channel::<std::io::Result<()>>();
    {
        let link = link.clone();
        let runtime = tokio::runtime::Handle::current();
        // an evaluation thread of its own: tiny programs are answered on it (see
        // `PtcServer::eval_inline`)
        ptc_lisp_eval::Engine::spawn_eval_thread("ptc-stdin", move || {
            let _ = done_tx.send(read_loop(input, &link, &runtime, to_rmcp));
        })?;
    }

    let service = tokio::select! {
        s = server.clone().serve((rmcp_in, rmcp_out)) => match s {
            Ok(s) => s,
            Err(e) => {
                // rmcp's answer to the frame it refused is still on its way to stdout
                let _ = forward.await;
                return Err(StdioError::Start(e.to_string()));
            }
        },
        // the reader thread stays blocked on stdin until the process exits
        _ = shutdown.cancelled() => return Ok(fast.taken.load(Ordering::Relaxed)),
    };
    // the fast path answers in the shape of a session opened with `initialize` on a
    // version before 2026-07-28 (no `resultType`); other sessions keep rmcp's path
    let legacy = service.peer().peer_info().is_some_and(|info| is_legacy(info.protocol_version.as_str()));
    fast.ready.store(legacy, Ordering::SeqCst);
    let ct = service.cancellation_token();
    let waiting = service.waiting();
    tokio::pin!(waiting);
    let mut reader_done = false;
    loop {
        tokio::select! {
            r = &mut reader, if !reader_done => {
                reader_done = true;
                if let Ok(Err(e)) = r {
                    tracing::warn!(error = %e, "stdin closed with an error");
                }
            }
            _ = &mut waiting => break,
            _ = shutdown.cancelled() => {
                tracing::info!("shutting down: draining calls in flight");
                server.begin_shutdown();
                server.drain(DRAIN_GRACE).await;
                // a finished program's answer is still on its way to stdout: let it arrive
                let answering = link.in_flight.clone();
                crate::http::wait_until(Duration::from_secs(2), move || {
                    answering.lock().map(|s| s.is_empty()).unwrap_or(true)
                })
                .await;
                fast.cancel_all();
                ct.cancel();
                let _ = (&mut waiting).await;
                break;
            }
        }
    }
    // stdin closed: fast-path calls still running get the time rmcp gives its own
    let idle = fast.clone();
    crate::http::wait_until(EOF_GRACE, move || idle.is_idle()).await;
    fast.cancel_all();
    server.begin_shutdown();
    let _ = forward.await;
    Ok(fast.taken.load(Ordering::Relaxed))
}

/// A protocol version before 2026-07-28 (ISO dates compare as text).
fn is_legacy(version: &str) -> bool {
    version < ProtocolVersion::V_2026_07_28.as_str()
}

fn is_request(line: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct M {
        #[serde(default)]
        method: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<M>(line).is_ok_and(|m| m.method.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_capped_and_resynchronised() {
        let data = b"abc\n0123456789\r\nxy\nlast".to_vec();
        let mut r = std::io::BufReader::with_capacity(4, &data[..]);
        let mut got = Vec::new();
        loop {
            match read_line(&mut r, 5).unwrap_or(Line::Eof) {
                Line::Eof => break,
                Line::Frame(b) => got.push(String::from_utf8_lossy(&b).to_string()),
                Line::TooLong(n) => got.push(format!("too long {n}")),
            }
        }
        assert_eq!(got, ["abc", "too long 11", "xy", "last"]);
    }
}

#[cfg(test)]
#[path = "stdio_tests.rs"]
mod fast_path_tests;
