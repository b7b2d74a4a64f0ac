//! The approval inbox on PostgreSQL (features `postgres`, `inbox`): the inbox conformance suite;
//! every attempt a line of the `decisions` chain, written in the decision's transaction and
//! verified and exported like the other chains (an edited line named); two people deciding one
//! call at the same moment on connections of their own, one told who won; a decision one second
//! after the expiry refused and the call resumed as expired; eight worker processes racing for
//! one ready turn, one resume and one refund.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::Reply;
use toolgate::approval::PendingTurn;
use toolgate::approval::inbox::{
    Action, CallState, Choice, DecideError, Decided, DecisionRequest, Identity, Inbox, InboxCall,
    NotAllowed, Policy, Query, Refusal, conformance,
};
use toolgate::store::PendingStore;
use toolgate::store::postgres::PostgresStore;

use crate::agent::{self, Ledger};
use crate::server::{self, Sql, TestDb};
use crate::support::{self, TempDir};
use crate::worker::{self, Job};

#[test]
fn the_postgres_store_passes_the_inbox_conformance_suite() {
    let db = server::database();
    let store = PostgresStore::connect(&db.settings).unwrap();
    toolgate::block_on(conformance::inbox_store(&store));
    let verdict = toolgate::block_on(store.audit_sink().verify(None)).unwrap();
    assert!(verdict.is_ok(), "{verdict}");
}

/// Pauses the large refund `id` of session `session` in a parent agent and keeps it.
fn pause(db: &TestDb, store: &PostgresStore, session: &str, id: &str) -> PendingTurn {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ledger = rt.block_on(Ledger::connect(&db.settings, 99));
    let d = agent::dispatcher(ledger, Duration::from_secs(900), None);
    let s = d.session(agent::context(session));
    let message = support::assistant(
        json!([{"type": "tool_use", "id": id, "name": "refund",
                "input": {"order_id": format!("o_{id}"), "amount_cents": 25000}}]),
        "tool_use",
    );
    let Reply::Pending(turn) = toolgate::block_on(s.respond(&message)).unwrap() else {
        panic!("the refund waits for a person");
    };
    toolgate::block_on(store.put(&turn)).unwrap();
    turn
}

fn inbox(store: &PostgresStore) -> Inbox {
    // No decision log: the store writes each line in the decision's transaction.
    Inbox::builder(Arc::new(store.clone()))
        .policy(Policy::new().allow("group:leads", &[Action::Approve], &["refund"]))
        .build()
        .unwrap()
}

fn request(call: &InboxCall, digest: &str) -> DecisionRequest {
    DecisionRequest::new(
        &call.session_id,
        &call.turn_id,
        &call.tool_use_id,
        digest,
        Choice::Approve,
    )
}

fn lead(name: &str) -> Identity {
    Identity::new(name).in_group("leads")
}

fn decisions(sql: &Sql) -> Vec<Value> {
    sql.rows(
        "SELECT convert_from(line, 'UTF8') FROM toolgate_audit WHERE chain = 'decisions' \
         ORDER BY seq",
    )
    .into_iter()
    .map(|row| serde_json::from_str(row[0].as_deref().unwrap()).unwrap())
    .collect()
}

#[test]
fn every_attempt_is_a_line_of_the_decisions_chain_verified_and_exported_like_the_others() {
    let db = server::database();
    let store = PostgresStore::connect(&db.settings).unwrap();
    pause(&db, &store, "sess_lines", "toolu_1");
    let page = inbox(&store);
    let call = toolgate::block_on(page.list(&Query::waiting()))
        .unwrap()
        .calls
        .remove(0);
    let own = toolgate::block_on(page.decide(&lead("u_fleet"), request(&call, &call.input_digest)));
    assert_eq!(
        own,
        Err(DecideError::Refused(Refusal::NotAllowed(
            NotAllowed::OwnCall {
                user_id: "u_fleet".to_owned()
            }
        )))
    );
    let stale = "0".repeat(64);
    let blind = toolgate::block_on(page.decide(&lead("ann"), request(&call, &stale)));
    assert!(
        matches!(
            blind,
            Err(DecideError::Refused(Refusal::InputChanged { .. }))
        ),
        "{blind:?}"
    );
    let won =
        toolgate::block_on(page.decide(&lead("ann"), request(&call, &call.input_digest))).unwrap();
    let late = toolgate::block_on(page.decide(&lead("bob"), request(&call, &call.input_digest)));
    assert_eq!(
        late,
        Err(DecideError::Refused(Refusal::AlreadyDecided {
            state: CallState::Approved,
            by: "ann".to_owned(),
            at: won.at,
        }))
    );
    let mut unknown = request(&call, &call.input_digest);
    unknown.tool_use_id = "toolu_none".to_owned();
    assert!(toolgate::block_on(page.decide(&lead("ann"), unknown)).is_err());
    let sql = Sql::connect(&db.settings);
    let lines = decisions(&sql);
    let seen: Vec<(&str, &str, Option<&str>)> = lines
        .iter()
        .map(|l| {
            (
                l["by"].as_str().unwrap(),
                l["result"].as_str().unwrap(),
                l["refused"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("u_fleet", "refused", Some("not_allowed")),
            ("ann", "refused", Some("input_changed")),
            ("ann", "approved", None),
            ("bob", "refused", Some("already_decided")),
        ],
        "one line per attempt; the unknown call none"
    );
    assert_eq!(lines[2]["input_digest"], call.input_digest.as_str());
    let verdict = toolgate::block_on(store.audit_sink().verify(None)).unwrap();
    assert!(verdict.is_ok(), "{verdict}");
    assert_eq!(verdict.decisions.head().unwrap().lines, 4);
    let dir = TempDir::new("pg-inbox-export");
    toolgate::block_on(store.audit_sink().export_jsonl(dir.path())).unwrap();
    let files = toolgate::audit::verify_audit_dir(dir.path()).unwrap();
    assert!(files.is_ok());
    assert_eq!(files.decisions.files, [dir.join("decisions.jsonl")]);
    sql.run(
        "UPDATE toolgate_audit SET line = replace(convert_from(line, 'UTF8'), '\"ann\"', \
         '\"eve\"')::bytea WHERE chain = 'decisions' AND seq = 3",
    );
    let broken = toolgate::block_on(store.audit_sink().verify(None)).unwrap();
    assert_eq!(
        broken.decisions.to_string(),
        "decisions: broken: line 4 does not follow line 3: line 3 was edited, or lines were \
         deleted between them in postgres:toolgate_audit/decisions"
    );
}

#[test]
fn two_people_deciding_one_call_at_the_same_moment_one_wins_the_other_is_told_who() {
    let db = server::database();
    let store = PostgresStore::connect(&db.settings).unwrap();
    for round in 0..10 {
        pause(&db, &store, &format!("sess_{round}"), "toolu_big");
    }
    let calls = toolgate::block_on(inbox(&store).list(&Query::waiting()))
        .unwrap()
        .calls;
    assert_eq!(calls.len(), 10);
    // Each person's page has a store (connections) of its own.
    let pages = [
        inbox(&PostgresStore::connect(&db.settings).unwrap()),
        inbox(&PostgresStore::connect(&db.settings).unwrap()),
    ];
    for call in &calls {
        let barrier = Barrier::new(2);
        let answers: Vec<Result<Decided, DecideError>> = std::thread::scope(|s| {
            let handles: Vec<_> = pages
                .iter()
                .zip(["ann", "bob"])
                .map(|(page, who)| {
                    let barrier = &barrier;
                    s.spawn(move || {
                        barrier.wait();
                        toolgate::block_on(
                            page.decide(&lead(who), request(call, &call.input_digest)),
                        )
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let won: Vec<&Decided> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
        assert_eq!(won.len(), 1, "{answers:?}");
        assert!(
            answers.contains(&Err(DecideError::Refused(Refusal::AlreadyDecided {
                state: CallState::Approved,
                by: won[0].by.clone(),
                at: won[0].at,
            }))),
            "the other is told who won: {answers:?}"
        );
    }
}

#[test]
fn one_request_sent_twice_at_the_same_moment_decides_once_and_both_get_the_first_answer() {
    let db = server::database();
    let store = PostgresStore::connect(&db.settings).unwrap();
    for round in 0..8 {
        pause(&db, &store, &format!("sess_twice_{round}"), "toolu_big");
    }
    let calls = toolgate::block_on(inbox(&store).list(&Query::waiting()))
        .unwrap()
        .calls;
    // Two tabs of one person's page, each with a store (connections) of its own.
    let tabs = [
        inbox(&PostgresStore::connect(&db.settings).unwrap()),
        inbox(&PostgresStore::connect(&db.settings).unwrap()),
    ];
    for call in &calls {
        let request =
            request(call, &call.input_digest).idempotency_key(format!("form-{}", call.session_id));
        let barrier = Barrier::new(2);
        let answers: Vec<Result<Decided, DecideError>> = std::thread::scope(|s| {
            let handles: Vec<_> = tabs
                .iter()
                .map(|tab| {
                    let (barrier, request) = (&barrier, request.clone());
                    s.spawn(move || {
                        barrier.wait();
                        toolgate::block_on(tab.decide(&lead("ann"), request))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(answers[0].is_ok(), "{answers:?}");
        assert_eq!(answers[0], answers[1], "both get the first answer");
    }
    let sql = Sql::connect(&db.settings);
    assert_eq!(
        sql.int("SELECT count(*) FROM toolgate_audit WHERE chain = 'decisions'"),
        8,
        "one decision, one line, per call"
    );
}

#[test]
fn a_decision_one_second_after_the_expiry_is_refused_and_the_call_resumes_as_expired() {
    let db = server::database();
    let sql = Sql::connect(&db.settings);
    agent::make_ledger(&sql);
    let store = PostgresStore::connect(&db.settings).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let d = agent::dispatcher(
        rt.block_on(Ledger::connect(&db.settings, 1)),
        Duration::from_secs(900),
        None,
    );
    let message = support::assistant(
        json!([{"type": "tool_use", "id": "toolu_late", "name": "refund",
                "input": {"order_id": "o_late", "amount_cents": 25000}}]),
        "tool_use",
    );
    let s = d.session_with_store(agent::context("sess_late"), Arc::new(store.clone()));
    let Reply::Pending(mut turn) = toolgate::block_on(s.respond(&message)).unwrap() else {
        panic!("the refund waits for a person");
    };
    turn.pending_ttl = Some(Duration::from_secs(1));
    toolgate::block_on(store.put(&turn)).unwrap();
    let page = inbox(&store);
    let call = toolgate::block_on(page.list(&Query::waiting()))
        .unwrap()
        .calls
        .remove(0);
    std::thread::sleep(Duration::from_secs(2));
    let late = toolgate::block_on(page.decide(&lead("ann"), request(&call, &call.input_digest)));
    assert_eq!(
        late,
        Err(DecideError::Refused(Refusal::Expired {
            at: call.expires_at
        }))
    );
    let lease = Duration::from_secs(60);
    let ready = toolgate::block_on(page.take_ready(&d.fingerprint(), lease))
        .unwrap()
        .unwrap();
    assert_eq!(ready.expired, ["toolu_late"]);
    let answer = rt.block_on(s.resume_ready(&store, &ready)).unwrap();
    assert_eq!(
        serde_json::to_value(answer).unwrap()["content"][0]["content"],
        "BLOCKED: this call waited for a person's approval longer than 1 s and expired; it was \
         not done. Ask the user whether to try it again."
    );
    assert_eq!(sql.int("SELECT count(*) FROM ledger"), 0, "nothing ran");
}

#[test]
fn eight_worker_processes_racing_for_one_ready_turn_resume_it_once_and_refund_once() {
    let db = server::database();
    let sql = Sql::connect(&db.settings);
    agent::make_ledger(&sql);
    let store = PostgresStore::connect(&db.settings).unwrap();
    pause(&db, &store, "sess_ready", "toolu_big");
    let page = inbox(&store);
    let call = toolgate::block_on(page.list(&Query::waiting()))
        .unwrap()
        .calls
        .remove(0);
    toolgate::block_on(page.decide(&lead("ann"), request(&call, &call.input_digest))).unwrap();
    let dir = TempDir::new("pg-inbox-ready");
    let go = dir.join("go");
    let children: Vec<_> = (0..8)
        .map(|w| {
            let job = Job::ResumeReady {
                db: db.settings.clone(),
                worker: w,
                ready: dir.join(format!("ready{w}")),
                go: go.clone(),
                out: dir.join(format!("out{w}")),
            };
            worker::spawn(&job, &dir, &format!("ready{w}"))
        })
        .collect();
    while !(0..8).all(|w| dir.join(format!("ready{w}")).exists()) {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::fs::write(&go, b"").unwrap();
    for (w, child) in children.into_iter().enumerate() {
        worker::finish(child, &format!("ready{w}"));
    }
    let outs: Vec<String> = (0..8)
        .map(|w| std::fs::read_to_string(dir.join(format!("out{w}"))).unwrap())
        .collect();
    let resumed: Vec<&String> = outs.iter().filter(|o| o.starts_with("answer:")).collect();
    assert_eq!(resumed.len(), 1, "one worker resumed the turn: {outs:?}");
    assert!(
        outs.iter().all(|o| o.starts_with("answer:") || o == "none"),
        "{outs:?}"
    );
    assert_eq!(sql.int("SELECT count(*) FROM ledger"), 1, "one refund");
    let winner = sql.int("SELECT worker FROM ledger");
    let answer: Value = serde_json::from_str(&resumed[0]["answer:".len()..]).unwrap();
    assert_eq!(
        answer["content"][0]["content"],
        format!("refunded 25000 on o_toolu_big by worker {winner}")
    );
    let verdict = toolgate::block_on(store.audit_sink().verify(None)).unwrap();
    assert!(verdict.is_ok(), "{verdict}");
}
