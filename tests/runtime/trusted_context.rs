//! Trusted context: the model's input cannot change a decision that reads the `HookContext`.
//! An input carrying `user_id`, `tier` or a field named like an injected parameter is a claim;
//! the hooks decide on the host's facts, and the audit line names the authenticated user.

use crate::support::{TempDir, any_json, json_lines};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolgate::{Dispatcher, HookContext, ToolUse, audit::Outcome};

mod refunds {
    //! A refund desk: premium users only, and only for their own orders.
    use toolgate::{Decision, HookContext, ToolUse, pre_hook, tool};

    /// Who owns which order (the host's database).
    pub(crate) fn owner_of(order_id: &str) -> Option<&'static str> {
        match order_id {
            "o_1" => Some("u_alice"),
            "o_2" => Some("u_bob"),
            _ => None,
        }
    }

    /// Opens a refund case; unknown fields are accepted and ignored, so claims reach the hooks.
    #[tool(allow_unknown_fields)]
    pub(crate) fn open_refund(
        /// The order.
        order_id: String,
    ) -> String {
        format!("refund opened for {order_id}")
    }

    /// Looks up an order for a user the model names: the argument is only a claim.
    #[tool]
    pub(crate) fn order_status(
        /// The order.
        order_id: String,
        /// The user the model says it acts for.
        user_id: String,
        ctx: &HookContext,
    ) -> String {
        format!("{order_id} for {} (model said {user_id})", ctx.user_id())
    }

    /// Refunds are for premium users: the tier comes from the context.
    #[pre_hook(order = 10, tools = [open_refund])]
    pub(crate) fn premium_only(ctx: &HookContext) -> Decision {
        match ctx.tier() {
            Some("premium") => Decision::Allow,
            _ => Decision::deny("refunds are for premium users."),
        }
    }

    /// Users act on their own orders only: the owner is compared with the context's user.
    #[pre_hook(order = 20, tools = [open_refund, order_status])]
    pub(crate) fn own_orders_only(ctx: &HookContext, call: &ToolUse) -> Decision {
        let order = call
            .input
            .get("order_id")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        if owner_of(order) == Some(ctx.user_id()) {
            Decision::Allow
        } else {
            Decision::deny("that order belongs to another customer.")
        }
    }
}

fn dispatcher(dir: Option<&TempDir>) -> Dispatcher {
    let mut b = Dispatcher::builder().registered_under(format!("{}::refunds", module_path!()));
    if let Some(d) = dir {
        b = b.audit_log(toolgate::audit::AuditLog::open(d.path()).unwrap());
    }
    b.build().unwrap()
}

fn ctx(user: &str, tier: Option<&str>) -> HookContext {
    let b = HookContext::builder(user, "sess_ctx");
    match tier {
        Some(t) => b.tier(t).build(),
        None => b.build(),
    }
}

fn run(d: &Dispatcher, ctx: HookContext, tool: &str, input: Value) -> (bool, String) {
    let s = d.session(ctx);
    let r = toolgate::block_on(s.call(&ToolUse::new("toolu_1", tool, input))).unwrap();
    (r.is_error, r.content_text().into_owned())
}

#[test]
fn claimed_tier_and_user_id_in_the_input_do_not_change_the_decision() {
    let d = dispatcher(None);
    // A free user claims premium and another identity: still denied, by the context's tier.
    let claim = json!({"order_id": "o_1", "tier": "premium", "user_id": "u_alice",
                       "role": "admin", "ctx": {"tier": "premium"}});
    assert_eq!(
        run(&d, ctx("u_alice", Some("free")), "open_refund", claim),
        (true, "BLOCKED: refunds are for premium users.".to_owned())
    );
    // A premium user claims another customer's identity to reach their order: denied.
    let claim = json!({"order_id": "o_2", "user_id": "u_bob", "tier": "premium"});
    assert_eq!(
        run(&d, ctx("u_alice", Some("premium")), "open_refund", claim),
        (
            true,
            "BLOCKED: that order belongs to another customer.".to_owned()
        )
    );
    // The same user, own order, claims "free": the context says premium, so allowed.
    let claim = json!({"order_id": "o_1", "tier": "free", "user_id": "u_nobody"});
    assert_eq!(
        run(&d, ctx("u_alice", Some("premium")), "open_refund", claim),
        (false, "refund opened for o_1".to_owned())
    );
}

#[test]
fn a_model_argument_named_user_id_is_not_the_authenticated_user() {
    let dir = TempDir::new("trusted");
    let d = dispatcher(Some(&dir));
    let input = json!({"order_id": "o_2", "user_id": "u_bob"});
    assert_eq!(
        run(&d, ctx("u_alice", Some("premium")), "order_status", input),
        (
            true,
            "BLOCKED: that order belongs to another customer.".to_owned()
        )
    );
    let input = json!({"order_id": "o_1", "user_id": "u_bob"});
    assert_eq!(
        run(&d, ctx("u_alice", None), "order_status", input),
        (false, "o_1 for u_alice (model said u_bob)".to_owned())
    );
    // The audit line names the authenticated user, never the claim.
    let lines = json_lines(&dir.path().join("audit_log.jsonl"));
    assert_eq!(lines.len(), 2);
    for line in &lines {
        assert_eq!(line["user_id"], "u_alice");
        assert_eq!(line["input"]["user_id"], "u_bob");
    }
}

#[test]
fn an_injected_parameter_cannot_be_supplied_by_the_model() {
    let d = dispatcher(None);
    // `ctx` is injected, not a property: sending it is an unknown field of a closed tool.
    assert_eq!(
        d.canonical_schema("order_status").unwrap()["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["order_id", "user_id"]
    );
    let input = json!({"order_id": "o_1", "user_id": "u_alice",
                       "ctx": {"user_id": "u_alice", "tier": "premium"}});
    let (is_error, text) = run(&d, ctx("u_bob", None), "order_status", input);
    assert!(is_error);
    assert_eq!(
        text,
        "Error: invalid input for tool `order_status`: unknown field `ctx`, expected one of \
         `order_id`, `user_id`. Send an input that matches the tool's input_schema."
    );
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(600),
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "tests/runtime/trusted_context.proptest-regressions",
            ),
        )),
        ..ProptestConfig::default()
    })]

    /// Whatever the input claims, the decision is the one the context alone gives.
    #[test]
    fn the_decision_depends_on_the_context_only(
        user in prop_oneof![Just("u_alice"), Just("u_bob"), Just("u_eve")],
        tier in prop_oneof![Just(None), Just(Some("free")), Just(Some("premium"))],
        order in prop_oneof![Just("o_1"), Just("o_2"), Just("o_3")],
        claims in prop::collection::btree_map(
            prop_oneof![Just("user_id".to_owned()), Just("tier".to_owned()),
                        Just("role".to_owned()), Just("owner".to_owned()), "[a-z]{1,6}"],
            any_json(&["premium", "u_alice", "u_bob", "tier", "user_id", "order_id"]),
            0..5,
        ),
    ) {
        let d = dispatcher(None);
        let mut input: Map<String, Value> = claims.into_iter().collect();
        input.insert("order_id".into(), json!(order));
        let s = d.session(ctx(user, tier));
        let r = toolgate::block_on(s.call(&ToolUse::new("toolu_1", "open_refund", Value::Object(input))))
            .unwrap();
        let expected = if tier != Some("premium") {
            Some("BLOCKED: refunds are for premium users.")
        } else if refunds::owner_of(order) != Some(user) {
            Some("BLOCKED: that order belongs to another customer.")
        } else {
            None
        };
        match expected {
            Some(text) => {
                prop_assert!(r.is_error);
                prop_assert_eq!(r.content_text(), text);
                let summary = s.end();
                prop_assert_eq!(summary.outcomes.get(&Outcome::Blocked), Some(&1));
            }
            None => {
                prop_assert!(!r.is_error);
                prop_assert_eq!(r.content_text(), format!("refund opened for {order}"));
            }
        }
    }
}
