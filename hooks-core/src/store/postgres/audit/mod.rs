//! [`PostgresAuditSink`]: the audit trail in PostgreSQL, every worker's lines in one hash chain
//! per name, with the files' rule; its verifier ([`PostgresAuditSink::verify`]) and its export
//! to the JSONL files ([`PostgresAuditSink::export_jsonl`]).

mod verify;
mod writer;

pub use verify::{AuditHeads, ChainHead, HeadCheck, PostgresChain, PostgresVerification};
pub(crate) use writer::Writer;

use super::PostgresStore;
use crate::audit::{
    AUDIT_LOG_FILE, AuditRecord, AuditSink, DECISIONS_FILE, SESSION_SUMMARIES_FILE, SummaryRecord,
};
use crate::error::HookError;
use crate::store::error::{StoreError, StoreErrorKind};
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// One chain of the audit trail, by its name (the file name without `.jsonl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Chain {
    /// `audit_log`: one line per `tool_use`.
    Calls,
    /// `session_summaries`: one line per session.
    Sessions,
    /// `decisions`: one line per decision of the approval inbox (and per refused attempt),
    /// appended by the inbox in each decision's own transaction (feature `inbox`), never queued
    /// here; verified and exported with the others.
    Decisions,
}

impl Chain {
    fn name(self) -> &'static str {
        match self {
            Chain::Calls => "audit_log",
            Chain::Sessions => "session_summaries",
            Chain::Decisions => "decisions",
        }
    }

    /// The second key of the chain's advisory lock.
    fn lock_key(self) -> i32 {
        match self {
            Chain::Calls => 1,
            Chain::Sessions => 2,
            Chain::Decisions => 3,
        }
    }

    fn file(self) -> &'static str {
        match self {
            Chain::Calls => AUDIT_LOG_FILE,
            Chain::Sessions => SESSION_SUMMARIES_FILE,
            Chain::Decisions => DECISIONS_FILE,
        }
    }

    /// How a verification names the chain ([`ChainBreak::file`](crate::audit::ChainBreak)).
    fn label(self) -> PathBuf {
        PathBuf::from(format!("postgres:toolgate_audit/{}", self.name()))
    }
}

/// An [`AuditSink`] that appends every audit line (`audit_log`) and every session summary
/// (`session_summaries`) as a row of `toolgate_audit` in the store's database, each chain kept
/// with exactly the files' rule ([`AuditLog`](crate::audit::AuditLog#the-hash-chain)): a line's
/// `prev` is the SHA-256 of the previous line of its chain with its `\n`, the first line
/// carries [`CHAIN_START`](crate::audit::chain::CHAIN_START). Made by [`PostgresStore::audit_sink`]; cloning it is cheap.
///
/// **Many writers.** Any number of processes append to one chain per name: each append is one
/// transaction that takes the chain's advisory lock (`pg_advisory_xact_lock`, held until it
/// commits), then inserts the line with a statement that reads the chain's last line and hashes
/// it on the server, so every line follows the one committed before it. The table is only
/// inserted into and read, never updated or deleted from (its migration says how to revoke
/// `UPDATE` and `DELETE` from the application's role).
///
/// **Never blocking a call.** [`record`](AuditSink::record) is synchronous (the audit log's
/// observer calls it), so it only queues the line (at most 65 536 not yet written: past that,
/// a line is refused and reported on the observer channel). A writer task on the store's
/// runtime appends the queued lines in order, up to 256 per transaction (one round trip and
/// one commit for them all): after a line arrives it waits 10 ms for more, unless a
/// [`flush`](Self::flush) asks for them now. A batch whose connection is lost (the server
/// restarting, the backend terminated, a closed socket) is written again at once on a new
/// connection, as a store's statement is ([`PostgresStore`'s "A dropped
/// connection"](super#a-dropped-connection)), and no failure is reported: whether its commit
/// was done or not, no line is written twice (each line carries its writer's id and number,
/// unique in the table, and a line already there is not inserted again). A batch that fails
/// otherwise (the database unreachable past the connect timeout) is tried again, after a wait
/// growing from 50 ms to 5 s, until it is written. What it costs is in BENCHMARKS.md
/// ("PostgreSQL"): a few tens of microseconds per call, the commits overlapping the calls.
///
/// **At a crash.** A committed line is durable (the append waits for the server's WAL flush,
/// as `synchronous_commit` makes it). A process that dies loses the lines it had queued and not
/// yet committed: the last 10 ms or so, and every line the database refused while it was
/// unreachable; [`flush`](Self::flush) waits for them, and dropping the last handle of the
/// store waits up to 5 s for the queue to be written. A transaction cut by a crash leaves
/// nothing: the chain never has a torn line.
#[derive(Clone)]
pub struct PostgresAuditSink {
    /// Before `store`: fields drop in order, and the store's last handle waits for the writer,
    /// which ends only once every handle of its queue is gone.
    writer: Arc<Writer>,
    store: PostgresStore,
    flush_on_summary: Option<Duration>,
}

impl PostgresAuditSink {
    pub(crate) fn new(store: PostgresStore, writer: Arc<Writer>) -> PostgresAuditSink {
        PostgresAuditSink {
            writer,
            store,
            flush_on_summary: None,
        }
    }

    /// A sink of its own store connected with `settings` (as
    /// [`PostgresStore::connect`] reads them): for a binary that keeps its answer memory
    /// elsewhere. A host that also uses the store makes the sink with
    /// [`PostgresStore::audit_sink`] instead (one runtime thread and one set of connections).
    ///
    /// # Errors
    /// As [`PostgresStore::connect`].
    pub fn connect(settings: &str) -> Result<PostgresAuditSink, StoreError> {
        Ok(PostgresStore::connect(settings)?.audit_sink())
    }

    /// Also waits, when a session's summary is recorded (at [`Session::end`](crate::Session::end)
    /// or when a session is dropped), until every line queued so far is written, at most
    /// `timeout`: a session's lines are then committed when it ends. This blocks the thread
    /// ending the session for a commit (a few milliseconds); a flush that fails or runs out of
    /// time is reported on the observer channel, the lines staying queued.
    #[must_use]
    pub fn flush_on_summary(mut self, timeout: Duration) -> Self {
        self.flush_on_summary = Some(timeout);
        self
    }

    /// Waits until every line queued before the call is committed (each sink of the store
    /// shares the queue, so theirs too). The future may be awaited on any executor.
    ///
    /// # Errors
    /// A [`StoreError`] when an append fails while it waits (the database unreachable: the
    /// lines stay queued and are tried again), or when the writer has stopped.
    pub fn flush(&self) -> impl Future<Output = Result<(), StoreError>> + Send + 'static {
        let target = self.writer.last_queued();
        let mut status = self.writer.status.clone();
        let failures = status.borrow().failures;
        self.writer.hurry.notify_one();
        self.store.runtime().run("flush", async move {
            loop {
                {
                    let s = status.borrow_and_update();
                    if s.written >= target {
                        return Ok(());
                    }
                    if s.failures > failures {
                        return Err(StoreError::new(
                            StoreErrorKind::Unavailable,
                            format!(
                                "PostgreSQL: flush of the audit queue: {} lines are not written \
                             yet, and the last append failed: {}",
                                target - s.written,
                                s.error.as_deref().unwrap_or("(no message)")
                            ),
                        ));
                    }
                }
                if status.changed().await.is_err() {
                    return Err(StoreError::new(
                        StoreErrorKind::Unavailable,
                        "PostgreSQL: flush of the audit queue: the audit writer has stopped",
                    ));
                }
            }
        })
    }

    /// [`flush`](Self::flush), blocking the calling thread at most `timeout`.
    fn flush_blocking(&self, timeout: Duration) -> Result<(), StoreError> {
        let flush = self.flush();
        self.store.runtime().block_on("flush", async move {
            tokio::time::timeout(timeout, flush)
                .await
                .unwrap_or_else(|_| {
                    Err(StoreError::new(
                        StoreErrorKind::Unavailable,
                        format!(
                            "PostgreSQL: flush of the audit queue: not written within {} ms",
                            timeout.as_millis()
                        ),
                    ))
                })
        })
    }
}

impl fmt::Debug for PostgresAuditSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresAuditSink")
            .field("status", &*self.writer.status.borrow())
            .finish_non_exhaustive()
    }
}

impl AuditSink for PostgresAuditSink {
    fn record(&self, record: &AuditRecord) -> Result<(), HookError> {
        let mut object = Vec::with_capacity(512);
        record.write_json(&mut object);
        self.writer
            .queue(Chain::Calls, object)
            .map(drop)
            .map_err(HookError::new)
    }

    fn summary(&self, summary: &SummaryRecord) -> Result<(), HookError> {
        let mut object = Vec::with_capacity(512);
        summary
            .write_json(&mut object)
            .map_err(|e| HookError::new(e.to_string()))?;
        self.writer
            .queue(Chain::Sessions, object)
            .map_err(HookError::new)?;
        match self.flush_on_summary {
            Some(timeout) => self
                .flush_blocking(timeout)
                .map_err(|e| HookError::new(e.to_string())),
            None => Ok(()),
        }
    }

    fn name(&self) -> &str {
        "toolgate::store::postgres::PostgresAuditSink"
    }
}
