//! `ptc run` against hostile vendors and files: answer, history and trace sizes bounded,
//! Retry-After waits capped, secrets kept out of stdout, traces and recordings, and bad
//! recordings refused. The vendor is a raw HTTP server on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::JoinHandle;

use serde_json::{Value, json};

const KEY: &str = "sk-proj-ECHO-SECRET-11223344";

fn scratch() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "ptc-run-bounds-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn command(dir: &Path, program: &str, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(program);
    command.args(args).current_dir(dir).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for var in ["OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY"] {
        command.env_remove(var);
    }
    command.env("XDG_CONFIG_HOME", dir).env("HOME", dir).env_remove("PTC_LLM_CONFIG");
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

fn ptc(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    command(dir, env!("CARGO_BIN_EXE_ptc"), args, env).output().unwrap()
}

fn all(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Reads one request (head and body) from `stream`.
fn read_request(stream: &mut TcpStream) {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = stream.read(&mut buf).unwrap_or(0);
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
                let n = stream.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    return;
                }
                data.extend_from_slice(&buf[..n]);
            }
            return;
        }
    }
}

/// One reply: status, extra headers, JSON body.
type Reply = (u16, Vec<(&'static str, String)>, Value);

/// Answers one connection per reply, then stops.
fn vendor(replies: Vec<Reply>) -> (String, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        for (status, headers, body) in replies {
            let (mut stream, _) = listener.accept().unwrap();
            read_request(&mut stream);
            let text = body.to_string();
            let mut response = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                text.len()
            );
            for (name, value) in headers {
                response.push_str(&format!("{name}: {value}\r\n"));
            }
            response.push_str("\r\n");
            response.push_str(&text);
            let _ = stream.write_all(response.as_bytes());
        }
    });
    (url, handle)
}

/// A 200 whose body never ends (chunked, `chunk` bytes a piece, `pause` between pieces),
/// until the client hangs up.
fn endless_vendor(chunk: usize, pause: Option<std::time::Duration>) -> (String, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        read_request(&mut stream);
        let opening = "{\"choices\": [{\"message\": {\"content\": \"";
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{opening}\r\n",
            opening.len()
        );
        if stream.write_all(head.as_bytes()).is_err() {
            return;
        }
        let piece = format!("{chunk:x}\r\n{}\r\n", "x".repeat(chunk));
        while stream.write_all(piece.as_bytes()).is_ok() {
            if let Some(pause) = pause {
                std::thread::sleep(pause);
            }
        }
    });
    (url, handle)
}

fn completion(program: &str) -> Value {
    json!({"choices": [{"message": {"role": "assistant", "content": format!("```clojure\n{program}\n```")}}]})
}

#[test]
fn an_endless_answer_stops_at_the_cap_with_bounded_memory() {
    let dir = scratch();
    let (url, server) = endless_vendor(256 * 1024, None);
    // Under a 2 GB address-space limit: reading the endless body whole would abort;
    // with the cap the run ends with a clear error.
    let script = format!(
        "ulimit -v 2000000 && exec '{}' run --prompt hi --llm openai:m --max-answer-bytes 1048576",
        env!("CARGO_BIN_EXE_ptc")
    );
    let o =
        command(&dir, "sh", &["-c", &script], &[("OPENAI_API_KEY", KEY), ("OPENAI_BASE_URL", &url)]).output().unwrap();
    server.join().unwrap();
    let text = all(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("answer_too_large"), "{text}");
    assert!(text.contains("max_answer_bytes (1048576 bytes"), "{text}");
}

#[test]
fn a_slow_endless_answer_ends_at_the_mission_deadline() {
    let dir = scratch();
    let (url, server) = endless_vendor(1024, Some(std::time::Duration::from_millis(20)));
    let o = ptc(
        &dir,
        &["run", "--prompt", "hi", "--llm", "openai:m", "--mission-timeout-ms", "1500", "--output", "json"],
        &[("OPENAI_API_KEY", KEY), ("OPENAI_BASE_URL", &url)],
    );
    server.join().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", all(&o));
    let step: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(step["fail"]["reason"], "mission_timeout", "{step}");
}

#[test]
fn retry_after_is_capped_by_max_delay_and_by_the_deadline() {
    let dir = scratch();
    // An HTTP date a month away, then the answer: the wait is --llm-max-retry-delay-ms.
    let month = "Fri, 31 Dec 2100 23:59:59 GMT".to_string();
    let (url, server) = vendor(vec![
        (429, vec![("retry-after", month)], json!({"error": {"message": "slow down"}})),
        (200, vec![], completion("(return 7)")),
    ]);
    let env = [("OPENAI_API_KEY", KEY), ("OPENAI_BASE_URL", url.as_str())];
    let args = ["run", "--prompt", "hi", "--llm", "openai:m", "--llm-max-retry-delay-ms", "50", "--output", "json"];
    let o = ptc(&dir, &args, &env);
    server.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", all(&o));
    let step: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(step["return"], json!(7));

    // The numeric form, a day, without a mission timeout: capped the same way.
    let (url, server) = vendor(vec![
        (503, vec![("retry-after", "86400".into())], json!({"error": {"message": "busy"}})),
        (200, vec![], completion("(return 8)")),
    ]);
    let env = [("OPENAI_API_KEY", KEY), ("OPENAI_BASE_URL", url.as_str())];
    let o = ptc(&dir, &args, &env);
    server.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", all(&o));

    // With a mission timeout nearer than the wait, the mission ends at once instead.
    let (url, server) =
        vendor(vec![(429, vec![("retry-after", "86400".into())], json!({"error": {"message": "slow down"}}))]);
    let env = [("OPENAI_API_KEY", KEY), ("OPENAI_BASE_URL", url.as_str())];
    let o = ptc(&dir, &["run", "--prompt", "hi", "--llm", "openai:m", "--mission-timeout-ms", "5000"], &env);
    server.join().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", all(&o));
    assert!(all(&o).contains("mission_timeout"), "{}", all(&o));
}

#[test]
fn an_echoed_key_reaches_neither_stdout_nor_trace_nor_recording() {
    let dir = scratch();
    let (url, server) = vendor(vec![(200, vec![], completion(&format!("(return \"the key is {KEY}\")")))]);
    let trace = dir.join("trace.jsonl");
    let record = dir.join("run.jsonl");
    let (trace_arg, record_arg) = (trace.display().to_string(), record.display().to_string());
    let o = ptc(
        &dir,
        &["run", "--prompt", "hi", "--llm", "openai:m", "--trace", &trace_arg, "--record", &record_arg],
        &[("OPENAI_API_KEY", KEY), ("OPENAI_BASE_URL", &url)],
    );
    server.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", all(&o));
    assert!(all(&o).contains("the key is ***"), "{}", all(&o));
    for text in [all(&o), std::fs::read_to_string(&trace).unwrap(), std::fs::read_to_string(&record).unwrap()] {
        assert!(!text.contains(KEY), "leaked: {text}");
    }
}

#[test]
fn credentials_in_the_base_url_are_redacted_everywhere() {
    let dir = scratch();
    let (password, query) = ("pa55word-URL-SECRET", "query-URL-SECRET");
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let base = format!("http://user:{password}@127.0.0.1:{port}/v1?key={query}");
    let trace = dir.join("trace.jsonl");
    let record = dir.join("run.jsonl");
    let (trace_arg, record_arg) = (trace.display().to_string(), record.display().to_string());
    let env = [("OPENAI_API_KEY", KEY), ("OPENAI_BASE_URL", base.as_str())];
    let o = ptc(
        &dir,
        &[
            "run",
            "--prompt",
            "hi",
            "--llm",
            "openai:m",
            "--llm-retries",
            "1",
            "--trace",
            &trace_arg,
            "--record",
            &record_arg,
        ],
        &env,
    );
    assert_eq!(o.status.code(), Some(1), "{}", all(&o));
    assert!(all(&o).contains("http://***@127.0.0.1"), "names the server: {}", all(&o));
    let models = ptc(&dir, &["models", "openai:m"], &env);
    let dry = ptc(&dir, &["run", "--prompt", "x", "--llm", "openai:m", "--dry-run"], &env);
    for text in [
        all(&o),
        all(&models),
        all(&dry),
        std::fs::read_to_string(&trace).unwrap(),
        std::fs::read_to_string(&record).unwrap(),
    ] {
        assert!(!text.contains(password) && !text.contains(query) && !text.contains(KEY), "leaked: {text}");
    }
}

#[test]
fn big_answers_keep_history_and_trace_bounded() {
    let dir = scratch();
    // five answers of 1 MB each, every one a program and chatter
    let chatter = "chatter ".repeat(128 * 1024);
    let script: String = (0..5)
        .map(|i| format!("{}\n", json!({"content": format!("```clojure\n(def x{i} {i})\n```\n{chatter}")})))
        .collect();
    let script_path = dir.join("script.jsonl");
    std::fs::write(&script_path, script).unwrap();
    let spec = format!("script:{}", script_path.display());
    let trace = dir.join("trace.jsonl");
    let trace_arg = trace.display().to_string();
    let o = ptc(
        &dir,
        &[
            "run",
            "--prompt",
            "talk",
            "--llm",
            &spec,
            "--max-turns",
            "5",
            "--max-history-bytes",
            "65536",
            "--trace",
            &trace_arg,
            "--max-trace-bytes",
            "1000000",
            "--max-trace-event-bytes",
            "400000",
            "--output",
            "json",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "max_turns_exceeded: {}", all(&o));
    let step: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(step["fail"]["reason"], "max_turns_exceeded");
    // the step's turns keep at most the history cap of answers (and a little JSON)
    assert!(o.stdout.len() < 200_000, "the step is {} bytes", o.stdout.len());

    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(text.len() <= 1_000_000 + 300, "the trace is {} bytes", text.len());
    for line in text.lines() {
        assert!(line.len() <= 400_000, "a trace line of {} bytes", line.len());
        let _: Value = serde_json::from_str(line).expect("every line is JSON");
    }
    assert!(text.contains("[trace cut:"), "long texts say they were cut");
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["event"], "trace_truncated", "{last}");
    // the requests re-sent at most the history cap: no request line carries 1 MB answers
    let requests: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "llm_request")
        .collect();
    assert!(!requests.is_empty());
    for request in &requests {
        assert!(request.to_string().len() < 100_000, "a request of {} bytes", request.to_string().len());
    }
}

#[test]
fn bad_recordings_are_refused_naming_file_and_entry() {
    let dir = scratch();
    let entry = |v: u32, index: u64| {
        json!({"v": v, "index": index, "llm": "m", "request": {"system": "", "messages": [], "turn": 1, "tools": [],
               "options": {"cache": false, "temperature": null, "max_output_tokens": null, "response_schema": null}},
               "response": {"content": "(return 1)"}})
    };
    let mut both = entry(1, 1);
    both["error"] = json!({"kind": "rate_limit", "message": "x"});
    for (line, expected) in [
        (entry(9, 1), "line 1 (entry #1): format version 9"),
        (entry(1, 4), "line 1 (entry #1): has index 4, expected 1"),
        (both, "line 1 (entry #1): has both a response and an error"),
    ] {
        let path = dir.join("bad.jsonl");
        std::fs::write(&path, format!("{line}\n")).unwrap();
        let spec = format!("replay:{}", path.display());
        let o = ptc(&dir, &["run", "--prompt", "hi", "--llm", &spec], &[]);
        assert_eq!(o.status.code(), Some(2), "{}", all(&o));
        let text = all(&o);
        assert!(text.contains(&format!("recording {}, {expected}", path.display())), "{text}");
    }
}
