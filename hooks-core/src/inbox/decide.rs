//! One person's decision on one call: what the page sends ([`DecisionRequest`], [`Choice`]),
//! what is recorded ([`Decided`]) or why not ([`Refusal`], [`DecideError`]), and what a store is
//! asked to record ([`Attempt`], [`Recorded`]).

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::approval::pending::hex;
use crate::base::time::Rfc3339;
use crate::store::error::StoreError;

use super::call::{CallState, Mark, TurnState};
use super::policy::{Action, Identity, NotAllowed, Policy};

/// The most characters of a decline's reason, a comment, or an idempotency key.
pub const MAX_TEXT_CHARS: usize = 2000;
/// The most characters of an idempotency key.
pub const MAX_KEY_CHARS: usize = 200;

/// What a person decides about one call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Choice {
    /// Run it with the input shown.
    Approve,
    /// Do not run it; the model reads `BLOCKED: a person declined this call: <reason>`.
    Decline {
        /// Why, for the model (not empty).
        reason: String,
    },
    /// Run it with this input instead: a JSON object of the same tool (the tool cannot change),
    /// checked against the tool's input schema before it is accepted (every problem listed
    /// with its path, JSON types kept: `"25000"` is not `25000`). At resume, the PreToolUse
    /// chain decides on it as on any rewrite (a deny still wins).
    Edit {
        /// The new input.
        input: Value,
    },
}

impl Choice {
    /// What the policy is asked about.
    pub fn action(&self) -> Action {
        match self {
            Choice::Approve => Action::Approve,
            Choice::Decline { .. } => Action::Decline,
            Choice::Edit { .. } => Action::Edit,
        }
    }
}

/// One decision as a page sends it: which call, the digest of the input the person was shown,
/// what they chose, their comment, and an idempotency key. Who decides is not in it: it is the
/// signed-in [`Identity`](super::Identity) given to [`Inbox::decide`](super::Inbox::decide)
/// beside it, never a form field.
///
/// The idempotency key (any text up to 200 characters, unique per request: a page puts a
/// random one in each form it shows) makes a second click, a second tab or a retried request
/// get the first answer instead of deciding twice; the same key with another request is
/// refused ([`Refusal::KeyReused`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DecisionRequest {
    /// The session of the paused turn.
    pub session_id: String,
    /// The paused turn's id.
    pub turn_id: String,
    /// The call's `tool_use` id.
    pub tool_use_id: String,
    /// The digest of the input the person was shown
    /// ([`InboxCall::input_digest`](super::InboxCall::input_digest)).
    pub input_digest: String,
    /// What they chose.
    pub choice: Choice,
    /// Their comment, for the audit trail (the model never reads it).
    pub comment: Option<String>,
    /// The request's idempotency key.
    pub idempotency_key: Option<String>,
}

impl DecisionRequest {
    /// `choice` about the call `tool_use_id` of the turn (`session_id`, `turn_id`), whose input
    /// the person saw with digest `input_digest`.
    pub fn new(
        session_id: impl Into<String>,
        turn_id: impl Into<String>,
        tool_use_id: impl Into<String>,
        input_digest: impl Into<String>,
        choice: Choice,
    ) -> DecisionRequest {
        DecisionRequest {
            session_id: session_id.into(),
            turn_id: turn_id.into(),
            tool_use_id: tool_use_id.into(),
            input_digest: input_digest.into(),
            choice,
            comment: None,
            idempotency_key: None,
        }
    }

    /// With the person's comment.
    pub fn comment(mut self, comment: impl Into<String>) -> DecisionRequest {
        self.comment = Some(comment.into());
        self
    }

    /// With an idempotency key.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> DecisionRequest {
        self.idempotency_key = Some(key.into());
        self
    }

    /// What is wrong with the request as sent (an empty id or reason, a text over its bound).
    pub(crate) fn problem(&self) -> Option<String> {
        let ids = [
            ("session_id", &self.session_id),
            ("turn_id", &self.turn_id),
            ("tool_use_id", &self.tool_use_id),
        ];
        if let Some((name, _)) = ids.iter().find(|(_, v)| v.is_empty()) {
            return Some(format!("`{name}` is empty"));
        }
        if let Choice::Decline { reason } = &self.choice {
            if reason.trim().is_empty() {
                return Some("a decline needs a reason for the model".to_owned());
            }
            if reason.chars().count() > MAX_TEXT_CHARS {
                return Some(format!("the reason is over {MAX_TEXT_CHARS} characters"));
            }
        }
        if self
            .comment
            .as_ref()
            .is_some_and(|c| c.chars().count() > MAX_TEXT_CHARS)
        {
            return Some(format!("the comment is over {MAX_TEXT_CHARS} characters"));
        }
        match &self.idempotency_key {
            Some(k) if k.is_empty() => Some("the idempotency key is empty".to_owned()),
            Some(k) if k.chars().count() > MAX_KEY_CHARS => Some(format!(
                "the idempotency key is over {MAX_KEY_CHARS} characters"
            )),
            _ => None,
        }
    }
}

/// A recorded decision: the call's state after it, who and when, every approval so far, and the
/// digest of the input it now runs with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decided {
    /// `approved`, `edited`, `declined`; or `waiting` after the first approval of a two-person
    /// call (it needs a second, different person).
    pub state: CallState,
    /// Who decided (the signed-in identity's id).
    pub by: String,
    /// When, by the store's clock.
    #[serde(with = "crate::base::time::as_rfc3339")]
    pub at: SystemTime,
    /// The approvals so far, in order (the edit's counts as its editor's).
    pub approvals: Vec<Mark>,
    /// The digest of the input the call runs with (the edit's after an edit).
    pub input_digest: String,
}

/// An edited input's problem: where and what was expected, as the model reads an invalid
/// input's problems.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditProblem {
    /// The value's path (`amount_cents`, `items[0].name`), `""` for the input itself.
    pub path: String,
    /// What is wrong: `expected an integer, found a string`.
    pub message: String,
}

/// Why a decision was not recorded. `Display` is the sentence a page shows the person (never the
/// model). Serialized with `refused` naming the variant in snake_case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "refused", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Refusal {
    /// The request is malformed (an empty id, a decline with no reason, a text over 2 000
    /// characters); nothing was recorded.
    BadRequest {
        /// What is wrong.
        problem: String,
    },
    /// No paused turn of that session has that id; nothing was recorded.
    UnknownTurn {
        /// The session asked for.
        session_id: String,
        /// The turn asked for.
        turn_id: String,
    },
    /// The turn has no waiting call with that id; nothing was recorded.
    UnknownCall {
        /// The id asked for.
        tool_use_id: String,
    },
    /// Someone decided it already: who, how and when (the page shows the winner).
    AlreadyDecided {
        /// `approved`, `edited` or `declined`.
        state: CallState,
        /// Who.
        by: String,
        /// When.
        #[serde(with = "crate::base::time::as_rfc3339")]
        at: SystemTime,
    },
    /// Its expiry passed (by the store's clock) before the decision came.
    Expired {
        /// When it expired.
        #[serde(with = "crate::base::time::as_rfc3339")]
        at: SystemTime,
    },
    /// Its turn is being resumed, or was, outside the inbox: decisions no longer reach it.
    TurnNotWaiting {
        /// Where the turn stands.
        state: TurnState,
    },
    /// The input has another digest than the one the person was shown (an edit since, or a
    /// page showing another call): show it again.
    InputChanged {
        /// The digest the request named.
        seen: String,
        /// The digest of the input now.
        now: String,
    },
    /// This person approved this two-person call already: another person must.
    AlreadyApproved {
        /// When they approved it.
        #[serde(with = "crate::base::time::as_rfc3339")]
        at: SystemTime,
    },
    /// The policy does not let this person do this.
    NotAllowed(NotAllowed),
    /// The edited input does not fit the tool's input schema: every problem found.
    InvalidEdit {
        /// The problems, in the input's order.
        problems: Vec<EditProblem>,
    },
    /// The tools of the dispatcher that paused the turn are not known to this inbox (never
    /// published to the store, and not given to the inbox), so an edit cannot be checked.
    EditUncheckable {
        /// The pausing dispatcher's fingerprint.
        fingerprint: String,
    },
    /// The idempotency key was used before with another request (another call, choice or
    /// person): nothing was recorded.
    KeyReused {
        /// The key.
        key: String,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::BadRequest { problem } => write!(f, "the request is not valid: {problem}"),
            Refusal::UnknownTurn {
                session_id,
                turn_id,
            } => write!(
                f,
                "no paused turn {turn_id:?} of session {session_id:?} is kept in the store"
            ),
            Refusal::UnknownCall { tool_use_id } => write!(
                f,
                "the turn has no call {tool_use_id:?} waiting for a person"
            ),
            Refusal::AlreadyDecided { state, by, at } => {
                write!(f, "already {state} by {by} at {}", Rfc3339(*at))
            }
            Refusal::Expired { at } => write!(
                f,
                "the call expired at {} before a decision came: it will not run",
                Rfc3339(*at)
            ),
            Refusal::TurnNotWaiting { state } => write!(
                f,
                "the call's turn is {} outside the inbox: decisions no longer reach it",
                match state {
                    TurnState::Waiting => "waiting",
                    TurnState::Resuming => "being resumed",
                    TurnState::Resumed => "resumed",
                }
            ),
            Refusal::InputChanged { seen, now } => write!(
                f,
                "the call's input changed since it was shown (digest {now}, not {seen}): look at \
                 it again"
            ),
            Refusal::AlreadyApproved { at } => write!(
                f,
                "you approved this call at {}; it needs a second, different person",
                Rfc3339(*at)
            ),
            Refusal::NotAllowed(why) => why.fmt(f),
            Refusal::InvalidEdit { problems } => {
                f.write_str("the edited input does not fit the tool's input schema:")?;
                for p in problems {
                    let at = if p.path.is_empty() {
                        "(the input)"
                    } else {
                        &p.path
                    };
                    write!(f, " {at}: {};", p.message)?;
                }
                Ok(())
            }
            Refusal::EditUncheckable { fingerprint } => write!(
                f,
                "the tools of the dispatcher that paused this turn ({fingerprint}) are not known \
                 here, so an edit cannot be checked: approve or decline it, or publish its tools"
            ),
            Refusal::KeyReused { key } => write!(
                f,
                "the idempotency key {key:?} was used before with another request"
            ),
        }
    }
}

/// Why [`Inbox::decide`](super::Inbox::decide) gave no [`Decided`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecideError {
    /// The decision was not recorded, and why (or, with an idempotency key used before, the
    /// first request's refusal).
    #[error("{0}")]
    Refused(Refusal),
    /// The store could not answer: nothing is known to be recorded; sending the same request
    /// again (with its idempotency key) is safe. Its text and its source are the store error's.
    #[error(transparent)]
    Store(StoreError),
    /// The store recorded the answer, and its audit line could not be written (the decision
    /// stands: the call's final audit line at resume names who decided).
    #[error("the decision was recorded, and its audit line could not be written: {error}")]
    Unaudited {
        /// What was recorded.
        answer: Box<Result<Decided, Refusal>>,
        /// Why the line was not written (also this error's source).
        #[source]
        error: StoreError,
    },
}

/// An edited input as a store records it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EditedInput {
    /// The input.
    pub input: Value,
    /// Its compact JSON text.
    pub text: String,
    /// The SHA-256 of `text`, lowercase hex.
    pub digest: String,
    /// Its one-line summary.
    pub summary: String,
}

impl EditedInput {
    pub(crate) fn new(input: Value) -> EditedInput {
        let text = input.to_string();
        EditedInput {
            digest: hex(&Sha256::digest(text.as_bytes())),
            summary: crate::store::waiting::summary(&input),
            text,
            input,
        }
    }
}

/// What an [`InboxStore`](super::InboxStore) is asked to record: one person's request, who
/// they are, the [`Policy`] the store applies to the call it reads (in the decision's own
/// atomic step: the rules of `inbox/judge.rs`), and an edit checked against the tool's schema.
/// Only [`Inbox::decide`](super::Inbox::decide) (and the conformance suite) make one, so
/// nothing reaches a store's write without the policy.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Attempt {
    /// The request.
    pub request: DecisionRequest,
    /// Who (the signed-in identity's id): what the decision records.
    pub by: String,
    /// The signed-in identity (its id and groups, for the policy).
    pub identity: Identity,
    /// Who may decide what: checked against the call the store reads.
    pub policy: Arc<Policy>,
    /// The edited input, for [`Choice::Edit`].
    pub edit: Option<EditedInput>,
    /// A refusal found before the store (an edit that does not fit the tool's schema, or that
    /// cannot be checked): recorded under the key, the call left as it is.
    pub refused: Option<Refusal>,
    /// The SHA-256 (hex) of the request and its person: what an idempotency key is bound to.
    pub request_digest: String,
}

impl Attempt {
    pub(crate) fn new(
        request: DecisionRequest,
        identity: &Identity,
        policy: Arc<Policy>,
        edit: Option<EditedInput>,
        refused: Option<Refusal>,
    ) -> Attempt {
        let request_digest = request_digest(&request, identity.id());
        Attempt {
            request,
            by: identity.id().to_owned(),
            identity: identity.clone(),
            policy,
            edit,
            refused,
            request_digest,
        }
    }

    /// How many different people must approve a call of `tool` (1, or 2 on a two-person tool).
    pub fn approvals_needed(&self, tool: &str) -> u8 {
        self.policy.approvals_needed(tool)
    }

    /// The action asked for.
    pub fn action(&self) -> Action {
        self.request.choice.action()
    }

    /// The decline's reason.
    pub fn reason(&self) -> Option<&str> {
        match &self.request.choice {
            Choice::Decline { reason } => Some(reason),
            _ => None,
        }
    }
}

/// The SHA-256 of the request's members and its person, each length-prefixed (so no two
/// requests share a text).
fn request_digest(r: &DecisionRequest, by: &str) -> String {
    let (choice, detail) = match &r.choice {
        Choice::Approve => ("approve", String::new()),
        Choice::Decline { reason } => ("decline", reason.clone()),
        Choice::Edit { input } => ("edit", input.to_string()),
    };
    let parts = [
        by,
        &r.session_id,
        &r.turn_id,
        &r.tool_use_id,
        &r.input_digest,
        choice,
        &detail,
        r.comment.as_deref().unwrap_or(""),
    ];
    let mut hasher = Sha256::new();
    for p in parts {
        hasher.update((p.len() as u64).to_be_bytes());
        hasher.update(p.as_bytes());
    }
    hex(&hasher.finalize())
}

/// What a store answered to an [`Attempt`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Recorded {
    /// The decision recorded, or why not.
    pub answer: Result<Decided, Refusal>,
    /// When the store judged it, by its clock.
    pub at: SystemTime,
    /// The answer is the one recorded for the idempotency key before (nothing changed now).
    pub replayed: bool,
    /// The call's tool and user, as the store read them (empty for an unknown call or a
    /// replay): what the attempt's audit line names.
    pub call: Option<(String, String)>,
}

impl Recorded {
    /// An answer judged at `at`, fresh or replayed.
    pub fn new(answer: Result<Decided, Refusal>, at: SystemTime, replayed: bool) -> Recorded {
        Recorded {
            answer,
            at,
            replayed,
            call: None,
        }
    }

    /// With the call's `tool` and `user_id`.
    pub fn on(mut self, tool: &str, user_id: &str) -> Recorded {
        self.call = Some((tool.to_owned(), user_id.to_owned()));
        self
    }
}

/// An answer as a store keeps it under an idempotency key: the JSON of a [`Decided`], or of a
/// [`Refusal`] (`{"refused": …}`).
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn answer_json(answer: &Result<Decided, Refusal>) -> String {
    match answer {
        Ok(d) => serde_json::to_string(d),
        Err(r) => serde_json::to_string(r),
    }
    .unwrap_or_default()
}

/// An answer read back from [`answer_json`]'s text.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn answer_of(text: &str) -> Result<Result<Decided, Refusal>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if value.get("refused").is_some() {
        serde_json::from_value(value)
            .map(Err)
            .map_err(|e| e.to_string())
    } else {
        serde_json::from_value(value)
            .map(Ok)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn answers_read_back_exactly() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_515_300_125);
        let answers = [
            Ok(Decided {
                state: CallState::Waiting,
                by: "a".to_owned(),
                at,
                approvals: vec![Mark {
                    by: "a".to_owned(),
                    at,
                    comment: Some("ok".to_owned()),
                }],
                input_digest: "d".repeat(64),
            }),
            Err(Refusal::AlreadyDecided {
                state: CallState::Declined,
                by: "b".to_owned(),
                at,
            }),
            Err(Refusal::NotAllowed(NotAllowed::OwnCall {
                user_id: "u".to_owned(),
            })),
            Err(Refusal::InvalidEdit {
                problems: vec![EditProblem {
                    path: "/n".to_owned(),
                    message: "expected an integer".to_owned(),
                }],
            }),
        ];
        for answer in answers {
            assert_eq!(answer_of(&answer_json(&answer)), Ok(answer));
        }
    }

    #[test]
    fn a_request_is_bound_to_its_person_and_every_member() {
        let r = DecisionRequest::new("s", "t", "c", "d", Choice::Approve);
        let base = request_digest(&r, "a");
        assert_eq!(base, request_digest(&r.clone(), "a"));
        assert_ne!(base, request_digest(&r, "b"));
        assert_ne!(base, request_digest(&r.clone().comment("x"), "a"));
        let split = DecisionRequest::new("s", "tc", "", "d", Choice::Approve);
        let joined = DecisionRequest::new("st", "c", "", "d", Choice::Approve);
        assert_ne!(request_digest(&split, "a"), request_digest(&joined, "a"));
    }
}
