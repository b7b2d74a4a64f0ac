//! One test per row of the outcome table (ARCHITECTURE.md, "Contracts": "Outcomes"; the two
//! `*_timeout` rows live with the deadline tests): `is_error`, the content, the audit line's
//! `outcome`, and whether the tool's side effect happened.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Waker};

use crate::support::{self, HALT_TEXT, NOT_RUN_HALT, PANIC_TEXT, assistant};
use serde_json::{Value, json};
use toolgate::{
    CallError, Dispatcher, HookContext, RespondError, Session, ToolResult, ToolUse,
    audit::{AuditLog, Outcome},
};

/// Counts the refunds actually made: the side effect.
#[derive(Default)]
pub(crate) struct Journal {
    pub(crate) refunds: AtomicUsize,
}

mod items {
    use super::Journal;
    use toolgate::{Decision, HookContext, State, ToolError, ToolUse, pre_hook, tool};

    /// Refunds part of an order.
    #[tool]
    pub(crate) fn refund(
        /// The order to refund.
        order_id: String,
        /// The amount, in cents.
        amount_cents: u64,
        journal: State<Journal>,
    ) -> Result<String, ToolError> {
        journal
            .refunds
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if order_id == "o_boom" {
            panic!("ledger invariant broken for {order_id}");
        }
        if amount_cents > 10_000 {
            return Err(ToolError::new(format!(
                "{amount_cents} cents is more than order {order_id} cost; refund at most 10000."
            )));
        }
        Ok(format!("refunded {amount_cents} cents on {order_id}"))
    }

    /// Waits for a payment provider that never answers.
    #[tool]
    pub(crate) async fn slow_refund(
        /// The order to refund.
        order_id: String,
        journal: State<Journal>,
    ) -> String {
        journal
            .refunds
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::future::pending::<()>().await;
        order_id
    }

    /// Denies refunds on frozen orders.
    #[pre_hook(order = 10, tools = [refund])]
    pub(crate) fn frozen_orders(call: &ToolUse) -> Decision {
        if call.input["order_id"] == "o_frozen" {
            Decision::deny_instead(
                "order o_frozen is frozen by fraud review.",
                "Tell the customer a specialist will call back.",
            )
        } else {
            Decision::Allow
        }
    }

    /// A policy check whose backing service is down for one order.
    #[pre_hook(order = 20, tools = [refund])]
    pub(crate) fn risk_service(_ctx: &HookContext, call: &ToolUse) -> Result<Decision, String> {
        if call.input["order_id"] == "o_risk_down" {
            return Err("risk service unreachable: connection refused".into());
        }
        Ok(Decision::Allow)
    }
}

struct Harness {
    session: Session,
    journal: std::sync::Arc<Journal>,
    dir: support::TempDir,
    /// Calls made so far: each gets its own id (`toolu_1`, `toolu_2`, …).
    calls: std::cell::Cell<usize>,
}

impl Harness {
    fn new() -> Self {
        let dir = support::TempDir::new("outcomes");
        let journal = std::sync::Arc::new(Journal::default());
        let dispatcher = Dispatcher::builder()
            .registered_under(format!("{}::items", module_path!()))
            .state_arc(journal.clone())
            .audit_log(AuditLog::open(&dir).unwrap())
            .build()
            .unwrap();
        let session = dispatcher.session(HookContext::builder("u_001", "sess_outcomes").build());
        Harness {
            session,
            journal,
            dir,
            calls: std::cell::Cell::new(0),
        }
    }

    fn call(&self, name: &str, input: Value) -> Result<ToolResult, toolgate::CallError> {
        self.calls.set(self.calls.get() + 1);
        let id = format!("toolu_{}", self.calls.get());
        toolgate::block_on(self.session.call(&ToolUse::new(id, name, input)))
    }

    fn refunds(&self) -> usize {
        self.journal.refunds.load(Ordering::SeqCst)
    }

    fn audit(&self) -> Vec<Value> {
        support::json_lines(&self.dir.join("audit_log.jsonl"))
    }
}

#[test]
fn ok() {
    let h = Harness::new();
    let r = h
        .call("refund", json!({"order_id": "o_1", "amount_cents": 2599}))
        .unwrap();
    assert_eq!(r, ToolResult::text("toolu_1", "refunded 2599 cents on o_1"));
    assert_eq!(h.refunds(), 1);
    let line = &h.audit()[0];
    assert_eq!(line["outcome"], "ok");
    assert_eq!(line["is_error"], false);
    assert_eq!(line["content"], "refunded 2599 cents on o_1");
}

#[test]
fn tool_error() {
    let h = Harness::new();
    let r = h
        .call("refund", json!({"order_id": "o_1", "amount_cents": 45000}))
        .unwrap();
    assert!(r.is_error);
    assert_eq!(
        r.content_text(),
        "45000 cents is more than order o_1 cost; refund at most 10000."
    );
    assert_eq!(h.refunds(), 1);
    assert_eq!(h.audit()[0]["outcome"], "tool_error");
}

#[test]
fn panicked() {
    let h = Harness::new();
    let r = h
        .call("refund", json!({"order_id": "o_boom", "amount_cents": 1}))
        .unwrap();
    assert!(r.is_error);
    assert_eq!(r.content_text(), PANIC_TEXT);
    assert_eq!(h.refunds(), 1);
    let line = &h.audit()[0];
    assert_eq!(line["outcome"], "panicked");
    assert_eq!(
        line["detail"],
        "the tool panicked: ledger invariant broken for o_boom"
    );
    assert!(
        !r.content_text().contains("ledger"),
        "the panic text never reaches the model"
    );
}

#[test]
fn blocked() {
    let h = Harness::new();
    let r = h
        .call("refund", json!({"order_id": "o_frozen", "amount_cents": 1}))
        .unwrap();
    assert!(r.is_error);
    assert_eq!(
        r.content_text(),
        "BLOCKED: order o_frozen is frozen by fraud review. Tell the customer a specialist will call back."
    );
    assert_eq!(h.refunds(), 0);
    let line = &h.audit()[0];
    assert_eq!(line["outcome"], "blocked");
    assert_eq!(
        line["blocked_by"],
        "runtime::outcomes::items::frozen_orders"
    );
}

#[test]
fn invalid_input() {
    let h = Harness::new();
    let r = h
        .call("refund", json!({"order_id": "o_1", "amount_cents": "ten"}))
        .unwrap();
    assert!(r.is_error);
    assert_eq!(
        r.content_text(),
        "Error: invalid input for tool `refund` at `amount_cents`: expected an integer ≥ 0, found the \
         string \"ten\". Send an input that matches the tool's input_schema."
    );
    let r = h
        .call(
            "refund",
            json!({"order_id": "o_1", "amount_cents": 1, "note": "x"}),
        )
        .unwrap();
    assert_eq!(
        r.content_text(),
        "Error: invalid input for tool `refund`: unknown field `note`, expected one of \
         `order_id`, `amount_cents`. Send an input that matches the tool's input_schema."
    );
    assert_eq!(h.refunds(), 0);
    let audit = h.audit();
    assert_eq!(audit[0]["outcome"], "invalid_input");
    assert_eq!(audit[1]["outcome"], "invalid_input");
}

#[test]
fn unknown_tool() {
    let h = Harness::new();
    let r = h.call("refnud", json!({"order_id": "o_1"})).unwrap();
    assert!(r.is_error);
    assert_eq!(
        r.content_text(),
        "Error: unknown tool 'refnud'. Available tools: refund, slow_refund."
    );
    assert_eq!(h.refunds(), 0);
    assert_eq!(h.audit()[0]["outcome"], "unknown_tool");
}

#[test]
fn hook_failed_halts_with_a_blocked_answer_and_the_tool_not_run() {
    let h = Harness::new();
    let halt = support::halt_of(h.call(
        "refund",
        json!({"order_id": "o_risk_down", "amount_cents": 1}),
    ));
    assert_eq!(halt.outcome, Outcome::HookFailed);
    assert_eq!(halt.hook, "runtime::outcomes::items::risk_service");
    assert_eq!(halt.detail, "risk service unreachable: connection refused");
    let answer = halt.result().unwrap();
    assert_eq!(answer.tool_use_id, "toolu_1");
    assert!(answer.is_error);
    // The fixed halt text: the operator detail ("risk service …") stays out.
    assert_eq!(answer.content_text(), HALT_TEXT);
    assert_eq!(h.refunds(), 0);
    let line = &h.audit()[0];
    assert_eq!(line["outcome"], "hook_failed");
    assert_eq!(line["blocked_by"], "runtime::outcomes::items::risk_service");
    assert_eq!(
        line["detail"],
        "risk service unreachable: connection refused"
    );
}

#[test]
fn not_run_after_a_halt_and_at_max_tokens() {
    let h = Harness::new();
    let message = assistant(
        json!([
            {"type": "tool_use", "id": "toolu_a", "name": "refund", "input": {"order_id": "o_risk_down", "amount_cents": 1}},
            {"type": "tool_use", "id": "toolu_b", "name": "refund", "input": {"order_id": "o_1", "amount_cents": 1}}
        ]),
        "tool_use",
    );
    let RespondError::Call(CallError::Halt(halt)) =
        toolgate::block_on(h.session.respond(&message)).unwrap_err()
    else {
        panic!("expected a halt")
    };
    let results: Vec<&ToolResult> = halt.answer().tool_results().collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].tool_use_id, "toolu_a");
    assert!(results[0].is_error);
    assert_eq!(results[0].content_text(), HALT_TEXT);
    assert_eq!(results[1].tool_use_id, "toolu_b");
    assert!(results[1].is_error);
    assert_eq!(results[1].content_text(), NOT_RUN_HALT);
    assert_eq!(h.refunds(), 0);

    // Both blocks are valid calls that would refund if they ran: only the `max_tokens` rule
    // keeps the journal at zero.
    let cut = assistant(
        json!([
            {"type": "tool_use", "id": "toolu_c", "name": "refund", "input": {"order_id": "o_1", "amount_cents": 100}},
            {"type": "tool_use", "id": "toolu_d", "name": "refund", "input": {"order_id": "o_2", "amount_cents": 200}}
        ]),
        "max_tokens",
    );
    let err = toolgate::block_on(h.session.respond(&cut)).unwrap_err();
    assert!(matches!(err, RespondError::MaxTokens { tool_uses: 2 }));
    assert_eq!(
        err.to_string(),
        "the assistant message stopped at max_tokens, so its 2 tool_use block(s) may be cut off \
         and none was run; request the turn again with a larger max_tokens"
    );
    assert_eq!(h.refunds(), 0);
    let audit = h.audit();
    let outcomes: Vec<(Value, Value)> = audit
        .iter()
        .map(|l| (l["tool_use_id"].clone(), l["outcome"].clone()))
        .collect();
    assert_eq!(
        outcomes,
        [
            (json!("toolu_a"), json!("hook_failed")),
            (json!("toolu_b"), json!("not_run")),
            (json!("toolu_c"), json!("not_run")),
            (json!("toolu_d"), json!("not_run")),
        ]
    );
}

/// A message cut because the conversation filled the context window
/// (`model_context_window_exceeded`) may end in a cut `tool_use`, as at `max_tokens`: nothing
/// runs, every block is `not_run`. A message that says `tool_use` but whose last input is a
/// JSON text cut short (a streamed input the host joined) runs its whole blocks, and the cut one
/// is `invalid_input`: its tool never sees half an input.
#[test]
fn not_run_when_the_context_window_filled_and_a_cut_input_is_invalid() {
    let h = Harness::new();
    let cut = assistant(
        json!([
            {"type": "tool_use", "id": "toolu_c", "name": "refund", "input": {"order_id": "o_1", "amount_cents": 100}},
            {"type": "tool_use", "id": "toolu_d", "name": "refund", "input": {"order_id": "o_2", "amount_cents": 200}}
        ]),
        "model_context_window_exceeded",
    );
    let err = toolgate::block_on(h.session.respond(&cut)).unwrap_err();
    assert!(matches!(
        err,
        RespondError::ContextWindowExceeded { tool_uses: 2 }
    ));
    assert_eq!(
        err.to_string(),
        "the assistant message stopped at model_context_window_exceeded, so its 2 tool_use \
         block(s) may be cut off and none was run; shorten the conversation (drop or summarize \
         earlier turns) and request the turn again"
    );
    assert_eq!(h.refunds(), 0);
    let not_run = "Not run: the assistant message stopped at model_context_window_exceeded, so \
                   this tool_use may be cut off.";
    let brief = |audit: Vec<Value>| -> Vec<Value> {
        audit
            .iter()
            .map(|l| json!([l["tool_use_id"], l["outcome"], l["is_error"], l["content"]]))
            .collect()
    };
    assert_eq!(
        brief(h.audit()),
        [
            json!(["toolu_c", "not_run", true, not_run]),
            json!(["toolu_d", "not_run", true, not_run]),
        ]
    );

    let lying = assistant(
        json!([
            {"type": "tool_use", "id": "toolu_e", "name": "refund", "input": {"order_id": "o_1", "amount_cents": 100}},
            {"type": "tool_use", "id": "toolu_f", "name": "refund", "input": "{\"order_id\": \"o_2\", \"amount_c"}
        ]),
        "tool_use",
    );
    let Ok(toolgate::Reply::Answer(answer)) = toolgate::block_on(h.session.respond(&lying)) else {
        panic!("the whole block runs, the cut one is answered invalid");
    };
    let invalid = "Error: invalid input for tool `refund`: the input must be a JSON object, but \
                   it is a string that is not valid JSON (EOF while parsing a string at line 1 \
                   column 29). Send an input that matches the tool's input_schema.";
    let results: Vec<(bool, String)> = answer
        .tool_results()
        .map(|r| (r.is_error, r.content_text().into_owned()))
        .collect();
    assert_eq!(
        results,
        [
            (false, "refunded 100 cents on o_1".to_owned()),
            (true, invalid.to_owned())
        ]
    );
    assert_eq!(h.refunds(), 1);
    assert_eq!(
        brief(h.audit())[2..],
        [
            json!(["toolu_e", "ok", false, "refunded 100 cents on o_1"]),
            json!(["toolu_f", "invalid_input", true, invalid]),
        ]
    );
}

#[test]
fn cancelled_when_the_host_drops_the_call() {
    let h = Harness::new();
    let call = ToolUse::new("toolu_slow", "slow_refund", json!({"order_id": "o_1"}));
    {
        let mut fut = std::pin::pin!(h.session.call(&call));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(fut.as_mut().poll(&mut cx).is_pending());
    } // dropped unfinished
    assert_eq!(h.refunds(), 1, "the tool had started");
    let audit = h.audit();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["outcome"], "cancelled");
    assert_eq!(audit[0]["tool_use_id"], "toolu_slow");
    assert_eq!(
        audit[0]["detail"],
        "the host dropped the call before it finished (while the tool ran)"
    );
    let summary = h.session.end();
    assert_eq!(summary.outcomes.get(&Outcome::Cancelled), Some(&1));
}

#[test]
fn a_call_dropped_by_a_thread_locals_destructor_at_thread_exit_is_recorded_cancelled() {
    // A host that keeps a call in a thread-local drops it when the thread exits, after the
    // per-thread buffers the library reuses may already be gone (destructors run in the reverse
    // order of first use: `HELD` first used before any call, so it is dropped last). The drop
    // must still release the call and write its line, not panic in a destructor (an abort).
    type Held = std::cell::RefCell<Option<std::pin::Pin<Box<dyn Future<Output = ()>>>>>;
    thread_local! {
        static HELD: Held = const { std::cell::RefCell::new(None) };
    }
    let dir = std::thread::spawn(|| {
        HELD.with(|_| {});
        let h: &'static Harness = Box::leak(Box::new(Harness::new()));
        // A call first, so the library's per-thread buffers exist (and are dropped before HELD).
        assert!(
            h.call("refund", json!({"order_id": "o_1", "amount_cents": 100}))
                .is_ok()
        );
        let call: &'static ToolUse = Box::leak(Box::new(ToolUse::new(
            "toolu_held",
            "slow_refund",
            json!({"order_id": "o_1"}),
        )));
        let mut fut: std::pin::Pin<Box<dyn Future<Output = ()>>> = Box::pin(async move {
            let _ = h.session.call(call).await;
        });
        let mut cx = Context::from_waker(Waker::noop());
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        HELD.with(|held| *held.borrow_mut() = Some(fut));
        h.dir.join("audit_log.jsonl")
    })
    .join()
    .expect("the thread ends without a panic");
    let audit = support::json_lines(&dir);
    assert_eq!(
        audit
            .iter()
            .map(|l| (l["tool_use_id"].clone(), l["outcome"].clone()))
            .collect::<Vec<_>>(),
        [
            (json!("toolu_1"), json!("ok")),
            (json!("toolu_held"), json!("cancelled"))
        ]
    );
}
