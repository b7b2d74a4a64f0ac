//! [`Session::resume_ready`]: a turn the approval inbox found ready (feature `inbox`), resumed
//! with the decisions people recorded in the store, its undecided calls as expired.

use std::collections::HashSet;

use crate::approval::pending::{AwaitingCall, ResumeError, Resumed};
use crate::inbox::{InboxStore, ReadyTurn};
use crate::session::{Session, count_hold};
use crate::store::StoreError;

impl Session {
    /// Resumes a turn taken from the inbox ([`Inbox::take_ready`](crate::approval::inbox::Inbox::take_ready)),
    /// answering the whole turn as [`resume`](Self::resume) does: each decided call ends by its
    /// decision (an approval or an edit runs after its PreToolUse chain decides again on the
    /// input that runs: a deny still wins), each call in [`ReadyTurn::expired`] is not run and
    /// the model reads that it waited for a person's approval longer than the turn's
    /// [`ttl`](crate::approval::PendingTurn::ttl) and expired. The store judged the expiry by
    /// its clock when the turn was taken: this session's clock and its dispatcher's
    /// `pending_ttl` do not judge it again.
    ///
    /// The session is the turn's: its session id and user id, on a dispatcher with the turn's
    /// fingerprint (a worker builds one per turn, with the trusted context it keeps for that
    /// user). While it runs, a store that renews keeps the take alive
    /// ([`PendingStore::hold`](crate::store::PendingStore::hold), for the take's
    /// [`lease`](ReadyTurn::lease)), so no other worker takes a live resume's turn. When the
    /// resume finishes, its answer is kept in `store` under the take's
    /// [`token`](ReadyTurn::token) ([`InboxStore::finished`]; a take that was lost meanwhile is
    /// refused, and the answer kept is the resume's that holds the turn): a later take of the
    /// turn gets it, and the turn leaves the ready turns. When it is refused or halts, the turn stays taken until the take's lease
    /// ends, then is taken again (the answer memory replays whatever it had answered, so
    /// nothing runs twice): a worker never spins on a turn it cannot finish.
    ///
    /// # Errors
    /// As [`resume`](Self::resume): [`ResumeError::Undecided`] when a waiting call is neither
    /// decided nor expired in `ready` (nothing runs); the refusals found before anything runs;
    /// [`ResumeError::Call`] while it runs.
    pub async fn resume_ready(
        &self,
        store: &dyn InboxStore,
        ready: &ReadyTurn,
    ) -> Result<Resumed, ResumeError> {
        let pending = &ready.turn;
        self.check_pending(pending, &ready.decisions)?;
        let expired: HashSet<&str> = ready.expired.iter().map(String::as_str).collect();
        if let Some(a) = pending.awaiting().find(|a| {
            !expired.contains(a.tool_use_id.as_str()) && !ready.decisions.contains(&a.tool_use_id)
        }) {
            return Err(ResumeError::Undecided {
                tool_use_id: a.tool_use_id.clone(),
            });
        }
        let is_expired = |waiting: &AwaitingCall| expired.contains(waiting.tool_use_id.as_str());
        let (session_id, turn_id) = (&pending.session_id, &pending.turn_id);
        // Renewed by the store while the resumed calls run.
        let hold = if store.renews() {
            store.hold(session_id, turn_id, ready.token, ready.lease)
        } else {
            None
        };
        let answer = self
            .resume_with(pending, &ready.decisions, &is_expired, pending.ttl())
            .await?;
        let kept = serde_json::to_value(&answer).unwrap_or_default();
        let finished = store
            .finished(session_id, turn_id, ready.token, &kept)
            .await;
        let fenced = finished.as_ref().is_err_and(StoreError::is_fenced);
        count_hold(&self.inner, hold.as_ref(), fenced);
        if let Err(e) = finished {
            tracing::error!(target: "toolgate::memory", turn_id = %pending.turn_id, error = %e,
                "the inbox's store could not record the resumed turn's answer; the turn is \
                 taken again once its lease ends (at once, when another worker holds it), and \
                 the answer memory replays its answers");
        }
        Ok(answer)
    }
}
