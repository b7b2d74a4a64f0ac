-- Schema version 3: the turn each call came from, and a later turn's call that reuses a
-- `tool_use` id kept apart (OpenAI-compatible servers number a turn's calls, so
-- `functions.get_time:0` comes again in a later turn). The rows of versions 1 and 2 are first
-- calls without a turn.
--
--   turn:  the turn the call came from (the model response's id), '' for none.
--   apart: '' for the session's first call with the id, whatever its turn; for a later turn's
--          call that reuses the id, that turn (equal to `turn`).
--
-- The primary key becomes (session_id, tool_use_id, apart); `answered` and `release` find a
-- call by (session_id, tool_use_id, turn), at most one row.
ALTER TABLE toolgate_answers
    ADD COLUMN apart text NOT NULL DEFAULT '',
    ADD COLUMN turn  text NOT NULL DEFAULT '',
    ADD CHECK (apart = '' OR apart = turn),
    DROP CONSTRAINT toolgate_answers_pkey,
    ADD PRIMARY KEY (session_id, tool_use_id, apart);
