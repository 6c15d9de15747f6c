//! The session eval transaction: rebuild the definitions, run the program, validate,
//! build the candidate record and check every limit, on a blocking thread; then commit
//! with compare-and-set under the lease, or commit nothing.

use std::sync::Arc;

use ptc_lisp_eval::{Cancel, Engine, ErrorKind, Limits, RunInput, Value};
use serde_json::{Value as Json, json};

use super::record::{self, Record};
use super::store::{Lease, Loaded, Lookup, Put};
use super::tools::{Args, busy_message, new_session_id, now_ms};
use super::views::eval_payload;
use super::{Owner, SessionConfig, codec};
use crate::config::ResponseProfile;
use crate::envelope::{self, CallPayload};
use crate::reason::McpReason;
use crate::server::{NoSlot, PtcServer};

impl PtcServer {
    pub(super) async fn session_eval(
        &self,
        owner: Owner,
        args: Args,
        cancel: tokio_util::sync::CancellationToken,
    ) -> CallPayload {
        if let Err(p) =
            self.check_keys("lisp_session_eval", &args, &["session_id", "program", "context", "output_schema"])
        {
            return p;
        }
        let id = match self.session_id_arg(&args) {
            Ok(id) => id,
            Err(p) => return p,
        };
        let mut rest = args;
        rest.remove("session_id");
        let parsed = match self.check_args(Some(rest)) {
            Ok(p) => p,
            Err(msg) => return self.session_error(McpReason::SessionArgsError, &msg),
        };
        // only the owner may take the lease (a stranger's eval must not make the owner's busy)
        let (key, now) = (id.clone(), now_ms());
        match self.store(move |s| s.get(&key, now)).await {
            Ok(found) => {
                if let Err(p) = self.live(&id, &owner, found) {
                    return p;
                }
            }
            Err(p) => return p,
        }
        // then the lease: a second eval of this session is told at once, without queueing
        let holder = match new_session_id() {
            Ok(h) => h,
            Err(m) => return self.session_error(McpReason::SessionStoreUnavailable, &m),
        };
        // a short lease, renewed while the program runs: an instance that dies mid-eval
        // holds its sessions for at most one lease
        let lease_ms = (self.session_config().lease.as_millis() as u64).max(1);
        let (key, h, now) = (id.clone(), holder.clone(), now_ms());
        let leased = match self.store(move |s| s.try_lease(&key, &h, lease_ms, now)).await {
            Ok(l) => l,
            Err(p) => return p,
        };
        let loaded = match leased {
            Lease::Granted(l) if l.meta.owner == owner.0 => l,
            Lease::Granted(l) => {
                self.release_lease(&id, &holder).await;
                return match self.live(&id, &owner, Lookup::Found(l)) {
                    Err(p) => p,
                    Ok(_) => self.session_error(McpReason::SessionOwnerMismatch, "session owner changed"),
                };
            }
            Lease::Busy => {
                // say owner_mismatch rather than busy to a stranger
                let key = id.clone();
                let now = now_ms();
                if let Ok(found) = self.store(move |s| s.get(&key, now)).await
                    && let Err(p) = self.live(&id, &owner, found)
                {
                    return p;
                }
                return self.session_error(McpReason::SessionBusy, &busy_message(&id));
            }
            Lease::NotLive(found) => {
                return match self.live(&id, &owner, found) {
                    Err(p) => p,
                    Ok(_) => self.session_error(McpReason::SessionNotFound, &format!("no session {id}")),
                };
            }
        };
        let heartbeat = self.renew_while_running(&id, &holder, lease_ms);
        let payload = self.eval_leased(&id, &holder, loaded, parsed, cancel).await;
        heartbeat.abort();
        self.release_lease(&id, &holder).await;
        payload
    }

    /// Renews the lease every third of its length until aborted. A renewal the store
    /// refuses (the lease expired meanwhile) stops it: the commit will then find the lease
    /// gone and commit nothing; a store that does not answer is tried again.
    fn renew_while_running(&self, id: &str, holder: &str, lease_ms: u64) -> tokio::task::JoinHandle<()> {
        let store = self.session_store();
        let (id, holder) = (id.to_string(), holder.to_string());
        let every = std::time::Duration::from_millis((lease_ms / 3).max(1));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let (store, key, h) = (store.clone(), id.clone(), holder.clone());
                let renewed = tokio::task::spawn_blocking(move || store.renew(&key, &h, lease_ms, now_ms())).await;
                match renewed {
                    Ok(Ok(true)) => {}
                    Ok(Ok(false)) => {
                        tracing::warn!(session = %super::store::short(&id), "the evaluation lease expired before it could be renewed; this eval will commit nothing");
                        return;
                    }
                    Ok(Err(e)) => {
                        tracing::warn!(session = %super::store::short(&id), error = %e, "could not renew the evaluation lease; retrying")
                    }
                    Err(_) => return,
                }
            }
        })
    }

    async fn release_lease(&self, id: &str, holder: &str) {
        let (key, h) = (id.to_string(), holder.to_string());
        if let Err(p) = self.store(move |s| s.release(&key, &h)).await {
            tracing::warn!(session = %super::store::short(id), reason = ?p.reason, "could not release a session lease");
        }
    }

    async fn eval_leased(
        &self,
        id: &str,
        holder: &str,
        loaded: Loaded,
        parsed: crate::server::ParsedArgs,
        cancel: tokio_util::sync::CancellationToken,
    ) -> CallPayload {
        let profile = self.config().response_profile;
        let previous = match self.decode(id, &loaded) {
            Ok(r) => r,
            Err(p) => return p,
        };
        // the session's own preludes: their definitions, and discovery of them only
        let preludes = match self.preludes().subset(&previous.preludes) {
            Ok(p) => Arc::new(p),
            Err(e) => return self.session_error(McpReason::PreludeUnavailable, &e.0),
        };
        let permit = match self.acquire_slot(&cancel).await {
            Ok(p) => p,
            Err(NoSlot::Busy(msg)) => return envelope::error(McpReason::Busy, &msg, None, &[], profile),
            Err(NoSlot::Cancelled) => {
                return envelope::error(
                    McpReason::Eval(ErrorKind::Cancelled),
                    "the call was cancelled while it waited for a slot",
                    None,
                    &[],
                    profile,
                );
            }
        };
        let run_cancel = Cancel::new();
        let watcher = {
            let run_cancel = run_cancel.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move {
                cancel.cancelled().await;
                run_cancel.cancel();
            })
        };
        let limits = self.engine().limits().clone();
        let cfg = self.session_config().clone();
        let base = preludes.globals();
        let host = self.host_with(preludes);
        let crate::server::ParsedArgs { program, context, output_type } = parsed;
        let prev = previous.clone();
        let joined = tokio::task::spawn_blocking(move || {
            run_in_session(
                &prev,
                base,
                &program,
                context.as_deref(),
                output_type.as_ref(),
                &limits,
                host.as_ref(),
                &run_cancel,
                &cfg,
            )
        })
        .await;
        watcher.abort();
        drop(permit);
        self.notify_if_idle();
        let step = match joined {
            Ok(step) => step,
            Err(_) => {
                return envelope::error(
                    McpReason::Eval(ErrorKind::RuntimeError),
                    "internal error: the evaluation task failed",
                    None,
                    &[],
                    profile,
                );
            }
        };
        let (outcome, candidate, changed, notices, validated) = match step {
            Step::Refused(p) => return self.session_error(p.0, &p.1),
            Step::Failed(outcome) => {
                let mut payload = envelope::from_outcome(&outcome, profile, self.config().preview, None);
                if let Some(Json::Object(s)) = payload.structured.as_mut() {
                    s.insert("session".into(), json!({"session_id": id, "turn": previous.turn, "committed": false}));
                }
                self.backend().finish(&outcome, &mut payload, profile == ResponseProfile::Debug);
                return payload;
            }
            Step::Done { outcome, candidate, changed, notices, validated } => {
                (outcome, candidate, changed, notices, validated)
            }
        };
        let mut meta = loaded.meta.clone();
        let now = now_ms();
        meta.last_used_ms = now;
        let (key, h, version, bytes) = (id.to_string(), holder.to_string(), loaded.version, candidate.to_bytes());
        match self.store(move |s| s.put(&key, version, Some(&h), meta, bytes, now)).await {
            Ok(Put::Stored(_)) => {}
            Ok(Put::Conflict) => return self.session_error(McpReason::SessionBusy, &busy_message(id)),
            Ok(Put::Gone) => {
                return self.session_error(
                    McpReason::SessionClosed,
                    &format!("session {id} ended while the program ran; nothing was committed"),
                );
            }
            Err(p) => return p,
        }
        let mut payload = eval_payload(
            id,
            &outcome,
            &candidate,
            &changed,
            &notices,
            validated,
            &self.session_config().clone(),
            profile,
        );
        self.backend().finish(&outcome, &mut payload, profile == ResponseProfile::Debug);
        payload
    }
}

/// What an evaluation came to, before the commit.
enum Step {
    /// Refused before or after running: (reason, message); nothing is committed.
    Refused((McpReason, String)),
    /// The program failed; nothing is committed.
    Failed(Box<ptc_lisp_eval::Outcome>),
    /// Ran and fits: the record to commit.
    Done {
        outcome: Box<ptc_lisp_eval::Outcome>,
        candidate: Box<Record>,
        changed: Vec<String>,
        notices: Vec<String>,
        validated: Option<Json>,
    },
}

fn refused(reason: McpReason, message: impl Into<String>) -> Step {
    Step::Refused((reason, message.into()))
}

/// Restores, runs, validates and builds the candidate record (on a blocking thread).
#[allow(clippy::too_many_arguments)]
fn run_in_session(
    previous: &Record,
    base: ptc_lisp_eval::Memory,
    program: &str,
    context: Option<&str>,
    output_type: Option<&ptc_signature::Type>,
    limits: &Limits,
    host: &dyn ptc_lisp_eval::Host,
    cancel: &Cancel,
    cfg: &SessionConfig,
) -> Step {
    let engine = Engine::new(limits.clone());
    let (memory, history) = match previous.restore(&engine, base) {
        Ok(r) => r,
        Err(e) => return refused(McpReason::SessionRecordInvalid, format!("session {}: {}", previous.id, e.0)),
    };
    let (context, used) = match context {
        None => (ptc_lisp_eval::value::PMap::new(), 0),
        Some(text) => match ptc_lisp_eval::json::parse_context_charged(
            text,
            limits.max_heap_bytes,
            "max_heap_bytes, which the context shares with the program",
        ) {
            Ok(r) => r,
            Err(e) => return refused(McpReason::SessionArgsError, format!("argument `context`: {e}")),
        },
    };
    let input =
        RunInput { context: Arc::new(context), memory: memory.clone(), turn_history: history, strict_data: true };
    let engine = Engine::new(Limits { max_heap_bytes: limits.max_heap_bytes.saturating_sub(used), ..limits.clone() });
    let mut outcome = engine.eval(program, input, host, cancel);
    let mut validated = None;
    if let Some(ty) = output_type
        && ptc_signature::enforce(&mut outcome, ty)
    {
        validated = outcome.value().and_then(|v| ptc_lisp_eval::json::to_json(v).ok());
    }
    if !outcome.is_ok() {
        return Step::Failed(Box::new(outcome));
    }
    let mut candidate = previous.clone();
    let mut seq = candidate.next_seq;
    let (bindings, changed) = match record::commit_bindings(previous, &memory, &outcome.memory, program, &mut seq) {
        Ok(r) => r,
        Err(e) => return refused(McpReason::SessionStateError, format!("{}; nothing was committed", e.message)),
    };
    candidate.bindings = bindings;
    candidate.next_seq = seq;
    if let Some(msg) = check_memory(&candidate, cfg) {
        return refused(
            McpReason::SessionLimitExceeded,
            format!("{msg}; nothing was committed. Free room with lisp_session_forget"),
        );
    }
    let mut notices = Vec::new();
    let value = outcome.value().cloned().unwrap_or(Value::Nil);
    let entry = match codec::encode(&value) {
        Ok(ops)
            if serde_json::to_string(&ops).map(|s| s.len()).unwrap_or(usize::MAX) <= cfg.max_history_entry_bytes =>
        {
            Some(ops)
        }
        Ok(_) => {
            notices.push(format!(
                "*1 holds only a marker: the result is over max_history_entry_bytes ({}); store it with def to keep it",
                cfg.max_history_entry_bytes
            ));
            None
        }
        Err(_) => None,
    };
    candidate.history.push(entry);
    if candidate.history.len() > 3 {
        candidate.history.remove(0);
    }
    candidate.prints.extend(outcome.prints.iter().cloned());
    keep_recent(&mut candidate.prints, cfg.max_print_entries, cfg.max_print_bytes, String::len);
    let calls: Vec<Json> = outcome
        .tool_calls
        .iter()
        .filter(|r| !r.meta.contains_key("server"))
        .map(|r| {
            json!({
                "name": r.name,
                "status": if r.error.is_some() { "error" } else { "ok" },
                "duration_ms": r.duration.as_millis() as u64,
                "turn": previous.turn + 1,
            })
        })
        .collect();
    candidate.tool_calls.extend(calls);
    keep_recent(&mut candidate.tool_calls, cfg.max_tool_call_entries, cfg.max_tool_call_bytes, json_len);
    candidate.upstream_calls.extend(crate::upstream::metrics::upstream_calls(&outcome));
    keep_recent(&mut candidate.upstream_calls, cfg.max_upstream_call_entries, cfg.max_upstream_call_bytes, json_len);
    candidate.turn += 1;
    candidate.updated_at_ms = now_ms();
    Step::Done { outcome: Box::new(outcome), candidate: Box::new(candidate), changed, notices, validated }
}

fn json_len(v: &Json) -> usize {
    v.to_string().len()
}

/// Drops the oldest entries until at most `max_entries` of at most `max_bytes` remain.
fn keep_recent<T>(items: &mut Vec<T>, max_entries: usize, max_bytes: usize, size: impl Fn(&T) -> usize) {
    let mut total: usize = items.iter().map(&size).sum();
    let mut drop = 0;
    while drop < items.len() && (items.len() - drop > max_entries || total > max_bytes) {
        total -= size(&items[drop]);
        drop += 1;
    }
    items.drain(..drop);
}

/// The first memory limit the record breaks.
fn check_memory(record: &Record, cfg: &SessionConfig) -> Option<String> {
    if record.bindings.len() > cfg.max_bindings {
        return Some(format!(
            "the session would hold {} bindings, over max_session_bindings ({})",
            record.bindings.len(),
            cfg.max_bindings
        ));
    }
    if let Some(b) = record.bindings.iter().find(|b| b.bytes > cfg.max_binding_bytes) {
        return Some(format!(
            "binding `{}` is {} bytes, over max_session_binding_bytes ({}); store a summary or a slice of it",
            b.name, b.bytes, cfg.max_binding_bytes
        ));
    }
    let total = record.memory_bytes();
    if total > cfg.max_memory_bytes {
        return Some(format!(
            "the session's bindings would take {total} bytes, over max_session_memory_bytes ({})",
            cfg.max_memory_bytes
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_keep_the_most_recent() {
        let mut v: Vec<String> = (0..10).map(|i| format!("line{i}")).collect();
        keep_recent(&mut v, 3, 1000, String::len);
        assert_eq!(v, ["line7", "line8", "line9"]);
        keep_recent(&mut v, 3, 10, String::len);
        assert_eq!(v, ["line8", "line9"]);
    }
}
