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
//! 1. [`claim`](AnswerStore::claim) the key with the input's digest, a [`Token`] drawn for this
//!    claim, and a lease: one atomic insert-if-absent. [`Claim::Claimed`]: the key is new and
//!    now in progress under this token until the lease ends; the call runs. [`Claim::OtherTurn`]:
//!    the id is another turn's, and this call cannot be told apart from it (below): nothing
//!    runs. [`Claim::Seen`]: the key was seen before, and nothing runs:
//!    - answered ([`Remembered::Answered`]) with the same input: the remembered `tool_result` is
//!      the answer (a *replay*: observers see it with `replay: true`, counts leave it out);
//!    - still in progress ([`Remembered::InProgress`]): refused as in progress, an error the
//!      host waits on and retries (the first attempt's answer is then replayed);
//!    - interrupted ([`Remembered::Interrupted`]: the host dropped the call after its tool
//!      started, or the claim's lease ran out before an answer came, as when the worker running
//!      it died): answered with an error saying the call was interrupted and is not run again;
//!    - any of these with another input: refused as an id reused with another input.
//! 2. While the call runs: [`hold`](AnswerStore::hold) the claim, when the store
//!    [`renews`](AnswerStore::renews): the store renews its lease every third of it, by its own
//!    clock, until the [`Hold`] is dropped, so a lease can be short (seconds: how long a dead
//!    worker's calls wait) and a call still run as long as its deadlines allow. A store that
//!    does not renew is given a lease above the longest call instead (the dispatcher's
//!    `fixed_claim_lease`).
//! 3. When the call was answered: [`answered`](AnswerStore::answered) with the claim's token,
//!    its outcome and `tool_result`; a claim that no longer holds the call (its lease ran out
//!    and a retry took it over) is refused ([`StoreError::is_fenced`]), and the call's answer is
//!    the one the store holds. When it was not (a halt, a pause for a person):
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
pub(crate) mod lease;
pub(crate) mod memory;
#[cfg(feature = "inbox")]
mod memory_inbox;
mod memory_rows;
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
pub use error::{StoreError, StoreErrorKind};
pub use lease::{Hold, HoldStatus, Token, renew_every};
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

/// What a store found where a claim's (or a take's) token no longer holds its call: why it
/// refuses to record ([`fenced`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// The call is interrupted: the claim's lease ran out and a retry took it over.
    Interrupted,
    /// Another claim (take) holds it, or made it.
    OtherClaim,
    /// Another claim answered it (a turn: another resume resumed it).
    Answered,
    /// Nothing is kept under the key.
    Nothing,
}

/// The refusal of what a claim of `key` sent when the store found `found` instead.
pub(crate) fn fenced(key: CallKey<'_>, found: Found) -> StoreError {
    let holds = match found {
        Found::Interrupted => {
            "the store holds it as interrupted: this claim's lease ran out and a retry took the \
             call over"
        }
        Found::OtherClaim => "another claim holds it",
        Found::Answered => "another claim answered it",
        Found::Nothing => "the store keeps no claim of it",
    };
    let mut what = format!("tool_use {:?}", key.tool_use_id);
    if !key.turn.is_empty() {
        what.push_str(&format!(" of turn {:?}", key.turn));
    }
    StoreError::fenced(format!(
        "{what} of session {:?} is no longer held by this claim ({holds}), so its answer is not \
         recorded",
        key.session_id
    ))
}

/// The refusal of what a take of the paused turn `turn_id` of `session_id` sent when the store
/// found `found` instead.
pub(crate) fn fenced_take(session_id: &str, turn_id: &str, found: Found) -> StoreError {
    let holds = match found {
        Found::Interrupted | Found::OtherClaim => {
            "its lease ran out and another resume took the turn"
        }
        Found::Answered => "another resume resumed it",
        Found::Nothing => "the store keeps no take of it",
    };
    StoreError::fenced(format!(
        "the paused turn {turn_id:?} of session {session_id:?} is no longer held by this take \
         ({holds}), so its answer is not recorded"
    ))
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
    /// started, or the claim's lease ran out with no answer (its worker died, or could not
    /// renew it, or ran past a lease nothing renewed): it may have taken effect.
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
/// progress under the token it was made with. [`conformance::answer_store`] checks all of it.
///
/// # A store of your own
///
/// Implement [`claim`](Self::claim), [`answered`](Self::answered) and
/// [`release`](Self::release) (and [`abandon`](Self::abandon) where a store can release
/// without waiting). Keep each claim's [`Token`] with its row and act only on the claim that
/// holds it; refuse an answer whose token no longer holds the call with
/// [`StoreError::fenced`]. [`renews`](Self::renews) and [`hold`](Self::hold) are optional: by
/// default a store does not renew, and a session then claims with the dispatcher's
/// `fixed_claim_lease` (15 minutes by default), which must stay above your longest call (its
/// hooks', approver's and tool's deadlines together); a worker that dies then holds its calls
/// that long. A store that renews lets the short `claim_lease` (15 s by default) be the wait.
pub trait AnswerStore: Send + Sync {
    /// Atomically: when `key` is absent, record it as in progress with `digest` under `token`
    /// until `lease` from now (by the store's clock), and answer [`Claim::Claimed`]; when it
    /// is in progress and its lease has run out, record it as [`Remembered::Interrupted`] and
    /// answer that; otherwise change nothing and answer [`Claim::Seen`] with what is recorded.
    /// Which row is the key's, and when the answer is [`Claim::OtherTurn`] instead: "Turns" in
    /// the module docs. `token` is drawn for this claim ([`Token::draw`]); a database store
    /// that sends the claim again after a lost connection finds its own row by it and answers
    /// [`Claim::Claimed`].
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer: the call is then not run.
    fn claim<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        digest: InputDigest,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Claim, StoreError>>;

    /// The call of `key`, claimed with `token`, was answered with `result` (`outcome` says
    /// how): record it as [`Remembered::Answered`], keeping its digest. The same answer sent
    /// again with the same token (after a lost connection) is not an error.
    ///
    /// # Errors
    /// [`StoreError::fenced`] when the claim of `token` no longer holds the call: its lease
    /// ran out and another claim marked it interrupted (or holds it): what the store holds is
    /// left as it is, and that is the call's answer. Another [`StoreError`] when it cannot be
    /// recorded (the host still gets the answer).
    fn answered<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        outcome: Outcome,
        result: &'a ToolResult,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// The call of `key`, claimed with `token`, was not answered: forget it (a retry runs it),
    /// or, when `tool_started`, record it as [`Remembered::Interrupted`]. A key not in progress
    /// under `token` is left as it is.
    ///
    /// # Errors
    /// [`StoreError`] when it cannot be recorded: the claim then lapses with its lease, after
    /// which a retry is answered as interrupted (the call is never run twice).
    fn release<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        tool_started: bool,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// What [`release`](Self::release) does, for a call future the host dropped: synchronous
    /// and never blocking, since it runs in `Drop`. The default does nothing: the claim lapses
    /// with its lease (a retry within it is refused as in progress, after it answered as
    /// interrupted). An in-memory store releases at once; a database store may queue the
    /// write.
    fn abandon(&self, key: CallKey<'_>, token: Token, tool_started: bool) {
        let _ = (key, token, tool_started);
    }

    /// Whether this store renews a claim's lease while its call runs ([`hold`](Self::hold)).
    /// The default, `false`: this store does not renew, so a session claims with the
    /// dispatcher's `fixed_claim_lease`, which must stay above the longest call.
    fn renews(&self) -> bool {
        false
    }

    /// Keeps the claim of `key` made with `token` (for `lease`) alive until the returned
    /// [`Hold`] is dropped: the store renews its lease to `lease` from now, by its own clock,
    /// every third of it ([`renew_every`]), on a thread of its own (never on the caller's: a
    /// sync tool blocks it). A renewal that fails, or finds the claim taken over, ends the
    /// renewals ([`Hold::status`]). `None` (the default) when the store does not renew.
    fn hold(&self, key: CallKey<'_>, token: Token, lease: Duration) -> Option<Hold> {
        let _ = (key, token, lease);
        None
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
/// [`Session::resume_from`](crate::Session::resume_from) uses these steps. As with the answer
/// memory, a take carries a [`Token`], and a store that renews ([`renews`](Self::renews),
/// [`hold`](Self::hold)) keeps a take alive while its resume runs; by default it does not, and
/// a take holds for the dispatcher's `fixed_claim_lease`.
pub trait PendingStore: Send + Sync {
    /// Keeps `turn` under (`turn.session_id`, `turn.turn_id`). A turn already kept under that
    /// key (the same message paused again, by a retry) is left as it is, its `created_at`, and
    /// so its expiry, with it.
    ///
    /// # Errors
    /// [`StoreError`] when it cannot be kept.
    fn put<'a>(&'a self, turn: &'a PendingTurn) -> StoreFuture<'a, Result<(), StoreError>>;

    /// Takes the turn of (`session_id`, `turn_id`) to resume it, atomically: a waiting turn (or
    /// one whose take's lease has run out, by the store's clock) becomes this caller's, under
    /// `token`, until `lease` from now. A take sent again with the token of the take that holds
    /// the turn (after a lost connection) takes it again.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer: nothing is resumed.
    fn take<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        token: Token,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Taken, StoreError>>;

    /// The turn taken with `token` was resumed into `answer` (the
    /// [`Resumed`](crate::approval::Resumed) as JSON): kept, so a later take answers
    /// [`Taken::Resumed`]. The same sent again with the same token is not an error.
    ///
    /// # Errors
    /// [`StoreError::fenced`] when the take of `token` no longer holds the turn (its lease ran
    /// out and another resume took it): nothing changes. Another [`StoreError`] when it cannot
    /// be recorded. Either way the calls' answers are in the answer memory, so the resume that
    /// holds the turn replays them.
    fn resumed<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        token: Token,
        answer: &'a Value,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// The turn taken with `token` was not resumed (refused before anything ran, or a hook
    /// halted it): waiting again. A turn not taken under `token` is left as it is.
    ///
    /// # Errors
    /// [`StoreError`] when it cannot be recorded: the turn is taken again after the lease.
    fn put_back<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        token: Token,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// The turns of `session_id` still waiting (not taken, not resumed), oldest first.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer.
    fn waiting<'a>(
        &'a self,
        session_id: &'a str,
    ) -> StoreFuture<'a, Result<Vec<PendingTurn>, StoreError>>;

    /// Whether this store renews a take's lease while its resume runs ([`hold`](Self::hold)).
    /// The default, `false`: a session then takes with the dispatcher's `fixed_claim_lease`.
    fn renews(&self) -> bool {
        false
    }

    /// Keeps the take of (`session_id`, `turn_id`) made with `token` (for `lease`) alive until
    /// the returned [`Hold`] is dropped, as [`AnswerStore::hold`] does a claim. `None` (the
    /// default) when the store does not renew.
    fn hold(&self, session_id: &str, turn_id: &str, token: Token, lease: Duration) -> Option<Hold> {
        let _ = (session_id, turn_id, token, lease);
        None
    }
}
