//! Bounding what the loop keeps of a conversation: `max_history_bytes`.
//!
//! A model's answers are the one input of the loop nobody else bounds (a vendor may send
//! 50 MB per turn, and every turn is kept and re-sent). Past the cap, the oldest texts
//! are replaced by a short marker saying how much was dropped, newest last; when the
//! newest text alone is over, its head is kept. Message order, roles and tool-call ids
//! never change, so every native tool call still has its result.

use serde_json::Value as Json;

use crate::llm::Message;
use crate::step::Turn;

/// The default `max_history_bytes`: 8 MiB, above any model's context window.
pub const DEFAULT_MAX_HISTORY_BYTES: usize = 8 * 1024 * 1024;

/// Texts at most this long are never worth replacing by a marker.
const KEEP_BELOW: usize = 160;

fn marker(bytes: usize) -> String {
    format!("[{bytes} bytes elided: the conversation outgrew max_history_bytes]")
}

/// The bytes `message` holds in its texts (content, tool-call arguments).
fn message_size(message: &Message) -> usize {
    match message {
        Message::User { content } | Message::ToolResult { content, .. } => content.len(),
        Message::Assistant { content, tool_calls } => {
            content.len() + tool_calls.iter().map(|c| args_size(&c.args)).sum::<usize>()
        }
        // `Message` is non-exhaustive (it lives in `ptc-llm`): a kind added there counts by
        // its JSON form, so it still counts against the cap, until it is handled here.
        other => serde_json::to_string(other).map_or(0, |s| s.len()),
    }
}

fn args_size(args: &Json) -> usize {
    match args {
        Json::String(s) => s.len(),
        Json::Object(map) if map.is_empty() => 0,
        other => json_len(other),
    }
}

/// The length of `value`'s compact JSON form, counted as it is written rather than built:
/// a megabyte of tool-call arguments is measured without a megabyte copy.
fn json_len(value: &Json) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => value.to_string().len(),
    }
}

/// Replaces `message`'s texts by markers; returns the bytes it holds afterwards.
fn elide(message: &mut Message) -> usize {
    match message {
        Message::User { content } | Message::ToolResult { content, .. } if content.len() > KEEP_BELOW => {
            *content = marker(content.len());
        }
        Message::Assistant { content, tool_calls } => {
            if content.len() > KEEP_BELOW {
                *content = marker(content.len());
            }
            for call in tool_calls.iter_mut() {
                let size = args_size(&call.args);
                if size > KEEP_BELOW {
                    call.args = serde_json::json!({ "elided": marker(size) });
                }
            }
        }
        // a short text stays; a kind this cap does not know yet has no text it could elide
        _ => {}
    }
    message_size(message)
}

/// Keeps `messages[skip..]` within `cap` bytes (the first `skip` messages, the mission,
/// are neither counted nor touched). Messages before the newest answer are elided oldest
/// first; if that is not enough, the newest answer and what follows it are cut to fit.
pub(crate) fn bound_messages(messages: &mut [Message], skip: usize, cap: usize) {
    let Some(tail) = messages.get_mut(skip..) else { return };
    let mut total: usize = tail.iter().map(message_size).sum();
    if total <= cap {
        return;
    }
    let newest_answer =
        tail.iter().rposition(|m| matches!(m, Message::Assistant { .. })).unwrap_or(tail.len().saturating_sub(1));
    let (older, recent) = tail.split_at_mut(newest_answer);
    for message in older.iter_mut() {
        if total <= cap {
            return;
        }
        let before = message_size(message);
        total = total - before + elide(message);
    }
    for message in recent.iter_mut() {
        if total <= cap {
            return;
        }
        let before = message_size(message);
        let room = cap.saturating_sub(total - before);
        total = total - before + cut_message(message, room);
    }
}

/// Cuts `message`'s text to about `room` bytes (big tool-call arguments are elided);
/// returns the bytes it holds afterwards.
fn cut_message(message: &mut Message, room: usize) -> usize {
    match message {
        Message::User { content } | Message::ToolResult { content, .. } => cut(content, room),
        Message::Assistant { content, tool_calls } => {
            for call in tool_calls.iter_mut() {
                let size = args_size(&call.args);
                if size > KEEP_BELOW {
                    call.args = serde_json::json!({ "elided": marker(size) });
                }
            }
            let args: usize = tool_calls.iter().map(|c| args_size(&c.args)).sum();
            cut(content, room.saturating_sub(args));
        }
        // a kind this cap does not know yet has no text it could cut
        _ => {}
    }
    message_size(message)
}

/// Keeps the answers and programs recorded in `turns` within `cap` bytes, oldest elided
/// first.
pub(crate) fn bound_turns(turns: &mut [Turn], cap: usize) {
    let mut texts: Vec<&mut String> = Vec::new();
    for turn in turns.iter_mut() {
        texts.push(&mut turn.raw_response);
        if let Some(program) = turn.program.as_mut() {
            texts.push(program);
        }
    }
    bound_texts(texts, cap);
}

fn bound_texts(mut texts: Vec<&mut String>, cap: usize) {
    let mut total: usize = texts.iter().map(|t| t.len()).sum();
    if total <= cap {
        return;
    }
    let last = texts.len().saturating_sub(1);
    for text in texts.iter_mut().take(last) {
        if total <= cap {
            return;
        }
        if text.len() > KEEP_BELOW {
            let replacement = marker(text.len());
            total = total - text.len() + replacement.len();
            **text = replacement;
        }
    }
    if total > cap
        && let Some(newest) = texts.last_mut()
    {
        let room = cap.saturating_sub(total - newest.len());
        cut(newest, room);
    }
}

/// Cuts `text` to `room` bytes or less (at a character boundary), its note saying what
/// was cut included; a room smaller than the note leaves the note alone.
fn cut(text: &mut String, room: usize) {
    if text.len() <= room.max(KEEP_BELOW) {
        return;
    }
    let total = text.len();
    // the note's length does not depend on the exact count by more than a few digits
    let note_len = note(total, total).len();
    let mut end = room.saturating_sub(note_len).min(total);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&note(total - end, total));
}

fn note(dropped: usize, total: usize) -> String {
    format!("\n[answer cut here: {dropped} of {total} bytes dropped, the conversation outgrew max_history_bytes]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::NativeToolCall;

    fn total(messages: &[Message]) -> usize {
        messages.iter().skip(1).map(message_size).sum()
    }

    #[test]
    fn json_is_measured_as_its_compact_text() {
        for v in [
            serde_json::json!({"program": "(+ 1 2)", "n": [1, 2.5, null, true], "s": "\"quoted\"\n\u{1}é😀"}),
            serde_json::json!([]),
            serde_json::json!({"deep": [[[{"a": {"b": "x".repeat(5000)}}]]]}),
        ] {
            assert_eq!(json_len(&v), v.to_string().len(), "{v}");
        }
    }

    #[test]
    fn the_oldest_texts_go_first_and_the_order_stays() {
        let mut messages = vec![
            Message::user("the mission ".repeat(100)),
            Message::assistant("a".repeat(1000)),
            Message::user("b".repeat(1000)),
            Message::assistant("c".repeat(1000)),
        ];
        bound_messages(&mut messages, 1, 1500);
        assert!(total(&messages) <= 1500, "{}", total(&messages));
        assert!(messages[0] == Message::user("the mission ".repeat(100)), "the mission is kept");
        let Message::Assistant { content, .. } = &messages[1] else { panic!() };
        assert!(content.starts_with("[1000 bytes elided"), "{content}");
        let Message::Assistant { content, .. } = &messages[3] else { panic!() };
        assert_eq!(content, &"c".repeat(1000), "the newest answer is whole while it fits");
    }

    #[test]
    fn a_newest_answer_over_the_cap_keeps_its_head() {
        let mut messages = vec![Message::user("m"), Message::assistant("x".repeat(10_000))];
        bound_messages(&mut messages, 1, 1000);
        let Message::Assistant { content, .. } = &messages[1] else { panic!() };
        assert!(content.starts_with(&"x".repeat(800)) && content.len() <= 1000, "{}", content.len());
        assert!(content.contains("of 10000 bytes dropped"), "{content}");
    }

    #[test]
    fn tool_calls_keep_their_ids_when_elided() {
        let call = NativeToolCall {
            id: "call_1".into(),
            name: "search".into(),
            args: serde_json::json!({"q": "y".repeat(5000)}),
            provider_data: None,
        };
        let mut messages = vec![
            Message::user("m"),
            Message::Assistant { content: String::new(), tool_calls: vec![call] },
            Message::ToolResult {
                call_id: "call_1".into(),
                name: "search".into(),
                content: "z".repeat(5000),
                is_error: false,
            },
            Message::user("feedback"),
        ];
        bound_messages(&mut messages, 1, 1000);
        assert!(total(&messages) <= 1000, "{}", total(&messages));
        let Message::Assistant { tool_calls, .. } = &messages[1] else { panic!() };
        assert_eq!(tool_calls[0].id, "call_1");
        let Message::ToolResult { call_id, .. } = &messages[2] else { panic!() };
        assert_eq!(call_id, "call_1");
    }
}
