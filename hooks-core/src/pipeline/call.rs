//! One call's state, from its `tool_use` to its `tool_result` and record (ARCHITECTURE.md, "The
//! life of one call"): the [`Call`] that [`Call::new`] builds and every step takes, the input its
//! record shows ([`Recorded`]), what happens to it when it needs a person ([`Mode`]); what a
//! session learns of it in flight ([`Progress`]) and the claim its answer is remembered under
//! ([`Memory`]); and the `cancelled` record it leaves when the host drops it unfinished.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::approval::ask::Approval;
use crate::approval::pending::AwaitingCall;
use crate::audit::outcome::{CallRecord, LeaseRecord, Outcome};
use crate::content::message::ToolUse;
use crate::hook::context::HookContext;
use crate::hook::state::Env;
use crate::pipeline::chain::ChainState;
use crate::pipeline::inner::Inner;
use crate::pipeline::limits::Limits;
use crate::pipeline::normalize::{Normalized, Refused, check_bounds, normalize};
use crate::pipeline::order::Slot;
use crate::pipeline::stats::Stats;
use crate::pipeline::verdict::Answer;
use crate::store::{AnswerStore, CallKey, Hold, Token, renew_every};

use super::span;

/// One call from start to end: what every step reads (the session's context, the `tool_use`,
/// its input as normalized and as recorded, its tool, when it started, its span, its [`Mode`],
/// what the session learns of it and the claim its answer goes under) and what the steps change
/// (the chain's state, where it is). Built once by [`Call::new`], at the start of every way a
/// `tool_use` is answered (run, `not_run`, replayed, given up on before it started); the steps
/// take it by reference, so the call's future holds it once.
///
/// Armed from the start until [`finish`](Self::finish): dropped while armed (the host dropped
/// the call's future), it counts the call as `cancelled`, ends its span so, and shows its record
/// to the sync observers that have not seen it (ARCHITECTURE.md, "Contracts": "Deadlines and
/// bounds").
pub(super) struct Call<'a> {
    inner: &'a Inner,
    /// The session's trusted context and the dispatcher's state, as hooks and the tool get them.
    pub(super) env: Env<'a>,
    /// The session's counters; `None` for a call outside a session (a wrapped dispatcher's).
    pub(super) stats: Option<&'a Stats>,
    /// The `tool_use` block as the model sent it.
    pub(super) tool_use: &'a ToolUse,
    /// Its input normalized (step 1), or why not, and the input its record shows.
    pub(super) recorded: Recorded<'a>,
    /// Its tool's index in `Inner::tools` (step 2); `None` for a name this dispatcher does not
    /// have.
    pub(super) tool: Option<usize>,
    pub(super) started: Instant,
    /// The `execute_tool` span (`span.rs`); disabled for a call answered without running.
    pub(super) span: tracing::Span,
    /// What happens when it needs a person's approval; a paused call leaves what a pending turn
    /// keeps of it in [`Mode::Pause`]'s slot.
    pub(super) mode: Mode<'a, 'a>,
    /// What the session learns of the call in flight, and the claim in the answer memory its
    /// answer is recorded under (`None` outside a session).
    pub(super) progress: Option<&'a Progress<'a>>,
    /// What the PreToolUse chain and a person made of it (step 4).
    pub(super) chain: ChainState<'a>,
    /// Where the call is, for the `detail` of the record a drop leaves.
    pub(super) stage: &'static str,
    /// How many of its observers have finished. An atomic (one thread writes it) so that the
    /// observers can be shown a record that borrows the call while the call future stays `Send`.
    observers_done: AtomicUsize,
    armed: bool,
    /// A replayed answer: not counted, and nothing recorded when dropped (the call's own line
    /// was written when it ran).
    pub(super) replay: bool,
}

impl<'a> Call<'a> {
    /// A call of `tool_use` in `context`, started now: its input normalized and held to the
    /// input bounds (step 1), its tool looked up (step 2); armed, at the stage "before the tool
    /// ran", with no span (a call that runs gets one: `Inner::run_call_in`), in `mode`.
    #[inline]
    pub(super) fn new(
        inner: &'a Inner,
        context: &'a HookContext,
        stats: Option<&'a Stats>,
        tool_use: &'a ToolUse,
        progress: Option<&'a Progress<'a>>,
        mode: Mode<'a, 'a>,
    ) -> Self {
        let started = Instant::now();
        Call {
            inner,
            env: Env::new(context, &inner.states),
            stats,
            tool_use,
            recorded: Recorded::new(tool_use, &inner.limits),
            tool: inner.find(&tool_use.name),
            started,
            span: tracing::Span::none(),
            mode,
            progress,
            chain: ChainState::default(),
            stage: "before the tool ran",
            observers_done: AtomicUsize::new(0),
            armed: true,
            replay: false,
        }
    }

    /// The record observers see of the call, ended with `answer`: the answer's part (outcome,
    /// result, hook at fault, detail), the input as recorded, what the chain made of it
    /// (`effective_input`, the hooks that rewrote, the hooks that ran, who asked, approved or
    /// declined), and how long it took until now.
    pub(super) fn record<'r>(&'r self, answer: &'r Answer<'_>) -> CallRecord<'r> {
        let state = &self.chain;
        let duration = self.started.elapsed();
        CallRecord {
            effective_input: state.call.as_ref().map(|r| &r.input),
            hooks: &state.runs.list,
            rewritten_by: &state.by,
            asked_by: &state.asks,
            approved_by: state.approved_by(),
            denied_by: state.denied_by(),
            ..answer.record(self.tool_use, self.recorded.input(), duration)
        }
    }

    /// The call paused for a person: what a pending turn keeps of it (the effective input, who
    /// asked, who rewrote; its inputs as the audit line shows them, the fields the audit log's
    /// redaction hides sealed, `approval/seal.rs`) goes to [`Mode::Pause`]'s slot.
    ///
    /// # Errors
    /// The operator's detail when the call cannot pause without keeping a hidden field in
    /// clear (no seal key, or a build without the `seal` feature); nothing goes to the slot.
    pub(super) fn pause(&mut self) -> Result<(), String> {
        let current = self.recorded.normalized();
        let effective = self.chain.call.as_deref().unwrap_or(current);
        let mut waiting =
            AwaitingCall::new(current, &effective.input, &self.chain.asks, &self.chain.by);
        let ctx = self.env.context();
        self.inner
            .sealing
            .seal(&mut waiting, ctx.session_id(), ctx.user_id())?;
        if let Mode::Pause(slot) = &mut self.mode {
            **slot = Some(waiting);
        }
        Ok(())
    }

    /// The tool (or wrapped caller) is about to start: the session learns it (a call dropped
    /// from now on is never run again), and a read run with others lets the next one start.
    #[inline]
    pub(super) fn tool_starts(&mut self) {
        self.stage = "while the tool ran";
        if let Some(p) = self.progress {
            p.tool_started.store(true, Ordering::Relaxed);
            if let Some(slot) = &p.slot {
                slot.release();
            }
        }
    }

    /// `done` of the call's observers have finished: a drop from now on shows its record only
    /// to the others.
    #[inline]
    pub(super) fn set_observers_done(&self, done: usize) {
        self.observers_done.store(done, Ordering::Relaxed);
    }

    /// The call is over: counts it as `outcome` in the session's stats (a replay is not
    /// counted), lets the next read of its message show its record, and disarms the call.
    #[inline]
    pub(super) fn finish(&mut self, outcome: Outcome) {
        if let Some(s) = self.stats
            && !self.replay
        {
            s.record(outcome, self.tool);
        }
        if let Some(p) = self.progress
            && let Some(slot) = &p.slot
        {
            slot.observed();
        }
        self.armed = false;
    }
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        if !self.armed || self.replay {
            return;
        }
        if let Some(s) = self.stats {
            s.record(Outcome::Cancelled, self.tool);
        }
        // The span closes as this call's future is dropped: it says how the call ended.
        span::cancelled(&self.span);
        if std::thread::panicking() {
            // Running user code while unwinding could abort the process.
            tracing::error!(target: "toolgate::observer", tool_use_id = %self.tool_use.id,
                "call dropped during a panic; observers skipped");
            return;
        }
        let detail = format!(
            "the host dropped the call before it finished ({})",
            self.stage
        );
        let input = self.recorded.input();
        let record = CallRecord::cancelled(self.tool_use, input, &detail, self.started.elapsed());
        let list = self.inner.observers_for(self.tool);
        let done = self.observers_done.load(Ordering::Relaxed);
        let rest = list.get(done..).unwrap_or_default();
        self.inner.observe_sync(self.env, self.stats, &record, rest);
    }
}

/// The input a record (and the audit line) shows: the normalized input; the raw one when it
/// could not be normalized; a short note instead of an input refused for its size or depth, so
/// a huge or deeply nested input is never copied into the log (nor walked without bound).
pub(super) struct Recorded<'a> {
    /// The call as normalized; the call as sent when its input was refused (nothing past step
    /// 1 reads it then).
    normalized: Normalized<'a>,
    /// Why the input was refused (boxed: a rare path, and this lives in every call future).
    refused: Option<Box<Refusal>>,
}

/// An input refused at step 1: the text for the model, and the note a record shows instead of
/// an input over the bounds.
struct Refusal {
    refused: Refused,
    omitted: Option<Value>,
}

impl<'a> Recorded<'a> {
    fn new(call: &'a ToolUse, limits: &Limits) -> Self {
        let refused = match normalize(call, limits) {
            Ok(normalized) => {
                return Recorded {
                    normalized,
                    refused: None,
                };
            }
            Err(refused) => refused,
        };
        let omitted = check_bounds(&call.input, limits).err().map(|_| {
            Value::String(format!(
                "[input not recorded: over the input limits ({} bytes, {} levels)]",
                limits.max_input_bytes, limits.max_input_depth
            ))
        });
        Recorded {
            normalized: Normalized::Borrowed(call),
            refused: Some(Box::new(Refusal { refused, omitted })),
        }
    }

    /// Why the input was refused at step 1, if it was.
    pub(super) fn refused(&self) -> Option<&Refused> {
        self.refused.as_deref().map(|r| &r.refused)
    }

    /// The call as normalized (as sent, when its input was refused).
    #[inline]
    pub(super) fn normalized(&self) -> &ToolUse {
        &self.normalized
    }

    /// The input the call's record shows.
    pub(super) fn input(&self) -> &Value {
        match self.refused.as_deref() {
            Some(Refusal {
                omitted: Some(note),
                ..
            }) => note,
            _ => &self.normalized.input,
        }
    }
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
    pub(super) fn may_pause(&self) -> bool {
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

/// What a session learns of a call in flight (atomics: the call future is `Send`): whether its
/// tool started (a call dropped after that is never run again) and, once it ended, whether the
/// answer memory recorded its answer; and, for a block run concurrently with
/// other reads of its message, its place in the message (`order.rs`: when the next block may
/// start, when this one may show its record).
#[derive(Default)]
pub(crate) struct Progress<'t> {
    tool_started: AtomicBool,
    slot: Option<Slot<'t>>,
    /// Where the call's answer is remembered, before the observers see its record.
    memory: Option<Memory<'t>>,
    /// [`Kept`] as a number.
    recorded: AtomicU8,
}

/// The answer memory a call's claim is in, its key there and the claim: its token, and the hold
/// that keeps it alive while the call runs (a store that renews: its lease is the dispatcher's
/// `claim_lease`).
#[derive(Clone, Copy)]
pub(crate) struct Memory<'t> {
    pub(crate) store: &'t dyn AnswerStore,
    pub(crate) key: CallKey<'t>,
    pub(crate) token: Token,
    pub(crate) hold: Option<&'t Hold>,
}

/// Whether the answer memory recorded a call's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kept {
    /// Not asked: no memory, or no final answer (a halt, a pause).
    No = 0,
    /// Recorded: a retry is a replay.
    Yes = 1,
    /// The store failed: the audit line says so, and the claim is to be released.
    Failed = 2,
    /// The store refused it: the claim no longer held the call (its lease ran out and a retry
    /// took it over), so the call's answer is the one the store holds, interrupted.
    Fenced = 3,
}

impl<'t> Progress<'t> {
    /// A call not yet started, at `slot` among the reads of its message run together, its
    /// answer to be recorded in `memory`.
    pub(crate) fn new(slot: Option<Slot<'t>>, memory: Option<Memory<'t>>) -> Self {
        Progress {
            slot,
            memory,
            ..Progress::default()
        }
    }

    /// Where the call's answer is remembered, if anywhere.
    pub(crate) fn memory(&self) -> Option<Memory<'t>> {
        self.memory
    }

    /// Whether the answer memory recorded the call's answer.
    pub(crate) fn recorded(&self) -> Kept {
        match self.recorded.load(Ordering::Relaxed) {
            1 => Kept::Yes,
            2 => Kept::Failed,
            3 => Kept::Fenced,
            _ => Kept::No,
        }
    }

    /// What became of recording the call's answer.
    pub(crate) fn set_recorded(&self, recorded: Kept) {
        self.recorded.store(recorded as u8, Ordering::Relaxed);
    }

    /// The call's place among the reads of its message run together, if it is one.
    pub(crate) fn slot(&self) -> Option<Slot<'t>> {
        self.slot
    }

    /// What the record shows of the call's claim, held with `lease`: when its store held it
    /// and anything came of that (renewals, a renewal that failed, or its answer refused).
    #[inline]
    pub(crate) fn lease_record(&self, lease: Duration) -> Option<LeaseRecord> {
        let hold = self.memory.as_ref()?.hold?;
        let status = hold.status();
        let failed = u64::from(status.lost.is_some());
        let fenced = self.recorded() == Kept::Fenced;
        (status.renewals > 0 || failed > 0 || fenced)
            .then(|| LeaseRecord::new(lease, renew_every(lease), status.renewals, failed))
    }

    /// Whether the tool (or wrapped caller) was started.
    pub(crate) fn tool_started(&self) -> bool {
        self.tool_started.load(Ordering::Relaxed)
    }
}
