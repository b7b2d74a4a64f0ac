//! The inbox's statements on PostgreSQL (feature `inbox`; the tables of
//! `migrations/0004_inbox.sql`; `put`'s rows are written by `sql::PUT`). Instants are the
//! server's clock (`now()`, the start of the statement's transaction), cut to whole
//! milliseconds; they are read back as milliseconds since the Unix epoch.

/// A call's columns, in `CallRow`'s order, instants as milliseconds; `{input}` and `{edit}` are
/// the input's columns, or `''` and `NULL` for a list, which shows no input.
pub(super) const COLUMNS: &str = "c.seq, c.session_id, c.turn_id, c.tool_use_id, c.position, \
     c.tool, c.asked_by, c.user_id, c.fingerprint, \
     (extract(epoch FROM c.created_at) * 1000)::int8, \
     (extract(epoch FROM c.expires_at) * 1000)::int8, c.state, c.digest, c.summary, {input}, \
     {edit}, c.approvals, c.decided, c.reason";

/// The answer kept under a key, and the request it came with.
pub(super) const KEPT_KEY: &str =
    "SELECT request, answer FROM toolgate_inbox_keys WHERE key = $1::text";

/// The key kept with its answer, in the decision's transaction: a unique violation when a
/// concurrent request with the key committed first (a concurrent one is waited for).
pub(super) const KEEP_KEY: &str = "INSERT INTO toolgate_inbox_keys (key, request, answer)
VALUES ($1::text, $2::text, $3::text)";

/// The turn's state and the server's clock (whole milliseconds since the epoch), its row
/// share-locked until the decision commits: a take for a resume
/// (which locks it for update, skipping locked rows) cannot take the turn while a decision on
/// one of its calls is in flight, and a decision waits for a take that holds it.
pub(super) const LOCK_TURN: &str = "SELECT state,
    (extract(epoch FROM date_trunc('milliseconds', now())) * 1000)::int8
FROM toolgate_pending WHERE session_id = $1::text AND turn_id = $2::text FOR SHARE";

/// The call's row, locked until the decision commits (a second decider waits, then reads what
/// the first wrote).
pub(super) fn lock_call() -> String {
    format!(
        "SELECT {} FROM toolgate_inbox_calls c \
         WHERE c.session_id = $1::text AND c.turn_id = $2::text AND c.tool_use_id = $3::text \
         FOR UPDATE",
        columns(true)
    )
}

/// The decision written: one conditional `UPDATE` that changes the call only while it waits,
/// for the digest the person was shown, before its expiry by the server's clock (with the row
/// locked, the rules found it so); a call it ends is one less waiting in its turn. Changing no
/// row is an error (a division by zero), which aborts the transaction: the key's answer and
/// the audit line sent after it are not committed either.
pub(super) const WRITE_CALL: &str = "WITH written AS (
    UPDATE toolgate_inbox_calls
    SET state = $1::text, digest = $2::text, summary = $3::text, edit = $4::text,
        approvals = $5::text, decided = $6::text, reason = $7::text
    WHERE seq = $8::int8 AND state = 'waiting' AND digest = $9::text AND expires_at > now()
    RETURNING session_id, turn_id, state
), counted AS (
    UPDATE toolgate_inbox_turns t SET waiting = t.waiting - 1
    FROM written w
    WHERE w.state <> 'waiting' AND t.session_id = w.session_id AND t.turn_id = w.turn_id
)
SELECT 1 / count(*) FROM written";

/// The oldest open turn of fingerprint `$1` that is ready (each call decided, or its expiry
/// passed) and takeable (waiting, or taken with its lease ended), taken for `$2` seconds in the
/// same statement (with a token `$3` of its own, so no other take's put back matches it); a turn
/// locked by a decision in flight (or another taker) is skipped.
pub(super) const TAKE_READY: &str = "WITH pick AS (
    SELECT p.session_id, p.turn_id FROM toolgate_inbox_turns t
    JOIN toolgate_pending p ON p.session_id = t.session_id AND p.turn_id = t.turn_id
    WHERE t.open AND t.fingerprint = $1::text AND (t.waiting = 0 OR t.expires_at <= now())
      AND (p.state = 'waiting' OR (p.state = 'taken' AND p.lease_until < now()))
    ORDER BY t.seq
    LIMIT 1
    FOR UPDATE OF p SKIP LOCKED
)
UPDATE toolgate_pending p
SET state = 'taken', lease_until = now() + make_interval(secs => $2::float8),
    take_token = $3::int8
FROM pick WHERE p.session_id = pick.session_id AND p.turn_id = pick.turn_id
RETURNING p.session_id, p.turn_id, p.turn";

/// The taken turn's calls nobody decided: expired, in the take's transaction.
pub(super) const EXPIRE: &str = "UPDATE toolgate_inbox_calls SET state = 'expired'
WHERE session_id = $1::text AND turn_id = $2::text AND state = 'waiting'";

/// A turn's calls with their inputs, in order.
pub(super) fn calls_of() -> String {
    format!(
        "SELECT {} FROM toolgate_inbox_calls c \
         WHERE c.session_id = $1::text AND c.turn_id = $2::text ORDER BY c.position",
        columns(true)
    )
}

/// A turn's state and names (its JSON only when it has no row of its own: kept before the
/// index), and now.
pub(super) const TURN: &str = "SELECT p.state, t.user_id, t.fingerprint,
    CASE WHEN t.seq IS NULL THEN p.turn END,
    (extract(epoch FROM date_trunc('milliseconds', now())) * 1000)::int8
FROM toolgate_pending p LEFT JOIN toolgate_inbox_turns t
  ON t.session_id = p.session_id AND t.turn_id = p.turn_id
WHERE p.session_id = $1::text AND p.turn_id = $2::text";

/// A turn taken under the take of token `$4` resumed, with its answer, and no longer open;
/// the statement answers `recorded`, or, when it changed nothing, the row's state and its
/// take's token (no row: none), as `RESUMED` does. Sent twice, the second finds the turn
/// resumed under its own token.
pub(super) const FINISHED: &str = "WITH resumed AS (
    UPDATE toolgate_pending SET state = 'resumed', answer = $3::text, lease_until = NULL
    WHERE session_id = $1::text AND turn_id = $2::text AND state = 'taken'
      AND take_token = $4::int8
    RETURNING session_id
), closed AS (
    UPDATE toolgate_inbox_turns SET open = false
    WHERE session_id = $1::text AND turn_id = $2::text AND EXISTS (SELECT FROM resumed)
)
SELECT 'recorded'::text AS state, $4::int8 AS take_token FROM resumed
UNION ALL
SELECT state, take_token FROM toolgate_pending
WHERE session_id = $1::text AND turn_id = $2::text AND NOT EXISTS (SELECT FROM resumed)";

/// Tools published under a fingerprint (published again, they replace what was kept).
pub(super) const PUBLISH: &str = "INSERT INTO toolgate_inbox_tools (fingerprint, tools)
VALUES ($1::text, $2::text) ON CONFLICT (fingerprint) DO UPDATE SET tools = excluded.tools";
pub(super) const PUBLISHED: &str =
    "SELECT tools FROM toolgate_inbox_tools WHERE fingerprint = $1::text";

/// The second key of the `decisions` chain's advisory lock (after `audit_log`'s 1 and
/// `session_summaries`' 2).
pub(super) const DECISIONS_LOCK: i32 = 3;

/// The columns of a call with (`true`) or without its input.
pub(super) fn columns(with_input: bool) -> String {
    let (input, edit) = if with_input {
        ("c.input", "c.edit")
    } else {
        ("''", "NULL")
    };
    COLUMNS.replace("{input}", input).replace("{edit}", edit)
}
