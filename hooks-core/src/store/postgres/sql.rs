//! Every statement the PostgreSQL stores run, each one atomic step (ARCHITECTURE.md,
//! "Contracts": "What each store promises"). Leases are compared with the server's clock
//! (`now()`, the start of the statement's transaction), never a worker's.
//!
//! Each statement of an operation is safe to send twice: one whose connection is lost is sent
//! again on a new connection, and the server may have run (and committed) the first (the
//! answer lost with the socket). Each says below why running it twice does what running it once
//! does; a claim and a take carry a token, drawn by the caller ([`Token`](crate::store::Token)),
//! that the row keeps, so a second send recognizes the row the first made, and everything that
//! acts on a claim or a take later (an answer, a release, a renewal, a resume) carries it too
//! and acts only on a row still held under it: a claim whose lease ran out and was taken over
//! is fenced off.

/// The advisory lock class of toolgate's locks (`"tool"` in ASCII); the second key is
/// [`MIGRATION_LOCK`], or the chain's number for an audit append.
pub(crate) const LOCK_CLASS: i32 = 0x746f_6f6c;
/// The second key of the migration lock (a session-level lock held while migrating).
pub(crate) const MIGRATION_LOCK: i32 = 0;

/// The bootstrap of the schema table, run under the migration lock when it is missing.
pub(crate) const CREATE_SCHEMA_TABLE: &str = "CREATE TABLE toolgate_schema (
    version    integer     PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)";

/// Whether the schema table exists.
pub(crate) const HAS_SCHEMA_TABLE: &str = "SELECT to_regclass('toolgate_schema') IS NOT NULL";

/// The database's schema version (0 when none was applied).
pub(crate) const SCHEMA_VERSION: &str = "SELECT COALESCE(max(version), 0) FROM toolgate_schema";

/// Records a migration as applied (in its transaction).
pub(crate) const RECORD_VERSION: &str = "INSERT INTO toolgate_schema (version) VALUES ($1)";

/// A claim's first step: insert the row (`$5`: `apart`, `''` for the session's first call with
/// the id; `$6`: the call's turn) as in progress until its lease ends, with the claim's token
/// `$7`, or nothing when the row exists (then [`CLAIM_SEEN`]). A row returned: claimed. Sent
/// twice, the second inserts nothing, and [`CLAIM_SEEN`] finds the row in progress with this
/// claim's token: claimed.
pub(crate) const CLAIM_INSERT: &str = "INSERT INTO toolgate_answers
    (session_id, tool_use_id, apart, turn, digest, state, lease_until, claim_token)
VALUES ($1::text, $2::text, $5::text, $6::text, $3::bytea, 'in_progress',
        now() + make_interval(secs => $4::float8), $7::int8)
ON CONFLICT (session_id, tool_use_id, apart) DO NOTHING
RETURNING true";

/// A claim that inserted nothing: in one statement, the row (`$3`: `apart`) in progress whose
/// lease ended is marked interrupted (the `UPDATE`, which waits for a concurrent change of the
/// row and then looks again), and the row is answered, with its turn and the token of the claim
/// that made it (the caller's own: claimed): the interrupted one, or the row as the statement
/// found it. No row: it was released between the two statements, and the claim starts again.
/// Sent twice, the second finds the row the first left (an interrupted row stays so).
pub(crate) const CLAIM_SEEN: &str = "WITH lapsed AS (
    UPDATE toolgate_answers SET state = 'interrupted', lease_until = NULL, finished_at = now()
    WHERE session_id = $1::text AND tool_use_id = $2::text AND apart = $3::text
      AND state = 'in_progress' AND lease_until < now()
    RETURNING digest, state, outcome, result, turn, claim_token
)
SELECT digest, state, outcome, result, turn, claim_token FROM lapsed
UNION ALL
SELECT digest, state, outcome, result, turn, claim_token FROM toolgate_answers
WHERE session_id = $1::text AND tool_use_id = $2::text AND apart = $3::text
  AND NOT EXISTS (SELECT FROM lapsed)";

/// `answered`: only the call of turn `$5` (the first call's row or the one kept apart: at most
/// one is that turn's) still in progress under the claim of token `$6` becomes answered, and
/// the statement answers `recorded`; else it answers the row's state and the token of the claim
/// that made it (no row: none), so the caller refuses an answer its claim no longer holds the
/// call for (taken over: interrupted by another claim). Sent twice, the second finds the row
/// answered under its own token, which is not refused; no other claim can hold the row in
/// between (it is free again only after a [`FORGET`], which comes instead of an answer).
pub(crate) const ANSWERED: &str = "WITH done AS (
    UPDATE toolgate_answers
    SET state = 'answered', outcome = $3::text, result = $4::text, lease_until = NULL,
        finished_at = now()
    WHERE session_id = $1::text AND tool_use_id = $2::text AND turn = $5::text
      AND state = 'in_progress' AND claim_token = $6::int8
    RETURNING true
)
SELECT 'recorded'::text AS state, $6::int8 AS claim_token FROM done
UNION ALL
SELECT state, claim_token FROM toolgate_answers
WHERE session_id = $1::text AND tool_use_id = $2::text AND turn = $5::text
  AND NOT EXISTS (SELECT FROM done)";

/// `release` of a call (of turn `$3`) whose tool did not start: forgotten, if still in progress
/// and made by the claim of token `$4`. Sent twice, the second must not forget another claim of
/// the row made in between (its call would then run alongside a third): the token keeps it to
/// the caller's own row.
pub(crate) const FORGET: &str = "DELETE FROM toolgate_answers
WHERE session_id = $1::text AND tool_use_id = $2::text AND turn = $3::text
  AND state = 'in_progress' AND claim_token = $4::int8";

/// `release` of a call (of turn `$3`) whose tool started: interrupted, if still in progress
/// under the claim of token `$4`. Sent twice, the second changes nothing (an interrupted row
/// stays so).
pub(crate) const INTERRUPT: &str = "UPDATE toolgate_answers
SET state = 'interrupted', lease_until = NULL, finished_at = now()
WHERE session_id = $1::text AND tool_use_id = $2::text AND turn = $3::text
  AND state = 'in_progress' AND claim_token = $4::int8";

/// The renewal of many claims in one statement: each row of the arrays (session id `$1`,
/// `tool_use` id `$2`, turn `$3`, the claim's token `$4`) still in progress under its token has
/// its lease extended to `$5` seconds from now, by the server's clock; the statement answers the
/// tokens it extended (a claim missing from them was taken over, or finished). Sent twice, the
/// second extends the same leases from a later now: what renewing does.
pub(crate) const RENEW_CLAIMS: &str = "UPDATE toolgate_answers AS a
SET lease_until = now() + make_interval(secs => $5::float8)
FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[]) AS h(session_id, tool_use_id, turn, token)
WHERE a.session_id = h.session_id AND a.tool_use_id = h.tool_use_id AND a.turn = h.turn
  AND a.state = 'in_progress' AND a.claim_token = h.token
RETURNING a.claim_token";

/// The renewal of many takes in one statement: each row of the arrays (session id `$1`, turn
/// id `$2`, the take's token `$3`) still taken under its token has its lease extended to `$4`
/// seconds from now; the statement answers the tokens it extended. Sent twice: as
/// [`RENEW_CLAIMS`].
pub(crate) const RENEW_TAKES: &str = "UPDATE toolgate_pending AS p
SET lease_until = now() + make_interval(secs => $4::float8)
FROM unnest($1::text[], $2::text[], $3::int8[]) AS h(session_id, turn_id, token)
WHERE p.session_id = h.session_id AND p.turn_id = h.turn_id
  AND p.state = 'taken' AND p.take_token = h.token
RETURNING p.take_token";

/// `put`: a turn kept under a key already kept is left as it is. Sent twice, the second finds
/// the first's row and leaves it (and writes no inbox row). In the same statement, a turn newly
/// kept gets the inbox's rows (`migrations/0004_inbox.sql`): its own (`$4` user, `$5`
/// fingerprint, expiring `$6` milliseconds from now, `$8` calls waiting) and one per waiting
/// call (`$7`, a JSON array of `store/waiting.rs`'s rows), in every build.
pub(crate) const PUT: &str = "WITH kept AS (
    INSERT INTO toolgate_pending (session_id, turn_id, turn, state)
    VALUES ($1::text, $2::text, $3::text, 'waiting')
    ON CONFLICT (session_id, turn_id) DO NOTHING
    RETURNING session_id, turn_id, date_trunc('milliseconds', now()) AS at
), turn AS (
    INSERT INTO toolgate_inbox_turns
        (session_id, turn_id, user_id, fingerprint, expires_at, waiting)
    SELECT session_id, turn_id, $4::text, $5::text,
           at + $6::float8 * interval '1 millisecond', $8::int4
    FROM kept WHERE $8::int4 > 0
)
INSERT INTO toolgate_inbox_calls
    (session_id, turn_id, tool_use_id, position, tool, asked_by, rules, user_id, fingerprint,
     created_at, expires_at, state, digest, summary, input)
SELECT kept.session_id, kept.turn_id, c.tool_use_id, c.position, c.tool, c.asked_by, c.rules,
       $4::text, $5::text, kept.at, kept.at + $6::float8 * interval '1 millisecond', 'waiting',
       c.digest, c.summary, c.input
FROM kept, json_to_recordset($7::text::json) AS c(tool_use_id text, position int4, tool text,
     asked_by text, rules text, digest text, summary text, input text)";

/// `take`: in one statement, a waiting turn (or one whose take's lease ended) becomes this
/// caller's, with its token `$4` (`what` = `turn`, with the turn); else the row's state and
/// answer as the statement found them (`waiting` or `taken`: another caller took it;
/// `resumed`: its answer); no row: missing. Of any number of callers at once, exactly one
/// `UPDATE` changes the row. Sent twice, the second finds the turn taken with its own token and
/// takes it again (its lease from now): the turn, not "another caller took it".
pub(crate) const TAKE: &str = "WITH taken AS (
    UPDATE toolgate_pending
    SET state = 'taken', lease_until = now() + make_interval(secs => $3::float8),
        take_token = $4::int8
    WHERE session_id = $1::text AND turn_id = $2::text
      AND (state = 'waiting'
           OR (state = 'taken' AND (lease_until < now() OR take_token = $4::int8)))
    RETURNING turn
)
SELECT 'turn' AS what, turn AS body FROM taken
UNION ALL
SELECT state, answer FROM toolgate_pending
WHERE session_id = $1::text AND turn_id = $2::text AND NOT EXISTS (SELECT FROM taken)";

/// `resumed`: only a turn taken under the take of token `$4` becomes resumed, with its answer,
/// and the statement answers `recorded`; else the row's state and its take's token (no row:
/// none), so the caller refuses a resume whose take was lost. Sent twice, the second finds the
/// turn resumed under its own token, which is not refused.
pub(crate) const RESUMED: &str = "WITH done AS (
    UPDATE toolgate_pending
    SET state = 'resumed', answer = $3::text, lease_until = NULL
    WHERE session_id = $1::text AND turn_id = $2::text AND state = 'taken'
      AND take_token = $4::int8
    RETURNING true
)
SELECT 'recorded'::text AS state, $4::int8 AS take_token FROM done
UNION ALL
SELECT state, take_token FROM toolgate_pending
WHERE session_id = $1::text AND turn_id = $2::text AND NOT EXISTS (SELECT FROM done)";

/// `put_back`: only a turn taken by the take of token `$3` waits again. Sent twice, the second
/// must not put back a take made in between by another caller (a third would then resume the
/// turn alongside it): the token keeps it to the caller's own take.
pub(crate) const PUT_BACK: &str = "UPDATE toolgate_pending
SET state = 'waiting', lease_until = NULL
WHERE session_id = $1::text AND turn_id = $2::text AND state = 'taken'
  AND take_token = $3::int8";

/// `waiting`: the session's waiting turns, oldest first (a read: safe to send twice).
pub(crate) const WAITING: &str = "SELECT turn FROM toolgate_pending
WHERE session_id = $1::text AND state = 'waiting' ORDER BY place";

/// An audit append's transaction starts.
pub(crate) const BEGIN: &str = "BEGIN";
/// And ends.
pub(crate) const COMMIT: &str = "COMMIT";

/// The chain's lock, held until the transaction ends: appends to one chain are serialized
/// across every writer, and each append's statement then reads the chain's last line after the
/// previous holder committed.
pub(crate) const LOCK_CHAIN: &str = "SELECT pg_advisory_xact_lock($1::int4, $2::int4)";

/// Appends one line to chain `$1`: `$2` is the record's JSON object without its closing `}`,
/// with a `,` after its last member (as the files write it), and the server adds `"prev":"…"}`
/// with the SHA-256 of the chain's last line and its `\n` (64 zeros for the first line), at
/// `seq` one past it. `$3`, `$4`: the writer and the line's number in its queue; a line already
/// written (a batch written again after its connection was lost, its commit's outcome unknown)
/// is not written twice.
pub(crate) const APPEND: &str = "WITH last AS (
    SELECT seq, line FROM toolgate_audit WHERE chain = $1::text ORDER BY seq DESC LIMIT 1
)
INSERT INTO toolgate_audit (chain, seq, line, writer_id, writer_n)
SELECT $1::text,
       COALESCE((SELECT seq FROM last), 0) + 1,
       $2::bytea || decode('\"prev\":\"' || COALESCE(
           (SELECT encode(sha256(line || '\\x0a'::bytea), 'hex') FROM last),
           repeat('0', 64)) || '\"}', 'escape'),
       $3::int8, $4::int8
ON CONFLICT (writer_id, writer_n) DO NOTHING";

/// Up to `$3` lines of chain `$1` after `seq` `$2`, in order (a verification or an export
/// reads a chain in such pages; a read: safe to send twice).
pub(crate) const LINES_AFTER: &str = "SELECT seq, line FROM toolgate_audit
WHERE chain = $1::text AND seq > $2::int8 ORDER BY seq LIMIT $3::int8";

/// The line at position `$2` (0-based, in `seq` order) of chain `$1` (a read: safe to send
/// twice).
pub(crate) const LINE_AT: &str = "SELECT line FROM toolgate_audit
WHERE chain = $1::text ORDER BY seq OFFSET $2::int8 LIMIT 1";
