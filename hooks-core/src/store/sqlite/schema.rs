//! The SQLite store's schema: the migrations this build carries, applied at open.

use rusqlite::{Connection, TransactionBehavior};

use super::{Failure, now_millis};

/// The migrations, in order: the one at index `i` brings a file from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_calls_and_turns.sql"),
    include_str!("migrations/0002_turns.sql"),
    include_str!("migrations/0003_inbox.sql"),
    include_str!("migrations/0004_tokens.sql"),
];

/// The schema version this build writes: the number of migrations it carries.
pub(super) const VERSION: u32 = MIGRATIONS.len() as u32;

/// The versions applied to a file, one row each (created before any migration, by every open).
const SCHEMA_TABLE: &str = "CREATE TABLE IF NOT EXISTS toolgate_schema (
    version    INTEGER PRIMARY KEY,
    applied_at INTEGER NOT NULL
)";

/// Why a file's schema could not be brought to [`VERSION`].
pub(super) enum MigrateError {
    /// The file records this version, above [`VERSION`]: written by a newer build.
    Newer(i64),
    /// A statement failed.
    Failed(Failure),
}

impl From<rusqlite::Error> for MigrateError {
    fn from(e: rusqlite::Error) -> Self {
        MigrateError::Failed(Failure::Sql(e))
    }
}

/// Brings the file to [`VERSION`], one migration per transaction. Each transaction takes the
/// write lock first (`BEGIN IMMEDIATE`) and reads the version under it, so processes opening
/// one new file at once apply each migration once: the others wait, then find it applied.
pub(super) fn migrate(connection: &mut Connection) -> Result<(), MigrateError> {
    loop {
        let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(SCHEMA_TABLE)?;
        let found: i64 = tx.query_row(
            "SELECT COALESCE(MAX(version), 0) FROM toolgate_schema",
            [],
            |row| row.get(0),
        )?;
        if found > i64::from(VERSION) {
            return Err(MigrateError::Newer(found));
        }
        let applied = usize::try_from(found).map_err(|_| {
            MigrateError::Failed(Failure::Data(format!(
                "its toolgate_schema table records version {found}, which no toolgate writes"
            )))
        })?;
        let Some(migration) = MIGRATIONS.get(applied) else {
            // At this build's version.
            tx.commit()?;
            return Ok(());
        };
        tx.execute_batch(migration)?;
        tx.execute(
            "INSERT INTO toolgate_schema (version, applied_at) VALUES (?1, ?2)",
            (found + 1, now_millis()),
        )?;
        tx.commit()?;
    }
}
