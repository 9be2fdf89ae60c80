-- Money controls (src/store/approvals.ts draws the batch state machine they belong to).

-- One row per batch that was held for a person's approval: why it waits, whose file it is, and what was decided.
CREATE TABLE approvals (
  batch_id TEXT PRIMARY KEY REFERENCES batches (id),
  -- awaiting | approved | rejected
  state TEXT NOT NULL,
  -- JSON array of why it waits: {"code": "APPROVAL_REQUIRED" | "LIMIT_PER_FILE" | "LIMIT_PER_DAY", "message": ...}
  reasons TEXT NOT NULL,
  -- The OS owner name of the dropped file (the maker), when known.
  owner TEXT,
  -- Sum of the amounts of the rows that would be paid, when held (cents).
  amount_cents INTEGER NOT NULL DEFAULT 0,
  held_at TEXT NOT NULL,
  -- When the preview was written (a decision is taken only once a person could see it).
  preview_at TEXT,
  decided_by TEXT,
  decided_at TEXT,
  -- command | marker
  decided_via TEXT,
  note TEXT
) WITHOUT ROWID;

-- The amounts let go to the bank, per batch, counted against the per-day limit of their kind. Written in the same
-- transaction that moves the batch to running (nothing of a batch is sent before), never deleted.
CREATE TABLE released_amounts (
  batch_id TEXT PRIMARY KEY REFERENCES batches (id),
  kind TEXT NOT NULL,
  -- Calendar day in America/Sao_Paulo (yyyy-mm-dd) of the release.
  day TEXT NOT NULL,
  amount_cents INTEGER NOT NULL,
  released_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX released_amounts_by_day ON released_amounts (kind, day);
