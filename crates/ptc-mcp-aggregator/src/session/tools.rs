//! The session tools: argument checks, the evaluation transaction, and their payloads.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use ptc_lisp_eval::Engine;
use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value as Json, json};

use super::record::{self, Record};
use super::store::{Caps, Loaded, Lookup, Put, SessionMeta, SessionStore, StoreError};
use super::views::{calls_text, history_entries, history_text, memory_text, prints_text, usage};
use super::{CARDS, Owner, SessionConfig};
use crate::config::ResponseProfile;
use crate::envelope::{self, CallPayload};
use crate::reason::McpReason;
use crate::server::{PtcServer, card_body};

pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// `2026-11-26T01:02:03.004Z` for Unix ms.
pub(crate) fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // civil from days (Howard Hinnant's algorithm), for days since 1970-01-01
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z", rem / 3600, rem % 3600 / 60, rem % 60, ms % 1000)
}

pub(super) fn new_session_id() -> Result<String, String> {
    use base64::Engine as _;
    let mut bytes = [0u8; 18];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness for a session id: {e}"))?;
    Ok(format!("ptcs_{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)))
}

pub(super) type Args = Map<String, Json>;

/// A session tool's answer before it becomes a payload.
type Answer = Result<(Json, String), CallPayload>;

fn schema(v: Json) -> Arc<Map<String, Json>> {
    match v {
        Json::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

fn session_id_prop() -> Json {
    json!({"type": "string", "description": "The id lisp_session_start returned (ptcs_...)."})
}

impl PtcServer {
    /// The seven session tools, in `tools/list` order.
    pub(crate) fn session_tools(&self) -> Vec<Tool> {
        let limits = self.engine().limits().summary();
        CARDS
            .iter()
            .map(|(name, card)| {
                let description = card_body(card).replace("{{limits}}", &limits);
                let input = match *name {
                    "lisp_session_start" => json!({
                        "type": "object",
                        "properties": {
                            "title": {"type": "string", "description": "A label shown by lisp_session_list."},
                            "ttl_ms": {"type": "integer", "minimum": 1, "description": "Lifetime in ms (capped by the server's --session-ttl-ms)."},
                            "preludes": {"type": "array", "items": {"oneOf": [
                                {"type": "string"},
                                {"type": "object", "properties": {"id": {"type": "string"}, "version": {"type": "integer", "minimum": 1}, "checksum": {"type": "string"}}, "required": ["id", "version"], "additionalProperties": false}
                            ]}, "description": "Preludes to attach: an id, or {id, version, checksum}."}
                        },
                        "additionalProperties": false
                    }),
                    "lisp_session_list" => json!({"type": "object", "properties": {}, "additionalProperties": false}),
                    "lisp_session_list_preludes" => json!({
                        "type": "object", "properties": {"session_id": session_id_prop()},
                        "required": ["session_id"], "additionalProperties": false
                    }),
                    "lisp_session_eval" => json!({
                        "type": "object",
                        "properties": {
                            "session_id": session_id_prop(),
                            "program": {"type": "string", "description": "PTC-Lisp source code. Must be non-empty after trimming whitespace."},
                            "context": {"type": "object", "additionalProperties": true, "description": "Data for this eval only: each key becomes data/<key>."},
                            "output_schema": {"type": "object", "description": "Optional JSON Schema the result must match; on mismatch nothing is committed."}
                        },
                        "required": ["session_id", "program"],
                        "additionalProperties": false
                    }),
                    "lisp_session_inspect" => json!({
                        "type": "object",
                        "properties": {
                            "session_id": session_id_prop(),
                            "view": {"type": "string", "enum": VIEWS, "default": "overview"}
                        },
                        "required": ["session_id"],
                        "additionalProperties": false
                    }),
                    "lisp_session_forget" => json!({
                        "type": "object",
                        "properties": {
                            "session_id": session_id_prop(),
                            "bindings": {"type": "array", "items": {"type": "string"}, "description": "Binding names to remove."},
                            "clear": {"type": "array", "items": {"type": "string", "enum": CLEARABLE}}
                        },
                        "required": ["session_id"],
                        "additionalProperties": false
                    }),
                    _ => json!({
                        "type": "object",
                        "properties": {"session_id": session_id_prop(), "reason": {"type": "string"}},
                        "required": ["session_id"],
                        "additionalProperties": false
                    }),
                };
                let read_only = matches!(*name, "lisp_session_list" | "lisp_session_list_preludes" | "lisp_session_inspect");
                let ann = ToolAnnotations::new()
                    .read_only(read_only)
                    .destructive(matches!(*name, "lisp_session_forget" | "lisp_session_close"))
                    .idempotent(read_only)
                    .open_world(false);
                Tool::new(*name, description, schema(input)).with_annotations(ann)
            })
            .collect()
    }

    pub(super) fn session_config(&self) -> &SessionConfig {
        &self.config().sessions
    }

    /// Runs a store operation off the async threads (a shared store does network I/O).
    pub(super) async fn store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn SessionStore) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, CallPayload> {
        let store = self.session_store();
        let profile = self.config().response_profile;
        match tokio::task::spawn_blocking(move || f(store.as_ref())).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(StoreError::Full { limit, max })) => Err(envelope::error(
                McpReason::SessionLimitExceeded,
                &format!(
                    "{limit} reached ({max} live sessions); close one with lisp_session_close or wait for one to expire"
                ),
                None,
                &[],
                profile,
            )),
            Ok(Err(StoreError::Invalid(m))) => {
                Err(envelope::error(McpReason::SessionRecordInvalid, &m, None, &[], profile))
            }
            Ok(Err(e)) => Err(envelope::error(McpReason::SessionStoreUnavailable, &e.to_string(), None, &[], profile)),
            Err(_) => Err(envelope::error(
                McpReason::SessionStoreUnavailable,
                "the session store task failed; retry the call",
                None,
                &[],
                profile,
            )),
        }
    }

    pub(super) fn session_error(&self, reason: McpReason, message: &str) -> CallPayload {
        envelope::error(reason, message, None, &[], self.config().response_profile)
    }

    /// One session tool call.
    pub(crate) async fn call_session_tool(
        &self,
        name: &str,
        owner: Owner,
        args: Option<Args>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> CallPayload {
        if self.is_shutting_down() {
            return self.session_error(McpReason::ShuttingDown, "the server is shutting down");
        }
        let args = args.unwrap_or_default();
        let answer = match name {
            "lisp_session_start" => self.session_start(owner, args).await,
            "lisp_session_list" => self.session_list(owner, args).await,
            "lisp_session_list_preludes" => self.session_list_preludes(owner, args).await,
            "lisp_session_eval" => return self.session_eval(owner, args, cancel).await,
            "lisp_session_inspect" => self.session_inspect(owner, args).await,
            "lisp_session_forget" => self.session_forget(owner, args).await,
            _ => self.session_close(owner, args).await,
        };
        match answer {
            Ok((full, text)) => self.session_ok(full, text),
            Err(p) => p,
        }
    }

    /// A successful non-eval answer: the text (slim), plus the payload as structured
    /// content (structured, debug).
    fn session_ok(&self, full: Json, text: String) -> CallPayload {
        match self.config().response_profile {
            ResponseProfile::Slim => CallPayload { is_error: false, text, structured: None, reason: None },
            ResponseProfile::Structured => CallPayload { is_error: false, text, structured: Some(full), reason: None },
            _ => CallPayload { is_error: false, text: full.to_string(), structured: Some(full), reason: None },
        }
    }

    pub(super) fn check_keys(&self, tool: &str, args: &Args, allowed: &[&str]) -> Result<(), CallPayload> {
        if let Some(k) = args.keys().find(|k| !allowed.contains(&k.as_str())) {
            let takes = if allowed.is_empty() { "no arguments".to_string() } else { allowed.join(", ") };
            return Err(self
                .session_error(McpReason::SessionArgsError, &format!("unknown argument `{k}`; {tool} takes {takes}")));
        }
        Ok(())
    }

    pub(super) fn session_id_arg(&self, args: &Args) -> Result<String, CallPayload> {
        match args.get("session_id") {
            Some(Json::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(Json::String(_)) | None => Err(self.session_error(
                McpReason::SessionArgsError,
                "missing argument `session_id`: pass the id lisp_session_start returned",
            )),
            Some(_) => Err(self.session_error(McpReason::SessionArgsError, "argument `session_id` must be a string")),
        }
    }

    /// The live session `id` of `owner`, decoded.
    async fn owned(&self, id: &str, owner: &Owner) -> Result<(Loaded, Record), CallPayload> {
        let key = id.to_string();
        let now = now_ms();
        let found = self.store(move |s| s.get(&key, now)).await?;
        let loaded = self.live(id, owner, found)?;
        let record = self.decode(id, &loaded)?;
        Ok((loaded, record))
    }

    pub(super) fn live(&self, id: &str, owner: &Owner, found: Lookup) -> Result<Loaded, CallPayload> {
        let mismatch = || {
            self.session_error(
                McpReason::SessionOwnerMismatch,
                &format!("session {id} belongs to another client; start your own with lisp_session_start"),
            )
        };
        match found {
            Lookup::Found(l) if l.meta.owner == owner.0 => Ok(l),
            Lookup::Found(_) => Err(mismatch()),
            Lookup::Closed { owner: o, reason } if o == owner.0 => Err(self.session_error(
                McpReason::SessionClosed,
                &format!("session {id} has ended ({reason}); start a new one with lisp_session_start"),
            )),
            Lookup::Closed { .. } => Err(mismatch()),
            Lookup::Missing => Err(self.session_error(
                McpReason::SessionNotFound,
                &format!("no session {id}; start one with lisp_session_start (lisp_session_list shows yours)"),
            )),
        }
    }

    pub(super) fn decode(&self, id: &str, loaded: &Loaded) -> Result<Record, CallPayload> {
        Record::from_bytes(&loaded.bytes).map_err(|e| {
            tracing::warn!(session = %super::store::short(id), error = %e, "unreadable session record");
            self.session_error(
                McpReason::SessionRecordInvalid,
                &format!("session {id}: {e}; it was left as it is; close it and start a new one"),
            )
        })
    }

    fn summary(&self, loaded: &Loaded, record: &Record) -> Json {
        json!({
            "session_id": record.id,
            "title": record.title,
            "turn": record.turn,
            "created_at": iso8601(record.created_at_ms),
            "updated_at": iso8601(record.updated_at_ms),
            "expires_at": iso8601(loaded.meta.expires_at_ms),
            "idle_deadline": iso8601(loaded.meta.last_used_ms.saturating_add(loaded.meta.idle_timeout_ms)),
            "eval_status": if loaded.busy { "running" } else { "idle" },
            "memory_bytes": record.memory_bytes(),
            "binding_count": record.bindings.len(),
        })
    }

    async fn session_start(&self, owner: Owner, args: Args) -> Answer {
        self.check_keys("lisp_session_start", &args, &["title", "ttl_ms", "preludes"])?;
        let cfg = self.session_config().clone();
        let title = match args.get("title") {
            None | Some(Json::Null) => None,
            Some(Json::String(t)) if t.chars().count() <= 200 => Some(t.clone()),
            Some(Json::String(_)) => {
                return Err(self.session_error(McpReason::SessionArgsError, "argument `title` is over 200 characters"));
            }
            Some(_) => return Err(self.session_error(McpReason::SessionArgsError, "argument `title` must be a string")),
        };
        let max_ttl = cfg.ttl.as_millis() as u64;
        let ttl = match args.get("ttl_ms") {
            None | Some(Json::Null) => max_ttl,
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 => n.min(max_ttl),
                _ => {
                    return Err(self.session_error(
                        McpReason::SessionArgsError,
                        "argument `ttl_ms` must be an integer of at least 1 (milliseconds)",
                    ));
                }
            },
        };
        let chosen = self
            .preludes()
            .select(args.get("preludes"))
            .map_err(|m| self.session_error(McpReason::SessionArgsError, &m))?;
        let preludes: Vec<Json> = chosen.iter().map(|p| p.reference()).collect();
        let id = new_session_id().map_err(|m| self.session_error(McpReason::SessionStoreUnavailable, &m))?;
        let now = now_ms();
        let mut record = Record::new(id.clone(), title, now);
        record.preludes = preludes;
        let meta = SessionMeta {
            id: id.clone(),
            owner: owner.0.clone(),
            expires_at_ms: now.saturating_add(ttl),
            idle_timeout_ms: cfg.idle_timeout.as_millis() as u64,
            last_used_ms: now,
        };
        let expires_at = iso8601(meta.expires_at_ms);
        let caps = Caps { max_sessions: cfg.max_sessions, max_per_owner: cfg.max_sessions_per_owner };
        let bytes = record.to_bytes();
        self.store(move |s| s.create(meta, bytes, caps, now)).await?;
        tracing::info!(session = %super::store::short(&id), owner = %owner.0, "session started");
        let mut limits = cfg.to_json();
        limits["ttl_ms"] = json!(ttl);
        let mut full = json!({"status": "ok", "session_id": id, "expires_at": expires_at, "limits": limits});
        let mut text = format!(
            "Started session {id} (expires {expires_at}, ends after {} s idle). Pass session_id to lisp_session_eval.",
            cfg.idle_timeout.as_secs()
        );
        if !record.preludes.is_empty() {
            full["prelude_refs"] = json!(record.preludes);
            full["preludes"] = Json::Array(chosen.iter().map(|p| p.summary()).collect());
            for p in &chosen {
                let public: Vec<&str> = p.exports.iter().filter(|e| !e.private).map(|e| e.name.as_str()).collect();
                text.push_str(&format!("\nPrelude {}: {} — (dir {}) lists them.", p.id, public.join(", "), p.id));
            }
        }
        Ok((full, text))
    }

    async fn session_list(&self, owner: Owner, args: Args) -> Answer {
        self.check_keys("lisp_session_list", &args, &[])?;
        let now = now_ms();
        let who = owner.0.clone();
        let live = self.store(move |s| s.list(&who, now)).await?;
        let mut sessions: Vec<(u64, Json)> = live
            .iter()
            .filter_map(|l| Record::from_bytes(&l.bytes).ok().map(|r| (r.updated_at_ms, self.summary(l, &r))))
            .collect();
        sessions.sort_by_key(|s| std::cmp::Reverse(s.0));
        let sessions: Vec<Json> = sessions.into_iter().map(|(_, s)| s).collect();
        let text = if sessions.is_empty() {
            "No live sessions. Start one with lisp_session_start.".to_string()
        } else {
            let lines: Vec<String> = sessions
                .iter()
                .map(|s| {
                    format!(
                        "{} turn {} bindings {} ({} bytes){}",
                        s["session_id"].as_str().unwrap_or(""),
                        s["turn"],
                        s["binding_count"],
                        s["memory_bytes"],
                        s["title"].as_str().map(|t| format!(" \"{t}\"")).unwrap_or_default()
                    )
                })
                .collect();
            format!("{} live session(s):\n{}", sessions.len(), lines.join("\n"))
        };
        Ok((json!({"status": "ok", "count": sessions.len(), "sessions": sessions}), text))
    }

    async fn session_list_preludes(&self, owner: Owner, args: Args) -> Answer {
        self.check_keys("lisp_session_list_preludes", &args, &["session_id"])?;
        let id = self.session_id_arg(&args)?;
        let (_, record) = self.owned(&id, &owner).await?;
        let text = if record.preludes.is_empty() {
            format!("Session {id} has no preludes.")
        } else {
            format!("Session {id} preludes: {}", Json::Array(record.preludes.clone()))
        };
        Ok((json!({"status": "ok", "session_id": id, "prelude_refs": record.preludes}), text))
    }

    /// Writes `record` (and a fresh idle deadline) if nobody wrote since `loaded`.
    async fn write_back(&self, loaded: &Loaded, record: &Record) -> Result<Put, CallPayload> {
        let mut meta = loaded.meta.clone();
        let now = now_ms();
        meta.last_used_ms = now;
        let (id, version, bytes) = (meta.id.clone(), loaded.version, record.to_bytes());
        self.store(move |s| s.put(&id, version, None, meta, bytes, now)).await
    }

    async fn session_inspect(&self, owner: Owner, args: Args) -> Answer {
        self.check_keys("lisp_session_inspect", &args, &["session_id", "view"])?;
        let id = self.session_id_arg(&args)?;
        let view = match args.get("view") {
            None | Some(Json::Null) => "overview",
            Some(Json::String(v)) if VIEWS.contains(&v.as_str()) => v.as_str(),
            Some(_) => {
                return Err(self.session_error(
                    McpReason::SessionArgsError,
                    &format!("argument `view` must be one of {}", VIEWS.join(", ")),
                ));
            }
        };
        let (loaded, record) = self.owned(&id, &owner).await?;
        // using a session keeps it alive; while an eval runs the eval's commit does that
        let _ = self.write_back(&loaded, &record).await;
        let cfg = self.session_config();
        let mut full =
            json!({"status": "ok", "session_id": id, "view": view, "session": self.summary(&loaded, &record)});
        let usage = usage(&record);
        let text = match view {
            "memory" => {
                full["stored_keys"] = json!(record.stored_keys());
                full["usage"] = usage;
                memory_text(&record)
            }
            "prints" => {
                full["prints"] = json!(record.prints);
                prints_text(&record)
            }
            "tool_calls" => {
                full["tool_calls"] = json!(record.tool_calls);
                full["upstream_calls"] = json!(record.upstream_calls);
                calls_text(&record)
            }
            "history" => {
                let entries = history_entries(&record);
                full["history"] = json!(entries);
                history_text(&entries)
            }
            "limits" => {
                let mut top: Vec<&record::Binding> = record.bindings.iter().collect();
                top.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(&b.name)));
                let top: Vec<Json> = top.iter().take(10).map(|b| json!({"name": b.name, "bytes": b.bytes})).collect();
                full["limits"] = cfg.to_json();
                full["usage"] = usage.clone();
                full["top_bindings"] = json!(top);
                format!("limits: {}\nusage: {usage}\nlargest bindings: {}", cfg.to_json(), Json::Array(top))
            }
            _ => {
                full["usage"] = usage;
                let entries = history_entries(&record);
                [memory_text(&record), prints_text(&record), calls_text(&record), history_text(&entries)].join("\n\n")
            }
        };
        full["text"] = json!(text);
        Ok((full, text))
    }

    async fn session_forget(&self, owner: Owner, args: Args) -> Answer {
        self.check_keys("lisp_session_forget", &args, &["session_id", "bindings", "clear"])?;
        let id = self.session_id_arg(&args)?;
        let names = string_list(args.get("bindings")).ok_or_else(|| {
            self.session_error(McpReason::SessionArgsError, "argument `bindings` must be an array of names")
        })?;
        let clear = string_list(args.get("clear")).ok_or_else(|| {
            self.session_error(McpReason::SessionArgsError, "argument `clear` must be an array of section names")
        })?;
        if let Some(bad) = clear.iter().find(|c| !CLEARABLE.contains(&c.as_str())) {
            return Err(self.session_error(
                McpReason::SessionArgsError,
                &format!("cannot clear `{bad}`; `clear` takes {}", CLEARABLE.join(", ")),
            ));
        }
        let (loaded, mut record) = self.owned(&id, &owner).await?;
        if loaded.busy {
            return Err(self.session_error(McpReason::SessionBusy, &busy_message(&id)));
        }
        let mut removed = Vec::new();
        record.bindings.retain(|b| {
            let gone = names.contains(&b.name) || clear.iter().any(|c| c == "memory");
            if gone {
                removed.push(b.name.clone());
            }
            !gone
        });
        for c in &clear {
            match c.as_str() {
                "history" => record.history.clear(),
                "prints" => record.prints.clear(),
                "tool_calls" => record.tool_calls.clear(),
                "upstream_calls" => record.upstream_calls.clear(),
                _ => {}
            }
        }
        // a kept function that names a removed binding could no longer be rebuilt
        if !removed.is_empty()
            && let Err(e) = record
                .restore(&self.session_engine(), self.preludes().globals_for(&record.preludes).unwrap_or_default())
        {
            return Err(self.session_error(
                McpReason::SessionArgsError,
                &format!(
                    "forgetting {} would leave the session unusable ({}); forget the functions that use them too",
                    removed.join(", "),
                    e.0
                ),
            ));
        }
        record.updated_at_ms = now_ms();
        match self.write_back(&loaded, &record).await? {
            Put::Stored(_) => {}
            Put::Conflict => return Err(self.session_error(McpReason::SessionBusy, &busy_message(&id))),
            Put::Gone => {
                return Err(self.session_error(McpReason::SessionClosed, &format!("session {id} ended meanwhile")));
            }
        }
        let text = format!(
            "Removed {} binding(s){}{}. Stored: {}",
            removed.len(),
            if removed.is_empty() { String::new() } else { format!(" ({})", removed.join(", ")) },
            if clear.is_empty() { String::new() } else { format!("; cleared {}", clear.join(", ")) },
            record.stored_keys().join(", ")
        );
        let full = json!({
            "status": "ok", "session_id": id, "removed_bindings": removed, "cleared": clear,
            "stored_keys": record.stored_keys(), "usage": usage(&record)
        });
        Ok((full, text))
    }

    async fn session_close(&self, owner: Owner, args: Args) -> Answer {
        self.check_keys("lisp_session_close", &args, &["session_id", "reason"])?;
        let id = self.session_id_arg(&args)?;
        let reason = match args.get("reason") {
            None | Some(Json::Null) => "closed".to_string(),
            Some(Json::String(r)) if !r.trim().is_empty() => r.chars().take(200).collect(),
            Some(_) => {
                return Err(self.session_error(McpReason::SessionArgsError, "argument `reason` must be a string"));
            }
        };
        // the owner's check only: a session whose record cannot be read can still be closed
        let (key, now) = (id.clone(), now_ms());
        let found = self.store(move |s| s.get(&key, now)).await?;
        self.live(&id, &owner, found)?;
        let (key, why, now) = (id.clone(), reason.clone(), now_ms());
        if !self.store(move |s| s.close(&key, &why, now)).await? {
            return Err(self.session_error(McpReason::SessionClosed, &format!("session {id} had already ended")));
        }
        tracing::info!(session = %super::store::short(&id), %reason, "session closed");
        Ok((
            json!({"status": "ok", "session_id": id, "closed": true, "reason": reason}),
            format!("Closed session {id}."),
        ))
    }

    /// The engine session programs (and rebuilt definitions) run on.
    fn session_engine(&self) -> Engine {
        Engine::new(self.engine().limits().clone())
    }
}

const VIEWS: [&str; 6] = ["overview", "memory", "prints", "tool_calls", "history", "limits"];
const CLEARABLE: [&str; 5] = ["memory", "history", "prints", "tool_calls", "upstream_calls"];

pub(super) fn busy_message(id: &str) -> String {
    format!(
        "session {id} is running another eval; wait for it to return, then retry (evals of one session do not queue)"
    )
}

fn string_list(v: Option<&Json>) -> Option<Vec<String>> {
    match v {
        None | Some(Json::Null) => Some(Vec::new()),
        Some(Json::Array(items)) => items.iter().map(|i| i.as_str().map(str::to_string)).collect(),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::McpConfig;
    use crate::server::NoUpstreams;
    use crate::session::InProcessStore;

    fn server(store: Arc<dyn SessionStore>) -> PtcServer {
        let mut config = McpConfig::default();
        config.sessions.enabled = true;
        PtcServer::new(config, Arc::new(NoUpstreams)).with_session_store(store)
    }

    fn call(server: &PtcServer, tool: &str, args: Json) -> CallPayload {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let cancel = tokio_util::sync::CancellationToken::new();
        rt.block_on(server.call_session_tool(tool, Owner::stdio(), args.as_object().cloned(), cancel))
    }

    /// Overwrites a session's stored bytes, as a broken or foreign writer would.
    fn overwrite(store: &InProcessStore, id: &str, bytes: &[u8]) {
        let Lookup::Found(l) = store.get(id, now_ms()).unwrap() else { panic!("{id} is live") };
        let put = store.put(id, l.version, None, l.meta, bytes.to_vec(), now_ms()).unwrap();
        assert!(matches!(put, Put::Stored(_)));
    }

    #[test]
    fn unreadable_records_are_reported_and_left_alone() {
        let store = Arc::new(InProcessStore::new());
        let s = server(store.clone());
        let started = call(&s, "lisp_session_start", json!({}));
        let id = started.text.split_whitespace().nth(2).unwrap().to_string();
        assert!(id.starts_with("ptcs_"), "{}", started.text);
        for (bytes, needle) in [
            (&b"\x00garbage"[..], "not a ptc session record"),
            (&br#"{"format":2,"id":"x"}"#[..], "format 2"),
            (&br#"{"format":1,"bindings":7}"#[..], "damaged"),
        ] {
            overwrite(&store, &id, bytes);
            let r = call(&s, "lisp_session_eval", json!({"session_id": id, "program": "(def x 1)"}));
            assert_eq!(r.reason.as_deref(), Some("session_record_invalid"), "{}", r.text);
            assert!(r.text.contains(needle), "{}", r.text);
            let Lookup::Found(l) = store.get(&id, now_ms()).unwrap() else { panic!() };
            assert_eq!(l.bytes.as_slice(), bytes, "the record was not touched");
            assert!(!l.busy, "the lease was given back");
        }
        // closing it still works
        let closed = call(&s, "lisp_session_close", json!({"session_id": id}));
        assert!(!closed.is_error, "{}", closed.text);
    }

    /// A store that cannot be reached.
    struct Down;

    impl SessionStore for Down {
        fn create(&self, _: SessionMeta, _: Vec<u8>, _: Caps, _: u64) -> Result<(), StoreError> {
            Err(StoreError::Unavailable("connection refused".into()))
        }
        fn get(&self, _: &str, _: u64) -> Result<Lookup, StoreError> {
            Err(StoreError::Unavailable("connection refused".into()))
        }
        fn list(&self, _: &str, _: u64) -> Result<Vec<Loaded>, StoreError> {
            Err(StoreError::Unavailable("connection refused".into()))
        }
        fn try_lease(&self, _: &str, _: &str, _: u64, _: u64) -> Result<super::super::store::Lease, StoreError> {
            Err(StoreError::Unavailable("connection refused".into()))
        }
        fn release(&self, _: &str, _: &str) -> Result<(), StoreError> {
            Err(StoreError::Unavailable("connection refused".into()))
        }
        fn renew(&self, _: &str, _: &str, _: u64, _: u64) -> Result<bool, StoreError> {
            Err(StoreError::Unavailable("connection refused".into()))
        }
        fn put(&self, _: &str, _: u64, _: Option<&str>, _: SessionMeta, _: Vec<u8>, _: u64) -> Result<Put, StoreError> {
            Err(StoreError::Unavailable("connection refused".into()))
        }
        fn close(&self, _: &str, _: &str, _: u64) -> Result<bool, StoreError> {
            Err(StoreError::Unavailable("connection refused".into()))
        }
        fn backend(&self) -> &'static str {
            "down"
        }
    }

    #[test]
    fn an_unreachable_store_is_a_clear_error() {
        let s = server(Arc::new(Down));
        for (tool, args) in [
            ("lisp_session_start", json!({})),
            ("lisp_session_list", json!({})),
            ("lisp_session_eval", json!({"session_id": "ptcs_x", "program": "1"})),
            ("lisp_session_inspect", json!({"session_id": "ptcs_x"})),
        ] {
            let r = call(&s, tool, args);
            assert_eq!(r.reason.as_deref(), Some("session_store_unavailable"), "{tool}: {}", r.text);
            assert!(r.text.contains("connection refused"), "{}", r.text);
        }
    }

    #[test]
    fn timestamps_are_iso8601() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_795_000_000_000), "2026-11-18T11:06:40.000Z");
    }

    #[test]
    fn session_ids_are_random_and_url_safe() {
        let a = new_session_id().unwrap();
        let b = new_session_id().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 5 + 24);
        assert!(a[5..].chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
    }
}
