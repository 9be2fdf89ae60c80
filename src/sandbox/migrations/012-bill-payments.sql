-- Bill payments (src/sandbox/bills.ts): one row per accepted payment of a bank slip or tax bill.
-- `status` is PAID (went through) or SCHEDULED (payAt in the future; becomes PAID once the clock passes pay_at).
-- `record` is the payment result (spec 2.6) as answered. The partial unique index is the rule "a bill is paid once".
CREATE TABLE bill_payments (
  id TEXT PRIMARY KEY,
  bar_code TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('PAID', 'SCHEDULED', 'FAILED')),
  amount_cents INTEGER NOT NULL,
  original_amount_cents INTEGER NOT NULL,
  pay_at TEXT,
  charge_correlation_id TEXT,
  api_key_id TEXT NOT NULL,
  idempotency_key TEXT,
  record TEXT NOT NULL,
  created_at TEXT NOT NULL,
  paid_at TEXT
);
CREATE UNIQUE INDEX bill_payments_once ON bill_payments (bar_code) WHERE status IN ('PAID', 'SCHEDULED');
CREATE INDEX bill_payments_scheduled ON bill_payments (status, pay_at);
