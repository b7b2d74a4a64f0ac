//! The refund ledger: application state (`State<Ledger>`) behind an async interface, as a
//! database would be, and the UTC calendar helpers its weeks are counted in.
//!
//! The refund tool records refunds in it; the weekly-limit rule and the order look-up read it.
//! Its rules are the customer's and the order's, so its totals are too: the weekly limit counts
//! every refund of the customer in the ISO week, the order's refundable amount every refund of
//! the order, whichever conversation or worker recorded them. There is one ledger per store
//! ([`Books`]: the agent's state file under `--out-dir`, the `--database-url` database, or one
//! run's memory), and every conversation on that store reads and writes it.
//!
//! A ledger is divided into worlds only where a transcript declares one (`"world"` in its
//! context): the bundled transcripts declare `demo`, so the demo replays the same whatever else
//! was paid on the store; every other conversation (`--live`, a transcript without `world`,
//! every worker) is in [`SHARED_WORLD`]. A session stays in the world it was first replayed in
//! ([`Books::enter`]), so a turn resumed later is paid in the same world.
//!
//! A refund is checked and recorded in one step under a lock of the customer's refunds (one
//! `BEGIN IMMEDIATE` transaction in SQLite, a transaction under the customer's advisory lock in
//! PostgreSQL, one mutex in memory): an order belongs to one customer, so that lock covers both
//! totals, and two workers paying the same customer at once cannot both pass the check.

mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
mod sqlite;

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use super::seed::Order;

/// The world of every conversation that declares none: `--live`, a transcript without `world`,
/// every worker of a fleet.
pub const SHARED_WORLD: &str = "shop";

/// An instant `jiff` cannot represent (years outside -9999..=9999): a hook that needs the
/// calendar cannot decide, so it fails (and the agent halts) rather than guess.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfRange;

impl fmt::Display for OutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the context's clock reads an instant outside the calendar's range")
    }
}

impl std::error::Error for OutOfRange {}

/// The UTC civil date and time of an instant (the context's clock is read as UTC).
pub fn utc(at: SystemTime) -> Result<jiff::civil::DateTime, OutOfRange> {
    let ts = jiff::Timestamp::try_from(at).map_err(|_| OutOfRange)?;
    Ok(jiff::tz::Offset::UTC.to_datetime(ts))
}

/// An ISO 8601 week (weeks start on Monday; week 1 holds the year's first Thursday), in UTC.
/// Displayed as `2026-W48`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IsoWeek {
    /// The ISO week-numbering year (it can differ from the calendar year around 1 January).
    pub year: i16,
    /// 1 to 53.
    pub week: i8,
}

impl IsoWeek {
    /// The ISO week holding `at`, read in UTC.
    pub fn of(at: SystemTime) -> Result<IsoWeek, OutOfRange> {
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
pub const WEEKLY_REFUND_LIMIT_CENTS: u64 = 50_000;

/// The weekly refund limit the `weekly_refund_limit` rule and the refund tool apply, in cents:
/// application state, so a what-if replay (`--what-if FILE --weekly-refund-limit CENTS`) can try another one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WeeklyRefundLimit(pub u64);

impl Default for WeeklyRefundLimit {
    fn default() -> Self {
        WeeklyRefundLimit(WEEKLY_REFUND_LIMIT_CENTS)
    }
}

/// One refund the ledger recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refund {
    /// `re_0001`: the store's own number for the row, unique in the store (every world, every
    /// worker), in recording order.
    pub refund_id: String,
    /// The refunded order.
    pub order_id: String,
    /// The order's owner.
    pub owner: String,
    /// The refunded amount, in cents.
    pub amount_cents: u64,
    /// The ISO week (UTC) the refund was recorded in.
    pub week: IsoWeek,
}

/// Why the ledger refused to record a refund. Its `Display` is written for the model, and the
/// refund tool opts it in with `.map_err(ToolError::for_model)?` (a `std::error::Error`
/// forwarded with a bare `?` would be internal: the model would read the generic message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundRefused {
    /// The order.
    pub order_id: String,
    /// The amount asked for, in cents.
    pub amount_cents: u64,
    /// What the customer paid, in cents.
    pub paid_cents: u64,
    /// What was already refunded on the order, in cents.
    pub refunded_cents: u64,
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
pub struct OverWeeklyLimit {
    /// The amount asked for, in cents.
    pub amount_cents: u64,
    /// The ISO week (UTC).
    pub week: IsoWeek,
    /// The weekly limit, in cents.
    pub limit_cents: u64,
    /// What the customer was already refunded in `week`, in cents.
    pub already_cents: u64,
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

/// What the ledger holds that a new refund is checked against, read under the customer's lock:
/// the order's refunds and the owner's refunds in the week, in cents.
#[derive(Debug, Clone, Copy)]
pub struct Tally {
    order_cents: u64,
    week_cents: u64,
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

/// The ledger could not be read or written (the database failed). Not for the model: a tool
/// forwards it with `?` (the model reads the generic message, the audit line the detail), and the
/// weekly-limit rule fails closed on it (the agent halts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerFailed(pub String);

impl fmt::Display for LedgerFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the refund ledger failed: {}", self.0)
    }
}

impl std::error::Error for LedgerFailed {}

/// Why a refund was not recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefundError {
    /// More than the order has left: the model is told why.
    Refused(RefundRefused),
    /// Past the weekly limit, another refund having been recorded since the rule checked: the
    /// model is told why.
    OverWeeklyLimit(OverWeeklyLimit),
    /// The ledger failed.
    Failed(LedgerFailed),
}

/// A refund the ledger recorded, and what its order has been refunded with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The refund.
    pub refund: Refund,
    /// Every refund of the order so far, this one included, in cents: read in the transaction
    /// that recorded it, so another worker's refund cannot slip in between.
    pub order_refunded_cents: u64,
}

impl Recorded {
    /// The refund numbered `id` by the store, of `amount_cents` on `order` in `week`, recorded
    /// on top of `tally`.
    fn new(id: u64, order: &Order, amount_cents: u64, week: IsoWeek, tally: Tally) -> Recorded {
        Recorded {
            refund: Refund {
                refund_id: refund_id(id),
                order_id: order.order_id.to_owned(),
                owner: order.owner.to_owned(),
                amount_cents,
                week,
            },
            order_refunded_cents: tally.order_cents.saturating_add(amount_cents),
        }
    }
}

/// The refund id of the store's row `id`: `re_0001`, wider past 9999.
fn refund_id(id: u64) -> String {
    format!("re_{id:04}")
}

/// A session asked into another world than the one it was first replayed in: a conversation's
/// refunds stay in one world. For the operator (a transcript's declaration), not the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherWorld {
    /// The session.
    pub session_id: String,
    /// The world it is in.
    pub recorded: String,
    /// The world it was asked into.
    pub asked: String,
}

impl fmt::Display for OtherWorld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "session {} was replayed in world `{}` before, not `{}`: a conversation's refunds \
             stay in one world; give the transcript another session_id, or `\"world\": \"{}\"` \
             in its context",
            self.session_id, self.recorded, self.asked, self.recorded
        )
    }
}

impl std::error::Error for OtherWorld {}

/// Why [`Books::enter`] refused a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnterError {
    /// The session is in another world.
    OtherWorld(OtherWorld),
    /// The ledger failed.
    Failed(LedgerFailed),
}

impl fmt::Display for EnterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnterError::OtherWorld(e) => e.fmt(f),
            EnterError::Failed(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for EnterError {}

/// A total the rules read.
#[derive(Debug, Clone, Copy)]
enum Total<'a> {
    /// The owner's refunds in the week.
    Week {
        /// The customer.
        owner: &'a str,
        /// The ISO week.
        week: IsoWeek,
    },
    /// The order's refunds, every week together.
    Order(&'a str),
}

impl Total<'_> {
    /// Whether `refund` counts in the total.
    fn counts(&self, refund: &Refund) -> bool {
        match *self {
            Total::Week { owner, week } => refund.owner == owner && refund.week == week,
            Total::Order(order_id) => refund.order_id == order_id,
        }
    }
}

/// Where the refunds of a store live.
#[derive(Debug, Clone)]
enum Place {
    /// In this process, for one run.
    Memory(Arc<Mutex<memory::Rows>>),
    /// The tables `support_agent_ledger` and `support_agent_sessions` of a SQLite file (the
    /// agent's state file), shared by every run and process on it.
    Sqlite(Arc<Mutex<rusqlite::Connection>>),
    /// The same tables in a PostgreSQL database, shared by a fleet.
    #[cfg(feature = "postgres")]
    Postgres(Arc<postgres::Database>),
}

/// The refund ledger of one store: the refunds of every world, and the world each session is
/// in. Cloning it shares it (the same memory, connection or database).
#[derive(Debug, Clone)]
pub struct Books {
    place: Place,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The rows are only pushed to, and a connection holds no half-done state between
    // statements: both are consistent after a panic elsewhere.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Books {
    /// A ledger in this process's memory, empty.
    pub fn memory() -> Books {
        Books {
            place: Place::Memory(Arc::default()),
        }
    }

    /// The ledger in the SQLite file `path` (its tables made when missing), on a connection of
    /// its own that waits up to 5 s for another process's write.
    ///
    /// # Errors
    /// The file cannot be opened, is not a database, or its tables cannot be made.
    pub fn sqlite(path: &std::path::Path) -> Result<Books, LedgerFailed> {
        Ok(Books {
            place: Place::Sqlite(Arc::new(Mutex::new(sqlite::open(path)?))),
        })
    }

    /// The ledger in the PostgreSQL database at `url` (its tables made when missing).
    ///
    /// # Errors
    /// The database cannot be reached, or its tables cannot be made.
    #[cfg(feature = "postgres")]
    pub fn postgres(url: &str) -> Result<Books, LedgerFailed> {
        Ok(Books {
            place: Place::Postgres(Arc::new(postgres::Database::connect(url)?)),
        })
    }

    /// The view of `world`'s refunds the tools and the rules are given.
    pub fn ledger(&self, world: &str) -> Ledger {
        Ledger {
            world: world.to_owned(),
            books: self.clone(),
        }
    }

    /// Records that `session_id` takes place in `world`, unless it was replayed in another
    /// world before (then [`EnterError::OtherWorld`]); entering the same world again is a no-op.
    /// An insert that does nothing when the session has a world, then a read: workers entering
    /// one session at once see one world.
    ///
    /// # Errors
    /// [`EnterError`].
    pub fn enter(&self, session_id: &str, world: &str) -> Result<(), EnterError> {
        let recorded = match &self.place {
            Place::Memory(rows) => Ok(lock(rows).enter(session_id, world)),
            Place::Sqlite(conn) => sqlite::enter(&lock(conn), session_id, world),
            #[cfg(feature = "postgres")]
            Place::Postgres(db) => db.enter(session_id, world),
        }
        .map_err(EnterError::Failed)?;
        if recorded == world {
            Ok(())
        } else {
            Err(EnterError::OtherWorld(OtherWorld {
                session_id: session_id.to_owned(),
                recorded,
                asked: world.to_owned(),
            }))
        }
    }

    /// The world `session_id` was replayed in, when it was (`--resume` pays in that world).
    ///
    /// # Errors
    /// The ledger failed.
    pub fn world_of(&self, session_id: &str) -> Result<Option<String>, LedgerFailed> {
        match &self.place {
            Place::Memory(rows) => Ok(lock(rows).world_of(session_id)),
            Place::Sqlite(conn) => sqlite::world_of(&lock(conn), session_id),
            #[cfg(feature = "postgres")]
            Place::Postgres(db) => db.world_of(session_id),
        }
    }
}

/// The refund ledger as the tools and the rules see it: one world of a store's [`Books`]
/// ([`SHARED_WORLD`] unless a transcript declares another). Its methods are `async` because a
/// ledger is a database the hooks and tools await.
#[derive(Debug, Clone)]
pub struct Ledger {
    world: String,
    books: Books,
}

impl Default for Ledger {
    /// The shared world of a fresh ledger in memory.
    fn default() -> Self {
        Books::memory().ledger(SHARED_WORLD)
    }
}

impl Ledger {
    fn total(&self, total: Total<'_>) -> Result<u64, LedgerFailed> {
        match &self.books.place {
            Place::Memory(rows) => Ok(lock(rows).sum(&self.world, total)),
            Place::Sqlite(conn) => sqlite::sum(&lock(conn), &self.world, total),
            #[cfg(feature = "postgres")]
            Place::Postgres(db) => db.sum(&self.world, total),
        }
    }

    /// The cents refunded to `owner` in `week`, by every conversation (saturating at
    /// `u64::MAX`).
    pub async fn refunded_in_week(&self, owner: &str, week: IsoWeek) -> Result<u64, LedgerFailed> {
        self.total(Total::Week { owner, week })
    }

    /// The cents refunded on one order so far, all weeks and conversations together.
    pub async fn refunded_for_order(&self, order_id: &str) -> Result<u64, LedgerFailed> {
        self.total(Total::Order(order_id))
    }

    /// Records a refund of `amount_cents` on `order` in `week`, unless the order's refunds would
    /// then exceed what was paid for it or the owner's refunds in `week` would exceed
    /// `limit_cents`, counting every conversation's refunds: checked and recorded in one step
    /// under a lock of the owner's refunds (the module's doc), so two workers cannot both pass
    /// the check.
    ///
    /// # Errors
    /// [`RefundError::Refused`] (the order), [`RefundError::OverWeeklyLimit`], or
    /// [`RefundError::Failed`].
    pub async fn record_refund(
        &self,
        order: &Order,
        amount_cents: u64,
        week: IsoWeek,
        limit_cents: u64,
    ) -> Result<Recorded, RefundError> {
        let refund = Asked {
            order,
            amount_cents,
            week,
            limit_cents,
        };
        match &self.books.place {
            Place::Memory(rows) => lock(rows).record(&self.world, refund),
            Place::Sqlite(conn) => sqlite::record(&mut lock(conn), &self.world, refund),
            #[cfg(feature = "postgres")]
            Place::Postgres(db) => db.record(&self.world, refund),
        }
    }

    /// The refunds of `owner` in this world (every order, week and conversation), in recording
    /// order: the customer's book.
    pub async fn refunds_of(&self, owner: &str) -> Result<Vec<Refund>, LedgerFailed> {
        match &self.books.place {
            Place::Memory(rows) => Ok(lock(rows).list(&self.world, owner)),
            Place::Sqlite(conn) => sqlite::list(&lock(conn), &self.world, owner),
            #[cfg(feature = "postgres")]
            Place::Postgres(db) => db.list(&self.world, owner),
        }
    }
}

/// A refund asked of the ledger, with the weekly limit it is held to.
#[derive(Debug, Clone, Copy)]
struct Asked<'a> {
    order: &'a Order,
    amount_cents: u64,
    week: IsoWeek,
    limit_cents: u64,
}

impl Asked<'_> {
    /// [`check`] against `tally`.
    fn check(&self, tally: Tally) -> Result<(), RefundError> {
        check(
            self.order,
            self.amount_cents,
            self.week,
            self.limit_cents,
            tally,
        )
    }

    /// The amount as a database integer.
    fn cents(&self) -> Result<i64, RefundError> {
        i64::try_from(self.amount_cents).map_err(|_| {
            RefundError::Failed(LedgerFailed(format!(
                "{} cents is too large",
                self.amount_cents
            )))
        })
    }
}

/// A database's sum or id (never negative: only positive amounts are inserted) as `u64`.
fn unsigned(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
