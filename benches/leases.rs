//! The lease figures of BENCHMARKS.md ("Leases"), features `sqlite` and `postgres`:
//!
//! `cargo bench --bench leases --features sqlite,postgres` starts a throwaway PostgreSQL server
//! (as the tests do: `toolgate_test_support::postgres`, reached over TCP on 127.0.0.1), works in a
//! temporary folder for SQLite, and prints one `NAME VALUE` line per figure:
//!
//! - what renewing costs a call shorter than one renewal interval (a read tool that answers at
//!   once), in this process, sides interleaved round by round, medians of the per-round ratios:
//!   the call with the store's renewals on (the default: the claim held while the call runs,
//!   `claim_lease`) over the same call with them off (the store wrapped so that it does not
//!   renew: the claim made with `fixed_claim_lease`, never held, as before claims were
//!   renewed): `memory_on_over_off` (a `MemoryAnswerStore` sessions share),
//!   `sqlite_on_over_off`, `postgres_on_over_off`, and `postgres_fleet4_off_over_on`: a fleet
//!   of four worker threads (each with its own store and connections, as worker processes
//!   have), two with renewals off and two on, all at once, the calls per second of the side off
//!   over the side on; target ≤ 1.05 for each; and `hold_ns_sqlite`, `hold_ns_postgres`, what
//!   the on side does beyond the off side for such a call, alone: a hold made and dropped (its
//!   claim registered with the store's renewer and taken out again), nanoseconds;
//! - how long a dead worker's calls wait, with the defaults (`claim_lease` 15 s, renewed every
//!   5 s): a worker process (this binary again) claims a call whose write tool never returns and
//!   is killed (SIGKILL) once the tool runs; this process then retries the call every 50 ms
//!   until it is answered (interrupted): `recovery_s_sqlite`, `recovery_s_postgres`, the
//!   median and the longest of three kills each (target ≤ 30 s; 15 minutes before claims were
//!   renewed).
//!
//! `… -- cost` gives the cost figures alone; `--profile memory_on N` (or `memory_off`) makes `N`
//! short calls on a shared in-memory store and nothing else, for `valgrind --tool=callgrind`. Under `cargo test --all-targets` (no `--bench`
//! argument) it does one small round, with a
//! 300 ms lease for the recovery, and checks only that every side answered and the killed
//! worker's call is answered interrupted, never a time.

#[path = "stores/side.rs"]
mod store_side;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::json;
use store_side::{ANSWER, Ids, dispatcher, median};
use toolgate::audit::Outcome;
use toolgate::dispatch::{DispatcherBuilder, Effect, ToolDef};
use toolgate::store::postgres::PostgresStore;
use toolgate::store::sqlite::SqliteStore;
use toolgate::store::{AnswerStore, CallKey, Claim, InputDigest, StoreError, StoreFuture, Token};
use toolgate::{CallError, Dispatcher, HookContext, Session, ToolResult, ToolUse};
use toolgate_test_support::postgres as server;

/// The worker's job: `sqlite FILE` or `postgres SETTINGS`; unset, this is the bench.
const WORKER: &str = "TOOLGATE_LEASE_BENCH_WORKER";
/// The file the worker creates once its tool runs.
const STARTED: &str = "TOOLGATE_LEASE_BENCH_STARTED";
/// The worker's lease in milliseconds (the default's when unset).
const LEASE: &str = "TOOLGATE_LEASE_BENCH_LEASE_MS";
/// The worker's session id (each kill its own, so its call is a new one).
const SESSION: &str = "TOOLGATE_LEASE_BENCH_SESSION";

/// A store's renewals turned off: every method forwarded, but it does not renew, so a session
/// claims with `fixed_claim_lease` and holds nothing (what every store did before claims were
/// renewed).
struct Fixed(Arc<dyn AnswerStore>);

impl AnswerStore for Fixed {
    fn claim<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        digest: InputDigest,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Claim, StoreError>> {
        self.0.claim(key, token, digest, lease)
    }

    fn answered<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        outcome: Outcome,
        result: &'a ToolResult,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.0.answered(key, token, outcome, result)
    }

    fn release<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        tool_started: bool,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.0.release(key, token, tool_started)
    }

    fn abandon(&self, key: CallKey<'_>, token: Token, tool_started: bool) {
        self.0.abandon(key, token, tool_started)
    }
}

/// `n` calls of `session`; the time per call (µs).
fn calls(session: &Session, ids: &mut Ids, n: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        let result = toolgate::block_on(session.call(&ids.next())).expect("answered");
        assert_eq!(result.content_text(), ANSWER);
    }
    start.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// The per-round ratio of a short call on `store` with renewals on over off (median of
/// `rounds` rounds of `n` calls each, the sides in turn).
fn on_over_off(name: &str, store: Arc<dyn AnswerStore>, rounds: usize, n: usize) -> f64 {
    let d = dispatcher(None);
    let ctx = |s: &str| HookContext::builder("u_1", format!("{name}_{s}")).build();
    let on = d.session_with_store(ctx("on"), Arc::clone(&store));
    let off = d.session_with_store(ctx("off"), Arc::new(Fixed(store)));
    let (mut i_on, mut i_off) = (Ids::new("on"), Ids::new("off"));
    calls(&on, &mut i_on, n.min(50));
    calls(&off, &mut i_off, n.min(50));
    // The sides in turn, which one first alternating round by round.
    let ratios: Vec<f64> = (0..rounds)
        .map(|round| {
            let (a, b) = if round % 2 == 0 {
                let a = calls(&on, &mut i_on, n);
                (a, calls(&off, &mut i_off, n))
            } else {
                let b = calls(&off, &mut i_off, n);
                (calls(&on, &mut i_on, n), b)
            };
            a / b
        })
        .collect();
    let stats = d.lease_stats();
    assert_eq!(stats.renewals, 0, "a short call renews nothing");
    median(&ratios)
}

/// What holding a claim costs a call that ends within one interval: `n` holds of `store` made
/// and dropped (registered with its renewer and taken out again, nothing renewed); the time
/// per hold (ns).
fn holds(store: &dyn AnswerStore, n: usize) -> f64 {
    let lease = DispatcherBuilder::DEFAULT_CLAIM_LEASE;
    let key = CallKey::new("sess_holds", "toolu_holds");
    drop(store.hold(key, Token::draw(), lease));
    let start = Instant::now();
    for _ in 0..n {
        drop(store.hold(key, Token::draw(), lease));
    }
    start.elapsed().as_secs_f64() * 1e9 / n as f64
}

/// Four worker threads on the database `settings`, each with its own store, two with renewals
/// on and two off (which ones alternating by `round`), `n` calls each, all started together, so
/// that both sides share whatever else the machine does: the calls per second of the side with
/// renewals off, and on (the sum of each side's workers').
fn fleet(settings: &str, n: usize, round: usize) -> (f64, f64) {
    let barrier = Barrier::new(4);
    let rates: Vec<(bool, f64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|w| {
                let barrier = &barrier;
                let on = (w + round).is_multiple_of(2);
                s.spawn(move || {
                    let store = PostgresStore::connect(settings).expect("the worker's store");
                    let store: Arc<dyn AnswerStore> = if on {
                        Arc::new(store)
                    } else {
                        Arc::new(Fixed(Arc::new(store)))
                    };
                    let d = dispatcher(None);
                    let label = format!("f{w}_{round}");
                    let ctx = HookContext::builder("u_1", label.clone()).build();
                    let session = d.session_with_store(ctx, store);
                    let mut ids = Ids::new(label);
                    calls(&session, &mut ids, 5);
                    barrier.wait();
                    (on, 1e6 / calls(&session, &mut ids, n))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let side = |on: bool| rates.iter().filter(|r| r.0 == on).map(|r| r.1).sum::<f64>();
    (side(false), side(true))
}

/// The call the recovery's worker makes, and whose retry this process waits to be answered.
fn blocked_call() -> ToolUse {
    ToolUse::new("toolu_blocked", "pay", json!({"order_id": "o_1"}))
}

/// The recovery's agent: `pay`, a write tool that creates the file `STARTED` names and never
/// returns (in the worker), claims lasting `lease`.
fn payer(lease: Duration) -> Dispatcher {
    Dispatcher::builder()
        .tool(
            ToolDef::sync(
                "pay",
                "Pays.",
                |_env, _args: store_side::Lookup| -> Result<String, toolgate::ToolError> {
                    let started = std::env::var_os(STARTED).expect("only the worker pays");
                    std::fs::write(started, "").unwrap();
                    loop {
                        std::thread::park();
                    }
                },
            )
            .effect(Effect::write())
            .unguarded("the bench's own tool"),
        )
        .claim_lease(lease)
        .build()
        .expect("the payer")
}

/// A store of `kind` (`sqlite FILE`, `postgres SETTINGS`).
fn store_of(kind: &str, at: &str) -> Arc<dyn AnswerStore> {
    match kind {
        "sqlite" => Arc::new(SqliteStore::open(at).expect("the SQLite store")),
        "postgres" => Arc::new(PostgresStore::connect(at).expect("the PostgreSQL store")),
        other => panic!("no store {other:?}"),
    }
}

/// The recovery's worker: claims the blocked call on its store and never answers it.
fn worker(job: &str) {
    let (kind, at) = job.split_once(' ').expect("KIND WHERE");
    let lease = std::env::var(LEASE)
        .ok()
        .map(|ms| Duration::from_millis(ms.parse().unwrap()))
        .unwrap_or(DispatcherBuilder::DEFAULT_CLAIM_LEASE);
    let d = payer(lease);
    let id = std::env::var(SESSION).expect("the session id");
    let session = d.session_with_store(HookContext::builder("u_1", id).build(), store_of(kind, at));
    let _ = toolgate::block_on(session.call(&blocked_call()));
    unreachable!("the tool never returns");
}

/// One kill: a worker of `kind` on `at` claims the blocked call (in the session
/// `recovery_<kind>_<n>`: each kill its own) and is killed once its tool runs; the seconds
/// until a retry here is answered.
fn recovery(kind: &str, at: &str, lease: Option<Duration>, dir: &Path, n: usize) -> f64 {
    let started = dir.join(format!("started-{kind}-{n}"));
    let id = format!("recovery_{kind}_{n}");
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .env(WORKER, format!("{kind} {at}"))
        .env(STARTED, &started)
        .env(SESSION, &id)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    if let Some(lease) = lease {
        command.env(LEASE, lease.as_millis().to_string());
    }
    let mut child = command.spawn().expect("the worker starts");
    while !started.exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().expect("SIGKILL");
    let killed = Instant::now();
    let _ = child.wait();
    let d = payer(lease.unwrap_or(DispatcherBuilder::DEFAULT_CLAIM_LEASE));
    let session = d.session_with_store(HookContext::builder("u_1", id).build(), store_of(kind, at));
    loop {
        match toolgate::block_on(session.call(&blocked_call())) {
            Err(CallError::InProgress { .. }) => std::thread::sleep(Duration::from_millis(50)),
            Ok(answer) => {
                assert!(
                    answer
                        .content_text()
                        .starts_with("Not run: this call was interrupted"),
                    "{answer:?}"
                );
                return killed.elapsed().as_secs_f64();
            }
            Err(e) => panic!("the retry: {e}"),
        }
    }
}

fn figure(name: &str, value: f64) {
    println!("{name} {value:.3}");
}

/// `--profile SIDE N`: `N` short calls on a shared in-memory store with renewals on
/// (`memory_on`) or off (`memory_off`), and nothing else, for an instruction count
/// (`valgrind --tool=callgrind`, the difference of two `N`).
fn profile(side: &str, n: usize) {
    let store: Arc<dyn AnswerStore> = Arc::new(toolgate::store::MemoryAnswerStore::new());
    let store: Arc<dyn AnswerStore> = match side {
        "memory_on" => store,
        "memory_off" => Arc::new(Fixed(store)),
        other => panic!("no side {other:?}"),
    };
    let d = dispatcher(None);
    let session = d.session_with_store(HookContext::builder("u_1", "profile").build(), store);
    let mut ids = Ids::new("p");
    calls(&session, &mut ids, n);
}

fn main() {
    if let Ok(job) = std::env::var(WORKER) {
        return worker(&job);
    }
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--profile") {
        return profile(&args[at + 1], args[at + 2].parse().unwrap());
    }
    let bench = std::env::args().any(|a| a == "--bench");
    let began = Instant::now();
    let dir: PathBuf =
        std::env::temp_dir().join(format!("toolgate-lease-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = server::database();
    let sqlite = dir.join("state.sqlite");
    let (rounds, memory_n, db_n) = if bench { (15, 20_000, 300) } else { (1, 20, 5) };
    figure(
        "memory_on_over_off",
        on_over_off(
            "memory",
            Arc::new(toolgate::store::MemoryAnswerStore::new()),
            rounds,
            memory_n,
        ),
    );
    let file = sqlite.to_str().unwrap();
    figure(
        "sqlite_on_over_off",
        on_over_off("sqlite", store_of("sqlite", file), rounds, db_n),
    );
    figure(
        "postgres_on_over_off",
        on_over_off("postgres", store_of("postgres", &db.tcp), rounds, db_n),
    );
    let n = if bench { 200_000 } else { 10 };
    let hold_ns = |store: Arc<dyn AnswerStore>| {
        let rounds: Vec<f64> = (0..5).map(|_| holds(&*store, n)).collect();
        median(&rounds)
    };
    figure("hold_ns_sqlite", hold_ns(store_of("sqlite", file)));
    figure("hold_ns_postgres", hold_ns(store_of("postgres", &db.tcp)));
    let (fleet_rounds, fleet_n) = if bench { (10, 500) } else { (1, 5) };
    let ratios: Vec<f64> = (0..fleet_rounds)
        .map(|round| {
            let (off, on) = fleet(&db.tcp, fleet_n, round);
            eprintln!("fleet round {round}: off {off:.0}/s, on {on:.0}/s");
            off / on
        })
        .collect();
    figure("postgres_fleet4_off_over_on", median(&ratios));
    if std::env::args().any(|a| a == "cost") {
        return;
    }
    let (kills, lease) = if bench {
        (3, None)
    } else {
        (1, Some(Duration::from_millis(300)))
    };
    for (kind, at) in [("sqlite", file), ("postgres", db.tcp.as_str())] {
        let waits: Vec<f64> = (0..kills)
            .map(|n| recovery(kind, at, lease, &dir, n))
            .collect();
        let longest = waits.iter().copied().fold(0.0, f64::max);
        figure(&format!("recovery_s_{kind}"), median(&waits));
        figure(&format!("recovery_s_{kind}_longest"), longest);
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("leases bench: {:.1} s", began.elapsed().as_secs_f64());
}
