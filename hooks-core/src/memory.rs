//! A session's memory of the `tool_use` ids it answered, so a retried message runs nothing
//! twice: [`AnswerStore`] (the small async trait a host can back with its own database),
//! [`MemoryAnswerStore`] (the in-memory default, bounded), and the [`InputDigest`] each id is
//! remembered with.
//!
//! How a [`Session`](crate::Session) uses it, per `tool_use` (DESIGN.md, "Retries"):
//!
//! 1. [`claim`](AnswerStore::claim) the id with the input's digest: an atomic insert-if-absent.
//!    [`Claim::Claimed`]: the id is new and now in progress; the call runs.
//!    [`Claim::Seen`]: the id was seen before, and nothing runs:
//!    - answered ([`Remembered::Answered`]) with the same input: the remembered `tool_result` is
//!      the answer (a *replay*: observers see it with `replay: true`, counts leave it out);
//!    - still in progress ([`Remembered::InProgress`]): refused as in progress, an error the
//!      host waits on and retries (the first attempt's answer is then replayed);
//!    - cancelled after its tool started ([`Remembered::CancelledAfterStart`]): answered with an
//!      error saying the call was interrupted and is not run again;
//!    - any of these with another input: refused as an id reused with another input.
//! 2. When the call was answered: [`answered`](AnswerStore::answered) with its outcome and
//!    `tool_result`. When it was not (a `Halt`, or the host dropped the call):
//!    [`release`](AnswerStore::release), so a retry runs it; a call dropped after its tool
//!    started is kept as cancelled instead, never run again.
//!
//! Blocks that are `not_run` (a message cut at `max_tokens`, a refused id, blocks after a halt)
//! are never claimed: they were not answered, so a retry runs them.
//!
//! A host's store (given with `session_with_store`) receives [`InputDigest::of`], the stable
//! SHA-256 of the input's JSON text. The default store of `Dispatcher::session`, which nobody
//! outside the session can read, is given a cheaper key instead (`InputDigest::keyed`: SipHash
//! keyed at random per session); its answers, replays and refusals are the same.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, Hash, RandomState};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::content::{ToolResult, ToolResultContent};
use crate::future::BoxFuture;
use crate::outcome::Outcome;

/// The SHA-256 of a `tool_use` input's JSON text, as serde_json writes it (compact, keys in the
/// order the model sent them: `preserve_order`). Two calls with one id and equal digests are the
/// same call; a retry of the same message has the same digest.
///
/// An input nested deeper than the dispatcher's `max_input_depth`
/// ([`Limits`](crate::Limits)) is not serialized (its walk would be unbounded): its digest is
/// that of the text `[input deeper than N levels]`. Such an input is `invalid_input` anyway, so
/// two of them sharing a digest only replays one refusal for the other.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct InputDigest(pub [u8; 32]);

impl InputDigest {
    /// The digest of `input`, serialized compact; deeper than `max_depth` levels (`{}` is one
    /// level), the digest of `[input deeper than {max_depth} levels]`.
    ///
    /// ```
    /// use toolgate_core::InputDigest;
    ///
    /// let d = InputDigest::of(&serde_json::json!({"order_id": "o_1"}), 32);
    /// // `printf '%s' '{"order_id":"o_1"}' | sha256sum`
    /// assert_eq!(d.to_string(),
    ///     "e4c68ac5347457f594c087719e4a93825e3db41f6054070f1d7c4c7f6ffefd8a");
    /// ```
    pub fn of(input: &Value, max_depth: usize) -> InputDigest {
        let bounded = Bounded {
            value: input,
            levels_left: max_depth,
        };
        // The text goes into a reused per-thread buffer, then to the hasher in one piece (a
        // hasher fed token by token costs more than the copy).
        let digest = with_text(|buf| {
            serde_json::to_writer(&mut *buf, &bounded).map(|()| Sha256::digest(&*buf))
        });
        match digest {
            Ok(d) => InputDigest(d.into()),
            // Only the depth bound fails the walk (writing to a `Vec` cannot fail).
            Err(_) => InputDigest(
                Sha256::digest(format!("[input deeper than {max_depth} levels]")).into(),
            ),
        }
    }
}

impl InputDigest {
    /// The key the session's own default store remembers an input by: SipHash-1-3 (std's
    /// `RandomState`, keyed at random per session) of the input's structure (each value's kind,
    /// text, numbers as serde_json holds them, keys in the order sent), in the first 8 bytes,
    /// the rest zero; deeper than `max_depth` levels, the key of that depth alone. Equal inputs
    /// (equal JSON texts) get equal keys; two different inputs collide with a chance of about
    /// 2^-64 that an attacker cannot steer (the keys are random and never leave the process).
    ///
    /// Not the documented digest: used only where the key never leaves the session (its
    /// default [`MemoryAnswerStore`], which nobody else can read). It costs a few hundred
    /// instructions where [`of`](Self::of) serializes the input and hashes it with SHA-256
    /// (several thousand without the CPU's SHA instructions).
    pub(crate) fn keyed(input: &Value, max_depth: usize, keys: &RandomState) -> InputDigest {
        // The structure is encoded into a reused per-thread buffer, then hashed in one piece:
        // SipHash fed token by token spends most of its work on the small writes.
        let key = with_text(|buf| {
            if encode(input, max_depth, buf).is_err() {
                buf.clear();
                buf.push(0xfe);
                buf.extend_from_slice(&(max_depth as u64).to_le_bytes());
            }
            keys.hash_one(&buf[..])
        });
        let mut out = [0u8; 32];
        out[..8].copy_from_slice(&key.to_le_bytes());
        InputDigest(out)
    }
}

/// An input nested deeper than the bound.
struct TooDeep;

/// Writes `value`'s structure to `out`, each part self-delimiting so that two different values
/// cannot write the same bytes: a tag per kind, then its content; a string's or key's length
/// (8 bytes) before its bytes, an array's or object's count before its items; a number by its
/// kind (`u64`, negative `i64`, `f64`: serde_json's own `Hash` feeds `-1` and `u64::MAX` the
/// same bytes, which a unit test caught) and 8 bytes. Fails past `levels_left` levels of arrays
/// and objects, as [`Bounded`] does.
fn encode(value: &Value, levels_left: usize, out: &mut Vec<u8>) -> Result<(), TooDeep> {
    fn text(s: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    match value {
        Value::Null => out.push(0),
        Value::Bool(b) => out.push(1 + u8::from(*b)),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => {
                out.push(3);
                out.extend_from_slice(&u.to_le_bytes());
            }
            (None, Some(i), _) => {
                out.push(7);
                out.extend_from_slice(&i.to_le_bytes());
            }
            (None, None, f) => {
                out.push(8);
                out.extend_from_slice(&f.unwrap_or(f64::NAN).to_bits().to_le_bytes());
            }
        },
        Value::String(s) => {
            out.push(4);
            text(s, out);
        }
        Value::Array(_) | Value::Object(_) if levels_left == 0 => return Err(TooDeep),
        Value::Array(items) => {
            out.push(5);
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for v in items {
                encode(v, levels_left - 1, out)?;
            }
        }
        Value::Object(map) => {
            out.push(6);
            out.extend_from_slice(&(map.len() as u64).to_le_bytes());
            for (k, v) in map {
                text(k, out);
                encode(v, levels_left - 1, out)?;
            }
        }
    }
    Ok(())
}

impl fmt::Display for InputDigest {
    /// Lowercase hex, 64 characters.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for InputDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InputDigest({self})")
    }
}

thread_local! {
    /// The bytes of the input being digested (its JSON text, or its encoded structure).
    static TEXT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with this thread's digest buffer, empty (a fresh one when a caller further up the
/// stack holds it); a buffer grown past 64 KiB is given back afterwards.
fn with_text<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    TEXT.with(|buf| {
        let mut fresh = Vec::new();
        let mut reused = buf.try_borrow_mut();
        let buf = match &mut reused {
            Ok(b) => &mut **b,
            Err(_) => &mut fresh,
        };
        buf.clear();
        let out = f(buf);
        if buf.capacity() > 64 << 10 {
            *buf = Vec::new();
        }
        out
    })
}

/// A `Value` serialized exactly as `Value`'s own `Serialize` does, failing past a depth.
struct Bounded<'a> {
    value: &'a Value,
    levels_left: usize,
}

impl Serialize for Bounded<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let nested = |value| Bounded {
            value,
            levels_left: self.levels_left - 1,
        };
        match self.value {
            Value::Array(_) | Value::Object(_) if self.levels_left == 0 => {
                Err(serde::ser::Error::custom("too deep"))
            }
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for v in items {
                    seq.serialize_element(&nested(v))?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut m = s.serialize_map(Some(map.len()))?;
                for (k, v) in map {
                    m.serialize_entry(k, &nested(v))?;
                }
                m.end()
            }
            leaf => leaf.serialize(s),
        }
    }
}

/// What a store knows of an id it has seen.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Remembered {
    /// Claimed and not finished: a call with this id is running (a retry raced it).
    InProgress {
        /// The digest it was claimed with.
        digest: InputDigest,
    },
    /// Answered: the outcome and the `tool_result` the model was given.
    Answered {
        /// The digest it was claimed with.
        digest: InputDigest,
        /// Its outcome (`ok`, `blocked`, …; never `hook_failed`, `hook_timeout`, `not_run` or
        /// `cancelled`, which are not answers).
        outcome: Outcome,
        /// The answer.
        result: ToolResult,
    },
    /// The host dropped the call after its tool had started: it may have taken effect, so it
    /// is never run again.
    CancelledAfterStart {
        /// The digest it was claimed with.
        digest: InputDigest,
    },
}

impl Remembered {
    /// The digest the id was claimed with.
    pub fn digest(&self) -> InputDigest {
        match self {
            Remembered::InProgress { digest }
            | Remembered::Answered { digest, .. }
            | Remembered::CancelledAfterStart { digest } => *digest,
        }
    }
}

/// The answer of [`AnswerStore::claim`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Claim {
    /// The id was absent and is now [`Remembered::InProgress`] with the given digest: run it.
    Claimed,
    /// The id was present (nothing was changed): what the store knows of it.
    Seen(Remembered),
}

/// A store that could not answer (a database down). `Display`: `the answer store failed:
/// <message>`. When a claim fails, nothing runs (the session cannot know whether the id was
/// answered before); when recording an answer fails, the answer is still returned and the
/// failure goes to `tracing` (target `toolgate::memory`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the answer store failed: {message}")]
pub struct StoreError {
    message: String,
}

impl StoreError {
    /// An error with `message` (operator-only: never shown to the model).
    pub fn new(message: impl fmt::Display) -> Self {
        StoreError {
            message: message.to_string(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// The future of an [`AnswerStore`] method: ready at once (an in-memory store: no allocation)
/// or a boxed future (a database).
pub struct StoreFuture<'a, T>(StoreFutureInner<'a, T>);

enum StoreFutureInner<'a, T> {
    Ready(Option<T>),
    Pending(BoxFuture<'a, T>),
}

impl<'a, T> StoreFuture<'a, T> {
    /// An answer known now.
    pub fn ready(value: T) -> Self {
        StoreFuture(StoreFutureInner::Ready(Some(value)))
    }

    /// An answer still to come.
    pub fn boxed(future: impl Future<Output = T> + Send + 'a) -> Self {
        StoreFuture(StoreFutureInner::Pending(Box::pin(future)))
    }
}

impl<T> Unpin for StoreFuture<'_, T> {}

impl<T> Future for StoreFuture<'_, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match &mut self.get_mut().0 {
            StoreFutureInner::Ready(v) => {
                Poll::Ready(v.take().expect("a StoreFuture polled after it finished"))
            }
            StoreFutureInner::Pending(f) => f.as_mut().poll(cx),
        }
    }
}

/// Where a session remembers the `tool_use` ids it answered (one store per session: ids are
/// unique within a conversation, not across conversations).
///
/// The default is a [`MemoryAnswerStore`] per session; a host that runs one conversation
/// across several processes implements this on its own database and opens sessions with
/// [`Dispatcher::session_with_store`](crate::Dispatcher::session_with_store). See the module
/// docs for the order of calls.
///
/// A database implementation must make [`claim`](Self::claim) atomic (`INSERT … ON CONFLICT DO
/// NOTHING` then a read, in one transaction): two attempts racing on one id must see one
/// [`Claim::Claimed`] between them.
pub trait AnswerStore: Send + Sync {
    /// Atomically: when `tool_use_id` is absent, record it as in progress with `digest` and
    /// answer [`Claim::Claimed`]; when it is present, change nothing and answer
    /// [`Claim::Seen`] with what is recorded.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer: the call is then not run.
    fn claim<'a>(
        &'a self,
        tool_use_id: &'a str,
        digest: InputDigest,
    ) -> StoreFuture<'a, Result<Claim, StoreError>>;

    /// The claimed call of `result.tool_use_id` was answered with `result` (`outcome` says
    /// how): record it as [`Remembered::Answered`], keeping its digest.
    ///
    /// # Errors
    /// [`StoreError`] when it cannot be recorded (the host still gets the answer).
    fn answered<'a>(
        &'a self,
        outcome: Outcome,
        result: ToolResult,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// The claimed call of `tool_use_id` was not answered: forget it (a retry runs it), or,
    /// when `tool_started`, record it as [`Remembered::CancelledAfterStart`]. Synchronous,
    /// since it runs when the host drops a call future: it must not block (a database store
    /// queues the write).
    fn release(&self, tool_use_id: &str, tool_started: bool);
}

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

#[cfg(test)]
mod tests {
    use std::hash::RandomState;

    use serde_json::{Value, json};

    use super::InputDigest;

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn the_keyed_digest_tells_inputs_apart_exactly_as_their_json_texts_do() {
        let keys = RandomState::new();
        let texts = [
            r#"{"a":1,"b":[true,null,"x"]}"#,
            r#"{"b":[true,null,"x"],"a":1}"#,
            r#"{"a":1.0,"b":[true,null,"x"]}"#,
            r#"{"a":"1","b":[true,null,"x"]}"#,
            r#"{"a":1,"b":[true,null,"x",""]}"#,
            r#"{"a":1,"b":[[true],null,"x"]}"#,
            r#"{"a":1,"b":[true,null,"x"],"c":null}"#,
            r#"{"a":1,"b":["ab","c"]}"#,
            r#"{"a":1,"b":["a","bc"]}"#,
            r#"{"ab":1}"#,
            r#"{"a":-1}"#,
            r#"{"a":18446744073709551615}"#,
            r#"{"a":-1.0}"#,
            r#"{"a":0.0}"#,
            r#"{"a":-0.0}"#,
            r#"{"a":0}"#,
            r#"{"a":1e300}"#,
            r#"{"a":false}"#,
            r#"{"a":true}"#,
            r#"{"a":null}"#,
            r#"{"a":{}}"#,
            r#"{"a":[]}"#,
            r#"{"a":{"b":1}}"#,
            r#"{"a":[{"b":1}]}"#,
            r#"{}"#,
        ];
        for (i, a) in texts.iter().enumerate() {
            for (j, b) in texts.iter().enumerate() {
                let (ka, kb) = (
                    InputDigest::keyed(&parse(a), 32, &keys),
                    InputDigest::keyed(&parse(b), 32, &keys),
                );
                assert_eq!(ka == kb, i == j, "{a} against {b}");
                assert_eq!(ka.0[8..], [0; 24]);
            }
        }
        // The keys are the session's own: another session keys the same input differently.
        let x = parse(texts[0]);
        assert_ne!(
            InputDigest::keyed(&x, 32, &keys),
            InputDigest::keyed(&x, 32, &RandomState::new())
        );
    }

    #[test]
    fn past_the_depth_bound_the_keyed_digest_is_that_of_the_bound() {
        let keys = RandomState::new();
        let deep = json!({"a": {"b": {"c": {}}}});
        let deeper = json!({"a": {"b": {"c": {"d": 1}}}});
        let key = |v: &Value, depth| InputDigest::keyed(v, depth, &keys);
        assert_eq!(key(&deep, 3), key(&deeper, 3));
        assert_eq!(key(&json!([[[[]]]]), 3), key(&deep, 3));
        assert_ne!(key(&deep, 3), key(&deep, 2));
        assert_ne!(key(&deep, 4), key(&deeper, 4));
        assert_ne!(key(&deep, 4), key(&deep, 3));
    }
}
