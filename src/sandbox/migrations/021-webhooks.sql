-- Webhooks (spec 4.6, 2.12) and their deliveries (src/sandbox/webhook-delivery.ts).

-- One row per registered webhook. `owner` is the non-secret id of the API key that registered it (list shows the
-- key's own webhooks). `authorization` is kept in clear because the sandbox must send it; it is never returned in
-- full nor logged. `since_event_seq`: the newest event seq when registered (or when its event type changed); only
-- later events are delivered to it.
CREATE TABLE webhooks (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  account_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  url TEXT NOT NULL,
  authorization_scheme TEXT CHECK (authorization_scheme IN ('BASIC', 'BEARER', 'HEADER')),
  authorization TEXT,
  since_event_seq INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX webhooks_owner ON webhooks (owner, created_at);
CREATE INDEX webhooks_event_type ON webhooks (event_type, since_event_seq);

-- One row per (event, webhook). `next_attempt_at` is epoch milliseconds of the real clock.
CREATE TABLE webhook_deliveries (
  event_id TEXT NOT NULL,
  event_seq INTEGER NOT NULL,
  webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_status INTEGER,
  last_error TEXT,
  delivered_at TEXT,
  PRIMARY KEY (event_id, webhook_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id);

-- The fan-out cursor: the seq of the newest event already turned into deliveries.
CREATE TABLE webhook_fanout (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  last_event_seq INTEGER NOT NULL
);
INSERT INTO webhook_fanout (id, last_event_seq) VALUES (1, 0);
