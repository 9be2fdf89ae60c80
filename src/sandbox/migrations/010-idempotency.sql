-- Idempotency records (src/sandbox/idempotency.ts): one row per (API key, route, IdempotencyKey).
-- `state` is 'processing' while the first request runs (a second one gets 409) and 'done' once its response is
-- stored; `body` is the exact bytes of that response, replayed byte for byte. `fingerprint` is the SHA-256 of the
-- method, URL and canonical JSON body: the same key with another fingerprint gets 422.
CREATE TABLE idempotency_keys (
  scope TEXT NOT NULL,
  route TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('processing', 'done')),
  status_code INTEGER,
  content_type TEXT,
  body BLOB,
  created_at TEXT NOT NULL,
  completed_at TEXT,
  PRIMARY KEY (scope, route, idempotency_key)
);
