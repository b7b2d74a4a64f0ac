-- toolgate's tables, schema version 4: the approval inbox. `PostgresStore::connect` applies it
-- once per database, in one transaction, under the advisory lock (1953460076, 0), and records it
-- in `toolgate_schema`. Its statements are in `store/postgres/inbox.rs` (and `put` in `sql.rs`).
--
-- Every `put` of a paused turn writes, in its statement, one row per waiting call and one row
-- for the turn, whatever the build's features: a list reads these, never a turn's JSON. A turn
-- kept before this migration has no rows here and is not listed. Instants are the server's
-- clock (`now()`), cut to whole milliseconds.

-- One row per waiting call of a kept turn; `seq` is the order calls were kept in (a page's
-- cursor).
--   state 'waiting':  no decision ended it (one approval of two may be in `approvals`); past
--                     `expires_at` it reads as expired.
--   state 'approved', 'edited', 'declined': a person ended it (`decided`, and `reason` for a
--                     decline).
--   state 'expired':  recorded by the take that resumes its turn when nobody decided it in time.
-- `digest` is the SHA-256 of the input an approval runs (the edit's once edited); `input` the
-- effective input as the turn shows it and `edit` the edited input, JSON text; `asked_by` the
-- asking hooks and reasons (JSON text), `rules` their paths, each between two newlines;
-- `approvals` a JSON array of `{"by", "at", "comment"}`, `decided` one such object (JSON text).
CREATE TABLE toolgate_inbox_calls (
    seq         bigserial   PRIMARY KEY,
    session_id  text        NOT NULL,
    turn_id     text        NOT NULL,
    tool_use_id text        NOT NULL,
    position    integer     NOT NULL,
    tool        text        NOT NULL,
    asked_by    text        NOT NULL,
    rules       text        NOT NULL,
    user_id     text        NOT NULL,
    fingerprint text        NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    state       text        NOT NULL
        CHECK (state IN ('waiting', 'approved', 'edited', 'declined', 'expired')),
    digest      text        NOT NULL,
    summary     text        NOT NULL,
    input       text        NOT NULL,
    edit        text,
    approvals   text        NOT NULL DEFAULT '[]',
    decided     text,
    reason      text,
    UNIQUE (session_id, turn_id, tool_use_id)
);
-- A page of one state, or of one tool or one user in a state, read in `seq` order.
CREATE INDEX toolgate_inbox_calls_state ON toolgate_inbox_calls (state, seq);
CREATE INDEX toolgate_inbox_calls_tool ON toolgate_inbox_calls (tool, state, seq);
CREATE INDEX toolgate_inbox_calls_user ON toolgate_inbox_calls (user_id, state, seq);

-- One row per kept turn with waiting calls: `waiting` counts its calls no decision ended yet, so
-- it is ready when that is 0 or `expires_at` has passed; `open` until a worker finished it
-- through the inbox.
CREATE TABLE toolgate_inbox_turns (
    seq         bigserial   PRIMARY KEY,
    session_id  text        NOT NULL,
    turn_id     text        NOT NULL,
    user_id     text        NOT NULL,
    fingerprint text        NOT NULL,
    expires_at  timestamptz NOT NULL,
    waiting     integer     NOT NULL CHECK (waiting >= 0),
    open        boolean     NOT NULL DEFAULT true,
    UNIQUE (session_id, turn_id)
);
CREATE INDEX toolgate_inbox_turns_open ON toolgate_inbox_turns (fingerprint, seq) WHERE open;

-- The first answer to each idempotency key (a decision's or a refusal's JSON), with the SHA-256
-- of the request it came with; kept in the decision's transaction.
CREATE TABLE toolgate_inbox_keys (
    key        text        PRIMARY KEY,
    request    text        NOT NULL,
    answer     text        NOT NULL,
    at         timestamptz NOT NULL DEFAULT now()
);

-- The tools a dispatcher published, by its fingerprint (`PublishedTools` as JSON text).
CREATE TABLE toolgate_inbox_tools (
    fingerprint text PRIMARY KEY,
    tools       text NOT NULL
);

-- The people's decisions are a third chain of the audit trail, `decisions` (its advisory lock
-- (1953460076, 3)), appended in each decision's own transaction.
ALTER TABLE toolgate_audit DROP CONSTRAINT toolgate_audit_chain_check;
ALTER TABLE toolgate_audit ADD CONSTRAINT toolgate_audit_chain_check
    CHECK (chain IN ('audit_log', 'session_summaries', 'decisions'));
