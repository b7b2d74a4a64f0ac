//! [`PostgresAuditSink`]: the audit trail in PostgreSQL, every worker's lines in one hash chain
//! per name, with the files' rule; its verifier ([`PostgresAuditSink::verify`]) and its export
//! to the JSONL files ([`PostgresAuditSink::export_jsonl`]).

use std::collections::VecDeque;
use std::fmt;
use std::fs::OpenOptions;
use std::future::Future;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, mpsc, watch};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, Statement};

use super::conn::{
    Lane, OpenFailed, Pool, Resends, db_error, is_lost, open, opening, reopen_window,
};
use super::runtime::Runtime;
use super::{PostgresStore, sql};
use crate::audit::chain::{CHAIN_START, hash, hex_string, parse_hex};
use crate::audit::verify::{ChainLines, ChainStatus, KEEP_LAST_HASHES, verify_lines};
use crate::audit::{AUDIT_LOG_FILE, AuditRecord, AuditSink, SESSION_SUMMARIES_FILE, SummaryRecord};
use crate::base::future::join_all;
use crate::error::HookError;
use crate::store::error::StoreError;

/// The most lines a sink keeps queued and not yet written: past it, a record is refused (the
/// audit log reports it on the observer channel; the call is not affected).
const MAX_QUEUED: usize = 65_536;
/// The most lines one transaction appends.
const MAX_BATCH: usize = 256;
/// How long the writer waits, after a line arrives, for more to append in the same transaction
/// (unless a flush asks for the lines now): one commit for a few lines instead of one each.
const LINGER: Duration = Duration::from_millis(10);
/// The first wait after a failed append, doubled after each failure up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// The rows a verification or an export reads per statement.
const PAGE: i64 = 1000;

/// One chain of the audit trail, by its name (the file name without `.jsonl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Chain {
    /// `audit_log`: one line per `tool_use`.
    Calls,
    /// `session_summaries`: one line per session.
    Sessions,
}

impl Chain {
    fn name(self) -> &'static str {
        match self {
            Chain::Calls => "audit_log",
            Chain::Sessions => "session_summaries",
        }
    }

    /// The second key of the chain's advisory lock.
    fn lock_key(self) -> i32 {
        match self {
            Chain::Calls => 1,
            Chain::Sessions => 2,
        }
    }

    fn file(self) -> &'static str {
        match self {
            Chain::Calls => AUDIT_LOG_FILE,
            Chain::Sessions => SESSION_SUMMARIES_FILE,
        }
    }

    /// How a verification names the chain ([`ChainBreak::file`](crate::audit::ChainBreak)).
    fn label(self) -> PathBuf {
        PathBuf::from(format!("postgres:toolgate_audit/{}", self.name()))
    }
}

/// One queued line: its chain, the record's JSON object without its closing `}` and with a `,`
/// after its last member, and its number in the queue.
struct Line {
    chain: Chain,
    head: Vec<u8>,
    n: u64,
}

/// What the writer task has done: the number of the last line committed, and its failures.
#[derive(Debug, Clone, Default)]
struct Status {
    written: u64,
    failures: u64,
    error: Option<String>,
}

/// The queue of one store's sinks, and the writer task that empties it.
pub(crate) struct Writer {
    /// The sending end and the next line's number, together: a line's number is its place in
    /// the queue.
    queue: Mutex<(mpsc::Sender<Line>, u64)>,
    status: watch::Receiver<Status>,
    /// Wakes the writer from its linger (a flush wants the lines now).
    hurry: Arc<Notify>,
}

impl Writer {
    /// Starts the writer task on `runtime` (awaited when the store stops, so what is queued is
    /// written first), with a connection of its own.
    pub(crate) fn start(runtime: &Runtime, config: Config) -> Arc<Writer> {
        let (tx, rx) = mpsc::channel(MAX_QUEUED);
        let (status_tx, status) = watch::channel(Status::default());
        let hurry = Arc::new(Notify::new());
        let task = write_queue(rx, config, status_tx, Arc::clone(&hurry), writer_id());
        runtime.spawn_drained(task);
        Arc::new(Writer {
            queue: Mutex::new((tx, 1)),
            status,
            hurry,
        })
    }

    /// Queues `object` (one JSON object) on `chain`; returns its number.
    fn queue(&self, chain: Chain, mut object: Vec<u8>) -> Result<u64, String> {
        if object.pop() != Some(b'}') {
            return Err("an audit line must be a JSON object".to_owned());
        }
        if object != b"{" {
            object.push(b',');
        }
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let n = queue.1;
        let line = Line {
            chain,
            head: object,
            n,
        };
        queue.0.try_send(line).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => format!(
                "the PostgreSQL audit queue is full ({MAX_QUEUED} lines not yet written: is the \
                 database reachable?); this line is lost"
            ),
            mpsc::error::TrySendError::Closed(_) => {
                "the PostgreSQL audit writer has stopped; this line is lost".to_owned()
            }
        })?;
        queue.1 += 1;
        Ok(n)
    }

    /// The number of the last line queued (0: none).
    fn last_queued(&self) -> u64 {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner).1 - 1
    }
}

/// A number no other writer uses: the process id and the time, hashed with a random key.
fn writer_id() -> i64 {
    use std::hash::BuildHasher;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let n = std::hash::RandomState::new().hash_one((std::process::id(), nanos));
    i64::from_ne_bytes(n.to_ne_bytes())
}

/// The writer task: takes the queued lines in order, up to [`MAX_BATCH`] at a time (waiting
/// [`LINGER`] for more after the first, unless a flush hurries it), and appends each batch in
/// one transaction; a batch that fails is tried again (after a wait that grows to
/// [`MAX_BACKOFF`]) until it is written. Ends when every sender is gone and the queue is empty.
async fn write_queue(
    mut rx: mpsc::Receiver<Line>,
    config: Config,
    status: watch::Sender<Status>,
    hurry: Arc<Notify>,
    writer: i64,
) {
    let mut conn: Option<WriterConn> = None;
    let mut batch: Vec<Line> = Vec::new();
    let mut backoff = MIN_BACKOFF;
    loop {
        if batch.is_empty() {
            match rx.recv().await {
                Some(line) => batch.push(line),
                None => return,
            }
            if !rx.is_closed() {
                let _ = tokio::time::timeout(LINGER, hurry.notified()).await;
            }
        }
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(line) => batch.push(line),
                Err(_) => break,
            }
        }
        match append(&mut conn, &config, &batch, writer).await {
            Ok(()) => {
                let last = batch.last().map_or(0, |l| l.n);
                batch.clear();
                status.send_modify(|s| s.written = last);
                backoff = MIN_BACKOFF;
            }
            Err(e) => {
                tracing::error!(target: "toolgate::observer", error = %e, lines = batch.len(),
                    "audit lines could not be written to PostgreSQL; they stay queued and are \
                     tried again");
                status.send_modify(|s| {
                    s.failures += 1;
                    s.error = Some(e.message().to_owned());
                });
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// The writer's connection and statements.
struct WriterConn {
    client: Client,
    begin: Statement,
    commit: Statement,
    lock: Statement,
    append: Statement,
}

impl WriterConn {
    /// Opens the writer's connection, waiting within the connect timeout for a server that is
    /// unavailable now (restarting).
    async fn open(config: &Config) -> Result<WriterConn, StoreError> {
        opening(reopen_window(config), || async {
            let client = open(config).await?;
            let prepared = async {
                Ok::<_, tokio_postgres::Error>((
                    client.prepare(sql::BEGIN).await?,
                    client.prepare(sql::COMMIT).await?,
                    client.prepare(sql::LOCK_CHAIN).await?,
                    client.prepare(sql::APPEND).await?,
                ))
            };
            let (begin, commit, lock, append) = prepared
                .await
                .map_err(|e| OpenFailed::new("preparing the audit statements", &e))?;
            Ok(WriterConn {
                client,
                begin,
                commit,
                lock,
                append,
            })
        })
        .await
        .map_err(OpenFailed::into_error)
    }

    /// Appends `batch` in one transaction, every statement sent at once (one round trip and
    /// one commit for the batch): `BEGIN`, each chain's lock in a fixed order (so writers never
    /// deadlock), one `INSERT` per line, `COMMIT`. Any statement that fails rolls it all back.
    async fn write(&self, batch: &[Line], writer: i64) -> Result<(), tokio_postgres::Error> {
        let mut chains: Vec<Chain> = batch.iter().map(|l| l.chain).collect();
        chains.sort();
        chains.dedup();
        let keys: Vec<i32> = chains.iter().map(|c| c.lock_key()).collect();
        let names: Vec<&str> = batch.iter().map(|l| l.chain.name()).collect();
        let ns: Vec<i64> = batch.iter().map(|l| l.n as i64).collect();
        let class = sql::LOCK_CLASS;
        let locks: Vec<[&(dyn ToSql + Sync); 2]> =
            keys.iter().map(|k| [&class as _, k as _]).collect();
        let appends: Vec<[&(dyn ToSql + Sync); 4]> = batch
            .iter()
            .enumerate()
            .map(|(i, l)| [&names[i] as _, &l.head as _, &writer as _, &ns[i] as _])
            .collect();
        let mut statements: Vec<Execute<'_>> = Vec::with_capacity(batch.len() + keys.len() + 2);
        statements.push(Box::pin(self.client.execute(&self.begin, &[])));
        for params in &locks {
            statements.push(Box::pin(self.client.execute(&self.lock, params)));
        }
        for params in &appends {
            statements.push(Box::pin(self.client.execute(&self.append, params)));
        }
        statements.push(Box::pin(self.client.execute(&self.commit, &[])));
        for result in join_all(statements).await {
            result?;
        }
        Ok(())
    }
}

/// One statement's future, boxed to be polled with the others of a transaction.
type Execute<'a> = Pin<Box<dyn Future<Output = Result<u64, tokio_postgres::Error>> + Send + 'a>>;

/// Appends `batch` on the writer's connection, opened first when there is none or it was lost.
/// A batch whose connection is lost ([`is_lost`]), before, while or after its transaction
/// commits, is written again at once on a new connection (as [`Resends`] allows):
/// a line already committed is not written twice, since each line carries its writer's id and
/// number, unique in the table, and [`sql::APPEND`] inserts nothing for a line already there.
async fn append(
    conn: &mut Option<WriterConn>,
    config: &Config,
    batch: &[Line],
    writer: i64,
) -> Result<(), StoreError> {
    let mut resends = Resends::new(config);
    loop {
        let c = match conn.take() {
            Some(c) if !c.client.is_closed() => conn.insert(c),
            _ => conn.insert(WriterConn::open(config).await?),
        };
        resends.sent();
        let Err(e) = c.write(batch, writer).await else {
            return Ok(());
        };
        let lost = is_lost(&e) || c.client.is_closed();
        if lost {
            *conn = None;
        }
        if !lost || !resends.again() {
            return Err(db_error("appending audit lines", &e));
        }
    }
}

/// An [`AuditSink`] that appends every audit line (`audit_log`) and every session summary
/// (`session_summaries`) as a row of `toolgate_audit` in the store's database, each chain kept
/// with exactly the files' rule ([`AuditLog`](crate::audit::AuditLog#the-hash-chain)): a line's
/// `prev` is the SHA-256 of the previous line of its chain with its `\n`, the first line
/// carries [`CHAIN_START`]. Made by [`PostgresStore::audit_sink`]; cloning it is cheap.
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
                        return Err(StoreError::new(format!(
                            "PostgreSQL: flush of the audit queue: {} lines are not written \
                             yet, and the last append failed: {}",
                            target - s.written,
                            s.error.as_deref().unwrap_or("(no message)")
                        )));
                    }
                }
                if status.changed().await.is_err() {
                    return Err(StoreError::new(
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
                    Err(StoreError::new(format!(
                        "PostgreSQL: flush of the audit queue: not written within {} ms",
                        timeout.as_millis()
                    )))
                })
        })
    }

    /// Verifies both chains in the database (`audit_log`, `session_summaries`), with the audit
    /// files' verifier's rules and code: each chain read in `seq` order from its start
    /// ([`CHAIN_START`]), `ok` with its line count and last hash, or the first line edited,
    /// deleted, inserted or reordered (line numbers count from 1 in the chain, as in the export
    /// of [`export_jsonl`](Self::export_jsonl); the break's `file` is
    /// `postgres:toolgate_audit/<chain>`). With `kept`, the heads kept elsewhere from an earlier
    /// verification, it also finds what the chain alone cannot show: lines deleted from the end
    /// ([`HeadCheck::Truncated`]) or the kept last line changed ([`HeadCheck::Changed`]).
    ///
    /// Reads the chains a page of 1 000 rows at a time (memory stays small), on a thread of the
    /// store's runtime; the future may be awaited on any executor. Lines appended while it runs
    /// may or may not be counted.
    ///
    /// # Errors
    /// A [`StoreError`] when the database cannot be read.
    pub fn verify(
        &self,
        kept: Option<&AuditHeads>,
    ) -> impl Future<Output = Result<PostgresVerification, StoreError>> + Send + 'static {
        let kept = kept.cloned();
        let reader = self.reader();
        let handle = self.store.runtime().handle().clone();
        self.store.runtime().run("verify", async move {
            let task = handle.spawn_blocking(move || reader.verify(kept.as_ref()));
            task.await.unwrap_or_else(|e| {
                Err(StoreError::new(format!(
                    "PostgreSQL: verify: the check failed: {e}"
                )))
            })
        })
    }

    /// Writes both chains to `dir` (created if missing) as the audit files: `audit_log.jsonl`
    /// and `session_summaries.jsonl`, each row's line and its `\n`, in `seq` order, byte for
    /// byte, so the files' verifier ([`verify_audit_dir`](crate::audit::verify_audit_dir))
    /// checks them. Returns the number of lines written to each (calls, sessions).
    ///
    /// # Errors
    /// A [`StoreError`] when the database cannot be read, or a file cannot be made; a file
    /// that exists is not overwritten (kind `AlreadyExists` in the message).
    pub fn export_jsonl(
        &self,
        dir: impl AsRef<Path>,
    ) -> impl Future<Output = Result<(u64, u64), StoreError>> + Send + 'static {
        let dir = dir.as_ref().to_path_buf();
        let reader = self.reader();
        let handle = self.store.runtime().handle().clone();
        self.store.runtime().run("export", async move {
            let task = handle.spawn_blocking(move || reader.export(&dir));
            task.await.unwrap_or_else(|e| {
                Err(StoreError::new(format!(
                    "PostgreSQL: export: it failed: {e}"
                )))
            })
        })
    }

    fn reader(&self) -> Reader {
        Reader {
            pool: self.store.pool(),
            handle: self.store.runtime().handle().clone(),
        }
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

/// What to keep elsewhere of a verified chain (another system, a signed message) to catch, at
/// a later verification, lines deleted from its end or its last line changed: its line count
/// and the SHA-256 (hex) of its last line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    /// Lines in the chain.
    pub lines: u64,
    /// The SHA-256 (64 lowercase hex digits) of its last line with its `\n`
    /// ([`CHAIN_START`] for an empty chain).
    pub last_hash: String,
}

/// The heads of both chains ([`PostgresVerification::heads`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditHeads {
    /// `audit_log`'s.
    pub calls: ChainHead,
    /// `session_summaries`'.
    pub sessions: ChainHead,
}

/// Whether a kept [`ChainHead`] still holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeadCheck {
    /// No head was given.
    NotGiven,
    /// The chain still has the kept line, with the kept hash, at the kept place (lines may
    /// have been appended after it).
    Holds,
    /// The chain is shorter than the kept head: lines were deleted from its end.
    Truncated {
        /// The head kept.
        kept: ChainHead,
        /// The lines the chain has now.
        lines: u64,
    },
    /// The line at the kept head's place has another hash: it (and maybe lines before it) was
    /// changed, or the chain was rewritten.
    Changed {
        /// The head kept.
        kept: ChainHead,
        /// The hash of the line at its place now.
        found: String,
    },
}

impl fmt::Display for HeadCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeadCheck::NotGiven => f.write_str("no head kept to compare with"),
            HeadCheck::Holds => f.write_str("the kept head holds"),
            HeadCheck::Truncated { kept, lines } => write!(
                f,
                "the chain has {lines} lines, fewer than the {} of the kept head: lines were \
                 deleted from its end",
                kept.lines
            ),
            HeadCheck::Changed { kept, found } => write!(
                f,
                "line {} has hash {found}, not the kept head's {}: the line was changed",
                kept.lines, kept.last_hash
            ),
        }
    }
}

/// One chain in the database: what the files' rules find, and the kept head's check.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostgresChain {
    /// The chain's name (`audit_log`, `session_summaries`).
    pub chain: &'static str,
    /// The verdict of the files' rules ([`verify_audit_dir`](crate::audit::verify_audit_dir)'s).
    pub status: ChainStatus,
    /// The kept head's check ([`HeadCheck::NotGiven`] without one, or when the chain breaks).
    pub head: HeadCheck,
}

impl PostgresChain {
    /// Whether the chain verifies and the kept head (if any) holds.
    pub fn is_ok(&self) -> bool {
        self.status.is_ok() && matches!(self.head, HeadCheck::NotGiven | HeadCheck::Holds)
    }

    /// The head to keep for the next verification, when the chain verifies.
    pub fn head(&self) -> Option<ChainHead> {
        match &self.status {
            ChainStatus::Ok { lines, last_hash } => Some(ChainHead {
                lines: *lines,
                last_hash: last_hash.clone(),
            }),
            ChainStatus::Broken(_) => None,
        }
    }
}

impl fmt::Display for PostgresChain {
    /// `audit_log: ok, 15 lines, last hash 3f…` with the head's check, or `audit_log: broken:`
    /// and the break (as a folder's check reads).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.status.is_ok() { "" } else { "broken: " };
        write!(f, "{}: {verdict}{}", self.chain, self.status)?;
        match self.head {
            HeadCheck::NotGiven => Ok(()),
            ref head => write!(f, "; {head}"),
        }
    }
}

/// What [`PostgresAuditSink::verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostgresVerification {
    /// `audit_log`.
    pub calls: PostgresChain,
    /// `session_summaries`.
    pub sessions: PostgresChain,
}

/// One line per chain, each with its `\n`, then, when both verify, the reminder a folder's check
/// ends with too ([`KEEP_LAST_HASHES`](crate::audit::KEEP_LAST_HASHES)): what `toolgate audit
/// verify postgres://…` prints.
impl fmt::Display for PostgresVerification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.calls)?;
        writeln!(f, "{}", self.sessions)?;
        if self.is_ok() {
            writeln!(f, "{KEEP_LAST_HASHES}")?;
        }
        Ok(())
    }
}

impl PostgresVerification {
    /// Whether both chains verify and their kept heads (if any) hold.
    pub fn is_ok(&self) -> bool {
        self.calls.is_ok() && self.sessions.is_ok()
    }

    /// Both heads, to keep for the next verification, when both chains verify.
    pub fn heads(&self) -> Option<AuditHeads> {
        Some(AuditHeads {
            calls: self.calls.head()?,
            sessions: self.sessions.head()?,
        })
    }
}

/// Reads chains a page at a time, from a thread that may block (one of the runtime's blocking
/// threads): each page is a statement sent to the runtime.
struct Reader {
    pool: Arc<Pool>,
    handle: tokio::runtime::Handle,
}

/// Runs `work` on the runtime from a blocking thread and waits for its answer.
fn wait<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
) -> Result<T, StoreError> {
    let (tx, rx) = std::sync::mpsc::channel();
    handle.spawn(async move {
        let _ = tx.send(work.await);
    });
    rx.recv().unwrap_or_else(|_| {
        Err(StoreError::new(
            "PostgreSQL: the store's runtime has stopped",
        ))
    })
}

impl Reader {
    fn lines(&self, chain: Chain) -> RowLines<'_> {
        RowLines {
            reader: self,
            chain,
            after: 0,
            page: VecDeque::new(),
            done: false,
        }
    }

    fn verify(&self, kept: Option<&AuditHeads>) -> Result<PostgresVerification, StoreError> {
        let calls = self.verify_chain(Chain::Calls, kept.map(|k| &k.calls))?;
        let sessions = self.verify_chain(Chain::Sessions, kept.map(|k| &k.sessions))?;
        Ok(PostgresVerification { calls, sessions })
    }

    fn verify_chain(
        &self,
        chain: Chain,
        kept: Option<&ChainHead>,
    ) -> Result<PostgresChain, StoreError> {
        let start = parse_hex(CHAIN_START).unwrap_or_default();
        let status = verify_lines(&chain.label(), start, || Ok(self.lines(chain)))
            .map_err(|e| StoreError::new(format!("PostgreSQL: verify: {e}")))?;
        let head = match (&status, kept) {
            (ChainStatus::Ok { lines, last_hash }, Some(kept)) => {
                self.check_head(chain, *lines, last_hash, kept)?
            }
            _ => HeadCheck::NotGiven,
        };
        Ok(PostgresChain {
            chain: chain.name(),
            status,
            head,
        })
    }

    /// Whether `kept` holds on a chain of `lines` lines whose last hash is `last_hash`.
    fn check_head(
        &self,
        chain: Chain,
        lines: u64,
        last_hash: &str,
        kept: &ChainHead,
    ) -> Result<HeadCheck, StoreError> {
        if lines < kept.lines {
            return Ok(HeadCheck::Truncated {
                kept: kept.clone(),
                lines,
            });
        }
        let found = if lines == kept.lines {
            last_hash.to_owned()
        } else if kept.lines == 0 {
            CHAIN_START.to_owned()
        } else {
            let pool = Arc::clone(&self.pool);
            let at = (kept.lines - 1) as i64;
            let line: Vec<u8> = wait(&self.handle, async move {
                let what = "verify: reading the kept head's line";
                let rows = pool
                    .query(Lane::Shared, &what, |st| &st.line_at, &[&chain.name(), &at])
                    .await?;
                rows.first()
                    .map(|r| r.try_get::<_, Vec<u8>>(0))
                    .transpose()
                    .map_err(|e| db_error(what, &e))
                    .map(Option::unwrap_or_default)
            })?;
            let mut text = line;
            text.push(b'\n');
            hex_string(&hash(&text))
        };
        Ok(if found == kept.last_hash {
            HeadCheck::Holds
        } else {
            HeadCheck::Changed {
                kept: kept.clone(),
                found,
            }
        })
    }

    fn export(&self, dir: &Path) -> Result<(u64, u64), StoreError> {
        let failed = |e: io::Error, path: &Path| {
            StoreError::new(format!("PostgreSQL: export to `{}`: {e}", path.display()))
        };
        std::fs::create_dir_all(dir).map_err(|e| failed(e, dir))?;
        let mut counts = [0u64; 2];
        for (i, chain) in [Chain::Calls, Chain::Sessions].into_iter().enumerate() {
            let path = dir.join(chain.file());
            let file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|e| failed(e, &path))?;
            let mut out = BufWriter::new(file);
            let mut lines = self.lines(chain);
            let mut line = Vec::new();
            while lines.next_line(&mut line).map_err(|e| failed(e, &path))? {
                out.write_all(&line).map_err(|e| failed(e, &path))?;
                line.clear();
                counts[i] += 1;
            }
            out.into_inner()
                .map_err(|e| failed(e.into_error(), &path))?
                .sync_all()
                .map_err(|e| failed(e, &path))?;
        }
        Ok((counts[0], counts[1]))
    }
}

/// A chain's lines from the database, in `seq` order, each with its `\n`, a page at a time.
struct RowLines<'a> {
    reader: &'a Reader,
    chain: Chain,
    /// The `seq` of the last row read.
    after: i64,
    page: VecDeque<Vec<u8>>,
    done: bool,
}

impl RowLines<'_> {
    fn fetch(&mut self) -> io::Result<()> {
        let (pool, chain, after) = (Arc::clone(&self.reader.pool), self.chain, self.after);
        let rows = wait(&self.reader.handle, async move {
            let what = "reading the audit lines";
            let rows = pool
                .query(
                    Lane::Shared,
                    &what,
                    |st| &st.lines_after,
                    &[&chain.name(), &after, &PAGE],
                )
                .await?;
            rows.iter()
                .map(|r| Ok((r.try_get::<_, i64>(0)?, r.try_get::<_, Vec<u8>>(1)?)))
                .collect::<Result<Vec<_>, tokio_postgres::Error>>()
                .map_err(|e| db_error(what, &e))
        })
        .map_err(|e| io::Error::other(e.message().to_owned()))?;
        self.done = (rows.len() as i64) < PAGE;
        if let Some((seq, _)) = rows.last() {
            self.after = *seq;
        }
        self.page.extend(rows.into_iter().map(|(_, line)| line));
        Ok(())
    }
}

impl ChainLines for RowLines<'_> {
    fn next_line(&mut self, buf: &mut Vec<u8>) -> io::Result<bool> {
        if self.page.is_empty() && !self.done {
            self.fetch()?;
        }
        match self.page.pop_front() {
            Some(line) => {
                buf.extend_from_slice(&line);
                buf.push(b'\n');
                Ok(true)
            }
            None => Ok(false),
        }
    }
}
