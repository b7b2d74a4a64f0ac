//! The agent every process of the tests builds the same way (so a turn paused by one is resumed
//! by another: one fingerprint): a write tool `refund` that records each run in the `ledger`
//! table of the test's database (so runs in every process count), behind a rule that asks a
//! person about refunds above 20 000 cents; a read tool `lookup`.
//!
//! `refund`'s order id says how it runs: `o_slow_…` waits (after recording its run) until the
//! retry of its call has been tried (a row in `retried`), so that retry finds it in progress;
//! `o_block_…` never returns (it is killed); `o_chaos_…` answers 3 ms after its run is recorded,
//! so that a worker killed at random is often killed between the two.
//!
//! `hold` (async) and `hold_sync` (a sync tool, blocking its thread) are the lease tests' write
//! tools: each run creates a file `<order_id>.ran-<pid>` in the folder `TOOLGATE_PG_GATE`
//! names, then waits until a file `<order_id>` is there (the test says when).

use std::time::Duration;

use serde_json::json;
use toolgate::dispatch::{BoxFuture, Effect, Env, PreHookDef, ToolDef};
use toolgate::{Decision, Dispatcher, HookContext, ToolError, ToolUse, audit::AuditLog};

use crate::server::Sql;

/// The ledger's tables (made by the test in its fresh database).
pub(crate) const LEDGER_TABLES: &str = "
    CREATE TABLE ledger (order_id text NOT NULL, worker int NOT NULL);
    CREATE TABLE retried (order_id text PRIMARY KEY);";

/// Makes the ledger's tables.
pub(crate) fn make_ledger(sql: &Sql) {
    sql.run(LEDGER_TABLES);
}

/// The ledger client of one thread's tokio runtime.
pub(crate) struct Ledger {
    client: tokio_postgres::Client,
    worker: i32,
}

impl Ledger {
    /// Connects (on the current tokio runtime, which drives the connection).
    pub(crate) async fn connect(settings: &str, worker: i32) -> Ledger {
        let (client, connection) = tokio_postgres::connect(settings, tokio_postgres::NoTls)
            .await
            .expect("the ledger connects");
        tokio::spawn(connection);
        Ledger { client, worker }
    }

    /// How many times `order_id` ran.
    pub(crate) async fn runs(&self, order_id: &str) -> i64 {
        let row = self
            .client
            .query_one(
                "SELECT count(*) FROM ledger WHERE order_id = $1",
                &[&order_id],
            )
            .await
            .expect("the ledger answers");
        row.get(0)
    }

    /// Marks the call of `order_id` as retried.
    pub(crate) async fn mark_retried(&self, order_id: &str) {
        self.client
            .execute(
                "INSERT INTO retried VALUES ($1) ON CONFLICT DO NOTHING",
                &[&order_id],
            )
            .await
            .expect("the marker is written");
    }

    async fn retried(&self, order_id: &str) -> bool {
        let row = self
            .client
            .query_one(
                "SELECT count(*) FROM retried WHERE order_id = $1",
                &[&order_id],
            )
            .await
            .expect("the ledger answers");
        row.get::<_, i64>(0) > 0
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    /// The order.
    order_id: String,
    /// Cents.
    amount_cents: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    /// The order.
    order_id: String,
}

fn refund(env: Env<'_>, r: Refund) -> BoxFuture<'_, Result<String, ToolError>> {
    let ledger = env.state::<Ledger>();
    Box::pin(async move {
        let ledger = ledger.map_err(ToolError::internal)?;
        ledger
            .client
            .execute(
                "INSERT INTO ledger (order_id, worker) VALUES ($1, $2)",
                &[&r.order_id, &ledger.worker],
            )
            .await
            .map_err(ToolError::internal)?;
        if r.order_id.starts_with("o_slow") {
            // Until its retry was tried (bounded, so a broken test cannot hang).
            for _ in 0..6000 {
                if ledger.retried(&r.order_id).await {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        if r.order_id.starts_with("o_chaos") {
            // Paid, not yet answered, for a while: where a kill leaves a refund the store
            // holds as interrupted.
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
        if r.order_id.starts_with("o_block") {
            std::future::pending::<()>().await;
        }
        Ok(format!(
            "refunded {} on {} by worker {}",
            r.amount_cents, r.order_id, ledger.worker
        ))
    })
}

/// The folder of the gate files (`TOOLGATE_PG_GATE`).
fn gate() -> std::path::PathBuf {
    std::path::PathBuf::from(std::env::var_os("TOOLGATE_PG_GATE").expect("TOOLGATE_PG_GATE"))
}

/// Records a run of `order_id` in the gate folder: the file `<order_id>.ran-<pid>`.
fn ran(order_id: &str) {
    let file = gate().join(format!("{order_id}.ran-{}", std::process::id()));
    std::fs::write(file, "").unwrap();
}

/// The runs of `order_id` recorded in the gate folder `dir`, in every process.
pub(crate) fn runs_in_gate(dir: &std::path::Path, order_id: &str) -> usize {
    let prefix = format!("{order_id}.ran-");
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().starts_with(&prefix)
        })
        .count()
}

fn hold(_env: Env<'_>, r: Refund) -> BoxFuture<'_, Result<String, ToolError>> {
    Box::pin(async move {
        ran(&r.order_id);
        while !gate().join(&r.order_id).exists() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(format!("refunded {} on {}", r.amount_cents, r.order_id))
    })
}

fn hold_sync(_env: Env<'_>, r: Refund) -> Result<String, ToolError> {
    ran(&r.order_id);
    while !gate().join(&r.order_id).exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(format!("refunded {} on {}", r.amount_cents, r.order_id))
}

/// The agent, its ledger client given, claims lasting `lease`, with `log` when given.
pub(crate) fn dispatcher(ledger: Ledger, lease: Duration, log: Option<AuditLog>) -> Dispatcher {
    let mut builder = Dispatcher::builder()
        .tool(ToolDef::new_async("refund", "Refunds an order.", refund).effect(Effect::write()))
        .tool(ToolDef::new_async("hold", "Refunds, when let.", hold).effect(Effect::write()))
        .tool(ToolDef::sync("hold_sync", "Refunds, when let.", hold_sync).effect(Effect::write()))
        .tool(
            ToolDef::sync("lookup", "Looks an order up.", |_env, l: Lookup| {
                Ok(format!("order {} is open", l.order_id))
            })
            .effect(Effect::read()),
        )
        .pre_hook(PreHookDef::sync(
            "fleet::large_refunds",
            10,
            |_env, call: &ToolUse| {
                Ok(match call.input["amount_cents"].as_u64() {
                    Some(n) if n > 20_000 => Decision::ask("refunds above 20000 cents"),
                    _ => Decision::Allow,
                })
            },
        ))
        .state(ledger)
        .claim_lease(lease);
    if let Some(log) = log {
        builder = builder.audit_log(log);
    }
    builder.build().expect("the agent builds")
}

/// The conversation every process of a test answers.
pub(crate) fn context(session: &str) -> HookContext {
    HookContext::builder("u_fleet", session).build()
}

/// A refund call.
pub(crate) fn refund_call(id: &str, order_id: &str, cents: u64) -> ToolUse {
    ToolUse::new(
        id,
        "refund",
        json!({"order_id": order_id, "amount_cents": cents}),
    )
}

/// A lookup call.
pub(crate) fn lookup_call(id: &str, order_id: &str) -> ToolUse {
    ToolUse::new(id, "lookup", json!({"order_id": order_id}))
}
