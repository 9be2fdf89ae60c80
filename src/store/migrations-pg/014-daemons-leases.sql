-- PostgreSQL translation of ../migrations/014-daemons-leases.sql (see the comments there, and src/store/leases.ts).
-- lease_until_ms is on the database's clock: extract(epoch FROM clock_timestamp()) * 1000.
CREATE TABLE daemons (
  name TEXT PRIMARY KEY,
  lease_until_ms DOUBLE PRECISION NOT NULL,
  started_at TEXT NOT NULL,
  last_seen TEXT NOT NULL,
  host TEXT,
  pid INTEGER,
  stopped_at TEXT
);

ALTER TABLE rows ADD COLUMN holder TEXT;
CREATE INDEX rows_by_holder ON rows (holder, state) WHERE holder IS NOT NULL;

CREATE TABLE file_claims (
  claim_key TEXT NOT NULL UNIQUE,
  work_id TEXT NOT NULL,
  holder TEXT NOT NULL,
  state TEXT NOT NULL,
  source TEXT NOT NULL,
  claimed_at TEXT NOT NULL
);
CREATE INDEX file_claims_by_work ON file_claims (work_id);
CREATE INDEX file_claims_by_holder ON file_claims (holder);

ALTER TABLE intakes ADD COLUMN answer_holder TEXT;
