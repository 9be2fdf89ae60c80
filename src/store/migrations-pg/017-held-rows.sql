-- PostgreSQL translation of ../migrations/017-held-rows.sql (comments there): the same index.
DROP INDEX rows_by_holder;
CREATE INDEX rows_by_holder ON rows (holder)
  WHERE holder IS NOT NULL AND state IN ('pending', 'in_flight', 'waiting', 'uncertain');
