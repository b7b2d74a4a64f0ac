//! The stores in PostgreSQL (feature `postgres`): the answer memory and the paused turns
//! ([`PostgresStore`]) and the audit trail ([`PostgresAuditSink`]) of every worker process that
//! connects to one database, so a fleet of workers is one agent: a call retried on another
//! worker, or after a restart, is never run twice; a turn paused for a person is resumed by
//! exactly one of them; every worker appends to one hash chain.
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolgate_core::{Dispatcher, HookContext, audit::AuditLog};
//! use toolgate_core::store::postgres::PostgresStore;
//!
//! let store = PostgresStore::connect("host=/run/postgresql dbname=agent user=agent")?;
//! let sink = store.audit_sink();
//! let log = AuditLog::builder().sink(sink.clone()).build()?;
//! let d = Dispatcher::builder().audit_log(log).build()?;
//! let session = d.session_with_store(
//!     HookContext::builder("u_1", "sess_1").build(),
//!     Arc::new(store.clone()),
//! );
//! // … session.respond(…), session.resume_from(&store, …) …
//! session.end();
//! toolgate_core::block_on(sink.flush())?; // every line queued so far is committed
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # How it runs
//!
//! tokio-postgres needs a tokio runtime to drive its connections, and sessions may be driven by
//! anything, so the store has a runtime of its own: one thread (`toolgate-postgres`) that owns
//! the connections. Each method sends its statement there and awaits the answer: one
//! cross-thread hop each way per operation (a task spawned on the thread, its answer sent back
//! on a oneshot channel: about 10 to 40 µs on a shared 2-core machine, against a commit's 150 to
//! 200 µs; BENCHMARKS.md, "PostgreSQL"). The stores' statements share a few pipelined
//! connections ([`PostgresStoreBuilder::connections`], 2 by default), the answers have one of
//! their own (its commits do not wait for the flush: see below), and the audit writer one for
//! its transactions. A server that cannot be reached answers each call with a [`StoreError`],
//! and nothing panics.
//!
//! A claim (a take) a session [`hold`](AnswerStore::hold)s while its call runs is renewed by one
//! more thread (`toolgate-postgres-renew`, started at the first hold): every third of the lease
//! it sends one statement for every claim due, through the runtime thread, which extends the
//! lease (by the server's clock) of each claim still in progress under its token and answers the
//! tokens it extended; a claim not among them was taken over, and a statement that fails (the
//! server unreachable past the connect timeout) ends the renewals of its claims. A call that
//! ends within one interval renews nothing.
//!
//! # A dropped connection
//!
//! A connection the server drops (a restart, a failover, `pg_terminate_backend`, a pooler
//! closing idle connections: `57P01`, `57P02`, `57P03`, `57P05`, a closed or reset socket)
//! costs a call nothing. The statement whose connection was lost is sent again on a new
//! connection, once per lost connection (at most 16 sends, and only within the connect timeout
//! after the first loss), and the audit writer writes its batch again at once; a new
//! connection that the server refuses for a moment (restarting: `57P03`, or its socket gone) is
//! tried again, after a wait growing from 10 ms to 500 ms, for up to the connect timeout
//! ([`PostgresStoreBuilder::connect_timeout`], 10 s by default). A server unavailable for the
//! whole connect timeout fails the call (nothing runs: `CallError::Store`), and the calls after
//! it try once each, failing at once, until a connection opens again.
//!
//! Whether the server ran a statement whose connection was lost cannot always be known (the
//! socket may close after the commit, before the answer), so each statement is safe to run
//! twice (`store/postgres/sql.rs` says why for each): a claim's insert and a take carry a token
//! the row keeps, so their second send recognizes the row the first made and answers claimed
//! (or taken) instead of "in progress"; a release that forgets a call and a put back carry the
//! same token, so their second send never frees a claim or take another worker made in between;
//! an answer, an interruption and a resume change only a row still in progress (or taken), which
//! stays final once changed; an audit batch's lines each carry their writer's id and number, so
//! a batch written again after its commit adds no line. No call runs twice, and the chain has
//! one line per call.
//!
//! # Tables and statements
//!
//! `connect` applies the migrations (`store/postgres/migrations/*.sql`) the database lacks, each
//! in a transaction, under an advisory lock (workers connecting at once migrate one at a time),
//! and records them in `toolgate_schema`; a database whose schema is newer than this build is
//! refused at connect with both versions named. Every operation is one statement (an audit
//! append, one transaction), never a read then a write:
//!
//! | operation | statement |
//! |---|---|
//! | `claim` | `INSERT … ON CONFLICT DO NOTHING RETURNING`, with the claim's token; when it inserted nothing, one statement that marks the row interrupted when it is in progress and its lease ended by the server's clock (`UPDATE … WHERE state = 'in_progress' AND lease_until < now() RETURNING`) and answers the row |
//! | `answered` | `UPDATE … WHERE state = 'in_progress' AND claim_token = $6 RETURNING`, or, when it changed nothing, the row's state and token in the same statement (a row answered under the token: not refused; else [`StoreError::fenced`]); on the answers' connection |
//! | `release` | `UPDATE` (or `DELETE`) `… WHERE state = 'in_progress' AND claim_token = $4` |
//! | renewal | `UPDATE … FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[]) … WHERE state = 'in_progress' AND claim_token = token RETURNING claim_token`: every claim due, one statement (takes: the same on the turns) |
//! | `abandon` | `release`, spawned on the store's runtime (never blocks) |
//! | `put` | `INSERT … ON CONFLICT DO NOTHING` |
//! | `take` | `UPDATE … WHERE state = 'waiting' OR (state = 'taken' AND lease_until < now()) RETURNING`, so exactly one caller wins, with the row's state read in the same statement (and the take's token: its own row is taken again) |
//! | `resumed`, `put_back` | `UPDATE … WHERE state = 'taken' AND take_token = $n` (`resumed` answers, as `answered` does, the row when it changed nothing) |
//! | `waiting` | `SELECT … WHERE state = 'waiting' ORDER BY place` |
//!
//! Keys: (`session_id`, `tool_use_id`, `apart`) and (`session_id`, `turn_id`); a call's row
//! also holds its `turn`, and `apart` is `''` for the session's first call with the id, the
//! turn for a later turn's call that reuses it ("Turns" in the [store docs](super): a claim of
//! a later turn's call takes two more statements, the same two, on the row kept apart).
//! Leases are kept by the server's clock, so the workers' clocks never matter.
//!
//! # What it promises at a crash
//!
//! A claim is committed and flushed (durable) before the tool runs, so no crash of a worker or
//! of the server makes a call run twice. A worker killed while a call runs leaves the call in
//! progress until its lease ([`claim_lease`](crate::dispatch::DispatcherBuilder::claim_lease),
//! 15 s by default) ends, counted from its last renewal; a retry after it is answered as
//! interrupted and never run again. An answer is
//! committed before [`answered`](AnswerStore::answered) returns, and seen by every worker at
//! once, but by default without waiting for the server's WAL flush: it becomes durable at the
//! server's next synchronous commit (the next claim of any worker), or within 3 ×
//! `wal_writer_delay` (600 ms by default). A *server* crash in that moment loses it: the call's
//! row is back in progress, and a retry after the lease is answered as interrupted, not
//! replayed ([`PostgresStoreBuilder::durable_answers`] waits for the flush instead, one more
//! per call). Every other operation (a release, a kept, taken, resumed or put back turn) is
//! committed and flushed before its future answers. A worker killed while it resumes a turn
//! holds the turn until the take's lease ends; the next resume then replays what the first had
//! answered. Audit lines are queued and written by a writer task: see [`PostgresAuditSink`]
//! for what a crash loses there.

mod audit;
mod conn;
#[cfg(feature = "inbox")]
mod inbox;
#[cfg(feature = "inbox")]
mod inbox_sql;
mod runtime;
mod sql;

use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;
use tokio::runtime::Handle;
use tokio_postgres::{Config, Row};

use crate::approval::pending::PendingTurn;
use crate::audit::outcome::Outcome;
use crate::content::message::ToolResult;

use super::lease::{self, Batch, Held, Hold, Registry, Token};
use super::{
    AnswerStore, BesideFirst, CallKey, Claim, Found, InputDigest, PendingStore, Remembered,
    StoreError, StoreErrorKind, StoreFuture, Taken, beside_first, fenced, fenced_take,
};
use conn::{Lane, Pool};
use runtime::Runtime;

pub use audit::{
    AuditHeads, ChainHead, HeadCheck, PostgresAuditSink, PostgresChain, PostgresVerification,
};

/// The answer memory ([`AnswerStore`]) and the paused turns ([`PendingStore`]) in one
/// PostgreSQL database, shared by every session and every process connected to it (see the
/// [module docs](self) for the tables, the statements and what it promises at a crash).
/// Cloning it is cheap: the clones share the runtime thread and the connections, which close
/// when the last clone (and the last [`PostgresAuditSink`] made from it) is dropped.
///
/// Give it to sessions with
/// [`Dispatcher::session_with_store`](crate::Dispatcher::session_with_store) (as an
/// `Arc<dyn AnswerStore>`) and to [`Session::resume_from`](crate::Session::resume_from) (as the
/// `&dyn PendingStore`).
#[derive(Clone)]
pub struct PostgresStore {
    shared: Arc<Shared>,
}

/// What the clones of a store share. Fields drop in order: the audit writer's queue first (its
/// task then drains it), the runtime last (it waits for the drain, then stops); the renewer is
/// stopped before any of them (`Drop`).
struct Shared {
    audit: OnceLock<Arc<audit::Writer>>,
    /// The approval inbox's connections (feature `inbox`), made at its first use.
    #[cfg(feature = "inbox")]
    inbox: OnceLock<Arc<inbox::Conns>>,
    pool: Arc<Pool>,
    /// The claims and takes held, renewed by the renewer thread once started.
    registry: Arc<Registry>,
    renewer: OnceLock<()>,
    runtime: Runtime,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.registry.stop();
    }
}

/// Settings of a [`PostgresStore`] before it connects: [`PostgresStore::builder`].
#[derive(Debug, Clone)]
#[must_use = "call .connect() to get the store"]
pub struct PostgresStoreBuilder {
    settings: String,
    connections: usize,
    connect_timeout: Duration,
    durable_answers: bool,
    migrate: bool,
    read_only: bool,
}

impl PostgresStoreBuilder {
    /// How many pipelined connections the stores' statements share (default 2, at least 1).
    /// The audit writer has one more of its own.
    pub fn connections(mut self, n: usize) -> Self {
        self.connections = n.max(1);
        self
    }

    /// Whether an answer is durable before [`answered`](AnswerStore::answered) returns (its
    /// commit waits for the server's WAL flush). Off by default: answers are committed
    /// asynchronously (`synchronous_commit = off` on their own connection), visible to every
    /// worker at once, and durable at the server's next synchronous commit (any claim of any
    /// worker, or `wal_writer_delay` later, 200 ms by default); that saves one flush per call
    /// (BENCHMARKS.md, "PostgreSQL"). What it risks is a *server* crash in that moment: the
    /// call's row is then back in progress, its lease runs out, and a retry is answered as
    /// interrupted instead of replayed. It never makes a call run twice: a claim is always
    /// durable before the tool runs.
    pub fn durable_answers(mut self, durable: bool) -> Self {
        self.durable_answers = durable;
        self
    }

    /// Whether [`connect`](Self::connect) applies the migrations the database lacks (the
    /// default) or only checks that it holds this build's schema, changing nothing: for a
    /// read-only check of a database (`toolgate audit verify postgres://…`), which must not
    /// create tables in a database that turns out not to be the agent's.
    pub fn migrate(mut self, migrate: bool) -> Self {
        self.migrate = migrate;
        self
    }

    /// Read-only connections (default off): every transaction of every connection is read-only
    /// (`default_transaction_read_only`, set when the connection opens), so the server refuses
    /// any write, and nothing is migrated (as with `migrate(false)`). For an operator's look at
    /// a fleet's database: [`PostgresAuditSink::verify`] and
    /// [`export_jsonl`](PostgresAuditSink::export_jsonl) work; a claim, an answer or an audit
    /// line is refused with the server's error.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        if read_only {
            self.migrate = false;
        }
        self
    }

    /// How long opening a connection may take before it fails (default 10 s; a
    /// `connect_timeout` in the settings wins); also how long a connection opened again after
    /// one was lost waits for a server that refuses it for a moment (restarting), and how long
    /// after a statement's first lost connection it is still sent again (see [A dropped
    /// connection](self#a-dropped-connection)).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Starts the store's runtime thread, connects, and applies the migrations the database
    /// lacks (see [`PostgresStore::connect`]). Blocks the calling thread until then (a few
    /// milliseconds on a reachable server): call it at start-up.
    ///
    /// # Errors
    /// A [`StoreError`] naming what failed: settings that do not parse, a server that cannot be
    /// reached or refuses the login, a migration that fails, or a database whose toolgate
    /// schema is newer than this build's ([`PostgresStore::SCHEMA_VERSION`]), naming both
    /// versions; with [`migrate(false)`](Self::migrate), a database with no toolgate tables or
    /// another schema version.
    pub fn connect(self) -> Result<PostgresStore, StoreError> {
        let mut config: Config = self.settings.parse().map_err(|e| {
            StoreError::new(
                StoreErrorKind::Unavailable,
                format!("PostgreSQL: the connection settings do not parse: {e}"),
            )
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(self.connect_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("toolgate");
        }
        if self.read_only {
            let options = match config.get_options() {
                Some(given) => format!("{given} -c default_transaction_read_only=on"),
                None => "-c default_transaction_read_only=on".to_owned(),
            };
            config.options(&options);
        }
        let runtime = Runtime::start()?;
        let pool = Arc::new(Pool::new(
            config,
            self.connections,
            self.durable_answers,
            self.migrate,
        ));
        let starting = Arc::clone(&pool);
        runtime.block_on("connecting", async move { starting.start().await })?;
        Ok(PostgresStore {
            shared: Arc::new(Shared {
                audit: OnceLock::new(),
                #[cfg(feature = "inbox")]
                inbox: OnceLock::new(),
                pool,
                registry: Arc::default(),
                renewer: OnceLock::new(),
                runtime,
            }),
        })
    }
}

impl PostgresStore {
    /// The schema version this build writes and reads (in `toolgate_schema`).
    pub const SCHEMA_VERSION: i32 = conn::SCHEMA_VERSION;

    /// Connects with `settings`, a URL (`postgres://user:password@host:port/dbname`,
    /// `postgresql://…`) or key-value pairs (`host=/run/postgresql dbname=agent user=agent`; a
    /// `host` that starts with `/` is a Unix socket's folder), as tokio-postgres reads them
    /// (plain connections: no TLS), and applies the migrations the database lacks. Two
    /// connections for the stores, the default timeouts; [`builder`](Self::builder) for others.
    ///
    /// # Errors
    /// As [`PostgresStoreBuilder::connect`].
    pub fn connect(settings: &str) -> Result<PostgresStore, StoreError> {
        PostgresStore::builder(settings).connect()
    }

    /// A store to connect with `settings` (as [`connect`](Self::connect) reads them) and other
    /// options.
    pub fn builder(settings: &str) -> PostgresStoreBuilder {
        PostgresStoreBuilder {
            settings: settings.to_owned(),
            connections: 2,
            connect_timeout: Duration::from_secs(10),
            durable_answers: false,
            migrate: true,
            read_only: false,
        }
    }

    /// The audit sink of this store's database (see [`PostgresAuditSink`]): every sink made
    /// from one store (or its clones) shares one writer task and one queue, so their lines are
    /// written in the order they were recorded.
    pub fn audit_sink(&self) -> PostgresAuditSink {
        let writer = self.shared.audit.get_or_init(|| {
            audit::Writer::start(&self.shared.runtime, self.shared.pool.config().clone())
        });
        PostgresAuditSink::new(self.clone(), Arc::clone(writer))
    }

    fn runtime(&self) -> &Runtime {
        &self.shared.runtime
    }

    fn pool(&self) -> Arc<Pool> {
        Arc::clone(&self.shared.pool)
    }

    /// Holds `held` (made with `token`, for `lease`): renewed by the renewer thread
    /// (`toolgate-postgres-renew`, which sends each batch's statement through the store's
    /// runtime), started now if it is not running. A thread that cannot start leaves the hold
    /// unrenewed (its claim lapses with its lease), and `tracing` says so.
    fn hold_in(&self, held: Held, token: Token, lease: Duration) -> Hold {
        let shared = &self.shared;
        shared.renewer.get_or_init(|| {
            let (pool, handle) = (self.pool(), self.runtime().handle().clone());
            let started = lease::spawn("toolgate-postgres-renew", &shared.registry, move |b| {
                renew(&pool, &handle, b)
            });
            if let Err(error) = started {
                tracing::error!(target: "toolgate::memory", %error,
                    "the PostgreSQL store's claims are not renewed; they lapse with their leases");
            }
        });
        shared.registry.hold(held, token, lease)
    }

    /// Runs one operation's work on the store's runtime.
    fn run<'a, T: Send + 'static>(
        &'a self,
        what: &'static str,
        work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> StoreFuture<'a, Result<T, StoreError>> {
        StoreFuture::boxed(self.runtime().run(what, work))
    }
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

/// An operation and its key, as errors name them: `claim of "toolu_1" in session "s"`, with
/// `of turn "chatcmpl-1"` after the id for a call of a turn.
struct Op {
    what: &'static str,
    session_id: String,
    id: String,
    turn: String,
}

impl Op {
    fn new(what: &'static str, session_id: &str, id: &str) -> Op {
        Op {
            what,
            session_id: session_id.to_owned(),
            id: id.to_owned(),
            turn: String::new(),
        }
    }

    /// The operation `what` on `key`.
    fn of(what: &'static str, key: CallKey<'_>) -> Op {
        Op {
            turn: key.turn.to_owned(),
            ..Op::new(what, key.session_id, key.tool_use_id)
        }
    }

    /// A `StoreError` of `kind` for this operation: `PostgreSQL: OP: MESSAGE`.
    fn error(&self, kind: StoreErrorKind, message: impl fmt::Display) -> StoreError {
        StoreError::new(kind, format!("PostgreSQL: {self}: {message}"))
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} of {:?}", self.what, self.id)?;
        if !self.turn.is_empty() {
            write!(f, " of turn {:?}", self.turn)?;
        }
        write!(f, " in session {:?}", self.session_id)
    }
}

/// A lease as seconds for `make_interval`, at most about 30 years.
fn lease_secs(lease: Duration) -> f64 {
    lease.as_secs_f64().min(30.0 * 365.0 * 24.0 * 3600.0)
}

/// What a row of `toolgate_answers` (digest, state, outcome, result) says of a call.
fn remembered(row: &Row) -> Result<Remembered, String> {
    let bytes: Vec<u8> = row.try_get(0).map_err(|e| e.to_string())?;
    let digest = InputDigest(
        bytes
            .try_into()
            .map_err(|_| "its digest is not 32 bytes".to_owned())?,
    );
    let state: String = row.try_get(1).map_err(|e| e.to_string())?;
    match state.as_str() {
        "in_progress" => Ok(Remembered::InProgress { digest }),
        "interrupted" => Ok(Remembered::Interrupted { digest }),
        "answered" => {
            let outcome: Option<String> = row.try_get(2).map_err(|e| e.to_string())?;
            let result: Option<String> = row.try_get(3).map_err(|e| e.to_string())?;
            let outcome: Outcome =
                serde_json::from_value(Value::String(outcome.unwrap_or_default()))
                    .map_err(|e| format!("its outcome is not one: {e}"))?;
            let result: ToolResult = serde_json::from_str(&result.unwrap_or_default())
                .map_err(|e| format!("its result is not a tool_result block: {e}"))?;
            Ok(Remembered::Answered {
                digest,
                outcome,
                result,
            })
        }
        other => Err(format!("its state {other:?} is not one this build knows")),
    }
}

/// Claims `op`'s key with the claim's `token`: see [`AnswerStore::claim`] and the module docs.
/// The session's first call with the id first; then, by the rule of "Turns" in the store docs,
/// that row, the row kept apart for the key's turn (claimed the same way), or
/// [`Claim::OtherTurn`].
async fn claim(
    pool: Arc<Pool>,
    op: Op,
    token: Token,
    digest: InputDigest,
    lease: Duration,
) -> Result<Claim, StoreError> {
    let unreadable = |e: String| {
        op.error(
            StoreErrorKind::Corrupt,
            format_args!("the row is unreadable: {e}"),
        )
    };
    let token = token.as_i64();
    let Some(first) = claim_row(&pool, &op, "", digest, lease, token).await? else {
        return Ok(Claim::Claimed);
    };
    let (first_turn, running) = first_call(&first).map_err(unreadable)?;
    match beside_first(&op.turn, &first_turn, running) {
        BesideFirst::Same => remembered(&first).map(Claim::Seen).map_err(unreadable),
        BesideFirst::Other { in_progress } => Ok(Claim::OtherTurn { in_progress }),
        BesideFirst::Apart => match claim_row(&pool, &op, &op.turn, digest, lease, token).await? {
            None => Ok(Claim::Claimed),
            Some(apart) => remembered(&apart).map(Claim::Seen).map_err(unreadable),
        },
    }
}

/// Claims the row `apart` of `op`'s key with `token` ([`sql::CLAIM_INSERT`], then
/// [`sql::CLAIM_SEEN`]): `None` when it inserted the row, or found it in progress with its own
/// token (the insert was sent, and committed, before its connection was lost, and sent again);
/// else the row as the second statement answered it.
async fn claim_row(
    pool: &Pool,
    op: &Op,
    apart: &str,
    digest: InputDigest,
    lease: Duration,
    token: i64,
) -> Result<Option<Row>, StoreError> {
    let (session_id, id, turn) = (&op.session_id, &op.id, &op.turn);
    let digest = &digest.0[..];
    let lease = lease_secs(lease);
    // Released between the insert and the read (rare): claimed again, a few times at most.
    for _ in 0..8 {
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 7] =
            [session_id, id, &digest, &lease, &apart, turn, &token];
        let inserted = pool
            .query(Lane::Shared, op, |st| &st.claim_insert, &params)
            .await?;
        if !inserted.is_empty() {
            return Ok(None);
        }
        let rows = pool
            .query(
                Lane::Shared,
                op,
                |st| &st.claim_seen,
                &[session_id, id, &apart],
            )
            .await?;
        if let Some(row) = rows.into_iter().next() {
            let own = own_claim(&row, token).map_err(|e| {
                op.error(
                    StoreErrorKind::Corrupt,
                    format_args!("the row is unreadable: {e}"),
                )
            })?;
            return Ok((!own).then_some(row));
        }
    }
    Err(op.error(
        StoreErrorKind::Unavailable,
        "the key kept being released by another worker while it was claimed",
    ))
}

/// Whether a row of [`sql::CLAIM_SEEN`] is the claim of `token`'s own, in progress (its sixth
/// column is the token of the claim that made it).
fn own_claim(row: &Row, token: i64) -> Result<bool, String> {
    let made_by: Option<i64> = row.try_get(5).map_err(|e| e.to_string())?;
    let state: String = row.try_get(1).map_err(|e| e.to_string())?;
    Ok(made_by == Some(token) && state == "in_progress")
}

/// The turn of a row of [`sql::CLAIM_SEEN`] (its fifth column), and whether it is in progress.
fn first_call(row: &Row) -> Result<(String, bool), String> {
    let turn: String = row.try_get(4).map_err(|e| e.to_string())?;
    let state: String = row.try_get(1).map_err(|e| e.to_string())?;
    Ok((turn, state == "in_progress"))
}

/// Releases `op`'s key, claimed with `token`: forgotten, or interrupted when its tool started
/// (only the row of that claim, still in progress).
async fn release(
    pool: Arc<Pool>,
    op: Op,
    token: Token,
    tool_started: bool,
) -> Result<(), StoreError> {
    let (session_id, id, turn) = (&op.session_id, &op.id, &op.turn);
    let token = token.as_i64();
    let statement: fn(&conn::Statements) -> &tokio_postgres::Statement = if tool_started {
        |st| &st.interrupt
    } else {
        |st| &st.forget
    };
    pool.query(
        Lane::Shared,
        &op,
        statement,
        &[session_id, id, turn, &token],
    )
    .await?;
    Ok(())
}

/// What the row of [`sql::ANSWERED`] or [`sql::RESUMED`] (state, token) says of the answer
/// sent under `token`: recorded (`None`), or what the store found instead.
fn holder(rows: &[Row], token: i64) -> Result<Option<Found>, String> {
    let Some(row) = rows.first() else {
        return Ok(Some(Found::Nothing));
    };
    let state: String = row.try_get(0).map_err(|e| e.to_string())?;
    let by: Option<i64> = row.try_get(1).map_err(|e| e.to_string())?;
    Ok(match state.as_str() {
        "recorded" => None,
        _ if by != Some(token) => Some(Found::OtherClaim),
        "answered" | "resumed" => None,
        _ => Some(Found::Interrupted),
    })
}

/// A renewal of `n` claims (or takes), as errors name it.
struct Renewal {
    claims: bool,
    n: usize,
}

impl fmt::Display for Renewal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.n, self.claims) {
            (1, true) => f.write_str("renewing the lease of a claim"),
            (1, false) => f.write_str("renewing the lease of a take"),
            (n, true) => write!(f, "renewing the leases of {n} claims"),
            (n, false) => write!(f, "renewing the leases of {n} takes"),
        }
    }
}

/// Renews `batch` (on the renewer thread) with one statement sent through the store's runtime
/// (`handle`): which of its entries the store still holds under their tokens.
fn renew(pool: &Arc<Pool>, handle: &Handle, batch: &Batch) -> Result<Vec<bool>, StoreError> {
    let (mut sessions, mut ids, mut turns, mut tokens) = (vec![], vec![], vec![], vec![]);
    for (held, token) in &batch.items {
        match held {
            Held::Claim {
                session_id,
                tool_use_id,
                turn,
            } => {
                sessions.push(session_id.clone());
                ids.push(tool_use_id.clone());
                turns.push(turn.clone());
            }
            Held::Take {
                session_id,
                turn_id,
            } => {
                sessions.push(session_id.clone());
                ids.push(turn_id.clone());
            }
        }
        tokens.push(token.as_i64());
    }
    let (claims, lease) = (batch.claims, lease_secs(batch.lease));
    let op = Renewal {
        claims,
        n: tokens.len(),
    };
    let pool = Arc::clone(pool);
    let sent = tokens.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    handle.spawn(async move {
        let rows = if claims {
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] =
                [&sessions, &ids, &turns, &tokens, &lease];
            pool.query(Lane::Shared, &op, |st| &st.renew_claims, &params)
                .await
        } else {
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
                [&sessions, &ids, &tokens, &lease];
            pool.query(Lane::Shared, &op, |st| &st.renew_takes, &params)
                .await
        };
        let renewed = rows.and_then(|rows| {
            rows.iter()
                .map(|row| row.try_get::<_, i64>(0))
                .collect::<Result<Vec<i64>, _>>()
                .map_err(|e| {
                    StoreError::new(
                        StoreErrorKind::Corrupt,
                        format!("PostgreSQL: {op}: a row is unreadable: {e}"),
                    )
                })
        });
        let _ = tx.send(renewed);
    });
    let renewed = rx.recv().unwrap_or_else(|_| {
        Err(StoreError::new(
            StoreErrorKind::Unavailable,
            "PostgreSQL: renew: the store's runtime has stopped",
        ))
    })?;
    Ok(sent.iter().map(|t| renewed.contains(t)).collect())
}

impl AnswerStore for PostgresStore {
    fn claim<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        digest: InputDigest,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Claim, StoreError>> {
        let op = Op::of("claim", key);
        self.run("claim", claim(self.pool(), op, token, digest, lease))
    }

    fn answered<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        outcome: Outcome,
        result: &'a ToolResult,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let op = Op::of("answered", key);
        let text = serde_json::to_string(result);
        let pool = self.pool();
        let owned = (
            key.session_id.to_owned(),
            key.tool_use_id.to_owned(),
            key.turn.to_owned(),
        );
        self.run("answered", async move {
            let text = text.map_err(|e| {
                op.error(
                    StoreErrorKind::Corrupt,
                    format_args!("the result does not serialize: {e}"),
                )
            })?;
            let (outcome, token) = (outcome.as_str(), token.as_i64());
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 6] =
                [&op.session_id, &op.id, &outcome, &text, &op.turn, &token];
            let rows = pool
                .query(Lane::Answers, &op, |st| &st.answered, &params)
                .await?;
            match holder(&rows, token) {
                Ok(None) => Ok(()),
                Ok(Some(found)) => {
                    let key = CallKey::in_turn(&owned.0, &owned.2, &owned.1);
                    Err(fenced(key, found))
                }
                Err(e) => Err(op.error(
                    StoreErrorKind::Corrupt,
                    format_args!("the row is unreadable: {e}"),
                )),
            }
        })
    }

    fn release<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        tool_started: bool,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let op = Op::of("release", key);
        self.run("release", release(self.pool(), op, token, tool_started))
    }

    /// Spawns the [`release`](AnswerStore::release) on the store's runtime and returns at once;
    /// a release that fails is logged (`tracing` target `toolgate::memory`), and the claim then
    /// lapses with its lease.
    fn abandon(&self, key: CallKey<'_>, token: Token, tool_started: bool) {
        let op = Op::of("release", key);
        let pool = self.pool();
        self.runtime().handle().spawn(async move {
            if let Err(e) = release(pool, op, token, tool_started).await {
                tracing::error!(target: "toolgate::memory", error = %e,
                    "an abandoned call's claim could not be released; it lapses with its lease");
            }
        });
    }

    /// `true`: the store's renewer thread renews held claims (see the module docs).
    fn renews(&self) -> bool {
        true
    }

    fn hold(&self, key: CallKey<'_>, token: Token, lease: Duration) -> Option<Hold> {
        Some(self.hold_in(Held::claim(key), token, lease))
    }
}

/// What the row of [`sql::TAKE`] (what, body) says.
fn taken(rows: &[Row], op: &Op) -> Result<Taken, StoreError> {
    let unreadable = |e: &dyn fmt::Display| {
        op.error(
            StoreErrorKind::Corrupt,
            format_args!("the row is unreadable: {e}"),
        )
    };
    let Some(row) = rows.first() else {
        return Ok(Taken::Missing);
    };
    let what: String = row.try_get(0).map_err(|e| unreadable(&e))?;
    let body: Option<String> = row.try_get(1).map_err(|e| unreadable(&e))?;
    let body = body.unwrap_or_default();
    match what.as_str() {
        "turn" => serde_json::from_str(&body)
            .map(Taken::Turn)
            .map_err(|e| unreadable(&format_args!("its turn is not a PendingTurn: {e}"))),
        "resumed" => serde_json::from_str(&body)
            .map(Taken::Resumed)
            .map_err(|e| unreadable(&format_args!("its answer is not JSON: {e}"))),
        "waiting" | "taken" => Ok(Taken::Resuming),
        other => Err(unreadable(&format_args!(
            "its state {other:?} is not one this build knows"
        ))),
    }
}

impl PendingStore for PostgresStore {
    fn put<'a>(&'a self, turn: &'a PendingTurn) -> StoreFuture<'a, Result<(), StoreError>> {
        let op = Op::new("put", &turn.session_id, &turn.turn_id);
        let text = serde_json::to_string(turn);
        // The inbox's rows of its waiting calls, written by the same statement.
        let rows = crate::store::waiting::waiting_rows(turn);
        let waiting = i32::try_from(rows.len()).unwrap_or(i32::MAX);
        let rows = serde_json::to_string(&rows).unwrap_or_else(|_| "[]".to_owned());
        let ttl_ms = turn.ttl().as_millis() as f64;
        let (user, fingerprint) = (turn.user_id.clone(), turn.fingerprint.clone());
        let pool = self.pool();
        self.run("put", async move {
            let text = text.map_err(|e| {
                op.error(
                    StoreErrorKind::Corrupt,
                    format_args!("the turn does not serialize: {e}"),
                )
            })?;
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 8] = [
                &op.session_id,
                &op.id,
                &text,
                &user,
                &fingerprint,
                &ttl_ms,
                &rows,
                &waiting,
            ];
            pool.query(Lane::Shared, &op, |st| &st.put, &params).await?;
            Ok(())
        })
    }

    fn take<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        token: Token,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Taken, StoreError>> {
        let op = Op::new("take", session_id, turn_id);
        let pool = self.pool();
        self.run("take", async move {
            let (lease, token) = (lease_secs(lease), token.as_i64());
            let rows = pool
                .query(
                    Lane::Shared,
                    &op,
                    |st| &st.take,
                    &[&op.session_id, &op.id, &lease, &token],
                )
                .await?;
            taken(&rows, &op)
        })
    }

    fn resumed<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        token: Token,
        answer: &'a Value,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let op = Op::new("resumed", session_id, turn_id);
        let answer = answer.to_string();
        let pool = self.pool();
        self.run("resumed", async move {
            let token = token.as_i64();
            let rows = pool
                .query(
                    Lane::Shared,
                    &op,
                    |st| &st.resumed,
                    &[&op.session_id, &op.id, &answer, &token],
                )
                .await?;
            match holder(&rows, token) {
                Ok(None) => Ok(()),
                Ok(Some(found)) => Err(fenced_take(&op.session_id, &op.id, found)),
                Err(e) => Err(op.error(
                    StoreErrorKind::Corrupt,
                    format_args!("the row is unreadable: {e}"),
                )),
            }
        })
    }

    fn put_back<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        token: Token,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let op = Op::new("put_back", session_id, turn_id);
        let pool = self.pool();
        self.run("put_back", async move {
            let token = token.as_i64();
            pool.query(
                Lane::Shared,
                &op,
                |st| &st.put_back,
                &[&op.session_id, &op.id, &token],
            )
            .await?;
            Ok(())
        })
    }

    fn waiting<'a>(
        &'a self,
        session_id: &'a str,
    ) -> StoreFuture<'a, Result<Vec<PendingTurn>, StoreError>> {
        let op = Op::new("waiting", session_id, "(its waiting turns)");
        let pool = self.pool();
        self.run("waiting", async move {
            let rows = pool
                .query(Lane::Shared, &op, |st| &st.waiting, &[&op.session_id])
                .await?;
            rows.iter()
                .map(|row| {
                    let text: String = row.try_get(0).map_err(|e| e.to_string())?;
                    serde_json::from_str(&text).map_err(|e| e.to_string())
                })
                .collect::<Result<Vec<PendingTurn>, String>>()
                .map_err(|e| {
                    op.error(
                        StoreErrorKind::Corrupt,
                        format_args!("a turn is unreadable: {e}"),
                    )
                })
        })
    }

    /// `true`: the store's renewer thread renews held takes (see the module docs).
    fn renews(&self) -> bool {
        true
    }

    fn hold(&self, session_id: &str, turn_id: &str, token: Token, lease: Duration) -> Option<Hold> {
        Some(self.hold_in(Held::take(session_id, turn_id), token, lease))
    }
}

/// `settings` (a URL or key-value pairs, as [`PostgresStore::connect`] reads them) as they may be
/// shown in a message, a log line or a page: every password replaced by `***`, read the way
/// tokio-postgres reads it.
///
/// - A URL is text that starts with `postgres://` or `postgresql://`. Its credentials are
///   everything before the first `@`; the password, everything in them after the first `:`
///   (`postgres://agent:s3cret@db/agent` → `postgres://agent:***@db/agent`). A query
///   parameter named `password` or `sslpassword` (percent-decoded, any case) has its value
///   hidden too (`?password=***`).
/// - Anything else is key-value pairs (`host=db password='a b' user=agent`): each pair is read
///   as the driver reads it (spaces around `=`, a value quoted with `'` or not, backslash
///   escapes in both), and a `password` or `sslpassword` value becomes `***`, the rest kept as
///   written. Text that does not read as pairs (the driver would refuse it too) is not shown:
///   `[connection settings that do not parse]`.
///
/// ```
/// use toolgate_core::store::postgres::shown_settings;
///
/// assert_eq!(shown_settings("postgres://agent:s3cret@db:5432/agent"), "postgres://agent:***@db:5432/agent");
/// assert_eq!(shown_settings("postgresql://agent@db/agent"), "postgresql://agent@db/agent");
/// assert_eq!(shown_settings("postgres://db/agent?password=s3cret&sslmode=disable"), "postgres://db/agent?password=***&sslmode=disable");
/// assert_eq!(shown_settings("host=db password='a b' user=agent"), "host=db password=*** user=agent");
/// ```
pub fn shown_settings(settings: &str) -> String {
    for scheme in ["postgres://", "postgresql://"] {
        if let Some(rest) = settings.strip_prefix(scheme) {
            return format!("{scheme}{}", shown_url(rest));
        }
    }
    shown_pairs(settings).unwrap_or_else(|| "[connection settings that do not parse]".to_owned())
}

/// Whether a setting's name names a secret.
fn is_secret(name: &str) -> bool {
    name.eq_ignore_ascii_case("password") || name.eq_ignore_ascii_case("sslpassword")
}

/// A URL after its scheme, its password and its secret query parameters hidden.
fn shown_url(rest: &str) -> String {
    let (credentials, after) = match rest.split_once('@') {
        Some((credentials, after)) => (Some(credentials), after),
        None => (None, rest),
    };
    let mut out = String::with_capacity(rest.len());
    if let Some(credentials) = credentials {
        match credentials.split_once(':') {
            Some((user, _password)) => {
                out.push_str(&shown_query(user));
                out.push_str(":***");
            }
            None => out.push_str(&shown_query(credentials)),
        }
        out.push('@');
    }
    out.push_str(&shown_query(after));
    out
}

/// `text` with the values of its secret query parameters (after its first `?`) hidden.
fn shown_query(text: &str) -> String {
    let Some((before, query)) = text.split_once('?') else {
        return text.to_owned();
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| {
            let name = pair.split_once('=').map_or(pair, |(name, _)| name);
            if is_secret(&percent_decoded(name)) {
                format!("{name}=***")
            } else {
                pair.to_owned()
            }
        })
        .collect();
    format!("{before}?{}", pairs.join("&"))
}

/// `text` with its `%XX` escapes decoded (an escape that is not one is kept as it is).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Key-value settings with their secret values hidden, the rest as written; `None` when the
/// text does not read as pairs.
fn shown_pairs(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let trimmed = rest.trim_start();
        out.push_str(&rest[..rest.len() - trimmed.len()]);
        if trimmed.is_empty() {
            return Some(out);
        }
        let key_len = trimmed
            .find(|c: char| c == '=' || c.is_whitespace())
            .unwrap_or(trimmed.len());
        let (key, after_key) = trimmed.split_at(key_len);
        let after_space = after_key.trim_start();
        let value_and_rest = after_space.strip_prefix('=')?.trim_start();
        let value_len = value_length(value_and_rest)?;
        let written = &trimmed[..trimmed.len() - value_and_rest.len()];
        if key.is_empty() {
            return None;
        }
        out.push_str(written);
        if is_secret(key) {
            out.push_str("***");
        } else {
            out.push_str(&value_and_rest[..value_len]);
        }
        rest = &value_and_rest[value_len..];
    }
}

/// The length of the value at the start of `text` as tokio-postgres reads it: quoted with `'`
/// to the closing quote, or unquoted to the first whitespace, a backslash escaping the next
/// character in both; `None` for a quote never closed or a value cut after a backslash.
fn value_length(text: &str) -> Option<usize> {
    let quoted = text.starts_with('\'');
    let mut chars = text.char_indices().skip(usize::from(quoted));
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next()?;
            }
            '\'' if quoted => return Some(i + 1),
            c if !quoted && c.is_whitespace() => return Some(i),
            _ => {}
        }
    }
    if quoted { None } else { Some(text.len()) }
}

#[cfg(test)]
mod tests {
    use super::shown_settings;

    #[test]
    fn no_password_the_driver_reads_is_shown() {
        // Each text is read by tokio-postgres itself: the password it finds never appears in
        // what is shown, and the rest is shown as written.
        let cases = [
            (
                "postgres://agent:s3cret@db/agent",
                "postgres://agent:***@db/agent",
            ),
            ("postgres://agent:s3cret@db", "postgres://agent:***@db"),
            ("postgres://u:ab/s3cret@h/db", "postgres://u:***@h/db"),
            ("postgres://u:a:s3cret@h/db", "postgres://u:***@h/db"),
            (
                "postgres://h/db?password=s3cret",
                "postgres://h/db?password=***",
            ),
            (
                "postgres://h/db?pass%77ord=s3cret",
                "postgres://h/db?pass%77ord=***",
            ),
            (
                "postgresql://h/db?sslmode=disable&password=s3cret&user=u",
                "postgresql://h/db?sslmode=disable&password=***&user=u",
            ),
            ("host=h password=s3cret", "host=h password=***"),
            (
                "host=h password = s3cret user=u",
                "host=h password = *** user=u",
            ),
            (
                "host=h application_name=x://y password=s3cret",
                "host=h application_name=x://y password=***",
            ),
            ("host=h password=a://s3cret", "host=h password=***"),
            ("host='h'password=s3cret", "host='h'password=***"),
            ("host=h password=ab\\ s3cret", "host=h password=***"),
            (
                "host=h password='a\\'s3cret' user=u",
                "host=h password=*** user=u",
            ),
            (
                "host=h\tpassword=s3cret\nuser=u",
                "host=h\tpassword=***\nuser=u",
            ),
        ];
        for (settings, shown) in cases {
            let config: tokio_postgres::Config = settings.parse().expect(settings);
            let password = String::from_utf8(config.get_password().expect(settings).to_vec())
                .expect("a text password");
            assert!(
                password.contains("s3cret"),
                "{settings}: the driver reads {password:?}"
            );
            assert_eq!(shown_settings(settings), shown, "{settings}");
            assert!(!shown_settings(settings).contains("s3cret"), "{settings}");
        }
    }

    #[test]
    fn settings_without_a_password_are_shown_as_written_and_unreadable_ones_not_at_all() {
        for settings in [
            "postgres://agent@db/agent",
            "postgresql://db:5432/agent?sslmode=disable",
            "host=/run/postgresql dbname=agent user=agent",
            "host=db user='a b'",
            "",
        ] {
            assert_eq!(shown_settings(settings), settings);
        }
        for settings in [
            "host=h password='s3cret",
            "host=h password",
            "=s3cret",
            "host=h password=a\\",
        ] {
            assert_eq!(
                shown_settings(settings),
                "[connection settings that do not parse]",
                "{settings}"
            );
        }
    }
}
