//! [`Session::respond`]: a whole assistant message answered, its blocks in order, consecutive
//! read-only blocks run together (`pipeline/order.rs` keeps their chains, observers and audit
//! lines in `tool_use` order); what a halt or a dropped message leaves.

use std::ops::Range;
use std::sync::atomic::Ordering;

use serde_json::Value;

use crate::approval::pending::{
    AwaitingCall, PENDING_TURN_FORMAT, PendingBlock, PendingTurn, TurnFormat,
};
use crate::content::ids;
use crate::content::message::{ContentBlock, Message, Role, ToolResult, ToolUse};
use crate::error::{CallError, Halt, RespondError};
use crate::hook::answer::CallAnswer;
use crate::pipeline::order::{TurnOrder, join_blocks};
use crate::pipeline::{Mode, Resolution};
use crate::session::reply::Reply;
use crate::texts;

use super::{Session, TurnName};

/// How one block of a group ended: its answer (and, when it paused, what a pending turn keeps
/// of it), a refusal or halt, or `None` when it never started (a block before it halted).
pub(crate) type ReadOutcome = Option<Result<(CallAnswer, Option<AwaitingCall>), CallError>>;

impl Session {
    /// Answers an assistant message: its `tool_use` blocks run in order, each independent of the
    /// others, and the answer is [`Reply::Answer`] with one user message
    /// `{"role": "user", "content": [tool_result, …]}` holding one `tool_result` per `tool_use`,
    /// in the same order (Messages API, "Parallel tool use": all results in the next user
    /// message, `tool_result` blocks first).
    ///
    /// A message without `tool_use` blocks (`end_turn`, `stop_sequence`, `refusal`,
    /// `pause_turn`, or `max_tokens` on a text) gets [`Reply::NothingToRun`] with its
    /// `stop_reason`: nothing runs, and nothing is audited. Every id must match the Messages
    /// API's pattern `^[a-zA-Z0-9_-]+$` and be unique in the message. The message's `id`
    /// (`msg_…`, as the API returns it) names its turn: a block this session answered in the
    /// same turn is answered from memory (see [`call`](Self::call)), so a host resending a
    /// message runs nothing twice, on any worker sharing the store; a later message that reuses
    /// a block's id is another turn, whose call runs. A message without an `id` has no turn: an
    /// id this session saw before is refused ([`CallError::IdRecycled`]), since nothing tells a
    /// resend from a later turn (ARCHITECTURE.md, "Contracts": "Ids and retries").
    ///
    /// Consecutive blocks whose tools are declared read-only run concurrently, at most
    /// [`max_concurrent_reads`](crate::dispatch::DispatcherBuilder::max_concurrent_reads) at once
    /// (default 8), polled together by this future (no runtime needed; a host's runtime drives it
    /// the same way): their async tools' waits overlap, so four lookups of 20 ms take about 20 ms.
    /// What a sequential run promises still holds: PreToolUse chains run one at a time in
    /// `tool_use` order (a read's chain after the block before it started its tool), any other
    /// block starts only after every earlier one finished (a spending limit sees the refund just
    /// made), results, observers and audit lines follow `tool_use` order, and a halt leaves the
    /// sequential run's answers ([`Halt::ran_after`] names any later block that had already
    /// started: possible only when a wrapped caller halts after its tool started).
    ///
    /// # Errors
    /// - [`RespondError::MaxTokens`] when `stop_reason` is `max_tokens`, and
    ///   [`RespondError::ContextWindowExceeded`] when it is `model_context_window_exceeded`:
    ///   nothing runs (the last block may be cut off) and every block is audited as `not_run`;
    /// - [`RespondError::Id`] when an id is empty, breaks the pattern or repeats: nothing runs
    ///   and every block is audited as `not_run`, with the reason;
    /// - [`RespondError::Call`] with [`CallError::Halt`] when a PreToolUse hook failed: later
    ///   blocks are not run, and the halt's answer covers every block (`BLOCKED:` for the
    ///   failed one, `Not run:` after it);
    /// - [`RespondError::Call`] with [`CallError::InProgress`], [`CallError::IdReused`],
    ///   [`CallError::IdRecycled`] or [`CallError::Store`] for a block the memory refuses: the
    ///   blocks before it were answered and are remembered, the rest are not started; retry the
    ///   message (with its `id`, for [`CallError::IdRecycled`]);
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
        // A message cut while it was written (its output limit, or the context window filling
        // up) may end in a `tool_use` whose input is cut short: nothing runs.
        let tool_uses = uses.len();
        match message.stop_reason.as_deref() {
            Some("max_tokens") => {
                self.not_run_all(&uses, texts::NOT_RUN_AT_MAX_TOKENS).await;
                return Err(RespondError::MaxTokens { tool_uses });
            }
            Some("model_context_window_exceeded") => {
                self.not_run_all(&uses, texts::NOT_RUN_AT_CONTEXT_WINDOW)
                    .await;
                return Err(RespondError::ContextWindowExceeded { tool_uses });
            }
            _ => {}
        }
        let id = message.extra.get("id").and_then(Value::as_str);
        let turn = TurnName::of_response(id);
        let blocks = self.run_turn(&uses, turn, true).await?;
        let format = TurnFormat::AnthropicMessages;
        let reply = self.finish_turn(format, turn, &[], blocks, results_message);
        self.keep_paused(reply).await
    }

    /// A paused turn `put` into the session's store of paused turns, when it has one
    /// ([`with_pending_store`](Self::with_pending_store)), before the reply is given: one
    /// atomic step that never overwrites a turn already kept under the same key (a retried
    /// message pausing again). Any other reply, or a session with no such store, as it is.
    ///
    /// # Errors
    /// [`RespondError::NotKept`] when the store cannot keep the turn.
    pub(crate) async fn keep_paused<T>(&self, reply: Reply<T>) -> Result<Reply<T>, RespondError> {
        let (Some(store), Reply::Pending(turn)) = (&self.turns, &reply) else {
            return Ok(reply);
        };
        match store.put(turn).await {
            Ok(()) => Ok(reply),
            Err(error) => Err(RespondError::NotKept {
                session_id: turn.session_id.clone(),
                turn_id: turn.turn_id.clone(),
                error,
            }),
        }
    }

    /// The reply of a turn whose calls all ran or paused: the answer, made of the results by
    /// `answer` in the API's shape, or, when a call waits for a person, the [`PendingTurn`]
    /// (its `turn_format`, its turn, named by the response's id when it has one, else by its
    /// first call's id, and `items`, the calls as the API sent them, kept for an API whose
    /// answer echoes them).
    pub(crate) fn finish_turn<T>(
        &self,
        turn_format: TurnFormat,
        turn: TurnName<'_>,
        items: &[&Value],
        blocks: Vec<PendingBlock>,
        answer: impl FnOnce(Vec<ToolResult>) -> T,
    ) -> Reply<T> {
        if !blocks
            .iter()
            .any(|b| matches!(b, PendingBlock::AwaitingApproval(_)))
        {
            return Reply::Answer(answer(
                blocks.into_iter().map(PendingBlock::into_result).collect(),
            ));
        }
        let mut blocks = blocks;
        if turn_format == TurnFormat::Gemini {
            for (block, item) in blocks.iter_mut().zip(items) {
                // Its `args` as the audit line shows the input: the answer echoes only the
                // call's `name` and `id`.
                let mut item = (*item).clone();
                self.inner.sealing.mask_call_item(&mut item);
                block.keep_call(item);
            }
        }
        let (turn_id, turn) = match turn {
            TurnName::Named(name) => (name.to_owned(), Some(name.to_owned())),
            TurnName::ById | TurnName::Unnamed => (blocks[0].tool_use_id().to_owned(), None),
        };
        Reply::Pending(PendingTurn {
            format: PENDING_TURN_FORMAT,
            turn_format,
            turn_id,
            turn,
            session_id: self.context.session_id().to_owned(),
            user_id: self.context.user_id().to_owned(),
            fingerprint: self.inner.fingerprint(),
            created_at: self.context.now(),
            pending_ttl: Some(self.inner.pending_ttl),
            blocks,
        })
    }

    /// Runs the calls of one message or turn in order, after checking their ids (the Messages
    /// API's pattern when `pattern` holds), each claimed in the answer memory as a call of
    /// `turn`: one result per call, or why not. A call that needs a person's approval when the
    /// dispatcher has no approver pauses (`PendingBlock::AwaitingApproval`).
    pub(crate) async fn run_turn(
        &self,
        uses: &[&ToolUse],
        turn: TurnName<'_>,
        pattern: bool,
    ) -> Result<Vec<PendingBlock>, RespondError> {
        if let Err(e) = ids::check(uses, pattern) {
            Box::pin(self.not_run_all(uses, &format!("{e}."))).await;
            return Err(RespondError::Id(e));
        }
        let max = self.inner.max_concurrent_reads;
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
            // Consecutive read-only blocks run together (`pipeline/order.rs`); any other block runs
            // alone, after every block before it finished.
            let mut end = i + 1;
            if max > 1 && self.is_read(&uses[i].name) {
                while end < uses.len() && self.is_read(&uses[end].name) {
                    end += 1;
                }
            }
            let (one, many) = if end - i > 1 {
                let outcomes = self
                    .run_reads(uses, turn, i..end, &pending.order, max)
                    .await;
                (None, outcomes)
            } else {
                pending.order.started.store(i + 1, Ordering::SeqCst);
                let mut paused = None;
                let mode = Mode::Pause(&mut paused);
                let answer = self.remembered_call_in(uses[i], turn, mode, None).await;
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
                            None => PendingBlock::Answered { result, call: None },
                        });
                        continue;
                    }
                    Err(CallError::Halt(halt)) => halt,
                    Err(refused) => {
                        // Not answered, not final: a retry of the message runs the rest.
                        pending.order.started.store(uses.len(), Ordering::SeqCst);
                        return Err(RespondError::Call(refused));
                    }
                };
                let later = outcomes.by_ref().take(end - j - 1);
                // Boxed, as every rare path here: its state is twice a call's, and the turn's
                // future is moved whole at each `.await` above it.
                debug_assert_eq!(results.len(), j, "one result per block before the halt");
                let halted = self.halted(uses, turn, halt, results, later, &pending.order);
                let halted = Box::pin(halted);
                return Err(RespondError::from(halted.await));
            }
            i = end;
        }
        Ok(results)
    }

    /// The answer of a message of `turn` whose block after the `before` ones halted: the
    /// blocks before it as answered (a paused one ends `blocked`: the turn cannot wait), its
    /// `BLOCKED:` result, then each later block: its own answer when it had already started (a
    /// read run with it, see `pipeline/order.rs`; named in [`Halt::ran_after`]), else `Not
    /// run:` (audited as `not_run`).
    async fn halted(
        &self,
        uses: &[&ToolUse],
        turn: TurnName<'_>,
        mut halt: Halt,
        before: Vec<PendingBlock>,
        later: impl Iterator<Item = ReadOutcome>,
        order: &TurnOrder,
    ) -> Halt {
        let at = before.len();
        halt.index += at;
        let mut content = Vec::with_capacity(uses.len());
        for block in before {
            content.push(ContentBlock::ToolResult(self.unpaused(block, turn).await));
        }
        content.append(&mut halt.answer.content);
        let mut later = later;
        for (j, rest) in uses.iter().enumerate().skip(at + 1) {
            let ran = match later.next().flatten() {
                Some(Ok((CallAnswer { result, .. }, paused))) => Some(match paused {
                    Some(waiting) => {
                        let waiting = PendingBlock::AwaitingApproval(waiting);
                        self.unpaused(waiting, turn).await
                    }
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
                    self.inner
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

    /// A block's result when its turn (`turn`) cannot pause (a later block halted): a paused
    /// block ends `blocked` with a final record (nobody can approve it now).
    async fn unpaused(&self, block: PendingBlock, turn: TurnName<'_>) -> ToolResult {
        match block {
            PendingBlock::Answered { result, .. } => result,
            PendingBlock::AwaitingApproval(waiting) => {
                // Its real input (the answer memory's key), its hidden fields given back.
                let ctx = &self.context;
                let real = match self
                    .inner
                    .sealing
                    .open(&waiting, ctx.session_id(), ctx.user_id())
                {
                    Ok(real) => real,
                    Err(_) => return PendingBlock::AwaitingApproval(waiting).into_result(),
                };
                let run = real.as_ref().unwrap_or(&waiting);
                match self.resume_call(run, turn, Resolution::Unapproved).await {
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
            self.inner
                .not_run(&self.context, Some(&self.stats), call, why)
                .await;
        }
    }

    /// Whether a block calling `tool` may run concurrently with its read-only neighbours: a
    /// tool this dispatcher declares read-only ([`Effect::read`](crate::dispatch::Effect::read)).
    pub(crate) fn is_read(&self, tool: &str) -> bool {
        let inner = &self.inner;
        inner
            .find(tool)
            .and_then(|i| inner.tools[i].effect)
            .is_some_and(|e| e.is_read_only())
    }

    /// Runs the blocks `range` of `uses` (all read-only, calls of `turn`) together, at most
    /// `max` at once, with the gates of this module; one outcome per block, in order.
    pub(crate) async fn run_reads(
        &self,
        uses: &[&ToolUse],
        turn: TurnName<'_>,
        range: Range<usize>,
        order: &TurnOrder,
        max: usize,
    ) -> Vec<ReadOutcome> {
        join_blocks(order, range, max, |index, slot| {
            let call = uses[index];
            async move {
                let mut paused = None;
                let mode = Mode::Pause(&mut paused);
                let answer = self.remembered_call_in(call, turn, mode, Some(slot)).await;
                answer.map(|a| (a, paused))
            }
        })
        .await
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
            s.inner
                .cancelled_before_start(&s.context, Some(&s.stats), call);
        }
    }
}

/// A Messages API turn's answer: the user message of its `tool_result` blocks, in order.
pub(crate) fn results_message(results: Vec<ToolResult>) -> Message {
    Message::user(results.into_iter().map(ContentBlock::ToolResult).collect())
}

/// Another API's answer items for `results` (one per call, in order): OpenAI Chat `tool`
/// messages, Responses `function_call_output` items, Gemini `functionResponse` parts (`calls`:
/// the calls as Gemini sent them, whose `name` and `id` the parts echo). `None` for the
/// Messages API, and for an API whose cargo feature this build does not have.
pub(crate) fn answer_items(
    format: TurnFormat,
    calls: &[Option<&Value>],
    results: &[ToolResult],
) -> Option<Vec<Value>> {
    let _ = (calls, results);
    match format {
        #[cfg(feature = "openai")]
        TurnFormat::OpenaiChat => Some(
            results
                .iter()
                .map(crate::provider::openai::tool_message)
                .collect(),
        ),
        #[cfg(feature = "openai")]
        TurnFormat::OpenaiResponses => Some(
            results
                .iter()
                .map(crate::provider::openai_responses::function_call_output)
                .collect(),
        ),
        #[cfg(feature = "gemini")]
        TurnFormat::Gemini => {
            let none = Value::Null;
            Some(
                results
                    .iter()
                    .enumerate()
                    .map(|(i, result)| {
                        let call = calls.get(i).copied().flatten().unwrap_or(&none);
                        crate::provider::gemini::function_response(call, result)
                    })
                    .collect(),
            )
        }
        _ => None,
    }
}
