//! `Dispatcher::pre_tool_use`: the PreToolUse chain asked on its own. The same rules as a call
//! (normalization, look-up, validation, the rewrite rule, deadlines), but the tool and the
//! observers never run and nothing is counted.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::support::{self, HALT_TEXT};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    Decision, Dispatcher, HookContext, ToolUse,
    audit::Outcome,
    dispatch::{ChainVerdict, HookError, PostHookDef, PreHookDef, ToolDef},
};

/// Arguments of the test tool.
#[derive(Deserialize, JsonSchema)]
struct Refund {
    /// The order.
    order_id: String,
    /// Cents.
    amount_cents: u64,
}

/// Counts tool runs and observer calls, so a test can say neither happened.
#[derive(Default)]
struct Counts {
    tool: AtomicUsize,
    observed: AtomicUsize,
}

fn dispatcher(counts: &Arc<Counts>, hooks: Vec<PreHookDef>) -> Dispatcher {
    let ran = Arc::clone(counts);
    let seen = Arc::clone(counts);
    let mut b = Dispatcher::builder()
        .tool(ToolDef::sync(
            "refund",
            "Refunds an order.",
            move |_env, a: Refund| {
                ran.tool.fetch_add(1, Ordering::SeqCst);
                Ok(format!("refunded {} on {}", a.amount_cents, a.order_id))
            },
        ))
        .post_hook(PostHookDef::sync("app::observer", move |_env, _record| {
            seen.observed.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }));
    for h in hooks {
        b = b.pre_hook(h);
    }
    b.build().unwrap()
}

fn ask(d: &Dispatcher, input: Value) -> ChainVerdict {
    let ctx = HookContext::builder("u_1", "sess_pre")
        .tier("premium")
        .build();
    toolgate::block_on(d.pre_tool_use(&ctx, &ToolUse::new("toolu_1", "refund", input)))
}

fn own_orders_only() -> PreHookDef {
    PreHookDef::sync("app::own_orders_only", 10, |env, call: &ToolUse| {
        Ok(match call.input["order_id"].as_str() {
            Some("o_1") if env.context().user_id() == "u_1" => Decision::Allow,
            _ => Decision::deny_instead("that order is not this customer's.", "Check the id."),
        })
    })
}

fn cap_amount() -> PreHookDef {
    PreHookDef::sync("app::cap_amount", 20, |_env, call: &ToolUse| {
        Ok(match call.input["amount_cents"].as_u64() {
            Some(n) if n > 5000 => {
                let mut input = call.input.clone();
                input["amount_cents"] = json!(5000);
                Decision::rewrite(input)
            }
            _ => Decision::Allow,
        })
    })
}

#[test]
fn an_allowed_call_gives_its_effective_input_and_runs_nothing() {
    let counts = Arc::new(Counts::default());
    let d = dispatcher(&counts, vec![own_orders_only(), cap_amount()]);
    assert_eq!(
        ask(&d, json!({"order_id": "o_1", "amount_cents": 900})),
        ChainVerdict::Allow {
            input: json!({"order_id": "o_1", "amount_cents": 900}),
            rewritten_by: vec![],
        }
    );
    // A rewrite is decided on by the other hooks; the effective input and the rewriting hook are
    // reported.
    assert_eq!(
        ask(&d, json!({"order_id": "o_1", "amount_cents": 9000})),
        ChainVerdict::Allow {
            input: json!({"order_id": "o_1", "amount_cents": 5000}),
            rewritten_by: vec!["app::cap_amount".to_owned()],
        }
    );
    // Normalization applies: a JSON string holding the object is read once.
    assert_eq!(
        ask(&d, json!("{\"order_id\": \"o_1\", \"amount_cents\": 1}")),
        ChainVerdict::Allow {
            input: json!({"order_id": "o_1", "amount_cents": 1}),
            rewritten_by: vec![],
        }
    );
    assert_eq!(counts.tool.load(Ordering::SeqCst), 0);
    assert_eq!(counts.observed.load(Ordering::SeqCst), 0);
}

#[test]
fn every_refusal_says_its_outcome_text_hook_and_detail() {
    let counts = Arc::new(Counts::default());
    let failing = PreHookDef::sync("app::ledger_down", 30, |_env, _call: &ToolUse| {
        Err(HookError::new("ledger unreachable: db-7:5432 refused"))
    });
    let d = dispatcher(&counts, vec![own_orders_only(), cap_amount(), failing]);

    assert_eq!(
        ask(&d, json!({"order_id": "o_9", "amount_cents": 900})),
        ChainVerdict::Refuse {
            outcome: Outcome::Blocked,
            text: "BLOCKED: that order is not this customer's. Check the id.".to_owned(),
            blocked_by: Some("app::own_orders_only".to_owned()),
            detail: None,
            rewritten_by: vec![],
        }
    );
    assert_eq!(
        ask(&d, json!({"order_id": "o_1", "amount_cents": 9000})),
        ChainVerdict::Refuse {
            outcome: Outcome::HookFailed,
            text: HALT_TEXT.to_owned(),
            blocked_by: Some("app::ledger_down".to_owned()),
            detail: Some("ledger unreachable: db-7:5432 refused".to_owned()),
            rewritten_by: vec!["app::cap_amount".to_owned()],
        }
    );
    assert_eq!(
        ask(&d, json!({"order_id": "o_1"})),
        ChainVerdict::Refuse {
            outcome: Outcome::InvalidInput,
            text: "Error: invalid input for tool `refund`: missing field `amount_cents`. Send an \
                   input that matches the tool's input_schema."
                .to_owned(),
            blocked_by: None,
            detail: None,
            rewritten_by: vec![],
        }
    );

    let ctx = HookContext::builder("u_1", "sess_pre").build();
    let unknown = toolgate::block_on(d.pre_tool_use(
        &ctx,
        &ToolUse::new("toolu_2", "delete_everything", json!({})),
    ));
    assert_eq!(
        unknown,
        ChainVerdict::Refuse {
            outcome: Outcome::UnknownTool,
            text: "Error: unknown tool 'delete_everything'. Available tools: refund.".to_owned(),
            blocked_by: None,
            detail: None,
            rewritten_by: vec![],
        }
    );
    assert_eq!(counts.tool.load(Ordering::SeqCst), 0);
    assert_eq!(counts.observed.load(Ordering::SeqCst), 0);
}

#[test]
fn async_hooks_are_awaited_and_see_the_context_given() {
    fn by_tier<'a>(
        env: toolgate::dispatch::Env<'a>,
        _call: &'a ToolUse,
    ) -> toolgate::dispatch::BoxFuture<'a, Result<Decision, HookError>> {
        Box::pin(async move {
            support::yield_once().await;
            Ok(match env.context().tier() {
                Some("premium") => Decision::Allow,
                _ => Decision::deny("refunds are for premium customers."),
            })
        })
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let record = PreHookDef::sync("app::record", 5, move |env, _call: &ToolUse| {
        log.lock()
            .unwrap()
            .push(env.context().session_id().to_owned());
        Ok(Decision::Allow)
    });
    let counts = Arc::new(Counts::default());
    let d = dispatcher(
        &counts,
        vec![record, PreHookDef::new_async("app::by_tier", 10, by_tier)],
    );
    let call = ToolUse::new(
        "toolu_1",
        "refund",
        json!({"order_id": "o_1", "amount_cents": 1}),
    );
    let free = HookContext::builder("u_1", "sess_free")
        .tier("free")
        .build();
    assert_eq!(
        toolgate::block_on(d.pre_tool_use(&free, &call)),
        ChainVerdict::Refuse {
            outcome: Outcome::Blocked,
            text: "BLOCKED: refunds are for premium customers.".to_owned(),
            blocked_by: Some("app::by_tier".to_owned()),
            detail: None,
            rewritten_by: vec![],
        }
    );
    assert!(ask(&d, json!({"order_id": "o_1", "amount_cents": 1})).is_allowed());
    assert_eq!(*seen.lock().unwrap(), ["sess_free", "sess_pre"]);
}
