//! The `Llm` trait and its types live in the `ptc-llm` crate (so a model client does not
//! compile the agent loop); they are re-exported here. This module adds what only the loop
//! needs: a model call with a panicking client contained.

use std::future::Future;

pub use ptc_llm::{
    BoxFuture, Llm, LlmError, LlmErrorKind, LlmOptions, LlmRequest, LlmResponse, Message, ModelPrice, NativeToolCall,
    TokenUsage, ToolSchema,
};

/// `llm.complete(request)` with a panic in the model client (while building the future or
/// while polling it) contained as an [`LlmErrorKind::Unknown`] error, which is not
/// retried: the mission ends in `llm_error` instead of unwinding through the caller.
pub(crate) fn complete_contained<'a>(
    llm: &'a (impl Llm + ?Sized),
    request: &'a LlmRequest,
) -> impl Future<Output = Result<LlmResponse, LlmError>> + Send + 'a {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    let panicked = |p: Box<dyn std::any::Any + Send>| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        LlmError::new(
            LlmErrorKind::Unknown,
            format!("the model client {:?} panicked: {what} (a bug in the client, not in the request)", llm.name()),
        )
    };
    let mut future = match catch_unwind(AssertUnwindSafe(|| llm.complete(request))) {
        Ok(f) => Some(f),
        Err(p) => return futures_ready(Err(panicked(p))),
    };
    futures_poll(std::future::poll_fn(move |cx| {
        let Some(f) = future.as_mut() else {
            return std::task::Poll::Ready(Err(LlmError::new(
                LlmErrorKind::Unknown,
                "the model request was polled after it ended",
            )));
        };
        match catch_unwind(AssertUnwindSafe(|| f.as_mut().poll(cx))) {
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Ok(std::task::Poll::Ready(r)) => {
                future = None;
                std::task::Poll::Ready(r)
            }
            Err(p) => {
                future = None;
                std::task::Poll::Ready(Err(panicked(p)))
            }
        }
    }))
}

/// One future type for both arms of [`complete_contained`].
fn futures_ready<'a>(r: Result<LlmResponse, LlmError>) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
    Box::pin(std::future::ready(r))
}

fn futures_poll<'a>(
    f: impl Future<Output = Result<LlmResponse, LlmError>> + Send + 'a,
) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
    Box::pin(f)
}
