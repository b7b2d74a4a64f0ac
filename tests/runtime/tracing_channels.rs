//! The operator channels that are not the audit log: a failing observer or Stop hook is a
//! `tracing` event (target `toolgate::observer`). A wrapped [`sync_caller`]'s internal error
//! no longer goes to `tracing` (target `toolgate::caller` is gone): its source chain is the
//! `detail` of its `CallAnswer`, on the outer audit line. Captured with a small subscriber.

use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolgate::{
    Dispatcher, HookContext, ToolError, ToolUse,
    dispatch::{HookError, PostHookDef, StopHookDef, ToolDef, sync_caller},
};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One captured event: `level target field=value …` (fields in the order they were written).
type Events = Arc<Mutex<Vec<String>>>;

struct Capture(Events);

struct Fields(Vec<String>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push(format!("{}={value}", field.name()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.push(format!("{}={value:?}", field.name()));
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields(Vec::new());
        event.record(&mut fields);
        let meta = event.metadata();
        self.0.lock().unwrap().push(format!(
            "{} {} {}",
            meta.level(),
            meta.target(),
            fields.0.join(" ")
        ));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Runs `f` with the capture as this thread's subscriber; returns what it saw.
pub(crate) fn captured(f: impl FnOnce()) -> Vec<String> {
    let events = Events::default();
    tracing::subscriber::with_default(Capture(Arc::clone(&events)), || {
        // Other tests install and drop subscribers on other threads: recompute every callsite's
        // interest against this thread's capture before it runs.
        tracing::callsite::rebuild_interest_cache();
        f()
    });
    events.lock().unwrap().clone()
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

#[test]
fn a_failing_observer_and_stop_hook_are_tracing_events() {
    let d = Dispatcher::builder()
        .tool(ToolDef::sync("ping", "Answers pong.", |_env, _: NoArgs| {
            Ok("pong".to_owned())
        }))
        .post_hook(PostHookDef::sync("tests::metrics", |_env, _record| {
            Err(HookError::new("the metrics store is down"))
        }))
        .stop_hook(StopHookDef::new("tests::summary", |_env, _summary| {
            Err(HookError::new("the summary table is locked"))
        }))
        .build()
        .unwrap();
    let events = captured(|| {
        let s = d.session(HookContext::builder("u_1", "sess_trace").build());
        let r = toolgate::block_on(s.call(&ToolUse::new("toolu_1", "ping", json!({})))).unwrap();
        assert_eq!(r.content_text(), "pong");
        let summary = s.end();
        assert_eq!(summary.observer_errors, 2);
    });
    assert_eq!(
        events,
        [
            "WARN toolgate::observer message=observer failed hook=tests::metrics on=toolu_1 \
             error=the metrics store is down",
            "WARN toolgate::observer message=observer failed hook=tests::summary on=stop \
             error=the summary table is locked",
        ]
    );
}

#[test]
fn a_wrapped_callers_internal_error_goes_to_the_audit_line_not_to_tracing() {
    let legacy = sync_caller(
        vec![json!({"name": "legacy", "description": "A legacy tool.",
                    "input_schema": {"type": "object", "properties": {}}})],
        |_ctx, _call| {
            let io = std::io::Error::other("connection reset");
            Err(ToolError::internal(io))
        },
    );
    let dir = crate::support::TempDir::new("caller-detail");
    let d = Dispatcher::builder()
        .wrap(legacy)
        .audit_log(toolgate::audit::AuditLog::open(&dir).unwrap())
        .build()
        .unwrap();
    let events = captured(|| {
        let s = d.session(HookContext::builder("u_1", "sess_trace").build());
        let r = toolgate::block_on(s.call(&ToolUse::new("toolu_9", "legacy", json!({})))).unwrap();
        assert!(r.is_error);
        assert_eq!(r.content_text(), toolgate::content::INTERNAL_ERROR_MESSAGE);
    });
    assert_eq!(events, Vec::<String>::new());
    let lines = crate::support::json_lines(&dir.join("audit_log.jsonl"));
    assert_eq!(lines.len(), 1);
    assert_eq!(
        (&lines[0]["outcome"], &lines[0]["detail"]),
        (&json!("tool_error"), &json!("connection reset"))
    );
}

#[test]
fn a_wrapped_caller_forwarding_a_driver_error_with_question_mark_shows_the_model_the_generic_text()
{
    use crate::errors::{DSN_CHAIN, REFUSED, REFUSED_CAUSE, Refused, query};
    let legacy = sync_caller(
        vec![
            json!({"name": "ledger", "description": "Reads the ledger.",
                   "input_schema": {"type": "object", "properties": {}}}),
            json!({"name": "refund", "description": "Refunds.",
                   "input_schema": {"type": "object", "properties": {}}}),
        ],
        |_ctx, call| {
            if call.name == "refund" {
                return Err(ToolError::for_model(Refused::new()));
            }
            let rows = query()?;
            Ok(rows)
        },
    );
    let dir = crate::support::TempDir::new("caller-driver-error");
    let d = Dispatcher::builder()
        .wrap(legacy)
        .audit_log(toolgate::audit::AuditLog::open(&dir).unwrap())
        .build()
        .unwrap();
    let mut results = Vec::new();
    let events = captured(|| {
        let s = d.session(HookContext::builder("u_1", "sess_trace").build());
        for (id, name) in [("toolu_7", "ledger"), ("toolu_8", "refund")] {
            let r = toolgate::block_on(s.call(&ToolUse::new(id, name, json!({})))).unwrap();
            results.push(serde_json::to_value(r).unwrap());
        }
    });
    assert_eq!(
        results,
        [
            json!({"type": "tool_result", "tool_use_id": "toolu_7", "is_error": true,
                   "content": toolgate::content::INTERNAL_ERROR_MESSAGE}),
            json!({"type": "tool_result", "tool_use_id": "toolu_8", "is_error": true,
                   "content": REFUSED}),
        ]
    );
    // The operator detail is on the outer audit line (the wrapped caller's `CallAnswer`), not
    // on `tracing`.
    assert_eq!(events, Vec::<String>::new());
    let lines = crate::support::json_lines(&dir.join("audit_log.jsonl"));
    assert_eq!(
        lines
            .iter()
            .map(|l| (
                l["tool_use_id"].clone(),
                l["outcome"].clone(),
                l["detail"].clone()
            ))
            .collect::<Vec<_>>(),
        [
            (json!("toolu_7"), json!("tool_error"), json!(DSN_CHAIN)),
            (json!("toolu_8"), json!("tool_error"), json!(REFUSED_CAUSE)),
        ]
    );
}
