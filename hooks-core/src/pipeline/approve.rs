//! A person's approval, after the chain asked for one: the dispatcher's approver inline, or a
//! pause; and the start of a paused call resumed with a person's decision.

use crate::approval::ask::{Approval, ApprovalRequest};
use crate::base::panic::{CatchUnwind, catch};
use crate::base::timer::Raced;
use crate::content::message::ToolUse;
use crate::hook::erased::Args;
use crate::pipeline::call::{Call, Resolution, Resumed};
use crate::pipeline::chain::ChainState;
use crate::pipeline::inner::{Inner, ToolEntry};

use super::verdict::Verdict;

impl Inner {
    /// A person's approval of `call`, whose chain asked for it (`call.chain.asks`): the
    /// approver's answer, raced against the approval deadline; with no approver, `Pause` when
    /// the call's mode may pause (a `respond`), else a refusal (`blocked`: nobody can approve,
    /// fail closed). An edited input is a rewrite (recorded as by [`APPROVER`]): validated, then
    /// the chain runs again on it, the approval covering that input; a later rewrite that asks
    /// again goes back to the approver.
    pub(super) async fn approve<'a>(
        &'a self,
        tool: &'a ToolEntry,
        mut args: Args,
        call: &mut Call<'a>,
    ) -> Result<Approved, Verdict<'a>> {
        let (env, tool_use, may_pause) = (call.env, call.tool_use, call.mode.may_pause());
        let current = call.recorded.normalized();
        let span = &call.span;
        let state = &mut call.chain;
        loop {
            let Some(approver) = &self.approver else {
                return if may_pause {
                    Ok(Approved::Pause)
                } else {
                    Err(Verdict::needs_approval(&state.asks))
                };
            };
            let view = state.call.as_deref().unwrap_or(current);
            let request = ApprovalRequest {
                call: tool_use,
                input: &view.input,
                asked: &state.asks,
                context: env.context(),
            };
            let fut = match catch(|| approver.approve(request)) {
                Ok(fut) => fut,
                Err(p) => return Err(Verdict::approval_failed(&state.asks, p)),
            };
            let answer = match self.race(CatchUnwind(fut), self.approval_timeout).await {
                Raced::Done(Ok(answer)) => answer,
                Raced::Done(Err(p)) => return Err(Verdict::approval_failed(&state.asks, p)),
                Raced::TimedOut => {
                    let deadline = self.approval_timeout.unwrap_or_default();
                    return Err(Verdict::approval_timeout(&state.asks, deadline));
                }
                Raced::TimerFailed(p) => {
                    let why = format!("the dispatcher's timer panicked: {p}");
                    return Err(Verdict::approval_failed(&state.asks, why));
                }
            };
            match answer {
                Approval::Approve { by, .. } => {
                    state.person().approved_by = Some(by);
                    return Ok(Approved::Run(args));
                }
                Approval::Deny { by, reason } => {
                    state.person().denied_by = Some(by);
                    return Err(Verdict::declined(&state.asks, &reason));
                }
                Approval::Edit { by, input } => {
                    let edited = input != view.input;
                    let person = state.person();
                    person.approved_by = Some(by);
                    person.approved.push(input.clone());
                    if edited {
                        // No hook produced it: every hook of the chain decides on it.
                        args = self.rewrite(tool, APPROVER, None, current, input, state)?;
                        args = self
                            .run_chain(tool, env, current, args, state, span)
                            .await?;
                    }
                    if !state.needs_approval(current) {
                        return Ok(Approved::Run(args));
                    }
                }
            }
        }
    }

    /// The start of a resumed call: the rewrites it had when it paused (the last one applied
    /// again, validated, its hook the producer of the effective input as if it had just
    /// rewritten), and the person's approval of its effective input (or of their edit, applied
    /// as a rewrite by [`APPROVER`], which no hook produced). The chain then runs again, from its
    /// first hook, every hook but the producer deciding: a deny still wins, an ask about an
    /// approved input passes.
    pub(super) fn prime<'a>(
        &self,
        tool: &ToolEntry,
        current: &ToolUse,
        resumed: &Resumed<'a>,
        mut args: Args,
        state: &mut ChainState<'a>,
    ) -> Result<Args, Verdict<'a>> {
        let waiting = resumed.awaiting;
        let approval = match resumed.resolution {
            Resolution::Decided(a @ (Approval::Approve { .. } | Approval::Edit { .. })) => a,
            refused => {
                // Not run: the record shows the call as it paused.
                state
                    .by
                    .extend(waiting.rewritten_by.iter().map(String::as_str));
                if waiting.effective_input != current.input {
                    let call = current.with_input(waiting.effective_input.clone());
                    state.call = Some(Box::new(call));
                }
                state.asks = waiting.asked_by.clone();
                return Err(match refused {
                    Resolution::Decided(Approval::Deny { by, reason }) => {
                        state.person().denied_by = Some(by.clone());
                        Verdict::declined(&state.asks, reason)
                    }
                    Resolution::Expired { ttl } => Verdict::expired(&state.asks, ttl),
                    _ => Verdict::needs_approval(&state.asks),
                });
            }
        };
        if waiting.effective_input != current.input {
            let (last, before) = match waiting.rewritten_by.split_last() {
                Some((last, before)) => (last.as_str(), before),
                None => (APPROVER, &[][..]),
            };
            state.by.extend(before.iter().map(String::as_str));
            // The hook of the chain that made the last rewrite; none when the approver did.
            let producer = if last == APPROVER {
                None
            } else {
                let mut chain = tool.chain.iter().copied();
                chain.find(|&h| self.pre_hooks[h].path == last)
            };
            args = self.rewrite(
                tool,
                last,
                producer,
                current,
                waiting.effective_input.clone(),
                state,
            )?;
        }
        state.person().approved_by = Some(approval.by().to_owned());
        match approval {
            Approval::Edit { input, .. } => {
                state.person().approved.push(input.clone());
                let view = state.call.as_deref().unwrap_or(current);
                if *input != view.input {
                    let edited = input.clone();
                    args = self.rewrite(tool, APPROVER, None, current, edited, state)?;
                }
            }
            _ => state
                .person()
                .approved
                .push(waiting.effective_input.clone()),
        }
        Ok(args)
    }
}

/// What a person's approval lets happen: the tool runs with these arguments, or the turn
/// pauses for a person.
pub(super) enum Approved {
    Run(Args),
    Pause,
}

/// How a person's edit of the input shows in `rewritten_by`: the approver rewrote it.
pub(super) const APPROVER: &str = "<approver>";
