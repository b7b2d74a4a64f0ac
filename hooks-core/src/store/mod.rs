//! What a session keeps between calls, and where: the answer memory ([`AnswerStore`]: every
//! `tool_use` id it answered, so a retry runs nothing twice) and the turns paused for a person
//! ([`PendingStore`]: kept until a person decides, resumed at most once). You need this module
//! to keep them in a database (several worker processes are then one agent: a retry on another
//! worker, or after a restart, still runs nothing twice), to share one in-memory store between
//! the sessions of a process, or to change the in-memory store's caps.
//!
//! Each trait has an in-memory implementation ([`MemoryAnswerStore`], [`MemoryPendingStore`]);
//! the `sqlite` and `postgres` features add database ones. Every implementation passes the
//! same tests, [`conformance`], which a store of your own can run too.
//!
//! # The answer memory, per call
//!
//! How a [`Session`](crate::Session) uses an [`AnswerStore`] (ARCHITECTURE.md, "Contracts": "Ids
//! and retries"), each call keyed by its session's id, its `tool_use` id and its turn
//! ([`CallKey`]):
//!
//! 1. [`claim`](AnswerStore::claim) the key with the input's digest and a lease: one atomic
//!    insert-if-absent. [`Claim::Claimed`]: the key is new and now in progress until the lease
//!    ends; the call runs. [`Claim::OtherTurn`]: the id is another turn's, and this call cannot
//!    be told apart from it (below): nothing runs. [`Claim::Seen`]: the key was seen before,
//!    and nothing runs:
//!    - answered ([`Remembered::Answered`]) with the same input: the remembered `tool_result` is
//!      the answer (a *replay*: observers see it with `replay: true`, counts leave it out);
//!    - still in progress ([`Remembered::InProgress`]): refused as in progress, an error the
//!      host waits on and retries (the first attempt's answer is then replayed);
//!    - interrupted ([`Remembered::Interrupted`]: the host dropped the call after its tool
//!      started, or the claim's lease ran out before an answer came, as when the worker running
//!      it died): answered with an error saying the call was interrupted and is not run again;
//!    - any of these with another input: refused as an id reused with another input.
//! 2. When the call was answered: [`answered`](AnswerStore::answered) with its outcome and
//!    `tool_result`. When it was not (a halt, a pause for a person):
//!    [`release`](AnswerStore::release), so a retry runs it; a call whose tool had started is
//!    kept as interrupted instead, never run again. A call future the host drops is
//!    [`abandon`](AnswerStore::abandon)ed the same way, at once where the store can (in memory),
//!    else when its lease ends.
//!
//! Blocks that are `not_run` (a message cut at `max_tokens`, a refused id, blocks after a halt)
//! are never claimed: they were not answered, so a retry runs them.
//!
//! So a call runs at most once, always (a write tool is never run twice, whatever dies when),
//! and exactly once when no process dies while it runs.
//!
//! # Turns
//!
//! A `tool_use` id names a call within its model response only: OpenAI-compatible servers
//! (vLLM, Kimi, gpt-oss) number a turn's calls, so `functions.get_time:0` comes again, with
//! the same input or another, in a later turn. A call's key therefore holds its turn
//! ([`CallKey::turn`]): the model response's id, which a resend of the same response carries
//! too, on any worker. Every store keeps the calls of one session's `tool_use` id this way:
//!
//! - the session's first call with the id is kept under (`session_id`, `tool_use_id`), with its
//!   turn; a claim of the same turn is a claim of that row (a replay, a refusal, …, as above);
//! - a call of another turn, both with a turn, once that first call is finished (answered or
//!   interrupted; a claim finds one whose lease ran out interrupted), is kept apart under
//!   (`session_id`, `tool_use_id`, `turn`): a new call, whose resends find it there. While the
//!   first call is in progress, such a claim is [`Claim::OtherTurn`] `{ in_progress: true }`
//!   and records nothing: a call in progress may yet be released and its place taken by
//!   another turn, and a turn's call must never be in two rows;
//! - a call without a turn beside one with a turn, either way round, is
//!   [`Claim::OtherTurn`] `{ in_progress: false }`: the one may be a resend of the other (a
//!   message sent once with its `id` and once without), so nothing is recorded and nothing runs.
//!
//! [`answered`](AnswerStore::answered), [`release`](AnswerStore::release) and
//! [`abandon`](AnswerStore::abandon) act on the one row whose turn is the key's, whichever of
//! the two it is. A store that forgets calls (the in-memory one past its caps) looks for a later
//! turn's row before it gives that turn the first call's place.
//!
//! A host's store receives [`InputDigest::of`], the stable SHA-256 of the input's JSON text.
//! The default store of `Dispatcher::session`, which nobody outside the session can read, is
//! given a cheaper key instead (SipHash keyed at random per session); its answers, replays and
//! refusals are the same.

pub mod conformance;
pub(crate) mod digest;
pub(crate) mod error;
pub(crate) mod memory;
#[cfg(feature = "inbox")]
mod memory_inbox;
pub(crate) mod pending;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(any(feature = "inbox", feature = "sqlite", feature = "postgres"))]
pub(crate) mod waiting;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::Value;

use crate::approval::pending::PendingTurn;
use crate::audit::outcome::Outcome;
use crate::base::future::BoxFuture;
use crate::content::message::ToolResult;

pub use digest::InputDigest;
pub use error::StoreError;
pub use memory::MemoryAnswerStore;
pub use pending::MemoryPendingStore;

/// One call in a store that many sessions and processes share: the session's id, the
/// `tool_use` id, and the turn the call came from. A `tool_use` id is unique within one model
/// response only (OpenAI-compatible servers number a turn's calls, so `functions.get_time:0`
/// comes again in a later turn), so a call is never named by its id alone: see "Turns" in the
/// [module docs](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallKey<'a> {
    /// The session's id ([`HookContext::session_id`](crate::HookContext::session_id)).
    pub session_id: &'a str,
    /// The `tool_use` id.
    pub tool_use_id: &'a str,
    /// The turn the call came from: the id of the model response that holds it (`msg_…`,
    /// `chatcmpl-…`, `resp_…`, or `gemini-3` for the Gemini candidate of turn 3), or `""` for a
    /// call that came without one ([`Session::call`](crate::Session::call), a message without
    /// its `id`).
    pub turn: &'a str,
}

impl<'a> CallKey<'a> {
    /// The key of `tool_use_id` in `session_id`, from no turn (`turn: ""`): what
    /// [`Session::call`](crate::Session::call) uses.
    pub fn new(session_id: &'a str, tool_use_id: &'a str) -> Self {
        CallKey::in_turn(session_id, "", tool_use_id)
    }

    /// The key of `tool_use_id` in `session_id`, from the turn `turn` (the model response's id).
    pub fn in_turn(session_id: &'a str, turn: &'a str, tool_use_id: &'a str) -> Self {
        CallKey {
            session_id,
            tool_use_id,
            turn,
        }
    }
}

/// What a claim of a call of `turn` makes of the session's first call with its `tool_use` id,
/// found of turn `first` (in progress or not): the rule every store follows ("Turns" in the
/// module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BesideFirst {
    /// The same turn: that row is this call's.
    Same,
    /// Another turn, both with one, and the first call finished: this call is kept apart.
    Apart,
    /// [`Claim::OtherTurn`].
    Other {
        /// The first call is still in progress.
        in_progress: bool,
    },
}

/// The rule of [`BesideFirst`].
pub(crate) fn beside_first(turn: &str, first: &str, first_in_progress: bool) -> BesideFirst {
    if turn == first {
        BesideFirst::Same
    } else if turn.is_empty() || first.is_empty() {
        BesideFirst::Other { in_progress: false }
    } else if first_in_progress {
        BesideFirst::Other { in_progress: true }
    } else {
        BesideFirst::Apart
    }
}

/// What a store knows of a call it has seen.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Remembered {
    /// Claimed, its lease running, not finished: a call with this key is running (a retry
    /// raced it).
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
    /// Not answered, and never to be run again: the host dropped the call after its tool had
    /// started, or the claim's lease ran out with no answer (its worker died, or ran past the
    /// lease): it may have taken effect.
    Interrupted {
        /// The digest it was claimed with.
        digest: InputDigest,
    },
}

impl Remembered {
    /// The digest the call was claimed with.
    pub fn digest(&self) -> InputDigest {
        match self {
            Remembered::InProgress { digest }
            | Remembered::Answered { digest, .. }
            | Remembered::Interrupted { digest } => *digest,
        }
    }
}

/// The answer of [`AnswerStore::claim`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Claim {
    /// The key was absent and is now [`Remembered::InProgress`] with the given digest: run it.
    Claimed,
    /// The key was present: what the store knows of it (a claim whose lease had run out is
    /// now [`Remembered::Interrupted`], changed by this claim; nothing else was changed).
    Seen(Remembered),
    /// The session's first call with this `tool_use` id came from another turn, and this call
    /// cannot be kept apart from it: nothing was recorded ("Turns" in the module docs).
    /// `in_progress`: that call is still running (once it is finished, a call of a later turn
    /// is kept apart: retry then); otherwise one of the two came without a turn, so this one
    /// may be a resend of it or a new call, and the store cannot tell.
    OtherTurn {
        /// Whether the first call is still in progress.
        in_progress: bool,
    },
}

/// The future of a store method: ready at once (an in-memory store: no allocation) or a boxed
/// future (a database).
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

/// Where sessions remember the calls they answered, keyed by [`CallKey`].
///
/// Every session has a [`MemoryAnswerStore`] of its own by default; a host that serves one
/// conversation from several processes gives its sessions a shared store with
/// [`Dispatcher::session_with_store`](crate::Dispatcher::session_with_store). See the module
/// docs for the order of calls.
///
/// Each method is one atomic step in the store (one statement or one transaction in a
/// database, never a read then a write): two attempts racing on one key see one
/// [`Claim::Claimed`] between them, and an answer or a release changes only a claim still in
/// progress. [`conformance::answer_store`] checks all of it.
pub trait AnswerStore: Send + Sync {
    /// Atomically: when `key` is absent, record it as in progress with `digest` until `lease`
    /// from now, and answer [`Claim::Claimed`]; when it is in progress and its lease has run
    /// out, record it as [`Remembered::Interrupted`] and answer that; otherwise change nothing
    /// and answer [`Claim::Seen`] with what is recorded. Which row is the key's, and when the
    /// answer is [`Claim::OtherTurn`] instead: "Turns" in the module docs.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer: the call is then not run.
    fn claim<'a>(
        &'a self,
        key: CallKey<'a>,
        digest: InputDigest,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Claim, StoreError>>;

    /// The claimed call of `key` was answered with `result` (`outcome` says how): record it as
    /// [`Remembered::Answered`], keeping its digest. A key not in progress is left as it is (a
    /// claim that ran past its lease and was marked interrupted stays so).
    ///
    /// # Errors
    /// [`StoreError`] when it cannot be recorded (the host still gets the answer).
    fn answered<'a>(
        &'a self,
        key: CallKey<'a>,
        outcome: Outcome,
        result: &'a ToolResult,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// The claimed call of `key` was not answered: forget it (a retry runs it), or, when
    /// `tool_started`, record it as [`Remembered::Interrupted`]. A key not in progress is left
    /// as it is.
    ///
    /// # Errors
    /// [`StoreError`] when it cannot be recorded: the claim then lapses with its lease, after
    /// which a retry is answered as interrupted (the call is never run twice).
    fn release<'a>(
        &'a self,
        key: CallKey<'a>,
        tool_started: bool,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// What [`release`](Self::release) does, for a call future the host dropped: synchronous
    /// and never blocking, since it runs in `Drop`. The default does nothing: the claim lapses
    /// with its lease (a retry within it is refused as in progress, after it answered as
    /// interrupted). An in-memory store releases at once; a database store may queue the
    /// write.
    fn abandon(&self, key: CallKey<'_>, tool_started: bool) {
        let _ = (key, tool_started);
    }
}

/// What [`PendingStore::take`] found.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Taken {
    /// The turn, now being resumed by this caller: every other caller gets
    /// [`Resuming`](Self::Resuming) until it is [`resumed`](PendingStore::resumed) or
    /// [`put back`](PendingStore::put_back), or until the take's lease ends (its worker died).
    Turn(PendingTurn),
    /// Another caller is resuming the turn now.
    Resuming,
    /// The turn was resumed: its answer ([`Resumed`](crate::approval::Resumed) as JSON), for
    /// whoever asks again.
    Resumed(Value),
    /// No turn is kept under that key.
    Missing,
}

/// Where turns paused for a person wait, keyed by their session's id and their turn id
/// ([`PendingTurn::turn_id`]), until one resume takes them.
///
/// Each method is one atomic step in the store: [`put`](Self::put) never overwrites a kept turn,
/// and of any number of callers [`take`](Self::take)-ing one turn at once exactly one gets
/// [`Taken::Turn`]. [`conformance::pending_store`] checks it.
/// [`Session::resume_from`](crate::Session::resume_from) uses these steps.
pub trait PendingStore: Send + Sync {
    /// Keeps `turn` under (`turn.session_id`, `turn.turn_id`). A turn already kept under that
    /// key (the same message paused again, by a retry) is left as it is, its `created_at`, and
    /// so its expiry, with it.
    ///
    /// # Errors
    /// [`StoreError`] when it cannot be kept.
    fn put<'a>(&'a self, turn: &'a PendingTurn) -> StoreFuture<'a, Result<(), StoreError>>;

    /// Takes the turn of (`session_id`, `turn_id`) to resume it, atomically: a waiting turn (or
    /// one whose take's lease has run out) becomes this caller's until `lease` from now.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer: nothing is resumed.
    fn take<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Taken, StoreError>>;

    /// The taken turn was resumed into `answer` (the [`Resumed`](crate::approval::Resumed) as
    /// JSON): kept, so a later take answers [`Taken::Resumed`].
    ///
    /// # Errors
    /// [`StoreError`] when it cannot be recorded (the calls' answers are in the answer memory
    /// all the same, so a resume after the take's lease replays them).
    fn resumed<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        answer: &'a Value,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// The taken turn was not resumed (refused before anything ran, or a hook halted it):
    /// waiting again.
    ///
    /// # Errors
    /// [`StoreError`] when it cannot be recorded: the turn is taken again after the lease.
    fn put_back<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// The turns of `session_id` still waiting (not taken, not resumed), oldest first.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer.
    fn waiting<'a>(
        &'a self,
        session_id: &'a str,
    ) -> StoreFuture<'a, Result<Vec<PendingTurn>, StoreError>>;
}
