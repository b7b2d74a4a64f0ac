//! Claims kept alive while their calls run, across real worker processes on one database: a
//! live call held five leases (an async tool and a sync one that blocks its thread, the worker's
//! context clock fixed or an hour off) is in progress to every retry from another process and
//! answered once, its claim renewed by the store's thread; a worker whose store is cut off (a
//! proxy drops its connection and refuses new ones) loses its claim, a retry answers the call
//! interrupted, and once the store is back its late answer is refused: its host gets the store's
//! answer, and the chain has one final line for the call; a paused turn resumed by a live
//! worker for five leases is never taken from it, and one whose resumer was killed is taken
//! again once its lease ends (its call answered interrupted); four workers killed at random during
//! two thousand refunds, then every call retried: each has its refund or "interrupted", none ran
//! twice, none was paid without an answer beyond the interrupted ones.

use std::collections::HashMap;
use std::path::Path;
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use toolgate::approval::{Decisions, PendingTurn, ResumeError};
use toolgate::store::PendingStore;
use toolgate::store::postgres::PostgresStore;
use toolgate::{CallError, Reply, Session, ToolUse};

use crate::agent::{self, Ledger};
use crate::fleet::{audit_lines, verify_chains, wait_for};
use crate::proxy::Proxy;
use crate::server::{self, Sql, TestDb};
use crate::support::TempDir;
use crate::worker::{self, CallSpec, Job, Tried};

/// The lease of the held calls: their tools run five of them and more.
const LEASE_MS: u64 = 300;

/// What the model reads for a call interrupted earlier.
const NOT_RUN_AGAIN: &str = "Not run: this call was interrupted earlier while the tool ran, so it \
     may or may not have taken effect, and it is not run again. Check whether it took effect \
     before making the call again.";

/// The parent's agent on the test's database, its audit lines in the database's chain (its
/// tokio runtime kept with it, for the ledger).
struct Parent {
    _rt: tokio::runtime::Runtime,
    dispatcher: toolgate::Dispatcher,
    store: PostgresStore,
    sink: toolgate::store::postgres::PostgresAuditSink,
}

impl Parent {
    fn new(db: &TestDb, lease: Duration) -> Parent {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let ledger = rt.block_on(Ledger::connect(&db.settings, 99));
        let store = PostgresStore::connect(&db.settings).unwrap();
        let sink = store.audit_sink();
        let log = toolgate::audit::AuditLog::builder()
            .sink(sink.clone())
            .build()
            .unwrap();
        Parent {
            _rt: rt,
            dispatcher: agent::dispatcher(ledger, lease, Some(log)),
            store,
            sink,
        }
    }

    /// Every audit line the parent queued, committed.
    fn flush(&self) {
        toolgate::block_on(self.sink.flush()).unwrap();
    }

    fn session(&self, session: &str) -> Session {
        let store = Arc::new(self.store.clone());
        self.dispatcher
            .session_with_store(agent::context(session), store)
    }
}

/// What a `Hold` worker reported: its host's answer, and its lease stats (held, renewed,
/// renewals, renewals failed, fenced).
fn report(out: &Path) -> (String, [u64; 5]) {
    let text = std::fs::read_to_string(out).unwrap();
    let (got, stats) = text.rsplit_once('\n').expect("two lines");
    let stats: Vec<u64> = stats.split(' ').map(|n| n.parse().unwrap()).collect();
    (got.to_owned(), stats.try_into().unwrap())
}

/// The `Hold` job of `call` with `tool`, its store reached through `store`.
fn hold_job(db: &TestDb, store: &str, tool: &str, clock: &str, call: &CallSpec, out: &Path) -> Job {
    Job::Hold {
        db: db.settings.clone(),
        store: store.to_owned(),
        connect_timeout_ms: 300,
        worker: 1,
        session: "sess_lease".to_owned(),
        lease_ms: LEASE_MS,
        tool: tool.to_owned(),
        clock: clock.to_owned(),
        call: call.clone(),
        out: out.to_path_buf(),
    }
}

/// The call `call` of `tool`, as the `Hold` worker makes it.
fn tool_use(tool: &str, call: &CallSpec) -> ToolUse {
    ToolUse::new(
        &call.id,
        tool,
        json!({"order_id": call.order_id, "amount_cents": call.cents}),
    )
}

/// The final lines (not replays) of `id` in the chain, and its replays.
fn lines_of(sql: &Sql, id: &str) -> (Vec<Value>, Vec<Value>) {
    audit_lines(sql, "audit_log")
        .into_iter()
        .filter(|l| l["tool_use_id"] == id)
        .partition(|l| l.get("replay").is_none())
}

/// A call held five leases in a worker (its tool `tool`, its context clock `clock`), retried
/// meanwhile from this process: in progress every time; then answered once, renewed by the
/// store's thread, and the retry replays that answer.
fn held_five_leases(tool: &str, clock: &str) {
    let db = server::database();
    let sql = Sql::connect(&db.settings);
    agent::make_ledger(&sql);
    let dir = TempDir::new("pg-held");
    let call = CallSpec {
        id: "toolu_held".to_owned(),
        order_id: "o_held".to_owned(),
        cents: Some(700),
    };
    let out = dir.join("held.out");
    let job = hold_job(&db, &db.settings, tool, clock, &call, &out);
    let child = worker::spawn(&job, &dir, "held");
    wait_for(|| agent::runs_in_gate(&dir, "o_held") == 1);
    let parent = Parent::new(&db, Duration::from_millis(LEASE_MS));
    let session = parent.session("sess_lease");
    let retry = tool_use(tool, &call);
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(LEASE_MS));
        let e = toolgate::block_on(session.call(&retry)).unwrap_err();
        assert!(
            matches!(e, CallError::InProgress { .. }),
            "a retry while the live call runs, past its lease: {e}"
        );
    }
    std::fs::write(dir.join("o_held"), "").unwrap();
    worker::finish(child, "held");
    let (got, [held, renewed, renewals, failed, fenced]) = report(&out);
    assert_eq!(got, "answer:refunded 700 on o_held");
    assert_eq!((held, renewed, failed, fenced), (1, 1, 0, 0));
    // Five leases passed while it ran: renewed at least four times, or a retry would have
    // found it lapsed.
    assert!(renewals >= 4, "{renewals} renewals");
    let replay = toolgate::block_on(session.call(&retry)).unwrap();
    assert_eq!(replay.content_text(), "refunded 700 on o_held");
    assert_eq!(agent::runs_in_gate(&dir, "o_held"), 1, "answered once");
    parent.flush();
    let (finals, _) = lines_of(&sql, "toolu_held");
    assert_eq!(finals.len(), 1, "{finals:?}");
    assert_eq!(finals[0]["outcome"], "ok");
    assert_eq!(
        finals[0]["lease"],
        json!({"lease_ms": 300, "renew_every_ms": 100, "renewals": renewals,
               "renewals_failed": 0})
    );
}

#[test]
fn an_async_tool_held_five_leases_is_never_interrupted_whatever_the_workers_clock() {
    held_five_leases("hold", "skewed");
}

#[test]
fn a_sync_tool_held_five_leases_is_never_interrupted_whatever_the_workers_clock() {
    held_five_leases("hold_sync", "fixed");
}

#[test]
fn a_worker_cut_off_from_the_database_loses_its_claim_and_its_late_answer_is_refused() {
    let db = server::database();
    let sql = Sql::connect(&db.settings);
    agent::make_ledger(&sql);
    let dir = TempDir::new("pg-cut-lease");
    let proxy = Proxy::start(&db);
    let call = CallSpec {
        id: "toolu_cut".to_owned(),
        order_id: "o_cut".to_owned(),
        cents: Some(700),
    };
    let out = dir.join("cut.out");
    let job = hold_job(&db, &proxy.settings, "hold", "system", &call, &out);
    let child = worker::spawn(&job, &dir, "cut");
    wait_for(|| agent::runs_in_gate(&dir, "o_cut") == 1);
    // The next renewal's answer is dropped with its connection, and the connections opened
    // again are refused: the renewal fails once the connect timeout has passed, and the worker
    // renews no more.
    proxy.cut_at("UPDATE 1");
    proxy.refuse_after_cut();
    wait_for(|| out.with_extension("lost").exists());
    let parent = Parent::new(&db, Duration::from_millis(LEASE_MS));
    let session = parent.session("sess_lease");
    let retry = tool_use("hold", &call);
    let got = loop {
        match toolgate::block_on(session.call(&retry)) {
            Err(CallError::InProgress { .. }) => std::thread::sleep(Duration::from_millis(20)),
            other => break other.unwrap(),
        }
    };
    assert_eq!(
        got.content_text(),
        NOT_RUN_AGAIN,
        "past the lease: interrupted"
    );
    // The store is back, and the worker's tool answers: the store refuses the answer.
    proxy.let_through();
    std::fs::write(dir.join("o_cut"), "").unwrap();
    worker::finish(child, "cut");
    let (got, [held, _, _, failed, fenced]) = report(&out);
    assert_eq!(
        got,
        format!("answer:{NOT_RUN_AGAIN}"),
        "its host gets the store's answer"
    );
    assert_eq!((held, failed, fenced), (1, 1, 1));
    assert_eq!(agent::runs_in_gate(&dir, "o_cut"), 1, "the tool ran once");
    parent.flush();
    verify_chains(&db);
    let (finals, replays) = lines_of(&sql, "toolu_cut");
    assert_eq!(finals.len(), 1, "one final line for the call: {finals:?}");
    assert_eq!(replays.len(), 1, "the retry's, marked a replay");
    let line = &finals[0];
    assert_eq!(line["outcome"], "not_run");
    assert_eq!(line["content"], NOT_RUN_AGAIN);
    let detail = line["detail"].as_str().unwrap();
    // What the driver said when the proxy refused it varies (closed, reset): the rest is
    // exact.
    let start = "the tool ran (outcome ok), but its renewal failed (the store failed: \
                 PostgreSQL: connecting failed: ";
    let end = " (the server was unavailable for the whole connect timeout, 300 ms)), and the \
               store refused it: tool_use \"toolu_cut\" of session \"sess_lease\" is \
               no longer held by this claim (the store holds it as interrupted: this claim's \
               lease ran out and a retry took the call over), so its answer is not recorded: \
               the store holds the call as interrupted, and that is its answer, here as to \
               every retry; the tool's answer was \"refunded 700 on o_cut\"";
    assert!(
        detail.starts_with(start) && detail.ends_with(end),
        "{detail}"
    );
    assert_eq!(line["lease"]["renewals_failed"], 1);
}

/// A refund of 25 000 cents by the gated tool `hold` (`o_resumed`), paused for a person by the
/// parent and kept in its store.
fn paused(parent: &Parent) -> PendingTurn {
    let session = parent.session("sess_lease");
    let message = crate::support::assistant(
        json!([{"type": "tool_use", "id": "toolu_resumed", "name": "hold",
                "input": {"order_id": "o_resumed", "amount_cents": 25000}}]),
        "tool_use",
    );
    let Reply::Pending(turn) = toolgate::block_on(session.respond(&message)).unwrap() else {
        panic!("the refund waits for a person");
    };
    toolgate::block_on(parent.store.put(&turn)).unwrap();
    turn
}

/// A worker resuming `turn` at once, its takes and claims lasting `lease_ms`.
fn resumer(db: &TestDb, dir: &Path, turn: &PendingTurn, lease_ms: u64) -> Child {
    let go = dir.join("go");
    std::fs::write(&go, "").unwrap();
    let job = Job::Resume {
        db: db.settings.clone(),
        worker: 1,
        session: "sess_lease".to_owned(),
        turn_id: turn.turn_id.clone(),
        lease_ms,
        ready: dir.join("ready"),
        go,
        out: dir.join("resume.out"),
    };
    worker::spawn(&job, dir, "resume")
}

/// The parent's resume of `turn`, approved.
fn resume(parent: &Parent, turn: &PendingTurn) -> Result<Value, ResumeError> {
    let session = parent.session("sess_lease");
    let decisions = Decisions::builder()
        .approve_any_input("toolu_resumed", "lead")
        .build()
        .unwrap();
    let resumed = session.resume_from(&parent.store, &turn.turn_id, &decisions);
    toolgate::block_on(resumed).map(|r| serde_json::to_value(r).unwrap())
}

/// The resumed turn's answer when its call answered `content` (`is_error`: `error`).
fn resumed_with(content: &str, error: bool) -> Value {
    let mut result = json!({"type": "tool_result", "tool_use_id": "toolu_resumed",
        "content": content});
    if error {
        result["is_error"] = json!(true);
    }
    json!({"role": "user", "content": [result]})
}

#[test]
fn a_turn_resumed_by_a_live_worker_for_five_leases_is_never_taken_from_it() {
    let db = server::database();
    let sql = Sql::connect(&db.settings);
    agent::make_ledger(&sql);
    let dir = TempDir::new("pg-resume-held");
    let parent = Parent::new(&db, Duration::from_millis(LEASE_MS));
    let turn = paused(&parent);
    let child = resumer(&db, &dir, &turn, LEASE_MS);
    wait_for(|| agent::runs_in_gate(&dir, "o_resumed") == 1);
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(LEASE_MS));
        let e = resume(&parent, &turn).unwrap_err();
        assert!(
            matches!(e, ResumeError::BeingResumed { .. }),
            "a resume while the live one runs, past its lease: {e}"
        );
    }
    std::fs::write(dir.join("o_resumed"), "").unwrap();
    worker::finish(child, "resume");
    let done = resumed_with("refunded 25000 on o_resumed", false);
    let got = std::fs::read_to_string(dir.join("resume.out")).unwrap();
    let got: Value = serde_json::from_str(got.strip_prefix("answer:").unwrap()).unwrap();
    assert_eq!(got, done);
    assert_eq!(resume(&parent, &turn).unwrap(), done, "its answer is kept");
    assert_eq!(agent::runs_in_gate(&dir, "o_resumed"), 1, "resumed once");
}

#[test]
fn a_turn_whose_resumer_was_killed_is_taken_again_once_its_lease_ends() {
    let db = server::database();
    let sql = Sql::connect(&db.settings);
    agent::make_ledger(&sql);
    let dir = TempDir::new("pg-resume-killed");
    // Renewed until the kill: the parent's resume right after it comes within the lease.
    let lease = Duration::from_millis(1500);
    let parent = Parent::new(&db, lease);
    let turn = paused(&parent);
    let mut child = resumer(&db, &dir, &turn, 1500);
    wait_for(|| agent::runs_in_gate(&dir, "o_resumed") == 1);
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let e = resume(&parent, &turn).unwrap_err();
    assert!(
        matches!(e, ResumeError::BeingResumed { .. }),
        "within the lease: {e}"
    );
    std::thread::sleep(lease + lease / 3);
    assert_eq!(
        resume(&parent, &turn).unwrap(),
        resumed_with(NOT_RUN_AGAIN, true),
        "taken again: its call, whose tool started in the killed worker, is interrupted"
    );
    assert_eq!(agent::runs_in_gate(&dir, "o_resumed"), 1, "never run again");
}

/// The chaos test's calls: refunds whose run is recorded 3 ms before they answer.
fn chaos_calls(n: usize) -> Vec<CallSpec> {
    (0..n)
        .map(|i| CallSpec {
            id: format!("toolu_c{i:04}"),
            order_id: format!("o_chaos_{i}"),
            cents: Some(100 + i as u64),
        })
        .collect()
}

/// A small random source for the kills (xorshift), seeded from the clock; the seed is printed.
struct Dice(u64);

impl Dice {
    fn new() -> Dice {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let seed = u64::from(nanos) | 1;
        eprintln!("chaos seed {seed}");
        Dice(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Runs four chaos workers over `calls`, killing one at random every 100 to 400 ms, `kills`
/// times, each started again on its whole list at once; waits for all of them to finish.
fn run_chaos(db: &TestDb, dir: &Path, calls: &[CallSpec], lease_ms: u64, kills: usize) {
    let jobs: Vec<Job> = (0..4)
        .map(|w| Job::Chaos {
            db: db.settings.clone(),
            worker: w as i32,
            session: "sess_chaos".to_owned(),
            lease_ms,
            calls: calls.iter().skip(w).step_by(4).cloned().collect(),
            out: dir.join(format!("chaos{w}.out")),
        })
        .collect();
    let start = |w: usize| worker::spawn(&jobs[w], dir, &format!("chaos{w}"));
    let mut children: Vec<Child> = (0..4).map(start).collect();
    let mut dice = Dice::new();
    let mut killed = 0;
    while killed < kills {
        std::thread::sleep(Duration::from_millis(100 + dice.below(300)));
        let w = dice.below(4) as usize;
        if children[w].try_wait().unwrap().is_some() {
            if children.iter_mut().all(|c| c.try_wait().unwrap().is_some()) {
                break;
            }
            continue;
        }
        children[w].kill().expect("SIGKILL");
        let _ = children[w].wait();
        children[w] = start(w);
        killed += 1;
    }
    eprintln!("chaos: {killed} workers killed");
    for (w, child) in children.into_iter().enumerate() {
        worker::finish(child, &format!("chaos{w}"));
    }
}

/// Every attempt the chaos workers recorded, by call (a line torn by a kill left out).
fn tried(dir: &Path) -> HashMap<String, Vec<String>> {
    let mut tried: HashMap<String, Vec<String>> = HashMap::new();
    for w in 0..4 {
        let text = std::fs::read_to_string(dir.join(format!("chaos{w}.out"))).unwrap();
        for line in text.lines() {
            if let Ok(t) = serde_json::from_str::<Tried>(line) {
                tried.entry(t.id).or_default().push(t.got);
            }
        }
    }
    tried
}

/// Every call retried from this process (four threads), after the workers are done: the
/// answer each gets.
fn retry_all(parent: &Parent, calls: &[CallSpec]) -> HashMap<String, String> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                s.spawn(move || {
                    let session = parent.session("sess_chaos");
                    calls
                        .iter()
                        .skip(t)
                        .step_by(4)
                        .map(|c| {
                            let got = toolgate::block_on(session.call(&c.tool_use()));
                            let got = got.unwrap_or_else(|e| panic!("{}: {e}", c.id));
                            (c.id.clone(), got.content_text().into_owned())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

#[test]
fn four_workers_killed_at_random_never_run_a_call_twice_and_every_call_has_its_refund_or_is_interrupted()
 {
    let db = server::database();
    let sql = Sql::connect(&db.settings);
    agent::make_ledger(&sql);
    let dir = TempDir::new("pg-chaos");
    let calls = chaos_calls(2000);
    let lease_ms = 500;
    let started = Instant::now();
    run_chaos(&db, &dir, &calls, lease_ms, 10);
    std::thread::sleep(Duration::from_millis(lease_ms));
    let parent = Parent::new(&db, Duration::from_millis(lease_ms));
    let finals = retry_all(&parent, &calls);
    let paid: HashMap<String, Vec<i64>> = sql
        .rows("SELECT order_id, worker FROM ledger")
        .into_iter()
        .fold(HashMap::new(), |mut m, row| {
            let worker = row[1].as_deref().unwrap().parse().unwrap();
            m.entry(row[0].clone().unwrap()).or_default().push(worker);
            m
        });
    let tried = tried(&dir);
    let mut interrupted = 0;
    for call in &calls {
        let runs = paid.get(&call.order_id).cloned().unwrap_or_default();
        assert!(runs.len() <= 1, "{} ran {} times", call.id, runs.len());
        let answer = &finals[&call.id];
        let refund = runs.first().map(|w| {
            format!(
                "refunded {} on {} by worker {w}",
                call.cents.unwrap(),
                call.order_id
            )
        });
        if answer == NOT_RUN_AGAIN {
            interrupted += 1;
        } else {
            assert_eq!(
                Some(answer),
                refund.as_ref(),
                "{}: paid as answered",
                call.id
            );
        }
        for got in &tried[&call.id] {
            if got != "in_progress" {
                assert_eq!(got, &format!("answer:{answer}"), "{}: one answer", call.id);
            }
        }
    }
    parent.flush();
    eprintln!(
        "chaos: {} calls, {} paid, {interrupted} interrupted, in {:?}",
        calls.len(),
        paid.len(),
        started.elapsed()
    );
    verify_chains(&db);
    let mut finals_per_call: HashMap<String, usize> = HashMap::new();
    for line in audit_lines(&sql, "audit_log") {
        if line.get("replay").is_none() {
            *finals_per_call
                .entry(line["tool_use_id"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
    }
    assert!(
        finals_per_call.values().all(|n| *n == 1),
        "at most one final line per call (a killed worker's queued lines are lost)"
    );
}
