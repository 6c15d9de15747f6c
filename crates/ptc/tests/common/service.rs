//! A JSON service on 127.0.0.1 that the test holds.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex, mpsc};

/// `/ping` answers `{"pong":true}` only when the test sends on the returned sender, after
/// telling the test (on the returned receiver) that the request arrived; any other path
/// answers `other` at once. The port, the arrival receiver and the opening sender.
pub fn gated_service(other: String) -> (u16, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (arrived_tx, arrived_rx) = mpsc::channel();
    let (open_tx, open_rx) = mpsc::channel::<()>();
    let open_rx = Arc::new(Mutex::new(open_rx));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let arrived_tx = arrived_tx.clone();
            let open_rx = open_rx.clone();
            let other = other.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut first = String::new();
                reader.read_line(&mut first).unwrap();
                loop {
                    let mut l = String::new();
                    if reader.read_line(&mut l).unwrap_or(0) == 0 || l == "\r\n" {
                        break;
                    }
                }
                let body = if first.contains("/ping") {
                    arrived_tx.send(()).unwrap();
                    open_rx.lock().unwrap().recv().unwrap();
                    "{\"pong\":true}".to_string()
                } else {
                    other
                };
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(resp.as_bytes());
            });
        }
    });
    (port, arrived_rx, open_tx)
}
