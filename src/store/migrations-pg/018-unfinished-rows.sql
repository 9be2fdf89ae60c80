-- PostgreSQL translation of ../migrations/018-unfinished-rows.sql (comments there): the same column and index, and
-- room on rows' pages for their updates.
--
-- Why it matters most here: an UPDATE that changes no column any index holds (a key, an expression or a partial
-- index's condition) and finds room on the row's page is HOT: the new version goes on the same page, no index gets
-- an entry, and the dead version's space is reused on the page. `state` and `holder` were held by three indexes, so
-- each of a row's updates (claim, intent, answer) wrote a new version on another page and an entry in every index,
-- the primary key's included. Now only the last (the row finishes: `unfinished` goes NULL) changes an indexed column.
--
-- `unfinished` is STORED (PostgreSQL 15 has no virtual generated column): true, one byte, while the row has work
-- left; NULL, no byte, once it finished. The column is computed again at each update; an update that leaves it as it
-- was leaves it unchanged for HOT. Adding it rewrites the table once.
--
-- fillfactor 50: a row is stored at ingestion with half its final size (the answers' outputs come later), so pages
-- are filled to half by inserts; the row's later versions then fit on its own page. Measured on 20,000 bills:
-- docs/performance.md (d) Tenth pass.
ALTER TABLE rows ADD COLUMN unfinished BOOLEAN GENERATED ALWAYS AS
  (CASE WHEN state IN ('pending', 'in_flight', 'waiting', 'uncertain') THEN true END) STORED;
DROP INDEX rows_unfinished;
DROP INDEX rows_uncertain;
DROP INDEX rows_by_holder;
CREATE INDEX rows_unfinished ON rows (batch_id, line) WHERE unfinished;
ALTER TABLE rows SET (fillfactor = 50);
