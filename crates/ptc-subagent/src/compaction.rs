//! Compaction: when a conversation grows long, the middle of it is dropped before the
//! request is sent (the `trim` strategy). The first user message (the mission and its
//! inventory) and the most recent turns stay; the step's turns keep everything.

use serde::{Deserialize, Serialize};

use crate::llm::Message;

/// When and how to trim (`Compaction::default()` is the `trim` strategy triggered after
/// turn 8, keeping the last 3 turns and the first user message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compaction {
    /// Trim once the turn number is past this (`None`: no turn trigger).
    pub trigger_turns: Option<u32>,
    /// Trim once the estimated prompt tokens reach this (`None`: no token trigger).
    pub trigger_tokens: Option<u64>,
    /// Assistant/user pairs kept at the end.
    pub keep_recent_turns: u32,
    /// Keep the first user message (the mission).
    pub keep_initial_user: bool,
}

impl Default for Compaction {
    fn default() -> Self {
        Compaction { trigger_turns: Some(8), trigger_tokens: None, keep_recent_turns: 3, keep_initial_user: true }
    }
}

impl Compaction {
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.trigger_turns.is_none() && self.trigger_tokens.is_none() {
            return Err("give a trigger: trigger_turns, trigger_tokens or both".into());
        }
        if self.keep_recent_turns == 0 {
            return Err("keep_recent_turns must be at least 1".into());
        }
        if self.trigger_tokens == Some(0) || self.trigger_turns == Some(0) {
            return Err("triggers must be more than 0".into());
        }
        Ok(())
    }
}

/// What compaction did, reported in the step's usage.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompactionStats {
    /// Compaction was configured.
    pub enabled: bool,
    /// Some request was trimmed.
    pub triggered: bool,
    /// `trim`.
    pub strategy: String,
    /// `turn_pressure` or `token_pressure` (the last trigger), or none.
    pub reason: Option<String>,
    /// Messages before the last trim.
    pub messages_before: usize,
    /// Messages after it.
    pub messages_after: usize,
    /// Estimated tokens before it.
    pub estimated_tokens_before: u64,
    /// Estimated tokens after it.
    pub estimated_tokens_after: u64,
    /// The first user message was kept.
    pub kept_initial_user: bool,
    /// Pairs kept at the end.
    pub kept_recent_turns: u32,
    /// Still at or over the token trigger after trimming.
    pub over_budget: bool,
}

/// Estimated tokens of a conversation: a quarter of its characters, at least 1 per message.
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| {
            let chars = match m {
                Message::User { content } => content.chars().count(),
                Message::Assistant { content, tool_calls } => {
                    content.chars().count() + tool_calls.iter().map(|c| c.args.to_string().len()).sum::<usize>()
                }
                Message::ToolResult { content, .. } => content.chars().count(),
                // `Message` is non-exhaustive (it lives in `ptc-llm`): a kind added there
                // counts by its JSON form until it is handled here.
                other => serde_json::to_string(other).map_or(0, |s| s.chars().count()),
            };
            (chars as u64 / 4).max(1)
        })
        .sum()
}

/// The messages to send for `turn`, and the stats when a trim happened.
pub(crate) fn apply(c: &Compaction, messages: &[Message], turn: u32) -> (Vec<Message>, Option<CompactionStats>) {
    let tokens = estimate_tokens(messages);
    let reason = if c.trigger_turns.is_some_and(|n| turn > n) {
        "turn_pressure"
    } else if c.trigger_tokens.is_some_and(|n| tokens >= n) {
        "token_pressure"
    } else {
        return (messages.to_vec(), None);
    };
    let keep_head = c.keep_initial_user && matches!(messages.first(), Some(Message::User { .. }));
    let head = usize::from(keep_head);
    let recent = (c.keep_recent_turns as usize * 2).min(messages.len() - head);
    let mut start = messages.len() - recent;
    // roles keep alternating: after the kept mission the tail opens with an assistant
    // message; without it, the conversation opens with a user message
    let opens_with_assistant = start < messages.len() && matches!(messages[start], Message::Assistant { .. });
    if start < messages.len() && opens_with_assistant != keep_head {
        start += 1;
    }
    let mut out = Vec::new();
    if keep_head {
        out.push(messages[0].clone());
    }
    out.extend(messages[start.max(head)..].iter().cloned());
    let after = estimate_tokens(&out);
    let stats = CompactionStats {
        enabled: true,
        triggered: out.len() < messages.len(),
        strategy: "trim".into(),
        reason: Some(reason.into()),
        messages_before: messages.len(),
        messages_after: out.len(),
        estimated_tokens_before: tokens,
        estimated_tokens_after: after,
        kept_initial_user: keep_head,
        kept_recent_turns: c.keep_recent_turns,
        over_budget: c.trigger_tokens.is_some_and(|n| after >= n),
    };
    (out, Some(stats))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation(pairs: usize) -> Vec<Message> {
        let mut m = vec![Message::user("mission")];
        for i in 0..pairs {
            m.push(Message::assistant(format!("program {i}")));
            m.push(Message::user(format!("feedback {i}")));
        }
        m
    }

    #[test]
    fn below_the_trigger_nothing_changes() {
        let c = Compaction::default();
        let (out, stats) = apply(&c, &conversation(5), 6);
        assert_eq!(out.len(), 11);
        assert!(stats.is_none());
    }

    #[test]
    fn past_the_turn_trigger_the_middle_goes() {
        let c = Compaction::default();
        let (out, stats) = apply(&c, &conversation(9), 10);
        assert_eq!(out.len(), 7);
        assert_eq!(out[0], Message::user("mission"));
        assert_eq!(out[1], Message::assistant("program 6"));
        let stats = stats.unwrap_or_default();
        assert!(stats.triggered);
        assert_eq!(stats.reason.as_deref(), Some("turn_pressure"));
        assert_eq!((stats.messages_before, stats.messages_after), (19, 7));
    }

    #[test]
    fn the_token_trigger_and_an_assistant_at_the_cut() {
        let c =
            Compaction { trigger_turns: None, trigger_tokens: Some(5), keep_recent_turns: 1, keep_initial_user: false };
        let mut msgs = conversation(3);
        msgs.push(Message::assistant("dangling"));
        let (out, stats) = apply(&c, &msgs, 2);
        // the last two messages are [user feedback 2, assistant dangling]; none opens with an assistant
        assert_eq!(out, vec![Message::user("feedback 2"), Message::assistant("dangling")]);
        assert_eq!(stats.and_then(|s| s.reason).as_deref(), Some("token_pressure"));
    }
}
