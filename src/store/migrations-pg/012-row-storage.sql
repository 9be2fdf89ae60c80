-- PostgreSQL translation of ../migrations/012-row-storage.sql (the cost of a row in the store, issue 13 §3): the
-- same column, the same data change. Comments there.
ALTER TABLE batches ADD COLUMN columns TEXT;

-- A succeeded row's step output held whole in the row's merged outputs (jsonb containment: every key, same value).
UPDATE steps SET output = NULL
FROM rows r
WHERE r.batch_id = steps.batch_id AND r.line = steps.line AND r.state = 'succeeded'
  AND steps.output IS NOT NULL AND r.outputs IS NOT NULL
  AND jsonb_typeof(steps.output::jsonb) = 'object'
  AND r.outputs::jsonb @> steps.output::jsonb;
