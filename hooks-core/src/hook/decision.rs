//! [`Decision`]: what a PreToolUse hook says about one call.

use serde_json::Value;

/// What a PreToolUse hook decides about one `tool_use`.
///
/// The chain runs the matching hooks in `(order, path)` order:
/// - `Allow` goes on to the next hook (it never short-circuits the chain);
/// - `Deny` stops the chain; the tool does not run and the model gets `is_error: true` with the
///   content `BLOCKED: <reason>`, followed by ` <instead>` when given (a hint the model can act
///   on: "Suggest the refund FAQ instead.");
/// - `Rewrite(input)` replaces the input, and the new input is **authorized again**: it is
///   validated (an invalid rewrite is `invalid_input`), then the chain runs again from its first
///   hook with it, without the rewriter: the hooks before it decide again (a hook before the
///   rewriter cannot be slipped past), the hooks after it see the new input, and the rewriter is
///   not asked about the input it produced. So the tool runs only with an input every hook of
///   the chain either allowed or produced, and a rewrite that changes the input every time it
///   runs (prefix a prompt, add a tag) applies once. When another hook rewrites that input, the
///   first rewriter decides on the new one like every other hook. A `Rewrite` equal to the input
///   the hook saw counts as `Allow`. A chain that keeps rewriting halts the agent as
///   `hook_failed` (fail closed): a rewrite back to an input the call already had (hooks undoing
///   each other: the `detail` names them all), or more than 8 rewrites for one call; the
///   `detail` lists the rewrites in order. The audit line records every rewrite in
///   `rewritten_by`, in order, and the last input in `effective_input`; the outcome stays what
///   the call makes it.
///
/// - `Ask { reason }` says a person must approve the call before the tool runs. It does not stop
///   the chain: the later hooks still decide, and a later `Deny` wins. When no hook of the final
///   pass denies, the call needs approval; every hook of that pass that asked gives its reason
///   (several asks, several reasons). A rewrite starts a new pass, so the asks that count are
///   those of the decisions on the effective input. Who approves depends on the host: the dispatcher's
///   [`Approver`](crate::approval::Approver) inline (its answer has a deadline; no answer in time
///   is a denial), or, with none, [`Session::respond`](crate::Session::respond) pauses the turn
///   ([`PendingTurn`](crate::approval::PendingTurn)) and [`Session::call`](crate::Session::call)
///   blocks the call (fail closed); ARCHITECTURE.md, "Contracts": "A person's approval".
///
/// After a rewrite every other hook of the chain is called again, so a hook should decide from
/// the input it is given (and the trusted context), not from how often it was called.
///
/// A hook that returns an error or panics does not deny: it halts the agent (fail closed; see
/// [`Halt`](crate::Halt)).
///
/// `I` is the type of a rewritten input: the JSON object itself (`serde_json::Value`, the
/// default) for a hook that takes `&ToolUse`, and the tool's input type `T` for a typed hook
/// that takes `&T` ([`PreHookDef::typed`](crate::dispatch::PreHookDef::typed)): it returns
/// `Decision<T>`, so a rewrite to another type does not compile, and its `Rewrite(t)` is
/// serialized back to the input object (then authorized again as above).
#[derive(Debug, Clone, PartialEq)]
#[must_use = "a Decision does nothing unless the hook returns it"]
#[non_exhaustive]
pub enum Decision<I = Value> {
    /// Let the call go on.
    Allow,
    /// Refuse the call.
    Deny {
        /// Why, for the model: it follows `BLOCKED: ` in the result.
        reason: String,
        /// What to do instead, appended after the reason when given.
        instead: Option<String>,
    },
    /// Replace the input (a JSON object, or a typed hook's `T`): every other hook of the chain
    /// decides on it (the chain runs again from its first hook, without this one), then the tool
    /// runs with it.
    Rewrite(I),
    /// A person must approve the call before the tool runs; the chain goes on (a later `Deny`
    /// still wins).
    Ask {
        /// Why, for the person who approves (and for the model, when nobody can: the call is
        /// then blocked with it).
        reason: String,
    },
}

impl<I> Decision<I> {
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
    pub fn rewrite(input: I) -> Self {
        Decision::Rewrite(input)
    }

    /// The same decision with a rewritten input mapped by `f` (how a typed hook's `Decision<T>`
    /// becomes the chain's `Decision<Value>`).
    pub(crate) fn try_map_rewrite<J, E>(
        self,
        f: impl FnOnce(I) -> Result<J, E>,
    ) -> Result<Decision<J>, E> {
        Ok(match self {
            Decision::Allow => Decision::Allow,
            Decision::Deny { reason, instead } => Decision::Deny { reason, instead },
            Decision::Rewrite(input) => Decision::Rewrite(f(input)?),
            Decision::Ask { reason } => Decision::Ask { reason },
        })
    }

    /// `Ask` with a reason: a person must approve the call (`"refunds above 20000 cents need a
    /// person's approval"`).
    pub fn ask(reason: impl Into<String>) -> Self {
        Decision::Ask {
            reason: reason.into(),
        }
    }
}

/// What a **rewrite-only** PreToolUse hook returns: keep the input, or replace it. Such a hook
/// (a label normalizer, a default filled in, a limit capped) can never refuse a call, so it is
/// no write tool's guard: `build()` counts as a guard only a hook that can deny or ask, one that
/// returns [`Decision`] (ARCHITECTURE.md, "Contracts": "Failing closed"). Declaring it in the
/// return type says so where the compiler and `build()` both see it.
///
/// `Keep` is an allow; `To(input)` is a [`Decision::Rewrite`], authorized again by every other
/// hook of the chain like any rewrite. `I` is the input as JSON (a hook that takes `&ToolUse`)
/// or a typed hook's input type `T` (a hook that takes `&T`).
///
/// ```
/// use toolgate_core::{Decision, Rewrite};
///
/// let kept: Decision = Rewrite::Keep.into();
/// assert_eq!(kept, Decision::Allow);
/// let lowered: Decision<&str> = Rewrite::To("bug").into();
/// assert_eq!(lowered, Decision::Rewrite("bug"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[must_use = "a Rewrite does nothing unless the hook returns it"]
pub enum Rewrite<I = Value> {
    /// Keep the input as it is (the chain goes on, as on `Decision::Allow`).
    Keep,
    /// Replace the input with this one (as `Decision::Rewrite`).
    To(I),
}

impl<I> From<Rewrite<I>> for Decision<I> {
    fn from(rewrite: Rewrite<I>) -> Self {
        match rewrite {
            Rewrite::Keep => Decision::Allow,
            Rewrite::To(input) => Decision::Rewrite(input),
        }
    }
}
