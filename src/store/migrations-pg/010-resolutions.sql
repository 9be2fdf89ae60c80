-- PostgreSQL translation of ../migrations/010-resolutions.sql (see the comments there: a record per settlement,
-- never changed nor deleted).

CREATE TABLE resolutions (
  batch_id TEXT NOT NULL,
  line INTEGER NOT NULL,
  from_state TEXT NOT NULL,
  to_state TEXT NOT NULL,
  step TEXT,
  error_code TEXT,
  error_message TEXT,
  resolved_by TEXT NOT NULL,
  resolved_at TEXT NOT NULL,
  note TEXT NOT NULL,
  PRIMARY KEY (batch_id, line),
  FOREIGN KEY (batch_id, line) REFERENCES rows (batch_id, line)
);
