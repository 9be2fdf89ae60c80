-- Rate limits shared by every daemon of one PostgreSQL store (issue 13; module src/queue/shared-rate.ts). SQLite has
-- one daemon and keeps the in-memory limiter (src/queue/rate-limit.ts): on SQLite these tables stay empty, and exist
-- so that both engines have the same schema.
-- - rate_starts: one row per request start admitted, on the database's clock (milliseconds since the epoch), per
--   limit (`group_name`: an endpoint group, or '*' for the overall limit); pruned once out of every window.
-- - rate_groups: per limit, what every daemon honours before admitting: the pause after a 429 (`paused_until_ms`),
--   the ceiling lowered by 429s (AIMD: `ceiling`, NULL = the setting; `changed_at_ms`, `decreased_at_ms`) and the
--   even pace (`pace_at_ms`, the theoretical time of the next start).
CREATE TABLE rate_starts (
  group_name TEXT NOT NULL,
  at_ms REAL NOT NULL,
  daemon TEXT NOT NULL
);
CREATE INDEX rate_starts_group_at ON rate_starts (group_name, at_ms);
CREATE TABLE rate_groups (
  group_name TEXT PRIMARY KEY,
  paused_until_ms REAL NOT NULL DEFAULT 0,
  ceiling INTEGER,
  changed_at_ms REAL NOT NULL DEFAULT 0,
  decreased_at_ms REAL,
  pace_at_ms REAL
);
