//! API keys, kept out of every printout.

use std::fmt;

/// An API key. `Debug` and `Display` print `***`; the only way to read the key is
/// crate-internal, where it goes straight into a request header.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key itself, for the request header (crate-internal on purpose).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `***` (a second line of defence
    /// for messages built from a vendor's answer or a transport error).
    pub fn scrub(&self, text: &str) -> String {
        // Keys shorter than 8 characters would scrub innocent text; none of the vendors
        // issues such keys, and a test key that short is not worth mangling messages for.
        if self.0.len() < 8 { text.to_string() } else { text.replace(&self.0, "***") }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printing_never_shows_the_key() {
        let key = ApiKey::new("sk-live-1234567890");
        assert_eq!(format!("{key:?}"), "ApiKey(***)");
        assert_eq!(key.to_string(), "***");
        assert_eq!(key.scrub("bad key sk-live-1234567890!"), "bad key ***!");
    }
}
