//! Helpers shared by the crate's unit tests.

/// `duration_ms` is the one field that differs from run to run.
pub(crate) fn without_durations(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("duration_ms") {
        let (head, tail) = rest.split_at(at + "duration_ms".len());
        out.push_str(head);
        let value_at = tail.find(|c: char| c.is_ascii_digit()).unwrap_or(0);
        out.push_str(&tail[..value_at]);
        let tail = &tail[value_at..];
        let end = tail.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-')).unwrap_or(tail.len());
        out.push('N');
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}
