//! The last step of a call: the PostToolUse observers see its [`CallRecord`]; the
//! [`CancelGuard`] that still shows them a `cancelled` record when the host drops the call
//! before it finished; and the [`Progress`] a session reads of a call in flight.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Instant;

use serde_json::Value;

use crate::audit::outcome::{CallRecord, Outcome};
use crate::base::future::{BoxFuture, Invoke};
use crate::base::panic::{CatchUnwind, catch};
use crate::content::message::ToolUse;
use crate::error::HookError;
use crate::hook::definitions::PostHookDef;
use crate::hook::state::Env;
use crate::pipeline::inner::Inner;
use crate::pipeline::order::Slot;
use crate::pipeline::stats::{Stats, report_observer_error};
use crate::store::{AnswerStore, CallKey};

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

/// The answer memory a call's claim is in, and its key there.
#[derive(Clone, Copy)]
pub(crate) struct Memory<'t> {
    pub(crate) store: &'t dyn AnswerStore,
    pub(crate) key: CallKey<'t>,
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

    /// Whether the tool (or wrapped caller) was started.
    pub(crate) fn tool_started(&self) -> bool {
        self.tool_started.load(Ordering::Relaxed)
    }
}

/// Keeps a `cancelled` audit line for a call future dropped before it finished. Armed from the
/// start of a call until [`finish`](Self::finish); dropped while armed, it counts the call as
/// `cancelled` and shows the sync observers that have not seen the call its record.
pub(super) struct CancelGuard<'a> {
    inner: &'a Inner,
    env: Env<'a>,
    stats: Option<&'a Stats>,
    call: &'a ToolUse,
    /// The input as recorded (see `Recorded`).
    pub(super) input: &'a Value,
    /// The tool's index in `Inner::tools`; `None` for an unknown name.
    pub(super) tool: Option<usize>,
    /// Where the call was, for the record's `detail`.
    pub(super) stage: &'static str,
    /// How many of the call's observers have finished.
    observers_done: usize,
    started: Instant,
    armed: bool,
    /// Told when the tool starts and how the call ended (a session's call).
    pub(super) progress: Option<&'a Progress<'a>>,
    /// A replayed answer: not counted, and nothing recorded when dropped (the call's own line
    /// was written when it ran).
    pub(super) replay: bool,
    /// The call's `execute_tool` span, which a drop while armed ends as `cancelled`.
    pub(super) span: Option<&'a tracing::Span>,
}

impl<'a> CancelGuard<'a> {
    /// An armed guard for `call`, at the stage "before the tool ran".
    #[inline]
    pub(super) fn new(
        inner: &'a Inner,
        env: Env<'a>,
        stats: Option<&'a Stats>,
        call: &'a ToolUse,
        input: &'a Value,
        tool: Option<usize>,
        started: Instant,
    ) -> Self {
        CancelGuard {
            inner,
            env,
            stats,
            call,
            input,
            tool,
            stage: "before the tool ran",
            observers_done: 0,
            started,
            armed: true,
            progress: None,
            replay: false,
            span: None,
        }
    }

    /// The tool (or wrapped caller) is about to start.
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

    /// The call is over: counts it as `outcome` in the session's stats (a replay is not
    /// counted) and disarms the guard.
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

impl Drop for CancelGuard<'_> {
    fn drop(&mut self) {
        if !self.armed || self.replay {
            return;
        }
        if let Some(s) = self.stats {
            s.record(Outcome::Cancelled, self.tool);
        }
        // The span closes as this call's future is dropped: it says how the call ended.
        if let Some(span) = self.span {
            super::span::cancelled(span);
        }
        if std::thread::panicking() {
            // Running user code while unwinding could abort the process.
            tracing::error!(target: "toolgate::observer", tool_use_id = %self.call.id,
                "call dropped during a panic; observers skipped");
            return;
        }
        let detail = format!(
            "the host dropped the call before it finished ({})",
            self.stage
        );
        let record = CallRecord::cancelled(self.call, self.input, &detail, self.started.elapsed());
        let list = self.inner.observers_for(self.tool);
        let rest = list.get(self.observers_done..).unwrap_or_default();
        self.inner.observe_sync(self.env, self.stats, &record, rest);
    }
}

impl Inner {
    /// Shows `record` to the sync observers among `list` (indices into `observers`): no future,
    /// no await. Async ones are skipped; when `observers_sync` holds there are none.
    pub(super) fn observe_sync(
        &self,
        env: Env<'_>,
        stats: Option<&Stats>,
        record: &CallRecord<'_>,
        list: &[usize],
    ) {
        for &o in list {
            let obs = &self.observers[o];
            if !obs.imp.is_sync() {
                continue;
            }
            // A sync observer answers at once: `start_observer` gives no future here.
            if let Err(error) = start_observer(obs, env, record) {
                report_observer_error(stats, &obs.path, &record.call.id, &error);
            }
        }
    }

    /// Shows `record` to the call's observers, awaiting the async ones; `guard` counts those
    /// finished, so a drop mid-way shows it only to the rest.
    pub(super) async fn observe(
        &self,
        env: Env<'_>,
        stats: Option<&Stats>,
        record: &CallRecord<'_>,
        guard: &mut CancelGuard<'_>,
    ) {
        let list = self.observers_for(guard.tool);
        for (i, &o) in list.iter().enumerate() {
            guard.observers_done = i;
            self.observe_one(o, env, stats, record).await;
        }
        guard.observers_done = list.len();
    }
}

impl Inner {
    /// Shows `record` to the observer at index `o` of `observers`, sync or async; an error or
    /// a panic is reported on the observer channel (and counted in `stats`), never raised.
    async fn observe_one(
        &self,
        o: usize,
        env: Env<'_>,
        stats: Option<&Stats>,
        record: &CallRecord<'_>,
    ) {
        let obs = &self.observers[o];
        let failure = match start_observer(obs, env, record) {
            Ok(None) => None,
            Ok(Some(fut)) => match CatchUnwind(fut).await {
                Ok(r) => r.err().map(|e| e.message().to_owned()),
                Err(p) => Some(format!("panicked: {p}")),
            },
            Err(error) => Some(error),
        };
        if let Some(error) = failure {
            report_observer_error(stats, &obs.path, &record.call.id, &error);
        }
    }

    /// Shows `record` to the observers of `tool` (its index; `None` for a name this dispatcher
    /// does not know), sync and async, with no call around it: for a host that ran the tool
    /// itself (the Claude Code hook's PostToolUse, and its PreToolUse refusals).
    #[cfg(feature = "claude-code")]
    pub(crate) async fn observe_record(
        &self,
        env: Env<'_>,
        stats: Option<&Stats>,
        record: &CallRecord<'_>,
        tool: Option<usize>,
    ) {
        for &o in self.observers_for(tool) {
            self.observe_one(o, env, stats, record).await;
        }
    }
}

/// Starts one observer: `Ok(None)` when it is done, `Ok(Some(future))` for an async one still
/// running, `Err(text)` when it failed (its error's message, or `panicked: …`).
fn start_observer<'a>(
    obs: &'a PostHookDef,
    env: Env<'a>,
    record: &'a CallRecord<'a>,
) -> Result<Option<BoxFuture<'a, Result<(), HookError>>>, String> {
    match catch(|| obs.imp.run(env, record)) {
        Ok(Invoke::Ready(Ok(()))) => Ok(None),
        Ok(Invoke::Ready(Err(e))) => Err(e.message().to_owned()),
        Ok(Invoke::Pending(fut)) => Ok(Some(fut)),
        Err(p) => Err(format!("panicked: {p}")),
    }
}
