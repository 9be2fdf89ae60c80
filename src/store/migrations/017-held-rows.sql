-- The cost of a row in the store, fourth part (issue 13 §3; docs/performance.md (d)). Same number and meaning in
-- ../migrations-pg/017-held-rows.sql.
--
-- rows_by_holder (014) held an entry for every row a daemon ever claimed, finished rows too, and a new one at every
-- change of the row's state. Every query that looks rows up by holder also asks for the states with work left
-- (src/store/leases.ts: a new life letting its rows go, `remessa status` counting what each daemon holds), so the
-- index now holds only those rows, by holder, as rows_unfinished does by batch. A row's holder is kept when it
-- finishes (who drove it), as before.
DROP INDEX rows_by_holder;
CREATE INDEX rows_by_holder ON rows (holder)
  WHERE holder IS NOT NULL AND state IN ('pending', 'in_flight', 'waiting', 'uncertain');
