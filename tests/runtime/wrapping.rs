//! Wrapping by ownership: a dispatcher built around a caller owns it; nested dispatchers run
//! each inner call exactly once, and the outer audit line keeps the inner truth (the inner
//! outcome, the inner hook's path, the inner detail: [`CallAnswer`]); two inner dispatchers with
//! one tool name stop the outer build.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use toolgate::{
    Decision, Dispatcher, HookContext, ToolError, ToolResult, ToolUse,
    audit::{AuditLog, Outcome},
    dispatch::{BoxFuture, CallAnswer, PreHookDef, ToolCaller, sync_caller},
};

use crate::support::{ExpiredTimer, HALT_TEXT, PANIC_TEXT, TempDir, json_lines, tool_timeout_text};

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
    // Denied inside: the inner answer is the outer answer, and the outer outcome is `blocked`.
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
    assert_eq!(
        summary.outcomes,
        [
            (Outcome::Ok, 2),
            (Outcome::Blocked, 2),
            (Outcome::InvalidInput, 1)
        ]
        .into()
    );
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
    let n = std::cell::Cell::new(0);
    let run = |input| {
        n.set(n.get() + 1);
        let call = ToolUse::new(format!("t{}", n.get()), "ping", input);
        toolgate::block_on(s.call(&call)).unwrap()
    };
    assert_eq!(
        run(json!({"times": 2})),
        ToolResult::text("t1", "pong pong for u_9")
    );
    assert_eq!(
        run(json!({"times": 9})),
        ToolResult::error("t2", "at most 3 pongs.")
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

// ---- the outer audit line keeps the inner truth ----

mod nested {
    //! The inner dispatcher of the nested-outcome tests: a tool for each way a call can end.
    use toolgate::{Decision, ToolError, ToolUse, pre_hook, tool};

    /// Refunds an order.
    #[tool]
    pub(crate) fn refund(
        /// The order.
        order_id: String,
    ) -> String {
        format!("refunded {order_id}")
    }

    /// Fails with an internal error whose source the operator needs.
    #[tool]
    pub(crate) fn ledger() -> Result<String, ToolError> {
        Err(ToolError::internal(std::io::Error::other(
            "ledger db-3 refused the connection",
        )))
    }

    /// Panics.
    #[tool]
    pub(crate) fn crash() -> String {
        panic!("injected fault: the crash tool")
    }

    /// Never answers; cut at its deadline.
    #[tool(timeout_ms = 30)]
    pub(crate) async fn stall() -> String {
        crate::support::hang::<()>().await;
        String::new()
    }

    /// Denies a refund of another customer's order (`O-2002`).
    #[pre_hook(order = 10, tools = [refund])]
    pub(crate) fn own_orders(call: &ToolUse) -> Decision {
        match call.input["order_id"].as_str() {
            Some("O-2002") => Decision::deny("that order belongs to another customer."),
            _ => Decision::Allow,
        }
    }

    /// Rewrites an order `O-rewrite` into an invalid input; fails on an order `O-halt`.
    #[pre_hook(order = 20)]
    pub(crate) fn meddler(call: &ToolUse) -> Result<Decision, String> {
        if call.input.get("order_id").and_then(|v| v.as_str()) == Some("O-rewrite") {
            return Ok(Decision::Rewrite(serde_json::json!({"order_id": 7})));
        }
        if call.input.get("order_id").and_then(|v| v.as_str()) == Some("O-halt") {
            return Err("the policy service is down".to_owned());
        }
        Ok(Decision::Allow)
    }
}

/// A caller that advertises one tool more than the dispatcher it forwards to (so the inner
/// dispatcher answers `unknown_tool`).
struct Advertises(Dispatcher);

impl ToolCaller for Advertises {
    fn tool_definitions(&self) -> Vec<Value> {
        let mut defs = self.0.tool_definitions().to_vec();
        defs.push(json!({"name": "retired", "description": "A retired tool.",
                         "input_schema": {"type": "object", "properties": {}}}));
        defs
    }

    fn call_tool<'a>(
        &'a self,
        context: &'a HookContext,
        call: &'a ToolUse,
    ) -> BoxFuture<'a, Result<CallAnswer, toolgate::Halt>> {
        self.0.call_tool(context, call)
    }
}

/// An audit line without the fields that vary between runs (`ts`, `duration_us`) and the hash
/// chain's `prev` (checked by the audit tests).
fn steady(mut line: Value) -> Value {
    let m = line.as_object_mut().unwrap();
    m.remove("ts");
    m.remove("duration_us");
    m.remove("prev");
    line
}

#[test]
fn the_outer_audit_line_says_what_happened_inside_outcome_hook_and_detail() {
    crate::support::quiet_injected_panics();
    let inner = Dispatcher::builder()
        .registered_under(format!("{}::nested", module_path!()))
        .timer(ExpiredTimer)
        .build()
        .unwrap();
    let dir = TempDir::new("nested-outcomes");
    let outer = Dispatcher::builder()
        .wrap(Advertises(inner))
        .audit_log(AuditLog::open(&dir).unwrap())
        .build()
        .unwrap();
    let s = outer.session(HookContext::builder("u_1", "sess_nested").build());
    let call = |id: &str, tool: &str, input: Value| {
        toolgate::block_on(s.call(&ToolUse::new(id, tool, input)))
    };
    let denied = "BLOCKED: that order belongs to another customer.";
    assert_eq!(
        call("t1", "refund", json!({"order_id": "O-2002"})).unwrap(),
        ToolResult::error("t1", denied)
    );
    assert_eq!(
        call("t2", "refund", json!({"order_id": "O-1001"})).unwrap(),
        ToolResult::text("t2", "refunded O-1001")
    );
    let ledger = call("t3", "ledger", json!({})).unwrap();
    assert_eq!(
        ledger,
        ToolResult::error("t3", toolgate::content::INTERNAL_ERROR_MESSAGE)
    );
    assert_eq!(
        call("t4", "crash", json!({})).unwrap(),
        ToolResult::error("t4", PANIC_TEXT)
    );
    assert_eq!(
        call("t5", "stall", json!({})).unwrap(),
        ToolResult::error("t5", tool_timeout_text(30))
    );
    let bad_rewrite = call("t6", "refund", json!({"order_id": "O-rewrite"})).unwrap();
    assert_eq!(
        bad_rewrite.content_text(),
        "Error: invalid input for tool `refund`: a policy rewrite of this call produced an \
         input that is invalid at `order_id` (expected a string, found the number 7). This is \
         a problem on our side; do not retry the same call."
    );
    let unknown = call("t7", "retired", json!({})).unwrap();
    assert_eq!(
        unknown.content_text(),
        "Error: unknown tool 'retired'. Available tools: crash, ledger, refund, stall."
    );
    let halt = call("t8", "refund", json!({"order_id": "O-halt"}))
        .unwrap_err()
        .into_halt()
        .expect("a halt");
    assert_eq!(halt.outcome, Outcome::HookFailed);
    assert_eq!(halt.hook, "runtime::wrapping::nested::meddler");
    assert_eq!(
        halt.detail,
        "the wrapped caller halted: the policy service is down"
    );
    assert_eq!(halt.result().unwrap().content_text(), HALT_TEXT);

    let lines: Vec<Value> = json_lines(&dir.join("audit_log.jsonl"))
        .into_iter()
        .map(steady)
        .collect();
    let line = |id: &str, tool: &str, input: Value, outcome: &str, content: &str| {
        json!({"session_id": "sess_nested", "user_id": "u_1", "tool_use_id": id, "tool": tool,
               "input": input, "outcome": outcome, "is_error": outcome != "ok",
               "content": content})
    };
    let with = |mut line: Value, extra: Value| {
        let m = line.as_object_mut().unwrap();
        m.extend(extra.as_object().unwrap().clone());
        line
    };
    assert_eq!(
        lines,
        [
            with(
                line(
                    "t1",
                    "refund",
                    json!({"order_id": "O-2002"}),
                    "blocked",
                    denied
                ),
                json!({"blocked_by": "runtime::wrapping::nested::own_orders"})
            ),
            line(
                "t2",
                "refund",
                json!({"order_id": "O-1001"}),
                "ok",
                "refunded O-1001"
            ),
            with(
                line(
                    "t3",
                    "ledger",
                    json!({}),
                    "tool_error",
                    toolgate::content::INTERNAL_ERROR_MESSAGE
                ),
                json!({"detail": "ledger db-3 refused the connection"})
            ),
            with(
                line("t4", "crash", json!({}), "panicked", PANIC_TEXT),
                json!({"detail": "the tool panicked: injected fault: the crash tool"})
            ),
            with(
                line(
                    "t5",
                    "stall",
                    json!({}),
                    "tool_timeout",
                    &tool_timeout_text(30)
                ),
                json!({"detail": "the tool ran past its deadline of 30 ms"})
            ),
            with(
                line(
                    "t6",
                    "refund",
                    json!({"order_id": "O-rewrite"}),
                    "invalid_input",
                    &bad_rewrite.content_text()
                ),
                json!({"detail": "PreToolUse hook `runtime::wrapping::nested::meddler` rewrote \
                                  the input into an invalid one at `order_id`: expected a \
                                  string, found the number 7"})
            ),
            line(
                "t7",
                "retired",
                json!({}),
                "unknown_tool",
                &unknown.content_text()
            ),
            with(
                line(
                    "t8",
                    "refund",
                    json!({"order_id": "O-halt"}),
                    "hook_failed",
                    HALT_TEXT
                ),
                json!({"blocked_by": "runtime::wrapping::nested::meddler",
                       "detail": "the wrapped caller halted: the policy service is down"})
            ),
        ]
    );
    let summary = s.end();
    let want: std::collections::BTreeMap<Outcome, u64> = [
        (Outcome::Ok, 1),
        (Outcome::ToolError, 1),
        (Outcome::Panicked, 1),
        (Outcome::ToolTimeout, 1),
        (Outcome::Blocked, 1),
        (Outcome::InvalidInput, 1),
        (Outcome::UnknownTool, 1),
        (Outcome::HookFailed, 1),
    ]
    .into();
    assert_eq!(summary.outcomes, want);
}

/// A caller that answers every call with a fixed [`CallAnswer`] (its result's id set to the
/// call's).
struct Fixed(CallAnswer);

impl ToolCaller for Fixed {
    fn tool_definitions(&self) -> Vec<Value> {
        vec![
            json!({"name": "fixed", "description": "Answers what it was told.",
                    "input_schema": {"type": "object", "properties": {}}}),
        ]
    }

    fn call_tool<'a>(
        &'a self,
        _context: &'a HookContext,
        call: &'a ToolUse,
    ) -> BoxFuture<'a, Result<CallAnswer, toolgate::Halt>> {
        let mut answer = self.0.clone();
        answer.result.tool_use_id = call.id.clone();
        Box::pin(std::future::ready(Ok(answer)))
    }
}

#[test]
fn an_answer_a_caller_cannot_give_is_recorded_safely() {
    let dir = TempDir::new("caller-answers");
    let run = |answer: CallAnswer| {
        let d = Dispatcher::builder()
            .wrap(Fixed(answer))
            .audit_log(AuditLog::open(&dir).unwrap())
            .build()
            .unwrap();
        let s = d.session(HookContext::builder("u_1", "sess_fixed").build());
        toolgate::block_on(s.call(&ToolUse::new("t", "fixed", json!({}))))
    };
    // `ok` whose result says `is_error`: a tool_error.
    let r = run(CallAnswer::new(
        ToolResult::error("x", "it broke."),
        Outcome::Ok,
    ))
    .unwrap();
    assert_eq!(r, ToolResult::error("t", "it broke."));
    // `blocked` whose result forgot `is_error`: still an error for the model.
    let r = run(
        CallAnswer::new(ToolResult::text("x", "BLOCKED: no."), Outcome::Blocked)
            .with_blocked_by("remote::policy"),
    )
    .unwrap();
    assert_eq!(r, ToolResult::error("t", "BLOCKED: no."));
    // A policy failure answered instead of halted: the outer dispatcher halts (fail closed).
    let halt = run(CallAnswer::new(
        ToolResult::error("x", "BLOCKED: later."),
        Outcome::HookTimeout,
    )
    .with_blocked_by("remote::slow_policy")
    .with_detail("the hook ran past its deadline of 10000 ms"))
    .unwrap_err()
    .into_halt()
    .expect("a halt");
    assert_eq!(
        (halt.outcome, halt.hook.as_str(), halt.detail.as_str()),
        (
            Outcome::HookTimeout,
            "remote::slow_policy",
            "the wrapped caller answered hook_timeout without halting: the hook ran past its \
             deadline of 10000 ms"
        )
    );
    assert_eq!(halt.result().unwrap().content_text(), HALT_TEXT);
    // `not_run` is no answer: a tool_error, the detail says why.
    let r = run(CallAnswer::new(
        ToolResult::error("x", "Not run: later."),
        Outcome::NotRun,
    ))
    .unwrap();
    assert_eq!(r, ToolResult::error("t", "Not run: later."));

    let lines: Vec<Value> = json_lines(&dir.join("audit_log.jsonl"))
        .into_iter()
        .map(|l| json!([l["outcome"], l["is_error"], l["blocked_by"], l["detail"]]))
        .collect();
    assert_eq!(
        lines,
        [
            json!(["tool_error", true, null, null]),
            json!(["blocked", true, "remote::policy", null]),
            json!([
                "hook_timeout",
                true,
                "remote::slow_policy",
                "the wrapped caller answered hook_timeout without halting: the hook ran past \
                 its deadline of 10000 ms"
            ]),
            json!([
                "tool_error",
                true,
                null,
                "the wrapped caller answered not_run, which a caller cannot answer; recorded as \
                 tool_error"
            ]),
        ]
    );
}

#[test]
fn from_result_reads_the_outcome_from_is_error() {
    let ok = CallAnswer::from_result(ToolResult::text("t", "done"));
    assert_eq!(
        (ok.outcome, ok.blocked_by, ok.detail),
        (Outcome::Ok, None, None)
    );
    let failed = CallAnswer::from_result(ToolResult::error("t", "no."));
    assert_eq!(failed.outcome, Outcome::ToolError);
    assert_eq!(failed.result, ToolResult::error("t", "no."));
}

/// Two nested dispatchers that both have a `charge` tool, behind one outer dispatcher: the
/// outer build fails naming both, rather than one inner dispatcher shadowing the other.
#[test]
fn two_inner_dispatchers_with_one_tool_name_stop_the_outer_build() {
    let inner = || {
        Dispatcher::builder()
            .registered_under(format!("{}::inner_items", module_path!()))
            .state_arc(Arc::new(inner_items::Runs::default()))
            .build()
            .unwrap()
    };
    let outer = Dispatcher::builder()
        .wrap(inner())
        .wrap(inner())
        .pre_hook(PreHookDef::sync("outer::allow", 1, |_env, _call| {
            Ok(Decision::Allow)
        }))
        .build();
    assert_eq!(
        outer.err().map(|e| e.to_string()).as_deref(),
        Some(
            "the dispatcher cannot be built (1 problem):\n- two tools are named `charge`: \
             <wrapped caller #0>::charge and <wrapped caller #1>::charge; rename one with \
             #[tool(name = \"…\")] or filter one out"
        )
    );
}
