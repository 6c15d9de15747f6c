//! A fast path for `POST /mcp` carrying a plain `tools/call` of `lisp_eval`.
//!
//! rmcp answers such a request through four tasks and two channels: the connection task
//! hands the message to the session's worker, the worker to the service loop, the loop to
//! the handler, the handler to an evaluation thread, and the answer goes back the same
//! way before the connection task writes it. Here, when the request is one the fast path
//! can answer exactly as rmcp would, the connection task starts the program on an
//! evaluation thread itself and waits for its answer: one handoff each way. On a
//! connection thread (`http.rs`'s `ConnThreads`, evaluation threads themselves) a tiny
//! program is first run in place, as the stdio reader does (`PtcServer::eval_inline`):
//! no handoff at all.
//!
//! The fast path takes a request only when every check rmcp would make is known to pass:
//! the session is one this server opened and saw `notifications/initialized` for, rmcp
//! still holds it, the `Host` and `Origin` headers are literally ones rmcp allows, the
//! `Accept` and `Content-Type` headers are plain, the `MCP-Protocol-Version` header (if
//! any) names a version before 2026-07-28, the parameters hold nothing but `name` and
//! `arguments`, the tool is `lisp_eval`, and an evaluation slot is free at once. Anything
//! else (a queued call, `--sessions`, shutdown, `_meta`, other tools, notifications,
//! batches, GET, DELETE) goes to rmcp unchanged.
//!
//! The answer has rmcp's shape: `200`, `text/event-stream`, `cache-control: no-cache`,
//! `x-accel-buffering: no`, a chunked body holding the priming event (`retry`) and the
//! response event. One difference remains: the events' ids. rmcp numbers a session's
//! request streams from 0 (`0/N`, `1/N`); fast-path streams take numbers from 2^63 up, so
//! the two never collide. A client resuming a fast-path stream with `Last-Event-ID` gets
//! rmcp's answer to an unknown stream (an empty `200` stream); the fast path writes its
//! whole answer at once, so only a connection cut inside that write would resume.
//!
//! A `notifications/cancelled` naming a running fast-path call cancels its program, and
//! its answer is dropped as rmcp drops a cancelled call's: the client's stream ends after
//! the priming event. A client that closes its connection before the answer cancels the
//! program too (its request's future is dropped); rmcp's path keeps such a call running,
//! as its stream could be resumed.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use ptc_lisp_eval::Cancel;
use rmcp::model::{CallToolResult, RequestId};
use serde_json::Value as Json;

use crate::server::PtcServer;

/// Fast-path stream numbers start here; rmcp counts its own from 0.
const FIRST_STREAM: u64 = 1 << 63;

/// The protocol versions whose requests rmcp routes to a session (before 2026-07-28).
const SESSION_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The state of the HTTP fast path, shared by every connection.
pub(crate) struct FastHttp {
    /// Off: every request takes rmcp's path (`McpConfig::http_fast_path`).
    enabled: bool,
    server: PtcServer,
    /// `Host` values rmcp accepts, as the server configured them.
    hosts: Vec<String>,
    /// `Origin` values rmcp accepts, as the server configured them.
    origins: Vec<String>,
    /// The `retry` of the priming event (rmcp's session `sse_retry`); none: no priming.
    retry: Option<Duration>,
    running: Arc<Running>,
    /// Numbers the calls (a key reused after its client left is another call).
    next_run: AtomicU64,
    next_stream: AtomicU64,
    /// Calls that took the fast path (for tests).
    taken: AtomicU64,
}

struct FastRun {
    cancel: Cancel,
    /// The client cancelled it: its answer is dropped.
    cancelled: bool,
    run: u64,
}

/// What [`FastHttp::new`] needs to mirror rmcp's configuration.
pub(crate) struct FastHttpConfig {
    pub(crate) enabled: bool,
    pub(crate) hosts: Vec<String>,
    pub(crate) origins: Vec<String>,
    pub(crate) retry: Option<Duration>,
}

/// `true` when the `Accept` values name both `application/json` and `text/event-stream`
/// with no parameters or quoting (anything fancier is left to rmcp's parser).
fn accepts_both(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else { return false };
        if value.contains(['"', ';']) {
            return false;
        }
        for entry in value.split(',') {
            let essence = entry.trim();
            json |= essence.eq_ignore_ascii_case("application/json");
            sse |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

/// The checks rmcp makes on headers before it reads the body, in the cases where their
/// outcome is certain: these headers pass them all.
fn plain_headers(headers: &HeaderMap, hosts: &[String], origins: &[String]) -> bool {
    let text = |name: header::HeaderName| -> Option<Option<&str>> {
        let mut values = headers.get_all(name).iter();
        match (values.next(), values.next()) {
            (None, _) => Some(None),
            (Some(v), None) => v.to_str().ok().map(Some),
            (Some(_), Some(_)) => None,
        }
    };
    let Some(Some(host)) = text(header::HOST) else { return false };
    if !hosts.iter().any(|h| h == host) {
        return false;
    }
    match text(header::ORIGIN) {
        Some(None) => {}
        Some(Some(origin)) if origins.iter().any(|o| o == origin) => {}
        _ => return false,
    }
    match text(header::HeaderName::from_static("mcp-protocol-version")) {
        Some(None) => {}
        Some(Some(v)) if SESSION_VERSIONS.contains(&v) => {}
        _ => return false,
    }
    // headers of a newer revision (SEP-2243) or a resume are rmcp's to judge
    for name in ["mcp-method", "mcp-name", "last-event-id"] {
        if headers.contains_key(name) {
            return false;
        }
    }
    let content_json = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| {
        let essence = v.split_once(';').map_or(v, |(e, _)| e);
        essence.trim().eq_ignore_ascii_case("application/json")
    });
    content_json && accepts_both(headers)
}

/// One SSE event in the bytes rmcp's `sse-stream` writes.
fn sse_event(data: &[u8], id: &str, retry: Option<Duration>) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + id.len() + 32);
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\nid: ");
    out.extend_from_slice(id.as_bytes());
    out.push(b'\n');
    if let Some(r) = retry {
        out.extend_from_slice(format!("retry: {}\n", r.as_millis()).as_bytes());
    }
    out.push(b'\n');
    Bytes::from(out)
}

impl FastHttp {
    pub(crate) fn new(server: PtcServer, c: FastHttpConfig) -> FastHttp {
        FastHttp {
            enabled: c.enabled,
            server,
            hosts: c.hosts,
            origins: c.origins,
            retry: c.retry,
            running: Arc::default(),
            next_run: AtomicU64::new(0),
            next_stream: AtomicU64::new(FIRST_STREAM),
            taken: AtomicU64::new(0),
        }
    }

    /// Calls that took the fast path so far.
    #[cfg(test)]
    pub(crate) fn taken(&self) -> u64 {
        self.taken.load(Ordering::Relaxed)
    }

    /// Calls answered on the thread that read them (a connection thread) so far.
    #[cfg(test)]
    pub(crate) fn inline_runs(&self) -> u64 {
        self.server.inline_runs()
    }

    /// Calls the server runs right now, on either path.
    #[cfg(test)]
    pub(crate) fn calls_in_flight(&self) -> usize {
        self.server.calls_in_flight()
    }

    /// Whether the request's headers let the fast path take it (the body is checked by
    /// [`FastHttp::call`]).
    pub(crate) fn headers_allow(&self, headers: &HeaderMap) -> bool {
        self.enabled && plain_headers(headers, &self.hosts, &self.origins)
    }

    /// A `notifications/cancelled` of `session`: cancels the fast-path call it names.
    pub(crate) fn cancel(&self, session: &str, frame: &[u8]) {
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
        let key = format!("{session} {}", note.params.request_id);
        if let Ok(mut running) = self.running.0.lock()
            && let Some(run) = running.get_mut(&key)
        {
            tracing::info!(id = %note.params.request_id, "cancelled");
            run.cancelled = true;
            run.cancel.cancel();
        }
    }

    /// Runs the `tools/call` in `frame` on the fast path and answers it; `None` when it
    /// must take rmcp's path. The caller has checked the headers and the session.
    pub(crate) async fn call(&self, session: &str, id: &Json, frame: &[u8]) -> Option<Response> {
        let arguments = crate::server::plain_lisp_eval_call(frame)?;
        let request_id = serde_json::from_value::<RequestId>(id.clone()).ok()?;
        let key = format!("{session} {id}");
        let cancel = Cancel::new();
        // removes the entry however this future ends (a client gone drops it)
        let run = self.next_run.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut running) = self.running.0.lock() {
            running.insert(key.clone(), FastRun { cancel: cancel.clone(), cancelled: false, run });
        }
        let mut entry =
            RunningEntry { running: self.running.clone(), key: key.clone(), run, cancel: Some(cancel.clone()) };
        let (tx, rx) = tokio::sync::oneshot::channel::<Vec<u8>>();
        let finish = {
            let (running, key) = (self.running.clone(), key.clone());
            move |result: CallToolResult| {
                if running.finish(&key, run) {
                    tracing::debug!(id = %key, "dropping response for cancelled request");
                    return;
                }
                if let Some(bytes) = crate::server::encode_call_answer(result, request_id) {
                    let _ = tx.send(bytes);
                }
            }
        };
        // on a connection thread (an evaluation thread), a tiny program is answered here
        let inline = ptc_lisp_eval::Engine::on_eval_thread();
        if self.server.start_fast_eval(arguments, cancel, inline, Instant::now(), finish).is_err() {
            return None;
        }
        self.taken.fetch_add(1, Ordering::Relaxed);
        let stream = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let priming = self.retry.map(|r| sse_event(b"", &format!("0/{stream}"), Some(r)));
        let next_index = u64::from(priming.is_some());
        let answered = rx.await.ok();
        // finished: nothing left to cancel
        entry.cancel = None;
        drop(entry);
        let mut frames = Vec::with_capacity(2);
        frames.extend(priming);
        // cancelled: no answer, and the stream ends (as rmcp's does)
        if let Some(bytes) = answered {
            frames.push(sse_event(&bytes, &format!("{next_index}/{stream}"), None));
        }
        let mut resp = Response::new(Body::new(SseFrames { frames: frames.into() }));
        *resp.status_mut() = StatusCode::OK;
        let headers = resp.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
        Some(resp)
    }
}

/// Running fast-path calls by `"<session> <id>"`.
#[derive(Default)]
struct Running(Mutex<HashMap<String, FastRun>>);

impl Running {
    /// Takes the call `run` out of the set; true when the client cancelled it. A newer
    /// call that reused the key (its client gone) is left alone.
    fn finish(&self, key: &str, run: u64) -> bool {
        let Ok(mut running) = self.0.lock() else { return false };
        match running.get(key) {
            Some(r) if r.run == run => running.remove(key).is_some_and(|r| r.cancelled),
            _ => false,
        }
    }
}

/// Removes a call from the running set when its request ends. A request dropped before
/// its answer came (the client closed the connection, the server stops) cancels its
/// program: nobody can read that answer (a fast-path stream cannot be resumed), so the
/// program stops at once instead of running to its time limit and holding its slot.
struct RunningEntry {
    running: Arc<Running>,
    key: String,
    run: u64,
    /// The program's cancel, while its answer is still awaited.
    cancel: Option<Cancel>,
}

impl Drop for RunningEntry {
    fn drop(&mut self) {
        if let Some(cancel) = self.cancel.take() {
            tracing::info!(id = %self.key, "client gone: cancelling its call");
            cancel.cancel();
        }
        self.running.finish(&self.key, self.run);
    }
}

/// The fast path's response body: its events, one frame each (as rmcp sends them), then
/// the end. Its length is not declared, so it goes out chunked, as rmcp's stream does.
struct SseFrames {
    frames: std::collections::VecDeque<Bytes>,
}

impl hyper::body::Body for SseFrames {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        Poll::Ready(self.get_mut().frames.pop_front().map(|bytes| Ok(hyper::body::Frame::data(bytes))))
    }
}
