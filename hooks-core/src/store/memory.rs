//! [`MemoryAnswerStore`]: the in-memory answer memory every session gets by default.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::audit::outcome::Outcome;
use crate::content::{ToolResult, ToolResultContent};

use super::{AnswerStore, Claim, InputDigest, Remembered, StoreError, StoreFuture};

/// The in-memory [`AnswerStore`] every session gets by default: a map behind a mutex, bounded.
///
/// Memory per answered call: its id, its 32-byte digest, its `tool_result`'s content (at most
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
    /// Finished ids (answered or cancelled), oldest first.
    order: VecDeque<Arc<str>>,
    /// The counted bytes of the finished entries.
    bytes: usize,
}

/// One id: its digest and what became of it. An answer is kept without its id (the map's key
/// holds it), so remembering a call copies nothing.
struct Entry {
    /// The map's key, shared (the queue of finished ids holds it too).
    key: Arc<str>,
    digest: InputDigest,
    state: Stored,
    bytes: usize,
}

enum Stored {
    InProgress,
    Answered {
        outcome: Outcome,
        content: Option<ToolResultContent>,
        is_error: bool,
        extra: serde_json::Map<String, Value>,
    },
    CancelledAfterStart,
}

impl Entry {
    fn remembered(&self, id: &str) -> Remembered {
        let digest = self.digest;
        match &self.state {
            Stored::InProgress => Remembered::InProgress { digest },
            Stored::Answered {
                outcome,
                content,
                is_error,
                extra,
            } => Remembered::Answered {
                digest,
                outcome: *outcome,
                result: ToolResult {
                    tool_use_id: id.to_owned(),
                    content: content.clone(),
                    is_error: *is_error,
                    extra: extra.clone(),
                },
            },
            Stored::CancelledAfterStart => Remembered::CancelledAfterStart { digest },
        }
    }
}

impl MemoryAnswerStore {
    /// The default cap on remembered calls.
    pub const DEFAULT_MAX_ENTRIES: usize = 1024;
    /// The default cap on remembered bytes (8 MiB).
    pub const DEFAULT_MAX_BYTES: usize = 8 << 20;
    /// The bytes counted per entry besides its id and content (digest, map and queue slots,
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

    /// How many answered (or cancelled) calls it remembers now.
    pub fn len(&self) -> usize {
        self.lock().order.len()
    }

    /// Whether it remembers no answered call.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What it remembers of `tool_use_id`.
    pub fn get(&self, tool_use_id: &str) -> Option<Remembered> {
        self.lock()
            .entries
            .get(tool_use_id)
            .map(|e| e.remembered(tool_use_id))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Nothing here panics while holding the lock; a poisoned lock still holds valid data.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the call of `id`, in progress, finished as `state`, counting `content` bytes, then
    /// evicts past the caps. An id not in progress is left alone.
    fn finish(&self, id: &str, content: usize, state: Stored) {
        let mut guard = self.lock();
        let State {
            entries,
            order,
            bytes,
        } = &mut *guard;
        // One lookup here and one per eviction: each hashes the id.
        let Some(entry) = entries.get_mut(id) else {
            return;
        };
        if !matches!(entry.state, Stored::InProgress) {
            return;
        }
        let size = id.len() + content + Self::ENTRY_OVERHEAD;
        entry.state = state;
        entry.bytes = size;
        *bytes += size;
        order.push_back(Arc::clone(&entry.key));
        while order.len() > 1 && (order.len() > self.max_entries || *bytes > self.max_bytes) {
            if let Some(old) = order.pop_front()
                && let Some(e) = entries.remove(&old)
            {
                *bytes -= e.bytes;
            }
        }
    }
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
        tool_use_id: &'a str,
        digest: InputDigest,
    ) -> StoreFuture<'a, Result<Claim, StoreError>> {
        use std::collections::hash_map::Entry as Slot;
        // The key is allocated before the lookup so the id is hashed once; a retry (the rare
        // path) drops it again.
        let key: Arc<str> = Arc::from(tool_use_id);
        let mut state = self.lock();
        let claim = match state.entries.entry(Arc::clone(&key)) {
            Slot::Occupied(e) => Claim::Seen(e.get().remembered(tool_use_id)),
            Slot::Vacant(v) => {
                v.insert(Entry {
                    key,
                    digest,
                    state: Stored::InProgress,
                    bytes: 0,
                });
                Claim::Claimed
            }
        };
        StoreFuture::ready(Ok(claim))
    }

    fn answered<'a>(
        &'a self,
        outcome: Outcome,
        result: ToolResult,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let ToolResult {
            tool_use_id,
            content,
            is_error,
            extra,
        } = result;
        let size = content_bytes(content.as_ref());
        let state = Stored::Answered {
            outcome,
            content,
            is_error,
            extra,
        };
        self.finish(&tool_use_id, size, state);
        StoreFuture::ready(Ok(()))
    }

    fn release(&self, tool_use_id: &str, tool_started: bool) {
        if tool_started {
            self.finish(tool_use_id, 0, Stored::CancelledAfterStart);
            return;
        }
        let mut state = self.lock();
        if state
            .entries
            .get(tool_use_id)
            .is_some_and(|e| matches!(e.state, Stored::InProgress))
        {
            state.entries.remove(tool_use_id);
        }
    }
}

/// The bytes of a result's content: its text, or the compact JSON of its blocks.
fn content_bytes(content: Option<&ToolResultContent>) -> usize {
    match content {
        None => 0,
        Some(ToolResultContent::Text(t)) => t.len(),
        Some(blocks) => serde_json::to_vec(blocks).map_or(0, |v| v.len()),
    }
}
