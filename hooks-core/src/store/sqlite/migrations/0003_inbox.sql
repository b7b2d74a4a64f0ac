-- Schema version 3: the approval inbox (its statements are in `store/sqlite/inbox.rs`).
-- Applied by `SqliteStore::open` in one transaction, recorded in `toolgate_schema`.
-- Instants are integers: milliseconds since the Unix epoch by SQLite's clock (`unixepoch`,
-- the wall clock of the process running the statement).
--
-- Every `put` of a paused turn writes, in its transaction, one row per waiting call and one
-- row for the turn, whatever the build's features: a list reads these, never a turn's JSON.
-- A turn kept before this migration has no rows here and is not listed.

-- One row per waiting call of a kept turn; `seq` is the order calls were kept in (a page's
-- cursor).
--   state 'waiting':  no decision ended it (one approval of two may be in `approvals`); past
--                     `expires_at` it reads as expired.
--   state 'approved', 'edited', 'declined': a person ended it (`decided`, and `reason` for a
--                     decline).
--   state 'expired':  recorded by the take that resumes its turn when nobody decided it in time.
-- `digest` is the SHA-256 of the input an approval runs (the edit's once edited); `input` is the
-- effective input as the turn shows it, `edit` the edited input, both JSON text; `asked_by` the
-- asking hooks and reasons (JSON), `rules` their paths, each between two newlines;
-- `approvals` a JSON array of `{"by", "at", "comment"}`, `decided` one such object.
CREATE TABLE toolgate_inbox_calls (
    seq         INTEGER PRIMARY KEY,
    session_id  TEXT    NOT NULL,
    turn_id     TEXT    NOT NULL,
    tool_use_id TEXT    NOT NULL,
    position    INTEGER NOT NULL,
    tool        TEXT    NOT NULL,
    asked_by    TEXT    NOT NULL,
    rules       TEXT    NOT NULL,
    user_id     TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    state       TEXT    NOT NULL
        CHECK (state IN ('waiting', 'approved', 'edited', 'declined', 'expired')),
    digest      TEXT    NOT NULL,
    summary     TEXT    NOT NULL,
    input       TEXT    NOT NULL,
    edit        TEXT,
    approvals   TEXT    NOT NULL DEFAULT '[]',
    decided     TEXT,
    reason      TEXT,
    UNIQUE (session_id, turn_id, tool_use_id)
);
-- A page of one state, or of one tool or one user in a state, read in `seq` order.
CREATE INDEX toolgate_inbox_calls_state ON toolgate_inbox_calls (state, seq);
CREATE INDEX toolgate_inbox_calls_tool ON toolgate_inbox_calls (tool, state, seq);
CREATE INDEX toolgate_inbox_calls_user ON toolgate_inbox_calls (user_id, state, seq);

-- One row per kept turn with waiting calls: `waiting` counts its calls no decision ended yet, so
-- it is ready when that is 0 or `expires_at` has passed; `open` is 1 until a worker finished
-- it through the inbox.
CREATE TABLE toolgate_inbox_turns (
    seq         INTEGER PRIMARY KEY,
    session_id  TEXT    NOT NULL,
    turn_id     TEXT    NOT NULL,
    user_id     TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    expires_at  INTEGER NOT NULL,
    waiting     INTEGER NOT NULL CHECK (waiting >= 0),
    open        INTEGER NOT NULL DEFAULT 1 CHECK (open IN (0, 1)),
    UNIQUE (session_id, turn_id)
);
CREATE INDEX toolgate_inbox_turns_open ON toolgate_inbox_turns (fingerprint, seq) WHERE open = 1;

-- The first answer to each idempotency key (`answer`: a decision's or a refusal's JSON), with
-- the SHA-256 of the request it came with.
CREATE TABLE toolgate_inbox_keys (
    key        TEXT    PRIMARY KEY,
    request    TEXT    NOT NULL,
    answer     TEXT    NOT NULL,
    at         INTEGER NOT NULL
);

-- The tools a dispatcher published, by its fingerprint (`PublishedTools` as JSON text).
CREATE TABLE toolgate_inbox_tools (
    fingerprint TEXT PRIMARY KEY,
    tools       TEXT NOT NULL
);
