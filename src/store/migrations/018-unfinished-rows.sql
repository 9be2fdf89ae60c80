-- The cost of a row in the store, fifth part (issue 13 §3; docs/performance.md (d) Tenth pass). Same number and
-- meaning in ../migrations-pg/018-unfinished-rows.sql.
--
-- `unfinished`: TRUE (1) while the row has work left (its state one of UNFINISHED_ROW_STATES, src/store/rows.ts), NULL once
-- it finished; computed by the database from `state`, never written. Here a VIRTUAL column: computed when read,
-- nothing stored. The store's reads of unfinished rows name it (`unfinished`, and the states they want besides).
--
-- rows_unfinished, rows_uncertain and rows_by_holder held `state` (and `holder`): every change of a row's state
-- moved its entry in all three (pending -> in_flight at the intent, then to the end state). One index of the
-- unfinished rows by batch and line now serves every read of them: a batch's (the engine, counts), a holder's
-- (a new life letting its rows go, `remessa status`) and the uncertain ones (`remessa status`) go through it, over
-- the rows with work left and no others. Its entry is written when a row is stored and removed when the row finishes:
-- nothing between.
ALTER TABLE rows ADD COLUMN unfinished BOOLEAN GENERATED ALWAYS AS
  (CASE WHEN state IN ('pending', 'in_flight', 'waiting', 'uncertain') THEN TRUE END) VIRTUAL;
DROP INDEX rows_unfinished;
DROP INDEX rows_uncertain;
DROP INDEX rows_by_holder;
CREATE INDEX rows_unfinished ON rows (batch_id, line) WHERE unfinished;
