//! The claims and takes a store holds now, each with the token its row carries (`sql.rs`): a
//! claim's token is drawn when it claims and kept until its answer or release, a take's until
//! the turn is resumed or put back, so that a release or a put back sent again after a lost
//! connection touches only the row of the claim or take it ends.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

/// The most claims (and, apart, takes) kept at once; past it a token is not kept, and the
/// release or put back then matches its key whatever the token (as schema version 1 did).
const MAX_HELD: usize = 65_536;

/// A token no other claim or take of the same key draws: a process-wide counter hashed with a
/// key drawn at random once per process.
pub(crate) fn token() -> i64 {
    static KEY: OnceLock<std::hash::RandomState> = OnceLock::new();
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let hashed = KEY
        .get_or_init(std::hash::RandomState::new)
        .hash_one((std::process::id(), n));
    i64::from_ne_bytes(hashed.to_ne_bytes())
}

/// What is held: claims, or takes.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    /// A claim of a call ((session id, `tool_use` id, turn): a later turn's call that reuses an
    /// id is another row, which another claim may hold at the same time).
    Claim,
    /// A take of a paused turn ((session id, turn id), with `""` as the third part).
    Take,
}

/// The tokens of the claims and takes held, by key.
#[derive(Default)]
pub(crate) struct Held {
    claims: Mutex<HashMap<(String, String, String), i64>>,
    takes: Mutex<HashMap<(String, String, String), i64>>,
}

impl Held {
    fn map(&self, kind: Kind) -> &Mutex<HashMap<(String, String, String), i64>> {
        match kind {
            Kind::Claim => &self.claims,
            Kind::Take => &self.takes,
        }
    }

    /// Keeps `token` as the holder of (`session_id`, `id`, `turn`).
    pub(crate) fn keep(&self, kind: Kind, session_id: &str, id: &str, turn: &str, token: i64) {
        let mut map = self
            .map(kind)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if map.len() < MAX_HELD {
            map.insert(
                (session_id.to_owned(), id.to_owned(), turn.to_owned()),
                token,
            );
        }
    }

    /// The token of (`session_id`, `id`, `turn`), no longer kept (`None`: not kept).
    pub(crate) fn end(&self, kind: Kind, session_id: &str, id: &str, turn: &str) -> Option<i64> {
        let mut map = self
            .map(kind)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        map.remove(&(session_id.to_owned(), id.to_owned(), turn.to_owned()))
    }
}
