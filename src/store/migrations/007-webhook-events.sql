-- Events the bank sent to remessa's webhook receiver (src/webhooks/receiver.ts), kept raw and durably before the
-- receiver answers 2xx. Written by the receiver; read and marked applied by the retorno (issue 11 §2-3).
-- Module: src/store/webhook-events.ts. Rules:
-- - One row per event id: a delivery of an id already here is ignored (the bank delivers at least once).
-- - A row is never deleted or rewritten by the receiver; only `applied_at` changes, once, NULL -> a time.
-- - Events arrive in any order and may concern things remessa did not create: all are kept.
CREATE TABLE webhook_events (
  -- The bank's stable event id (envelope `id`, header `x-webhook-event-id`).
  id TEXT PRIMARY KEY,
  -- Event type (envelope `event`): CHARGE_PAID, PIX_RECEIVED, PIX_PAYMENT_UPDATED, CHARGE_EXPIRED, ...
  event_type TEXT NOT NULL,
  -- Identifiers of the thing the event is about, as far as the payload carries them (NULL when it does not).
  correlation_id TEXT,
  end_to_end_id TEXT,
  claim_id TEXT,
  our_number TEXT,
  -- Pix payment id (PIX_PAYMENT_UPDATED `data.id`) and Pix txid (PIX_RECEIVED, Pix charges).
  payment_id TEXT,
  txid TEXT,
  -- When the event happened by the bank's clock (envelope `createdAt`), as sent; NULL when not given.
  occurred_at TEXT,
  -- When remessa stored it (ISO 8601 UTC).
  received_at TEXT NOT NULL,
  -- The webhook registration it came through (header `x-webhook-id`), when sent.
  webhook_id TEXT,
  -- The request body as received (UTF-8 JSON text of the envelope `{id, event, createdAt, data}`).
  payload TEXT NOT NULL,
  -- When the retorno applied it to the things' state; NULL until then.
  applied_at TEXT
);

CREATE INDEX webhook_events_unapplied ON webhook_events (occurred_at) WHERE applied_at IS NULL;
CREATE INDEX webhook_events_correlation_id ON webhook_events (correlation_id) WHERE correlation_id IS NOT NULL;
CREATE INDEX webhook_events_end_to_end_id ON webhook_events (end_to_end_id) WHERE end_to_end_id IS NOT NULL;
