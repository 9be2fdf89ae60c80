-- PostgreSQL translation of ../migrations/009-approvals.sql (see the comments there, and src/store/approvals.ts).

CREATE TABLE approvals (
  batch_id TEXT PRIMARY KEY REFERENCES batches (id),
  state TEXT NOT NULL,
  reasons TEXT NOT NULL,
  owner TEXT,
  amount_cents BIGINT NOT NULL DEFAULT 0,
  held_at TEXT NOT NULL,
  preview_at TEXT,
  decided_by TEXT,
  decided_at TEXT,
  decided_via TEXT,
  note TEXT
);

CREATE TABLE released_amounts (
  batch_id TEXT PRIMARY KEY REFERENCES batches (id),
  kind TEXT NOT NULL,
  day TEXT NOT NULL,
  amount_cents BIGINT NOT NULL,
  released_at TEXT NOT NULL
);

CREATE INDEX released_amounts_by_day ON released_amounts (kind, day);
