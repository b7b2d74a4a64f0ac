//! The connections (on the store's runtime): a few pipelined clients for the stores' single
//! statements, each connected on first use and again after it was lost; the migrations; the
//! errors, each naming its operation.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Mutex;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, NoTls, Row, Statement};

use super::sql;
use crate::store::error::StoreError;

/// The schema version this build writes and reads.
pub(crate) const SCHEMA_VERSION: i32 = 2;

/// Every migration, in order: its version and its SQL (each applied in one transaction).
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("migrations/0001_tables.sql")),
    (2, include_str!("migrations/0002_turns.sql")),
];

/// A `StoreError` for `what` failing with the driver's `e` (its whole chain: the server's
/// message, code and detail, or the I/O error).
pub(crate) fn db_error(what: impl fmt::Display, e: &tokio_postgres::Error) -> StoreError {
    StoreError::new(format!("PostgreSQL: {what} failed: {}", describe(e)))
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
    pub(crate) lines_after: Statement,
    pub(crate) line_at: Statement,
}

impl Statements {
    async fn prepare(client: &Client) -> Result<Statements, tokio_postgres::Error> {
        Ok(Statements {
            claim_insert: client.prepare(sql::CLAIM_INSERT).await?,
            claim_seen: client.prepare(sql::CLAIM_SEEN).await?,
            answered: client.prepare(sql::ANSWERED).await?,
            forget: client.prepare(sql::FORGET).await?,
            interrupt: client.prepare(sql::INTERRUPT).await?,
            put: client.prepare(sql::PUT).await?,
            take: client.prepare(sql::TAKE).await?,
            resumed: client.prepare(sql::RESUMED).await?,
            put_back: client.prepare(sql::PUT_BACK).await?,
            waiting: client.prepare(sql::WAITING).await?,
            lines_after: client.prepare(sql::LINES_AFTER).await?,
            line_at: client.prepare(sql::LINE_AT).await?,
        })
    }
}

/// One open connection and its statements.
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) st: Statements,
}

/// Opens a connection (its driving task spawned on the current runtime, which must be the
/// store's).
pub(crate) async fn open(config: &Config) -> Result<Client, StoreError> {
    let (client, connection) = config
        .connect(NoTls)
        .await
        .map_err(|e| db_error("connecting", &e))?;
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
        .map_err(|e| db_error("taking the migration lock", &e))?;
    let result = migrate_locked(client).await;
    let unlock = format!(
        "SELECT pg_advisory_unlock({}, {})",
        sql::LOCK_CLASS,
        sql::MIGRATION_LOCK
    );
    let unlocked = client
        .batch_execute(&unlock)
        .await
        .map_err(|e| db_error("releasing the migration lock", &e));
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
        .map_err(|e| db_error("reading the schema version", &e))?;
    if !exists {
        return Err(StoreError::new(
            "PostgreSQL: the database holds no toolgate tables (no toolgate_schema): is it the \
             agent's database?",
        ));
    }
    let found: i32 = client
        .query_one(sql::SCHEMA_VERSION, &[])
        .await
        .and_then(|row| row.try_get(0))
        .map_err(|e| db_error("reading the schema version", &e))?;
    if found != SCHEMA_VERSION {
        return Err(StoreError::new(format!(
            "PostgreSQL: the database's toolgate schema is version {found}, and this build reads \
             version {SCHEMA_VERSION}: use the toolgate that wrote it{}",
            if found < SCHEMA_VERSION {
                ", or let an agent of this build connect once to migrate it"
            } else {
                ""
            }
        )));
    }
    Ok(())
}

async fn migrate_locked(client: &mut Client) -> Result<(), StoreError> {
    let exists: bool = client
        .query_one(sql::HAS_SCHEMA_TABLE, &[])
        .await
        .and_then(|row| row.try_get(0))
        .map_err(|e| db_error("reading the schema version", &e))?;
    if !exists {
        client
            .batch_execute(sql::CREATE_SCHEMA_TABLE)
            .await
            .map_err(|e| db_error("creating toolgate_schema", &e))?;
    }
    let found: i32 = client
        .query_one(sql::SCHEMA_VERSION, &[])
        .await
        .and_then(|row| row.try_get(0))
        .map_err(|e| db_error("reading the schema version", &e))?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::new(format!(
            "PostgreSQL: the database's toolgate schema is version {found}, newer than this \
             build's version {SCHEMA_VERSION}: upgrade toolgate to use it (this build would \
             misread its tables), or connect to another database"
        )));
    }
    for (version, text) in MIGRATIONS.iter().filter(|(v, _)| *v > found) {
        let what = format!("applying migration {version}");
        let tx = client
            .transaction()
            .await
            .map_err(|e| db_error(&what, &e))?;
        tx.batch_execute(text)
            .await
            .map_err(|e| db_error(&what, &e))?;
        tx.execute(sql::RECORD_VERSION, &[version])
            .await
            .map_err(|e| db_error(&what, &e))?;
        tx.commit().await.map_err(|e| db_error(&what, &e))?;
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

impl Pool {
    /// A pool of `n` (at least 1) shared connections and the answers' one, none open yet.
    pub(crate) fn new(config: Config, n: usize, durable_answers: bool, migrate: bool) -> Pool {
        Pool {
            config,
            slots: (0..=n.max(1)).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
            durable_answers,
            migrate,
        }
    }

    /// The connection settings.
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// Opens the first connection and migrates through it (at `connect`).
    pub(crate) async fn start(&self) -> Result<(), StoreError> {
        let mut client = open(&self.config).await?;
        if self.migrate {
            migrate(&mut client).await?;
        } else {
            check_schema(&client).await?;
        }
        let conn = with_statements(client).await?;
        *self.slots[0].lock().await = Some(Arc::new(conn));
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

    /// An open connection of slot `i`: the one kept, or a new one when it was lost.
    async fn conn(&self, i: usize) -> Result<(Arc<Conn>, bool), StoreError> {
        let mut slot = self.slots[i].lock().await;
        if let Some(conn) = &*slot
            && !conn.client.is_closed()
        {
            return Ok((Arc::clone(conn), false));
        }
        *slot = None;
        let client = open(&self.config).await?;
        if i == self.slots.len() - 1 && !self.durable_answers {
            client
                .batch_execute("SET synchronous_commit TO off")
                .await
                .map_err(|e| db_error("setting the answers' connection", &e))?;
        }
        let conn = Arc::new(with_statements(client).await?);
        *slot = Some(Arc::clone(&conn));
        Ok((conn, true))
    }

    /// Runs `statement` (chosen from a connection's statements) with `params` on a connection
    /// of `lane` and returns its rows. A connection found lost (the server restarted, a network
    /// cut) is opened again and the statement sent once more, when the connection was not new:
    /// each statement is safe to send twice (a claim sent twice finds its own claim in
    /// progress, never runs the call).
    pub(crate) async fn query(
        &self,
        lane: Lane,
        what: &(dyn fmt::Display + Sync),
        statement: fn(&Statements) -> &Statement,
        params: Params<'_>,
    ) -> Result<Vec<Row>, StoreError> {
        let i = self.slot(lane);
        let (conn, fresh) = self.conn(i).await?;
        match conn.client.query(statement(&conn.st), params).await {
            Ok(rows) => Ok(rows),
            Err(_) if !fresh && conn.client.is_closed() => {
                drop(conn);
                let (conn, _) = self.conn(i).await?;
                conn.client
                    .query(statement(&conn.st), params)
                    .await
                    .map_err(|e| db_error(what, &e))
            }
            Err(e) => Err(db_error(what, &e)),
        }
    }
}

/// `client` with its statements prepared.
async fn with_statements(client: Client) -> Result<Conn, StoreError> {
    let st = Statements::prepare(&client)
        .await
        .map_err(|e| db_error("preparing the statements", &e))?;
    Ok(Conn { client, st })
}
