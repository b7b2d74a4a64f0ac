//! The life of one tool call (DESIGN.md): normalize → look up → validate → PreToolUse chain →
//! tool → PostToolUse observers. Exactly one `tool_result` comes out of every `tool_use`, or a
//! [`Halt`] carrying one. [`Inner::run_call`] reads as that life; how a call ends is in
//! `verdict.rs`, what the observers see and the record of a dropped call in `observe.rs`.

mod decide;
mod observe;
mod span;
mod verdict;

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::answer::CallAnswer;
use crate::approval::{Approval, ApprovalRequest, Asked};
use crate::content::{ToolResult, ToolResultContent, ToolUse};
use crate::context::HookContext;
use crate::decision::Decision;
use crate::definitions::PreHookDef;
use crate::erased::Args;
use crate::error::{Halt, HookError, ToolError};
use crate::future::{BoxFuture, Invoke};
use crate::hook_run::{HookDecision, HookRun};
use crate::inner::{Backend, Inner, ToolEntry};
use crate::limits::Limits;
use crate::normalize::{Normalized, Refused, check_bounds, normalize};
use crate::outcome::{CallRecord, Outcome};
use crate::panic::{CatchUnwind, catch};
use crate::pending::AwaitingCall;
use crate::schema::explain::{Integers, problems};
use crate::state::Env;
use crate::stats::Stats;
use crate::texts::{self, Problem, Problems};
use crate::timer::{Deadline, Race, Raced};

use observe::CancelGuard;
pub(crate) use observe::Progress;
use verdict::{Answer, HookFailure, Verdict};

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
        let mut rewrites = Rewrites::default();
        let mut awaiting = None;

        let verdict: Verdict<'_> = 'verdict: {
            let current: &ToolUse = match &recorded.normalized {
                Ok(c) => c,
                Err(Refused(msg)) => {
                    let problem = Problems::one(Problem::here(msg.clone()));
                    break 'verdict Verdict::invalid(&call.name, &problem);
                }
            };
            let Some(index) = found else {
                break 'verdict Verdict::unknown(&call.name, &self.available);
            };
            let tool = &self.tools[index];
            // 3. Validate.
            let args = match validate(tool, &current.input) {
                Ok(a) => a,
                Err(problems) => break 'verdict Verdict::invalid(&tool.name, &problems),
            };
            // A resumed call starts from its effective input, approved.
            let args = match &mode {
                Mode::Resume(r) => match self.prime(tool, current, r, args, &mut rewrites) {
                    Ok(a) => a,
                    Err(verdict) => break 'verdict verdict,
                },
                _ => args,
            };
            // 4. The PreToolUse chain, then a person's approval when a hook asked for it.
            rewrites.runs = HookRuns::new(self.hook_runs, tool.chain.len(), &span);
            let mut args = match self
                .run_chain(tool, env, current, args, &mut rewrites)
                .await
            {
                Ok(a) => a,
                Err(verdict) => break 'verdict verdict,
            };
            if rewrites.needs_approval(current) {
                // Boxed: the rare path's state would otherwise enlarge every call's future
                // (moved, whole, at each `.await` above it).
                let approval = Box::pin(self.approve(
                    tool,
                    env,
                    call,
                    current,
                    args,
                    &mut rewrites,
                    mode.may_pause(),
                ));
                match approval.await {
                    Ok(Approved::Run(a)) => args = a,
                    Ok(Approved::Pause) => {
                        let effective = rewrites.call.as_deref().unwrap_or(current);
                        awaiting = Some(AwaitingCall::new(
                            current,
                            &effective.input,
                            &rewrites.asks,
                            &rewrites.by,
                        ));
                        break 'verdict Verdict::awaiting();
                    }
                    Err(verdict) => break 'verdict verdict,
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
        };

        // A block run with other reads of its message lets the next one start: its tool
        // started (above), or it was answered without one (a halt excepted: nothing after it
        // starts).
        let slot = progress.and_then(Progress::slot);
        if let Some(slot) = &slot
            && !verdict.halts()
        {
            slot.release();
        }
        // 6. The `tool_result`, then the PostToolUse observers.
        let answer = Answer::new(call, verdict, self.limits.max_result_bytes);
        let record = answer.record(call, input, &rewrites, started.elapsed());
        if !span.is_disabled() {
            span::finish(&span, context, &record, self.span_content.as_ref());
        }
        drop(span);
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

    /// Runs the tool's PreToolUse chain in order on `current` (DESIGN.md, "Rewrites are
    /// re-authorized"): every hook must allow the input the tool will run with. A `Rewrite` to a
    /// new input starts the chain again from its first hook with it; a `Rewrite` equal to the
    /// input the hook saw counts as `Allow`. An `Ask` goes on to the next hook and is kept in
    /// `rewrites.asks` (those of the last pass only: a rewrite starts them afresh). `Ok` with the
    /// arguments the tool runs with when every hook allowed (or asked) in one pass; `Err` when
    /// one denied, could not decide, rewrote the input into an invalid one, or the rewrites did
    /// not settle (see [`Inner::rewrite`]).
    async fn run_chain<'a>(
        &'a self,
        tool: &'a ToolEntry,
        env: Env<'a>,
        current: &'a ToolUse,
        mut args: Args,
        rewrites: &mut Rewrites<'a>,
    ) -> Result<Args, Verdict<'a>> {
        'pass: loop {
            rewrites.asks.clear();
            for &h in tool.chain.iter() {
                let hook = &self.pre_hooks[h];
                let view = rewrites.call.as_deref().unwrap_or(current);
                let span = span::hook_span(&rewrites.runs.call_span, &hook.path);
                // A sync hook answers inline: no nested future on the common path. The hook
                // borrows the arguments (a typed hook reads them) only until it has answered.
                let decided = {
                    // Bound first: the closure borrowing `args` must not live across `.await`.
                    let invoked = catch(|| hook.imp.run(env, view, &*args));
                    match invoked {
                        Ok(Invoke::Ready(r)) => r.map_err(|e| HookFailure::Failed(e.to_string())),
                        Ok(Invoke::Pending(fut)) => self.await_pre_hook(hook, fut).await,
                        Err(p) => Err(HookFailure::Failed(format!("the hook panicked: {p}"))),
                    }
                };
                match decided {
                    Ok(Decision::Allow) => {
                        rewrites.runs.push(&hook.path, HookDecision::Allow, &span);
                    }
                    Ok(Decision::Rewrite(input)) if input == view.input => {
                        rewrites.runs.push(&hook.path, HookDecision::Allow, &span);
                    }
                    Ok(Decision::Rewrite(input)) => {
                        rewrites.runs.push(&hook.path, HookDecision::Rewrite, &span);
                        args = self.rewrite(tool, &hook.path, current, input, rewrites)?;
                        // The new input's checks are not the next hook's time.
                        rewrites.runs.restart();
                        continue 'pass;
                    }
                    Ok(Decision::Deny { reason, instead }) => {
                        rewrites.runs.push(&hook.path, HookDecision::Deny, &span);
                        return Err(Verdict::blocked(&hook.path, &reason, instead.as_deref()));
                    }
                    Ok(Decision::Ask { reason }) => {
                        rewrites.runs.push(&hook.path, HookDecision::Ask, &span);
                        rewrites.asks.push(Asked {
                            hook: hook.path.to_string(),
                            reason,
                        });
                    }
                    Err(failure) => {
                        let decision = match failure {
                            HookFailure::Failed(_) => HookDecision::Failed,
                            HookFailure::TimedOut(_) => HookDecision::Timeout,
                        };
                        rewrites.runs.push(&hook.path, decision, &span);
                        return Err(Verdict::hook_failed(&hook.path, failure));
                    }
                }
            }
            return Ok(args);
        }
    }

    /// A person's approval of a call whose chain asked for it (`rewrites.asks`): the approver's
    /// answer, raced against the approval deadline; with no approver, `Pause` when `may_pause`
    /// (a `respond`), else a refusal (`blocked`: nobody can approve, fail closed). An edited
    /// input is a rewrite (recorded as by [`APPROVER`]): validated, then the chain runs again on
    /// it, the approval covering that input; a later rewrite that asks again goes back to the
    /// approver.
    #[allow(clippy::too_many_arguments)]
    async fn approve<'a>(
        &'a self,
        tool: &'a ToolEntry,
        env: Env<'a>,
        call: &'a ToolUse,
        current: &'a ToolUse,
        mut args: Args,
        rewrites: &mut Rewrites<'a>,
        may_pause: bool,
    ) -> Result<Approved, Verdict<'a>> {
        loop {
            let Some(approver) = &self.approver else {
                return if may_pause {
                    Ok(Approved::Pause)
                } else {
                    Err(Verdict::needs_approval(&rewrites.asks))
                };
            };
            let view = rewrites.call.as_deref().unwrap_or(current);
            let request = ApprovalRequest {
                call,
                input: &view.input,
                asked: &rewrites.asks,
                context: env.context(),
            };
            let fut = match catch(|| approver.approve(request)) {
                Ok(fut) => fut,
                Err(p) => return Err(Verdict::approval_failed(&rewrites.asks, p)),
            };
            let answer = match self.race(CatchUnwind(fut), self.approval_timeout).await {
                Raced::Done(Ok(answer)) => answer,
                Raced::Done(Err(p)) => return Err(Verdict::approval_failed(&rewrites.asks, p)),
                Raced::TimedOut => {
                    let deadline = self.approval_timeout.unwrap_or_default();
                    return Err(Verdict::approval_timeout(&rewrites.asks, deadline));
                }
                Raced::TimerFailed(p) => {
                    let why = format!("the dispatcher's timer panicked: {p}");
                    return Err(Verdict::approval_failed(&rewrites.asks, why));
                }
            };
            match answer {
                Approval::Approve { by, .. } => {
                    rewrites.approved_by = Some(by);
                    return Ok(Approved::Run(args));
                }
                Approval::Deny { by, reason } => {
                    rewrites.denied_by = Some(by);
                    return Err(Verdict::declined(&rewrites.asks, &reason));
                }
                Approval::Edit { by, input } => {
                    rewrites.approved_by = Some(by);
                    rewrites.approved.push(input.clone());
                    if input != view.input {
                        args = self.rewrite(tool, APPROVER, current, input, rewrites)?;
                        args = self.run_chain(tool, env, current, args, rewrites).await?;
                    }
                    if !rewrites.needs_approval(current) {
                        return Ok(Approved::Run(args));
                    }
                }
            }
        }
    }

    /// The start of a resumed call: the rewrites it had when it paused (the last one applied
    /// again, validated), and the person's approval of its effective input (or of their
    /// edit, applied as a rewrite by [`APPROVER`]). The chain then runs from its first hook:
    /// a deny still wins, an ask about an approved input passes.
    fn prime<'a>(
        &self,
        tool: &ToolEntry,
        current: &ToolUse,
        resumed: &Resumed<'a>,
        mut args: Args,
        rewrites: &mut Rewrites<'a>,
    ) -> Result<Args, Verdict<'a>> {
        let waiting = resumed.awaiting;
        let approval = match resumed.resolution {
            Resolution::Decided(a @ (Approval::Approve { .. } | Approval::Edit { .. })) => a,
            refused => {
                // Not run: the record shows the call as it paused.
                rewrites
                    .by
                    .extend(waiting.rewritten_by.iter().map(String::as_str));
                if waiting.effective_input != current.input {
                    let call = current.with_input(waiting.effective_input.clone());
                    rewrites.call = Some(Box::new(call));
                }
                rewrites.asks = waiting.asked_by.clone();
                return Err(match refused {
                    Resolution::Decided(Approval::Deny { by, reason }) => {
                        rewrites.denied_by = Some(by.clone());
                        Verdict::declined(&rewrites.asks, reason)
                    }
                    Resolution::Expired { ttl } => Verdict::expired(&rewrites.asks, ttl),
                    _ => Verdict::needs_approval(&rewrites.asks),
                });
            }
        };
        if waiting.effective_input != current.input {
            let (last, before) = match waiting.rewritten_by.split_last() {
                Some((last, before)) => (last.as_str(), before),
                None => (APPROVER, &[][..]),
            };
            rewrites.by.extend(before.iter().map(String::as_str));
            args = self.rewrite(
                tool,
                last,
                current,
                waiting.effective_input.clone(),
                rewrites,
            )?;
        }
        rewrites.approved_by = Some(approval.by().to_owned());
        match approval {
            Approval::Edit { input, .. } => {
                rewrites.approved.push(input.clone());
                let view = rewrites.call.as_deref().unwrap_or(current);
                if *input != view.input {
                    args = self.rewrite(tool, APPROVER, current, input.clone(), rewrites)?;
                }
            }
            _ => rewrites.approved.push(waiting.effective_input.clone()),
        }
        Ok(args)
    }

    /// A hook's `Rewrite(input)` to an input other than the current one (or a person's edit,
    /// `by` [`APPROVER`]). The rewriter is recorded in `rewritten_by` whatever follows. A
    /// rewrite back to an input the call already had (its own, or an earlier rewrite's) or past
    /// [`MAX_REWRITES`] halts the call as `hook_failed` (the chain would never settle);
    /// otherwise the input is held to the input bounds and validated again: `Ok` with the new
    /// arguments, the rewritten call then being what the chain, from its first hook, and the
    /// tool see; `Err` when the new input is invalid.
    fn rewrite<'a>(
        &self,
        tool: &ToolEntry,
        by: &'a str,
        call: &ToolUse,
        input: Value,
        rewrites: &mut Rewrites<'a>,
    ) -> Result<Args, Verdict<'a>> {
        rewrites.by.push(by);
        if input == call.input || rewrites.earlier.contains(&input) {
            return Err(Verdict::chain_looped(by, &rewrites.by));
        }
        if rewrites.by.len() > MAX_REWRITES {
            return Err(Verdict::chain_unsettled(by, &rewrites.by, MAX_REWRITES));
        }
        let refused = |Refused(m)| Problems::one(Problem::here(m));
        let checked = match &input {
            Value::Object(_) => check_bounds(&input, &self.limits)
                .map_err(refused)
                .and_then(|()| validate(tool, &input)),
            other => Err(refused(Refused::not_object(other))),
        };
        match checked {
            Ok(args) => {
                let new = Box::new(call.with_input(input));
                if let Some(previous) = rewrites.call.replace(new) {
                    rewrites.earlier.push(previous.input);
                }
                Ok(args)
            }
            Err(problems) => Err(Verdict::invalid_rewrite(&tool.name, by, &problems)),
        }
    }

    /// Awaits an async PreToolUse hook against its deadline.
    async fn await_pre_hook(
        &self,
        hook: &PreHookDef,
        fut: BoxFuture<'_, Result<Decision, HookError>>,
    ) -> Result<Decision, HookFailure> {
        let deadline = hook.timeout.or(self.hook_timeout);
        match self.race(CatchUnwind(fut), deadline).await {
            Raced::Done(Ok(r)) => r.map_err(|e| HookFailure::Failed(e.to_string())),
            Raced::Done(Err(p)) => Err(HookFailure::Failed(format!("the hook panicked: {p}"))),
            Raced::TimedOut => Err(HookFailure::TimedOut(deadline.unwrap_or_default())),
            Raced::TimerFailed(p) => Err(HookFailure::Failed(format!(
                "the dispatcher's timer panicked: {p}"
            ))),
        }
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

/// A tool started: done already (sync), or a future to await (async).
enum Started<'a> {
    Done(Verdict<'a>),
    Local(BoxFuture<'a, Result<ToolResultContent, ToolError>>),
    Caller(BoxFuture<'a, Result<CallAnswer, Halt>>),
}

/// The most rewrites one call's PreToolUse chain may make; one more halts the call as
/// `hook_failed` (DESIGN.md, "Rewrites are re-authorized").
const MAX_REWRITES: usize = 8;

/// The PreToolUse rewrites of one call: the call with the last rewritten input (boxed: this
/// lives in every call future and is rarely set), the inputs of the rewrites before it (to
/// tell a loop), and the hooks that rewrote, in order; and its approval: the asks of the
/// chain's last pass, the inputs a person approved, who approved or declined. Empty, it
/// allocates nothing.
#[derive(Default)]
pub(crate) struct Rewrites<'a> {
    call: Option<Box<ToolUse>>,
    earlier: Vec<Value>,
    by: Vec<&'a str>,
    asks: Vec<Asked>,
    /// Inputs a person approved: an ask on one of them passes.
    pub(crate) approved: Vec<Value>,
    approved_by: Option<String>,
    denied_by: Option<String>,
    /// The hooks that ran, with their decisions and durations (kept only when read).
    pub(crate) runs: HookRuns<'a>,
}

impl Rewrites<'_> {
    /// Whether the chain's last pass asked for an approval the call does not have: a hook
    /// asked, and the effective input is not one a person approved.
    #[inline]
    fn needs_approval(&self, current: &ToolUse) -> bool {
        !self.asks.is_empty() && {
            let effective = self.call.as_deref().unwrap_or(current);
            !self.approved.contains(&effective.input)
        }
    }
}

/// The PreToolUse hooks one call ran, in order, with their decisions and durations: kept only
/// when someone reads them (an audit log, `record_hook_runs`, or the call's span is enabled);
/// off (the default), it allocates nothing and reads no clock.
pub(crate) struct HookRuns<'a> {
    /// The call's span (disabled when nobody listens): each hook run gets a child.
    call_span: tracing::Span,
    /// When the last run ended (the chain's start before the first); `None` when runs are not
    /// kept.
    last: Option<Instant>,
    pub(crate) list: Vec<HookRun<'a>>,
}

impl Default for HookRuns<'_> {
    /// Keeps nothing (no chain ran, or it runs without records and spans).
    fn default() -> Self {
        HookRuns {
            call_span: tracing::Span::none(),
            last: None,
            list: Vec::new(),
        }
    }
}

impl<'a> HookRuns<'a> {
    /// Kept when `on` or the call's span is enabled, with room for a chain of `chain` hooks
    /// run once.
    #[inline]
    fn new(on: bool, chain: usize, call_span: &tracing::Span) -> Self {
        let on = (on || !call_span.is_disabled()) && chain > 0;
        HookRuns {
            call_span: call_span.clone(),
            last: on.then(Instant::now),
            list: if on {
                Vec::with_capacity(chain)
            } else {
                Vec::new()
            },
        }
    }

    /// Starts the next run's clock now (after a rewrite's checks).
    #[inline]
    fn restart(&mut self) {
        if let Some(last) = &mut self.last {
            *last = Instant::now();
        }
    }

    /// Records that `hook` decided `decision` (on its span too): its duration runs from the
    /// end of the run before it (or the chain's start), so each run costs one clock read.
    #[inline]
    fn push(&mut self, hook: &'a str, decision: HookDecision, span: &tracing::Span) {
        span::decided(span, decision);
        if let Some(last) = &mut self.last {
            let now = Instant::now();
            let micros = now.saturating_duration_since(*last).as_micros();
            *last = now;
            let duration_us = u64::try_from(micros).unwrap_or(u64::MAX);
            self.list.push(HookRun::new(hook, decision, duration_us));
        }
    }
}

/// What a person's approval lets happen: the tool runs with these arguments, or the turn
/// pauses for a person.
enum Approved {
    Run(Args),
    Pause,
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

/// How a person's edit of the input shows in `rewritten_by`: the approver rewrote it.
pub(crate) const APPROVER: &str = "<approver>";

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

/// Validates an input for a tool. On failure: every problem found, for the model (see
/// `texts::invalid_input`).
///
/// A `#[tool]` or [`ToolDef`](crate::ToolDef): the unknown-field check, then the argument type's
/// `Deserialize` (user code: a panic in it is a refusal, not an escape); when either refuses, the
/// input walk (`schema/explain.rs`) lists every problem against the tool's validation schema,
/// unknown fields and wrong values alike; when the walk finds nothing, the unknown field found, or
/// serde's own message (cut to a bound), without a path.
///
/// A wrapped caller: the input walk against the caller's schema is the validator; with the
/// `full-validation` feature, the schema compiled by `boon` then applies the keywords the walk
/// does not (`pattern`, …). Its arguments are `()` (its input goes to it as JSON); boxing a
/// zero-sized value allocates nothing.
fn validate(tool: &ToolEntry, input: &Value) -> Result<Args, Problems> {
    let imp = match &tool.backend {
        Backend::Local(imp) => imp,
        Backend::Caller { .. } => return validate_for_caller(tool, input),
    };
    let unknown = tool.fields.check(input).err();
    let mut serde_message = None;
    if unknown.is_none() {
        match catch(|| imp.validate(input)) {
            Ok(Ok(args)) => return Ok(args),
            Ok(Err(message)) => serde_message = Some(message),
            Err(p) => {
                tracing::error!(target: "toolgate::validation", tool = %tool.name, panic = %p,
                    "the tool's input type panicked while deserializing");
                return Err(Problems::one(Problem::here(
                    texts::INPUT_UNREADABLE.to_owned(),
                )));
            }
        }
    }
    let report = problems(&tool.validation, input, Integers::Serde);
    if !report.problems.is_empty() {
        return Err(report.problems);
    }
    let problem = match (unknown, serde_message) {
        (Some(e), _) => {
            let expected: Vec<&str> = e.expected.iter().map(String::as_str).collect();
            Problem {
                path: e.path_text(),
                message: texts::unknown_field(&e.field, &expected),
            }
        }
        (None, Some(message)) => Problem::here(texts::deserializer_message(&message)),
        (None, None) => Problem::here(texts::INPUT_UNREADABLE.to_owned()),
    };
    Err(Problems::one(problem))
}

/// A wrapped caller's input against its schema (see [`validate`]).
fn validate_for_caller(tool: &ToolEntry, input: &Value) -> Result<Args, Problems> {
    let report = problems(&tool.validation, input, Integers::JsonSchema);
    if !report.problems.is_empty() {
        return Err(report.problems);
    }
    if report.incomplete {
        return Err(Problems::one(Problem::here(
            texts::TOO_COMPLEX_TO_CHECK.to_owned(),
        )));
    }
    #[cfg(feature = "full-validation")]
    if let Some(full) = &tool.full {
        full.validate(input)?;
    }
    Ok(Box::new(()))
}
