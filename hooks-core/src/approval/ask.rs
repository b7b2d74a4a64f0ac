//! Who asked a person and why ([`Asked`]), what a person answers ([`Approval`]), and the
//! [`Approver`] that answers inline, with what it is asked ([`ApprovalRequest`]).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::future::BoxFuture;
use crate::content::message::ToolUse;
use crate::hook::context::HookContext;

/// A PreToolUse hook that asked for a person's approval ([`Decision::Ask`](crate::Decision::Ask)),
/// and its reason. Serialized as `{"hook": "support_agent::policy::large_refund_needs_approval",
/// "reason": "refunds above 20000 cents need a person's approval"}` (in a
/// [`PendingTurn`](super::PendingTurn) and on audit lines as `asked_by`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asked {
    /// The hook's full path.
    pub hook: String,
    /// Its reason, as the hook wrote it.
    pub reason: String,
}

/// What a person (or the host's [`Approver`]) answers about a call that needs approval.
///
/// `by` names who decided (a user id, an e-mail, `"policy-bot"`): it goes on the call's audit
/// line as `approved_by` or `denied_by`, never to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Approval {
    /// Run the call with the input the person saw.
    Approve {
        /// Who approved.
        by: String,
        /// The digest of the input the person saw
        /// ([`AwaitingCall::input_digest`](crate::approval::AwaitingCall::input_digest)), when the
        /// host checks it: resuming a [`PendingTurn`](super::PendingTurn) whose input has another digest is refused.
        /// `None`: the input held by the pending turn.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input_digest: Option<String>,
    },
    /// Run the call with another input (a smaller amount): the edited input is authorized
    /// again as a rewrite is (validated, then every hook of the PreToolUse chain decides on it:
    /// the approver is no hook of the chain); the person's approval covers the edited input, so
    /// an ask on it passes, a deny still wins.
    Edit {
        /// Who approved.
        by: String,
        /// The input to run with: a JSON object.
        input: Value,
    },
    /// Do not run the call: it is answered `blocked`, `BLOCKED: a person declined this call:
    /// <reason>`.
    Deny {
        /// Who declined.
        by: String,
        /// Why, for the model.
        reason: String,
    },
}

impl Approval {
    /// `Approve` by `by`, naming no input: what an inline [`Approver`] answers about the call in
    /// front of it (its input cannot change while it waits). In a paused turn's
    /// [`Decisions`](super::Decisions) it approves whatever input the turn holds, unchecked:
    /// there, approve what the person was shown with
    /// [`DecisionsBuilder::approve`](super::DecisionsBuilder::approve) (or
    /// [`approve_digest`](Self::approve_digest)), and write
    /// [`DecisionsBuilder::approve_any_input`](super::DecisionsBuilder::approve_any_input) when
    /// no input is meant.
    pub fn approve(by: impl Into<String>) -> Self {
        Approval::Approve {
            by: by.into(),
            input_digest: None,
        }
    }

    /// `Approve` by `by` of the input whose digest is `input_digest` (64 lowercase hex
    /// characters, as [`AwaitingCall::input_digest`](crate::approval::AwaitingCall::input_digest)):
    /// a paused call approved as the person was shown it; a resume whose input has another
    /// digest is refused. [`DecisionsBuilder::approve`](super::DecisionsBuilder::approve) takes
    /// the digest from the waiting call.
    pub fn approve_digest(by: impl Into<String>, input_digest: impl Into<String>) -> Self {
        Approval::Approve {
            by: by.into(),
            input_digest: Some(input_digest.into()),
        }
    }

    /// `Edit`: approved by `by` with `input` instead.
    pub fn edit(by: impl Into<String>, input: Value) -> Self {
        Approval::Edit {
            by: by.into(),
            input,
        }
    }

    /// `Deny` by `by`, with a reason for the model.
    pub fn deny(by: impl Into<String>, reason: impl Into<String>) -> Self {
        Approval::Deny {
            by: by.into(),
            reason: reason.into(),
        }
    }

    /// Who decided.
    pub fn by(&self) -> &str {
        match self {
            Approval::Approve { by, .. }
            | Approval::Edit { by, .. }
            | Approval::Deny { by, .. } => by,
        }
    }
}

/// What an [`Approver`] is asked about: one call whose PreToolUse chain allowed it but asked
/// for a person's approval.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct ApprovalRequest<'a> {
    /// The `tool_use` block as the model sent it.
    pub call: &'a ToolUse,
    /// The effective input (after normalization and rewrites): what the tool would run with.
    pub input: &'a Value,
    /// The hooks of the chain's final pass that asked, in chain order, with their reasons.
    pub asked: &'a [Asked],
    /// The session's trusted context.
    pub context: &'a HookContext,
}

impl fmt::Debug for ApprovalRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalRequest")
            .field("tool_use_id", &self.call.id)
            .field("tool", &self.call.name)
            .field("input", self.input)
            .field("asked", &self.asked)
            .finish_non_exhaustive()
    }
}

/// Answers approval requests inline, while the call waits: a chat UI's confirm button, a
/// second-factor push, a policy service. Given to the builder with
/// [`DispatcherBuilder::approver`](crate::dispatch::DispatcherBuilder::approver).
///
/// Its answer has a deadline
/// ([`DispatcherBuilder::approval_timeout`](crate::dispatch::DispatcherBuilder::approval_timeout),
/// default
/// [`DEFAULT_APPROVAL_TIMEOUT`](crate::dispatch::DispatcherBuilder::DEFAULT_APPROVAL_TIMEOUT), 5
/// minutes, on the dispatcher's timer): no answer in time, or a panic, is a denial (fail closed):
/// the call is answered `blocked`. With an approver, both [`Session::call`](crate::Session::call)
/// and [`Session::respond`](crate::Session::respond) wait for it; without one, `respond` pauses the
/// turn and `call` blocks.
///
/// ```
/// use toolgate_core::approval::{Approval, ApprovalRequest, Approver};
/// use toolgate_core::dispatch::BoxFuture;
///
/// /// Approves refunds for the on-call lead, declines the rest.
/// struct OnCall;
/// impl Approver for OnCall {
///     fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, Approval> {
///         Box::pin(async move {
///             if request.call.name == "issue_refund" {
///                 Approval::approve("lead@example.com")
///             } else {
///                 Approval::deny("lead@example.com", "only refunds are approved today")
///             }
///         })
///     }
/// }
/// ```
pub trait Approver: Send + Sync + 'static {
    /// The person's answer about `request`.
    fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, Approval>;
}
