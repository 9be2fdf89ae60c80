-- Core tables of the sandbox: recorded events (for webhook delivery) and the effects ledger ("exactly once" proofs).

-- One row per event the sandbox causes (CHARGE_PAID, PIX_RECEIVED, ...). `id` is the stable event id sent to
-- receivers; `seq` orders events. Delivery state lives in the webhooks area's own tables, keyed by event id.
CREATE TABLE events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  type TEXT NOT NULL,
  payload TEXT NOT NULL,
  occurred_at TEXT NOT NULL
);
CREATE INDEX events_type ON events (type, seq);

-- One row per effect (a charge created, a bill paid, a Pix paid, a claim cancelled, ...). `key` is the idempotency
-- key or correlation id that caused it; tests count rows per key to prove an effect happened exactly once.
CREATE TABLE effects (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  key TEXT NOT NULL,
  ref TEXT,
  at TEXT NOT NULL
);
CREATE INDEX effects_kind_key ON effects (kind, key);
