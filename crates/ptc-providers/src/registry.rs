//! The LLM registry: short aliases (`haiku`, `local`) for a vendor, a model and defaults,
//! read from a JSON file.
//!
//! ```json
//! {
//!   "haiku": { "vendor": "anthropic", "model": "claude-haiku-4-5", "max_tokens": 1024, "temperature": 0.2 },
//!   "local": { "vendor": "ollama", "model": "qwen3:8b" }
//! }
//! ```
//!
//! Search order ([`Registry::discover`]): an explicit file (`--llm-config FILE`), then
//! `$PTC_LLM_CONFIG`, then `./ptc-llms.json`, then `$XDG_CONFIG_HOME/ptc/llms.json` (or
//! `$HOME/.config/ptc/llms.json` when `XDG_CONFIG_HOME` is unset). The first file found is
//! used; the explicit file and `$PTC_LLM_CONFIG` must exist when given.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ptc_llm::{LlmError, LlmErrorKind};
use serde::{Deserialize, Serialize};

use crate::env::Env;

/// The file name looked for in the current directory.
pub(crate) const LOCAL_FILE: &str = "ptc-llms.json";
/// The variable naming a registry file.
pub(crate) const CONFIG_VAR: &str = "PTC_LLM_CONFIG";

/// One alias of the registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RegistryEntry {
    /// `openai`, `anthropic`, `gemini`, `ollama`, `openrouter` or `replay`.
    pub vendor: String,
    /// The vendor's model id (for `replay`, the recording's path).
    pub model: String,
    /// Default cap on output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Default temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// A base URL instead of the vendor's (a vLLM or LM Studio server, a proxy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The variable holding the key, instead of the vendor's usual one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Whole-request timeout in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// US dollars per million tokens (`input_per_mtok`, `output_per_mtok`,
    /// `cached_input_per_mtok`): overrides the built-in price of this model for cost
    /// accounting and `max_cost_usd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<ptc_llm::ModelPrice>,
}

/// A set of aliases and the file they came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Registry {
    source: Option<PathBuf>,
    entries: BTreeMap<String, RegistryEntry>,
}

impl Registry {
    /// Parses a registry from JSON text; `source` is the file it came from, if any.
    pub fn from_json(text: &str, source: Option<PathBuf>) -> Result<Self, LlmError> {
        let name = source.as_ref().map_or_else(|| "the LLM registry".to_string(), |p| p.display().to_string());
        let entries: BTreeMap<String, RegistryEntry> = serde_json::from_str(text).map_err(|e| {
            LlmError::new(
                LlmErrorKind::ConfigError,
                format!("{name}: {e} (expected an object of alias -> {{\"vendor\", \"model\", ...}})"),
            )
        })?;
        if let Some(bad) = entries.keys().find(|alias| alias.contains(':') || alias.trim().is_empty()) {
            return Err(LlmError::new(
                LlmErrorKind::ConfigError,
                format!("{name}: alias {bad:?} must be non-empty and contain no ':' (VENDOR:MODEL is a spec)"),
            ));
        }
        Ok(Registry { source, entries })
    }

    /// Reads the registry at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, LlmError> {
        let path = path.as_ref();
        let text = ptc_files::Limit::new("the LLM registry", ptc_files::CONFIG_MAX_BYTES)
            .read_to_string(path)
            .map_err(|e| LlmError::new(LlmErrorKind::ConfigError, e.to_string()))?;
        Registry::from_json(&text, Some(path.to_path_buf()))
    }

    /// Finds the registry by the documented search order, relative to the current directory.
    pub fn discover(explicit: Option<&Path>, env: &Env) -> Result<Option<Self>, LlmError> {
        Registry::discover_in(explicit, env, Path::new("."))
    }

    /// [`Registry::discover`] with `dir` standing for the current directory.
    pub fn discover_in(explicit: Option<&Path>, env: &Env, dir: &Path) -> Result<Option<Self>, LlmError> {
        if let Some(path) = explicit {
            return Registry::load(path).map(Some);
        }
        if let Some(path) = env.get(CONFIG_VAR) {
            return Registry::load(&path).map(Some).map_err(|mut e| {
                e.message = format!("{} (from ${CONFIG_VAR})", e.message);
                e
            });
        }
        let mut candidates = vec![dir.join(LOCAL_FILE)];
        match env.get("XDG_CONFIG_HOME") {
            Some(xdg) => candidates.push(Path::new(&xdg).join("ptc").join("llms.json")),
            None => {
                if let Some(home) = env.get("HOME") {
                    candidates.push(Path::new(&home).join(".config").join("ptc").join("llms.json"));
                }
            }
        }
        for candidate in candidates {
            if candidate.is_file() {
                return Registry::load(&candidate).map(Some);
            }
        }
        Ok(None)
    }

    /// The entry for `alias`.
    pub fn get(&self, alias: &str) -> Option<&RegistryEntry> {
        self.entries.get(alias)
    }

    /// Adds or replaces an alias.
    pub fn insert(&mut self, alias: impl Into<String>, entry: RegistryEntry) {
        self.entries.insert(alias.into(), entry);
    }

    /// Every alias, sorted.
    pub fn aliases(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// The file the registry was read from.
    pub fn source(&self) -> Option<&Path> {
        self.source.as_deref()
    }
}
