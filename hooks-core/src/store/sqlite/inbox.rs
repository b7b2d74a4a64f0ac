//! [`SqliteStore`] as an [`InboxStore`] (feature `inbox`): the tables of schema version 2
//! (`migrations/0003_inbox.sql`). Every write is one `BEGIN IMMEDIATE` transaction, which takes
//! the file's write lock before it reads, so what it reads is what it changes: a decision reads
//! the call's row, judges it with the rules every store shares (`inbox/judge.rs`) and writes it
//! back with a conditional `UPDATE … WHERE state = 'waiting' AND digest = ?`, the idempotency
//! key beside it; a take for a resume picks a ready turn, takes it, and records its undecided
//! calls expired. Instants are SQLite's clock (`unixepoch`), in milliseconds.

use std::time::Duration;

use rusqlite::types::Value as Sql;
use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};
use serde_json::Value;

use crate::approval::decisions::Decisions;
use crate::approval::pending::PendingTurn;
use crate::inbox::decide::{answer_json, answer_of};
use crate::inbox::judge::{CallRow, RawCall};
use crate::inbox::{
    Attempt, CallState, InboxStore, InboxTurn, Order, Page, PublishedTools, Query, ReadyTurn,
    Recorded, Refusal, TurnState, from_ms,
};
use crate::store::StoreFuture;
use crate::store::error::StoreError;

use super::turns::taker;
use super::waiting::clock;
use super::{Failure, SqliteStore, lease_ms};
use crate::store::{Token, fenced_take};

/// A call's columns, in [`CallRow`]'s order; `{input}` and `{edit}` are the input's columns, or
/// `''` and `NULL` for a list, which shows no input.
const COLUMNS: &str = "c.seq, c.session_id, c.turn_id, c.tool_use_id, c.position, c.tool, \
     c.asked_by, c.user_id, c.fingerprint, c.created_at, c.expires_at, c.state, c.digest, \
     c.summary, {input}, {edit}, c.approvals, c.decided, c.reason";

/// The first answer kept under a key, and the request it came with.
const KEY: &str = "SELECT request, answer FROM toolgate_inbox_keys WHERE key = ?1";
const INSERT_KEY: &str =
    "INSERT INTO toolgate_inbox_keys (key, request, answer, at) VALUES (?1, ?2, ?3, ?4)";

/// A kept turn's state.
const TURN_STATE: &str =
    "SELECT state FROM toolgate_pending_turns WHERE session_id = ?1 AND turn_id = ?2";

/// A decision written back: only onto the row as it was read (waiting, with the digest the
/// person was shown).
const UPDATE_CALL: &str = "UPDATE toolgate_inbox_calls \
     SET state = ?1, digest = ?2, summary = ?3, edit = ?4, approvals = ?5, decided = ?6, \
         reason = ?7 \
     WHERE seq = ?8 AND state = 'waiting' AND digest = ?9";

/// One call of the turn no longer waits for anyone.
const ONE_LESS: &str = "UPDATE toolgate_inbox_turns SET waiting = waiting - 1 \
     WHERE session_id = ?1 AND turn_id = ?2";

/// The oldest open turn of fingerprint `?1` that is ready at `?2` (each call decided, or its
/// expiry passed) and takeable (waiting, or taken with its lease ended).
const READY: &str = "SELECT t.session_id, t.turn_id FROM toolgate_inbox_turns t \
     JOIN toolgate_pending_turns p ON p.session_id = t.session_id AND p.turn_id = t.turn_id \
     WHERE t.open = 1 AND t.fingerprint = ?1 AND (t.waiting = 0 OR t.expires_at <= ?2) \
       AND (p.state = 'waiting' OR (p.state = 'taken' AND p.lease_until <= ?2)) \
     ORDER BY t.seq LIMIT 1";

/// The take of the turn found ready, until `?3`, under the take's token `?4`.
const TAKE: &str = "UPDATE toolgate_pending_turns \
     SET state = 'taken', lease_until = ?3, take_token = ?4 \
     WHERE session_id = ?1 AND turn_id = ?2 RETURNING turn";

/// Its calls nobody decided: expired, recorded so no decision lands after the take.
const EXPIRE: &str = "UPDATE toolgate_inbox_calls SET state = 'expired' \
     WHERE session_id = ?1 AND turn_id = ?2 AND state = 'waiting'";

/// A turn taken under the token `?4` resumed, and no longer open.
const RESUMED: &str = "UPDATE toolgate_pending_turns \
     SET state = 'resumed', lease_until = NULL, answer = ?3 \
     WHERE session_id = ?1 AND turn_id = ?2 AND state = 'taken' AND take_token = ?4";
const CLOSE: &str =
    "UPDATE toolgate_inbox_turns SET open = 0 WHERE session_id = ?1 AND turn_id = ?2";

/// A turn's state and names (its JSON only when it has no row of its own: kept before the
/// index).
const TURN: &str = "SELECT p.state, t.user_id, t.fingerprint, \
     CASE WHEN t.seq IS NULL THEN p.turn END \
     FROM toolgate_pending_turns p LEFT JOIN toolgate_inbox_turns t \
       ON t.session_id = p.session_id AND t.turn_id = p.turn_id \
     WHERE p.session_id = ?1 AND p.turn_id = ?2";

const PUBLISH: &str = "INSERT INTO toolgate_inbox_tools (fingerprint, tools) VALUES (?1, ?2) \
     ON CONFLICT (fingerprint) DO UPDATE SET tools = excluded.tools";
const PUBLISHED: &str = "SELECT tools FROM toolgate_inbox_tools WHERE fingerprint = ?1";

/// The columns of a call with (`true`) or without its input.
fn columns(with_input: bool) -> String {
    let (input, edit) = if with_input {
        ("c.input", "c.edit")
    } else {
        ("''", "NULL")
    };
    COLUMNS.replace("{input}", input).replace("{edit}", edit)
}

/// A call's row as the columns read it.
fn call_row(row: &Row<'_>) -> rusqlite::Result<RawCall> {
    Ok(RawCall {
        seq: row.get(0)?,
        session_id: row.get(1)?,
        turn_id: row.get(2)?,
        tool_use_id: row.get(3)?,
        position: row.get(4)?,
        tool: row.get(5)?,
        asked_by: row.get(6)?,
        user_id: row.get(7)?,
        fingerprint: row.get(8)?,
        created_at: row.get(9)?,
        expires_at: row.get(10)?,
        state: row.get(11)?,
        digest: row.get(12)?,
        summary: row.get(13)?,
        input: row.get(14)?,
        edit: row.get(15)?,
        approvals: row.get(16)?,
        decided: row.get(17)?,
        reason: row.get(18)?,
    })
}

/// A pending turn's state as the inbox shows it.
fn turn_state(state: &str) -> Result<TurnState, Failure> {
    match state {
        "waiting" => Ok(TurnState::Waiting),
        "taken" => Ok(TurnState::Resuming),
        "resumed" => Ok(TurnState::Resumed),
        other => Err(Failure::Data(format!(
            "a turn's state {other:?} is not one this build knows"
        ))),
    }
}

/// The statement of one list, and its parameters.
fn list_statement(query: &Query, now: i64) -> (String, Vec<Sql>) {
    let mut sql = format!(
        "SELECT {} FROM toolgate_inbox_calls c WHERE 1 = 1",
        columns(false)
    );
    let mut args: Vec<Sql> = Vec::new();
    let mut arg = |sql: &mut String, text: &str, value: Sql| {
        args.push(value);
        sql.push_str(&text.replace('?', &format!("?{}", args.len())));
    };
    match query.state {
        None => {}
        Some(CallState::Waiting) => {
            arg(
                &mut sql,
                " AND c.state = 'waiting' AND c.expires_at > ?",
                Sql::Integer(now),
            );
            // The turn's state read per row (a subquery, never a join), so the plan walks an
            // index in `seq` order and stops at the page's end; a turn is waiting, taken or
            // resumed.
            sql.push_str(
                " AND (SELECT p.state FROM toolgate_pending_turns p WHERE p.session_id = \
                 c.session_id AND p.turn_id = c.turn_id) NOT IN ('taken', 'resumed')",
            );
        }
        Some(CallState::Expired) => arg(
            &mut sql,
            " AND (c.state = 'expired' OR (c.state = 'waiting' AND c.expires_at <= ?))",
            Sql::Integer(now),
        ),
        Some(state) => sql.push_str(&format!(" AND c.state = '{}'", state.as_str())),
    }
    let text = |v: &Option<String>| v.clone().map(Sql::Text);
    if let Some(v) = text(&query.tool) {
        arg(&mut sql, " AND c.tool = ?", v);
    }
    if let Some(v) = text(&query.user_id) {
        arg(&mut sql, " AND c.user_id = ?", v);
    }
    if let Some(v) = text(&query.session_id) {
        arg(&mut sql, " AND c.session_id = ?", v);
    }
    if let Some(v) = text(&query.asked_by) {
        arg(
            &mut sql,
            " AND instr(c.rules, char(10) || ? || char(10)) > 0",
            v,
        );
    }
    if let Some(window) = query.expires_within {
        let until = now.saturating_add(i64::try_from(window.as_millis()).unwrap_or(i64::MAX));
        arg(
            &mut sql,
            " AND c.state = 'waiting' AND c.expires_at > ?",
            Sql::Integer(now),
        );
        arg(&mut sql, " AND c.expires_at <= ?", Sql::Integer(until));
    }
    let (cmp, order) = match query.order {
        Order::OldestFirst => (">", "ASC"),
        Order::NewestFirst => ("<", "DESC"),
    };
    if let Some(after) = query.after {
        let seq = i64::try_from(after.seq()).unwrap_or(i64::MAX);
        arg(&mut sql, &format!(" AND c.seq {cmp} ?"), Sql::Integer(seq));
    }
    let limit = i64::try_from(query.limit + 1).unwrap_or(i64::MAX);
    arg(
        &mut sql,
        &format!(" ORDER BY c.seq {order} LIMIT ?"),
        Sql::Integer(limit),
    );
    (sql, args)
}

fn list(c: &mut Connection, query: &Query) -> Result<Page, Failure> {
    let now = clock(c)?;
    let (sql, args) = list_statement(query, now);
    let mut statement = c.prepare(&sql)?;
    let raws = statement
        .query_map(rusqlite::params_from_iter(args), call_row)?
        .collect::<Result<Vec<RawCall>, _>>()?;
    let mut calls = Vec::with_capacity(raws.len());
    for raw in raws {
        calls.push(raw.into_call().map_err(Failure::Data)?.view(now));
    }
    Ok(Page::of(calls, query))
}

/// The calls of a turn, with their inputs, in order.
fn calls_of(c: &Connection, session_id: &str, turn_id: &str) -> Result<Vec<CallRow>, Failure> {
    let sql = format!(
        "SELECT {} FROM toolgate_inbox_calls c WHERE c.session_id = ?1 AND c.turn_id = ?2 \
         ORDER BY c.position",
        columns(true)
    );
    let mut statement = c.prepare(&sql)?;
    let raws = statement
        .query_map(params![session_id, turn_id], call_row)?
        .collect::<Result<Vec<RawCall>, _>>()?;
    raws.into_iter()
        .map(|r| r.into_call().map_err(Failure::Data))
        .collect()
}

fn turn(c: &mut Connection, session_id: &str, turn_id: &str) -> Result<Option<InboxTurn>, Failure> {
    let now = clock(c)?;
    type Found = (String, Option<String>, Option<String>, Option<String>);
    let found: Option<Found> = c
        .query_row(TURN, params![session_id, turn_id], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })
        .optional()?;
    let Some((state, user_id, fingerprint, json)) = found else {
        return Ok(None);
    };
    let (user_id, fingerprint) = match (user_id, fingerprint, json) {
        (Some(u), Some(f), _) => (u, f),
        (_, _, json) => {
            let kept: PendingTurn = serde_json::from_str(json.as_deref().unwrap_or_default())
                .map_err(|e| Failure::Data(format!("a kept turn is not a PendingTurn: {e}")))?;
            (kept.user_id, kept.fingerprint)
        }
    };
    let calls = calls_of(c, session_id, turn_id)?;
    Ok(Some(InboxTurn {
        session_id: session_id.to_owned(),
        turn_id: turn_id.to_owned(),
        user_id,
        fingerprint,
        state: turn_state(&state)?,
        calls: calls.iter().map(|row| row.turn_call(now)).collect(),
    }))
}

/// The answer kept under the attempt's key, when it has one that was used before.
fn kept_answer(tx: &Transaction<'_>, attempt: &Attempt) -> Result<Option<Recorded>, Failure> {
    let Some(key) = &attempt.request.idempotency_key else {
        return Ok(None);
    };
    let kept: Option<(String, String)> = tx
        .query_row(KEY, [key], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    let Some((request, answer)) = kept else {
        return Ok(None);
    };
    let at = from_ms(clock(tx)?);
    if request != attempt.request_digest {
        let reused = Refusal::KeyReused { key: key.clone() };
        return Ok(Some(Recorded::new(Err(reused), at, false)));
    }
    let answer = answer_of(&answer)
        .map_err(|e| Failure::Data(format!("the answer kept under a key does not read: {e}")))?;
    Ok(Some(Recorded::new(answer, at, true)))
}

fn decide(c: &mut Connection, attempt: &Attempt) -> Result<Recorded, Failure> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if let Some(kept) = kept_answer(&tx, attempt)? {
        return Ok(kept);
    }
    let now = clock(&tx)?;
    let at = from_ms(now);
    let r = &attempt.request;
    let state: Option<String> = tx
        .query_row(TURN_STATE, params![r.session_id, r.turn_id], |row| {
            row.get(0)
        })
        .optional()?;
    let Some(state) = state else {
        let unknown = Refusal::UnknownTurn {
            session_id: r.session_id.clone(),
            turn_id: r.turn_id.clone(),
        };
        return Ok(Recorded::new(Err(unknown), at, false));
    };
    let sql = format!(
        "SELECT {} FROM toolgate_inbox_calls c \
         WHERE c.session_id = ?1 AND c.turn_id = ?2 AND c.tool_use_id = ?3",
        columns(true)
    );
    let raw = tx
        .query_row(
            &sql,
            params![r.session_id, r.turn_id, r.tool_use_id],
            call_row,
        )
        .optional()?;
    let Some(mut row) = raw
        .map(|r| r.into_call().map_err(Failure::Data))
        .transpose()?
    else {
        let unknown = Refusal::UnknownCall {
            tool_use_id: r.tool_use_id.clone(),
        };
        return Ok(Recorded::new(Err(unknown), at, false));
    };
    let answer = row.decide(attempt, turn_state(&state)?, now);
    if answer.is_ok() {
        write_back(&tx, &row, &r.input_digest)?;
    }
    if let Some(key) = &r.idempotency_key {
        let text = answer_json(&answer);
        tx.execute(INSERT_KEY, params![key, attempt.request_digest, text, now])?;
    }
    tx.commit()?;
    Ok(Recorded::new(answer, at, false).on(&row.tool, &row.user_id))
}

/// Writes a decided row back over the row it was read as (waiting, for digest `seen`), and
/// counts its turn one call less waiting when the decision ended it.
fn write_back(tx: &Transaction<'_>, row: &CallRow, seen: &str) -> Result<(), Failure> {
    let approvals = serde_json::to_string(&row.approvals).unwrap_or_default();
    let decided = row
        .decided
        .as_ref()
        .map(|m| serde_json::to_string(m).unwrap_or_default());
    let changed = tx.execute(
        UPDATE_CALL,
        params![
            row.state.as_str(),
            row.digest,
            row.summary,
            row.edit,
            approvals,
            decided,
            row.reason,
            i64::try_from(row.seq).unwrap_or(i64::MAX),
            seen
        ],
    )?;
    if changed != 1 {
        return Err(Failure::Data(
            "the call's row changed under the write lock".to_owned(),
        ));
    }
    if row.state != CallState::Waiting {
        tx.execute(ONE_LESS, params![row.session_id, row.turn_id])?;
    }
    Ok(())
}

fn take_ready(
    c: &mut Connection,
    fingerprint: &str,
    lease: Duration,
) -> Result<Option<ReadyTurn>, Failure> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = clock(&tx)?;
    let found: Option<(String, String)> = tx
        .query_row(READY, params![fingerprint, now], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .optional()?;
    let Some((session_id, turn_id)) = found else {
        return Ok(None);
    };
    let (until, token) = (now.saturating_add(lease_ms(lease)), Token::draw());
    let take = params![session_id, turn_id, until, token.as_i64()];
    let json: String = tx.query_row(TAKE, take, |row| row.get(0))?;
    tx.execute(EXPIRE, params![session_id, turn_id])?;
    let rows = calls_of(&tx, &session_id, &turn_id)?;
    // Read before the commit: a turn that does not read back rolls the take back.
    let turn: PendingTurn = serde_json::from_str(&json)
        .map_err(|e| Failure::Data(format!("a kept turn is not a PendingTurn's JSON: {e}")))?;
    tx.commit()?;
    let mut decisions = Decisions::new();
    let mut expired = Vec::new();
    for row in rows {
        match row.approval() {
            // One row per call: an id is never decided twice here.
            Some(a) => drop(decisions.insert(row.tool_use_id.clone(), a)),
            None => expired.push(row.tool_use_id.clone()),
        }
    }
    Ok(Some(ReadyTurn::new(turn, decisions, expired, token, lease)))
}

/// The resume's answer under `token`, and the turn closed, in one transaction; else what the
/// store found instead of the take (an answer already recorded under the token: `None`).
fn finished(
    c: &mut Connection,
    (session_id, turn_id): (&str, &str),
    token: Token,
    answer: &Value,
) -> Result<Option<crate::store::Found>, Failure> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let resumed = params![session_id, turn_id, answer.to_string(), token.as_i64()];
    let found = if tx.execute(RESUMED, resumed)? == 1 {
        tx.execute(CLOSE, params![session_id, turn_id])?;
        None
    } else {
        taker(&tx, (session_id, turn_id), token)?
    };
    tx.commit()?;
    Ok(found)
}

impl InboxStore for SqliteStore {
    fn list<'a>(&'a self, query: &'a Query) -> StoreFuture<'a, Result<Page, StoreError>> {
        StoreFuture::ready(self.run(|| "list the inbox".to_owned(), |c| list(c, query)))
    }

    fn turn<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
    ) -> StoreFuture<'a, Result<Option<InboxTurn>, StoreError>> {
        StoreFuture::ready(self.run(
            || format!("read the paused turn {turn_id:?} of session {session_id:?}"),
            |c| turn(c, session_id, turn_id),
        ))
    }

    fn decide<'a>(&'a self, attempt: &'a Attempt) -> StoreFuture<'a, Result<Recorded, StoreError>> {
        let r = &attempt.request;
        StoreFuture::ready(self.run(
            || {
                format!(
                    "record a decision on tool_use {:?} of session {:?}",
                    r.tool_use_id, r.session_id
                )
            },
            |c| decide(c, attempt),
        ))
    }

    fn take_ready<'a>(
        &'a self,
        fingerprint: &'a str,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Option<ReadyTurn>, StoreError>> {
        StoreFuture::ready(self.run(
            || "take a ready turn".to_owned(),
            |c| take_ready(c, fingerprint, lease),
        ))
    }

    fn finished<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        token: Token,
        answer: &'a Value,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let found = self.run(
            || {
                format!(
                    "record the answer of the paused turn {turn_id:?} of session {session_id:?}"
                )
            },
            |c| finished(c, (session_id, turn_id), token, answer),
        );
        StoreFuture::ready(match found {
            Ok(None) => Ok(()),
            Ok(Some(found)) => Err(fenced_take(session_id, turn_id, found)),
            Err(e) => Err(e),
        })
    }

    fn publish_tools<'a>(
        &'a self,
        tools: &'a PublishedTools,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        StoreFuture::ready(self.run(
            || "publish the dispatcher's tools".to_owned(),
            |c| {
                let json = serde_json::to_string(tools)
                    .map_err(|e| Failure::Data(format!("the tools are not JSON: {e}")))?;
                c.execute(PUBLISH, params![tools.fingerprint, json])?;
                Ok(())
            },
        ))
    }

    fn published_tools<'a>(
        &'a self,
        fingerprint: &'a str,
    ) -> StoreFuture<'a, Result<Option<PublishedTools>, StoreError>> {
        StoreFuture::ready(self.run(
            || "read the published tools".to_owned(),
            |c| {
                let json: Option<String> = c
                    .query_row(PUBLISHED, [fingerprint], |row| row.get(0))
                    .optional()?;
                json.map(|text| {
                    serde_json::from_str(&text).map_err(|e| {
                        Failure::Data(format!("the published tools do not read back: {e}"))
                    })
                })
                .transpose()
            },
        ))
    }
}
