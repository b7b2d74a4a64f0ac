//! [`PostgresStore`] as an [`InboxStore`] (feature `inbox`): the statements of `inbox_sql.rs`
//! on connections of the inbox's own ([`Conns`]: a decision and a take for a resume are
//! transactions, which the stores' shared, pipelined connections cannot hold).
//!
//! A decision is one transaction of two round trips: the first sends `BEGIN`, the idempotency
//! key's kept answer (a replay ends there), the turn's row share-locked with the server's clock
//! and the call's row locked (so a concurrent decider waits and reads what the first wrote, and
//! a take for a resume skips the turn); the rules every store shares (`inbox/judge.rs`) judge
//! the row; the second sends the conditional write (`UPDATE … WHERE state = 'waiting' AND
//! digest = $seen AND expires_at > now()`, an error when it changes nothing), the key with its
//! answer (a unique violation when a concurrent request with the key committed first: rolled
//! back, and that request's answer read), the `decisions` chain's lock and the attempt's audit
//! line, and `COMMIT`. A decision is never without its line, nor a line
//! without its decision. A take for a resume is `UPDATE … FROM (SELECT … FOR UPDATE SKIP
//! LOCKED)` then, in the same transaction, the undecided calls recorded expired.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{Mutex, OwnedMutexGuard};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, Row, Statement};

use crate::approval::decisions::Decisions;
use crate::approval::pending::PendingTurn;
use crate::base::future::{BoxFuture, join_all};
use crate::inbox::decide::{answer_json, answer_of};
use crate::inbox::judge::{CallRow, RawCall};
use crate::inbox::{
    Attempt, CallState, DecisionLine, InboxStore, InboxTurn, Order, Page, PublishedTools, Query,
    ReadyTurn, Recorded, Refusal, TurnState, from_ms,
};
use crate::store::{StoreError, StoreErrorKind, StoreFuture, Token, fenced_take};

use super::conn::{OpenFailed, db_error, open};
use super::inbox_sql as q;
use super::{PostgresStore, holder, lease_secs, sql};

/// How many connections the inbox keeps (each holds one transaction at a time).
const CONNECTIONS: usize = 2;

/// The inbox's connections, each opened at its first use and again after it was lost, and the
/// numbers its audit lines carry (a writer id no other writer has, and a count).
pub(super) struct Conns {
    config: Config,
    slots: Vec<Arc<Mutex<Option<Conn>>>>,
    next: AtomicUsize,
    writer: i64,
    lines: AtomicU64,
}

/// One connection and the statements prepared on it, by their text.
struct Conn {
    client: Client,
    prepared: HashMap<String, Statement>,
}

impl Conn {
    /// The statement `sql`, prepared at its first use on this connection.
    async fn statement(&mut self, sql: &str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(st) = self.prepared.get(sql) {
            return Ok(st.clone());
        }
        let st = self.client.prepare(sql).await?;
        self.prepared.insert(sql.to_owned(), st.clone());
        Ok(st)
    }
}

/// A statement's rows, as every statement of a pipeline answers.
type Rows<'a> = BoxFuture<'a, Result<Vec<Row>, tokio_postgres::Error>>;

impl Conns {
    pub(super) fn new(config: Config) -> Conns {
        Conns {
            config,
            slots: (0..CONNECTIONS).map(|_| Arc::default()).collect(),
            next: AtomicUsize::new(0),
            writer: writer_id(),
            lines: AtomicU64::new(0),
        }
    }

    /// A connection of the inbox, held until the guard drops; opened when it has none or lost it.
    async fn slot(&self) -> Result<OwnedMutexGuard<Option<Conn>>, StoreError> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        let mut slot = Arc::clone(&self.slots[i]).lock_owned().await;
        if slot.as_ref().is_none_or(|c| c.client.is_closed()) {
            let client = open(&self.config).await.map_err(OpenFailed::into_error)?;
            *slot = Some(Conn {
                client,
                prepared: HashMap::new(),
            });
        }
        Ok(slot)
    }

    /// Runs `work` in a transaction on a connection of the inbox: a failure rolls it back (or
    /// drops a connection that cannot).
    async fn in_transaction<T>(
        &self,
        what: &str,
        work: impl for<'c> FnOnce(&'c mut Conn) -> BoxFuture<'c, Result<T, tokio_postgres::Error>>,
    ) -> Result<T, StoreError> {
        let mut slot = self.slot().await?;
        let Some(conn) = slot.as_mut() else {
            return Err(StoreError::new(
                StoreErrorKind::Unavailable,
                "PostgreSQL: the inbox has no connection",
            ));
        };
        match work(conn).await {
            Ok(done) => Ok(done),
            Err(e) => {
                if conn.client.batch_execute("ROLLBACK").await.is_err() {
                    *slot = None;
                }
                Err(db_error(what, e))
            }
        }
    }
}

/// A number no other writer uses: the process id and the time, hashed with a random key.
fn writer_id() -> i64 {
    use std::hash::BuildHasher;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let n = std::hash::RandomState::new().hash_one((std::process::id(), nanos, "inbox"));
    i64::from_ne_bytes(n.to_ne_bytes())
}

/// A call's columns as the statements read them.
fn raw_call(row: &Row) -> Result<RawCall, tokio_postgres::Error> {
    Ok(RawCall {
        seq: row.try_get(0)?,
        session_id: row.try_get(1)?,
        turn_id: row.try_get(2)?,
        tool_use_id: row.try_get(3)?,
        position: i64::from(row.try_get::<_, i32>(4)?),
        tool: row.try_get(5)?,
        asked_by: row.try_get(6)?,
        user_id: row.try_get(7)?,
        fingerprint: row.try_get(8)?,
        created_at: row.try_get(9)?,
        expires_at: row.try_get(10)?,
        state: row.try_get(11)?,
        digest: row.try_get(12)?,
        summary: row.try_get(13)?,
        input: row.try_get(14)?,
        edit: row.try_get(15)?,
        approvals: row.try_get(16)?,
        decided: row.try_get(17)?,
        reason: row.try_get(18)?,
    })
}

/// A row read back as a call, or the store's error naming `what`.
fn call_of(row: &Row, what: &str) -> Result<CallRow, StoreError> {
    raw_call(row)
        .map_err(|e| db_error(what, e))?
        .into_call()
        .map_err(|e| StoreError::new(StoreErrorKind::Corrupt, format!("PostgreSQL: {what}: {e}")))
}

/// A pending turn's state as the inbox shows it.
fn turn_state(state: &str) -> Result<TurnState, StoreError> {
    match state {
        "waiting" => Ok(TurnState::Waiting),
        "taken" => Ok(TurnState::Resuming),
        "resumed" => Ok(TurnState::Resumed),
        other => Err(StoreError::new(
            StoreErrorKind::Corrupt,
            format!("PostgreSQL: a turn's state {other:?} is not one this build knows"),
        )),
    }
}

/// What the first round trip of a decision found.
struct Found {
    /// The server's clock (0 when the turn is unknown).
    now: i64,
    /// The key's kept request digest and answer, when a decision committed it before.
    kept: Option<(String, String)>,
    turn: Option<String>,
    call: Option<Row>,
}

/// The first round trip of a decision: `BEGIN`, the key's answer when it has one, the turn's
/// row share-locked (with the clock) and the call's row locked.
async fn lock(conn: &mut Conn, attempt: &Attempt) -> Result<Found, tokio_postgres::Error> {
    let st = [
        conn.statement(sql::BEGIN).await?,
        conn.statement(q::KEPT_KEY).await?,
        conn.statement(q::LOCK_TURN).await?,
        conn.statement(&q::lock_call()).await?,
    ];
    let r = &attempt.request;
    let key = r.idempotency_key.clone().unwrap_or_default();
    let of_key: [&(dyn ToSql + Sync); 1] = [&key];
    let of_turn: [&(dyn ToSql + Sync); 2] = [&r.session_id, &r.turn_id];
    let of_call: [&(dyn ToSql + Sync); 3] = [&r.session_id, &r.turn_id, &r.tool_use_id];
    let c = &conn.client;
    let mut pipeline: Vec<Rows<'_>> = vec![Box::pin(c.query(&st[0], &[]))];
    if r.idempotency_key.is_some() {
        pipeline.push(Box::pin(c.query(&st[1], &of_key)));
    }
    pipeline.push(Box::pin(c.query(&st[2], &of_turn)));
    pipeline.push(Box::pin(c.query(&st[3], &of_call)));
    let mut answers = join_all(pipeline).await.into_iter();
    let mut next = || answers.next().unwrap_or_else(|| Ok(Vec::new()));
    next()?;
    let kept = match r.idempotency_key {
        Some(_) => match next()?.first() {
            Some(row) => Some((row.try_get(0)?, row.try_get(1)?)),
            None => None,
        },
        None => None,
    };
    let turn_row = next()?;
    let (turn, now) = match turn_row.first() {
        Some(row) => (Some(row.try_get(0)?), row.try_get(1)?),
        None => (None, 0),
    };
    let call = next()?.into_iter().next();
    Ok(Found {
        now,
        kept,
        turn,
        call,
    })
}

/// The first answer kept under the attempt's key (`request`, `answer`): replayed, or refused
/// when the key came with another request.
fn replay(
    attempt: &Attempt,
    (request, answer): (String, String),
    now: i64,
) -> Result<Recorded, StoreError> {
    let at = if now > 0 {
        from_ms(now)
    } else {
        std::time::SystemTime::now()
    };
    let key = attempt.request.idempotency_key.clone().unwrap_or_default();
    if request != attempt.request_digest {
        return Ok(Recorded::new(Err(Refusal::KeyReused { key }), at, false));
    }
    let answer = answer_of(&answer).map_err(|e| {
        StoreError::new(
            StoreErrorKind::Corrupt,
            format!("PostgreSQL: the answer kept under key {key:?}: {e}"),
        )
    })?;
    Ok(Recorded::new(answer, at, true))
}

/// The answer kept under the attempt's key, read after the transaction ended (its key was
/// committed by a concurrent request in the meantime).
async fn kept_after(conn: &mut Conn, attempt: &Attempt, now: i64) -> Result<Recorded, Failed> {
    let key = attempt.request.idempotency_key.clone().unwrap_or_default();
    let st = conn.statement(q::KEPT_KEY).await?;
    let rows = conn.client.query(&st, &[&key]).await?;
    let Some(row) = rows.first() else {
        let e = format!("PostgreSQL: the key {key:?} was taken and is not kept");
        return Err(StoreError::new(StoreErrorKind::Unavailable, e).into());
    };
    Ok(replay(attempt, (row.try_get(0)?, row.try_get(1)?), now)?)
}

/// The second round trip: the conditional write (when the rules took the decision), the key
/// with its answer, the attempt's line on the `decisions` chain, `COMMIT`. `false` when the key
/// was taken by a concurrent request that committed first (a unique violation: the transaction
/// is rolled back, the `COMMIT` with it).
async fn record(
    conn: &mut Conn,
    conns: &Conns,
    attempt: &Attempt,
    row: &CallRow,
    answer: &Result<crate::inbox::Decided, Refusal>,
    now: i64,
) -> Result<bool, tokio_postgres::Error> {
    let st = [
        conn.statement(q::WRITE_CALL).await?,
        conn.statement(q::KEEP_KEY).await?,
        conn.statement(sql::LOCK_CHAIN).await?,
        conn.statement(sql::APPEND).await?,
        conn.statement(sql::COMMIT).await?,
    ];
    let r = &attempt.request;
    let approvals = serde_json::to_string(&row.approvals).unwrap_or_default();
    let decided = row
        .decided
        .as_ref()
        .map(|m| serde_json::to_string(m).unwrap_or_default());
    let seq = i64::try_from(row.seq).unwrap_or(i64::MAX);
    let state = row.state.as_str();
    let text = answer_json(answer);
    let line = DecisionLine::new(attempt, &row.tool, &row.user_id, answer, from_ms(now));
    let mut head = line.to_json();
    head.pop();
    head.push(b',');
    let n = conns.lines.fetch_add(1, Ordering::Relaxed) as i64;
    let (class, lock_key, chain) = (sql::LOCK_CLASS, q::DECISIONS_LOCK, "decisions");
    let write: [&(dyn ToSql + Sync); 9] = [
        &state,
        &row.digest,
        &row.summary,
        &row.edit,
        &approvals,
        &decided,
        &row.reason,
        &seq,
        &r.input_digest,
    ];
    let key = r.idempotency_key.clone().unwrap_or_default();
    let keep_key: [&(dyn ToSql + Sync); 3] = [&key, &attempt.request_digest, &text];
    let lock: [&(dyn ToSql + Sync); 2] = [&class, &lock_key];
    let append: [&(dyn ToSql + Sync); 4] = [&chain, &head, &conns.writer, &n];
    let c = &conn.client;
    let mut pipeline: Vec<Rows<'_>> = Vec::with_capacity(5);
    if answer.is_ok() {
        pipeline.push(Box::pin(c.query(&st[0], &write)));
    }
    if r.idempotency_key.is_some() {
        pipeline.push(Box::pin(c.query(&st[1], &keep_key)));
    }
    pipeline.push(Box::pin(c.query(&st[2], &lock)));
    pipeline.push(Box::pin(c.query(&st[3], &append)));
    pipeline.push(Box::pin(c.query(&st[4], &[])));
    for done in join_all(pipeline).await {
        match done {
            Ok(_) => {}
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => {
                return Ok(false);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// A decision: see the module docs.
async fn decide(conns: Arc<Conns>, attempt: Attempt) -> Result<Recorded, StoreError> {
    let what = "recording a decision";
    let mut slot = conns.slot().await?;
    let Some(conn) = slot.as_mut() else {
        return Err(StoreError::new(
            StoreErrorKind::Unavailable,
            "PostgreSQL: the inbox has no connection",
        ));
    };
    let outcome = decide_on(conn, &conns, &attempt).await;
    if outcome.is_err() && conn.client.batch_execute("ROLLBACK").await.is_err() {
        *slot = None;
    }
    outcome.map_err(|e| match e {
        Failed::Db(e) => db_error(what, e),
        Failed::Store(e) => e,
    })
}

/// Why a decision failed: the driver's error, or the store's own.
enum Failed {
    Db(tokio_postgres::Error),
    Store(StoreError),
}

impl From<tokio_postgres::Error> for Failed {
    fn from(e: tokio_postgres::Error) -> Failed {
        Failed::Db(e)
    }
}

impl From<StoreError> for Failed {
    fn from(e: StoreError) -> Failed {
        Failed::Store(e)
    }
}

async fn decide_on(conn: &mut Conn, conns: &Conns, attempt: &Attempt) -> Result<Recorded, Failed> {
    let found = lock(conn, attempt).await?;
    if let Some(kept) = found.kept {
        conn.client.batch_execute("ROLLBACK").await?;
        return Ok(replay(attempt, kept, found.now)?);
    }
    let r = &attempt.request;
    let unknown = match (&found.turn, &found.call) {
        (None, _) => Some(Refusal::UnknownTurn {
            session_id: r.session_id.clone(),
            turn_id: r.turn_id.clone(),
        }),
        (Some(_), None) => Some(Refusal::UnknownCall {
            tool_use_id: r.tool_use_id.clone(),
        }),
        _ => None,
    };
    let (Some(state), Some(call), None) = (&found.turn, &found.call, &unknown) else {
        // Nothing is kept, the key included.
        conn.client.batch_execute("ROLLBACK").await?;
        let refusal = unknown.unwrap_or(Refusal::UnknownTurn {
            session_id: r.session_id.clone(),
            turn_id: r.turn_id.clone(),
        });
        return Ok(Recorded::new(
            Err(refusal),
            std::time::SystemTime::now(),
            false,
        ));
    };
    let mut row = call_of(call, "reading the call")?;
    let answer = row.decide(attempt, turn_state(state)?, found.now);
    if !record(conn, conns, attempt, &row, &answer, found.now).await? {
        // A concurrent request with the same key committed first: its answer.
        return kept_after(conn, attempt, found.now).await;
    }
    let at = from_ms(found.now);
    Ok(Recorded::new(answer, at, false).on(&row.tool, &row.user_id))
}

/// The statement of one list and its parameters (the clock is the server's: `now()`).
fn list_statement(query: &Query) -> (String, Vec<Box<dyn ToSql + Sync + Send>>) {
    let mut sql = format!(
        "SELECT {}, (extract(epoch FROM date_trunc('milliseconds', now())) * 1000)::int8 \
         FROM toolgate_inbox_calls c WHERE true",
        q::columns(false)
    );
    let mut args: Vec<Box<dyn ToSql + Sync + Send>> = Vec::new();
    let mut arg = |sql: &mut String, text: &str, value: Box<dyn ToSql + Sync + Send>| {
        args.push(value);
        sql.push_str(&text.replace('?', &format!("${}", args.len())));
    };
    match query.state {
        None => {}
        // The turn's state read per row (a subquery, never a join), and said as the states it
        // excludes (the planner then expects most rows to pass), so the plan walks an index in
        // `seq` order and stops at the page's end whatever the number of calls.
        Some(CallState::Waiting) => sql.push_str(
            " AND c.state = 'waiting' AND c.expires_at > now() AND (SELECT p.state FROM \
             toolgate_pending p WHERE p.session_id = c.session_id AND p.turn_id = c.turn_id) \
             NOT IN ('taken', 'resumed')",
        ),
        Some(CallState::Expired) => sql.push_str(
            " AND (c.state = 'expired' OR (c.state = 'waiting' AND c.expires_at <= now()))",
        ),
        Some(state) => sql.push_str(&format!(" AND c.state = '{}'", state.as_str())),
    }
    for (filter, column) in [
        (&query.tool, " AND c.tool = ?::text"),
        (&query.user_id, " AND c.user_id = ?::text"),
        (&query.session_id, " AND c.session_id = ?::text"),
        (
            &query.asked_by,
            " AND strpos(c.rules, E'\\n' || ?::text || E'\\n') > 0",
        ),
    ] {
        if let Some(value) = filter {
            arg(&mut sql, column, Box::new(value.clone()));
        }
    }
    if let Some(window) = query.expires_within {
        let ms = window.as_millis() as f64;
        arg(
            &mut sql,
            " AND c.state = 'waiting' AND c.expires_at > now() \
             AND c.expires_at <= now() + ?::float8 * interval '1 millisecond'",
            Box::new(ms),
        );
    }
    let (cmp, order) = match query.order {
        Order::OldestFirst => (">", "ASC"),
        Order::NewestFirst => ("<", "DESC"),
    };
    if let Some(after) = query.after {
        let seq = i64::try_from(after.seq()).unwrap_or(i64::MAX);
        arg(
            &mut sql,
            &format!(" AND c.seq {cmp} ?::int8"),
            Box::new(seq),
        );
    }
    let limit = i64::try_from(query.limit + 1).unwrap_or(i64::MAX);
    arg(
        &mut sql,
        &format!(" ORDER BY c.seq {order} LIMIT ?::int8"),
        Box::new(limit),
    );
    (sql, args)
}

async fn list(conns: Arc<Conns>, query: Query) -> Result<Page, StoreError> {
    let what = "listing the inbox";
    let (sql, args) = list_statement(&query);
    let mut slot = conns.slot().await?;
    let Some(conn) = slot.as_mut() else {
        return Err(StoreError::new(
            StoreErrorKind::Unavailable,
            "PostgreSQL: the inbox has no connection",
        ));
    };
    let st = conn.statement(&sql).await.map_err(|e| db_error(what, e))?;
    let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a.as_ref() as _).collect();
    let rows = conn
        .client
        .query(&st, &params)
        .await
        .map_err(|e| db_error(what, e))?;
    let mut calls = Vec::with_capacity(rows.len());
    for row in &rows {
        let now: i64 = row.try_get(19).map_err(|e| db_error(what, e))?;
        calls.push(call_of(row, what)?.view(now));
    }
    Ok(Page::of(calls, &query))
}

async fn turn(
    conns: Arc<Conns>,
    session_id: String,
    turn_id: String,
) -> Result<Option<InboxTurn>, StoreError> {
    let what = "reading a paused turn";
    let mut slot = conns.slot().await?;
    let Some(conn) = slot.as_mut() else {
        return Err(StoreError::new(
            StoreErrorKind::Unavailable,
            "PostgreSQL: the inbox has no connection",
        ));
    };
    let fail = |e: tokio_postgres::Error| db_error(what, e);
    let (st_turn, st_calls) = (
        conn.statement(q::TURN).await.map_err(fail)?,
        conn.statement(&q::calls_of()).await.map_err(fail)?,
    );
    let of_turn: [&(dyn ToSql + Sync); 2] = [&session_id, &turn_id];
    let c = &conn.client;
    let pipeline: Vec<Rows<'_>> = vec![
        Box::pin(c.query(&st_turn, &of_turn)),
        Box::pin(c.query(&st_calls, &of_turn)),
    ];
    let mut answers = join_all(pipeline).await.into_iter();
    let found = answers
        .next()
        .unwrap_or_else(|| Ok(Vec::new()))
        .map_err(fail)?;
    let rows = answers
        .next()
        .unwrap_or_else(|| Ok(Vec::new()))
        .map_err(fail)?;
    let Some(head) = found.first() else {
        return Ok(None);
    };
    let state: String = head.try_get(0).map_err(fail)?;
    let (user, fingerprint, json): (Option<String>, Option<String>, Option<String>) = (
        head.try_get(1).map_err(fail)?,
        head.try_get(2).map_err(fail)?,
        head.try_get(3).map_err(fail)?,
    );
    let now: i64 = head.try_get(4).map_err(fail)?;
    let (user_id, fingerprint) = match (user, fingerprint) {
        (Some(u), Some(f)) => (u, f),
        _ => {
            let kept: PendingTurn = serde_json::from_str(json.as_deref().unwrap_or_default())
                .map_err(|e| {
                    StoreError::new(StoreErrorKind::Corrupt, format!("PostgreSQL: {what}: {e}"))
                })?;
            (kept.user_id, kept.fingerprint)
        }
    };
    let calls = rows
        .iter()
        .map(|row| call_of(row, what).map(|c| c.turn_call(now)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(InboxTurn {
        session_id,
        turn_id,
        user_id,
        fingerprint,
        state: turn_state(&state)?,
        calls,
    }))
}

/// The take of a ready turn: its row taken (one winner), its undecided calls expired, its
/// calls read, in one transaction.
async fn take_ready(
    conns: Arc<Conns>,
    fingerprint: String,
    lease: Duration,
) -> Result<Option<ReadyTurn>, StoreError> {
    let token = Token::draw();
    let taken = conns
        .in_transaction("taking a ready turn", |conn| {
            Box::pin(take_on(
                conn,
                fingerprint,
                lease_secs(lease),
                token.as_i64(),
            ))
        })
        .await?;
    let Some((json, rows)) = taken else {
        return Ok(None);
    };
    let what = "taking a ready turn";
    let turn: PendingTurn = serde_json::from_str(&json).map_err(|e| {
        StoreError::new(
            StoreErrorKind::Corrupt,
            format!("PostgreSQL: {what}: its turn does not read: {e}"),
        )
    })?;
    let mut decisions = Decisions::new();
    let mut expired = Vec::new();
    for row in &rows {
        let call = call_of(row, what)?;
        match call.approval() {
            // One row per call: an id is never decided twice here.
            Some(a) => drop(decisions.insert(call.tool_use_id.clone(), a)),
            None => expired.push(call.tool_use_id.clone()),
        }
    }
    Ok(Some(ReadyTurn::new(turn, decisions, expired, token, lease)))
}

async fn take_on(
    conn: &mut Conn,
    fingerprint: String,
    lease: f64,
    token: i64,
) -> Result<Option<(String, Vec<Row>)>, tokio_postgres::Error> {
    let st = [
        conn.statement(sql::BEGIN).await?,
        conn.statement(q::TAKE_READY).await?,
        conn.statement(q::EXPIRE).await?,
        conn.statement(&q::calls_of()).await?,
        conn.statement(sql::COMMIT).await?,
    ];
    let take: [&(dyn ToSql + Sync); 3] = [&fingerprint, &lease, &token];
    let c = &conn.client;
    let first: Vec<Rows<'_>> = vec![
        Box::pin(c.query(&st[0], &[])),
        Box::pin(c.query(&st[1], &take)),
    ];
    let mut answers = join_all(first).await.into_iter();
    answers.next().unwrap_or_else(|| Ok(Vec::new()))?;
    let taken = answers.next().unwrap_or_else(|| Ok(Vec::new()))?;
    let Some(row) = taken.first() else {
        c.batch_execute("COMMIT").await?;
        return Ok(None);
    };
    let (session_id, turn_id, json): (String, String, String) =
        (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
    if serde_json::from_str::<PendingTurn>(&json).is_err() {
        // A turn that does not read back is not kept taken: every take answers the error.
        c.batch_execute("ROLLBACK").await?;
        return Ok(Some((json, Vec::new())));
    }
    let of_turn: [&(dyn ToSql + Sync); 2] = [&session_id, &turn_id];
    let second: Vec<Rows<'_>> = vec![
        Box::pin(c.query(&st[2], &of_turn)),
        Box::pin(c.query(&st[3], &of_turn)),
        Box::pin(c.query(&st[4], &[])),
    ];
    let mut answers = join_all(second).await.into_iter();
    answers.next().unwrap_or_else(|| Ok(Vec::new()))?;
    let rows = answers.next().unwrap_or_else(|| Ok(Vec::new()))?;
    answers.next().unwrap_or_else(|| Ok(Vec::new()))?;
    Ok(Some((json, rows)))
}

/// One statement on a connection of the inbox, its rows.
async fn one(
    conns: Arc<Conns>,
    what: &'static str,
    sql: &'static str,
    params: Vec<Box<dyn ToSql + Sync + Send>>,
) -> Result<Vec<Row>, StoreError> {
    let mut slot = conns.slot().await?;
    let Some(conn) = slot.as_mut() else {
        return Err(StoreError::new(
            StoreErrorKind::Unavailable,
            "PostgreSQL: the inbox has no connection",
        ));
    };
    let st = conn.statement(sql).await.map_err(|e| db_error(what, e))?;
    let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref() as _).collect();
    conn.client
        .query(&st, &refs)
        .await
        .map_err(|e| db_error(what, e))
}

impl PostgresStore {
    /// The inbox's connections (made at the first use).
    fn inbox(&self) -> Arc<Conns> {
        Arc::clone(
            self.shared
                .inbox
                .get_or_init(|| Arc::new(Conns::new(self.pool().config().clone()))),
        )
    }
}

impl InboxStore for PostgresStore {
    fn list<'a>(&'a self, query: &'a Query) -> StoreFuture<'a, Result<Page, StoreError>> {
        self.run("inbox list", list(self.inbox(), query.clone()))
    }

    fn turn<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
    ) -> StoreFuture<'a, Result<Option<InboxTurn>, StoreError>> {
        let work = turn(self.inbox(), session_id.to_owned(), turn_id.to_owned());
        self.run("inbox turn", work)
    }

    fn decide<'a>(&'a self, attempt: &'a Attempt) -> StoreFuture<'a, Result<Recorded, StoreError>> {
        self.run("inbox decide", decide(self.inbox(), attempt.clone()))
    }

    fn take_ready<'a>(
        &'a self,
        fingerprint: &'a str,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Option<ReadyTurn>, StoreError>> {
        let work = take_ready(self.inbox(), fingerprint.to_owned(), lease);
        self.run("inbox take_ready", work)
    }

    fn finished<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        token: Token,
        answer: &'a Value,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let params: Vec<Box<dyn ToSql + Sync + Send>> = vec![
            Box::new(session_id.to_owned()),
            Box::new(turn_id.to_owned()),
            Box::new(answer.to_string()),
            Box::new(token.as_i64()),
        ];
        let what = "recording a resumed turn";
        let work = one(self.inbox(), what, q::FINISHED, params);
        let (session_id, turn_id) = (session_id.to_owned(), turn_id.to_owned());
        self.run("inbox finished", async move {
            let rows = work.await?;
            match holder(&rows, token.as_i64()) {
                Ok(None) => Ok(()),
                Ok(Some(found)) => Err(fenced_take(&session_id, &turn_id, found)),
                Err(e) => Err(StoreError::new(
                    StoreErrorKind::Corrupt,
                    format!("PostgreSQL: {what}: the row is unreadable: {e}"),
                )),
            }
        })
    }

    fn publish_tools<'a>(
        &'a self,
        tools: &'a PublishedTools,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let json = serde_json::to_string(tools).unwrap_or_default();
        let params: Vec<Box<dyn ToSql + Sync + Send>> =
            vec![Box::new(tools.fingerprint.clone()), Box::new(json)];
        let work = one(self.inbox(), "publishing tools", q::PUBLISH, params);
        self.run("inbox publish_tools", async move { work.await.map(drop) })
    }

    fn published_tools<'a>(
        &'a self,
        fingerprint: &'a str,
    ) -> StoreFuture<'a, Result<Option<PublishedTools>, StoreError>> {
        let params: Vec<Box<dyn ToSql + Sync + Send>> = vec![Box::new(fingerprint.to_owned())];
        let work = one(
            self.inbox(),
            "reading published tools",
            q::PUBLISHED,
            params,
        );
        self.run("inbox published_tools", async move {
            let rows = work.await?;
            let Some(row) = rows.first() else {
                return Ok(None);
            };
            let text: String = row
                .try_get(0)
                .map_err(|e| db_error("reading published tools", e))?;
            serde_json::from_str(&text).map(Some).map_err(|e| {
                StoreError::new(
                    StoreErrorKind::Corrupt,
                    format!("PostgreSQL: the published tools do not read back: {e}"),
                )
            })
        })
    }

    /// Each decision's audit line is appended to the `decisions` chain in the decision's own
    /// transaction.
    fn audits_decisions(&self) -> bool {
        true
    }
}
