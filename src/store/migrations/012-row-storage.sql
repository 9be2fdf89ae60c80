-- The cost of a row in the store (issue 13 §3; docs/performance.md (d)). Same name and effect in ../migrations-pg/.
--
-- batches.columns: JSON array, the record key of each cell in header order (null: a cell the record leaves out), as
-- the reader maps the header. A row whose record is exactly its cells read by these columns (each named cell, trimmed,
-- when not empty) stores '' as its record, and the record is derived from `cells` when read (src/store/store.ts
-- `deriveRecord`). Any other record, and every row of a batch without columns (stored before this migration), keeps
-- its record as JSON: both shapes are read.
ALTER TABLE batches ADD COLUMN columns TEXT;

-- A succeeded row's merged `outputs` hold its steps' outputs; a step output held there whole (every key, same value
-- and type) is not kept on its step record too (src/store/store.ts `recordStepDone`). Done here for the rows stored
-- before; an output a later step overwrote in part stays on its step.
UPDATE steps SET output = NULL
WHERE output IS NOT NULL
  AND EXISTS (
    SELECT 1 FROM rows r
    WHERE r.batch_id = steps.batch_id AND r.line = steps.line AND r.state = 'succeeded' AND r.outputs IS NOT NULL
      AND json_valid(r.outputs) AND json_valid(steps.output) AND json_type(steps.output) = 'object'
      AND NOT EXISTS (
        SELECT 1 FROM json_each(steps.output) o
        WHERE json_type(r.outputs, o.fullkey) IS NOT o.type OR json_extract(r.outputs, o.fullkey) IS NOT o.value
      )
  );
