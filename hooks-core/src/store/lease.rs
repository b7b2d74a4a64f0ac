//! A claim's (or a take's) [`Token`], and its lease kept alive while its call runs: the
//! [`Hold`] a store gives for it, and the renewer a database store runs ([`Registry`]: every
//! claim and take held, renewed in batches, one statement per batch, on a thread of the store's
//! own, so a renewal never waits for a call's future to be polled: a sync tool blocks the
//! thread that polls it).
//!
//! A held lease is renewed every third of it ([`renew_every`]), by the store's clock; a call
//! that ends within one interval renews nothing. A renewal that fails (the store unreachable,
//! or the claim taken over: its lease ran out and another worker's claim marked the call
//! interrupted) ends the renewals of that claim: the worker then holds nothing, and the store
//! refuses its late answer by its token ([`StoreError::is_fenced`]).

use std::fmt;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use registry::{Batch, Held, Registry, spawn};

/// The token of one claim in an [`AnswerStore`](super::AnswerStore) (or one take in a
/// [`PendingStore`](super::PendingStore)): drawn by the claimer for each claim with
/// [`Token::draw`], kept by the store in the claim's row, and given back with everything that
/// acts on that claim ([`answered`](super::AnswerStore::answered),
/// [`release`](super::AnswerStore::release), [`hold`](super::AnswerStore::hold), a renewal).
/// The store acts only for the claim that holds the call now: a claim whose lease ran out and
/// was taken over (a retry marked its call interrupted) is refused, so its worker's late answer
/// never replaces what the store holds (a *fencing token*). A database store also recognizes
/// its own row by it when a statement is sent again after a lost connection.
///
/// Unique within the process (a counter) and drawn at random across processes (the counter
/// mixed with a key drawn once per process): two claims of one call never share one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Token(u64);

impl Token {
    /// A token no other claim or take draws.
    pub fn draw() -> Token {
        static KEY: OnceLock<u64> = OnceLock::new();
        static N: AtomicU64 = AtomicU64::new(0);
        let key = *KEY.get_or_init(|| {
            std::hash::RandomState::new().hash_one((std::process::id(), Instant::now()))
        });
        let n = N.fetch_add(1, Ordering::Relaxed);
        // An odd multiplier and a xor: one-to-one, so the process's tokens never repeat.
        Token(n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ key)
    }

    /// The token whose number is `n` (as a store reads it back from its row).
    pub const fn from_u64(n: u64) -> Token {
        Token(n)
    }

    /// Its number.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// Its number as a database's signed 64-bit integer (the same bits).
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn as_i64(self) -> i64 {
        i64::from_ne_bytes(self.0.to_ne_bytes())
    }
}

/// How often a held lease of `lease` is renewed: every third of it (at least every
/// millisecond), so two renewals can fail to arrive in time before it runs out.
pub fn renew_every(lease: Duration) -> Duration {
    (lease / 3).max(Duration::from_millis(1))
}

/// What became of a [`Hold`] so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HoldStatus {
    /// The renewals the store made (none for a call that ended within one interval, and none
    /// for a store that keeps its holds in this process's memory).
    pub renewals: u64,
    /// Why the renewals stopped, when one failed: the store's error, or that the store no
    /// longer holds the call under this claim's token (taken over). The claim then lapses
    /// with its lease, and a late answer is refused.
    pub lost: Option<String>,
}

/// A claim (or a take) its store keeps alive until the hold is dropped: what
/// [`AnswerStore::hold`](super::AnswerStore::hold) and
/// [`PendingStore::hold`](super::PendingStore::hold) answer. The session holds it while the
/// call (the resume) runs and drops it once the answer is recorded or the claim released.
pub struct Hold {
    inner: HoldInner,
}

enum HoldInner {
    /// Renewed by the store's renewer.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    Renewed { registry: Arc<Registry>, id: u64 },
    /// Kept without renewals (a store in this process's memory), `end` run when dropped.
    Kept(Option<Box<dyn FnOnce() + Send + Sync>>),
    /// Kept by this crate's in-memory answer store, which `by` tells to let the claim of
    /// `token` go when dropped: nothing allocated (a shared in-memory store's calls are a few
    /// microseconds).
    InMemory { by: Arc<dyn Unhold>, token: Token },
}

/// What lets a claim an in-memory store keeps held go ([`HoldInner::InMemory`]).
pub(crate) trait Unhold: Send + Sync {
    /// The claim of `token` is no longer held.
    fn unhold(&self, token: Token);
}

impl Hold {
    /// A hold kept without renewals, for a store whose claims live in the memory of the process
    /// that holds them (the process that would renew is the one that keeps the lease): its
    /// lease does not run out while the hold exists, and `end` starts it again when the hold
    /// is dropped (see [`MemoryAnswerStore`](super::MemoryAnswerStore)).
    pub fn kept(end: impl FnOnce() + Send + Sync + 'static) -> Hold {
        Hold {
            inner: HoldInner::Kept(Some(Box::new(end))),
        }
    }

    /// A hold of this crate's in-memory answer store (see [`HoldInner::InMemory`]).
    pub(crate) fn in_memory(by: Arc<dyn Unhold>, token: Token) -> Hold {
        Hold {
            inner: HoldInner::InMemory { by, token },
        }
    }

    /// What became of it so far: the renewals made, and why they stopped if one failed.
    pub fn status(&self) -> HoldStatus {
        match &self.inner {
            #[cfg(any(feature = "sqlite", feature = "postgres"))]
            HoldInner::Renewed { registry, id } => registry.status(*id),
            HoldInner::Kept(_) | HoldInner::InMemory { .. } => HoldStatus::default(),
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        match &mut self.inner {
            #[cfg(any(feature = "sqlite", feature = "postgres"))]
            HoldInner::Renewed { registry, id } => registry.forget(*id),
            HoldInner::Kept(end) => {
                if let Some(end) = end.take() {
                    end();
                }
            }
            HoldInner::InMemory { by, token } => by.unhold(*token),
        }
    }
}

impl fmt::Debug for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hold")
            .field("status", &self.status())
            .finish()
    }
}

/// The renewer of the database stores (features `sqlite`, `postgres`): what is held, and the
/// thread that renews it.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod registry {
    use std::collections::HashMap;
    use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
    use std::time::{Duration, Instant};

    use super::{Hold, HoldInner, HoldStatus, Token, renew_every};
    use crate::store::StoreError;

    /// What a held entry holds: a claim of a call, or a take of a paused turn.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(crate) enum Held {
        /// A claim of (session id, `tool_use` id, turn).
        Claim {
            session_id: String,
            tool_use_id: String,
            turn: String,
        },
        /// A take of (session id, turn id).
        Take { session_id: String, turn_id: String },
    }

    impl Held {
        /// The claim of `key`.
        pub(crate) fn claim(key: crate::store::CallKey<'_>) -> Held {
            Held::Claim {
                session_id: key.session_id.to_owned(),
                tool_use_id: key.tool_use_id.to_owned(),
                turn: key.turn.to_owned(),
            }
        }

        /// The take of the turn `turn_id` of session `session_id`.
        pub(crate) fn take(session_id: &str, turn_id: &str) -> Held {
            Held::Take {
                session_id: session_id.to_owned(),
                turn_id: turn_id.to_owned(),
            }
        }
    }

    /// The entries of one batch: all claims or all takes, all of one lease.
    pub(crate) struct Batch {
        /// Whether they are claims (else takes).
        pub(crate) claims: bool,
        /// The lease each is renewed to, from now by the store's clock.
        pub(crate) lease: Duration,
        /// What each holds, with its token.
        pub(crate) items: Vec<(Held, Token)>,
        ids: Vec<u64>,
    }

    /// The most entries one renewal statement carries.
    const MAX_BATCH: usize = 1000;

    /// How long the renewer waits, at most, before it looks again (shortened to half the shortest
    /// renewal interval a hold brought).
    const IDLE: Duration = Duration::from_secs(1);

    /// One held claim or take.
    struct Entry {
        held: Held,
        token: Token,
        lease: Duration,
        every: Duration,
        /// One interval after it was held or last renewed.
        due: Instant,
        renewals: u64,
        lost: Option<String>,
    }

    impl Entry {
        /// When it may be renewed with a batch: half an interval before it is due, so that the
        /// claims held within one half interval are renewed together, in one statement, whatever
        /// the instant each was held at (renewing early only moves the lease's end later).
        fn ripe(&self) -> Instant {
            self.due - self.every / 2
        }
    }

    #[derive(Default)]
    struct Live {
        entries: HashMap<u64, Entry>,
        next: u64,
        /// How long the renewer waits when nothing is due sooner: half the shortest interval of a
        /// hold so far ([`IDLE`] before any), so a new hold is never due before it looks again.
        idle: Option<Duration>,
        stopped: bool,
    }

    /// The claims and takes a store holds, and what renews them: a store keeps one, starts its
    /// renewer ([`spawn`]) at its first hold, and [`stop`](Self::stop)s it when it is dropped.
    #[derive(Default)]
    pub(crate) struct Registry {
        live: Mutex<Live>,
        wake: Condvar,
    }

    impl Registry {
        fn lock(&self) -> MutexGuard<'_, Live> {
            // Nothing panics while holding it; a poisoned lock still holds valid entries.
            self.live.lock().unwrap_or_else(PoisonError::into_inner)
        }

        /// What became of the hold `id` so far (a hold no longer kept: nothing).
        pub(super) fn status(&self, id: u64) -> HoldStatus {
            self.lock()
                .entries
                .get(&id)
                .map(|e| HoldStatus {
                    renewals: e.renewals,
                    lost: e.lost.clone(),
                })
                .unwrap_or_default()
        }

        /// The hold `id` was dropped: renewed no more.
        pub(super) fn forget(&self, id: u64) {
            self.lock().entries.remove(&id);
        }

        /// Holds `held` (claimed with `token` for `lease`): renewed from one interval from now
        /// until the returned [`Hold`] is dropped.
        pub(crate) fn hold(self: &Arc<Self>, held: Held, token: Token, lease: Duration) -> Hold {
            let every = renew_every(lease);
            let mut live = self.lock();
            let id = live.next;
            live.next += 1;
            live.entries.insert(
                id,
                Entry {
                    held,
                    token,
                    lease,
                    every,
                    due: Instant::now() + every,
                    renewals: 0,
                    lost: None,
                },
            );
            let idle = (every / 2).max(Duration::from_millis(1));
            if live.idle.is_none_or(|was| idle < was) {
                // The renewer may be waiting longer than this hold allows: it looks again now.
                live.idle = Some(idle);
                self.wake.notify_all();
            }
            drop(live);
            Hold {
                inner: HoldInner::Renewed {
                    registry: Arc::clone(self),
                    id,
                },
            }
        }

        /// Stops the renewer (the store is dropped): it returns at its next look.
        pub(crate) fn stop(&self) {
            self.lock().stopped = true;
            self.wake.notify_all();
        }

        /// The renewer's loop, on a thread of its own: waits until an entry is due, renews the due
        /// ones with `renew` (one call per batch, which answers for each entry in order whether the
        /// store still holds it under its token), and again, until [`stop`](Self::stop).
        pub(crate) fn run(&self, mut renew: impl FnMut(&Batch) -> Result<Vec<bool>, StoreError>) {
            while let Some((batches, sent)) = self.next_batches() {
                for batch in &batches {
                    let outcome = renew(batch);
                    self.settle(batch, sent, outcome);
                }
            }
        }

        /// Waits until entries are due, and answers them in batches with the instant they were
        /// found due; `None` once stopped.
        fn next_batches(&self) -> Option<(Vec<Batch>, Instant)> {
            let mut live = self.lock();
            loop {
                if live.stopped {
                    return None;
                }
                let now = Instant::now();
                let batches = due(&live, now);
                if !batches.is_empty() {
                    return Some((batches, now));
                }
                let next = live
                    .entries
                    .values()
                    .filter(|e| e.lost.is_none())
                    .map(|e| e.due)
                    .min();
                let idle = live.idle.unwrap_or(IDLE);
                let wait = next.map_or(idle, |t| t.saturating_duration_since(now).min(idle));
                live = self
                    .wake
                    .wait_timeout(live, wait)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }

        /// Records what the renewal of `batch`, sent at `sent`, came to.
        fn settle(&self, batch: &Batch, sent: Instant, outcome: Result<Vec<bool>, StoreError>) {
            let mut live = self.lock();
            for (i, id) in batch.ids.iter().enumerate() {
                let Some(e) = live.entries.get_mut(id) else {
                    // Dropped meanwhile: its call ended.
                    continue;
                };
                match &outcome {
                    Ok(held) if held.get(i) == Some(&true) => {
                        e.renewals += 1;
                        e.due = sent + e.every;
                    }
                    Ok(_) => e.lost = Some(TAKEN_OVER.to_owned()),
                    Err(error) => e.lost = Some(error.to_string()),
                }
                if let Some(lost) = &e.lost {
                    tracing::warn!(target: "toolgate::memory", held = ?e.held, error = %lost,
                        "a lease could not be renewed; it is renewed no more and lapses");
                }
            }
        }
    }

    /// Why a renewal found nothing to renew.
    const TAKEN_OVER: &str = "the store no longer holds it under this claim's token: its lease ran \
         out and another worker took it over";

    /// The entries of `live` to renew at `now`: once one is due, every one that is ripe (not
    /// lost), in batches of one kind and one lease.
    fn due(live: &Live, now: Instant) -> Vec<Batch> {
        let mut batches: Vec<Batch> = Vec::new();
        if !live
            .entries
            .values()
            .any(|e| e.lost.is_none() && e.due <= now)
        {
            return batches;
        }
        let mut ids: Vec<&u64> = live
            .entries
            .iter()
            .filter(|(_, e)| e.lost.is_none() && e.ripe() <= now)
            .map(|(id, _)| id)
            .collect();
        // In the order they were held: a batch's statement then reads its rows in a stable order.
        ids.sort_unstable();
        for id in ids {
            let e = &live.entries[id];
            let claims = matches!(e.held, Held::Claim { .. });
            let open = batches
                .iter_mut()
                .find(|b| b.claims == claims && b.lease == e.lease && b.ids.len() < MAX_BATCH);
            let batch = match open {
                Some(b) => b,
                None => {
                    batches.push(Batch {
                        claims,
                        lease: e.lease,
                        items: Vec::new(),
                        ids: Vec::new(),
                    });
                    batches.last_mut().expect("just pushed")
                }
            };
            batch.items.push((e.held.clone(), e.token));
            batch.ids.push(*id);
        }
        batches
    }

    /// Starts the renewer of `registry` on a thread named `name`, renewing with `renew`; it runs
    /// until [`Registry::stop`].
    ///
    /// # Errors
    /// When the thread cannot be started (out of resources): the holds are then not renewed, and
    /// their claims lapse with their leases.
    pub(crate) fn spawn(
        name: &str,
        registry: &Arc<Registry>,
        renew: impl FnMut(&Batch) -> Result<Vec<bool>, StoreError> + Send + 'static,
    ) -> Result<(), StoreError> {
        let registry = Arc::clone(registry);
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || registry.run(renew))
            .map(drop)
            .map_err(|e| {
                StoreError::new(
                    crate::store::StoreErrorKind::Unavailable,
                    format!("cannot start the store's renewer thread: {e}"),
                )
            })
    }
}

#[cfg(all(test, any(feature = "sqlite", feature = "postgres")))]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use super::{Held, Registry, Token, renew_every, spawn};
    use crate::store::StoreError;

    fn claim(id: &str) -> Held {
        Held::Claim {
            session_id: "s".to_owned(),
            tool_use_id: id.to_owned(),
            turn: String::new(),
        }
    }

    /// Waits (bounded: a minute) until `ready`.
    fn wait_until(mut ready: impl FnMut() -> bool) {
        let bound = Instant::now() + Duration::from_secs(60);
        while !ready() {
            assert!(Instant::now() < bound, "never happened");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    #[test]
    fn tokens_drawn_in_one_process_never_repeat() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..100_000 {
            assert!(seen.insert(Token::draw()));
        }
    }

    #[test]
    fn holds_are_renewed_together_in_one_batch_until_they_are_dropped() {
        let registry = Arc::new(Registry::default());
        let batches = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = Arc::clone(&batches);
        spawn("test-renewer", &registry, move |batch| {
            let ids: Vec<Held> = batch.items.iter().map(|(h, _)| h.clone()).collect();
            seen.lock().unwrap().push(ids);
            Ok(vec![true; batch.items.len()])
        })
        .unwrap();
        let lease = Duration::from_millis(150);
        assert_eq!(renew_every(lease), Duration::from_millis(50));
        let a = registry.hold(claim("a"), Token::draw(), lease);
        let b = registry.hold(claim("b"), Token::draw(), lease);
        // Dropped before its first interval: never renewed.
        drop(registry.hold(claim("c"), Token::draw(), lease));
        wait_until(|| a.status().renewals >= 3 && b.status().renewals >= 3);
        drop((a, b));
        let renewed = batches.lock().unwrap().clone();
        assert!(
            renewed.iter().all(|ids| ids == &[claim("a"), claim("b")]),
            "both in every statement, c in none: {renewed:?}"
        );
        // Nothing renews a dropped hold: no batch is made from now on.
        let made = batches.lock().unwrap().len();
        let other = registry.hold(claim("d"), Token::draw(), lease);
        wait_until(|| other.status().renewals >= 1);
        drop(other);
        let after: Vec<Vec<Held>> = batches.lock().unwrap()[made..].to_vec();
        assert!(after.iter().all(|ids| ids == &[claim("d")]), "{after:?}");
        registry.stop();
    }

    #[test]
    fn a_renewal_that_fails_or_finds_the_claim_taken_over_ends_its_renewals() {
        let registry = Arc::new(Registry::default());
        let fail = Arc::new(AtomicUsize::new(0));
        let tries = Arc::new(AtomicUsize::new(0));
        let (mode, count) = (Arc::clone(&fail), Arc::clone(&tries));
        spawn("test-renewer", &registry, move |batch| {
            count.fetch_add(1, Ordering::SeqCst);
            match mode.load(Ordering::SeqCst) {
                0 => Ok(batch
                    .items
                    .iter()
                    .map(|(h, _)| *h != claim("lost"))
                    .collect()),
                _ => Err(StoreError::new(
                    crate::store::StoreErrorKind::Unavailable,
                    "connection refused",
                )),
            }
        })
        .unwrap();
        let lease = Duration::from_millis(90);
        let kept = registry.hold(claim("kept"), Token::draw(), lease);
        let lost = registry.hold(claim("lost"), Token::draw(), lease);
        wait_until(|| lost.status().lost.is_some() && kept.status().renewals >= 1);
        assert_eq!(
            lost.status().lost.as_deref(),
            Some(
                "the store no longer holds it under this claim's token: its lease ran out and \
                 another worker took it over"
            )
        );
        assert_eq!(lost.status().renewals, 0);
        fail.store(1, Ordering::SeqCst);
        wait_until(|| kept.status().lost.is_some());
        let status = kept.status();
        assert_eq!(
            status.lost.as_deref(),
            Some("the store failed: connection refused")
        );
        // Neither is renewed again: no more statements, whatever the store says now.
        fail.store(0, Ordering::SeqCst);
        let made = tries.load(Ordering::SeqCst);
        let other = registry.hold(claim("other"), Token::draw(), lease);
        wait_until(|| other.status().renewals >= 2);
        assert_eq!(kept.status(), status, "a failed hold is renewed no more");
        assert!(tries.load(Ordering::SeqCst) >= made + 2);
        registry.stop();
    }
}
