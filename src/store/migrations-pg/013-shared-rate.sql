-- PostgreSQL translation of ../migrations/013-shared-rate.sql (see the comments there, and src/queue/shared-rate.ts).
CREATE TABLE rate_starts (
  group_name TEXT NOT NULL,
  at_ms DOUBLE PRECISION NOT NULL,
  daemon TEXT NOT NULL
);
CREATE INDEX rate_starts_group_at ON rate_starts (group_name, at_ms);
CREATE TABLE rate_groups (
  group_name TEXT PRIMARY KEY,
  paused_until_ms DOUBLE PRECISION NOT NULL DEFAULT 0,
  ceiling INTEGER,
  changed_at_ms DOUBLE PRECISION NOT NULL DEFAULT 0,
  decreased_at_ms DOUBLE PRECISION,
  pace_at_ms DOUBLE PRECISION
);
