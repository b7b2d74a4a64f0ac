//! [`SqliteStore`] as a [`PendingStore`]: the table `toolgate_pending_turns` (and, in a put's
//! transaction, the inbox's rows of the turn's waiting calls: `waiting.rs`).

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde_json::Value;

use crate::approval::pending::PendingTurn;
use crate::store::error::StoreError;
use crate::store::lease::{Held, Hold, Token};
use crate::store::{Found, PendingStore, StoreFuture, Taken, fenced_take};

use super::{Failure, SqliteStore, lease_ms, now_ms};

/// A turn kept, waiting; nothing when one is kept under its key.
const PUT: &str = "INSERT INTO toolgate_pending_turns (session_id, turn_id, turn, state) \
     VALUES (?1, ?2, ?3, 'waiting') ON CONFLICT (session_id, turn_id) DO NOTHING";

/// The take: a waiting turn, or one whose take's lease ended (now or before, by SQLite's
/// clock), or one taken by this very token `?4`, becomes this caller's for `?3` milliseconds.
/// One statement: of any number of takers, one changes the row.
const TAKE: &str = concat!(
    "UPDATE toolgate_pending_turns SET state = 'taken', take_token = ?4, lease_until = ",
    now_ms!(),
    " + ?3 WHERE session_id = ?1 AND turn_id = ?2 AND (state = 'waiting' OR (state = 'taken' \
     AND (take_token = ?4 OR lease_until <= ",
    now_ms!(),
    "))) RETURNING turn"
);

/// Why a take took nothing.
const STATE: &str = "SELECT state, answer FROM toolgate_pending_turns \
     WHERE session_id = ?1 AND turn_id = ?2";

/// A turn taken by the take of token `?4` resumed into the answer `?3`.
const RESUMED: &str = "UPDATE toolgate_pending_turns \
     SET state = 'resumed', lease_until = NULL, answer = ?3 \
     WHERE session_id = ?1 AND turn_id = ?2 AND state = 'taken' AND take_token = ?4";

/// What holds a turn when a resumed changed nothing: its state and the take's token.
const TAKER: &str = "SELECT state, take_token FROM toolgate_pending_turns \
     WHERE session_id = ?1 AND turn_id = ?2";

/// A turn taken by the take of token `?3` waiting again.
const PUT_BACK: &str = "UPDATE toolgate_pending_turns SET state = 'waiting', lease_until = NULL \
     WHERE session_id = ?1 AND turn_id = ?2 AND state = 'taken' AND take_token = ?3";

/// A session's waiting turns, in the order they were first kept.
const WAITING: &str = "SELECT turn FROM toolgate_pending_turns \
     WHERE session_id = ?1 AND state = 'waiting' ORDER BY seq";

/// The turn `(session_id, turn_id)` in a message.
fn describe(action: &str, session_id: &str, turn_id: &str) -> String {
    format!("{action} the paused turn {turn_id:?} of session {session_id:?}")
}

/// A turn read back from its JSON text.
fn turn_of(json: &str) -> Result<PendingTurn, Failure> {
    serde_json::from_str(json)
        .map_err(|e| Failure::Data(format!("a kept turn is not a PendingTurn's JSON: {e}")))
}

/// The take, in one `BEGIN IMMEDIATE` transaction: the `UPDATE … RETURNING`, and when it took
/// nothing, the row's state (being resumed, resumed, or no row). A turn taken whose JSON does not
/// read back is not kept taken: the transaction is rolled back, so every take answers the same
/// error (and no caller is told another one is resuming it).
fn take(
    connection: &mut Connection,
    session_id: &str,
    turn_id: &str,
    token: Token,
    lease: Duration,
) -> Result<Taken, Failure> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let params = params![session_id, turn_id, lease_ms(lease), token.as_i64()];
    let won: Option<String> = tx.query_row(TAKE, params, |row| row.get(0)).optional()?;
    let state: Option<(String, Option<String>)> = match won {
        Some(_) => None,
        None => tx
            .query_row(STATE, params![session_id, turn_id], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()?,
    };
    // Read before the commit: a turn that does not read back rolls the take back (`tx` dropped).
    let won = won.as_deref().map(turn_of).transpose()?;
    tx.commit()?;
    if let Some(turn) = won {
        return Ok(Taken::Turn(turn));
    }
    match state {
        None => Ok(Taken::Missing),
        Some((state, _)) if state == "taken" => Ok(Taken::Resuming),
        Some((state, Some(answer))) if state == "resumed" => serde_json::from_str(&answer)
            .map(Taken::Resumed)
            .map_err(|e| Failure::Data(format!("its answer is not JSON: {e}"))),
        Some((state, _)) => Err(Failure::Data(format!(
            "its state {state:?} is not one a take can leave (or a resumed turn lacks its \
             answer)"
        ))),
    }
}

impl PendingStore for SqliteStore {
    fn put<'a>(&'a self, turn: &'a PendingTurn) -> StoreFuture<'a, Result<(), StoreError>> {
        StoreFuture::ready(self.run(
            || describe("keep", &turn.session_id, &turn.turn_id),
            |c| {
                let json = serde_json::to_string(turn)
                    .map_err(|e| Failure::Data(format!("the turn is not JSON: {e}")))?;
                // The turn and the inbox's rows of its waiting calls, in one transaction.
                let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
                if tx.execute(PUT, params![turn.session_id, turn.turn_id, json])? == 1 {
                    super::waiting::index(&tx, turn)?;
                }
                tx.commit()?;
                Ok(())
            },
        ))
    }

    fn take<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        token: Token,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Taken, StoreError>> {
        StoreFuture::ready(self.run(
            || describe("take", session_id, turn_id),
            |c| take(c, session_id, turn_id, token, lease),
        ))
    }

    fn resumed<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        token: Token,
        answer: &'a Value,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let found = self.run(
            || describe("record the answer of", session_id, turn_id),
            |c| resumed(c, (session_id, turn_id), token, answer),
        );
        StoreFuture::ready(match found {
            Ok(None) => Ok(()),
            Ok(Some(found)) => Err(fenced_take(session_id, turn_id, found)),
            Err(e) => Err(e),
        })
    }

    fn put_back<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: &'a str,
        token: Token,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        StoreFuture::ready(self.run(
            || describe("put back", session_id, turn_id),
            |c| {
                c.execute(PUT_BACK, params![session_id, turn_id, token.as_i64()])?;
                Ok(())
            },
        ))
    }

    fn waiting<'a>(
        &'a self,
        session_id: &'a str,
    ) -> StoreFuture<'a, Result<Vec<PendingTurn>, StoreError>> {
        StoreFuture::ready(self.run(
            || format!("list the waiting turns of session {session_id:?}"),
            |c| {
                let mut statement = c.prepare(WAITING)?;
                let rows = statement.query_map([session_id], |row| row.get::<_, String>(0))?;
                let mut turns = Vec::new();
                for json in rows {
                    turns.push(turn_of(&json?)?);
                }
                Ok(turns)
            },
        ))
    }

    /// `true`: the store's renewer thread renews held takes (see the module docs).
    fn renews(&self) -> bool {
        true
    }

    fn hold(&self, session_id: &str, turn_id: &str, token: Token, lease: Duration) -> Option<Hold> {
        Some(self.hold_in(Held::take(session_id, turn_id), token, lease))
    }
}

/// A resume's answer under `token`: recorded when the turn is taken under it; else `Ok(Some)`
/// with what the store found instead (an answer already recorded under the token is `None`).
fn resumed(
    connection: &Connection,
    (session_id, turn_id): (&str, &str),
    token: Token,
    answer: &Value,
) -> Result<Option<Found>, Failure> {
    let params = params![session_id, turn_id, answer.to_string(), token.as_i64()];
    if connection.execute(RESUMED, params)? == 1 {
        return Ok(None);
    }
    taker(connection, (session_id, turn_id), token)
}

/// What holds the turn when a resume under `token` changed nothing: `None` when it was resumed
/// under that very token (an answer sent again), else what the store found.
pub(super) fn taker(
    connection: &Connection,
    (session_id, turn_id): (&str, &str),
    token: Token,
) -> Result<Option<Found>, Failure> {
    let taker: Option<(String, Option<i64>)> = connection
        .query_row(TAKER, params![session_id, turn_id], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .optional()?;
    let token = token.as_i64();
    Ok(match taker {
        None => Some(Found::Nothing),
        Some((state, by)) if state == "resumed" && by == Some(token) => None,
        Some((state, _)) if state == "resumed" => Some(Found::Answered),
        Some(_) => Some(Found::OtherClaim),
    })
}
