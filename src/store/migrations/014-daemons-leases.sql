-- Several daemons sharing one store (issue 13 §1; src/store/leases.ts says the rules). Same name and meaning in
-- ../migrations-pg/. On SQLite there is one daemon: these columns stay empty (NULL holder: this daemon holds all)
-- and the tables exist so that both engines have the same schema.
--
-- daemons: one row per daemon name (`store.daemonName`). `lease_until_ms` is the end of its lease in milliseconds
-- since the epoch, on the DATABASE's clock on PostgreSQL (every daemon compares with one clock); a daemon whose lease
-- has passed is dead to the others, which take over what it holds. `stopped_at`: it released its lease on a graceful
-- stop (what it held was let go then).
CREATE TABLE daemons (
  name TEXT PRIMARY KEY,
  lease_until_ms REAL NOT NULL,
  started_at TEXT NOT NULL,
  last_seen TEXT NOT NULL,
  host TEXT,
  pid INTEGER,
  stopped_at TEXT
);

-- The daemon driving the row now (NULL: nobody; a row is claimed before any step of it is sent).
ALTER TABLE rows ADD COLUMN holder TEXT;
CREATE INDEX rows_by_holder ON rows (holder, state) WHERE holder IS NOT NULL;

-- A file taken from the shared inbox: the claim is inserted BEFORE the file is renamed into the work area, keyed by
-- the content's SHA-256 (one taking of given bytes at a time: a second daemon finding the same bytes leaves them).
-- `work_id` is the work folder (and intake) id the holder renames the file into; `state` taking -> taken; the claim
-- is deleted once the file is archived (the same bytes dropped again later are a new taking).
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

-- The daemon writing the intake's answer now (claimed before the files are written, cleared once it is recorded).
ALTER TABLE intakes ADD COLUMN answer_holder TEXT;
