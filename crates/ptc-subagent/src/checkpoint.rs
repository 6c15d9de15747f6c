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

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::agent::SubAgent;
use crate::llm::{BoxFuture, Llm, LlmError, LlmRequest, LlmResponse, Message};
use crate::step::{ChildStep, StepUsage, Turn};
use crate::tool::{ToolBody, ToolError};

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

    /// Checks that `agent` is the mission that wrote this checkpoint.
    pub(crate) fn check_agent(&self, agent: &SubAgent) -> Result<(), CheckpointError> {
        let own = fingerprint(agent);
        if own != self.fingerprint {
            return Err(CheckpointError(format!(
                "the checkpoint was written by a different mission (fingerprint {} here {own}): the prompt, context, tools, signature or settings differ; resume with the agent that wrote it",
                self.fingerprint
            )));
        }
        Ok(())
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

/// FNV-1a over the mission's first request and the settings that shape its turns:
/// stable across builds and machines.
pub(crate) fn fingerprint(agent: &SubAgent) -> String {
    let cfg = &agent.config;
    let request = serde_json::to_string(&agent.first_request()).unwrap_or_default();
    let settings = format!(
        "{}|{}|{}|{:?}|{:?}",
        cfg.mode, cfg.max_turns, cfg.retry_turns, cfg.signature_text, cfg.completion_mode
    );
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in request.bytes().chain(settings.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

type Replayed = HashMap<(u32, String), VecDeque<ToolRecord>>;

/// What a checkpointing mission keeps besides its own state.
pub(crate) struct Recording {
    pub(crate) store: Option<Arc<dyn CheckpointStore>>,
    pub(crate) fingerprint: String,
    pub(crate) answers: Vec<LlmResponse>,
    pub(crate) tools: Arc<Mutex<Vec<ToolRecord>>>,
    /// Model calls before the checkpoint resumed from, and since (live ones).
    pub(crate) calls_before: u64,
    pub(crate) calls: Arc<AtomicU64>,
    /// Turns answered from the checkpoint (no checkpoint is rewritten for them).
    pub(crate) replay_turns: u32,
}

impl Recording {
    /// Keeps `checkpoint` in the store.
    pub(crate) fn write(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        match &self.store {
            Some(store) => store.save(checkpoint),
            None => Ok(()),
        }
    }
}

/// The model of a checkpointing mission: answers the replayed turns from the checkpoint,
/// then asks the real model, counting its requests.
pub(crate) struct ReplayingLlm<'a> {
    inner: &'a dyn Llm,
    queue: Mutex<VecDeque<LlmResponse>>,
    calls: Arc<AtomicU64>,
}

impl Llm for ReplayingLlm<'_> {
    fn complete<'b>(&'b self, request: &'b LlmRequest) -> BoxFuture<'b, Result<LlmResponse, LlmError>> {
        if let Some(answer) = self.queue.lock().ok().and_then(|mut q| q.pop_front()) {
            return Box::pin(async move { Ok(answer) });
        }
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.complete(request)
    }

    fn name(&self) -> String {
        self.inner.name()
    }

    fn retry_waits(&self) -> bool {
        self.inner.retry_waits()
    }
}

/// A checkpointing (or resumed) run: the agent with its tools recorded (and, for the
/// replayed turns, answered from the checkpoint) and the model wrapper.
pub(crate) struct Session<'a> {
    pub(crate) agent: SubAgent,
    pub(crate) llm: ReplayingLlm<'a>,
    pub(crate) recording: Option<Recording>,
}

impl<'a> Session<'a> {
    /// Prepares a run of `agent`: resumes from its checkpoint when it has one (moving
    /// `llm` past the requests already answered).
    pub(crate) fn start(agent: &SubAgent, llm: &'a dyn Llm) -> Result<Session<'a>, CheckpointError> {
        let cfg = &agent.config;
        let resume = cfg.resume.clone();
        let calls = Arc::new(AtomicU64::new(0));
        let log: Arc<Mutex<Vec<ToolRecord>>> = Arc::new(Mutex::new(Vec::new()));
        let mut replayed: Replayed = HashMap::new();
        let (queue, replay_turns, calls_before) = match &resume {
            Some(c) => {
                llm.resume_at(c.model_calls)
                    .map_err(|e| CheckpointError(format!("cannot resume the model {:?}: {}", llm.name(), e.message)))?;
                for record in &c.tool_calls {
                    let key = (record.turn, crate::cache_key::canonical_cache_key(&record.name, &record.args));
                    replayed.entry(key).or_default().push_back(record.clone());
                }
                (c.answers.iter().cloned().collect(), c.turns_done, c.model_calls)
            }
            None => (VecDeque::new(), 0, 0),
        };
        let replayed = Arc::new(Mutex::new(replayed));
        let mut tools = crate::exec::Toolbox::new();
        for (name, prepared) in agent.tools.iter() {
            let mut wrapped = prepared.clone();
            let (log, replayed, tool) = (log.clone(), replayed.clone(), name.clone());
            // the recorded answer of this call, when the turn is being replayed
            let recorded = move |cx: &crate::tool::ToolContext, args: &Json| -> Option<Result<Json, ToolError>> {
                let key = (cx.turn, crate::cache_key::canonical_cache_key(&tool, args));
                let r = if cx.turn <= replay_turns {
                    replayed.lock().ok().and_then(|mut r| r.get_mut(&key).and_then(VecDeque::pop_front))
                } else {
                    None
                }?;
                Some(match r.error {
                    Some(e) => Err(ToolError::new(e)),
                    None => Ok(r.result.unwrap_or(Json::Null)),
                })
            };
            let tool = name.clone();
            let record = move |turn: u32, args: Json, outcome: &Result<Json, ToolError>| {
                if let Ok(mut log) = log.lock() {
                    log.push(ToolRecord {
                        turn,
                        name: tool.clone(),
                        args,
                        result: outcome.as_ref().ok().cloned(),
                        error: outcome.as_ref().err().map(|e| e.message.clone()),
                    });
                }
            };
            wrapped.tool.func = match prepared.tool.func.clone() {
                ToolBody::Sync(inner) => ToolBody::Sync(Arc::new(move |args: Json, cx: &crate::tool::ToolContext| {
                    let outcome = match recorded(cx, &args) {
                        Some(r) => r,
                        None => inner(args.clone(), cx),
                    };
                    record(cx.turn, args, &outcome);
                    outcome
                })),
                ToolBody::Async(inner) => {
                    let (recorded, record) = (Arc::new(recorded), Arc::new(record));
                    ToolBody::Async(Arc::new(move |args: Json, cx: crate::tool::ToolContext| {
                        let (recorded, record, inner) = (recorded.clone(), record.clone(), inner.clone());
                        Box::pin(async move {
                            let turn = cx.turn;
                            let outcome = match recorded(&cx, &args) {
                                Some(r) => r,
                                None => inner(args.clone(), cx).await,
                            };
                            record(turn, args, &outcome);
                            outcome
                        })
                    }))
                }
            };
            tools.insert(name.clone(), wrapped);
        }
        let recording = Recording {
            store: cfg.checkpoint_store.clone(),
            fingerprint: fingerprint(agent),
            answers: Vec::new(),
            tools: log,
            calls_before,
            calls: calls.clone(),
            replay_turns,
        };
        Ok(Session {
            agent: SubAgent { config: agent.config.clone(), tools: Arc::new(tools) },
            llm: ReplayingLlm { inner: llm, queue: Mutex::new(queue), calls },
            recording: Some(recording),
        })
    }
}

/// Turns taken by a step and all its nested steps (the tree's shared turn budget).
pub(crate) fn tree_turns(children: &[ChildStep]) -> u32 {
    children.iter().map(|c| c.step.usage.turns + tree_turns(&c.step.children)).sum()
}

/// What a step's nested steps cost, all levels (a resumed mission's budget counts it): a
/// nested step's `usage` is already its whole subtree's.
pub(crate) fn tree_cost(children: &[ChildStep]) -> f64 {
    children.iter().map(|c| c.step.usage.cost_usd.unwrap_or(0.0)).sum()
}
