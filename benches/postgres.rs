//! The PostgreSQL figures of BENCHMARKS.md ("PostgreSQL"), feature `postgres`:
//!
//! `cargo bench --bench postgres --features postgres` starts a throwaway server (as the tests
//! do: `toolgate_test_support::postgres`), reaches it over TCP on 127.0.0.1, `synchronous_commit` on
//! (the default), and prints one `NAME VALUE` line per figure, sides interleaved round by
//! round, medians of the rounds:
//!
//! - `insert_floor_us`: one plain one-row `INSERT` transaction (a prepared statement on one
//!   tokio-postgres connection, autocommit), the floor;
//! - `call_us`: a default session's call with the answer memory (`PostgresStore`: claim and
//!   answer, two committed statements) and the audit trail (`PostgresAuditSink`, flushed at the
//!   end of each batch) in the database; `call_over_insert_floor` is the ratio (target ≤ 2.5);
//! - `call_durable_answers_us` and `call_durable_answers_over_insert_floor`: the same with
//!   `PostgresStoreBuilder::durable_answers(true)` (the answer's commit waits for its flush too);
//! - `call_without_audit_us`, and `audit_per_call_us`, the difference: what the audit trail adds
//!   to a call (its lines appended in batches by the writer task, overlapping the calls);
//! - `audit_append_flushed_us`: one call of a session without the answer memory in the
//!   database, then a flush, each time: the latency of one append transaction alone;
//! - `hop_us`: the store's cross-thread hop alone (a task spawned on a current-thread runtime
//!   of another thread and its answer awaited through a oneshot, the store's mechanism);
//! - `calls_per_s_1`, `_2`, `_4`: calls per second with 1, 2 and 4 workers (threads, each with
//!   its own store, connections and audit writer, as worker processes have), and
//!   `workers4_over_workers1`.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it does one small round and checks
//! only that every side answered and the audit chain verifies, never a time.

#[path = "stores/side.rs"]
mod store_side;

use std::sync::{Arc, Barrier};
use std::time::Instant;

use toolgate::audit::AuditLog;
use toolgate_test_support::postgres as server;

use store_side::{ANSWER, Ids, dispatcher, median};
use toolgate::store::postgres::{PostgresAuditSink, PostgresStore};
use toolgate::{HookContext, Session};

struct Plan {
    rounds: usize,
    calls: usize,
    flushed: usize,
    worker_rounds: usize,
    worker_calls: usize,
}

/// `n` calls of `session`, then a flush of `sink` when given; the time per call (µs).
fn calls(session: &Session, ids: &mut Ids, n: usize, sink: Option<&PostgresAuditSink>) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        let result = toolgate::block_on(session.call(&ids.next())).expect("answered");
        assert_eq!(result.content_text(), ANSWER);
    }
    if let Some(sink) = sink {
        toolgate::block_on(sink.flush()).expect("the audit lines are written");
    }
    start.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// `n` calls, each followed by a flush: the time per call and its append (µs).
fn flushed(session: &Session, ids: &mut Ids, n: usize, sink: &PostgresAuditSink) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        toolgate::block_on(session.call(&ids.next())).expect("answered");
        toolgate::block_on(sink.flush()).expect("the audit line is written");
    }
    start.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// The floor: one-row `INSERT` transactions on a plain connection.
struct Floor {
    rt: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
    insert: tokio_postgres::Statement,
    n: i64,
}

impl Floor {
    fn new(settings: &str) -> Floor {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (client, insert) = rt.block_on(async {
            let (client, connection) = tokio_postgres::connect(settings, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client
                .batch_execute("CREATE TABLE floor (n bigint PRIMARY KEY, body text NOT NULL)")
                .await
                .unwrap();
            let insert = client
                .prepare("INSERT INTO floor (n, body) VALUES ($1, $2)")
                .await
                .unwrap();
            (client, insert)
        });
        Floor {
            rt,
            client,
            insert,
            n: 0,
        }
    }

    /// `n` inserts; the time per insert (µs).
    fn run(&mut self, n: usize) -> f64 {
        let start = Instant::now();
        for _ in 0..n {
            self.n += 1;
            let k = self.n;
            self.rt
                .block_on(self.client.execute(&self.insert, &[&k, &ANSWER]))
                .unwrap();
        }
        start.elapsed().as_secs_f64() * 1e6 / n as f64
    }
}

/// The store's hop alone: a task spawned on another thread's current-thread runtime, its
/// answer awaited through a oneshot; the time per hop (µs).
fn hops(n: usize) -> f64 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let handle = rt.handle().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || rt.block_on(async { stopped.await.ok() }));
    let start = Instant::now();
    for i in 0..n {
        let (tx, rx) = tokio::sync::oneshot::channel();
        handle.spawn(async move {
            let _ = tx.send(i);
        });
        assert_eq!(toolgate::block_on(rx), Ok(i));
    }
    let t = start.elapsed().as_secs_f64() * 1e6 / n as f64;
    let _ = stop.send(());
    let _ = thread.join();
    t
}

/// `workers` threads, each with its own store and audit writer, `n` calls each (their audit
/// lines flushed), started together; calls per second until the last one is done.
fn workers(settings: &str, workers: usize, n: usize, round: usize) -> f64 {
    let barrier = Barrier::new(workers + 1);
    let (start, ends) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let barrier = &barrier;
                s.spawn(move || {
                    let store = PostgresStore::connect(settings).expect("the worker's store");
                    let sink = store.audit_sink();
                    let log = AuditLog::builder().sink(sink.clone()).build().unwrap();
                    let d = dispatcher(Some(log));
                    let ctx =
                        HookContext::builder("u_1", format!("w{workers}_{w}_{round}")).build();
                    let session = d.session_with_store(ctx, Arc::new(store));
                    let mut ids = Ids::new("w");
                    barrier.wait();
                    calls(&session, &mut ids, n, Some(&sink));
                    Instant::now()
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        (
            start,
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>(),
        )
    });
    let end = ends.into_iter().max().unwrap_or(start);
    (workers * n) as f64 / end.duration_since(start).as_secs_f64()
}

fn figure(name: &str, value: f64) {
    println!("{name} {value:.3}");
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let plan = if bench {
        Plan {
            rounds: 9,
            calls: 400,
            flushed: 100,
            worker_rounds: 3,
            worker_calls: 500,
        }
    } else {
        Plan {
            rounds: 1,
            calls: 10,
            flushed: 3,
            worker_rounds: 1,
            worker_calls: 10,
        }
    };
    let began = Instant::now();
    let db = server::database();
    let mut floor = Floor::new(&db.tcp);
    let store = PostgresStore::connect(&db.tcp).expect("the bench's store");
    let sink = store.audit_sink();
    let audited = dispatcher(Some(
        AuditLog::builder().sink(sink.clone()).build().unwrap(),
    ));
    let plain = dispatcher(None);
    let ctx = |s: &str| HookContext::builder("u_1", s).build();
    let with_audit = audited.session_with_store(ctx("sess_audit"), Arc::new(store.clone()));
    let without_audit = plain.session_with_store(ctx("sess_plain"), Arc::new(store.clone()));
    let audit_only = audited.session(ctx("sess_audit_only"));
    let durable = PostgresStore::builder(&db.tcp)
        .durable_answers(true)
        .connect()
        .expect("the bench's store with durable answers");
    let with_durable = audited.session_with_store(ctx("sess_durable"), Arc::new(durable));
    let (mut a, mut p, mut o, mut d) = (Ids::new("a"), Ids::new("p"), Ids::new("o"), Ids::new("d"));
    // Warm up every side once (connections, statements, the writer's connection).
    calls(&with_audit, &mut a, 5, Some(&sink));
    calls(&without_audit, &mut p, 5, None);
    calls(&with_durable, &mut d, 5, Some(&sink));
    floor.run(5);
    let mut rows: [Vec<f64>; 5] = Default::default();
    for _ in 0..plan.rounds {
        rows[0].push(floor.run(plan.calls));
        rows[1].push(calls(&with_audit, &mut a, plan.calls, Some(&sink)));
        rows[2].push(calls(&without_audit, &mut p, plan.calls, None));
        rows[3].push(flushed(&audit_only, &mut o, plan.flushed, &sink));
        rows[4].push(calls(&with_durable, &mut d, plan.calls, Some(&sink)));
    }
    let over_floor = |side: &[f64]| -> f64 {
        let r: Vec<f64> = side.iter().zip(&rows[0]).map(|(c, f)| c / f).collect();
        median(&r)
    };
    let audit: Vec<f64> = rows[1].iter().zip(&rows[2]).map(|(c, p)| c - p).collect();
    figure("insert_floor_us", median(&rows[0]));
    figure("call_us", median(&rows[1]));
    figure("call_over_insert_floor", over_floor(&rows[1]));
    figure("call_durable_answers_us", median(&rows[4]));
    figure(
        "call_durable_answers_over_insert_floor",
        over_floor(&rows[4]),
    );
    figure("call_without_audit_us", median(&rows[2]));
    figure("audit_per_call_us", median(&audit));
    figure("audit_append_flushed_us", median(&rows[3]));
    figure("hop_us", hops(if bench { 20_000 } else { 10 }));
    let mut per_workers: [Vec<f64>; 3] = Default::default();
    for round in 0..plan.worker_rounds {
        for (i, k) in [1, 2, 4].into_iter().enumerate() {
            per_workers[i].push(workers(&db.tcp, k, plan.worker_calls, round));
        }
    }
    let scaling: Vec<f64> = per_workers[2]
        .iter()
        .zip(&per_workers[0])
        .map(|(f, o)| f / o)
        .collect();
    figure("calls_per_s_1", median(&per_workers[0]));
    figure("calls_per_s_2", median(&per_workers[1]));
    figure("calls_per_s_4", median(&per_workers[2]));
    figure("workers4_over_workers1", median(&scaling));
    let verdict = toolgate::block_on(sink.verify(None)).expect("the chain is read");
    assert!(verdict.is_ok(), "{}", verdict.calls);
    eprintln!(
        "postgres bench: {:.1} s, {}",
        began.elapsed().as_secs_f64(),
        verdict.calls
    );
}
