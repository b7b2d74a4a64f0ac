//! Real processes sharing one database are one agent: a fleet of four workers answering 2 000
//! calls, a fifth retried on another worker (some while the first attempt still runs); one
//! paused turn resumed by 2 and by 8 processes at once; a worker killed (SIGKILL) inside a
//! write tool, its call retried on another worker: in progress within the lease its store
//! renewed until the kill, interrupted after it.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::Reply;
use toolgate::approval::Decisions;
use toolgate::store::PendingStore;
use toolgate::store::postgres::PostgresStore;

use crate::agent::{self, Ledger};
use crate::server::{self, Sql, TestDb};
use crate::support::{self, TempDir};
use crate::worker::{self, Attempt, CallSpec, Job};

/// The `i`th call of the fleet: a refund (`o_slow_…` for every tenth, all of them retried), or
/// a lookup for some of the others.
fn spec(i: usize) -> CallSpec {
    let id = format!("toolu_{i:04}");
    if i % 7 == 3 && !i.is_multiple_of(5) {
        return CallSpec {
            id,
            order_id: format!("o_{i}"),
            cents: None,
        };
    }
    let order_id = if i.is_multiple_of(10) {
        format!("o_slow_{i}")
    } else {
        format!("o_{i}")
    };
    CallSpec {
        id,
        order_id,
        cents: Some(100 + (i % 1000) as u64),
    }
}

/// The audit lines of `chain` as JSON.
pub(crate) fn audit_lines(sql: &Sql, chain: &str) -> Vec<Value> {
    sql.rows(&format!(
        "SELECT convert_from(line, 'UTF8') FROM toolgate_audit WHERE chain = '{chain}' ORDER BY seq"
    ))
    .into_iter()
    .map(|row| serde_json::from_str(row[0].as_deref().unwrap()).unwrap())
    .collect()
}

/// Verifies the database's chains, which must hold.
pub(crate) fn verify_chains(db: &TestDb) {
    let store = PostgresStore::connect(&db.settings).unwrap();
    let verdict = toolgate::block_on(store.audit_sink().verify(None)).unwrap();
    assert!(verdict.is_ok(), "{}\n{}", verdict.calls, verdict.sessions);
}

#[test]
fn four_workers_run_two_thousand_calls_each_write_exactly_once() {
    let db = server::database();
    let sql = Sql::connect(&db.settings);
    agent::make_ledger(&sql);
    let dir = TempDir::new("pg-fleet");
    let calls: Vec<CallSpec> = (0..2000).map(spec).collect();
    let (mut own, mut retries) = (vec![Vec::new(); 4], vec![Vec::new(); 4]);
    for (i, call) in calls.iter().enumerate() {
        own[i % 4].push(call.clone());
        if i.is_multiple_of(5) {
            retries[(i + 1) % 4].push(call.clone());
        }
    }
    let children: Vec<_> = (0..4)
        .map(|w| {
            let job = Job::Fleet {
                db: db.settings.clone(),
                worker: w as i32,
                session: "sess_fleet".to_owned(),
                own: std::mem::take(&mut own[w]),
                retries: std::mem::take(&mut retries[w]),
                out: dir.join(format!("fleet{w}.out")),
            };
            worker::spawn(&job, &dir, &format!("fleet{w}"))
        })
        .collect();
    for (w, child) in children.into_iter().enumerate() {
        worker::finish(child, &format!("fleet{w}"));
    }
    let attempts: Vec<Attempt> = (0..4)
        .flat_map(|w| {
            let text = std::fs::read_to_string(dir.join(format!("fleet{w}.out"))).unwrap();
            text.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect::<Vec<Attempt>>()
        })
        .collect();
    check_fleet(&sql, &calls, &attempts);
    verify_chains(&db);
    check_final_lines(&sql, &calls);
}

/// Every refund ran exactly once; every attempt got the answer of the run the ledger has (a
/// retry may also have found it in progress); each lookup answered.
fn check_fleet(sql: &Sql, calls: &[CallSpec], attempts: &[Attempt]) {
    let ran: HashMap<String, Vec<i64>> = sql
        .rows("SELECT order_id, worker FROM ledger")
        .into_iter()
        .fold(HashMap::new(), |mut m, row| {
            let worker = row[1].as_deref().unwrap().parse().unwrap();
            m.entry(row[0].clone().unwrap()).or_default().push(worker);
            m
        });
    let refunds: Vec<&CallSpec> = calls.iter().filter(|c| c.cents.is_some()).collect();
    assert_eq!(ran.len(), refunds.len(), "every refund ran");
    let mut in_progress = 0;
    for call in calls {
        let expected = match call.cents {
            Some(cents) => {
                let runs = &ran[&call.order_id];
                assert_eq!(
                    runs.len(),
                    1,
                    "{} ran {} times: {runs:?}",
                    call.id,
                    runs.len()
                );
                format!(
                    "answer:refunded {cents} on {} by worker {}",
                    call.order_id, runs[0]
                )
            }
            None => format!("answer:order {} is open", call.order_id),
        };
        let tried: Vec<&Attempt> = attempts.iter().filter(|a| a.id == call.id).collect();
        assert!(!tried.is_empty(), "{} was called", call.id);
        for a in tried {
            if a.got == "in_progress" {
                assert!(a.retry || call.id.ends_with('0') || call.id.ends_with('5'));
                in_progress += 1;
                continue;
            }
            assert_eq!(a.got, expected, "{a:?}");
        }
    }
    let retried = attempts
        .iter()
        .filter(|a| a.retry)
        .map(|a| &a.id)
        .collect::<HashSet<_>>();
    assert_eq!(retried.len(), 400, "a fifth of the calls retried");
    eprintln!(
        "fleet: {} attempts, {in_progress} found in progress",
        attempts.len()
    );
}

/// The audit chain has every call's final line exactly once (replays are marked).
fn check_final_lines(sql: &Sql, calls: &[CallSpec]) {
    let lines = audit_lines(sql, "audit_log");
    let mut finals: HashMap<String, usize> = HashMap::new();
    for line in &lines {
        if line.get("replay") != Some(&json!(true)) && line.get("final") != Some(&json!(false)) {
            *finals
                .entry(line["tool_use_id"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
    }
    assert_eq!(finals.len(), calls.len(), "every call has a final line");
    assert!(finals.values().all(|n| *n == 1), "each exactly once");
    let summaries = audit_lines(sql, "session_summaries");
    assert_eq!(summaries.len(), 8, "two sessions per worker");
}

/// The parent's agent (its tool never runs here: the turn pauses).
fn parent_agent(db: &TestDb, rt: &tokio::runtime::Runtime) -> toolgate::Dispatcher {
    let ledger = rt.block_on(Ledger::connect(&db.settings, 99));
    agent::dispatcher(ledger, Duration::from_secs(900), None)
}

fn resume_race(processes: usize) {
    let db = server::database();
    let sql = Sql::connect(&db.settings);
    agent::make_ledger(&sql);
    let dir = TempDir::new("pg-resume");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let d = parent_agent(&db, &rt);
    let store = PostgresStore::connect(&db.settings).unwrap();
    let session = d.session_with_store(agent::context("sess_resume"), Arc::new(store.clone()));
    let message = support::assistant(
        json!([{"type": "tool_use", "id": "toolu_big", "name": "refund",
                "input": {"order_id": "o_big", "amount_cents": 25000}}]),
        "tool_use",
    );
    let Reply::Pending(turn) = toolgate::block_on(session.respond(&message)).unwrap() else {
        panic!("the refund waits for a person");
    };
    toolgate::block_on(store.put(&turn)).unwrap();
    let go = dir.join("go");
    let children: Vec<_> = (0..processes)
        .map(|w| {
            let job = Job::Resume {
                db: db.settings.clone(),
                worker: w as i32,
                session: "sess_resume".to_owned(),
                turn_id: turn.turn_id.clone(),
                lease_ms: 15_000,
                ready: dir.join(format!("ready{w}")),
                go: go.clone(),
                out: dir.join(format!("resume{w}.out")),
            };
            worker::spawn(&job, &dir, &format!("resume{w}"))
        })
        .collect();
    wait_for(|| (0..processes).all(|w| dir.join(format!("ready{w}")).exists()));
    std::fs::write(&go, b"").unwrap();
    for (w, child) in children.into_iter().enumerate() {
        worker::finish(child, &format!("resume{w}"));
    }
    check_resumes(&sql, &dir, processes, &turn.turn_id);
    let decisions = Decisions::builder()
        .approve_any_input("toolu_big", "lead")
        .build()
        .unwrap();
    let later = toolgate::block_on(session.resume_from(&store, &turn.turn_id, &decisions));
    let later = serde_json::to_string(&later.unwrap()).unwrap();
    assert!(later.contains("refunded 25000 on o_big"), "{later}");
    assert_eq!(
        sql.int("SELECT count(*) FROM ledger"),
        1,
        "still one refund"
    );
}

/// One refund; every process got the winner's answer or was told the turn is being resumed.
fn check_resumes(sql: &Sql, dir: &Path, processes: usize, turn_id: &str) {
    assert_eq!(
        sql.int("SELECT count(*) FROM ledger"),
        1,
        "one refund, whoever won"
    );
    let winner = sql.int("SELECT worker FROM ledger");
    let done = json!({"role": "user", "content": [{"type": "tool_result",
        "tool_use_id": "toolu_big", "content": format!("refunded 25000 on o_big by worker {winner}")}]});
    let being_resumed = format!(
        "error:the paused turn {turn_id:?} is being resumed by another caller; nothing was run: \
         ask again once it is done to get its answer"
    );
    let mut answered = 0;
    for w in 0..processes {
        let got = std::fs::read_to_string(dir.join(format!("resume{w}.out"))).unwrap();
        match got.strip_prefix("answer:") {
            Some(answer) => {
                assert_eq!(serde_json::from_str::<Value>(answer).unwrap(), done);
                answered += 1;
            }
            None => assert_eq!(got, being_resumed),
        }
    }
    assert!(answered >= 1, "the winner answered");
}

/// Waits (polling, bounded) until `ready`.
pub(crate) fn wait_for(mut ready: impl FnMut() -> bool) {
    for _ in 0..6000 {
        if ready() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the workers did not get ready");
}

#[test]
fn a_turn_resumed_by_two_processes_at_once_runs_once() {
    resume_race(2);
}

#[test]
fn a_turn_resumed_by_eight_processes_at_once_runs_once() {
    resume_race(8);
}

#[test]
fn a_worker_killed_inside_a_write_tool_is_answered_as_interrupted_and_never_run_again() {
    let db = server::database();
    let sql = Sql::connect(&db.settings);
    agent::make_ledger(&sql);
    let dir = TempDir::new("pg-kill");
    // Renewed every second until the kill: the retry, a process started after it, comes
    // within the lease.
    let lease_ms = 3000;
    let call = CallSpec {
        id: "toolu_block".to_owned(),
        order_id: "o_block_1".to_owned(),
        cents: Some(900),
    };
    let warmup = vec![
        CallSpec {
            id: "toolu_w1".to_owned(),
            order_id: "o_w1".to_owned(),
            cents: Some(100),
        },
        CallSpec {
            id: "toolu_w2".to_owned(),
            order_id: "o_w2".to_owned(),
            cents: None,
        },
    ];
    let job = Job::Block {
        db: db.settings.clone(),
        worker: 0,
        session: "sess_kill".to_owned(),
        lease_ms,
        warmup,
        call: call.clone(),
    };
    let mut child = worker::spawn(&job, &dir, "block");
    wait_for(|| sql.int("SELECT count(*) FROM ledger WHERE order_id = 'o_block_1'") == 1);
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let out = dir.join("retry.out");
    let job = Job::Retry {
        db: db.settings.clone(),
        worker: 1,
        session: "sess_kill".to_owned(),
        lease_ms,
        call,
        out: out.clone(),
    };
    worker::finish(worker::spawn(&job, &dir, "retry"), "retry");
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "in_progress\nanswer:Not run: this call was interrupted earlier while the tool ran, so \
         it may or may not have taken effect, and it is not run again. Check whether it took \
         effect before making the call again.",
        "in progress within the lease, interrupted after it"
    );
    assert_eq!(
        sql.int("SELECT count(*) FROM ledger WHERE order_id = 'o_block_1'"),
        1,
        "no second execution"
    );
    verify_chains(&db);
    let ids: Vec<String> = audit_lines(&sql, "audit_log")
        .iter()
        .map(|l| l["tool_use_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        ids,
        ["toolu_w1", "toolu_w2", "toolu_block"],
        "the killed worker's lines kept"
    );
}
