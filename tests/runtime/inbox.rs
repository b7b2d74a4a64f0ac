//! The approval inbox (feature `inbox`) over the in-memory store: the conformance suite every
//! inbox store passes, and the whole path a page and a worker take: the policy applied to the
//! signed-in identity before the store's write (the requester refused on their own call, a
//! person no rule covers refused), an edit checked against the published schema and decided on
//! again by the PreToolUse chain at resume, a call that expired resumed as expired, a
//! two-person tool not ready after one approval, every attempt a line of the `decisions` chain.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::approval::PendingTurn;
use toolgate::approval::inbox::{
    Action, CallState, Choice, DecideError, DecisionRequest, Identity, Inbox, InboxCall,
    InboxError, MemoryDecisionLog, NotAllowed, Policy, Query, Refusal, conformance,
};
use toolgate::dispatch::{DispatcherBuilder, PreHookDef, ToolDef};
use toolgate::store::{MemoryPendingStore, PendingStore};
use toolgate::{Decision, Dispatcher, HookContext, Reply, ToolUse};

use crate::support;

#[test]
fn the_memory_store_passes_the_inbox_conformance_suite() {
    toolgate::block_on(conformance::inbox_store(&MemoryPendingStore::new()));
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    /// The order.
    order_id: String,
    /// Cents.
    amount_cents: u64,
}

/// A refund tool that counts its runs; every refund asks a person; refunds over 30 000 cents
/// are denied whoever approved them.
fn dispatcher(runs: &Arc<AtomicUsize>, ttl: Duration) -> Dispatcher {
    let runs = Arc::clone(runs);
    Dispatcher::builder()
        .tool(ToolDef::sync(
            "refund",
            "Refunds an order.",
            move |_env, a: Refund| {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(format!("refunded {} on {}", a.amount_cents, a.order_id))
            },
        ))
        .pre_hook(PreHookDef::sync("app::cap", 10, |_env, call: &ToolUse| {
            Ok(match call.input["amount_cents"].as_u64() {
                Some(n) if n > 30_000 => Decision::deny("refunds above 30000 cents are refused."),
                _ => Decision::ask("refunds need a person's approval"),
            })
        }))
        .pending_ttl(ttl)
        .build()
        .unwrap()
}

fn context() -> HookContext {
    HookContext::builder("u_001", "sess_inbox").build()
}

/// Pauses a turn of refunds (`(id, cents)`) and keeps it in `store`.
fn pause(d: &Dispatcher, store: &MemoryPendingStore, refunds: &[(&str, u64)]) -> PendingTurn {
    let blocks: Vec<Value> = refunds
        .iter()
        .map(|(id, cents)| {
            json!({"type": "tool_use", "id": id, "name": "refund",
                   "input": {"order_id": format!("o_{id}"), "amount_cents": cents}})
        })
        .collect();
    let message = support::assistant(Value::Array(blocks), "tool_use");
    let Reply::Pending(turn) = toolgate::block_on(d.session(context()).respond(&message)).unwrap()
    else {
        panic!("the refunds wait for a person");
    };
    toolgate::block_on(store.put(&turn)).unwrap();
    turn
}

fn policy() -> Policy {
    Policy::new()
        .allow(
            "group:leads",
            &[Action::Approve, Action::Edit, Action::Decline],
            &["refund"],
        )
        .allow("u_001", &[Action::Approve], &["*"])
}

fn request(call: &InboxCall, choice: Choice) -> DecisionRequest {
    DecisionRequest::new(
        &call.session_id,
        &call.turn_id,
        &call.tool_use_id,
        &call.input_digest,
        choice,
    )
}

fn waiting(inbox: &Inbox) -> Vec<InboxCall> {
    toolgate::block_on(inbox.list(&Query::waiting().session("sess_inbox")))
        .unwrap()
        .calls
}

fn refused(result: Result<toolgate::approval::inbox::Decided, DecideError>) -> Refusal {
    match result {
        Err(DecideError::Refused(r)) => r,
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn the_page_decides_through_the_policy_and_a_worker_resumes_each_call_as_decided() {
    let runs = Arc::new(AtomicUsize::new(0));
    let d = dispatcher(&runs, DispatcherBuilder::DEFAULT_PENDING_TTL);
    let store = Arc::new(MemoryPendingStore::new());
    let turn = pause(
        &d,
        &store,
        &[("toolu_1", 25_000), ("toolu_2", 900), ("toolu_3", 500)],
    );
    let log = Arc::new(MemoryDecisionLog::new());
    let inbox = Inbox::builder(store.clone())
        .policy(policy())
        .decision_log(log.clone())
        .build()
        .unwrap();
    toolgate::block_on(inbox.publish(&d)).unwrap();
    let calls = waiting(&inbox);
    let lead = Identity::new("lead@example.com").in_group("leads");
    let requester = Identity::new("u_001");
    let stranger = Identity::new("someone@example.com");
    assert_eq!(
        inbox.allowed(&lead, &calls[0]),
        [Action::Approve, Action::Edit, Action::Decline]
    );
    assert_eq!(inbox.allowed(&requester, &calls[0]), []);
    let own = toolgate::block_on(inbox.decide(&requester, request(&calls[0], Choice::Approve)));
    assert_eq!(
        refused(own),
        Refusal::NotAllowed(NotAllowed::OwnCall {
            user_id: "u_001".to_owned()
        }),
        "the requester may not approve their own call, though a rule names them"
    );
    let stranger_says =
        toolgate::block_on(inbox.decide(&stranger, request(&calls[0], Choice::Approve)));
    assert_eq!(
        refused(stranger_says),
        Refusal::NotAllowed(NotAllowed::NoRule {
            by: "someone@example.com".to_owned(),
            action: Action::Approve,
            tool: "refund".to_owned(),
        })
    );
    // An edit whose values came back as strings, or that names another field, is refused with
    // every problem; one that fits is taken.
    let as_strings = Choice::Edit {
        input: json!({"order_id": "o_toolu_1", "amount_cents": "20000", "tool": "wire"}),
    };
    let Refusal::InvalidEdit { problems } = refused(toolgate::block_on(
        inbox.decide(&lead, request(&calls[0], as_strings)),
    )) else {
        panic!("an invalid edit")
    };
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["amount_cents", ""], "{problems:?}");
    let edit = Choice::Edit {
        input: json!({"order_id": "o_toolu_1", "amount_cents": 20_000}),
    };
    let edited = toolgate::block_on(inbox.decide(&lead, request(&calls[0], edit))).unwrap();
    assert_eq!(
        (edited.state, edited.by.as_str()),
        (CallState::Edited, "lead@example.com")
    );
    // Over the cap: the chain's deny wins at resume, whoever approved.
    let too_much = Choice::Edit {
        input: json!({"order_id": "o_toolu_2", "amount_cents": 40_000}),
    };
    toolgate::block_on(inbox.decide(&lead, request(&calls[1], too_much))).unwrap();
    let no = Choice::Decline {
        reason: "the order was refunded already".to_owned(),
    };
    toolgate::block_on(inbox.decide(&lead, request(&calls[2], no))).unwrap();
    assert_eq!(waiting(&inbox), [], "every call decided");
    let lease = Duration::from_secs(60);
    let ready = toolgate::block_on(inbox.take_ready(&d.fingerprint(), lease))
        .unwrap()
        .unwrap();
    assert_eq!(ready.turn, turn);
    let answer =
        toolgate::block_on(d.session(context()).resume_ready(store.as_ref(), &ready)).unwrap();
    assert_eq!(
        serde_json::to_value(&answer).unwrap(),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "refunded 20000 on o_toolu_1"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
             "content": "BLOCKED: refunds above 30000 cents are refused."},
            {"type": "tool_result", "tool_use_id": "toolu_3", "is_error": true,
             "content": "BLOCKED: a person declined this call: the order was refunded already"},
        ]})
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "one refund ran, with the edit"
    );
    assert_eq!(
        toolgate::block_on(inbox.take_ready(&d.fingerprint(), lease)).unwrap(),
        None,
        "a resumed turn is not ready again"
    );
    decision_lines(&log);
}

/// The `decisions` chain of the test above: one line per attempt but the malformed and
/// unknown ones, each with who, what, the digest seen and what came of it, chained.
fn decision_lines(log: &MemoryDecisionLog) {
    let lines: Vec<Value> = log
        .lines()
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: Vec<(&str, &str, &str, Option<&str>)> = lines
        .iter()
        .map(|l| {
            (
                l["by"].as_str().unwrap(),
                l["action"].as_str().unwrap(),
                l["result"].as_str().unwrap(),
                l["refused"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("u_001", "approve", "refused", Some("not_allowed")),
            (
                "someone@example.com",
                "approve",
                "refused",
                Some("not_allowed")
            ),
            ("lead@example.com", "edit", "refused", Some("invalid_edit")),
            ("lead@example.com", "edit", "edited", None),
            ("lead@example.com", "edit", "edited", None),
            ("lead@example.com", "decline", "declined", None),
        ]
    );
    assert_eq!(lines[0]["tool_use_id"], "toolu_1");
    assert_eq!(
        lines[0]["input_digest"],
        support::sha256_hex(br#"{"order_id":"o_toolu_1","amount_cents":25000}"#)
    );
    assert_eq!(lines[5]["reason"], "the order was refunded already");
    let mut prev = "0".repeat(64);
    for line in log.lines() {
        assert_eq!(
            serde_json::from_str::<Value>(&line).unwrap()["prev"],
            prev.as_str()
        );
        prev = support::sha256_hex(format!("{line}\n").as_bytes());
    }
}

#[test]
fn a_call_nobody_decided_in_time_resumes_as_expired_beside_the_decided_one() {
    let runs = Arc::new(AtomicUsize::new(0));
    let d = dispatcher(&runs, Duration::from_secs(1));
    let store = Arc::new(MemoryPendingStore::new());
    pause(&d, &store, &[("toolu_1", 100), ("toolu_2", 200)]);
    let inbox = Inbox::builder(store.clone())
        .policy(policy())
        .decision_log(Arc::new(MemoryDecisionLog::new()))
        .build()
        .unwrap();
    let lead = Identity::new("lead@example.com").in_group("leads");
    let calls = waiting(&inbox);
    toolgate::block_on(inbox.decide(&lead, request(&calls[0], Choice::Approve))).unwrap();
    std::thread::sleep(Duration::from_millis(2000));
    let late = toolgate::block_on(inbox.decide(&lead, request(&calls[1], Choice::Approve)));
    assert_eq!(
        refused(late),
        Refusal::Expired {
            at: calls[1].expires_at
        }
    );
    let ready = toolgate::block_on(inbox.take_ready(&d.fingerprint(), Duration::from_secs(60)))
        .unwrap()
        .unwrap();
    assert_eq!(ready.expired, ["toolu_2"]);
    let answer =
        toolgate::block_on(d.session(context()).resume_ready(store.as_ref(), &ready)).unwrap();
    assert_eq!(
        serde_json::to_value(&answer).unwrap()["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "refunded 100 on o_toolu_1"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
             "content": "BLOCKED: this call waited for a person's approval longer than 1 s and \
                         expired; it was not done. Ask the user whether to try it again."},
        ]),
        "the model is told the call expired, not that a person declined it"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn a_two_person_tool_waits_for_a_second_different_person() {
    let runs = Arc::new(AtomicUsize::new(0));
    let d = dispatcher(&runs, DispatcherBuilder::DEFAULT_PENDING_TTL);
    let store = Arc::new(MemoryPendingStore::new());
    pause(&d, &store, &[("toolu_1", 100)]);
    let inbox = Inbox::builder(store.clone())
        .policy(policy().two_person("refund"))
        .decision_log(Arc::new(MemoryDecisionLog::new()))
        .build()
        .unwrap();
    let (ann, bob) = (
        Identity::new("ann@example.com").in_group("leads"),
        Identity::new("bob@example.com").in_group("leads"),
    );
    let call = waiting(&inbox).remove(0);
    let first = toolgate::block_on(inbox.decide(&ann, request(&call, Choice::Approve))).unwrap();
    assert_eq!(first.state, CallState::Waiting);
    let lease = Duration::from_secs(60);
    assert_eq!(
        toolgate::block_on(inbox.take_ready(&d.fingerprint(), lease)).unwrap(),
        None
    );
    let again = toolgate::block_on(inbox.decide(&ann, request(&call, Choice::Approve)));
    assert_eq!(refused(again), Refusal::AlreadyApproved { at: first.at });
    let second = toolgate::block_on(inbox.decide(&bob, request(&call, Choice::Approve))).unwrap();
    assert_eq!(second.state, CallState::Approved);
    let ready = toolgate::block_on(inbox.take_ready(&d.fingerprint(), lease))
        .unwrap()
        .unwrap();
    toolgate::block_on(d.session(context()).resume_ready(store.as_ref(), &ready)).unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn an_edit_is_refused_when_the_tools_are_unknown_and_an_inbox_without_a_log_is_not_built() {
    let runs = Arc::new(AtomicUsize::new(0));
    let d = dispatcher(&runs, DispatcherBuilder::DEFAULT_PENDING_TTL);
    let store = Arc::new(MemoryPendingStore::new());
    pause(&d, &store, &[("toolu_1", 100)]);
    assert_eq!(
        Inbox::builder(store.clone()).build().unwrap_err(),
        InboxError::NoDecisionLog
    );
    let inbox = Inbox::builder(store.clone())
        .policy(policy())
        .decision_log(Arc::new(MemoryDecisionLog::new()))
        .build()
        .unwrap();
    let lead = Identity::new("lead@example.com").in_group("leads");
    let call = waiting(&inbox).remove(0);
    let edit = Choice::Edit {
        input: json!({"order_id": "o_1", "amount_cents": 50}),
    };
    let got = toolgate::block_on(inbox.decide(&lead, request(&call, edit.clone())));
    assert_eq!(
        refused(got),
        Refusal::EditUncheckable {
            fingerprint: d.fingerprint()
        }
    );
    let local = Inbox::builder(store.clone())
        .policy(policy())
        .decision_log(Arc::new(MemoryDecisionLog::new()))
        .tools(toolgate::approval::inbox::PublishedTools::of(&d))
        .build()
        .unwrap();
    let taken = toolgate::block_on(local.decide(&lead, request(&call, edit))).unwrap();
    assert_eq!(
        taken.state,
        CallState::Edited,
        "the dispatcher's own tools check it"
    );
    let bad = DecisionRequest::new(
        "sess_inbox",
        "toolu_1",
        "toolu_1",
        "d",
        Choice::Decline {
            reason: " ".to_owned(),
        },
    );
    assert_eq!(
        refused(toolgate::block_on(inbox.decide(&lead, bad))),
        Refusal::BadRequest {
            problem: "a decline needs a reason for the model".to_owned()
        }
    );
}

#[test]
fn a_turn_written_without_a_ttl_keeps_the_default_one() {
    let runs = Arc::new(AtomicUsize::new(0));
    let d = dispatcher(&runs, Duration::from_secs(90));
    let turn = pause(&d, &MemoryPendingStore::new(), &[("toolu_1", 100)]);
    assert_eq!(
        turn.ttl(),
        Duration::from_secs(90),
        "the pausing dispatcher's pending_ttl"
    );
    let mut json = serde_json::to_value(&turn).unwrap();
    assert_eq!(json["pending_ttl_ms"], 90_000);
    json.as_object_mut().unwrap().remove("pending_ttl_ms");
    let older: PendingTurn = serde_json::from_value(json).unwrap();
    assert_eq!(older.ttl(), DispatcherBuilder::DEFAULT_PENDING_TTL);
}

#[test]
fn the_decisions_file_is_a_chain_the_folders_verifier_checks_and_names_an_edited_line_in() {
    use toolgate::approval::inbox::DecisionFiles;
    let runs = Arc::new(AtomicUsize::new(0));
    let d = dispatcher(&runs, DispatcherBuilder::DEFAULT_PENDING_TTL);
    let store = Arc::new(MemoryPendingStore::new());
    pause(&d, &store, &[("toolu_1", 100), ("toolu_2", 200)]);
    let dir = support::TempDir::new("inbox-files");
    let inbox = Inbox::builder(store.clone())
        .policy(policy())
        .decision_log(Arc::new(DecisionFiles::open(dir.path()).unwrap()))
        .build()
        .unwrap();
    let lead = Identity::new("lead@example.com").in_group("leads");
    let calls = waiting(&inbox);
    let own = toolgate::block_on(
        inbox.decide(&Identity::new("u_001"), request(&calls[0], Choice::Approve)),
    );
    assert!(own.is_err());
    for call in &calls {
        toolgate::block_on(inbox.decide(&lead, request(call, Choice::Approve))).unwrap();
    }
    let file = dir.join("decisions.jsonl");
    let verified = toolgate::audit::verify_audit_dir(dir.path()).unwrap();
    assert!(verified.is_ok());
    let summary = verified.to_string();
    let lines: Vec<&str> = summary.lines().collect();
    assert_eq!(lines.len(), 4, "{summary}");
    assert!(
        lines[2].starts_with("decisions.jsonl: ok, 3 lines, last hash "),
        "{summary}"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replacen("lead@example.com", "eve@example.com", 1),
    )
    .unwrap();
    let broken = toolgate::audit::verify_audit_dir(dir.path()).unwrap();
    assert!(!broken.is_ok());
    let summary = broken.to_string();
    assert!(
        summary.contains(&format!(
            "decisions.jsonl: broken: line 3 does not follow line 2: line 2 was edited, or lines \
             were deleted between them in {}",
            file.display()
        )),
        "{summary}"
    );
}

/// A decision log that cannot write.
struct Full;

impl toolgate::approval::inbox::DecisionLog for Full {
    fn record<'a>(
        &'a self,
        _line: &'a toolgate::approval::inbox::DecisionLine,
    ) -> toolgate::store::StoreFuture<'a, Result<(), toolgate::store::StoreError>> {
        toolgate::store::StoreFuture::ready(Err(toolgate::store::StoreError::new(
            toolgate::store::StoreErrorKind::Unavailable,
            "disk full",
        )))
    }
}

#[test]
fn a_decision_whose_line_cannot_be_written_is_recorded_and_says_so() {
    let runs = Arc::new(AtomicUsize::new(0));
    let d = dispatcher(&runs, DispatcherBuilder::DEFAULT_PENDING_TTL);
    let store = Arc::new(MemoryPendingStore::new());
    pause(&d, &store, &[("toolu_1", 100)]);
    let inbox = Inbox::builder(store.clone())
        .policy(policy())
        .decision_log(Arc::new(Full))
        .build()
        .unwrap();
    let lead = Identity::new("lead@example.com").in_group("leads");
    let call = waiting(&inbox).remove(0);
    let request = request(&call, Choice::Approve).idempotency_key("k1");
    let Err(DecideError::Unaudited { answer, error }) =
        toolgate::block_on(inbox.decide(&lead, request.clone()))
    else {
        panic!("the line is not written");
    };
    assert_eq!(error.to_string(), "the store failed: disk full");
    let decided = (*answer).unwrap();
    assert_eq!(decided.state, CallState::Approved, "the decision stands");
    assert_eq!(
        toolgate::block_on(inbox.decide(&lead, request)),
        Ok(decided),
        "the same request again gets the recorded answer"
    );
}
