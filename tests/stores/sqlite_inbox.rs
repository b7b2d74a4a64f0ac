//! `SqliteStore` as the approval inbox's store (features `sqlite`, `inbox`): the inbox
//! conformance suite on a fresh file; two people deciding one call at the same moment, each on
//! a connection of their own, one told who won; eight workers racing for one ready turn, one
//! resume and one refund; a file written at schema version 1 migrated, its kept turn resumed as
//! before and not listed.

use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::approval::Decisions;
use toolgate::approval::inbox::{
    Action, CallState, Choice, DecideError, Decided, DecisionRequest, Identity, Inbox,
    MemoryDecisionLog, Policy, Query, Refusal, conformance,
};
use toolgate::dispatch::{Effect, PreHookDef, ToolDef};
use toolgate::store::PendingStore;
use toolgate::store::sqlite::SqliteStore;
use toolgate::{Decision, Dispatcher, HookContext, Reply, ToolUse};

use crate::support::{self, TempDir};

#[test]
fn the_sqlite_store_passes_the_inbox_conformance_suite() {
    let dir = TempDir::new("sqlite-inbox-conformance");
    let store = SqliteStore::open(dir.join("store.sqlite3")).unwrap();
    toolgate::block_on(conformance::inbox_store(&store));
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    /// The order.
    order_id: String,
    /// Cents.
    amount_cents: u64,
}

/// A refund tool that writes one ledger row per run in `file` (a connection of its own), behind
/// a rule that asks a person about every refund.
fn refunds(file: &Path) -> Dispatcher {
    let file = file.to_path_buf();
    Dispatcher::builder()
        .tool(
            ToolDef::sync("refund", "Refunds an order.", move |_env, r: Refund| {
                let db = rusqlite::Connection::open(&file).unwrap();
                db.busy_timeout(Duration::from_secs(30)).unwrap();
                db.execute(
                    "INSERT INTO inbox_ledger (order_id, amount_cents) VALUES (?1, ?2)",
                    (&r.order_id, r.amount_cents as i64),
                )
                .unwrap();
                Ok(format!("refunded {} on {}", r.amount_cents, r.order_id))
            })
            .effect(Effect::write()),
        )
        .pre_hook(PreHookDef::sync("app::ask", 10, |_env, _call: &ToolUse| {
            Ok(Decision::ask("refunds need a person"))
        }))
        .build()
        .unwrap()
}

fn ledger_rows(file: &Path) -> i64 {
    rusqlite::Connection::open(file)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM inbox_ledger", [], |r| r.get(0))
        .unwrap()
}

fn context(session: &str) -> HookContext {
    HookContext::builder("u_001", session).build()
}

/// A file with the ledger's table and a store on it.
fn file_with_ledger(dir: &TempDir) -> std::path::PathBuf {
    let file = dir.join("store.sqlite3");
    drop(SqliteStore::open(&file).unwrap());
    rusqlite::Connection::open(&file)
        .unwrap()
        .execute_batch(
            "CREATE TABLE inbox_ledger (order_id TEXT NOT NULL, amount_cents INTEGER NOT NULL)",
        )
        .unwrap();
    file
}

/// Pauses one refund in `session` and keeps the turn in `store`.
fn pause(d: &Dispatcher, store: &Arc<SqliteStore>, session: &str) {
    let message = support::assistant(
        json!([{"type": "tool_use", "id": "toolu_big", "name": "refund",
                "input": {"order_id": "o_1", "amount_cents": 25000}}]),
        "tool_use",
    );
    let s = d.session_with_store(context(session), store.clone());
    let Reply::Pending(turn) = toolgate::block_on(s.respond(&message)).unwrap() else {
        panic!("the refund waits for a person");
    };
    toolgate::block_on(store.put(&turn)).unwrap();
}

fn inbox(store: Arc<SqliteStore>) -> Inbox {
    Inbox::builder(store)
        .policy(Policy::new().allow("*", &[Action::Approve], &["refund"]))
        .decision_log(Arc::new(MemoryDecisionLog::new()))
        .build()
        .unwrap()
}

#[test]
fn two_people_deciding_one_call_at_the_same_moment_one_wins_the_other_is_told_who() {
    let dir = TempDir::new("sqlite-inbox-two");
    let file = file_with_ledger(&dir);
    let d = refunds(&file);
    let store = Arc::new(SqliteStore::open(&file).unwrap());
    let rounds = 12;
    for round in 0..rounds {
        pause(&d, &store, &format!("sess_{round}"));
    }
    let calls = toolgate::block_on(inbox(store).list(&Query::waiting().limit(100)))
        .unwrap()
        .calls;
    assert_eq!(calls.len(), rounds);
    for call in &calls {
        let barrier = Barrier::new(2);
        let answers: Vec<Result<Decided, DecideError>> = std::thread::scope(|s| {
            let handles: Vec<_> = ["ann@example.com", "bob@example.com"]
                .into_iter()
                .map(|who| {
                    let (file, barrier) = (&file, &barrier);
                    s.spawn(move || {
                        // Each person's page has a connection of its own.
                        let inbox = inbox(Arc::new(SqliteStore::open(file).unwrap()));
                        let request = DecisionRequest::new(
                            &call.session_id,
                            &call.turn_id,
                            &call.tool_use_id,
                            &call.input_digest,
                            Choice::Approve,
                        );
                        barrier.wait();
                        toolgate::block_on(inbox.decide(&Identity::new(who), request))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let won: Vec<&Decided> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
        assert_eq!(won.len(), 1, "{answers:?}");
        let told = answers.iter().find_map(|a| match a {
            Err(DecideError::Refused(r)) => Some(r.clone()),
            _ => None,
        });
        assert_eq!(
            told,
            Some(Refusal::AlreadyDecided {
                state: CallState::Approved,
                by: won[0].by.clone(),
                at: won[0].at,
            }),
            "the other is told who won and when"
        );
    }
}

#[test]
fn one_request_sent_twice_at_the_same_moment_decides_once_and_both_get_the_first_answer() {
    let dir = TempDir::new("sqlite-inbox-twice");
    let file = file_with_ledger(&dir);
    let d = refunds(&file);
    let store = Arc::new(SqliteStore::open(&file).unwrap());
    for round in 0..8 {
        pause(&d, &store, &format!("sess_{round}"));
    }
    let calls = toolgate::block_on(inbox(store).list(&Query::waiting()))
        .unwrap()
        .calls;
    for call in &calls {
        let request = DecisionRequest::new(
            &call.session_id,
            &call.turn_id,
            &call.tool_use_id,
            &call.input_digest,
            Choice::Approve,
        )
        .idempotency_key(format!("form-{}", call.session_id));
        let barrier = Barrier::new(2);
        let answers: Vec<Result<Decided, DecideError>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    let (file, barrier, request) = (&file, &barrier, request.clone());
                    s.spawn(move || {
                        // Each tab's request reaches the file on a connection of its own.
                        let tab = inbox(Arc::new(SqliteStore::open(file).unwrap()));
                        barrier.wait();
                        toolgate::block_on(tab.decide(&Identity::new("ann"), request))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(answers[0].is_ok(), "{answers:?}");
        assert_eq!(answers[0], answers[1], "both get the first answer");
    }
}

#[test]
fn eight_workers_racing_for_one_ready_turn_resume_it_once_and_refund_once() {
    let dir = TempDir::new("sqlite-inbox-workers");
    let file = file_with_ledger(&dir);
    let d = refunds(&file);
    let store = Arc::new(SqliteStore::open(&file).unwrap());
    pause(&d, &store, "sess_race");
    let page = inbox(store.clone());
    let call = toolgate::block_on(page.list(&Query::waiting()))
        .unwrap()
        .calls
        .remove(0);
    let request = DecisionRequest::new(
        &call.session_id,
        &call.turn_id,
        &call.tool_use_id,
        &call.input_digest,
        Choice::Approve,
    );
    toolgate::block_on(page.decide(&Identity::new("lead@example.com"), request)).unwrap();
    let barrier = Barrier::new(8);
    let resumed: Vec<Option<Value>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (file, barrier) = (&file, &barrier);
                s.spawn(move || {
                    let store = Arc::new(SqliteStore::open(file).unwrap());
                    let d = refunds(file);
                    let worker = inbox(store.clone());
                    barrier.wait();
                    let lease = Duration::from_secs(600);
                    let ready =
                        toolgate::block_on(worker.take_ready(&d.fingerprint(), lease)).unwrap()?;
                    let session = d.session_with_store(context("sess_race"), store.clone());
                    let answer = toolgate::block_on(session.resume_ready(store.as_ref(), &ready));
                    Some(serde_json::to_value(answer.unwrap()).unwrap())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let done: Vec<&Value> = resumed.iter().flatten().collect();
    assert_eq!(done.len(), 1, "one worker took the turn");
    assert_eq!(
        done[0],
        &json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_big",
                "content": "refunded 25000 on o_1"}]})
    );
    assert_eq!(ledger_rows(&file), 1, "one refund");
    let session = d.session_with_store(context("sess_race"), store.clone());
    let again =
        toolgate::block_on(session.resume_from(store.as_ref(), "toolu_big", &Decisions::new()));
    assert_eq!(
        serde_json::to_value(again.unwrap()).unwrap(),
        *done[0],
        "the kept answer, for whoever asks again"
    );
}

#[test]
fn a_file_at_schema_version_1_is_migrated_and_its_kept_turn_is_not_listed_but_resumes() {
    let dir = TempDir::new("sqlite-inbox-migrate");
    let file = dir.join("store.sqlite3");
    let d = refunds(&file);
    let turn = {
        let memory = Arc::new(toolgate::store::MemoryPendingStore::new());
        let message = support::assistant(
            json!([{"type": "tool_use", "id": "toolu_old", "name": "refund",
                    "input": {"order_id": "o_2", "amount_cents": 100}}]),
            "tool_use",
        );
        let s = d.session(context("sess_old"));
        let Reply::Pending(turn) = toolgate::block_on(s.respond(&message)).unwrap() else {
            panic!("paused");
        };
        drop(memory);
        turn
    };
    {
        let v1 = rusqlite::Connection::open(&file).unwrap();
        v1.execute_batch(include_str!(
            "../../hooks-core/src/store/sqlite/migrations/0001_calls_and_turns.sql"
        ))
        .unwrap();
        v1.execute_batch(
            "CREATE TABLE toolgate_schema (version INTEGER PRIMARY KEY, applied_at INTEGER NOT \
             NULL); INSERT INTO toolgate_schema VALUES (1, 0);
             CREATE TABLE inbox_ledger (order_id TEXT NOT NULL, amount_cents INTEGER NOT NULL)",
        )
        .unwrap();
        v1.execute(
            "INSERT INTO toolgate_pending_turns (session_id, turn_id, turn, state) \
             VALUES ('sess_old', 'toolu_old', ?1, 'waiting')",
            [serde_json::to_string(&turn).unwrap()],
        )
        .unwrap();
    }
    let store = Arc::new(SqliteStore::open(&file).unwrap());
    let versions: Vec<i64> = {
        let db = rusqlite::Connection::open(&file).unwrap();
        let mut st = db
            .prepare("SELECT version FROM toolgate_schema ORDER BY version")
            .unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(versions, [1, 2, 3, 4]);
    let page = inbox(store.clone());
    assert_eq!(
        toolgate::block_on(page.list(&Query::all())).unwrap().calls,
        []
    );
    let shown = toolgate::block_on(page.turn("sess_old", "toolu_old"))
        .unwrap()
        .unwrap();
    assert_eq!((shown.user_id.as_str(), shown.calls.len()), ("u_001", 0));
    let session = d.session_with_store(context("sess_old"), store.clone());
    let approved = Decisions::builder()
        .approve_any_input("toolu_old", "lead")
        .build()
        .unwrap();
    let answer = toolgate::block_on(session.resume_from(store.as_ref(), "toolu_old", &approved));
    assert_eq!(
        serde_json::to_value(answer.unwrap()).unwrap()["content"][0]["content"],
        "refunded 100 on o_2"
    );
}
