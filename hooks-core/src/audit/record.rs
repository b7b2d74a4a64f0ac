//! What every audit sink receives: the owned [`AuditRecord`] of one `tool_use` and the
//! [`SummaryRecord`] of one session. A JSONL line is the record's JSON with the file's `prev`
//! added (see [`chain`](super::chain)).

use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::Asked;
use crate::context::HookContext;
use crate::hook_run::HookRun;
use crate::outcome::{CallRecord, Outcome, SessionSummary};

/// One `tool_use` as the audit trail keeps it: owned, so a sink can keep it or send it to
/// another thread, and already redacted ([`Redaction`](crate::Redaction)) when a sink sees it.
///
/// Its JSON is the audit line (members in this order; the file sink adds `prev` last):
///
/// ```json
/// {"ts":"2026-11-24T15:40:00Z","session_id":"sess_free_02","user_id":"u_004","tier":"free",
///  "tool_use_id":"toolu_01zz","tool":"prepare_case_file","input":{"order_id":"o_2001"},
///  "outcome":"blocked","is_error":true,"content":"BLOCKED: …","duration_us":14,
///  "blocked_by":"support_agent::policy::premium_only",
///  "hooks":[{"hook":"support_agent::policy::premium_only","decision":"deny","duration_us":2}]}
/// ```
///
/// | member | type | when |
/// |---|---|---|
/// | `ts` | string, RFC 3339 UTC | always: the context's clock when the record was made |
/// | `session_id`, `user_id` | string | always: from the host's [`HookContext`] |
/// | `tier` | string | when the context has one |
/// | `tool_use_id`, `tool` | string | always: as the model sent them |
/// | `input` | JSON | always: after normalization (see [`CallRecord::input`]) |
/// | `outcome` | string | always: an [`Outcome`] in snake_case |
/// | `is_error` | bool | always: the `tool_result`'s (`false` when there is none) |
/// | `content` | string | always: the text the model read (`""` when there is none) |
/// | `duration_us` | integer, µs | always: from the start of the call to its result |
/// | `blocked_by` | string | the hook that denied the call, failed or timed out |
/// | `rewritten_by` | array of strings | hooks rewrote the input (in order) |
/// | `hooks` | array of `{"hook", "decision", "duration_us"}` | PreToolUse hooks ran: each run in order (a rewrite restarts the chain, so a hook may appear again), its [`HookDecision`](crate::HookDecision) (`allow`, `deny`, `rewrite`, `ask`, `failed`, `timeout`) and its duration in µs |
/// | `effective_input` | JSON | hooks rewrote the input: what the tool got |
/// | `detail` | string | operator-only text: a panic message, an error chain |
/// | `content_bytes` | integer, bytes | the content was cut: its full size |
/// | `replay` | `true` | the session answered this `tool_use` id before and replayed that answer: nothing ran, and counts leave the line out ([`CallRecord::replay`]) |
/// | `asked_by` | array of `{"hook", "reason"}` | PreToolUse hooks asked for a person's approval ([`Decision::Ask`](crate::Decision::Ask)) |
/// | `approved_by` | string | the call needed approval and was approved: who approved |
/// | `denied_by` | string | the call needed approval and was declined: who declined |
/// | `final` | `false` | the line is not the call's last: outcome `awaiting_approval` (the turn paused); its final line comes when the turn is resumed. Absent on final lines |
///
/// Counts and reports read final lines only (one per `tool_use`): skip lines with
/// `"final": false`.
///
/// Members may be added in later versions (readers ignore members they do not know; serde's
/// `Deserialize` here does): read lines by name, never by position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuditRecord {
    /// When the record was made (the context's clock).
    #[serde(with = "crate::time::as_rfc3339")]
    pub ts: SystemTime,
    /// The context's session id.
    pub session_id: String,
    /// The context's (authenticated) user id.
    pub user_id: String,
    /// The context's tier, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    /// The `tool_use` block's id.
    pub tool_use_id: String,
    /// The tool name the model sent.
    pub tool: String,
    /// The input after normalization (see [`CallRecord::input`]).
    pub input: Value,
    /// How the call ended.
    pub outcome: Outcome,
    /// The `tool_result`'s `is_error`; `false` when there is no result (`cancelled`).
    pub is_error: bool,
    /// The text the model read; `""` when there is no result.
    pub content: String,
    /// Microseconds from the start of the call to its result.
    pub duration_us: u64,
    /// The full path of the hook that denied, errored or timed out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<String>,
    /// The full paths of the hooks that rewrote the input, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rewritten_by: Vec<String>,
    /// The PreToolUse hooks that ran, in order, with their decisions and durations (every run:
    /// a rewrite restarts the chain).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookRun<'static>>,
    /// The input after rewrites, when a hook rewrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective_input: Option<Value>,
    /// Operator-only text (never shown to the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The full size in bytes of the content, when it was cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_bytes: Option<u64>,
    /// `true` for a replayed answer ([`CallRecord::replay`]); absent (`false`) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replay: bool,
    /// The hooks that asked for a person's approval, with their reasons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked_by: Vec<Asked>,
    /// Who approved the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    /// Who declined the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied_by: Option<String>,
    /// `false` on a line that is not the call's last (`awaiting_approval`); serialized only
    /// then.
    #[serde(
        rename = "final",
        default = "final_default",
        skip_serializing_if = "is_final"
    )]
    pub is_final: bool,
}

fn final_default() -> bool {
    true
}

fn is_final(f: &bool) -> bool {
    *f
}

impl AuditRecord {
    /// The record of `call` in the session of `ctx`, stamped now (the context's clock), not yet
    /// redacted.
    pub(crate) fn new(ctx: &HookContext, call: &CallRecord<'_>) -> AuditRecord {
        AuditRecord {
            ts: ctx.now(),
            session_id: ctx.session_id().to_owned(),
            user_id: ctx.user_id().to_owned(),
            tier: ctx.tier().map(str::to_owned),
            tool_use_id: call.call.id.clone(),
            tool: call.call.name.clone(),
            input: call.input.clone(),
            outcome: call.outcome,
            is_error: call.result.is_some_and(|r| r.is_error),
            content: call
                .result
                .map_or_else(String::new, |r| r.content_text().into_owned()),
            duration_us: u64::try_from(call.duration.as_micros()).unwrap_or(u64::MAX),
            blocked_by: call.blocked_by.map(str::to_owned),
            rewritten_by: call.rewritten_by.iter().map(|&p| p.to_owned()).collect(),
            hooks: call.hooks.iter().map(|r| r.clone().into_owned()).collect(),
            effective_input: call.effective_input.cloned(),
            detail: call.detail.map(str::to_owned),
            content_bytes: call.content_bytes.map(|n| n as u64),
            replay: call.replay,
            asked_by: call.asked_by.to_vec(),
            approved_by: call.approved_by.map(str::to_owned),
            denied_by: call.denied_by.map(str::to_owned),
            is_final: call.outcome.is_final(),
        }
    }
}

/// One session's summary line: `ts` (when it was written, the context's clock) followed by the
/// members of [`SessionSummary`]; the file sink adds `prev` last.
///
/// ```json
/// {"ts":"2026-11-24T15:40:00Z","session_id":"sess_free_02","user_id":"u_004",
///  "started_at":"2026-11-24T15:40:00Z","ended_at":"2026-11-24T15:40:00Z","calls":3,
///  "outcomes":{"ok":2,"blocked":1},"tools":{"lookup_user":1,"search_faq":2},"observer_errors":0}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SummaryRecord {
    /// When the line was written (the context's clock).
    #[serde(with = "crate::time::as_rfc3339")]
    pub ts: SystemTime,
    /// The session's summary.
    #[serde(flatten)]
    pub summary: SessionSummary,
}

impl SummaryRecord {
    /// `summary`, stamped `ts`.
    pub(crate) fn new(ts: SystemTime, summary: &SessionSummary) -> SummaryRecord {
        SummaryRecord {
            ts,
            summary: summary.clone(),
        }
    }
}
