-- Schema version 2: the turn each call came from, and a later turn's call that reuses a
-- `tool_use` id kept apart (OpenAI-compatible servers number a turn's calls, so
-- `functions.get_time:0` comes again in a later turn). SQLite cannot change a primary key in
-- place, so the table is made again and its rows copied; the rows of version 1 are first calls
-- without a turn.
--
-- One row per claimed call, keyed by its session's id, its `tool_use` id and `apart`:
--   `turn`:  the turn the call came from (the model response's id), '' for none.
--   `apart`: '' for the session's first call with the id, whatever its turn; for a later
--            turn's call that reuses the id, that turn (equal to `turn`).
-- `state`, `lease_until`, `outcome` and `result` as in version 1.
CREATE TABLE toolgate_calls_v2 (
    session_id  TEXT    NOT NULL,
    tool_use_id TEXT    NOT NULL,
    apart       TEXT    NOT NULL DEFAULT '',
    turn        TEXT    NOT NULL DEFAULT '',
    digest      BLOB    NOT NULL CHECK (length(digest) = 32),
    state       TEXT    NOT NULL CHECK (state IN ('in_progress', 'answered', 'interrupted')),
    lease_until INTEGER,
    outcome     TEXT,
    result      TEXT,
    PRIMARY KEY (session_id, tool_use_id, apart),
    CHECK (apart = '' OR apart = turn)
);
INSERT INTO toolgate_calls_v2
    (session_id, tool_use_id, digest, state, lease_until, outcome, result)
    SELECT session_id, tool_use_id, digest, state, lease_until, outcome, result
    FROM toolgate_calls;
DROP TABLE toolgate_calls;
ALTER TABLE toolgate_calls_v2 RENAME TO toolgate_calls;
