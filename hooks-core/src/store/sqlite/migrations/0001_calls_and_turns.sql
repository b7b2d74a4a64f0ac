-- Schema version 1: the answer memory and the paused turns.
-- Applied by `SqliteStore::open` in one transaction, recorded in `toolgate_schema`.
-- Instants are integers: milliseconds since the Unix epoch, by the wall clock of the process
-- that wrote them.

-- One row per claimed call, keyed by its session's id and its `tool_use` id.
--   state 'in_progress': claimed until `lease_until`; `outcome` and `result` are NULL.
--   state 'answered':    `outcome` (snake_case, as on the audit line) and `result` (the
--                        `tool_result` block as JSON text) are set; `lease_until` is NULL.
--   state 'interrupted': never run again (dropped after its tool started, or its lease ran
--                        out with no answer); `lease_until`, `outcome`, `result` are NULL.
-- A call released before its tool started is deleted (a retry claims it anew).
CREATE TABLE toolgate_calls (
    session_id  TEXT    NOT NULL,
    tool_use_id TEXT    NOT NULL,
    digest      BLOB    NOT NULL CHECK (length(digest) = 32),
    state       TEXT    NOT NULL CHECK (state IN ('in_progress', 'answered', 'interrupted')),
    lease_until INTEGER,
    outcome     TEXT,
    result      TEXT,
    PRIMARY KEY (session_id, tool_use_id)
);

-- One row per paused turn, keyed by its session's id and its turn id; `seq` is the order it
-- was first kept in (what `waiting` lists by).
--   state 'waiting': `lease_until` and `answer` are NULL.
--   state 'taken':   a resume holds it until `lease_until`.
--   state 'resumed': `answer` is the resumed turn's answer as JSON text.
-- `turn` is the `PendingTurn` as JSON text, as first kept.
CREATE TABLE toolgate_pending_turns (
    seq         INTEGER PRIMARY KEY,
    session_id  TEXT    NOT NULL,
    turn_id     TEXT    NOT NULL,
    turn        TEXT    NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN ('waiting', 'taken', 'resumed')),
    lease_until INTEGER,
    answer      TEXT,
    UNIQUE (session_id, turn_id)
);
