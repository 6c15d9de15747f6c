//! MCP over stdin/stdout: our own size-capped line reader in front of rmcp's transport.
//!
//! rmcp reads newline-delimited JSON itself, with its own 16 MiB line cap and no reply to
//! frames it cannot decode. Here every stdin line is read with `max_frame_bytes` as the
//! cap and checked by [`crate::frame::check`]; bad frames are answered here, good ones are
//! passed to rmcp through an in-memory pipe. rmcp's output is copied line by line to
//! stdout, which is also how requests leave the in-flight set: a second request with an
//! id that is still running is answered with an error instead of reaching rmcp.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use serde_json::Value as Json;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
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

/// One line of input, capped.
enum Line {
    Frame(Vec<u8>),
    TooLong(usize),
    Eof,
}

/// Reads up to and including the next `\n`, keeping at most `cap` bytes; a longer line is
/// consumed to its end and reported with its length.
async fn read_line<R: AsyncBufRead + Unpin>(r: &mut R, cap: usize) -> std::io::Result<Line> {
    let mut buf = Vec::new();
    let mut total = 0usize;
    loop {
        let chunk = r.fill_buf().await?;
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

type Out = Arc<tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

async fn write_line(out: &Out, bytes: &[u8]) -> std::io::Result<()> {
    let mut w = out.lock().await;
    w.write_all(bytes).await?;
    w.write_all(b"\n").await?;
    w.flush().await
}

fn id_key(id: &Json) -> String {
    id.to_string()
}

/// Serves MCP over stdin/stdout until stdin closes or `shutdown` is cancelled; then new
/// calls get `shutting_down` and running ones get up to ten seconds to finish.
pub async fn serve_stdio(server: PtcServer, shutdown: CancellationToken) -> Result<(), StdioError> {
    serve(server, shutdown, tokio::io::stdin(), Box::new(tokio::io::stdout())).await
}

/// [`serve_stdio`] over any byte streams (used by tests).
pub(crate) async fn serve<R>(
    server: PtcServer,
    shutdown: CancellationToken,
    input: R,
    output: Box<dyn AsyncWrite + Send + Unpin>,
) -> Result<(), StdioError>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    let max_frame = server.config().max_frame_bytes;
    let (to_rmcp, rmcp_in) = tokio::io::duplex(256 * 1024);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(256 * 1024);
    let out: Out = Arc::new(tokio::sync::Mutex::new(output));
    let in_flight: Arc<Mutex<HashSet<String>>> = Arc::new(Mutex::new(HashSet::new()));

    // rmcp's answers go to stdout, and leave the in-flight set
    let forward = {
        let out = out.clone();
        let in_flight = in_flight.clone();
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
                    && let Ok(mut set) = in_flight.lock()
                {
                    set.remove(&id_key(&id));
                }
                if write_line(&out, &line).await.is_err() {
                    break;
                }
            }
        })
    };

    // the reader runs before rmcp's handshake: the handshake reads `initialize` through it
    let mut reader = {
        let out = out.clone();
        let in_flight = in_flight.clone();
        let server = server.clone();
        tokio::spawn(async move {
            let mut input = BufReader::with_capacity(64 * 1024, input);
            let mut to_rmcp = to_rmcp;
            loop {
                let line = read_line(&mut input, max_frame).await?;
                let bytes = match line {
                    Line::Eof => break,
                    Line::TooLong(n) => {
                        let r = Rejection::parse_error(format!(
                            "Parse error: the frame is {n} bytes, over max_frame_bytes ({max_frame})"
                        ));
                        tracing::warn!(bytes = n, max_frame, "oversized frame answered with a parse error");
                        write_line(&out, r.to_json().to_string().as_bytes()).await?;
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
                        write_line(&out, r.to_json().to_string().as_bytes()).await?;
                    }
                    Verdict::Drop(why) => tracing::debug!(%why, "bad notification dropped"),
                    Verdict::Pass { id, method } => {
                        if let Some(id) = &id {
                            let fresh = in_flight.lock().map(|mut s| s.insert(id_key(id))).unwrap_or(true);
                            if !fresh {
                                let r = Rejection {
                                    id: id.clone(),
                                    code: frame::INVALID_REQUEST,
                                    message: format!("Invalid Request: a request with id {id} is still in flight"),
                                };
                                write_line(&out, r.to_json().to_string().as_bytes()).await?;
                                continue;
                            }
                        }
                        // a lisp_eval context never reaches rmcp's decoder (context_stash.rs)
                        let bytes = match method.as_deref() {
                            Some("tools/call") => {
                                match server.stash().lift(&bytes, id.as_ref().unwrap_or(&Json::Null)) {
                                    Ok(Some(lifted)) => lifted,
                                    Ok(None) => bytes,
                                    Err(r) => {
                                        if let Some(id) = &id {
                                            if let Ok(mut set) = in_flight.lock() {
                                                set.remove(&id_key(id));
                                            }
                                            write_line(&out, r.to_json().to_string().as_bytes()).await?;
                                        }
                                        continue;
                                    }
                                }
                            }
                            _ => bytes,
                        };
                        to_rmcp.write_all(&bytes).await?;
                        to_rmcp.write_all(b"\n").await?;
                        to_rmcp.flush().await?;
                    }
                }
            }
            to_rmcp.shutdown().await?;
            Ok::<(), std::io::Error>(())
        })
    };

    let service = tokio::select! {
        s = server.clone().serve((rmcp_in, rmcp_out)) => s.map_err(|e| StdioError::Start(e.to_string()))?,
        _ = shutdown.cancelled() => {
            reader.abort();
            return Ok(());
        }
    };
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
                let answering = in_flight.clone();
                crate::http::wait_until(Duration::from_secs(2), move || {
                    answering.lock().map(|s| s.is_empty()).unwrap_or(true)
                })
                .await;
                ct.cancel();
                let _ = (&mut waiting).await;
                break;
            }
        }
    }
    server.begin_shutdown();
    let _ = forward.await;
    Ok(())
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

    #[tokio::test]
    async fn lines_are_capped_and_resynchronised() {
        let data = b"abc\n0123456789\r\nxy\nlast".to_vec();
        let mut r = BufReader::with_capacity(4, &data[..]);
        let mut got = Vec::new();
        loop {
            match read_line(&mut r, 5).await.unwrap_or(Line::Eof) {
                Line::Eof => break,
                Line::Frame(b) => got.push(String::from_utf8_lossy(&b).to_string()),
                Line::TooLong(n) => got.push(format!("too long {n}")),
            }
        }
        assert_eq!(got, ["abc", "too long 11", "xy", "last"]);
    }
}
