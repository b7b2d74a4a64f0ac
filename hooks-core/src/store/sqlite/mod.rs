//! [`SqliteStore`]: the answer memory and the paused turns in one SQLite file (feature
//! `sqlite`), shared by every session of a process and by every process on the machine that
//! opens the same file. A retry on another worker process, or after a restart, then still runs
//! nothing twice, and a turn paused for a person outlives the process that paused it.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! # use schemars::JsonSchema;
//! # use serde::Deserialize;
//! use serde_json::json;
//! use toolgate_core::dispatch::ToolDef;
//! use toolgate_core::store::sqlite::SqliteStore;
//! use toolgate_core::store::{AnswerStore, CallKey, Claim, Remembered};
//! use toolgate_core::{Dispatcher, HookContext, ToolResult, ToolUse};
//!
//! # /// Arguments.
//! # #[derive(Deserialize, JsonSchema)]
//! # struct Ping {}
//! # let dir = std::env::temp_dir().join(format!("toolgate-sqlite-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! let path = dir.join("agent.sqlite3");
//! // One store per process, opened once, shared by every session (an `Arc`).
//! let store = Arc::new(SqliteStore::open(&path)?);
//! let dispatcher = Dispatcher::builder()
//!     .tool(ToolDef::sync("ping", "Answers pong.", |_env, _args: Ping| {
//!         Ok(String::from("pong"))
//!     }))
//!     .build()?;
//! let context = HookContext::builder("u_1", "sess_1").build();
//! let session = dispatcher.session_with_store(context, store.clone());
//! let call = ToolUse::new("toolu_1", "ping", json!({}));
//! let answer = toolgate_core::block_on(session.call(&call))?;
//! assert_eq!(answer, ToolResult::text("toolu_1", "pong"));
//!
//! // Another process (here another store on the same file) sees the answer: a retry there
//! // is a replay, and a claim of the same call is refused.
//! let other = SqliteStore::open(&path)?;
//! let key = CallKey::new("sess_1", "toolu_1");
//! let digest = toolgate_core::store::InputDigest::of(&json!({}), 32);
//! let token = toolgate_core::store::Token::draw();
//! let seen = toolgate_core::block_on(other.claim(key, token, digest, Duration::from_secs(900)))?;
//! assert!(matches!(seen, Claim::Seen(Remembered::Answered { .. })));
//! # drop((session, store, other));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What it promises at a crash
//!
//! The file is in WAL mode (write-ahead log: a transaction is appended to `<file>-wal` and
//! becomes part of the database when its commit record is written; readers never see half of
//! one) with `synchronous = FULL` (the WAL is flushed to the disk, `fsync`, at every commit,
//! before the commit returns). So:
//!
//! - a claim, an answer, a release, a kept or taken turn whose method returned `Ok` is on the
//!   disk: it survives the process being killed (`SIGKILL`, a panic with `panic = "abort"`, an
//!   out-of-memory kill) and the machine losing power, provided the disk honours `fsync`;
//! - a method that did not return (the process died inside it) either committed whole or left
//!   nothing: never half a claim, never an answer without its digest;
//! - a call claimed by a process that then died stays in progress until its lease ends (the
//!   dispatcher's `claim_lease`, 15 s by default, from the last renewal: below), then the next
//!   claim of it marks it interrupted: it is answered "not run again", never run twice
//!   ([`Remembered::Interrupted`](super::Remembered::Interrupted)). A turn taken by a process
//!   that died is taken again once the take's lease ends, and the answer memory replays what
//!   the first resume had answered.
//!
//! The next process to open the file recovers the WAL by itself (the `-wal` and `-shm` files
//! beside the database are part of it: copy or delete the three together, never the database
//! alone while a process has it open). The folder must be writable, and the file on a local
//! disk: WAL needs shared memory between the processes, so it does not work over a network
//! file system, and SQLite's locks are those of the operating system (processes of one machine
//! only).
//!
//! # One file, many sessions and processes
//!
//! Open one [`SqliteStore`] per process and share it (an `Arc`) between every session
//! ([`Dispatcher::session_with_store`](crate::Dispatcher::session_with_store)) and every
//! [`Session::resume_from`](crate::Session::resume_from): it holds one connection, behind a
//! mutex. Every method is one statement or one transaction (`BEGIN IMMEDIATE`, which takes the
//! file's write lock before it reads), so two sessions, threads or processes racing on one key
//! see one winner ([`conformance`](super::conformance) checks it):
//!
//! - a claim is `INSERT … ON CONFLICT DO NOTHING`, with the claim's token; when it inserted
//!   nothing, the same transaction marks a row whose lease ended interrupted, then reads the
//!   row;
//! - an answer or a release changes only a row still in progress under the claim's token
//!   (`UPDATE … WHERE state = 'in_progress' AND claim_token = ?`, `DELETE …` likewise); an
//!   answer that changed nothing reads the row and is refused
//!   ([`StoreError::is_fenced`](super::StoreError::is_fenced)) unless it was answered under
//!   that token;
//! - a take of a paused turn is one `UPDATE … WHERE state = 'waiting' OR (state = 'taken' AND
//!   lease_until <= now) RETURNING turn`, so exactly one taker wins; the same transaction then
//!   reads why a take that lost lost (being resumed, resumed, missing).
//!
//! SQLite lets one writer at a time into a file. A writer that finds the file locked by
//! another process waits for it, up to [`SqliteStore::BUSY_TIMEOUT`] (5 s: a toolgate
//! transaction holds the lock for one `fsync`, milliseconds; a wait that long means a process
//! holds a transaction open, and the method fails rather than hang).
//!
//! # Renewals
//!
//! A claim (a take) the session [`hold`](super::AnswerStore::hold)s while its call runs is
//! renewed every third of its lease by a thread of the store's own (`toolgate-sqlite-renew`,
//! started at the first hold, stopped when the store is dropped): one `UPDATE … WHERE
//! (session_id, tool_use_id, turn, claim_token) IN (SELECT … FROM json_each(?))` for every claim
//! due, which extends only a claim still in progress under its token and answers the tokens it
//! extended. A claim not among them was taken over (its lease had run out and another process's
//! claim marked it interrupted) and is renewed no more; a renewal that fails (the file locked
//! past the busy timeout) stops the renewals too. A call that ends within one interval renews
//! nothing.
//!
//! # Blocking
//!
//! rusqlite is a blocking API: each method runs its statement on the calling thread and returns
//! a [`StoreFuture::ready`](super::StoreFuture::ready). A call blocks its thread for the
//! statement and its commit: microseconds to milliseconds (one `fsync` per write, on the disk's
//! time), longer while another process holds the write lock, up to the busy timeout. On an
//! async runtime that is a short blocking section per call, as for a local file write.
//! [`AnswerStore::abandon`](super::AnswerStore::abandon) (a call future dropped) releases the
//! claim at once too, with a shorter bound, [`SqliteStore::ABANDON_BUSY_TIMEOUT`] (250 ms):
//! when the file stays locked past it, the claim is left to lapse with its lease (a retry is
//! then answered as interrupted: never run twice), and `tracing` says so (target
//! `toolgate::memory`).
//!
//! # The clock
//!
//! Leases are instants of SQLite's own clock, read in SQL by the statement that compares or
//! sets them (`unixepoch('subsec')`, the machine's wall clock), stored as integers,
//! milliseconds since the Unix epoch (a lease is rounded up to a whole millisecond). No
//! process passes its own time, and a session's context clock (fixed in a test, skewed) is
//! never read: the processes sharing a file run on one machine and read one clock. The
//! monotonic clock would not be moved by NTP or by hand, but its instants mean nothing outside
//! their process. A step of the wall clock only moves when leases end. One that ends early lets a retry that
//! comes meanwhile mark a call still running interrupted: that retry and every later one are
//! answered "not run again", and the first attempt's answer is not recorded (never run twice,
//! at worst not replayed). One that ends late makes a retry of a dead worker's call wait
//! longer. A paused turn whose take ended early can be taken again while the first resume
//! runs; its calls are then refused as in progress by the answer memory, so nothing runs twice.
//!
//! # The tables
//!
//! Created at [`open`](SqliteStore::open) by migrations the crate carries, each one SQL text
//! applied in a transaction and recorded in `toolgate_schema (version INTEGER PRIMARY KEY,
//! applied_at INTEGER)`. Schema version 4 (version 1's calls table had neither `turn` nor
//! `apart`; its rows are migrated as first calls without a turn; the rows of versions up to 3
//! have no token, which no claim's matches):
//!
//! - `toolgate_calls`, keyed by `(session_id, tool_use_id, apart)`: `turn` (the turn the call
//!   came from, the model response's id, `''` for none), `apart` (`''` for the session's first
//!   call with the id; for a later turn's call that reuses it, that turn: "Turns" in the
//!   [store docs](super)), `digest` (the 32 bytes of the
//!   [`InputDigest`](super::InputDigest), a BLOB), `state` (`in_progress`, `answered`,
//!   `interrupted`), `lease_until` (milliseconds since the epoch, while in progress),
//!   `claim_token` (the [`Token`](super::Token) of the claim that made it, as a signed 64-bit
//!   integer), `outcome` (snake_case, as on the audit line) and `result` (the `tool_result`
//!   block as JSON text) once answered. A call released before its tool started is deleted.
//! - `toolgate_pending_turns`, keyed by `(session_id, turn_id)`, ordered by `seq` (the order
//!   turns were first kept in): `turn` (the [`PendingTurn`](crate::approval::PendingTurn) as
//!   JSON text), `state` (`waiting`, `taken`, `resumed`), `lease_until` (while taken),
//!   `take_token` (the token of the take that holds or resumed it), `answer` (the resumed
//!   turn's answer as JSON text).
//!
//! Schema version 3 added the approval inbox's tables (`migrations/0003_inbox.sql`): every
//! `put` writes, in its transaction and in every build, one `toolgate_inbox_calls` row per
//! waiting call and one `toolgate_inbox_turns` row (`waiting.rs`); the inbox (feature `inbox`,
//! `inbox.rs`) reads them, records decisions on them, keeps idempotency keys in
//! `toolgate_inbox_keys` and published tools in `toolgate_inbox_tools`.
//!
//! Nothing is ever deleted but a released claim: the file grows by one row per answered call
//! (its result included: at most the dispatcher's `max_result_bytes`, 256 KiB by default) and
//! per paused turn. Delete a conversation's rows once no retry of it can come
//! (`DELETE FROM toolgate_calls WHERE session_id = ?`, the same for `toolgate_pending_turns`);
//! a retry of a deleted call runs it again.

mod answers;
#[cfg(feature = "inbox")]
mod inbox;
mod schema;
mod turns;
mod waiting;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::Connection;

use crate::store::error::{StoreError, StoreErrorKind};
use crate::store::lease::{self, Batch, Held, Hold, Registry, Token};

/// The answer memory ([`AnswerStore`](super::AnswerStore)) and the paused turns
/// ([`PendingStore`](super::PendingStore)) in one SQLite file: see the [module
/// docs](self) for the crash promises, the tables and what a call blocks.
///
/// Every method's error is a [`StoreError`] naming the operation and the file (`could not claim
/// tool_use "toolu_1" of session "sess_1" in the SQLite file /var/lib/agent/agent.sqlite3:
/// database is locked`); none panics.
pub struct SqliteStore {
    shared: Arc<Shared>,
    /// The claims and takes held, renewed by the renewer thread once started.
    registry: Arc<Registry>,
    renewer: OnceLock<()>,
}

/// What the store and its renewer thread share: the file and its connection.
struct Shared {
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl SqliteStore {
    /// How long a write waits for another connection's write lock on the file before it fails
    /// (`PRAGMA busy_timeout`): 5 s.
    pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

    /// How long [`abandon`](super::AnswerStore::abandon), which runs in a `Drop`, waits for the
    /// write lock before it leaves the claim to lapse with its lease: 250 ms.
    pub const ABANDON_BUSY_TIMEOUT: Duration = Duration::from_millis(250);

    /// The schema version this build writes and reads: 4. A file at a lower version is
    /// migrated at [`open`](Self::open); one at a higher version is refused.
    pub const SCHEMA_VERSION: u32 = schema::VERSION;

    /// Opens the SQLite file at `path`, creating it when absent, in WAL mode with
    /// `synchronous = FULL` and a [busy timeout](Self::BUSY_TIMEOUT), and brings its schema to
    /// [`SCHEMA_VERSION`](Self::SCHEMA_VERSION) (each missing migration applied in a
    /// transaction and recorded; processes opening one new file at once apply each migration
    /// once). Blocks the thread for the open (a few milliseconds; up to the busy timeout while
    /// another process holds the write lock).
    ///
    /// # Errors
    /// A [`StoreError`] naming the file when it cannot be opened or created (a missing folder,
    /// no permission, not an SQLite file), when WAL mode cannot be turned on, when a migration
    /// fails, or when the file's schema is newer than this build knows: `the SQLite file <path>
    /// was written by a newer toolgate (schema version 5); this build knows up to 4`.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref().to_path_buf();
        let failed = |e: Failure| {
            let shown = path.display().to_string();
            // rusqlite ends an open's error with the path: said once here.
            let message = e.to_string();
            let message = message
                .strip_suffix(&format!(": {shown}"))
                .unwrap_or(&message);
            let kind = e.kind();
            e.with_source(StoreError::new(
                kind,
                format_args!("could not open the SQLite file {shown}: {message}"),
            ))
        };
        let mut connection = Connection::open(&path).map_err(|e| failed(e.into()))?;
        configure(&connection).map_err(failed)?;
        match schema::migrate(&mut connection) {
            Ok(()) => {}
            Err(schema::MigrateError::Newer(found)) => {
                return Err(StoreError::new(
                    StoreErrorKind::SchemaVersion,
                    format_args!(
                        "the SQLite file {} was written by a newer toolgate (schema version \
                     {found}); this build knows up to {}",
                        path.display(),
                        schema::VERSION
                    ),
                ));
            }
            Err(schema::MigrateError::Failed(e)) => return Err(failed(e)),
        }
        Ok(SqliteStore {
            shared: Arc::new(Shared {
                path,
                connection: Mutex::new(connection),
            }),
            registry: Arc::default(),
            renewer: OnceLock::new(),
        })
    }

    /// The file's path, as given to [`open`](Self::open).
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Runs `step` on the connection (see [`Shared::run`]).
    fn run<T>(
        &self,
        what: impl FnOnce() -> String,
        step: impl FnOnce(&mut Connection) -> Result<T, Failure>,
    ) -> Result<T, StoreError> {
        self.shared.run(what, step)
    }

    /// Holds `held` (made with `token`, for `lease`): renewed by the renewer thread, started
    /// now if it is not running. A thread that cannot start leaves the hold unrenewed (its
    /// claim lapses with its lease), and `tracing` says so.
    fn hold_in(&self, held: Held, token: Token, lease: Duration) -> Hold {
        self.renewer.get_or_init(|| {
            let shared = Arc::clone(&self.shared);
            let started = lease::spawn("toolgate-sqlite-renew", &self.registry, move |batch| {
                shared.renew(batch)
            });
            if let Err(error) = started {
                tracing::error!(target: "toolgate::memory", %error,
                    "the SQLite store's claims are not renewed; they lapse with their leases");
            }
        });
        self.registry.hold(held, token, lease)
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        self.registry.stop();
    }
}

impl Shared {
    /// The connection, locked for one method (never held across an await: every method runs
    /// to its end inside the lock).
    fn connection(&self) -> MutexGuard<'_, Connection> {
        // Nothing panics while holding the lock; a poisoned lock still holds a usable
        // connection (a transaction that did not commit was rolled back by its drop).
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `step` on the connection; its failure becomes a [`StoreError`] saying what could
    /// not be done (`what`, e.g. `claim tool_use "toolu_1" of session "s"`) in which file.
    fn run<T>(
        &self,
        what: impl FnOnce() -> String,
        step: impl FnOnce(&mut Connection) -> Result<T, Failure>,
    ) -> Result<T, StoreError> {
        step(&mut self.connection()).map_err(|e| {
            let error = StoreError::new(
                e.kind(),
                format_args!(
                    "could not {} in the SQLite file {}: {e}",
                    what(),
                    self.path.display()
                ),
            );
            e.with_source(error)
        })
    }
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.shared.path)
            .field("schema_version", &schema::VERSION)
            .finish_non_exhaustive()
    }
}

/// The connection's settings: the busy timeout first (so the next steps wait for a lock too),
/// WAL mode (persistent in the file; checked, since SQLite answers with the mode it kept), and
/// `synchronous = FULL` (per connection).
fn configure(connection: &Connection) -> Result<(), Failure> {
    connection.busy_timeout(SqliteStore::BUSY_TIMEOUT)?;
    let mode = journal_mode_wal(connection)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Failure::Data(format!(
            "SQLite kept journal mode {mode:?} instead of WAL (an in-memory or read-only \
             database?), so a committed write could be lost at a crash"
        )));
    }
    connection.pragma_update(None, "synchronous", "FULL")?;
    Ok(())
}

/// `PRAGMA journal_mode = WAL`, tried again for up to the busy timeout while another
/// connection holds the lock it needs: changing the journal mode of a new file takes an
/// exclusive lock, and SQLite answers `SQLITE_BUSY` at once there instead of calling the busy
/// handler, so processes opening one new file together would otherwise fail.
fn journal_mode_wal(connection: &Connection) -> Result<String, Failure> {
    let started = std::time::Instant::now();
    loop {
        match connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && started.elapsed() < SqliteStore::BUSY_TIMEOUT =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => return Ok(other?),
        }
    }
}

/// Why a step failed: SQLite's error, or a row that does not hold what this store writes.
enum Failure {
    Sql(rusqlite::Error),
    Data(String),
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Self {
        Failure::Sql(e)
    }
}

impl Failure {
    /// The kind of this failure, by SQLite's primary result code (sqlite.org, "Result and Error
    /// Codes"): a file that cannot be opened, is busy or locked past the busy timeout, or fails
    /// to read or write is [`Unavailable`](StoreErrorKind::Unavailable); a constraint, a
    /// corrupt file, a file that is not a database, a value of the wrong type, and data that
    /// does not read are [`Corrupt`](StoreErrorKind::Corrupt); a table or a column missing
    /// (`no such table`, `no such column`: a file of another version) is
    /// [`SchemaVersion`](StoreErrorKind::SchemaVersion).
    fn kind(&self) -> StoreErrorKind {
        use rusqlite::ErrorCode::*;
        let e = match self {
            Failure::Data(_) => return StoreErrorKind::Corrupt,
            Failure::Sql(e) => e,
        };
        match e {
            rusqlite::Error::SqliteFailure(code, message) => match code.code {
                ConstraintViolation | DatabaseCorrupt | NotADatabase | TypeMismatch => {
                    StoreErrorKind::Corrupt
                }
                Unknown
                    if message.as_deref().is_some_and(|m| {
                        m.starts_with("no such table") || m.starts_with("no such column")
                    }) =>
                {
                    StoreErrorKind::SchemaVersion
                }
                _ => StoreErrorKind::Unavailable,
            },
            rusqlite::Error::FromSqlConversionFailure(..)
            | rusqlite::Error::IntegralValueOutOfRange(..)
            | rusqlite::Error::InvalidColumnType(..)
            | rusqlite::Error::Utf8Error(..) => StoreErrorKind::Corrupt,
            _ => StoreErrorKind::Unavailable,
        }
    }

    /// `error` with the driver's error as its source (a data failure has none).
    fn with_source(self, error: StoreError) -> StoreError {
        match self {
            Failure::Sql(e) => error.with_source(e),
            Failure::Data(_) => error,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Sql(e) => e.fmt(f),
            Failure::Data(message) => f.write_str(message),
        }
    }
}

/// Now by the wall clock, in milliseconds since the Unix epoch (0 before it): when a migration
/// was applied (leases are read from SQLite's clock in SQL, `now_ms!`).
fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Now by SQLite's clock, in SQL: milliseconds since the Unix epoch, read by the statement
/// itself, so no process's clock is passed in.
macro_rules! now_ms {
    () => {
        "CAST(unixepoch('subsec') * 1000 AS INTEGER)"
    };
}
use now_ms;

/// A lease in whole milliseconds, rounded up, at most about 30 years (so that SQLite's clock
/// plus it stays far from overflowing).
fn lease_ms(lease: Duration) -> i64 {
    const MAX: i64 = 30 * 365 * 24 * 3600 * 1000;
    i64::try_from(lease.as_micros().div_ceil(1000)).map_or(MAX, |ms| ms.min(MAX))
}

/// The renewal of every claim of a batch, in one statement: the entries as one JSON array of
/// `[session_id, tool_use_id, turn, token]`, the lease in milliseconds; it answers the tokens
/// it extended (a claim still in progress under its token).
const RENEW_CLAIMS: &str = concat!(
    "UPDATE toolgate_calls SET lease_until = ",
    now_ms!(),
    " + ?2 WHERE state = 'in_progress' AND (session_id, tool_use_id, turn, claim_token) IN \
     (SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3 FROM json_each(?1)) \
     RETURNING claim_token"
);

/// The same for takes: `[session_id, turn_id, token]`, a turn still taken under its token.
const RENEW_TAKES: &str = concat!(
    "UPDATE toolgate_pending_turns SET lease_until = ",
    now_ms!(),
    " + ?2 WHERE state = 'taken' AND (session_id, turn_id, take_token) IN \
     (SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?1)) \
     RETURNING take_token"
);

impl Shared {
    /// Renews `batch` (on the renewer thread): which of its entries the store still holds
    /// under their tokens.
    fn renew(&self, batch: &Batch) -> Result<Vec<bool>, StoreError> {
        let entries: Vec<serde_json::Value> = batch
            .items
            .iter()
            .map(|(held, token)| match held {
                Held::Claim {
                    session_id,
                    tool_use_id,
                    turn,
                } => serde_json::json!([session_id, tool_use_id, turn, token.as_i64()]),
                Held::Take {
                    session_id,
                    turn_id,
                } => serde_json::json!([session_id, turn_id, token.as_i64()]),
            })
            .collect();
        let list = serde_json::Value::Array(entries).to_string();
        let sql = if batch.claims {
            RENEW_CLAIMS
        } else {
            RENEW_TAKES
        };
        let what = || match batch.items.len() {
            1 => "renew a lease".to_owned(),
            n => format!("renew {n} leases"),
        };
        let renewed: Vec<i64> = self.run(what, |c| {
            let mut statement = c.prepare(sql)?;
            let params = rusqlite::params![list, lease_ms(batch.lease)];
            let rows = statement.query_map(params, |row| row.get::<_, i64>(0))?;
            Ok(rows.collect::<Result<Vec<i64>, _>>()?)
        })?;
        Ok(batch
            .items
            .iter()
            .map(|(_, token)| renewed.contains(&token.as_i64()))
            .collect())
    }
}
