//! One call of the inbox as the stores that judge in Rust hold it ([`CallRow`]: the in-memory
//! store under its lock, SQLite inside its `BEGIN IMMEDIATE` transaction), and the rules of one
//! decision on it: why it is refused ([`CallRow::refusal`], which a PostgreSQL store also uses
//! to say why its conditional write changed nothing) or what it changes ([`CallRow::decide`]).
//! One place, so every store answers the same (the conformance suite checks it).

use serde_json::Value;

use crate::approval::ask::{Approval, Asked};
use crate::store::waiting::WaitingRow;

use super::call::{CallState, InboxCall, Mark, TurnCall, TurnState, from_ms};
use super::decide::{Attempt, Decided, Refusal};
use super::policy::Action;

/// A call's row: the waiting row the turn's `put` wrote, and what decisions changed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallRow {
    pub(crate) seq: u64,
    pub(crate) session_id: String,
    pub(crate) turn_id: String,
    pub(crate) tool_use_id: String,
    pub(crate) position: u32,
    pub(crate) tool: String,
    pub(crate) asked_by: Vec<Asked>,
    pub(crate) user_id: String,
    pub(crate) fingerprint: String,
    /// Milliseconds since the Unix epoch, by the store's clock.
    pub(crate) created_at: i64,
    pub(crate) expires_at: i64,
    /// As stored: `waiting` for an undecided call even past its expiry (a take for a resume
    /// records `expired`).
    pub(crate) state: CallState,
    pub(crate) digest: String,
    pub(crate) summary: String,
    /// The effective input's JSON text.
    pub(crate) input: String,
    /// The edited input's JSON text.
    pub(crate) edit: Option<String>,
    pub(crate) approvals: Vec<Mark>,
    pub(crate) decided: Option<Mark>,
    pub(crate) reason: Option<String>,
}

/// A call's columns as a database store reads them, in [`CallRow`]'s order, before their
/// JSON is read.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) struct RawCall {
    pub(crate) seq: i64,
    pub(crate) session_id: String,
    pub(crate) turn_id: String,
    pub(crate) tool_use_id: String,
    pub(crate) position: i64,
    pub(crate) tool: String,
    pub(crate) asked_by: String,
    pub(crate) user_id: String,
    pub(crate) fingerprint: String,
    pub(crate) created_at: i64,
    pub(crate) expires_at: i64,
    pub(crate) state: String,
    pub(crate) digest: String,
    pub(crate) summary: String,
    pub(crate) input: String,
    pub(crate) edit: Option<String>,
    pub(crate) approvals: String,
    pub(crate) decided: Option<String>,
    pub(crate) reason: Option<String>,
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl RawCall {
    /// The row, its JSON columns read.
    ///
    /// # Errors
    /// The sentence saying which column does not read.
    pub(crate) fn into_call(self) -> Result<CallRow, String> {
        let bad = |what: &str, e: &dyn std::fmt::Display| {
            format!("call {:?}: its {what} does not read: {e}", self.tool_use_id)
        };
        let state = CallState::parse(&self.state)
            .ok_or_else(|| bad("state", &format_args!("{:?}", self.state)))?;
        let asked_by = serde_json::from_str(&self.asked_by).map_err(|e| bad("asked_by", &e))?;
        let approvals = serde_json::from_str(&self.approvals).map_err(|e| bad("approvals", &e))?;
        let decided = match &self.decided {
            Some(text) => Some(serde_json::from_str(text).map_err(|e| bad("decided", &e))?),
            None => None,
        };
        Ok(CallRow {
            seq: u64::try_from(self.seq).unwrap_or_default(),
            session_id: self.session_id,
            turn_id: self.turn_id,
            tool_use_id: self.tool_use_id,
            position: u32::try_from(self.position).unwrap_or_default(),
            tool: self.tool,
            asked_by,
            user_id: self.user_id,
            fingerprint: self.fingerprint,
            created_at: self.created_at,
            expires_at: self.expires_at,
            state,
            digest: self.digest,
            summary: self.summary,
            input: self.input,
            edit: self.edit,
            approvals,
            decided,
            reason: self.reason,
        })
    }
}

/// The turn-level members of a call's row.
pub(crate) struct TurnOf<'a> {
    pub(crate) session_id: &'a str,
    pub(crate) turn_id: &'a str,
    pub(crate) user_id: &'a str,
    pub(crate) fingerprint: &'a str,
}

impl CallRow {
    /// The row of a waiting call, as `put` writes it.
    pub(crate) fn waiting(
        turn: &TurnOf<'_>,
        row: WaitingRow,
        seq: u64,
        created_at: i64,
        expires_at: i64,
    ) -> CallRow {
        CallRow {
            seq,
            session_id: turn.session_id.to_owned(),
            turn_id: turn.turn_id.to_owned(),
            tool_use_id: row.tool_use_id,
            position: row.position,
            tool: row.tool,
            asked_by: serde_json::from_str(&row.asked_by).unwrap_or_default(),
            user_id: turn.user_id.to_owned(),
            fingerprint: turn.fingerprint.to_owned(),
            created_at,
            expires_at,
            state: CallState::Waiting,
            digest: row.digest,
            summary: row.summary,
            input: row.input,
            edit: None,
            approvals: Vec::new(),
            decided: None,
            reason: None,
        }
    }

    /// The state a list shows at `now`: a waiting call past its expiry is expired.
    pub(crate) fn shown_state(&self, now: i64) -> CallState {
        match self.state {
            CallState::Waiting if self.expires_at <= now => CallState::Expired,
            state => state,
        }
    }

    /// The call as a list shows it at `now`.
    pub(crate) fn view(&self, now: i64) -> InboxCall {
        InboxCall {
            session_id: self.session_id.clone(),
            turn_id: self.turn_id.clone(),
            tool_use_id: self.tool_use_id.clone(),
            position: self.position,
            name: self.tool.clone(),
            asked_by: self.asked_by.clone(),
            user_id: self.user_id.clone(),
            fingerprint: self.fingerprint.clone(),
            created_at: from_ms(self.created_at),
            expires_at: from_ms(self.expires_at),
            state: self.shown_state(now),
            input_digest: self.digest.clone(),
            summary: self.summary.clone(),
            approvals: self.approvals.clone(),
            decided: self.decided.clone(),
            reason: self.reason.clone(),
            seq: self.seq,
        }
    }

    /// The call with its inputs, as a turn shows it at `now`.
    pub(crate) fn turn_call(&self, now: i64) -> TurnCall {
        let read = |text: &str| serde_json::from_str(text).unwrap_or(Value::Null);
        TurnCall {
            call: self.view(now),
            input: read(&self.input),
            edit: self.edit.as_deref().map(read),
        }
    }

    /// Why `attempt` is refused on this call at `now` while its turn is in `turn`, in this
    /// order: the policy (this person may not do this to this tool's call, or it is their own);
    /// a refusal found before the store (the edit's check); decided already
    /// (by whom, when); expired; the turn taken outside the inbox; another input digest than
    /// the one shown; the same person approving a two-person call twice. `None`: it is taken.
    pub(crate) fn refusal(&self, attempt: &Attempt, turn: TurnState, now: i64) -> Option<Refusal> {
        let policy = attempt.policy.check_call(
            &attempt.identity,
            attempt.action(),
            &self.tool,
            &self.user_id,
        );
        if let Err(why) = policy {
            return Some(Refusal::NotAllowed(why));
        }
        if let Some(r) = &attempt.refused {
            return Some(r.clone());
        }
        if self.state.is_decided() {
            let mark = self.decided.clone().unwrap_or(Mark {
                by: String::new(),
                at: from_ms(self.expires_at),
                comment: None,
            });
            return Some(Refusal::AlreadyDecided {
                state: self.state,
                by: mark.by,
                at: mark.at,
            });
        }
        if self.state == CallState::Expired || self.expires_at <= now {
            return Some(Refusal::Expired {
                at: from_ms(self.expires_at),
            });
        }
        if turn != TurnState::Waiting {
            return Some(Refusal::TurnNotWaiting { state: turn });
        }
        if self.digest != attempt.request.input_digest {
            return Some(Refusal::InputChanged {
                seen: attempt.request.input_digest.clone(),
                now: self.digest.clone(),
            });
        }
        if attempt.action() == Action::Approve
            && let Some(mine) = self.approvals.iter().find(|m| m.by == attempt.by)
        {
            return Some(Refusal::AlreadyApproved { at: mine.at });
        }
        None
    }

    /// Applies `attempt` at `now` (the store's clock), or says why not
    /// ([`refusal`](Self::refusal)):
    /// a decline ends the call; an approval is added to the approvals and ends it once there
    /// are `approvals_needed` of them (`edited` when an edit came before); an edit replaces the
    /// input (its digest and summary with it), counts as its editor's only approval, and ends
    /// the call when one approval is enough.
    pub(crate) fn decide(
        &mut self,
        attempt: &Attempt,
        turn: TurnState,
        now: i64,
    ) -> Result<Decided, Refusal> {
        if let Some(r) = self.refusal(attempt, turn, now) {
            return Err(r);
        }
        let mark = Mark {
            by: attempt.by.clone(),
            at: from_ms(now),
            comment: attempt.request.comment.clone(),
        };
        let needed = usize::from(attempt.approvals_needed(&self.tool).max(1));
        match attempt.action() {
            Action::Decline => {
                self.state = CallState::Declined;
                self.reason = attempt.reason().map(str::to_owned);
                self.decided = Some(mark.clone());
            }
            Action::Approve => {
                self.approvals.push(mark.clone());
                if self.approvals.len() >= needed {
                    self.state = if self.edit.is_some() {
                        CallState::Edited
                    } else {
                        CallState::Approved
                    };
                    self.decided = Some(mark.clone());
                }
            }
            Action::Edit => {
                if let Some(edit) = &attempt.edit {
                    self.edit = Some(edit.text.clone());
                    self.digest = edit.digest.clone();
                    self.summary = edit.summary.clone();
                }
                self.approvals = vec![mark.clone()];
                if needed <= 1 {
                    self.state = CallState::Edited;
                    self.decided = Some(mark.clone());
                }
            }
        }
        Ok(Decided {
            state: self.state,
            by: mark.by,
            at: mark.at,
            approvals: self.approvals.clone(),
            input_digest: self.digest.clone(),
        })
    }

    /// What the resume of its turn does with this call: a decided call's [`Approval`] (an
    /// approval names everyone who approved, in order, `a, b`, and the digest approved), or
    /// `None` for a call nobody decided in time (it resumes as expired).
    pub(crate) fn approval(&self) -> Option<Approval> {
        let all = || {
            self.approvals
                .iter()
                .map(|m| m.by.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self.state {
            CallState::Approved => Some(Approval::approve_digest(all(), self.digest.clone())),
            CallState::Edited => {
                let input = self
                    .edit
                    .as_deref()
                    .and_then(|t| serde_json::from_str(t).ok())
                    .unwrap_or(Value::Null);
                Some(Approval::edit(all(), input))
            }
            CallState::Declined => Some(Approval::deny(
                self.decided.as_ref().map_or("", |m| &m.by),
                self.reason.clone().unwrap_or_default(),
            )),
            CallState::Waiting | CallState::Expired => None,
        }
    }
}
