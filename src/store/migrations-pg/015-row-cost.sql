-- PostgreSQL translation of ../migrations/015-row-cost.sql (the cost of a row in the store, second part, issue 13 §3):
-- the same column and indexes. Comments there.
ALTER TABLE batches ADD COLUMN key_namespace TEXT;

DROP INDEX rows_by_state;
CREATE INDEX rows_unfinished ON rows (batch_id, state) WHERE state IN ('pending', 'in_flight', 'waiting', 'uncertain');
DROP INDEX rows_uncertain;
CREATE INDEX rows_uncertain ON rows (state) WHERE state = 'uncertain';
