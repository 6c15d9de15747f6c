//! The recorded and replayed model and tools of a checkpointing or resumed mission (see
//! [`checkpoint`](crate::checkpoint) for the format and the stores, and why a resume
//! replays answers and tool results instead of serialising closures).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value as Json;

use crate::checkpoint::{Checkpoint, CheckpointError, CheckpointStore, ToolRecord};
use crate::config::SubAgent;
use crate::llm::{BoxFuture, Llm, LlmError, LlmRequest, LlmResponse};
use crate::step::ChildStep;
use crate::tool::{ToolBody, ToolError};

/// Checks that `agent` is the mission that wrote `checkpoint`.
pub(crate) fn check_agent(checkpoint: &Checkpoint, agent: &SubAgent) -> Result<(), CheckpointError> {
    let own = fingerprint(agent);
    if own != checkpoint.fingerprint {
        return Err(CheckpointError(format!(
            "the checkpoint was written by a different mission (fingerprint {} here {own}): the prompt, context, tools, signature or settings differ; resume with the agent that wrote it",
            checkpoint.fingerprint
        )));
    }
    Ok(())
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
        let mut tools = crate::tool::Toolbox::new();
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
                    Some(e) => Err(ToolError::failed(e)),
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
