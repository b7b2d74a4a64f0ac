//! [`MemoryAnswerStore`]: the in-memory answer memory every session gets by default.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::audit::outcome::Outcome;
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

#[derive(Default)]
struct State {
    entries: HashMap<Arc<str>, Entry>,
    /// Finished keys (answered or interrupted), oldest first.
    order: VecDeque<Arc<str>>,
    /// The counted bytes of the finished entries.
    bytes: usize,
}

/// One call: its digest and what became of it. An answer is kept without its id (the map's key
/// holds it), so remembering a call copies nothing.
struct Entry {
    /// The map's key, shared (the queue of finished keys holds it too).
    key: Arc<str>,
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

/// The map's key of `key`: the session's id, its length first, then the `tool_use` id, so two
/// different keys never write the same text.
fn text_key(key: CallKey<'_>) -> String {
    format!(
        "{}:{}{}",
        key.session_id.len(),
        key.session_id,
        key.tool_use_id
    )
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
        self.lock()
            .entries
            .get(text_key(key).as_str())
            .map(|e| e.remembered(key.tool_use_id))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Nothing here panics while holding the lock; a poisoned lock still holds valid data.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the call of `key`, in progress, finished as `state`, counting `content` bytes,
    /// then evicts past the caps. A key not in progress is left alone.
    fn finish(&self, key: CallKey<'_>, content: usize, state: Stored) {
        let size = key_bytes(key) + content + Self::ENTRY_OVERHEAD;
        let key = text_key(key);
        let mut guard = self.lock();
        let State {
            entries,
            order,
            bytes,
        } = &mut *guard;
        // One lookup here and one per eviction: each hashes the key.
        let Some(entry) = entries.get_mut(key.as_str()) else {
            return;
        };
        if !matches!(entry.state, Stored::InProgress(_)) {
            return;
        }
        finish_entry(entry, size, state, order, bytes);
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
        let key = text_key(key);
        let mut state = self.lock();
        if state
            .entries
            .get(key.as_str())
            .is_some_and(|e| matches!(e.state, Stored::InProgress(_)))
        {
            state.entries.remove(key.as_str());
        }
    }
}

/// Counts a finished entry: its state, its bytes, its place in the eviction order.
fn finish_entry(
    entry: &mut Entry,
    size: usize,
    state: Stored,
    order: &mut VecDeque<Arc<str>>,
    bytes: &mut usize,
) {
    entry.state = state;
    entry.bytes = size;
    *bytes += size;
    order.push_back(Arc::clone(&entry.key));
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
        use std::collections::hash_map::Entry as Slot;
        // The key is allocated before the lookup so it is hashed once; a retry (the rare path)
        // drops it again.
        let text: Arc<str> = Arc::from(text_key(key));
        let now = Instant::now();
        let mut guard = self.lock();
        let State {
            entries,
            order,
            bytes,
        } = &mut *guard;
        let claim = match entries.entry(Arc::clone(&text)) {
            Slot::Occupied(mut e) => {
                let lapsed = matches!(e.get().state, Stored::InProgress(until) if until <= now);
                if lapsed {
                    // Its worker never answered: it may have run, so it never runs again.
                    let size = key_bytes(key) + Self::ENTRY_OVERHEAD;
                    finish_entry(e.get_mut(), size, Stored::Interrupted, order, bytes);
                }
                Claim::Seen(e.get().remembered(key.tool_use_id))
            }
            Slot::Vacant(v) => {
                v.insert(Entry {
                    key: text,
                    digest,
                    state: Stored::InProgress(now.checked_add(lease).unwrap_or(now + FOREVER)),
                    bytes: 0,
                });
                Claim::Claimed
            }
        };
        StoreFuture::ready(Ok(claim))
    }

    fn answered<'a>(
        &'a self,
        key: CallKey<'a>,
        outcome: Outcome,
        result: ToolResult,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let ToolResult {
            content,
            is_error,
            extra,
            ..
        } = result;
        let size = content_bytes(content.as_ref());
        let state = Stored::Answered {
            outcome,
            content,
            is_error,
            extra,
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
