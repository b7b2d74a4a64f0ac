//! The stores a session keeps its state in: the in-memory ones pass the conformance suite every
//! store passes; a turn resumed by many threads at once runs once; a call whose claim outlived
//! its lease (its worker died) is answered as interrupted and never run again; an answer the
//! memory could not record still reaches the model.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use toolgate::{
    Decision, Dispatcher, HookContext, Reply, ToolResult, ToolUse,
    approval::{Decisions, ResumeError, Resumed},
    dispatch::{PreHookDef, ToolDef},
    store::{
        AnswerStore, CallKey, InputDigest, MemoryAnswerStore, MemoryPendingStore, PendingStore,
        StoreError, Token, conformance,
    },
};

use crate::support;

#[test]
fn the_in_memory_stores_pass_the_conformance_suite() {
    toolgate::block_on(conformance::answer_store(&MemoryAnswerStore::new()));
    toolgate::block_on(conformance::pending_store(&MemoryPendingStore::new()));
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    /// The order.
    order_id: String,
    /// Cents.
    amount_cents: u64,
}

/// A refund tool counting its runs, behind a rule that asks a person about refunds above
/// 20 000 cents; claims last `lease`.
fn refunds(runs: &Arc<AtomicUsize>, lease: Duration) -> Dispatcher {
    let ran = Arc::clone(runs);
    Dispatcher::builder()
        .tool(ToolDef::sync(
            "refund",
            "Refunds an order.",
            move |_env, r: Refund| {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok(format!("refunded {} on {}", r.amount_cents, r.order_id))
            },
        ))
        .pre_hook(PreHookDef::sync(
            "app::large_refund",
            10,
            |_env, call: &ToolUse| {
                Ok(match call.input["amount_cents"].as_u64() {
                    Some(n) if n > 20_000 => Decision::ask("refunds above 20000 cents"),
                    _ => Decision::Allow,
                })
            },
        ))
        .claim_lease(lease)
        .build()
        .unwrap()
}

fn ctx() -> HookContext {
    HookContext::builder("u_001", "sess_stores").build()
}

#[test]
fn a_turn_resumed_by_eight_threads_at_once_runs_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let d = refunds(&runs, Duration::from_secs(600));
    let answers: Arc<dyn AnswerStore> = Arc::new(MemoryAnswerStore::new());
    let pending = Arc::new(MemoryPendingStore::new());
    let message = support::assistant(
        json!([{"type": "tool_use", "id": "toolu_big", "name": "refund",
                "input": {"order_id": "o_1", "amount_cents": 25000}}]),
        "tool_use",
    );
    let session = d.session_with_store(ctx(), Arc::clone(&answers));
    let Reply::Pending(turn) = toolgate::block_on(session.respond(&message)).unwrap() else {
        panic!("the refund waits for a person");
    };
    toolgate::block_on(pending.put(&turn)).unwrap();
    let decisions = Decisions::builder()
        .approve("toolu_big", "lead")
        .build()
        .unwrap();
    let barrier = Arc::new(std::sync::Barrier::new(8));
    let outcomes: Vec<Result<Resumed, ResumeError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (d, answers, pending) = (&d, &answers, &pending);
                let (decisions, barrier) = (&decisions, &barrier);
                s.spawn(move || {
                    // Each worker its own session of the same conversation, one shared store.
                    let session = d.session_with_store(ctx(), Arc::clone(answers));
                    barrier.wait();
                    toolgate::block_on(session.resume_from(&**pending, "toolu_big", decisions))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(runs.load(Ordering::SeqCst), 1, "one refund, whoever won");
    let done = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_big", "content": "refunded 25000 on o_1"}
    ]});
    for outcome in &outcomes {
        match outcome {
            Ok(answer) => assert_eq!(serde_json::to_value(answer).unwrap(), done),
            Err(e) => assert_eq!(
                e.to_string(),
                "the paused turn \"toolu_big\" is being resumed by another caller; nothing was \
                 run: ask again once it is done to get its answer"
            ),
        }
    }
    assert!(outcomes.iter().any(Result::is_ok));
    // Once it is done, every later resume gets the winner's answer.
    let later = d.session_with_store(ctx(), Arc::clone(&answers));
    let again = toolgate::block_on(later.resume_from(&*pending, "toolu_big", &decisions));
    assert_eq!(serde_json::to_value(again.unwrap()).unwrap(), done);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let missing = toolgate::block_on(later.resume_from(&*pending, "toolu_other", &decisions));
    assert_eq!(
        missing.unwrap_err().to_string(),
        "no paused turn \"toolu_other\" of session \"sess_stores\" is kept in the store"
    );
}

#[test]
fn a_refused_resume_puts_the_turn_back_to_wait() {
    let runs = Arc::new(AtomicUsize::new(0));
    let d = refunds(&runs, Duration::from_secs(600));
    let pending = MemoryPendingStore::new();
    let message = support::assistant(
        json!([{"type": "tool_use", "id": "toolu_big", "name": "refund",
                "input": {"order_id": "o_1", "amount_cents": 25000}}]),
        "tool_use",
    );
    let session = d.session(ctx());
    let Reply::Pending(turn) = toolgate::block_on(session.respond(&message)).unwrap() else {
        panic!("the refund waits for a person");
    };
    toolgate::block_on(pending.put(&turn)).unwrap();
    // No decision: refused before anything ran, and the turn waits again.
    let e = toolgate::block_on(session.resume_from(&pending, "toolu_big", &Decisions::new()));
    assert_eq!(
        e.unwrap_err().to_string(),
        "tool_use \"toolu_big\" is waiting for approval and has no decision"
    );
    assert_eq!(
        toolgate::block_on(pending.waiting("sess_stores")).unwrap(),
        vec![turn]
    );
    let decisions = Decisions::builder()
        .approve("toolu_big", "lead")
        .build()
        .unwrap();
    let answer = toolgate::block_on(session.resume_from(&pending, "toolu_big", &decisions));
    assert!(answer.is_ok());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(
        toolgate::block_on(pending.waiting("sess_stores"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_claim_whose_worker_died_is_answered_as_interrupted_and_never_run_again() {
    let runs = Arc::new(AtomicUsize::new(0));
    let d = refunds(&runs, Duration::from_millis(100));
    let store = Arc::new(MemoryAnswerStore::new());
    let call = ToolUse::new(
        "toolu_1",
        "refund",
        json!({"order_id": "o_1", "amount_cents": 900}),
    );
    // A worker claimed the call, then died before it answered (nothing releases the claim).
    let digest = InputDigest::of(&call.input, 32);
    let key = CallKey::new("sess_stores", "toolu_1");
    let token = toolgate::store::Token::draw();
    let claimed = toolgate::block_on(store.claim(key, token, digest, Duration::from_millis(100)));
    assert_eq!(claimed.unwrap(), toolgate::store::Claim::Claimed);
    let session = d.session_with_store(ctx(), store.clone());
    // Within the lease, a retry on another worker is refused as in progress.
    let early = toolgate::block_on(session.call(&call)).unwrap_err();
    assert_eq!(
        early.to_string(),
        "tool_use \"toolu_1\" is still being answered by an earlier attempt; nothing was run \
         twice: wait for it, then retry to get its answer"
    );
    std::thread::sleep(Duration::from_millis(250));
    // After it: answered as interrupted, the tool never run, then and on every retry.
    for _ in 0..2 {
        let result = toolgate::block_on(session.call(&call)).unwrap();
        assert_eq!(
            result,
            ToolResult::error(
                "toolu_1",
                "Not run: this call was interrupted earlier while the tool ran, so it may or \
                 may not have taken effect, and it is not run again. Check whether it took \
                 effect before making the call again."
            )
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// The in-memory store whose `answered` fails, as a database whose connection dropped after
/// the tool ran.
struct LostAfterRun(MemoryAnswerStore);

impl AnswerStore for LostAfterRun {
    fn claim<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        digest: InputDigest,
        lease: Duration,
    ) -> toolgate::store::StoreFuture<'a, Result<toolgate::store::Claim, StoreError>> {
        self.0.claim(key, token, digest, lease)
    }

    fn answered<'a>(
        &'a self,
        _key: CallKey<'a>,
        _token: Token,
        _outcome: toolgate::audit::Outcome,
        _result: &'a ToolResult,
    ) -> toolgate::store::StoreFuture<'a, Result<(), StoreError>> {
        toolgate::store::StoreFuture::ready(Err(StoreError::new("connection to db-7:5432 lost")))
    }

    fn release<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        tool_started: bool,
    ) -> toolgate::store::StoreFuture<'a, Result<(), StoreError>> {
        self.0.release(key, token, tool_started)
    }
}

#[test]
fn an_answer_the_memory_could_not_record_still_reaches_the_model_and_the_audit_line_says_so() {
    let runs = Arc::new(AtomicUsize::new(0));
    let lines = crate::ask::Lines::default();
    let ran = Arc::clone(&runs);
    let d = Dispatcher::builder()
        .tool(
            ToolDef::sync("refund", "Refunds an order.", move |_env, r: Refund| {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok(format!("refunded {} on {}", r.amount_cents, r.order_id))
            })
            .unguarded("the test's own tool"),
        )
        .audit_log(
            toolgate::audit::AuditLog::builder()
                .sink(lines.clone())
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let store = Arc::new(LostAfterRun(MemoryAnswerStore::new()));
    let session = d.session_with_store(ctx(), store);
    let call = ToolUse::new(
        "toolu_1",
        "refund",
        json!({"order_id": "o_1", "amount_cents": 900}),
    );
    let result = toolgate::block_on(session.call(&call)).unwrap();
    assert_eq!(result, ToolResult::text("toolu_1", "refunded 900 on o_1"));
    let line = &lines.take()[0];
    assert_eq!(line["outcome"], "ok");
    assert_eq!(
        line["detail"],
        "the answer memory could not record this answer (the store failed: connection to \
         db-7:5432 lost): a retry within the claim's lease is refused as in progress, after it \
         answered as interrupted"
    );
    // The claim was released as interrupted (its tool ran): a retry never runs it again.
    let again = toolgate::block_on(session.call(&call)).unwrap();
    assert!(
        again
            .content_text()
            .starts_with("Not run: this call was interrupted earlier")
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
