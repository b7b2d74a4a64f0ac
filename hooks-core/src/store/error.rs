//! [`StoreError`] and its [`StoreErrorKind`]: a store that could not answer, or that refused an
//! answer its claim no longer holds the call for.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// What kind of failure a [`StoreError`] is, for a host that decides what to do next by it
/// (retry later, stop and migrate, page a person). The kinds follow the SQLSTATE classes of the
/// PostgreSQL manual (Appendix A, "PostgreSQL Error Codes") and SQLite's result codes
/// (sqlite.org, "Result and Error Codes"), as each store maps them below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The store could not be reached or did not answer in time: a connection refused or lost
    /// (SQLSTATE classes `08`, `57`, `53`), a transaction the server rolled back (`40`: a
    /// serialization failure, a deadlock), a file that cannot be opened or is locked past the
    /// busy timeout (`SQLITE_CANTOPEN`, `SQLITE_BUSY`, `SQLITE_IOERR`, `SQLITE_FULL`), a thread
    /// that would not start. The same request may succeed later.
    Unavailable,
    /// The database was written by another version of toolgate (its schema version is not this
    /// build's, its tables are missing or lack a column: `42P01`, `42703`): nothing was read or
    /// written. Use the toolgate that wrote it, or migrate.
    SchemaVersion,
    /// What the store holds, or was asked to keep, does not read or was refused as data: a row
    /// that does not parse, a value of the wrong type, a constraint the database enforces
    /// (classes `22`, `23`; `SQLITE_CONSTRAINT`, `SQLITE_CORRUPT`, `SQLITE_NOTADB`,
    /// `SQLITE_MISMATCH`). The same request fails again: a person must look.
    Corrupt,
    /// The store holds something other than the request assumed: the claim (or take) whose
    /// token came with an answer (or a resume) no longer holds its call (turn), because its lease
    /// ran out and another worker took it over ([`StoreError::fenced`]). The store kept what it
    /// holds; that is the call's answer.
    Conflict,
}

/// A store that could not answer (a database down, a schema from another version), or that
/// refused to record what a claim or a take no longer holds ([`is_fenced`](Self::is_fenced)).
///
/// [`kind`](Self::kind) says which ([`StoreErrorKind`]); [`source`](Error::source) is the
/// driver's own error when there is one (`tokio_postgres::Error`, `rusqlite::Error`,
/// `std::io::Error`), for a host that matches on it (`downcast_ref`).
///
/// `Display`: `the store failed: <message>`, or, for a [`Conflict`](StoreErrorKind::Conflict),
/// `the store refused it: <message>`. The message is whole: it already says what the source
/// says (the server's code and text), so one line in a log or an audit `detail` tells the
/// operator everything; a reporter that also walks `source()` repeats it.
///
/// When a claim fails, nothing runs (the session cannot know whether the call was answered
/// before); when recording an answer fails, the answer is still returned and the failure goes
/// to `tracing` (target `toolgate::memory`) and the audit line's `detail`; when an answer is
/// fenced, the call's answer is the one the store holds (ARCHITECTURE.md, "Contracts": "What
/// each store promises").
#[derive(Debug, Clone)]
pub struct StoreError(
    /// Boxed whole (one word): every call's future holds the result of an answer it records,
    /// and an error is the rare path.
    Box<Inner>,
);

#[derive(Debug, Clone)]
struct Inner {
    kind: StoreErrorKind,
    message: String,
    source: Option<Arc<dyn Error + Send + Sync>>,
}

impl StoreError {
    /// An error of `kind` with `message` (operator-only: never shown to the model). A store
    /// that cannot tell the kind says [`Unavailable`](StoreErrorKind::Unavailable).
    pub fn new(kind: StoreErrorKind, message: impl fmt::Display) -> Self {
        StoreError(Box::new(Inner {
            kind,
            message: message.to_string(),
            source: None,
        }))
    }

    /// A refusal, of kind [`Conflict`](StoreErrorKind::Conflict): the claim (or take) whose
    /// [`Token`](super::Token) came with an [`answered`](super::AnswerStore::answered) (or a
    /// [`resumed`](super::PendingStore::resumed)) no longer holds its call (turn): its lease ran
    /// out and another worker took it over, so the store keeps what it holds and records
    /// nothing. `message` says what it holds (operator-only).
    pub fn fenced(message: impl fmt::Display) -> Self {
        StoreError::new(StoreErrorKind::Conflict, message)
    }

    /// This error with `source` as its [`source`](Error::source): the driver's error it
    /// comes from, kept whole for a host that matches on its type.
    #[must_use]
    pub fn with_source(mut self, source: impl Error + Send + Sync + 'static) -> Self {
        self.0.source = Some(Arc::new(source));
        self
    }

    /// The kind.
    pub fn kind(&self) -> StoreErrorKind {
        self.0.kind
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// Whether this is a refusal ([`fenced`](Self::fenced), kind
    /// [`Conflict`](StoreErrorKind::Conflict)) rather than a store that could not answer.
    pub fn is_fenced(&self) -> bool {
        self.0.kind == StoreErrorKind::Conflict
    }

    /// The same error (kind and source kept) with `more` after its message: what the caller
    /// adds about where it failed (the PostgreSQL store's connect timeout).
    #[cfg(any(feature = "postgres", test))]
    pub(crate) fn amended(mut self, more: impl fmt::Display) -> Self {
        self.0.message = format!("{}{more}", self.0.message);
        self
    }
}

/// Two errors are equal when their kinds and messages are (a source has no equality of its own).
impl PartialEq for StoreError {
    fn eq(&self, other: &Self) -> bool {
        self.0.kind == other.0.kind && self.0.message == other.0.message
    }
}

impl Eq for StoreError {}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_fenced() {
            write!(f, "the store refused it: {}", self.0.message)
        } else {
            write!(f, "the store failed: {}", self.0.message)
        }
    }
}

impl Error for StoreError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0
            .source
            .as_deref()
            .map(|e| e as &(dyn Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_and_the_source_are_kept_and_the_text_is_whole() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let e = StoreError::new(
            StoreErrorKind::Unavailable,
            "PostgreSQL: claim failed: refused",
        )
        .with_source(io);
        assert_eq!(e.kind(), StoreErrorKind::Unavailable);
        assert_eq!(
            e.to_string(),
            "the store failed: PostgreSQL: claim failed: refused"
        );
        let source = e.source().expect("a source");
        assert_eq!(
            source
                .downcast_ref::<std::io::Error>()
                .map(std::io::Error::kind),
            Some(std::io::ErrorKind::ConnectionRefused)
        );
        let amended = e.clone().amended(" (after 10 ms)");
        assert_eq!(amended.kind(), StoreErrorKind::Unavailable);
        assert_eq!(
            amended.message(),
            "PostgreSQL: claim failed: refused (after 10 ms)"
        );
        assert!(amended.source().is_some(), "amending keeps the source");
        assert!(!e.is_fenced());
    }

    #[test]
    fn a_fenced_error_is_a_conflict_and_says_refused() {
        let e = StoreError::fenced("answered by another claim");
        assert_eq!(e.kind(), StoreErrorKind::Conflict);
        assert!(e.is_fenced());
        assert_eq!(
            e.to_string(),
            "the store refused it: answered by another claim"
        );
        assert!(e.source().is_none());
    }

    #[test]
    fn the_error_is_one_word() {
        assert_eq!(
            std::mem::size_of::<StoreError>(),
            std::mem::size_of::<usize>()
        );
        assert_eq!(
            std::mem::size_of::<Result<(), StoreError>>(),
            std::mem::size_of::<usize>()
        );
    }
}
