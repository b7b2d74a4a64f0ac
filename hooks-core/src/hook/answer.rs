//! [`CallAnswer`]: a `tool_result` with the truth about how it came to be (outcome, the hook at
//! fault, operator detail), so a dispatcher that wraps another one, a tower layer or an MCP
//! guard can record the same outcome the inner pipeline did.

use crate::audit::outcome::Outcome;
use crate::content::message::ToolResult;

/// The answer to one `tool_use`: the `tool_result` the model reads, and what the operator needs
/// to record it truthfully. What a [`ToolCaller`](crate::dispatch::ToolCaller) returns.
///
/// Shape (serialized by no one: the `tool_result` is what goes on the wire, the rest goes to the
/// wrapping dispatcher's [`CallRecord`](crate::audit::CallRecord) and audit line):
///
/// | field | what it holds |
/// |---|---|
/// | [`result`](Self::result) | the `tool_result` block: `{"type": "tool_result", "tool_use_id": …, "content": …, "is_error": …}` |
/// | [`outcome`](Self::outcome) | how the call ended (see the table below) |
/// | [`blocked_by`](Self::blocked_by) | the full path of the PreToolUse hook that denied the call (`blocked`), or could not decide (`hook_failed`, `hook_timeout`) |
/// | [`detail`](Self::detail) | operator-only text: an internal error's source chain, a panic message, a deadline, an invalid rewrite; never shown to the model |
///
/// When each outcome appears in an answer, and what the wrapping dispatcher records:
///
/// | outcome | from a [`Dispatcher`](crate::Dispatcher) | from a [`SyncCaller`](crate::dispatch::SyncCaller) | the wrapping dispatcher records |
/// |---|---|---|---|
/// | `ok` | the tool returned a value | `Ok(text)` | `ok` |
/// | `tool_error` | the tool returned an error (detail: its [`ToolError::detail`](crate::ToolError::detail)) | `Err(e)` (detail: `e.detail()`) | `tool_error`, with the detail |
/// | `panicked`, `tool_timeout` | the tool panicked, or ran past its deadline | never | the same outcome, with the inner detail |
/// | `blocked` | a PreToolUse hook denied the call; `blocked_by` is its path | never | `blocked`, with the inner hook's path |
/// | `invalid_input`, `unknown_tool` | the inner dispatcher refused the input or the name | never | the same outcome, with the inner detail |
/// | `hook_failed`, `hook_timeout` | never: the call halts, [`Halt`](crate::Halt) instead | never | a halt (fail closed) |
/// | `not_run`, `cancelled` | never | never | `tool_error` (a caller cannot answer so), the detail says why |
///
/// `is_error` follows the outcome: the wrapping dispatcher answers `is_error: false` for `ok`
/// only. An `ok` answer whose result says `is_error: true` is recorded as `tool_error`.
///
/// ```
/// use toolgate_core::audit::Outcome;
/// use toolgate_core::dispatch::CallAnswer;
/// use toolgate_core::ToolResult;
///
/// let answer = CallAnswer::from_result(ToolResult::error("toolu_1", "the ledger said no."));
/// assert_eq!(answer.outcome, Outcome::ToolError);
///
/// let denied = CallAnswer::new(
///     ToolResult::error("toolu_2", "BLOCKED: refunds are for premium customers."),
///     Outcome::Blocked,
/// )
/// .with_blocked_by("billing::policy::premium_only");
/// assert_eq!(denied.blocked_by.as_deref(), Some("billing::policy::premium_only"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CallAnswer {
    /// The `tool_result` block the model reads.
    pub result: ToolResult,
    /// How the call ended.
    pub outcome: Outcome,
    /// The full path of the PreToolUse hook that denied the call or could not decide.
    pub blocked_by: Option<String>,
    /// Operator-only text (never shown to the model).
    pub detail: Option<String>,
}

impl CallAnswer {
    /// An answer with `outcome`, no hook at fault and no detail.
    pub fn new(result: ToolResult, outcome: Outcome) -> Self {
        CallAnswer {
            result,
            outcome,
            blocked_by: None,
            detail: None,
        }
    }

    /// An answer whose outcome is read from the result: `tool_error` when it says `is_error`,
    /// `ok` otherwise. For a caller that knows no more than its `tool_result`.
    pub fn from_result(result: ToolResult) -> Self {
        let outcome = if result.is_error {
            Outcome::ToolError
        } else {
            Outcome::Ok
        };
        CallAnswer::new(result, outcome)
    }

    /// Sets the path of the hook that denied the call (or could not decide).
    pub fn with_blocked_by(mut self, hook: impl Into<String>) -> Self {
        self.blocked_by = Some(hook.into());
        self
    }

    /// Sets the operator-only detail.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

/// [`CallAnswer::from_result`]: outcome `tool_error` when the result says `is_error`, `ok`
/// otherwise.
impl From<ToolResult> for CallAnswer {
    fn from(result: ToolResult) -> Self {
        CallAnswer::from_result(result)
    }
}
