//! The shared backend: sessions in Redis (`--session-store redis://HOST:PORT/DB`), so that
//! several `ptc mcp --http` processes serve the same sessions.
//!
//! Keys (all under `ptc:session:`), per session id:
//!
//! - `rec:{id}` — a hash: `fmt` (this layout's tag), `owner`, `exp`, `idle`, `used`
//!   (the [`SessionMeta`] numbers, Unix ms), `ver` (bumped by every write) and `bytes`
//!   (the encoded record). Its Redis expiry is the session's deadline (`PEXPIREAT`), so
//!   an unused session disappears by itself at the earlier of its TTL and idle deadline.
//! - `lease:{id}` — the holder of the evaluation lease, with the lease's length as its
//!   Redis expiry (`SET NX PX`): one evaluation at a time across every instance.
//! - `grave:{id}` — `owner\nexp\nreason`, kept [`GRAVE_MS`] past the end, so that a
//!   closed or expired session answers `session_closed` (and to its owner only).
//! - `live` and `owner:{owner}` — sorted sets of live ids scored by deadline, for the
//!   session caps and `lisp_session_list`.
//!
//! Every read-check-write runs as one Lua script, so Redis executes it atomically: a
//! write names the version it read (and the lease it holds) and is refused otherwise,
//! which is how two instances never lose each other's updates. A key this layout does
//! not recognise is reported and left alone. A Redis that cannot be reached is
//! [`StoreError::Unavailable`]; connections are opened again on the next call, so the
//! session tools work again as soon as Redis is back.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::Value;
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore as McpSessionStore, SessionStoreError,
};

use super::store::{Caps, Lease, Loaded, Lookup, Put, SessionMeta, SessionStore, StoreError};

/// The tag in every record hash this layout writes.
const FMT: &str = "ptc-session-v1";
/// Every key's prefix.
const PREFIX: &str = "ptc:session:";
/// How long an ended session is remembered (to say `session_closed`, not `not_found`).
pub(super) const GRAVE_MS: u64 = 3_600_000;
/// Connecting, reading and writing each give up after this long.
const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// Idle connections kept for reuse.
const POOL: usize = 16;

/// A session store in Redis. Clones share the connections.
#[derive(Clone)]
pub struct RedisStore {
    client: redis::Client,
    /// `host:port/db`, never a password, for messages.
    shown: String,
    idle: Arc<Mutex<Vec<redis::Connection>>>,
}

impl RedisStore {
    /// A store at `url` (`redis://HOST:PORT/DB`, optionally `redis://:PASSWORD@HOST...`).
    /// Nothing is contacted yet: a Redis that is down makes the session tools answer
    /// `session_store_unavailable` until it is back, it does not stop the server.
    pub fn open(url: &str) -> Result<RedisStore, String> {
        let Some(rest) = url.strip_prefix("redis://") else {
            return Err(format!(
                "--session-store {}: only redis://HOST:PORT/DB is supported (write for example redis://127.0.0.1:6379/0)",
                redact(url)
            ));
        };
        let shown = rest.rsplit_once('@').map_or(rest, |(_, host)| host).to_string();
        let client = redis::Client::open(url)
            .map_err(|e| format!("--session-store redis://{shown}: {e} (write redis://HOST:PORT/DB)"))?;
        Ok(RedisStore { client, shown, idle: Arc::new(Mutex::new(Vec::new())) })
    }

    /// `redis://host:port/db`, without a password.
    pub fn describe(&self) -> String {
        format!("redis://{}", self.shown)
    }

    /// Whether Redis answers a `PING` now.
    pub fn ping(&self) -> Result<(), StoreError> {
        self.with(|c| redis::cmd("PING").query::<String>(c)).map(|_| ())
    }

    fn with<T>(&self, f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>) -> Result<T, StoreError> {
        let pooled = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut con = match pooled {
            Some(c) => c,
            None => {
                let c = self.client.get_connection_with_timeout(IO_TIMEOUT).map_err(|e| self.unavailable(&e))?;
                c.set_read_timeout(Some(IO_TIMEOUT)).map_err(|e| self.unavailable(&e))?;
                c.set_write_timeout(Some(IO_TIMEOUT)).map_err(|e| self.unavailable(&e))?;
                c
            }
        };
        match f(&mut con) {
            Ok(v) => {
                let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
                if idle.len() < POOL {
                    idle.push(con);
                }
                Ok(v)
            }
            // the connection may be half-way through a reply: never reuse it
            Err(e) => Err(self.unavailable(&e)),
        }
    }

    fn unavailable(&self, e: &redis::RedisError) -> StoreError {
        tracing::warn!(store = %self.describe(), error = %e, "session store error");
        StoreError::Unavailable(format!(
            "redis://{}: {e}; the session tools work again once it answers (retry later)",
            self.shown
        ))
    }

    fn eval(&self, script: &str, keys: &[String], args: &[Vec<u8>]) -> Result<Value, StoreError> {
        self.with(|c| {
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(script).arg(keys.len());
            for k in keys {
                cmd.arg(k);
            }
            for a in args {
                cmd.arg(a.as_slice());
            }
            cmd.query::<Value>(c)
        })
    }

    fn invalid(&self, id: &str, what: &str) -> StoreError {
        tracing::warn!(store = %self.describe(), key = %rec(id), what, "foreign session key");
        StoreError::Invalid(format!(
            "the Redis key {} at redis://{} is not a ptc session record ({what}); it was left as it is — remove it (redis-cli DEL) if nothing else owns it, or start a new session",
            rec(id),
            self.shown
        ))
    }
}

fn redact(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => format!("{scheme}://{}", rest.rsplit_once('@').map_or(rest, |(_, h)| h)),
        None => url.to_string(),
    }
}

fn rec(id: &str) -> String {
    format!("{PREFIX}rec:{id}")
}
fn lease(id: &str) -> String {
    format!("{PREFIX}lease:{id}")
}
fn grave(id: &str) -> String {
    format!("{PREFIX}grave:{id}")
}
fn live() -> String {
    format!("{PREFIX}live")
}
fn owner_set(owner: &str) -> String {
    format!("{PREFIX}owner:{owner}")
}

fn n(v: u64) -> Vec<u8> {
    v.to_string().into_bytes()
}
fn s(v: &str) -> Vec<u8> {
    v.as_bytes().to_vec()
}

/// Reads a record hash: `{1, fmt, owner, exp, idle, used, ver, bytes, busy}` from
/// [`READ`]; [`ROW`] fields are from index 1.
const ROW: &str = r#"
local function row(id)
  local d = ARGV[1] .. 'rec:' .. id
  local t = redis.call('TYPE', d).ok
  if t == 'none' then return {0} end
  if t ~= 'hash' then return {3, t} end
  local f = redis.call('HMGET', d, 'fmt', 'owner', 'exp', 'idle', 'used', 'ver', 'bytes')
  local busy = redis.call('EXISTS', ARGV[1] .. 'lease:' .. id)
  return {1, f[1], f[2], f[3], f[4], f[5], f[6], f[7], busy}
end
"#;

/// ARGV: prefix, id. `{0}` missing (then `{2, grave}` when remembered), `{3, type}` not
/// a hash, else a row.
const READ: &str = r#"
local r = row(ARGV[2])
if r[1] == 0 then
  local g = redis.call('GET', ARGV[1] .. 'grave:' .. ARGV[2])
  if g then return {2, g} end
end
return r
"#;

/// ARGV: prefix, owner, now. Rows of the owner's live sessions.
const LIST: &str = r#"
local z = ARGV[1] .. 'owner:' .. ARGV[2]
redis.call('ZREMRANGEBYSCORE', z, '-inf', ARGV[3])
local out = {}
for _, id in ipairs(redis.call('ZRANGE', z, 0, -1)) do
  local r = row(id)
  if r[1] == 0 then redis.call('ZREM', z, id) else table.insert(out, {id, r}) end
end
return out
"#;

/// ARGV: prefix, now, max_sessions, max_per_owner, id, owner, exp, idle, used, bytes,
/// deadline, grave_ms, fmt. 0 stored, 1 total cap, 2 owner cap, 3 id taken.
const CREATE: &str = r#"
local p, id, owner = ARGV[1], ARGV[5], ARGV[6]
local all, oz = p .. 'live', p .. 'owner:' .. owner
redis.call('ZREMRANGEBYSCORE', all, '-inf', ARGV[2])
redis.call('ZREMRANGEBYSCORE', oz, '-inf', ARGV[2])
if redis.call('ZCARD', all) >= tonumber(ARGV[3]) then return 1 end
if redis.call('ZCARD', oz) >= tonumber(ARGV[4]) then return 2 end
if redis.call('EXISTS', p .. 'rec:' .. id) == 1 then return 3 end
local d = p .. 'rec:' .. id
redis.call('HSET', d, 'fmt', ARGV[13], 'owner', owner, 'exp', ARGV[7], 'idle', ARGV[8], 'used', ARGV[9], 'ver', 1, 'bytes', ARGV[10])
redis.call('PEXPIREAT', d, ARGV[11])
redis.call('SET', p .. 'grave:' .. id, owner .. '\n' .. ARGV[7] .. '\n', 'PXAT', tonumber(ARGV[11]) + tonumber(ARGV[12]))
redis.call('ZADD', all, ARGV[11], id)
redis.call('ZADD', oz, ARGV[11], id)
return 0
"#;

/// ARGV: prefix, id, holder, lease_ms, now. 0 not live, 1 granted, 2 busy, 3 foreign.
const LEASE: &str = r#"
local d = ARGV[1] .. 'rec:' .. ARGV[2]
local t = redis.call('TYPE', d).ok
if t == 'none' then return 0 end
if t ~= 'hash' or redis.call('HGET', d, 'fmt') ~= ARGV[6] then return 3 end
local f = redis.call('HMGET', d, 'exp', 'idle', 'used')
local now = tonumber(ARGV[5])
if now >= tonumber(f[1]) or now >= tonumber(f[3]) + tonumber(f[2]) then return 0 end
if redis.call('SET', ARGV[1] .. 'lease:' .. ARGV[2], ARGV[3], 'NX', 'PX', ARGV[4]) then return 1 end
return 2
"#;

/// ARGV: prefix, id, holder.
const RELEASE: &str = r#"
local l = ARGV[1] .. 'lease:' .. ARGV[2]
if redis.call('GET', l) == ARGV[3] then redis.call('DEL', l) end
return 0
"#;

/// ARGV: prefix, id, holder, lease_ms. 1 renewed, 0 not the holder (any more).
const RENEW: &str = r#"
local l = ARGV[1] .. 'lease:' .. ARGV[2]
if redis.call('GET', l) == ARGV[3] then
  redis.call('PEXPIRE', l, ARGV[4])
  return 1
end
return 0
"#;

/// ARGV: prefix, id, version, holder ('' for none), owner, exp, idle, used, bytes,
/// deadline, grave_ms, now, fmt. -1 gone, -2 conflict, -3 foreign, else the new version.
const PUT: &str = r#"
local p, id = ARGV[1], ARGV[2]
local d = p .. 'rec:' .. id
local t = redis.call('TYPE', d).ok
if t == 'none' then return -1 end
if t ~= 'hash' or redis.call('HGET', d, 'fmt') ~= ARGV[13] then return -3 end
local f = redis.call('HMGET', d, 'exp', 'idle', 'used', 'ver', 'owner')
local now = tonumber(ARGV[12])
if now >= tonumber(f[1]) or now >= tonumber(f[3]) + tonumber(f[2]) then return -1 end
if f[4] ~= ARGV[3] or f[5] ~= ARGV[5] then return -2 end
local h = redis.call('GET', p .. 'lease:' .. id)
if ARGV[4] == '' then
  if h then return -2 end
elseif h ~= ARGV[4] then
  return -2
end
local v = tonumber(f[4]) + 1
redis.call('HSET', d, 'exp', ARGV[6], 'idle', ARGV[7], 'used', ARGV[8], 'ver', v, 'bytes', ARGV[9])
redis.call('PEXPIREAT', d, ARGV[10])
redis.call('SET', p .. 'grave:' .. id, ARGV[5] .. '\n' .. ARGV[6] .. '\n', 'PXAT', tonumber(ARGV[10]) + tonumber(ARGV[11]))
redis.call('ZADD', p .. 'live', ARGV[10], id)
redis.call('ZADD', p .. 'owner:' .. ARGV[5], ARGV[10], id)
return v
"#;

/// ARGV: prefix, id, reason, grave_ms, fmt. 0 not live, 1 closed, 3 foreign.
const CLOSE: &str = r#"
local p, id = ARGV[1], ARGV[2]
local d = p .. 'rec:' .. id
local t = redis.call('TYPE', d).ok
if t == 'none' then return 0 end
if t ~= 'hash' or redis.call('HGET', d, 'fmt') ~= ARGV[5] then return 3 end
local f = redis.call('HMGET', d, 'owner', 'exp')
redis.call('DEL', d, p .. 'lease:' .. id)
redis.call('SET', p .. 'grave:' .. id, f[1] .. '\n' .. f[2] .. '\n' .. ARGV[3], 'PX', ARGV[4])
redis.call('ZREM', p .. 'live', id)
redis.call('ZREM', p .. 'owner:' .. f[1], id)
return 1
"#;

fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        _ => None,
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        _ => None,
    }
}

fn num(v: &Value) -> Option<u64> {
    text(v)?.parse().ok()
}

enum Row {
    Missing,
    Grave(String),
    Found(Loaded),
}

impl RedisStore {
    /// Decodes a `row` reply for session `id`.
    fn row(&self, id: &str, v: &Value) -> Result<Row, StoreError> {
        let Value::Array(items) = v else { return Err(self.invalid(id, "unexpected reply")) };
        match items.first().and_then(int) {
            Some(0) => Ok(Row::Missing),
            Some(2) => Ok(items.get(1).and_then(text).map_or(Row::Missing, Row::Grave)),
            Some(3) => Err(self.invalid(
                id,
                &format!("a Redis {} where a hash is expected", items.get(1).and_then(text).unwrap_or_default()),
            )),
            Some(1) => {
                let field = |i: usize| items.get(i).unwrap_or(&Value::Nil);
                let fmt = text(field(1));
                if fmt.as_deref() != Some(FMT) {
                    let found = fmt.map_or("no format tag".to_string(), |f| format!("format {f:?}, expected {FMT:?}"));
                    return Err(self.invalid(id, &found));
                }
                let (Some(owner), Some(exp), Some(idle), Some(used), Some(ver), Some(bytes)) =
                    (text(field(2)), num(field(3)), num(field(4)), num(field(5)), num(field(6)), bytes(field(7)))
                else {
                    return Err(self.invalid(id, "a field is missing or not a number"));
                };
                let meta = SessionMeta {
                    id: id.to_string(),
                    owner,
                    expires_at_ms: exp,
                    idle_timeout_ms: idle,
                    last_used_ms: used,
                };
                Ok(Row::Found(Loaded {
                    meta,
                    version: ver,
                    bytes: Arc::new(bytes.to_vec()),
                    busy: int(field(8)) == Some(1),
                }))
            }
            _ => Err(self.invalid(id, "unexpected reply")),
        }
    }

    fn lookup(&self, id: &str, now_ms: u64) -> Result<Lookup, StoreError> {
        let script = format!("{ROW}{READ}");
        let v = self.eval(&script, &[rec(id), grave(id), lease(id)], &[s(PREFIX), s(id)])?;
        Ok(match self.row(id, &v)? {
            Row::Missing => Lookup::Missing,
            Row::Grave(g) => grave_lookup(&g, now_ms),
            Row::Found(l) => match l.meta.ended(now_ms) {
                // Redis expires the key at the deadline; this instance's clock may be ahead
                Some(why) => Lookup::Closed { owner: l.meta.owner, reason: why.to_string() },
                None => Lookup::Found(l),
            },
        })
    }
}

/// A grave `owner\nexp\nreason`: an empty reason means the session ran out of time.
fn grave_lookup(g: &str, now_ms: u64) -> Lookup {
    let mut parts = g.splitn(3, '\n');
    let owner = parts.next().unwrap_or_default().to_string();
    let exp: u64 = parts.next().and_then(|e| e.parse().ok()).unwrap_or(0);
    let reason = match parts.next().filter(|r| !r.is_empty()) {
        Some(r) => r.to_string(),
        None if now_ms >= exp => "expired".to_string(),
        None => "idle_timeout".to_string(),
    };
    Lookup::Closed { owner, reason }
}

impl SessionStore for RedisStore {
    fn create(&self, meta: SessionMeta, bytes: Vec<u8>, caps: Caps, now_ms: u64) -> Result<(), StoreError> {
        let keys = [live(), owner_set(&meta.owner), rec(&meta.id), grave(&meta.id)];
        let args = [
            s(PREFIX),
            n(now_ms),
            n(caps.max_sessions as u64),
            n(caps.max_per_owner as u64),
            s(&meta.id),
            s(&meta.owner),
            n(meta.expires_at_ms),
            n(meta.idle_timeout_ms),
            n(meta.last_used_ms),
            bytes,
            n(meta.deadline_ms()),
            n(GRAVE_MS),
            s(FMT),
        ];
        match int(&self.eval(CREATE, &keys, &args)?) {
            Some(0) => Ok(()),
            Some(1) => Err(StoreError::Full { limit: "max_sessions", max: caps.max_sessions }),
            Some(2) => Err(StoreError::Full { limit: "max_sessions_per_owner", max: caps.max_per_owner }),
            Some(3) => Err(self.invalid(&meta.id, "the new session's id is already taken")),
            _ => Err(self.invalid(&meta.id, "unexpected reply")),
        }
    }

    fn get(&self, id: &str, now_ms: u64) -> Result<Lookup, StoreError> {
        self.lookup(id, now_ms)
    }

    fn list(&self, owner: &str, now_ms: u64) -> Result<Vec<Loaded>, StoreError> {
        let script = format!("{ROW}{LIST}");
        let v = self.eval(&script, &[owner_set(owner)], &[s(PREFIX), s(owner), n(now_ms)])?;
        let Value::Array(rows) = v else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        for r in &rows {
            let Value::Array(pair) = r else { continue };
            let (Some(id), Some(row)) = (pair.first().and_then(text), pair.get(1)) else { continue };
            // a foreign key under a listed id is skipped here and reported when it is used
            if let Ok(Row::Found(l)) = self.row(&id, row)
                && l.meta.owner == owner
                && l.meta.ended(now_ms).is_none()
            {
                out.push(l);
            }
        }
        Ok(out)
    }

    fn try_lease(&self, id: &str, holder: &str, lease_ms: u64, now_ms: u64) -> Result<Lease, StoreError> {
        let v =
            self.eval(LEASE, &[rec(id), lease(id)], &[s(PREFIX), s(id), s(holder), n(lease_ms), n(now_ms), s(FMT)])?;
        match int(&v) {
            Some(1) => match self.lookup(id, now_ms) {
                Ok(Lookup::Found(l)) => Ok(Lease::Granted(l)),
                Ok(other) => {
                    self.release(id, holder)?;
                    Ok(Lease::NotLive(other))
                }
                Err(e) => {
                    let _ = self.release(id, holder);
                    Err(e)
                }
            },
            Some(2) => Ok(Lease::Busy),
            Some(3) => Err(self.lookup(id, now_ms).err().unwrap_or_else(|| self.invalid(id, "format mismatch"))),
            _ => Ok(Lease::NotLive(self.lookup(id, now_ms)?)),
        }
    }

    fn release(&self, id: &str, holder: &str) -> Result<(), StoreError> {
        self.eval(RELEASE, &[lease(id)], &[s(PREFIX), s(id), s(holder)]).map(|_| ())
    }

    fn renew(&self, id: &str, holder: &str, lease_ms: u64, _now_ms: u64) -> Result<bool, StoreError> {
        let v = self.eval(RENEW, &[lease(id)], &[s(PREFIX), s(id), s(holder), n(lease_ms)])?;
        Ok(int(&v) == Some(1))
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
        let keys = [rec(id), lease(id), grave(id), live(), owner_set(&meta.owner)];
        let args = [
            s(PREFIX),
            s(id),
            n(version),
            s(holder.unwrap_or("")),
            s(&meta.owner),
            n(meta.expires_at_ms),
            n(meta.idle_timeout_ms),
            n(meta.last_used_ms),
            bytes,
            n(meta.deadline_ms()),
            n(GRAVE_MS),
            n(now_ms),
            s(FMT),
        ];
        match int(&self.eval(PUT, &keys, &args)?) {
            Some(-1) => Ok(Put::Gone),
            Some(-2) => Ok(Put::Conflict),
            Some(v) if v > 0 => Ok(Put::Stored(v as u64)),
            _ => Err(self.invalid(id, "not a ptc session record")),
        }
    }

    fn close(&self, id: &str, reason: &str, _now_ms: u64) -> Result<bool, StoreError> {
        let keys = [rec(id), lease(id), grave(id), live()];
        match int(&self.eval(CLOSE, &keys, &[s(PREFIX), s(id), s(reason), n(GRAVE_MS), s(FMT)])?) {
            Some(1) => Ok(true),
            Some(0) => Ok(false),
            _ => Err(self.invalid(id, "not a ptc session record")),
        }
    }

    fn backend(&self) -> &'static str {
        "redis"
    }

    fn mcp_sessions(&self) -> Option<Arc<dyn McpSessionStore>> {
        Some(Arc::new(McpSessionsInRedis { redis: self.clone() }))
    }
}

/// How long another instance can take over an MCP session (Streamable HTTP
/// `mcp-session-id`) after its `initialize`.
pub(super) const MCP_SESSION_MS: u64 = 24 * 3_600_000;

/// rmcp's store for MCP sessions on the same Redis: after a client's `initialize` its
/// parameters are kept under `ptc:mcp:{mcp-session-id}`, so any instance can take the
/// client's next request (rmcp replays the handshake there) and a load balancer needs no
/// sticky routing. The entry holds the client's `initialize` parameters only.
struct McpSessionsInRedis {
    redis: RedisStore,
}

fn mcp_key(id: &str) -> String {
    format!("ptc:mcp:{id}")
}

impl McpSessionsInRedis {
    async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&RedisStore) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, SessionStoreError> {
        let redis = self.redis.clone();
        match tokio::task::spawn_blocking(move || f(&redis)).await {
            Ok(r) => r.map_err(|e| e.to_string().into()),
            Err(e) => Err(e.to_string().into()),
        }
    }
}

#[async_trait::async_trait]
impl McpSessionStore for McpSessionsInRedis {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let key = mcp_key(session_id);
        let got = self.run(move |r| r.with(|c| redis::cmd("GET").arg(&key).query::<Option<Vec<u8>>>(c))).await?;
        match got {
            None => Ok(None),
            Some(b) => serde_json::from_slice(&b)
                .map(Some)
                .map_err(|e| format!("{} is not an MCP session entry: {e}", mcp_key(session_id)).into()),
        }
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let key = mcp_key(session_id);
        let json = serde_json::to_vec(state).map_err(|e| -> SessionStoreError { e.to_string().into() })?;
        self.run(move |r| {
            r.with(|c| redis::cmd("SET").arg(&key).arg(json).arg("PX").arg(MCP_SESSION_MS).query::<()>(c))
        })
        .await
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        let key = mcp_key(session_id);
        self.run(move |r| r.with(|c| redis::cmd("DEL").arg(&key).query::<()>(c))).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;

    /// A `redis-server` on a free loopback port (Debian's package; `.ci/run` installs it).
    struct Server(std::process::Child, u16);

    impl Server {
        fn start() -> Server {
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let mut child = std::process::Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot run redis-server ({e}); install Debian's redis-server"));
            let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
            let mut line = String::new();
            while !line.contains("Ready to accept connections") {
                line.clear();
                assert!(out.read_line(&mut line).unwrap() > 0, "redis-server exited before it was ready");
            }
            std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
            Server(child, port)
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn now() -> u64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
    }

    fn meta(id: &str, owner: &str, t: u64) -> SessionMeta {
        SessionMeta {
            id: id.into(),
            owner: owner.into(),
            expires_at_ms: t + 60_000,
            idle_timeout_ms: 30_000,
            last_used_ms: t,
        }
    }

    const CAPS: Caps = Caps { max_sessions: 3, max_per_owner: 2 };

    /// The contract `InProcessStore` keeps, on two stores (two instances) over one Redis.
    #[test]
    fn the_store_contract_holds_across_two_instances() {
        let server = Server::start();
        let url = format!("redis://127.0.0.1:{}/0", server.1);
        let (a, b) = (RedisStore::open(&url).unwrap(), RedisStore::open(&url).unwrap());
        let t = now();
        a.create(meta("s1", "o", t), b"v1".to_vec(), CAPS, t).unwrap();
        let Lease::Granted(l) = a.try_lease("s1", "h1", 60_000, t).unwrap() else { panic!("no lease") };
        assert_eq!((l.version, l.bytes.as_slice()), (1, &b"v1"[..]));
        assert!(matches!(b.try_lease("s1", "h2", 60_000, t).unwrap(), Lease::Busy));
        assert!(matches!(b.get("s1", t).unwrap(), Lookup::Found(Loaded { busy: true, .. })));
        // a write without the lease (forget) while an eval runs is refused
        assert_eq!(b.put("s1", 1, None, meta("s1", "o", t), b"x".to_vec(), t).unwrap(), Put::Conflict);
        // another holder cannot write either
        assert_eq!(b.put("s1", 1, Some("h2"), meta("s1", "o", t), b"x".to_vec(), t).unwrap(), Put::Conflict);
        assert_eq!(a.put("s1", 1, Some("h1"), meta("s1", "o", t), b"v2".to_vec(), t).unwrap(), Put::Stored(2));
        // the stale version cannot write again: no lost update
        assert_eq!(a.put("s1", 1, Some("h1"), meta("s1", "o", t), b"v3".to_vec(), t).unwrap(), Put::Conflict);
        b.release("s1", "h2").unwrap(); // not the holder: no effect
        assert!(matches!(b.try_lease("s1", "h2", 60_000, t).unwrap(), Lease::Busy));
        // renewal: only the holder's, and it moves the lease key's expiry
        assert!(!b.renew("s1", "h2", 60_000, t).unwrap());
        assert!(a.renew("s1", "h1", 120_000, t).unwrap());
        let mut c = redis::Client::open(url.as_str()).unwrap().get_connection().unwrap();
        let ttl: i64 = redis::cmd("PTTL").arg(lease("s1")).query(&mut c).unwrap();
        assert!(ttl > 60_000, "{ttl}");
        a.release("s1", "h1").unwrap();
        let Lookup::Found(seen) = b.get("s1", t).unwrap() else { panic!("gone") };
        assert_eq!((seen.version, seen.bytes.as_slice(), seen.busy), (2, &b"v2"[..], false));
        assert_eq!(b.put("s1", 2, None, meta("s1", "o", t), b"v3".to_vec(), t).unwrap(), Put::Stored(3));

        // caps count across instances
        b.create(meta("s2", "o", t), vec![], CAPS, t).unwrap();
        let e = a.create(meta("s3", "o", t), vec![], CAPS, t).unwrap_err();
        assert!(matches!(e, StoreError::Full { limit: "max_sessions_per_owner", max: 2 }));
        a.create(meta("s3", "p", t), vec![], CAPS, t).unwrap();
        assert!(matches!(
            b.create(meta("s4", "q", t), vec![], CAPS, t),
            Err(StoreError::Full { limit: "max_sessions", .. })
        ));
        assert_eq!(b.list("o", t).unwrap().len(), 2);
        assert!(a.close("s1", "done", t).unwrap());
        assert!(!b.close("s1", "again", t).unwrap());
        assert!(
            matches!(b.get("s1", t).unwrap(), Lookup::Closed { reason, owner } if reason == "done" && owner == "o")
        );
        assert_eq!(b.put("s1", 3, None, meta("s1", "o", t), vec![], t).unwrap(), Put::Gone);
        // past its idle deadline by this instance's clock, a session is over for every reader
        assert!(matches!(a.get("s2", t + 30_000).unwrap(), Lookup::Closed { reason, .. } if reason == "idle_timeout"));
        assert!(matches!(a.try_lease("s2", "h", 1_000, t + 30_000).unwrap(), Lease::NotLive(_)));
        assert!(matches!(a.get("never", t).unwrap(), Lookup::Missing));
        // the closed one freed room
        a.create(meta("s5", "r", t), vec![], CAPS, t).unwrap();
        assert!(matches!(a.create(meta("s6", "r", t), vec![], CAPS, t), Err(StoreError::Full { .. })));
        drop(server);
        assert!(matches!(a.get("s3", t), Err(StoreError::Unavailable(m)) if m.contains(&url[8..])));
    }

    #[test]
    fn urls_are_checked_and_passwords_never_shown() {
        let e = RedisStore::open("rediss://:hunter2@example.com:6380/0").err().unwrap_or_default();
        assert!(e.contains("only redis://") && !e.contains("hunter2"), "{e}");
        let e = RedisStore::open("memcached://x").err().unwrap_or_default();
        assert!(e.contains("redis://HOST:PORT/DB"), "{e}");
        let ok = RedisStore::open("redis://:hunter2@127.0.0.1:6390/3").map(|s| s.describe()).unwrap_or_default();
        assert_eq!(ok, "redis://127.0.0.1:6390/3");
    }

    #[test]
    fn graves_say_why() {
        assert!(
            matches!(grave_lookup("o\n100\nclosed", 0), Lookup::Closed { reason, owner } if reason == "closed" && owner == "o")
        );
        assert!(matches!(grave_lookup("o\n100\n", 100), Lookup::Closed { reason, .. } if reason == "expired"));
        assert!(matches!(grave_lookup("o\n100\n", 50), Lookup::Closed { reason, .. } if reason == "idle_timeout"));
    }
}
