//! [`HookRun`]: one run of one PreToolUse hook during a call, with its [`HookOutcome`] and its
//! duration, as a [`CallRecord`](crate::audit::CallRecord) and an audit line list them.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// What one run of a PreToolUse hook came to. Serialized in snake_case (`"timeout"`), as in
/// the `hooks` member of an audit line.
///
/// | outcome | the hook |
/// |---|---|
/// | `allow` | answered [`Decision::Allow`](crate::Decision::Allow), or a `Rewrite` equal to the input it saw (which counts as `Allow`) |
/// | `deny` | answered [`Decision::Deny`](crate::Decision::Deny): the call is `blocked` |
/// | `rewrite` | answered a `Rewrite` to another input: the chain runs again from its first hook without this one, which is not asked about the input it produced (or the call ends `invalid_input` or `hook_failed` when the new input is invalid or the chain loops) |
/// | `failed` | returned an error or panicked: the call is `hook_failed` and the agent halts |
/// | `timeout` | ran past its deadline: the call is `hook_timeout` and the agent halts |
/// | `ask` | answered [`Decision::Ask`](crate::Decision::Ask): the chain goes on; unless a later hook denies, the call needs a person's approval |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HookOutcome {
    /// The hook allowed the input it saw.
    Allow,
    /// The hook denied the call.
    Deny,
    /// The hook rewrote the input to another one.
    Rewrite,
    /// The hook errored or panicked.
    Failed,
    /// The hook ran past its deadline.
    Timeout,
    /// The hook asked for a person's approval.
    Ask,
}

impl HookOutcome {
    /// The snake_case name, as serialized.
    pub const fn as_str(self) -> &'static str {
        match self {
            HookOutcome::Allow => "allow",
            HookOutcome::Deny => "deny",
            HookOutcome::Rewrite => "rewrite",
            HookOutcome::Failed => "failed",
            HookOutcome::Timeout => "timeout",
            HookOutcome::Ask => "ask",
        }
    }
}

impl fmt::Display for HookOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One run of one PreToolUse hook during a call: the hook's full path, what it decided and how
/// long it took. A call lists every run in order; after a rewrite every other hook decides again
/// (the rewriter does not), so a hook can appear more than once. On an audit line: `{"hook": "app::policy::premium_only",
/// "decision": "allow", "duration_us": 3}`.
///
/// Borrowed in a [`CallRecord`](crate::audit::CallRecord), owned (`HookRun<'static>`) in an
/// [`AuditRecord`](crate::audit::AuditRecord).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HookRun<'a> {
    /// The hook's full path.
    pub hook: Cow<'a, str>,
    /// How the run ended: what the hook decided, or that it failed or timed out. Serialized as
    /// `decision`, the member's name on an audit line.
    #[serde(rename = "decision")]
    pub outcome: HookOutcome,
    /// Microseconds from the hook's start to its decision (an async hook's wait included).
    pub duration_us: u64,
}

impl<'a> HookRun<'a> {
    /// A run of `hook` that ended `outcome` in `duration_us` microseconds.
    pub fn new(hook: impl Into<Cow<'a, str>>, outcome: HookOutcome, duration_us: u64) -> Self {
        HookRun {
            hook: hook.into(),
            outcome,
            duration_us,
        }
    }

    /// The same run, owning its path.
    pub fn into_owned(self) -> HookRun<'static> {
        HookRun {
            hook: Cow::Owned(self.hook.into_owned()),
            outcome: self.outcome,
            duration_us: self.duration_us,
        }
    }
}
