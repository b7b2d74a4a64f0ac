//! [`AuditSink`]: where audit records go (the JSONL files are the default one).

use crate::audit::record::{AuditRecord, SummaryRecord};
use crate::error::HookError;

/// A destination for audit records: a database, a log pipeline, a queue. Give it to
/// [`AuditLogBuilder::sink`](crate::audit::AuditLogBuilder::sink); the JSONL files of
/// [`AuditLog::open`](crate::audit::AuditLog::open) are the default sink.
///
/// Every sink of an [`AuditLog`](crate::audit::AuditLog) receives the same record, already redacted
/// ([`Redaction`](crate::audit::Redaction)), once per `tool_use` ([`record`](Self::record)) and
/// once per session ([`summary`](Self::summary)), in the order the sinks were added, the files
/// first. A sink that fails (returns an error or panics) is reported on the observer channel
/// (`tracing` target `toolgate::observer`, and the session's `observer_errors`, one per record
/// however many sinks failed) and never changes a call's result or keeps the other sinks from their
/// record.
///
/// A sink that writes JSON lines writes each record with
/// [`AuditRecord::write_json`](crate::audit::AuditRecord::write_json) (the bytes of
/// `serde_json::to_writer` in about half the instructions, with the C1 controls, U+2028 and
/// U+2029 escaped: one line for every reader) and each summary with
/// [`SummaryRecord::write_json`](crate::audit::SummaryRecord::write_json), as the files do.
///
/// Sinks are synchronous: the record of a call the host dropped unfinished (`cancelled`) and
/// the summary are written from `drop`, where nothing can be awaited. A sink backed by an async
/// client hands the record to a channel or a task and returns at once:
///
/// ```
/// use std::sync::mpsc;
/// use toolgate_core::audit::{AuditRecord, AuditSink};
/// use toolgate_core::dispatch::HookError;
///
/// /// Sends every record to a writer task (here a channel's receiver).
/// struct ToDatabase(mpsc::Sender<AuditRecord>);
///
/// impl AuditSink for ToDatabase {
///     fn record(&self, record: &AuditRecord) -> Result<(), HookError> {
///         self.0
///             .send(record.clone())
///             .map_err(|_| HookError::new("the database writer has stopped"))
///     }
/// }
///
/// let (tx, rx) = mpsc::channel();
/// let log = toolgate_core::audit::AuditLog::builder().sink(ToDatabase(tx)).build().unwrap();
/// # drop((log, rx));
/// ```
pub trait AuditSink: Send + Sync + 'static {
    /// Receives the record of one `tool_use`.
    ///
    /// # Errors
    /// A [`HookError`] whose message says what failed; it is reported on the observer channel
    /// as `audit sink NAME failed: MESSAGE`.
    fn record(&self, record: &AuditRecord) -> Result<(), HookError>;

    /// Receives the summary of one session, when it ends. The default does nothing.
    ///
    /// # Errors
    /// As [`record`](Self::record).
    fn summary(&self, summary: &SummaryRecord) -> Result<(), HookError> {
        let _ = summary;
        Ok(())
    }

    /// The name failures are reported under; by default the type's name.
    fn name(&self) -> &str {
        std::any::type_name::<Self>()
    }
}
