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

use super::{AnswerStore, CallKey, Claim, InputDigest, Remembered, StoreError, StoreFuture};

/// The in-memory [`AnswerStore`] every session gets by default: a map behind a mutex, bounded.
/// One store may serve many sessions of one process ([`CallKey`] keeps them apart); it lives
/// and dies with the process (at a restart, every retried call runs again).
///
/// Memory per answered call: its key (session id and `tool_use` id), its 32-byte digest, its `tool_result`'s content (at most
/// the dispatcher's `max_result_bytes`, 256 KiB by default) and about 100 bytes of
/// bookkeeping ([`ENTRY_OVERHEAD`](Self::ENTRY_OVERHEAD)). Bounded by two caps, oldest answer
/// first: at most `max_entries` answered (or cancelled) calls, default
/// [`DEFAULT_MAX_ENTRIES`](Self::DEFAULT_MAX_ENTRIES) (1 024), and at most `max_bytes` counted
/// that way, default [`DEFAULT_MAX_BYTES`](Self::DEFAULT_MAX_BYTES) (8 MiB); the latest answer
/// is always kept. A call forgotten that way is run again if it is retried: keep the caps above
/// what a retry reaches back to (a retry of the last message needs as many entries as the
/// message has blocks). Calls in progress are never evicted.
pub struct MemoryAnswerStore {
    max_entries: usize,
    max_bytes: usize,
    state: Mutex<State>,
}

/// The map of calls by key text.
type Entries = hashbrown::HashMap<Arc<str>, Entry, foldhash::fast::RandomState>;

#[derive(Default)]
struct State {
    /// Keyed by the text of [`write_text_key`], hashed with foldhash seeded at random per map
    /// (the ids come from the model: an unseeded hash would let crafted ids collide; the map
    /// holds at most `max_entries` answers and the calls in progress).
    entries: Entries,
    /// Finished keys (answered or interrupted), oldest first.
    order: VecDeque<Arc<str>>,
    /// The counted bytes of the finished entries.
    bytes: usize,
}

/// One call: its digest and what became of it. An answer is kept without its id (the map's key
/// holds it), so remembering a call copies nothing.
struct Entry {
    digest: InputDigest,
    state: Stored,
    bytes: usize,
}

enum Stored {
    /// Claimed until the instant its lease ends.
    InProgress(Instant),
    Answered {
        outcome: Outcome,
        content: Option<ToolResultContent>,
        is_error: bool,
        extra: serde_json::Map<String, Value>,
    },
    Interrupted,
}

/// The bytes a key counts for: its session's id and its `tool_use` id.
fn key_bytes(key: CallKey<'_>) -> usize {
    key.session_id.len() + key.tool_use_id.len()
}

/// Writes the map's key of `key` to `out`: the session's id, its length first, then the
/// `tool_use` id, so two different keys never write the same text.
fn write_text_key(key: CallKey<'_>, out: &mut String) {
    out.reserve(key_bytes(key) + 21);
    // The length in decimal digits, without the formatting machinery (this runs twice a call).
    let mut digits = [0; 20];
    let digits = decimal(key.session_id.len() as u64, &mut digits);
    out.extend(digits.iter().map(|&d| char::from(d)));
    out.push(':');
    out.push_str(key.session_id);
    out.push_str(key.tool_use_id);
}

thread_local! {
    /// The text of the key being looked up, reused: a lookup allocates nothing once the buffer
    /// has grown to the longest key seen on the thread.
    static KEY_TEXT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Runs `f` with the map's key of `key` (see [`write_text_key`]), written into the thread's
/// reused buffer; into a fresh one when that is in use further up the stack or already gone (a
/// session dropped by another thread-local's destructor at thread exit). A buffer grown past
/// 64 KiB by a long key is not kept.
fn with_text_key<R>(key: CallKey<'_>, f: impl FnOnce(&str) -> R) -> R {
    with_reused(&KEY_TEXT, |buf| {
        buf.clear();
        write_text_key(key, buf);
        let out = f(buf);
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
                    extra: extra.clone(),
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
            state: Mutex::new(State::default()),
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

    /// What it remembers of `key`.
    pub fn get(&self, key: CallKey<'_>) -> Option<Remembered> {
        with_text_key(key, |text| {
            self.lock()
                .entries
                .get(text)
                .map(|e| e.remembered(key.tool_use_id))
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Nothing here panics while holding the lock; a poisoned lock still holds valid data.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the call of `key`, in progress, finished as `state`, counting `content` bytes,
    /// then evicts past the caps. A key not in progress is left alone.
    fn finish(&self, key: CallKey<'_>, content: usize, state: Stored) {
        let size = key_bytes(key) + content + Self::ENTRY_OVERHEAD;
        with_text_key(key, |text| self.finish_text(text, size, state));
    }

    /// [`finish`](Self::finish) by the map's key.
    fn finish_text(&self, key: &str, size: usize, state: Stored) {
        let mut guard = self.lock();
        let State {
            entries,
            order,
            bytes,
        } = &mut *guard;
        // One lookup here and one per eviction: each hashes the key.
        let Some((shared, entry)) = entries.get_key_value_mut(key) else {
            return;
        };
        if !matches!(entry.state, Stored::InProgress(_)) {
            return;
        }
        finish_entry(shared, entry, size, state, order, bytes);
        self.evict(entries, order, bytes);
    }

    /// Forgets the oldest finished calls while either cap is passed, the latest always kept.
    fn evict(&self, entries: &mut Entries, order: &mut VecDeque<Arc<str>>, bytes: &mut usize) {
        while order.len() > 1 && (order.len() > self.max_entries || *bytes > self.max_bytes) {
            if let Some(old) = order.pop_front()
                && let Some(e) = entries.remove(&old)
            {
                *bytes -= e.bytes;
            }
        }
    }

    /// Forgets the call of `key` if it is still in progress (a retry then runs it), or, when
    /// its tool started, keeps it as interrupted.
    fn forget(&self, key: CallKey<'_>, tool_started: bool) {
        if tool_started {
            self.finish(key, 0, Stored::Interrupted);
            return;
        }
        with_text_key(key, |text| {
            let mut state = self.lock();
            if state
                .entries
                .get(text)
                .is_some_and(|e| matches!(e.state, Stored::InProgress(_)))
            {
                state.entries.remove(text);
            }
        });
    }
}

/// Counts a finished entry: its state, its bytes, its place in the eviction order.
fn finish_entry(
    key: &Arc<str>,
    entry: &mut Entry,
    size: usize,
    state: Stored,
    order: &mut VecDeque<Arc<str>>,
    bytes: &mut usize,
) {
    entry.state = state;
    entry.bytes = size;
    *bytes += size;
    order.push_back(Arc::clone(key));
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
            .field("in_progress", &(state.entries.len() - state.order.len()))
            .field("bytes", &state.bytes)
            .finish()
    }
}

impl AnswerStore for MemoryAnswerStore {
    fn claim<'a>(
        &'a self,
        key: CallKey<'a>,
        digest: InputDigest,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Claim, StoreError>> {
        let now = Instant::now();
        let claim = with_text_key(key, |text| {
            let mut guard = self.lock();
            let State {
                entries,
                order,
                bytes,
            } = &mut *guard;
            // Looked up by the reused text, hashed once; a new call's key is allocated once, as
            // the map's (and later the eviction queue's) shared `Arc<str>`.
            match entries.entry_ref(text) {
                hashbrown::hash_map::EntryRef::Occupied(mut slot) => {
                    let shared = Arc::clone(slot.key());
                    let e = slot.get_mut();
                    let lapsed = matches!(e.state, Stored::InProgress(until) if until <= now);
                    if lapsed {
                        // Its worker never answered: it may have run, so it never runs again.
                        let size = key_bytes(key) + Self::ENTRY_OVERHEAD;
                        finish_entry(&shared, e, size, Stored::Interrupted, order, bytes);
                    }
                    let seen = Claim::Seen(e.remembered(key.tool_use_id));
                    if lapsed {
                        // Finished now, so counted against the caps like any answer.
                        self.evict(entries, order, bytes);
                    }
                    seen
                }
                hashbrown::hash_map::EntryRef::Vacant(slot) => {
                    slot.insert_with_key(
                        Arc::from(text),
                        Entry {
                            digest,
                            state: Stored::InProgress(
                                now.checked_add(lease).unwrap_or(now + FOREVER),
                            ),
                            bytes: 0,
                        },
                    );
                    Claim::Claimed
                }
            }
        });
        StoreFuture::ready(Ok(claim))
    }

    fn answered<'a>(
        &'a self,
        key: CallKey<'a>,
        outcome: Outcome,
        result: &'a ToolResult,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        // Kept without its id (the map's key holds it).
        let size = content_bytes(result.content.as_ref());
        let state = Stored::Answered {
            outcome,
            content: result.content.clone(),
            is_error: result.is_error,
            extra: result.extra.clone(),
        };
        self.finish(key, size, state);
        StoreFuture::ready(Ok(()))
    }

    fn release<'a>(
        &'a self,
        key: CallKey<'a>,
        tool_started: bool,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.forget(key, tool_started);
        StoreFuture::ready(Ok(()))
    }

    fn abandon(&self, key: CallKey<'_>, tool_started: bool) {
        self.forget(key, tool_started);
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

    use super::{AnswerStore, CallKey, Claim, InputDigest, MemoryAnswerStore, write_text_key};

    #[test]
    fn claims_that_lapse_are_counted_against_the_caps() {
        // A lapsed claim is finished (interrupted) when it is next claimed: it counts like an
        // answer, and the oldest go past the entry cap.
        let store = MemoryAnswerStore::with_caps(2, 1 << 20);
        let ids: Vec<String> = (0..50).map(|i| format!("toolu_{i}")).collect();
        fn key(id: &str) -> CallKey<'_> {
            CallKey {
                session_id: "s",
                tool_use_id: id,
            }
        }
        for id in &ids {
            let claim = crate::block_on(store.claim(key(id), InputDigest([1; 32]), Duration::ZERO));
            assert!(matches!(claim, Ok(Claim::Claimed)));
        }
        assert_eq!(store.len(), 0, "claims in progress are not finished calls");
        for id in &ids {
            let claim = crate::block_on(store.claim(key(id), InputDigest([1; 32]), Duration::ZERO));
            assert!(matches!(claim, Ok(Claim::Seen(_))), "{id}");
        }
        assert_eq!(store.len(), 2);
        assert!(store.get(key("toolu_49")).is_some());
        assert!(store.get(key("toolu_48")).is_some());
        assert!(store.get(key("toolu_47")).is_none());
    }

    fn text(session_id: &str, tool_use_id: &str) -> String {
        let mut out = String::from("left over");
        out.clear();
        write_text_key(
            CallKey {
                session_id,
                tool_use_id,
            },
            &mut out,
        );
        out
    }

    #[test]
    fn the_key_text_is_the_session_ids_length_the_session_id_then_the_tool_use_id() {
        assert_eq!(text("", "toolu_1"), "0:toolu_1");
        assert_eq!(text("s", "t"), "1:st");
        assert_eq!(text("sess_123", ""), "8:sess_123");
        let long = "x".repeat(1234);
        assert_eq!(text(&long, "t"), format!("1234:{long}t"));
        assert_eq!(text("abcdefghij", "t"), "10:abcdefghijt");
        // Two keys whose texts would run together without the length stay apart.
        assert_ne!(text("a1", "x"), text("a", "1x"));
    }
}
