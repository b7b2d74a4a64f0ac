//! The life of one tool call (ARCHITECTURE.md, "The life of one call"): normalize → look up →
//! validate → PreToolUse chain → tool → PostToolUse observers. Exactly one `tool_result` comes out
//! of every `tool_use`, or a [`Halt`] carrying one. [`Inner::run_call_in`] reads as that life:
//! one [`Call`] (`call.rs`: what a call carries from start to end, and the record of a dropped
//! one) built once, then the steps that take it; how a call ends is in `verdict.rs`, what the
//! observers see in `observe.rs`.

mod approve;
mod call;
mod chain;
pub(crate) mod chain_verdict;
mod decide;
pub(crate) mod inner;
pub(crate) mod limits;
pub(crate) mod name_index;
pub(crate) mod normalize;
mod observe;
pub(crate) mod order;
mod span;
pub(crate) mod stats;
mod validate;
mod verdict;

use std::time::Duration;

use crate::audit::outcome::{CallRecord, Outcome};
use crate::base::future::{BoxFuture, Invoke};
use crate::base::panic::{CatchUnwind, catch};
use crate::base::timer::{Deadline, Race, Raced};
use crate::content::message::{ToolResult, ToolResultContent, ToolUse};
use crate::error::{Halt, ToolError};
use crate::hook::answer::CallAnswer;
use crate::hook::context::HookContext;
use crate::hook::erased::Args;
use crate::hook::state::Env;
use crate::pipeline::inner::{Backend, Inner, ToolEntry};
use crate::pipeline::normalize::Refused;
use crate::pipeline::stats::Stats;
use crate::texts::{self, Problem, Problems};

use approve::Approved;
use call::Call;
pub(crate) use call::{Kept, Memory, Mode, Progress, Resolution, Resumed};
use chain::HookRuns;
use validate::validate;
use verdict::{Answer, Verdict};

impl Inner {
    /// Runs one `tool_use` through the whole pipeline; `progress`, when given, is told when the
    /// tool starts and how the call ended. A call that needs a person's approval is answered by
    /// the dispatcher's approver, or, with none, blocked.
    pub(crate) async fn run_call<'a>(
        &'a self,
        context: &'a HookContext,
        stats: Option<&'a Stats>,
        call: &'a ToolUse,
        progress: Option<&'a Progress<'a>>,
    ) -> Result<CallAnswer, Halt> {
        self.run_call_in(context, stats, call, progress, Mode::Block)
            .await
    }

    /// [`run_call`](Self::run_call) in a [`Mode`]: what happens to a call that needs a
    /// person's approval when the dispatcher has no approver, or a paused call resumed.
    ///
    /// The life of one call (ARCHITECTURE.md, "The life of one call"): [`Call::new`] normalizes
    /// and looks up (steps 1 and 2), [`steps`](Self::steps) decide how it ends (3 to 5),
    /// [`finish_call`](Self::finish_call) answers it and shows the observers its record (6).
    /// The [`Call`] is armed from the start: dropped on the way, it records itself `cancelled`.
    pub(crate) async fn run_call_in<'a>(
        &'a self,
        context: &'a HookContext,
        stats: Option<&'a Stats>,
        tool_use: &'a ToolUse,
        progress: Option<&'a Progress<'a>>,
        mode: Mode<'_, 'a>,
    ) -> Result<CallAnswer, Halt> {
        // 1. Normalize. 2. Look up: before the refusal is answered, so the summary's `tools`
        // counts every call of a known tool, an input refused at normalization included.
        let mut call = Call::new(self, context, stats, tool_use, progress, mode);
        call.span = span::call_span(context, tool_use);
        let verdict = self.steps(&mut call).await;
        // Made here, not in `finish_call`: an argument of an async fn is held twice in its
        // future, and this is the largest value of step 6.
        let mut answer = self.answer(&call, verdict);
        self.finish_call(&mut call, &mut answer).await;
        answer.into_answer()
    }

    /// Steps 3 to 5 of `call` (its input normalized and its tool looked up): the validated
    /// arguments (a resumed call primed with its approved input), the PreToolUse chain and a
    /// person's approval when a hook asked, then the tool. The verdict of the first step that
    /// ends the call; a call that paused leaves what a pending turn keeps of it in its mode's
    /// slot.
    async fn steps<'a>(&'a self, call: &mut Call<'a>) -> Verdict<'a> {
        if let Some(Refused(msg)) = call.recorded.refused() {
            let problem = Problems::one(Problem::here(msg.clone()));
            return Verdict::invalid(&call.tool_use.name, &problem);
        }
        let Some(index) = call.tool else {
            return Verdict::unknown(&call.tool_use.name, &self.available);
        };
        let tool = &self.tools[index];
        let current = call.recorded.normalized();
        // 3. Validate.
        let args = match validate(tool, &current.input) {
            Ok(a) => a,
            Err(problems) => return Verdict::invalid(&tool.name, &problems),
        };
        // A resumed call starts from its effective input, approved.
        let args = match &call.mode {
            Mode::Resume(r) => match self.prime(tool, current, r, args, &mut call.chain) {
                Ok(a) => a,
                Err(verdict) => return verdict,
            },
            _ => args,
        };
        // 4. The PreToolUse chain, then a person's approval when a hook asked for it.
        call.chain.runs = HookRuns::new(self.hook_runs, tool.chain.len(), &call.span);
        let chain = self.run_chain(tool, call.env, current, args, &mut call.chain, &call.span);
        let mut args = match chain.await {
            Ok(a) => a,
            Err(verdict) => return verdict,
        };
        if call.chain.needs_approval(current) {
            // Boxed: the rare path's state would otherwise enlarge every call's future
            // (moved, whole, at each `.await` above it).
            match Box::pin(self.approve(tool, args, call)).await {
                Ok(Approved::Run(a)) => args = a,
                Ok(Approved::Pause) => {
                    return match call.pause() {
                        Ok(()) => Verdict::awaiting(),
                        Err(why) => Verdict::cannot_pause(&call.chain.asks, why),
                    };
                }
                Err(verdict) => return verdict,
            }
        }
        // 5. The tool, with the input the chain settled on.
        call.tool_starts();
        let current = call.recorded.normalized();
        let view = call.chain.call.as_deref().unwrap_or(current);
        match self.start_tool(tool, call.env, view, args) {
            Started::Done(verdict) => verdict,
            Started::Local(fut) => self.await_local_tool(tool, fut).await,
            Started::Caller(fut) => self.await_caller(tool, fut).await,
        }
    }

    /// Step 6 of `call`, ended by `verdict`: a block run with other reads of its message lets
    /// the next one start, and the verdict becomes the answer (the `tool_result`, cut to its
    /// bound).
    fn answer<'a>(&self, call: &Call<'a>, verdict: Verdict<'a>) -> Answer<'a> {
        // Its tool started (in `steps`), or it was answered without one (a halt excepted:
        // nothing after it starts).
        if let Some(slot) = call.progress.and_then(Progress::slot)
            && !verdict.halts()
        {
            slot.release();
        }
        Answer::new(call.tool_use, verdict, self.limits.max_result_bytes)
    }

    /// Step 6 of `call`, after [`answer`](Self::answer): the answer is remembered, the record
    /// made, the span records how it ended, and the PostToolUse observers see the record (in
    /// `tool_use` order among the reads of a message); then the call is finished (disarmed).
    async fn finish_call<'a>(&'a self, call: &mut Call<'a>, answer: &mut Answer<'a>) {
        if let Some(progress) = call.progress {
            // Remembered before anyone sees it: a retry from now on is a replay, and an answer
            // the memory could not keep is on the audit line.
            remember(answer, progress).await;
        }
        let slot = call.progress.and_then(Progress::slot);
        call.stage = "while the observers ran";
        let mut record = call.record(answer);
        record.lease = call.progress.and_then(|p| p.lease_record(self.claim_lease));
        if !call.span.is_disabled() {
            span::finish(
                &call.span,
                call.env.context(),
                &record,
                self.span_content.as_ref(),
            );
        }
        if let Some(slot) = &slot {
            // Observers and audit lines follow `tool_use` order.
            slot.turn_to_observe().await;
        }
        if self.observers_sync {
            let list = self.observers_for(call.tool);
            self.observe_sync(call.env, call.stats, &record, list);
        } else {
            self.observe(call, &record).await;
        }
        call.finish(answer.outcome);
    }

    /// Starts the tool: a sync tool's verdict is ready at once; an async one is a future to await.
    fn start_tool<'a>(
        &'a self,
        tool: &'a ToolEntry,
        env: Env<'a>,
        call: &'a ToolUse,
        args: Args,
    ) -> Started<'a> {
        match &tool.backend {
            Backend::Local(imp) => match catch(|| imp.invoke(env, args)) {
                Err(p) => Started::Done(Verdict::panicked(p)),
                Ok(Invoke::Ready(r)) => Started::Done(Verdict::produced(r)),
                Ok(Invoke::Pending(fut)) => Started::Local(fut),
            },
            Backend::Caller { caller, .. } => {
                match catch(|| caller.call_tool(env.context(), call)) {
                    Err(p) => Started::Done(Verdict::panicked(p)),
                    Ok(fut) => Started::Caller(fut),
                }
            }
        }
    }

    /// Awaits an async tool against its deadline.
    async fn await_local_tool<'a>(
        &'a self,
        tool: &'a ToolEntry,
        fut: BoxFuture<'_, Result<ToolResultContent, ToolError>>,
    ) -> Verdict<'a> {
        let deadline = tool.timeout.or(self.tool_timeout);
        match self.race(CatchUnwind(fut), deadline).await {
            Raced::Done(Ok(r)) => Verdict::produced(r),
            Raced::Done(Err(p)) => Verdict::panicked(p),
            Raced::TimedOut => Verdict::tool_timeout(deadline.unwrap_or_default()),
            Raced::TimerFailed(p) => Verdict::timer_failed(p),
        }
    }

    /// Awaits a wrapped caller against the tool's deadline.
    async fn await_caller<'a>(
        &'a self,
        tool: &'a ToolEntry,
        fut: BoxFuture<'_, Result<CallAnswer, Halt>>,
    ) -> Verdict<'a> {
        let deadline = tool.timeout.or(self.tool_timeout);
        match self.race(CatchUnwind(fut), deadline).await {
            Raced::Done(Ok(answer)) => Verdict::answered_by_caller(answer),
            Raced::Done(Err(p)) => Verdict::panicked(p),
            Raced::TimedOut => Verdict::tool_timeout(deadline.unwrap_or_default()),
            Raced::TimerFailed(p) => Verdict::timer_failed(p),
        }
    }

    fn race<F: std::future::Future + Unpin>(&self, fut: F, deadline: Option<Duration>) -> Race<F> {
        Race {
            fut,
            deadline: Deadline::new(&*self.timer, deadline),
        }
    }

    /// Records a block the host gave up on before it started (a `respond` future dropped while
    /// an earlier block of its message ran): outcome `cancelled`, seen by the sync observers, as
    /// for a call dropped unfinished.
    pub(crate) fn cancelled_before_start(
        &self,
        context: &HookContext,
        stats: Option<&Stats>,
        tool_use: &ToolUse,
    ) {
        let mut call = Call::new(self, context, stats, tool_use, None, Mode::Block);
        call.stage = "before it started, while an earlier block of its message ran";
        drop(call);
    }

    /// Answers a block that is not run (`max_tokens`, or after a halt): observers see it with
    /// outcome `not_run`; the returned result says why.
    pub(crate) async fn not_run(
        &self,
        context: &HookContext,
        stats: Option<&Stats>,
        tool_use: &ToolUse,
        why: &str,
    ) -> ToolResult {
        // Boxed, as `replay`: a rare path, whose state (the call, its record) would otherwise
        // enlarge the future of every call that may take it.
        Box::pin(async move {
            let mut call = Call::new(self, context, stats, tool_use, None, Mode::Block);
            let result = ToolResult::error(tool_use.id.clone(), texts::not_run(why));
            let input = call.recorded.input();
            let record = CallRecord::not_run(tool_use, input, &result, call.started.elapsed());
            self.observe(&call, &record).await;
            call.finish(Outcome::NotRun);
            result
        })
        .await
    }

    /// Answers a block again from the session's memory (`replay`): nothing runs, observers see
    /// the remembered `outcome` and `result` with `replay: true`, and the session's counts do
    /// not change. `detail` says why, for the operator.
    pub(crate) async fn replay(
        &self,
        context: &HookContext,
        stats: Option<&Stats>,
        tool_use: &ToolUse,
        outcome: Outcome,
        result: &ToolResult,
        detail: &str,
    ) {
        // Boxed: a rare path (a retry), whose state (the call, its record) would otherwise
        // enlarge the future of every call, which holds this one where an id was seen before.
        Box::pin(async move {
            let mut call = Call::new(self, context, stats, tool_use, None, Mode::Block);
            call.replay = true;
            let input = call.recorded.input();
            let duration = call.started.elapsed();
            let record = CallRecord {
                detail: Some(detail),
                replay: true,
                ..CallRecord::new(tool_use, input, outcome, Some(result), duration)
            };
            self.observe(&call, &record).await;
            call.finish(outcome);
        })
        .await
    }
}

/// A tool started: done already (sync), or a future to await (async).
enum Started<'a> {
    Done(Verdict<'static>),
    Local(BoxFuture<'a, Result<ToolResultContent, ToolError>>),
    Caller(BoxFuture<'a, Result<CallAnswer, Halt>>),
}

/// Records a final answer in the answer memory the call's claim is in, telling `progress` how it
/// went. A store that fails adds its error to the answer's operator detail (the model still gets
/// the answer); a store that refuses it (the claim no longer held the call: its lease ran out
/// and a retry took it over) keeps what it holds, and the answer becomes that: interrupted, as
/// every retry is answered ("Contracts": "What each store promises").
async fn remember(answer: &mut Answer<'_>, progress: &Progress<'_>) {
    let Some(memory) = progress.memory() else {
        return;
    };
    // A halt (no answer: a retry runs the call) and a pause (not final) are not remembered.
    if answer.halts() || !answer.outcome.is_final() {
        return;
    }
    // The store copies what it keeps (a persistent one only serializes it).
    let recorded = memory
        .store
        .answered(memory.key, memory.token, answer.outcome, answer.result())
        .await;
    match recorded {
        Ok(()) => progress.set_recorded(Kept::Yes),
        Err(e) if e.is_fenced() => {
            let lost = memory.hold.and_then(|h| h.status().lost);
            tracing::error!(target: "toolgate::memory", tool_use_id = %memory.key.tool_use_id,
                error = %e, renewal = lost.as_deref().unwrap_or("none failed"),
                "the answer was refused: the claim no longer held the call, which the store \
                 holds as interrupted");
            answer.fenced(&e, lost.as_deref());
            progress.set_recorded(Kept::Fenced);
        }
        Err(e) => {
            tracing::error!(target: "toolgate::memory", tool_use_id = %memory.key.tool_use_id,
                error = %e, "the answer could not be remembered; a retry is not run again");
            answer.add_detail(&format!(
                "the answer memory could not record this answer ({e}): a retry within the \
                 claim's lease is refused as in progress, after it answered as interrupted"
            ));
            progress.set_recorded(Kept::Failed);
        }
    }
}
