//! Sessions: failing closed, observers that fail, Stop exactly once, one message with several
//! `tool_use` blocks, async hooks and tools.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::support::{self, HALT_TEXT, assistant};
use serde_json::{Value, json};
use toolgate::{
    Dispatcher, HookContext, ToolResult, ToolUse,
    audit::{AuditLog, Outcome},
    content::ContentBlock,
};

/// Side effects and hook runs, shared through `State<Counters>`.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) sends: AtomicUsize,
    pub(crate) stops: AtomicUsize,
    pub(crate) observed: AtomicUsize,
    /// What the observers and Stop hooks of `observers` saw, in the order they ran.
    pub(crate) order: Mutex<Vec<String>>,
    /// The audit folder of the session, when it has one.
    pub(crate) audit_dir: Mutex<Option<PathBuf>>,
}

impl Counters {
    fn note(&self, entry: String) {
        self.order.lock().unwrap().push(entry);
    }

    /// The lines of an audit file of this session's folder; `None` without an audit log.
    fn audit_lines(&self, file: &str) -> Option<Vec<Value>> {
        let dir = self.audit_dir.lock().unwrap().clone()?;
        Some(support::json_lines(&dir.join(file)))
    }
}

mod failing_policy {
    //! A PreToolUse hook that errors, and one that panics.
    use super::Counters;
    use toolgate::{Decision, State, ToolUse, pre_hook, tool};

    /// Sends a message to the customer.
    #[tool]
    pub(crate) fn send_message(
        /// The text to send.
        text: String,
        counters: State<Counters>,
    ) -> String {
        counters
            .sends
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        format!("sent: {text}")
    }

    /// Errors when the moderation service cannot be reached.
    #[pre_hook(order = 1)]
    pub(crate) fn moderation(call: &ToolUse) -> Result<Decision, std::io::Error> {
        match call.input["text"].as_str() {
            Some("unreachable") => Err(std::io::Error::other(
                "moderation API timed out after 3 retries",
            )),
            Some("bug") => panic!("moderation table index out of range"),
            Some("spam") => Ok(Decision::deny("messages must not advertise.")),
            _ => Ok(Decision::Allow),
        }
    }
}

fn session_with(
    counters: &Arc<Counters>,
    module: &str,
    dir: Option<&std::path::Path>,
) -> toolgate::Session {
    let mut b = Dispatcher::builder()
        .registered_under(format!("{}::{module}", module_path!()))
        .state_arc(counters.clone());
    if let Some(dir) = dir {
        b = b.audit_log(AuditLog::open(dir).unwrap());
    }
    *counters.audit_dir.lock().unwrap() = dir.map(std::path::Path::to_path_buf);
    b.build()
        .unwrap()
        .session(HookContext::builder("u_001", "sess_session").build())
}

#[test]
fn a_hook_error_fails_closed() {
    let counters = Arc::new(Counters::default());
    let s = session_with(&counters, "failing_policy", None);
    let call = ToolUse::new("toolu_e", "send_message", json!({"text": "unreachable"}));
    let halt = support::halt_of(toolgate::block_on(s.call(&call)));
    assert_eq!(counters.sends.load(Ordering::SeqCst), 0);
    assert_eq!(halt.outcome, Outcome::HookFailed);
    assert_eq!(halt.hook, "runtime::session::failing_policy::moderation");
    assert_eq!(halt.detail, "moderation API timed out after 3 retries");
    let answer = serde_json::to_value(halt.answer()).unwrap();
    assert_eq!(
        answer,
        json!({"role": "user", "content": [{
            "type": "tool_result",
            "tool_use_id": "toolu_e",
            "content": HALT_TEXT,
            "is_error": true
        }]})
    );
}

#[test]
fn a_hook_panic_fails_closed() {
    let counters = Arc::new(Counters::default());
    let s = session_with(&counters, "failing_policy", None);
    let call = ToolUse::new("toolu_p", "send_message", json!({"text": "bug"}));
    let halt = support::halt_of(toolgate::block_on(s.call(&call)));
    assert_eq!(counters.sends.load(Ordering::SeqCst), 0);
    assert_eq!(halt.outcome, Outcome::HookFailed);
    assert_eq!(
        halt.detail,
        "the hook panicked: moderation table index out of range"
    );
    let r = halt.result().unwrap();
    assert_eq!(r.tool_use_id, "toolu_p");
    assert!(r.is_error);
    assert_eq!(r.content_text(), HALT_TEXT);
    // The session goes on for a host that chooses to continue.
    let ok = ToolUse::new("toolu_q", "send_message", json!({"text": "hello"}));
    assert_eq!(
        toolgate::block_on(s.call(&ok)).unwrap(),
        ToolResult::text("toolu_q", "sent: hello")
    );
}

#[test]
fn three_blocks_one_denied_one_failing_one_fine_give_three_results_in_order() {
    let counters = Arc::new(Counters::default());
    let s = session_with(&counters, "failing_policy", None);
    let message = assistant(
        json!([
            {"type": "text", "text": "I'll send three messages."},
            {"type": "tool_use", "id": "toolu_1", "name": "send_message", "input": {"text": "spam"}},
            {"type": "tool_use", "id": "toolu_2", "name": "send_message", "input": {"txt": "typo"}},
            {"type": "text", "text": "and one more"},
            {"type": "tool_use", "id": "toolu_3", "name": "send_message", "input": {"text": "hi"}}
        ]),
        "tool_use",
    );
    let answer = support::answer_of(toolgate::block_on(s.respond(&message)).unwrap());
    let blocks: Vec<(String, bool, String)> = answer
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::ToolResult(r) => (
                r.tool_use_id.clone(),
                r.is_error,
                r.content_text().into_owned(),
            ),
            other => panic!("only tool_result blocks expected, got {other:?}"),
        })
        .collect();
    assert_eq!(
        blocks,
        [
            (
                "toolu_1".into(),
                true,
                "BLOCKED: messages must not advertise.".into()
            ),
            (
                "toolu_2".into(),
                true,
                // Both problems, so one retry fixes the call.
                "Error: invalid input for tool `send_message` (2 problems):\n- unknown field \
                 `txt`, expected one of `text`\n- missing field `text`\nSend an input that \
                 matches the tool's input_schema."
                    .into()
            ),
            ("toolu_3".into(), false, "sent: hi".into()),
        ]
    );
    assert_eq!(counters.sends.load(Ordering::SeqCst), 1);
    let summary = s.end();
    assert_eq!(summary.calls, 3);
    assert_eq!(
        summary.outcomes.into_iter().collect::<Vec<_>>(),
        [
            (Outcome::Ok, 1),
            (Outcome::Blocked, 1),
            (Outcome::InvalidInput, 1)
        ]
    );
    assert_eq!(
        summary.tools.into_iter().collect::<Vec<_>>(),
        [("send_message".to_owned(), 3)]
    );
}

mod observers {
    //! An observer that panics, one that fails, a Stop hook that fails and one that counts.
    use super::Counters;
    use toolgate::{
        HookContext, State,
        audit::{CallRecord, SessionSummary},
        post_hook, stop_hook, tool,
    };

    /// Echoes its text.
    #[tool]
    pub(crate) fn echo(
        /// The text.
        text: String,
    ) -> String {
        text
    }

    /// Panics on every call.
    #[post_hook]
    pub(crate) fn a_panicking_metrics(record: &CallRecord<'_>, counters: State<Counters>) {
        counters.note(format!("a_panicking_metrics {}", record.call.id));
        panic!("metrics backend exploded on {}", record.call.id);
    }

    /// Fails on every call.
    #[post_hook]
    pub(crate) fn b_failing_alerts(
        record: &CallRecord<'_>,
        counters: State<Counters>,
    ) -> Result<(), String> {
        counters.note(format!("b_failing_alerts {}", record.call.id));
        Err("alert queue full".into())
    }

    /// Counts what it sees, and notes which audit lines exist while it runs (the `AuditLog`
    /// runs after it: the current call has no line yet).
    #[post_hook]
    pub(crate) async fn c_counting(record: &CallRecord<'_>, counters: State<Counters>) {
        let audit = counters.audit_lines("audit_log.jsonl").map(|lines| {
            lines
                .iter()
                .map(|l| l["tool_use_id"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        });
        counters.note(format!(
            "c_counting {} result={} audit={audit:?}",
            record.call.id,
            record.result.is_some()
        ));
        counters
            .observed
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Fails at the end of every session.
    #[stop_hook]
    pub(crate) fn a_failing_summary_mail(
        _ctx: &HookContext,
        _summary: &SessionSummary,
        counters: State<Counters>,
    ) -> Result<(), String> {
        counters.note("a_failing_summary_mail".to_owned());
        Err("SMTP refused".into())
    }

    /// Counts Stop runs and checks the summary it gets; notes how many summary lines exist while
    /// it runs (the `AuditLog`'s comes after).
    #[stop_hook]
    pub(crate) fn b_count_stops(summary: &SessionSummary, counters: State<Counters>) {
        let summaries = counters
            .audit_lines("session_summaries.jsonl")
            .map(|lines| lines.len());
        counters.note(format!(
            "b_count_stops consistent={} summaries={summaries:?}",
            summary.calls == summary.outcomes.values().sum::<u64>()
        ));
        counters
            .stops
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn failing_observers_and_stop_hooks_leave_results_and_summary_intact_and_are_counted() {
    let counters = Arc::new(Counters::default());
    let dir = support::TempDir::new("observers");
    let s = session_with(&counters, "observers", Some(&dir));
    for i in 0..3 {
        let call = ToolUse::new(
            format!("toolu_{i}"),
            "echo",
            json!({"text": format!("hi {i}")}),
        );
        let r = toolgate::block_on(s.call(&call)).unwrap();
        assert_eq!(r, ToolResult::text(format!("toolu_{i}"), format!("hi {i}")));
    }
    assert_eq!(counters.observed.load(Ordering::SeqCst), 3);
    let summary = s.end();
    // 3 calls x 2 failing observers, + 1 failing Stop hook.
    assert_eq!(summary.observer_errors, 7);
    assert_eq!(summary.calls, 3);
    assert_eq!(counters.stops.load(Ordering::SeqCst), 1);
    // The audit log (the last observer and the last Stop hook) still wrote everything.
    let calls = support::json_lines(&dir.join("audit_log.jsonl"));
    assert_eq!(calls.len(), 3);
    let summaries = support::json_lines(&dir.join("session_summaries.jsonl"));
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0]["observer_errors"], 7);
    assert_eq!(summaries[0]["calls"], 3);
    assert_eq!(summaries[0]["outcomes"], json!({"ok": 3}));
    assert_eq!(summaries[0]["tools"], json!({"echo": 3}));
    // Path order, the AuditLog last: each call's line is written after every other observer
    // ran, and the summary line after every other Stop hook.
    assert_eq!(
        *counters.order.lock().unwrap(),
        [
            "a_panicking_metrics toolu_0",
            "b_failing_alerts toolu_0",
            r#"c_counting toolu_0 result=true audit=Some([])"#,
            "a_panicking_metrics toolu_1",
            "b_failing_alerts toolu_1",
            r#"c_counting toolu_1 result=true audit=Some(["toolu_0"])"#,
            "a_panicking_metrics toolu_2",
            "b_failing_alerts toolu_2",
            r#"c_counting toolu_2 result=true audit=Some(["toolu_0", "toolu_1"])"#,
            "a_failing_summary_mail",
            "b_count_stops consistent=true summaries=Some(0)",
        ]
    );
}

#[test]
fn stop_runs_exactly_once_for_end_for_drop_and_for_end_then_drop() {
    let counters = Arc::new(Counters::default());
    let dir = support::TempDir::new("stop-once");
    let stops = || counters.stops.load(Ordering::SeqCst);

    let s = session_with(&counters, "observers", Some(&dir));
    let first = s.end();
    assert_eq!(stops(), 1);
    assert_eq!(s.end(), first, "a second end returns the same summary");
    assert_eq!(stops(), 1);
    drop(s);
    assert_eq!(stops(), 1, "end then drop: once");

    let s = session_with(&counters, "observers", Some(&dir));
    drop(s);
    assert_eq!(stops(), 2, "drop alone: once");

    let summaries = support::json_lines(&dir.join("session_summaries.jsonl"));
    assert_eq!(summaries.len(), 2);
}

mod asynchronous {
    //! Async tools and hooks, driven without a runtime.
    use toolgate::{Decision, HookContext, ToolUse, pre_hook, tool};

    /// Looks up an account asynchronously.
    #[tool]
    pub(crate) async fn lookup(
        /// The account.
        account: String,
        ctx: &HookContext,
    ) -> Result<String, std::fmt::Error> {
        let user = ctx.user_id().to_owned();
        std::future::ready(()).await;
        Ok(format!("{account} seen by {user}"))
    }

    /// Denies closed accounts after an async check.
    #[pre_hook(order = 1, tools = [lookup])]
    pub(crate) async fn closed_accounts(call: &ToolUse) -> Decision {
        std::future::ready(()).await;
        if call.input["account"] == "closed" {
            Decision::deny("the account is closed.")
        } else {
            Decision::Allow
        }
    }
}

#[test]
fn async_tools_and_hooks_run_in_the_same_pipeline() {
    let counters = Arc::new(Counters::default());
    let s = session_with(&counters, "asynchronous", None);
    let r = toolgate::block_on(s.call(&ToolUse::new("t1", "lookup", json!({"account": "a1"}))))
        .unwrap();
    assert_eq!(r, ToolResult::text("t1", "a1 seen by u_001"));
    let r = toolgate::block_on(s.call(&ToolUse::new("t2", "lookup", json!({"account": "closed"}))))
        .unwrap();
    assert_eq!(
        r,
        ToolResult::error("t2", "BLOCKED: the account is closed.")
    );
}

#[test]
fn input_normalization_accepts_empty_and_stringified_objects() {
    let counters = Arc::new(Counters::default());
    let s = session_with(&counters, "observers", None);
    let invalid = |why: &str| {
        ToolResult::error(
            "t",
            format!(
                "Error: invalid input for tool `echo`{why}. Send an input that matches the \
                 tool's input_schema."
            ),
        )
    };
    // A JSON object, encoded once as a string and then again: parsed once only.
    let double_encoded = json!(serde_json::to_string(&json!("{\"text\": \"twice\"}")).unwrap());
    assert_eq!(double_encoded, json!("\"{\\\"text\\\": \\\"twice\\\"}\""));
    let cases: [(Value, ToolResult); 6] = [
        (
            json!("{\"text\": \"from a string\"}"),
            ToolResult::text("t", "from a string"),
        ),
        (json!(null), invalid(": missing field `text`")),
        (json!(""), invalid(": missing field `text`")),
        (
            json!([1, 2]),
            invalid(": the input must be a JSON object, found a JSON array"),
        ),
        (
            double_encoded,
            invalid(": the input must be a JSON object, but it is a string holding a JSON string"),
        ),
        (
            json!("[1, 2]"),
            invalid(": the input must be a JSON object, but it is a string holding a JSON array"),
        ),
    ];
    for (i, (input, mut expected)) in cases.into_iter().enumerate() {
        expected.tool_use_id = format!("t{i}");
        let call = ToolUse::new(format!("t{i}"), "echo", input.clone());
        let r = toolgate::block_on(s.call(&call)).unwrap();
        assert_eq!(r, expected, "{input}");
    }
}

mod no_arguments {
    //! Tools that take nothing from the model.
    use toolgate::{HookContext, State, tool};

    use super::Counters;

    /// Tells the signed-in user's id.
    #[tool]
    pub(crate) fn whoami(ctx: &HookContext) -> String {
        ctx.user_id().to_owned()
    }

    /// Counts the messages sent so far.
    #[tool]
    pub(crate) fn sent_so_far(counters: State<Counters>) -> usize {
        counters.sends.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Pings.
    #[tool]
    pub(crate) fn ping() {}
}

#[test]
fn tools_without_model_arguments_build_and_run() {
    let counters = Arc::new(Counters::default());
    let d = Dispatcher::builder()
        .registered_under(format!("{}::no_arguments", module_path!()))
        .state_arc(counters.clone())
        .build()
        .unwrap();
    let empty = json!({"type": "object", "properties": {}, "additionalProperties": false});
    for def in d.tool_definitions() {
        assert_eq!(def["input_schema"], empty, "{}", def["name"]);
    }
    let s = d.session(HookContext::builder("u_001", "sess_noargs").build());
    let n = std::cell::Cell::new(0);
    let run = |name: &str, input: Value| {
        n.set(n.get() + 1);
        toolgate::block_on(s.call(&ToolUse::new(format!("t{}", n.get()), name, input))).unwrap()
    };
    assert_eq!(run("whoami", json!({})), ToolResult::text("t1", "u_001"));
    assert_eq!(run("whoami", json!(null)), ToolResult::text("t2", "u_001"));
    assert_eq!(run("sent_so_far", json!("")), ToolResult::text("t3", "0"));
    assert_eq!(run("ping", json!({})), ToolResult::text("t4", ""));
    assert_eq!(
        run("whoami", json!({"user_id": "u_999"})).content_text(),
        "Error: invalid input for tool `whoami`: unknown field `user_id`; no fields are expected \
         here. Send an input that matches the tool's input_schema."
    );
    // Every target expresses a tool without model arguments: its exact definitions.
    let tools = [
        ("ping", "Pings."),
        ("sent_so_far", "Counts the messages sent so far."),
        ("whoami", "Tells the signed-in user's id."),
    ];
    let strict_empty = json!({
        "type": "object", "properties": {}, "additionalProperties": false, "required": []
    });
    for provider in toolgate::provider::Provider::ALL {
        let expected: Vec<Value> = tools
            .iter()
            .map(|&(name, description)| match provider {
                toolgate::provider::Provider::Anthropic => {
                    json!({"name": name, "description": description, "input_schema": empty})
                }
                toolgate::provider::Provider::AnthropicStrict => json!({
                    "name": name, "description": description, "input_schema": empty,
                    "strict": true
                }),
                toolgate::provider::Provider::OpenAi => json!({"type": "function", "function": {
                    "name": name, "description": description, "parameters": strict_empty,
                    "strict": true
                }}),
                toolgate::provider::Provider::OpenAiResponses => json!({
                    "type": "function", "name": name, "description": description,
                    "parameters": strict_empty, "strict": true
                }),
                // Gemini: a function without parameters omits `parameters`.
                toolgate::provider::Provider::Gemini => {
                    json!({"name": name, "description": description})
                }
                toolgate::provider::Provider::Mcp => {
                    json!({"name": name, "description": description, "inputSchema": empty})
                }
                other => panic!("no expectation for {other}"),
            })
            .collect();
        assert_eq!(
            d.tool_definitions_for(provider).unwrap(),
            expected,
            "{provider}"
        );
    }
}

mod error_types {
    //! A tool's error may be any `std::error::Error` (internal unless opted in), a `ToolError`,
    //! a `String` (shown), or anything `Display` (`anyhow::Error`, internal), also behind an
    //! alias whose name ends in `Result`. Every path is pinned in `errors.rs`.
    use toolgate::{ToolError, tool};

    pub(crate) type ToolResult<T> = Result<T, String>;

    /// Fails with a `String`.
    #[tool]
    pub(crate) fn string_error(
        /// Whether to fail.
        fail: bool,
    ) -> Result<u32, String> {
        if fail {
            Err("the ledger is closed today".into())
        } else {
            Ok(7)
        }
    }

    /// Fails through an alias.
    #[tool]
    pub(crate) fn aliased(
        /// Whether to fail.
        fail: bool,
    ) -> ToolResult<&'static str> {
        if fail {
            Err("aliased failure".into())
        } else {
            Ok("fine")
        }
    }

    /// Fails with an io::Error (internal: its Display goes to `detail`).
    #[tool]
    pub(crate) fn io_error(
        /// Whether to fail.
        fail: bool,
    ) -> std::io::Result<u32> {
        if fail {
            Err(std::io::Error::other("disk quota exceeded"))
        } else {
            Ok(1)
        }
    }

    /// An error with a source: a pool that could not connect.
    #[derive(Debug)]
    pub(crate) struct PoolExhausted(pub(crate) std::io::Error);

    impl std::fmt::Display for PoolExhausted {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("no connection left in the pool")
        }
    }

    impl std::error::Error for PoolExhausted {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    /// Fails with an internal ToolError whose error has a source.
    #[tool]
    pub(crate) fn internal(
        /// Whether to fail.
        fail: bool,
    ) -> Result<u32, ToolError> {
        if fail {
            Err(ToolError::internal(PoolExhausted(std::io::Error::other(
                "db-7 refused the connection",
            ))))
        } else {
            Ok(2)
        }
    }
}

#[test]
fn every_error_type_becomes_an_is_error_result() {
    let counters = Arc::new(Counters::default());
    let dir = support::TempDir::new("error-types");
    let s = session_with(&counters, "error_types", Some(&dir));
    let n = std::cell::Cell::new(0);
    let run = |name: &str, fail: bool| {
        n.set(n.get() + 1);
        let call = ToolUse::new(format!("t{}", n.get()), name, json!({"fail": fail}));
        toolgate::block_on(s.call(&call)).unwrap()
    };
    assert_eq!(run("string_error", false), ToolResult::text("t1", "7"));
    assert_eq!(
        run("string_error", true),
        ToolResult::error("t2", "the ledger is closed today")
    );
    assert_eq!(run("aliased", false), ToolResult::text("t3", "fine"));
    assert_eq!(
        run("aliased", true),
        ToolResult::error("t4", "aliased failure")
    );
    assert_eq!(
        run("io_error", true),
        ToolResult::error("t5", toolgate::content::INTERNAL_ERROR_MESSAGE)
    );
    assert_eq!(
        run("internal", true),
        ToolResult::error("t6", toolgate::content::INTERNAL_ERROR_MESSAGE)
    );
    let summary = s.end();
    assert_eq!(summary.outcomes.get(&Outcome::ToolError), Some(&4));
    // Only the internal errors have operator detail: the error and its source chain, joined.
    let lines: Vec<(Value, Value, Value, Option<Value>)> =
        support::json_lines(&dir.join("audit_log.jsonl"))
            .into_iter()
            .map(|l| {
                (
                    l["tool"].clone(),
                    l["outcome"].clone(),
                    l["content"].clone(),
                    l.get("detail").cloned(),
                )
            })
            .collect();
    let line = |tool: &str, outcome: &str, content: &str, detail: Option<&str>| {
        (
            json!(tool),
            json!(outcome),
            json!(content),
            detail.map(|d| json!(d)),
        )
    };
    assert_eq!(
        lines,
        [
            line("string_error", "ok", "7", None),
            line(
                "string_error",
                "tool_error",
                "the ledger is closed today",
                None
            ),
            line("aliased", "ok", "fine", None),
            line("aliased", "tool_error", "aliased failure", None),
            line(
                "io_error",
                "tool_error",
                toolgate::content::INTERNAL_ERROR_MESSAGE,
                Some("disk quota exceeded"),
            ),
            line(
                "internal",
                "tool_error",
                toolgate::content::INTERNAL_ERROR_MESSAGE,
                Some("no connection left in the pool: db-7 refused the connection"),
            ),
        ]
    );
}
