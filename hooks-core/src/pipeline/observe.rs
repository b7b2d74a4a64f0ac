//! The last step of a call: the PostToolUse observers see its [`CallRecord`], sync ones
//! without a future (also the `cancelled` record a dropped [`Call`] leaves), async ones awaited.

use crate::audit::outcome::CallRecord;
use crate::base::future::{BoxFuture, Invoke};
use crate::base::panic::{CatchUnwind, catch};
use crate::error::HookError;
use crate::hook::definitions::PostHookDef;
use crate::hook::state::Env;
use crate::pipeline::call::Call;
use crate::pipeline::inner::Inner;
use crate::pipeline::stats::{Stats, report_observer_error};

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

    /// Shows `record` to `call`'s observers, awaiting the async ones; the call counts those
    /// finished, so a drop mid-way shows it only to the rest.
    pub(super) async fn observe(&self, call: &Call<'_>, record: &CallRecord<'_>) {
        let list = self.observers_for(call.tool);
        for (i, &o) in list.iter().enumerate() {
            call.set_observers_done(i);
            self.observe_one(o, call.env, call.stats, record).await;
        }
        call.set_observers_done(list.len());
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
