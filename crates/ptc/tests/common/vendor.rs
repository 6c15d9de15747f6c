//! A fake OpenAI-compatible vendor on 127.0.0.1: one connection per reply
//! (HTTP/1.1, `Connection: close`), recording each request it saw.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{Value, json};

/// One request the vendor saw: path, Authorization header, JSON body (`null` when the
/// body is not JSON).
pub type Seen = (String, String, Value);

pub struct FakeVendor {
    /// `http://127.0.0.1:PORT` (add `/v1` for `OPENAI_BASE_URL`).
    pub url: String,
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    handle: Option<JoinHandle<usize>>,
}

impl FakeVendor {
    /// Answers the next requests with `replies` (200, JSON), one per connection, in order.
    pub fn start(replies: Vec<Value>) -> FakeVendor {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let handle = std::thread::spawn(move || {
            let mut served = 0;
            for reply in replies {
                let Ok((mut stream, _)) = listener.accept() else { break };
                let Some(request) = read_request(&mut stream) else {
                    break; // `finish`'s knock, or a client that gave up: no request came
                };
                log.lock().unwrap().push(request);
                let text = reply.to_string();
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                );
                stream.write_all(response.as_bytes()).unwrap();
                served += 1;
            }
            served
        });
        FakeVendor { url: format!("http://{addr}"), addr, seen, handle: Some(handle) }
    }

    /// The requests seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Stops the vendor (a request still awaited is given up) and says how many replies
    /// it sent.
    pub fn finish(mut self) -> usize {
        // a connection without a request ends a vendor still waiting for one; a vendor
        // that already sent every reply has closed its port and is not reached
        drop(TcpStream::connect(self.addr));
        self.handle.take().map(|h| h.join().unwrap()).unwrap_or(0)
    }
}

/// Reads one whole request; `None` when the connection closed before it ended.
fn read_request(stream: &mut TcpStream) -> Option<Seen> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        let n = stream.read(&mut buf).unwrap_or(0);
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_string();
    let header = |name: &str| {
        head.lines()
            .find_map(|l| {
                l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_default()
    };
    let length: usize = header("content-length").parse().unwrap_or(0);
    while data.len() < head_end + length {
        let n = stream.read(&mut buf).unwrap_or(0);
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    }
    let path = head.split_whitespace().nth(1).unwrap_or_default().to_string();
    let body = serde_json::from_slice(&data[head_end..head_end + length]).unwrap_or(Value::Null);
    Some((path, header("authorization"), body))
}

/// A Chat Completions answer of `model` whose content is `program` in a code block,
/// with this usage.
pub fn completion(model: &str, program: &str, usage: Value) -> Value {
    json!({
        "model": model,
        "choices": [{"message": {"role": "assistant", "content": format!("```clojure\n{program}\n```")}}],
        "usage": usage
    })
}
