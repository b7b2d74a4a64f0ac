-- Schema version 4: the token of the claim (the take) that made or holds a row, so the store
-- acts only for the claim that holds a call now: an answer, a release or a renewal of a claim
-- whose lease ran out and was taken over (its call marked interrupted by another claim) finds
-- no row of its token and changes nothing, and the answer is refused. Rows of earlier versions
-- have none (NULL), which no claim's token matches.
--
-- From this version the leases (`lease_until`, milliseconds since the Unix epoch) are set and
-- compared by SQLite's own clock in SQL (`unixepoch('subsec')`), never a time a process passes.

-- The claim that made the row: a number each claim draws (`Token`), as a signed integer.
ALTER TABLE toolgate_calls ADD COLUMN claim_token INTEGER;

-- The take that holds the turn while it is `taken`, and that resumed it.
ALTER TABLE toolgate_pending_turns ADD COLUMN take_token INTEGER;
