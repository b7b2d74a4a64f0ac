//! What observers see: the [`Outcome`] of one `tool_use`, the read-only [`CallRecord`] each
//! PostToolUse observer receives, and the [`SessionSummary`] each Stop hook receives.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::ask::Asked;
use crate::audit::hook_run::HookRun;
use crate::content::message::{ToolResult, ToolUse};
use crate::content::usage::Usage;

/// How one `tool_use` block ended. Serialized in snake_case (`"tool_error"`), as on audit lines.
///
/// | outcome | tool ran | `is_error` | content starts with |
/// |---|---|---|---|
/// | `ok` | yes | false | the tool's output |
/// | `tool_error` | yes | true | the tool's message for the model, or the generic [`INTERNAL_ERROR_MESSAGE`](crate::content::INTERNAL_ERROR_MESSAGE) |
/// | `panicked` | yes | true | a generic failure message |
/// | `tool_timeout` | yes, cut | true | a message naming the deadline |
/// | `blocked` | no | true | `BLOCKED: ` |
/// | `invalid_input` | no | true | a message naming the field path and what was expected |
/// | `unknown_tool` | no | true | a message naming the tool and the available tools |
/// | `hook_failed`, `hook_timeout` | no | true, in the `Halt`'s answer | `BLOCKED: ` |
/// | `not_run` | no (a refused answer: yes) | true, where an answer is given | a message saying why |
/// | `cancelled` | maybe | no answer (the host dropped the call) | – |
/// | `awaiting_approval` | not yet | no answer yet: the turn is paused ([`PendingTurn`](crate::approval::PendingTurn)) | – |
///
/// A rewrite does not change the outcome; [`CallRecord::rewritten_by`] says it happened.
///
/// `awaiting_approval` is the one outcome that is not final: a PreToolUse hook asked for a
/// person's approval ([`Decision::Ask`](crate::Decision::Ask)) and the turn was paused. Its
/// record says so (`is_final()` is false; the audit line has `"final": false`), the session's
/// counts skip it, and the call gets a final record later, when the pending turn is resumed
/// (`ok` and the rest with `approved_by`, or `blocked` with `denied_by`). Counts, summaries and
/// reports count final records only: one per `tool_use`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Outcome {
    /// The tool ran and returned a value.
    Ok,
    /// The tool ran and returned an error.
    ToolError,
    /// The tool panicked; the panic was caught.
    Panicked,
    /// The tool ran past its deadline and was cut.
    ToolTimeout,
    /// A PreToolUse hook denied the call.
    Blocked,
    /// The input did not match the tool's schema (or a hook rewrote it into one that does not).
    InvalidInput,
    /// The name is not a tool of this dispatcher.
    UnknownTool,
    /// A PreToolUse hook errored or panicked, or the chain kept rewriting (a rewrite back to
    /// an earlier input, or more than 8 rewrites): the agent halts.
    HookFailed,
    /// A PreToolUse hook ran past its deadline: the agent halts.
    HookTimeout,
    /// The block was not run: an earlier block halted, the message hit `max_tokens` (or
    /// another API's turn its output limit), an id of the message breaks the API's rules, or
    /// (on a `replay` record) its first attempt was cancelled after the tool started. Also the
    /// answer of a call whose tool did run but whose answer the answer memory refused (its
    /// claim's lease ran out and a retry took the call over): the call's answer is the store's,
    /// interrupted, and the record's `detail` says what the tool had answered.
    NotRun,
    /// The host dropped the call before it finished.
    Cancelled,
    /// A PreToolUse hook asked for a person's approval and the turn was paused: not final (see
    /// above); the call ends when the pending turn is resumed.
    AwaitingApproval,
}

impl Outcome {
    /// Every outcome, in declaration order.
    pub const ALL: [Outcome; 12] = [
        Outcome::Ok,
        Outcome::ToolError,
        Outcome::Panicked,
        Outcome::ToolTimeout,
        Outcome::Blocked,
        Outcome::InvalidInput,
        Outcome::UnknownTool,
        Outcome::HookFailed,
        Outcome::HookTimeout,
        Outcome::NotRun,
        Outcome::Cancelled,
        Outcome::AwaitingApproval,
    ];

    /// The snake_case name, as serialized.
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::Panicked => "panicked",
            Outcome::ToolTimeout => "tool_timeout",
            Outcome::Blocked => "blocked",
            Outcome::InvalidInput => "invalid_input",
            Outcome::UnknownTool => "unknown_tool",
            Outcome::HookFailed => "hook_failed",
            Outcome::HookTimeout => "hook_timeout",
            Outcome::NotRun => "not_run",
            Outcome::Cancelled => "cancelled",
            Outcome::AwaitingApproval => "awaiting_approval",
        }
    }

    /// Whether a record with this outcome is the call's last: every outcome but
    /// `awaiting_approval`.
    pub const fn is_final(self) -> bool {
        !matches!(self, Outcome::AwaitingApproval)
    }

    /// Position in [`Outcome::ALL`].
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happened to one `tool_use` block, handed read-only to every PostToolUse observer once
/// the result is fixed (observers cannot change it).
///
/// Borrowed from the call in flight: an observer that keeps anything copies it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct CallRecord<'a> {
    /// The `tool_use` block as the model sent it.
    pub call: &'a ToolUse,
    /// The input after normalization (`""`/`null` → `{}`, a JSON string parsed); the raw input when
    /// it could not be normalized; and, for an input over the size or depth limits
    /// ([`Limits`](crate::dispatch::Limits)), the string `"[input not recorded: over the input
    /// limits (N bytes, M levels)]"` instead, so a huge input is never copied into a log.
    pub input: &'a Value,
    /// The input after PreToolUse rewrites (the last valid one), when any hook rewrote it.
    pub effective_input: Option<&'a Value>,
    /// The answer sent to the model; `None` when there is none (`cancelled`).
    pub result: Option<&'a ToolResult>,
    /// How the call ended.
    pub outcome: Outcome,
    /// The full path of the hook that denied, errored or timed out (inside a wrapped
    /// dispatcher too: the inner hook's), or whose rewrite made the chain loop.
    pub blocked_by: Option<&'a str>,
    /// The full paths of the hooks that rewrote the input, one per rewrite, in order (every
    /// other hook decides again after each rewrite, so a hook may appear more than once).
    pub rewritten_by: &'a [&'a str],
    /// The PreToolUse hooks that ran, in order, each with its decision and duration (after a
    /// rewrite every hook but the rewriter runs again: every run appears). Filled only when someone reads it: when the
    /// tool has an observer (an audit log included) or the call's `tracing` span is enabled;
    /// empty otherwise, and for calls that reached no hook.
    pub hooks: &'a [HookRun<'a>],
    /// Operator-only text: a panic message, an internal tool error with its source chain (see
    /// [`ToolError`](crate::ToolError)), a validation detail. Never shown to the model.
    pub detail: Option<&'a str>,
    /// The full size in bytes of the content when it was cut to the dispatcher's limit.
    pub content_bytes: Option<usize>,
    /// Time from the start of the call to the result (observers excluded).
    pub duration: Duration,
    /// `true` when this `tool_use` id was answered before in the session and this answer was
    /// replayed from its memory (nothing ran: no hook, no tool), or when it is the answer to a
    /// retry of a call cancelled after its tool started (outcome `not_run`). The call's own
    /// record came earlier; a replay is not counted in the session summary (nor, later, in
    /// reports).
    pub replay: bool,
    /// The PreToolUse hooks that asked for a person's approval
    /// ([`Decision::Ask`](crate::Decision::Ask)) in the chain's final pass, with their reasons
    /// (empty when none did).
    pub asked_by: &'a [Asked],
    /// Who approved the call, when it needed approval and was approved (inline or at resume).
    pub approved_by: Option<&'a str>,
    /// Who declined the call, when it needed approval and was declined (`blocked`).
    pub denied_by: Option<&'a str>,
    /// The call's claim in the answer memory, when its store renewed it while the call ran and
    /// anything came of that: renewals made, one that failed, or an answer refused because
    /// the claim no longer held the call (`None` for a call that ended within one renewal
    /// interval, and for a store that does not renew).
    pub lease: Option<LeaseRecord>,
}

/// How a call's claim was kept alive while it ran ([`CallRecord::lease`]; the audit line's
/// `lease`: `{"lease_ms": 15000, "renew_every_ms": 5000, "renewals": 3, "renewals_failed": 0}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LeaseRecord {
    /// The claim's lease, milliseconds: how long it holds after a renewal (the dispatcher's
    /// `claim_lease`).
    pub lease_ms: u64,
    /// How often it was renewed, milliseconds (a third of the lease).
    pub renew_every_ms: u64,
    /// The renewals the store made.
    pub renewals: u64,
    /// The renewals that failed (0 or 1: the first failure ends them): the store unreachable,
    /// or the claim taken over (its lease ran out and a retry marked the call interrupted).
    pub renewals_failed: u64,
}

impl LeaseRecord {
    /// A claim of `lease`, renewed every `renew_every`, `renewals` times, `renewals_failed`
    /// failures.
    pub(crate) fn new(
        lease: Duration,
        renew_every: Duration,
        renewals: u64,
        renewals_failed: u64,
    ) -> LeaseRecord {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        LeaseRecord {
            lease_ms: ms(lease),
            renew_every_ms: ms(renew_every),
            renewals,
            renewals_failed,
        }
    }
}

// Made by the pipeline only: observers read records, they never build one.
impl<'a> CallRecord<'a> {
    /// A record of `outcome` and nothing more: no rewrite, no hook at fault, no detail, the
    /// content whole. The pipeline adds what applies.
    #[inline]
    pub(crate) fn new(
        call: &'a ToolUse,
        input: &'a Value,
        outcome: Outcome,
        result: Option<&'a ToolResult>,
        duration: Duration,
    ) -> Self {
        CallRecord {
            call,
            input,
            effective_input: None,
            result,
            outcome,
            blocked_by: None,
            rewritten_by: &[],
            hooks: &[],
            detail: None,
            content_bytes: None,
            duration,
            replay: false,
            asked_by: &[],
            approved_by: None,
            denied_by: None,
            lease: None,
        }
    }

    /// A block not run (see [`Outcome::NotRun`]), answered with `result`.
    pub(crate) fn not_run(
        call: &'a ToolUse,
        input: &'a Value,
        result: &'a ToolResult,
        duration: Duration,
    ) -> Self {
        CallRecord::new(call, input, Outcome::NotRun, Some(result), duration)
    }

    /// A call the host dropped before it finished: no answer; `detail` says at which stage.
    pub(crate) fn cancelled(
        call: &'a ToolUse,
        input: &'a Value,
        detail: &'a str,
        duration: Duration,
    ) -> Self {
        CallRecord {
            detail: Some(detail),
            ..CallRecord::new(call, input, Outcome::Cancelled, None, duration)
        }
    }
}

/// What happened in one session, handed to each Stop hook and returned by
/// [`Session::end`](crate::Session::end).
///
/// Serialized (the audit log's summary line adds `ts` and `prev`; see
/// [`SummaryRecord`](crate::audit::SummaryRecord)), and read back from it: `{"session_id":
/// "sess_1", "user_id": "u_001", "started_at": "2026-11-24T10:15:00Z", "ended_at": "…", "calls": 4,
/// "outcomes": {"ok": 3, "blocked": 1}, "tools": {"lookup_user": 2, …}, "observer_errors": 0,
/// "usage": {"input_tokens": 2400, "output_tokens": 180, …}}` (`usage` only when the host added
/// some). `outcomes` lists only outcomes that occurred; `tools` counts calls of this dispatcher's
/// tools by name (a call of an unknown name counts only under `unknown_tool`, so the model cannot
/// add keys).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionSummary {
    /// The context's session id.
    pub session_id: String,
    /// The context's user id.
    pub user_id: String,
    /// When the session was opened (context clock).
    #[serde(with = "crate::base::time::as_rfc3339")]
    pub started_at: SystemTime,
    /// When it ended (context clock).
    #[serde(with = "crate::base::time::as_rfc3339")]
    pub ended_at: SystemTime,
    /// `tool_use` blocks handled, every outcome included; replays (see
    /// [`CallRecord::replay`]) are not counted.
    pub calls: u64,
    /// Outcome → count.
    pub outcomes: BTreeMap<Outcome, u64>,
    /// Tool name → count.
    pub tools: BTreeMap<String, u64>,
    /// Errors and panics of PostToolUse observers and Stop hooks (Stop hooks that ran before
    /// the one reading this included).
    pub observer_errors: u64,
    /// The tokens the host added with [`Session::add_usage`](crate::Session::add_usage) (each
    /// model response's `usage`), summed. Serialized only when a count is not 0, so a session
    /// the host added none to has the same summary line as before.
    #[serde(default, skip_serializing_if = "Usage::is_zero")]
    pub usage: Usage,
}
