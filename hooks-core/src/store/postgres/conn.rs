//! The connections (on the store's runtime): a few pipelined clients for the stores' single
//! statements, each connected on first use and again after it was lost (waiting, within the
//! connect timeout, for a server that restarts), a statement whose connection was lost sent
//! again on a new one; the migrations; the errors, each naming its operation.

use std::fmt;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Mutex;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, NoTls, Row, Statement};

use super::sql;
use crate::base::future::{BoxFuture, join_all};
use crate::store::error::{StoreError, StoreErrorKind};

/// The schema version this build writes and reads.
pub(crate) const SCHEMA_VERSION: i32 = 4;

/// Every migration, in order: its version and its SQL (each applied in one transaction).
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("migrations/0001_tables.sql")),
    (2, include_str!("migrations/0002_tokens.sql")),
    (3, include_str!("migrations/0003_turns.sql")),
    (4, include_str!("migrations/0004_inbox.sql")),
];

/// A `StoreError` for `what` failing with the driver's `e`: the message says its whole chain
/// (the server's message, code and detail, or the I/O error), the kind is [`kind_of`] it, and
/// `e` is its source.
pub(crate) fn db_error(what: impl fmt::Display, e: tokio_postgres::Error) -> StoreError {
    StoreError::new(
        kind_of(&e),
        format!("PostgreSQL: {what} failed: {}", describe(&e)),
    )
    .with_source(e)
}

/// The kind of the driver's `e`, by its SQLSTATE class (the PostgreSQL manual, Appendix A):
/// `42P01` (no such table) and `42703` (no such column) say the schema is another version's;
/// classes `22` (data exception) and `23` (integrity constraint violation) say the data was
/// refused; anything else, and an error without a code (a socket, a closed connection, a
/// timeout), says the server was not there to answer (`08`, `57`, `53`, `40` among them).
fn kind_of(e: &tokio_postgres::Error) -> StoreErrorKind {
    let Some(code) = e.code() else {
        return StoreErrorKind::Unavailable;
    };
    if [SqlState::UNDEFINED_TABLE, SqlState::UNDEFINED_COLUMN].contains(code) {
        return StoreErrorKind::SchemaVersion;
    }
    match code.code().get(..2) {
        Some("22" | "23") => StoreErrorKind::Corrupt,
        _ => StoreErrorKind::Unavailable,
    }
}

/// Whether `e` says that the connection ended under the statement or the connection attempt:
/// the server ended the backend (`57P01` `admin_shutdown`: `pg_terminate_backend`, a fast
/// shutdown or restart; `57P02` `crash_shutdown`: another backend crashed; `57P05`
/// `idle_session_timeout`), the server cannot take connections now (`57P03`
/// `cannot_connect_now`: starting up, shutting down, recovering), the driver found the
/// connection closed (a closed socket, or the connection's task ended on one of the above), or
/// the socket failed (reset, refused, timed out, a Unix socket missing while the server is down).
///
/// What it says of the statement: nothing the store relies on. A backend the server ends
/// between statements never ran the next one; one ended while its statement runs (SIGTERM is
/// acted on at the statement's next interrupt check, and held off during the commit) has its
/// transaction rolled back, so a `57P01` answered in place of a statement's result means it
/// did not commit. But a socket that closes without a word (a crash, a network cut, a pooler),
/// or a backend ended while its commit waits for a synchronous standby (committed locally,
/// the client told nothing), leave the outcome unknown. So every statement the store sends again
/// is safe to run twice: `sql.rs` says how for each (ARCHITECTURE.md, "Contracts": "What each
/// store promises").
pub(crate) fn is_lost(e: &tokio_postgres::Error) -> bool {
    if let Some(code) = e.code() {
        return [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::IDLE_SESSION_TIMEOUT,
        ]
        .contains(code);
    }
    if e.is_closed() {
        return true;
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<io::Error>() {
            // A message the driver could not read (`InvalidData`, `InvalidInput`,
            // `UnexpectedEof` inside a message) is not a lost connection.
            use io::ErrorKind::*;
            return matches!(
                io.kind(),
                ConnectionRefused
                    | ConnectionReset
                    | ConnectionAborted
                    | NotConnected
                    | BrokenPipe
                    | TimedOut
                    | NotFound
                    | AddrNotAvailable
                    | HostUnreachable
                    | NetworkUnreachable
                    | NetworkDown
            );
        }
        source = s.source();
    }
    false
}

/// The most times one statement is sent: once, and once more after each lost connection, so a
/// server that ends every connection at once is not sent the statement for ever.
const MAX_SENDS: u32 = 16;

/// Whether a statement whose connection was just lost is sent again: when it was sent fewer
/// than [`MAX_SENDS`] times, and its first loss is less than the connect timeout ago (the
/// waits of [`opening`] for a restarting server count).
pub(crate) struct Resends {
    sends: u32,
    first_loss: Option<tokio::time::Instant>,
    window: Duration,
}

impl Resends {
    /// For a statement not sent yet, on connections opened with `config`.
    pub(crate) fn new(config: &Config) -> Resends {
        Resends {
            sends: 0,
            first_loss: None,
            window: reopen_window(config),
        }
    }

    /// Counts one send.
    pub(crate) fn sent(&mut self) {
        self.sends += 1;
    }

    /// The last send's connection was lost: whether to send it again.
    pub(crate) fn again(&mut self) -> bool {
        let first = *self
            .first_loss
            .get_or_insert_with(tokio::time::Instant::now);
        self.sends < MAX_SENDS && first.elapsed() < self.window
    }
}

/// The first wait before opening a connection again after the server refused it as
/// unavailable ([`is_lost`]); doubled after each refusal, up to [`MAX_REOPEN_WAIT`].
const MIN_REOPEN_WAIT: Duration = Duration::from_millis(10);
const MAX_REOPEN_WAIT: Duration = Duration::from_millis(500);

/// A step of opening a connection that failed: its error, and whether it was the server being
/// unavailable ([`is_lost`]), which is worth waiting out.
pub(crate) struct OpenFailed {
    error: StoreError,
    lost: bool,
}

impl OpenFailed {
    /// `what` failed with the driver's `e`.
    pub(crate) fn new(what: &str, e: tokio_postgres::Error) -> OpenFailed {
        OpenFailed {
            lost: is_lost(&e),
            error: db_error(what, e),
        }
    }

    /// The error, naming the step that failed.
    pub(crate) fn into_error(self) -> StoreError {
        self.error
    }
}

/// Runs `attempt` (opening a connection and making it ready) until it succeeds, fails for a
/// reason other than an unavailable server ([`is_lost`]), or `window` has passed since the
/// first try (so a restart, which refuses connections for a moment, is waited out); a zero
/// `window` tries once.
///
/// # Errors
/// The last attempt's failure, naming its step (and, when the window ran out, how long it
/// waited).
pub(crate) async fn opening<T, F, Fut>(window: Duration, mut attempt: F) -> Result<T, OpenFailed>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, OpenFailed>>,
{
    let deadline = tokio::time::Instant::now() + window;
    let mut wait = MIN_REOPEN_WAIT;
    loop {
        let failed = match attempt().await {
            Ok(ready) => return Ok(ready),
            Err(failed) => failed,
        };
        if !failed.lost || window.is_zero() {
            return Err(failed);
        }
        if tokio::time::Instant::now() + wait > deadline {
            return Err(OpenFailed {
                error: failed.error.amended(format_args!(
                    " (the server was unavailable for the whole connect timeout, {} ms)",
                    window.as_millis()
                )),
                lost: true,
            });
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(MAX_REOPEN_WAIT);
    }
}

/// The driver's error with every source, the server's code and detail included.
fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut text = format!("{} {}: {}", db.severity(), db.code().code(), db.message());
        if let Some(detail) = db.detail() {
            text.push_str(&format!(" ({detail})"));
        }
        return text;
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

/// The prepared statements of one connection.
pub(crate) struct Statements {
    pub(crate) claim_insert: Statement,
    pub(crate) claim_seen: Statement,
    pub(crate) answered: Statement,
    pub(crate) forget: Statement,
    pub(crate) interrupt: Statement,
    pub(crate) put: Statement,
    pub(crate) take: Statement,
    pub(crate) resumed: Statement,
    pub(crate) put_back: Statement,
    pub(crate) waiting: Statement,
    pub(crate) renew_claims: Statement,
    pub(crate) renew_takes: Statement,
    pub(crate) lines_after: Statement,
    pub(crate) line_at: Statement,
}

impl Statements {
    /// Prepares every statement, all sent at once (one round trip, so a connection opened
    /// again after a loss is ready soon).
    async fn prepare(client: &Client) -> Result<Statements, OpenFailed> {
        let texts = [
            sql::CLAIM_INSERT,
            sql::CLAIM_SEEN,
            sql::ANSWERED,
            sql::FORGET,
            sql::INTERRUPT,
            sql::PUT,
            sql::TAKE,
            sql::RESUMED,
            sql::PUT_BACK,
            sql::WAITING,
            sql::RENEW_CLAIMS,
            sql::RENEW_TAKES,
            sql::LINES_AFTER,
            sql::LINE_AT,
        ];
        let what = "preparing the statements";
        let prepares: Vec<BoxFuture<'_, Result<Statement, tokio_postgres::Error>>> = texts
            .iter()
            .map(|text| Box::pin(client.prepare(text)) as BoxFuture<'_, _>)
            .collect();
        let mut prepared = Vec::with_capacity(texts.len());
        for result in join_all(prepares).await {
            prepared.push(result.map_err(|e| OpenFailed::new(what, e))?);
        }
        let mut next = prepared.into_iter();
        let mut take = || {
            next.next().ok_or_else(|| OpenFailed {
                error: StoreError::new(
                    StoreErrorKind::Unavailable,
                    "PostgreSQL: preparing the statements: one is missing",
                ),
                lost: false,
            })
        };
        Ok(Statements {
            claim_insert: take()?,
            claim_seen: take()?,
            answered: take()?,
            forget: take()?,
            interrupt: take()?,
            put: take()?,
            take: take()?,
            resumed: take()?,
            put_back: take()?,
            waiting: take()?,
            renew_claims: take()?,
            renew_takes: take()?,
            lines_after: take()?,
            line_at: take()?,
        })
    }
}

/// One open connection and its statements.
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) st: Statements,
}

/// Opens a connection, one attempt (its driving task spawned on the current runtime, which
/// must be the store's).
pub(crate) async fn open(config: &Config) -> Result<Client, OpenFailed> {
    let (client, connection) = config
        .connect(NoTls)
        .await
        .map_err(|e| OpenFailed::new("connecting", e))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(target: "toolgate::memory", error = %describe(&e),
                "a PostgreSQL connection of the store ended; the next call connects again");
        }
    });
    Ok(client)
}

/// Applies the migrations this build has and the database lacks, each in its own transaction,
/// under the session-level advisory lock (so workers connecting at once migrate one at a time;
/// the others then find nothing to do).
///
/// # Errors
/// A database error, or a schema newer than this build's (naming both versions).
pub(crate) async fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let lock = format!(
        "SELECT pg_advisory_lock({}, {})",
        sql::LOCK_CLASS,
        sql::MIGRATION_LOCK
    );
    client
        .batch_execute(&lock)
        .await
        .map_err(|e| db_error("taking the migration lock", e))?;
    let result = migrate_locked(client).await;
    let unlock = format!(
        "SELECT pg_advisory_unlock({}, {})",
        sql::LOCK_CLASS,
        sql::MIGRATION_LOCK
    );
    let unlocked = client
        .batch_execute(&unlock)
        .await
        .map_err(|e| db_error("releasing the migration lock", e));
    result.and(unlocked)
}

/// Checks, without changing anything, that the database holds this build's toolgate schema: for
/// a connection that must not migrate (an operator's read-only check).
///
/// # Errors
/// No toolgate tables, or a schema of another version (naming both).
pub(crate) async fn check_schema(client: &Client) -> Result<(), StoreError> {
    let exists: bool = client
        .query_one(sql::HAS_SCHEMA_TABLE, &[])
        .await
        .and_then(|row| row.try_get(0))
        .map_err(|e| db_error("reading the schema version", e))?;
    if !exists {
        return Err(StoreError::new(
            StoreErrorKind::SchemaVersion,
            "PostgreSQL: the database holds no toolgate tables (no toolgate_schema): is it the \
             agent's database?",
        ));
    }
    let found: i32 = client
        .query_one(sql::SCHEMA_VERSION, &[])
        .await
        .and_then(|row| row.try_get(0))
        .map_err(|e| db_error("reading the schema version", e))?;
    if found != SCHEMA_VERSION {
        return Err(StoreError::new(
            StoreErrorKind::SchemaVersion,
            format!(
                "PostgreSQL: the database's toolgate schema is version {found}, and this build reads \
             version {SCHEMA_VERSION}: use the toolgate that wrote it{}",
                if found < SCHEMA_VERSION {
                    ", or let an agent of this build connect once to migrate it"
                } else {
                    ""
                }
            ),
        ));
    }
    Ok(())
}

async fn migrate_locked(client: &mut Client) -> Result<(), StoreError> {
    let exists: bool = client
        .query_one(sql::HAS_SCHEMA_TABLE, &[])
        .await
        .and_then(|row| row.try_get(0))
        .map_err(|e| db_error("reading the schema version", e))?;
    if !exists {
        client
            .batch_execute(sql::CREATE_SCHEMA_TABLE)
            .await
            .map_err(|e| db_error("creating toolgate_schema", e))?;
    }
    let found: i32 = client
        .query_one(sql::SCHEMA_VERSION, &[])
        .await
        .and_then(|row| row.try_get(0))
        .map_err(|e| db_error("reading the schema version", e))?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::new(
            StoreErrorKind::SchemaVersion,
            format!(
                "PostgreSQL: the database's toolgate schema is version {found}, newer than this \
             build's version {SCHEMA_VERSION}: upgrade toolgate to use it (this build would \
             misread its tables), or connect to another database"
            ),
        ));
    }
    for (version, text) in MIGRATIONS.iter().filter(|(v, _)| *v > found) {
        let what = format!("applying migration {version}");
        let tx = client.transaction().await.map_err(|e| db_error(&what, e))?;
        tx.batch_execute(text)
            .await
            .map_err(|e| db_error(&what, e))?;
        tx.execute(sql::RECORD_VERSION, &[version])
            .await
            .map_err(|e| db_error(&what, e))?;
        tx.commit().await.map_err(|e| db_error(&what, e))?;
    }
    Ok(())
}

/// The stores' connections: `n` pipelined clients, used in turn (tokio-postgres sends the
/// statements of concurrent calls on one client back to back; the server answers them in
/// order), and one more for [`answered`](crate::store::AnswerStore::answered), whose commits
/// are asynchronous (`synchronous_commit = off` on that connection) unless the answers are
/// durable ([`PostgresStoreBuilder::durable_answers`](super::PostgresStoreBuilder::durable_answers)).
pub(crate) struct Pool {
    config: Config,
    /// The shared clients, then the answers' client.
    slots: Vec<Mutex<Option<Arc<Conn>>>>,
    next: AtomicUsize,
    durable_answers: bool,
    /// Whether [`start`](Self::start) applies the migrations (else it only checks the schema).
    migrate: bool,
    /// Set when an opening waited the whole connect timeout for an unavailable server in vain,
    /// cleared when a connection opens: meanwhile each opening tries once, so a server that
    /// stays down fails each call at once instead of making every queued call wait in turn.
    gave_up: AtomicBool,
}

/// A statement's parameters.
pub(crate) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// Which connection a statement goes to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    /// The next of the shared ones.
    Shared,
    /// The answers' own.
    Answers,
}

/// How long a connection opened again after a loss may wait for an unavailable server: the
/// connect timeout of `config` (the builder always sets one).
pub(crate) fn reopen_window(config: &Config) -> Duration {
    config
        .get_connect_timeout()
        .copied()
        .unwrap_or(Duration::from_secs(10))
}

impl Pool {
    /// A pool of `n` (at least 1) shared connections and the answers' one, none open yet.
    pub(crate) fn new(config: Config, n: usize, durable_answers: bool, migrate: bool) -> Pool {
        Pool {
            config,
            slots: (0..=n.max(1)).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
            durable_answers,
            migrate,
            gave_up: AtomicBool::new(false),
        }
    }

    /// The connection settings.
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// Opens the first connection and migrates through it (at `connect`: one attempt, so
    /// settings that cannot work fail at once).
    pub(crate) async fn start(&self) -> Result<(), StoreError> {
        let mut client = open(&self.config).await.map_err(OpenFailed::into_error)?;
        if self.migrate {
            migrate(&mut client).await?;
        } else {
            check_schema(&client).await?;
        }
        let st = Statements::prepare(&client)
            .await
            .map_err(OpenFailed::into_error)?;
        *self.slots[0].lock().await = Some(Arc::new(Conn { client, st }));
        Ok(())
    }

    /// The slot a statement of `lane` uses.
    fn slot(&self, lane: Lane) -> usize {
        let shared = self.slots.len() - 1;
        match lane {
            Lane::Shared => self.next.fetch_add(1, Ordering::Relaxed) % shared,
            Lane::Answers => shared,
        }
    }

    /// An open connection of slot `i`: the one kept, or a new one when there is none or it was
    /// lost (waiting, within the connect timeout, for a server that is unavailable now).
    async fn conn(&self, i: usize) -> Result<Arc<Conn>, StoreError> {
        let mut slot = self.slots[i].lock().await;
        if let Some(conn) = &*slot
            && !conn.client.is_closed()
        {
            return Ok(Arc::clone(conn));
        }
        *slot = None;
        let answers = i == self.slots.len() - 1 && !self.durable_answers;
        let window = if self.gave_up.load(Ordering::Relaxed) {
            Duration::ZERO
        } else {
            reopen_window(&self.config)
        };
        let opened = opening(window, || async {
            let client = open(&self.config).await?;
            if answers {
                client
                    .batch_execute("SET synchronous_commit TO off")
                    .await
                    .map_err(|e| OpenFailed::new("setting the answers' connection", e))?;
            }
            let st = Statements::prepare(&client).await?;
            Ok(Conn { client, st })
        })
        .await;
        self.gave_up
            .store(opened.as_ref().is_err_and(|f| f.lost), Ordering::Relaxed);
        let conn = Arc::new(opened.map_err(OpenFailed::into_error)?);
        *slot = Some(Arc::clone(&conn));
        Ok(conn)
    }

    /// Forgets `conn`, found lost, unless slot `i` already holds another.
    async fn discard(&self, i: usize, conn: &Arc<Conn>) {
        let mut slot = self.slots[i].lock().await;
        if slot.as_ref().is_some_and(|kept| Arc::ptr_eq(kept, conn)) {
            *slot = None;
        }
    }

    /// Runs `statement` (chosen from a connection's statements) with `params` on a connection
    /// of `lane` and returns its rows. When the statement's connection is lost ([`is_lost`]:
    /// the backend terminated, the server restarting, a closed socket), before, while or after
    /// the server ran it, the statement is sent again on a new connection ([`Resends`] says
    /// how many times): every statement given here is safe to run twice (`sql.rs`
    /// says why for each; a claim or a take recognizes its own row by its token).
    pub(crate) async fn query(
        &self,
        lane: Lane,
        what: &(dyn fmt::Display + Sync),
        statement: fn(&Statements) -> &Statement,
        params: Params<'_>,
    ) -> Result<Vec<Row>, StoreError> {
        let i = self.slot(lane);
        let mut resends = Resends::new(&self.config);
        loop {
            let conn = self.conn(i).await?;
            resends.sent();
            match conn.client.query(statement(&conn.st), params).await {
                Ok(rows) => return Ok(rows),
                Err(e) if is_lost(&e) && resends.again() => self.discard(i, &conn).await,
                Err(e) => return Err(db_error(what, e)),
            }
        }
    }
}
