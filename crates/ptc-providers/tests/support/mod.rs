//! A loopback fake vendor: records every request and answers from a script.

#![allow(dead_code, clippy::unwrap_used)]

pub mod conversation;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::body::{Body, to_bytes};
use axum::http::{HeaderMap, Request, Response, StatusCode};
use serde_json::Value as Json;
use tokio::net::TcpListener;

/// One request the fake server received.
#[derive(Debug, Clone)]
pub struct Captured {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: Json,
}

impl Captured {
    /// A header's value ("" when absent).
    pub fn header(&self, name: &str) -> String {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string()
    }
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn json(status: u16, body: Json) -> Self {
        Reply { status, headers: vec![("content-type".into(), "application/json".into())], body: body.to_string() }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A fake vendor on 127.0.0.1.
pub struct FakeServer {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    /// `127.0.0.1:PORT`
    pub addr: String,
    captured: Arc<Mutex<Vec<Captured>>>,
}

impl FakeServer {
    /// Starts a server answering with `replies` in order (then 500s).
    pub async fn start(replies: Vec<Reply>) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let captured = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::from(replies)));
        let (seen, queue) = (captured.clone(), script.clone());
        let app = axum::Router::new().fallback(move |request: Request<Body>| {
            let (seen, queue) = (seen.clone(), queue.clone());
            async move {
                let (parts, body) = request.into_parts();
                let bytes = to_bytes(body, 16 * 1024 * 1024).await.unwrap();
                let body = serde_json::from_slice(&bytes).unwrap_or(Json::Null);
                seen.lock().unwrap().push(Captured {
                    method: parts.method.to_string(),
                    path: parts.uri.path().to_string(),
                    query: parts.uri.query().map(str::to_string),
                    headers: parts.headers,
                    body,
                });
                let reply = queue.lock().unwrap().pop_front().unwrap_or(Reply {
                    status: 500,
                    headers: vec![],
                    body: "no scripted reply left".into(),
                });
                let mut response = Response::builder().status(StatusCode::from_u16(reply.status).unwrap());
                for (name, value) in &reply.headers {
                    response = response.header(name.as_str(), value.as_str());
                }
                response.body(Body::from(reply.body)).unwrap()
            }
        });
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeServer { url: format!("http://{addr}"), addr, captured }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Captured> {
        self.captured.lock().unwrap().clone()
    }

    /// The only request so far.
    pub fn single(&self) -> Captured {
        let all = self.requests();
        assert_eq!(all.len(), 1, "expected exactly one request, got {}", all.len());
        all.into_iter().next().unwrap()
    }
}

/// A server that accepts connections and never answers (for timeouts).
pub async fn silent_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let mut held = Vec::new();
        // Bounded: a test makes one or two connections.
        for _ in 0..8 {
            match listener.accept().await {
                Ok((stream, _)) => held.push(stream),
                Err(_) => break,
            }
        }
    });
    format!("http://{addr}")
}

/// A fresh directory under the system temp dir for one test.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ptc-providers-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A vendor whose 200 answer never ends: after the request it sends `chunk`-byte pieces
/// of a JSON string (chunked encoding), pausing `pause` between them, until the client
/// hangs up. Returns the URL and a counter of the body bytes written so far.
pub async fn endless_server(
    chunk: usize,
    pause: Option<std::time::Duration>,
) -> (String, Arc<std::sync::atomic::AtomicU64>) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use tokio::io::AsyncWriteExt;

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let sent = Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    tokio::spawn(async move {
        // Bounded: a test makes a few connections at most.
        for _ in 0..4 {
            let Ok((mut stream, _)) = listener.accept().await else { break };
            let counter = counter.clone();
            tokio::spawn(async move {
                read_request(&mut stream).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
                if stream.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let opening = b"{\"choices\": [{\"message\": {\"content\": \"";
                let piece = format!("{:x}\r\n{}\r\n", opening.len(), String::from_utf8_lossy(opening));
                if stream.write_all(piece.as_bytes()).await.is_err() {
                    return;
                }
                let filler = format!("{chunk:x}\r\n{}\r\n", "x".repeat(chunk));
                loop {
                    if stream.write_all(filler.as_bytes()).await.is_err() {
                        return;
                    }
                    counter.fetch_add(chunk as u64, Ordering::SeqCst);
                    if let Some(pause) = pause {
                        tokio::time::sleep(pause).await;
                    }
                }
            });
        }
    });
    (url, sent)
}

/// Reads one HTTP/1.1 request (head and `content-length` body) from `stream`.
pub async fn read_request(stream: &mut tokio::net::TcpStream) {
    use tokio::io::AsyncReadExt;
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let Ok(n) = stream.read(&mut buf).await else { return };
        if n == 0 {
            return;
        }
        data.extend_from_slice(&buf[..n]);
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).to_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while data.len() < end + 4 + length {
                let Ok(n) = stream.read(&mut buf).await else { return };
                if n == 0 {
                    return;
                }
                data.extend_from_slice(&buf[..n]);
            }
            return;
        }
    }
}
