//! Recording: a wrapper [`Llm`] that writes every exchange as one JSON line.
//!
//! A line holds the request, and the response or the error, exactly as the agent loop saw
//! them. Nothing else: no URL, no header, no key. Recordings are the input of [`Replay`]
//! (crate::Replay), which turns a recorded run into an offline, deterministic one.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ptc_llm::{BoxFuture, Llm, LlmError, LlmErrorKind, LlmRequest, LlmResponse};
use serde::{Deserialize, Serialize};

/// Version of the recording line format.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// One recorded exchange (one line of a recording).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedExchange {
    /// Line format version (1 today).
    pub v: u32,
    /// 1-based position of the request in the run.
    pub index: u64,
    /// Which model answered (`Llm::name` of the recorded model).
    pub llm: String,
    /// The request, as the loop built it.
    pub request: LlmRequest,
    /// The answer, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<LlmResponse>,
    /// The failure, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RecordedError>,
}

/// A recorded [`LlmError`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedError {
    /// The error's kind.
    pub kind: LlmErrorKind,
    /// The error's message.
    pub message: String,
    /// HTTP status, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// `Retry-After` in milliseconds, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl From<&LlmError> for RecordedError {
    fn from(error: &LlmError) -> Self {
        RecordedError {
            kind: error.kind,
            message: error.message.clone(),
            status: error.status,
            retry_after_ms: error.retry_after.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        }
    }
}

impl From<&RecordedError> for LlmError {
    fn from(recorded: &RecordedError) -> Self {
        let mut error = LlmError::new(recorded.kind, recorded.message.clone());
        error.status = recorded.status;
        error.retry_after = recorded.retry_after_ms.map(Duration::from_millis);
        error
    }
}

/// Wraps a model and appends each exchange to a JSON-lines file.
pub struct Recorder {
    inner: Arc<dyn Llm>,
    path: PathBuf,
    state: Mutex<RecorderState>,
}

struct RecorderState {
    file: File,
    next_index: u64,
}

impl Recorder {
    /// Records `inner`'s exchanges into `path` (created or truncated now, so a bad path
    /// fails before the first request rather than after a paid one).
    pub fn create(inner: Arc<dyn Llm>, path: impl AsRef<Path>) -> Result<Self, LlmError> {
        let path = path.as_ref().to_path_buf();
        let file = File::create(&path).map_err(|e| {
            LlmError::new(LlmErrorKind::ConfigError, format!("cannot create the recording {}: {e}", path.display()))
        })?;
        Ok(Recorder { inner, path, state: Mutex::new(RecorderState { file, next_index: 1 }) })
    }

    /// The recording's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write(&self, request: &LlmRequest, outcome: &Result<LlmResponse, LlmError>) -> Result<(), LlmError> {
        let mut state = self.state.lock().map_err(|_| {
            LlmError::new(LlmErrorKind::Unknown, "the recorder's lock was poisoned by an earlier panic")
        })?;
        let exchange = RecordedExchange {
            v: FORMAT_VERSION,
            index: state.next_index,
            llm: self.inner.name(),
            request: request.clone(),
            response: outcome.as_ref().ok().cloned(),
            error: outcome.as_ref().err().map(RecordedError::from),
        };
        let mut line = serde_json::to_string(&exchange)
            .map_err(|e| LlmError::new(LlmErrorKind::Unknown, format!("cannot encode a recorded exchange: {e}")))?;
        line.push('\n');
        state.file.write_all(line.as_bytes()).and_then(|()| state.file.flush()).map_err(|e| {
            LlmError::new(LlmErrorKind::Unknown, format!("cannot write the recording {}: {e}", self.path.display()))
        })?;
        state.next_index += 1;
        Ok(())
    }
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("inner", &self.inner.name()).field("path", &self.path).finish()
    }
}

impl Llm for Recorder {
    fn complete<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
        Box::pin(async move {
            let outcome = self.inner.complete(request).await;
            // A recording that silently misses an exchange would replay wrongly: fail loudly.
            self.write(request, &outcome)?;
            outcome
        })
    }

    fn name(&self) -> String {
        self.inner.name()
    }

    fn retry_waits(&self) -> bool {
        self.inner.retry_waits()
    }

    fn resume_at(&self, answered: u64) -> Result<(), LlmError> {
        self.inner.resume_at(answered)
    }
}
