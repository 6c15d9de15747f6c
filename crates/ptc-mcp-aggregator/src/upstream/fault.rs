//! World faults: what went wrong outside the program, as a reason and a message.

/// A world fault (`upstream_unavailable`, `timeout`, `auth_failed`...). The program
/// receives it as `{:ok false :reason :<reason> :message "..."}` and keeps running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    /// The reason keyword.
    pub reason: &'static str,
    /// Detail for the program's author (already scrubbed of secrets by the caller).
    pub message: String,
}

impl Fault {
    /// A fault with a reason.
    pub(crate) fn new(reason: &'static str, message: impl Into<String>) -> Self {
        Fault { reason, message: message.into() }
    }

    /// `upstream_unavailable`.
    pub(crate) fn unavailable(message: impl Into<String>) -> Self {
        Fault::new("upstream_unavailable", message)
    }
}
