-- Pix QR code payments (src/sandbox/routes/pix-payments.ts).
-- One row per payment initialization: the endToEndId it handed out, what the QR code said, and where the code came
-- from (`source_kind` QR_CODE = qr_codes.id, CHARGE = charges.correlation_id, NULL = a code the sandbox did not make).
-- `used_at` is set by the one payment the endToEndId allows; `expires_at` ends its use.
CREATE TABLE pix_initializations (
  end_to_end_id TEXT PRIMARY KEY,
  api_key_id TEXT NOT NULL,
  qr_type TEXT NOT NULL,
  transaction_id TEXT NOT NULL,
  amount_cents INTEGER,
  allow_change_amount INTEGER NOT NULL,
  source_kind TEXT,
  source_ref TEXT,
  record TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at TEXT
);

-- One row per Pix payment made; `transaction_nsu` is the sandbox's increasing transaction number.
CREATE TABLE pix_payments (
  id TEXT PRIMARY KEY,
  end_to_end_id TEXT NOT NULL UNIQUE REFERENCES pix_initializations (end_to_end_id),
  transaction_nsu INTEGER NOT NULL UNIQUE,
  api_key_id TEXT NOT NULL,
  amount_cents INTEGER NOT NULL,
  status TEXT NOT NULL,
  record TEXT NOT NULL,
  created_at TEXT NOT NULL
);
