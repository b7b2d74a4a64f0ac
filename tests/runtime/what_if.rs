//! `Dispatcher::what_if`: today's PreToolUse chain over recorded audit lines. The call's context is
//! rebuilt from its line; every change of decision is reported with the hook responsible; redacted
//! inputs are undecidable; lines with no decision are skipped.

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::{
    Decision, Dispatcher, ToolUse,
    audit::{AuditRecord, Change, Outcome, WhatIf},
    dispatch::{ChainVerdict, PreHookDef, ToolDef},
};

/// Arguments of the test tool.
#[derive(Deserialize, JsonSchema)]
struct Refund {
    /// The order.
    order_id: String,
    /// Cents.
    amount_cents: u64,
}

/// A recorded line of `refund` with `input` and `outcome`, plus `extra` members.
fn line(input: Value, outcome: &str, extra: Value) -> AuditRecord {
    let mut v = json!({
        "ts": "2026-11-26T03:10:00Z", "session_id": "sess_old", "user_id": "u_1",
        "tier": "premium", "tool_use_id": "toolu_1", "tool": "refund", "input": input,
        "outcome": outcome, "is_error": outcome != "ok", "content": "…", "duration_us": 9,
    });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    serde_json::from_value(v).unwrap()
}

/// Today's rules: `app::cap` denies above `cap` cents; `app::round` rewrites odd amounts down
/// to even ones.
fn dispatcher(cap: u64) -> Dispatcher {
    Dispatcher::builder()
        .tool(ToolDef::sync(
            "refund",
            "Refunds an order.",
            |_env, a: Refund| Ok(format!("refunded {} on {}", a.amount_cents, a.order_id)),
        ))
        .pre_hook(PreHookDef::sync(
            "app::round",
            10,
            |_env, call: &ToolUse| {
                Ok(match call.input["amount_cents"].as_u64() {
                    Some(n) if n % 2 == 1 => {
                        let mut input = call.input.clone();
                        input["amount_cents"] = json!(n - 1);
                        Decision::rewrite(input)
                    }
                    _ => Decision::Allow,
                })
            },
        ))
        .pre_hook(PreHookDef::sync(
            "app::cap",
            20,
            move |_env, call: &ToolUse| {
                Ok(match call.input["amount_cents"].as_u64() {
                    Some(n) if n > cap => Decision::deny("too much."),
                    _ => Decision::Allow,
                })
            },
        ))
        .build()
        .unwrap()
}

fn ask(d: &Dispatcher, record: &AuditRecord) -> WhatIf {
    toolgate::block_on(d.what_if(record))
}

#[test]
fn the_same_decision_is_unchanged() {
    let d = dispatcher(5000);
    let ok = line(
        json!({"order_id": "o_1", "amount_cents": 400}),
        "ok",
        json!({}),
    );
    assert_eq!(ask(&d, &ok), WhatIf::Unchanged);
    let rewritten = line(
        json!({"order_id": "o_1", "amount_cents": 401}),
        "ok",
        json!({"rewritten_by": ["app::round"],
               "effective_input": {"order_id": "o_1", "amount_cents": 400}}),
    );
    assert_eq!(ask(&d, &rewritten), WhatIf::Unchanged);
    let blocked = line(
        json!({"order_id": "o_1", "amount_cents": 9000}),
        "blocked",
        json!({"blocked_by": "app::cap"}),
    );
    assert_eq!(ask(&d, &blocked), WhatIf::Unchanged);
}

#[test]
fn each_kind_of_change_is_a_flip_with_the_hook_responsible() {
    let d = dispatcher(3000);
    // Allowed then, blocked by today's lower cap.
    let ok = line(
        json!({"order_id": "o_1", "amount_cents": 4000}),
        "ok",
        json!({}),
    );
    let WhatIf::Flip(flip) = ask(&d, &ok) else {
        panic!("a flip")
    };
    assert_eq!(
        (flip.change, flip.hook.as_deref(), flip.was, flip.now),
        (
            Change::NowBlocked,
            Some("app::cap"),
            Outcome::Ok,
            ChainVerdict::Refuse {
                outcome: Outcome::Blocked,
                text: "BLOCKED: too much.".to_owned(),
                blocked_by: Some("app::cap".to_owned()),
                detail: None,
                rewritten_by: vec![],
            }
        )
    );
    // Blocked then by a rule that no longer blocks it.
    let blocked = line(
        json!({"order_id": "o_1", "amount_cents": 2000}),
        "blocked",
        json!({"blocked_by": "app::old_rule"}),
    );
    let WhatIf::Flip(flip) = ask(&d, &blocked) else {
        panic!("a flip")
    };
    assert_eq!(
        (flip.change, flip.hook.as_deref(), flip.was, flip.now),
        (
            Change::NowAllowed,
            Some("app::old_rule"),
            Outcome::Blocked,
            ChainVerdict::Allow {
                input: json!({"order_id": "o_1", "amount_cents": 2000}),
                rewritten_by: vec![]
            }
        )
    );
    // Allowed both times, but today `app::round` rewrites the odd amount.
    let odd = line(
        json!({"order_id": "o_1", "amount_cents": 2001}),
        "ok",
        json!({}),
    );
    let WhatIf::Flip(flip) = ask(&d, &odd) else {
        panic!("a flip")
    };
    assert_eq!(
        (flip.change, flip.hook.as_deref()),
        (Change::OtherRewrite, Some("app::round"))
    );
    // Blocked both times, by another hook.
    let other = line(
        json!({"order_id": "o_1", "amount_cents": 4000}),
        "blocked",
        json!({"blocked_by": "app::old_rule"}),
    );
    let WhatIf::Flip(flip) = ask(&d, &other) else {
        panic!("a flip")
    };
    assert_eq!(
        (flip.change, flip.hook.as_deref(), flip.was),
        (
            Change::OtherBlockingHook,
            Some("app::cap"),
            Outcome::Blocked
        )
    );
    assert_eq!(Change::OtherBlockingHook.to_string(), "other blocking hook");
}

#[test]
fn a_redacted_input_whose_decision_differs_is_undecidable_not_a_flip() {
    let d = dispatcher(3000);
    // The recorded amount was masked: the hooks see the placeholder, the schema refuses it.
    let masked = line(
        json!({"order_id": "o_1", "amount_cents": "[redacted]"}),
        "ok",
        json!({}),
    );
    let WhatIf::Undecidable { redacted, now } = ask(&d, &masked) else {
        panic!("undecidable")
    };
    assert_eq!(redacted, ["/amount_cents"]);
    assert_eq!(now.outcome(), Some(Outcome::InvalidInput));
    // A redacted field no rule reads, and the same decision: unchanged.
    let card = line(
        json!({"order_id": "[redacted]", "amount_cents": 100}),
        "ok",
        json!({}),
    );
    assert_eq!(ask(&d, &card), WhatIf::Unchanged);
}

#[test]
fn lines_without_a_decision_are_skipped() {
    let d = dispatcher(3000);
    let input = json!({"order_id": "o_1", "amount_cents": 4000});
    for (record, why) in [
        (
            line(input.clone(), "ok", json!({"replay": true})),
            "a replayed answer",
        ),
        (line(input.clone(), "not_run", json!({})), "not_run"),
        (line(input.clone(), "cancelled", json!({})), "cancelled"),
    ] {
        assert_eq!(
            ask(&d, &record),
            WhatIf::Skipped {
                why: why.to_owned()
            }
        );
    }
}

#[test]
fn the_context_is_rebuilt_from_the_line() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = Arc::clone(&seen);
    let d = Dispatcher::builder()
        .tool(ToolDef::sync(
            "refund",
            "Refunds an order.",
            |_env, a: Refund| Ok(format!("refunded {}", a.amount_cents)),
        ))
        .pre_hook(PreHookDef::sync(
            "app::look",
            10,
            move |env, call: &ToolUse| {
                let ctx = env.context();
                log.lock().unwrap().push(format!(
                    "{} {} {:?} {} {}",
                    ctx.user_id(),
                    ctx.session_id(),
                    ctx.tier(),
                    toolgate::audit::Rfc3339(ctx.now()),
                    call.id
                ));
                Ok(Decision::Allow)
            },
        ))
        .build()
        .unwrap();
    let record = line(
        json!({"order_id": "o_1", "amount_cents": 1}),
        "ok",
        json!({}),
    );
    assert_eq!(ask(&d, &record), WhatIf::Unchanged);
    assert_eq!(
        *seen.lock().unwrap(),
        ["u_1 sess_old Some(\"premium\") 2026-11-26T03:10:00Z toolu_1"]
    );
}

#[test]
fn a_hook_that_asks_today_flips_a_call_nobody_was_asked_about_and_leaves_one_that_was() {
    // Today a person must approve refunds above 1000 cents.
    let d = Dispatcher::builder()
        .tool(ToolDef::sync(
            "refund",
            "Refunds an order.",
            |_env, a: Refund| Ok(format!("refunded {} on {}", a.amount_cents, a.order_id)),
        ))
        .pre_hook(PreHookDef::sync(
            "app::approval",
            10,
            |_env, call: &ToolUse| {
                Ok(match call.input["amount_cents"].as_u64() {
                    Some(n) if n > 1000 => Decision::ask("above 1000 cents"),
                    _ => Decision::Allow,
                })
            },
        ))
        .build()
        .unwrap();
    let input = json!({"order_id": "o_1", "amount_cents": 4000});
    let asked = vec![toolgate::approval::Asked {
        hook: "app::approval".to_owned(),
        reason: "above 1000 cents".to_owned(),
    }];
    // Ran then with no hook asking: today it needs a person.
    let ok = line(input.clone(), "ok", json!({}));
    let WhatIf::Flip(flip) = ask(&d, &ok) else {
        panic!("a flip")
    };
    assert_eq!(
        (flip.change, flip.hook.as_deref(), flip.was, flip.now),
        (
            Change::NowAsks,
            Some("app::approval"),
            Outcome::Ok,
            ChainVerdict::Ask {
                input: input.clone(),
                rewritten_by: vec![],
                asked_by: asked,
            }
        )
    );
    assert_eq!(Change::NowAsks.to_string(), "→ needs approval");
    // A person approved it then, and today the rule still asks: unchanged.
    let approved = line(
        input.clone(),
        "ok",
        json!({"asked_by": [{"hook": "app::approval", "reason": "above 1000 cents"}],
               "approved_by": "lead@shop.example"}),
    );
    assert_eq!(ask(&d, &approved), WhatIf::Unchanged);
    // Declined then (blocked by the asking hook), asked about today: unchanged too.
    let declined = line(
        input,
        "blocked",
        json!({"blocked_by": "app::approval",
               "asked_by": [{"hook": "app::approval", "reason": "above 1000 cents"}],
               "denied_by": "lead@shop.example"}),
    );
    assert_eq!(ask(&d, &declined), WhatIf::Unchanged);
}
