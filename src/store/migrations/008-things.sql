-- The retorno (issue 11 §2-3): what the bank did with each thing remessa created, after its row succeeded.
-- Module: src/store/things.ts, whose header draws the rules. In short:
-- - A thing is a charge, QR code, Pix QR payment, bill payment or key claim that a succeeded row created; it is
--   recorded lazily from succeeded rows (never from a row that did not succeed), once per (kind, key).
-- - `status` is its status as last known from the bank; every change of it is one `thing_changes` row, whichever
--   source (webhook event, reconciliation, a void row) told it first; a later source that tells the same status only
--   adds its event id and the amounts it knows to that change.
-- - A final status (charge Paid / Voided, Pix payment settled or failed, QR code CONCLUDED, ...) is never left.

CREATE TABLE things (
  id INTEGER PRIMARY KEY,
  -- charge | qr-code | pix-payment | bill-payment | claim
  kind TEXT NOT NULL,
  -- Its identity at the bank: correlationId (charge, qr-code), endToEndId (pix-payment), payment id (bill-payment),
  -- claim id (claim).
  key TEXT NOT NULL,
  correlation_id TEXT,
  end_to_end_id TEXT,
  claim_id TEXT,
  your_number TEXT,
  our_number TEXT,
  -- The row that created it.
  batch_id TEXT NOT NULL,
  line INTEGER NOT NULL,
  amount_cents INTEGER,
  payer_name TEXT,
  payer_document TEXT,
  -- Status as last known from the bank (first: the one the row's answer carried).
  status TEXT NOT NULL,
  -- When the bank says the current status began; NULL while it is the row's own answer.
  status_at TEXT,
  -- 1 once nothing more is awaited from the bank for it (see src/store/things.ts: "unsettled").
  settled INTEGER NOT NULL DEFAULT 0,
  -- 1 once its status is final (never left).
  final INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (kind, key)
);
CREATE INDEX things_unsettled ON things (created_at) WHERE settled = 0;
CREATE INDEX things_open ON things (kind, created_at) WHERE final = 0;

-- One change of a thing's status: one line of the retorno file of `day`.
CREATE TABLE thing_changes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  thing_id INTEGER NOT NULL REFERENCES things (id),
  old_status TEXT NOT NULL,
  new_status TEXT NOT NULL,
  -- When it happened, by the bank (ISO 8601 UTC).
  occurred_at TEXT NOT NULL,
  -- When remessa learned it, and the retorno day (yyyy-mm-dd, Brasília) that reports it.
  recorded_at TEXT NOT NULL,
  day TEXT NOT NULL,
  -- event | reconcile | row: the source that told it first.
  source TEXT NOT NULL,
  -- JSON array of the ids of every event that told this change.
  event_ids TEXT NOT NULL DEFAULT '[]',
  paid_cents INTEGER,
  discount_cents INTEGER,
  interest_cents INTEGER,
  fine_cents INTEGER,
  payer_name TEXT,
  payer_document TEXT,
  -- When the line was last completed by a later source (its day's file is then written again).
  updated_at TEXT NOT NULL
);
CREATE INDEX thing_changes_by_thing ON thing_changes (thing_id, seq);
CREATE INDEX thing_changes_by_day ON thing_changes (day, seq);

-- Succeeded rows already turned into things (or looked at: a row of a kind that creates none, a void of a charge
-- remessa did not create), so the lazy derivation reads each row once.
CREATE TABLE thing_rows_seen (
  batch_id TEXT NOT NULL,
  line INTEGER NOT NULL,
  PRIMARY KEY (batch_id, line)
) WITHOUT ROWID;

-- Which retorno days must be written again: `version` goes up with every line added or completed (in the transaction
-- that does it); the writer records the version it wrote. A crash between a change and its file leaves the day with
-- version > written_version, and the next pass writes it.
CREATE TABLE retorno_days (
  day TEXT PRIMARY KEY,
  version INTEGER NOT NULL DEFAULT 0,
  written_version INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- Webhook events about things remessa did not create (kept by the receiver; marked applied here without a change
-- after FOREIGN_GRACE_MS), listed by `remessa status`.
CREATE TABLE foreign_events (
  id TEXT PRIMARY KEY,
  event_type TEXT NOT NULL,
  -- correlationId or endToEndId the event names.
  subject TEXT,
  marked_at TEXT NOT NULL
) WITHOUT ROWID;
