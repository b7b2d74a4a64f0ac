//! The ledger in this process's memory (`--store memory`, and an agent built without a store):
//! one run's refunds, checked and recorded under one mutex.

use std::collections::BTreeMap;

use super::{Asked, Recorded, Refund, RefundError, Tally, Total};

/// Every refund of the store with its world, in recording order (a refund's number is its
/// place here, so numbers are unique in the store), and the world of each session.
#[derive(Debug, Default)]
pub(crate) struct Rows {
    refunds: Vec<(String, Refund)>,
    sessions: BTreeMap<String, String>,
}

impl Rows {
    /// `total` over `world`'s refunds (saturating at `u64::MAX`).
    pub(super) fn sum(&self, world: &str, total: Total<'_>) -> u64 {
        self.refunds
            .iter()
            .filter(|(w, r)| w == world && total.counts(r))
            .fold(0, |sum, (_, r)| sum.saturating_add(r.amount_cents))
    }

    /// `owner`'s refunds in `world`.
    pub(super) fn list(&self, world: &str, owner: &str) -> Vec<Refund> {
        self.refunds
            .iter()
            .filter(|(w, r)| w == world && r.owner == owner)
            .map(|(_, r)| r.clone())
            .collect()
    }

    /// Checks `asked` against `world`'s totals and records it, the caller holding the mutex.
    pub(super) fn record(
        &mut self,
        world: &str,
        asked: Asked<'_>,
    ) -> Result<Recorded, RefundError> {
        let tally = Tally {
            order_cents: self.sum(world, Total::Order(asked.order.order_id)),
            week_cents: self.sum(
                world,
                Total::Week {
                    owner: asked.order.owner,
                    week: asked.week,
                },
            ),
        };
        asked.check(tally)?;
        let id = u64::try_from(self.refunds.len()).map_or(u64::MAX, |n| n.saturating_add(1));
        let recorded = Recorded::new(id, asked.order, asked.amount_cents, asked.week, tally);
        self.refunds
            .push((world.to_owned(), recorded.refund.clone()));
        Ok(recorded)
    }

    /// The world of `session_id`: `world` when it had none yet.
    pub(super) fn enter(&mut self, session_id: &str, world: &str) -> String {
        self.sessions
            .entry(session_id.to_owned())
            .or_insert_with(|| world.to_owned())
            .clone()
    }

    /// The world `session_id` entered, if it did.
    pub(super) fn world_of(&self, session_id: &str) -> Option<String> {
        self.sessions.get(session_id).cloned()
    }
}
