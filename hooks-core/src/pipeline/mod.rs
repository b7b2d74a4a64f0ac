//! The life of one tool call (ARCHITECTURE.md, "The life of one call"): normalize → look up →
//! validate → PreToolUse chain → tool → PostToolUse observers. Exactly one `tool_result` comes out
//! of every `tool_use`, or a [`Halt`] carrying one. [`Inner::run_call`] reads as that life; how a
//! call ends is in `verdict.rs`, what the observers see and the record of a dropped call in
//! `observe.rs`.

mod approve;
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

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::approval::ask::Approval;
use crate::approval::pending::AwaitingCall;
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
use crate::pipeline::limits::Limits;
use crate::pipeline::normalize::{Normalized, Refused, check_bounds, normalize};
use crate::pipeline::stats::Stats;
use crate::texts::{self, Problem, Problems};

use approve::Approved;
use chain::HookRuns;
pub(crate) use chain::Rewrites;
use observe::CancelGuard;
pub(crate) use observe::{Kept, Memory, Progress};
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
    /// The life of one call (ARCHITECTURE.md, "The life of one call"): steps 1 to 5 decide how
    /// it ends ([`steps`](Self::steps)), step 6 answers it and shows the observers its record
    /// ([`finish_call`](Self::finish_call)). A guard armed from the start records the call as
    /// `cancelled` if the host drops it on the way.
    pub(crate) async fn run_call_in<'a>(
        &'a self,
        context: &'a HookContext,
        stats: Option<&'a Stats>,
        call: &'a ToolUse,
        progress: Option<&'a Progress<'a>>,
        mode: Mode<'_, 'a>,
    ) -> Result<CallAnswer, Halt> {
        let started = Instant::now();
        let span = span::call_span(context, call);
        let env = Env::new(context, &self.states);
        // 1. Normalize. 2. Look up: before the refusal is answered, so the summary's `tools`
        // counts every call of a known tool, an input refused at normalization included.
        let recorded = Recorded::new(call, &self.limits);
        let found = self.find(&call.name);
        let input = recorded.input(call);
        let mut guard = CancelGuard::new(self, env, stats, call, input, found, started);
        guard.progress = progress;
        guard.span = Some(&span);
        let mut rewrites = Rewrites::default();
        let mut awaiting = None;
        let verdict = self
            .steps(
                env,
                call,
                &recorded,
                found,
                &mode,
                &span,
                &mut guard,
                &mut rewrites,
                &mut awaiting,
            )
            .await;
        let ended = Ended {
            verdict,
            rewrites,
            awaiting,
            started,
        };
        self.finish_call(env, stats, call, input, found, mode, &span, guard, ended)
            .await
    }

    /// Steps 1 to 5 of a call: the normalized input, the tool, the validated arguments (a
    /// resumed call primed with its approved input), the PreToolUse chain and a person's
    /// approval when a hook asked, then the tool. The verdict of the first step that ends the
    /// call; `awaiting` gets what a pending turn keeps of a call that paused.
    #[allow(clippy::too_many_arguments)]
    async fn steps<'a>(
        &'a self,
        env: Env<'a>,
        call: &'a ToolUse,
        recorded: &'a Recorded<'a>,
        found: Option<usize>,
        mode: &Mode<'_, 'a>,
        span: &tracing::Span,
        guard: &mut CancelGuard<'_>,
        rewrites: &mut Rewrites<'a>,
        awaiting: &mut Option<AwaitingCall>,
    ) -> Verdict<'a> {
        let current: &ToolUse = match &recorded.normalized {
            Ok(c) => c,
            Err(Refused(msg)) => {
                let problem = Problems::one(Problem::here(msg.clone()));
                return Verdict::invalid(&call.name, &problem);
            }
        };
        let Some(index) = found else {
            return Verdict::unknown(&call.name, &self.available);
        };
        let tool = &self.tools[index];
        // 3. Validate.
        let args = match validate(tool, &current.input) {
            Ok(a) => a,
            Err(problems) => return Verdict::invalid(&tool.name, &problems),
        };
        // A resumed call starts from its effective input, approved.
        let args = match mode {
            Mode::Resume(r) => match self.prime(tool, current, r, args, rewrites) {
                Ok(a) => a,
                Err(verdict) => return verdict,
            },
            _ => args,
        };
        // 4. The PreToolUse chain, then a person's approval when a hook asked for it.
        rewrites.runs = HookRuns::new(self.hook_runs, tool.chain.len(), span);
        let mut args = match self.run_chain(tool, env, current, args, rewrites).await {
            Ok(a) => a,
            Err(verdict) => return verdict,
        };
        if rewrites.needs_approval(current) {
            // Boxed: the rare path's state would otherwise enlarge every call's future
            // (moved, whole, at each `.await` above it).
            let may_pause = mode.may_pause();
            let approval =
                Box::pin(self.approve(tool, env, call, current, args, rewrites, may_pause));
            match approval.await {
                Ok(Approved::Run(a)) => args = a,
                Ok(Approved::Pause) => {
                    return match self.paused(env, current, rewrites) {
                        Ok(waiting) => {
                            *awaiting = Some(waiting);
                            Verdict::awaiting()
                        }
                        Err(why) => Verdict::cannot_pause(&rewrites.asks, why),
                    };
                }
                Err(verdict) => return verdict,
            }
        }
        // 5. The tool.
        guard.tool_starts();
        let view = rewrites.call.as_deref().unwrap_or(current);
        match self.start_tool(tool, env, view, args) {
            Started::Done(verdict) => verdict,
            Started::Local(fut) => self.await_local_tool(tool, fut).await,
            Started::Caller(fut) => self.await_caller(tool, fut).await,
        }
    }

    /// Step 6 of a call: a block run with other reads of its message lets the next one start,
    /// the verdict becomes the `tool_result` and the record, the span records how it ended, a
    /// paused call hands its state to the pending turn, and the PostToolUse observers see the
    /// record (in `tool_use` order among the reads of a message); then the guard is disarmed.
    #[allow(clippy::too_many_arguments)]
    async fn finish_call<'a>(
        &'a self,
        env: Env<'a>,
        stats: Option<&'a Stats>,
        call: &'a ToolUse,
        input: &'a Value,
        found: Option<usize>,
        mode: Mode<'_, 'a>,
        span: &tracing::Span,
        mut guard: CancelGuard<'_>,
        ended: Ended<'a>,
    ) -> Result<CallAnswer, Halt> {
        let Ended {
            verdict,
            rewrites,
            awaiting,
            started,
        } = ended;
        // A block run with other reads of its message lets the next one start: its tool
        // started (in `steps`), or it was answered without one (a halt excepted: nothing after
        // it starts).
        let slot = guard.progress.and_then(Progress::slot);
        if let Some(slot) = &slot
            && !verdict.halts()
        {
            slot.release();
        }
        let mut answer = Answer::new(call, verdict, self.limits.max_result_bytes);
        if let Some(progress) = guard.progress {
            // Remembered before anyone sees it: a retry from now on is a replay, and an answer
            // the memory could not keep is on the audit line.
            remember(&mut answer, progress).await;
        }
        let record = answer.record(call, input, &rewrites, started.elapsed());
        if !span.is_disabled() {
            span::finish(span, env.context(), &record, self.span_content.as_ref());
        }
        if let (Mode::Pause(slot), Some(awaiting)) = (mode, awaiting) {
            *slot = Some(awaiting);
        }
        guard.stage = "while the observers ran";
        if let Some(slot) = &slot {
            // Observers and audit lines follow `tool_use` order.
            slot.turn_to_observe().await;
        }
        if self.observers_sync {
            self.observe_sync(env, stats, &record, self.observers_for(found));
        } else {
            self.observe(env, stats, &record, &mut guard).await;
        }
        guard.finish(answer.outcome);
        answer.into_answer()
    }

    /// What a pending turn keeps of a call that pauses: its inputs as the audit line shows
    /// them, the fields the audit log's redaction hides sealed (`approval/seal.rs`).
    ///
    /// # Errors
    /// The operator's detail when the call cannot pause without keeping a hidden field in
    /// clear (no seal key, or a build without the `seal` feature).
    fn paused(
        &self,
        env: Env<'_>,
        current: &ToolUse,
        rewrites: &Rewrites<'_>,
    ) -> Result<AwaitingCall, String> {
        let effective = rewrites.call.as_deref().unwrap_or(current);
        let mut waiting =
            AwaitingCall::new(current, &effective.input, &rewrites.asks, &rewrites.by);
        let ctx = env.context();
        self.sealing
            .seal(&mut waiting, ctx.session_id(), ctx.user_id())?;
        Ok(waiting)
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
        call: &ToolUse,
    ) {
        let recorded = Recorded::new(call, &self.limits);
        let env = Env::new(context, &self.states);
        let tool = self.find(&call.name);
        let input = recorded.input(call);
        let mut guard = CancelGuard::new(self, env, stats, call, input, tool, Instant::now());
        guard.stage = "before it started, while an earlier block of its message ran";
        drop(guard);
    }

    /// Answers a block that is not run (`max_tokens`, or after a halt): observers see it with
    /// outcome `not_run`; the returned result says why.
    pub(crate) async fn not_run(
        &self,
        context: &HookContext,
        stats: Option<&Stats>,
        call: &ToolUse,
        why: &str,
    ) -> ToolResult {
        let started = Instant::now();
        let env = Env::new(context, &self.states);
        let tool = self.find(&call.name);
        let recorded = Recorded::new(call, &self.limits);
        let input = recorded.input(call);
        let mut guard = CancelGuard::new(self, env, stats, call, input, tool, started);
        let result = ToolResult::error(call.id.clone(), texts::not_run(why));
        let record = CallRecord::not_run(call, input, &result, started.elapsed());
        self.observe(env, stats, &record, &mut guard).await;
        guard.finish(Outcome::NotRun);
        result
    }

    /// Answers a block again from the session's memory (`replay`): nothing runs, observers see
    /// the remembered `outcome` and `result` with `replay: true`, and the session's counts do
    /// not change. `detail` says why, for the operator.
    pub(crate) async fn replay(
        &self,
        context: &HookContext,
        stats: Option<&Stats>,
        call: &ToolUse,
        outcome: Outcome,
        result: &ToolResult,
        detail: &str,
    ) {
        let started = Instant::now();
        let env = Env::new(context, &self.states);
        let tool = self.find(&call.name);
        let recorded = Recorded::new(call, &self.limits);
        let input = recorded.input(call);
        let mut guard = CancelGuard::new(self, env, stats, call, input, tool, started);
        guard.replay = true;
        let record = CallRecord {
            detail: Some(detail),
            replay: true,
            ..CallRecord::new(call, input, outcome, Some(result), started.elapsed())
        };
        self.observe(env, stats, &record, &mut guard).await;
        guard.finish(outcome);
    }
}

/// How steps 1 to 5 ended a call, for step 6: the verdict, the chain's rewrites and approval,
/// what a paused call keeps, and when the call started.
struct Ended<'a> {
    verdict: Verdict<'a>,
    rewrites: Rewrites<'a>,
    awaiting: Option<AwaitingCall>,
    started: Instant,
}

/// A tool started: done already (sync), or a future to await (async).
enum Started<'a> {
    Done(Verdict<'static>),
    Local(BoxFuture<'a, Result<ToolResultContent, ToolError>>),
    Caller(BoxFuture<'a, Result<CallAnswer, Halt>>),
}

/// What happens to a call that needs a person's approval when the dispatcher has no approver.
pub(crate) enum Mode<'m, 'a> {
    /// It is blocked (`Session::call`, a wrapped dispatcher): nobody can approve it here.
    Block,
    /// It pauses (`Session::respond`): its tool does not run, observers see it as
    /// `awaiting_approval` (not final), the slot receives what a pending turn keeps of it, and
    /// the answer (outcome `awaiting_approval`, a result with no content) is not for the model.
    Pause(&'m mut Option<AwaitingCall>),
    /// It was paused and a person approved it: it resumes (see `Inner::prime`); an ask about
    /// an input nobody approved is then blocked.
    Resume(Resumed<'a>),
}

impl Mode<'_, '_> {
    fn may_pause(&self) -> bool {
        matches!(self, Mode::Pause(_))
    }
}

/// A paused call and how it ends.
pub(crate) struct Resumed<'a> {
    pub(crate) awaiting: &'a AwaitingCall,
    pub(crate) resolution: Resolution<'a>,
}

/// How a paused call ends.
#[derive(Clone, Copy)]
pub(crate) enum Resolution<'a> {
    /// A person's decision: approved (it runs, its chain first), edited, or declined
    /// (`blocked`).
    Decided(&'a Approval),
    /// The pending turn outlived its time to live: `blocked`, not run.
    Expired { ttl: Duration },
    /// The turn cannot wait for it (a later block halted): `blocked`, as where nobody can
    /// approve.
    Unapproved,
}

/// The input a record (and the audit line) shows: the normalized input; the raw one when it
/// could not be normalized; a short note instead of an input refused for its size or depth, so
/// a huge or deeply nested input is never copied into the log (nor walked without bound).
struct Recorded<'a> {
    normalized: Result<Normalized<'a>, Refused>,
    omitted: Option<Value>,
}

impl<'a> Recorded<'a> {
    fn new(call: &'a ToolUse, limits: &Limits) -> Self {
        let normalized = normalize(call, limits);
        let omitted = match &normalized {
            Ok(_) => None,
            Err(_) => check_bounds(&call.input, limits).err().map(|_| {
                Value::String(format!(
                    "[input not recorded: over the input limits ({} bytes, {} levels)]",
                    limits.max_input_bytes, limits.max_input_depth
                ))
            }),
        };
        Recorded {
            normalized,
            omitted,
        }
    }

    fn input(&'a self, call: &'a ToolUse) -> &'a Value {
        match (&self.normalized, &self.omitted) {
            (Ok(c), _) => &c.input,
            (Err(_), Some(note)) => note,
            (Err(_), None) => &call.input,
        }
    }
}

/// Records a final answer in the answer memory the call's claim is in, telling `progress` how it
/// went; a store that fails adds its error to the answer's operator detail (the model still
/// gets the answer).
async fn remember(answer: &mut Answer<'_>, progress: &Progress<'_>) {
    let Some(memory) = progress.memory() else {
        return;
    };
    // A halt (no answer: a retry runs the call) and a pause (not final) are not remembered.
    if answer.halts() || !answer.outcome.is_final() {
        return;
    }
    // The store copies what it keeps (a persistent one only serializes it).
    match memory
        .store
        .answered(memory.key, answer.outcome, answer.result())
        .await
    {
        Ok(()) => progress.set_recorded(Kept::Yes),
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
