//! The ledger in the agent's SQLite state file (`<out-dir>/state.sqlite`), beside toolgate's
//! answer memory: every run and process on the file shares it. A refund is checked and recorded
//! in one `BEGIN IMMEDIATE` transaction, which holds the file's write lock from its first
//! statement: another process's check waits for this one's insert.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::{Asked, IsoWeek, LedgerFailed, Recorded, Refund, RefundError, Tally, Total, unsigned};

/// The tables: one row per refund, numbered by SQLite (`AUTOINCREMENT`: a number is never given
/// twice, even after a row is deleted), and the world of each session.
const TABLES: &str = "CREATE TABLE IF NOT EXISTS support_agent_ledger (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    world TEXT NOT NULL,
    owner TEXT NOT NULL,
    order_id TEXT NOT NULL,
    amount_cents INTEGER NOT NULL,
    week_year INTEGER NOT NULL,
    week INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS support_agent_ledger_owner ON support_agent_ledger (world, owner);
CREATE INDEX IF NOT EXISTS support_agent_ledger_order ON support_agent_ledger (world, order_id);
CREATE TABLE IF NOT EXISTS support_agent_sessions (
    session_id TEXT PRIMARY KEY,
    world TEXT NOT NULL
);";

fn failed(e: rusqlite::Error) -> LedgerFailed {
    LedgerFailed(e.to_string())
}

/// A connection to the file at `path` with the tables made, waiting up to 5 s for another
/// process's write.
pub(super) fn open(path: &Path) -> Result<Connection, LedgerFailed> {
    let conn = Connection::open(path).map_err(failed)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(failed)?;
    conn.execute_batch(TABLES).map_err(failed)?;
    Ok(conn)
}

/// `total` over `world`'s refunds.
pub(super) fn sum(conn: &Connection, world: &str, total: Total<'_>) -> Result<u64, LedgerFailed> {
    let cents: i64 = match total {
        Total::Week { owner, week } => conn.query_row(
            "SELECT COALESCE(SUM(amount_cents), 0) FROM support_agent_ledger \
             WHERE world = ?1 AND owner = ?2 AND week_year = ?3 AND week = ?4",
            params![world, owner, week.year, week.week],
            |row| row.get(0),
        ),
        Total::Order(order_id) => conn.query_row(
            "SELECT COALESCE(SUM(amount_cents), 0) FROM support_agent_ledger \
             WHERE world = ?1 AND order_id = ?2",
            params![world, order_id],
            |row| row.get(0),
        ),
    }
    .map_err(failed)?;
    Ok(unsigned(cents))
}

/// `owner`'s refunds in `world`, by number.
pub(super) fn list(
    conn: &Connection,
    world: &str,
    owner: &str,
) -> Result<Vec<Refund>, LedgerFailed> {
    let mut statement = conn
        .prepare(
            "SELECT id, order_id, owner, amount_cents, week_year, week FROM support_agent_ledger \
             WHERE world = ?1 AND owner = ?2 ORDER BY id",
        )
        .map_err(failed)?;
    let rows = statement
        .query_map(params![world, owner], |row| {
            Ok(Refund {
                refund_id: super::refund_id(unsigned(row.get(0)?)),
                order_id: row.get(1)?,
                owner: row.get(2)?,
                amount_cents: unsigned(row.get(3)?),
                week: IsoWeek {
                    year: row.get(4)?,
                    week: row.get(5)?,
                },
            })
        })
        .map_err(failed)?;
    rows.collect::<Result<_, _>>().map_err(failed)
}

/// Checks `asked` against `world`'s totals and records it, in one `BEGIN IMMEDIATE`
/// transaction: both sums are of the owner's rows (an order's refunds are its owner's), read
/// with the file's write lock held, and the row is numbered by SQLite in the same transaction.
pub(super) fn record(
    conn: &mut Connection,
    world: &str,
    asked: Asked<'_>,
) -> Result<Recorded, RefundError> {
    let sqlite = |e| RefundError::Failed(failed(e));
    let cents = asked.cents()?;
    let (order, week) = (asked.order, asked.week);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sqlite)?;
    let (order_cents, week_cents): (i64, i64) = tx
        .query_row(
            "SELECT COALESCE(SUM(CASE WHEN order_id = ?3 THEN amount_cents END), 0), \
             COALESCE(SUM(CASE WHEN week_year = ?4 AND week = ?5 THEN amount_cents END), 0) \
             FROM support_agent_ledger WHERE world = ?1 AND owner = ?2",
            params![world, order.owner, order.order_id, week.year, week.week],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .map_err(sqlite)?;
    let tally = Tally {
        order_cents: unsigned(order_cents),
        week_cents: unsigned(week_cents),
    };
    // A refusal drops the transaction: rolled back, nothing written.
    asked.check(tally)?;
    let id: i64 = tx
        .query_row(
            "INSERT INTO support_agent_ledger \
             (world, owner, order_id, amount_cents, week_year, week) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
            params![
                world,
                order.owner,
                order.order_id,
                cents,
                week.year,
                week.week
            ],
            |row| row.get(0),
        )
        .map_err(sqlite)?;
    tx.commit().map_err(sqlite)?;
    Ok(Recorded::new(
        unsigned(id),
        order,
        asked.amount_cents,
        week,
        tally,
    ))
}

/// The world of `session_id`: `world` when it had none yet (inserted if absent, then read).
pub(super) fn enter(
    conn: &Connection,
    session_id: &str,
    world: &str,
) -> Result<String, LedgerFailed> {
    conn.execute(
        "INSERT INTO support_agent_sessions (session_id, world) VALUES (?1, ?2) \
         ON CONFLICT (session_id) DO NOTHING",
        params![session_id, world],
    )
    .map_err(failed)?;
    world_of(conn, session_id)?
        .ok_or_else(|| LedgerFailed(format!("session {session_id} was not recorded")))
}

/// The world `session_id` entered, if it did.
pub(super) fn world_of(
    conn: &Connection,
    session_id: &str,
) -> Result<Option<String>, LedgerFailed> {
    conn.query_row(
        "SELECT world FROM support_agent_sessions WHERE session_id = ?1",
        [session_id],
        |row| row.get(0),
    )
    .optional()
    .map_err(failed)
}
