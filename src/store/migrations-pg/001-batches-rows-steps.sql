-- PostgreSQL translation of ../migrations/001-batches-rows-steps.sql (the same tables, columns, keys and indexes;
-- the comments there say what each column means). Differences, by rule (src/store/pg-driver.ts):
-- BIGINT for cents and for counts that may grow; TEXT for ISO times and JSON; no WITHOUT ROWID (PostgreSQL has no rowid).

CREATE TABLE batches (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  file_name TEXT NOT NULL,
  dialect TEXT NOT NULL,
  header TEXT NOT NULL,
  status TEXT NOT NULL,
  error_code TEXT,
  error_message TEXT,
  policy TEXT,
  row_count BIGINT NOT NULL DEFAULT 0,
  invalid_count BIGINT NOT NULL DEFAULT 0,
  last_line BIGINT NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  counts TEXT
);

CREATE TABLE rows (
  batch_id TEXT NOT NULL REFERENCES batches (id),
  line INTEGER NOT NULL,
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
  amount_cents BIGINT,
  duplicate_of_batch TEXT,
  duplicate_of_line INTEGER,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (batch_id, line)
);

CREATE INDEX rows_by_state ON rows (batch_id, state, line);
CREATE INDEX rows_uncertain ON rows (state) WHERE state IN ('uncertain', 'pending', 'in_flight');

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
);

CREATE TABLE natural_keys (
  kind TEXT NOT NULL,
  natural_key TEXT NOT NULL,
  batch_id TEXT NOT NULL,
  line INTEGER NOT NULL,
  PRIMARY KEY (kind, natural_key)
);
