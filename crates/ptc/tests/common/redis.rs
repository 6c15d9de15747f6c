//! A real `redis-server` (Debian's package; `.ci/run` installs it) on 127.0.0.1 and a
//! free port, without persistence, stopped when dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};

pub struct Redis {
    child: Child,
    pub port: u16,
}

impl Redis {
    /// A fresh `redis-server` on a free loopback port, ready when this returns.
    pub fn start() -> Redis {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        Redis::start_on(port)
    }

    pub fn start_on(port: u16) -> Redis {
        let mut child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run redis-server ({e}); install Debian's redis-server (.ci/run does)"));
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        loop {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "redis-server exited before it was ready");
            if line.contains("Ready to accept connections") {
                break;
            }
        }
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        Redis { child, port }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// One command over RESP; the reply as text (`nil`, `:1`, `+OK`, a bulk's contents).
    pub fn cmd(&self, args: &[&str]) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let mut req = format!("*{}\r\n", args.len());
        for a in args {
            req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(req.as_bytes()).unwrap();
        let mut r = BufReader::new(s);
        let mut head = String::new();
        r.read_line(&mut head).unwrap();
        let head = head.trim_end().to_string();
        if let Some(len) = head.strip_prefix('$') {
            let Ok(len) = len.parse::<usize>() else { return "nil".into() };
            let mut body = vec![0u8; len + 2];
            r.read_exact(&mut body).unwrap();
            return String::from_utf8_lossy(&body[..len]).to_string();
        }
        head
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}
