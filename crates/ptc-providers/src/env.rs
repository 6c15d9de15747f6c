//! Where configuration comes from: an injectable view of environment variables.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

type Lookup = dyn Fn(&str) -> Option<String> + Send + Sync;

/// A read-only view of environment variables.
///
/// [`Env::process`] reads the real process environment; tests build one from pairs with
/// [`Env::from_pairs`] so they never mutate (or depend on) the process environment.
/// Empty values count as unset, as most tools treat `OPENAI_API_KEY=` as "no key".
#[derive(Clone)]
pub struct Env {
    lookup: Arc<Lookup>,
}

impl Env {
    /// The process environment.
    pub fn process() -> Self {
        Env { lookup: Arc::new(|name: &str| std::env::var(name).ok()) }
    }

    /// A fixed set of variables (everything else is unset).
    pub fn from_pairs<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        let map: HashMap<String, String> = pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        Env { lookup: Arc::new(move |name: &str| map.get(name).cloned()) }
    }

    /// Any lookup function.
    pub fn from_fn(lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Env { lookup: Arc::new(lookup) }
    }

    /// The value of `name`, or `None` when it is unset or empty.
    pub fn get(&self, name: &str) -> Option<String> {
        (self.lookup)(name).filter(|value| !value.trim().is_empty())
    }
}

impl Default for Env {
    fn default() -> Self {
        Env::process()
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Values may be secrets: never print them.
        f.write_str("Env { .. }")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_values_count_as_unset() {
        let env = Env::from_pairs([("A", "1"), ("B", ""), ("C", "  ")]);
        assert_eq!(env.get("A").as_deref(), Some("1"));
        assert_eq!(env.get("B"), None);
        assert_eq!(env.get("C"), None);
        assert_eq!(env.get("D"), None);
    }

    #[test]
    fn debug_shows_no_values() {
        let env = Env::from_pairs([("OPENAI_API_KEY", "sk-secret")]);
        assert!(!format!("{env:?}").contains("sk-secret"));
    }
}
