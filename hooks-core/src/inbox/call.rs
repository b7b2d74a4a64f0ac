//! What the inbox shows: a waiting call ([`InboxCall`]) and its state ([`CallState`]), who did
//! what and when ([`Mark`]), one paused turn with all its calls ([`InboxTurn`], [`TurnCall`],
//! [`TurnState`]), and where a page of calls ends ([`Cursor`]). Every instant is the store's
//! clock, in whole milliseconds.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::ask::Asked;

/// Where a call of the inbox stands. Serialized in snake_case (`"waiting"`, …).
///
/// Expiry is its own state: a call nobody decided before its `expires_at` is `expired`, never
/// recorded as a person's decline, and its turn resumes telling the model it expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallState {
    /// Waiting for a person (on a two-person tool, possibly with one approval already).
    Waiting,
    /// Approved: it runs with the input the person saw.
    Approved,
    /// Approved with an edited input: it runs with the edit (its PreToolUse chain decides on it
    /// first, as on any rewrite).
    Edited,
    /// Declined: it does not run; the model reads the person's reason.
    Declined,
    /// Nobody decided it before its expiry: it does not run; the model reads that it expired.
    Expired,
}

impl CallState {
    /// Every state, in the order above.
    pub const ALL: [CallState; 5] = [
        CallState::Waiting,
        CallState::Approved,
        CallState::Edited,
        CallState::Declined,
        CallState::Expired,
    ];

    /// The snake_case name, as serialized (`"waiting"`, `"approved"`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            CallState::Waiting => "waiting",
            CallState::Approved => "approved",
            CallState::Edited => "edited",
            CallState::Declined => "declined",
            CallState::Expired => "expired",
        }
    }

    /// The state named `name` (as [`as_str`](Self::as_str) writes it).
    pub fn parse(name: &str) -> Option<CallState> {
        CallState::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Whether a person ended the call (approved, edited or declined).
    pub const fn is_decided(self) -> bool {
        matches!(
            self,
            CallState::Approved | CallState::Edited | CallState::Declined
        )
    }
}

impl fmt::Display for CallState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One person's act on a call: who (the signed-in identity's id), when (the store's clock), and
/// their comment (for the audit trail and the page; the model never reads it).
/// `{"by": "lead@example.com", "at": "2026-11-24T10:20:00.125Z", "comment": "checked the order"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    /// Who.
    pub by: String,
    /// When, by the store's clock (whole milliseconds).
    #[serde(with = "crate::base::time::as_rfc3339")]
    pub at: SystemTime,
    /// Their comment, when they wrote one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// A call of the inbox, as a list shows it ([`Inbox::list`](super::Inbox::list)): one row per
/// waiting call of every paused turn a store keeps, read from the store's index of waiting
/// calls (no turn's JSON is read to list them). The input itself is in [`TurnCall`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct InboxCall {
    /// The session that paused.
    pub session_id: String,
    /// The paused turn's id (its first call's id).
    pub turn_id: String,
    /// The call's `tool_use` id.
    pub tool_use_id: String,
    /// The call's place among the turn's blocks, from 0.
    pub position: u32,
    /// The tool's name, as [`ToolUse::name`](crate::ToolUse::name) (an edit cannot change it;
    /// `tool` in JSON, as on the call's audit line).
    #[serde(rename = "tool")]
    pub name: String,
    /// The PreToolUse hooks that asked for a person, with their reasons, in chain order.
    pub asked_by: Vec<Asked>,
    /// The user on whose behalf the agent made the call (the session's trusted user id): by
    /// default the policy refuses their own decision on it.
    pub user_id: String,
    /// The fingerprint of the dispatcher that paused (which tools and schemas an edit is
    /// checked against, and which workers may resume the turn).
    pub fingerprint: String,
    /// When the store kept the turn, by the store's clock.
    #[serde(with = "crate::base::time::as_rfc3339")]
    pub created_at: SystemTime,
    /// When the call stops taking decisions: `created_at` plus the pausing dispatcher's
    /// `pending_ttl`.
    #[serde(with = "crate::base::time::as_rfc3339")]
    pub expires_at: SystemTime,
    /// Where it stands (a waiting call past `expires_at` reads `expired`).
    pub state: CallState,
    /// The SHA-256 (64 lowercase hex) of the input a decision is about now: the effective
    /// input, or the edit once a person edited it. A decision must name it: the page shows it
    /// with the input and sends it back, so a decision about an input nobody showed is refused.
    pub input_digest: String,
    /// The input in one line (`order_id="o_1002", amount_cents=25000`, at most 160 characters
    /// and `…`), as the turn's JSON shows it.
    pub summary: String,
    /// The approvals so far, in order: on a two-person tool, the first person's while the call
    /// waits for a second, different one.
    pub approvals: Vec<Mark>,
    /// Who ended it, when, and their comment: for `approved`, `edited` and `declined`.
    pub decided: Option<Mark>,
    /// The decline's reason (what the model reads).
    pub reason: Option<String>,
    /// Its place in the store's index (the cursor of a page).
    #[serde(skip)]
    pub(crate) seq: u64,
}

impl InboxCall {
    /// The cursor just after this call, in the order it was listed in: a page that ends with it
    /// continues with [`Query::after`](super::Query::after).
    pub fn cursor(&self) -> Cursor {
        Cursor::at(self.seq)
    }
}

/// Where a paused turn stands in its store. Serialized in snake_case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TurnState {
    /// Its calls wait (or are all decided or expired, and no worker has taken it yet).
    Waiting,
    /// A worker (or a [`Session::resume_from`](crate::Session::resume_from)) is resuming it.
    Resuming,
    /// It was resumed; its answer is kept.
    Resumed,
}

/// One call of an [`InboxTurn`]: the list's row and the input itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TurnCall {
    /// The call as a list shows it.
    #[serde(flatten)]
    pub call: InboxCall,
    /// The effective input as the turn kept it: what an approval runs.
    pub input: Value,
    /// The edited input, once a person edited it (what an approval runs then).
    pub edit: Option<Value>,
}

/// One paused turn with all its waiting calls, in `tool_use` order
/// ([`Inbox::turn`](super::Inbox::turn)).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct InboxTurn {
    /// The session that paused.
    pub session_id: String,
    /// The turn's id.
    pub turn_id: String,
    /// The session's user.
    pub user_id: String,
    /// The pausing dispatcher's fingerprint.
    pub fingerprint: String,
    /// Where the turn stands.
    pub state: TurnState,
    /// Its waiting calls (every block that asked for a person), in `tool_use` order.
    pub calls: Vec<TurnCall>,
}

impl InboxTurn {
    /// The call `tool_use_id` of this turn.
    pub fn call(&self, tool_use_id: &str) -> Option<&TurnCall> {
        self.calls
            .iter()
            .find(|c| c.call.tool_use_id == tool_use_id)
    }
}

/// Where a page ends, to ask for the next one ([`Page::next`](super::Page::next), [`Query::after`](super::Query::after)). Its text
/// (`c` and a number, `c1042`) goes into a page's link and back ([`Cursor::from_str`]); a
/// cursor someone edited only moves the page, it shows nothing a list would not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cursor {
    seq: u64,
}

impl Cursor {
    pub(crate) fn at(seq: u64) -> Cursor {
        Cursor { seq }
    }

    /// The store index's place it names.
    pub(crate) fn seq(self) -> u64 {
        self.seq
    }
}

impl fmt::Display for Cursor {
    /// `c1042`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "c{}", self.seq)
    }
}

/// A cursor's text (`c1042`) is not one: it does not start with `c` and a decimal number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadCursor;

impl fmt::Display for BadCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a cursor of the inbox (`c` and a number, as a page's link gives it)")
    }
}

impl std::error::Error for BadCursor {}

impl FromStr for Cursor {
    type Err = BadCursor;

    /// Reads what [`Display`](fmt::Display) writes: `c1042`.
    fn from_str(text: &str) -> Result<Cursor, BadCursor> {
        let digits = text.strip_prefix('c').ok_or(BadCursor)?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(BadCursor);
        }
        digits.parse().map(Cursor::at).map_err(|_| BadCursor)
    }
}

/// `t` in whole milliseconds since the Unix epoch (negative before it).
pub(crate) fn to_ms(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

/// The instant `ms` milliseconds after the Unix epoch.
pub(crate) fn from_ms(ms: i64) -> SystemTime {
    let d = Duration::from_millis(ms.unsigned_abs());
    if ms >= 0 {
        UNIX_EPOCH + d
    } else {
        UNIX_EPOCH - d
    }
}

/// Now by this process's clock, in whole milliseconds (the in-memory store's clock, and
/// SQLite's, which runs in this process).
pub(crate) fn now_ms() -> i64 {
    to_ms(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_read_back_by_their_names() {
        for s in CallState::ALL {
            assert_eq!(CallState::parse(s.as_str()), Some(s));
            assert_eq!(
                serde_json::to_value(s).unwrap(),
                serde_json::json!(s.as_str())
            );
        }
        assert_eq!(CallState::parse("denied"), None);
    }

    #[test]
    fn a_cursor_reads_back_and_nothing_else_reads() {
        let c = Cursor::at(1042);
        assert_eq!(c.to_string(), "c1042");
        assert_eq!("c1042".parse::<Cursor>(), Ok(c));
        for bad in [
            "",
            "c",
            "1042",
            "c-1",
            "c+1",
            "c1 ",
            "c99999999999999999999",
        ] {
            assert_eq!(bad.parse::<Cursor>(), Err(BadCursor), "{bad:?}");
        }
    }

    #[test]
    fn milliseconds_round_trip_on_both_sides_of_the_epoch() {
        for ms in [0, 1, 1_795_515_300_125, -1, -86_400_001] {
            assert_eq!(to_ms(from_ms(ms)), ms);
        }
    }
}
