//! Each call's record lists the PreToolUse hooks that ran, in order, with each one's decision and
//! duration: what an observer sees in `CallRecord::hooks` and the audit line in `hooks`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    Decision, Dispatcher, HookContext, ToolUse,
    audit::{HookOutcome, HookRun},
    dispatch::{BoxFuture, Env, HookError, PostHookDef, PreHookDef, ToolDef},
};

use crate::support;

/// Arguments of the test tool.
#[derive(Deserialize, JsonSchema)]
struct Refund {
    /// The order.
    order_id: String,
    /// Cents.
    amount_cents: u64,
}

type Seen = Arc<Mutex<Vec<(String, Vec<(String, HookOutcome)>)>>>;

/// A dispatcher with `hooks` on `refund`, and an observer keeping each record's outcome and
/// hook runs (path, decision: the durations are measured times).
fn dispatcher(hooks: Vec<PreHookDef>, seen: &Seen) -> Dispatcher {
    let log = Arc::clone(seen);
    let mut b = Dispatcher::builder()
        .tool(ToolDef::sync(
            "refund",
            "Refunds an order.",
            |_env, a: Refund| Ok(format!("refunded {} on {}", a.amount_cents, a.order_id)),
        ))
        // Without an audit log the runs are kept only when asked for.
        .record_hook_runs()
        .post_hook(PostHookDef::sync("app::observer", move |_env, record| {
            let runs = record
                .hooks
                .iter()
                .map(|r| (r.hook.to_string(), r.outcome))
                .collect();
            log.lock()
                .unwrap()
                .push((record.outcome.as_str().to_owned(), runs));
            Ok(())
        }));
    for h in hooks {
        b = b.pre_hook(h);
    }
    b.build().unwrap()
}

fn call(d: &Dispatcher, input: Value) {
    let s = d.session(HookContext::builder("u_1", "sess_runs").build());
    let _ = toolgate::block_on(s.call(&ToolUse::new("toolu_1", "refund", input)));
}

fn allow(path: &'static str, order: i64) -> PreHookDef {
    PreHookDef::sync(path, order, |_env, _call| Ok(Decision::Allow))
}

/// Rewrites `amount_cents` above 5000 to 5000; answers a rewrite equal to its input otherwise
/// (which counts as `allow`).
fn cap(order: i64) -> PreHookDef {
    PreHookDef::sync("app::cap", order, |_env, call: &ToolUse| {
        let mut input = call.input.clone();
        if input["amount_cents"].as_u64().is_some_and(|n| n > 5000) {
            input["amount_cents"] = json!(5000);
        }
        Ok(Decision::rewrite(input))
    })
}

fn runs(list: &[(&str, HookOutcome)]) -> Vec<(String, HookOutcome)> {
    list.iter().map(|(p, d)| ((*p).to_owned(), *d)).collect()
}

#[test]
fn an_asking_hook_is_listed_as_ask_and_the_chain_goes_on() {
    use HookOutcome::{Allow, Ask, Deny};
    let seen = Seen::default();
    let ask_big = PreHookDef::sync("app::ask_big", 20, |_env, call: &ToolUse| {
        Ok(match call.input["amount_cents"].as_u64() {
            Some(n) if n > 1000 => Decision::ask("a person checks refunds above 1000 cents"),
            _ => Decision::Allow,
        })
    });
    let deny_o9 = PreHookDef::sync("app::deny_o9", 30, |_env, call: &ToolUse| {
        Ok(if call.input["order_id"] == "o_9" {
            Decision::deny("order o_9 is frozen.")
        } else {
            Decision::Allow
        })
    });
    let d = dispatcher(vec![allow("app::first", 10), ask_big, deny_o9], &seen);
    // An ask, nobody to approve it (`call` has no approver): blocked after the whole chain ran.
    call(&d, json!({"order_id": "o_1", "amount_cents": 2000}));
    // An ask, then a later deny.
    call(&d, json!({"order_id": "o_9", "amount_cents": 2000}));
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (
                "blocked".to_owned(),
                runs(&[
                    ("app::first", Allow),
                    ("app::ask_big", Ask),
                    ("app::deny_o9", Allow)
                ])
            ),
            (
                "blocked".to_owned(),
                runs(&[
                    ("app::first", Allow),
                    ("app::ask_big", Ask),
                    ("app::deny_o9", Deny)
                ])
            ),
        ]
    );
}

#[test]
fn every_run_of_every_hook_is_listed_in_order_with_its_decision() {
    use HookOutcome::{Allow, Deny, Rewrite};
    let seen = Seen::default();
    let deny_big = PreHookDef::sync("app::deny_big", 30, |_env, call: &ToolUse| {
        Ok(match call.input["amount_cents"].as_u64() {
            Some(n) if n > 4000 => Decision::deny("too much."),
            _ => Decision::Allow,
        })
    });
    let d = dispatcher(vec![allow("app::first", 10), cap(20), deny_big], &seen);
    // Under every limit: one pass; `cap`'s rewrite to the same input is an allow.
    call(&d, json!({"order_id": "o_1", "amount_cents": 100}));
    // Above 5000: `cap` rewrites; `first`, before it, decides again on the new input, `cap` is
    // not asked about its own, then `deny_big` denies 5000.
    call(&d, json!({"order_id": "o_1", "amount_cents": 9000}));
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (
                "ok".to_owned(),
                runs(&[
                    ("app::first", Allow),
                    ("app::cap", Allow),
                    ("app::deny_big", Allow)
                ])
            ),
            (
                "blocked".to_owned(),
                runs(&[
                    ("app::first", Allow),
                    ("app::cap", Rewrite),
                    ("app::first", Allow),
                    ("app::deny_big", Deny),
                ])
            ),
        ]
    );
}

fn hung_hook<'a>(_env: Env<'a>, _call: &'a ToolUse) -> BoxFuture<'a, Result<Decision, HookError>> {
    Box::pin(async {
        support::hang::<()>().await;
        Ok(Decision::Allow)
    })
}

#[test]
fn a_failed_hook_a_timed_out_hook_and_an_invalid_rewrite_end_the_list() {
    use HookOutcome::{Allow, Failed, Rewrite, Timeout};
    support::quiet_injected_panics();
    let seen = Seen::default();
    let failing = PreHookDef::sync("app::failing", 20, |_env, _call| {
        Err(HookError::new("the policy store is down"))
    });
    call(
        &dispatcher(vec![allow("app::first", 10), failing], &seen),
        json!({"order_id": "o_1", "amount_cents": 1}),
    );
    let panicking = PreHookDef::sync(
        "app::panicking",
        20,
        |_env, _call| -> Result<Decision, HookError> { panic!("{}: in a hook", support::INJECTED) },
    );
    call(
        &dispatcher(vec![panicking], &seen),
        json!({"order_id": "o_1", "amount_cents": 1}),
    );
    let slow = PreHookDef::new_async("app::slow", 20, hung_hook).timeout(Duration::from_millis(5));
    call(
        &dispatcher(vec![allow("app::first", 10), slow], &seen),
        json!({"order_id": "o_1", "amount_cents": 1}),
    );
    let breaks = PreHookDef::sync("app::breaks_input", 20, |_env, _call| {
        Ok(Decision::rewrite(json!({"order_id": 7, "amount_cents": 1})))
    });
    call(
        &dispatcher(vec![breaks], &seen),
        json!({"order_id": "o_1", "amount_cents": 1}),
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (
                "hook_failed".to_owned(),
                runs(&[("app::first", Allow), ("app::failing", Failed)])
            ),
            (
                "hook_failed".to_owned(),
                runs(&[("app::panicking", Failed)])
            ),
            (
                "hook_timeout".to_owned(),
                runs(&[("app::first", Allow), ("app::slow", Timeout)])
            ),
            (
                "invalid_input".to_owned(),
                runs(&[("app::breaks_input", Rewrite)])
            ),
        ]
    );
}

#[test]
fn without_an_audit_log_or_record_hook_runs_an_observer_sees_no_runs() {
    let seen: Arc<Mutex<Vec<usize>>> = Arc::default();
    let log = Arc::clone(&seen);
    let d = Dispatcher::builder()
        .tool(ToolDef::sync(
            "refund",
            "Refunds an order.",
            |_env, a: Refund| Ok(format!("refunded {}", a.amount_cents)),
        ))
        .pre_hook(allow("app::first", 10))
        .post_hook(PostHookDef::sync("app::observer", move |_env, record| {
            log.lock().unwrap().push(record.hooks.len());
            Ok(())
        }))
        .build()
        .unwrap();
    // Under a subscriber that wants the call's span the runs would be kept for it: none here
    // (another test of this binary may install a global one).
    tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
        call(&d, json!({"order_id": "o_1", "amount_cents": 1}));
    });
    assert_eq!(*seen.lock().unwrap(), [0]);
}

#[test]
fn calls_that_reach_no_hook_list_none() {
    let seen = Seen::default();
    let d = dispatcher(vec![allow("app::first", 10)], &seen);
    // Invalid input: refused before the chain.
    call(&d, json!({"order_id": "o_1"}));
    assert_eq!(
        *seen.lock().unwrap(),
        [("invalid_input".to_owned(), vec![])]
    );
}

#[test]
fn the_audit_line_lists_the_runs_and_reads_back() {
    let dir = support::TempDir::new("hook-runs");
    let log = toolgate::audit::AuditLog::open(&dir).unwrap();
    let d = Dispatcher::builder()
        .tool(ToolDef::sync(
            "refund",
            "Refunds an order.",
            |_env, a: Refund| Ok(format!("refunded {}", a.amount_cents)),
        ))
        .pre_hook(cap(20))
        .audit_log(log)
        .build()
        .unwrap();
    let s = d.session(
        HookContext::builder("u_1", "sess_line")
            .clock(toolgate::dispatch::Clock::fixed(
                toolgate::audit::Rfc3339::parse("2026-11-24T10:15:00Z").unwrap(),
            ))
            .build(),
    );
    let call = ToolUse::new(
        "toolu_1",
        "refund",
        json!({"order_id": "o_1", "amount_cents": 6000}),
    );
    toolgate::block_on(s.call(&call)).unwrap();
    let (lines, _) = support::chained_lines(&dir.join("audit_log.jsonl"), support::ZEROS);
    assert_eq!(
        lines,
        [
            r#"{"ts":"2026-11-24T10:15:00Z","session_id":"sess_line","user_id":"u_1","tool_use_id":"toolu_1","tool":"refund","input":{"order_id":"o_1","amount_cents":6000},"outcome":"ok","is_error":false,"content":"refunded 5000","duration_us":0,"rewritten_by":["app::cap"],"hooks":[{"hook":"app::cap","decision":"rewrite","duration_us":0}],"effective_input":{"order_id":"o_1","amount_cents":5000},"prev":"…"}"#
        ]
    );
    // A reader gets the runs back as `HookRun`s.
    let text = std::fs::read_to_string(dir.join("audit_log.jsonl")).unwrap();
    let record: toolgate::audit::AuditRecord =
        serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let decisions: Vec<(&str, HookOutcome)> = record
        .hooks
        .iter()
        .map(|r: &HookRun<'static>| (r.hook.as_ref(), r.outcome))
        .collect();
    assert_eq!(decisions, [("app::cap", HookOutcome::Rewrite)]);
}
