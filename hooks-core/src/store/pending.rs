//! [`MemoryPendingStore`]: the in-memory [`PendingStore`], for one process.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::approval::pending::PendingTurn;
#[cfg(feature = "inbox")]
use crate::inbox::judge::CallRow;

use super::{Found, Hold, PendingStore, StoreError, StoreFuture, Taken, Token, fenced_take};

/// The in-memory [`PendingStore`]: a map behind a mutex, unbounded (a turn stays until it is
/// resumed; a host that never resumes some should use a database store and clean it). It lives
/// and dies with the process: for turns that must outlive a restart, use a database store. A
/// take [`hold`](PendingStore::hold) keeps does not lapse while the hold exists (as
/// [`MemoryAnswerStore`](super::MemoryAnswerStore)'s claims).
///
/// With the `inbox` feature it is an [`InboxStore`](crate::approval::inbox::InboxStore) too
/// (`store/memory_inbox.rs`): `put` indexes the turn's waiting calls under the same lock.
#[derive(Default)]
pub struct MemoryPendingStore {
    pub(super) turns: Arc<Mutex<Turns>>,
}

#[derive(Default)]
pub(super) struct Turns {
    pub(super) by_key: HashMap<(String, String), Kept>,
    /// How many turns were ever put: each one's place, for `waiting`'s order.
    next: u64,
    /// The inbox's index of waiting calls, its idempotency keys and published tools.
    #[cfg(feature = "inbox")]
    pub(super) inbox: Index,
}

pub(super) struct Kept {
    pub(super) turn: PendingTurn,
    pub(super) place: u64,
    pub(super) state: State,
    /// The `seq` of each of its waiting calls in [`Index::calls`], in order.
    #[cfg(feature = "inbox")]
    pub(super) calls: Vec<u64>,
    /// Not yet resumed through the inbox
    /// ([`InboxStore::finished`](crate::approval::inbox::InboxStore::finished)).
    #[cfg(feature = "inbox")]
    pub(super) open: bool,
}

/// The inbox's part of the store: every waiting call's row by its `seq` (the list's order),
/// the answers kept under idempotency keys (with the digest of the request each came with),
/// and the tools published under each fingerprint (their JSON).
#[cfg(feature = "inbox")]
#[derive(Default)]
pub(super) struct Index {
    pub(super) calls: std::collections::BTreeMap<u64, CallRow>,
    pub(super) next_seq: u64,
    pub(super) keys: HashMap<String, (String, KeptAnswer)>,
    pub(super) tools: HashMap<String, Value>,
}

/// An answer kept under an idempotency key.
#[cfg(feature = "inbox")]
pub(super) type KeptAnswer = Result<crate::inbox::decide::Decided, crate::inbox::decide::Refusal>;

pub(super) enum State {
    Waiting,
    /// Taken by a resume (`token`) until `until`; held (the resume running in this process:
    /// [`PendingStore::hold`]), it does not lapse.
    Taken {
        until: Instant,
        token: Token,
        held: bool,
    },
    /// Resumed by the take of `token` into this answer.
    Resumed {
        answer: Value,
        token: Token,
    },
}

impl MemoryPendingStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryPendingStore::default()
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Turns> {
        lock(&self.turns)
    }
}

fn lock(turns: &Mutex<Turns>) -> std::sync::MutexGuard<'_, Turns> {
    // Nothing here panics while holding the lock; a poisoned lock still holds valid data.
    turns.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Marks the take of (`session_id`, `turn_id`) made with `token`, if it still holds the turn,
/// held, or, `held` false, no longer held, its lease then `lease` from now.
fn set_held(
    turns: &Mutex<Turns>,
    (session_id, turn_id): (&str, &str),
    token: Token,
    held: bool,
    lease: Duration,
) {
    if let Some(kept) = lock(turns).by_key.get_mut(&key(session_id, turn_id))
        && let State::Taken {
            until,
            token: holder,
            held: was,
        } = &mut kept.state
        && *holder == token
    {
        *was = held;
        if !held {
            let now = Instant::now();
            *until = now.checked_add(lease).unwrap_or(now);
        }
    }
}

impl MemoryPendingStore {}

impl fmt::Debug for MemoryPendingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let turns = self.lock();
        f.debug_struct("MemoryPendingStore")
            .field("turns", &turns.by_key.len())
            .finish()
    }
}

pub(super) fn key(session_id: &str, turn_id: &str) -> (String, String) {
    (session_id.to_owned(), turn_id.to_owned())
}

/// Indexes the waiting calls of `turn`, just kept: one row each, kept now by this process's
/// clock, expiring after the turn's ttl.
#[cfg(feature = "inbox")]
fn index(turns: &mut Turns, turn: &PendingTurn) {
    use crate::inbox::judge::TurnOf;
    let now = crate::inbox::call::now_ms();
    let ttl = i64::try_from(turn.ttl().as_millis()).unwrap_or(i64::MAX);
    let of = TurnOf {
        session_id: &turn.session_id,
        turn_id: &turn.turn_id,
        user_id: &turn.user_id,
        fingerprint: &turn.fingerprint,
    };
    let mut seqs = Vec::new();
    for row in super::waiting::waiting_rows(turn) {
        turns.inbox.next_seq += 1;
        let seq = turns.inbox.next_seq;
        let call = CallRow::waiting(&of, row, seq, now, now.saturating_add(ttl));
        turns.inbox.calls.insert(seq, call);
        seqs.push(seq);
    }
    if let Some(kept) = turns.by_key.get_mut(&key(&turn.session_id, &turn.turn_id)) {
        kept.calls = seqs;
    }
}

impl PendingStore for MemoryPendingStore {
    fn put<'a>(&'a self, turn: &'a PendingTurn) -> StoreFuture<'a, Result<(), StoreError>> {
        let mut turns = self.lock();
        let place = turns.next;
        let k = key(&turn.session_id, &turn.turn_id);
        if let std::collections::hash_map::Entry::Vacant(v) = turns.by_key.entry(k) {
            v.insert(Kept {
                turn: turn.clone(),
                place,
                state: State::Waiting,
                #[cfg(feature = "inbox")]
                calls: Vec::new(),
                #[cfg(feature = "inbox")]
                open: true,
            });
            turns.next += 1;
            #[cfg(feature = "inbox")]
            index(&mut turns, turn);
        }
        StoreFuture::ready(Ok(()))
    }

    fn take<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        token: Token,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Taken, StoreError>> {
        let now = Instant::now();
        let mut turns = self.lock();
        let taken = match turns.by_key.get_mut(&key(session_id, turn_id)) {
            None => Taken::Missing,
            Some(kept) => match &kept.state {
                State::Resumed { answer, .. } => Taken::Resumed(answer.clone()),
                State::Taken {
                    until,
                    token: holder,
                    held,
                } if *holder != token && (*held || *until > now) => Taken::Resuming,
                State::Waiting | State::Taken { .. } => {
                    kept.state = State::Taken {
                        until: now.checked_add(lease).unwrap_or(now),
                        token,
                        held: false,
                    };
                    Taken::Turn(kept.turn.clone())
                }
            },
        };
        StoreFuture::ready(Ok(taken))
    }

    fn resumed<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        token: Token,
        answer: &'a Value,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let mut turns = self.lock();
        let kept = turns.by_key.get_mut(&key(session_id, turn_id));
        StoreFuture::ready(
            resume_taken(kept, token, answer)
                .map(drop)
                .map_err(|found| fenced_take(session_id, turn_id, found)),
        )
    }

    fn put_back<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        token: Token,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        if let Some(kept) = self.lock().by_key.get_mut(&key(session_id, turn_id))
            && matches!(kept.state, State::Taken { token: holder, .. } if holder == token)
        {
            kept.state = State::Waiting;
        }
        StoreFuture::ready(Ok(()))
    }

    fn waiting<'a>(
        &'a self,
        session_id: &'a str,
    ) -> StoreFuture<'a, Result<Vec<PendingTurn>, StoreError>> {
        let turns = self.lock();
        let mut waiting: Vec<&Kept> = turns
            .by_key
            .iter()
            .filter(|((s, _), kept)| s == session_id && matches!(kept.state, State::Waiting))
            .map(|(_, kept)| kept)
            .collect();
        crate::base::sort::sort_by(&mut waiting, |a, b| a.place.cmp(&b.place));
        StoreFuture::ready(Ok(waiting.into_iter().map(|k| k.turn.clone()).collect()))
    }

    /// `true`: a hold keeps the take from lapsing (see the type's docs).
    fn renews(&self) -> bool {
        true
    }

    /// Marks the take held: it does not lapse until the hold is dropped, its lease then
    /// `lease` from that instant.
    fn hold(&self, session_id: &str, turn_id: &str, token: Token, lease: Duration) -> Option<Hold> {
        set_held(&self.turns, (session_id, turn_id), token, true, lease);
        let turns = Arc::clone(&self.turns);
        let (session_id, turn_id) = (session_id.to_owned(), turn_id.to_owned());
        Some(Hold::kept(move || {
            set_held(&turns, (&session_id, &turn_id), token, false, lease);
        }))
    }
}

/// Records `answer` as the resumed turn's when the take of `token` holds `kept`: `Ok(true)` when
/// it did now, `Ok(false)` when that take already recorded it (a repeat); otherwise what holds
/// the turn instead, for [`fenced_take`]. The in-memory stores' `resumed` and `finished`.
pub(super) fn resume_taken(
    kept: Option<&mut Kept>,
    token: Token,
    answer: &Value,
) -> Result<bool, Found> {
    let Some(kept) = kept else {
        return Err(Found::Nothing);
    };
    match &kept.state {
        State::Taken { token: holder, .. } if *holder == token => {
            kept.state = State::Resumed {
                answer: answer.clone(),
                token,
            };
            Ok(true)
        }
        State::Resumed { token: holder, .. } if *holder == token => Ok(false),
        State::Resumed { .. } => Err(Found::Answered),
        State::Taken { .. } | State::Waiting => Err(Found::OtherClaim),
    }
}
