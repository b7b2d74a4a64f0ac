//! The ledger in PostgreSQL (feature `postgres`, `--database-url`): the same tables as in
//! SQLite, shared by every worker of a fleet. tokio-postgres on a current-thread runtime of the
//! ledger's own, each method run to its end there (the hooks and tools await the ledger inside
//! the dispatcher's own executor, not inside tokio).
//!
//! A refund is checked and recorded in one transaction that first takes a transaction-scoped
//! advisory lock of the customer (`pg_advisory_xact_lock`, the two-key form: the world's hash
//! and the customer's), so the workers paying one customer check and insert one at a time, and
//! the sums read after the lock (a new snapshot per statement, READ COMMITTED) see every refund
//! committed before it. Rows are numbered by an identity column: two workers inserting at once
//! get two numbers.

use std::sync::Mutex;

use super::{
    Asked, IsoWeek, LedgerFailed, Recorded, Refund, RefundError, Tally, Total, lock, unsigned,
};

/// The tables, made under a transaction-scoped advisory lock: two workers starting at once
/// would otherwise both try to create them, and one would fail on PostgreSQL's catalog.
const TABLES: &str = "BEGIN;
SELECT pg_advisory_xact_lock(hashtext('support_agent_ledger'));
CREATE TABLE IF NOT EXISTS support_agent_ledger (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    world text NOT NULL,
    owner text NOT NULL,
    order_id text NOT NULL,
    amount_cents bigint NOT NULL,
    week_year integer NOT NULL,
    week integer NOT NULL
);
CREATE INDEX IF NOT EXISTS support_agent_ledger_owner ON support_agent_ledger (world, owner);
CREATE INDEX IF NOT EXISTS support_agent_ledger_order ON support_agent_ledger (world, order_id);
CREATE TABLE IF NOT EXISTS support_agent_sessions (
    session_id text PRIMARY KEY,
    world text NOT NULL
);
COMMIT;";

/// The customer's lock: held by the transaction that checks and records a refund of theirs.
const CUSTOMER_LOCK: &str =
    "SELECT pg_advisory_xact_lock(hashtext('support_agent_ledger:' || $1), hashtext($2))";

/// One connection and the runtime that drives it.
pub struct Database {
    runtime: tokio::runtime::Runtime,
    client: Mutex<tokio_postgres::Client>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("postgres::Database")
    }
}

/// The server's own message when it sent one (`db error` alone says nothing).
fn failed(e: tokio_postgres::Error) -> LedgerFailed {
    match e.as_db_error() {
        Some(db) => LedgerFailed(format!(
            "PostgreSQL: {}: {}",
            db.code().code(),
            db.message()
        )),
        None => LedgerFailed(format!("PostgreSQL: {e}")),
    }
}

impl Database {
    /// Connects to `url` and makes the tables when they are missing.
    pub fn connect(url: &str) -> Result<Database, LedgerFailed> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| LedgerFailed(e.to_string()))?;
        let client = runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                .await
                .map_err(failed)?;
            tokio::spawn(connection);
            client.batch_execute(TABLES).await.map_err(failed)?;
            Ok::<_, LedgerFailed>(client)
        })?;
        Ok(Database {
            runtime,
            client: Mutex::new(client),
        })
    }

    /// `total` over `world`'s refunds.
    pub(super) fn sum(&self, world: &str, total: Total<'_>) -> Result<u64, LedgerFailed> {
        let client = lock(&self.client);
        let row = match total {
            Total::Week { owner, week } => self.runtime.block_on(client.query_one(
                "SELECT COALESCE(SUM(amount_cents), 0)::bigint FROM support_agent_ledger \
                 WHERE world = $1 AND owner = $2 AND week_year = $3 AND week = $4",
                &[&world, &owner, &i32::from(week.year), &i32::from(week.week)],
            )),
            Total::Order(order_id) => self.runtime.block_on(client.query_one(
                "SELECT COALESCE(SUM(amount_cents), 0)::bigint FROM support_agent_ledger \
                 WHERE world = $1 AND order_id = $2",
                &[&world, &order_id],
            )),
        }
        .map_err(failed)?;
        Ok(unsigned(row.try_get(0).map_err(failed)?))
    }

    /// `owner`'s refunds in `world`, by number.
    pub(super) fn list(&self, world: &str, owner: &str) -> Result<Vec<Refund>, LedgerFailed> {
        let client = lock(&self.client);
        let rows = self
            .runtime
            .block_on(client.query(
                "SELECT id, order_id, owner, amount_cents, week_year, week \
                 FROM support_agent_ledger \
                 WHERE world = $1 AND owner = $2 ORDER BY id",
                &[&world, &owner],
            ))
            .map_err(failed)?;
        rows.iter()
            .map(|row| {
                let year: i32 = row.try_get(4).map_err(failed)?;
                let week: i32 = row.try_get(5).map_err(failed)?;
                Ok(Refund {
                    refund_id: super::refund_id(unsigned(row.try_get(0).map_err(failed)?)),
                    order_id: row.try_get(1).map_err(failed)?,
                    owner: row.try_get(2).map_err(failed)?,
                    amount_cents: unsigned(row.try_get(3).map_err(failed)?),
                    week: IsoWeek {
                        year: i16::try_from(year).unwrap_or(0),
                        week: i8::try_from(week).unwrap_or(0),
                    },
                })
            })
            .collect()
    }

    /// Checks `asked` against `world`'s totals and records it, in one transaction under the
    /// customer's lock (the module's doc): its number, or the check's refusal.
    pub(super) fn record(&self, world: &str, asked: Asked<'_>) -> Result<Recorded, RefundError> {
        let cents = asked.cents()?;
        let (order, week) = (asked.order, asked.week);
        let (year, week_number) = (i32::from(week.year), i32::from(week.week));
        let failed = |e| RefundError::Failed(failed(e));
        let mut client = lock(&self.client);
        self.runtime.block_on(async {
            let tx = client.transaction().await.map_err(failed)?;
            let recorded = async {
                // A worker that holds the customer longer than this is stuck: fail, not wait.
                tx.batch_execute("SET LOCAL lock_timeout = '10s'")
                    .await
                    .map_err(failed)?;
                tx.execute(CUSTOMER_LOCK, &[&world, &order.owner])
                    .await
                    .map_err(failed)?;
                let row = tx
                    .query_one(
                        "SELECT COALESCE(SUM(amount_cents) FILTER (WHERE order_id = $3), 0)::bigint, \
                         COALESCE(SUM(amount_cents) FILTER (WHERE week_year = $4 AND week = $5), \
                         0)::bigint \
                         FROM support_agent_ledger WHERE world = $1 AND owner = $2",
                        &[&world, &order.owner, &order.order_id, &year, &week_number],
                    )
                    .await
                    .map_err(failed)?;
                let tally = Tally {
                    order_cents: unsigned(row.try_get(0).map_err(failed)?),
                    week_cents: unsigned(row.try_get(1).map_err(failed)?),
                };
                asked.check(tally)?;
                let row = tx
                    .query_one(
                        "INSERT INTO support_agent_ledger \
                         (world, owner, order_id, amount_cents, week_year, week) \
                         VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                        &[&world, &order.owner, &order.order_id, &cents, &year, &week_number],
                    )
                    .await
                    .map_err(failed)?;
                let id: i64 = row.try_get(0).map_err(failed)?;
                Ok(Recorded::new(unsigned(id), order, asked.amount_cents, week, tally))
            }
            .await;
            match recorded {
                Ok(recorded) => {
                    tx.commit().await.map_err(failed)?;
                    Ok(recorded)
                }
                Err(e) => {
                    // Rolled back now, while this runtime drives the connection: a dropped
                    // transaction only queues its ROLLBACK, and the customer's lock would stay
                    // held (every other worker waiting) until this worker's next statement.
                    let _ = tx.rollback().await;
                    Err(e)
                }
            }
        })
    }

    /// The world of `session_id`: `world` when it had none yet (one statement: inserted if
    /// absent, then the row read).
    pub(super) fn enter(&self, session_id: &str, world: &str) -> Result<String, LedgerFailed> {
        let client = lock(&self.client);
        self.runtime.block_on(async {
            client
                .execute(
                    "INSERT INTO support_agent_sessions (session_id, world) VALUES ($1, $2) \
                     ON CONFLICT (session_id) DO NOTHING",
                    &[&session_id, &world],
                )
                .await
                .map_err(failed)?;
            let row = client
                .query_one(
                    "SELECT world FROM support_agent_sessions WHERE session_id = $1",
                    &[&session_id],
                )
                .await
                .map_err(failed)?;
            row.try_get(0).map_err(failed)
        })
    }

    /// The world `session_id` entered, if it did.
    pub(super) fn world_of(&self, session_id: &str) -> Result<Option<String>, LedgerFailed> {
        let client = lock(&self.client);
        let row = self
            .runtime
            .block_on(client.query_opt(
                "SELECT world FROM support_agent_sessions WHERE session_id = $1",
                &[&session_id],
            ))
            .map_err(failed)?;
        row.map(|r| r.try_get(0).map_err(failed)).transpose()
    }
}
