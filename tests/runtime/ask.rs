//! `Decision::Ask`: the chain goes on after an ask (a later deny wins, several asks give several
//! reasons, the asks of the final pass count), `call` without an approver blocks (fail closed), an
//! approver answers inline (approve, deny, edit; its deadline; its panic), `pre_tool_use` answers
//! `Ask`, and every path's audit line.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::support::{self, ExpiredTimer};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    Decision, Dispatcher, HookContext, ToolResult, ToolUse,
    approval::{Approval, ApprovalRequest, Approver},
    audit::{AuditLog, AuditRecord, AuditSink},
    dispatch::{BoxFuture, ChainVerdict, Clock, DispatcherBuilder, HookError, PreHookDef, ToolDef},
};

/// Arguments of the test tool.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct Refund {
    /// The order.
    order_id: String,
    /// Cents.
    amount_cents: u64,
}

/// Keeps every audit record, as JSON, `duration_us` set to 0 and without its `hooks` (the
/// hook runs, `ask` among them, are pinned in `hook_runs.rs`).
#[derive(Clone, Default)]
pub(crate) struct Lines(Arc<Mutex<Vec<Value>>>);

impl AuditSink for Lines {
    fn record(&self, record: &AuditRecord) -> Result<(), HookError> {
        let mut v = serde_json::to_value(record).unwrap();
        v["duration_us"] = json!(0);
        v.as_object_mut().map(|o| o.remove("hooks"));
        self.0.lock().unwrap().push(v);
        Ok(())
    }
}

impl Lines {
    pub(crate) fn take(&self) -> Vec<Value> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// 2026-11-24T10:15:00Z.
pub(crate) fn at_start() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_515_300)
}

pub(crate) fn context(clock: SystemTime) -> HookContext {
    HookContext::builder("u_001", "sess_ask")
        .clock(Clock::fixed(clock))
        .build()
}

/// Refunds above 20 000 cents need a person.
pub(crate) fn large_refund() -> PreHookDef {
    PreHookDef::sync("app::large_refund", 10, |_env, call: &ToolUse| {
        Ok(match call.input["amount_cents"].as_u64() {
            Some(n) if n > 20_000 => {
                Decision::ask("refunds above 20000 cents need a person's approval")
            }
            _ => Decision::Allow,
        })
    })
}

/// Refunds of order `o_9` are refused.
fn frozen_order() -> PreHookDef {
    PreHookDef::sync("app::frozen_order", 20, |_env, call: &ToolUse| {
        Ok(match call.input["order_id"].as_str() {
            Some("o_9") => Decision::deny("order o_9 is frozen."),
            _ => Decision::Allow,
        })
    })
}

/// Every refund of order `o_7` is asked about as well.
fn watched_order() -> PreHookDef {
    PreHookDef::sync("app::watched_order", 30, |_env, call: &ToolUse| {
        Ok(match call.input["order_id"].as_str() {
            Some("o_7") => Decision::ask("order o_7 is on the fraud watch list"),
            _ => Decision::Allow,
        })
    })
}

/// A dispatcher with the refund tool (counting its runs), `hooks`, the collecting audit sink,
/// and what `more` adds.
pub(crate) fn dispatcher(
    runs: &Arc<AtomicUsize>,
    lines: &Lines,
    hooks: Vec<PreHookDef>,
    more: impl FnOnce(DispatcherBuilder) -> DispatcherBuilder,
) -> Dispatcher {
    let ran = Arc::clone(runs);
    let mut b = Dispatcher::builder()
        .tool(ToolDef::sync(
            "refund",
            "Refunds an order.",
            move |_env, a: Refund| {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok(format!("refunded {} on {}", a.amount_cents, a.order_id))
            },
        ))
        .audit_log(AuditLog::builder().sink(lines.clone()).build().unwrap());
    for h in hooks {
        b = b.pre_hook(h);
    }
    more(b).build().unwrap()
}

fn call(d: &Dispatcher, input: Value) -> ToolResult {
    let session = d.session(context(at_start()));
    let result = toolgate::block_on(session.call(&ToolUse::new("toolu_1", "refund", input)));
    session.end();
    result.unwrap()
}

/// The audit line every test here starts from: `toolu_1`, `refund`, `input`, with `rest`.
fn line(input: Value, rest: Value) -> Value {
    let mut l = json!({
        "ts": "2026-11-24T10:15:00Z", "session_id": "sess_ask", "user_id": "u_001",
        "tool_use_id": "toolu_1", "tool": "refund", "input": input, "duration_us": 0,
    });
    for (k, v) in rest.as_object().unwrap() {
        l[k] = v.clone();
    }
    l
}

const LARGE_ASK: &str = "refunds above 20000 cents need a person's approval";

#[test]
fn call_without_an_approver_blocks_a_call_that_needs_approval() {
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let d = dispatcher(&runs, &lines, vec![large_refund()], |b| b);
    let input = json!({"order_id": "o_1", "amount_cents": 25000});
    let text = "BLOCKED: this call needs a person's approval, and none can be given here \
                (refunds above 20000 cents need a person's approval). Tell the user it was not \
                done and that a person must approve it.";
    assert_eq!(call(&d, input.clone()), ToolResult::error("toolu_1", text));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        lines.take(),
        vec![line(
            input,
            json!({
                "outcome": "blocked", "is_error": true, "content": text,
                "blocked_by": "app::large_refund",
                "detail": "the call needs a person's approval (asked by `app::large_refund`: \
                           refunds above 20000 cents need a person's approval) and this \
                           dispatcher has no approver; only Session::respond can pause for one",
                "asked_by": [{"hook": "app::large_refund", "reason": LARGE_ASK}],
            })
        )]
    );
    // Below the threshold nobody asks: the tool runs.
    assert_eq!(
        call(&d, json!({"order_id": "o_1", "amount_cents": 900})),
        ToolResult::text("toolu_1", "refunded 900 on o_1")
    );
}

#[test]
fn a_later_deny_wins_over_an_ask() {
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let asked = Arc::new(AtomicUsize::new(0));
    let d = dispatcher(&runs, &lines, vec![large_refund(), frozen_order()], |b| {
        b.approver(Counting(Arc::clone(&asked), Approval::approve("lead")))
    });
    let input = json!({"order_id": "o_9", "amount_cents": 25000});
    assert_eq!(
        call(&d, input.clone()),
        ToolResult::error("toolu_1", "BLOCKED: order o_9 is frozen.")
    );
    // The approver is never asked about a call a hook denies.
    assert_eq!(
        (runs.load(Ordering::SeqCst), asked.load(Ordering::SeqCst)),
        (0, 0)
    );
    assert_eq!(
        lines.take(),
        vec![line(
            input,
            json!({
                "outcome": "blocked", "is_error": true, "content": "BLOCKED: order o_9 is frozen.",
                "blocked_by": "app::frozen_order",
                "asked_by": [{"hook": "app::large_refund", "reason": LARGE_ASK}],
            })
        )]
    );
}

#[test]
fn several_asking_hooks_give_several_reasons() {
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let d = dispatcher(&runs, &lines, vec![large_refund(), watched_order()], |b| {
        b.approver(Recording(
            Arc::clone(&seen),
            Approval::approve("lead@example.com"),
        ))
    });
    let input = json!({"order_id": "o_7", "amount_cents": 25000});
    assert_eq!(
        call(&d, input.clone()),
        ToolResult::text("toolu_1", "refunded 25000 on o_7")
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec![json!({
            "tool_use_id": "toolu_1", "tool": "refund", "input": input,
            "asked": [
                {"hook": "app::large_refund", "reason": LARGE_ASK},
                {"hook": "app::watched_order", "reason": "order o_7 is on the fraud watch list"},
            ],
            "user_id": "u_001",
        })]
    );
    assert_eq!(
        lines.take(),
        vec![line(
            input,
            json!({
                "outcome": "ok", "is_error": false, "content": "refunded 25000 on o_7",
                "asked_by": [
                    {"hook": "app::large_refund", "reason": LARGE_ASK},
                    {"hook": "app::watched_order", "reason": "order o_7 is on the fraud watch list"},
                ],
                "approved_by": "lead@example.com",
            })
        )]
    );
}

/// Caps refunds at 20 000 cents: after its rewrite the other hooks decide again and nobody asks.
fn cap_at_20000() -> PreHookDef {
    PreHookDef::sync("app::cap", 20, |_env, call: &ToolUse| {
        Ok(match call.input["amount_cents"].as_u64() {
            Some(n) if n > 20_000 => {
                let mut input = call.input.clone();
                input["amount_cents"] = json!(20_000);
                Decision::rewrite(input)
            }
            _ => Decision::Allow,
        })
    })
}

#[test]
fn only_the_asks_of_the_final_pass_count() {
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let d = dispatcher(&runs, &lines, vec![large_refund(), cap_at_20000()], |b| b);
    let input = json!({"order_id": "o_1", "amount_cents": 25000});
    // Pass 1: `large_refund` asks, `cap` rewrites. Pass 2 over 20000: nobody asks.
    assert_eq!(
        call(&d, input.clone()),
        ToolResult::text("toolu_1", "refunded 20000 on o_1")
    );
    assert_eq!(
        lines.take(),
        vec![line(
            input,
            json!({
                "outcome": "ok", "is_error": false, "content": "refunded 20000 on o_1",
                "rewritten_by": ["app::cap"],
                "effective_input": {"order_id": "o_1", "amount_cents": 20000},
            })
        )]
    );
    // The chain asked on its own says the same.
    let ctx = context(at_start());
    let decided = toolgate::block_on(d.pre_tool_use(
        &ctx,
        &ToolUse::new(
            "toolu_1",
            "refund",
            json!({"order_id": "o_1", "amount_cents": 25000}),
        ),
    ));
    assert_eq!(
        decided,
        ChainVerdict::Allow {
            input: json!({"order_id": "o_1", "amount_cents": 20000}),
            rewritten_by: vec!["app::cap".into()],
        }
    );
}

#[test]
fn pre_tool_use_answers_ask_with_every_reason_and_asks_no_approver() {
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let asked = Arc::new(AtomicUsize::new(0));
    let d = dispatcher(&runs, &lines, vec![large_refund(), watched_order()], |b| {
        b.approver(Counting(Arc::clone(&asked), Approval::approve("lead")))
    });
    let ctx = context(at_start());
    let input = json!({"order_id": "o_7", "amount_cents": 25000});
    let decided =
        toolgate::block_on(d.pre_tool_use(&ctx, &ToolUse::new("toolu_1", "refund", input.clone())));
    assert_eq!(
        decided,
        ChainVerdict::Ask {
            input,
            rewritten_by: vec![],
            asked_by: vec![
                toolgate::approval::Asked {
                    hook: "app::large_refund".into(),
                    reason: LARGE_ASK.into()
                },
                toolgate::approval::Asked {
                    hook: "app::watched_order".into(),
                    reason: "order o_7 is on the fraud watch list".into()
                },
            ],
        }
    );
    assert!(!decided.is_allowed());
    assert_eq!(decided.outcome(), None);
    assert_eq!(
        (runs.load(Ordering::SeqCst), asked.load(Ordering::SeqCst)),
        (0, 0)
    );
    assert_eq!(lines.take(), Vec::<Value>::new());
}

#[test]
fn an_approver_that_declines_blocks_the_call_with_its_reason() {
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let d = dispatcher(&runs, &lines, vec![large_refund()], |b| {
        b.approver(Counting(
            Arc::default(),
            Approval::deny("lead@example.com", "the customer already got a voucher."),
        ))
    });
    let input = json!({"order_id": "o_1", "amount_cents": 25000});
    let text = "BLOCKED: a person declined this call: the customer already got a voucher.";
    assert_eq!(call(&d, input.clone()), ToolResult::error("toolu_1", text));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        lines.take(),
        vec![line(
            input,
            json!({
                "outcome": "blocked", "is_error": true, "content": text,
                "detail": "a person declined the call (asked by `app::large_refund`: refunds \
                           above 20000 cents need a person's approval)",
                "asked_by": [{"hook": "app::large_refund", "reason": LARGE_ASK}],
                "denied_by": "lead@example.com",
            })
        )]
    );
}

#[test]
fn an_edited_input_goes_through_the_chain_again() {
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let asked = Arc::new(AtomicUsize::new(0));
    // The person lowers the amount below the threshold: the chain runs again and allows it.
    let edit = Approval::edit("lead", json!({"order_id": "o_1", "amount_cents": 15000}));
    let d = dispatcher(&runs, &lines, vec![large_refund(), frozen_order()], |b| {
        b.approver(Counting(Arc::clone(&asked), edit))
    });
    let input = json!({"order_id": "o_1", "amount_cents": 25000});
    assert_eq!(
        call(&d, input.clone()),
        ToolResult::text("toolu_1", "refunded 15000 on o_1")
    );
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert_eq!(
        lines.take(),
        vec![line(
            input.clone(),
            json!({
                "outcome": "ok", "is_error": false, "content": "refunded 15000 on o_1",
                "rewritten_by": ["<approver>"],
                "effective_input": {"order_id": "o_1", "amount_cents": 15000},
                "approved_by": "lead",
            })
        )]
    );

    // An edit that still asks is covered by the approval of that input (asked once); an edit a
    // later hook denies is blocked: a deny still wins.
    let asked = Arc::new(AtomicUsize::new(0));
    let edit = Approval::edit("lead", json!({"order_id": "o_1", "amount_cents": 22000}));
    let d = dispatcher(&runs, &lines, vec![large_refund()], |b| {
        b.approver(Counting(Arc::clone(&asked), edit))
    });
    assert_eq!(
        call(&d, input.clone()),
        ToolResult::text("toolu_1", "refunded 22000 on o_1")
    );
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    lines.take();
    let edit = Approval::edit("lead", json!({"order_id": "o_9", "amount_cents": 100}));
    let d = dispatcher(&runs, &lines, vec![large_refund(), frozen_order()], |b| {
        b.approver(Counting(Arc::default(), edit))
    });
    assert_eq!(
        call(&d, input.clone()),
        ToolResult::error("toolu_1", "BLOCKED: order o_9 is frozen.")
    );
    assert_eq!(
        lines.take(),
        vec![line(
            input.clone(),
            json!({
                "outcome": "blocked", "is_error": true, "content": "BLOCKED: order o_9 is frozen.",
                "blocked_by": "app::frozen_order",
                "rewritten_by": ["<approver>"],
                "effective_input": {"order_id": "o_9", "amount_cents": 100},
                "approved_by": "lead",
            })
        )]
    );
    // An edit into an invalid input is `invalid_input`, the approver at fault.
    let edit = Approval::edit("lead", json!({"order_id": "o_1"}));
    let d = dispatcher(&runs, &lines, vec![large_refund()], |b| {
        b.approver(Counting(Arc::default(), edit))
    });
    let result = call(&d, input);
    assert!(result.is_error);
    let l = lines.take();
    assert_eq!(l[0]["outcome"], "invalid_input");
    assert_eq!(
        l[0]["detail"],
        "PreToolUse hook `<approver>` rewrote the input into an invalid one: missing field \
         `amount_cents`"
    );
}

/// Adds a 100-cent handling fee to every refund it sees (order 5, before `large_refund`): it
/// never allows what it sees, so it applies once only because it is not asked about its own
/// input. Logs the amounts it saw.
pub(crate) fn handling_fee(seen: &Arc<Mutex<Vec<u64>>>) -> PreHookDef {
    let log = Arc::clone(seen);
    PreHookDef::sync("app::handling_fee", 5, move |_env, call: &ToolUse| {
        let amount = call.input["amount_cents"].as_u64().unwrap_or_default();
        log.lock().unwrap().push(amount);
        let mut input = call.input.clone();
        input["amount_cents"] = json!(amount + 100);
        Ok(Decision::rewrite(input))
    })
}

#[test]
fn an_edit_after_a_rewriter_is_decided_on_by_that_rewriter() {
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let asked: Arc<Mutex<Vec<Value>>> = Arc::default();
    let fees: Arc<Mutex<Vec<u64>>> = Arc::default();
    // The fee makes 25000 into 25100, which asks; the person edits the amount to 15000. The
    // approver, not the fee, produced that input, so the fee decides on it too: 15100, which
    // nobody asks about.
    let edit = Approval::edit("lead", json!({"order_id": "o_1", "amount_cents": 15000}));
    let d = dispatcher(
        &runs,
        &lines,
        vec![handling_fee(&fees), large_refund()],
        |b| b.approver(Recording(Arc::clone(&asked), edit)),
    );
    let input = json!({"order_id": "o_1", "amount_cents": 25000});
    assert_eq!(
        call(&d, input.clone()),
        ToolResult::text("toolu_1", "refunded 15100 on o_1")
    );
    assert_eq!(*fees.lock().unwrap(), [25000, 15000]);
    // The person was asked once, about the input with the fee.
    assert_eq!(
        *asked.lock().unwrap(),
        [json!({"tool_use_id": "toolu_1", "tool": "refund",
                "input": {"order_id": "o_1", "amount_cents": 25100},
                "asked": [{"hook": "app::large_refund", "reason": LARGE_ASK}],
                "user_id": "u_001"})]
    );
    assert_eq!(
        lines.take(),
        vec![line(
            input,
            json!({
                "outcome": "ok", "is_error": false, "content": "refunded 15100 on o_1",
                "rewritten_by": ["app::handling_fee", "<approver>", "app::handling_fee"],
                "effective_input": {"order_id": "o_1", "amount_cents": 15100},
                "approved_by": "lead",
            })
        )]
    );
}

#[test]
fn no_answer_in_time_is_a_denial() {
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let d = dispatcher(&runs, &lines, vec![large_refund()], |b| {
        b.approver(Hanging)
            .approval_timeout(Duration::from_secs(120))
            .timer(ExpiredTimer)
    });
    let input = json!({"order_id": "o_1", "amount_cents": 25000});
    let text = "BLOCKED: this call needs a person's approval and none came within 120 s. Tell \
                the user it was not done; they can ask again later.";
    assert_eq!(call(&d, input.clone()), ToolResult::error("toolu_1", text));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        lines.take(),
        vec![line(
            input,
            json!({
                "outcome": "blocked", "is_error": true, "content": text,
                "blocked_by": "app::large_refund",
                "detail": "the approver gave no answer within its deadline of 120000 ms (asked \
                           by `app::large_refund`: refunds above 20000 cents need a person's \
                           approval)",
                "asked_by": [{"hook": "app::large_refund", "reason": LARGE_ASK}],
            })
        )]
    );
    assert_eq!(
        toolgate::dispatch::DispatcherBuilder::DEFAULT_APPROVAL_TIMEOUT,
        Duration::from_secs(300)
    );
}

#[test]
fn an_approver_that_panics_is_a_denial() {
    support::quiet_injected_panics();
    let (runs, lines) = (Arc::new(AtomicUsize::new(0)), Lines::default());
    let d = dispatcher(&runs, &lines, vec![large_refund()], |b| {
        b.approver(Panicking)
    });
    let input = json!({"order_id": "o_1", "amount_cents": 25000});
    let text = "BLOCKED: this call needs a person's approval and the approval could not be \
                asked for. Do not retry it; tell the user this action is unavailable right now.";
    assert_eq!(call(&d, input), ToolResult::error("toolu_1", text));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let l = lines.take();
    assert_eq!(l[0]["outcome"], "blocked");
    assert_eq!(l[0]["blocked_by"], "app::large_refund");
    assert_eq!(
        l[0]["detail"],
        "the approver failed: injected fault: the approver broke (asked by `app::large_refund`: refunds above 20000 \
         cents need a person's approval)"
    );
}

// ------------------------------------------------------------------ approvers

/// Answers `.1` and counts the requests.
struct Counting(Arc<AtomicUsize>, Approval);

impl Approver for Counting {
    fn approve<'a>(&'a self, _request: ApprovalRequest<'a>) -> BoxFuture<'a, Approval> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let answer = self.1.clone();
        Box::pin(async move { answer })
    }
}

/// Answers `.1` and records what it was asked, as JSON.
struct Recording(Arc<Mutex<Vec<Value>>>, Approval);

impl Approver for Recording {
    fn approve<'a>(&'a self, r: ApprovalRequest<'a>) -> BoxFuture<'a, Approval> {
        self.0.lock().unwrap().push(json!({
            "tool_use_id": r.call.id, "tool": r.call.name, "input": r.input,
            "asked": r.asked, "user_id": r.context.user_id(),
        }));
        let answer = self.1.clone();
        Box::pin(async move { answer })
    }
}

/// Never answers.
struct Hanging;

impl Approver for Hanging {
    fn approve<'a>(&'a self, _request: ApprovalRequest<'a>) -> BoxFuture<'a, Approval> {
        support::hang()
    }
}

/// Panics while answering.
struct Panicking;

impl Approver for Panicking {
    fn approve<'a>(&'a self, _request: ApprovalRequest<'a>) -> BoxFuture<'a, Approval> {
        Box::pin(async { panic!("{}: the approver broke", support::INJECTED) })
    }
}
