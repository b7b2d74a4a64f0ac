//! `SqliteStore` (feature `sqlite`): the conformance suite on a fresh file; a reopened file keeps
//! its answers and its paused turns; a schema newer than the build is refused at open, a file of
//! schema version 1 migrated with its answers; a kept turn
//! cut short is refused at every take; a paused turn resumed at once by two processes, and by
//! eight threads with a connection each, runs its refund once; a turn paused in one process by a
//! session on the store (no `put`) is approved as the store shows it and resumed in another; a
//! call whose process was killed while its tool ran is in progress for a retry within its short
//! lease, answered as interrupted after it, and never run again; a live call held five leases (a
//! sync tool and an async one, the worker's context clock fixed or an hour off) is never
//! interrupted, its claim renewed by the store's thread; a worker cut off from the file (another
//! process holds its write lock past the busy timeout, so its renewal fails) has its call
//! answered interrupted by a retry, and its late answer is refused: its host gets the store's
//! answer, and the audit trail has one final line for the call.
//!
//! The two-process tests run this test binary again as child processes: [`worker`], an ignored
//! test selected with `--ignored --exact sqlite::worker`, does the job named by
//! `TOOLGATE_SQLITE_WORKER` and does nothing when it is unset.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate::{
    Decision, Dispatcher, HookContext, Reply, ToolResult, ToolUse,
    approval::{Decisions, ResumeError, Resumed},
    audit::AuditLog,
    dispatch::{Effect, PreHookDef, ToolDef},
    store::sqlite::SqliteStore,
    store::{
        AnswerStore, CallKey, Claim, InputDigest, PendingStore, StoreError, StoreErrorKind, Token,
        conformance,
    },
};

use crate::support::sealed::{self, Paid};
use crate::support::{self, TempDir};

/// What the model reads for a call interrupted earlier (pinned).
const NOT_RUN_AGAIN: &str = "Not run: this call was interrupted earlier while the tool ran, so it \
     may or may not have taken effect, and it is not run again. Check whether it took effect \
     before making the call again.";

/// What a resume gets while another caller resumes the turn.
const BEING_RESUMED: &str = "the paused turn \"toolu_big\" is being resumed by another caller; \
     nothing was run: ask again once it is done to get its answer";

/// The worker's job (`resume`, `crash`, `hold`); unset, the worker does nothing.
const JOB: &str = "TOOLGATE_SQLITE_WORKER";
/// The `hold` worker's tool (`refund` or `refund_async`) and context clock (`system`, `fixed`:
/// 2020-01-01, `skewed`: an hour ahead), as `TOOL CLOCK`.
const HOLD: &str = "TOOLGATE_SQLITE_HOLD";
/// The SQLite file the worker opens.
const FILE: &str = "TOOLGATE_SQLITE_FILE";
/// Where the worker reports: `<OUT>.ready` once it is set up, `<OUT>` what it got.
const OUT: &str = "TOOLGATE_SQLITE_OUT";

/// A lease no step of these tests outlives.
const LONG: Duration = Duration::from_secs(600);

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    /// The order.
    order_id: String,
    /// Cents.
    amount_cents: u64,
}

/// The ledger: one row per refund run, in a table of the store's own file, written by the tool
/// with a connection of its own, so runs in every process count.
fn ledger(file: &Path) -> rusqlite::Connection {
    let db = rusqlite::Connection::open(file).unwrap();
    db.busy_timeout(Duration::from_secs(30)).unwrap();
    db.execute_batch(
        "CREATE TABLE IF NOT EXISTS ledger (order_id TEXT NOT NULL, amount_cents INTEGER NOT \
         NULL, pid INTEGER NOT NULL)",
    )
    .unwrap();
    db
}

/// The refunds the ledger holds.
fn refunds_in(file: &Path) -> i64 {
    ledger(file)
        .query_row("SELECT COUNT(*) FROM ledger", [], |row| row.get(0))
        .unwrap()
}

/// How the refund tool ends once its refund is in the ledger.
#[derive(Clone)]
enum Then {
    /// It answers.
    Answer,
    /// It answers after a while, as a payment provider would: a resume racing it finds the
    /// turn taken, not yet resumed.
    AnswerLate,
    /// It creates this file and never returns (a worker to kill).
    Hang(PathBuf),
    /// It creates `<path>.started`, then answers once `path` exists (the test says when).
    Wait(PathBuf),
}

impl Then {
    /// Ends as `self` says, blocking the thread (the sync tool's way).
    fn end(&self) {
        match self {
            Then::Answer => {}
            Then::AnswerLate => std::thread::sleep(Duration::from_millis(200)),
            Then::Hang(marker) => {
                std::fs::write(marker, "started").unwrap();
                loop {
                    std::thread::park();
                }
            }
            Then::Wait(go) => {
                std::fs::write(go.with_extension("started"), "").unwrap();
                while !go.exists() {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
    }
}

/// A refund tool that writes the ledger in `file`, then ends as `then` says, behind a rule that
/// asks a person about refunds above 20 000 cents; claims and takes last `lease`.
fn refunds(file: &Path, lease: Duration, then: Then) -> Dispatcher {
    refunds_with(file, lease, then, None)
}

/// Records a refund in the ledger of `file`.
fn pay(file: &Path, r: &Refund) {
    ledger(file)
        .execute(
            "INSERT INTO ledger (order_id, amount_cents, pid) VALUES (?1, ?2, ?3)",
            (&r.order_id, r.amount_cents as i64, std::process::id()),
        )
        .unwrap();
}

/// What `refund_async` pays into and how it ends (the dispatcher's state).
struct AsyncRefund {
    file: PathBuf,
    then: Then,
}

/// The async refund: the same refund, paid and ended on another thread while the call's
/// future waits (polled by the dispatcher's timer).
fn refund_async(
    env: toolgate::dispatch::Env<'_>,
    r: Refund,
) -> toolgate::dispatch::BoxFuture<'_, Result<String, toolgate::ToolError>> {
    let state = env
        .state::<AsyncRefund>()
        .map(|s| (s.file.clone(), s.then.clone()));
    Box::pin(async move {
        let (file, then) = state.map_err(toolgate::ToolError::internal)?;
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let set = Arc::clone(&done);
        let order = format!("refunded {} on {}", r.amount_cents, r.order_id);
        std::thread::spawn(move || {
            pay(&file, &r);
            then.end();
            set.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            futures_timer::Delay::new(Duration::from_millis(5)).await;
        }
        Ok(order)
    })
}

/// [`refunds`], with `refund_async` too, writing its audit lines to `audit` when given.
fn refunds_with(file: &Path, lease: Duration, then: Then, audit: Option<&Path>) -> Dispatcher {
    let state = AsyncRefund {
        file: file.to_path_buf(),
        then: then.clone(),
    };
    let file = file.to_path_buf();
    let mut builder = Dispatcher::builder()
        .tool(
            ToolDef::sync("refund", "Refunds an order.", move |_env, r: Refund| {
                pay(&file, &r);
                then.end();
                Ok(format!("refunded {} on {}", r.amount_cents, r.order_id))
            })
            .effect(Effect::write()),
        )
        .tool(
            ToolDef::new_async("refund_async", "Refunds an order.", refund_async)
                .effect(Effect::write()),
        )
        .state(state)
        .pre_hook(PreHookDef::sync(
            "app::large_refund",
            10,
            |_env, call: &ToolUse| {
                Ok(match call.input["amount_cents"].as_u64() {
                    Some(n) if n > 20_000 => Decision::ask("refunds above 20000 cents"),
                    _ => Decision::Allow,
                })
            },
        ))
        .claim_lease(lease);
    if let Some(dir) = audit {
        builder = builder.audit_log(AuditLog::builder().dir(dir).build().unwrap());
    }
    builder.build().unwrap()
}

fn ctx() -> HookContext {
    HookContext::builder("u_001", "sess_sqlite").build()
}

fn approved() -> Decisions {
    Decisions::builder()
        .approve_any_input("toolu_big", "lead")
        .build()
        .unwrap()
}

/// The resumed turn's answer: the one refund done.
fn done() -> Value {
    json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_big", "content": "refunded 25000 on o_1"}
    ]})
}

/// The assistant message asking for the large refund.
fn large_refund_message() -> toolgate::Message {
    support::assistant(
        json!([{"type": "tool_use", "id": "toolu_big", "name": "refund",
                "input": {"order_id": "o_1", "amount_cents": 25000}}]),
        "tool_use",
    )
}

/// Pauses the large refund in a session on `store` and keeps the turn there.
fn pause_large_refund(d: &Dispatcher, store: &Arc<SqliteStore>) {
    let message = large_refund_message();
    let session = d.session_with_store(ctx(), store.clone());
    let Reply::Pending(turn) = toolgate::block_on(session.respond(&message)).unwrap() else {
        panic!("the refund waits for a person");
    };
    toolgate::block_on(store.put(&turn)).unwrap();
}

/// Each resume got the one answer, or was told the turn was being resumed; one got the answer.
fn assert_one_answer(outcomes: &[Result<Value, String>]) {
    for outcome in outcomes {
        match outcome {
            Ok(answer) => assert_eq!(answer, &done()),
            Err(e) => assert_eq!(e, BEING_RESUMED),
        }
    }
    assert!(outcomes.iter().any(Result::is_ok), "{outcomes:?}");
}

fn outcome(resumed: Result<Resumed, ResumeError>) -> Result<Value, String> {
    resumed
        .map(|r| serde_json::to_value(r).unwrap())
        .map_err(|e| e.to_string())
}

#[test]
fn the_sqlite_store_passes_the_conformance_suite() {
    let dir = TempDir::new("sqlite-conformance");
    let store = SqliteStore::open(dir.join("store.sqlite3")).unwrap();
    toolgate::block_on(conformance::answer_store(&store));
    toolgate::block_on(conformance::pending_store(&store));
}

#[test]
fn a_reopened_file_keeps_its_answers_and_its_paused_turns() {
    let dir = TempDir::new("sqlite-reopen");
    let file = dir.join("store.sqlite3");
    let small = ToolUse::new(
        "toolu_small",
        "refund",
        json!({"order_id": "o_2", "amount_cents": 900}),
    );
    let answer = ToolResult::text("toolu_small", "refunded 900 on o_2");
    {
        let store = Arc::new(SqliteStore::open(&file).unwrap());
        let d = refunds(&file, LONG, Then::Answer);
        let session = d.session_with_store(ctx(), store.clone());
        assert_eq!(toolgate::block_on(session.call(&small)).unwrap(), answer);
        pause_large_refund(&d, &store);
    }
    assert_eq!(refunds_in(&file), 1);
    // A new process's store on the same file.
    let store = Arc::new(SqliteStore::open(&file).unwrap());
    let d = refunds(&file, LONG, Then::Answer);
    let session = d.session_with_store(ctx(), store.clone());
    assert_eq!(
        toolgate::block_on(session.call(&small)).unwrap(),
        answer,
        "the answered call is replayed"
    );
    assert_eq!(refunds_in(&file), 1, "and not run again");
    let waiting = toolgate::block_on(store.waiting("sess_sqlite")).unwrap();
    assert_eq!(waiting.len(), 1, "the paused turn still waits");
    assert_eq!(waiting[0].turn_id, "toolu_big");
    let resumed = toolgate::block_on(session.resume_from(&*store, "toolu_big", &approved()));
    assert_eq!(
        outcome(resumed),
        Ok(done()),
        "the kept turn is taken and resumed"
    );
    assert_eq!(refunds_in(&file), 2);
    let again = toolgate::block_on(session.resume_from(&*store, "toolu_big", &approved()));
    assert_eq!(outcome(again), Ok(done()), "its answer is kept");
    assert_eq!(refunds_in(&file), 2);
}

#[test]
fn a_file_written_by_a_newer_schema_is_refused_at_open() {
    let dir = TempDir::new("sqlite-newer");
    let file = dir.join("store.sqlite3");
    drop(SqliteStore::open(&file).unwrap());
    assert_eq!(SqliteStore::SCHEMA_VERSION, 4);
    let db = rusqlite::Connection::open(&file).unwrap();
    db.execute(
        "INSERT INTO toolgate_schema (version, applied_at) VALUES (5, 0)",
        [],
    )
    .unwrap();
    drop(db);
    let refused = SqliteStore::open(&file).unwrap_err();
    assert_eq!(
        refused.to_string(),
        format!(
            "the store failed: the SQLite file {} was written by a newer toolgate (schema \
             version 5); this build knows up to 4",
            file.display()
        )
    );
    assert_eq!(refused.kind(), StoreErrorKind::SchemaVersion);
}

/// The SQLite result code a store error's source carries (its driver's error).
fn sqlite_code(e: &StoreError) -> Option<rusqlite::ErrorCode> {
    std::error::Error::source(e)?
        .downcast_ref::<rusqlite::Error>()?
        .sqlite_error_code()
}

#[test]
fn a_file_that_is_not_a_database_is_refused_at_open_as_corrupt() {
    let dir = TempDir::new("sqlite-not-a-database");
    let file = dir.join("store.sqlite3");
    std::fs::write(&file, [0x5a_u8; 4096]).unwrap();
    let refused = SqliteStore::open(&file).unwrap_err();
    assert_eq!(
        refused.to_string(),
        format!(
            "the store failed: could not open the SQLite file {}: file is not a database",
            file.display()
        )
    );
    assert_eq!(refused.kind(), StoreErrorKind::Corrupt);
    assert_eq!(
        sqlite_code(&refused),
        Some(rusqlite::ErrorCode::NotADatabase)
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        [0x5a_u8; 4096],
        "the file is left as it was"
    );
}

#[test]
fn a_failure_names_the_operation_and_the_file() {
    let dir = TempDir::new("sqlite-errors");
    let missing = dir.join("no-such-folder").join("store.sqlite3");
    let refused = SqliteStore::open(&missing).unwrap_err();
    assert_eq!(
        refused.to_string(),
        format!(
            "the store failed: could not open the SQLite file {}: unable to open database file",
            missing.display()
        )
    );
    assert_eq!(refused.kind(), StoreErrorKind::Unavailable);
    assert_eq!(sqlite_code(&refused), Some(rusqlite::ErrorCode::CannotOpen));
    let file = dir.join("store.sqlite3");
    let store = SqliteStore::open(&file).unwrap();
    let db = rusqlite::Connection::open(&file).unwrap();
    db.execute_batch("DROP TABLE toolgate_calls").unwrap();
    let key = CallKey::new("sess_1", "toolu_1");
    let failed = toolgate::block_on(store.claim(key, Token::draw(), InputDigest([0; 32]), LONG))
        .unwrap_err();
    assert_eq!(
        failed.to_string(),
        format!(
            "the store failed: could not claim tool_use \"toolu_1\" of session \"sess_1\" in the \
             SQLite file {}: no such table: toolgate_calls",
            file.display()
        )
    );
    assert_eq!(
        failed.kind(),
        StoreErrorKind::SchemaVersion,
        "a table missing"
    );
    assert_eq!(sqlite_code(&failed), Some(rusqlite::ErrorCode::Unknown));
}

/// A kept turn whose JSON was cut short (a row written by hand, a copy that stopped half-way) is
/// refused with the store's error at every take, naming the turn and what is wrong, and nothing
/// runs: the take does not keep a turn it could not read, so the next caller is not told it is
/// being resumed by nobody.
#[test]
fn a_kept_turn_cut_short_is_refused_at_every_take_and_nothing_runs() {
    let dir = TempDir::new("sqlite-cut-turn");
    let file = dir.join("store.sqlite3");
    let store = Arc::new(SqliteStore::open(&file).unwrap());
    let d = refunds(&file, LONG, Then::Answer);
    pause_large_refund(&d, &store);
    let db = rusqlite::Connection::open(&file).unwrap();
    db.execute(
        "UPDATE toolgate_pending_turns SET turn = substr(turn, 1, 120)",
        [],
    )
    .unwrap();
    let session = d.session_with_store(ctx(), store.clone());
    let refused = format!(
        "the pending turns' store failed: could not take the paused turn \"toolu_big\" of \
         session \"sess_sqlite\" in the SQLite file {}: a kept turn is not a PendingTurn's \
         JSON: EOF while parsing a string at line 1 column 120",
        file.display()
    );
    for _ in 0..2 {
        let resumed = toolgate::block_on(session.resume_from(&*store, "toolu_big", &approved()));
        let kind = match &resumed {
            Err(ResumeError::Store(e)) => Some(e.kind()),
            _ => None,
        };
        assert_eq!(
            kind,
            Some(StoreErrorKind::Corrupt),
            "data that does not read"
        );
        assert_eq!(outcome(resumed), Err(refused.clone()));
    }
    assert_eq!(refunds_in(&file), 0);
    let state: String = db
        .query_row("SELECT state FROM toolgate_pending_turns", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(state, "waiting");
}

/// Every value of every row of every table of the SQLite file `file`, as bytes (text, blobs,
/// numbers as their decimal text).
fn every_value(file: &Path) -> Vec<Vec<u8>> {
    let db = rusqlite::Connection::open(file).unwrap();
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        tables.iter().any(|t| t == "toolgate_pending_turns"),
        "{tables:?}"
    );
    let mut values = Vec::new();
    for table in tables {
        let mut statement = db.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
        let columns = statement.column_count();
        let mut rows = statement.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for i in 0..columns {
                values.push(match row.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Null => Vec::new(),
                    rusqlite::types::ValueRef::Integer(n) => n.to_string().into_bytes(),
                    rusqlite::types::ValueRef::Real(x) => x.to_string().into_bytes(),
                    rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                        t.to_vec()
                    }
                });
            }
        }
    }
    values
}

/// The values of [`every_value`] that hold a secret of `support::sealed`, with the secrets.
fn values_holding_secrets(file: &Path) -> Vec<String> {
    every_value(file)
        .iter()
        .map(|v| sealed::secrets_in(v))
        .filter(|found| !found.is_empty())
        .map(|found| format!("{found:?}"))
        .collect()
}

/// The fields the audit log hides (a PIN nested in the input, a token a rewrite added) are in
/// no byte of the paused turn, of any row of the file or of any file in its folder (the
/// store's file, its WAL, the audit files), before and after the resume; a resume without the
/// key is refused, runs nothing and leaves the turn waiting; the resume with it, on the file
/// opened again, gives the tool the real values.
#[test]
fn a_hidden_field_is_in_no_row_or_file_and_the_resumed_tool_gets_it() {
    let dir = TempDir::new("sqlite-sealed");
    let file = dir.join("store.sqlite3");
    let ctx = || HookContext::builder(sealed::USER, sealed::SESSION).build();
    let paid = Paid::default();
    {
        let store = Arc::new(SqliteStore::open(&file).unwrap());
        let audit = AuditLog::builder().dir(&dir);
        let d = sealed::dispatcher(audit, &paid, Some(sealed::keys()));
        let session = d.session_with_store(ctx(), store.clone());
        let reply = toolgate::block_on(session.respond(&sealed::message())).unwrap();
        let Reply::Pending(turn) = reply else {
            panic!("the big payment waits: {reply:?}");
        };
        let text = serde_json::to_string(&turn).unwrap();
        assert_eq!(sealed::secrets_in(text.as_bytes()), Vec::<String>::new());
        toolgate::block_on(store.put(&turn)).unwrap();
    }
    assert_eq!(paid.inputs(), [sealed::real("o_0", 900)]);
    assert_eq!(values_holding_secrets(&file), Vec::<String>::new());
    let mut read = 0;
    assert_eq!(
        sealed::files_holding_secrets(&dir, &mut read),
        Vec::<String>::new()
    );
    assert!(
        read >= 3,
        "the store's file and the two audit files: {read}"
    );

    // Without the key: refused, nothing runs, the turn waits again.
    let store = Arc::new(SqliteStore::open(&file).unwrap());
    let audit = || AuditLog::builder().dir(&dir);
    let keyless = sealed::dispatcher(audit(), &paid, None);
    let decisions = Decisions::builder()
        .approve_any_input("toolu_big", "lead")
        .build()
        .unwrap();
    let session = keyless.session_with_store(ctx(), store.clone());
    let refused = toolgate::block_on(session.resume_from(&*store, "msg_sealed", &decisions));
    assert_eq!(
        outcome(refused),
        Err(
            "the input of tool_use \"toolu_big\" has fields the audit log's redaction hides, \
             and their real values cannot be given back: this dispatcher has no seal key \
             (DispatcherBuilder::seal_keys); nothing was run"
                .to_owned()
        )
    );
    assert_eq!(paid.inputs().len(), 1);
    let waiting = toolgate::block_on(store.waiting(sealed::SESSION)).unwrap();
    assert_eq!(waiting.len(), 1, "the turn waits again");

    // With it: the real values reach the tool.
    let d = sealed::dispatcher(audit(), &paid, Some(sealed::keys()));
    let session = d.session_with_store(ctx(), store.clone());
    let resumed = toolgate::block_on(session.resume_from(&*store, "msg_sealed", &decisions));
    assert_eq!(outcome(resumed), Ok(sealed::resumed_answer()));
    assert_eq!(
        paid.inputs(),
        [sealed::real("o_0", 900), sealed::real("o_1", 25000)]
    );
    drop((session, d, keyless, store));
    assert_eq!(values_holding_secrets(&file), Vec::<String>::new());
    let mut read = 0;
    assert_eq!(
        sealed::files_holding_secrets(&dir, &mut read),
        Vec::<String>::new()
    );
}

#[test]
fn processes_opening_one_new_file_at_once_apply_its_schema_once() {
    let dir = TempDir::new("sqlite-fresh");
    let file = dir.join("store.sqlite3");
    let barrier = Barrier::new(4);
    let claims: Vec<Claim> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|n| {
                let (file, barrier) = (&file, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let store = SqliteStore::open(file).unwrap();
                    let id = format!("toolu_{n}");
                    let key = CallKey::new("sess_fresh", &id);
                    toolgate::block_on(store.claim(key, Token::draw(), InputDigest([1; 32]), LONG))
                        .unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(claims, vec![Claim::Claimed; 4]);
    let versions: Vec<i64> = {
        let db = rusqlite::Connection::open(&file).unwrap();
        let mut rows = db.prepare("SELECT version FROM toolgate_schema").unwrap();
        rows.query_map([], |row| row.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(versions, vec![1, 2, 3, 4]);
}

/// Schema version 1, as a build of that version wrote it.
const VERSION_1: &str =
    include_str!("../../hooks-core/src/store/sqlite/migrations/0001_calls_and_turns.sql");

#[test]
fn a_version_1_file_is_migrated_and_its_answers_replay_as_calls_without_a_turn() {
    let dir = TempDir::new("sqlite-v1");
    let file = dir.join("store.sqlite3");
    let result = ToolResult::text("toolu_old", "refunded 900 on o_2");
    {
        let db = rusqlite::Connection::open(&file).unwrap();
        db.execute_batch(VERSION_1).unwrap();
        db.execute_batch(
            "CREATE TABLE toolgate_schema (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL);
             INSERT INTO toolgate_schema (version, applied_at) VALUES (1, 0);",
        )
        .unwrap();
        db.execute(
            "INSERT INTO toolgate_calls (session_id, tool_use_id, digest, state, outcome, result) \
             VALUES ('sess_sqlite', 'toolu_old', ?1, 'answered', 'ok', ?2)",
            rusqlite::params![&[5u8; 32][..], serde_json::to_string(&result).unwrap()],
        )
        .unwrap();
    }
    let store = SqliteStore::open(&file).unwrap();
    let db = rusqlite::Connection::open(&file).unwrap();
    let versions: Vec<i64> = db
        .prepare("SELECT version FROM toolgate_schema ORDER BY version")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(versions, [1, 2, 3, 4]);
    let digest = InputDigest([5; 32]);
    let old = CallKey::new("sess_sqlite", "toolu_old");
    assert_eq!(
        toolgate::block_on(store.claim(old, Token::draw(), digest, LONG)).unwrap(),
        Claim::Seen(toolgate::store::Remembered::Answered {
            digest,
            outcome: toolgate::audit::Outcome::Ok,
            result,
        }),
        "the answer of version 1 is replayed to a call without a turn"
    );
    let named = CallKey::in_turn("sess_sqlite", "msg_1", "toolu_old");
    assert_eq!(
        toolgate::block_on(store.claim(named, Token::draw(), digest, LONG)).unwrap(),
        Claim::OtherTurn { in_progress: false },
        "and a call of a turn cannot be told from it"
    );
    let rows: Vec<(String, String)> = db
        .prepare("SELECT turn, apart FROM toolgate_calls")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows, [(String::new(), String::new())]);
}

#[test]
fn a_turn_resumed_by_eight_threads_with_a_connection_each_runs_once() {
    let dir = TempDir::new("sqlite-threads");
    let file = dir.join("store.sqlite3");
    let d = refunds(&file, LONG, Then::AnswerLate);
    pause_large_refund(&d, &Arc::new(SqliteStore::open(&file).unwrap()));
    let barrier = Barrier::new(8);
    let outcomes: Vec<Result<Value, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (d, file, barrier) = (&d, &file, &barrier);
                s.spawn(move || {
                    // Each worker its own store (its own connection) on the one file.
                    let store = Arc::new(SqliteStore::open(file).unwrap());
                    let session = d.session_with_store(ctx(), store.clone());
                    barrier.wait();
                    outcome(toolgate::block_on(session.resume_from(
                        &*store,
                        "toolu_big",
                        &approved(),
                    )))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        refunds_in(&file),
        1,
        "one refund, whoever won: {outcomes:?}"
    );
    assert_one_answer(&outcomes);
}

/// This test binary again, as the worker doing `job` on `file`, reporting to `out`.
fn spawn_worker(job: &str, file: &Path, out: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "sqlite::worker", "--test-threads=1"])
        .env(JOB, job)
        .env(FILE, file)
        .env(OUT, out)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `marker` exists (the worker's signal), failing if the worker exits first.
fn wait_for(marker: &Path, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !marker.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the worker exited ({status}) before {}", marker.display());
        }
        assert!(
            Instant::now() < deadline,
            "no {} after 120 s",
            marker.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A worker's end: it exited with success, and what it reported.
fn finish(child: Child, out: &Path) -> String {
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the worker failed: {}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn a_turn_resumed_by_two_processes_at_once_runs_once() {
    let dir = TempDir::new("sqlite-processes");
    let file = dir.join("store.sqlite3");
    let d = refunds(&file, LONG, Then::AnswerLate);
    let store = Arc::new(SqliteStore::open(&file).unwrap());
    pause_large_refund(&d, &store);
    let outs: Vec<PathBuf> = (0..2).map(|n| dir.join(format!("worker-{n}"))).collect();
    let mut children: Vec<Child> = outs
        .iter()
        .map(|out| spawn_worker("resume", &file, out))
        .collect();
    for (out, child) in outs.iter().zip(&mut children) {
        wait_for(&out.with_extension("ready"), child);
    }
    // Both are set up and wait on their standard input: one line each starts them together.
    for child in &mut children {
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"go\n").unwrap();
    }
    let outcomes: Vec<Result<Value, String>> = children
        .into_iter()
        .zip(&outs)
        .map(|(child, out)| {
            let report = finish(child, out);
            match report.split_once('\n') {
                Some(("ok", answer)) => Ok(serde_json::from_str(answer).unwrap()),
                Some(("err", error)) => Err(error.to_owned()),
                _ => panic!("not a report: {report:?}"),
            }
        })
        .collect();
    assert_eq!(
        refunds_in(&file),
        1,
        "one refund, whoever won: {outcomes:?}"
    );
    assert_one_answer(&outcomes);
    // Once it is done, a later resume in this process gets the winner's answer.
    let session = d.session_with_store(ctx(), store.clone());
    let later = toolgate::block_on(session.resume_from(&*store, "toolu_big", &approved()));
    assert_eq!(outcome(later), Ok(done()));
    assert_eq!(refunds_in(&file), 1);
}

#[test]
fn a_turn_paused_in_one_process_is_kept_by_its_session_and_resumed_in_another_as_approved() {
    let dir = TempDir::new("sqlite-kept");
    let file = dir.join("store.sqlite3");
    let out = dir.join("pause-worker");
    // The agent's process: a session on the store pauses the refund, and exits.
    let child = spawn_worker("pause", &file, &out);
    assert_eq!(finish(child, &out), "paused\ntoolu_big");
    assert_eq!(refunds_in(&file), 0);
    // The approval page's process (this one): the store lists the waiting call as paused.
    let store = Arc::new(SqliteStore::open(&file).unwrap());
    let turns = toolgate::block_on(store.waiting("sess_sqlite")).unwrap();
    assert_eq!(turns.len(), 1);
    let call = turns[0].awaiting().next().unwrap();
    assert_eq!(
        (call.tool_use_id.as_str(), call.name.as_str(), &call.input),
        (
            "toolu_big",
            "refund",
            &json!({"order_id": "o_1", "amount_cents": 25000})
        )
    );
    let decisions = Decisions::builder().approve(call, "lead").build().unwrap();
    // A worker session resumes it from the store, the approval bound to what was shown.
    let d = refunds(&file, LONG, Then::Answer);
    let worker = d.session_on(ctx(), store.clone());
    let answer = toolgate::block_on(worker.resume_from(&*store, &turns[0].turn_id, &decisions));
    assert_eq!(outcome(answer), Ok(done()));
    assert_eq!(refunds_in(&file), 1);
    // Resumed once: the store answers a second resume with the first answer, nothing runs.
    let again = toolgate::block_on(worker.resume_from(&*store, "toolu_big", &decisions));
    assert_eq!(outcome(again), Ok(done()));
    assert_eq!(refunds_in(&file), 1);
    assert!(
        toolgate::block_on(store.waiting("sess_sqlite"))
            .unwrap()
            .is_empty()
    );
}

/// The lease of the call the crash worker claims: what the parent lets run out. Renewed every
/// third of it while the worker lives, so a retry right after the kill is within it.
const CRASH_LEASE: Duration = Duration::from_millis(1500);

#[test]
fn a_call_whose_process_was_killed_while_its_tool_ran_is_never_run_again() {
    let dir = TempDir::new("sqlite-crash");
    let file = dir.join("store.sqlite3");
    let store = Arc::new(SqliteStore::open(&file).unwrap());
    let out = dir.join("crash-worker");
    let mut child = spawn_worker("crash", &file, &out);
    // The refund is in the ledger and the tool still runs: the worker dies now, unanswered.
    wait_for(&out, &mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(refunds_in(&file), 1);
    let d = refunds(&file, LONG, Then::Answer);
    let session = d.session_with_store(ctx(), store.clone());
    // Within the lease (renewed until the kill), a retry on another worker is in progress.
    let early = toolgate::block_on(session.call(&crash_call())).unwrap_err();
    assert!(
        matches!(early, toolgate::CallError::InProgress { .. }),
        "{early}"
    );
    std::thread::sleep(CRASH_LEASE + CRASH_LEASE / 3);
    // After it, a retry here is answered as interrupted, and nothing runs, ever.
    for _ in 0..2 {
        let result = toolgate::block_on(session.call(&crash_call())).unwrap();
        assert_eq!(result, ToolResult::error("toolu_crash", NOT_RUN_AGAIN));
    }
    let other = SqliteStore::open(&file).unwrap();
    let key = CallKey::new("sess_sqlite", "toolu_crash");
    let digest = InputDigest::of(&crash_call().input, 32);
    let seen = toolgate::block_on(other.claim(key, Token::draw(), digest, LONG)).unwrap();
    assert_eq!(
        seen,
        Claim::Seen(toolgate::store::Remembered::Interrupted { digest })
    );
    assert_eq!(
        refunds_in(&file),
        1,
        "the refund ran once, in the killed worker"
    );
}

/// The lease of the `hold` worker's claim: its tool runs five of them and more.
const HOLD_LEASE: Duration = Duration::from_millis(300);

/// The `hold` worker's call of `tool`.
fn held_call(tool: &str) -> ToolUse {
    ToolUse::new(
        "toolu_held",
        tool,
        json!({"order_id": "o_held", "amount_cents": 700}),
    )
}

/// The context of a worker whose clock is `clock` (`system`, `fixed`: 2020-01-01, `skewed`: an
/// hour ahead of the machine's): the store's clock judges leases, never this one.
fn ctx_at(clock: &str) -> HookContext {
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
    HookContext::builder("u_001", "sess_sqlite")
        .clock(clock)
        .build()
}

/// What a `hold` worker reported: its host's answer (or error), and its dispatcher's lease
/// stats (held, renewed, renewals, renewals failed, fenced).
struct Held {
    got: String,
    stats: [u64; 5],
}

/// Starts the `hold` worker on `tool` with `clock`, reporting to `out`, and waits until its
/// tool runs (its refund in the ledger).
fn start_held(file: &Path, out: &Path, tool: &str, clock: &str) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "sqlite::worker", "--test-threads=1"])
        .env(JOB, "hold")
        .env(HOLD, format!("{tool} {clock}"))
        .env(FILE, file)
        .env(OUT, out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&out.with_extension("started"), &mut child);
    child
}

/// Lets the `hold` worker's tool answer, and reads its report once it exited.
fn finish_held(child: Child, out: &Path) -> Held {
    std::fs::write(out.with_extension("go"), "").unwrap();
    let report = finish(child, out);
    let (got, stats) = report.rsplit_once('\n').expect("two lines");
    let stats: Vec<u64> = stats.split(' ').map(|n| n.parse().unwrap()).collect();
    Held {
        got: got.to_owned(),
        stats: stats.try_into().unwrap(),
    }
}

/// A call held five leases in a worker process (its tool `tool`, its context clock `clock`):
/// retried meanwhile from this process, it is in progress every time; then answered once, its
/// claim renewed by the store's thread, and the retry replays that answer.
fn held_five_leases(tool: &str, clock: &str) {
    let dir = TempDir::new("sqlite-held");
    let file = dir.join("store.sqlite3");
    let store = Arc::new(SqliteStore::open(&file).unwrap());
    let out = dir.join("held");
    let child = start_held(&file, &out, tool, clock);
    let d = refunds_with(&file, HOLD_LEASE, Then::Answer, Some(&dir.join("audit")));
    let session = d.session_with_store(ctx(), store.clone());
    let call = held_call(tool);
    for _ in 0..5 {
        std::thread::sleep(HOLD_LEASE);
        let retry = toolgate::block_on(session.call(&call)).unwrap_err();
        assert!(
            matches!(retry, toolgate::CallError::InProgress { .. }),
            "a retry while the live call runs, past its lease: {retry}"
        );
    }
    let held = finish_held(child, &out);
    assert_eq!(held.got, "refunded 700 on o_held");
    let [count, renewed, renewals, failed, fenced] = held.stats;
    // Five leases passed while it ran: its claim was renewed at least four times, or a retry
    // would have found it lapsed.
    assert_eq!((count, renewed, failed, fenced), (1, 1, 0, 0));
    assert!(renewals >= 4, "{renewals} renewals");
    let replay = toolgate::block_on(session.call(&call)).unwrap();
    assert_eq!(replay.content_text(), "refunded 700 on o_held");
    assert_eq!(refunds_in(&file), 1, "answered once");
    let lines = crate::support::json_lines(&dir.join("audit").join("audit_log.jsonl"));
    let finals: Vec<&Value> = lines.iter().filter(|l| l.get("replay").is_none()).collect();
    assert_eq!(finals.len(), 1, "{lines:?}");
    assert_eq!(finals[0]["outcome"], "ok");
    assert_eq!(
        finals[0]["lease"],
        json!({"lease_ms": 300, "renew_every_ms": 100, "renewals": renewals,
               "renewals_failed": 0})
    );
}

#[test]
fn a_sync_tool_held_five_leases_is_never_interrupted_whatever_the_workers_clock() {
    held_five_leases("refund", "skewed");
}

#[test]
fn an_async_tool_held_five_leases_is_never_interrupted_whatever_the_workers_clock() {
    held_five_leases("refund_async", "fixed");
}

#[test]
fn a_worker_cut_off_from_its_file_loses_its_claim_and_its_late_answer_is_refused() {
    let dir = TempDir::new("sqlite-fenced");
    let file = dir.join("store.sqlite3");
    let store = Arc::new(SqliteStore::open(&file).unwrap());
    let out = dir.join("held");
    let child = start_held(&file, &out, "refund", "system");
    // Another process holds the file's write lock: the worker's next renewal waits the busy
    // timeout and fails, and it renews no more.
    let lock = rusqlite::Connection::open(&file).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    let lost = out.with_extension("lost");
    let bound = Instant::now() + Duration::from_secs(120);
    while !lost.exists() {
        assert!(Instant::now() < bound, "the worker's renewal never failed");
        std::thread::sleep(Duration::from_millis(20));
    }
    lock.execute_batch("ROLLBACK").unwrap();
    // Its lease ran out long ago: a retry here answers the call interrupted.
    let d = refunds_with(&file, HOLD_LEASE, Then::Answer, Some(&dir.join("audit")));
    let session = d.session_with_store(ctx(), store.clone());
    let call = held_call("refund");
    let interrupted = ToolResult::error("toolu_held", NOT_RUN_AGAIN);
    assert_eq!(
        toolgate::block_on(session.call(&call)).unwrap(),
        interrupted
    );
    // The worker's tool answers now: the store refuses its answer, and its host gets the
    // store's, as every retry does.
    let held = finish_held(child, &out);
    assert_eq!(held.got, NOT_RUN_AGAIN);
    let [count, _, _, failed, fenced] = held.stats;
    assert_eq!((count, failed, fenced), (1, 1, 1));
    assert_eq!(refunds_in(&file), 1, "the refund ran once");
    let lines = crate::support::json_lines(&dir.join("audit").join("audit_log.jsonl"));
    let finals: Vec<&Value> = lines.iter().filter(|l| l.get("replay").is_none()).collect();
    assert_eq!(finals.len(), 1, "one final line for the call: {lines:?}");
    assert_eq!(finals[0]["outcome"], "not_run");
    assert_eq!(finals[0]["content"], NOT_RUN_AGAIN);
    assert_eq!(
        finals[0]["detail"],
        format!(
            "the tool ran (outcome ok), but its renewal failed (the store failed: could not \
             renew a lease in the SQLite file {}: database is locked), and the store refused \
             it: tool_use \"toolu_held\" of session \"sess_sqlite\" is no longer held by this \
             claim (the store holds it as interrupted: this claim's lease ran out and a retry \
             took the call over), so its answer is not recorded: the store holds the call as \
             interrupted, and that is its answer, here as to every retry; the tool's answer was \
             \"refunded 700 on o_held\"",
            file.display()
        )
    );
    assert_eq!(finals[0]["lease"]["renewals_failed"], 1);
    let replays: Vec<&Value> = lines.iter().filter(|l| l.get("replay").is_some()).collect();
    assert_eq!(replays.len(), 1, "the retry's answer, marked a replay");
    assert_eq!(replays[0]["outcome"], "not_run");
}

fn crash_call() -> ToolUse {
    ToolUse::new(
        "toolu_crash",
        "refund",
        json!({"order_id": "o_3", "amount_cents": 900}),
    )
}

/// The `hold` worker: runs the held call (`TOOLGATE_SQLITE_HOLD`) whose tool answers once the
/// parent says so, marking when a renewal of its claim failed; reports its host's answer and
/// its lease stats.
fn hold_worker(file: &Path, out: &Path, store: &Arc<SqliteStore>) {
    crate::support::leases::mark_when_a_renewal_fails(&out.with_extension("lost"));
    let hold = std::env::var(HOLD).unwrap();
    let (tool, clock) = hold.split_once(' ').unwrap();
    let then = Then::Wait(out.with_extension("go"));
    let audit = out.parent().unwrap().join("audit");
    let d = refunds_with(file, HOLD_LEASE, then, Some(&audit));
    let session = d.session_with_store(ctx_at(clock), store.clone());
    let got = match toolgate::block_on(session.call(&held_call(tool))) {
        Ok(result) => result.content_text().into_owned(),
        Err(e) => format!("error: {e}"),
    };
    session.end();
    let s = d.lease_stats();
    let stats = [s.held, s.renewed, s.renewals, s.renewals_failed, s.fenced];
    let stats: Vec<String> = stats.iter().map(u64::to_string).collect();
    std::fs::write(out, format!("{got}\n{}", stats.join(" "))).unwrap();
}

/// A child process's job, selected by `TOOLGATE_SQLITE_WORKER`: `resume` (open the file,
/// report ready, wait for a line on standard input, resume the large refund, report what it
/// got), `pause` (pause the large refund in a session on the store, report its turn id),
/// `crash` (run a refund whose tool never returns, for the parent to kill) or `hold` (run a
/// refund whose tool answers when the parent says so, [`hold_worker`]).
#[test]
#[ignore = "a worker the two-process tests start as a child process; alone it does nothing"]
fn worker() {
    let Ok(job) = std::env::var(JOB) else {
        return;
    };
    let file = PathBuf::from(std::env::var_os(FILE).unwrap());
    let out = PathBuf::from(std::env::var_os(OUT).unwrap());
    let store = Arc::new(SqliteStore::open(&file).unwrap());
    match job.as_str() {
        "resume" => {
            let d = refunds(&file, LONG, Then::AnswerLate);
            let session = d.session_with_store(ctx(), store.clone());
            std::fs::write(out.with_extension("ready"), "").unwrap();
            let mut go = String::new();
            std::io::stdin().lock().read_line(&mut go).unwrap();
            let decisions = approved();
            let resumed = session.resume_from(&*store, "toolu_big", &decisions);
            let report = match outcome(toolgate::block_on(resumed)) {
                Ok(answer) => format!("ok\n{answer}"),
                Err(error) => format!("err\n{error}"),
            };
            std::fs::write(&out, report).unwrap();
        }
        "pause" => {
            // A session on the store pauses the large refund; the process puts nothing itself.
            let d = refunds(&file, LONG, Then::Answer);
            let session = d.session_on(ctx(), store.clone());
            let reply = toolgate::block_on(session.respond(&large_refund_message())).unwrap();
            let report = match reply {
                Reply::Pending(turn) => format!("paused\n{}", turn.turn_id),
                other => format!("not paused\n{other:?}"),
            };
            std::fs::write(&out, report).unwrap();
        }
        "crash" => {
            let d = refunds(&file, CRASH_LEASE, Then::Hang(out));
            let session = d.session_with_store(ctx(), store.clone());
            let _ = toolgate::block_on(session.call(&crash_call()));
            unreachable!("the tool never returns");
        }
        "hold" => hold_worker(&file, &out, &store),
        other => panic!("no worker job {other:?}"),
    }
}
