//! Output modes, transports and per-tool exposure.
//!
//! An agent answers in one of four shapes ([`Mode`]): PTC-Lisp programs in fenced blocks
//! (the content transport), PTC-Lisp programs through one native `lisp_eval` tool, plain
//! text (with a native tool loop), or text with `lisp_eval` as an escape hatch for
//! deterministic compute (combined mode). Each tool says which layer may call it
//! ([`Exposure`]); when it does not, the mode decides.

use std::fmt;
use std::sync::Arc;

use ptc_lisp_eval::Exposure;
use serde_json::Value as Json;

/// How the model answers and how programs reach the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Mode {
    /// PTC-Lisp in one fenced block per answer (the content transport; the default).
    #[default]
    Lisp,
    /// PTC-Lisp through exactly one native `lisp_eval` tool per answer; a direct text
    /// answer is the final answer, validated against the signature.
    LispTool,
    /// Text answers (JSON validated against the signature when it is structured), with
    /// the agent's tools offered natively.
    Text,
    /// Text mode plus the native `lisp_eval` tool: programs compute over tool results,
    /// their outcome is a tool result, and the model writes the final answer.
    Combined,
}

impl Mode {
    /// `lisp`, `lisp-tool`, `text` or `combined`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Lisp => "lisp",
            Mode::LispTool => "lisp-tool",
            Mode::Text => "text",
            Mode::Combined => "combined",
        }
    }

    /// True for the modes whose answer is text (text and combined).
    pub fn is_text(self) -> bool {
        matches!(self, Mode::Text | Mode::Combined)
    }

    /// True for the modes that offer `lisp_eval` natively.
    pub fn has_lisp_eval(self) -> bool {
        matches!(self, Mode::LispTool | Mode::Combined)
    }

    /// The exposure of a tool that does not say: programs in the PTC-Lisp modes, the
    /// native layer in the text modes.
    pub fn default_expose(self) -> Exposure {
        if self.is_text() { Exposure::Native } else { Exposure::Program }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A custom preview: gets the full result, returns the JSON object the model sees (or an
/// error message; the metadata preview is shown instead).
pub type PreviewFn = Arc<dyn Fn(&Json) -> Result<Json, String> + Send + Sync>;

/// What the model sees when it calls a cached `both` tool natively; the full result stays
/// in the run's cache for programs.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum NativeResult {
    /// `result_count`, a JSON-Schema-ish `schema` and `sample_keys`; no row values.
    #[default]
    Metadata,
    /// The first `limit` rows verbatim (default 20), `result_count` and `schema`.
    Rows {
        /// Rows shown.
        limit: usize,
    },
    /// Whatever the function returns (a JSON object), merged with the cache fields.
    Custom(PreviewFn),
}

impl fmt::Debug for NativeResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NativeResult::Metadata => f.write_str("Metadata"),
            NativeResult::Rows { limit } => f.debug_struct("Rows").field("limit", limit).finish(),
            NativeResult::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

impl NativeResult {
    /// The rows preview with the default limit of 20.
    pub fn rows() -> Self {
        NativeResult::Rows { limit: 20 }
    }

    /// A custom preview function.
    pub fn custom<F>(f: F) -> Self
    where
        F: Fn(&Json) -> Result<Json, String> + Send + Sync + 'static,
    {
        NativeResult::Custom(Arc::new(f))
    }
}
