//! A session's counters ([`Stats`]), the observer channel that counts the failures of
//! PostToolUse observers and Stop hooks, and a dispatcher's counts of its claims' renewals
//! ([`LeaseStats`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::audit::outcome::Outcome;
use crate::store::{HoldStatus, renew_every};

/// Counters of one session; atomics, so recording a call allocates nothing.
pub(crate) struct Stats {
    pub(crate) outcomes: [AtomicU64; Outcome::ALL.len()],
    pub(crate) tools: Box<[AtomicU64]>,
    pub(crate) observer_errors: AtomicU64,
}

impl Stats {
    pub(crate) fn new(tools: usize) -> Self {
        Stats {
            outcomes: std::array::from_fn(|_| AtomicU64::new(0)),
            tools: (0..tools).map(|_| AtomicU64::new(0)).collect(),
            observer_errors: AtomicU64::new(0),
        }
    }

    /// Every call recorded: the sum of the outcome counts.
    pub(crate) fn calls(&self) -> u64 {
        self.outcomes
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// Counts one call of `outcome` (and of the tool at index `tool`, when it is one); a
    /// record that is not final (`awaiting_approval`) is not counted: the call is counted once,
    /// when it ends.
    #[inline]
    pub(crate) fn record(&self, outcome: Outcome, tool: Option<usize>) {
        if !outcome.is_final() {
            return;
        }
        self.outcomes[outcome.index()].fetch_add(1, Ordering::Relaxed);
        if let Some(t) = tool.and_then(|i| self.tools.get(i)) {
            t.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Adds one `(key, count)` to a summary's map (`SessionSummary::outcomes`, `tools`), for a
/// `fold`: `insert`, where `collect` would compile the standard sort anew for each key type
/// (BENCHMARKS.md, "Build cost").
pub(crate) fn counted<K: Ord>(mut map: BTreeMap<K, u64>, (key, n): (K, u64)) -> BTreeMap<K, u64> {
    map.insert(key, n);
    map
}

/// Reports an observer's or Stop hook's failure on the observer channel: `tracing` (target
/// `toolgate::observer`) and the session's count.
pub(crate) fn report_observer_error(stats: Option<&Stats>, hook: &str, what: &str, error: &str) {
    if let Some(s) = stats {
        s.observer_errors.fetch_add(1, Ordering::Relaxed);
    }
    tracing::warn!(target: "toolgate::observer", hook, on = what, error, "observer failed");
}

/// How a dispatcher's claims and takes were kept alive while their calls ran, counted as each
/// hold ends (atomics).
#[derive(Default)]
pub(crate) struct LeaseCounters {
    held: AtomicU64,
    renewed: AtomicU64,
    renewals: AtomicU64,
    failed: AtomicU64,
    fenced: AtomicU64,
}

impl LeaseCounters {
    /// Counts a hold that ended as `status` says, its answer `fenced` or not.
    pub(crate) fn record(&self, status: &HoldStatus, fenced: bool) {
        self.held.fetch_add(1, Ordering::Relaxed);
        if status.renewals > 0 {
            self.renewed.fetch_add(1, Ordering::Relaxed);
            self.renewals.fetch_add(status.renewals, Ordering::Relaxed);
        }
        if status.lost.is_some() {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
        if fenced {
            self.fenced.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts an answer the store refused where no hold was kept (a store that refuses
    /// without renewing).
    pub(crate) fn fenced(&self) {
        self.fenced.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts, with the dispatcher's leases.
    pub(crate) fn stats(&self, claim_lease: Duration, fixed_claim_lease: Duration) -> LeaseStats {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        LeaseStats {
            claim_lease,
            renew_every: renew_every(claim_lease),
            fixed_claim_lease,
            held: n(&self.held),
            renewed: n(&self.renewed),
            renewals: n(&self.renewals),
            renewals_failed: n(&self.failed),
            fenced: n(&self.fenced),
        }
    }
}

/// How a dispatcher's claims in the answer memory (and takes of paused turns) were kept alive
/// while their calls ran, since it was built ([`Dispatcher::lease_stats`](crate::Dispatcher::lease_stats)):
/// its leases, and counts made as each call ends (a call still running is not counted yet).
///
/// A store that renews ([`AnswerStore::renews`](crate::store::AnswerStore::renews): the
/// SQLite and PostgreSQL stores, a shared [`MemoryAnswerStore`](crate::store::MemoryAnswerStore))
/// is claimed with `claim_lease` and renewed every `renew_every` while the call runs; any other
/// store, and a session's own memory, with `fixed_claim_lease`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseStats {
    /// The lease of a claim a store renews: how long a dead worker's calls wait.
    pub claim_lease: Duration,
    /// How often a held claim is renewed: a third of `claim_lease`.
    pub renew_every: Duration,
    /// The lease of a claim no store renews: above the longest call.
    pub fixed_claim_lease: Duration,
    /// Claims and takes held by a store that renews, ended.
    pub held: u64,
    /// Of those, the ones renewed at least once (their calls outlasted one interval).
    pub renewed: u64,
    /// Renewals made, all of them.
    pub renewals: u64,
    /// Holds whose renewal failed (the store unreachable, or the claim taken over): each
    /// stopped renewing then.
    pub renewals_failed: u64,
    /// Answers (and resumed turns) the store refused because their claim (take) no longer held
    /// the call: the call's answer was the one the store held, interrupted.
    pub fenced: u64,
}
