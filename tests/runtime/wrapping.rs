//! Wrapping by ownership: a dispatcher built around a caller owns it; nested dispatchers run
//! each inner call exactly once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use toolgate::{
    Decision, Dispatcher, HookContext, Outcome, PreHookDef, ToolCaller, ToolError, ToolResult,
    ToolUse, sync_caller,
};

mod inner_items {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use toolgate::{Decision, State, ToolUse, pre_hook, tool};

    /// Counts the inner tool's runs.
    #[derive(Default)]
    pub(crate) struct Runs(pub AtomicUsize);

    /// Charges a card.
    #[tool]
    pub(crate) fn charge(
        /// Amount in cents.
        amount_cents: u64,
        runs: State<Runs>,
    ) -> String {
        runs.0.fetch_add(1, Ordering::SeqCst);
        format!("charged {amount_cents}")
    }

    /// The inner dispatcher's own rule: nothing above 1000 cents.
    #[pre_hook(order = 1)]
    pub(crate) fn inner_cap(call: &ToolUse) -> Decision {
        if call.input["amount_cents"].as_u64().unwrap_or(0) > 1000 {
            Decision::deny("inner cap: at most 1000 cents.")
        } else {
            Decision::Allow
        }
    }
}

#[test]
fn a_dispatcher_inside_a_dispatcher_runs_each_inner_call_exactly_once() {
    let runs = Arc::new(inner_items::Runs::default());
    let inner = Dispatcher::builder()
        .registered_under(format!("{}::inner_items", module_path!()))
        .state_arc(runs.clone())
        .build()
        .unwrap();
    let inner_definitions = inner.tool_definitions().to_vec();
    let outer_checks = Arc::new(AtomicUsize::new(0));
    let checks = outer_checks.clone();
    let outer = Dispatcher::builder()
        .wrap(inner) // moved in: the outer dispatcher owns it
        .pre_hook(PreHookDef::sync("outer::no_zero", 1, move |_env, call| {
            checks.fetch_add(1, Ordering::SeqCst);
            Ok(if call.input["amount_cents"] == 0 {
                Decision::deny("outer: amounts must be positive.")
            } else {
                Decision::Allow
            })
        }))
        .build()
        .unwrap();
    assert_eq!(outer.tool_definitions(), inner_definitions.as_slice());

    let s = outer.session(HookContext::builder("u_1", "sess_outer").build());
    let call = |id: &str, amount: u64| {
        toolgate::block_on(s.call(&ToolUse::new(id, "charge", json!({"amount_cents": amount}))))
            .unwrap()
    };
    assert_eq!(call("t1", 500), ToolResult::text("t1", "charged 500"));
    assert_eq!(runs.0.load(Ordering::SeqCst), 1);
    assert_eq!(call("t2", 700), ToolResult::text("t2", "charged 700"));
    assert_eq!(runs.0.load(Ordering::SeqCst), 2);
    // Denied outside: the inner dispatcher never sees it.
    assert_eq!(
        call("t3", 0),
        ToolResult::error("t3", "BLOCKED: outer: amounts must be positive.")
    );
    // Denied inside: the inner answer is the outer answer, a tool_error for the outer pipeline.
    assert_eq!(
        call("t4", 5000),
        ToolResult::error("t4", "BLOCKED: inner cap: at most 1000 cents.")
    );
    assert_eq!(runs.0.load(Ordering::SeqCst), 2);
    assert_eq!(outer_checks.load(Ordering::SeqCst), 4);
    // Invalid input is caught by the outer dispatcher from the inner schema.
    let bad =
        toolgate::block_on(s.call(&ToolUse::new("t5", "charge", json!({"amount": 1})))).unwrap();
    assert_eq!(
        bad.content_text(),
        "Error: invalid input for tool `charge` (2 problems):\n- unknown field `amount`, \
         expected one of `amount_cents`\n- missing field `amount_cents`\nSend an input that \
         matches the tool's input_schema."
    );
    let summary = s.end();
    assert_eq!(summary.outcomes.get(&Outcome::Ok), Some(&2));
    assert_eq!(summary.outcomes.get(&Outcome::Blocked), Some(&1));
    assert_eq!(summary.outcomes.get(&Outcome::ToolError), Some(&1));
    assert_eq!(summary.outcomes.get(&Outcome::InvalidInput), Some(&1));
}

#[test]
fn a_plain_closure_adapts_to_a_caller() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let legacy = sync_caller(
        vec![json!({
            "name": "ping",
            "description": "Answers pong.",
            "input_schema": {
                "type": "object",
                "properties": {"times": {"type": "integer"}},
                "required": ["times"],
                "additionalProperties": false
            }
        })],
        move |ctx, call| {
            seen.fetch_add(1, Ordering::SeqCst);
            match call.input["times"].as_u64() {
                Some(n) if n < 4 => Ok(format!(
                    "{} for {}",
                    "pong ".repeat(n as usize).trim_end(),
                    ctx.user_id()
                )),
                _ => Err(ToolError::new("at most 3 pongs.")),
            }
        },
    );
    assert_eq!(legacy.tool_definitions()[0]["name"], "ping");
    let d = Dispatcher::builder().wrap(legacy).build().unwrap();
    let s = d.session(HookContext::builder("u_9", "sess_ping").build());
    let run = |input| toolgate::block_on(s.call(&ToolUse::new("t", "ping", input))).unwrap();
    assert_eq!(
        run(json!({"times": 2})),
        ToolResult::text("t", "pong pong for u_9")
    );
    assert_eq!(
        run(json!({"times": 9})),
        ToolResult::error("t", "at most 3 pongs.")
    );
    assert_eq!(
        run(json!({})).content_text(),
        "Error: invalid input for tool `ping`: missing field `times`. Send an input that matches \
         the tool's input_schema."
    );
    // The wrapped caller's own schema is checked before the caller sees the input.
    assert_eq!(
        run(json!({"times": "two"})).content_text(),
        "Error: invalid input for tool `ping` at `times`: expected an integer, found the string \
         \"two\". Send an input that matches the tool's input_schema."
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}
