//! [`MemoryAnswerStore`]: the in-memory answer memory every session gets by default.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::audit::outcome::Outcome;
use crate::base::decimal::decimal;
use crate::base::local::with_reused;
use crate::content::message::{ToolResult, ToolResultContent};

use super::lease::Unhold;
use super::memory_rows::{RowId, Rows};
use super::{
    AnswerStore, BesideFirst, CallKey, Claim, Found, Hold, InputDigest, Remembered, StoreError,
    StoreFuture, Token, beside_first, fenced,
};

/// The in-memory [`AnswerStore`] every session gets by default: its calls in rows behind a
/// mutex, found by their keys' hashes, bounded. One store may serve many sessions of one
/// process ([`CallKey`] keeps them apart); it lives and dies with the process (at a restart,
/// every retried call runs again).
///
/// Memory per answered call: its key (session id and `tool_use` id), its 32-byte digest, its
/// `tool_result`'s content (at most the dispatcher's `max_result_bytes`, 256 KiB by default)
/// and about 100 bytes of bookkeeping ([`ENTRY_OVERHEAD`](Self::ENTRY_OVERHEAD)). Bounded by
/// two caps, oldest answer first: at most `max_entries` answered (or cancelled) calls, default
/// [`DEFAULT_MAX_ENTRIES`](Self::DEFAULT_MAX_ENTRIES) (1 024), and at most `max_bytes` counted
/// that way, default [`DEFAULT_MAX_BYTES`](Self::DEFAULT_MAX_BYTES) (8 MiB); the latest answer
/// is always kept. A call forgotten that way is run again if it is retried: keep the caps above
/// what a retry reaches back to (a retry of the last message needs as many entries as the
/// message has blocks). Calls in progress are never evicted.
///
/// Kept beyond what the caps count, so that a full memory remembers a call without allocating:
/// the key buffer of each freed row (at most 1 KiB each, as many as the most calls it held at
/// once), and up to 4 emptied text buffers of forgotten answers (at most 1 KiB each).
///
/// A claim [`hold`](AnswerStore::hold) keeps (a call running in this process) does not lapse
/// while the hold exists: the store lives in the memory of the process that holds the claim, so
/// it needs no renewals (a process that dies takes the store with it). Once the hold is dropped
/// the claim's lease counts from the claim again.
pub struct MemoryAnswerStore {
    max_entries: usize,
    max_bytes: usize,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// The calls, keyed by the text of [`write_text_key`] (at most `max_entries` answers and
    /// the calls in progress).
    rows: Rows<Entry>,
    /// Finished rows (answered or interrupted), oldest first.
    order: VecDeque<RowId>,
    /// The counted bytes of the finished entries.
    bytes: usize,
    /// Whether a call was ever forgotten past the caps: a session's first call with an id may
    /// then be gone while a later turn's call with the id is kept (see `claim_in`).
    forgot: bool,
    /// The tokens of the claims held now ([`AnswerStore::hold`]): a claim whose token is here
    /// does not lapse.
    held: Held,
    /// The text buffers of answers forgotten past the caps, emptied, for the next answers'
    /// copies (at most [`SPARES`], each of at most [`SPARE_BYTES`] capacity): a full memory
    /// remembers a short text answer without allocating.
    spares: Vec<String>,
}

/// How many emptied text buffers a store keeps for the next answers.
const SPARES: usize = 4;
/// The largest capacity of a text buffer kept for the next answers (bytes): at most
/// `SPARES × SPARE_BYTES` (4 KiB) is held beyond what the caps count.
const SPARE_BYTES: usize = 1 << 10;

/// The tokens of the claims held.
type Held = hashbrown::HashSet<Token, foldhash::fast::RandomState>;

/// One call: its digest, the token of the claim that made it, and what became of it. An answer
/// is kept without its id (the row's key holds it), so remembering a call copies nothing.
struct Entry {
    digest: InputDigest,
    token: Token,
    state: Stored,
    bytes: usize,
    /// The turn of a session's first call with its id (`None`: no turn). A later turn's call
    /// kept apart has its turn in its key, and `None` here.
    turn: Option<Box<str>>,
}

enum Stored {
    /// Claimed until the instant its lease ends (held, its call running in this process:
    /// [`AnswerStore::hold`], it does not lapse: `State::held`).
    InProgress(Instant),
    Answered {
        outcome: Outcome,
        content: Option<ToolResultContent>,
        is_error: bool,
        /// The result's fields beyond the modelled ones, boxed (`None`: none, the usual case):
        /// a smaller entry is moved and kept for less.
        extra: Option<Box<serde_json::Map<String, Value>>>,
    },
    Interrupted,
}

/// The bytes a key counts for: its session's id, its `tool_use` id and its turn.
fn key_bytes(key: CallKey<'_>) -> usize {
    key.session_id.len() + key.tool_use_id.len() + key.turn.len()
}

/// Writes the map's key of the session's first call with `key`'s id to `out`: the session's
/// id, its length first and `:` after it, then the `tool_use` id (`8:sess_123toolu_1`); and,
/// when `key` has a turn, after it, the key of that turn's call kept apart ("Turns" in the
/// module docs): the same with `;` after the length, the `tool_use` id's length and `:` before
/// it, and the turn after it (`8;sess_1237:toolu_1chatcmpl-2`). The character after the first
/// number tells the two apart, and the lengths make each one-to-one. Answers where the second
/// begins (the end, when there is none).
fn write_text_key(key: CallKey<'_>, out: &mut String) -> usize {
    out.reserve(key_bytes(key) + 21);
    // The lengths in decimal digits, without the formatting machinery (this runs twice a call).
    let mut digits = [0; 20];
    let session = decimal(key.session_id.len() as u64, &mut digits);
    out.extend(session.iter().map(|&d| char::from(d)));
    out.push(':');
    out.push_str(key.session_id);
    out.push_str(key.tool_use_id);
    let first = out.len();
    if !key.turn.is_empty() {
        out.reserve(first + key.turn.len() + 21);
        out.extend(session.iter().map(|&d| char::from(d)));
        out.push(';');
        out.push_str(key.session_id);
        let mut digits = [0; 20];
        let id = decimal(key.tool_use_id.len() as u64, &mut digits);
        out.extend(id.iter().map(|&d| char::from(d)));
        out.push(':');
        out.push_str(key.tool_use_id);
        out.push_str(key.turn);
    }
    first
}

thread_local! {
    /// The text of the key being looked up, reused: a lookup allocates nothing once the buffer
    /// has grown to the longest key seen on the thread.
    static KEY_TEXT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// The map's keys of one [`CallKey`]: the session's first call with its id, and the key's turn
/// kept apart (the same text when the key has no turn).
#[derive(Clone, Copy)]
struct Texts<'t> {
    first: &'t str,
    apart: &'t str,
}

/// Runs `f` with the map's keys of `key` (see [`write_text_key`]), written into the thread's
/// reused buffer; into a fresh one when that is in use further up the stack or already gone (a
/// session dropped by another thread-local's destructor at thread exit). A buffer grown past
/// 64 KiB by a long key is not kept.
fn with_text_key<R>(key: CallKey<'_>, f: impl FnOnce(Texts<'_>) -> R) -> R {
    with_reused(&KEY_TEXT, |buf| {
        buf.clear();
        let first = write_text_key(key, buf);
        let texts = if first == buf.len() {
            Texts {
                first: buf,
                apart: buf,
            }
        } else {
            let (first, apart) = buf.split_at(first);
            Texts { first, apart }
        };
        let out = f(texts);
        if buf.capacity() > 64 << 10 {
            *buf = String::new();
        }
        out
    })
}

impl Entry {
    fn remembered(&self, tool_use_id: &str) -> Remembered {
        let digest = self.digest;
        match &self.state {
            Stored::InProgress(_) => Remembered::InProgress { digest },
            Stored::Answered {
                outcome,
                content,
                is_error,
                extra,
            } => Remembered::Answered {
                digest,
                outcome: *outcome,
                result: ToolResult {
                    tool_use_id: tool_use_id.to_owned(),
                    content: content.clone(),
                    is_error: *is_error,
                    extra: extra.as_deref().cloned().unwrap_or_default(),
                },
            },
            Stored::Interrupted => Remembered::Interrupted { digest },
        }
    }
}

impl MemoryAnswerStore {
    /// The default cap on remembered calls.
    pub const DEFAULT_MAX_ENTRIES: usize = 1024;
    /// The default cap on remembered bytes (8 MiB).
    pub const DEFAULT_MAX_BYTES: usize = 8 << 20;
    /// The bytes counted per entry besides its key and content (digest, map and queue slots,
    /// the outcome, the result's fields).
    pub const ENTRY_OVERHEAD: usize = 100;

    /// A store with both caps at their defaults.
    pub fn new() -> Self {
        MemoryAnswerStore::with_caps(Self::DEFAULT_MAX_ENTRIES, Self::DEFAULT_MAX_BYTES)
    }

    /// A store remembering at most `max_entries` answered calls and `max_bytes` counted bytes
    /// (see the type's docs); the latest answer is kept even past either cap.
    pub fn with_caps(max_entries: usize, max_bytes: usize) -> Self {
        MemoryAnswerStore {
            max_entries,
            max_bytes,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// How many answered (or interrupted) calls it remembers now.
    pub fn len(&self) -> usize {
        self.lock().order.len()
    }

    /// Whether it remembers no answered call.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What it remembers of `key` (the call of `key.turn`, in whichever row it is kept:
    /// "Turns" in the [module docs](super)).
    pub fn get(&self, key: CallKey<'_>) -> Option<Remembered> {
        with_text_key(key, |texts| {
            let state = self.lock();
            let row = state.row_of(key, texts)?;
            Some(state.rows.value(row).remembered(key.tool_use_id))
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Nothing here panics while holding the lock; a poisoned lock still holds valid data.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the call of `key`, in progress under `token`, finished as `state`, counting
    /// its content's bytes, then evicts past the caps.
    ///
    /// # Errors
    /// [`StoreError::fenced`] when the call is not in progress under `token` (an answer already
    /// recorded under it excepted), and nothing changes.
    fn finish(&self, key: CallKey<'_>, token: Token, state: Finish<'_>) -> Result<(), StoreError> {
        let content = match state {
            Finish::Answered(_, result) => content_bytes(result.content.as_ref()),
            Finish::Interrupted => 0,
        };
        let size = key_bytes(key) + content + Self::ENTRY_OVERHEAD;
        let row = Row { key, token, size };
        let done = with_text_key(key, |texts| {
            let mut guard = self.lock();
            let guard = &mut *guard;
            // The first call's row, in one lookup, when it is this turn's (every
            // `Session::call`); else this turn's call is kept apart, if anywhere.
            match self.finish_row(guard, row, texts.first, true, state) {
                Some(done) => done,
                None if !key.turn.is_empty() => self
                    .finish_row(guard, row, texts.apart, false, state)
                    .unwrap_or(Err(Found::Nothing)),
                None => Err(Found::Nothing),
            }
        });
        // The refusal's text is made here, outside the lock, and only for a refusal.
        done.map_err(|found| fenced(key, found))
    }

    /// Finishes the row `text` (`first`: the first call's row, else one kept apart) as `state`
    /// when it is in progress under `row`'s token and of `row`'s turn, then evicts. The first
    /// call's row of another turn, or no row: `None`; a row of the turn that is not in progress
    /// under the token is a refusal, with what was found (an answer sent again under the token
    /// that answered it excepted).
    fn finish_row(
        &self,
        guard: &mut State,
        row: Row<'_>,
        text: &str,
        first: bool,
        state: Finish<'_>,
    ) -> Option<Result<(), Found>> {
        // One lookup here; an eviction hashes nothing (the row keeps its key's hash).
        let i = guard.rows.find(text)?;
        let entry = guard.rows.value_mut(i);
        if first && entry.turn.as_deref().unwrap_or("") != row.key.turn {
            return None;
        }
        let found = match (&entry.state, state) {
            (_, _) if entry.token != row.token => Found::OtherClaim,
            (Stored::InProgress(_), _) => {
                let stored = state.stored(&mut guard.spares);
                finish_entry(
                    i,
                    entry,
                    row.size,
                    stored,
                    &mut guard.order,
                    &mut guard.bytes,
                );
                self.evict(guard);
                return Some(Ok(()));
            }
            (Stored::Answered { .. }, Finish::Answered(..)) => return Some(Ok(())),
            (Stored::Answered { .. }, _) => Found::Answered,
            (Stored::Interrupted, _) => Found::Interrupted,
        };
        Some(Err(found))
    }

    /// Forgets the oldest finished calls while either cap is passed, the latest always kept.
    fn evict(&self, state: &mut State) {
        while state.order.len() > 1
            && (state.order.len() > self.max_entries || state.bytes > self.max_bytes)
        {
            if let Some(old) = state.order.pop_front() {
                let e = state.rows.remove(old);
                state.bytes -= e.bytes;
                state.forgot = true;
                if let Stored::Answered {
                    content: Some(ToolResultContent::Text(mut text)),
                    ..
                } = e.state
                    && state.spares.len() < SPARES
                    && text.capacity() <= SPARE_BYTES
                {
                    text.clear();
                    state.spares.push(text);
                }
            }
        }
    }

    /// Forgets the call of `key` if it is still in progress under `token` (a retry then runs
    /// it), or, when its tool started, keeps it as interrupted.
    fn forget(&self, key: CallKey<'_>, token: Token, tool_started: bool) {
        if tool_started {
            // A claim no longer in progress under the token is left as it is.
            let _ = self.finish(key, token, Finish::Interrupted);
            return;
        }
        with_text_key(key, |texts| {
            let mut state = self.lock();
            let Some(row) = state.row_of(key, texts) else {
                return;
            };
            let e = state.rows.value(row);
            if e.token == token && matches!(e.state, Stored::InProgress(_)) {
                state.rows.remove(row);
            }
        });
    }

    /// The claim of `key` (see [`AnswerStore::claim`] and "Turns" in the module docs). The
    /// common case takes one lookup: the session's first call with the id is this turn's, or
    /// there is none (and no later turn's call can be kept without it); the others go to
    /// [`claim_beside`](Self::claim_beside).
    fn claim_in(&self, key: CallKey<'_>, texts: Texts<'_>, new: New) -> Claim {
        let now = new.now;
        let mut guard = self.lock();
        let state = &mut *guard;
        // Hashed once: the lookup, and the insert of a new call (its key written into a freed
        // slot's buffer: no allocation once the memory is full).
        let hash = state.rows.hash(texts.first);
        match state.rows.find_hashed(hash, texts.first) {
            Some(i) if state.rows.value(i).turn.as_deref().unwrap_or("") == key.turn => {
                let (claim, lapsed) = state.seen_row(i, key, now);
                if lapsed {
                    // Finished now, so counted against the caps like any answer.
                    self.evict(state);
                }
                return claim;
            }
            None if key.turn.is_empty() || !state.forgot => {
                state.rows.insert(hash, texts.first, new.entry(key.turn));
                return Claim::Claimed;
            }
            _ => {}
        }
        self.claim_beside(state, key, texts, new)
    }

    /// [`claim_in`](Self::claim_in) when the session's first call with the id is another
    /// turn's, or was forgotten past the caps while this key has a turn: then this turn's
    /// call kept apart is looked for first, since it outlives the first call.
    fn claim_beside(
        &self,
        state: &mut State,
        key: CallKey<'_>,
        texts: Texts<'_>,
        new: New,
    ) -> Claim {
        let now = new.now;
        let Some(first) = state.rows.find(texts.first) else {
            let text = if state.rows.find(texts.apart).is_some() {
                texts.apart
            } else {
                texts.first
            };
            let turn = if text == texts.first { key.turn } else { "" };
            return self.seen_or_claim(state, key, text, new.entry(turn), now);
        };
        let entry = state.rows.value(first);
        let owner = entry.turn.as_deref().unwrap_or("");
        let running = entry.running(now, &state.held);
        let beside = beside_first(key.turn, owner, running);
        // A first call whose lease ran out is interrupted, as its own claim would find it.
        if state.seen_row(first, key, now).1 {
            self.evict(state);
        }
        match beside {
            BesideFirst::Same => {
                self.seen_or_claim(state, key, texts.first, new.entry(key.turn), now)
            }
            BesideFirst::Apart => self.seen_or_claim(state, key, texts.apart, new.entry(""), now),
            BesideFirst::Other { in_progress } => Claim::OtherTurn { in_progress },
        }
    }

    /// The row `text`: seen (a claim whose lease ran out is finished as interrupted first), or,
    /// when absent, `new` inserted in progress.
    fn seen_or_claim(
        &self,
        state: &mut State,
        key: CallKey<'_>,
        text: &str,
        new: Entry,
        now: Instant,
    ) -> Claim {
        let hash = state.rows.hash(text);
        match state.rows.find_hashed(hash, text) {
            Some(i) => {
                let (claim, lapsed) = state.seen_row(i, key, now);
                if lapsed {
                    self.evict(state);
                }
                claim
            }
            None => {
                state.rows.insert(hash, text, new);
                Claim::Claimed
            }
        }
    }
}

impl State {
    /// What a claim finds in row `i`, and whether its lease had run out: a claim in progress
    /// past its lease is finished as interrupted first (its worker never answered: it may have
    /// run, so it never runs again).
    fn seen_row(&mut self, i: RowId, key: CallKey<'_>, now: Instant) -> (Claim, bool) {
        let e = self.rows.value_mut(i);
        let lapsed = matches!(e.state, Stored::InProgress(_)) && !e.running(now, &self.held);
        if lapsed {
            let size = key_bytes(key) + MemoryAnswerStore::ENTRY_OVERHEAD;
            finish_entry(
                i,
                e,
                size,
                Stored::Interrupted,
                &mut self.order,
                &mut self.bytes,
            );
        }
        (Claim::Seen(e.remembered(key.tool_use_id)), lapsed)
    }

    /// The row that keeps the call of `key`'s turn: the session's first call with the id when
    /// it is of that turn, else the row kept apart for the turn (none for a key without a
    /// turn).
    fn row_of(&self, key: CallKey<'_>, texts: Texts<'_>) -> Option<RowId> {
        match self.rows.find(texts.first) {
            Some(i) if self.rows.value(i).turn.as_deref().unwrap_or("") == key.turn => Some(i),
            _ if key.turn.is_empty() => None,
            _ => self.rows.find(texts.apart),
        }
    }
}

impl Entry {
    /// Whether its claim is in progress and its lease running at `now`, or it is `held`.
    fn running(&self, now: Instant, held: &Held) -> bool {
        matches!(self.state, Stored::InProgress(until) if until > now || held.contains(&self.token))
    }
}

/// A row to finish: its key, the token it must be in progress under, the bytes it will count.
#[derive(Clone, Copy)]
struct Row<'k> {
    key: CallKey<'k>,
    token: Token,
    size: usize,
}

/// Counts the finished entry of row `i`: its state, its bytes, its place in the eviction
/// order.
fn finish_entry(
    i: RowId,
    entry: &mut Entry,
    size: usize,
    state: Stored,
    order: &mut VecDeque<RowId>,
    bytes: &mut usize,
) {
    entry.state = state;
    entry.bytes = size;
    *bytes += size;
    order.push_back(i);
}

impl Default for MemoryAnswerStore {
    fn default() -> Self {
        MemoryAnswerStore::new()
    }
}

impl fmt::Debug for MemoryAnswerStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("MemoryAnswerStore")
            .field("max_entries", &self.max_entries)
            .field("max_bytes", &self.max_bytes)
            .field("remembered", &state.order.len())
            .field("in_progress", &(state.rows.len() - state.order.len()))
            .field("bytes", &state.bytes)
            .finish()
    }
}

impl AnswerStore for MemoryAnswerStore {
    fn claim<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        digest: InputDigest,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Claim, StoreError>> {
        let new = New {
            digest,
            token,
            lease,
            now: Instant::now(),
        };
        let claim = with_text_key(key, |texts| self.claim_in(key, texts, new));
        StoreFuture::ready(Ok(claim))
    }

    fn answered<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        outcome: Outcome,
        result: &'a ToolResult,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        StoreFuture::ready(self.finish(key, token, Finish::Answered(outcome, result)))
    }

    fn release<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        tool_started: bool,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.forget(key, token, tool_started);
        StoreFuture::ready(Ok(()))
    }

    fn abandon(&self, key: CallKey<'_>, token: Token, tool_started: bool) {
        self.forget(key, token, tool_started);
    }

    /// `true`: a hold keeps the claim from lapsing (see the type's docs).
    fn renews(&self) -> bool {
        true
    }

    /// Marks the claim of `token` held: it does not lapse until the hold is dropped (then its
    /// lease counts from the claim again: a call that ran past it lapses at once). Nothing is
    /// renewed (the status counts no renewal), and nothing is looked up: the claim's token
    /// goes to the set of the held ones.
    fn hold(&self, _key: CallKey<'_>, token: Token, _lease: Duration) -> Option<Hold> {
        self.lock().held.insert(token);
        let by: Arc<dyn Unhold> = self.state.clone();
        Some(Hold::in_memory(by, token))
    }
}

impl Unhold for Mutex<State> {
    fn unhold(&self, token: Token) {
        self.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .held
            .remove(&token);
    }
}

/// What a claim records of a new call, made into its [`Entry`] only when one is inserted.
#[derive(Clone, Copy)]
struct New {
    digest: InputDigest,
    token: Token,
    lease: Duration,
    now: Instant,
}

impl New {
    /// The entry of the new call, in progress until its lease ends: the first call of its id
    /// keeps `turn` (`""`: none); one kept apart has its turn in its key, and is given `""`.
    #[inline]
    fn entry(self, turn: &str) -> Entry {
        let now = self.now;
        Entry {
            digest: self.digest,
            token: self.token,
            state: Stored::InProgress(now.checked_add(self.lease).unwrap_or(now + FOREVER)),
            bytes: 0,
            turn: (!turn.is_empty()).then(|| Box::from(turn)),
        }
    }
}

/// How a call in progress is finished: answered with its outcome and result, or interrupted.
#[derive(Clone, Copy)]
enum Finish<'r> {
    Answered(Outcome, &'r ToolResult),
    Interrupted,
}

impl Finish<'_> {
    /// What the row keeps: an answer without its id (the row's key holds it), its text copied
    /// into one of `spares` when there is one (no allocation for a text that fits).
    fn stored(self, spares: &mut Vec<String>) -> Stored {
        let Finish::Answered(outcome, result) = self else {
            return Stored::Interrupted;
        };
        let content = match &result.content {
            Some(ToolResultContent::Text(text)) => {
                let mut copy = spares.pop().unwrap_or_default();
                copy.push_str(text);
                Some(ToolResultContent::Text(copy))
            }
            other => other.clone(),
        };
        Stored::Answered {
            outcome,
            content,
            is_error: result.is_error,
            extra: (!result.extra.is_empty()).then(|| Box::new(result.extra.clone())),
        }
    }
}

/// A lease no claim outlives (about 30 years): what a lease too long to add to now becomes.
const FOREVER: Duration = Duration::from_secs(30 * 365 * 24 * 3600);

/// The bytes of a result's content: its text, or the compact JSON of its blocks.
fn content_bytes(content: Option<&ToolResultContent>) -> usize {
    match content {
        None => 0,
        Some(ToolResultContent::Text(t)) => t.len(),
        Some(blocks) => serde_json::to_vec(blocks).map_or(0, |v| v.len()),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::audit::outcome::Outcome;
    use crate::content::message::ToolResult;

    use super::{
        AnswerStore, CallKey, Claim, InputDigest, MemoryAnswerStore, Remembered, Token,
        write_text_key,
    };

    #[test]
    fn claims_that_lapse_are_counted_against_the_caps() {
        // A lapsed claim is finished (interrupted) when it is next claimed: it counts like an
        // answer, and the oldest go past the entry cap.
        let store = MemoryAnswerStore::with_caps(2, 1 << 20);
        let ids: Vec<String> = (0..50).map(|i| format!("toolu_{i}")).collect();
        fn key(id: &str) -> CallKey<'_> {
            CallKey::new("s", id)
        }
        for id in &ids {
            let claim = crate::block_on(store.claim(
                key(id),
                Token::draw(),
                InputDigest([1; 32]),
                Duration::ZERO,
            ));
            assert!(matches!(claim, Ok(Claim::Claimed)));
        }
        assert_eq!(store.len(), 0, "claims in progress are not finished calls");
        for id in &ids {
            let claim = crate::block_on(store.claim(
                key(id),
                Token::draw(),
                InputDigest([1; 32]),
                Duration::ZERO,
            ));
            assert!(matches!(claim, Ok(Claim::Seen(_))), "{id}");
        }
        assert_eq!(store.len(), 2);
        assert!(store.get(key("toolu_49")).is_some());
        assert!(store.get(key("toolu_48")).is_some());
        assert!(store.get(key("toolu_47")).is_none());
    }

    #[test]
    fn a_later_turns_call_is_found_when_the_first_call_was_forgotten() {
        // The first call with the id is the oldest entry: past the caps it goes first, and the
        // later turn's call, kept apart, must still be found (else a resend of that turn would
        // take the first call's place and run again).
        let store = MemoryAnswerStore::with_caps(2, 1 << 20);
        let first = CallKey::in_turn("s", "chatcmpl-1", "functions.get_time:0");
        let later = CallKey::in_turn("s", "chatcmpl-2", "functions.get_time:0");
        let digest = InputDigest([7; 32]);
        // One token for the claims of every key (a token names a claim of one key).
        let token = Token::draw();
        let claim = |key| crate::block_on(store.claim(key, token, digest, Duration::from_secs(60)));
        let answer = |key, text: &str| {
            let result = ToolResult::text("functions.get_time:0", text);
            crate::block_on(store.answered(key, token, Outcome::Ok, &result)).unwrap();
            result
        };
        assert_eq!(claim(first).unwrap(), Claim::Claimed);
        answer(first, "12:00");
        assert_eq!(claim(later).unwrap(), Claim::Claimed);
        let two = answer(later, "12:05");
        let other = CallKey::new("s", "toolu_other");
        assert_eq!(claim(other).unwrap(), Claim::Claimed);
        answer(other, "other");
        assert_eq!(store.get(first), None, "the first call was forgotten");
        let replay = Claim::Seen(Remembered::Answered {
            digest,
            outcome: Outcome::Ok,
            result: two,
        });
        assert_eq!(
            claim(later).unwrap(),
            replay,
            "the later turn's answer is replayed"
        );
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn an_answer_finds_its_own_row_whatever_the_last_claim_was() {
        // An answer must find its own row, and none may land on the row the last claim made
        // (the row a shortcut from a claim to its answer would take): one token for every
        // claim here, so only the key tells the rows apart.
        let store = MemoryAnswerStore::with_caps(8, 1 << 20);
        let token = Token::draw();
        let digest = InputDigest([5; 32]);
        let claim = |id| {
            let key = CallKey::new("s", id);
            crate::block_on(store.claim(key, token, digest, Duration::from_secs(60))).unwrap()
        };
        let answer = |id: &str| {
            let result = ToolResult::text(id, format!("answer of {id}"));
            crate::block_on(store.answered(CallKey::new("s", id), token, Outcome::Ok, &result))
        };
        let in_progress = Remembered::InProgress { digest };
        assert_eq!(claim("toolu_a"), Claim::Claimed);
        assert_eq!(claim("toolu_b"), Claim::Claimed);
        answer("toolu_a").unwrap();
        assert_eq!(
            store.get(CallKey::new("s", "toolu_b")),
            Some(in_progress.clone())
        );
        answer("toolu_b").unwrap();
        // A claim released (its slot freed, then taken by the next claim): an answer sent for
        // it afterwards finds nothing, and the row in the slot keeps its claim.
        assert_eq!(claim("toolu_c"), Claim::Claimed);
        crate::block_on(store.release(CallKey::new("s", "toolu_c"), token, false)).unwrap();
        assert_eq!(claim("toolu_d"), Claim::Claimed);
        assert!(
            answer("toolu_c").is_err(),
            "a released claim is not answered"
        );
        assert_eq!(store.get(CallKey::new("s", "toolu_c")), None);
        assert_eq!(store.get(CallKey::new("s", "toolu_d")), Some(in_progress));
        answer("toolu_d").unwrap();
        // Ids whose key texts share a beginning with the last claim's.
        assert_eq!(claim("toolu_e"), Claim::Claimed);
        assert_eq!(claim("toolu_ee"), Claim::Claimed);
        answer("toolu_e").unwrap();
        for id in ["toolu_a", "toolu_b", "toolu_d", "toolu_e"] {
            let expected = Remembered::Answered {
                digest,
                outcome: Outcome::Ok,
                result: ToolResult::text(id, format!("answer of {id}")),
            };
            assert_eq!(store.get(CallKey::new("s", id)), Some(expected), "{id}");
        }
        let ee = store.get(CallKey::new("s", "toolu_ee"));
        assert_eq!(ee, Some(Remembered::InProgress { digest }));
        // Another session's key with the same id is another row.
        let other = CallKey::new("t", "toolu_ee");
        let result = ToolResult::text("toolu_ee", "x");
        assert!(crate::block_on(store.answered(other, token, Outcome::Ok, &result)).is_err());
    }

    #[test]
    fn reused_buffers_hold_only_the_new_calls_key_and_answer() {
        // A full memory writes each new key into a freed row's buffer and each new text answer
        // into a forgotten answer's buffer: what is remembered must be exactly the new call's,
        // never a rest of the old one (longer texts before shorter, ids of many lengths).
        let store = MemoryAnswerStore::with_caps(3, 1 << 20);
        let digest = InputDigest([3; 32]);
        let answer_of = |i: usize| "x".repeat(200 - i % 150) + &i.to_string();
        let id_of = |i: usize| format!("toolu_{}", "9".repeat(i % 17) + &i.to_string());
        for i in 0..300 {
            let id = id_of(i);
            let key = CallKey::new("s", &id);
            let token = Token::draw();
            let claim = crate::block_on(store.claim(key, token, digest, Duration::from_secs(60)));
            assert_eq!(claim.unwrap(), Claim::Claimed, "{id}");
            let result = ToolResult::text(id.clone(), answer_of(i));
            crate::block_on(store.answered(key, token, Outcome::Ok, &result)).unwrap();
            for back in 0..3.min(i + 1) {
                let j = i - back;
                let id = id_of(j);
                let seen = store.get(CallKey::new("s", &id));
                let expected = Remembered::Answered {
                    digest,
                    outcome: Outcome::Ok,
                    result: ToolResult::text(id.clone(), answer_of(j)),
                };
                assert_eq!(seen, Some(expected), "{id} after {i}");
            }
            if i >= 3 {
                let gone = id_of(i - 3);
                assert_eq!(store.get(CallKey::new("s", &gone)), None, "{gone}");
            }
        }
        assert_eq!(store.len(), 3);
    }

    #[test]
    fn answers_forgotten_at_once_past_the_byte_cap_keep_at_most_four_buffers() {
        // One large answer pushes many small ones past the byte cap at once: the memory keeps
        // the latest, forgets the rest, and holds no more than four emptied buffers.
        let store = MemoryAnswerStore::with_caps(100, 4_000);
        let digest = InputDigest([4; 32]);
        let token = Token::draw();
        let answer = |id: &str, text: String| {
            let key = CallKey::new("s", id);
            let claim = crate::block_on(store.claim(key, token, digest, Duration::from_secs(60)));
            assert_eq!(claim.unwrap(), Claim::Claimed);
            let result = ToolResult::text(id, text);
            crate::block_on(store.answered(key, token, Outcome::Ok, &result)).unwrap();
        };
        for i in 0..20 {
            answer(&format!("toolu_{i}"), format!("answer {i}"));
        }
        assert_eq!(store.len(), 20);
        answer("toolu_big", "y".repeat(3_900));
        assert_eq!(store.len(), 1, "only the latest answer fits the byte cap");
        assert!(store.get(CallKey::new("s", "toolu_big")).is_some());
        assert_eq!(store.lock().spares.len(), super::SPARES);
    }

    fn text(session_id: &str, tool_use_id: &str, turn: &str) -> (String, usize) {
        let mut out = String::from("left over");
        out.clear();
        let first = write_text_key(CallKey::in_turn(session_id, turn, tool_use_id), &mut out);
        (out, first)
    }

    #[test]
    fn the_key_text_is_the_session_ids_length_the_session_id_the_tool_use_id_then_the_turns() {
        assert_eq!(text("", "toolu_1", ""), ("0:toolu_1".to_owned(), 9));
        assert_eq!(text("s", "t", ""), ("1:st".to_owned(), 4));
        assert_eq!(text("sess_123", "", ""), ("8:sess_123".to_owned(), 10));
        let long = "x".repeat(1234);
        assert_eq!(text(&long, "t", "").0, format!("1234:{long}t"));
        assert_eq!(text("abcdefghij", "t", "").0, "10:abcdefghijt");
        // With a turn: the first call's key, then the key of the turn's call kept apart.
        assert_eq!(
            text("s", "functions.get_time:0", "chatcmpl-2"),
            (
                "1:sfunctions.get_time:01;s20:functions.get_time:0chatcmpl-2".to_owned(),
                23
            )
        );
        // Keys whose texts would run together without the lengths stay apart.
        assert_ne!(text("a1", "x", "").0, text("a", "1x", "").0);
        let apart = |s, id, turn| {
            let (t, first) = text(s, id, turn);
            t[first..].to_owned()
        };
        assert_ne!(apart("s", "a", "bc"), apart("s", "ab", "c"));
        // A first call's key never reads as one kept apart: `:` against `;`.
        assert_ne!(text("s", "1;s1:ab", "").0, apart("s", "a", "b"));
    }
}
