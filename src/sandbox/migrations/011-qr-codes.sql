-- QR codes made by the QR creation routes (src/sandbox/routes/qr-codes.ts): dynamic (v1) and static (v2).
-- `txid` is field 62-05 of the BR Code (and, for dynamic codes, the end of the location URL): the Pix payment
-- initialization finds a code by it. `record` is the creation response without the image.
CREATE TABLE qr_codes (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('DYNAMIC', 'STATIC')),
  correlation_id TEXT NOT NULL,
  api_key_id TEXT NOT NULL,
  txid TEXT NOT NULL UNIQUE,
  payload TEXT NOT NULL,
  amount_cents INTEGER,
  pix_key TEXT,
  status TEXT NOT NULL,
  expires_at TEXT,
  record TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  paid_at TEXT
);
-- A correlationId names one dynamic and one static QR code per API key: a second creation gets 409.
CREATE UNIQUE INDEX qr_codes_correlation ON qr_codes (api_key_id, kind, correlation_id);
CREATE INDEX qr_codes_payload ON qr_codes (payload);

-- Payments received by a QR code (a static code can be paid many times, a dynamic one once).
CREATE TABLE qr_code_payments (
  id TEXT PRIMARY KEY,
  qr_code_id TEXT NOT NULL REFERENCES qr_codes (id),
  amount_cents INTEGER NOT NULL,
  end_to_end_id TEXT NOT NULL UNIQUE,
  paid_at TEXT NOT NULL
);
CREATE INDEX qr_code_payments_code ON qr_code_payments (qr_code_id);
