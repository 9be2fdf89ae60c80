-- Charges (spec 4.1): bank slips (BANKSLIP, BANKSLIP_PIX) and Pix charges (PIX_STATIC, PIX_DYNAMIC).
-- `record` holds the request fields the sandbox echoes back (payer, discount, lateFine, latePayment,
-- finalBeneficiary, description, additionalInfo, ...) as JSON; the columns are what the sandbox searches or decides on.
CREATE TABLE charges (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  correlation_id TEXT NOT NULL UNIQUE,
  type TEXT NOT NULL,
  status TEXT NOT NULL,
  amount_cents INTEGER NOT NULL,
  due_date TEXT,
  original_due_date TEXT,
  wallet TEXT,
  our_number TEXT,
  your_number TEXT,
  bar_code TEXT,
  digitable_line TEXT,
  txid TEXT UNIQUE,
  qr_code TEXT,
  expires_in INTEGER,
  record TEXT NOT NULL,
  api_key_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  created_date TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  paid_at TEXT,
  voided_at TEXT,
  expired_at TEXT
);
CREATE INDEX charges_created ON charges (created_date, seq);
CREATE UNIQUE INDEX charges_our_number ON charges (wallet, our_number) WHERE our_number IS NOT NULL;

-- Every bar code a charge has carried (creation, each PATCH, each expire): a slip printed before an update can
-- still be found (the bill lookup then sees the charge's current state).
CREATE TABLE charge_bar_codes (
  bar_code TEXT PRIMARY KEY,
  charge_seq INTEGER NOT NULL REFERENCES charges (seq),
  issued_at TEXT NOT NULL
);

-- Payments received by a charge (staging pay, bill payment of its slip, Pix payment of its QR code).
CREATE TABLE charge_payments (
  id TEXT PRIMARY KEY,
  charge_seq INTEGER NOT NULL REFERENCES charges (seq),
  amount_cents INTEGER NOT NULL,
  method TEXT NOT NULL,
  end_to_end_id TEXT,
  source TEXT NOT NULL,
  paid_at TEXT NOT NULL
);
CREATE INDEX charge_payments_charge ON charge_payments (charge_seq);

-- Our numbers assigned to normal charges (wallet 112), one sequence.
CREATE TABLE counters (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
