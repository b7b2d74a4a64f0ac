//! Errors: [`ToolError`] (a tool's failure, split into what the model reads and what the
//! operator logs), [`HookError`], [`Halt`] (fail closed), and why a session gave no answer:
//! [`CallError`] for one `tool_use`, [`RespondError`] for a message.

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;

use crate::audit::outcome::Outcome;
use crate::content::ids::IdError;
use crate::content::message::{Message, ToolResult};
use crate::store::error::StoreError;
use crate::texts::INTERNAL_ERROR_MESSAGE;

/// A tool's failure: `is_error: true` with [`message`](Self::message) as the content.
///
/// **Only text written for the model is shown to it.** Library errors routinely hold what the
/// model must never read: a DSN with its password (`postgres://billing:…@db-7/ledger`), a signed
/// URL, a key, a host name. So a `ToolError` is one of two kinds, after rig's split between what
/// the model is told and what the operator logs:
///
/// - **model-facing**: [`ToolError::new`] (text the tool's author wrote), and
///   [`ToolError::for_model`] (an error value whose `Display` was written for the model: its
///   `Display` is the message, its `source()` chain goes to the audit line's `detail`);
/// - **internal**, the default for every other error: [`ToolError::internal`], and any
///   `E: std::error::Error + Send + Sync + 'static` converted with `?` or `.into()`. The model
///   reads [`INTERNAL_ERROR_MESSAGE`]; the error's `Display` and its whole `source()` chain,
///   joined with `": "`, go to the audit line's `detail` only.
///
/// A `#[tool]` function's error type follows the same rule: `ToolError`, `String` and `&str`
/// errors are shown as written; any other type is internal unless the tool says
/// `#[tool(errors = "shown")]` (see the `toolgate` facade's `#[tool]` section).
///
/// `anyhow::Error` (and `eyre::Report`) converts into the `Box<dyn Error + Send + Sync>` both
/// constructors take: `ToolError::internal(e)` keeps its chain for `detail`, and
/// `ToolError::for_model(e)` shows its `Display` on purpose.
///
/// Rust's coherence rules forbid a `From<MyError> for ToolError` beside the blanket
/// `From<E: Error>`, so the opt-in is on the value (`for_model`) or on the tool (`errors =
/// "shown"`), never on the type. `ToolError` deliberately does not implement
/// `std::error::Error` (anyhow's pattern): that is what lets the blanket `From<E: Error>`
/// coexist with `From<ToolError>` without specialization.
///
/// ```
/// use toolgate_core::content::INTERNAL_ERROR_MESSAGE;
/// use toolgate_core::ToolError;
///
/// // Written for the model: shown as is.
/// let e = ToolError::new("Order o_9 was not found; check the id with the customer.");
/// assert_eq!(e.message(), "Order o_9 was not found; check the id with the customer.");
/// assert_eq!(e.detail(), None);
///
/// // A library error forwarded with `?`: internal. The model never reads the password.
/// fn connect() -> Result<(), std::io::Error> {
///     Err(std::io::Error::other("postgres://billing:s3cr3t@db-7/ledger: connection refused"))
/// }
/// fn lookup() -> Result<String, ToolError> {
///     connect()?;
///     Ok("found".into())
/// }
/// let e = lookup().unwrap_err();
/// assert_eq!(e.message(), INTERNAL_ERROR_MESSAGE);
/// assert!(e.is_internal());
/// assert_eq!(
///     e.detail().as_deref(),
///     Some("postgres://billing:s3cr3t@db-7/ledger: connection refused")
/// );
/// ```
///
/// An error type whose `Display` is written for the model, opted in value by value:
///
/// ```
/// use toolgate_core::ToolError;
///
/// /// Why a refund was refused. Its `Display` is written for the model.
/// #[derive(Debug)]
/// struct RefundRefused { left_cents: u64 }
///
/// impl std::fmt::Display for RefundRefused {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         write!(f, "Refund refused: refund at most {} cents.", self.left_cents)
///     }
/// }
/// impl std::error::Error for RefundRefused {}
///
/// fn refund(cents: u64) -> Result<u64, RefundRefused> {
///     if cents > 599 { Err(RefundRefused { left_cents: 599 }) } else { Ok(cents) }
/// }
///
/// fn issue_refund(cents: u64) -> Result<String, ToolError> {
///     let done = refund(cents).map_err(ToolError::for_model)?;
///     Ok(format!("refunded {done} cents"))
/// }
/// let e = issue_refund(600).unwrap_err();
/// assert_eq!(e.message(), "Refund refused: refund at most 599 cents.");
/// assert!(!e.is_internal());
/// ```
pub struct ToolError {
    message: Cow<'static, str>,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
    internal: bool,
}

impl ToolError {
    /// A failure whose `message` the model reads as is: text written for the model (what went
    /// wrong, what to do next). No `detail`.
    pub fn new(message: impl Into<Cow<'static, str>>) -> Self {
        ToolError {
            message: message.into(),
            source: None,
            internal: false,
        }
    }

    /// A failure the model must not see the details of: it reads [`INTERNAL_ERROR_MESSAGE`];
    /// `error`'s `Display` and its `source()` chain, joined with `": "`, go to the audit line's
    /// `detail`. The default for every library error (what `?` does).
    pub fn internal(error: impl Into<Box<dyn StdError + Send + Sync + 'static>>) -> Self {
        ToolError {
            message: Cow::Borrowed(INTERNAL_ERROR_MESSAGE),
            source: Some(error.into()),
            internal: true,
        }
    }

    /// An error whose `Display` was written for the model, shown on purpose: the model reads
    /// `error`'s `Display` (read now); its `source()` chain (what caused it, often operator
    /// detail) goes to the audit line's `detail`, joined with `": "`, never to the model.
    ///
    /// The opt-in for one value, typically `.map_err(ToolError::for_model)?`; for every error
    /// of a `#[tool]` function, `#[tool(errors = "shown")]`. Takes what
    /// [`ToolError::internal`] takes: any `std::error::Error + Send + Sync + 'static`, a
    /// `Box<dyn Error + Send + Sync>`, `anyhow::Error`.
    pub fn for_model(error: impl Into<Box<dyn StdError + Send + Sync + 'static>>) -> Self {
        let error = error.into();
        ToolError {
            message: Cow::Owned(error.to_string()),
            source: Some(error),
            internal: false,
        }
    }

    /// The text the model reads.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether the model reads the generic [`INTERNAL_ERROR_MESSAGE`] instead of the error: made
    /// by [`ToolError::internal`] or converted from a `std::error::Error` with `?`/`.into()`.
    pub fn is_internal(&self) -> bool {
        self.internal
    }

    /// Operator-only text, for the audit line's `detail`: for an internal error, the error and
    /// its source chain joined with `": "`; for [`ToolError::for_model`], its source chain (when
    /// it has one); `None` for [`ToolError::new`].
    pub fn detail(&self) -> Option<String> {
        let source = self.source.as_deref()?;
        let first: Option<&(dyn StdError + 'static)> = if self.internal {
            Some(source)
        } else {
            source.source()
        };
        chain_text(first)
    }

    /// The wrapped error, when there is one.
    pub fn source(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        self.source.as_deref()
    }
}

/// `first` and each `source()` after it, joined with `": "`; `None` when there is none.
pub(crate) fn chain_text(first: Option<&(dyn StdError + 'static)>) -> Option<String> {
    let mut parts = Vec::new();
    let mut next = first;
    while let Some(e) = next {
        parts.push(e.to_string());
        next = e.source();
    }
    if parts.is_empty() {
        None
    } else {
        Some(parts.join(": "))
    }
}

/// Any `std::error::Error` converted with `?` or `.into()` is **internal**: the model reads
/// [`INTERNAL_ERROR_MESSAGE`], the error's `Display` and source chain go to `detail` (as
/// [`ToolError::internal`]). Show one on purpose with [`ToolError::for_model`].
impl<E: StdError + Send + Sync + 'static> From<E> for ToolError {
    fn from(error: E) -> Self {
        ToolError::internal(error)
    }
}

/// An error known only as text: a `Display`-only error (`anyhow::Error`-like, or one that is not
/// `Send`), read when it was converted. Its `Display` is `text`; `source` is the rest of its
/// chain, when it had one.
#[derive(Debug)]
pub(crate) struct Noted {
    text: String,
    source: Option<Box<Noted>>,
}

impl Noted {
    /// `text`, caused by `source` (when given).
    pub(crate) fn new(text: String, source: Option<String>) -> Noted {
        Noted {
            text,
            source: source.map(|text| Box::new(Noted { text, source: None })),
        }
    }

    /// `error` and its chain, read now (for an error that cannot be kept: not `Send`).
    pub(crate) fn read(error: &(dyn StdError + 'static)) -> Noted {
        Noted {
            text: error.to_string(),
            source: error.source().map(|s| Box::new(Noted::read(s))),
        }
    }
}

impl fmt::Display for Noted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl StdError for Noted {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn StdError + 'static))
    }
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolError")
            .field("message", &self.message)
            .field("internal", &self.internal)
            .field("detail", &self.detail())
            .finish()
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// A hook failed to decide (a database was down, a lookup broke). Never shown to the model:
/// in a PreToolUse hook it halts the agent (fail closed) and the text goes to the audit line's
/// `detail`; in an observer or Stop hook it goes to `tracing` and is counted in
/// `observer_errors`.
///
/// Hooks written with the macros may return `Result<Decision, E>` for any `E: Display`; it is
/// converted with [`HookError::new`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HookError {
    message: String,
}

impl HookError {
    /// A hook error with `message` (operator-only).
    pub fn new(message: impl fmt::Display) -> Self {
        HookError {
            message: message.to_string(),
        }
    }

    /// The operator-only text.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<crate::hook::state::MissingState> for HookError {
    fn from(e: crate::hook::state::MissingState) -> Self {
        HookError::new(e)
    }
}

/// The agent must stop: a PreToolUse hook errored, panicked or ran past its deadline, or the
/// chain kept rewriting the input (a rewrite back to an earlier input, more than 8 rewrites), so
/// the policy could not decide and the call was not run (fail closed).
///
/// Carries a complete answer for a host that chooses to go on anyway: a user message with one
/// `tool_result` per `tool_use` of the call or message (the failed one `BLOCKED: …`, later ones
/// `not_run`), valid to send as the next turn. The operator detail (which hook, what went wrong)
/// is in [`hook`](Self::hook) and [`detail`](Self::detail), never in the answer.
#[derive(Debug, Clone, thiserror::Error)]
#[error("agent halted: PreToolUse hook `{hook}` {} on tool_use `{tool_use_id}`: {detail}",
    if *outcome == Outcome::HookTimeout { "timed out" } else { "failed" })]
pub struct Halt {
    /// [`Outcome::HookFailed`] or [`Outcome::HookTimeout`].
    pub outcome: Outcome,
    /// The full path of the hook that failed.
    pub hook: String,
    /// The `tool_use` block the hook failed on.
    pub tool_use_id: String,
    /// Operator-only: the error text or panic message.
    pub detail: String,
    pub(crate) answer: Box<Message>,
    /// The position in `answer.content` of the failed call's result (ids may repeat, so the
    /// result is found by position, not by id).
    pub(crate) index: usize,
    /// The ids of later blocks of the message that had already started when the hook failed
    /// (see [`ran_after`](Self::ran_after)); boxed, and absent when none, so a `Halt` (and
    /// every error carrying one) stays small.
    pub(crate) ran_after: Option<Box<[String]>>,
}

impl Halt {
    /// The complete user message answering the call or message: one `tool_result` per
    /// `tool_use`, in order.
    pub fn answer(&self) -> &Message {
        &self.answer
    }

    /// The answer, by value.
    pub fn into_answer(self) -> Message {
        *self.answer
    }

    /// The `tool_use_id`s of the blocks after the failed one that had already started, in order:
    /// their results in [`answer`](Self::answer) are their own, not `Not run:`. Empty unless blocks
    /// ran concurrently (read-only tools of one message, see
    /// [`DispatcherBuilder::max_concurrent_reads`](crate::dispatch::DispatcherBuilder::max_concurrent_reads))
    /// and the halt came from a wrapped caller whose tool had already started; a PreToolUse chain
    /// of this dispatcher halts before any later block starts, as in a sequential run. Every block
    /// before the failed one ran in full, as in a sequential run.
    pub fn ran_after(&self) -> &[String] {
        self.ran_after.as_deref().unwrap_or_default()
    }

    /// Records that the block `tool_use_id`, after the failed one, had already started.
    pub(crate) fn ran_too(&mut self, tool_use_id: String) {
        let mut ids = self.ran_after.take().map(Vec::from).unwrap_or_default();
        ids.push(tool_use_id);
        self.ran_after = Some(ids.into_boxed_slice());
    }

    /// The `BLOCKED:` result for the `tool_use` the hook failed on (by position in the answer,
    /// so a message that repeats an id still gets the right block).
    pub fn result(&self) -> Option<&ToolResult> {
        match self.answer.content.get(self.index) {
            Some(crate::content::message::ContentBlock::ToolResult(r)) => Some(r),
            _ => None,
        }
    }
}

/// Why [`Session::call`](crate::Session::call) gave no `tool_result`.
///
/// Only [`Halt`](CallError::Halt) carries an answer to send; the others mean the call did not
/// run now, and say what the host does next.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// A PreToolUse hook could not decide: the agent halts (see [`Halt`]).
    #[error(transparent)]
    Halt(#[from] Halt),
    /// The `tool_use` id is empty, so no `tool_result` could name it: nothing ran, and the call
    /// was audited as `not_run`. (`call` serves MCP and OpenAI too, whose ids follow other rules
    /// than the Messages API's pattern, so an empty id is the one it refuses.)
    #[error("the tool_use id is empty, so no tool_result could answer it; nothing was run")]
    EmptyId,
    /// An earlier attempt with this id and this input is still running (a retry raced it), or,
    /// for a later turn that reuses the id, the earlier turn's call with it still runs: nothing
    /// was run. Wait for that attempt, then retry: its answer is replayed (a later turn's call
    /// then runs as its own).
    #[error(
        "tool_use {tool_use_id:?} is still being answered by an earlier attempt; nothing was \
         run twice: wait for it, then retry to get its answer"
    )]
    InProgress {
        /// The id.
        tool_use_id: String,
    },
    /// This session already saw this id with another input: a `tool_use` id names one call, so
    /// the call was refused and nothing ran (a host bug, or a message that is not the one it
    /// retries).
    #[error(
        "tool_use {tool_use_id:?} was already used in this session with another input; a \
         tool_use id names one call, so nothing was run"
    )]
    IdReused {
        /// The id.
        tool_use_id: String,
    },
    /// This session used this id before, and one of the two calls came without its model
    /// response's id (a message without its `id`, a Chat Completions choice passed without its
    /// completion, [`Session::call`](crate::Session::call)): it may be a resend of the same call
    /// or a later turn's call that reuses the id (OpenAI-compatible servers number a turn's
    /// calls: `functions.get_time:0`), which nothing tells apart. Nothing was run, and no other
    /// turn's answer was given. Give every turn its response's id: pass the response as the API
    /// returned it (ARCHITECTURE.md, "Contracts": "Ids and retries").
    #[error(
        "tool_use {tool_use_id:?} was used before in this session, and one of the two calls came \
         without its model response's id, so a resend of the same call cannot be told from a \
         later turn that reuses the id; nothing was run: pass each response as the API returned \
         it, with its `id`"
    )]
    IdRecycled {
        /// The id.
        tool_use_id: String,
    },
    /// The session's [`AnswerStore`](crate::store::AnswerStore) could not say whether this id was
    /// answered before, so nothing was run. Retry once the store is back.
    #[error("tool_use {tool_use_id:?} was not run: the answer store failed: {}", error.message())]
    Store {
        /// The id.
        tool_use_id: String,
        /// The store's error (also this error's [`source`](std::error::Error::source), whose
        /// own source is the driver's error: a host matches on either).
        #[source]
        error: StoreError,
    },
}

impl CallError {
    /// The [`Halt`], when this is one.
    pub fn halt(&self) -> Option<&Halt> {
        match self {
            CallError::Halt(h) => Some(h),
            _ => None,
        }
    }

    /// The [`Halt`], by value, when this is one.
    pub fn into_halt(self) -> Option<Halt> {
        match self {
            CallError::Halt(h) => Some(h),
            _ => None,
        }
    }
}

/// Why [`Session::respond`](crate::Session::respond) (or another API's whole-turn entry point)
/// gave no answer: a call of the turn gave none ([`Call`](RespondError::Call)), or the turn
/// itself was refused before anything ran (the other variants, which are what a turn adds to a
/// call).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RespondError {
    /// A block of the turn gave no answer (see [`CallError`]):
    /// - [`CallError::Halt`]: a PreToolUse hook could not decide; the halt's answer covers every
    ///   `tool_use` of the turn (`BLOCKED:` for the failed one, `Not run:` after it);
    /// - [`CallError::InProgress`], [`CallError::IdReused`], [`CallError::IdRecycled`],
    ///   [`CallError::Store`]: the answer memory refused the block; the blocks before it were
    ///   answered and are remembered, the rest did not start. Retry the turn (with its response
    ///   id, after [`CallError::IdRecycled`]): the answered blocks are replayed.
    ///
    /// Never [`CallError::EmptyId`]: a turn's ids are checked first ([`RespondError::Id`]).
    #[error(transparent)]
    Call(#[from] CallError),
    /// The message stopped at `max_tokens`, so its last `tool_use` may be cut off: nothing was
    /// run (Messages API, "Handling stop reasons"). Each block was audited as `not_run`. Ask
    /// the model again with a larger `max_tokens`.
    #[error(
        "the assistant message stopped at max_tokens, so its {tool_uses} tool_use block(s) may be \
         cut off and none was run; request the turn again with a larger max_tokens"
    )]
    MaxTokens {
        /// How many `tool_use` blocks were not run.
        tool_uses: usize,
    },
    /// The message stopped at `model_context_window_exceeded`: the conversation filled the
    /// model's context window while it wrote, so its last `tool_use` may be cut off, as at
    /// `max_tokens`: nothing was run, and each block was audited as `not_run`. A larger
    /// `max_tokens` does not help: shorten the conversation, then ask again.
    #[error(
        "the assistant message stopped at model_context_window_exceeded, so its {tool_uses} \
         tool_use block(s) may be cut off and none was run; shorten the conversation (drop or \
         summarize earlier turns) and request the turn again"
    )]
    ContextWindowExceeded {
        /// How many `tool_use` blocks were not run.
        tool_uses: usize,
    },
    /// Another API's turn was cut at its output limit (OpenAI Chat `finish_reason: "length"`,
    /// a Responses response or `function_call` item with `status: "incomplete"`, Gemini
    /// `finishReason: "MAX_TOKENS"`), so a call may be cut off: nothing was run, and each call
    /// was audited as `not_run`. Ask again with a larger output limit.
    #[error(
        "the {api} turn was cut at its output limit ({signal}), so its {tool_uses} call(s) may \
         be cut off and none was run; request the turn again with a larger {limit}"
    )]
    Truncated {
        /// The API: `OpenAI Chat Completions`, `OpenAI Responses` or `Gemini`.
        api: &'static str,
        /// What said so, as the API wrote it: `finish_reason: "length"`, `status:
        /// "incomplete"`, `finishReason: "MAX_TOKENS"`.
        signal: String,
        /// The request setting to raise: `max_completion_tokens`, `max_output_tokens`,
        /// `maxOutputTokens`.
        limit: &'static str,
        /// How many calls were not run.
        tool_uses: usize,
    },
    /// A `tool_use` id breaks the API's rules (see [`IdError`]): nothing in the message ran,
    /// and each block was audited as `not_run`.
    #[error(transparent)]
    Id(#[from] IdError),
    /// Another API's turn could not be read (see [`ConvertError`]): nothing was run.
    #[error(transparent)]
    Convert(#[from] ConvertError),
    /// `respond` answers assistant messages only.
    #[error("respond answers assistant messages; this message's role is user")]
    NotAssistant,
    /// The turn paused for a person's approval, and the store of paused turns the session was
    /// opened on ([`Session::with_pending_store`](crate::Session::with_pending_store),
    /// [`Dispatcher::session_on`](crate::Dispatcher::session_on)) could not keep it. The calls
    /// that needed no approval were answered and are remembered; the waiting ones did not run
    /// (their audit lines say `awaiting_approval`). Retry the message once the store is back:
    /// the answered calls are replayed, the waiting ones pause again and the turn is kept.
    #[error(
        "the turn {turn_id:?} of session {session_id:?} paused for a person's approval, but the \
         session's store of paused turns could not keep it: {}; retry the message once the \
         store is back (the answered calls are replayed, the waiting ones pause again)",
        error.message()
    )]
    NotKept {
        /// The session's id.
        session_id: String,
        /// The paused turn's id.
        turn_id: String,
        /// The store's error (also this error's [`source`](std::error::Error::source), whose
        /// own source is the driver's error: a host matches on either).
        #[source]
        error: StoreError,
    },
}

impl RespondError {
    /// The [`Halt`], when a PreToolUse hook halted the agent.
    pub fn halt(&self) -> Option<&Halt> {
        match self {
            RespondError::Call(e) => e.halt(),
            _ => None,
        }
    }

    /// The [`Halt`], by value, when a PreToolUse hook halted the agent.
    pub fn into_halt(self) -> Option<Halt> {
        match self {
            RespondError::Call(e) => e.into_halt(),
            _ => None,
        }
    }
}

impl From<Halt> for RespondError {
    fn from(halt: Halt) -> Self {
        RespondError::Call(CallError::Halt(halt))
    }
}

/// A provider's call item that cannot become a [`ToolUse`](crate::ToolUse): it lacks what the answer needs (an
/// id, a name) or is not a function call. Raised on the host's side, before the pipeline: the
/// model's arguments are never the cause (bad arguments are `invalid_input` results).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read {what}: {message}")]
pub struct ConvertError {
    what: &'static str,
    message: String,
}

impl ConvertError {
    pub(crate) fn new(what: &'static str, message: impl Into<String>) -> Self {
        ConvertError {
            what,
            message: message.into(),
        }
    }
}
