//! Credentials, resolved once, and the redactor that scrubs them from anything shown.
//!
//! Structural isolation comes first: resolved values live only in [`Secret`] (whose
//! `Debug` prints `[REDACTED]`) and in the HTTP clients' default headers, never in
//! config maps, ledger metadata, logs or errors. The [`Redactor`] is the second line: it
//! replaces every registered secret (and the header forms derived from it) with
//! `[REDACTED]` in results, catalogs, discovery answers and error messages, in case an
//! upstream echoes a credential back.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::Value as Json;

use super::config::{ConfigError, CredentialSource, UpstreamsConfig};

/// Secrets longer than this are not scrubbed by substring (they would be too costly to
/// search for and cannot plausibly be echoed whole).
const MAX_SCRUBBED_SECRET: usize = 16 * 1024;
/// Secrets shorter than this are not scrubbed by substring (they would eat ordinary text).
const MIN_SCRUBBED_SECRET: usize = 4;

/// A resolved credential value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    #[cfg(test)]
    pub(crate) fn for_tests(v: &str) -> Self {
        Secret(v.to_string())
    }

    /// The value, for building a header. Keep the result out of logs and errors.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[REDACTED]")
    }
}

/// Resolved bindings by name.
pub(super) type Resolved = BTreeMap<String, Secret>;

/// Resolves every credential of the config (env read, file read and trimmed, literal).
pub(super) fn resolve(config: &UpstreamsConfig, env: &dyn Fn(&str) -> Option<String>) -> Result<Resolved, ConfigError> {
    let mut out = BTreeMap::new();
    for (name, spec) in &config.credentials {
        let fail = |field: &str, message: String| ConfigError {
            file: config.path.clone(),
            place: format!("credential '{name}', field `{field}`"),
            message,
        };
        let value = match &spec.source {
            CredentialSource::Env(var) => env(var)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| fail("var", format!("environment variable {var} is not set")))?,
            CredentialSource::File(path) => {
                let text = ptc_files::Limit::new("the credential file", ptc_files::SECRET_MAX_BYTES)
                    .raise_with("a credential is never that long: point `path` at the file holding only the secret")
                    .read_to_string(path)
                    .map_err(|e| fail("path", e.to_string()))?;
                let trimmed = text.trim_end().to_string();
                if trimmed.is_empty() {
                    return Err(fail("path", format!("{} is empty", path.display())));
                }
                trimmed
            }
            CredentialSource::Literal(v) => v.clone(),
        };
        out.insert(name.clone(), Secret(value));
    }
    Ok(out)
}

/// `user:pass` or `{"user": ..., "pass": ...}` → `user:pass`.
pub(super) fn basic_pair(value: &str) -> Option<String> {
    if let Ok(Json::Object(o)) = serde_json::from_str::<Json>(value) {
        let user = o.get("user")?.as_str()?;
        let pass = o.get("pass")?.as_str()?;
        return Some(format!("{user}:{pass}"));
    }
    value.contains(':').then(|| value.to_string())
}

/// Replaces registered secrets with `[REDACTED]`.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    needles: Arc<Vec<Secret>>,
}

impl Redactor {
    /// A redactor for these secrets, plus the derived forms an HTTP header would carry
    /// (basic `user:pass` and its base64).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a Secret>) -> Self {
        let mut needles: Vec<String> = Vec::new();
        for s in secrets {
            let v = s.expose();
            needles.push(v.to_string());
            if let Some(pair) = basic_pair(v) {
                needles.push(base64::engine::general_purpose::STANDARD.encode(pair.as_bytes()));
                needles.push(pair);
            }
        }
        needles.retain(|n| (MIN_SCRUBBED_SECRET..=MAX_SCRUBBED_SECRET).contains(&n.len()));
        // longest first, so a secret that contains another is replaced whole
        needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
        needles.dedup();
        Redactor { needles: Arc::new(needles.into_iter().map(Secret).collect()) }
    }

    /// Adds more secrets (stdio `env` values that came from `${VAR}`).
    pub fn with(self, extra: impl IntoIterator<Item = String>) -> Self {
        let mut all: Vec<Secret> = self.needles.iter().cloned().collect();
        all.extend(extra.into_iter().map(Secret));
        Redactor::new(all.iter())
    }

    /// True when nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// The text with every registered secret replaced.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for n in self.needles.iter() {
            if out.contains(n.expose()) {
                out = out.replace(n.expose(), "[REDACTED]");
            }
        }
        out
    }

    /// Scrubs every string (and key) of a JSON value in place.
    pub fn scrub_json(&self, v: &mut Json) {
        if self.is_empty() {
            return;
        }
        match v {
            Json::String(s) if self.needles.iter().any(|n| s.contains(n.expose())) => *s = self.scrub(s),
            Json::Array(items) => items.iter_mut().for_each(|i| self.scrub_json(i)),
            Json::Object(m) => {
                let dirty: Vec<String> =
                    m.keys().filter(|k| self.needles.iter().any(|n| k.contains(n.expose()))).cloned().collect();
                for k in dirty {
                    if let Some(val) = m.remove(&k) {
                        m.insert(self.scrub(&k), val);
                    }
                }
                m.values_mut().for_each(|i| self.scrub_json(i));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubs_plain_and_derived_forms() {
        let s = [Secret("alice:s3cret-pass".into()), Secret("tok-123456".into())];
        let r = Redactor::new(s.iter());
        let b64 = base64::engine::general_purpose::STANDARD.encode("alice:s3cret-pass");
        let text = format!("a tok-123456 b alice:s3cret-pass c {b64}");
        let out = r.scrub(&text);
        assert!(!out.contains("tok-123456") && !out.contains("s3cret") && !out.contains(&b64), "{out}");
        let mut j = serde_json::json!({"k": ["x tok-123456"], "tok-123456": 1});
        r.scrub_json(&mut j);
        assert!(!j.to_string().contains("tok-123456"), "{j}");
    }

    #[test]
    fn debug_never_shows_a_secret() {
        assert_eq!(format!("{:?}", Secret("abc".into())), "[REDACTED]");
    }

    #[test]
    fn basic_pairs() {
        assert_eq!(basic_pair("u:p").as_deref(), Some("u:p"));
        assert_eq!(basic_pair(r#"{"user":"u","pass":"p"}"#).as_deref(), Some("u:p"));
        assert_eq!(basic_pair("nocolon"), None);
    }
}
