//! The call's `tracing` span and one child span per PreToolUse hook run, named and attributed
//! after the OpenTelemetry GenAI semantic conventions (semantic-conventions v1.41.0, "Execute
//! tool span", status Development), so `tracing-opentelemetry` exports them as GenAI spans.
//!
//! | span | name (`otel.name`) | attributes |
//! |---|---|---|
//! | the call | `execute_tool {tool}` | `gen_ai.operation.name` = `execute_tool`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type` = `function`, `toolgate.session.id`; at the end `toolgate.outcome` (`cancelled` for a call the host dropped unfinished), and when they apply `toolgate.blocked_by`, `toolgate.rewritten_by` (paths joined by `, `), `error.type` (the outcome, for every outcome but `ok`) with `otel.status_code` = `error`; opted in ([`DispatcherBuilder::span_content`](crate::dispatch::DispatcherBuilder::span_content)): `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`, redacted as the audit log redacts |
//! | a hook run | `pre_tool_use {hook}` | `toolgate.hook.name`, `toolgate.hook.decision` (`allow`, `deny`, `rewrite`, `failed`, `timeout`) |
//!
//! Target `toolgate::span`, level INFO. Without a subscriber that wants them, a disabled span
//! is made (no field is evaluated, nothing is allocated) and every later step checks
//! `is_disabled` first.

use std::fmt;

use tracing::Span;
use tracing::field::Empty;

use crate::audit::hook_run::HookOutcome;
use crate::audit::outcome::{CallRecord, Outcome};
use crate::audit::{AuditRecord, Redaction};
use crate::content::message::ToolUse;
use crate::hook::context::HookContext;

/// `execute_tool {tool}` / `pre_tool_use {hook}`: a span name made only when the span is on.
struct Named<'a>(&'static str, &'a str);

impl fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.0, self.1)
    }
}

/// The span of one call, before it runs.
#[inline]
pub(super) fn call_span(context: &HookContext, call: &ToolUse) -> Span {
    tracing::info_span!(
        target: "toolgate::span",
        "execute_tool",
        otel.name = %Named("execute_tool", &call.name),
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %call.name,
        gen_ai.tool.call.id = %call.id,
        gen_ai.tool.type = "function",
        toolgate.session.id = %context.session_id(),
        toolgate.outcome = Empty,
        toolgate.blocked_by = Empty,
        toolgate.rewritten_by = Empty,
        error.type = Empty,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
    )
}

/// The child span of one hook run under `call` (disabled when `call` is).
#[inline]
pub(super) fn hook_span(call: &Span, hook: &str) -> Span {
    if call.is_disabled() {
        return Span::none();
    }
    tracing::info_span!(
        target: "toolgate::span",
        parent: call,
        "pre_tool_use",
        otel.name = %Named("pre_tool_use", hook),
        toolgate.hook.name = %hook,
        toolgate.hook.decision = Empty,
    )
}

/// Records a hook run's decision on its span.
#[inline]
pub(super) fn decided(span: &Span, decision: HookOutcome) {
    if !span.is_disabled() {
        span.record("toolgate.hook.decision", decision.as_str());
    }
}

/// Records on the span of a call the host dropped before it finished that it ended `cancelled`
/// (the span closes as the call's future is dropped), as its audit line says.
#[inline(never)]
pub(super) fn cancelled(span: &Span) {
    if span.is_disabled() {
        return;
    }
    let outcome = Outcome::Cancelled.as_str();
    span.record("toolgate.outcome", outcome);
    span.record("error.type", outcome);
    span.record("otel.status_code", "error");
}

/// Records how the call ended on its span; with `content` (the host opted in), the input the
/// tool got and the result's text too, after `content`'s redaction.
#[inline(never)]
pub(super) fn finish(
    span: &Span,
    context: &HookContext,
    record: &CallRecord<'_>,
    content: Option<&Redaction>,
) {
    span.record("toolgate.outcome", record.outcome.as_str());
    if let Some(hook) = record.blocked_by {
        span.record("toolgate.blocked_by", hook);
    }
    if !record.rewritten_by.is_empty() {
        span.record("toolgate.rewritten_by", record.rewritten_by.join(", "));
    }
    if record.outcome != Outcome::Ok {
        span.record("error.type", record.outcome.as_str());
        span.record("otel.status_code", "error");
    }
    if let Some(redaction) = content {
        let mut redacted = AuditRecord::new(context, record);
        redaction.apply(&mut redacted);
        let arguments = redacted.effective_input.as_ref().unwrap_or(&redacted.input);
        span.record("gen_ai.tool.call.arguments", arguments.to_string());
        span.record("gen_ai.tool.call.result", redacted.content.as_str());
    }
}
