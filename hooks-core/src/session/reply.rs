//! [`Reply`]: what [`Session::respond`](crate::Session::respond) gives back for an assistant
//! message, and the whole-turn entry points of the other APIs for theirs.

use crate::approval::pending::PendingTurn;
use crate::content::message::Message;

/// The answer to an assistant message (or another API's turn) whose calls all ran: either the
/// next user turn, or nothing to run.
///
/// The Messages API refuses a user message with empty content ("all messages must have
/// non-empty content"), so a message without `tool_use` blocks gets
/// [`NothingToRun`](Reply::NothingToRun), never an empty answer. `T` is the answer's shape:
/// a user [`Message`] for [`Session::respond`](crate::Session::respond); a list of items in the
/// provider's wire format for the other APIs' entry points
/// ([`Session::respond_openai_choice`](crate::Session::respond_openai_choice), …).
///
///
/// ```
/// use toolgate_core::{Dispatcher, HookContext, Message, Reply};
///
/// let dispatcher = Dispatcher::builder().build().unwrap();
/// let session = dispatcher.session(HookContext::builder("u_1", "sess_1").build());
/// let done: Message = serde_json::from_value(serde_json::json!({
///     "role": "assistant", "stop_reason": "end_turn",
///     "content": [{"type": "text", "text": "Your refund is on its way."}]
/// })).unwrap();
/// assert_eq!(toolgate_core::block_on(session.respond(&done)).unwrap(),
///     Reply::NothingToRun { stop_reason: Some("end_turn".into()) });
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Reply<T = Message> {
    /// One answer per call, in order: for the Messages API the user message
    /// `{"role": "user", "content": [tool_result, …]}` to send next.
    Answer(T),
    /// The turn has no call: nothing ran and there is nothing to send back for it. The host
    /// reads the stop reason to go on: `end_turn` (the model is done), `stop_sequence`,
    /// `refusal` (the model declined), `pause_turn` (send the assistant turn back as is so
    /// the model continues a long server-tool turn), `max_tokens` (its text was cut). For the
    /// other APIs: OpenAI's `finish_reason`, the Responses API's `status`, Gemini's
    /// `finishReason`.
    NothingToRun {
        /// The stop reason as the API gave it; `None` when the message has none.
        stop_reason: Option<String>,
    },
    /// A PreToolUse hook asked for a person's approval of a call and the dispatcher has no
    /// approver ([`Decision::Ask`](crate::Decision::Ask)): the turn is paused. The blocks that
    /// needed no approval were answered (and audited); the waiting calls did not run (audited
    /// `awaiting_approval`, not final).
    ///
    /// Who keeps the [`PendingTurn`]: a session opened on a store
    /// ([`Dispatcher::session_on`](crate::Dispatcher::session_on),
    /// [`Session::with_pending_store`](crate::Session::with_pending_store)) has already put it
    /// there when this is returned: a person decides on its [`awaiting`](PendingTurn::awaiting)
    /// calls (as [`PendingStore::waiting`](crate::store::PendingStore::waiting) lists them, in
    /// any process), and [`Session::resume_from`](crate::Session::resume_from) finishes it
    /// once. A session with no store leaves it to the host: keep it (its JSON), then finish it
    /// with [`Session::resume`](crate::Session::resume), once-only within one process's answer
    /// memory. Either answers the whole turn in its API's shape.
    /// Every whole-turn entry point pauses the same way ([`Session::respond`](crate::Session::respond)
    /// and the OpenAI and Gemini ones); [`Session::call`](crate::Session::call), one block and
    /// no turn, cannot pause, and blocks such a call.
    Pending(PendingTurn),
}

impl<T> Reply<T> {
    /// The answer, when there is one.
    pub fn into_answer(self) -> Option<T> {
        match self {
            Reply::Answer(a) => Some(a),
            Reply::NothingToRun { .. } | Reply::Pending(_) => None,
        }
    }

    /// The answer, by reference, when there is one.
    pub fn answer(&self) -> Option<&T> {
        match self {
            Reply::Answer(a) => Some(a),
            Reply::NothingToRun { .. } | Reply::Pending(_) => None,
        }
    }

    /// The pending turn, when the turn paused for a person's approval.
    pub fn pending(&self) -> Option<&PendingTurn> {
        match self {
            Reply::Pending(p) => Some(p),
            Reply::Answer(_) | Reply::NothingToRun { .. } => None,
        }
    }
}
