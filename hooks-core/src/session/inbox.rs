//! [`Session::resume_ready`]: a turn the approval inbox found ready (feature `inbox`), resumed
//! with the decisions people recorded in the store, its undecided calls as expired.

use std::collections::HashSet;

use crate::approval::pending::{AwaitingCall, ResumeError, Resumed};
use crate::inbox::{InboxStore, ReadyTurn};
use crate::session::Session;

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
    /// user). When the resume finishes, its answer is kept in `store`
    /// ([`InboxStore::finished`]): a later take of the turn gets it, and the turn leaves the
    /// ready turns. When it is refused or halts, the turn stays taken until the take's lease
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
        let answer = self
            .resume_with(pending, &ready.decisions, &is_expired, pending.ttl())
            .await?;
        let kept = serde_json::to_value(&answer).unwrap_or_default();
        if let Err(e) = store
            .finished(&pending.session_id, &pending.turn_id, &kept)
            .await
        {
            tracing::error!(target: "toolgate::memory", turn_id = %pending.turn_id, error = %e,
                "the inbox's store could not record the resumed turn's answer; the turn is \
                 taken again once its lease ends, and the answer memory replays its answers");
        }
        Ok(answer)
    }
}
