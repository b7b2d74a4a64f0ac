-- toolgate's tables, schema version 1. `PostgresStore::connect` applies it once per database, in
-- one transaction, under the advisory lock (1953460076, 0), and records it in `toolgate_schema`.
--
-- Every statement the store runs on these tables is listed in `store/postgres/sql.rs`.

-- The answer memory (`AnswerStore`): one row per call, keyed by (session_id, tool_use_id).
CREATE TABLE toolgate_answers (
    session_id  text        NOT NULL,
    tool_use_id text        NOT NULL,
    -- The SHA-256 of the input's JSON text (`InputDigest::of`), 32 bytes.
    digest      bytea       NOT NULL CHECK (octet_length(digest) = 32),
    state       text        NOT NULL CHECK (state IN ('in_progress', 'answered', 'interrupted')),
    -- While in progress: when the claim's lease ends, by the server's clock.
    lease_until timestamptz,
    -- When answered: the outcome (`ok`, `blocked`, ...) and the `tool_result` block's JSON text.
    outcome     text,
    result      text,
    claimed_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    PRIMARY KEY (session_id, tool_use_id),
    CHECK (state <> 'in_progress' OR lease_until IS NOT NULL),
    CHECK (state <> 'answered' OR (outcome IS NOT NULL AND result IS NOT NULL))
);

-- The turns paused for a person (`PendingStore`), keyed by (session_id, turn_id).
CREATE TABLE toolgate_pending (
    session_id  text        NOT NULL,
    turn_id     text        NOT NULL,
    -- The order turns were kept in (`waiting` lists them oldest first).
    place       bigserial,
    -- The `PendingTurn`'s JSON text.
    turn        text        NOT NULL,
    state       text        NOT NULL CHECK (state IN ('waiting', 'taken', 'resumed')),
    -- While taken: when the take's lease ends, by the server's clock.
    lease_until timestamptz,
    -- When resumed: the `Resumed` answer's JSON text.
    answer      text,
    kept_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, turn_id),
    CHECK (state <> 'taken' OR lease_until IS NOT NULL),
    CHECK (state <> 'resumed' OR answer IS NOT NULL)
);
CREATE INDEX toolgate_pending_waiting ON toolgate_pending (session_id, place)
    WHERE state = 'waiting';

-- The audit trail (`PostgresAuditSink`): one row per line, two chains (`audit_log`, one line per
-- tool_use; `session_summaries`, one per session), each chained exactly as the audit files are:
-- `line` is the line's bytes without its `\n`, its last member `"prev"`, the SHA-256 of the
-- previous line of the chain (by `seq`) with its `\n`, or 64 zeros for the first line.
--
-- Lines are appended only, under the transaction-scoped advisory lock (1953460076, 1) for
-- `audit_log` and (1953460076, 2) for `session_summaries`: the store never updates or deletes a
-- row of this table. To make the trail append-only for the application, let another role own the
-- tables and grant the application's role only what it uses, e.g. as the owner:
--
--     GRANT SELECT ON toolgate_schema TO app;
--     GRANT SELECT, INSERT, UPDATE, DELETE ON toolgate_answers, toolgate_pending TO app;
--     GRANT USAGE ON SEQUENCE toolgate_pending_place_seq TO app;
--     GRANT SELECT, INSERT ON toolgate_audit TO app;
--     REVOKE UPDATE, DELETE, TRUNCATE ON toolgate_audit FROM app;
--
-- (connect once as the owner first, so the migrations run as it; the owner and superusers can
-- still change rows: the hash chain and a head kept elsewhere
-- are what shows it, `PostgresAuditSink::verify`).
CREATE TABLE toolgate_audit (
    chain      text        NOT NULL CHECK (chain IN ('audit_log', 'session_summaries')),
    seq        bigint      NOT NULL CHECK (seq > 0),
    line       bytea       NOT NULL,
    -- Which writer appended the line, and its number in that writer's queue: a batch whose
    -- commit was lost with its connection is written again without duplicating a line.
    writer_id  bigint      NOT NULL,
    writer_n   bigint      NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (chain, seq),
    UNIQUE (writer_id, writer_n)
);
