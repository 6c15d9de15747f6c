//! What operators see of the calls models made: the `lisp_debug` tool (`--debug-tool`), a
//! bounded ring of call records, and per-call JSONL traces (`--trace-dir`).
//!
//! A record holds what a call was (tool, session, program as the payload policy allows,
//! sizes, status, reason, duration, upstream calls) and never the `context` data: context
//! is where users put their data, so only its size is kept. Every text goes through the
//! scrubber first (the upstream credentials and the HTTP tokens), so a secret a program or
//! an upstream echoed does not reach the ring, the tool or a trace file.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value as Json, json};

use crate::envelope::CallPayload;

/// How much of a program the ring and the traces keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PayloadPolicy {
    /// Sizes and SHA-256 digests only.
    None,
    /// Sizes, digests and the first 200 characters (default).
    #[default]
    Summary,
    /// The whole (scrubbed) program and result text.
    Full,
}

impl std::str::FromStr for PayloadPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(PayloadPolicy::None),
            "summary" => Ok(PayloadPolicy::Summary),
            "full" => Ok(PayloadPolicy::Full),
            other => Err(format!("unknown trace payload policy {other:?}; use none, summary or full")),
        }
    }
}

impl PayloadPolicy {
    fn name(self) -> &'static str {
        match self {
            PayloadPolicy::None => "none",
            PayloadPolicy::Summary => "summary",
            PayloadPolicy::Full => "full",
        }
    }
}

/// `--debug-tool`, `--trace-dir` and their limits.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DiagnosticsConfig {
    /// Serve `lisp_debug`.
    pub debug_tool: bool,
    /// Call records the ring keeps (10..=5000).
    pub ring_size: usize,
    /// Largest `lisp_debug` answer, bytes (at least 4096).
    pub max_response_bytes: usize,
    /// Write one JSONL file per call here.
    pub trace_dir: Option<PathBuf>,
    /// What records and traces keep of programs and results.
    pub trace_payloads: PayloadPolicy,
    /// Trace files kept; the oldest go first.
    pub trace_max_files: usize,
}

impl Default for DiagnosticsConfig {
    fn default() -> Self {
        DiagnosticsConfig {
            debug_tool: false,
            ring_size: 500,
            max_response_bytes: 65_536,
            trace_dir: None,
            trace_payloads: PayloadPolicy::Summary,
            trace_max_files: 1000,
        }
    }
}

/// A record larger than this is kept as its summary only.
const MAX_RECORD_BYTES: usize = 256 * 1024;
/// The ring's total size.
const MAX_RING_BYTES: usize = 8 * 1024 * 1024;

/// The prompt card of `lisp_debug`.
pub(crate) const DEBUG_CARD: &str = include_str!("../prompts/lisp_debug.md");

/// What the server knows of a call before it runs.
pub(crate) struct CallStart {
    pub tool: String,
    pub program: Option<String>,
    pub session_id: Option<String>,
    pub context_bytes: Option<usize>,
    pub started_ms: u64,
}

impl CallStart {
    /// Reads what a record needs from a call's arguments (the context only by size).
    pub(crate) fn new(tool: &str, args: Option<&Map<String, Json>>) -> CallStart {
        let get = |k: &str| args.and_then(|a| a.get(k));
        CallStart {
            tool: tool.to_string(),
            program: get("program").and_then(Json::as_str).map(str::to_string),
            session_id: get("session_id").and_then(Json::as_str).map(str::to_string),
            context_bytes: get("context").map(|c| match c {
                Json::String(s) => s.len(),
                other => other.to_string().len(),
            }),
            started_ms: now_ms(),
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

pub(crate) fn sha256(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

type Scrub = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// The records, oldest first, and their total size in bytes.
type Ring = (VecDeque<(u64, Arc<Json>)>, usize);

/// The ring, the trace writer and the `lisp_debug` tool.
pub(crate) struct Diagnostics {
    cfg: DiagnosticsConfig,
    ring: Mutex<Ring>,
    next: AtomicU64,
    scrub: Scrub,
    /// Serialises trace file rotation.
    trace_lock: Mutex<()>,
}

impl Diagnostics {
    pub(crate) fn new(cfg: DiagnosticsConfig, scrub: Scrub) -> Diagnostics {
        Diagnostics {
            cfg,
            ring: Mutex::new((VecDeque::new(), 0)),
            next: AtomicU64::new(1),
            scrub,
            trace_lock: Mutex::new(()),
        }
    }

    /// Whether anything records calls.
    pub(crate) fn active(&self) -> bool {
        self.cfg.debug_tool || self.cfg.trace_dir.is_some()
    }

    fn text_field(&self, text: &str) -> Json {
        let clean = (self.scrub)(text);
        let mut v = json!({"bytes": text.len(), "sha256": sha256(text)});
        match self.cfg.trace_payloads {
            PayloadPolicy::None => {}
            PayloadPolicy::Summary => {
                let head: String = clean.chars().take(200).collect();
                v["preview"] = json!(head);
            }
            PayloadPolicy::Full => v["text"] = json!(clean),
        }
        v
    }

    /// Records one finished call: in the ring (with `--debug-tool`) and as a trace file
    /// (with `--trace-dir`). Returns the request id.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn record(&self, start: CallStart, payload: &CallPayload, took: Duration) -> u64 {
        self.record_with(start, payload, took, None)
    }

    /// [`record`](Self::record) with a `lisp_task` call's planner previews
    /// (`--agentic-trace-prompts`), scrubbed like the rest.
    pub(crate) fn record_with(
        &self,
        start: CallStart,
        payload: &CallPayload,
        took: Duration,
        planner: Option<Json>,
    ) -> u64 {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let request_id = format!("req-{id}");
        let structured = payload.structured.as_ref();
        let mut rec = json!({
            "request_id": request_id,
            "tool": start.tool,
            "started_at_ms": start.started_ms,
            "duration_ms": (took.as_secs_f64() * 1e6).round() / 1e3,
            "status": if payload.is_error { "error" } else { "ok" },
            "reason": payload.reason,
        });
        if let Some(s) = &start.session_id {
            rec["session_id"] = json!(s);
        }
        if let Some(p) = &start.program {
            rec["program"] = self.text_field(p);
        }
        if let Some(n) = start.context_bytes {
            rec["context_bytes"] = json!(n);
        }
        rec["result"] = self.text_field(&payload.text);
        if let Some(calls) = structured.and_then(|s| s.get("upstream_calls")) {
            rec["upstream_calls"] = calls.clone();
        }
        if let Some(m) = structured.and_then(|s| s.get("ptc_metrics")) {
            rec["ptc_metrics"] = m.clone();
        }
        if let Some(p) = planner {
            rec["planner_prompts"] = p;
        }
        // one last pass over everything that came from programs and upstreams
        let text = (self.scrub)(&rec.to_string());
        let mut rec: Json = serde_json::from_str(&text).unwrap_or(rec);
        if text.len() > MAX_RECORD_BYTES {
            let keep = ["request_id", "tool", "started_at_ms", "duration_ms", "status", "reason", "session_id"];
            let mut small = Map::new();
            for k in keep {
                if let Some(v) = rec.get(k) {
                    small.insert(k.into(), v.clone());
                }
            }
            small.insert("summarized".into(), json!(true));
            small.insert("record_bytes".into(), json!(text.len()));
            rec = Json::Object(small);
        }
        if let Some(dir) = &self.cfg.trace_dir {
            self.write_trace(dir, id, &rec);
        }
        if self.cfg.debug_tool {
            let size = rec.to_string().len();
            let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
            ring.0.push_back((id, Arc::new(rec)));
            ring.1 += size;
            while ring.0.len() > self.cfg.ring_size || ring.1 > MAX_RING_BYTES {
                let Some((_, old)) = ring.0.pop_front() else { break };
                ring.1 = ring.1.saturating_sub(old.to_string().len());
            }
        }
        id
    }

    /// One JSONL file per call: a start event, the upstream calls, the end event.
    fn write_trace(&self, dir: &std::path::Path, id: u64, rec: &Json) {
        let started = rec["started_at_ms"].as_u64().unwrap_or(0);
        let mut lines = vec![json!({
            "event": "lisp.execute.start", "request_id": rec["request_id"], "tool": rec["tool"],
            "at_ms": started, "session_id": rec.get("session_id"), "program": rec.get("program"),
            "context_bytes": rec.get("context_bytes"), "payload_policy": self.cfg.trace_payloads.name(),
        })];
        if let Some(calls) = rec.get("upstream_calls").and_then(Json::as_array) {
            lines.extend(
                calls.iter().map(|c| json!({"event": "tool.call", "request_id": rec["request_id"], "call": c})),
            );
        }
        let end = if rec["status"] == "ok" { "lisp.execute.success" } else { "lisp.execute.fail" };
        lines.push(json!({
            "event": end, "request_id": rec["request_id"], "duration_ms": rec["duration_ms"],
            "status": rec["status"], "reason": rec["reason"], "result": rec.get("result"),
            "ptc_metrics": rec.get("ptc_metrics"),
        }));
        let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let name = format!("{started:015}-{id:08}.jsonl");
        let _guard = self.trace_lock.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = std::fs::write(dir.join(&name), body) {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot write a trace file");
            return;
        }
        // the oldest files go once there are more than the cap (names sort by time)
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut traces: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        if traces.len() > self.cfg.trace_max_files {
            traces.sort();
            let extra = traces.len() - self.cfg.trace_max_files;
            for old in traces.into_iter().take(extra) {
                let _ = std::fs::remove_file(old);
            }
        }
    }

    /// The `lisp_debug` tool: `stats`, `recent` or `get`.
    pub(crate) fn call(&self, args: Option<&Map<String, Json>>) -> Result<Json, String> {
        let empty = Map::new();
        let args = args.unwrap_or(&empty);
        if let Some(k) =
            args.keys().find(|k| !["op", "limit", "since_seconds", "errors_only", "request_id"].contains(&k.as_str()))
        {
            return Err(format!(
                "unknown argument `{k}`; lisp_debug takes op, limit, since_seconds, errors_only and request_id"
            ));
        }
        let op = args.get("op").and_then(Json::as_str).ok_or("missing argument `op`: stats, recent or get")?;
        let limit = match args.get("limit") {
            None => 20,
            Some(v) => match v.as_u64() {
                Some(n @ 1..=200) => n as usize,
                _ => return Err("argument `limit` must be an integer from 1 to 200".into()),
            },
        };
        let since = match args.get("since_seconds") {
            None => None,
            Some(v) => match v.as_u64() {
                Some(n @ 1..=86_400) => Some(now_ms().saturating_sub(n * 1000)),
                _ => return Err("argument `since_seconds` must be an integer from 1 to 86400".into()),
            },
        };
        let errors_only = match args.get("errors_only") {
            None => false,
            Some(Json::Bool(b)) => *b,
            Some(_) => return Err("argument `errors_only` must be a boolean".into()),
        };
        let records: Vec<Arc<Json>> = {
            let ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
            ring.0.iter().map(|(_, r)| r.clone()).collect()
        };
        let selected = |r: &&Arc<Json>| {
            since.is_none_or(|s| r["started_at_ms"].as_u64().unwrap_or(0) >= s)
                && (!errors_only || r["status"] == "error")
        };
        let answer = match op {
            "recent" => {
                let items: Vec<Json> =
                    records.iter().rev().filter(selected).take(limit).map(|r| (**r).clone()).collect();
                json!({"status": "ok", "op": "recent", "count": items.len(), "records": items})
            }
            "get" => {
                let id = match args.get("request_id") {
                    Some(Json::String(s)) if !s.is_empty() && s.len() <= 256 => s,
                    _ => {
                        return Err(
                            "op get needs `request_id` (a string of at most 256 characters, from recent)".into()
                        );
                    }
                };
                match records.iter().find(|r| r["request_id"] == *id) {
                    Some(r) => json!({"status": "ok", "op": "get", "record": **r}),
                    None => {
                        return Err(format!(
                            "no record {id} in the ring (it keeps the last {} calls)",
                            self.cfg.ring_size
                        ));
                    }
                }
            }
            "stats" => self.stats(records.iter().filter(selected).map(|r| r.as_ref())),
            other => return Err(format!("unknown op {other:?}; use stats, recent or get")),
        };
        Ok(self.fit(answer))
    }

    fn stats<'a>(&self, records: impl Iterator<Item = &'a Json>) -> Json {
        let mut by_tool: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
        let mut errors: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
        let mut by_reason: std::collections::BTreeMap<String, u64> = Default::default();
        let mut upstream: std::collections::BTreeMap<String, u64> = Default::default();
        for r in records {
            let tool = r["tool"].as_str().unwrap_or("?").to_string();
            by_tool.entry(tool.clone()).or_default().push(r["duration_ms"].as_f64().unwrap_or(0.0));
            let e = errors.entry(tool).or_default();
            if r["status"] == "error" {
                e.1 += 1;
                *by_reason.entry(r["reason"].as_str().unwrap_or("?").to_string()).or_default() += 1;
            } else {
                e.0 += 1;
            }
            for c in r.get("upstream_calls").and_then(Json::as_array).into_iter().flatten() {
                let key = if c["status"] == "ok" {
                    "ok".to_string()
                } else {
                    c["reason"].as_str().unwrap_or("error").to_string()
                };
                *upstream.entry(key).or_default() += 1;
            }
        }
        let tools: Map<String, Json> = by_tool
            .into_iter()
            .map(|(tool, mut d)| {
                d.sort_by(f64::total_cmp);
                let pick = |q: f64| d.get(((d.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0.0);
                let (ok, err) = errors.get(&tool).copied().unwrap_or_default();
                let total = ok + err;
                let stats = json!({
                    "calls": total, "ok": ok, "error": err,
                    "error_rate": if total == 0 { 0.0 } else { (err as f64 / total as f64 * 1000.0).round() / 1000.0 },
                    "duration_ms": {"p50": pick(0.5), "p95": pick(0.95), "max": d.last().copied().unwrap_or(0.0)},
                });
                (tool, stats)
            })
            .collect();
        let count = self.ring.lock().map(|r| r.0.len()).unwrap_or(0);
        json!({
            "status": "ok", "op": "stats", "tools": tools, "errors": {"by_reason": by_reason},
            "upstream": upstream, "payload_policy": self.cfg.trace_payloads.name(), "redaction_applied": true,
            "debug_source": "ring_buffer", "ring_size": self.cfg.ring_size, "ring_count": count,
            "trace_dir_enabled": self.cfg.trace_dir.is_some(),
        })
    }

    /// Cuts an answer to `max_response_bytes`: the oldest records of a list go first.
    fn fit(&self, mut answer: Json) -> Json {
        let max = self.cfg.max_response_bytes;
        if answer.to_string().len() <= max {
            return answer;
        }
        if let Some(items) = answer.get_mut("records").and_then(Json::as_array_mut) {
            while !items.is_empty() && json!(items).to_string().len() + 200 > max {
                items.pop();
            }
            let n = items.len();
            answer["count"] = json!(n);
            answer["truncated"] = json!(true);
            return answer;
        }
        json!({"status": "ok", "op": answer["op"], "truncated": true,
               "message": format!("the answer is over max_debug_response_bytes ({max}); ask with a smaller limit")})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(is_error: bool, text: &str) -> CallPayload {
        CallPayload { is_error, text: text.into(), structured: None, reason: is_error.then(|| "timeout".into()) }
    }

    fn diag(cfg: DiagnosticsConfig) -> Diagnostics {
        Diagnostics::new(cfg, Arc::new(|t: &str| t.replace("s3cret", "[REDACTED]")))
    }

    fn start(program: &str) -> CallStart {
        let args = json!({"program": program, "context": {"k": "customer data"}});
        CallStart::new("lisp_eval", args.as_object())
    }

    #[test]
    fn the_ring_keeps_the_last_calls_and_scrubs_secrets() {
        let d = diag(DiagnosticsConfig {
            debug_tool: true,
            ring_size: 10,
            trace_payloads: PayloadPolicy::Full,
            ..Default::default()
        });
        for i in 0..12 {
            d.record(
                start(&format!("(+ {i} 1) ;; s3cret")),
                &payload(i % 3 == 0, "user=> s3cret"),
                Duration::from_millis(i),
            );
        }
        let recent = d.call(json!({"op": "recent", "limit": 500}).as_object()).unwrap_err();
        assert!(recent.contains("1 to 200") || recent.contains("limit"), "{recent}");
        let recent = d.call(json!({"op": "recent", "limit": 200}).as_object()).unwrap();
        assert_eq!(recent["count"], 10);
        assert_eq!(recent["records"][0]["request_id"], "req-12");
        let text = recent.to_string();
        assert!(!text.contains("s3cret") && text.contains("[REDACTED]"), "{text}");
        assert!(!text.contains("customer data"), "context data is never kept");
        let errors = d.call(json!({"op": "recent", "errors_only": true}).as_object()).unwrap();
        assert!(errors["records"].as_array().unwrap().iter().all(|r| r["status"] == "error"));
        let got = d.call(json!({"op": "get", "request_id": "req-5"}).as_object()).unwrap();
        assert_eq!(got["record"]["program"]["text"], "(+ 4 1) ;; [REDACTED]");
        assert!(d.call(json!({"op": "get", "request_id": "req-1"}).as_object()).unwrap_err().contains("no record"));
        let stats = d.call(json!({"op": "stats"}).as_object()).unwrap();
        assert_eq!(stats["tools"]["lisp_eval"]["calls"], 10);
        assert_eq!(stats["errors"]["by_reason"]["timeout"], 3);
        assert!(d.call(json!({"op": "x"}).as_object()).is_err());
    }

    #[test]
    fn policies_and_the_response_cap() {
        let d = diag(DiagnosticsConfig {
            debug_tool: true,
            trace_payloads: PayloadPolicy::None,
            max_response_bytes: 4096,
            ..Default::default()
        });
        for _ in 0..40 {
            d.record(start(&"(inc 1)".repeat(30)), &payload(false, "user=> 2"), Duration::ZERO);
        }
        let r = d.call(json!({"op": "recent", "limit": 40}).as_object()).unwrap();
        assert!(r.to_string().len() <= 4096, "{}", r.to_string().len());
        assert_eq!(r["truncated"], true);
        let first = &r["records"][0]["program"];
        assert!(
            first.get("text").is_none() && first.get("preview").is_none() && first["sha256"].is_string(),
            "{first}"
        );
    }

    #[test]
    fn traces_are_one_file_per_call_and_capped() {
        let dir = tempfile::tempdir().unwrap();
        let d =
            diag(DiagnosticsConfig { trace_dir: Some(dir.path().into()), trace_max_files: 3, ..Default::default() });
        for i in 0..5 {
            d.record(start(&format!("(+ {i} 1)")), &payload(false, "user=> 1"), Duration::ZERO);
        }
        let mut files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        assert_eq!(files.len(), 3, "the oldest files went");
        let text = std::fs::read_to_string(&files[2]).unwrap();
        let events: Vec<Json> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(events[0]["event"], "lisp.execute.start");
        assert_eq!(events[0]["program"]["preview"], "(+ 4 1)");
        assert_eq!(events.last().unwrap()["event"], "lisp.execute.success");
    }
}
