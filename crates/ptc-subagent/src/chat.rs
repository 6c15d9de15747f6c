//! `chat`: one more user message in a conversation the caller keeps.
//!
//! Each call is a fresh run over the messages given: tool caches, `*1 *2 *3` and
//! everything else a run builds are gone when it returns (a `full_result_cached` hint
//! from an earlier call names a cache entry that no longer exists; following it runs the
//! tool again). Only the messages and, in the PTC-Lisp modes, the definitions
//! (`memory`) carry over, because the caller passes them back in.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value as Json;

use crate::config::SubAgent;
use crate::llm::{Llm, Message};
use crate::mission::Mission;
use crate::observe::Observer;
use crate::step::Step;

/// What one `chat` call produced.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ChatReply {
    /// The run (its `return` is the answer: text in the text modes).
    pub step: Step,
    /// The conversation to pass to the next call: the messages given, the new user
    /// message, and everything this call added (assistant answers, tool calls and results).
    pub messages: Vec<Message>,
    /// Definitions to pass to the next call (PTC-Lisp modes; empty in the text modes).
    pub memory: BTreeMap<String, Json>,
}

/// What [`SubAgent::chat`] does.
pub(crate) async fn chat(
    agent: &SubAgent,
    llm: &dyn Llm,
    user_message: &str,
    history: Vec<Message>,
    memory: BTreeMap<String, Json>,
    observer: Option<Arc<dyn Observer>>,
) -> ChatReply {
    let agent = if agent.config.mode.is_text() && agent.config.signature.is_some() {
        let mut cfg = (*agent.config).clone();
        cfg.signature = None;
        cfg.signature_text = None;
        SubAgent { config: Arc::new(cfg), tools: agent.tools.clone() }
    } else {
        agent.clone()
    };
    let mut messages = history;
    messages.push(Message::user(user_message));
    let mut mission = Mission::new(&agent, llm, observer).with_messages(messages);
    if !agent.config.mode.is_text() {
        // the definitions passed back go over the prelude's (a reply never carries those)
        for (k, v) in &memory {
            mission.memory.insert(Arc::from(k.as_str()), ptc_lisp_eval::json::from_json(v));
        }
    }
    let step = mission.run().await;
    let memory = if agent.config.mode.is_text() { BTreeMap::new() } else { step.memory.clone() };
    ChatReply { step, messages: std::mem::take(&mut mission.messages), memory }
}
