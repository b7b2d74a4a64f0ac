//! [`Session`]: one conversation, one [`HookContext`]; answers assistant messages (each id
//! checked, each answer remembered so a retry runs nothing twice) and ends with the Stop hooks
//! and a [`SessionSummary`].

#[cfg(feature = "inbox")]
mod inbox;
pub(crate) mod reply;
pub(crate) mod respond;
pub(crate) mod resume;
#[cfg(any(feature = "openai", feature = "gemini"))]
pub(crate) mod turns;

use std::fmt;
use std::hash::RandomState;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::audit::outcome::{Outcome, SessionSummary};
use crate::base::panic::catch;
use crate::content::message::{ToolResult, ToolUse};
use crate::content::usage::Usage;
use crate::error::CallError;
use crate::hook::answer::CallAnswer;
use crate::hook::context::HookContext;
use crate::hook::state::Env;
use crate::pipeline::inner::Inner;
use crate::pipeline::normalize::{Normalized, normalize};
use crate::pipeline::order::Slot;
use crate::pipeline::stats::{Stats, report_observer_error};
use crate::pipeline::{Kept, Memory, Mode, Progress};
use crate::store::digest::InputDigest;
use crate::store::error::StoreError;
use crate::store::memory::MemoryAnswerStore;
use crate::store::{
    AnswerStore, CallKey, Claim, Hold, PendingStore, Remembered, StoreFuture, Token,
};
use crate::texts;

/// One conversation: every `tool_use` of it goes through [`call`](Self::call) or
/// [`respond`](Self::respond), with one trusted [`HookContext`].
///
/// The Stop hooks run exactly once: at [`end`](Self::end), or when the session is dropped
/// unended. (When it is dropped during a panic they are skipped, since running them could abort
/// the process; `tracing` says so.) Failing closed needs `panic = "unwind"` (the default): with
/// `panic = "abort"` a panicking hook ends the process instead of halting the agent.
pub struct Session {
    inner: Arc<Inner>,
    context: HookContext,
    stats: Stats,
    store: Store,
    /// Where a paused turn is kept when `respond` pauses it (`None`: the host keeps the
    /// [`PendingTurn`](crate::approval::PendingTurn) value itself).
    turns: Option<Arc<dyn PendingStore>>,
    started_at: SystemTime,
    /// What the host added with `add_usage` (not on the per-call path).
    usage: Mutex<Usage>,
    summary: OnceLock<SessionSummary>,
}

/// The session's answer memory: the default in-memory store (called directly, its inputs
/// remembered by a keyed hash, [`InputDigest::keyed`]: its keys never leave the session, and
/// its claims are never renewed: nothing outside the session can find them), or the host's
/// (given the documented SHA-256 [`InputDigest::of`]), and whether that one renews its claims.
enum Store {
    Memory(MemoryAnswerStore, RandomState),
    Host(Arc<dyn AnswerStore>, bool),
}

impl Store {
    /// What the store remembers `input` by.
    fn digest(&self, input: &Value, max_depth: usize) -> InputDigest {
        match self {
            Store::Memory(_, keys) => InputDigest::keyed(input, max_depth, keys),
            Store::Host(..) => InputDigest::of(input, max_depth),
        }
    }

    /// The lease a claim is made with: the renewed one where the store renews, else the fixed
    /// one, above the longest call.
    fn lease(&self, inner: &Inner) -> Duration {
        match self {
            Store::Host(_, true) => inner.claim_lease,
            _ => inner.fixed_claim_lease,
        }
    }

    fn claim<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        digest: InputDigest,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Claim, StoreError>> {
        match self {
            Store::Memory(m, _) => m.claim(key, token, digest, lease),
            Store::Host(h, _) => h.claim(key, token, digest, lease),
        }
    }

    /// The claim kept alive while its call runs, where the store renews.
    fn hold(&self, key: CallKey<'_>, token: Token, lease: Duration) -> Option<Hold> {
        match self {
            Store::Host(h, true) => h.hold(key, token, lease),
            _ => None,
        }
    }

    fn release<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        tool_started: bool,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        match self {
            Store::Memory(m, _) => m.release(key, token, tool_started),
            Store::Host(h, _) => h.release(key, token, tool_started),
        }
    }

    fn abandon(&self, key: CallKey<'_>, token: Token, tool_started: bool) {
        match self {
            Store::Memory(m, _) => m.abandon(key, token, tool_started),
            Store::Host(h, _) => h.abandon(key, token, tool_started),
        }
    }

    /// The store, for the pipeline to record an answer in.
    fn as_dyn(&self) -> &dyn AnswerStore {
        match self {
            Store::Memory(m, _) => m,
            Store::Host(h, _) => &**h,
        }
    }
}

/// The turn a call came from, as the answer memory tells a resend of a call from a later
/// turn's call that reuses its `tool_use` id (ARCHITECTURE.md, "Contracts": "Ids and retries").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TurnName<'a> {
    /// [`Session::call`], or a paused turn that had no response id, resumed: the `tool_use` id
    /// alone names the call, so an id seen before is a retry, answered from memory.
    ById,
    /// A whole turn whose model response came without its id: an id this session saw before
    /// may be a resend or a later turn's reuse, which nothing tells apart, so it is refused
    /// ([`CallError::IdRecycled`]) rather than answered with another turn's result.
    Unnamed,
    /// A whole turn named by its model response's id (`msg_…`, `chatcmpl-…`, `resp_…`, or
    /// `gemini-{turn}`): a resend carries the same.
    Named(&'a str),
}

impl<'a> TurnName<'a> {
    /// The turn as the answer memory's key holds it ([`CallKey::turn`]): `""` for none.
    pub(crate) fn key(self) -> &'a str {
        match self {
            TurnName::Named(turn) => turn,
            TurnName::ById | TurnName::Unnamed => "",
        }
    }

    /// The whole turn of a response whose id is `id` (`None`, or `""`: none).
    pub(crate) fn of_response(id: Option<&'a str>) -> Self {
        match id {
            Some(id) if !id.is_empty() => TurnName::Named(id),
            _ => TurnName::Unnamed,
        }
    }
}

impl Session {
    /// A session on `inner` (what [`Dispatcher::session`](crate::Dispatcher::session) and
    /// [`Dispatcher::session_with_store`](crate::Dispatcher::session_with_store) open): its
    /// answers remembered in `store`, or, with none, in a [`MemoryAnswerStore`] of its own with
    /// the default caps, each input by a hash keyed at random for this session.
    pub(crate) fn new(
        inner: Arc<Inner>,
        context: HookContext,
        store: Option<Arc<dyn AnswerStore>>,
    ) -> Self {
        let stats = Stats::new(inner.tools.len());
        let started_at = context.now();
        let store = match store {
            Some(host) => {
                let renews = host.renews();
                Store::Host(host, renews)
            }
            None => Store::Memory(MemoryAnswerStore::new(), RandomState::new()),
        };
        Session {
            inner,
            context,
            stats,
            store,
            turns: None,
            started_at,
            usage: Mutex::new(Usage::default()),
            summary: OnceLock::new(),
        }
    }

    /// The session, keeping the turns it pauses in `store`: when a whole-turn entry point
    /// ([`respond`](Self::respond), and the OpenAI and Gemini ones) pauses a turn for a person,
    /// the session [`put`](PendingStore::put)s it into `store` before it answers
    /// [`Reply::Pending`](crate::Reply::Pending) (one atomic step that never overwrites a turn
    /// already kept under its session id and turn id, so a retried message that pauses again
    /// changes nothing), and any session of the same conversation, in this process or another
    /// one sharing the store, finishes it with [`resume_from`](Self::resume_from). The host
    /// still gets the [`PendingTurn`](crate::approval::PendingTurn) in the reply, to show it.
    ///
    /// [`Dispatcher::session_on`](crate::Dispatcher::session_on) opens a session whose answer
    /// memory and paused turns are one store (SQLite, PostgreSQL); this method gives a session a
    /// store of paused turns of its own, such as a
    /// [`MemoryPendingStore`](crate::store::MemoryPendingStore) that every session of one
    /// process shares.
    pub fn with_pending_store(mut self, store: Arc<dyn PendingStore>) -> Self {
        self.turns = Some(store);
        self
    }

    /// The session's trusted context.
    pub fn context(&self) -> &HookContext {
        &self.context
    }

    /// Runs one `tool_use` block through the pipeline and returns its `tool_result` (with
    /// `is_error: true` for every failure the model can act on: `blocked`, `invalid_input`,
    /// `unknown_tool`, `tool_error`, `panicked`, `tool_timeout`).
    ///
    /// An id this session answered before is answered again from its memory, with the same
    /// input: nothing runs (no hook, no tool), and observers see the answer with
    /// `replay: true`. A call whose first attempt was cancelled after its tool started is
    /// answered with an `is_error` result saying it is not run again. `call` serves every API
    /// (MCP request ids, OpenAI call ids), so the only id it refuses is an empty one.
    ///
    /// A call has no turn here: its id alone names it, so a caller whose model server numbers
    /// each turn's calls (`functions.get_time:0` in every turn) passes whole turns instead
    /// ([`respond_openai_choice`](Self::respond_openai_choice) with the completion, …), whose
    /// response id keeps the turns apart (ARCHITECTURE.md, "Contracts": "Ids and retries").
    ///
    /// Dropping the future before it finishes records the call as `cancelled`.
    ///
    /// # Errors
    /// - [`CallError::Halt`] when a PreToolUse hook errored, panicked or timed out, or the chain
    ///   kept rewriting: the tool did not run, and the halt's answer holds a `BLOCKED:` result for
    ///   this id;
    /// - [`CallError::EmptyId`] for an empty id (audited as `not_run`);
    /// - [`CallError::InProgress`] while an earlier attempt with this id runs;
    /// - [`CallError::IdReused`] when this id was seen with another input;
    /// - [`CallError::IdRecycled`] when a whole turn of this session (which has a turn) used this
    ///   id: nothing tells whether this is the same call;
    /// - [`CallError::Store`] when the session's [`AnswerStore`] failed.
    pub async fn call(&self, call: &ToolUse) -> Result<ToolResult, CallError> {
        self.call_answer(call).await.map(|answer| answer.result)
    }

    /// [`call`](Self::call) with the whole [`CallAnswer`] (outcome, the hook at fault, the
    /// operator detail; a replay from memory has its remembered outcome and a detail saying
    /// so): what the tower service answers.
    pub(crate) async fn call_answer(&self, call: &ToolUse) -> Result<CallAnswer, CallError> {
        if call.id.is_empty() {
            // Boxed: a rare path, whose state would otherwise be in every call's future.
            Box::pin(self.not_run_all(&[call], texts::NOT_RUN_EMPTY_ID)).await;
            return Err(CallError::EmptyId);
        }
        // An id checked: claimed in the memory first, so a retry, even a concurrent one, never
        // runs it twice.
        self.remembered_call_in(call, TurnName::ById, Mode::Block, None)
            .await
    }

    /// [`call`](Self::call) of a call of `turn`, its id checked, in a [`Mode`]. A call
    /// that pauses (`awaiting_approval`) is not an answer: the memory forgets its claim, so a
    /// retry of the message asks again (nothing ran) and its resumed answer is the one
    /// remembered.
    ///
    /// `slot`: the block's place among the reads of its message run together (`pipeline/order.rs`).
    ///
    /// A function returning an `async` block rather than an `async fn`: an `async fn` keeps each
    /// argument twice in its future (as the argument, and as the local it is moved into).
    #[allow(clippy::manual_async_fn)] // the `async` block is the point: see above
    pub(crate) fn remembered_call_in(
        &self,
        call: &ToolUse,
        turn: TurnName<'_>,
        mode: Mode<'_, '_>,
        slot: Option<Slot<'_>>,
    ) -> impl Future<Output = Result<CallAnswer, CallError>> {
        async move {
            let inner = &self.inner;
            // An input that is not an object (another API's arguments as a JSON string, `null`)
            // is normalized here, once: the memory then remembers the call by the input it
            // stands for (a paused call, resumed from its normalized input, is the same call as
            // its retry), and the pipeline reads the object without parsing it again. One the
            // pipeline will refuse is remembered as sent.
            let normalized = match &call.input {
                Value::Object(_) => None,
                _ => match normalize(call, &inner.limits) {
                    Ok(Normalized::Owned(n)) => Some(n),
                    _ => None,
                },
            };
            let call = normalized.as_deref().unwrap_or(call);
            let digest = self.store.digest(&call.input, inner.limits.max_input_depth);
            let key = CallKey::in_turn(self.context.session_id(), turn.key(), &call.id);
            let token = Token::draw();
            let claimed = self
                .store
                .claim(key, token, digest, self.store.lease(inner));
            if let Some(seen) = remembered_or_refused(claimed.await, key, turn)? {
                // Boxed: a replay is rare, and its state would otherwise enlarge every call's
                // future (moved, whole, at each `.await`).
                return Box::pin(self.seen(call, digest, seen, slot)).await;
            }
            // Renewed by the store while the call runs (dropped last: after the release below).
            let hold = self.store.hold(key, token, self.store.lease(inner));
            let memory = Memory {
                store: self.store.as_dyn(),
                key,
                token,
                hold: hold.as_ref(),
            };
            let progress = Progress::new(slot, Some(memory));
            let mut claimed = Claimed {
                store: &self.store,
                key,
                token,
                progress: &progress,
                armed: true,
            };
            let answer = inner
                .run_call_in(
                    &self.context,
                    Some(&self.stats),
                    call,
                    Some(&progress),
                    mode,
                )
                .await;
            let recorded = progress.recorded();
            match (&answer, recorded) {
                // Remembered by the pipeline before its observers saw the record; or refused, the
                // store holding the call as interrupted (its answer, given instead).
                (Ok(_), Kept::Yes | Kept::Fenced) => claimed.armed = false,
                // A halt (not answered: a retry runs it, or, if a wrapped caller's tool had
                // started, it is interrupted); paused for a person (not an answer; its tool did not
                // start), or an answer the store could not keep (the audit line says so): released,
                // interrupted if its tool started, when the store can still record that. One
                // `.await` for all of them: the answer is then held across one suspension point,
                // and shares its bytes in the future with the pipeline's.
                _ => claimed.release().await,
            }
            count_hold(inner, hold.as_ref(), recorded == Kept::Fenced);
            answer.map_err(CallError::Halt)
        }
    }

    /// Answers an id the memory has seen: a replay of its answer, or a refusal.
    async fn seen(
        &self,
        call: &ToolUse,
        digest: InputDigest,
        seen: Remembered,
        slot: Option<Slot<'_>>,
    ) -> Result<CallAnswer, CallError> {
        let tool_use_id = || call.id.clone();
        if seen.digest() != digest {
            return Err(CallError::IdReused {
                tool_use_id: tool_use_id(),
            });
        }
        let (outcome, mut result, detail) = match seen {
            Remembered::InProgress { .. } => {
                return Err(CallError::InProgress {
                    tool_use_id: tool_use_id(),
                });
            }
            Remembered::Answered {
                outcome, result, ..
            } => (
                outcome,
                result,
                "replayed from the session's memory: this tool_use id was answered before, so \
                 nothing ran again",
            ),
            Remembered::Interrupted { .. } => (
                Outcome::NotRun,
                ToolResult::error(tool_use_id(), texts::NOT_RUN_AGAIN),
                "the first attempt at this tool_use was interrupted (the host dropped it while its \
                 tool ran, or its claim's lease ran out with no answer: its worker died), so it \
                 is not run again",
            ),
        };
        if result.tool_use_id != call.id {
            result.tool_use_id = tool_use_id();
        }
        if let Some(slot) = &slot {
            slot.release();
            slot.turn_to_observe().await;
        }
        self.inner
            .replay(
                &self.context,
                Some(&self.stats),
                call,
                outcome,
                &result,
                detail,
            )
            .await;
        if let Some(slot) = &slot {
            slot.observed();
        }
        Ok(CallAnswer::new(result, outcome).with_detail(detail))
    }

    /// Adds the tokens of one model response (for the Messages API,
    /// [`Usage::of_response`]) to the session's [`SessionSummary::usage`], which the Stop hooks
    /// and the audit log's summary line receive. Call it once per response, a response cut at
    /// `max_tokens` or refused included (it is billed); after [`end`](Self::end) it changes
    /// nothing the summary already said.
    pub fn add_usage(&self, usage: Usage) {
        *self.usage.lock().unwrap_or_else(PoisonError::into_inner) += usage;
    }

    /// The counts so far, without ending the session.
    pub fn summary_so_far(&self) -> SessionSummary {
        self.snapshot(self.context.now())
    }

    fn snapshot(&self, ended_at: SystemTime) -> SessionSummary {
        let inner = &self.inner;
        let outcomes = Outcome::ALL
            .iter()
            .zip(self.stats.outcomes.iter())
            .filter_map(|(o, n)| {
                let n = n.load(Ordering::Relaxed);
                (n > 0).then_some((*o, n))
            })
            .fold(Default::default(), crate::pipeline::stats::counted);
        let tools = inner
            .tools
            .iter()
            .zip(self.stats.tools.iter())
            .filter_map(|(t, n)| {
                let n = n.load(Ordering::Relaxed);
                (n > 0).then(|| (t.name.to_string(), n))
            })
            .fold(Default::default(), crate::pipeline::stats::counted);
        SessionSummary {
            session_id: self.context.session_id().to_owned(),
            user_id: self.context.user_id().to_owned(),
            started_at: self.started_at,
            ended_at,
            calls: self.stats.calls(),
            outcomes,
            tools,
            observer_errors: self.stats.observer_errors.load(Ordering::Relaxed),
            usage: *self.usage.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// Ends the session: runs the Stop hooks once, in path order (the audit log's summary line
    /// last, so it counts the others' errors), and returns the final summary. Calling it again,
    /// or dropping the session afterwards, runs nothing more and returns the same summary.
    pub fn end(&self) -> SessionSummary {
        self.summary.get_or_init(|| self.run_stop_hooks()).clone()
    }

    fn run_stop_hooks(&self) -> SessionSummary {
        let inner = &self.inner;
        let env = Env::new(&self.context, &inner.states);
        let mut summary = self.snapshot(self.context.now());
        for hook in &inner.stop_hooks {
            summary.observer_errors = self.stats.observer_errors.load(Ordering::Relaxed);
            let failure = match catch(|| (hook.imp)(env, &summary)) {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(p) => Some(format!("panicked: {p}")),
            };
            if let Some(error) = failure {
                report_observer_error(Some(&self.stats), &hook.path, "stop", &error);
            }
        }
        summary.observer_errors = self.stats.observer_errors.load(Ordering::Relaxed);
        summary
    }
}

/// What the memory's answer to the claim of `key`, a call of `turn`, leaves to do: `None` when
/// the call was claimed (it runs now), what the memory remembers of it when that answers it (a
/// replay, or a refusal by [`Session::seen`]), or why it is refused at once.
fn remembered_or_refused(
    claimed: Result<Claim, StoreError>,
    key: CallKey<'_>,
    turn: TurnName<'_>,
) -> Result<Option<Remembered>, CallError> {
    let tool_use_id = || key.tool_use_id.to_owned();
    match claimed {
        Ok(Claim::Claimed) => Ok(None),
        // A turn without its response's id: whether this is a resend or a later turn reusing
        // the id, nothing tells.
        Ok(Claim::Seen(_)) if turn == TurnName::Unnamed => Err(CallError::IdRecycled {
            tool_use_id: tool_use_id(),
        }),
        Ok(Claim::Seen(seen)) => Ok(Some(seen)),
        Ok(Claim::OtherTurn { in_progress: true }) => Err(CallError::InProgress {
            tool_use_id: tool_use_id(),
        }),
        Ok(_) => Err(CallError::IdRecycled {
            tool_use_id: tool_use_id(),
        }),
        Err(error) => Err(CallError::Store {
            tool_use_id: tool_use_id(),
            error,
        }),
    }
}

/// Counts, in the dispatcher's lease stats, how the claim `hold` kept while its call ran ended
/// (nothing where the store does not renew), its answer `fenced` or not.
#[inline]
pub(crate) fn count_hold(inner: &Inner, hold: Option<&Hold>, fenced: bool) {
    match hold {
        Some(hold) => inner.leases.record(&hold.status(), fenced),
        None if fenced => inner.leases.fenced(),
        None => {}
    }
}

/// A claimed call not yet answered. Released (forgotten, so a retry runs it, or interrupted
/// when its tool had started) on every path the session controls; dropped while armed (the host
/// dropped the call future), it is abandoned, the store's synchronous best effort.
struct Claimed<'a> {
    store: &'a Store,
    key: CallKey<'a>,
    token: Token,
    progress: &'a Progress<'a>,
    armed: bool,
}

impl Claimed<'_> {
    /// The call was not answered: the store forgets it, or keeps it as interrupted. A store
    /// that fails here leaves the claim to lapse with its lease (a retry is then answered as
    /// interrupted: never run twice).
    async fn release(&mut self) {
        self.armed = false;
        let started = self.progress.tool_started();
        if let Err(e) = self.store.release(self.key, self.token, started).await {
            tracing::error!(target: "toolgate::memory", tool_use_id = %self.key.tool_use_id,
                error = %e, "the claim could not be released; it lapses with its lease");
        }
    }
}

impl Drop for Claimed<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.store
                .abandon(self.key, self.token, self.progress.tool_started());
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.summary.get().is_some() {
            return;
        }
        if std::thread::panicking() {
            tracing::error!(target: "toolgate::observer", session_id = self.context.session_id(),
                "session dropped during a panic; Stop hooks skipped");
            return;
        }
        self.end();
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("context", &self.context)
            .field("ended", &self.summary.get().is_some())
            .finish_non_exhaustive()
    }
}
