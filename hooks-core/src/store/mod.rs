//! What a session keeps between calls. Today that is its memory of the `tool_use` ids it
//! answered: you need this module to give sessions a memory of your own (a database, so a
//! conversation served by several processes runs nothing twice) or to change the in-memory
//! one's caps.
//!
//! A session's memory of the `tool_use` ids it answered, so a retried message runs nothing
//! twice: [`AnswerStore`] (the small async trait a host can back with its own database),
//! [`MemoryAnswerStore`] (the in-memory default, bounded), and the [`InputDigest`] each id is
//! remembered with.
//!
//! How a [`Session`](crate::Session) uses it, per `tool_use` (ARCHITECTURE.md, "Contracts": "Ids
//! and retries"):
//!
//! 1. [`claim`](AnswerStore::claim) the id with the input's digest: an atomic insert-if-absent.
//!    [`Claim::Claimed`]: the id is new and now in progress; the call runs.
//!    [`Claim::Seen`]: the id was seen before, and nothing runs:
//!    - answered ([`Remembered::Answered`]) with the same input: the remembered `tool_result` is
//!      the answer (a *replay*: observers see it with `replay: true`, counts leave it out);
//!    - still in progress ([`Remembered::InProgress`]): refused as in progress, an error the
//!      host waits on and retries (the first attempt's answer is then replayed);
//!    - cancelled after its tool started ([`Remembered::CancelledAfterStart`]): answered with an
//!      error saying the call was interrupted and is not run again;
//!    - any of these with another input: refused as an id reused with another input.
//! 2. When the call was answered: [`answered`](AnswerStore::answered) with its outcome and
//!    `tool_result`. When it was not (a `Halt`, or the host dropped the call):
//!    [`release`](AnswerStore::release), so a retry runs it; a call dropped after its tool
//!    started is kept as cancelled instead, never run again.
//!
//! Blocks that are `not_run` (a message cut at `max_tokens`, a refused id, blocks after a halt)
//! are never claimed: they were not answered, so a retry runs them.
//!
//! A host's store (given with `session_with_store`) receives [`InputDigest::of`], the stable
//! SHA-256 of the input's JSON text. The default store of `Dispatcher::session`, which nobody
//! outside the session can read, is given a cheaper key instead (`InputDigest::keyed`: SipHash
//! keyed at random per session); its answers, replays and refusals are the same.

pub(crate) mod digest;
pub(crate) mod memory;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::audit::outcome::Outcome;
use crate::base::future::BoxFuture;
use crate::content::ToolResult;

pub use digest::InputDigest;
pub use memory::MemoryAnswerStore;

/// What a store knows of an id it has seen.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Remembered {
    /// Claimed and not finished: a call with this id is running (a retry raced it).
    InProgress {
        /// The digest it was claimed with.
        digest: InputDigest,
    },
    /// Answered: the outcome and the `tool_result` the model was given.
    Answered {
        /// The digest it was claimed with.
        digest: InputDigest,
        /// Its outcome (`ok`, `blocked`, …; never `hook_failed`, `hook_timeout`, `not_run` or
        /// `cancelled`, which are not answers).
        outcome: Outcome,
        /// The answer.
        result: ToolResult,
    },
    /// The host dropped the call after its tool had started: it may have taken effect, so it
    /// is never run again.
    CancelledAfterStart {
        /// The digest it was claimed with.
        digest: InputDigest,
    },
}

impl Remembered {
    /// The digest the id was claimed with.
    pub fn digest(&self) -> InputDigest {
        match self {
            Remembered::InProgress { digest }
            | Remembered::Answered { digest, .. }
            | Remembered::CancelledAfterStart { digest } => *digest,
        }
    }
}

/// The answer of [`AnswerStore::claim`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Claim {
    /// The id was absent and is now [`Remembered::InProgress`] with the given digest: run it.
    Claimed,
    /// The id was present (nothing was changed): what the store knows of it.
    Seen(Remembered),
}

/// A store that could not answer (a database down). `Display`: `the answer store failed:
/// <message>`. When a claim fails, nothing runs (the session cannot know whether the id was
/// answered before); when recording an answer fails, the answer is still returned and the
/// failure goes to `tracing` (target `toolgate::memory`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the answer store failed: {message}")]
pub struct StoreError {
    message: String,
}

impl StoreError {
    /// An error with `message` (operator-only: never shown to the model).
    pub fn new(message: impl fmt::Display) -> Self {
        StoreError {
            message: message.to_string(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// The future of an [`AnswerStore`] method: ready at once (an in-memory store: no allocation)
/// or a boxed future (a database).
pub struct StoreFuture<'a, T>(StoreFutureInner<'a, T>);

enum StoreFutureInner<'a, T> {
    Ready(Option<T>),
    Pending(BoxFuture<'a, T>),
}

impl<'a, T> StoreFuture<'a, T> {
    /// An answer known now.
    pub fn ready(value: T) -> Self {
        StoreFuture(StoreFutureInner::Ready(Some(value)))
    }

    /// An answer still to come.
    pub fn boxed(future: impl Future<Output = T> + Send + 'a) -> Self {
        StoreFuture(StoreFutureInner::Pending(Box::pin(future)))
    }
}

impl<T> Unpin for StoreFuture<'_, T> {}

impl<T> Future for StoreFuture<'_, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match &mut self.get_mut().0 {
            StoreFutureInner::Ready(v) => {
                Poll::Ready(v.take().expect("a StoreFuture polled after it finished"))
            }
            StoreFutureInner::Pending(f) => f.as_mut().poll(cx),
        }
    }
}

/// Where a session remembers the `tool_use` ids it answered (one store per session: ids are
/// unique within a conversation, not across conversations).
///
/// The default is a [`MemoryAnswerStore`] per session; a host that runs one conversation
/// across several processes implements this on its own database and opens sessions with
/// [`Dispatcher::session_with_store`](crate::Dispatcher::session_with_store). See the module
/// docs for the order of calls.
///
/// A database implementation must make [`claim`](Self::claim) atomic (`INSERT … ON CONFLICT DO
/// NOTHING` then a read, in one transaction): two attempts racing on one id must see one
/// [`Claim::Claimed`] between them.
pub trait AnswerStore: Send + Sync {
    /// Atomically: when `tool_use_id` is absent, record it as in progress with `digest` and
    /// answer [`Claim::Claimed`]; when it is present, change nothing and answer
    /// [`Claim::Seen`] with what is recorded.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer: the call is then not run.
    fn claim<'a>(
        &'a self,
        tool_use_id: &'a str,
        digest: InputDigest,
    ) -> StoreFuture<'a, Result<Claim, StoreError>>;

    /// The claimed call of `result.tool_use_id` was answered with `result` (`outcome` says
    /// how): record it as [`Remembered::Answered`], keeping its digest.
    ///
    /// # Errors
    /// [`StoreError`] when it cannot be recorded (the host still gets the answer).
    fn answered<'a>(
        &'a self,
        outcome: Outcome,
        result: ToolResult,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// The claimed call of `tool_use_id` was not answered: forget it (a retry runs it), or,
    /// when `tool_started`, record it as [`Remembered::CancelledAfterStart`]. Synchronous,
    /// since it runs when the host drops a call future: it must not block (a database store
    /// queues the write).
    fn release(&self, tool_use_id: &str, tool_started: bool);
}
