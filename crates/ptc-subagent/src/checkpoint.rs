//! Checkpoint and resume (the seed's planned `checkpoint_dir` / `resume_from`).
//!
//! After every turn, a mission with a [`CheckpointStore`] writes its state there. The
//! stores: [`DirStore`] (a directory, the default: `checkpoint-NNNN.json`, NNNN the turns
//! done, written atomically — a temporary file renamed into place) and, with the `redis`
//! feature, `RedisCheckpointStore` (one Redis hash per mission, shared by machines);
//! an embedder may bring its own. Every turn's checkpoint is kept for inspection: the format and its version, a
//! fingerprint of the mission, the memory, the conversation, the turn count, the usage,
//! the turns so far (the trace), the nested agents' steps, and what a resume needs to
//! rebuild the rest exactly — every model answer and every tool call's result.
//!
//! Why answers and results rather than the interpreter's state: definitions can be
//! functions (closures over other values), which have no portable form. A resumed
//! mission instead replays its turns: the recorded answers stand in for the model and the
//! recorded results for the tools (nothing is called twice, no side effect repeats),
//! and the deterministic interpreter rebuilds memory, history and conversation exactly
//! as they were; then the mission goes on live. Its answer is the one an uninterrupted
//! run would give under a replayed model; a scripted or recorded model is moved past the
//! requests it already answered ([`Llm::resume_at`](crate::Llm::resume_at)).
//!
//! Limits of the replay: a tool call that timed out or panicked left no result and runs
//! again; nested agents are not re-run (their recorded results and steps are kept), and
//! a crash inside a turn loses that turn's work (it runs again). The mission clock goes
//! on from the elapsed time at the checkpoint.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::llm::{LlmResponse, Message};
use crate::step::{ChildStep, StepUsage, Turn};

/// The `format` of every checkpoint file.
pub const CHECKPOINT_FORMAT: &str = "ptc-checkpoint";
/// The format version this build writes and reads.
pub const CHECKPOINT_VERSION: u32 = 1;
/// The largest checkpoint file read.
const MAX_CHECKPOINT_BYTES: u64 = 512 * ptc_files::MIB;

/// A checkpoint that cannot be written or used. The message names the file and says what
/// to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CheckpointError(pub String);

/// One tool function call as it returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolRecord {
    /// The turn whose program (or native call) made it.
    pub turn: u32,
    /// The tool.
    pub name: String,
    /// The arguments the function received.
    pub args: Json,
    /// What it returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Json>,
    /// Its error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A mission's state after a turn (one `checkpoint-NNNN.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Checkpoint {
    /// Always [`CHECKPOINT_FORMAT`].
    pub format: String,
    /// [`CHECKPOINT_VERSION`] when written by this build.
    pub version: u32,
    /// A hash of the mission's first request (system prompt, first message with the data,
    /// tools, options) and settings; a resume checks it against the agent.
    pub fingerprint: String,
    /// The agent's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Turns done.
    pub turns_done: u32,
    /// Requests the model object received (the root's, and nested agents' that use it).
    pub model_calls: u64,
    /// Mission time so far.
    pub elapsed_ms: u64,
    /// Usage so far.
    pub usage: StepUsage,
    /// Definitions (JSON view; functions as PTC-Lisp text), for inspection.
    pub memory: BTreeMap<String, Json>,
    /// The conversation after the system prompt.
    pub messages: Vec<Message>,
    /// The turns so far.
    pub turns: Vec<Turn>,
    /// Nested agents' steps so far.
    #[serde(default)]
    pub children: Vec<ChildStep>,
    /// Every model answer of the mission, in order.
    pub answers: Vec<LlmResponse>,
    /// Every tool function call, in the order they returned.
    pub tool_calls: Vec<ToolRecord>,
}

impl Checkpoint {
    /// Reads a checkpoint: a file, or the newest `checkpoint-NNNN.json` of a directory.
    /// A file that is not JSON, not a checkpoint or of another version is an error
    /// naming it.
    pub fn load(path: &Path) -> Result<Checkpoint, CheckpointError> {
        let file = if path.is_dir() { newest(path)? } else { path.to_path_buf() };
        let text = ptc_files::Limit::new("resume_from", MAX_CHECKPOINT_BYTES)
            .read_to_string(&file)
            .map_err(|e| CheckpointError(e.to_string()))?;
        Checkpoint::parse(&text, &file.display().to_string())
    }

    /// Reads a checkpoint's JSON text; `shown` names where it came from in errors. Text
    /// that is not JSON, not a checkpoint or of another version is an error.
    pub fn parse(text: &str, shown: &str) -> Result<Checkpoint, CheckpointError> {
        let raw: Json = serde_json::from_str(text).map_err(|e| {
            CheckpointError(format!(
                "checkpoint {shown} is not valid JSON ({e}); it is damaged — resume from the previous checkpoint-NNNN.json of its directory"
            ))
        })?;
        if raw.get("format").and_then(Json::as_str) != Some(CHECKPOINT_FORMAT) {
            return Err(CheckpointError(format!(
                "{shown} is not a ptc checkpoint (no \"format\": \"{CHECKPOINT_FORMAT}\"); give a checkpoint-NNNN.json written with checkpoint_dir, or its directory"
            )));
        }
        let version = raw.get("version").and_then(Json::as_u64).unwrap_or(0);
        if version != u64::from(CHECKPOINT_VERSION) {
            return Err(CheckpointError(format!(
                "checkpoint {shown} has format version {version}; this build reads version {CHECKPOINT_VERSION} (resume it with the ptc that wrote it)"
            )));
        }
        serde_json::from_value(raw).map_err(|e| {
            CheckpointError(format!("checkpoint {shown} is damaged ({e}); resume from the previous checkpoint"))
        })
    }
}

/// Where a mission's checkpoints are kept (see the module documentation).
///
/// `save` is called after every turn that goes on, from the mission's task; a store
/// that fails makes the mission fail with `checkpoint_error`. A reader must never see
/// half a checkpoint.
pub trait CheckpointStore: Send + Sync + std::fmt::Debug {
    /// Keeps `checkpoint`, the state after `checkpoint.turns_done` turns.
    fn save(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError>;
    /// The newest checkpoint kept; an error names the store when there is none or it
    /// cannot be read (use [`Checkpoint::parse`] for the checks every store shares).
    fn load_latest(&self) -> Result<Checkpoint, CheckpointError>;
    /// The store, for messages (never a password).
    fn describe(&self) -> String;
}

/// Checkpoints in a directory: `checkpoint-NNNN.json` per turn, each written to a
/// temporary file and renamed into place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirStore {
    dir: PathBuf,
}

impl DirStore {
    /// The store in `dir` (created at the first save).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        DirStore { dir: dir.into() }
    }
}

impl CheckpointStore for DirStore {
    fn save(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        let dir = &self.dir;
        let fail = |e: &dyn std::fmt::Display| {
            CheckpointError(format!("cannot write a checkpoint to {}: {e} (checkpoint_dir)", dir.display()))
        };
        std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
        let name = format!("checkpoint-{:04}.json", checkpoint.turns_done);
        let tmp = dir.join(format!(".{name}.tmp"));
        let text = serde_json::to_string(checkpoint).map_err(|e| fail(&e))?;
        std::fs::write(&tmp, text).map_err(|e| fail(&e))?;
        std::fs::rename(&tmp, dir.join(name)).map_err(|e| fail(&e))
    }

    fn load_latest(&self) -> Result<Checkpoint, CheckpointError> {
        Checkpoint::load(&self.dir)
    }

    fn describe(&self) -> String {
        self.dir.display().to_string()
    }
}

/// The newest checkpoint file of `dir`.
fn newest(dir: &Path) -> Result<PathBuf, CheckpointError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| CheckpointError(format!("cannot read the checkpoint directory {}: {e}", dir.display())))?;
    let mut best: Option<(u32, PathBuf)> = None;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(n) = name.strip_prefix("checkpoint-").and_then(|r| r.strip_suffix(".json")) else { continue };
        let Ok(n) = n.parse::<u32>() else { continue };
        if best.as_ref().is_none_or(|(b, _)| n > *b) {
            best = Some((n, entry.path()));
        }
    }
    best.map(|(_, p)| p).ok_or_else(|| {
        CheckpointError(format!(
            "no checkpoint in {} (a mission with checkpoint_dir writes checkpoint-NNNN.json there after each turn)",
            dir.display()
        ))
    })
}
