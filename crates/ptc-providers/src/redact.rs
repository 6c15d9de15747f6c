//! Secrets out of everything a provider shows or returns.
//!
//! Two mechanisms, both applied wherever text leaves this crate: [`redact_url`] hides the
//! credentials a URL can carry (`http://user:SECRET@host`, `?key=SECRET`), and [`Secrets`]
//! replaces every known secret value (API keys from the environment and the LLM config,
//! credentials found in the base URL) in the vendor's answers and in error messages,
//! whatever field carried it.

use serde_json::Value as Json;

/// What replaces a hidden value.
const HIDDEN: &str = "***";

/// Secrets shorter than this are not scrubbed: they would mangle innocent text, and no
/// vendor issues keys that short.
#[cfg_attr(not(feature = "http"), allow(dead_code))] // the scrubbing is used by the HTTP client only
const MIN_SECRET_LEN: usize = 8;

/// `url` as it may be shown in messages, traces and listings: the userinfo before `@`
/// and every query value replaced by `***`, a fragment dropped to `#***`.
///
/// ```
/// use ptc_providers::redact_url;
/// assert_eq!(redact_url("http://u:SECRET@host:8080/v1?key=SECRET&x=1"), "http://***@host:8080/v1?key=***&x=***");
/// assert_eq!(redact_url("https://api.openai.com/v1"), "https://api.openai.com/v1");
/// ```
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, after) = rest.split_at(authority_end);
    let mut out = String::with_capacity(url.len());
    out.push_str(scheme);
    match authority.rfind('@') {
        Some(at) => {
            out.push_str(HIDDEN);
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let (before_fragment, fragment) = match after.find('#') {
        Some(i) => after.split_at(i),
        None => (after, ""),
    };
    match before_fragment.split_once('?') {
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            let parts: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, _)) => format!("{name}={HIDDEN}"),
                    None if pair.is_empty() => String::new(),
                    None => HIDDEN.to_string(),
                })
                .collect();
            out.push_str(&parts.join("&"));
        }
        None => out.push_str(before_fragment),
    }
    if !fragment.is_empty() {
        out.push('#');
        out.push_str(HIDDEN);
    }
    out
}

/// The credential values a URL carries: user and password of its userinfo, its query
/// values, its fragment.
#[cfg_attr(not(feature = "http"), allow(dead_code))] // the scrubbing is used by the HTTP client only
pub(crate) fn url_secrets(url: &str) -> Vec<String> {
    let mut found = Vec::new();
    let rest = url.find("://").map_or(url, |i| &url[i + 3..]);
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, after) = rest.split_at(authority_end);
    if let Some(at) = authority.rfind('@') {
        let userinfo = &authority[..at];
        match userinfo.split_once(':') {
            Some((user, password)) => found.extend([user.to_string(), password.to_string()]),
            None => found.push(userinfo.to_string()),
        }
    }
    let (before_fragment, fragment) = match after.find('#') {
        Some(i) => (&after[..i], &after[i + 1..]),
        None => (after, ""),
    };
    if let Some((_, query)) = before_fragment.split_once('?') {
        for pair in query.split('&') {
            found.push(pair.split_once('=').map_or(pair, |(_, value)| value).to_string());
        }
    }
    found.push(fragment.to_string());
    found.retain(|s| s.len() >= MIN_SECRET_LEN);
    found
}

/// Known secret values, replaced by `***` wherever they appear.
#[cfg_attr(not(feature = "http"), allow(dead_code))] // the scrubbing is used by the HTTP client only
#[derive(Clone, Default)]
pub(crate) struct Secrets {
    values: Vec<String>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} hidden)", self.values.len())
    }
}

#[cfg_attr(not(feature = "http"), allow(dead_code))] // the scrubbing is used by the HTTP client only
impl Secrets {
    /// Adds `value` (ignored when shorter than 8 bytes or already known).
    pub(crate) fn add(&mut self, value: &str) {
        let value = value.trim();
        if value.len() >= MIN_SECRET_LEN && !self.values.iter().any(|v| v == value) {
            self.values.push(value.to_string());
            // longest first, so a secret containing another is hidden whole
            self.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        }
    }

    /// `text` with every known secret replaced by `***`.
    pub(crate) fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.values {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), HIDDEN);
            }
        }
        out
    }

    fn leaks(&self, text: &str) -> bool {
        self.values.iter().any(|s| text.contains(s.as_str()))
    }

    /// Scrubs every string and object key of `json` in place.
    pub(crate) fn scrub_json(&self, json: &mut Json) {
        if self.values.is_empty() {
            return;
        }
        match json {
            Json::String(text) => {
                if self.leaks(text) {
                    *text = self.scrub(text);
                }
            }
            Json::Array(items) => items.iter_mut().for_each(|item| self.scrub_json(item)),
            Json::Object(map) => {
                if map.keys().any(|k| self.leaks(k)) {
                    let old = std::mem::take(map);
                    for (key, value) in old {
                        map.insert(self.scrub(&key), value);
                    }
                }
                map.values_mut().for_each(|value| self.scrub_json(value));
            }
            Json::Null | Json::Bool(_) | Json::Number(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_credentials() {
        assert_eq!(redact_url("http://u:SECRET@127.0.0.1:9/v1"), "http://***@127.0.0.1:9/v1");
        assert_eq!(redact_url("http://TOKEN@host"), "http://***@host");
        assert_eq!(redact_url("https://h/p?key=SECRET"), "https://h/p?key=***");
        assert_eq!(redact_url("https://h/p?a=1&&b#frag"), "https://h/p?a=***&&***#***");
        assert_eq!(redact_url("host:11434/v1"), "host:11434/v1");
        // an @ in the path is not userinfo
        assert_eq!(redact_url("https://h/users/@me"), "https://h/users/@me");
    }

    #[test]
    fn url_credentials_become_secrets() {
        let found = url_secrets("http://user-name:pa55word-SECRET@h/v1?key=query-SECRET-1&n=1#fragment-token");
        assert_eq!(found, ["user-name", "pa55word-SECRET", "query-SECRET-1", "fragment-token"]);
        assert!(url_secrets("https://api.openai.com/v1").is_empty());
    }

    #[test]
    fn json_is_scrubbed_everywhere() {
        let mut secrets = Secrets::default();
        secrets.add("sk-echoed-SECRET-123");
        secrets.add("short");
        let mut json = serde_json::json!({
            "choices": [{"message": {"content": "your key is sk-echoed-SECRET-123!", "tool_calls": [
                {"function": {"arguments": "{\"k\": \"sk-echoed-SECRET-123\"}"}}
            ]}}],
            "sk-echoed-SECRET-123": 1,
            "short": "short"
        });
        secrets.scrub_json(&mut json);
        let text = json.to_string();
        assert!(!text.contains("sk-echoed-SECRET-123"), "{text}");
        assert!(text.contains("your key is ***!") && text.contains(r#""***":1"#), "{text}");
        assert!(text.contains(r#""short":"short""#), "short values are left alone: {text}");
    }
}
