//! Checkpoints in Redis (the `redis` feature): a mission's checkpoints on a Redis server
//! that several machines reach, so a mission checkpointed on one resumes on another.
//!
//! Layout: one hash per mission, `ptc:checkpoint:{name}`, with `fmt` (this layout's tag,
//! [`FMT`]), `latest` (the newest turn count, four digits) and one field per checkpoint,
//! `NNNN` (its JSON). A save writes the checkpoint and moves `latest` in one atomic
//! script, so a reader sees the previous checkpoint or the new one, never half; a key
//! that is not such a hash is reported and left alone. Keys do not expire (delete a
//! finished mission's with `redis-cli DEL`).

use std::time::Duration;

use crate::checkpoint::{Checkpoint, CheckpointError, CheckpointStore};

/// The tag in every mission hash this layout writes.
pub(crate) const FMT: &str = "ptc-checkpoint-hash-v1";
/// Every key's prefix.
const PREFIX: &str = "ptc:checkpoint:";
/// Connecting, reading and writing each give up after this long.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

const SAVE: &str = r"
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'none' then
  if t ~= 'hash' then return 'type ' .. t end
  local fmt = redis.call('HGET', KEYS[1], 'fmt')
  if fmt ~= ARGV[1] then return 'fmt ' .. tostring(fmt) end
end
redis.call('HSET', KEYS[1], 'fmt', ARGV[1], 'latest', ARGV[2], ARGV[2], ARGV[3])
return 'ok'
";

const LOAD: &str = r"
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'none' then return {'none'} end
if t ~= 'hash' then return {'type', t} end
local fmt = redis.call('HGET', KEYS[1], 'fmt')
if fmt ~= ARGV[1] then return {'fmt', tostring(fmt)} end
local n = redis.call('HGET', KEYS[1], 'latest')
if not n then return {'none'} end
return {'ok', n, redis.call('HGET', KEYS[1], n) or ''}
";

/// A mission's checkpoints in Redis.
#[derive(Clone)]
pub struct RedisCheckpointStore {
    client: redis::Client,
    /// `host:port/db`, never a password, for messages.
    shown: String,
    name: String,
}

impl std::fmt::Debug for RedisCheckpointStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCheckpointStore").field("at", &self.describe()).finish_non_exhaustive()
    }
}

impl RedisCheckpointStore {
    /// The store of mission `NAME` at `redis://HOST:PORT/DB/NAME` (a password as
    /// `redis://:PASSWORD@HOST...`). Nothing is contacted yet.
    pub fn open(url: &str) -> Result<RedisCheckpointStore, CheckpointError> {
        let usage = "write redis://HOST:PORT/DB/MISSION, for example redis://127.0.0.1:6379/0/nightly-report";
        let Some(rest) = url.strip_prefix("redis://") else {
            return Err(CheckpointError(format!("{}: not a redis:// location; {usage}", redact(url))));
        };
        let (server, name) = match rest.rsplit_once('/') {
            Some((server, name)) if server.contains('/') => (server, name),
            _ => {
                return Err(CheckpointError(format!(
                    "redis://{}: no database and mission name; {usage}",
                    redact(rest)
                )));
            }
        };
        let shown = server.rsplit_once('@').map_or(server, |(_, host)| host).to_string();
        if name.is_empty()
            || name.len() > 200
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':'))
        {
            return Err(CheckpointError(format!(
                "redis://{shown}/{name}: the mission name must be 1 to 200 letters, digits, '.', '_', '-' or ':'; {usage}"
            )));
        }
        let client = redis::Client::open(format!("redis://{server}"))
            .map_err(|e| CheckpointError(format!("redis://{shown}/{name}: {e}; {usage}")))?;
        Ok(RedisCheckpointStore { client, shown, name: name.to_string() })
    }

    fn key(&self) -> String {
        format!("{PREFIX}{}", self.name)
    }

    fn connect(&self) -> Result<redis::Connection, CheckpointError> {
        let unavailable = |e: &redis::RedisError| {
            CheckpointError(format!("the checkpoint store {} cannot be reached: {e}", self.describe()))
        };
        let c = self.client.get_connection_with_timeout(IO_TIMEOUT).map_err(|e| unavailable(&e))?;
        c.set_read_timeout(Some(IO_TIMEOUT)).map_err(|e| unavailable(&e))?;
        c.set_write_timeout(Some(IO_TIMEOUT)).map_err(|e| unavailable(&e))?;
        Ok(c)
    }

    fn foreign(&self, what: &str) -> CheckpointError {
        CheckpointError(format!(
            "the Redis key {} at redis://{} is not a ptc checkpoint hash ({what}); it was left as it is — choose another mission name, or remove the key (redis-cli DEL) if nothing else owns it",
            self.key(),
            self.shown
        ))
    }
}

impl CheckpointStore for RedisCheckpointStore {
    fn save(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        let text = serde_json::to_string(checkpoint)
            .map_err(|e| CheckpointError(format!("cannot write a checkpoint to {}: {e}", self.describe())))?;
        let field = format!("{:04}", checkpoint.turns_done);
        let mut con = self.connect()?;
        let answer: String = redis::cmd("EVAL")
            .arg(SAVE)
            .arg(1)
            .arg(self.key())
            .arg(FMT)
            .arg(&field)
            .arg(text)
            .query(&mut con)
            .map_err(|e| CheckpointError(format!("cannot write a checkpoint to {}: {e}", self.describe())))?;
        match answer.as_str() {
            "ok" => Ok(()),
            other => Err(self.foreign(other)),
        }
    }

    fn load_latest(&self) -> Result<Checkpoint, CheckpointError> {
        let mut con = self.connect()?;
        let answer: Vec<String> = redis::cmd("EVAL")
            .arg(LOAD)
            .arg(1)
            .arg(self.key())
            .arg(FMT)
            .query(&mut con)
            .map_err(|e| CheckpointError(format!("cannot read a checkpoint from {}: {e}", self.describe())))?;
        match answer.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
            ["ok", n, text] => Checkpoint::parse(text, &format!("{} (checkpoint {n})", self.describe())),
            ["none"] => Err(CheckpointError(format!(
                "no checkpoint in {} (a mission checkpointing there writes one after each turn)",
                self.describe()
            ))),
            [kind, what] => Err(self.foreign(&format!("{kind} {what}"))),
            _ => Err(self.foreign("an unexpected reply")),
        }
    }

    fn describe(&self) -> String {
        format!("redis://{}/{}", self.shown, self.name)
    }
}

fn redact(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => format!("{scheme}://{}", rest.rsplit_once('@').map_or(rest, |(_, h)| h)),
        None => url.rsplit_once('@').map_or(url, |(_, h)| h).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_need_a_database_and_a_mission_name_and_hide_the_password() {
        let s = RedisCheckpointStore::open("redis://:pw@127.0.0.1:6379/0/m-42").unwrap();
        assert_eq!(s.describe(), "redis://127.0.0.1:6379/0/m-42");
        assert!(!format!("{s:?}").contains("pw"));
        let e = RedisCheckpointStore::open("redis://:pw@127.0.0.1:6379/m42").unwrap_err().0;
        assert!(e.contains("no database and mission name") && !e.contains("pw"), "{e}");
        let e = RedisCheckpointStore::open("redis://127.0.0.1:6379/0/a b").unwrap_err().0;
        assert!(e.contains("the mission name must be"), "{e}");
        let e = RedisCheckpointStore::open("http://x/0/m").unwrap_err().0;
        assert!(e.contains("not a redis:// location"), "{e}");
    }
}
