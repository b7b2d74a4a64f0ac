//! The approval inbox's figures of BENCHMARKS.md ("The approval inbox"), features `postgres`
//! and `inbox` (the tests' dev-dependency turns `inbox` on):
//!
//! `cargo bench --bench inbox --features postgres` starts a throwaway server (as the tests do:
//! `toolgate_test_support::postgres`), reaches it over TCP on 127.0.0.1, `synchronous_commit` on (the
//! default), and prints one `NAME VALUE` line per figure, the two sides of each ratio taking
//! turns five operations at a time, medians of the rounds' ratios:
//!
//! - `update_floor_us`: one bare conditional `UPDATE … WHERE id = $1 AND state = 'waiting' AND
//!   digest = $2 AND expires_at > now() RETURNING id` (a prepared statement on one
//!   tokio-postgres connection, autocommit) on a table of waiting rows: a round trip and a WAL
//!   flush, the floor;
//! - `inbox_decide_us`: one person's approval through `Inbox::decide` on `PostgresStore` (the
//!   call read for the policy, then the decision's transaction with its idempotency key and its
//!   audit line); `inbox_decide_over_update` is the per-round ratio (target ≤ 3);
//! - `inbox_list_1k_us`, `inbox_list_10k_us`: the first page (50 calls) of the waiting calls of
//!   one tool, in a database with 1 000 and with 10 000 waiting calls (half of them that tool's);
//!   `inbox_list_10k_over_1k` (target ≤ 1.5);
//!
//! then the plan PostgreSQL chose for that list on 10 000 calls (`EXPLAIN ANALYZE` of the
//! statement `store/postgres/inbox.rs` builds for it), on standard error.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it does one small round and checks
//! only that every side answered, never a time.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use toolgate::approval::PendingTurn;
use toolgate::approval::inbox::{
    Action, CallState, Choice, DecisionRequest, Identity, Inbox, InboxCall, Policy, Query,
};
use toolgate::store::PendingStore;
use toolgate::store::postgres::PostgresStore;
use toolgate_test_support::floor::Floor;
use toolgate_test_support::postgres as server;

/// A paused turn `id` of one waiting call of `tool`, as a session writes it.
fn turn(id: &str, tool: &str) -> PendingTurn {
    let input = json!({"order_id": format!("o_{id}"), "amount_cents": 25000});
    serde_json::from_value(json!({
        "format": 2, "turn_format": "anthropic_messages", "turn_id": id,
        "session_id": format!("sess_{id}"), "user_id": "u_bench",
        "fingerprint": "f".repeat(64), "created_at": "2026-12-05T10:00:00Z",
        "pending_ttl_ms": 86_400_000,
        "blocks": [{"state": "awaiting_approval", "tool_use_id": id, "tool": tool,
                    "input": input, "effective_input": input,
                    "input_digest": toolgate::approval::input_digest(&input),
                    "asked_by": [{"hook": "bench::ask", "reason": "a person decides"}]}]
    }))
    .expect("a paused turn")
}

/// Keeps `n` turns named `prefix_…` in `store`, a hundred puts in flight at a time; every other
/// one a `refund`, the rest `lookup`s.
fn fill(store: &PostgresStore, prefix: &str, n: usize) {
    let turns: Vec<PendingTurn> = (0..n)
        .map(|i| {
            let tool = if i % 2 == 0 { "refund" } else { "lookup" };
            turn(&format!("toolu_{prefix}_{i}"), tool)
        })
        .collect();
    for chunk in turns.chunks(100) {
        let puts: Vec<_> = chunk.iter().map(|t| store.put(t)).collect();
        for put in puts {
            toolgate::block_on(put).expect("kept");
        }
    }
}

/// The approvals of the next `n` calls of `calls`; the time per decision (µs).
fn decide(inbox: &Inbox, calls: &mut impl Iterator<Item = InboxCall>, n: usize) -> f64 {
    let lead = Identity::new("lead@example.com");
    let start = Instant::now();
    for call in calls.take(n) {
        let request = DecisionRequest::new(
            &call.session_id,
            &call.turn_id,
            &call.tool_use_id,
            &call.input_digest,
            Choice::Approve,
        )
        .idempotency_key(format!("key_{}", call.tool_use_id));
        let decided = toolgate::block_on(inbox.decide(&lead, request)).expect("decided");
        assert_eq!(decided.state, CallState::Approved);
    }
    start.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// `n` lists of the first page of waiting refunds; the time per list (µs).
fn list(inbox: &Inbox, n: usize) -> f64 {
    let query = Query::waiting().tool("refund");
    let start = Instant::now();
    for _ in 0..n {
        let page = toolgate::block_on(inbox.list(&query)).expect("listed");
        assert_eq!(page.calls.len(), Query::DEFAULT_LIMIT);
    }
    start.elapsed().as_secs_f64() * 1e6 / n as f64
}

fn inbox(store: &PostgresStore) -> Inbox {
    Inbox::builder(Arc::new(store.clone()))
        .policy(Policy::new().allow("*", &[Action::Approve], &["*"]))
        .build()
        .expect("the store writes the decision lines")
}

/// The plan of the list on `db`: `EXPLAIN ANALYZE` of the statement the store builds for
/// `Query::waiting().tool("refund")`.
fn plan(settings: &str) -> String {
    let sql = server::Sql::connect(settings);
    sql.rows(
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT c.seq, c.session_id, \
         c.turn_id, c.tool_use_id, c.position, c.tool, c.asked_by, c.user_id, c.fingerprint, \
         (extract(epoch FROM c.created_at) * 1000)::int8, \
         (extract(epoch FROM c.expires_at) * 1000)::int8, c.state, c.digest, c.summary, '', \
         NULL, c.approvals, c.decided, c.reason, \
         (extract(epoch FROM date_trunc('milliseconds', now())) * 1000)::int8 \
         FROM toolgate_inbox_calls c WHERE true AND c.state = 'waiting' AND c.expires_at > now() \
         AND (SELECT p.state FROM toolgate_pending p WHERE p.session_id = c.session_id AND \
         p.turn_id = c.turn_id) NOT IN ('taken', 'resumed') AND c.tool = 'refund' \
         ORDER BY c.seq ASC LIMIT 51",
    )
    .into_iter()
    .map(|row| row[0].clone().unwrap_or_default())
    .collect::<Vec<_>>()
    .join("\n")
}

/// The median of `xs` (the mean of the middle two for an even count).
fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn figure(name: &str, value: f64) {
    println!("{name} {value:.3}");
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (rounds, decisions, lists) = if bench { (9, 200, 200) } else { (1, 5, 5) };
    let (small, large) = if bench { (1_000, 10_000) } else { (120, 240) };
    let began = Instant::now();
    let db = server::database();
    let store = PostgresStore::connect(&db.tcp).expect("the bench's store");
    let to_decide = 10 + rounds * decisions;
    fill(&store, "d", to_decide * 2);
    let decider = inbox(&store);
    let all = Query::waiting().tool("refund").limit(Query::MAX_LIMIT);
    let mut calls = Vec::new();
    let mut query = all.clone();
    while calls.len() < to_decide {
        let page = toolgate::block_on(decider.list(&query)).expect("listed");
        calls.extend(page.calls);
        match page.next {
            Some(next) => query = all.clone().after(next),
            None => break,
        }
    }
    let mut calls = calls.into_iter();
    let mut floor = Floor::new(&db.tcp, (to_decide + 10) as i64);
    let (db_small, db_large) = (server::database(), server::database());
    let (store_small, store_large) = (
        PostgresStore::connect(&db_small.tcp).expect("the 1k store"),
        PostgresStore::connect(&db_large.tcp).expect("the 10k store"),
    );
    fill(&store_small, "s", small);
    fill(&store_large, "l", large);
    for sql in [&db_small.tcp, &db_large.tcp] {
        server::Sql::connect(sql).run("VACUUM ANALYZE");
    }
    let (list_small, list_large) = (inbox(&store_small), inbox(&store_large));
    // Warm up every side once (connections, statements).
    decide(&decider, &mut calls, 10);
    floor.run(10);
    list(&list_small, 5);
    list(&list_large, 5);
    let mut rows: [Vec<f64>; 4] = Default::default();
    // The sides of a ratio take turns five operations at a time, so a burst of load on the
    // shared machine falls on both.
    let step = 5;
    for _ in 0..rounds {
        let mut sums = [0.0; 4];
        for _ in 0..decisions / step {
            sums[0] += floor.run(step);
            sums[1] += decide(&decider, &mut calls, step);
        }
        for _ in 0..lists / step {
            sums[2] += list(&list_small, step);
            sums[3] += list(&list_large, step);
        }
        let (d, l) = ((decisions / step) as f64, (lists / step) as f64);
        for (i, sum) in sums.into_iter().enumerate() {
            rows[i].push(sum / if i < 2 { d } else { l });
        }
    }
    let ratio = |a: &[f64], b: &[f64]| -> f64 {
        let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
        median(&r)
    };
    figure("update_floor_us", median(&rows[0]));
    figure("inbox_decide_us", median(&rows[1]));
    figure("inbox_decide_over_update", ratio(&rows[1], &rows[0]));
    figure("inbox_list_1k_us", median(&rows[2]));
    figure("inbox_list_10k_us", median(&rows[3]));
    figure("inbox_list_10k_over_1k", ratio(&rows[3], &rows[2]));
    eprintln!(
        "plan of the list on {large} waiting calls:\n{}",
        plan(&db_large.tcp)
    );
    let verdict = toolgate::block_on(store.audit_sink().verify(None)).expect("the chains read");
    assert!(verdict.is_ok(), "{verdict}");
    let lines: Value = json!(verdict.decisions.head().map(|h| h.lines));
    eprintln!(
        "inbox bench: {:.1} s, {lines} decision lines",
        began.elapsed().as_secs_f64()
    );
}
