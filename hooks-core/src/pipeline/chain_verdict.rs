//! [`ChainVerdict`]: what a dispatcher's PreToolUse chain decides about one `tool_use`, asked
//! without running the tool or the observers ([`Dispatcher::pre_tool_use`]).
//!
//! [`Dispatcher::pre_tool_use`]: crate::Dispatcher::pre_tool_use

use serde_json::Value;

use crate::approval::ask::Asked;
use crate::audit::outcome::Outcome;

/// What the PreToolUse chain decided about one `tool_use`, without running the tool or the
/// observers: the answer [`Dispatcher::pre_tool_use`](crate::Dispatcher::pre_tool_use) gives a
/// host that enforces the rules somewhere else (Claude Code's hooks) or asks what the rules
/// would decide today (a what-if replay of an audit log).
///
/// The steps and their rules are exactly those of a call (ARCHITECTURE.md, "The life of one
/// call", steps 1 to 4): the input is normalized, the tool looked up, the input validated, then
/// the chain runs with the rewrite rule (every hook must allow the effective input in one pass,
/// but the hook that produced it, which is not asked about it) and the dispatcher's deadlines.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ChainVerdict {
    /// Every hook of the chain allowed `input` (a tool with no hooks is allowed at once): the
    /// tool would run with it.
    Allow {
        /// The effective input, after normalization and rewrites: a JSON object, e.g.
        /// `{"order_id": "o_1001", "limit": 5}`.
        input: Value,
        /// The full paths of the hooks that rewrote the input, in order (empty when none did).
        rewritten_by: Vec<String>,
    },
    /// No hook denied, and at least one asked for a person's approval
    /// ([`Decision::Ask`](crate::Decision::Ask)): the tool would run with `input` once a person
    /// approves (a host maps this to its own "ask", e.g. Claude Code's `permissionDecision:
    /// "ask"`). No approver is asked here.
    Ask {
        /// The effective input, as for `Allow`.
        input: Value,
        /// The full paths of the hooks that rewrote the input, in order.
        rewritten_by: Vec<String>,
        /// The hooks of the chain's final pass that asked, in chain order, with their reasons.
        asked_by: Vec<Asked>,
    },
    /// The call would not run. `outcome` says why: `blocked` (a hook denied), `invalid_input`
    /// (the input, or a hook's rewrite of it, does not match the schema), `unknown_tool`,
    /// `hook_failed` or `hook_timeout` (a hook could not decide: a call would halt the agent).
    Refuse {
        /// One of `blocked`, `invalid_input`, `unknown_tool`, `hook_failed`, `hook_timeout`.
        outcome: Outcome,
        /// The text the model would read: `BLOCKED: <reason> <instead>` for a denial and for a
        /// hook that could not decide (the halt's answer), the invalid-input or unknown-tool
        /// message otherwise.
        text: String,
        /// The full path of the hook that denied, failed or timed out.
        blocked_by: Option<String>,
        /// Operator-only text (a failed hook's error, a looping chain's hooks), never shown to
        /// the model.
        detail: Option<String>,
        /// The full paths of the hooks that rewrote the input before the refusal, in order.
        rewritten_by: Vec<String>,
    },
}

impl ChainVerdict {
    /// Whether the chain allowed the call with no hook asking for approval.
    pub fn is_allowed(&self) -> bool {
        matches!(self, ChainVerdict::Allow { .. })
    }

    /// The refusal's outcome; `None` for [`ChainVerdict::Allow`] and [`ChainVerdict::Ask`].
    pub fn outcome(&self) -> Option<Outcome> {
        match self {
            ChainVerdict::Refuse { outcome, .. } => Some(*outcome),
            ChainVerdict::Allow { .. } | ChainVerdict::Ask { .. } => None,
        }
    }
}
