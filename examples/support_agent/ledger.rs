//! The refund ledger: application state (`State<Ledger>`) behind an async interface, as a
//! database would be, and the UTC calendar helpers its weeks are counted in.
//!
//! Each replayed transcript gets a fresh ledger. The refund tool records refunds in it; the
//! spend-limit hook reads it.

use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};
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

/// The cents of the refunds `keep` selects (saturating at `u64::MAX`).
fn sum_cents(refunds: &[Refund], keep: impl Fn(&Refund) -> bool) -> u64 {
    refunds
        .iter()
        .filter(|r| keep(r))
        .fold(0, |sum, r| sum.saturating_add(r.amount_cents))
}

/// The shop's refund ledger. In memory here; its methods are `async` because a real ledger is a
/// database the hooks and tools await.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    refunds: Mutex<Vec<Refund>>,
}

impl Ledger {
    fn lock(&self) -> MutexGuard<'_, Vec<Refund>> {
        // The list is only ever pushed to, so it is consistent even after a panic elsewhere.
        self.refunds.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cents refunded on `owner`'s orders in `week` (saturating at `u64::MAX`).
    pub(crate) async fn refunded_in_week(&self, owner: &str, week: IsoWeek) -> u64 {
        sum_cents(&self.lock(), |r| r.owner == owner && r.week == week)
    }

    /// The cents refunded on one order so far, all weeks together.
    pub(crate) async fn refunded_for_order(&self, order_id: &str) -> u64 {
        sum_cents(&self.lock(), |r| r.order_id == order_id)
    }

    /// Records a refund of `amount_cents` on `order` in `week`, unless the order's refunds would
    /// then exceed what was paid for it (checked and recorded under one lock).
    pub(crate) async fn record_refund(
        &self,
        order: &Order,
        amount_cents: u64,
        week: IsoWeek,
    ) -> Result<Refund, RefundRefused> {
        let mut refunds = self.lock();
        let refunded_cents = sum_cents(&refunds, |r| r.order_id == order.order_id);
        if refunded_cents.saturating_add(amount_cents) > order.amount_cents {
            return Err(RefundRefused {
                order_id: order.order_id.to_owned(),
                amount_cents,
                paid_cents: order.amount_cents,
                refunded_cents,
            });
        }
        let refund = Refund {
            refund_id: format!("re_{:04}", refunds.len() + 1),
            order_id: order.order_id.to_owned(),
            owner: order.owner.to_owned(),
            amount_cents,
            week,
        };
        refunds.push(refund.clone());
        Ok(refund)
    }

    /// Every refund recorded, in order.
    pub(crate) async fn refunds(&self) -> Vec<Refund> {
        self.lock().clone()
    }
}
