//! [`Session::resume`]: a [`PendingTurn`] finished with a person's decisions, possibly in
//! another process, into the complete user message.

use std::borrow::Cow;
use std::ops::Range;
use std::time::Duration;

use serde_json::Value;

use crate::approval::ask::Approval;
use crate::approval::decisions::Decisions;
use crate::approval::pending::{
    AwaitingCall, PENDING_TURN_FORMAT, PendingBlock, PendingTurn, ResumeError, Resumed, TurnFormat,
};
use crate::approval::seal;
use crate::content::message::{ContentBlock, Message, ToolResult};
use crate::error::{CallError, Halt};
use crate::pipeline::order::{Slot, TurnOrder, join_blocks};
use crate::pipeline::{Mode, Resolution, Resumed as Resuming};
use crate::session::respond::answer_items;
use crate::session::{Session, TurnName, count_hold};
use crate::store::error::{StoreError, StoreErrorKind};
use crate::store::{PendingStore, Taken, Token};
use crate::texts;

impl Session {
    /// Finishes a turn a session paused ([`Reply::Pending`](crate::Reply::Pending), from
    /// [`respond`](Self::respond) or another API's whole-turn entry point) with a person's
    /// [`Decisions`], one per waiting `tool_use` id, and answers the whole turn in the shape of
    /// the API it came from ([`Resumed`]): one answer per call of the paused turn, in order (the
    /// answers given when it paused, then the resumed ones in their places). For a Messages API
    /// turn, the user message of `tool_result` blocks; for OpenAI Chat, `tool` messages; for
    /// OpenAI Responses, `function_call_output` items; for Gemini, `functionResponse` parts.
    ///
    /// **For one process.** A turn resumed from a value the host holds runs at most once only
    /// within one answer memory: this session's, or an [`AnswerStore`](crate::store::AnswerStore)
    /// shared with the other sessions that resume it. Two processes (or two sessions with
    /// memories of their own) each resuming their copy of one turn each run its calls. An agent
    /// of several processes, or one that must survive a restart, opens its sessions on a shared
    /// store ([`Dispatcher::session_on`](crate::Dispatcher::session_on)), which keeps the turn
    /// when it pauses, and resumes with [`resume_from`](Self::resume_from), which takes it from
    /// the store so that one resume runs it.
    ///
    /// The session must have the pending turn's session id and user id, and run on a
    /// dispatcher with the same [`fingerprint`](crate::Dispatcher::fingerprint) (in this process
    /// or another: the pending turn is plain JSON). A waiting call whose fields the audit log
    /// hides gets their real values back from its `sealed` value first (the dispatcher's
    /// `DispatcherBuilder::seal_keys`, feature `seal`); an edit
    /// that left a hidden field as the turn shows it runs with the real value. Each waiting
    /// call then ends by its decision:
    ///
    /// - [`Approval::Approve`]: its PreToolUse chain runs again on its effective input before
    ///   the tool, without the hook whose rewrite produced it (state a rule reads may have
    ///   changed since, e.g. the week's refund total): a deny still wins (`blocked`), an ask
    ///   about the approved input passes, an ask about another input (a hook rewrote it) is
    ///   blocked; then the tool runs. Its final audit line has `approved_by`.
    /// - [`Approval::Edit`]: the same, with the edited input authorized as a rewrite by the
    ///   approver, on which every hook decides.
    /// - [`Approval::Deny`]: not run; `blocked`, `BLOCKED: a person declined this call:
    ///   <reason>`, with `denied_by`.
    ///
    /// A pending turn older than the dispatcher's
    /// [`pending_ttl`](crate::dispatch::DispatcherBuilder::pending_ttl) (by this session's context
    /// clock) is not an error: every waiting call is answered `blocked` ("waited for a person's
    /// approval longer than N s and expired; … Ask the user whether to try it again."), whatever
    /// the decisions, none of which is then needed.
    ///
    /// Consecutive waiting calls of read-only tools resume together, as
    /// [`respond`](Session::respond) runs them (their chains one at a time in `tool_use` order,
    /// their tools' waits overlapping, observers and audit lines in order; a halt among them
    /// names in [`Halt::ran_after`](crate::Halt::ran_after) the later ones that had started).
    ///
    /// Each resumed call goes through the session's answer memory like any call: resuming the same
    /// pending turn twice in one session (or with a shared
    /// [`AnswerStore`](crate::store::AnswerStore)) runs nothing twice, the second answer is
    /// replayed; and a retry of the paused message after the resume is answered from memory
    /// (its calls are claimed in the paused turn's [`turn`](PendingTurn::turn), the response's
    /// id; a message that had none is refused when sent again, as by `respond`).
    ///
    /// # Errors
    /// Found before anything runs (nothing audited): [`ResumeError::UnknownFormat`],
    /// [`ResumeError::TurnFormatNotBuilt`] (an OpenAI or Gemini turn in a build without that
    /// feature), [`ResumeError::Malformed`] (no block, an empty id, an id twice),
    /// [`ResumeError::OtherSession`], [`ResumeError::DispatcherChanged`],
    /// [`ResumeError::NotPending`] (a decision for an id that is not waiting),
    /// [`ResumeError::DigestMismatch`] (an approval carrying another digest than the waiting
    /// input's, or a waiting input that does not match its recorded digest),
    /// [`ResumeError::Undecided`] (a waiting call without a decision, when the turn has not
    /// expired), [`ResumeError::SealedInput`] (the fields the audit log's redaction hides in a
    /// waiting call's input cannot be given back: no seal key, another key, the turn changed;
    /// checked for every waiting call, an expired or declined one too). While it runs: [`ResumeError::Call`] with [`CallError::Halt`] when a PreToolUse
    /// hook could not decide (the halt's answer covers every block), or with another [`CallError`]
    /// when the answer memory refused a call (the calls before it were answered and remembered).
    pub async fn resume(
        &self,
        pending: &PendingTurn,
        decisions: &Decisions,
    ) -> Result<Resumed, ResumeError> {
        self.check_pending(pending, decisions)?;
        let ttl = self.inner.pending_ttl;
        let waited = self
            .context()
            .now()
            .duration_since(pending.created_at)
            .unwrap_or(Duration::ZERO);
        let expired = waited > ttl;
        if !expired
            && let Some(a) = pending
                .awaiting()
                .find(|a| !decisions.contains(&a.tool_use_id))
        {
            return Err(ResumeError::Undecided {
                tool_use_id: a.tool_use_id.clone(),
            });
        }
        self.resume_with(pending, decisions, &|_| expired, ttl)
            .await
    }

    /// The waiting calls of `pending` ended by `decisions`, or as expired (`ttl` in the model's
    /// text) where `expired` says so, and the whole turn answered in its API's shape: the hidden
    /// fields given back and an edit's real values restored before anything runs, the calls
    /// claimed in the turn they came from (a resend of that turn after the resume is answered
    /// from memory). The checks of [`resume`](Self::resume) are the caller's.
    pub(super) async fn resume_with(
        &self,
        pending: &PendingTurn,
        decisions: &Decisions,
        expired: &(dyn Fn(&AwaitingCall) -> bool + Sync),
        ttl: Duration,
    ) -> Result<Resumed, ResumeError> {
        // The hidden fields given back, before anything runs (`approval/seal.rs`).
        let blocks = self.opened_blocks(pending)?;
        let edits = restored_edits(pending, &blocks, decisions);
        let resolution = |waiting: &AwaitingCall| {
            let id = waiting.tool_use_id.as_str();
            let edited = edits.iter().find(|(e, _)| *e == id).map(|(_, a)| a);
            match edited.or_else(|| decisions.get(id)) {
                _ if expired(waiting) => Resolution::Expired { ttl },
                Some(decision) => Resolution::Decided(decision),
                // Checked by the caller: a call that has not expired has a decision.
                None => Resolution::Unapproved,
            }
        };
        let turn = pending
            .turn
            .as_deref()
            .map_or(TurnName::ById, TurnName::Named);
        let content = self.resume_blocks(&blocks, turn, &resolution).await?;
        Ok(resumed_answer(pending, content))
    }

    /// The blocks of a pending turn (`turn`) in order: an answered one keeps its answer, a
    /// waiting one is ended by `resolution` (consecutive waiting reads together, as `respond`
    /// runs them). A halt answers every block ([`halted_at_resume`](Self::halted_at_resume)); a
    /// refusal of the answer memory stops there.
    async fn resume_blocks<'r>(
        &self,
        blocks: &[PendingBlock],
        turn: TurnName<'_>,
        resolution: &(impl Fn(&AwaitingCall) -> Resolution<'r> + Sync),
    ) -> Result<Vec<ContentBlock>, ResumeError> {
        let order = TurnOrder::default();
        let mut content = Vec::with_capacity(blocks.len());
        let mut i = 0;
        while i < blocks.len() {
            if let PendingBlock::Answered { result, .. } = &blocks[i] {
                content.push(ContentBlock::ToolResult(result.clone()));
                i += 1;
                continue;
            }
            let end = self.waiting_group_end(blocks, i);
            let mut outcomes = self
                .resume_group(blocks, turn, i..end, &order, resolution)
                .await
                .into_iter();
            for j in i..end {
                let Some(Some(answer)) = outcomes.next() else {
                    break;
                };
                match answer {
                    Ok(result) => content.push(ContentBlock::ToolResult(result)),
                    Err(CallError::Halt(halt)) => {
                        let later = outcomes.by_ref().take(end - j - 1);
                        let halted = self.halted_at_resume(blocks, j, halt, content, later);
                        return Err(ResumeError::from(Box::pin(halted).await));
                    }
                    Err(refused) => return Err(ResumeError::Call(refused)),
                }
            }
            i = end;
        }
        Ok(content)
    }

    /// Where the group of waiting blocks that starts at `start` ends: consecutive waiting
    /// calls of read-only tools resume together (when the dispatcher runs reads together),
    /// any other waiting call alone.
    fn waiting_group_end(&self, blocks: &[PendingBlock], start: usize) -> usize {
        let waiting_read = |i: usize| match blocks.get(i) {
            Some(PendingBlock::AwaitingApproval(a)) => self.is_read(&a.name),
            _ => false,
        };
        let mut end = start + 1;
        if self.inner.max_concurrent_reads > 1 && waiting_read(start) {
            while waiting_read(end) {
                end += 1;
            }
        }
        end
    }

    /// Resumes the waiting blocks `range` (one, or consecutive reads run together with the
    /// gates of `pipeline/order.rs`): one outcome per block, `None` for one that never started.
    async fn resume_group<'r>(
        &self,
        blocks: &[PendingBlock],
        turn: TurnName<'_>,
        range: Range<usize>,
        order: &TurnOrder,
        resolution: &(impl Fn(&AwaitingCall) -> Resolution<'r> + Sync),
    ) -> Vec<Option<Result<ToolResult, CallError>>> {
        let first = range.start;
        let group: Vec<&AwaitingCall> = blocks[range.clone()]
            .iter()
            .filter_map(|b| match b {
                PendingBlock::AwaitingApproval(a) => Some(a),
                PendingBlock::Answered { .. } => None,
            })
            .collect();
        if group.len() == 1 {
            let waiting = group[0];
            return vec![Some(
                self.resume_call(waiting, turn, resolution(waiting)).await,
            )];
        }
        let group = &group;
        let max = self.inner.max_concurrent_reads;
        join_blocks(order, range, max, |index, slot| async move {
            let waiting = group[index - first];
            self.resume_call_in(waiting, turn, resolution(waiting), Some(slot))
                .await
        })
        .await
    }

    /// The answer of a resumed turn whose block `at` halted: the blocks before it as answered,
    /// its `BLOCKED:` result, then each later block: its own answer when it had already started
    /// (a read resumed with it, named in [`Halt::ran_after`](crate::Halt::ran_after)), an
    /// answered block's answer, else `Not run:` (audited as `not_run`).
    async fn halted_at_resume(
        &self,
        blocks: &[PendingBlock],
        at: usize,
        mut halt: Halt,
        mut content: Vec<ContentBlock>,
        later: impl Iterator<Item = Option<Result<ToolResult, CallError>>>,
    ) -> Halt {
        halt.index = content.len();
        content.append(&mut halt.answer.content);
        let mut later = later;
        for rest in &blocks[at + 1..] {
            let ran = match later.next().flatten() {
                Some(Ok(result)) => Some(result),
                Some(Err(CallError::Halt(mut other))) => match other.answer.content.pop() {
                    Some(ContentBlock::ToolResult(r)) => Some(r),
                    _ => None,
                },
                _ => None,
            };
            let result = match ran {
                Some(result) => {
                    halt.ran_too(result.tool_use_id.clone());
                    result
                }
                None => self.after_halt(rest).await,
            };
            content.push(ContentBlock::ToolResult(result));
        }
        *halt.answer = Message::user(content);
        halt
    }

    /// [`resume`](Self::resume) of the turn `turn_id` of this session kept in `store`: the safe
    /// resume across processes, and the one to use whenever a store keeps the turn. A session
    /// opened on the store ([`Dispatcher::session_on`](crate::Dispatcher::session_on)) kept the
    /// turn when it paused; the turn id is [`PendingTurn::turn_id`], the id of its first
    /// `tool_use` (what [`PendingStore::waiting`] lists). This session's context is the one the
    /// resumed calls' chains decide on: build it with the facts the rules read (the tier, the
    /// extensions), as the session that paused had them. The turn is taken by one atomic step, so of any number of callers (threads, worker processes) resuming one
    /// turn at once exactly one runs it: the others get [`ResumeError::BeingResumed`] while it
    /// runs, and its answer once it is done (a later call too). A resume refused before
    /// anything ran, or halted, puts the turn back to wait; one that finished keeps its answer
    /// in the store. A store that renews ([`PendingStore::renews`]: the SQLite and PostgreSQL
    /// stores, [`MemoryPendingStore`](crate::store::MemoryPendingStore)) keeps the take alive
    /// while the resumed calls run, so a live resume's turn is never taken from it, and a
    /// caller that dies while it holds the turn (a worker killed) holds it until the
    /// dispatcher's [`claim_lease`](crate::dispatch::DispatcherBuilder::claim_lease) ends, from
    /// its last renewal (in a store that does not renew, the
    /// [`fixed_claim_lease`](crate::dispatch::DispatcherBuilder::fixed_claim_lease)); the next
    /// caller then resumes it, and the answer memory replays what the first had answered,
    /// never running a call twice. A resume whose take was lost meanwhile (a renewal failed
    /// and another caller took the turn) still answers with its calls' answers, which are the
    /// answer memory's; the store keeps the answer of the resume that holds the turn.
    ///
    /// # Errors
    /// [`ResumeError::NoSuchTurn`], [`ResumeError::BeingResumed`], [`ResumeError::Store`] (the
    /// store failed: nothing was resumed), and every error of [`resume`](Self::resume).
    pub async fn resume_from(
        &self,
        store: &dyn PendingStore,
        turn_id: &str,
        decisions: &Decisions,
    ) -> Result<Resumed, ResumeError> {
        let session_id = self.context().session_id();
        let inner = &self.inner;
        let token = Token::draw();
        let lease = if store.renews() {
            inner.claim_lease
        } else {
            inner.fixed_claim_lease
        };
        let taken = store
            .take(session_id, turn_id, token, lease)
            .await
            .map_err(ResumeError::Store)?;
        let turn = match taken {
            Taken::Turn(turn) => turn,
            Taken::Resumed(answer) => return resumed_of(answer, turn_id),
            Taken::Resuming => {
                return Err(ResumeError::BeingResumed {
                    turn_id: turn_id.to_owned(),
                });
            }
            Taken::Missing => {
                return Err(ResumeError::NoSuchTurn {
                    session_id: session_id.to_owned(),
                    turn_id: turn_id.to_owned(),
                });
            }
        };
        // Renewed by the store while the resumed calls run.
        let hold = if store.renews() {
            store.hold(session_id, turn_id, token, lease)
        } else {
            None
        };
        let result = self.resume(&turn, decisions).await;
        let recorded = match &result {
            Ok(answer) => {
                let answer = serde_json::to_value(answer).unwrap_or_default();
                store.resumed(session_id, turn_id, token, &answer).await
            }
            Err(_) => store.put_back(session_id, turn_id, token).await,
        };
        let fenced = recorded.as_ref().is_err_and(StoreError::is_fenced);
        count_hold(inner, hold.as_ref(), fenced);
        if let Err(e) = recorded {
            tracing::error!(target: "toolgate::memory", turn_id, error = %e,
                "the pending turn's store could not record how its resume ended; the turn is \
                 taken again once its lease ends (at once, when another resume holds it), and \
                 the answer memory replays its answers");
        }
        result
    }

    /// The blocks of `pending` with each waiting call's hidden fields given back: the turn's
    /// own blocks when no call has any (`approval/seal.rs`).
    ///
    /// # Errors
    /// [`ResumeError::SealedInput`] for the first waiting call whose fields the audit log's
    /// redaction hides and whose real values cannot be given back: nothing has run.
    fn opened_blocks<'p>(
        &self,
        pending: &'p PendingTurn,
    ) -> Result<Cow<'p, [PendingBlock]>, ResumeError> {
        let mut blocks = Cow::Borrowed(pending.blocks.as_slice());
        for (i, block) in pending.blocks.iter().enumerate() {
            let PendingBlock::AwaitingApproval(waiting) = block else {
                continue;
            };
            let sealing = &self.inner.sealing;
            match sealing.open(waiting, &pending.session_id, &pending.user_id) {
                Ok(None) => {}
                Ok(Some(real)) => blocks.to_mut()[i] = PendingBlock::AwaitingApproval(real),
                Err(problem) => {
                    return Err(ResumeError::SealedInput {
                        tool_use_id: waiting.tool_use_id.clone(),
                        problem,
                    });
                }
            }
        }
        Ok(blocks)
    }

    /// The refusals found before anything runs (see [`resume`](Self::resume)).
    pub(super) fn check_pending(
        &self,
        pending: &PendingTurn,
        decisions: &Decisions,
    ) -> Result<(), ResumeError> {
        if pending.format != PENDING_TURN_FORMAT {
            return Err(ResumeError::UnknownFormat {
                found: pending.format,
            });
        }
        if let Some(feature) = pending.turn_format.feature()
            && answer_items(pending.turn_format, &[], &[]).is_none()
        {
            return Err(ResumeError::TurnFormatNotBuilt {
                turn_format: pending.turn_format,
                feature,
            });
        }
        check_blocks(&pending.blocks)?;
        let ctx = self.context();
        if pending.session_id != ctx.session_id() || pending.user_id != ctx.user_id() {
            return Err(ResumeError::OtherSession {
                pending_session: pending.session_id.clone(),
                pending_user: pending.user_id.clone(),
                session: ctx.session_id().to_owned(),
                user: ctx.user_id().to_owned(),
            });
        }
        let expected = self.inner.fingerprint();
        if pending.fingerprint != expected {
            return Err(ResumeError::DispatcherChanged {
                expected,
                found: pending.fingerprint.clone(),
            });
        }
        for (id, decision) in decisions.iter() {
            let Some(waiting) = pending.awaiting().find(|a| a.tool_use_id == id) else {
                return Err(ResumeError::NotPending {
                    tool_use_id: id.to_owned(),
                });
            };
            let actual = waiting.digest();
            let approved = match decision {
                Approval::Approve {
                    input_digest: Some(d),
                    ..
                } => d,
                _ => &waiting.input_digest,
            };
            if *approved != actual || waiting.input_digest != actual {
                return Err(ResumeError::DigestMismatch {
                    tool_use_id: id.to_owned(),
                    approved: approved.clone(),
                    actual,
                });
            }
        }
        // A waiting call without a decision is checked too: its input is what an expiry
        // records, and what a later decision will approve.
        for waiting in pending.awaiting() {
            let actual = waiting.digest();
            if waiting.input_digest != actual {
                return Err(ResumeError::DigestMismatch {
                    tool_use_id: waiting.tool_use_id.clone(),
                    approved: waiting.input_digest.clone(),
                    actual,
                });
            }
        }
        Ok(())
    }

    /// One waiting call of `turn`, ended by `resolution`, through the session's answer memory.
    pub(crate) async fn resume_call(
        &self,
        waiting: &AwaitingCall,
        turn: TurnName<'_>,
        resolution: Resolution<'_>,
    ) -> Result<ToolResult, CallError> {
        let call = waiting.call();
        let resumed = Resuming {
            awaiting: waiting,
            resolution,
        };
        self.remembered_call_in(&call, turn, Mode::Resume(resumed), None)
            .await
            .map(|answer| answer.result)
    }

    /// [`resume_call`](Self::resume_call) for a waiting read resumed with others (`pipeline/order.rs`).
    async fn resume_call_in(
        &self,
        waiting: &AwaitingCall,
        turn: TurnName<'_>,
        resolution: Resolution<'_>,
        slot: Option<Slot<'_>>,
    ) -> Result<ToolResult, CallError> {
        let call = waiting.call();
        let resumed = Resuming {
            awaiting: waiting,
            resolution,
        };
        self.remembered_call_in(&call, turn, Mode::Resume(resumed), slot)
            .await
            .map(|answer| answer.result)
    }

    /// A block after one whose chain halted at resume: an answered one keeps its answer, a
    /// waiting one is not run (`not_run`, final).
    async fn after_halt(&self, block: &PendingBlock) -> ToolResult {
        match block {
            PendingBlock::Answered { result, .. } => result.clone(),
            PendingBlock::AwaitingApproval(a) => {
                let call = a.call();
                self.not_run_all(&[&call], texts::NOT_RUN_AFTER_HALT).await;
                ToolResult::error(&a.tool_use_id, texts::not_run(texts::NOT_RUN_AFTER_HALT))
            }
        }
    }
}

/// A resumed turn's answer in its API's shape, from the answers of its blocks in order.
fn resumed_answer(pending: &PendingTurn, content: Vec<ContentBlock>) -> Resumed {
    let message = Message::user(content);
    match pending.turn_format {
        TurnFormat::AnthropicMessages => Resumed::Message(message),
        format => {
            let results: Vec<ToolResult> = message
                .content
                .into_iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolResult(r) => Some(r),
                    _ => None,
                })
                .collect();
            let calls: Vec<Option<&Value>> =
                pending.blocks.iter().map(PendingBlock::call).collect();
            // Checked before anything ran: this build gives this format's answers.
            Resumed::Items(answer_items(format, &calls, &results).unwrap_or_default())
        }
    }
}

/// The blocks of a pending turn answer one `tool_use` each: at least one block, no empty id, no
/// id twice (a turn edited by hand could otherwise answer an id twice, or put one decision on
/// two calls).
fn check_blocks(blocks: &[PendingBlock]) -> Result<(), ResumeError> {
    let malformed = |problem: String| Err(ResumeError::Malformed { problem });
    if blocks.is_empty() {
        return malformed("it has no block".to_owned());
    }
    let mut seen: std::collections::HashMap<&str, usize> =
        std::collections::HashMap::with_capacity(blocks.len());
    for (i, block) in blocks.iter().enumerate() {
        let id = block.tool_use_id();
        if id.is_empty() {
            return malformed(format!("block {} has an empty tool_use id", i + 1));
        }
        if let Some(first) = seen.insert(id, i) {
            return malformed(format!(
                "blocks {} and {} both answer tool_use {id:?}",
                first + 1,
                i + 1
            ));
        }
    }
    Ok(())
}

/// The edits among `decisions` of the waiting calls whose fields were hidden, with the real
/// values put back where the edit left what the turn showed ([`seal::restore`]): `pending`'s
/// blocks as shown, `opened` the same blocks given back.
fn restored_edits<'d>(
    pending: &PendingTurn,
    opened: &[PendingBlock],
    decisions: &'d Decisions,
) -> Vec<(&'d str, Approval)> {
    let mut edits = Vec::new();
    for (shown, real) in pending.blocks.iter().zip(opened) {
        let (PendingBlock::AwaitingApproval(shown), PendingBlock::AwaitingApproval(real)) =
            (shown, real)
        else {
            continue;
        };
        if shown.sealed.is_none() {
            continue;
        }
        if let Some((id, Approval::Edit { by, input })) =
            decisions.iter().find(|(id, _)| *id == shown.tool_use_id)
        {
            let mut input = input.clone();
            seal::restore(&mut input, &shown.effective_input, &real.effective_input);
            let by = by.clone();
            edits.push((id, Approval::Edit { by, input }));
        }
    }
    edits
}

/// A resumed turn's answer read back from its JSON: the user message's object, or another
/// API's array of items; anything else means the store does not hold what `resume_from` wrote.
fn resumed_of(answer: Value, turn_id: &str) -> Result<Resumed, ResumeError> {
    match answer {
        Value::Array(items) => Ok(Resumed::Items(items)),
        other => serde_json::from_value(other)
            .map(Resumed::Message)
            .map_err(|e| {
                ResumeError::Store(StoreError::new(
                    StoreErrorKind::Corrupt,
                    format!(
                        "the answer it keeps for turn {turn_id:?} is not a resumed turn's: {e}"
                    ),
                ))
            }),
    }
}
