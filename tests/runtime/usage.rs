//! `Usage`: a response's tokens read from its `usage`, added to a session, counted in its
//! summary, and on the audit log's summary line only when some were added.

use std::time::{Duration, SystemTime};

use crate::support;
use serde_json::{Value, json};
use toolgate::{
    Dispatcher, HookContext, Message,
    audit::{AuditLog, SessionSummary},
    content::Usage,
    dispatch::Clock,
};

fn response(usage: Value) -> Message {
    serde_json::from_value(json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
        "content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn",
        "stop_sequence": null, "usage": usage
    }))
    .unwrap()
}

#[test]
fn a_responses_usage_is_read_with_absent_or_null_counts_as_zero() {
    assert_eq!(
        Usage::of_response(&response(json!({
            "input_tokens": 1200, "output_tokens": 85,
            "cache_creation_input_tokens": 300, "cache_read_input_tokens": 900,
            "service_tier": "standard"
        }))),
        Some(Usage::new(1200, 85).with_cache(300, 900))
    );
    assert_eq!(
        Usage::of_response(&response(json!({
            "input_tokens": 10, "output_tokens": 2, "cache_creation_input_tokens": null
        }))),
        Some(Usage::new(10, 2))
    );
    assert_eq!(
        Usage::of_response(&response(
            json!({"input_tokens": "many", "output_tokens": -1})
        )),
        Some(Usage::new(0, 0))
    );
    assert_eq!(Usage::of_response(&response(json!("not an object"))), None);
    let user = Message::user(vec![]);
    assert_eq!(Usage::of_response(&user), None);
}

#[test]
fn usage_adds_up_each_count_and_saturates() {
    let mut total = Usage::new(1, 2).with_cache(3, 4);
    total += Usage::new(10, 20).with_cache(30, 40);
    assert_eq!(total, Usage::new(11, 22).with_cache(33, 44));
    total += Usage::new(u64::MAX, 0);
    assert_eq!(total, Usage::new(u64::MAX, 22).with_cache(33, 44));
    assert!(Usage::default().is_zero());
    assert!(!Usage::new(0, 1).is_zero());
}

#[test]
fn a_sessions_usage_is_in_its_summary_and_on_the_summary_line_only_when_added() {
    let dir = support::TempDir::new("usage");
    let d = Dispatcher::builder()
        .audit_log(AuditLog::open(dir.path()).unwrap())
        .build()
        .unwrap();
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_515_300);
    let ctx = |id: &str| {
        HookContext::builder("u_001", id)
            .clock(Clock::fixed(at))
            .build()
    };
    let with = d.session(ctx("sess_with"));
    with.add_usage(Usage::new(1200, 85));
    with.add_usage(Usage::new(1300, 40).with_cache(0, 1000));
    assert_eq!(
        with.summary_so_far().usage,
        Usage::new(2500, 125).with_cache(0, 1000)
    );
    let summary = with.end();
    assert_eq!(summary.usage, Usage::new(2500, 125).with_cache(0, 1000));
    // After the end, the summary stays what it said.
    with.add_usage(Usage::new(1, 1));
    assert_eq!(with.end().usage, Usage::new(2500, 125).with_cache(0, 1000));
    d.session(ctx("sess_without")).end();

    let lines: Vec<Value> = support::json_lines(&dir.path().join("session_summaries.jsonl"))
        .into_iter()
        .map(|mut l| {
            l.as_object_mut().unwrap().remove("prev");
            l
        })
        .collect();
    assert_eq!(
        lines,
        [
            json!({"ts": "2026-11-24T10:15:00Z", "session_id": "sess_with", "user_id": "u_001",
                   "started_at": "2026-11-24T10:15:00Z", "ended_at": "2026-11-24T10:15:00Z",
                   "calls": 0, "outcomes": {}, "tools": {}, "observer_errors": 0,
                   "usage": {"input_tokens": 2500, "output_tokens": 125,
                             "cache_creation_input_tokens": 0,
                             "cache_read_input_tokens": 1000}}),
            json!({"ts": "2026-11-24T10:15:00Z", "session_id": "sess_without", "user_id": "u_001",
                   "started_at": "2026-11-24T10:15:00Z", "ended_at": "2026-11-24T10:15:00Z",
                   "calls": 0, "outcomes": {}, "tools": {}, "observer_errors": 0}),
        ]
    );
    // Both lines read back; a line without `usage` reads as none added.
    let back: Vec<SessionSummary> = lines
        .iter()
        .map(|l| serde_json::from_value(l.clone()).unwrap())
        .collect();
    assert_eq!(back[0].usage, Usage::new(2500, 125).with_cache(0, 1000));
    assert_eq!(back[1].usage, Usage::default());
}
