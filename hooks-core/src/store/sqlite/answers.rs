//! [`SqliteStore`] as an [`AnswerStore`]: the table `toolgate_calls`.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::audit::outcome::Outcome;
use crate::content::message::ToolResult;
use crate::store::digest::InputDigest;
use crate::store::error::StoreError;
use crate::store::lease::{Held, Hold, Token};
use crate::store::{
    AnswerStore, BesideFirst, CallKey, Claim, Found, Remembered, StoreFuture, beside_first, fenced,
};

use super::{Failure, SqliteStore, lease_ms, now_ms};

/// A new row (`?3`: `apart`, `?4`: `turn`), in progress for `?6` milliseconds from now by
/// SQLite's clock, made by the claim of token `?7`; nothing when the row is there.
const INSERT: &str = concat!(
    "INSERT INTO toolgate_calls (session_id, tool_use_id, apart, turn, digest, state, \
     lease_until, claim_token) VALUES (?1, ?2, ?3, ?4, ?5, 'in_progress', ",
    now_ms!(),
    " + ?6, ?7) ON CONFLICT (session_id, tool_use_id, apart) DO NOTHING"
);

/// A row in progress whose lease ended (now or before, by SQLite's clock) with no answer:
/// interrupted.
const LAPSE: &str = concat!(
    "UPDATE toolgate_calls SET state = 'interrupted', lease_until = NULL \
     WHERE session_id = ?1 AND tool_use_id = ?2 AND apart = ?3 AND state = 'in_progress' \
     AND lease_until <= ",
    now_ms!()
);

/// What a row records.
const READ: &str = "SELECT digest, state, outcome, result, turn FROM toolgate_calls \
     WHERE session_id = ?1 AND tool_use_id = ?2 AND apart = ?3";

/// The call of turn `?3` (the first call's row, or the one kept apart: at most one is), if in
/// progress under the claim of token `?6`, answered with outcome `?4` and the `tool_result`
/// JSON `?5`.
const ANSWER: &str = "UPDATE toolgate_calls \
     SET state = 'answered', lease_until = NULL, outcome = ?4, result = ?5 \
     WHERE session_id = ?1 AND tool_use_id = ?2 AND turn = ?3 AND state = 'in_progress' \
     AND claim_token = ?6";

/// What holds the call of turn `?3` when an answer changed nothing: its state and the token
/// of the claim that made it.
const HOLDER: &str = "SELECT state, claim_token FROM toolgate_calls \
     WHERE session_id = ?1 AND tool_use_id = ?2 AND turn = ?3";

/// The call of turn `?3`, released by the claim of token `?4` before its tool started:
/// forgotten.
const FORGET: &str = "DELETE FROM toolgate_calls \
     WHERE session_id = ?1 AND tool_use_id = ?2 AND turn = ?3 AND state = 'in_progress' \
     AND claim_token = ?4";

/// The call of turn `?3`, released by the claim of token `?4` after its tool started:
/// interrupted.
const INTERRUPT: &str = "UPDATE toolgate_calls SET state = 'interrupted', lease_until = NULL \
     WHERE session_id = ?1 AND tool_use_id = ?2 AND turn = ?3 AND state = 'in_progress' \
     AND claim_token = ?4";

/// One row of `toolgate_calls`, as read.
struct Row {
    digest: Vec<u8>,
    state: String,
    outcome: Option<String>,
    result: Option<String>,
    turn: String,
}

/// `claim`'s words for a key in a message.
fn describe(action: &str, key: CallKey<'_>) -> String {
    let mut text = format!("{action} tool_use {:?}", key.tool_use_id);
    if !key.turn.is_empty() {
        text.push_str(&format!(" of turn {:?}", key.turn));
    }
    text.push_str(&format!(" of session {:?}", key.session_id));
    text
}

/// The claim, in one `BEGIN IMMEDIATE` transaction: the session's first call with the id (the
/// insert; when it inserted nothing, the lapsed-lease rule, then the row); then, by the rule of
/// "Turns" in the store docs, that row, the row kept apart for the key's turn (claimed the same
/// way), or [`Claim::OtherTurn`]. SQLite's clock is read by the statements, once the write
/// lock is held, so a wait for the lock does not age the lease.
fn claim(
    connection: &mut Connection,
    key: CallKey<'_>,
    token: Token,
    digest: InputDigest,
    lease: Duration,
) -> Result<Claim, Failure> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let row = |apart: &str| -> Result<Option<Row>, Failure> {
        let (session, id, turn) = (key.session_id, key.tool_use_id, key.turn);
        let (lease, token) = (lease_ms(lease), token.as_i64());
        let inserted = tx.execute(
            INSERT,
            params![session, id, apart, turn, &digest.0[..], lease, token],
        )?;
        if inserted == 1 {
            return Ok(None);
        }
        tx.execute(LAPSE, params![session, id, apart])?;
        let row = tx
            .query_row(READ, params![session, id, apart], |row| {
                Ok(Row {
                    digest: row.get(0)?,
                    state: row.get(1)?,
                    outcome: row.get(2)?,
                    result: row.get(3)?,
                    turn: row.get(4)?,
                })
            })
            .optional()?;
        // The insert found the row and the same transaction read it: only a table changed by
        // hand gets here.
        row.map(Some)
            .ok_or_else(|| Failure::Data("the row the insert conflicted with is gone".to_owned()))
    };
    let claimed = match row("")? {
        None => Claim::Claimed,
        Some(first) => {
            let running = first.state == "in_progress";
            match beside_first(key.turn, &first.turn, running) {
                BesideFirst::Same => Claim::Seen(remembered(first, key.tool_use_id)?),
                BesideFirst::Other { in_progress } => Claim::OtherTurn { in_progress },
                BesideFirst::Apart => match row(key.turn)? {
                    None => Claim::Claimed,
                    Some(apart) => Claim::Seen(remembered(apart, key.tool_use_id)?),
                },
            }
        }
    };
    tx.commit()?;
    Ok(claimed)
}

/// What a row says of its call.
fn remembered(row: Row, tool_use_id: &str) -> Result<Remembered, Failure> {
    let digest = InputDigest(row.digest.as_slice().try_into().map_err(|_| {
        Failure::Data(format!("its digest has {} bytes, not 32", row.digest.len()))
    })?);
    match (row.state.as_str(), row.outcome, row.result) {
        ("in_progress", _, _) => Ok(Remembered::InProgress { digest }),
        ("interrupted", _, _) => Ok(Remembered::Interrupted { digest }),
        ("answered", Some(outcome), Some(result)) => {
            let outcome = Outcome::ALL
                .into_iter()
                .find(|o| o.as_str() == outcome)
                .ok_or_else(|| Failure::Data(format!("its outcome {outcome:?} is unknown")))?;
            let mut result: ToolResult = serde_json::from_str(&result).map_err(|e| {
                Failure::Data(format!("its result is not a tool_result block's JSON: {e}"))
            })?;
            if result.tool_use_id != tool_use_id {
                tool_use_id.clone_into(&mut result.tool_use_id);
            }
            Ok(Remembered::Answered {
                digest,
                outcome,
                result,
            })
        }
        (state, _, _) => Err(Failure::Data(format!(
            "its state {state:?} is not one this store writes (or an answer lacks its outcome \
             or result)"
        ))),
    }
}

/// A release: forgotten, or interrupted when the tool started; a key not in progress under
/// `token` is left as it is.
fn release(
    connection: &Connection,
    key: CallKey<'_>,
    token: Token,
    tool_started: bool,
) -> Result<(), Failure> {
    let sql = if tool_started { INTERRUPT } else { FORGET };
    let (session, id, turn) = (key.session_id, key.tool_use_id, key.turn);
    connection.execute(sql, params![session, id, turn, token.as_i64()])?;
    Ok(())
}

/// An answer under `token`: recorded when the call is in progress under it; else `Ok(Some)`
/// with what the store found instead (an answer already recorded under the token is `None`:
/// nothing to refuse).
fn answer(
    connection: &Connection,
    key: CallKey<'_>,
    token: Token,
    outcome: Outcome,
    json: &str,
) -> Result<Option<Found>, Failure> {
    let (session, id, turn) = (key.session_id, key.tool_use_id, key.turn);
    let token = token.as_i64();
    let params = params![session, id, turn, outcome.as_str(), json, token];
    if connection.execute(ANSWER, params)? == 1 {
        return Ok(None);
    }
    let holder: Option<(String, Option<i64>)> = connection
        .query_row(HOLDER, params![session, id, turn], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .optional()?;
    Ok(match holder {
        None => Some(Found::Nothing),
        Some((_, made_by)) if made_by != Some(token) => Some(Found::OtherClaim),
        Some((state, _)) if state == "answered" => None,
        Some(_) => Some(Found::Interrupted),
    })
}

impl AnswerStore for SqliteStore {
    fn claim<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        digest: InputDigest,
        lease: Duration,
    ) -> StoreFuture<'a, Result<Claim, StoreError>> {
        StoreFuture::ready(self.run(
            || describe("claim", key),
            |c| claim(c, key, token, digest, lease),
        ))
    }

    fn answered<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        outcome: Outcome,
        result: &'a ToolResult,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        let found = self.run(
            || describe("record the answer of", key),
            |c| {
                let json = serde_json::to_string(result)
                    .map_err(|e| Failure::Data(format!("the result is not JSON: {e}")))?;
                answer(c, key, token, outcome, &json)
            },
        );
        StoreFuture::ready(match found {
            Ok(None) => Ok(()),
            Ok(Some(found)) => Err(fenced(key, found)),
            Err(e) => Err(e),
        })
    }

    fn release<'a>(
        &'a self,
        key: CallKey<'a>,
        token: Token,
        tool_started: bool,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        StoreFuture::ready(self.run(
            || describe("release", key),
            |c| release(c, key, token, tool_started),
        ))
    }

    /// The release, at once, waiting at most [`SqliteStore::ABANDON_BUSY_TIMEOUT`] for the
    /// write lock; on failure the claim lapses with its lease, and `tracing` says so.
    fn abandon(&self, key: CallKey<'_>, token: Token, tool_started: bool) {
        let done = self.run(
            || describe("release the dropped call", key),
            |c| {
                c.busy_timeout(SqliteStore::ABANDON_BUSY_TIMEOUT)?;
                let released = release(c, key, token, tool_started);
                c.busy_timeout(SqliteStore::BUSY_TIMEOUT)?;
                released
            },
        );
        if let Err(error) = done {
            tracing::warn!(target: "toolgate::memory", tool_use_id = key.tool_use_id,
                %error, "the dropped call's claim could not be released; it lapses with its \
                lease (a retry is then answered as interrupted)");
        }
    }

    /// `true`: the store's renewer thread renews held claims (see the module docs).
    fn renews(&self) -> bool {
        true
    }

    fn hold(&self, key: CallKey<'_>, token: Token, lease: Duration) -> Option<Hold> {
        Some(self.hold_in(Held::claim(key), token, lease))
    }
}
