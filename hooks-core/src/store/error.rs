//! [`StoreError`]: a store that could not answer.

use std::fmt;

/// A store that could not answer (a database down, a schema from another version).
/// `Display`: `the store failed: <message>`. When a claim fails, nothing runs (the session
/// cannot know whether the call was answered before); when recording an answer fails, the
/// answer is still returned and the failure goes to `tracing` (target `toolgate::memory`) and
/// the audit line's `detail`.
#[derive(Debug, Clone, PartialEq, Eq)]
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

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the store failed: {}", self.message)
    }
}

impl std::error::Error for StoreError {}
