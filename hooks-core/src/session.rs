//! [`Session`]: one conversation, one [`HookContext`]; answers assistant messages (each id
//! checked, each answer remembered so a retry runs nothing twice) and ends with the Stop hooks
//! and a [`SessionSummary`].

use std::fmt;
use std::hash::RandomState;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::SystemTime;

use serde_json::Value;

use crate::answer::CallAnswer;
use crate::content::{ContentBlock, Message, Role, ToolResult, ToolUse};
use crate::context::HookContext;
use crate::dispatcher::Dispatcher;
use crate::error::{CallError, Halt, RespondError};
use crate::ids;
use crate::memory::{AnswerStore, Claim, InputDigest, MemoryAnswerStore, Remembered, StoreFuture};
use crate::outcome::{Outcome, SessionSummary};
use crate::panic::catch;
use crate::pending::{PENDING_TURN_FORMAT, PendingBlock, PendingTurn};
use crate::pipeline::{Mode, Progress, Resolution};
use crate::reads::{ReadOutcome, Slot, TurnOrder};
use crate::reply::Reply;
use crate::state::Env;
use crate::stats::{Stats, report_observer_error};
use crate::texts;
use crate::usage::Usage;

/// One conversation: every `tool_use` of it goes through [`call`](Self::call) or
/// [`respond`](Self::respond), with one trusted [`HookContext`].
///
/// The Stop hooks run exactly once: at [`end`](Self::end), or when the session is dropped
/// unended. (When it is dropped during a panic they are skipped, since running them could abort
/// the process; `tracing` says so.) Failing closed needs `panic = "unwind"` (the default): with
/// `panic = "abort"` a panicking hook ends the process instead of halting the agent.
pub struct Session {
    dispatcher: Dispatcher,
    context: HookContext,
    stats: Stats,
    store: Store,
    started_at: SystemTime,
    /// What the host added with `add_usage` (not on the per-call path).
    usage: Mutex<Usage>,
    summary: OnceLock<SessionSummary>,
}

/// The session's answer memory: the default in-memory store (called directly, its inputs
/// remembered by a keyed hash, [`InputDigest::keyed`]: its keys never leave the session), or the
/// host's (given the documented SHA-256 [`InputDigest::of`]).
enum Store {
    Memory(MemoryAnswerStore, RandomState),
    Host(Arc<dyn AnswerStore>),
}

impl Store {
    /// What the store remembers `input` by.
    fn digest(&self, input: &Value, max_depth: usize) -> InputDigest {
        match self {
            Store::Memory(_, keys) => InputDigest::keyed(input, max_depth, keys),
            Store::Host(_) => InputDigest::of(input, max_depth),
        }
    }

    fn claim<'a>(
        &'a self,
        id: &'a str,
        digest: InputDigest,
    ) -> StoreFuture<'a, Result<Claim, crate::memory::StoreError>> {
        match self {
            Store::Memory(m, _) => m.claim(id, digest),
            Store::Host(h) => h.claim(id, digest),
        }
    }

    fn answered(
        &self,
        outcome: Outcome,
        result: ToolResult,
    ) -> StoreFuture<'_, Result<(), crate::memory::StoreError>> {
        match self {
            Store::Memory(m, _) => m.answered(outcome, result),
            Store::Host(h) => h.answered(outcome, result),
        }
    }

    fn release(&self, id: &str, tool_started: bool) {
        match self {
            Store::Memory(m, _) => m.release(id, tool_started),
            Store::Host(h) => h.release(id, tool_started),
        }
    }
}

impl Dispatcher {
    /// Opens a session (one conversation) with the host's trusted `context`. It remembers the
    /// `tool_use` ids it answers in a [`MemoryAnswerStore`] with the default caps, each input by
    /// a hash keyed at random for this session (SipHash-1-3 of the input's structure; equal
    /// JSON texts, equal keys), cheaper than the SHA-256 [`InputDigest`] a host's store is
    /// given: these keys never leave the session, so they need not be stable.
    pub fn session(&self, context: HookContext) -> Session {
        Session::new(
            self.clone(),
            context,
            Store::Memory(MemoryAnswerStore::new(), RandomState::new()),
        )
    }

    /// Opens a session that remembers the `tool_use` ids it answers in `store`: the host's
    /// database, so a conversation served by several processes still runs nothing twice, or a
    /// [`MemoryAnswerStore`] with other caps. Give each conversation its own store (or key it
    /// by the session id): `tool_use` ids are unique within a conversation only.
    pub fn session_with_store(&self, context: HookContext, store: Arc<dyn AnswerStore>) -> Session {
        Session::new(self.clone(), context, Store::Host(store))
    }
}

impl Session {
    fn new(dispatcher: Dispatcher, context: HookContext, store: Store) -> Self {
        let stats = Stats::new(dispatcher.inner.tools.len());
        let started_at = context.now();
        Session {
            dispatcher,
            context,
            stats,
            store,
            started_at,
            usage: Mutex::new(Usage::default()),
            summary: OnceLock::new(),
        }
    }

    /// The session's trusted context.
    pub fn context(&self) -> &HookContext {
        &self.context
    }

    /// The dispatcher the session runs on.
    pub fn dispatcher(&self) -> &Dispatcher {
        &self.dispatcher
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
    /// Dropping the future before it finishes records the call as `cancelled`.
    ///
    /// # Errors
    /// - [`CallError::Halt`] when a PreToolUse hook errored, panicked or timed out, or the chain
    ///   kept rewriting: the tool did not run, and the halt's answer holds a `BLOCKED:` result for this id;
    /// - [`CallError::EmptyId`] for an empty id (audited as `not_run`);
    /// - [`CallError::InProgress`] while an earlier attempt with this id runs;
    /// - [`CallError::IdReused`] when this id was seen with another input;
    /// - [`CallError::Store`] when the session's [`AnswerStore`] failed.
    pub async fn call(&self, call: &ToolUse) -> Result<ToolResult, CallError> {
        self.call_answer(call).await.map(|answer| answer.result)
    }

    /// [`call`](Self::call) with the whole [`CallAnswer`] (outcome, the hook at fault, the
    /// operator detail; a replay from memory has its remembered outcome and a detail saying
    /// so): what the tower service answers.
    pub(crate) async fn call_answer(&self, call: &ToolUse) -> Result<CallAnswer, CallError> {
        if call.id.is_empty() {
            self.not_run_all(&[call], texts::NOT_RUN_EMPTY_ID).await;
            return Err(CallError::EmptyId);
        }
        self.remembered_call(call).await
    }

    /// [`call`](Self::call) for an id already checked: claimed in the memory first, so a
    /// retry, even a concurrent one, never runs it twice.
    async fn remembered_call(&self, call: &ToolUse) -> Result<CallAnswer, CallError> {
        self.remembered_call_in(call, Mode::Block, None).await
    }

    /// [`remembered_call`](Self::remembered_call) in a [`Mode`]. A call that pauses
    /// (`awaiting_approval`) is not an answer: the memory forgets its claim, so a retry of the
    /// message asks again (nothing ran) and its resumed answer is the one remembered.
    ///
    /// `slot`: the block's place among the reads of its message run together (`reads.rs`).
    pub(crate) async fn remembered_call_in(
        &self,
        call: &ToolUse,
        mode: Mode<'_, '_>,
        slot: Option<Slot<'_>>,
    ) -> Result<CallAnswer, CallError> {
        let inner = &self.dispatcher.inner;
        let digest = self.store.digest(&call.input, inner.limits.max_input_depth);
        match self.store.claim(&call.id, digest).await {
            Ok(Claim::Claimed) => {}
            Ok(Claim::Seen(seen)) => return self.seen(call, digest, seen, slot).await,
            Err(error) => {
                return Err(CallError::Store {
                    tool_use_id: call.id.clone(),
                    error,
                });
            }
        }
        let progress = Progress::new(slot);
        let mut claimed = Claimed {
            store: &self.store,
            id: &call.id,
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
        let answer = answer?; // a halt: `claimed` releases the id, so a retry runs it
        let outcome = progress.outcome().unwrap_or(Outcome::Ok);
        if !outcome.is_final() {
            return Ok(answer); // paused: `claimed` releases it (its tool did not start)
        }
        if let Err(e) = self.store.answered(outcome, answer.result.clone()).await {
            tracing::error!(target: "toolgate::memory", tool_use_id = %call.id, error = %e,
                "the answer could not be remembered; a retry of this call will not run it again");
            return Ok(answer); // `claimed` releases it (as cancelled, if the tool started)
        }
        claimed.armed = false;
        Ok(answer)
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
            Remembered::CancelledAfterStart { .. } => (
                Outcome::NotRun,
                ToolResult::error(tool_use_id(), texts::NOT_RUN_AGAIN),
                "the first attempt at this tool_use was cancelled while its tool ran, so it is \
                 not run again",
            ),
        };
        if result.tool_use_id != call.id {
            result.tool_use_id = tool_use_id();
        }
        if let Some(slot) = &slot {
            slot.release();
            slot.turn_to_observe().await;
        }
        self.dispatcher
            .inner
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

    /// Answers an assistant message: its `tool_use` blocks run in order, each independent of the
    /// others, and the answer is [`Reply::Answer`] with one user message
    /// `{"role": "user", "content": [tool_result, …]}` holding one `tool_result` per `tool_use`,
    /// in the same order (Messages API, "Parallel tool use": all results in the next user
    /// message, `tool_result` blocks first).
    ///
    /// A message without `tool_use` blocks (`end_turn`, `stop_sequence`, `refusal`,
    /// `pause_turn`, or `max_tokens` on a text) gets [`Reply::NothingToRun`] with its
    /// `stop_reason`: nothing runs, and nothing is audited. Every id must match the Messages
    /// API's pattern `^[a-zA-Z0-9_-]+$` and be unique in the message; a block whose id this
    /// session answered before is answered from memory (see [`call`](Self::call)), so a host
    /// retrying a message runs nothing twice.
    ///
    /// Consecutive blocks whose tools are declared read-only run concurrently, at most
    /// [`max_concurrent_reads`](crate::DispatcherBuilder::max_concurrent_reads) at once (default
    /// 8), polled together by this future (no runtime needed; a host's runtime drives it the
    /// same way): their async tools' waits overlap, so four lookups of 20 ms take about 20 ms.
    /// What a sequential run promises still holds: PreToolUse chains run one at a time in
    /// `tool_use` order (a read's chain after the block before it started its tool), any other
    /// block starts only after every earlier one finished (a spending limit sees the refund just
    /// made), results, observers and audit lines follow `tool_use` order, and a halt leaves the
    /// sequential run's answers ([`Halt::ran_after`] names any later block that had already
    /// started: possible only when a wrapped caller halts after its tool started).
    ///
    /// # Errors
    /// - [`RespondError::MaxTokens`] when `stop_reason` is `max_tokens`: nothing runs (the last
    ///   block may be cut off) and every block is audited as `not_run`;
    /// - [`RespondError::Id`] when an id is empty, breaks the pattern or repeats: nothing runs
    ///   and every block is audited as `not_run`, with the reason;
    /// - [`RespondError::Halt`] when a PreToolUse hook failed: later blocks are not run, and the
    ///   halt's answer covers every block (`BLOCKED:` for the failed one, `Not run:` after it);
    /// - [`RespondError::InProgress`], [`RespondError::IdReused`], [`RespondError::Store`] for a
    ///   block the memory refuses (see [`CallError`]): the blocks before it were answered and
    ///   are remembered, the rest are not started; retry the message;
    /// - [`RespondError::NotAssistant`] for a user message.
    pub async fn respond(&self, message: &Message) -> Result<Reply, RespondError> {
        if message.role != Role::Assistant {
            return Err(RespondError::NotAssistant);
        }
        let uses: Vec<&ToolUse> = message.tool_uses().collect();
        if uses.is_empty() {
            return Ok(Reply::NothingToRun {
                stop_reason: message.stop_reason.clone(),
            });
        }
        if message.stop_reason.as_deref() == Some("max_tokens") {
            self.not_run_all(&uses, texts::NOT_RUN_AT_MAX_TOKENS).await;
            return Err(RespondError::MaxTokens {
                tool_uses: uses.len(),
            });
        }
        let blocks = self.run_turn_in(&uses, true, true).await?;
        if blocks
            .iter()
            .any(|b| matches!(b, PendingBlock::AwaitingApproval(_)))
        {
            return Ok(Reply::Pending(PendingTurn {
                format: PENDING_TURN_FORMAT,
                session_id: self.context.session_id().to_owned(),
                user_id: self.context.user_id().to_owned(),
                fingerprint: self.dispatcher.fingerprint(),
                created_at: self.context.now(),
                blocks,
            }));
        }
        let content = blocks
            .into_iter()
            .map(|b| ContentBlock::ToolResult(b.into_result()))
            .collect();
        Ok(Reply::Answer(Message::user(content)))
    }

    /// Runs the calls of one message or turn in order, after checking their ids (the Messages
    /// API's pattern when `pattern` holds): one result per call, or why not. A call that needs
    /// approval is blocked when the dispatcher has no approver (the other APIs' whole turns do
    /// not pause).
    #[cfg(any(feature = "openai", feature = "gemini"))]
    pub(crate) async fn run_turn(
        &self,
        uses: &[&ToolUse],
        pattern: bool,
    ) -> Result<Vec<ToolResult>, RespondError> {
        let blocks = self.run_turn_in(uses, pattern, false).await?;
        Ok(blocks.into_iter().map(PendingBlock::into_result).collect())
    }

    /// [`run_turn`](Self::run_turn); with `may_pause`, a call that needs approval when the
    /// dispatcher has no approver pauses (`PendingBlock::AwaitingApproval`).
    async fn run_turn_in(
        &self,
        uses: &[&ToolUse],
        pattern: bool,
        may_pause: bool,
    ) -> Result<Vec<PendingBlock>, RespondError> {
        if let Err(e) = ids::check(uses, pattern) {
            Box::pin(self.not_run_all(uses, &format!("{e}."))).await;
            return Err(RespondError::Id(e));
        }
        let max = self.dispatcher.inner.max_concurrent_reads;
        // Dropped unfinished, the blocks not yet started are audited as `cancelled` too (the
        // ones in flight record themselves), so every block keeps exactly one line.
        let pending = Unstarted {
            session: self,
            uses,
            order: TurnOrder::default(),
        };
        let mut results = Vec::with_capacity(uses.len());
        let mut i = 0;
        while i < uses.len() {
            // Consecutive read-only blocks run together (`reads.rs`); any other block runs
            // alone, after every block before it finished.
            let mut end = i + 1;
            if max > 1 && self.is_read(&uses[i].name) {
                while end < uses.len() && self.is_read(&uses[end].name) {
                    end += 1;
                }
            }
            let (one, many) = if end - i > 1 {
                let outcomes = self
                    .run_reads(uses, i..end, &pending.order, max, may_pause)
                    .await;
                (None, outcomes)
            } else {
                pending.order.started.store(i + 1, Ordering::SeqCst);
                let mut paused = None;
                let mode = if may_pause {
                    Mode::Pause(&mut paused)
                } else {
                    Mode::Block
                };
                let answer = self.remembered_call_in(uses[i], mode, None).await;
                (Some(Some(answer.map(|a| (a, paused)))), Vec::new())
            };
            let mut outcomes = one.into_iter().chain(many);
            for j in i..end {
                let Some(Some(answer)) = outcomes.next() else {
                    // Not started: only after a halt or a refusal, handled below.
                    break;
                };
                let halt = match answer {
                    Ok((CallAnswer { result, .. }, paused)) => {
                        results.push(match paused {
                            Some(waiting) => PendingBlock::AwaitingApproval(waiting),
                            None => PendingBlock::Answered { result },
                        });
                        continue;
                    }
                    Err(CallError::Halt(halt)) => halt,
                    Err(refused) => {
                        // Not answered, not final: a retry of the message runs the rest.
                        pending.order.started.store(uses.len(), Ordering::SeqCst);
                        return Err(respond_error(refused));
                    }
                };
                let later = outcomes.by_ref().take(end - j - 1);
                // Boxed, as every rare path here: its state is twice a call's, and the turn's
                // future is moved whole at each `.await` above it.
                let halted = Box::pin(self.halted(uses, j, halt, results, later, &pending.order));
                return Err(RespondError::Halt(halted.await));
            }
            i = end;
        }
        Ok(results)
    }

    /// The answer of a message whose block `at` halted: the blocks before it as answered (a
    /// paused one ends `blocked`: the turn cannot wait), its `BLOCKED:` result, then each later
    /// block: its own answer when it had already started (a read run with it, see `reads.rs`;
    /// named in [`Halt::ran_after`]), else `Not run:` (audited as `not_run`).
    async fn halted(
        &self,
        uses: &[&ToolUse],
        at: usize,
        mut halt: Halt,
        before: Vec<PendingBlock>,
        later: impl Iterator<Item = ReadOutcome>,
        order: &TurnOrder,
    ) -> Halt {
        halt.index += before.len();
        let mut content = Vec::with_capacity(uses.len());
        for block in before {
            content.push(ContentBlock::ToolResult(self.unpaused(block).await));
        }
        content.append(&mut halt.answer.content);
        let mut later = later;
        for (j, rest) in uses.iter().enumerate().skip(at + 1) {
            let ran = match later.next().flatten() {
                Some(Ok((CallAnswer { result, .. }, paused))) => Some(match paused {
                    Some(waiting) => self.unpaused(PendingBlock::AwaitingApproval(waiting)).await,
                    None => result,
                }),
                Some(Err(CallError::Halt(mut other))) => match other.answer.content.pop() {
                    Some(ContentBlock::ToolResult(result)) => Some(result),
                    _ => None,
                },
                _ => None,
            };
            let result = match ran {
                Some(result) => {
                    halt.ran_too(rest.id.clone());
                    result
                }
                None => {
                    order.started.fetch_max(j + 1, Ordering::SeqCst);
                    self.dispatcher
                        .inner
                        .not_run(
                            &self.context,
                            Some(&self.stats),
                            rest,
                            texts::NOT_RUN_AFTER_HALT,
                        )
                        .await
                }
            };
            content.push(ContentBlock::ToolResult(result));
        }
        *halt.answer = Message::user(content);
        halt
    }

    /// A block's result when its turn cannot pause (a later block halted): a paused block ends
    /// `blocked` with a final record (nobody can approve it now).
    async fn unpaused(&self, block: PendingBlock) -> ToolResult {
        match block {
            PendingBlock::Answered { result } => result,
            PendingBlock::AwaitingApproval(waiting) => {
                match self.resume_call(&waiting, Resolution::Unapproved).await {
                    Ok(result) => result,
                    Err(_) => PendingBlock::AwaitingApproval(waiting).into_result(),
                }
            }
        }
    }

    /// Audits every block of `uses` as `not_run`, saying `why`: nothing runs.
    pub(crate) async fn not_run_all(&self, uses: &[&ToolUse], why: &str) {
        let pending = Unstarted {
            session: self,
            uses,
            order: TurnOrder::default(),
        };
        for (i, call) in uses.iter().enumerate() {
            pending.order.started.store(i + 1, Ordering::SeqCst);
            self.dispatcher
                .inner
                .not_run(&self.context, Some(&self.stats), call, why)
                .await;
        }
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
        let inner = &self.dispatcher.inner;
        let outcomes = Outcome::ALL
            .iter()
            .zip(self.stats.outcomes.iter())
            .filter_map(|(o, n)| {
                let n = n.load(Ordering::Relaxed);
                (n > 0).then_some((*o, n))
            })
            .fold(Default::default(), crate::stats::counted);
        let tools = inner
            .tools
            .iter()
            .zip(self.stats.tools.iter())
            .filter_map(|(t, n)| {
                let n = n.load(Ordering::Relaxed);
                (n > 0).then(|| (t.name.to_string(), n))
            })
            .fold(Default::default(), crate::stats::counted);
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
        let inner = &self.dispatcher.inner;
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

/// A refusal of the memory, for a whole message.
fn respond_error(e: CallError) -> RespondError {
    match e {
        CallError::Halt(h) => RespondError::Halt(h),
        CallError::InProgress { tool_use_id } => RespondError::InProgress { tool_use_id },
        CallError::IdReused { tool_use_id } => RespondError::IdReused { tool_use_id },
        CallError::Store { tool_use_id, error } => RespondError::Store { tool_use_id, error },
        // Ids were checked before anything ran.
        CallError::EmptyId => RespondError::Id(ids::IdError {
            id: String::new(),
            block: 1,
            blocks: 1,
            rule: ids::IdRule::Empty,
        }),
    }
}

/// A claimed id not yet answered: on drop (a halt, or the host dropped the call) the memory
/// forgets it, so a retry runs it, or keeps it as cancelled when its tool had started.
struct Claimed<'a> {
    store: &'a Store,
    id: &'a str,
    progress: &'a Progress<'a>,
    armed: bool,
}

impl Drop for Claimed<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.store.release(self.id, self.progress.tool_started());
        }
    }
}

/// The blocks of a `respond` not yet started; on drop (the host gave up on the message), each
/// is recorded as `cancelled`.
struct Unstarted<'a> {
    session: &'a Session,
    uses: &'a [&'a ToolUse],
    /// `started`: how many blocks, from the first, have started.
    order: TurnOrder,
}

impl Drop for Unstarted<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let s = self.session;
        let next = self.order.started.load(Ordering::SeqCst);
        for call in self.uses.iter().skip(next) {
            s.dispatcher
                .inner
                .cancelled_before_start(&s.context, Some(&s.stats), call);
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
