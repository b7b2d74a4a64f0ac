//! [`Decision`]: what a PreToolUse hook says about one call.

use serde_json::Value;

/// What a PreToolUse hook decides about one `tool_use`.
///
/// The chain runs the matching hooks in `(order, path)` order:
/// - `Allow` goes on to the next hook (it never short-circuits the chain);
/// - `Deny` stops the chain; the tool does not run and the model gets `is_error: true` with the
///   content `BLOCKED: <reason>`, followed by ` <instead>` when given (a hint the model can act
///   on: "Suggest the refund FAQ instead.");
/// - `Rewrite(input)` replaces the input: it is validated again (an invalid rewrite is
///   `invalid_input`), and later hooks and the tool see it. The audit line records the hook in
///   `rewritten_by` and the new input in `effective_input`; the outcome stays what the call
///   makes it.
///
/// A hook that returns an error or panics does not deny: it halts the agent (fail closed; see
/// [`Halt`](crate::Halt)).
#[derive(Debug, Clone, PartialEq)]
#[must_use = "a Decision does nothing unless the hook returns it"]
pub enum Decision {
    /// Let the call go on.
    Allow,
    /// Refuse the call.
    Deny {
        /// Why, for the model: it follows `BLOCKED: ` in the result.
        reason: String,
        /// What to do instead, appended after the reason when given.
        instead: Option<String>,
    },
    /// Replace the input (a JSON object) for later hooks and the tool.
    Rewrite(Value),
}

impl Decision {
    /// `Deny` with a reason and no suggestion.
    pub fn deny(reason: impl Into<String>) -> Self {
        Decision::Deny {
            reason: reason.into(),
            instead: None,
        }
    }

    /// `Deny` with a reason and a suggestion of what to do instead.
    pub fn deny_instead(reason: impl Into<String>, instead: impl Into<String>) -> Self {
        Decision::Deny {
            reason: reason.into(),
            instead: Some(instead.into()),
        }
    }

    /// `Rewrite` to `input`.
    pub fn rewrite(input: Value) -> Self {
        Decision::Rewrite(input)
    }
}
