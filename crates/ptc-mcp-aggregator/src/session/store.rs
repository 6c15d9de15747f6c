//! Where sessions live: the [`SessionStore`] seam and its in-process backend.
//!
//! A store keeps each session as opaque bytes (a versioned record, see `record.rs`) with
//! the metadata it needs to index, expire and guard it: the owner, the deadlines, a
//! version that every write bumps, and a lease that marks an evaluation in progress. It
//! never decodes a record. The contract every backend keeps:
//!
//! - **One evaluation per session.** [`SessionStore::try_lease`] grants at most one
//!   unexpired lease per session; a second caller gets [`Lease::Busy`] at once (no queue).
//! - **No lost update.** [`SessionStore::put`] writes only when the caller's version is
//!   still the stored one (and, for an evaluation, its lease is still held); otherwise
//!   [`Put::Conflict`], and the caller commits nothing.
//! - **Expiry is the store's.** A session past its TTL or idle deadline is gone for every
//!   reader, and later lookups say why ([`Lookup::Closed`]) for a while, as closed ones do.
//!
//! The in-process backend ([`InProcessStore`]) is a mutex around a map; a shared backend
//! (Redis) keeps the same contract with server-side expiry and compare-and-set.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// What every backend knows about a session besides its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionMeta {
    /// `ptcs_...`.
    pub id: String,
    /// The owner fingerprint (never a secret).
    pub owner: String,
    /// Hard end of life (Unix ms).
    pub expires_at_ms: u64,
    /// Idle timeout: the session ends this long after its last use (ms).
    pub idle_timeout_ms: u64,
    /// Last use (Unix ms): start, eval, inspect, forget.
    pub last_used_ms: u64,
}

impl SessionMeta {
    /// When the session ends if nothing uses it: the earlier of its TTL and idle deadline.
    pub fn deadline_ms(&self) -> u64 {
        self.expires_at_ms.min(self.last_used_ms.saturating_add(self.idle_timeout_ms))
    }

    /// Why the session is over at `now`, if it is.
    pub fn ended(&self, now_ms: u64) -> Option<&'static str> {
        if now_ms >= self.expires_at_ms {
            Some("expired")
        } else if now_ms >= self.last_used_ms.saturating_add(self.idle_timeout_ms) {
            Some("idle_timeout")
        } else {
            None
        }
    }
}

/// A stored session.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Its metadata.
    pub meta: SessionMeta,
    /// Bumped by every write; a write names the version it read.
    pub version: u64,
    /// The encoded record.
    pub bytes: Arc<Vec<u8>>,
    /// An evaluation holds the lease right now.
    pub busy: bool,
}

/// The answer to a lookup.
#[derive(Debug, Clone)]
pub enum Lookup {
    /// Live.
    Found(Loaded),
    /// Closed, expired or idle for too long, recently.
    Closed {
        /// Whose it was.
        owner: String,
        /// `closed` (or the reason given to close), `expired`, `idle_timeout`.
        reason: String,
    },
    /// Never existed, or ended long ago.
    Missing,
}

/// The answer to [`SessionStore::try_lease`].
#[derive(Debug, Clone)]
pub enum Lease {
    /// The caller holds the lease; the session as it is now.
    Granted(Loaded),
    /// Another evaluation holds it.
    Busy,
    /// The session is not live.
    NotLive(Lookup),
}

/// The answer to [`SessionStore::put`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Put {
    /// Written; the new version.
    Stored(u64),
    /// Someone else wrote (or holds the lease) since the caller read.
    Conflict,
    /// The session ended meanwhile.
    Gone,
}

/// Caps checked when a session is created.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// Live sessions in total.
    pub max_sessions: usize,
    /// Live sessions of one owner.
    pub max_per_owner: usize,
}

/// Why a store could not answer.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A creation cap was reached.
    #[error("{limit} reached ({max} live sessions); close one with lisp_session_close or wait for one to expire")]
    Full {
        /// `max_sessions` or `max_sessions_per_owner`.
        limit: &'static str,
        /// The cap.
        max: usize,
    },
    /// The backend cannot be reached (a shared store that is down).
    #[error("the session store is unavailable: {0}")]
    Unavailable(String),
    /// The store holds something under the session's key that is not a session record
    /// of this layout (another program's key, a damaged entry); it is left untouched.
    #[error("{0}")]
    Invalid(String),
}

/// The seam between the session tools and where sessions are kept. Methods are
/// synchronous; callers run them off the async threads.
pub trait SessionStore: Send + Sync {
    /// Stores a new session, unless a cap is reached.
    fn create(&self, meta: SessionMeta, bytes: Vec<u8>, caps: Caps, now_ms: u64) -> Result<(), StoreError>;
    /// The session with this id.
    fn get(&self, id: &str, now_ms: u64) -> Result<Lookup, StoreError>;
    /// The live sessions of `owner`.
    fn list(&self, owner: &str, now_ms: u64) -> Result<Vec<Loaded>, StoreError>;
    /// Takes the evaluation lease for `lease_ms`, or says why not.
    fn try_lease(&self, id: &str, holder: &str, lease_ms: u64, now_ms: u64) -> Result<Lease, StoreError>;
    /// Gives the lease back (no-op when `holder` does not hold it).
    fn release(&self, id: &str, holder: &str) -> Result<(), StoreError>;
    /// Extends `holder`'s lease to `lease_ms` from now; false when `holder` no longer
    /// holds it (it expired, or the session ended).
    fn renew(&self, id: &str, holder: &str, lease_ms: u64, now_ms: u64) -> Result<bool, StoreError>;
    /// Replaces the session's bytes and metadata if it is still at `version` (and, with a
    /// `holder`, that holder still has the lease; without one, nobody may hold it).
    fn put(
        &self,
        id: &str,
        version: u64,
        holder: Option<&str>,
        meta: SessionMeta,
        bytes: Vec<u8>,
        now_ms: u64,
    ) -> Result<Put, StoreError>;
    /// Ends the session; later lookups say `reason`. False when it was not live.
    fn close(&self, id: &str, reason: &str, now_ms: u64) -> Result<bool, StoreError>;
    /// The backend's name for logs and `lisp_session_inspect` (`memory`, `redis`).
    fn backend(&self) -> &'static str;
    /// A store for Streamable HTTP MCP sessions shared with the other instances using
    /// this backend, so that any of them can answer a client (`None`: this process only).
    fn mcp_sessions(&self) -> Option<Arc<dyn rmcp::transport::streamable_http_server::session::SessionStore>> {
        None
    }
}

struct Entry {
    meta: SessionMeta,
    version: u64,
    bytes: Arc<Vec<u8>>,
    /// (holder, until ms)
    lease: Option<(String, u64)>,
}

impl Entry {
    fn leased(&self, now_ms: u64) -> Option<&str> {
        self.lease.as_ref().filter(|(_, until)| *until > now_ms).map(|(h, _)| h.as_str())
    }

    fn loaded(&self, now_ms: u64) -> Loaded {
        Loaded {
            meta: self.meta.clone(),
            version: self.version,
            bytes: self.bytes.clone(),
            busy: self.leased(now_ms).is_some(),
        }
    }
}

/// How many ended sessions are remembered (to answer `session_closed`, not `not_found`).
const TOMBSTONES: usize = 4096;

#[derive(Default)]
struct Inner {
    live: HashMap<String, Entry>,
    ended: HashMap<String, (String, String)>,
    ended_order: VecDeque<String>,
}

impl Inner {
    fn bury(&mut self, id: &str, owner: String, reason: String) {
        if self.ended.insert(id.to_string(), (owner, reason)).is_none() {
            self.ended_order.push_back(id.to_string());
        }
        while self.ended_order.len() > TOMBSTONES {
            if let Some(old) = self.ended_order.pop_front() {
                self.ended.remove(&old);
            }
        }
    }

    /// Ends every session past its deadline.
    fn sweep(&mut self, now_ms: u64) {
        let over: Vec<(String, String, &'static str)> = self
            .live
            .iter()
            .filter_map(|(id, e)| e.meta.ended(now_ms).map(|why| (id.clone(), e.meta.owner.clone(), why)))
            .collect();
        for (id, owner, why) in over {
            self.live.remove(&id);
            tracing::info!(session = %short(&id), reason = why, "session ended");
            self.bury(&id, owner, why.to_string());
        }
    }

    fn lookup(&mut self, id: &str, now_ms: u64) -> Lookup {
        self.sweep_one(id, now_ms);
        if let Some(e) = self.live.get(id) {
            return Lookup::Found(e.loaded(now_ms));
        }
        match self.ended.get(id) {
            Some((owner, reason)) => Lookup::Closed { owner: owner.clone(), reason: reason.clone() },
            None => Lookup::Missing,
        }
    }

    fn sweep_one(&mut self, id: &str, now_ms: u64) {
        let over = self.live.get(id).and_then(|e| e.meta.ended(now_ms).map(|why| (e.meta.owner.clone(), why)));
        if let Some((owner, why)) = over {
            self.live.remove(id);
            self.bury(id, owner, why.to_string());
        }
    }
}

/// The default backend: sessions in this process's memory, gone when it exits.
#[derive(Default)]
pub struct InProcessStore {
    inner: Mutex<Inner>,
}

impl InProcessStore {
    /// An empty store.
    pub fn new() -> Self {
        InProcessStore::default()
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Inner>, StoreError> {
        // a panic while holding the lock cannot leave a half-written entry (every change
        // is one insert or remove), so the data is still good
        Ok(self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }
}

pub(crate) fn short(id: &str) -> &str {
    id.get(..13).unwrap_or(id)
}

impl SessionStore for InProcessStore {
    fn create(&self, meta: SessionMeta, bytes: Vec<u8>, caps: Caps, now_ms: u64) -> Result<(), StoreError> {
        let mut inner = self.lock()?;
        inner.sweep(now_ms);
        if inner.live.len() >= caps.max_sessions {
            return Err(StoreError::Full { limit: "max_sessions", max: caps.max_sessions });
        }
        let owned = inner.live.values().filter(|e| e.meta.owner == meta.owner).count();
        if owned >= caps.max_per_owner {
            return Err(StoreError::Full { limit: "max_sessions_per_owner", max: caps.max_per_owner });
        }
        let id = meta.id.clone();
        inner.live.insert(id, Entry { meta, version: 1, bytes: Arc::new(bytes), lease: None });
        Ok(())
    }

    fn get(&self, id: &str, now_ms: u64) -> Result<Lookup, StoreError> {
        Ok(self.lock()?.lookup(id, now_ms))
    }

    fn list(&self, owner: &str, now_ms: u64) -> Result<Vec<Loaded>, StoreError> {
        let mut inner = self.lock()?;
        inner.sweep(now_ms);
        Ok(inner.live.values().filter(|e| e.meta.owner == owner).map(|e| e.loaded(now_ms)).collect())
    }

    fn try_lease(&self, id: &str, holder: &str, lease_ms: u64, now_ms: u64) -> Result<Lease, StoreError> {
        let mut inner = self.lock()?;
        let found = inner.lookup(id, now_ms);
        if !matches!(found, Lookup::Found(_)) {
            return Ok(Lease::NotLive(found));
        }
        let Some(e) = inner.live.get_mut(id) else { return Ok(Lease::NotLive(Lookup::Missing)) };
        if e.leased(now_ms).is_some() {
            return Ok(Lease::Busy);
        }
        e.lease = Some((holder.to_string(), now_ms.saturating_add(lease_ms)));
        Ok(Lease::Granted(e.loaded(now_ms)))
    }

    fn release(&self, id: &str, holder: &str) -> Result<(), StoreError> {
        let mut inner = self.lock()?;
        if let Some(e) = inner.live.get_mut(id)
            && e.lease.as_ref().is_some_and(|(h, _)| h == holder)
        {
            e.lease = None;
        }
        Ok(())
    }

    fn renew(&self, id: &str, holder: &str, lease_ms: u64, now_ms: u64) -> Result<bool, StoreError> {
        let mut inner = self.lock()?;
        let Some(e) = inner.live.get_mut(id) else { return Ok(false) };
        if e.leased(now_ms) != Some(holder) {
            return Ok(false);
        }
        e.lease = Some((holder.to_string(), now_ms.saturating_add(lease_ms)));
        Ok(true)
    }

    fn put(
        &self,
        id: &str,
        version: u64,
        holder: Option<&str>,
        meta: SessionMeta,
        bytes: Vec<u8>,
        now_ms: u64,
    ) -> Result<Put, StoreError> {
        let mut inner = self.lock()?;
        inner.sweep_one(id, now_ms);
        let Some(e) = inner.live.get_mut(id) else { return Ok(Put::Gone) };
        if e.version != version || e.leased(now_ms) != holder {
            return Ok(Put::Conflict);
        }
        e.version += 1;
        e.meta = meta;
        e.bytes = Arc::new(bytes);
        Ok(Put::Stored(e.version))
    }

    fn close(&self, id: &str, reason: &str, now_ms: u64) -> Result<bool, StoreError> {
        let mut inner = self.lock()?;
        inner.sweep_one(id, now_ms);
        let Some(e) = inner.live.remove(id) else { return Ok(false) };
        inner.bury(id, e.meta.owner, reason.to_string());
        Ok(true)
    }

    fn backend(&self) -> &'static str {
        "memory"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(id: &str, owner: &str) -> SessionMeta {
        SessionMeta {
            id: id.into(),
            owner: owner.into(),
            expires_at_ms: 10_000,
            idle_timeout_ms: 1_000,
            last_used_ms: 0,
        }
    }

    const CAPS: Caps = Caps { max_sessions: 3, max_per_owner: 2 };

    #[test]
    fn one_lease_at_a_time_and_no_lost_update() {
        let s = InProcessStore::new();
        s.create(meta("a", "o"), b"v1".to_vec(), CAPS, 0).unwrap();
        let Lease::Granted(l) = s.try_lease("a", "h1", 500, 10).unwrap() else { panic!() };
        assert!(matches!(s.try_lease("a", "h2", 500, 11).unwrap(), Lease::Busy));
        // a write without the lease (forget) while an eval runs is refused
        assert_eq!(s.put("a", l.version, None, meta("a", "o"), b"x".to_vec(), 12).unwrap(), Put::Conflict);
        assert_eq!(s.put("a", l.version, Some("h1"), meta("a", "o"), b"v2".to_vec(), 12).unwrap(), Put::Stored(2));
        // the stale version cannot write again
        assert_eq!(s.put("a", l.version, Some("h1"), meta("a", "o"), b"v3".to_vec(), 13).unwrap(), Put::Conflict);
        s.release("a", "h1").unwrap();
        let Lookup::Found(now) = s.get("a", 14).unwrap() else { panic!() };
        assert_eq!((now.version, now.bytes.as_slice(), now.busy), (2, &b"v2"[..], false));
        // renewal keeps the lease past its first expiry, only for its holder
        let Lease::Granted(_) = s.try_lease("a", "r1", 100, 15).unwrap() else { panic!() };
        assert!(s.renew("a", "r1", 100, 105).unwrap());
        assert!(matches!(s.try_lease("a", "r2", 100, 150).unwrap(), Lease::Busy));
        assert!(!s.renew("a", "r2", 100, 150).unwrap());
        assert!(!s.renew("a", "r1", 100, 210).unwrap(), "an expired lease is not renewed");
        s.release("a", "r1").unwrap();
        // an expired lease does not block
        let Lease::Granted(_) = s.try_lease("a", "h3", 5, 20).unwrap() else { panic!() };
        assert!(matches!(s.try_lease("a", "h4", 5, 30).unwrap(), Lease::Granted(_)));
    }

    #[test]
    fn caps_expiry_and_tombstones() {
        let s = InProcessStore::new();
        s.create(meta("a", "o"), vec![], CAPS, 0).unwrap();
        s.create(meta("b", "o"), vec![], CAPS, 0).unwrap();
        let e = s.create(meta("c", "o"), vec![], CAPS, 0).unwrap_err();
        assert!(matches!(e, StoreError::Full { limit: "max_sessions_per_owner", max: 2 }));
        s.create(meta("c", "p"), vec![], CAPS, 0).unwrap();
        assert!(matches!(
            s.create(meta("d", "q"), vec![], CAPS, 0),
            Err(StoreError::Full { limit: "max_sessions", .. })
        ));
        assert!(s.close("a", "done", 1).unwrap());
        assert!(matches!(s.get("a", 2).unwrap(), Lookup::Closed { reason, .. } if reason == "done"));
        // idle for longer than the timeout
        assert!(matches!(s.get("b", 1_000).unwrap(), Lookup::Closed { reason, .. } if reason == "idle_timeout"));
        assert_eq!(s.list("o", 1_000).unwrap().len(), 0);
        assert!(matches!(s.get("zz", 0).unwrap(), Lookup::Missing));
    }
}
