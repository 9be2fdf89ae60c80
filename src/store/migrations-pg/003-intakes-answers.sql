-- PostgreSQL translation of ../migrations/003-intakes-answers.sql (see the comments there). `changes` counters are
-- BIGINT: they only grow.

CREATE TABLE intakes (
  id TEXT PRIMARY KEY,
  batch_id TEXT,
  folder TEXT NOT NULL,
  file_name TEXT NOT NULL,
  source TEXT NOT NULL,
  content_sha256 TEXT NOT NULL,
  taken_at TEXT NOT NULL,
  answer_name TEXT NOT NULL,
  answer_type TEXT,
  answer_version INTEGER NOT NULL DEFAULT 0,
  answered_changes BIGINT NOT NULL DEFAULT 0,
  answered_at TEXT,
  answer_sha256 TEXT,
  writing_version INTEGER,
  writing_changes BIGINT
);
CREATE INDEX intakes_by_batch ON intakes (batch_id) WHERE batch_id IS NOT NULL;
CREATE INDEX intakes_by_content ON intakes (content_sha256);

ALTER TABLE batches ADD COLUMN changes BIGINT NOT NULL DEFAULT 0;
CREATE INDEX rows_by_owner ON rows (duplicate_of_batch, duplicate_of_line) WHERE duplicate_of_batch IS NOT NULL;

-- Batches from before (none in a new PostgreSQL store; kept so that both engines' migrations say the same).
INSERT INTO intakes (id, batch_id, folder, file_name, source, content_sha256, taken_at, answer_name, answer_type,
  answer_version, answered_at)
SELECT id, id, kind, file_name, file_name, id, created_at,
  CASE WHEN lower(file_name) LIKE '%.csv' AND length(file_name) > 4 THEN substr(file_name, 1, length(file_name) - 4)
    ELSE file_name END,
  CASE status WHEN 'done' THEN 'result' WHEN 'rejected' THEN 'rejected' END,
  CASE WHEN status IN ('done', 'rejected') THEN 1 ELSE 0 END,
  finished_at
FROM batches;
