//! The audit trail in PostgreSQL: the same lines as the files, byte for byte, exported to
//! files the files' verifier checks; many writers keep one chain; each of the six tamper kinds
//! made with SQL (as the database owner) is found and named by the database's verifier.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use toolgate::audit::{AuditLog, ChainBreak, ChainProblem, ChainStatus, verify_audit_dir};
use toolgate::dispatch::{PreHookDef, ToolDef};
use toolgate::store::postgres::{AuditHeads, HeadCheck, PostgresAuditSink, PostgresStore};
use toolgate::{Decision, Dispatcher, HookContext, ToolUse};

use crate::server::{self, Sql};
use crate::support::TempDir;

/// An order.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Order {
    /// Its id.
    #[allow(dead_code)]
    order_id: String,
}

/// A dispatcher auditing to `log`: a tool that answers, one rule that blocks `o_bad`.
fn audited(log: AuditLog) -> Dispatcher {
    Dispatcher::builder()
        .tool(ToolDef::sync(
            "lookup",
            "Looks an order up.",
            |_env, o: Order| Ok(format!("order {} is open", o.order_id)),
        ))
        .pre_hook(PreHookDef::sync(
            "app::no_bad",
            10,
            |_env, call: &ToolUse| {
                Ok(if call.input["order_id"] == "o_bad" {
                    Decision::deny("that order is closed")
                } else {
                    Decision::Allow
                })
            },
        ))
        .audit_log(log)
        .build()
        .unwrap()
}

/// Two sessions of `calls` calls each (one of them blocked, one replayed), ended, flushed.
fn write_sessions(d: &Dispatcher, sink: &PostgresAuditSink, label: &str, calls: usize) {
    for s in 0..2 {
        let session = d.session(HookContext::builder("u_1", format!("sess_{label}_{s}")).build());
        for i in 0..calls {
            let order = if i == 2 {
                "o_bad".to_owned()
            } else {
                format!("o_{i}")
            };
            let call = ToolUse::new(format!("toolu_{i}"), "lookup", json!({"order_id": order}));
            toolgate::block_on(session.call(&call)).unwrap();
            if i == 1 {
                toolgate::block_on(session.call(&call)).unwrap(); // a replay
            }
        }
        session.end();
    }
    toolgate::block_on(sink.flush()).unwrap();
}

#[test]
fn the_database_chain_is_the_files_chain_byte_for_byte_and_exports_to_verifiable_files() {
    let db = server::database();
    let store = PostgresStore::connect(&db.settings).unwrap();
    let sink = store.audit_sink();
    let files = TempDir::new("pg-audit-files");
    let log = AuditLog::builder()
        .dir(&files)
        .sink(sink.clone())
        .build()
        .unwrap();
    write_sessions(&audited(log), &sink, "bytes", 5);
    let export = TempDir::new("pg-audit-export");
    let (calls, sessions) = toolgate::block_on(sink.export_jsonl(export.join("out"))).unwrap();
    assert_eq!((calls, sessions), (12, 2));
    for name in ["audit_log.jsonl", "session_summaries.jsonl"] {
        assert_eq!(
            std::fs::read(export.join("out").join(name)).unwrap(),
            std::fs::read(files.join(name)).unwrap(),
            "{name}: the same bytes as the files"
        );
    }
    let files_verdict = verify_audit_dir(export.join("out")).unwrap();
    assert!(files_verdict.is_ok(), "{files_verdict:?}");
    let verdict = toolgate::block_on(sink.verify(None)).unwrap();
    assert!(verdict.is_ok());
    assert_eq!(verdict.calls.status, files_verdict.calls.status);
    assert_eq!(verdict.sessions.status, files_verdict.sessions.status);
    // An export never overwrites a file.
    let again = toolgate::block_on(sink.export_jsonl(export.join("out"))).unwrap_err();
    assert!(again.message().contains("exists"), "{again}");
    let io = std::error::Error::source(&again).and_then(|s| s.downcast_ref::<std::io::Error>());
    assert_eq!(
        io.map(std::io::Error::kind),
        Some(std::io::ErrorKind::AlreadyExists),
        "the I/O error is the refusal's source"
    );
}

#[test]
fn a_sink_that_flushes_on_summary_has_a_sessions_lines_written_when_it_ends() {
    let db = server::database();
    let sink = PostgresAuditSink::connect(&db.settings)
        .unwrap()
        .flush_on_summary(std::time::Duration::from_secs(30));
    let d = audited(AuditLog::builder().sink(sink).build().unwrap());
    let session = d.session(HookContext::builder("u_1", "sess_end").build());
    let call = ToolUse::new("toolu_1", "lookup", json!({"order_id": "o_1"}));
    toolgate::block_on(session.call(&call)).unwrap();
    session.end();
    let sql = Sql::connect(&db.settings);
    assert_eq!(
        sql.int("SELECT count(*) FROM toolgate_audit"),
        2,
        "its line and its summary"
    );
}

#[test]
fn three_writers_at_once_keep_one_chain() {
    let db = server::database();
    let written = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for w in 0..3 {
            let (db, written) = (&db, &written);
            s.spawn(move || {
                let store = PostgresStore::connect(&db.settings).unwrap();
                let sink = store.audit_sink();
                let log = AuditLog::builder().sink(sink.clone()).build().unwrap();
                write_sessions(&audited(log), &sink, &format!("w{w}"), 20);
                written.fetch_add(2 * 21, Ordering::SeqCst);
            });
        }
    });
    let store = PostgresStore::connect(&db.settings).unwrap();
    let verdict = toolgate::block_on(store.audit_sink().verify(None)).unwrap();
    assert!(verdict.is_ok(), "{}", verdict.calls);
    let heads = verdict.heads().unwrap();
    assert_eq!(heads.calls.lines, written.load(Ordering::SeqCst) as u64);
    assert_eq!(heads.sessions.lines, 6);
}

/// The database's verdict on `audit_log` after `tamper`, against `kept`; the table restored.
fn after(
    sql: &Sql,
    sink: &PostgresAuditSink,
    kept: &AuditHeads,
    tamper: &str,
) -> (ChainStatus, HeadCheck) {
    sql.run(tamper);
    let verdict = toolgate::block_on(sink.verify(Some(kept))).unwrap();
    sql.run("DELETE FROM toolgate_audit; INSERT INTO toolgate_audit SELECT * FROM saved");
    assert!(verdict.sessions.is_ok(), "the other chain is untouched");
    (verdict.calls.status, verdict.calls.head)
}

/// Where `status` says the chain breaks, and how.
fn break_of(status: &ChainStatus) -> (u64, ChainProblem) {
    let ChainStatus::Broken(ChainBreak {
        file,
        line,
        problem,
        ..
    }) = status
    else {
        panic!("the chain breaks: {status}");
    };
    assert_eq!(file, Path::new("postgres:toolgate_audit/audit_log"));
    (*line, problem.clone())
}

#[test]
fn each_tamper_kind_made_with_sql_is_found_and_named() {
    let db = server::database();
    let store = PostgresStore::connect(&db.settings).unwrap();
    let sink = store.audit_sink();
    let log = AuditLog::builder().sink(sink.clone()).build().unwrap();
    write_sessions(&audited(log), &sink, "tamper", 4);
    let kept = toolgate::block_on(sink.verify(None))
        .unwrap()
        .heads()
        .unwrap();
    assert_eq!(kept.calls.lines, 10);
    let sql = Sql::connect(&db.settings);
    sql.run("CREATE TABLE saved AS SELECT * FROM toolgate_audit");
    let calls = "chain = 'audit_log'";
    let edited = format!(
        "UPDATE toolgate_audit SET line = convert_to(replace(convert_from(line, 'UTF8'), \
         '\"outcome\":\"ok\"', '\"outcome\":\"blocked\"'), 'UTF8') WHERE {calls} AND seq = 3"
    );
    let (status, _) = after(&sql, &sink, &kept, &edited);
    assert_eq!(
        break_of(&status),
        (4, ChainProblem::DoesNotFollow),
        "edited"
    );
    assert_eq!(
        status.to_string(),
        "line 4 does not follow line 3: line 3 was edited, or lines were deleted between them \
         in postgres:toolgate_audit/audit_log"
    );
    let deleted = format!("DELETE FROM toolgate_audit WHERE {calls} AND seq = 3");
    let (status, _) = after(&sql, &sink, &kept, &deleted);
    assert_eq!(
        break_of(&status),
        (3, ChainProblem::DoesNotFollow),
        "deleted"
    );
    let swapped = format!(
        "UPDATE toolgate_audit a SET line = b.line FROM saved b WHERE a.{calls} AND b.{calls} \
         AND ((a.seq = 3 AND b.seq = 4) OR (a.seq = 4 AND b.seq = 3))"
    );
    let (status, _) = after(&sql, &sink, &kept, &swapped);
    assert_eq!(
        break_of(&status),
        (3, ChainProblem::Reordered { follows: 4 }),
        "swapped"
    );
    // A forged line after line 3, chained to it, the later lines moved up by one.
    let inserted = format!(
        "UPDATE toolgate_audit SET seq = seq + 1000 WHERE {calls} AND seq >= 4;
         UPDATE toolgate_audit SET seq = seq - 999 WHERE {calls} AND seq >= 1000;
         INSERT INTO toolgate_audit (chain, seq, line, writer_id, writer_n)
         SELECT chain, 4, convert_to('{{\"forged\":true,\"prev\":\"' ||
             encode(sha256(line || '\\x0a'::bytea), 'hex') || '\"}}', 'UTF8'), 0, 0
         FROM saved WHERE {calls} AND seq = 3"
    );
    let (status, _) = after(&sql, &sink, &kept, &inserted);
    assert_eq!(
        break_of(&status),
        (4, ChainProblem::Inserted { until: 4 }),
        "inserted"
    );
    let last_changed = format!(
        "UPDATE toolgate_audit SET line = convert_to(replace(convert_from(line, 'UTF8'), \
         '\"u_1\"', '\"u_2\"'), 'UTF8') WHERE {calls} AND seq = 10"
    );
    let (status, head) = after(&sql, &sink, &kept, &last_changed);
    assert!(
        status.is_ok(),
        "a changed last line leaves a chain that verifies alone"
    );
    let HeadCheck::Changed { kept: k, found } = &head else {
        panic!("the kept head finds it: {head:?}");
    };
    assert_eq!((k, found != &kept.calls.last_hash), (&kept.calls, true));
    assert_eq!(
        head.to_string(),
        format!(
            "line 10 has hash {found}, not the kept head's {}: the line was changed",
            kept.calls.last_hash
        )
    );
    let truncated = format!("DELETE FROM toolgate_audit WHERE {calls} AND seq > 8");
    let (status, head) = after(&sql, &sink, &kept, &truncated);
    assert!(
        status.is_ok(),
        "a truncation leaves a chain that verifies alone"
    );
    assert_eq!(
        head,
        HeadCheck::Truncated {
            kept: kept.calls.clone(),
            lines: 8
        }
    );
    assert_eq!(
        head.to_string(),
        "the chain has 8 lines, fewer than the 10 of the kept head: lines were deleted from its end"
    );
    // Untouched, and after more lines were appended, the kept head holds.
    let verdict = toolgate::block_on(sink.verify(Some(&kept))).unwrap();
    assert_eq!(verdict.calls.head, HeadCheck::Holds);
    assert!(verdict.is_ok());
}
