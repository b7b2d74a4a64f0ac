//! A paused turn: [`PendingTurn`], what [`Session::respond`](crate::Session::respond) gives a
//! host whose calls wait for a person's approval, kept anywhere (a database row, a file) and
//! resumed later, possibly in another process, with [`Session::resume`](crate::Session::resume);
//! and [`ResumeError`], why a resume was refused.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::approval::ask::Asked;
use crate::content::message::{ToolResult, ToolUse};
use crate::error::{CallError, Halt};
use crate::store::error::StoreError;
use crate::texts;

/// The format version a [`PendingTurn`] is written with, and the only one
/// [`Session::resume`](crate::Session::resume) reads. Version 2 added `turn_format`, `turn_id`
/// and the call items some APIs' answers echo.
pub const PENDING_TURN_FORMAT: u32 = 2;

/// Which API's turn a [`PendingTurn`] paused, and so in which shape
/// [`Session::resume`](crate::Session::resume) gives its answers ([`Resumed`]). Serialized in
/// snake_case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TurnFormat {
    /// An Anthropic Messages API assistant message ([`Session::respond`](crate::Session::respond)):
    /// resumed into the user message of `tool_result` blocks.
    AnthropicMessages,
    /// An OpenAI Chat Completions choice (`Session::respond_openai_choice`, feature `openai`):
    /// resumed into `{"role": "tool", …}` messages.
    OpenaiChat,
    /// An OpenAI Responses API response (`Session::respond_openai_response`, feature
    /// `openai`): resumed into `function_call_output` items.
    OpenaiResponses,
    /// A Gemini candidate (`Session::respond_gemini_candidate`, feature `gemini`): resumed into
    /// `functionResponse` parts.
    Gemini,
}

impl TurnFormat {
    /// The snake_case name, as serialized.
    pub const fn as_str(self) -> &'static str {
        match self {
            TurnFormat::AnthropicMessages => "anthropic_messages",
            TurnFormat::OpenaiChat => "openai_chat",
            TurnFormat::OpenaiResponses => "openai_responses",
            TurnFormat::Gemini => "gemini",
        }
    }

    /// The cargo feature a build needs to give this format's answers; `None` for the Messages
    /// API, which every build has.
    pub const fn feature(self) -> Option<&'static str> {
        match self {
            TurnFormat::AnthropicMessages => None,
            TurnFormat::OpenaiChat | TurnFormat::OpenaiResponses => Some("openai"),
            TurnFormat::Gemini => Some("gemini"),
        }
    }
}

/// The answers of a resumed turn, in the shape of the API its [`PendingTurn`] came from
/// ([`TurnFormat`]), one per call, in order. Serialized as what it holds: the user message's
/// object, or the array of items.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Resumed {
    /// A Messages API turn's answer: the user message `{"role": "user", "content":
    /// [tool_result, …]}` to send next.
    Message(crate::content::message::Message),
    /// Another API's answer items: OpenAI Chat `{"role": "tool", "tool_call_id", "content"}`
    /// messages, Responses `{"type": "function_call_output", "call_id", "output"}` items, or
    /// Gemini `{"functionResponse": {"name", "response", "id"?}}` parts.
    Items(Vec<Value>),
}

impl Resumed {
    /// The user message, for a Messages API turn.
    pub fn into_message(self) -> Option<crate::content::message::Message> {
        match self {
            Resumed::Message(m) => Some(m),
            Resumed::Items(_) => None,
        }
    }

    /// The answer items, for another API's turn.
    pub fn into_items(self) -> Option<Vec<Value>> {
        match self {
            Resumed::Items(items) => Some(items),
            Resumed::Message(_) => None,
        }
    }
}

/// A turn paused for a person's approval: the answers of the `tool_use` blocks that needed
/// none, and the calls that wait, in `tool_use` order; bound to the session and user that made
/// it and to the dispatcher's tools and hooks. A serde value: store it as JSON, show the
/// waiting calls to a person, then resume it with their decisions
/// ([`Session::resume`](crate::Session::resume)), which answers with the complete user message.
///
/// ```json
/// {"format": 2, "turn_format": "anthropic_messages", "turn_id": "msg_01A", "turn": "msg_01A",
///  "session_id": "sess_1", "user_id": "u_001",
///  "fingerprint": "5f0c…(64 hex)", "created_at": "2026-11-24T10:15:00Z",
///  "pending_ttl_ms": 86400000,
///  "blocks": [
///   {"state": "answered", "result": {"type": "tool_result", "tool_use_id": "toolu_1", "content": "…"}},
///   {"state": "awaiting_approval", "tool_use_id": "toolu_2", "tool": "issue_refund",
///    "input": {"order_id": "o_1", "amount_cents": 25000},
///    "effective_input": {"order_id": "o_1", "amount_cents": 25000},
///    "input_digest": "…(64 hex)",
///    "asked_by": [{"hook": "app::large_refund", "reason": "refunds above 20000 cents need a person's approval"}]}
///  ]}
/// ```
///
/// - `format`: [`PENDING_TURN_FORMAT`]; another version is refused at resume.
/// - `turn_format`: the API the turn came from ([`TurnFormat`]); resume answers in its shape.
/// - `turn_id`: the turn's name, the key a store keeps it under with the session id: its model
///   response's id (`turn`) when it had one, else the id of its first call. A resend of the same
///   message pauses the same turn again; a later turn whose first call reuses an id (as
///   OpenAI-compatible servers number a turn's calls) has a response id of its own.
/// - `turn` (absent when the response had no id): the model response's id (`msg_…`,
///   `chatcmpl-…`, `resp_…`, `gemini-{turn}`); resume claims the calls in that turn, so a resend
///   of the message after the resume is answered from memory (ARCHITECTURE.md, "Contracts":
///   "Ids and retries").
/// - `call` (on a block, only for APIs whose answer echoes the call: Gemini's `functionCall`
///   part, whose `name` and `id` its `functionResponse` repeats): the call as the API sent it.
/// - `fingerprint`: [`Dispatcher::fingerprint`](crate::Dispatcher::fingerprint) of the
///   dispatcher that paused (its tools, their input schemas and PreToolUse chains); a dispatcher
///   with another one refuses the turn.
/// - `created_at`: when it paused, by the session's context clock (RFC 3339); it expires after
///   the resuming dispatcher's [`pending_ttl`](crate::dispatch::DispatcherBuilder::pending_ttl).
/// - `pending_ttl_ms`: the pausing dispatcher's `pending_ttl`, in milliseconds: how long a
///   store that keeps the turn lets its calls wait for a decision, counted by the store's own
///   clock from when it kept the turn (the inbox, feature `inbox`: a decision after it is
///   refused as expired, and the call resumes as expired). Absent in a turn written before it
///   was added: 24 hours.
/// - `input_digest`: the SHA-256 of `effective_input`'s JSON text as serde_json writes it,
///   compact (lowercase hex); for a call with `sealed`, of that text, a newline (`\n`) and the
///   `sealed` string. Object keys keep their order in this build (serde_json's
///   `preserve_order`, which schemars turns on), so the digest is that of the text the
///   model's keys in their order make; it checks that the input a person approved is the one
///   that runs.
/// - `sealed` (on a waiting call, only when a field rule of the audit log's
///   [`Redaction`](crate::audit::Redaction) reaches into its `input` or `effective_input`):
///   those two are then shown as the audit line shows them (`"[redacted]"`, or the rule's own
///   mask), and `sealed` holds the real ones, encrypted under the dispatcher's key
///   (`DispatcherBuilder::seal_keys`, feature `seal`; `approval/seal.rs` has the format and
///   why). A person sees what the audit log shows and approves its digest, which covers the
///   shown input and the sealed value: the approval is bound to this sealed value, which is
///   bound (its associated data) to this call and the inputs shown, so the tool runs with the
///   real input sealed when the turn paused, or not at all. The digest is of nothing secret,
///   so a short secret (a PIN) cannot be found by hashing guesses against it.
///
/// Nothing in it is secret beyond what the audit log already holds: the inputs as the audit
/// line shows them, the answered blocks' results as the model will read them (the audit log's
/// text rules mask the line, not the model's answer), and sealed values. It is not signed: a
/// host that stores it where others can write must protect it as it would the conversation (a
/// sealed value cannot be changed or moved to another call without its resume being refused).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PendingTurn {
    /// [`PENDING_TURN_FORMAT`] when written.
    pub format: u32,
    /// The API the turn came from.
    pub turn_format: TurnFormat,
    /// The turn's name: its model response's id, or, without one, the id of its first call.
    /// With the session id, the key a store keeps it under.
    pub turn_id: String,
    /// The model response's id, when the turn had one: its calls are claimed in that turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<String>,
    /// The session that paused.
    pub session_id: String,
    /// The (authenticated) user of that session.
    pub user_id: String,
    /// The pausing dispatcher's [`fingerprint`](crate::Dispatcher::fingerprint).
    pub fingerprint: String,
    /// When the turn paused (the context's clock).
    #[serde(with = "crate::base::time::as_rfc3339")]
    pub created_at: SystemTime,
    /// The pausing dispatcher's
    /// [`pending_ttl`](crate::dispatch::DispatcherBuilder::pending_ttl) (`pending_ttl_ms` in
    /// JSON, whole milliseconds): how long a store keeping the turn lets its calls wait, by the
    /// store's clock. `None` in a turn written before the field was added (a store then uses
    /// [`DEFAULT_PENDING_TTL`](crate::dispatch::DispatcherBuilder::DEFAULT_PENDING_TTL)).
    #[serde(
        default,
        rename = "pending_ttl_ms",
        skip_serializing_if = "Option::is_none",
        with = "ttl_ms"
    )]
    pub pending_ttl: Option<Duration>,
    /// One entry per `tool_use` block, in order.
    pub blocks: Vec<PendingBlock>,
}

/// `pending_ttl_ms`: a duration as whole milliseconds.
mod ttl_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        ttl: &Option<Duration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match ttl {
            Some(d) => s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

impl PendingTurn {
    /// How long a store keeping this turn lets its calls wait: its
    /// [`pending_ttl`](Self::pending_ttl), or 24 hours for a turn written without one.
    pub fn ttl(&self) -> Duration {
        // `DispatcherBuilder::DEFAULT_PENDING_TTL`, written out: this file sits below the
        // dispatcher (a test checks they agree).
        self.pending_ttl
            .unwrap_or(Duration::from_secs(24 * 60 * 60))
    }

    /// The calls waiting for a decision, in `tool_use` order.
    pub fn awaiting(&self) -> impl Iterator<Item = &AwaitingCall> {
        self.blocks.iter().filter_map(|b| match b {
            PendingBlock::AwaitingApproval(a) => Some(a),
            PendingBlock::Answered { .. } => None,
        })
    }
}

/// One `tool_use` block of a [`PendingTurn`]: answered already, or waiting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PendingBlock {
    /// Answered when the turn paused (it needed no approval): `{"state": "answered", "result":
    /// tool_result}`.
    Answered {
        /// Its `tool_result`.
        result: ToolResult,
        /// The call as the API sent it, for an API whose answer echoes it (Gemini).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call: Option<Value>,
    },
    /// Waiting for a person: `{"state": "awaiting_approval", …}` with the members of
    /// [`AwaitingCall`].
    AwaitingApproval(AwaitingCall),
}

impl PendingBlock {
    /// The call as the API sent it, when the turn kept it (Gemini).
    pub(crate) fn call(&self) -> Option<&Value> {
        match self {
            PendingBlock::Answered { call, .. } => call.as_ref(),
            PendingBlock::AwaitingApproval(a) => a.call.as_ref(),
        }
    }

    /// Keeps the call as the API sent it, for an API whose answer echoes it.
    pub(crate) fn keep_call(&mut self, item: Value) {
        match self {
            PendingBlock::Answered { call, .. } => *call = Some(item),
            PendingBlock::AwaitingApproval(a) => a.call = Some(item),
        }
    }

    /// The block's `tool_use` id.
    pub fn tool_use_id(&self) -> &str {
        match self {
            PendingBlock::Answered { result, .. } => &result.tool_use_id,
            PendingBlock::AwaitingApproval(a) => &a.tool_use_id,
        }
    }

    /// The answer of a block that has one; a waiting call's is the `blocked` result of a call
    /// nobody can approve (fail closed: where a turn cannot pause, a call that asks is blocked).
    pub(crate) fn into_result(self) -> ToolResult {
        match self {
            PendingBlock::Answered { result, .. } => result,
            PendingBlock::AwaitingApproval(a) => ToolResult::error(
                a.tool_use_id,
                texts::needs_approval(a.asked_by.iter().map(|x| x.reason.as_str())),
            ),
        }
    }
}

/// A call of a [`PendingTurn`] waiting for a person's approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AwaitingCall {
    /// The `tool_use` id.
    pub tool_use_id: String,
    /// The tool's name, as [`ToolUse::name`] (`tool` in JSON, as on the call's audit line).
    #[serde(rename = "tool")]
    pub name: String,
    /// The input as the model sent it, normalized (what the audit line's `input` shows).
    pub input: Value,
    /// The input after the PreToolUse rewrites: what the tool runs with once approved.
    pub effective_input: Value,
    /// The SHA-256 of `effective_input`'s compact JSON text (and of `sealed`, when there is
    /// one), lowercase hex (see [`PendingTurn`]): what a person's approval names.
    pub input_digest: String,
    /// The hooks that asked, with their reasons, in chain order.
    pub asked_by: Vec<Asked>,
    /// The hooks that rewrote the input, in order (empty when none did).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rewritten_by: Vec<String>,
    /// The call as the API sent it, for an API whose answer echoes it (Gemini), its `args`
    /// masked as the audit line masks the input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<Value>,
    /// The real `input` and `effective_input`, sealed, when the audit log's redaction hides
    /// fields of them: `"aes256-siv:<key id>:<hex>"` (see [`PendingTurn`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed: Option<String>,
}

impl AwaitingCall {
    pub(crate) fn new(
        call: &ToolUse,
        effective_input: &Value,
        asked_by: &[Asked],
        rewritten_by: &[&str],
    ) -> Self {
        AwaitingCall {
            tool_use_id: call.id.clone(),
            name: call.name.clone(),
            input: call.input.clone(),
            effective_input: effective_input.clone(),
            input_digest: input_digest(effective_input),
            asked_by: asked_by.to_vec(),
            rewritten_by: rewritten_by.iter().map(|&p| p.to_owned()).collect(),
            call: None,
            sealed: None,
        }
    }

    /// The digest of what the call shows, by `input_digest`'s rule: of `effective_input`'s
    /// compact JSON text, or of that text, `\n` and `sealed`.
    pub(crate) fn digest(&self) -> String {
        let Some(sealed) = &self.sealed else {
            return input_digest(&self.effective_input);
        };
        let mut text = serde_json::to_string(&self.effective_input).unwrap_or_default();
        text.push('\n');
        text.push_str(sealed);
        hex(&Sha256::digest(text.as_bytes()))
    }

    /// The `tool_use` block as the model sent it (normalized).
    pub(crate) fn call(&self) -> ToolUse {
        ToolUse::new(&self.tool_use_id, &self.name, self.input.clone())
    }
}

/// The SHA-256 of `input`'s compact JSON text, lowercase hex: `printf '%s' '{"a":1}' |
/// sha256sum`.
pub fn input_digest(input: &Value) -> String {
    let text = serde_json::to_string(input).unwrap_or_default();
    hex(&Sha256::digest(text.as_bytes()))
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    crate::base::hex::encode(bytes)
}

/// Why [`Session::resume`](crate::Session::resume) gave no user message. Every refusal but
/// [`Call`](ResumeError::Call) is found before anything runs: nothing ran and nothing was
/// audited; fix the cause and resume again.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// A waiting call gave no answer (see [`CallError`]): [`CallError::Halt`] when a PreToolUse
    /// hook could not decide as an approved call's chain ran again (the agent halts; the halt's
    /// answer covers every block of the turn), or the session's answer memory refused the call
    /// ([`CallError::InProgress`]: another resume of it runs now; [`CallError::IdReused`];
    /// [`CallError::Store`]): the calls before it were answered and remembered, nothing more
    /// ran. Resume again later: the answered ones are replayed.
    #[error(transparent)]
    Call(#[from] CallError),
    /// The pending turn was written in a format this build does not read.
    #[error("the pending turn has format {found}; this build reads format {PENDING_TURN_FORMAT}")]
    UnknownFormat {
        /// Its `format`.
        found: u32,
    },
    /// The pending turn came from an API whose answers this build cannot give: an OpenAI or a
    /// Gemini turn resumed without the `openai` or `gemini` feature.
    #[error(
        "the pending turn is a {} turn; this build resumes it only with the `{feature}` feature",
        turn_format.as_str()
    )]
    TurnFormatNotBuilt {
        /// The pending turn's format.
        turn_format: TurnFormat,
        /// The cargo feature that gives its answers.
        feature: &'static str,
    },
    /// The pending turn belongs to another session or user.
    #[error(
        "the pending turn belongs to session {pending_session:?} of user {pending_user:?}, not to \
         session {session:?} of user {user:?}"
    )]
    OtherSession {
        /// The pending turn's session id.
        pending_session: String,
        /// The pending turn's user id.
        pending_user: String,
        /// This session's id.
        session: String,
        /// This session's user id.
        user: String,
    },
    /// The dispatcher's tools or PreToolUse hooks changed since the turn paused, so the
    /// approvals may no longer mean what they meant.
    #[error(
        "the dispatcher changed since the turn paused (fingerprint {found}, now {expected}): its \
         tools or PreToolUse hooks are not those the calls were checked by"
    )]
    DispatcherChanged {
        /// This dispatcher's fingerprint.
        expected: String,
        /// The pending turn's.
        found: String,
    },
    /// The pending turn's blocks do not answer one `tool_use` each: it has none, a block's id
    /// is empty, or two blocks have one id (the turn was edited since it paused; resuming it
    /// would answer an id twice, or run one call under another's decision).
    #[error(
        "the pending turn cannot be resumed as it stands: {problem}; it was changed since it paused"
    )]
    Malformed {
        /// What is wrong: `it has no block`, `block 2 has an empty tool_use id`, `blocks 2 and
        /// 3 both answer tool_use "toolu_2"`.
        problem: String,
    },
    /// A decision names an id that is not waiting in the pending turn.
    #[error("tool_use {tool_use_id:?} is not waiting for approval in this pending turn")]
    NotPending {
        /// The id.
        tool_use_id: String,
    },
    /// An approval is for an input whose digest differs from the waiting call's (or the pending
    /// turn's input does not match its own digest: it was altered).
    #[error(
        "the approval of tool_use {tool_use_id:?} is for input digest {approved}, but the call's \
         input has digest {actual}"
    )]
    DigestMismatch {
        /// The id.
        tool_use_id: String,
        /// The digest approved (or recorded in the pending turn).
        approved: String,
        /// The digest of the input the call would run with.
        actual: String,
    },
    /// [`Session::resume_from`](crate::Session::resume_from): no turn of this session is kept
    /// under that turn id. A turn is kept when the session that paused it was opened on the
    /// store ([`Dispatcher::session_on`](crate::Dispatcher::session_on),
    /// [`Session::with_pending_store`](crate::Session::with_pending_store)) or the host
    /// [`put`](crate::store::PendingStore::put) it; the session ids and the turn id must be the
    /// paused turn's ([`PendingTurn::session_id`], [`PendingTurn::turn_id`]).
    #[error(
        "no paused turn {turn_id:?} of session {session_id:?} is kept in this store: check that \
         the session that paused it was opened on this store (Dispatcher::session_on, or \
         Session::with_pending_store), and that this session's id and the turn id (the id of \
         the turn's first tool_use) are the paused turn's"
    )]
    NoSuchTurn {
        /// The session's id.
        session_id: String,
        /// The turn id asked for.
        turn_id: String,
    },
    /// [`Session::resume_from`](crate::Session::resume_from): another resume (in this process
    /// or another) holds the turn now. Nothing ran; ask again once it is done, to get its
    /// answer.
    #[error(
        "the paused turn {turn_id:?} is being resumed by another caller; nothing was run: ask \
         again once it is done to get its answer"
    )]
    BeingResumed {
        /// The turn id.
        turn_id: String,
    },
    /// [`Session::resume_from`](crate::Session::resume_from): the pending turns' store could
    /// not answer, so nothing was resumed. The store's error is this error's
    /// [`source`](std::error::Error::source).
    #[error("the pending turns' store failed: {}", .0.message())]
    Store(#[source] StoreError),
    /// The audit log's redaction hides fields of a waiting call's input, and their real values
    /// cannot be given back (see [`SealProblem`]): the call would run with what the turn
    /// shows in their place, so nothing runs.
    #[error(
        "the input of tool_use {tool_use_id:?} has fields the audit log's redaction hides, and \
         their real values cannot be given back: {problem}; nothing was run"
    )]
    SealedInput {
        /// The waiting call's id.
        tool_use_id: String,
        /// Why.
        problem: SealProblem,
    },
    /// A waiting call has no decision (a turn that has not expired needs one for each).
    #[error("tool_use {tool_use_id:?} is waiting for approval and has no decision")]
    Undecided {
        /// The id.
        tool_use_id: String,
    },
}

/// Why a resume could not give a paused call its hidden fields back
/// ([`ResumeError::SealedInput`](crate::approval::ResumeError::SealedInput)). Nothing ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealProblem {
    /// A field rule of the audit log reaches into the call's input, and the call has no sealed
    /// value: it was paused by a dispatcher whose rules did not hide the field, or the turn was
    /// changed since (its `sealed` member removed).
    #[error(
        "the pending turn shows them without a sealed value (it was paused by a dispatcher \
         whose redaction did not hide them, or changed since)"
    )]
    NotSealed,
    /// The call has a sealed value and this dispatcher has no seal key.
    #[error("this dispatcher has no seal key (DispatcherBuilder::seal_keys)")]
    NoKey,
    /// The call has a sealed value and this build has no `seal` feature.
    #[error("this build cannot open sealed values: it lacks the `seal` feature")]
    NotBuilt,
    /// The value was sealed with a key this dispatcher does not have.
    #[error(
        "they were sealed with key {key_id:?}, which this dispatcher does not have (keep a \
         retired key with SealKeys::also_open until its turns have expired)"
    )]
    UnknownKey {
        /// The key id the sealed value names.
        key_id: String,
    },
    /// The value does not open with the key of its id: the key's bytes are not the ones it
    /// was sealed with, or the sealed value, the shown inputs or the call's ids were changed
    /// since the pause.
    #[error(
        "they do not open with key {key_id:?}: the key is not the one they were sealed with, \
         or the pending turn was changed since it paused"
    )]
    DoesNotOpen {
        /// The key id tried.
        key_id: String,
    },
    /// The `sealed` member is not a sealed value this build reads.
    #[error("its sealed value is not one this build reads: {problem}")]
    Malformed {
        /// What is wrong (`it does not start with "aes256-siv:"`, …).
        problem: String,
    },
}

impl ResumeError {
    /// The [`Halt`], when a PreToolUse hook halted the agent.
    pub fn halt(&self) -> Option<&Halt> {
        match self {
            ResumeError::Call(e) => e.halt(),
            _ => None,
        }
    }

    /// The [`Halt`], by value, when a PreToolUse hook halted the agent.
    pub fn into_halt(self) -> Option<Halt> {
        match self {
            ResumeError::Call(e) => e.into_halt(),
            _ => None,
        }
    }
}

impl From<Halt> for ResumeError {
    fn from(halt: Halt) -> Self {
        ResumeError::Call(CallError::Halt(halt))
    }
}
