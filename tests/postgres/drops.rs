//! A dropped connection costs nothing: while threads stream hundreds of calls through sessions
//! on one `PostgresStore` and its audit sink, the store's backends are terminated at random
//! moments (`pg_terminate_backend`), or the server is restarted (`pg_ctl restart`, on a server of
//! the test's own); every call is answered, every tool runs exactly once, and the chain verifies
//! with exactly one line per call. A server that stays down past the connect timeout fails the
//! call (nothing runs), then each call at once, until it is back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::audit::AuditLog;
use toolgate::dispatch::{Effect, PreHookDef, ToolDef};
use toolgate::store::postgres::{PostgresAuditSink, PostgresStore};
use toolgate::{Decision, Dispatcher, HookContext, ToolUse};

use crate::server::{self, Sql};

/// Threads streaming calls at once.
const THREADS: usize = 4;
/// Calls per session (each thread runs sessions one after another).
const CALLS: usize = 20;

/// A refund, named by the call it belongs to.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    /// The call's name (`t{thread}_s{session}_{n}`).
    call: String,
}

/// The calls whose tool ran, once per run.
type Ran = Arc<Mutex<Vec<String>>>;

/// A write tool that records each run in `ran`, allowed by its guard, auditing to `sink`.
fn dispatcher(ran: &Ran, sink: &PostgresAuditSink) -> Dispatcher {
    let runs = Arc::clone(ran);
    Dispatcher::builder()
        .tool(
            ToolDef::sync("refund", "Refunds an order.", move |_env, r: Refund| {
                runs.lock().unwrap().push(r.call.clone());
                Ok(format!("refunded {}", r.call))
            })
            .effect(Effect::write()),
        )
        .pre_hook(PreHookDef::sync(
            "drops::allow",
            10,
            |_env, _call: &ToolUse| Ok(Decision::Allow),
        ))
        .audit_log(AuditLog::builder().sink(sink.clone()).build().unwrap())
        .build()
        .unwrap()
}

/// What a stream did: the calls answered (by session), the calls that failed (with why).
#[derive(Default)]
struct Streamed {
    answered: Vec<(String, String)>,
    failed: Vec<String>,
    sessions: usize,
}

/// Streams calls on `store` from [`THREADS`] threads, each running sessions of [`CALLS`]
/// calls one after another until `stop` is set (checked between sessions) and it ran at least
/// one; `progress` counts the calls made (answered or failed).
fn stream(
    store: &PostgresStore,
    d: &Dispatcher,
    stop: &AtomicBool,
    progress: &AtomicUsize,
) -> Streamed {
    let all = Mutex::new(Streamed::default());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let all = &all;
            s.spawn(move || {
                let mut mine = Streamed::default();
                let mut n = 0;
                while n == 0 || !stop.load(Ordering::SeqCst) {
                    let session_id = format!("sess_t{t}_s{n}");
                    let session = d.session_with_store(
                        HookContext::builder("u_drops", &session_id).build(),
                        Arc::new(store.clone()),
                    );
                    for i in 0..CALLS {
                        let call = format!("t{t}_s{n}_{i}");
                        let id = format!("toolu_{i:03}");
                        let tool_use = ToolUse::new(&id, "refund", json!({"call": call}));
                        match toolgate::block_on(session.call(&tool_use)) {
                            Ok(r)
                                if !r.is_error
                                    && r.content_text() == format!("refunded {call}") =>
                            {
                                mine.answered.push((session_id.clone(), id));
                            }
                            Ok(r) => mine.failed.push(format!("{call}: {:?}", r.content_text())),
                            Err(e) => mine.failed.push(format!("{call}: {e}")),
                        }
                        progress.fetch_add(1, Ordering::SeqCst);
                    }
                    session.end();
                    mine.sessions += 1;
                    n += 1;
                }
                let mut all = all.lock().unwrap();
                all.answered.extend(mine.answered);
                all.failed.extend(mine.failed);
                all.sessions += mine.sessions;
            });
        }
    });
    all.into_inner().unwrap()
}

/// Every call answered, each tool run once, the audit lines written, one per call and one
/// summary per session, in chains that verify.
fn check(streamed: &Streamed, ran: &Ran, sink: &PostgresAuditSink, sql: &Sql) {
    assert_eq!(streamed.failed, Vec::<String>::new(), "no call failed");
    let mut runs: HashMap<String, usize> = HashMap::new();
    for call in ran.lock().unwrap().iter() {
        *runs.entry(call.clone()).or_default() += 1;
    }
    let twice: Vec<_> = runs.iter().filter(|(_, n)| **n != 1).collect();
    assert_eq!(twice, Vec::<(&String, &usize)>::new(), "no tool ran twice");
    assert_eq!(
        runs.len(),
        streamed.answered.len(),
        "every answered call ran once"
    );
    toolgate::block_on(sink.flush()).expect("every audit line is written");
    let status = format!("{sink:?}");
    assert!(
        status.contains("failures: 0, error: None"),
        "no append failed: a lost connection is no failure: {status}"
    );
    let verdict = toolgate::block_on(sink.verify(None)).unwrap();
    assert!(verdict.is_ok(), "{verdict}");
    let lines: Vec<(String, String)> = sql
        .rows(
            "SELECT convert_from(line, 'UTF8') FROM toolgate_audit WHERE chain = 'audit_log' \
             ORDER BY seq",
        )
        .into_iter()
        .map(|row| {
            let line: Value = serde_json::from_str(row[0].as_deref().unwrap()).unwrap();
            let field = |k: &str| line[k].as_str().unwrap().to_owned();
            (field("session_id"), field("tool_use_id"))
        })
        .collect();
    let (mut lines, mut answered) = (lines, streamed.answered.clone());
    lines.sort();
    answered.sort();
    assert_eq!(lines, answered, "one audit line per call, no other");
    assert_eq!(
        sql.int("SELECT count(*) FROM toolgate_audit WHERE chain = 'session_summaries'"),
        streamed.sessions as i64,
        "one summary line per session"
    );
}

/// A small xorshift generator for the moments (its seed printed, to run a failure again).
struct Moments(u64);

impl Moments {
    fn new() -> Moments {
        let seed = std::env::var("TOOLGATE_DROPS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64 | 1)
            });
        eprintln!("drops: TOOLGATE_DROPS_SEED={seed}");
        Moments(seed)
    }

    /// A number below `n`.
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn backends_terminated_at_random_moments_cost_no_call() {
    let db = server::database();
    let store = PostgresStore::connect(&db.settings).unwrap();
    let sink = store.audit_sink();
    let ran = Ran::default();
    let d = dispatcher(&ran, &sink);
    let (stop, progress) = (AtomicBool::new(false), AtomicUsize::new(0));
    let admin = Sql::connect(&server::server().settings("postgres"));
    let mut moments = Moments::new();
    let mut terminated = 0;
    let streamed = std::thread::scope(|s| {
        let streaming = s.spawn(|| stream(&store, &d, &stop, &progress));
        // Until 40 backends were terminated and 400 calls made (the stream goes on till then).
        while terminated < 40 || progress.load(Ordering::SeqCst) < 400 {
            std::thread::sleep(Duration::from_millis(moments.below(12)));
            terminated += admin.int(&format!(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM (SELECT pid FROM \
                 pg_stat_activity WHERE datname = '{}' AND random() < 0.5) AS chosen",
                db.name
            ));
        }
        stop.store(true, Ordering::SeqCst);
        streaming.join().unwrap()
    });
    eprintln!(
        "drops: {terminated} backends terminated during {} calls",
        streamed.answered.len() + streamed.failed.len()
    );
    check(&streamed, &ran, &sink, &Sql::connect(&db.settings));
}

#[test]
fn a_server_restarted_under_load_costs_no_call() {
    let own = server::own_server();
    Sql::connect(&own.settings("postgres")).run("CREATE DATABASE restarted");
    let store = PostgresStore::connect(&own.settings("restarted")).unwrap();
    let sink = store.audit_sink();
    let ran = Ran::default();
    let d = dispatcher(&ran, &sink);
    let (stop, progress) = (AtomicBool::new(false), AtomicUsize::new(0));
    let streamed = std::thread::scope(|s| {
        let streaming = s.spawn(|| stream(&store, &d, &stop, &progress));
        // Twice: 100 more calls made, then a restart while the stream goes on.
        let mut answered = 0;
        for _ in 0..2 {
            answered += 100;
            while progress.load(Ordering::SeqCst) < answered {
                std::thread::sleep(Duration::from_millis(5));
            }
            own.restart();
        }
        // And 100 more after the last one.
        while progress.load(Ordering::SeqCst) < answered + 100 {
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::SeqCst);
        streaming.join().unwrap()
    });
    check(
        &streamed,
        &ran,
        &sink,
        &Sql::connect(&own.settings("restarted")),
    );
}

#[test]
fn a_server_down_past_the_connect_timeout_fails_the_call_runs_nothing_and_is_waited_for_once() {
    let own = server::own_server();
    Sql::connect(&own.settings("postgres")).run("CREATE DATABASE down");
    let store = PostgresStore::builder(&own.settings("down"))
        .connect_timeout(Duration::from_secs(1))
        .connect()
        .unwrap();
    let sink = store.audit_sink();
    let ran = Ran::default();
    let d = dispatcher(&ran, &sink);
    let session = d.session_with_store(
        HookContext::builder("u_drops", "sess_down").build(),
        Arc::new(store.clone()),
    );
    let call = |i: usize| {
        let tool_use = ToolUse::new(
            format!("toolu_{i}"),
            "refund",
            json!({"call": format!("c{i}")}),
        );
        toolgate::block_on(session.call(&tool_use))
    };
    assert_eq!(call(1).unwrap().content_text(), "refunded c1");
    own.stop();
    // The first call waits the connect timeout for the server, then fails: nothing runs.
    let waited = call(2).unwrap_err().to_string();
    let prefix = "tool_use \"toolu_2\" was not run: the answer store failed: PostgreSQL: \
                  connecting failed: error connecting to server: ";
    assert!(waited.starts_with(prefix), "{waited}");
    assert!(
        waited.ends_with(" (the server was unavailable for the whole connect timeout, 1000 ms)"),
        "{waited}"
    );
    // The next ones try once each, and fail at once, until a connection opens.
    let at_once = call(3).unwrap_err().to_string();
    assert!(
        at_once.starts_with(&prefix.replace("toolu_2", "toolu_3")),
        "{at_once}"
    );
    assert!(!at_once.contains("connect timeout"), "{at_once}");
    assert_eq!(
        *ran.lock().unwrap(),
        ["c1"],
        "nothing ran while the server was down"
    );
    own.start_again();
    assert_eq!(call(2).unwrap().content_text(), "refunded c2");
    assert_eq!(call(4).unwrap().content_text(), "refunded c4");
    assert_eq!(*ran.lock().unwrap(), ["c1", "c2", "c4"]);
    // The audit lines queued meanwhile are written once it is back.
    toolgate::block_on(sink.flush()).unwrap();
    let verdict = toolgate::block_on(sink.verify(None)).unwrap();
    assert!(verdict.is_ok(), "{verdict}");
}
