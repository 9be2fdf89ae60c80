-- Rows settled by a person (`remessa resolve`): an `uncertain` row someone checked with the bank and declared
-- succeeded or failed. One record per settlement; a row is settled at most once (it is terminal afterwards), and the
-- record is never changed nor deleted: it is the answer to "who said this was paid, when, and why".
CREATE TABLE resolutions (
  batch_id TEXT NOT NULL,
  line INTEGER NOT NULL,
  -- The state the row was in (uncertain) and the one the person gave it (succeeded | failed).
  from_state TEXT NOT NULL,
  to_state TEXT NOT NULL,
  -- What made the row uncertain, as it stood when settled: the step and the error the person checked.
  step TEXT,
  error_code TEXT,
  error_message TEXT,
  -- Who (--by, default the OS user), when (ISO 8601 UTC) and why (--note, required).
  resolved_by TEXT NOT NULL,
  resolved_at TEXT NOT NULL,
  note TEXT NOT NULL,
  PRIMARY KEY (batch_id, line),
  FOREIGN KEY (batch_id, line) REFERENCES rows (batch_id, line)
) WITHOUT ROWID;
