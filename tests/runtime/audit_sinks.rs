//! Audit sinks and redaction: every sink receives the same (redacted) record the JSONL line is
//! made of; a failing sink is reported and changes nothing else; redaction rules per tool and
//! field, and over `content` and `detail`, pinned line by line.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    Decision, Dispatcher, HookContext, ToolError, ToolResult, ToolUse,
    audit::{
        AuditLog, AuditRecord, AuditSink, Redaction, SummaryRecord, mask_card_numbers, mask_emails,
    },
    dispatch::{BuildProblem, Clock, HookError, PreHookDef, ToolDef},
};

use crate::support;
use crate::tracing_channels::captured;

/// A payment card.
#[derive(Deserialize, JsonSchema)]
struct Card {
    /// The card number.
    number: String,
    /// The holder's name.
    holder: String,
}

/// Arguments of `pay`.
#[derive(Deserialize, JsonSchema)]
struct Pay {
    /// The card to charge.
    card: Card,
    /// Where the receipt goes.
    email: String,
}

/// Arguments of `lookup`.
#[derive(Deserialize, JsonSchema)]
struct Lookup {
    /// The customer's e-mail address.
    email: String,
}

fn pay() -> ToolDef {
    ToolDef::sync("pay", "Charges a card.", |_env, p: Pay| {
        Ok(format!(
            "charged card {} of {}; receipt sent to {}",
            p.card.number, p.card.holder, p.email
        ))
    })
}

fn lookup() -> ToolDef {
    ToolDef::sync("lookup", "Finds a customer.", |_env, l: Lookup| {
        Ok(format!("customer {} found", l.email))
    })
}

/// A tool whose library error (with the card and address in its text) is internal: the model
/// reads the generic message, `detail` gets the text.
fn refund() -> ToolDef {
    ToolDef::sync("refund", "Refunds a card.", |_env, p: Pay| {
        Err::<String, _>(ToolError::internal(std::io::Error::other(format!(
            "gateway refused card {} for {}",
            p.card.number, p.email
        ))))
    })
}

/// Lowercases `pay`'s e-mail address (a rewrite, so the line has an `effective_input`).
fn lowercase_email() -> PreHookDef {
    PreHookDef::sync("app::lowercase_email", 10, |_env, call| {
        let email = call.input["email"].as_str().unwrap_or_default();
        if email == email.to_lowercase() {
            return Ok(Decision::Allow);
        }
        let mut input = call.input.clone();
        input["email"] = json!(email.to_lowercase());
        Ok(Decision::Rewrite(input))
    })
    .tools(["pay"])
}

/// A clock one second further at every read, from 2026-11-24T10:15:00Z.
fn ticking() -> Clock {
    let reads = Arc::new(std::sync::atomic::AtomicU64::new(0));
    Clock::Custom(Arc::new(move || {
        SystemTime::UNIX_EPOCH
            + Duration::from_secs(
                1_795_515_300 + reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst),
            )
    }))
}

fn context(session: &str) -> HookContext {
    context_at(session, ticking())
}

/// `u_001`, premium, in `session`, on `clock`.
fn context_at(session: &str, clock: Clock) -> HookContext {
    HookContext::builder("u_001", session)
        .tier("premium")
        .clock(clock)
        .build()
}

fn call(session: &toolgate::Session, id: &str, tool: &str, input: Value) -> ToolResult {
    toolgate::block_on(session.call(&ToolUse::new(id, tool, input))).unwrap()
}

const CARD: &str = "4242 4242 4242 4242";

fn pay_input() -> Value {
    json!({"card": {"number": CARD, "holder": "Ada Lovelace"}, "email": "Ada@Example.com"})
}

/// Keeps what it receives, as JSON.
#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<Value>>>);

impl AuditSink for Collect {
    fn record(&self, record: &AuditRecord) -> Result<(), HookError> {
        self.0
            .lock()
            .unwrap()
            .push(serde_json::to_value(record).unwrap());
        Ok(())
    }

    fn summary(&self, summary: &SummaryRecord) -> Result<(), HookError> {
        self.0
            .lock()
            .unwrap()
            .push(serde_json::to_value(summary).unwrap());
        Ok(())
    }
}

impl Collect {
    /// What it received, `duration_us` set to 0.
    fn received(&self) -> Vec<Value> {
        let mut all = self.0.lock().unwrap().clone();
        for v in &mut all {
            crate::support::zero_durations(v);
        }
        all
    }
}

struct Failing;

impl AuditSink for Failing {
    fn record(&self, _: &AuditRecord) -> Result<(), HookError> {
        Err(HookError::new("the audit database is unreachable"))
    }
}

struct Panicking;

impl AuditSink for Panicking {
    fn record(&self, _: &AuditRecord) -> Result<(), HookError> {
        panic!("{}: the sink panicked", support::INJECTED)
    }

    fn summary(&self, _: &SummaryRecord) -> Result<(), HookError> {
        panic!("{}: the sink panicked", support::INJECTED)
    }

    fn name(&self) -> &str {
        "app::PanickingSink"
    }
}

#[test]
fn redaction_masks_fields_per_tool_and_text_in_content_and_detail_before_every_sink() {
    let dir = support::TempDir::new("audit-redact");
    let sink = Collect::default();
    let rules = Redaction::new()
        .field("pay", "/card/number")
        .unwrap()
        .field_with("pay", "/card/holder", |v| {
            let initials: Vec<String> = v
                .as_str()
                .unwrap_or_default()
                .split_whitespace()
                .map(|w| format!("{}.", &w[..1]))
                .collect();
            json!(initials.join(" "))
        })
        .unwrap()
        .field("pay", "/email")
        .unwrap()
        .field("refund", "/card/number")
        .unwrap()
        .text(mask_card_numbers)
        .text(mask_emails);
    let log = AuditLog::builder()
        .dir(&dir)
        .sink(sink.clone())
        .redaction(rules)
        .build()
        .unwrap();
    let d = Dispatcher::builder()
        .tool(pay())
        .tool(lookup())
        .tool(refund())
        .pre_hook(lowercase_email())
        .audit_log(log)
        .build()
        .unwrap();
    let s = d.session(context("sess_redact"));
    // What the model reads is never redacted: only the audit trail is.
    let r = call(&s, "toolu_1", "pay", pay_input());
    assert_eq!(
        r.content_text(),
        "charged card 4242 4242 4242 4242 of Ada Lovelace; receipt sent to ada@example.com"
    );
    let r = call(
        &s,
        "toolu_2",
        "lookup",
        json!({"email": "grace@example.org"}),
    );
    assert_eq!(r.content_text(), "customer grace@example.org found");
    let r = call(&s, "toolu_3", "refund", pay_input());
    assert_eq!(r.content_text(), toolgate::content::INTERNAL_ERROR_MESSAGE);
    s.end();

    let (lines, _) = support::chained_lines(&dir.join("audit_log.jsonl"), support::ZEROS);
    let internal = serde_json::to_string(toolgate::content::INTERNAL_ERROR_MESSAGE).unwrap();
    assert_eq!(
        lines,
        [
            // `pay`: the number and the address masked by field rules in both inputs, the holder
            // by a function; the content by the text rules.
            r#"{"ts":"2026-11-24T10:15:01Z","session_id":"sess_redact","user_id":"u_001","tier":"premium","tool_use_id":"toolu_1","tool":"pay","input":{"card":{"number":"[redacted]","holder":"A. L."},"email":"[redacted]"},"outcome":"ok","is_error":false,"content":"charged card **** **** **** 4242 of Ada Lovelace; receipt sent to [email]","duration_us":0,"rewritten_by":["app::lowercase_email"],"hooks":[{"hook":"app::lowercase_email","decision":"rewrite","duration_us":0}],"effective_input":{"card":{"number":"[redacted]","holder":"A. L."},"email":"[redacted]"},"prev":"…"}"#.to_owned(),
            // `lookup`: no field rule names it, so its input is kept; its content is masked.
            r#"{"ts":"2026-11-24T10:15:02Z","session_id":"sess_redact","user_id":"u_001","tier":"premium","tool_use_id":"toolu_2","tool":"lookup","input":{"email":"grace@example.org"},"outcome":"ok","is_error":false,"content":"customer [email] found","duration_us":0,"prev":"…"}"#.to_owned(),
            // `refund`: its own rule masks the number (not the address); the library error's
            // text in `detail` is masked by the text rules.
            format!(
                r#"{{"ts":"2026-11-24T10:15:03Z","session_id":"sess_redact","user_id":"u_001","tier":"premium","tool_use_id":"toolu_3","tool":"refund","input":{{"card":{{"number":"[redacted]","holder":"Ada Lovelace"}},"email":"Ada@Example.com"}},"outcome":"tool_error","is_error":true,"content":{internal},"duration_us":0,"detail":"gateway refused card **** **** **** 4242 for [email]","prev":"…"}}"#
            ),
        ]
    );
    // The other sink received exactly the same records (the lines without `prev`), then the
    // summary.
    let text = std::fs::read_to_string(dir.join("audit_log.jsonl")).unwrap();
    let summary = std::fs::read_to_string(dir.join("session_summaries.jsonl")).unwrap();
    let from_files: Vec<Value> = text
        .lines()
        .chain(summary.lines())
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("prev");
            crate::support::zero_durations(&mut v);
            v
        })
        .collect();
    assert_eq!(sink.received(), from_files);
    // Nothing of the card number but its last four digits anywhere in the trail; the address
    // only where no rule asked for it (`refund`'s input).
    assert!(!text.contains("4242 4242"), "{text}");
    assert_eq!(text.to_lowercase().matches("ada@example.com").count(), 1);
}

#[test]
fn a_rule_for_every_tool_and_a_pointer_to_nothing() {
    let dir = support::TempDir::new("audit-redact-all");
    let rules = Redaction::new()
        .field("*", "/email")
        .unwrap()
        .field("*", "/card/cvc")
        .unwrap();
    let d = Dispatcher::builder()
        .tool(pay())
        .tool(lookup())
        .audit_log(
            AuditLog::builder()
                .dir(&dir)
                .redaction(rules)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let s = d.session(context("sess_all"));
    call(
        &s,
        "toolu_1",
        "lookup",
        json!({"email": "grace@example.org"}),
    );
    call(
        &s,
        "toolu_2",
        "pay",
        json!({"card": {"number": "1", "holder": "H"}, "email": "a@b.c"}),
    );
    let (lines, _) = support::chained_lines(&dir.join("audit_log.jsonl"), support::ZEROS);
    assert_eq!(
        lines,
        [
            r#"{"ts":"2026-11-24T10:15:01Z","session_id":"sess_all","user_id":"u_001","tier":"premium","tool_use_id":"toolu_1","tool":"lookup","input":{"email":"[redacted]"},"outcome":"ok","is_error":false,"content":"customer grace@example.org found","duration_us":0,"prev":"…"}"#,
            r#"{"ts":"2026-11-24T10:15:02Z","session_id":"sess_all","user_id":"u_001","tier":"premium","tool_use_id":"toolu_2","tool":"pay","input":{"card":{"number":"1","holder":"H"},"email":"[redacted]"},"outcome":"ok","is_error":false,"content":"charged card 1 of H; receipt sent to a@b.c","duration_us":0,"prev":"…"}"#,
        ]
    );
}

/// An input the pipeline could not read as an object (arguments sent as a JSON text cut short,
/// an array) is recorded as sent, so a field rule's pointer cannot reach the field inside it: a
/// rule of that tool masks the whole input before any sink sees it. A tool no rule
/// names keeps such an input as sent.
#[test]
fn an_input_that_is_not_an_object_is_masked_whole_by_its_tools_field_rules() {
    let dir = support::TempDir::new("audit-redact-cut");
    let rules = Redaction::new().field("pay", "/card/number").unwrap();
    let d = Dispatcher::builder()
        .tool(pay())
        .tool(lookup())
        .audit_log(
            AuditLog::builder()
                .dir(&dir)
                .redaction(rules)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let s = d.session(context("sess_cut"));
    let cut = format!(r#"{{"card": {{"number": "{CARD}", "hol"#);
    let r = call(&s, "toolu_1", "pay", json!(cut));
    assert!(r.is_error);
    call(&s, "toolu_2", "pay", json!([{"card": {"number": CARD}}]));
    call(&s, "toolu_3", "lookup", json!("grace@example.org"));
    s.end();
    let brief: Vec<Value> = support::json_lines(&dir.join("audit_log.jsonl"))
        .iter()
        .map(|l| json!([l["tool_use_id"], l["outcome"], l["input"]]))
        .collect();
    assert_eq!(
        brief,
        [
            json!(["toolu_1", "invalid_input", "[redacted]"]),
            json!(["toolu_2", "invalid_input", "[redacted]"]),
            json!(["toolu_3", "invalid_input", "grace@example.org"]),
        ]
    );
    let text = std::fs::read_to_string(dir.join("audit_log.jsonl")).unwrap();
    // Two groups of the card: a bare "4242" can turn up inside a line's `prev` hash.
    assert!(!text.contains("4242 4242"), "{text}");
}

#[test]
fn a_redaction_rule_for_a_tool_registered_nowhere_fails_the_build() {
    let dir = support::TempDir::new("audit-redact-typo");
    let rules = Redaction::new()
        .field("pya", "/card/number")
        .unwrap()
        .field("*", "/email")
        .unwrap()
        .field("pay", "/email")
        .unwrap();
    let err = Dispatcher::builder()
        .tool(pay())
        .audit_log(
            AuditLog::builder()
                .dir(&dir)
                .redaction(rules)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap_err();
    assert_eq!(
        err.problems,
        [BuildProblem::UnknownRedactionTool("pya".to_owned())]
    );
    assert_eq!(
        err.to_string(),
        "the dispatcher cannot be built (1 problem):\n- the audit log's redaction names tool \
         `pya`, which is registered nowhere (use \"*\" for every tool)"
    );
}

#[test]
fn a_failing_sink_is_reported_and_the_call_and_the_other_sinks_go_on() {
    support::quiet_injected_panics();
    let dir = support::TempDir::new("audit-failing-sink");
    let after = Collect::default();
    let log = AuditLog::builder()
        .dir(&dir)
        .sink(Failing)
        .sink(Panicking)
        .sink(after.clone())
        .build()
        .unwrap();
    let d = Dispatcher::builder()
        .tool(lookup())
        .audit_log(log)
        .build()
        .unwrap();
    let events = captured(|| {
        let s = d.session(context("sess_sinks"));
        let r = call(&s, "toolu_1", "lookup", json!({"email": "x"}));
        assert_eq!(r, ToolResult::text("toolu_1", "customer x found"));
        let summary = s.end();
        // One per record, however many sinks failed: the call's, and the summary's (counted
        // as the AuditLog's Stop hook reports it).
        assert_eq!(summary.observer_errors, 2);
    });
    let failing = std::any::type_name::<Failing>();
    assert_eq!(
        events,
        [
            format!(
                "WARN toolgate::observer message=observer failed hook=toolgate::audit::AuditLog \
                 on=toolu_1 error=audit sink `{failing}` failed: the audit database is \
                 unreachable; audit sink `app::PanickingSink` failed: panicked: injected fault: \
                 the sink panicked"
            ),
            // `Failing` keeps the default `summary`: only the panicking sink fails there.
            "WARN toolgate::observer message=observer failed hook=toolgate::audit::AuditLog on=stop \
             error=audit sink `app::PanickingSink` failed: panicked: injected fault: the sink \
             panicked"
                .to_owned(),
        ]
    );
    // The files and the last sink still got both records.
    assert_eq!(support::json_lines(&dir.join("audit_log.jsonl")).len(), 1);
    assert_eq!(
        support::json_lines(&dir.join("session_summaries.jsonl")).len(),
        1
    );
    let received = after.received();
    assert_eq!(received.len(), 2);
    assert_eq!(received[0]["tool_use_id"], "toolu_1");
    assert_eq!(received[1]["calls"], 1);
}

#[test]
fn a_log_with_sinks_only_writes_no_file_and_one_with_neither_is_refused() {
    let sink = Collect::default();
    let log = AuditLog::builder().sink(sink.clone()).build().unwrap();
    assert_eq!(log.dir(), None);
    assert_eq!(log.audit_log_path(), None);
    assert_eq!(log.rotate().unwrap(), Vec::<std::path::PathBuf>::new());
    let d = Dispatcher::builder()
        .tool(lookup())
        .audit_log(log)
        .build()
        .unwrap();
    let s = d.session(context("sess_only"));
    call(&s, "toolu_1", "lookup", json!({"email": "x"}));
    s.end();
    assert_eq!(
        sink.received(),
        [
            json!({"ts": "2026-11-24T10:15:01Z", "session_id": "sess_only", "user_id": "u_001",
                   "tier": "premium", "tool_use_id": "toolu_1", "tool": "lookup",
                   "input": {"email": "x"}, "outcome": "ok", "is_error": false,
                   "content": "customer x found", "duration_us": 0}),
            json!({"ts": "2026-11-24T10:15:03Z", "session_id": "sess_only", "user_id": "u_001",
                   "started_at": "2026-11-24T10:15:00Z", "ended_at": "2026-11-24T10:15:02Z",
                   "calls": 1, "outcomes": {"ok": 1}, "tools": {"lookup": 1},
                   "observer_errors": 0}),
        ]
    );
    let err = AuditLog::builder().build().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert_eq!(
        err.to_string(),
        "an audit log needs a folder (.dir) or a sink (.sink)"
    );
}

/// From inside `record`, runs a call of another dispatcher whose audit log writes to `log`: an
/// audit write nested in another on the same thread (the outer one holds the thread's kept
/// record, so the inner one makes its own).
struct Nested {
    inner: Dispatcher,
}

impl AuditSink for Nested {
    fn record(&self, record: &AuditRecord) -> Result<(), HookError> {
        let s = self.inner.session(fixed_context("sess_inner"));
        let id = format!("{}_inner", record.tool_use_id);
        let input = json!({"email": format!("inner-{}", record.tool_use_id)});
        call(&s, &id, "lookup", input);
        Ok(())
    }
}

fn fixed_context(session: &str) -> HookContext {
    context_at(
        session,
        Clock::fixed(SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_515_300)),
    )
}

/// The audit log keeps one record per thread and refills it for every call: a sink that audits a
/// call of its own from inside `record` leaves the outer record whole for the sinks after it, calls
/// of other tools and inputs in a row each get their own values, and the files hold the same lines.
/// (That a refill leaves every member as a new record would, through calls where each optional
/// member appears and disappears, is `audit/record.rs`'s unit test.)
#[test]
fn a_record_refilled_per_thread_survives_a_nested_audit_write_and_calls_of_other_shapes() {
    let inner = Collect::default();
    let inner_log = AuditLog::builder().sink(inner.clone()).build().unwrap();
    let inner_dispatcher = Dispatcher::builder()
        .tool(lookup())
        .audit_log(inner_log)
        .build()
        .unwrap();
    let dir = support::TempDir::new("audit-nested-sink");
    let outer = Collect::default();
    let log = AuditLog::builder()
        .dir(&dir)
        .sink(Nested {
            inner: inner_dispatcher,
        })
        .sink(outer.clone())
        .build()
        .unwrap();
    let d = Dispatcher::builder()
        .tool(lookup())
        .tool(pay())
        .audit_log(log)
        .build()
        .unwrap();
    let s = d.session(fixed_context("sess_outer"));
    call(&s, "toolu_1", "lookup", json!({"email": "x"}));
    call(&s, "toolu_2", "pay", pay_input());
    call(
        &s,
        "toolu_3",
        "lookup",
        json!({"email": "a much longer address@example.com"}),
    );
    s.end();
    let at = "2026-11-24T10:15:00Z";
    let record = |id: &str, tool: &str, input: Value, content: &str| {
        json!({"ts": at, "session_id": "sess_outer", "user_id": "u_001", "tier": "premium",
               "tool_use_id": id, "tool": tool, "input": input, "outcome": "ok",
               "is_error": false, "content": content, "duration_us": 0})
    };
    let expected = [
        record(
            "toolu_1",
            "lookup",
            json!({"email": "x"}),
            "customer x found",
        ),
        record(
            "toolu_2",
            "pay",
            pay_input(),
            "charged card 4242 4242 4242 4242 of Ada Lovelace; receipt sent to Ada@Example.com",
        ),
        record(
            "toolu_3",
            "lookup",
            json!({"email": "a much longer address@example.com"}),
            "customer a much longer address@example.com found",
        ),
    ];
    let summary = json!({"ts": at, "session_id": "sess_outer", "user_id": "u_001",
                         "started_at": at, "ended_at": at, "calls": 3,
                         "outcomes": {"ok": 3}, "tools": {"lookup": 2, "pay": 1},
                         "observer_errors": 0});
    let mut all = expected.to_vec();
    all.push(summary);
    assert_eq!(outer.received(), all);
    // The files got the same records, as lines.
    let mut lines = support::json_lines(&dir.join("audit_log.jsonl"));
    for line in &mut lines {
        line.as_object_mut().unwrap().remove("prev");
        crate::support::zero_durations(line);
    }
    assert_eq!(lines, expected);
    // Each nested call was audited whole by the inner log, with its session's summary.
    let inner_expected: Vec<Value> = ["toolu_1", "toolu_2", "toolu_3"]
        .iter()
        .flat_map(|id| {
            let email = format!("inner-{id}");
            [
                json!({"ts": at, "session_id": "sess_inner", "user_id": "u_001",
                       "tier": "premium", "tool_use_id": format!("{id}_inner"),
                       "tool": "lookup", "input": {"email": email}, "outcome": "ok",
                       "is_error": false, "content": format!("customer {email} found"),
                       "duration_us": 0}),
                json!({"ts": at, "session_id": "sess_inner", "user_id": "u_001",
                       "started_at": at, "ended_at": at, "calls": 1,
                       "outcomes": {"ok": 1}, "tools": {"lookup": 1},
                       "observer_errors": 0}),
            ]
        })
        .collect();
    assert_eq!(inner.received(), inner_expected);
}
