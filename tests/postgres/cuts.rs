//! A statement whose connection is lost with its outcome unknown is sent again only where that
//! runs nothing twice: the server committed it and the answer was lost (a proxy drops it,
//! `proxy.rs`), or its backend was terminated while it ran. A claim's insert and a take sent
//! again recognize their own row; a release or a put back sent again leaves alone the claim or
//! take another caller made in between; an audit batch sent again writes no line twice.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use toolgate::approval::Decisions;
use toolgate::audit::AuditLog;
use toolgate::dispatch::{Effect, PreHookDef, ToolDef};
use toolgate::store::postgres::{PostgresAuditSink, PostgresStore};
use toolgate::store::{
    AnswerStore, CallKey, Claim, InputDigest, PendingStore, Remembered, Taken, Token,
};
use toolgate::{Decision, Dispatcher, HookContext, Reply, ToolUse};

use crate::proxy::Proxy;
use crate::server::{self, Sql};
use crate::support;

/// A payment.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Payment {
    /// The order.
    order_id: String,
    /// Cents.
    amount_cents: u64,
}

/// `pay`, a write tool counting its runs in `runs`, asking a person above 20 000 cents; auditing
/// to `sink` when given.
fn counting(runs: &Arc<AtomicUsize>, sink: Option<&PostgresAuditSink>) -> Dispatcher {
    let ran = Arc::clone(runs);
    let mut builder = Dispatcher::builder()
        .tool(
            ToolDef::sync("pay", "Pays an order.", move |_env, p: Payment| {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok(format!("paid {} on {}", p.amount_cents, p.order_id))
            })
            .effect(Effect::write()),
        )
        .pre_hook(PreHookDef::sync(
            "cuts::large_payments",
            10,
            |_env, call: &ToolUse| {
                Ok(match call.input["amount_cents"].as_u64() {
                    Some(n) if n > 20_000 => Decision::ask("payments above 20000 cents"),
                    _ => Decision::Allow,
                })
            },
        ));
    if let Some(sink) = sink {
        builder = builder.audit_log(AuditLog::builder().sink(sink.clone()).build().unwrap());
    }
    builder.build().unwrap()
}

fn payment(id: &str, order_id: &str, cents: u64) -> ToolUse {
    ToolUse::new(
        id,
        "pay",
        json!({"order_id": order_id, "amount_cents": cents}),
    )
}

fn context(session: &str) -> HookContext {
    HookContext::builder("u_cuts", session).build()
}

/// Waits until `ready` (polled every few milliseconds; a test that never gets there fails
/// naming `what` instead of hanging).
fn until(what: &str, mut ready: impl FnMut() -> bool) {
    for _ in 0..6000 {
        if ready() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("never happened: {what}");
}

/// The rows of `toolgate_answers` as (session, id, state, outcome).
fn answers(sql: &Sql) -> Vec<Vec<Option<String>>> {
    sql.rows(
        "SELECT session_id, tool_use_id, state, outcome FROM toolgate_answers \
         ORDER BY session_id, tool_use_id",
    )
}

fn row(cells: &[&str]) -> Vec<Option<String>> {
    cells.iter().map(|c| Some((*c).to_owned())).collect()
}

#[test]
fn a_claim_the_server_committed_whose_answer_was_lost_is_claimed_by_its_resend() {
    let db = server::database();
    let proxy = Proxy::start(&db);
    let store = PostgresStore::connect(&proxy.settings).unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let d = counting(&runs, None);
    let session = d.session_with_store(context("sess_claim"), Arc::new(store));
    proxy.cut_at("INSERT 0 1");
    let result = toolgate::block_on(session.call(&payment("toolu_1", "o_1", 100)));
    let result = result.expect("the call runs as if nothing had happened");
    assert_eq!(result.content_text(), "paid 100 on o_1");
    assert!(!result.is_error);
    assert_eq!(proxy.cuts(), 1, "the claim's answer was cut");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let sql = Sql::connect(&db.settings);
    assert_eq!(
        answers(&sql),
        [row(&["sess_claim", "toolu_1", "answered", "ok"])]
    );
    // A retry replays the answer.
    let again = toolgate::block_on(session.call(&payment("toolu_1", "o_1", 100))).unwrap();
    assert_eq!(again.content_text(), "paid 100 on o_1");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "replayed, not run");
}

#[test]
fn an_audit_batch_the_server_committed_whose_answer_was_lost_is_written_once() {
    let db = server::database();
    let proxy = Proxy::start(&db);
    let store = PostgresStore::connect(&proxy.settings).unwrap();
    let sink = store.audit_sink();
    let runs = Arc::new(AtomicUsize::new(0));
    let d = counting(&runs, Some(&sink));
    let session = d.session(context("sess_audit"));
    proxy.cut_at("COMMIT");
    toolgate::block_on(session.call(&payment("toolu_1", "o_1", 100))).unwrap();
    toolgate::block_on(sink.flush()).expect("the batch is written, its lost answer costs nothing");
    assert_eq!(proxy.cuts(), 1, "the batch's commit answer was cut");
    toolgate::block_on(session.call(&payment("toolu_2", "o_2", 200))).unwrap();
    toolgate::block_on(sink.flush()).unwrap();
    let sql = Sql::connect(&db.settings);
    assert_eq!(
        sql.rows(
            "SELECT convert_from(line, 'UTF8')::json->>'tool_use_id' FROM toolgate_audit \
             WHERE chain = 'audit_log' ORDER BY seq"
        ),
        [[Some("toolu_1".to_owned())], [Some("toolu_2".to_owned())]],
        "one line per call, none twice"
    );
    let verdict = toolgate::block_on(sink.verify(None)).unwrap();
    assert!(verdict.is_ok(), "{verdict}");
    assert_eq!(verdict.heads().unwrap().calls.lines, 2);
}

/// A paused payment of 25 000 cents kept in `store`: the turn.
fn paused(
    store: &PostgresStore,
    d: &Dispatcher,
    session_id: &str,
) -> toolgate::approval::PendingTurn {
    let session = d.session_with_store(context(session_id), Arc::new(store.clone()));
    let message = support::assistant(
        json!([{"type": "tool_use", "id": "toolu_big", "name": "pay",
                "input": {"order_id": "o_big", "amount_cents": 25000}}]),
        "tool_use",
    );
    let Reply::Pending(turn) = toolgate::block_on(session.respond(&message)).unwrap() else {
        panic!("the payment waits for a person");
    };
    toolgate::block_on(store.put(&turn)).unwrap();
    turn
}

#[test]
fn a_take_the_server_committed_whose_answer_was_lost_is_the_callers_turn() {
    let db = server::database();
    let proxy = Proxy::start(&db);
    let store = PostgresStore::connect(&proxy.settings).unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let d = counting(&runs, None);
    let turn = paused(&store, &d, "sess_take");
    let session = d.session_with_store(context("sess_take"), Arc::new(store.clone()));
    let decisions = Decisions::builder()
        .approve_any_input("toolu_big", "lead")
        .build()
        .unwrap();
    proxy.cut_at("SELECT 1");
    let answer = toolgate::block_on(session.resume_from(&store, &turn.turn_id, &decisions))
        .expect("the take's lost answer costs nothing");
    let answer = serde_json::to_string(&answer).unwrap();
    assert!(answer.contains("paid 25000 on o_big"), "{answer}");
    assert_eq!(proxy.cuts(), 1, "the take's answer was cut");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

const LONG: Duration = Duration::from_secs(600);

#[test]
fn a_release_sent_again_never_forgets_the_claim_another_worker_made_in_between() {
    let db = server::database();
    let proxy = Proxy::start(&db);
    let cut = PostgresStore::connect(&proxy.settings).unwrap();
    let other = PostgresStore::connect(&db.settings).unwrap();
    let key = CallKey::new("sess_forget", "toolu_1");
    let digest = InputDigest([7; 32]);
    let token = Token::draw();
    assert_eq!(
        toolgate::block_on(cut.claim(key, token, digest, LONG)).unwrap(),
        Claim::Claimed
    );
    proxy.cut_at("DELETE 1");
    proxy.hold_after_cut();
    std::thread::scope(|s| {
        // The call halted before its tool started: its claim is released. The release's
        // delete commits, its answer is cut, and it is sent again once the key was claimed
        // anew by a retry on another worker.
        let release = s.spawn(|| toolgate::block_on(cut.release(key, token, false)));
        proxy.wait_cuts(1);
        assert_eq!(
            toolgate::block_on(other.claim(key, Token::draw(), digest, LONG)).unwrap(),
            Claim::Claimed,
            "the released key is claimed by the retry"
        );
        proxy.let_through();
        release.join().unwrap().expect("the release is done");
    });
    assert_eq!(
        toolgate::block_on(other.claim(key, Token::draw(), digest, LONG)).unwrap(),
        Claim::Seen(Remembered::InProgress { digest }),
        "the retry's claim still holds: a third attempt does not run"
    );
}

#[test]
fn a_put_back_sent_again_never_frees_the_take_another_worker_made_in_between() {
    let db = server::database();
    let proxy = Proxy::start(&db);
    let cut = PostgresStore::connect(&proxy.settings).unwrap();
    let other = PostgresStore::connect(&db.settings).unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let turn = paused(&other, &counting(&runs, None), "sess_put_back");
    let (session_id, turn_id) = (turn.session_id.as_str(), turn.turn_id.as_str());
    let token = Token::draw();
    assert_eq!(
        toolgate::block_on(cut.take(session_id, turn_id, token, LONG)).unwrap(),
        Taken::Turn(turn.clone())
    );
    proxy.cut_at("UPDATE 1");
    proxy.hold_after_cut();
    std::thread::scope(|s| {
        let put_back = s.spawn(|| toolgate::block_on(cut.put_back(session_id, turn_id, token)));
        proxy.wait_cuts(1);
        assert_eq!(
            toolgate::block_on(other.take(session_id, turn_id, Token::draw(), LONG)).unwrap(),
            Taken::Turn(turn.clone()),
            "the turn put back is taken by another worker"
        );
        proxy.let_through();
        put_back.join().unwrap().expect("the put back is done");
    });
    assert_eq!(
        toolgate::block_on(other.take(session_id, turn_id, Token::draw(), LONG)).unwrap(),
        Taken::Resuming,
        "the other worker's take still holds: a third does not resume the turn"
    );
}

#[test]
fn a_claim_whose_backend_is_terminated_while_it_waits_is_sent_again_and_runs_once() {
    let db = server::database();
    let store = PostgresStore::connect(&db.settings).unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let d = counting(&runs, None);
    let session = d.session_with_store(context("sess_inflight"), Arc::new(store));
    // The claim's insert waits for this lock: it is in flight on its backend.
    let locker = Sql::connect(&db.settings);
    locker.run("BEGIN; LOCK TABLE toolgate_answers IN SHARE MODE");
    let admin = Sql::connect(&server::server().settings("postgres"));
    let waiting = format!(
        "SELECT COALESCE(max(pid), 0) FROM pg_stat_activity WHERE datname = '{}' \
         AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO toolgate_answers%'",
        db.name
    );
    let result = std::thread::scope(|s| {
        let call = s.spawn(|| toolgate::block_on(session.call(&payment("toolu_1", "o_1", 100))));
        let mut first = 0;
        until("the claim waits for the lock", || {
            first = admin.int(&waiting);
            first != 0
        });
        assert_eq!(
            admin.int(&format!("SELECT pg_terminate_backend({first})::int")),
            1
        );
        // Rolled back with its backend, the insert is sent again on a new connection, and
        // waits for the lock again (a call that ended instead fails below with its error).
        until("the insert sent again waits for the lock", || {
            let pid = admin.int(&waiting);
            (pid != 0 && pid != first) || call.is_finished()
        });
        locker.run("COMMIT");
        call.join().unwrap()
    });
    assert_eq!(result.unwrap().content_text(), "paid 100 on o_1");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(
        answers(&Sql::connect(&db.settings)),
        [row(&["sess_inflight", "toolu_1", "answered", "ok"])]
    );
}
