-- The cost of a row in the store, fifth part (issue 13 §3; docs/performance.md (d), fifteenth pass). Same number and
-- meaning in ../migrations-pg/021-batch-number.sql.
--
-- Every batch gets a number (`batches.batch_no`) that never changes and is never reused, and the per-row tables
-- (rows, steps, natural_keys, and resolutions, whose key is a row's) refer to their batch by it instead of the text
-- id (`20261129T111843Z-5778454b`, 26 bytes a row in the table and again in every index of it, on PostgreSQL in every
-- row version). Batches are numbered here in created order; a new one takes the next number (SQLite: one more than
-- the highest, in the transaction that creates it, batches being never deleted; PostgreSQL: a sequence, never
-- handed out twice). The store maps an id to its number once per batch (src/store/store.ts `batchNo`): what it
-- returns names batches by their ids, as before. `rows.duplicate_of_batch` (the batch of another row, read by people)
-- keeps the text id; so do the other tables (intakes, approvals, things, ...).
--
-- The tables are rebuilt with the same columns, keys, indexes (batch_no in place of batch_id) and foreign keys; every
-- row is copied as it is. The fixed-width columns come first (batch_no, line, then amount_cents, duplicate_of_line,
-- attempts): on PostgreSQL an 8-byte integer after texts is padded to its alignment, and first it is not.
ALTER TABLE batches ADD COLUMN batch_no INTEGER NOT NULL DEFAULT 0;
UPDATE batches SET batch_no = n.no
FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY created_at, id) AS no FROM batches) AS n
WHERE n.id = batches.id;
CREATE UNIQUE INDEX batches_by_no ON batches (batch_no);

-- One data line of a batch (the columns' meanings: 001, 003, 012, 014, 015).
CREATE TABLE rows_by_no (
  batch_no INTEGER NOT NULL REFERENCES batches (batch_no),
  line INTEGER NOT NULL,
  amount_cents INTEGER,
  duplicate_of_line INTEGER,
  natural_key TEXT,
  idempotency_key TEXT,
  record TEXT NOT NULL,
  cells TEXT,
  parsed TEXT,
  state TEXT NOT NULL,
  current_step TEXT,
  error_code TEXT,
  error_message TEXT,
  outputs TEXT,
  -- For a duplicate: the batch (its text id) and line of the row that owns the natural key.
  duplicate_of_batch TEXT,
  updated_at TEXT NOT NULL,
  holder TEXT,
  PRIMARY KEY (batch_no, line)
) WITHOUT ROWID;
INSERT INTO rows_by_no (batch_no, line, amount_cents, duplicate_of_line, natural_key, idempotency_key, record, cells,
  parsed, state, current_step, error_code, error_message, outputs, duplicate_of_batch, updated_at, holder)
SELECT b.batch_no, r.line, r.amount_cents, r.duplicate_of_line, r.natural_key, r.idempotency_key, r.record, r.cells,
  r.parsed, r.state, r.current_step, r.error_code, r.error_message, r.outputs, r.duplicate_of_batch, r.updated_at,
  r.holder
FROM rows r JOIN batches b ON b.id = r.batch_id;

-- One bank call of a row (001).
CREATE TABLE steps_by_no (
  batch_no INTEGER NOT NULL,
  line INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  step TEXT NOT NULL,
  state TEXT NOT NULL,
  output TEXT,
  error_code TEXT,
  error_message TEXT,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (batch_no, line, step),
  FOREIGN KEY (batch_no, line) REFERENCES rows_by_no (batch_no, line)
) WITHOUT ROWID;
INSERT INTO steps_by_no (batch_no, line, attempts, step, state, output, error_code, error_message, updated_at)
SELECT b.batch_no, s.line, s.attempts, s.step, s.state, s.output, s.error_code, s.error_message, s.updated_at
FROM steps s JOIN batches b ON b.id = s.batch_id;

-- Which row owns a natural key, an explicit idempotency key or a thing's last change, by digest (016).
CREATE TABLE natural_keys_by_no (
  batch_no INTEGER NOT NULL,
  line INTEGER NOT NULL,
  key_digest BLOB NOT NULL PRIMARY KEY
) WITHOUT ROWID;
INSERT INTO natural_keys_by_no (batch_no, line, key_digest)
SELECT b.batch_no, k.line, k.key_digest FROM natural_keys k JOIN batches b ON b.id = k.batch_id;

-- Rows settled by a person (010).
CREATE TABLE resolutions_by_no (
  batch_no INTEGER NOT NULL,
  line INTEGER NOT NULL,
  from_state TEXT NOT NULL,
  to_state TEXT NOT NULL,
  step TEXT,
  error_code TEXT,
  error_message TEXT,
  resolved_by TEXT NOT NULL,
  resolved_at TEXT NOT NULL,
  note TEXT NOT NULL,
  PRIMARY KEY (batch_no, line),
  FOREIGN KEY (batch_no, line) REFERENCES rows_by_no (batch_no, line)
) WITHOUT ROWID;
INSERT INTO resolutions_by_no (batch_no, line, from_state, to_state, step, error_code, error_message, resolved_by,
  resolved_at, note)
SELECT b.batch_no, x.line, x.from_state, x.to_state, x.step, x.error_code, x.error_message, x.resolved_by,
  x.resolved_at, x.note
FROM resolutions x JOIN batches b ON b.id = x.batch_id;

-- The children first: a table another one refers to is dropped once nothing refers to it.
DROP TABLE resolutions;
DROP TABLE steps;
DROP TABLE natural_keys;
DROP TABLE rows;
-- Renaming a table renames it in the foreign keys that name it (steps_by_no and resolutions_by_no then name rows).
ALTER TABLE rows_by_no RENAME TO rows;
ALTER TABLE steps_by_no RENAME TO steps;
ALTER TABLE natural_keys_by_no RENAME TO natural_keys;
ALTER TABLE resolutions_by_no RENAME TO resolutions;

-- The indexes of rows as they were (003, 015, 017), with batch_no in place of batch_id.
CREATE INDEX rows_by_owner ON rows (duplicate_of_batch, duplicate_of_line) WHERE duplicate_of_batch IS NOT NULL;
CREATE INDEX rows_unfinished ON rows (batch_no, state) WHERE state IN ('pending', 'in_flight', 'waiting', 'uncertain');
CREATE INDEX rows_uncertain ON rows (state) WHERE state = 'uncertain';
CREATE INDEX rows_by_holder ON rows (holder)
  WHERE holder IS NOT NULL AND state IN ('pending', 'in_flight', 'waiting', 'uncertain');
