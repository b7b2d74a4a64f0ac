//! Step 4 of a call: the PreToolUse chain run on the input, each hook in `(order, path)` order,
//! with the rewrite rule (a rewritten input is bounded, validated, and decided on by every hook
//! but the one that produced it) and the hooks' deadlines; the record of each hook run.

use std::time::Instant;

use serde_json::Value;

use crate::approval::ask::Asked;
use crate::audit::hook_run::{HookOutcome, HookRun};
use crate::base::future::{BoxFuture, Invoke};
use crate::base::panic::{CatchUnwind, catch};
use crate::base::timer::Raced;
use crate::content::message::ToolUse;
use crate::error::HookError;
use crate::hook::decision::Decision;
use crate::hook::definitions::PreHookDef;
use crate::hook::erased::Args;
use crate::hook::state::Env;
use crate::pipeline::inner::{Inner, ToolEntry};
use crate::pipeline::normalize::{Refused, check_bounds};
use crate::texts::{Problem, Problems};

use super::span;
use super::validate::validate;
use super::verdict::{HookFailure, Verdict};

impl Inner {
    /// Runs the tool's PreToolUse chain in order on `current` (ARCHITECTURE.md, "Contracts": "The
    /// PreToolUse chain and rewrites"): the tool runs only with an input every hook of its chain
    /// either allowed or produced. A `Rewrite` to a new input starts a new pass over the chain
    /// with it, from its first hook, that skips the rewriter (`state.producer`): the hooks
    /// before it decide again, the hooks after it see the new input, and the rewriter is not
    /// asked about the input it produced itself (so a rewrite that changes the input every time,
    /// a prefix, a default appended, applies once). A `Rewrite` equal to the input the hook saw
    /// counts as `Allow`. An `Ask` goes on to the next hook and is kept in `state.asks` (those
    /// of the last pass only: a rewrite starts them afresh). `Ok` with the arguments the tool runs
    /// with when every hook but the producer allowed (or asked) in one pass; `Err` when one
    /// denied, could not decide, rewrote the input into an invalid one, or the rewrites did not
    /// settle (see [`Inner::rewrite`]). Each hook run is spanned under `call_span`.
    pub(super) async fn run_chain<'a>(
        &'a self,
        tool: &'a ToolEntry,
        env: Env<'a>,
        current: &ToolUse,
        mut args: Args,
        state: &mut ChainState<'a>,
        call_span: &tracing::Span,
    ) -> Result<Args, Verdict<'a>> {
        'pass: loop {
            state.asks.clear();
            for &h in tool.chain.iter() {
                if state.producer == Some(h) {
                    // It produced the input: it decided on it when it rewrote.
                    continue;
                }
                let hook = &self.pre_hooks[h];
                let view = state.call.as_deref().unwrap_or(current);
                let span = span::hook_span(call_span, &hook.path);
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
                        state.runs.push(&hook.path, HookOutcome::Allow, &span);
                    }
                    Ok(Decision::Rewrite(input)) if input == view.input => {
                        state.runs.push(&hook.path, HookOutcome::Allow, &span);
                    }
                    Ok(Decision::Rewrite(input)) => {
                        state.runs.push(&hook.path, HookOutcome::Rewrite, &span);
                        args = self.rewrite(tool, &hook.path, Some(h), current, input, state)?;
                        // The new input's checks are not the next hook's time.
                        state.runs.restart();
                        continue 'pass;
                    }
                    Ok(Decision::Deny { reason, instead }) => {
                        state.runs.push(&hook.path, HookOutcome::Deny, &span);
                        return Err(Verdict::blocked(&hook.path, &reason, instead.as_deref()));
                    }
                    Ok(Decision::Ask { reason }) => {
                        state.runs.push(&hook.path, HookOutcome::Ask, &span);
                        state.asks.push(Asked {
                            hook: hook.path.to_string(),
                            reason,
                        });
                    }
                    Err(failure) => {
                        let decision = match failure {
                            HookFailure::Failed(_) => HookOutcome::Failed,
                            HookFailure::TimedOut(_) => HookOutcome::Timeout,
                        };
                        state.runs.push(&hook.path, decision, &span);
                        return Err(Verdict::hook_failed(&hook.path, failure));
                    }
                }
            }
            return Ok(args);
        }
    }

    /// A hook's `Rewrite(input)` to an input other than the current one (`by` its path,
    /// `producer` its index in `pre_hooks`), or a person's edit (`by`
    /// [`APPROVER`](super::approve::APPROVER), no producer: the approver is no hook of the chain,
    /// so every hook decides on the edit). The rewriter is recorded in `rewritten_by` whatever
    /// follows. A rewrite back to an input the call already had (its own, or an earlier
    /// rewrite's) halts the call as `hook_failed`, naming the rewriters since that input (the
    /// hooks undoing each other), and so does one past [`MAX_REWRITES`]: the chain would never
    /// settle. Otherwise the input is held to the input bounds and validated again: `Ok` with the
    /// new arguments, the rewritten call then being what the chain's next pass (without the
    /// producer) and the tool see; `Err` when the new input is invalid.
    pub(super) fn rewrite<'a>(
        &self,
        tool: &ToolEntry,
        by: &'a str,
        producer: Option<usize>,
        call: &ToolUse,
        input: Value,
        state: &mut ChainState<'a>,
    ) -> Result<Args, Verdict<'a>> {
        state.by.push(by);
        if let Some(since) = state.had(call, &input) {
            let cycle = &state.by[since..];
            return Err(Verdict::chain_looped(by, &state.by, cycle));
        }
        if state.by.len() > MAX_REWRITES {
            return Err(Verdict::chain_unsettled(by, &state.by, MAX_REWRITES));
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
                if let Some(previous) = state.call.replace(new) {
                    // The rewrite before this one produced it.
                    let produced_by = state.by.len() - 2;
                    state.earlier.push((previous.input, produced_by));
                }
                state.producer = producer;
                Ok(args)
            }
            Err(problems) => Err(Verdict::invalid_rewrite(&tool.name, by, &problems)),
        }
    }

    /// Awaits an async PreToolUse hook against its deadline.
    pub(super) async fn await_pre_hook(
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
}

/// The most rewrites one call's PreToolUse chain may make; one more halts the call as
/// `hook_failed` (ARCHITECTURE.md, "Contracts": "The PreToolUse chain and rewrites").
const MAX_REWRITES: usize = 8;

/// What the PreToolUse chain and a person made of one call (step 4), all of which its record
/// shows: the rewrites (the call with the last rewritten input, boxed: this lives in every
/// call future and is rarely set; the hook that produced it; the inputs of the rewrites before
/// it, to tell a loop and who made it; the hooks that rewrote, in order), the asks of the
/// chain's last pass, a person's answer, and the hook runs. Empty, it allocates nothing.
#[derive(Default)]
pub(crate) struct ChainState<'a> {
    pub(super) call: Option<Box<ToolUse>>,
    /// The index in `Inner::pre_hooks` of the hook that produced the input in `call`: the
    /// chain's next pass skips it. `None` before any rewrite, or after a person's edit.
    pub(super) producer: Option<usize>,
    /// Each input the call had before the one in `call` (its own excepted), with the index in
    /// `by` of the rewrite that produced it.
    pub(super) earlier: Vec<(Value, usize)>,
    pub(super) by: Vec<&'a str>,
    pub(super) asks: Vec<Asked>,
    /// A person's answer (boxed: most calls ask nobody, and this lives in every call future).
    pub(super) person: Option<Box<PersonsAnswer>>,
    /// The hooks that ran, with their decisions and durations (kept only when read).
    pub(crate) runs: HookRuns<'a>,
}

impl ChainState<'_> {
    /// Whether the call already had `input` (its own, or an earlier rewrite's; the current one
    /// is never asked about: a rewrite to it is an allow): the index in `by` of the first
    /// rewrite after it, the loop's first, or `None`.
    fn had(&self, call: &ToolUse, input: &Value) -> Option<usize> {
        if *input == call.input {
            return Some(0);
        }
        let earlier = self.earlier.iter().find(|(v, _)| v == input);
        earlier.map(|&(_, produced_by)| produced_by + 1)
    }

    /// Whether the chain's last pass asked for an approval the call does not have: a hook
    /// asked, and the effective input is not one a person approved.
    #[inline]
    pub(super) fn needs_approval(&self, current: &ToolUse) -> bool {
        !self.asks.is_empty() && {
            let effective = self.call.as_deref().unwrap_or(current);
            !self
                .person
                .as_ref()
                .is_some_and(|a| a.approved.contains(&effective.input))
        }
    }

    /// A person's answer, to be filled in (empty when there was none).
    pub(super) fn person(&mut self) -> &mut PersonsAnswer {
        self.person.get_or_insert_default()
    }

    /// Who approved the call, if a person did.
    pub(super) fn approved_by(&self) -> Option<&str> {
        self.person.as_ref()?.approved_by.as_deref()
    }

    /// Who declined the call, if a person did.
    pub(super) fn denied_by(&self) -> Option<&str> {
        self.person.as_ref()?.denied_by.as_deref()
    }
}

/// A person's answer to a call's asks: the inputs they approved, who approved or declined.
#[derive(Default)]
pub(super) struct PersonsAnswer {
    /// Inputs a person approved: an ask on one of them passes.
    pub(super) approved: Vec<Value>,
    pub(super) approved_by: Option<String>,
    pub(super) denied_by: Option<String>,
}

/// The PreToolUse hooks one call ran, in order, with their decisions and durations: kept only
/// when someone reads them (an audit log, `record_hook_runs`, or the call's span is enabled);
/// off (the default), it allocates nothing and reads no clock.
pub(crate) struct HookRuns<'a> {
    /// When the last run ended (the chain's start before the first); `None` when runs are not
    /// kept.
    pub(super) last: Option<Instant>,
    pub(crate) list: Vec<HookRun<'a>>,
}

impl Default for HookRuns<'_> {
    /// Keeps nothing (no chain ran, or it runs without records and spans).
    fn default() -> Self {
        HookRuns {
            last: None,
            list: Vec::new(),
        }
    }
}

impl<'a> HookRuns<'a> {
    /// Kept when `on` or the call's span is enabled, with room for a chain of `chain` hooks
    /// run once.
    #[inline]
    pub(super) fn new(on: bool, chain: usize, call_span: &tracing::Span) -> Self {
        let on = (on || !call_span.is_disabled()) && chain > 0;
        HookRuns {
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
    pub(super) fn restart(&mut self) {
        if let Some(last) = &mut self.last {
            *last = Instant::now();
        }
    }

    /// Records that `hook` decided `decision` (on its span too): its duration runs from the
    /// end of the run before it (or the chain's start), so each run costs one clock read.
    #[inline]
    pub(super) fn push(&mut self, hook: &'a str, decision: HookOutcome, span: &tracing::Span) {
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
