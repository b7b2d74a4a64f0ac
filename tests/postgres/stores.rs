//! `PostgresStore` alone: the conformance suite every store passes; migrations applied once by
//! four workers connecting at once; a database of schema version 1 migrated, its rows kept and
//! its answers replayed as calls without a turn; a schema newer than the build refused at
//! connect; a store unreachable at claim time runs nothing, and a lost connection is opened
//! again; a session on the store keeps the turn it pauses for another worker to resume.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use serde_json::json;
use toolgate::dispatch::{PreHookDef, ToolDef};
use toolgate::store::postgres::PostgresStore;
use toolgate::store::{Token, conformance};
use toolgate::{CallError, Decision, Dispatcher, HookContext, ToolUse};

use crate::server::{self, Sql};

#[test]
fn the_postgres_store_passes_the_conformance_suite() {
    let db = server::database();
    let store = PostgresStore::connect(&db.settings).unwrap();
    toolgate::block_on(conformance::answer_store(&store));
    toolgate::block_on(conformance::pending_store(&store));
}

#[test]
fn four_workers_connecting_at_once_apply_the_migrations_once() {
    let db = server::database();
    let barrier = Barrier::new(4);
    let stores: Vec<Result<PostgresStore, _>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    PostgresStore::connect(&db.settings)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(stores.iter().all(Result::is_ok), "{stores:?}");
    let sql = Sql::connect(&db.settings);
    let versions: Vec<[Option<String>; 1]> = (1..=PostgresStore::SCHEMA_VERSION)
        .map(|v| [Some(v.to_string())])
        .collect();
    assert_eq!(
        sql.rows("SELECT version FROM toolgate_schema ORDER BY version"),
        versions,
        "each migration applied once"
    );
    assert_eq!(PostgresStore::SCHEMA_VERSION, 4);
}

/// Schema version 1, as a build of that version applied it.
const VERSION_1: &str =
    include_str!("../../hooks-core/src/store/postgres/migrations/0001_tables.sql");

#[test]
fn a_version_1_database_is_migrated_and_its_answers_replay_as_calls_without_a_turn() {
    use toolgate::store::{AnswerStore, CallKey, Claim, InputDigest, Remembered};
    let db = server::database();
    let sql = Sql::connect(&db.settings);
    sql.run(
        "CREATE TABLE toolgate_schema (version integer PRIMARY KEY, \
         applied_at timestamptz NOT NULL DEFAULT now())",
    );
    sql.run(VERSION_1);
    sql.run("INSERT INTO toolgate_schema (version) VALUES (1)");
    let result = toolgate::ToolResult::text("toolu_old", "refunded 900 on o_2");
    sql.run(&format!(
        "INSERT INTO toolgate_answers (session_id, tool_use_id, digest, state, outcome, result) \
         VALUES ('s_old', 'toolu_old', decode(repeat('05', 32), 'hex'), 'answered', 'ok', '{}')",
        serde_json::to_string(&result).unwrap()
    ));
    let store = PostgresStore::connect(&db.settings).unwrap();
    assert_eq!(
        sql.rows("SELECT version FROM toolgate_schema ORDER BY version"),
        [
            [Some("1".to_owned())],
            [Some("2".to_owned())],
            [Some("3".to_owned())],
            [Some("4".to_owned())]
        ]
    );
    let lease = std::time::Duration::from_secs(60);
    let digest = InputDigest([5; 32]);
    let old = CallKey::new("s_old", "toolu_old");
    assert_eq!(
        toolgate::block_on(store.claim(old, Token::draw(), digest, lease)).unwrap(),
        Claim::Seen(Remembered::Answered {
            digest,
            outcome: toolgate::audit::Outcome::Ok,
            result,
        }),
        "the answer of version 1 is replayed to a call without a turn"
    );
    let named = CallKey::in_turn("s_old", "chatcmpl-1", "toolu_old");
    assert_eq!(
        toolgate::block_on(store.claim(named, Token::draw(), digest, lease)).unwrap(),
        Claim::OtherTurn { in_progress: false },
        "and a call of a turn cannot be told from it"
    );
    assert_eq!(
        sql.rows("SELECT turn, apart FROM toolgate_answers"),
        [[Some(String::new()), Some(String::new())]]
    );
}

#[test]
fn a_database_with_a_newer_schema_is_refused_at_connect() {
    let db = server::database();
    drop(PostgresStore::connect(&db.settings).unwrap());
    let newer = PostgresStore::SCHEMA_VERSION + 1;
    Sql::connect(&db.settings).run(&format!(
        "INSERT INTO toolgate_schema (version) VALUES ({newer})"
    ));
    let e = PostgresStore::connect(&db.settings).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "the store failed: PostgreSQL: the database's toolgate schema is version {newer}, \
             newer than this build's version {}: upgrade toolgate to use it (this build would \
             misread its tables), or connect to another database",
            PostgresStore::SCHEMA_VERSION
        )
    );
    assert_eq!(e.kind(), toolgate::store::StoreErrorKind::SchemaVersion);
}

#[test]
fn a_connection_that_must_not_migrate_changes_nothing_and_names_a_missing_schema() {
    let db = server::database();
    let read_only = || {
        PostgresStore::builder(&db.settings)
            .migrate(false)
            .connect()
    };
    let e = read_only().unwrap_err();
    assert_eq!(
        e.to_string(),
        "the store failed: PostgreSQL: the database holds no toolgate tables (no \
         toolgate_schema): is it the agent's database?"
    );
    // Nothing was made.
    let sql = Sql::connect(&db.settings);
    assert_eq!(
        sql.int("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'toolgate_%'"),
        0
    );
    // Once an agent has migrated it, a read-only connection verifies its chains.
    drop(PostgresStore::connect(&db.settings).unwrap());
    let store = read_only().unwrap();
    let verdict = toolgate::block_on(store.audit_sink().verify(None)).unwrap();
    assert!(verdict.is_ok());
    // A schema of another version: named, and left as it is.
    sql.run(&format!(
        "INSERT INTO toolgate_schema (version) VALUES ({})",
        PostgresStore::SCHEMA_VERSION + 1
    ));
    assert_eq!(
        read_only().unwrap_err().to_string(),
        format!(
            "the store failed: PostgreSQL: the database's toolgate schema is version {}, and \
             this build reads version {}: use the toolgate that wrote it",
            PostgresStore::SCHEMA_VERSION + 1,
            PostgresStore::SCHEMA_VERSION
        )
    );
}

#[test]
fn a_server_that_cannot_be_reached_is_a_store_error_at_connect() {
    let port = server::free_port().unwrap();
    let closed = format!("host=127.0.0.1 port={port} user=toolgate dbname=none");
    let e = PostgresStore::connect(&closed).unwrap_err().to_string();
    assert!(
        e.starts_with(
            "the store failed: PostgreSQL: connecting failed: error connecting to server"
        ),
        "{e}"
    );
    let stopped = "host=/nonexistent/toolgate-no-server user=toolgate dbname=none";
    let e = PostgresStore::connect(stopped).unwrap_err().to_string();
    assert!(
        e.starts_with("the store failed: PostgreSQL: connecting failed:"),
        "{e}"
    );
    let e = PostgresStore::connect("postgres://[bad")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("the store failed: PostgreSQL: the connection settings do not parse"));
}

/// An order.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Order {
    /// Its id.
    #[allow(dead_code)]
    order_id: String,
}

/// A refund tool counting its runs, allowed by its hook.
fn counting(runs: &Arc<AtomicUsize>) -> Dispatcher {
    let ran = Arc::clone(runs);
    Dispatcher::builder()
        .tool(ToolDef::sync(
            "refund",
            "Refunds an order.",
            move |_env, _: Order| {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok(String::from("refunded"))
            },
        ))
        .pre_hook(PreHookDef::sync(
            "app::allow",
            10,
            |_env, _call: &ToolUse| Ok(Decision::Allow),
        ))
        .build()
        .unwrap()
}

#[test]
fn a_store_unreachable_at_claim_time_runs_nothing_and_a_lost_connection_is_opened_again() {
    let db = server::database();
    let store = PostgresStore::connect(&db.settings).unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let d = counting(&runs);
    let session = d.session_with_store(
        HookContext::builder("u_1", "sess_down").build(),
        Arc::new(store),
    );
    let call = |id: &str| ToolUse::new(id, "refund", json!({"order_id": "o_1"}));
    assert!(toolgate::block_on(session.call(&call("toolu_1"))).is_ok());
    // The server goes away for this database: its connections are cut, new ones refused.
    let admin = Sql::connect(&server::server().settings("postgres"));
    admin.run(&format!(
        "ALTER DATABASE {0} ALLOW_CONNECTIONS false;
         SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{0}'",
        db.name
    ));
    let e = toolgate::block_on(session.call(&call("toolu_2"))).unwrap_err();
    let CallError::Store { tool_use_id, error } = &e else {
        panic!("a store error: {e}");
    };
    assert_eq!(tool_use_id, "toolu_2");
    assert!(
        error
            .message()
            .starts_with("PostgreSQL: connecting failed: FATAL 55000: database"),
        "{error}"
    );
    // The chain a host matches on: the call's error, the store's, the driver's with its
    // SQLSTATE (55000, the database does not allow connections).
    assert_eq!(error.kind(), toolgate::store::StoreErrorKind::Unavailable);
    let store_error = std::error::Error::source(&e)
        .and_then(|s| s.downcast_ref::<toolgate::store::StoreError>())
        .expect("the call's source is the store's error");
    assert_eq!(store_error, error);
    let driver = std::error::Error::source(store_error)
        .and_then(|s| s.downcast_ref::<tokio_postgres::Error>())
        .expect("the store's source is the driver's error");
    assert_eq!(
        driver.code(),
        Some(&tokio_postgres::error::SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE)
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "nothing ran");
    // Back: the next call connects again and runs.
    admin.run(&format!(
        "ALTER DATABASE {} ALLOW_CONNECTIONS true",
        db.name
    ));
    assert!(toolgate::block_on(session.call(&call("toolu_2"))).is_ok());
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[test]
fn a_read_only_connection_reads_the_trail_and_the_server_refuses_its_writes() {
    use toolgate::store::{AnswerStore, CallKey, InputDigest};
    let db = server::database();
    // The agent's store migrates and writes one audit line.
    let store = PostgresStore::connect(&db.settings).unwrap();
    let sink = store.audit_sink();
    let log = toolgate::audit::AuditLog::builder()
        .sink(sink.clone())
        .build()
        .unwrap();
    let d = Dispatcher::builder()
        .tool(ToolDef::sync("ping", "Answers pong.", |_env, _: Order| {
            Ok("pong".to_owned())
        }))
        .audit_log(log)
        .build()
        .unwrap();
    let session = d.session(HookContext::builder("u_1", "s_1").build());
    toolgate::block_on(session.call(&ToolUse::new("toolu_1", "ping", json!({"order_id": "o_1"}))))
        .unwrap();
    toolgate::block_on(sink.flush()).unwrap();
    // The operator's connection: the chain verifies; a claim is refused by the server.
    let operator = PostgresStore::builder(&db.settings)
        .connections(1)
        .read_only(true)
        .connect()
        .unwrap();
    let verdict = toolgate::block_on(operator.audit_sink().verify(None)).unwrap();
    assert!(verdict.is_ok(), "{verdict}");
    assert_eq!(verdict.heads().unwrap().calls.lines, 1);
    let key = CallKey::new("s_2", "toolu_2");
    let refused = toolgate::block_on(operator.claim(
        key,
        Token::draw(),
        InputDigest([0; 32]),
        std::time::Duration::from_secs(60),
    ))
    .expect_err("a write on a read-only connection");
    assert!(
        refused.to_string().contains("read-only transaction"),
        "{refused}"
    );
    let sql = Sql::connect(&db.settings);
    assert_eq!(
        sql.int("SELECT count(*) FROM toolgate_answers WHERE session_id = 's_2'"),
        0
    );
}

#[test]
fn a_database_at_schema_version_1_is_migrated_and_keeps_its_rows() {
    use toolgate::store::{AnswerStore, CallKey, Claim, InputDigest, Remembered};
    let db = server::database();
    let sql = Sql::connect(&db.settings);
    let claim = |store: &PostgresStore, key, digest, lease| {
        toolgate::block_on(store.claim(key, Token::draw(), digest, lease)).unwrap()
    };
    // What a build of schema version 1 left: its tables, and a claim whose worker died.
    sql.run(
        "CREATE TABLE toolgate_schema (
             version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
    );
    sql.run(include_str!(
        "../../hooks-core/src/store/postgres/migrations/0001_tables.sql"
    ));
    sql.run(
        "INSERT INTO toolgate_schema (version) VALUES (1);
         INSERT INTO toolgate_answers (session_id, tool_use_id, digest, state, lease_until)
         VALUES ('s_old', 'toolu_1', decode(repeat('07', 32), 'hex'), 'in_progress',
                 now() - interval '1 hour')",
    );
    let store = PostgresStore::connect(&db.settings).unwrap();
    assert_eq!(
        sql.rows("SELECT version FROM toolgate_schema ORDER BY version"),
        [
            [Some("1".to_owned())],
            [Some("2".to_owned())],
            [Some("3".to_owned())],
            [Some("4".to_owned())]
        ]
    );
    let lease = std::time::Duration::from_secs(60);
    let digest = InputDigest([7; 32]);
    assert_eq!(
        claim(&store, CallKey::new("s_old", "toolu_1"), digest, lease),
        Claim::Seen(Remembered::Interrupted { digest }),
        "the old claim, its lease over, is interrupted: no token of a new claim matches it"
    );
    assert_eq!(
        claim(&store, CallKey::new("s_old", "toolu_2"), digest, lease),
        Claim::Claimed
    );
}

#[test]
fn a_session_on_the_store_keeps_its_paused_turn_for_another_worker_to_resume() {
    let db = server::database();
    let runs = Arc::new(AtomicUsize::new(0));
    let ran = Arc::clone(&runs);
    let d = Dispatcher::builder()
        .tool(ToolDef::sync(
            "refund",
            "Refunds an order.",
            move |_env, _: Order| {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok(String::from("refunded"))
            },
        ))
        .pre_hook(PreHookDef::sync("app::ask", 10, |_env, _call: &ToolUse| {
            Ok(Decision::ask("every refund needs a person"))
        }))
        .build()
        .unwrap();
    let context = || HookContext::builder("u_1", "sess_kept").build();
    let message: toolgate::Message = serde_json::from_value(json!({
        "role": "assistant", "stop_reason": "tool_use", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "refund", "input": {"order_id": "o_1"}}]
    }))
    .unwrap();
    // The agent's worker: its session on the store keeps the turn; it puts nothing itself.
    let agent = Arc::new(PostgresStore::connect(&db.settings).unwrap());
    let session = d.session_on(context(), agent.clone());
    let reply = toolgate::block_on(session.respond(&message)).unwrap();
    assert!(matches!(reply, toolgate::Reply::Pending(_)), "{reply:?}");
    drop(session);
    // Another worker, its own connection: the person's approval of what the store shows.
    let other = Arc::new(PostgresStore::connect(&db.settings).unwrap());
    let turns = toolgate::block_on(toolgate::store::PendingStore::waiting(&*other, "sess_kept"));
    let turns = turns.unwrap();
    assert_eq!(turns.len(), 1);
    let call = turns[0].awaiting().next().unwrap();
    let decisions = toolgate::approval::Decisions::builder()
        .approve(call, "lead")
        .build()
        .unwrap();
    let worker = d.session_on(context(), other.clone());
    let answer = toolgate::block_on(worker.resume_from(&*other, "toolu_1", &decisions));
    assert_eq!(
        serde_json::to_value(answer.unwrap()).unwrap(),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "refunded"}]})
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
