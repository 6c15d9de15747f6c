//! From a spec (`openai:gpt-4.1-mini`, `haiku`, `replay:run.jsonl`) to a model.
//!
//! [`resolve`] only describes: vendor, model, base URL and the variable the key comes
//! from, never the key. That is what `ptc models SPEC` prints. [`from_resolved`] builds
//! the model, and is where a missing key becomes an error naming the variable.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ptc_llm::{Llm, LlmError, LlmErrorKind};
use serde::Serialize;

use crate::env::Env;
use crate::registry::{Registry, RegistryEntry};
use crate::replay::Replay;

/// The default cap on one answer's body: 4 MiB, far above any model's longest output
/// (a 128k-token answer is about 512 KB of text), far below what would hurt the machine.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// Where a spec sends requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Vendor {
    /// OpenAI's API (or any server at `OPENAI_BASE_URL`), Chat Completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini `generateContent`.
    Gemini,
    /// A local Ollama server through its OpenAI-compatible `/v1`.
    Ollama,
    /// OpenRouter, OpenAI-compatible.
    OpenRouter,
    /// A recording played back.
    Replay,
}

impl Vendor {
    /// Every vendor, in the order the docs list them.
    pub const ALL: [Vendor; 6] =
        [Vendor::OpenAi, Vendor::Anthropic, Vendor::Gemini, Vendor::Ollama, Vendor::OpenRouter, Vendor::Replay];

    /// The spec prefix (`openai`).
    pub fn as_str(self) -> &'static str {
        match self {
            Vendor::OpenAi => "openai",
            Vendor::Anthropic => "anthropic",
            Vendor::Gemini => "gemini",
            Vendor::Ollama => "ollama",
            Vendor::OpenRouter => "openrouter",
            Vendor::Replay => "replay",
        }
    }

    /// The vendor for a spec prefix.
    pub fn parse(prefix: &str) -> Option<Vendor> {
        Vendor::ALL.into_iter().find(|v| v.as_str().eq_ignore_ascii_case(prefix.trim()))
    }

    /// The wire protocol, for humans.
    pub fn protocol(self) -> &'static str {
        match self {
            Vendor::OpenAi | Vendor::Ollama | Vendor::OpenRouter => "OpenAI Chat Completions",
            Vendor::Anthropic => "Anthropic Messages",
            Vendor::Gemini => "Gemini generateContent",
            Vendor::Replay => "recorded transcript",
        }
    }

    /// The cargo feature that compiles this vendor (`None` for replay, always there).
    pub fn feature(self) -> Option<&'static str> {
        match self {
            Vendor::OpenAi | Vendor::Ollama | Vendor::OpenRouter => Some("openai"),
            Vendor::Anthropic => Some("anthropic"),
            Vendor::Gemini => Some("gemini"),
            Vendor::Replay => None,
        }
    }

    /// The variable the key is read from, if the vendor needs one.
    pub fn key_var(self) -> Option<&'static str> {
        match self {
            Vendor::OpenAi => Some("OPENAI_API_KEY"),
            Vendor::Anthropic => Some("ANTHROPIC_API_KEY"),
            Vendor::Gemini => Some("GEMINI_API_KEY"),
            Vendor::OpenRouter => Some("OPENROUTER_API_KEY"),
            Vendor::Ollama | Vendor::Replay => None,
        }
    }

    fn base_url(self, env: &Env) -> String {
        match self {
            Vendor::OpenAi => env.get("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".into()),
            Vendor::Anthropic => env.get("ANTHROPIC_BASE_URL").unwrap_or_else(|| "https://api.anthropic.com".into()),
            Vendor::Gemini => {
                env.get("GEMINI_BASE_URL").unwrap_or_else(|| "https://generativelanguage.googleapis.com".into())
            }
            Vendor::Ollama => {
                let host = env.get("OLLAMA_HOST").unwrap_or_else(|| "http://127.0.0.1:11434".into());
                // Ollama itself accepts `host:port` without a scheme.
                let host = if host.contains("://") { host } else { format!("http://{host}") };
                format!("{}/v1", host.trim_end_matches('/'))
            }
            Vendor::OpenRouter => {
                env.get("OPENROUTER_BASE_URL").unwrap_or_else(|| "https://openrouter.ai/api/v1".into())
            }
            Vendor::Replay => String::new(),
        }
    }
}

impl fmt::Display for Vendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a spec resolves to. Holds the name of the key's variable, never the key; its
/// `Debug`, `Display` and JSON show the base URL without credentials.
#[derive(Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Resolved {
    /// The spec as given.
    pub spec: String,
    /// The registry alias the spec named, if it was one.
    pub alias: Option<String>,
    /// The registry file the alias came from.
    pub registry: Option<PathBuf>,
    /// The vendor.
    pub vendor: Vendor,
    /// The model id (for replay, the recording's path).
    pub model: String,
    /// Where requests go (empty for replay). Shown and serialised through
    /// [`redact_url`](crate::redact_url): credentials in it never print.
    #[serde(serialize_with = "redacted")]
    pub base_url: String,
    /// The variable the key is read from, when one is needed.
    pub key_var: Option<String>,
    /// Whether that variable is set (its value is never kept).
    pub key_set: bool,
    /// Default cap on output tokens.
    pub max_tokens: Option<u32>,
    /// Default temperature.
    pub temperature: Option<f32>,
    /// Request timeout, when not the default (in JSON: `timeout_secs`).
    #[serde(rename = "timeout_secs", serialize_with = "secs")]
    pub timeout: Option<Duration>,
    /// Cap on one answer's body, when not the default
    /// ([`DEFAULT_MAX_ANSWER_BYTES`](crate::DEFAULT_MAX_ANSWER_BYTES)); set by the caller
    /// (`ptc run --max-answer-bytes`) before [`from_resolved`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_answer_bytes: Option<usize>,
    /// Every key variable the LLM registry names (`api_key_env` of each alias): their
    /// values are scrubbed from this model's answers too, whichever model echoes them.
    #[serde(skip)]
    pub secret_vars: Vec<String>,
}

impl fmt::Debug for Resolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resolved")
            .field("spec", &self.spec)
            .field("alias", &self.alias)
            .field("registry", &self.registry)
            .field("vendor", &self.vendor)
            .field("model", &self.model)
            .field("base_url", &crate::redact::redact_url(&self.base_url))
            .field("key_var", &self.key_var)
            .field("key_set", &self.key_set)
            .field("max_tokens", &self.max_tokens)
            .field("temperature", &self.temperature)
            .field("timeout", &self.timeout)
            .field("max_answer_bytes", &self.max_answer_bytes)
            .field("secret_vars", &self.secret_vars)
            .finish()
    }
}

fn redacted<S: serde::Serializer>(url: &str, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&crate::redact::redact_url(url))
}

fn secs<S: serde::Serializer>(timeout: &Option<Duration>, serializer: S) -> Result<S::Ok, S::Error> {
    match timeout {
        Some(t) => serializer.serialize_some(&t.as_secs_f64()),
        None => serializer.serialize_none(),
    }
}

impl Resolved {
    /// `vendor:model`, the name the model reports.
    pub fn label(&self) -> String {
        format!("{}:{}", self.vendor, self.model)
    }

    /// Whether this build can construct the model (its vendor feature is compiled in).
    pub fn available(&self) -> bool {
        match self.vendor.feature() {
            None => true,
            Some("openai") => cfg!(feature = "openai"),
            Some("anthropic") => cfg!(feature = "anthropic"),
            Some("gemini") => cfg!(feature = "gemini"),
            Some(_) => false,
        }
    }
}

impl fmt::Display for Resolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "spec:        {}", self.spec)?;
        if let Some(alias) = &self.alias {
            let from = self.registry.as_ref().map_or_else(String::new, |p| format!(" in {}", p.display()));
            writeln!(f, "alias:       {alias}{from}")?;
        }
        writeln!(f, "vendor:      {} ({})", self.vendor, self.vendor.protocol())?;
        if self.vendor == Vendor::Replay {
            writeln!(f, "recording:   {}", self.model)?;
        } else {
            writeln!(f, "model:       {}", self.model)?;
            writeln!(f, "base url:    {}", crate::redact::redact_url(&self.base_url))?;
        }
        match &self.key_var {
            Some(var) => writeln!(f, "key:         ${var} ({})", if self.key_set { "set" } else { "NOT set" })?,
            None => writeln!(f, "key:         none needed")?,
        }
        if let Some(max) = self.max_tokens {
            writeln!(f, "max tokens:  {max}")?;
        }
        if let Some(t) = self.temperature {
            writeln!(f, "temperature: {t}")?;
        }
        if let Some(timeout) = self.timeout {
            writeln!(f, "timeout:     {}s", timeout.as_secs_f64())?;
        }
        if !self.available() {
            let feature = self.vendor.feature().unwrap_or_default();
            writeln!(f, "note:        this build lacks the `{feature}` feature")?;
        }
        Ok(())
    }
}

/// Resolves `spec` against the process environment.
pub fn resolve(spec: &str, registry: Option<&Registry>) -> Result<Resolved, LlmError> {
    resolve_with(spec, registry, &Env::process())
}

/// Resolves `spec` with variables from `env`.
///
/// `VENDOR:MODEL` is used directly; anything else is a registry alias. An unknown alias is
/// a `config_error` whose message starts with `model_not_found`.
pub fn resolve_with(spec: &str, registry: Option<&Registry>, env: &Env) -> Result<Resolved, LlmError> {
    let mut resolved = resolve_spec(spec, registry, env)?;
    if let Some(registry) = registry {
        resolved.secret_vars =
            registry.aliases().filter_map(|alias| registry.get(alias)?.api_key_env.clone()).collect();
    }
    Ok(resolved)
}

fn resolve_spec(spec: &str, registry: Option<&Registry>, env: &Env) -> Result<Resolved, LlmError> {
    let spec = spec.trim();
    if let Some((prefix, model)) = spec.split_once(':')
        && let Some(vendor) = Vendor::parse(prefix)
    {
        let model = model.trim();
        if model.is_empty() {
            let example = if vendor == Vendor::Replay { "FILE" } else { "MODEL" };
            return Err(config_error(format!("`{spec}` names no model: write {vendor}:{example}")));
        }
        return Ok(direct(spec, vendor, model, env));
    }
    let entry = registry.and_then(|r| r.get(spec));
    let Some(entry) = entry else {
        return Err(not_found(spec, registry));
    };
    from_entry(spec, entry, registry, env)
}

fn direct(spec: &str, vendor: Vendor, model: &str, env: &Env) -> Resolved {
    let key_var = vendor.key_var().map(str::to_string);
    Resolved {
        spec: spec.to_string(),
        alias: None,
        registry: None,
        vendor,
        model: model.to_string(),
        base_url: vendor.base_url(env),
        key_set: key_var.as_deref().is_some_and(|var| env.get(var).is_some()),
        key_var,
        max_tokens: None,
        temperature: None,
        timeout: None,
        max_answer_bytes: None,
        secret_vars: Vec::new(),
    }
}

fn from_entry(
    alias: &str,
    entry: &RegistryEntry,
    registry: Option<&Registry>,
    env: &Env,
) -> Result<Resolved, LlmError> {
    let source = registry.and_then(Registry::source).map(|p| p.to_path_buf());
    let Some(vendor) = Vendor::parse(&entry.vendor) else {
        let names: Vec<&str> = Vendor::ALL.iter().map(|v| v.as_str()).collect();
        let from = source.as_ref().map_or_else(String::new, |p| format!(" in {}", p.display()));
        return Err(config_error(format!(
            "alias `{alias}`{from}: unknown vendor {:?} (expected one of {})",
            entry.vendor,
            names.join(", ")
        )));
    };
    let mut resolved = direct(alias, vendor, &entry.model, env);
    resolved.alias = Some(alias.to_string());
    resolved.registry = source;
    if let Some(base) = &entry.base_url {
        resolved.base_url = base.clone();
    }
    if let Some(var) = &entry.api_key_env {
        resolved.key_set = env.get(var).is_some();
        resolved.key_var = Some(var.clone());
    }
    resolved.max_tokens = entry.max_tokens;
    resolved.temperature = entry.temperature;
    resolved.timeout = entry.timeout_secs.map(Duration::from_secs);
    Ok(resolved)
}

fn not_found(spec: &str, registry: Option<&Registry>) -> LlmError {
    let vendors: Vec<&str> = Vendor::ALL.iter().map(|v| v.as_str()).collect();
    let known = match registry {
        Some(r) => {
            let aliases: Vec<&str> = r.aliases().collect();
            let from = r.source().map_or_else(|| "the LLM registry".to_string(), |p| p.display().to_string());
            if aliases.is_empty() {
                format!("{from} defines no aliases")
            } else {
                format!("{from} defines: {}", aliases.join(", "))
            }
        }
        None => "no LLM registry was found (--llm-config FILE, $PTC_LLM_CONFIG, ./ptc-llms.json, \
                 $XDG_CONFIG_HOME/ptc/llms.json)"
            .to_string(),
    };
    config_error(format!(
        "model_not_found: `{spec}` is neither VENDOR:MODEL (vendors: {}) nor a known alias; {known}",
        vendors.join(", ")
    ))
}

fn config_error(message: String) -> LlmError {
    LlmError::new(LlmErrorKind::ConfigError, message)
}

/// Builds the model for `spec` from the process environment.
pub fn from_spec(spec: &str, registry: Option<&Registry>) -> Result<Arc<dyn Llm>, LlmError> {
    from_spec_with(spec, registry, &Env::process())
}

/// Builds the model for `spec` with variables from `env`.
pub fn from_spec_with(spec: &str, registry: Option<&Registry>, env: &Env) -> Result<Arc<dyn Llm>, LlmError> {
    from_resolved(&resolve_with(spec, registry, env)?, env)
}

/// Builds the model a resolution describes, reading its key from `env`.
pub fn from_resolved(resolved: &Resolved, env: &Env) -> Result<Arc<dyn Llm>, LlmError> {
    if resolved.vendor == Vendor::Replay {
        return Ok(Arc::new(Replay::open(&resolved.model)?));
    }
    if !resolved.available() {
        let feature = resolved.vendor.feature().unwrap_or_default();
        return Err(config_error(format!(
            "`{}` needs the `{feature}` feature of ptc-providers, which this build lacks",
            resolved.spec
        )));
    }
    build_http(resolved, env)
}

#[cfg(feature = "http")]
fn build_http(resolved: &Resolved, env: &Env) -> Result<Arc<dyn Llm>, LlmError> {
    use crate::provider::ProviderConfig;
    use crate::secret::ApiKey;

    let key = match &resolved.key_var {
        Some(var) => match env.get(var) {
            Some(key) => Some(ApiKey::new(key.trim())),
            None => {
                let label = resolved.label();
                let also = if label == resolved.spec { String::new() } else { format!(" ({label})") };
                return Err(config_error(format!("missing API key: set {var} to use `{}`{also}", resolved.spec)));
            }
        },
        None => None,
    };
    let mut config = ProviderConfig::new(resolved.label(), resolved.base_url.clone(), resolved.model.clone());
    config.api_key = key;
    config.max_tokens = resolved.max_tokens;
    config.temperature = resolved.temperature;
    if let Some(timeout) = resolved.timeout {
        config.timeout = timeout;
    }
    if let Some(bytes) = resolved.max_answer_bytes {
        config.max_answer_bytes = bytes;
    }
    // Every key this process knows is a secret no answer may carry back, whichever
    // vendor echoes it.
    let known = Vendor::ALL
        .iter()
        .filter_map(|v| v.key_var())
        .chain(resolved.key_var.as_deref())
        .chain(resolved.secret_vars.iter().map(String::as_str));
    for var in known {
        if let Some(value) = env.get(var) {
            config.secrets.push(ApiKey::new(value.trim()));
        }
    }
    match resolved.vendor {
        #[cfg(feature = "openai")]
        Vendor::OpenAi if resolved.base_url.contains("api.openai.com") => {
            Ok(Arc::new(crate::openai::OpenAi::new(config)?))
        }
        #[cfg(feature = "openai")]
        Vendor::OpenAi | Vendor::Ollama | Vendor::OpenRouter => {
            Ok(Arc::new(crate::openai::OpenAi::compatible(config)?))
        }
        #[cfg(feature = "anthropic")]
        Vendor::Anthropic => Ok(Arc::new(crate::anthropic::Anthropic::new(config)?)),
        #[cfg(feature = "gemini")]
        Vendor::Gemini => Ok(Arc::new(crate::gemini::Gemini::new(config)?)),
        other => Err(config_error(format!("`{}`: vendor {other} is not compiled into this build", resolved.spec))),
    }
}

#[cfg(not(feature = "http"))]
fn build_http(resolved: &Resolved, _env: &Env) -> Result<Arc<dyn Llm>, LlmError> {
    Err(config_error(format!("`{}`: this build of ptc-providers has no HTTP vendors", resolved.spec)))
}
