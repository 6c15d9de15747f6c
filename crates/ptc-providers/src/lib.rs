//! `ptc-providers`: real language models behind the [`Llm`](ptc_llm::Llm) trait.
//!
//! Three wire protocols, each behind its own cargo feature so a service compiles only the
//! vendors it uses:
//!
//! | feature     | protocol                         | specs                                             |
//! |-------------|----------------------------------|---------------------------------------------------|
//! | `openai`    | OpenAI Chat Completions          | `openai:MODEL`, `ollama:MODEL`, `openrouter:V/M`  |
//! | `anthropic` | Anthropic Messages               | `anthropic:MODEL`                                 |
//! | `gemini`    | Gemini `generateContent`         | `gemini:MODEL`                                    |
//!
//! Without any vendor feature the crate still offers spec resolution, the LLM registry and
//! [`Recorder`]/[`Replay`], which need no network at all.
//!
//! A spec names a vendor and a model; [`resolve_with`] says what it means (vendor, base
//! URL, the variable the key comes from) without calling anything or reading the key:
//!
//! ```
//! use ptc_providers::{Env, Vendor, resolve_with};
//! let env = Env::from_pairs([("OPENAI_BASE_URL", "http://localhost:8000/v1")]);
//! let resolved = resolve_with("openai:Qwen/Qwen3-8B", None, &env)?;
//! assert_eq!(resolved.vendor, Vendor::OpenAi);
//! assert_eq!(resolved.base_url, "http://localhost:8000/v1");
//! assert_eq!(resolved.key_var.as_deref(), Some("OPENAI_API_KEY"));
//! assert!(!resolved.key_set);
//! # Ok::<(), ptc_llm::LlmError>(())
//! ```
//!
//! [`from_spec`] builds the model from the process environment and talks to the vendor:
//!
//! ```no_run
//! # async fn demo() -> Result<(), ptc_llm::LlmError> {
//! use ptc_llm::{LlmRequest, Message};
//! let llm = ptc_providers::from_spec("openai:gpt-4.1-mini", None)?;
//! let request = LlmRequest { system: "Be brief.".into(), messages: vec![Message::user("hi")], turn: 1, ..Default::default() };
//! let answer = llm.complete(&request).await?;
//! println!("{} ({} tokens)", answer.content, answer.usage.total());
//! # Ok(()) }
//! ```
//!
//! What this crate must never do: put an API key anywhere but the outgoing request's auth
//! header. Keys live in [`ApiKey`], whose `Debug` prints `***`; recordings hold requests and
//! responses only; error messages are built from the vendor's answer and scrubbed of the
//! key as a second line of defence. Everything a vendor returns is scrubbed of every known
//! secret (the key, other vendors' keys from the environment, credentials in the base
//! URL) before the loop, a trace or a recording sees it; a URL is shown only through
//! [`redact_url`]. An answer's body is read up to
//! [`ProviderConfig::max_answer_bytes`] and no further.

#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod env;
mod record;
mod redact;
mod registry;
mod replay;
mod resolve;
mod secret;

#[cfg(feature = "http")]
mod http;
#[cfg(feature = "http")]
mod provider;

#[cfg(feature = "anthropic")]
pub mod anthropic;
#[cfg(feature = "gemini")]
pub mod gemini;
#[cfg(feature = "openai")]
pub mod openai;

pub use env::Env;
pub use record::{RecordedError, RecordedExchange, Recorder};
pub use redact::redact_url;
pub use registry::{Registry, RegistryEntry};
pub use replay::Replay;
pub use resolve::{
    DEFAULT_MAX_ANSWER_BYTES, Resolved, Vendor, from_resolved, from_spec, from_spec_with, resolve, resolve_with,
};
pub use secret::ApiKey;

#[cfg(feature = "http")]
pub use provider::ProviderConfig;

/// The vendor features compiled into this build, in the order `openai`, `anthropic`,
/// `gemini` (empty without any): what `ptc --version` reports.
///
/// ```
/// let features = ptc_providers::vendor_features();
/// assert_eq!(features.contains(&"openai"), cfg!(feature = "openai"));
/// ```
pub fn vendor_features() -> Vec<&'static str> {
    [
        ("openai", cfg!(feature = "openai")),
        ("anthropic", cfg!(feature = "anthropic")),
        ("gemini", cfg!(feature = "gemini")),
    ]
    .into_iter()
    .filter_map(|(name, on)| on.then_some(name))
    .collect()
}

/// The examples of this crate's `README.md`, compiled and run as doctests so that the
/// page crates.io shows cannot drift from the code.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
