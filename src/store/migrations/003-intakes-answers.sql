-- Each taking of a file is its own batch, with its own answer (issue 8 §2). Before this migration a batch was
-- identified by the SHA-256 of its content, so a second file with the same bytes was answered with the first one's
-- answer, and a second file with the same name overwrote the first one's answer. See src/store/intakes.ts.

-- One taking of a file: a file moved from the inbox into the work area (or given to `remessa run`). id = the
-- taking's id, `<UTC stamp of the take>-<8 hex>` (the work area's folder name); new batches have id = intakes.id.
CREATE TABLE intakes (
  id TEXT PRIMARY KEY,
  -- The batch its rows were stored in; null while not read yet, or when the file was rejected before reading.
  batch_id TEXT,
  -- The outbox folder of its answers: the kind, the unknown inbox folder, or _unknown.
  folder TEXT NOT NULL,
  -- The file's name as dropped, and its path as dropped (relative to the inbox, or as given to `run`).
  file_name TEXT NOT NULL,
  source TEXT NOT NULL,
  -- SHA-256 (hex) of the content: no longer the identity, kept to tell a person that a file repeats an earlier one.
  content_sha256 TEXT NOT NULL,
  taken_at TEXT NOT NULL,
  -- Base name of every answer file (`<answer_name>.result.csv`, `<answer_name>/` for PDFs, ...) and of the archived
  -- input: the dropped name (shortened to fit the file system) + '.' + the taking's id. Never reused.
  answer_name TEXT NOT NULL,
  -- result | rejected: what was answered; null before the first answer.
  answer_type TEXT,
  -- Versions of the answer written: 0 none, 1 `<answer_name>.result.csv`, N > 1 `<answer_name>.result.vN.csv`.
  answer_version INTEGER NOT NULL DEFAULT 0,
  -- batches.changes when the current version was read from the store: the answer is stale while they differ.
  answered_changes INTEGER NOT NULL DEFAULT 0,
  answered_at TEXT,
  -- SHA-256 of the current version's result file: a pass that would write the same bytes again writes nothing.
  answer_sha256 TEXT,
  -- The version being written and the changes it was read at: set before its files are written, cleared after.
  -- A crash in between leaves it; the next writer adopts the files when both are there and nothing changed since.
  writing_version INTEGER,
  writing_changes INTEGER
);
CREATE INDEX intakes_by_batch ON intakes (batch_id) WHERE batch_id IS NOT NULL;
CREATE INDEX intakes_by_content ON intakes (content_sha256);

-- Bumped in the same transaction as every change of a row's outcome, in its own batch and in every batch holding a
-- duplicate of it (src/store/store.ts transitionRow): the durable "answer is stale" mark.
ALTER TABLE batches ADD COLUMN changes INTEGER NOT NULL DEFAULT 0;
CREATE INDEX rows_by_owner ON rows (duplicate_of_batch, duplicate_of_line) WHERE duplicate_of_batch IS NOT NULL;

-- Batches from before: one intake each, answered under the names used then (`<stem>.result.csv`).
INSERT INTO intakes (id, batch_id, folder, file_name, source, content_sha256, taken_at, answer_name, answer_type,
  answer_version, answered_at)
SELECT id, id, kind, file_name, file_name, id, created_at,
  CASE WHEN lower(file_name) LIKE '%.csv' AND length(file_name) > 4 THEN substr(file_name, 1, length(file_name) - 4)
    ELSE file_name END,
  CASE status WHEN 'done' THEN 'result' WHEN 'rejected' THEN 'rejected' END,
  CASE WHEN status IN ('done', 'rejected') THEN 1 ELSE 0 END,
  finished_at
FROM batches;
