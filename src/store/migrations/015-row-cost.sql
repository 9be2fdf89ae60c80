-- The cost of a row in the store, second part (issue 13 §3; docs/performance.md (d)). Same number and meaning in
-- ../migrations-pg/015-row-cost.sql. Nothing stored before is rewritten: every row keeps what it has, and both the old
-- and the new shapes are read (src/store/store.ts, "Row storage").
--
-- batches.key_namespace: the UUIDv5 namespace of the account the batch's idempotency keys were derived in
-- (src/store/keys.ts `accountNamespace`), set when the batch is created. A row of such a batch whose key is exactly
-- `deriveIdempotencyKey(key_namespace, kind, natural_key)` stores NULL as its idempotency_key, and the key is derived
-- again when read: from the batch's own namespace, so a later change of the account id changes no stored row's key.
-- A row with any other key (an explicit IdempotencyKey column) stores it; every row of a batch without a namespace
-- (stored before this migration) keeps its stored key.
ALTER TABLE batches ADD COLUMN key_namespace TEXT;

-- Also from 015 on, with no change of schema (src/store/store.ts "Row storage", src/store/outputs-codec.ts): a row's
-- `outputs` and `parsed` are stored in a compact form (pairs of key number and value, values that repeat a cell by
-- the cell's number) and its `natural_key` by reference to the cell it starts with; the plain JSON of earlier rows
-- is read as before. A succeeded row keeps no step record for a step done at its first attempt whose output the
-- row's `outputs` hold whole (a succeeded row's steps are all done: the record said nothing more).
--
-- rows_by_state (batch_id, state, line) held every row forever to serve the lookups of a batch's unfinished rows
-- (is any left, how many: `unfinishedBatches`, `countUnfinished`, which name the states as these literals so that
-- the planner can use it), which this partial index serves with an entry per row only while the row has work left.
-- The engine's pages of rows to drive go by the primary key (batch_id, line), as before.
DROP INDEX rows_by_state;
CREATE INDEX rows_unfinished ON rows (batch_id, state) WHERE state IN ('pending', 'in_flight', 'waiting', 'uncertain');

-- rows_uncertain served the people's list of uncertain rows (`remessa status`), but held pending and in-flight rows
-- too: its entry moved at every intent (pending -> in_flight) and again when the row finished, one index page more
-- in the commits of the hot path. Now only the uncertain rows, which are all it is read for; the lookups of a batch's
-- unfinished rows have rows_unfinished.
DROP INDEX rows_uncertain;
CREATE INDEX rows_uncertain ON rows (state) WHERE state = 'uncertain';
