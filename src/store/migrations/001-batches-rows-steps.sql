-- remessa's own state: batches, their rows, each row's steps, and which natural keys are owned by which row.
-- Applied once, in a transaction, and recorded in schema_migrations (see src/store/db.ts).

-- One input file. id = SHA-256 (hex) of the file's bytes: the same content is the same batch, whatever its name.
CREATE TABLE batches (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  -- File name as dropped (the first time); the result file is named after the name the caller gives.
  file_name TEXT NOT NULL,
  -- JSON of the csv Dialect (delimiter, decimal mark, encoding, bom).
  dialect TEXT NOT NULL,
  -- JSON array of the input header, in file order: the result file repeats these columns.
  header TEXT NOT NULL,
  -- ingesting | ready | running | done | rejected (see src/store/store.ts)
  status TEXT NOT NULL,
  -- Why the file as a whole was rejected (status rejected): a stable code and a message with line and column.
  error_code TEXT,
  error_message TEXT,
  -- all-or-nothing | send-valid: the policy applied when the batch became ready.
  policy TEXT,
  row_count INTEGER NOT NULL DEFAULT 0,
  invalid_count INTEGER NOT NULL DEFAULT 0,
  -- Highest line stored: ingestion after a crash resumes after it (lines come in increasing order).
  last_line INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  -- JSON of the counts by status when the batch last finished (the live counts come from rows).
  counts TEXT
);

-- One data line of a batch. The row state machine is drawn in src/store/rows.ts.
CREATE TABLE rows (
  batch_id TEXT NOT NULL REFERENCES batches (id),
  line INTEGER NOT NULL,
  natural_key TEXT,
  idempotency_key TEXT,
  -- JSON object: column name (after mapping) -> cell text, as given to the kind's parse (kept to re-parse).
  record TEXT NOT NULL,
  -- JSON array: the raw cells in header order, echoed in the result file.
  cells TEXT,
  -- JSON of the parsed row (for people and `status`; the engine re-parses `record`, which is exact).
  parsed TEXT,
  -- pending | in_flight | succeeded | failed | rejected | duplicate | uncertain
  state TEXT NOT NULL,
  -- The step being worked on while in_flight / the step that stayed unknown when uncertain.
  current_step TEXT,
  error_code TEXT,
  error_message TEXT,
  -- JSON object: merged outputs of the done steps (result columns).
  outputs TEXT,
  amount_cents INTEGER,
  -- For a duplicate: the row that owns the natural key.
  duplicate_of_batch TEXT,
  duplicate_of_line INTEGER,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (batch_id, line)
) WITHOUT ROWID;

CREATE INDEX rows_by_state ON rows (batch_id, state, line);
CREATE INDEX rows_uncertain ON rows (state) WHERE state IN ('uncertain', 'pending', 'in_flight');

-- One bank call of a row. state: intent | done | failed | unknown | not_sent (see src/store/rows.ts).
CREATE TABLE steps (
  batch_id TEXT NOT NULL,
  line INTEGER NOT NULL,
  step TEXT NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  output TEXT,
  error_code TEXT,
  error_message TEXT,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (batch_id, line, step),
  FOREIGN KEY (batch_id, line) REFERENCES rows (batch_id, line)
) WITHOUT ROWID;

-- Which row owns a natural key of a kind. A row owns its key while it is pending, in flight, uncertain or
-- succeeded; a later row with the same key is then a duplicate. A failed or rejected owner gives the key up.
CREATE TABLE natural_keys (
  kind TEXT NOT NULL,
  natural_key TEXT NOT NULL,
  batch_id TEXT NOT NULL,
  line INTEGER NOT NULL,
  PRIMARY KEY (kind, natural_key)
) WITHOUT ROWID;
