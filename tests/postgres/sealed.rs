//! What the audit log hides stays hidden in PostgreSQL (`approval/seal.rs`): a PIN nested in a
//! paused call's input and a token a rewrite added are in no column of any row of the
//! database (the paused turn, the answer memory, the audit trail), before and after the resume;
//! a worker without the key is refused and runs nothing; a worker with it gives the tool the
//! real values.

use std::sync::Arc;

use toolgate::approval::Decisions;
use toolgate::audit::AuditLog;
use toolgate::store::PendingStore;
use toolgate::store::postgres::PostgresStore;
use toolgate::{HookContext, Reply};

use crate::server::{self, Sql};
use crate::support::sealed::{self, Paid};

/// Every column of every row of every table of the database, as text (`bytea` as `\x` hex),
/// that holds a secret of `support::sealed`, with the table and the secrets; `values` counts
/// the values read.
fn values_holding_secrets(sql: &Sql, values: &mut usize) -> Vec<String> {
    let tables = sql.rows("SELECT tablename FROM pg_tables WHERE schemaname = 'public'");
    let mut found = Vec::new();
    for table in tables.into_iter().filter_map(|mut row| row.remove(0)) {
        for row in sql.rows(&format!("SELECT * FROM \"{table}\"")) {
            for value in row.into_iter().flatten() {
                *values += 1;
                let held = sealed::secrets_in(value.as_bytes());
                if !held.is_empty() {
                    found.push(format!("{table}: {held:?}"));
                }
            }
        }
    }
    found
}

#[test]
fn a_hidden_field_is_in_no_row_and_the_resumed_tool_gets_it() {
    let db = server::database();
    let sql = Sql::connect(&db.settings);
    let ctx = || HookContext::builder(sealed::USER, sealed::SESSION).build();
    let paid = Paid::default();
    // The first worker pauses the turn, its audit trail in the database.
    {
        let store = Arc::new(PostgresStore::connect(&db.settings).unwrap());
        let sink = store.audit_sink();
        let audit = AuditLog::builder().sink(sink.clone());
        let d = sealed::dispatcher(audit, &paid, Some(sealed::keys()));
        let session = d.session_with_store(ctx(), store.clone());
        let reply = toolgate::block_on(session.respond(&sealed::message())).unwrap();
        let Reply::Pending(turn) = reply else {
            panic!("the big payment waits: {reply:?}");
        };
        let text = serde_json::to_string(&turn).unwrap();
        assert_eq!(sealed::secrets_in(text.as_bytes()), Vec::<String>::new());
        toolgate::block_on(store.put(&turn)).unwrap();
        toolgate::block_on(sink.flush()).unwrap();
    }
    assert_eq!(paid.inputs(), [sealed::real("o_0", 900)]);
    let mut values = 0;
    assert_eq!(
        values_holding_secrets(&sql, &mut values),
        Vec::<String>::new()
    );
    assert_eq!(
        sql.int("SELECT count(*) FROM toolgate_pending WHERE state = 'waiting'"),
        1
    );
    assert_eq!(
        sql.int("SELECT count(*) FROM toolgate_audit WHERE chain = 'audit_log'"),
        2,
        "the two calls' lines"
    );

    // A worker without the key: refused, nothing runs, the turn waits again.
    let store = Arc::new(PostgresStore::connect(&db.settings).unwrap());
    let decisions = Decisions::builder()
        .approve_any_input("toolu_big", "lead")
        .build()
        .unwrap();
    let keyless = sealed::dispatcher(AuditLog::builder().sink(store.audit_sink()), &paid, None);
    let session = keyless.session_with_store(ctx(), store.clone());
    let refused = toolgate::block_on(session.resume_from(&*store, "msg_sealed", &decisions));
    assert_eq!(
        refused.unwrap_err().to_string(),
        "the input of tool_use \"toolu_big\" has fields the audit log's redaction hides, and \
         their real values cannot be given back: this dispatcher has no seal key \
         (DispatcherBuilder::seal_keys); nothing was run"
    );
    assert_eq!(paid.inputs().len(), 1);
    assert_eq!(
        sql.int("SELECT count(*) FROM toolgate_pending WHERE state = 'waiting'"),
        1,
        "the turn waits again"
    );

    // A worker with the key: the real values reach the tool.
    let sink = store.audit_sink();
    let d = sealed::dispatcher(
        AuditLog::builder().sink(sink.clone()),
        &paid,
        Some(sealed::keys()),
    );
    let session = d.session_with_store(ctx(), store.clone());
    let resumed = toolgate::block_on(session.resume_from(&*store, "msg_sealed", &decisions));
    assert_eq!(
        serde_json::to_value(resumed.unwrap()).unwrap(),
        sealed::resumed_answer()
    );
    assert_eq!(
        paid.inputs(),
        [sealed::real("o_0", 900), sealed::real("o_1", 25000)]
    );
    session.end();
    toolgate::block_on(sink.flush()).unwrap();
    assert_eq!(
        sql.int("SELECT count(*) FROM toolgate_audit WHERE chain = 'audit_log'"),
        3
    );
    let mut after = 0;
    assert_eq!(
        values_holding_secrets(&sql, &mut after),
        Vec::<String>::new()
    );
    assert!(
        after > values,
        "the resume's rows were read too: {values} then {after}"
    );
}
