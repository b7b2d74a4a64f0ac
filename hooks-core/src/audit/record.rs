//! What every audit sink receives: the owned [`AuditRecord`] of one `tool_use` and the
//! [`SummaryRecord`] of one session. A JSONL line is the record's JSON with the file's `prev`
//! added (see [`chain`](super::chain)).

use std::borrow::Cow;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::approval::ask::Asked;
use crate::audit::hook_run::HookRun;
use crate::audit::outcome::{CallRecord, LeaseRecord, Outcome, SessionSummary};
use crate::hook::context::HookContext;

/// One `tool_use` as the audit trail keeps it: owned, so a sink can keep it or send it to another
/// thread, and already redacted ([`Redaction`](crate::audit::Redaction)) when a sink sees it.
///
/// Its JSON is the audit line (members in this order; the file sink adds `prev` last), as
/// [`write_json`](Self::write_json) writes it: serde_json's bytes, faster, with C1 controls,
/// U+2028 and U+2029 escaped so the line is one line for every reader:
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
/// | `extensions` | object | the context has extensions the audit log records ([`AuditLogBuilder::record_extension`](crate::audit::AuditLogBuilder::record_extension)): each by its name, its value as JSON (`{"role": "maintainer"}`), so the facts a rule decided on are in the trail |
/// | `tool_use_id`, `tool` | string | always: as the model sent them |
/// | `input` | JSON | always: after normalization (see [`CallRecord::input`]) |
/// | `outcome` | string | always: an [`Outcome`] in snake_case |
/// | `is_error` | bool | always: the `tool_result`'s (`false` when there is none) |
/// | `content` | string | always: the text the model read (`""` when there is none) |
/// | `duration_us` | integer, µs | always: from the start of the call to its result |
/// | `blocked_by` | string | the hook that denied the call, failed or timed out |
/// | `rewritten_by` | array of strings | hooks rewrote the input (in order) |
/// | `hooks` | array of `{"hook", "decision", "duration_us"}` | PreToolUse hooks ran: each run in order (after a rewrite every hook but the rewriter decides again, so a hook may appear again), its [`HookOutcome`](crate::audit::HookOutcome) (`allow`, `deny`, `rewrite`, `ask`, `failed`, `timeout`) and its duration in µs |
/// | `effective_input` | JSON | hooks rewrote the input: what the tool got |
/// | `detail` | string | operator-only text: a panic message, an error chain |
/// | `content_bytes` | integer, bytes | the content was cut: its full size |
/// | `replay` | `true` | the session answered this `tool_use` id before and replayed that answer: nothing ran, and counts leave the line out ([`CallRecord::replay`]) |
/// | `asked_by` | array of `{"hook", "reason"}` | PreToolUse hooks asked for a person's approval ([`Decision::Ask`](crate::Decision::Ask)) |
/// | `approved_by` | string | the call needed approval and was approved: who approved |
/// | `denied_by` | string | the call needed approval and was declined: who declined |
/// | `lease` | `{"lease_ms", "renew_every_ms", "renewals", "renewals_failed"}` | the call's claim was renewed while it ran, a renewal failed, or its answer was refused because the claim no longer held the call ([`LeaseRecord`]) |
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
    #[serde(with = "crate::base::time::as_rfc3339")]
    pub ts: SystemTime,
    /// The context's session id.
    pub session_id: String,
    /// The context's (authenticated) user id.
    pub user_id: String,
    /// The context's tier, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    /// The context's extensions the audit log was told to record
    /// ([`AuditLogBuilder::record_extension`](crate::audit::AuditLogBuilder::record_extension)),
    /// by the name given there, in that order: `{"role": "maintainer", "region": "eu"}`. Only
    /// those the session's context has; absent when none.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extensions: Map<String, Value>,
    /// The `tool_use` block's id.
    pub tool_use_id: String,
    /// The tool name the model sent, as [`ToolUse::name`](crate::ToolUse::name) (`tool` on the
    /// line, beside `tool_use_id`).
    #[serde(rename = "tool")]
    pub name: String,
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
    /// after a rewrite every hook but the rewriter runs again).
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
    /// How the call's claim was kept alive while it ran ([`CallRecord::lease`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<LeaseRecord>,
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
        let mut record = AuditRecord {
            ts: SystemTime::UNIX_EPOCH,
            session_id: String::new(),
            user_id: String::new(),
            tier: None,
            extensions: Map::new(),
            tool_use_id: String::new(),
            name: String::new(),
            input: Value::Null,
            outcome: call.outcome,
            is_error: false,
            content: String::new(),
            duration_us: 0,
            blocked_by: None,
            rewritten_by: Vec::new(),
            hooks: Vec::new(),
            effective_input: None,
            detail: None,
            content_bytes: None,
            replay: false,
            asked_by: Vec::new(),
            approved_by: None,
            denied_by: None,
            lease: None,
            is_final: true,
        };
        // One place fills every member: a record built here and one refilled are the same.
        record.refill(ctx, call);
        record
    }
}
impl AuditRecord {
    /// Makes `self` equal to [`AuditRecord::new`]`(ctx, call)`, reusing its allocations (the
    /// audit log keeps one record per thread and refills it for every call: no allocation and
    /// no drop when the shapes repeat, which they do call after call).
    pub(crate) fn refill(&mut self, ctx: &HookContext, call: &CallRecord<'_>) {
        self.ts = ctx.now();
        assign_str(&mut self.session_id, ctx.session_id());
        assign_str(&mut self.user_id, ctx.user_id());
        assign_opt(&mut self.tier, ctx.tier());
        // Filled by the audit log after this, from the extensions it records.
        self.extensions.clear();
        assign_str(&mut self.tool_use_id, &call.call.id);
        assign_str(&mut self.name, &call.call.name);
        assign_value(&mut self.input, call.input);
        self.outcome = call.outcome;
        self.is_error = call.result.is_some_and(|r| r.is_error);
        match call.result {
            Some(r) => assign_str(&mut self.content, &r.content_text()),
            None => self.content.clear(),
        }
        self.duration_us = u64::try_from(call.duration.as_micros()).unwrap_or(u64::MAX);
        assign_opt(&mut self.blocked_by, call.blocked_by);
        assign_list(
            &mut self.rewritten_by,
            call.rewritten_by,
            |d, s| assign_str(d, s),
            |s| (*s).to_owned(),
        );
        assign_list(
            &mut self.hooks,
            call.hooks,
            |d, s| {
                match &mut d.hook {
                    Cow::Owned(path) => assign_str(path, &s.hook),
                    path => *path = Cow::Owned(s.hook.clone().into_owned()),
                }
                d.outcome = s.outcome;
                d.duration_us = s.duration_us;
            },
            |s| s.clone().into_owned(),
        );
        match (&mut self.effective_input, call.effective_input) {
            (Some(d), Some(s)) => assign_value(d, s),
            (d, s) => *d = s.cloned(),
        }
        assign_opt(&mut self.detail, call.detail);
        self.content_bytes = call.content_bytes.map(|n| n as u64);
        self.replay = call.replay;
        assign_list(
            &mut self.asked_by,
            call.asked_by,
            |d, s| {
                assign_str(&mut d.hook, &s.hook);
                assign_str(&mut d.reason, &s.reason);
            },
            Asked::clone,
        );
        assign_opt(&mut self.approved_by, call.approved_by);
        assign_opt(&mut self.denied_by, call.denied_by);
        self.lease = call.lease;
        self.is_final = call.outcome.is_final();
    }

    /// Bytes of text the record holds on to in its content, detail and inputs (strings' and
    /// keys' capacities; a kept record is dropped past a limit).
    pub(crate) fn held_bytes(&self) -> usize {
        self.content.capacity()
            + self.detail.as_ref().map_or(0, String::capacity)
            + text_bytes(&self.input)
            + self.effective_input.as_ref().map_or(0, text_bytes)
            + self
                .extensions
                .iter()
                .map(|(k, v)| 16 + k.capacity() + text_bytes(v))
                .sum::<usize>()
    }
}

/// The capacities of the strings and keys in `value`, plus 16 bytes per item (what it keeps
/// allocated, roughly).
fn text_bytes(value: &Value) -> usize {
    match value {
        Value::String(s) => s.capacity(),
        Value::Array(items) => items.iter().map(|v| 16 + text_bytes(v)).sum(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| 16 + k.capacity() + text_bytes(v))
            .sum(),
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
    }
}

/// `to` made equal to `from`, in its own buffer when it has one (a new record's empty strings
/// get an exact copy, as `to_owned` makes).
fn assign_str(to: &mut String, from: &str) {
    if to.capacity() == 0 {
        *to = from.to_owned();
    } else {
        to.clear();
        to.push_str(from);
    }
}

fn assign_opt(to: &mut Option<String>, from: Option<&str>) {
    match (to, from) {
        (Some(to), Some(from)) => assign_str(to, from),
        (to, from) => *to = from.map(str::to_owned),
    }
}

/// `to` made item for item equal to `from`: kept items refilled in place by `assign`, missing
/// ones made by `make`, extra ones dropped.
fn assign_list<T, U>(
    to: &mut Vec<T>,
    from: &[U],
    mut assign: impl FnMut(&mut T, &U),
    make: impl Fn(&U) -> T,
) {
    to.truncate(from.len());
    let kept = to.len();
    for (to, from) in to.iter_mut().zip(from) {
        assign(to, from);
    }
    to.extend(from[kept..].iter().map(make));
}

/// Makes `to` equal to `from` (member order included), reusing its strings and maps where the
/// shape is the same: an object with the same keys in the same order keeps its map and each of
/// its values is assigned in place.
fn assign_value(to: &mut Value, from: &Value) {
    match (to, from) {
        (Value::String(to), Value::String(from)) => assign_str(to, from),
        (Value::Object(to), Value::Object(from))
            if to.len() == from.len() && to.keys().eq(from.keys()) =>
        {
            for ((_, to), (_, from)) in to.iter_mut().zip(from) {
                assign_value(to, from);
            }
        }
        (Value::Array(to), Value::Array(from)) if to.len() == from.len() => {
            for (to, from) in to.iter_mut().zip(from) {
                assign_value(to, from);
            }
        }
        (to, from) => to.clone_from(from),
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
    #[serde(with = "crate::base::time::as_rfc3339")]
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use serde_json::json;

    use super::*;
    use crate::audit::hook_run::HookOutcome;
    use crate::hook::context::Clock;
    use crate::{ToolResult, ToolUse};

    #[test]
    fn held_bytes_counts_the_texts_a_kept_record_holds() {
        let ctx = HookContext::builder("u_001", "sess_1").build();
        let input = json!({"order_id": "o_1", "notes": ["ab", "c"]});
        let call = ToolUse::new("toolu_1", "t", input.clone());
        let result = ToolResult::text("toolu_1", "hello");
        let mut r = CallRecord::new(&call, &input, Outcome::Ok, Some(&result), Duration::ZERO);
        r.detail = Some("boom");
        // content 5 + detail 4 + {"order_id": 16 + 8 + 3, "notes": 16 + 5 + (16 + 2) + (16 + 1)}.
        assert_eq!(AuditRecord::new(&ctx, &r).held_bytes(), 5 + 4 + 27 + 56);
    }

    /// Refilling one record through calls of every shape, in an order where each field grows,
    /// shrinks, appears and disappears, leaves it equal to a freshly built one each time.
    /// The owned parts the record shapes of the refill test borrow.
    struct Shapes {
        inputs: Vec<Value>,
        calls: Vec<ToolUse>,
        results: [ToolResult; 2],
        runs: [HookRun<'static>; 3],
        asked: [Asked; 1],
    }

    const REWRITTEN: [&str; 1] = ["app::policy::spend_limit"];

    impl Shapes {
        fn new() -> Shapes {
            let inputs = vec![
                json!({"order_id": "o_1", "amount_cents": 2599}),
                json!({"order_id": "o_22222", "amount_cents": "[REDACTED]"}),
                json!({"amount_cents": 1, "order_id": "o"}),
                json!({"order_id": "o"}),
                json!(["a", {"b": [1, 2.5, null]}, true]),
                json!(["a", {"b": [1, 2.5]}, false]),
                json!("[input not recorded: over the input limits (9 bytes, 3 levels)]"),
                json!({}),
            ];
            let calls = inputs
                .iter()
                .enumerate()
                .map(|(i, input)| ToolUse::new(format!("toolu_{i}"), "issue_refund", input.clone()))
                .collect();
            Shapes {
                inputs,
                calls,
                results: [
                    ToolResult::text("toolu_0", r#"{"refund_id":"r_1"}"#),
                    ToolResult::error("toolu_1", "BLOCKED: over the limit"),
                ],
                runs: [
                    HookRun::new("app::policy::premium_only", HookOutcome::Allow, 1),
                    HookRun::new("app::policy::spend_limit", HookOutcome::Rewrite, 37),
                    HookRun::new(
                        String::from("app::policy::premium_only"),
                        HookOutcome::Deny,
                        2,
                    ),
                ],
                asked: [Asked {
                    hook: "app::policy::large_refund".to_owned(),
                    reason: "refunds above 20000 cents need a person's approval".to_owned(),
                }],
            }
        }

        /// One record per call, every outcome in turn, the even ones with every optional
        /// member set, the odd ones with few.
        fn records(&self) -> Vec<CallRecord<'_>> {
            let mut records = Vec::new();
            for (i, call) in self.calls.iter().enumerate() {
                let mut r = CallRecord::new(
                    call,
                    &self.inputs[i],
                    Outcome::ALL[i % Outcome::ALL.len()],
                    self.results.get(i % 3),
                    Duration::from_micros(40 + i as u64),
                );
                if i % 2 == 0 {
                    r.blocked_by = Some("app::policy::spend_limit");
                    r.rewritten_by = &REWRITTEN;
                    r.hooks = &self.runs[..i.min(self.runs.len())];
                    r.effective_input = self.inputs.get(i + 1);
                    r.detail = Some("panicked at src/tools.rs:3:5: boom");
                    r.content_bytes = Some(20_000 + i);
                    r.replay = true;
                    r.asked_by = &self.asked;
                    r.approved_by = Some("ops@example.com");
                } else {
                    r.hooks = &self.runs[i % 2..];
                    r.denied_by = Some("ops");
                }
                records.push(r);
            }
            records
        }
    }

    #[test]
    fn a_refilled_record_equals_a_new_one_whatever_came_before() {
        let at = UNIX_EPOCH + Duration::new(1_795_515_300, 250_000_000);
        let with_tier = HookContext::builder("u_001", "sess_1")
            .tier("premium")
            .clock(Clock::fixed(at))
            .build();
        let without_tier = HookContext::builder("u_0000002", "s")
            .clock(Clock::fixed(at + Duration::from_secs(1)))
            .build();
        let shapes = Shapes::new();
        let records = shapes.records();
        let mut kept: Option<AuditRecord> = None;
        // Forward, backward, then every pair: each shape follows each other shape.
        let order: Vec<usize> = (0..records.len())
            .chain((0..records.len()).rev())
            .chain((0..records.len()).flat_map(|a| (0..records.len()).flat_map(move |b| [a, b])))
            .collect();
        for (n, &i) in order.iter().enumerate() {
            let ctx = if n % 3 == 0 {
                &without_tier
            } else {
                &with_tier
            };
            let fresh = AuditRecord::new(ctx, &records[i]);
            match &mut kept {
                Some(record) => record.refill(ctx, &records[i]),
                None => kept = Some(AuditRecord::new(ctx, &records[i])),
            }
            let record = kept.as_ref().unwrap();
            assert_eq!(record, &fresh, "call {i} after {n} refills");
            assert_eq!(
                serde_json::to_string(record).unwrap(),
                serde_json::to_string(&fresh).unwrap()
            );
        }
    }
}
