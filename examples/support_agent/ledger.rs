//! The refund ledger: application state (`State<Ledger>`) behind an async interface, as a
//! database would be, and the UTC calendar helpers its weeks are counted in.
//!
//! The refund tool records refunds in it; the spend-limit hook reads it. A replay keeps it in
//! the agent's state file under `--out-dir` (each transcript its own book), so a second run sees
//! the first one's refunds; `--store memory` gives each transcript a fresh one.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use super::seed::Order;

/// An instant `jiff` cannot represent (years outside -9999..=9999): a hook that needs the
/// calendar cannot decide, so it fails (and the agent halts) rather than guess.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutOfRange;

impl fmt::Display for OutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the context's clock reads an instant outside the calendar's range")
    }
}

impl std::error::Error for OutOfRange {}

/// The UTC civil date and time of an instant (the context's clock is read as UTC).
pub(crate) fn utc(at: SystemTime) -> Result<jiff::civil::DateTime, OutOfRange> {
    let ts = jiff::Timestamp::try_from(at).map_err(|_| OutOfRange)?;
    Ok(jiff::tz::Offset::UTC.to_datetime(ts))
}

/// An ISO 8601 week (weeks start on Monday; week 1 holds the year's first Thursday), in UTC.
/// Displayed as `2026-W48`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct IsoWeek {
    /// The ISO week-numbering year (it can differ from the calendar year around 1 January).
    pub(crate) year: i16,
    /// 1 to 53.
    pub(crate) week: i8,
}

impl IsoWeek {
    /// The ISO week holding `at`, read in UTC.
    pub(crate) fn of(at: SystemTime) -> Result<IsoWeek, OutOfRange> {
        let week = utc(at)?.date().iso_week_date();
        Ok(IsoWeek {
            year: week.year(),
            week: week.week(),
        })
    }
}

impl fmt::Display for IsoWeek {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-W{:02}", self.year, self.week)
    }
}

/// The most refunds one customer may get in one ISO week (UTC), in cents: the default of
/// [`WeeklyRefundLimit`].
pub(crate) const WEEKLY_REFUND_LIMIT_CENTS: u64 = 50_000;

/// The weekly refund limit the `weekly_refund_limit` rule and the refund tool apply, in cents:
/// application state, so a what-if replay (`--what-if FILE --weekly-refund-limit CENTS`) can try another one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WeeklyRefundLimit(pub(crate) u64);

impl Default for WeeklyRefundLimit {
    fn default() -> Self {
        WeeklyRefundLimit(WEEKLY_REFUND_LIMIT_CENTS)
    }
}

/// One refund the ledger recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refund {
    /// `re_0001`, numbered in recording order within one ledger.
    pub(crate) refund_id: String,
    /// The refunded order.
    pub(crate) order_id: String,
    /// The order's owner.
    pub(crate) owner: String,
    /// The refunded amount, in cents.
    pub(crate) amount_cents: u64,
    /// The ISO week (UTC) the refund was recorded in.
    pub(crate) week: IsoWeek,
}

/// Why the ledger refused to record a refund. Its `Display` is written for the model, and the
/// refund tool opts it in with `.map_err(ToolError::for_model)?` (a `std::error::Error`
/// forwarded with a bare `?` would be internal: the model would read the generic message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RefundRefused {
    /// The order.
    pub(crate) order_id: String,
    /// The amount asked for, in cents.
    pub(crate) amount_cents: u64,
    /// What the customer paid, in cents.
    pub(crate) paid_cents: u64,
    /// What was already refunded on the order, in cents.
    pub(crate) refunded_cents: u64,
}

impl fmt::Display for RefundRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let left = self.paid_cents.saturating_sub(self.refunded_cents);
        write!(
            f,
            "Refund refused: {} cents is more than order {} has left to refund ({} cents paid, {} \
             cents already refunded, {left} cents left). Refund at most {left} cents.",
            self.amount_cents, self.order_id, self.paid_cents, self.refunded_cents
        )
    }
}

impl std::error::Error for RefundRefused {}

/// The ledger refused a refund that would take the customer past the weekly limit: checked
/// again where the refund is recorded, in the same step, because the weekly-limit rule reads
/// the ledger before the tool runs and another worker may record a refund in between. Its
/// `Display` is written for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OverWeeklyLimit {
    /// The amount asked for, in cents.
    pub(crate) amount_cents: u64,
    /// The ISO week (UTC).
    pub(crate) week: IsoWeek,
    /// The weekly limit, in cents.
    pub(crate) limit_cents: u64,
    /// What the customer was already refunded in `week`, in cents.
    pub(crate) already_cents: u64,
}

impl fmt::Display for OverWeeklyLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let left = self.limit_cents.saturating_sub(self.already_cents);
        write!(
            f,
            "Refund refused: another refund to this customer was recorded meanwhile, and {} cents \
             would bring their refunds in ISO week {} to {} cents, above the weekly limit of {} \
             cents. At most {left} cents can be refunded now; tell the customer the rest will be \
             reviewed by a human agent.",
            self.amount_cents,
            self.week,
            self.already_cents.saturating_add(self.amount_cents),
            self.limit_cents
        )
    }
}

impl std::error::Error for OverWeeklyLimit {}

/// What a book holds that a new refund is checked against: the order's refunds, the owner's
/// refunds in the week, and how many refunds the book has (the next one's number).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tally {
    order_cents: u64,
    week_cents: u64,
    count: usize,
}

/// The refund of `amount_cents` on `order` checked against `tally`: the order's cap first (what
/// was paid), then the weekly limit.
fn check(
    order: &Order,
    amount_cents: u64,
    week: IsoWeek,
    limit_cents: u64,
    tally: Tally,
) -> Result<(), RefundError> {
    if tally.order_cents.saturating_add(amount_cents) > order.amount_cents {
        return Err(RefundError::Refused(RefundRefused {
            order_id: order.order_id.to_owned(),
            amount_cents,
            paid_cents: order.amount_cents,
            refunded_cents: tally.order_cents,
        }));
    }
    if tally.week_cents.saturating_add(amount_cents) > limit_cents {
        return Err(RefundError::OverWeeklyLimit(OverWeeklyLimit {
            amount_cents,
            week,
            limit_cents,
            already_cents: tally.week_cents,
        }));
    }
    Ok(())
}

/// The cents of the refunds `keep` selects (saturating at `u64::MAX`).
fn sum_cents(refunds: &[Refund], keep: impl Fn(&Refund) -> bool) -> u64 {
    refunds
        .iter()
        .filter(|r| keep(r))
        .fold(0, |sum, r| sum.saturating_add(r.amount_cents))
}

/// The ledger could not be read or written (the database failed). Not for the model: a tool
/// forwards it with `?` (the model reads the generic message, the audit line the detail), and the
/// weekly-limit rule fails closed on it (the agent halts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LedgerFailed(pub(crate) String);

impl fmt::Display for LedgerFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the refund ledger failed: {}", self.0)
    }
}

impl std::error::Error for LedgerFailed {}

/// Why a refund was not recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RefundError {
    /// More than the order has left: the model is told why.
    Refused(RefundRefused),
    /// Past the weekly limit, another refund having been recorded since the rule checked: the
    /// model is told why.
    OverWeeklyLimit(OverWeeklyLimit),
    /// The ledger failed.
    Failed(LedgerFailed),
}

/// Where a ledger's refunds live.
#[derive(Debug)]
enum Books {
    /// In this process, for this ledger only.
    Memory(Mutex<Vec<Refund>>),
    /// The table `support_agent_refunds` of a SQLite file (the agent's state file), shared by
    /// every run and process on it.
    Sqlite(Arc<Mutex<rusqlite::Connection>>),
    /// The table `support_agent_refunds` of a PostgreSQL database, shared by a fleet.
    #[cfg(feature = "postgres")]
    Postgres(Arc<postgres::Books>),
}

/// The shop's refund ledger: one book of refunds (the bundled transcripts are scenarios of
/// their own, each with its own book, named by its session id; a live conversation's book is
/// `live`). In memory, or in the agent's SQLite state file; its methods are `async` because a
/// ledger is a database the hooks and tools await.
#[derive(Debug)]
pub(crate) struct Ledger {
    book: String,
    books: Books,
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger {
            book: String::new(),
            books: Books::Memory(Mutex::new(Vec::new())),
        }
    }
}

/// The table of the SQLite books: one row per refund, numbered within its book.
const SQLITE_TABLE: &str = "CREATE TABLE IF NOT EXISTS support_agent_refunds (
    book TEXT NOT NULL,
    seq INTEGER NOT NULL,
    order_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    amount_cents INTEGER NOT NULL,
    week_year INTEGER NOT NULL,
    week INTEGER NOT NULL,
    PRIMARY KEY (book, seq)
)";

fn failed(e: rusqlite::Error) -> LedgerFailed {
    LedgerFailed(e.to_string())
}

/// A connection to the SQLite books in `path` (the table made when missing), waiting up to 5 s
/// for another process's write.
pub(crate) fn open_sqlite_books(
    path: &std::path::Path,
) -> Result<Arc<Mutex<rusqlite::Connection>>, LedgerFailed> {
    let conn = rusqlite::Connection::open(path).map_err(failed)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(failed)?;
    conn.execute_batch(SQLITE_TABLE).map_err(failed)?;
    Ok(Arc::new(Mutex::new(conn)))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A refund list is only pushed to, and a connection holds no half-done state between
    // statements: both are consistent after a panic elsewhere.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Ledger {
    /// The book `book` of the PostgreSQL books `books`.
    #[cfg(feature = "postgres")]
    pub(crate) fn postgres(book: &str, books: Arc<postgres::Books>) -> Ledger {
        Ledger {
            book: book.to_owned(),
            books: Books::Postgres(books),
        }
    }

    /// The book `book` of the SQLite books behind `conn`.
    pub(crate) fn sqlite(book: &str, conn: Arc<Mutex<rusqlite::Connection>>) -> Ledger {
        Ledger {
            book: book.to_owned(),
            books: Books::Sqlite(conn),
        }
    }

    /// The refunds `keep` selects, summed (saturating at `u64::MAX`), with SQL's `WHERE` for
    /// the SQLite books.
    fn sum(
        &self,
        keep: impl Fn(&Refund) -> bool,
        sql: &str,
        params: &[&dyn rusqlite::ToSql],
    ) -> Result<u64, LedgerFailed> {
        match &self.books {
            Books::Memory(m) => Ok(sum_cents(&lock(m), keep)),
            Books::Sqlite(conn) => {
                let conn = lock(conn);
                let query = format!(
                    "SELECT COALESCE(SUM(amount_cents), 0) FROM support_agent_refunds \
                     WHERE book = ?1 AND {sql}"
                );
                let mut all: Vec<&dyn rusqlite::ToSql> = vec![&self.book];
                all.extend_from_slice(params);
                let cents: i64 = conn
                    .query_row(&query, all.as_slice(), |row| row.get(0))
                    .map_err(failed)?;
                Ok(u64::try_from(cents).unwrap_or(0))
            }
            #[cfg(feature = "postgres")]
            Books::Postgres(pg) => pg.sum(&self.book, |r| keep(r)),
        }
    }

    /// The cents refunded on `owner`'s orders in `week` (saturating at `u64::MAX`).
    pub(crate) async fn refunded_in_week(
        &self,
        owner: &str,
        week: IsoWeek,
    ) -> Result<u64, LedgerFailed> {
        self.sum(
            |r| r.owner == owner && r.week == week,
            "owner = ?2 AND week_year = ?3 AND week = ?4",
            &[&owner, &week.year, &week.week],
        )
    }

    /// The cents refunded on one order so far, all weeks together.
    pub(crate) async fn refunded_for_order(&self, order_id: &str) -> Result<u64, LedgerFailed> {
        self.sum(|r| r.order_id == order_id, "order_id = ?2", &[&order_id])
    }

    /// Records a refund of `amount_cents` on `order` in `week`, unless the order's refunds would
    /// then exceed what was paid for it or the owner's refunds in `week` would exceed
    /// `limit_cents`: checked and recorded in one step (one lock in memory, one `BEGIN
    /// IMMEDIATE` transaction in SQLite, one transaction under the book's advisory lock in
    /// PostgreSQL), so two workers cannot both pass the check.
    pub(crate) async fn record_refund(
        &self,
        order: &Order,
        amount_cents: u64,
        week: IsoWeek,
        limit_cents: u64,
    ) -> Result<Refund, RefundError> {
        let check = |tally| check(order, amount_cents, week, limit_cents, tally);
        let refund = |seq: usize| Refund {
            refund_id: format!("re_{seq:04}"),
            order_id: order.order_id.to_owned(),
            owner: order.owner.to_owned(),
            amount_cents,
            week,
        };
        match &self.books {
            Books::Memory(m) => {
                let mut refunds = lock(m);
                check(Tally {
                    order_cents: sum_cents(&refunds, |r| r.order_id == order.order_id),
                    week_cents: sum_cents(&refunds, |r| r.owner == order.owner && r.week == week),
                    count: refunds.len(),
                })?;
                let r = refund(refunds.len() + 1);
                refunds.push(r.clone());
                Ok(r)
            }
            Books::Sqlite(conn) => {
                let mut conn = lock(conn);
                let sqlite = |e| RefundError::Failed(failed(e));
                let tx = conn
                    .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                    .map_err(sqlite)?;
                let (refunded, in_week, count): (i64, i64, i64) = tx
                    .query_row(
                        "SELECT COALESCE(SUM(CASE WHEN order_id = ?2 THEN amount_cents END), 0), \
                         COALESCE(SUM(CASE WHEN owner = ?3 AND week_year = ?4 AND week = ?5 \
                         THEN amount_cents END), 0), \
                         COUNT(*) FROM support_agent_refunds WHERE book = ?1",
                        rusqlite::params![
                            self.book,
                            order.order_id,
                            order.owner,
                            week.year,
                            week.week
                        ],
                        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                    )
                    .map_err(sqlite)?;
                let tally = Tally {
                    order_cents: u64::try_from(refunded).unwrap_or(0),
                    week_cents: u64::try_from(in_week).unwrap_or(0),
                    count: usize::try_from(count).unwrap_or(0),
                };
                check(tally)?;
                let r = refund(tally.count + 1);
                let cents = i64::try_from(amount_cents).map_err(|_| {
                    RefundError::Failed(LedgerFailed(format!("{amount_cents} cents is too large")))
                })?;
                tx.execute(
                    "INSERT INTO support_agent_refunds \
                     (book, seq, order_id, owner, amount_cents, week_year, week) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    rusqlite::params![
                        self.book,
                        count + 1,
                        r.order_id,
                        r.owner,
                        cents,
                        week.year,
                        week.week
                    ],
                )
                .map_err(sqlite)?;
                tx.commit().map_err(sqlite)?;
                Ok(r)
            }
            #[cfg(feature = "postgres")]
            Books::Postgres(pg) => {
                let seq = pg.record(&self.book, order, amount_cents, week, check)?;
                Ok(refund(seq))
            }
        }
    }

    /// Every refund of the book, in order.
    pub(crate) async fn refunds(&self) -> Result<Vec<Refund>, LedgerFailed> {
        match &self.books {
            Books::Memory(m) => Ok(lock(m).clone()),
            Books::Sqlite(conn) => {
                let conn = lock(conn);
                let mut statement = conn
                    .prepare(
                        "SELECT seq, order_id, owner, amount_cents, week_year, week \
                         FROM support_agent_refunds WHERE book = ?1 ORDER BY seq",
                    )
                    .map_err(failed)?;
                let rows = statement
                    .query_map([&self.book], |row| {
                        let seq: i64 = row.get(0)?;
                        let cents: i64 = row.get(3)?;
                        Ok(Refund {
                            refund_id: format!("re_{seq:04}"),
                            order_id: row.get(1)?,
                            owner: row.get(2)?,
                            amount_cents: u64::try_from(cents).unwrap_or(0),
                            week: IsoWeek {
                                year: row.get(4)?,
                                week: row.get(5)?,
                            },
                        })
                    })
                    .map_err(failed)?;
                rows.collect::<Result<_, _>>().map_err(failed)
            }
            #[cfg(feature = "postgres")]
            Books::Postgres(pg) => pg.refunds(&self.book),
        }
    }
}

/// The books in PostgreSQL (feature `postgres`): tokio-postgres on a current-thread runtime of
/// the ledger's own, each method run to its end there (the hooks and tools await the ledger
/// inside the dispatcher's own executor, not inside tokio).
#[cfg(feature = "postgres")]
pub(crate) mod postgres {
    use std::sync::Mutex;

    use super::{IsoWeek, LedgerFailed, Order, Refund, RefundError, Tally, lock};

    /// The table, made under a transaction-scoped advisory lock: two workers starting at once
    /// would otherwise both try to create it, and one would fail on PostgreSQL's catalog.
    const TABLE: &str = "BEGIN;
    SELECT pg_advisory_xact_lock(hashtext('support_agent_refunds'));
    CREATE TABLE IF NOT EXISTS support_agent_refunds (
        book text NOT NULL,
        seq bigint NOT NULL,
        order_id text NOT NULL,
        owner text NOT NULL,
        amount_cents bigint NOT NULL,
        week_year integer NOT NULL,
        week integer NOT NULL,
        PRIMARY KEY (book, seq)
    );
    COMMIT;";

    /// One connection and the runtime that drives it.
    pub(crate) struct Books {
        runtime: tokio::runtime::Runtime,
        client: Mutex<tokio_postgres::Client>,
    }

    impl std::fmt::Debug for Books {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("postgres::Books")
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

    impl Books {
        /// Connects to `url` and makes the table when it is missing.
        pub(crate) fn connect(url: &str) -> Result<Books, LedgerFailed> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| LedgerFailed(e.to_string()))?;
            let client = runtime.block_on(async {
                let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                    .await
                    .map_err(failed)?;
                tokio::spawn(connection);
                client.batch_execute(TABLE).await.map_err(failed)?;
                Ok::<_, LedgerFailed>(client)
            })?;
            Ok(Books {
                runtime,
                client: Mutex::new(client),
            })
        }

        /// Every refund of `book`, in order.
        pub(crate) fn refunds(&self, book: &str) -> Result<Vec<Refund>, LedgerFailed> {
            let client = lock(&self.client);
            let rows = self
                .runtime
                .block_on(client.query(
                    "SELECT seq, order_id, owner, amount_cents, week_year, week \
                     FROM support_agent_refunds WHERE book = $1 ORDER BY seq",
                    &[&book],
                ))
                .map_err(failed)?;
            rows.iter()
                .map(|row| {
                    let seq: i64 = row.try_get(0).map_err(failed)?;
                    let cents: i64 = row.try_get(3).map_err(failed)?;
                    let year: i32 = row.try_get(4).map_err(failed)?;
                    let week: i32 = row.try_get(5).map_err(failed)?;
                    Ok(Refund {
                        refund_id: format!("re_{seq:04}"),
                        order_id: row.try_get(1).map_err(failed)?,
                        owner: row.try_get(2).map_err(failed)?,
                        amount_cents: u64::try_from(cents).unwrap_or(0),
                        week: IsoWeek {
                            year: i16::try_from(year).unwrap_or(0),
                            week: i8::try_from(week).unwrap_or(0),
                        },
                    })
                })
                .collect()
        }

        /// The cents of `book`'s refunds `keep` selects (the book is small: read whole).
        pub(crate) fn sum(
            &self,
            book: &str,
            keep: impl Fn(&Refund) -> bool,
        ) -> Result<u64, LedgerFailed> {
            Ok(super::sum_cents(&self.refunds(book)?, keep))
        }

        /// Records a refund in one transaction under a lock of the book (a transaction-scoped
        /// advisory lock, so workers of a fleet check and insert one at a time), once `check`
        /// passes the book's [`Tally`]: the refund's number, or `check`'s refusal.
        pub(crate) fn record(
            &self,
            book: &str,
            order: &Order,
            amount_cents: u64,
            week: IsoWeek,
            check: impl FnOnce(Tally) -> Result<(), RefundError>,
        ) -> Result<usize, RefundError> {
            let cents = i64::try_from(amount_cents).map_err(|_| {
                RefundError::Failed(LedgerFailed(format!("{amount_cents} cents is too large")))
            })?;
            let failed = |e| RefundError::Failed(failed(e));
            let mut client = lock(&self.client);
            self.runtime.block_on(async {
                let tx = client.transaction().await.map_err(failed)?;
                let recorded = async {
                    // A worker that holds the book longer than this is stuck: fail, not wait.
                    tx.batch_execute("SET LOCAL lock_timeout = '10s'")
                        .await
                        .map_err(failed)?;
                    tx.execute(
                        "SELECT pg_advisory_xact_lock(hashtext('support_agent_refunds:' || $1))",
                        &[&book],
                    )
                    .await
                    .map_err(failed)?;
                    let row = tx
                        .query_one(
                            "SELECT COALESCE(SUM(CASE WHEN order_id = $2 THEN amount_cents END), 0)::bigint, \
                             COALESCE(SUM(CASE WHEN owner = $3 AND week_year = $4 AND week = $5 \
                             THEN amount_cents END), 0)::bigint, \
                             COUNT(*) FROM support_agent_refunds WHERE book = $1",
                            &[
                                &book,
                                &order.order_id,
                                &order.owner,
                                &i32::from(week.year),
                                &i32::from(week.week),
                            ],
                        )
                        .await
                        .map_err(failed)?;
                    let refunded: i64 = row.try_get(0).map_err(failed)?;
                    let in_week: i64 = row.try_get(1).map_err(failed)?;
                    let count: i64 = row.try_get(2).map_err(failed)?;
                    let tally = Tally {
                        order_cents: u64::try_from(refunded).unwrap_or(0),
                        week_cents: u64::try_from(in_week).unwrap_or(0),
                        count: usize::try_from(count).unwrap_or(0),
                    };
                    check(tally)?;
                    tx.execute(
                        "INSERT INTO support_agent_refunds \
                         (book, seq, order_id, owner, amount_cents, week_year, week) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7)",
                        &[
                            &book,
                            &(count + 1),
                            &order.order_id,
                            &order.owner,
                            &cents,
                            &i32::from(week.year),
                            &i32::from(week.week),
                        ],
                    )
                    .await
                    .map_err(failed)?;
                    Ok(tally.count + 1)
                }
                .await;
                match recorded {
                    Ok(seq) => {
                        tx.commit().await.map_err(failed)?;
                        Ok(seq)
                    }
                    Err(e) => {
                        // Rolled back now, while this runtime drives the connection: a dropped
                        // transaction only queues its ROLLBACK, and the book's lock would stay
                        // held (every other worker waiting) until this worker's next statement.
                        let _ = tx.rollback().await;
                        Err(e)
                    }
                }
            })
        }
    }
}
