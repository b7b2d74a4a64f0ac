//! Worker processes: this test binary run again as a child (`current_exe()`), with
//! `--ignored --exact worker::entry` and `TOOLGATE_PG_WORKER` naming a job file. Each worker
//! connects to the test's database on its own: `PostgresStore` as its answer memory and paused
//! turns, `PostgresAuditSink` as its audit sink, the agent of `agent.rs`, sessions driven by a
//! tokio runtime (the parent's tests drive theirs with `toolgate::block_on`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toolgate::approval::Decisions;
use toolgate::audit::AuditLog;
use toolgate::store::AnswerStore;
use toolgate::store::postgres::{PostgresAuditSink, PostgresStore};
use toolgate::{CallError, Session};

use crate::agent::{self, Ledger};

/// One call of a worker's list.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CallSpec {
    pub(crate) id: String,
    pub(crate) order_id: String,
    /// `None`: a lookup.
    pub(crate) cents: Option<u64>,
}

impl CallSpec {
    pub(crate) fn tool_use(&self) -> toolgate::ToolUse {
        match self.cents {
            Some(cents) => agent::refund_call(&self.id, &self.order_id, cents),
            None => agent::lookup_call(&self.id, &self.order_id),
        }
    }
}

/// What a worker does.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub(crate) enum Job {
    /// Runs `own` calls on one thread and `retries` (calls another worker runs first) on
    /// another, every attempt's answer written to `out` as JSON lines.
    Fleet {
        db: String,
        worker: i32,
        session: String,
        own: Vec<CallSpec>,
        retries: Vec<CallSpec>,
        out: PathBuf,
    },
    /// Resumes `turn_id` once, at the same moment as the other workers (each writes `ready`,
    /// then waits for `go`), its takes and claims lasting `lease_ms`; writes what it got to
    /// `out`.
    Resume {
        db: String,
        worker: i32,
        session: String,
        turn_id: String,
        lease_ms: u64,
        ready: PathBuf,
        go: PathBuf,
        out: PathBuf,
    },
    /// Runs `warmup` (flushing their audit lines), then `call`, whose tool blocks until the
    /// process is killed.
    Block {
        db: String,
        worker: i32,
        session: String,
        lease_ms: u64,
        warmup: Vec<CallSpec>,
        call: CallSpec,
    },
    /// Takes one ready turn from the inbox (feature `inbox`) at the same moment as the other
    /// workers (each writes `ready`, then waits for `go`) and resumes it; writes `answer:JSON`,
    /// or `none` when another worker took it, to `out`.
    ResumeReady {
        db: String,
        worker: i32,
        ready: PathBuf,
        go: PathBuf,
        out: PathBuf,
    },
    /// Retries `call` until it is no longer in progress; writes the first attempt's answer and
    /// the last one to `out`, a line each.
    Retry {
        db: String,
        worker: i32,
        session: String,
        lease_ms: u64,
        call: CallSpec,
        out: PathBuf,
    },
    /// Runs `call` of the gated tool `tool` (`hold`, `hold_sync`: `agent.rs`) with claims of
    /// `lease_ms`, its store connected with `store` (the test database, or a proxy in front of
    /// it) and a connect timeout of `connect_timeout_ms`, its context clock `clock` (`system`,
    /// `fixed`, `skewed`); creates `<out>.lost` when a renewal of its claim fails; writes its
    /// host's answer and its lease stats (held, renewed, renewals, failed, fenced) to `out`.
    Hold {
        db: String,
        store: String,
        connect_timeout_ms: u64,
        worker: i32,
        session: String,
        lease_ms: u64,
        tool: String,
        clock: String,
        call: CallSpec,
        out: PathBuf,
    },
    /// Runs `calls` one after another, each again while it is in progress (as a host would),
    /// appending every attempt's answer to `out` as it comes (`{"id", "got"}` lines): the
    /// chaos test kills and starts it again at random.
    Chaos {
        db: String,
        worker: i32,
        session: String,
        lease_ms: u64,
        calls: Vec<CallSpec>,
        out: PathBuf,
    },
}

/// Starts a worker on `job` (its file written beside `dir`'s others as `NAME.job.json`).
pub(crate) fn spawn(job: &Job, dir: &Path, name: &str) -> Child {
    let path = dir.join(format!("{name}.job.json"));
    std::fs::write(&path, serde_json::to_vec(job).unwrap()).unwrap();
    Command::new(std::env::current_exe().unwrap())
        .args(["worker::entry", "--exact", "--ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env("TOOLGATE_PG_WORKER", &path)
        .env("TOOLGATE_PG_GATE", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the worker starts")
}

/// Waits for a worker; fails the test with its output when it failed.
pub(crate) fn finish(child: Child, name: &str) {
    let out = child.wait_with_output().expect("the worker is waited for");
    assert!(
        out.status.success(),
        "worker {name} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "a worker process of the fleet tests, started by them (TOOLGATE_PG_WORKER names its job)"]
fn entry() {
    let Ok(path) = std::env::var("TOOLGATE_PG_WORKER") else {
        return;
    };
    let job: Job = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    match job {
        Job::Fleet {
            db,
            worker,
            session,
            own,
            retries,
            out,
        } => fleet(&db, worker, &session, own, retries, &out),
        Job::Resume {
            db,
            worker,
            session,
            turn_id,
            lease_ms,
            ready,
            go,
            out,
        } => {
            let lease = Duration::from_millis(lease_ms);
            let files = (ready.as_path(), go.as_path());
            rt.block_on(resume(
                &db,
                (worker, lease),
                &session,
                &turn_id,
                files,
                &out,
            ));
        }
        Job::Block {
            db,
            worker,
            session,
            lease_ms,
            warmup,
            call,
        } => rt.block_on(block(&db, worker, &session, lease_ms, warmup, call)),
        Job::Retry {
            db,
            worker,
            session,
            lease_ms,
            call,
            out,
        } => rt.block_on(retry(&db, worker, &session, lease_ms, call, &out)),
        Job::ResumeReady {
            db,
            worker,
            ready,
            go,
            out,
        } => rt.block_on(resume_ready(&db, worker, (&ready, &go), &out)),
        Job::Hold {
            db,
            store,
            connect_timeout_ms,
            worker,
            session,
            lease_ms,
            tool,
            clock,
            call,
            out,
        } => {
            let at = Held {
                store,
                connect_timeout: Duration::from_millis(connect_timeout_ms),
                lease: Duration::from_millis(lease_ms),
                tool,
                clock,
            };
            rt.block_on(held(&db, worker, &session, at, call, &out));
        }
        Job::Chaos {
            db,
            worker,
            session,
            lease_ms,
            calls,
            out,
        } => rt.block_on(chaos(&db, worker, &session, lease_ms, calls, &out)),
    }
}

/// The store, its sink and an audit log writing to it.
fn connect(db: &str) -> (PostgresStore, PostgresAuditSink, AuditLog) {
    let store = PostgresStore::connect(db).expect("the worker's store connects");
    let sink = store.audit_sink();
    let log = AuditLog::builder().sink(sink.clone()).build().unwrap();
    (store, sink, log)
}

/// One attempt's answer, as a worker reports it: `answer:TEXT`, `in_progress`, `error:…`.
fn outcome(result: &Result<toolgate::ToolResult, CallError>) -> String {
    match result {
        Ok(r) => format!("answer:{}", r.content_text()),
        Err(CallError::InProgress { .. }) => "in_progress".to_owned(),
        Err(e) => format!("error:{e}"),
    }
}

/// A report line.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Attempt {
    pub(crate) id: String,
    pub(crate) order_id: String,
    pub(crate) worker: i32,
    pub(crate) retry: bool,
    pub(crate) got: String,
}

fn fleet(
    db: &str,
    worker: i32,
    session: &str,
    own: Vec<CallSpec>,
    retries: Vec<CallSpec>,
    out: &Path,
) {
    let (store, sink, log) = connect(db);
    let store: Arc<dyn AnswerStore> = Arc::new(store);
    let lease = toolgate::dispatch::DispatcherBuilder::DEFAULT_CLAIM_LEASE;
    let lists = [(own, false), (retries, true)];
    let reports: Vec<Vec<Attempt>> = std::thread::scope(|s| {
        let handles: Vec<_> = lists
            .into_iter()
            .map(|(calls, retry)| {
                let (store, log) = (Arc::clone(&store), log.clone());
                s.spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    rt.block_on(async move {
                        let ledger = Ledger::connect(db, worker).await;
                        let probe = Ledger::connect(db, worker).await;
                        let d = agent::dispatcher(ledger, lease, Some(log));
                        let session = d.session_with_store(agent::context(session), store);
                        let mut attempts = Vec::new();
                        for call in &calls {
                            run_one(&session, &probe, worker, call, retry, &mut attempts).await;
                        }
                        session.end();
                        attempts
                    })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    toolgate::block_on(sink.flush()).expect("the audit lines are written");
    let text: String = reports
        .iter()
        .flatten()
        .map(|a| serde_json::to_string(a).unwrap() + "\n")
        .collect();
    std::fs::write(out, text).unwrap();
}

/// One call of a fleet worker: an own call once (in progress: again until answered, as a host
/// would); a retry of a slow call after its first attempt started (so it finds it in
/// progress), marking it retried, then again until it is answered.
async fn run_one(
    session: &Session,
    probe: &Ledger,
    worker: i32,
    call: &CallSpec,
    retry: bool,
    attempts: &mut Vec<Attempt>,
) {
    let slow_retry = retry && call.order_id.starts_with("o_slow");
    if slow_retry {
        for _ in 0..6000 {
            if probe.runs(&call.order_id).await > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    let tool_use = call.tool_use();
    for attempt in 0..6000 {
        let result = session.call(&tool_use).await;
        let got = outcome(&result);
        let in_progress = got == "in_progress";
        attempts.push(Attempt {
            id: call.id.clone(),
            order_id: call.order_id.clone(),
            worker,
            retry,
            got,
        });
        if attempt == 0 && slow_retry {
            probe.mark_retried(&call.order_id).await;
        }
        if !in_progress {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn resume(
    db: &str,
    (worker, lease): (i32, Duration),
    session: &str,
    turn_id: &str,
    (ready, go): (&Path, &Path),
    out: &Path,
) {
    let (store, sink, log) = connect(db);
    let ledger = Ledger::connect(db, worker).await;
    let d = agent::dispatcher(ledger, lease, Some(log));
    let session = d.session_with_store(agent::context(session), Arc::new(store.clone()));
    let decisions = Decisions::builder()
        .approve_any_input(turn_id, "lead")
        .build()
        .unwrap();
    std::fs::write(ready, b"").unwrap();
    while !go.exists() {
        std::thread::sleep(Duration::from_micros(200));
    }
    let got = match session.resume_from(&store, turn_id, &decisions).await {
        Ok(answer) => format!("answer:{}", serde_json::to_string(&answer).unwrap()),
        Err(e) => format!("error:{e}"),
    };
    session.end();
    sink.flush().await.expect("the audit lines are written");
    std::fs::write(out, got).unwrap();
}

/// Takes a ready turn of the inbox and resumes it in the turn's session.
async fn resume_ready(db: &str, worker: i32, (ready, go): (&Path, &Path), out: &Path) {
    use toolgate::approval::inbox::InboxStore;
    let (store, sink, log) = connect(db);
    let ledger = Ledger::connect(db, worker).await;
    let lease = toolgate::dispatch::DispatcherBuilder::DEFAULT_CLAIM_LEASE;
    let d = agent::dispatcher(ledger, lease, Some(log));
    std::fs::write(ready, b"").unwrap();
    while !go.exists() {
        std::thread::sleep(Duration::from_micros(200));
    }
    let taken = store.take_ready(&d.fingerprint(), lease).await.unwrap();
    let got = match taken {
        None => "none".to_owned(),
        Some(turn) => {
            let session = d.session_with_store(
                agent::context(&turn.turn.session_id),
                Arc::new(store.clone()),
            );
            let answer = session.resume_ready(&store, &turn).await;
            session.end();
            match answer {
                Ok(answer) => format!("answer:{}", serde_json::to_string(&answer).unwrap()),
                Err(e) => format!("error:{e}"),
            }
        }
    };
    sink.flush().await.expect("the audit lines are written");
    std::fs::write(out, got).unwrap();
}

async fn block(
    db: &str,
    worker: i32,
    session: &str,
    lease_ms: u64,
    warmup: Vec<CallSpec>,
    call: CallSpec,
) {
    let (store, sink, log) = connect(db);
    let ledger = Ledger::connect(db, worker).await;
    let d = agent::dispatcher(ledger, Duration::from_millis(lease_ms), Some(log));
    let session = d.session_with_store(agent::context(session), Arc::new(store));
    for c in &warmup {
        session
            .call(&c.tool_use())
            .await
            .expect("a warm-up call is answered");
    }
    sink.flush()
        .await
        .expect("the warm-up's audit lines are written");
    let _ = session.call(&call.tool_use()).await;
    unreachable!("the blocking tool returned");
}

async fn retry(db: &str, worker: i32, session: &str, lease_ms: u64, call: CallSpec, out: &Path) {
    let (store, sink, log) = connect(db);
    let ledger = Ledger::connect(db, worker).await;
    let d = agent::dispatcher(ledger, Duration::from_millis(lease_ms), Some(log));
    let session = d.session_with_store(agent::context(session), Arc::new(store));
    let tool_use = call.tool_use();
    let first = outcome(&session.call(&tool_use).await);
    let mut got = first.clone();
    for _ in 0..3000 {
        if got != "in_progress" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        got = outcome(&session.call(&tool_use).await);
    }
    session.end();
    sink.flush().await.expect("the audit lines are written");
    std::fs::write(out, format!("{first}\n{got}")).unwrap();
}

/// How a `Hold` worker runs.
struct Held {
    store: String,
    connect_timeout: Duration,
    lease: Duration,
    tool: String,
    clock: String,
}

/// The context of `session` with the clock `clock`: `system`, `fixed` (2020-01-01) or `skewed`
/// (an hour ahead of the machine's). The store's clock judges leases, never this one.
pub(crate) fn context_at(session: &str, clock: &str) -> toolgate::HookContext {
    let clock = match clock {
        "system" => toolgate::dispatch::Clock::System,
        "fixed" => toolgate::dispatch::Clock::fixed(
            std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_577_836_800),
        ),
        "skewed" => toolgate::dispatch::Clock::Custom(Arc::new(|| {
            std::time::SystemTime::now() + Duration::from_secs(3600)
        })),
        other => panic!("no clock {other:?}"),
    };
    toolgate::HookContext::builder("u_fleet", session)
        .clock(clock)
        .build()
}

async fn held(db: &str, worker: i32, session: &str, at: Held, call: CallSpec, out: &Path) {
    crate::support::leases::mark_when_a_renewal_fails(&out.with_extension("lost"));
    let store = PostgresStore::builder(&at.store)
        .connect_timeout(at.connect_timeout)
        .connect()
        .expect("the worker's store connects");
    // The audit lines go straight to the database, whatever happens to the store's path.
    let (_audit, sink, log) = connect(db);
    let ledger = Ledger::connect(db, worker).await;
    let d = agent::dispatcher(ledger, at.lease, Some(log));
    let session = d.session_with_store(context_at(session, &at.clock), Arc::new(store));
    let tool_use = toolgate::ToolUse::new(
        &call.id,
        &at.tool,
        serde_json::json!({"order_id": call.order_id, "amount_cents": call.cents}),
    );
    let got = outcome(&session.call(&tool_use).await);
    session.end();
    sink.flush().await.expect("the audit lines are written");
    let s = d.lease_stats();
    let stats = [s.held, s.renewed, s.renewals, s.renewals_failed, s.fenced];
    let stats: Vec<String> = stats.iter().map(u64::to_string).collect();
    std::fs::write(out, format!("{got}\n{}", stats.join(" "))).unwrap();
}

/// One attempt of the chaos test, as a worker appends it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Tried {
    pub(crate) id: String,
    pub(crate) got: String,
}

async fn chaos(
    db: &str,
    worker: i32,
    session: &str,
    lease_ms: u64,
    calls: Vec<CallSpec>,
    out: &Path,
) {
    use std::io::Write as _;
    let (store, sink, log) = connect(db);
    let ledger = Ledger::connect(db, worker).await;
    let d = agent::dispatcher(ledger, Duration::from_millis(lease_ms), Some(log));
    let session = d.session_with_store(agent::context(session), Arc::new(store));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)
        .unwrap();
    for call in &calls {
        let tool_use = call.tool_use();
        loop {
            let got = outcome(&session.call(&tool_use).await);
            let tried = Tried {
                id: call.id.clone(),
                got,
            };
            // One write per line: a kill leaves whole lines (and at most a torn last one).
            let line = serde_json::to_string(&tried).unwrap() + "\n";
            file.write_all(line.as_bytes()).unwrap();
            if tried.got != "in_progress" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    session.end();
    sink.flush().await.expect("the audit lines are written");
}
