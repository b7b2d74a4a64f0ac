//! The inbox's index of waiting calls in the SQLite file (`toolgate_inbox_turns`,
//! `toolgate_inbox_calls`, schema version 2): written by every [`put`](crate::store::PendingStore::put)
//! of a paused turn in the put's own transaction, in every build (ARCHITECTURE.md, "Contracts":
//! "What each store promises", "The inbox"); read by the inbox (`inbox.rs`, feature `inbox`).

use rusqlite::{Connection, params};

use crate::approval::pending::PendingTurn;
use crate::store::waiting::waiting_rows;

use super::Failure;

/// Now by SQLite's clock, in whole milliseconds since the Unix epoch.
const CLOCK: &str = "SELECT CAST(round(unixepoch('subsec') * 1000) AS INTEGER)";

/// The turn's row: ready once `waiting` is 0 or `expires_at` has passed.
const INSERT_TURN: &str = "INSERT INTO toolgate_inbox_turns \
     (session_id, turn_id, user_id, fingerprint, expires_at, waiting) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6)";

/// One waiting call's row.
const INSERT_CALL: &str = "INSERT INTO toolgate_inbox_calls \
     (session_id, turn_id, tool_use_id, position, tool, asked_by, rules, user_id, fingerprint, \
      created_at, expires_at, state, digest, summary, input) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'waiting', ?12, ?13, ?14)";

/// Now by SQLite's clock (the process's wall clock), in whole milliseconds.
pub(super) fn clock(c: &Connection) -> Result<i64, Failure> {
    Ok(c.query_row(CLOCK, [], |row| row.get(0))?)
}

/// Writes the rows of `turn`, just kept, on `c` (inside the put's transaction): its waiting
/// calls, kept now by SQLite's clock and expiring after the turn's ttl.
pub(super) fn index(c: &Connection, turn: &PendingTurn) -> Result<(), Failure> {
    let rows = waiting_rows(turn);
    if rows.is_empty() {
        return Ok(());
    }
    let now = clock(c)?;
    let ttl = i64::try_from(turn.ttl().as_millis()).unwrap_or(i64::MAX);
    let expires_at = now.saturating_add(ttl);
    c.execute(
        INSERT_TURN,
        params![
            turn.session_id,
            turn.turn_id,
            turn.user_id,
            turn.fingerprint,
            expires_at,
            rows.len() as i64
        ],
    )?;
    let mut insert = c.prepare(INSERT_CALL)?;
    for row in rows {
        insert.execute(params![
            turn.session_id,
            turn.turn_id,
            row.tool_use_id,
            row.position,
            row.tool,
            row.asked_by,
            row.rules,
            turn.user_id,
            turn.fingerprint,
            now,
            expires_at,
            row.digest,
            row.summary,
            row.input
        ])?;
    }
    Ok(())
}
