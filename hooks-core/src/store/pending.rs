//! [`MemoryPendingStore`]: the in-memory [`PendingStore`], for one process.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::approval::pending::PendingTurn;

use super::{PendingStore, StoreError, StoreFuture, Taken};

/// The in-memory [`PendingStore`]: a map behind a mutex, unbounded (a turn stays until it is
/// resumed; a host that never resumes some should use a database store and clean it). It lives
/// and dies with the process: for turns that must outlive a restart, use a database store.
#[derive(Default)]
pub struct MemoryPendingStore {
    turns: Mutex<Turns>,
}

#[derive(Default)]
struct Turns {
    by_key: HashMap<(String, String), Kept>,
    /// How many turns were ever put: each one's place, for `waiting`'s order.
    next: u64,
}

struct Kept {
    turn: PendingTurn,
    place: u64,
    state: State,
}

enum State {
    Waiting,
    /// Taken by a resume until this instant.
    Taken(Instant),
    Resumed(Value),
}

impl MemoryPendingStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryPendingStore::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Turns> {
        // Nothing here panics while holding the lock; a poisoned lock still holds valid data.
        self.turns.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for MemoryPendingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let turns = self.lock();
        f.debug_struct("MemoryPendingStore")
            .field("turns", &turns.by_key.len())
            .finish()
    }
}

fn key(session_id: &str, turn_id: &str) -> (String, String) {
    (session_id.to_owned(), turn_id.to_owned())
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
            });
            turns.next += 1;
        }
        StoreFuture::ready(Ok(()))
    }

    fn take<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Taken, StoreError>> {
        let now = Instant::now();
        let mut turns = self.lock();
        let taken = match turns.by_key.get_mut(&key(session_id, turn_id)) {
            None => Taken::Missing,
            Some(kept) => match &kept.state {
                State::Resumed(answer) => Taken::Resumed(answer.clone()),
                State::Taken(until) if *until > now => Taken::Resuming,
                State::Waiting | State::Taken(_) => {
                    kept.state = State::Taken(now.checked_add(lease).unwrap_or(now));
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
        answer: &'a Value,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        if let Some(kept) = self.lock().by_key.get_mut(&key(session_id, turn_id))
            && matches!(kept.state, State::Taken(_))
        {
            kept.state = State::Resumed(answer.clone());
        }
        StoreFuture::ready(Ok(()))
    }

    fn put_back<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        if let Some(kept) = self.lock().by_key.get_mut(&key(session_id, turn_id))
            && matches!(kept.state, State::Taken(_))
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
}
