//! [`StoreError`]: a store that could not answer, or that refused an answer its claim no longer
//! holds the call for.

use std::fmt;

/// A store that could not answer (a database down, a schema from another version), or that
/// refused to record what a claim or a take no longer holds ([`is_fenced`](Self::is_fenced)).
///
/// `Display`: `the store failed: <message>`, or, fenced, `the store refused it: <message>`.
/// When a claim fails, nothing runs (the session cannot know whether the call was answered
/// before); when recording an answer fails, the answer is still returned and the failure goes
/// to `tracing` (target `toolgate::memory`) and the audit line's `detail`; when an answer is
/// fenced, the call's answer is the one the store holds (ARCHITECTURE.md, "Contracts": "What
/// each store promises").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError {
    /// Boxed text (two words, not a `String`'s three): every call's future holds the result
    /// of an answer it records.
    message: Box<str>,
    fenced: bool,
}

impl StoreError {
    /// An error with `message` (operator-only: never shown to the model).
    pub fn new(message: impl fmt::Display) -> Self {
        StoreError {
            message: message.to_string().into_boxed_str(),
            fenced: false,
        }
    }

    /// A refusal: the claim (or take) whose [`Token`](super::Token) came with an
    /// [`answered`](super::AnswerStore::answered) (or a [`resumed`](super::PendingStore::resumed))
    /// no longer holds its call (turn): its lease ran out and another worker took it over, so
    /// the store keeps what it holds and records nothing. `message` says what it holds
    /// (operator-only).
    pub fn fenced(message: impl fmt::Display) -> Self {
        StoreError {
            message: message.to_string().into_boxed_str(),
            fenced: true,
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether this is a refusal ([`fenced`](Self::fenced)) rather than a store that could
    /// not answer.
    pub fn is_fenced(&self) -> bool {
        self.fenced
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.fenced {
            write!(f, "the store refused it: {}", self.message)
        } else {
            write!(f, "the store failed: {}", self.message)
        }
    }
}

impl std::error::Error for StoreError {}
