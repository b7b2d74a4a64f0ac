//! The stores a session keeps its state in: the in-memory ones pass the conformance suite every
//! store passes; a turn resumed by many threads at once runs once; a call whose claim outlived
//! its lease (its worker died) is answered as interrupted and never run again; an answer the
//! memory could not record still reaches the model; a session on a store keeps the turns it
//! pauses (no `put` by the host), a person's approval names the input the store shows, and a
//! turn the store cannot keep is an error the retry mends.

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
        .approve_any_input("toolu_big", "lead")
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
        "no paused turn \"toolu_other\" of session \"sess_stores\" is kept in this store: check \
         that the session that paused it was opened on this store (Dispatcher::session_on, or \
         Session::with_pending_store), and that this session's id and the turn id (the id of the \
         turn's first tool_use) are the paused turn's"
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
        .approve_any_input("toolu_big", "lead")
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
        toolgate::store::StoreFuture::ready(Err(StoreError::new(
            toolgate::store::StoreErrorKind::Unavailable,
            "connection to db-7:5432 lost",
        )))
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

/// The session's context on a fixed clock, so a turn paused again is the same turn.
fn at_noon() -> HookContext {
    HookContext::builder("u_001", "sess_stores")
        .clock(toolgate::dispatch::Clock::fixed(
            std::time::UNIX_EPOCH + Duration::from_secs(1_796_400_000),
        ))
        .build()
}

/// The large refund and a small one in one message: the small one is answered, the large one
/// waits for a person.
fn two_refunds() -> toolgate::Message {
    support::assistant_with_id(
        "msg_two_refunds",
        json!([{"type": "tool_use", "id": "toolu_small", "name": "refund",
                "input": {"order_id": "o_1", "amount_cents": 900}},
               {"type": "tool_use", "id": "toolu_big", "name": "refund",
                "input": {"order_id": "o_2", "amount_cents": 25000}}]),
        "tool_use",
    )
}

#[test]
fn a_session_on_a_store_keeps_the_turn_it_pauses_so_resume_from_needs_no_put() {
    let runs = Arc::new(AtomicUsize::new(0));
    let d = refunds(&runs, Duration::from_secs(600));
    let turns = Arc::new(MemoryPendingStore::new());
    let session = d.session(at_noon()).with_pending_store(turns.clone());
    let Reply::Pending(turn) = toolgate::block_on(session.respond(&two_refunds())).unwrap() else {
        panic!("the large refund waits for a person");
    };
    // Kept by the session: the host put nothing.
    let waiting = toolgate::block_on(turns.waiting("sess_stores")).unwrap();
    assert_eq!(waiting, vec![turn.clone()]);
    assert_eq!(turn.turn_id, "msg_two_refunds");
    // A retry of the message pauses the same turn again and leaves the kept one as it was.
    let again = toolgate::block_on(session.respond(&two_refunds())).unwrap();
    assert_eq!(again, Reply::Pending(turn.clone()));
    assert_eq!(
        toolgate::block_on(turns.waiting("sess_stores")).unwrap(),
        vec![turn]
    );
    // The person decides on the call as the store shows it; the approval names its digest.
    let call = waiting[0].awaiting().next().unwrap();
    assert_eq!(
        (call.tool_use_id.as_str(), call.name.as_str()),
        ("toolu_big", "refund")
    );
    let decisions = Decisions::builder().approve(call, "lead").build().unwrap();
    assert_eq!(
        decisions.get("toolu_big"),
        Some(&toolgate::approval::Approval::approve_digest(
            "lead",
            &call.input_digest
        ))
    );
    // Another session of the conversation (a worker) resumes it from the store alone.
    let worker = d.session(at_noon());
    let answer =
        toolgate::block_on(worker.resume_from(&*turns, &waiting[0].turn_id, &decisions)).unwrap();
    assert_eq!(
        serde_json::to_value(answer).unwrap(),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_small", "content": "refunded 900 on o_1"},
            {"type": "tool_result", "tool_use_id": "toolu_big", "content": "refunded 25000 on o_2"}
        ]})
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2, "each refund once");
    assert!(
        toolgate::block_on(turns.waiting("sess_stores"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn an_approval_of_another_input_than_the_store_shows_is_refused_and_the_turn_waits_again() {
    let runs = Arc::new(AtomicUsize::new(0));
    let d = refunds(&runs, Duration::from_secs(600));
    let turns = Arc::new(MemoryPendingStore::new());
    let session = d.session(at_noon()).with_pending_store(turns.clone());
    let Reply::Pending(turn) = toolgate::block_on(session.respond(&two_refunds())).unwrap() else {
        panic!("the large refund waits for a person");
    };
    let shown = turn.awaiting().next().unwrap();
    // The person saw another input (a page showing a stale turn, or a forged form).
    let other = toolgate::approval::input_digest(&json!({"order_id": "o_2", "amount_cents": 900}));
    let stale = Decisions::builder()
        .decide(
            "toolu_big",
            toolgate::approval::Approval::approve_digest("lead", &other),
        )
        .build()
        .unwrap();
    let refused = toolgate::block_on(session.resume_from(&*turns, &turn.turn_id, &stale));
    assert_eq!(
        refused.unwrap_err().to_string(),
        format!(
            "the approval of tool_use \"toolu_big\" is for input digest {other}, but the call's \
             input has digest {}",
            shown.input_digest
        )
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the small refund only");
    assert_eq!(
        toolgate::block_on(turns.waiting("sess_stores")).unwrap(),
        vec![turn.clone()],
        "refused before anything ran: the turn waits again"
    );
    let decisions = Decisions::builder().approve(shown, "lead").build().unwrap();
    let answer = toolgate::block_on(session.resume_from(&*turns, &turn.turn_id, &decisions));
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// A store of paused turns whose `put` fails, as a database that is down.
struct Down;

impl PendingStore for Down {
    fn put<'a>(
        &'a self,
        _turn: &'a toolgate::approval::PendingTurn,
    ) -> toolgate::store::StoreFuture<'a, Result<(), StoreError>> {
        toolgate::store::StoreFuture::ready(Err(StoreError::new(
            toolgate::store::StoreErrorKind::Unavailable,
            "db-7:5432 refused the connection",
        )))
    }

    fn take<'a>(
        &'a self,
        _session_id: &'a str,
        _turn_id: &'a str,
        _token: Token,
        _lease: Duration,
    ) -> toolgate::store::StoreFuture<'a, Result<toolgate::store::Taken, StoreError>> {
        toolgate::store::StoreFuture::ready(Ok(toolgate::store::Taken::Missing))
    }

    fn resumed<'a>(
        &'a self,
        _session_id: &'a str,
        _turn_id: &'a str,
        _token: Token,
        _answer: &'a serde_json::Value,
    ) -> toolgate::store::StoreFuture<'a, Result<(), StoreError>> {
        toolgate::store::StoreFuture::ready(Ok(()))
    }

    fn put_back<'a>(
        &'a self,
        _session_id: &'a str,
        _turn_id: &'a str,
        _token: Token,
    ) -> toolgate::store::StoreFuture<'a, Result<(), StoreError>> {
        toolgate::store::StoreFuture::ready(Ok(()))
    }

    fn waiting<'a>(
        &'a self,
        _session_id: &'a str,
    ) -> toolgate::store::StoreFuture<'a, Result<Vec<toolgate::approval::PendingTurn>, StoreError>>
    {
        toolgate::store::StoreFuture::ready(Ok(Vec::new()))
    }
}

#[test]
fn a_paused_turn_the_store_cannot_keep_is_an_error_and_a_retry_pauses_it_again() {
    let runs = Arc::new(AtomicUsize::new(0));
    let d = refunds(&runs, Duration::from_secs(600));
    let session = d.session(at_noon()).with_pending_store(Arc::new(Down));
    let e = toolgate::block_on(session.respond(&two_refunds())).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the turn \"msg_two_refunds\" of session \"sess_stores\" paused for a person's approval, but \
         the session's store of paused turns could not keep it: db-7:5432 refused the \
         connection; retry the message once the store is back (the answered calls are \
         replayed, the waiting ones pause again)"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the small refund ran");
    // The store is back (here: a session on a working store, the same answer memory's
    // promise): the answered call is replayed, the waiting one pauses again and is kept.
    let turns = Arc::new(MemoryPendingStore::new());
    let answers: Arc<dyn AnswerStore> = Arc::new(MemoryAnswerStore::new());
    let first = d
        .session_with_store(at_noon(), answers.clone())
        .with_pending_store(Arc::new(Down));
    assert!(toolgate::block_on(first.respond(&two_refunds())).is_err());
    let retry = d
        .session_with_store(at_noon(), answers)
        .with_pending_store(turns.clone());
    let Reply::Pending(turn) = toolgate::block_on(retry.respond(&two_refunds())).unwrap() else {
        panic!("the large refund waits again");
    };
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the small refund once per answer memory"
    );
    assert_eq!(
        toolgate::block_on(turns.waiting("sess_stores")).unwrap(),
        vec![turn]
    );
}
