-- PostgreSQL translation of ../migrations/007-webhook-events.sql (see the comments and rules there).

CREATE TABLE webhook_events (
  id TEXT PRIMARY KEY,
  event_type TEXT NOT NULL,
  correlation_id TEXT,
  end_to_end_id TEXT,
  claim_id TEXT,
  our_number TEXT,
  payment_id TEXT,
  txid TEXT,
  occurred_at TEXT,
  received_at TEXT NOT NULL,
  webhook_id TEXT,
  payload TEXT NOT NULL,
  applied_at TEXT
);

CREATE INDEX webhook_events_unapplied ON webhook_events (occurred_at) WHERE applied_at IS NULL;
CREATE INDEX webhook_events_correlation_id ON webhook_events (correlation_id) WHERE correlation_id IS NOT NULL;
CREATE INDEX webhook_events_end_to_end_id ON webhook_events (end_to_end_id) WHERE end_to_end_id IS NOT NULL;
