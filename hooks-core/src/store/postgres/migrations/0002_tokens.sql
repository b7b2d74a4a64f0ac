-- toolgate's tables, schema version 2: the token of the claim or take that holds a row, so that
-- a statement sent again after its connection was lost (the server may or may not have run it)
-- recognizes its own row (`store/postgres/sql.rs`). Both columns are NULL in rows written by
-- schema version 1, which no token matches.

-- The claim that made the row (`CLAIM_INSERT`): a number each claim draws at random.
ALTER TABLE toolgate_answers ADD COLUMN claim_token bigint;

-- The take that holds the turn while it is `taken` (`TAKE`): a number each take draws at random.
ALTER TABLE toolgate_pending ADD COLUMN take_token bigint;
