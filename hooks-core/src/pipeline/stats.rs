//! A session's counters ([`Stats`]), and the observer channel that counts the failures of
//! PostToolUse observers and Stop hooks.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::audit::outcome::Outcome;

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
