//! Errors: [`ToolError`] (a tool's failure, split into what the model reads and what the
//! operator logs), [`HookError`], [`Halt`] (fail closed) and [`RespondError`].

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;

use crate::content::{Message, ToolResult};
use crate::outcome::Outcome;
use crate::texts::INTERNAL_ERROR_MESSAGE;

/// A tool's failure: `is_error: true` with [`message`](Self::message) as the content.
///
/// Two kinds, after rig's split between what the model is told and what the operator logs:
/// - any `E: std::error::Error + Send + Sync + 'static` converts with `?` or `.into()`: its
///   `Display` is the model-facing message (write it for the model: what went wrong, what to do),
///   and its `source()` chain goes to the audit line's `detail`;
/// - [`ToolError::internal`] shows the model a generic message ([`INTERNAL_ERROR_MESSAGE`]) and
///   keeps the error's whole chain for the audit line's `detail` only.
///
/// `ToolError` deliberately does not implement `std::error::Error` (anyhow's pattern): that is
/// what lets the blanket `From<E: Error>` coexist with `From<ToolError>` without specialization.
///
/// ```
/// use toolgate_core::ToolError;
///
/// let e = ToolError::new("Order o_9 was not found; check the id with the customer.");
/// assert_eq!(e.message(), "Order o_9 was not found; check the id with the customer.");
///
/// let io = std::io::Error::other("connection refused (db-7:5432)");
/// let e = ToolError::internal(io);
/// assert!(e.message().starts_with("Error: the tool failed with an internal error."));
/// assert_eq!(e.detail().as_deref(), Some("connection refused (db-7:5432)"));
/// ```
pub struct ToolError {
    message: Cow<'static, str>,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
    internal: bool,
}

impl ToolError {
    /// A failure whose `message` the model reads as is.
    pub fn new(message: impl Into<Cow<'static, str>>) -> Self {
        ToolError {
            message: message.into(),
            source: None,
            internal: false,
        }
    }

    /// A failure the model must not see the details of: it reads [`INTERNAL_ERROR_MESSAGE`];
    /// `error` and its source chain go to the audit line's `detail`.
    pub fn internal(error: impl Into<Box<dyn StdError + Send + Sync + 'static>>) -> Self {
        ToolError {
            message: Cow::Borrowed(INTERNAL_ERROR_MESSAGE),
            source: Some(error.into()),
            internal: true,
        }
    }

    /// The text the model reads.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether this was made by [`ToolError::internal`].
    pub fn is_internal(&self) -> bool {
        self.internal
    }

    /// Operator-only text: for an internal error, the error and its source chain joined with
    /// `": "`; for a converted error, its source chain (when it has one); `None` otherwise.
    pub fn detail(&self) -> Option<String> {
        let source = self.source.as_deref()?;
        let mut parts = Vec::new();
        let mut next: Option<&(dyn StdError + 'static)> = if self.internal {
            Some(source)
        } else {
            source.source()
        };
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

    /// The wrapped error, when there is one.
    pub fn source(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        self.source.as_deref()
    }
}

impl<E: StdError + Send + Sync + 'static> From<E> for ToolError {
    fn from(error: E) -> Self {
        ToolError {
            message: Cow::Owned(error.to_string()),
            source: Some(Box::new(error)),
            internal: false,
        }
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

impl From<crate::state::MissingState> for HookError {
    fn from(e: crate::state::MissingState) -> Self {
        HookError::new(e)
    }
}

/// The agent must stop: a PreToolUse hook errored, panicked or ran past its deadline, so the
/// policy could not decide and the call was not run (fail closed).
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

    /// The `BLOCKED:` result for the `tool_use` the hook failed on (by position in the answer,
    /// so a message that repeats an id still gets the right block).
    pub fn result(&self) -> Option<&ToolResult> {
        match self.answer.content.get(self.index) {
            Some(crate::content::ContentBlock::ToolResult(r)) => Some(r),
            _ => None,
        }
    }
}

/// Why [`Session::respond`](crate::Session::respond) gave no user message.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RespondError {
    /// A PreToolUse hook failed: see [`Halt`]; its answer covers every `tool_use` of the message.
    #[error(transparent)]
    Halt(#[from] Halt),
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
    /// `respond` answers assistant messages only.
    #[error("respond answers assistant messages; this message's role is user")]
    NotAssistant,
}
