//! `ptc-llm`: the seam between the agent loop and a language model.
//!
//! The [`Llm`] trait asks a model for the next turn; [`LlmRequest`] carries the system
//! prompt, the conversation ([`Message`]s), the native tool schemas offered and options;
//! [`LlmResponse`] carries text and/or native tool calls and [`TokenUsage`]. Failures are
//! [`LlmError`]s classified by [`LlmErrorKind`], so retry policy can tell a rate limit from
//! a bad request without parsing messages. [`ModelPrice`] turns usage into US dollars.
//!
//! This crate exists so that a model client (`ptc-providers`, or your own) and the agent
//! loop (`ptc-subagent`) meet on a small trait and neither compiles the other. It must
//! never grow an interpreter, an async runtime or an HTTP client: types and one trait.
//!
//! A model that always answers the same text:
//!
//! ```
//! use std::future::Future;
//! use std::task::{Context, Poll, Waker};
//!
//! use ptc_llm::{BoxFuture, Llm, LlmError, LlmRequest, LlmResponse, Message};
//!
//! struct Echo;
//!
//! impl Llm for Echo {
//!     fn complete<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
//!         let last = match request.messages.last() {
//!             Some(Message::User { content }) => content.clone(),
//!             _ => String::new(),
//!         };
//!         Box::pin(async move { Ok(LlmResponse::text(last)) })
//!     }
//! }
//!
//! let request = LlmRequest { messages: vec![Message::user("hi")], turn: 1, ..Default::default() };
//! let mut answer = Echo.complete(&request);
//! let poll = answer.as_mut().poll(&mut Context::from_waker(Waker::noop()));
//! assert!(matches!(poll, Poll::Ready(Ok(r)) if r.content == "hi"));
//! ```

#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod error;
mod price;
mod request;
mod response;

use std::future::Future;
use std::pin::Pin;

pub use error::{LlmError, LlmErrorKind};
pub use price::ModelPrice;
pub use request::{LlmOptions, LlmRequest, Message, NativeToolCall, ToolSchema};
pub use response::{LlmResponse, TokenUsage};

/// A boxed, sendable future (the trait stays dyn-compatible: `Arc<dyn Llm>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A language model the agent loop can ask for the next turn.
pub trait Llm: Send + Sync {
    /// Produces the assistant's next message for `request`.
    fn complete<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>>;

    /// A short name for traces and errors (`"openai:gpt-4.1-mini"`, `"scripted"`).
    fn name(&self) -> String {
        "llm".to_string()
    }

    /// Whether the loop waits (real time) between retries of a failed request. A live
    /// vendor asks for the wait; a recording played back has no server to spare and
    /// answers `false`, so a recorded `Retry-After` never sleeps.
    fn retry_waits(&self) -> bool {
        true
    }

    /// A mission resumed from a checkpoint continues after `answered` requests this
    /// model object received before the checkpoint (see `SubAgentBuilder::resume_from`).
    /// A scripted or replayed model skips that many entries, so the resumed mission
    /// reads the answers an uninterrupted run would have; a live model has nothing to
    /// skip (the default). `Err` when the script or recording is shorter.
    fn resume_at(&self, answered: u64) -> Result<(), LlmError> {
        let _ = answered;
        Ok(())
    }
}

/// Forwards every method to the model behind the pointer, so `Arc<dyn Llm>` (what
/// `LlmRegistry` and `from_spec` give), `Box<dyn Llm>` and `&T` are models too:
/// `agent.run(&llm)` compiles with any of them.
macro_rules! forward_llm {
    ($($ptr:ty),*) => {$(
        impl<T: Llm + ?Sized> Llm for $ptr {
            fn complete<'a>(&'a self, request: &'a LlmRequest) -> BoxFuture<'a, Result<LlmResponse, LlmError>> {
                (**self).complete(request)
            }
            fn name(&self) -> String {
                (**self).name()
            }
            fn retry_waits(&self) -> bool {
                (**self).retry_waits()
            }
            fn resume_at(&self, answered: u64) -> Result<(), LlmError> {
                (**self).resume_at(answered)
            }
        }
    )*};
}

forward_llm!(&T, Box<T>, std::sync::Arc<T>);

/// The examples of this crate's `README.md`, compiled and run as doctests so that the
/// page crates.io shows cannot drift from the code.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
