-- Key claims (spec 4.5, 2.11). One row per claim; status per src/sandbox/claims-rules.ts (PENDIG stored as the
-- spec's enum spells it). `owner` is the non-secret id of the API key that started it (claims are per key).
-- `participation_flow_type` is the sandbox party's side: CLAIMANT for claims started through the API (the admin route
-- may flip it to DONOR). `counterparty_*` is the other participant: the donor when the sandbox is the claimant, the
-- claimant when it is the donor. `account_*`/`holder_*` is the claimant account of the start request.
CREATE TABLE claims (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('PORTABILITY', 'OWNERSHIP')),
  status TEXT NOT NULL CHECK (status IN ('PENDIG', 'AWAITING_RESOLUTION', 'CONFIRMED', 'CANCELED', 'COMPLETED')),
  participation_flow_type TEXT NOT NULL CHECK (participation_flow_type IN ('DONOR', 'CLAIMANT')),
  key TEXT NOT NULL,
  key_type TEXT NOT NULL CHECK (key_type IN ('DOCUMENT', 'EMAIL', 'PHONE')),
  account_number TEXT NOT NULL,
  account_branch TEXT NOT NULL,
  account_type TEXT NOT NULL,
  holder_document TEXT NOT NULL,
  holder_name TEXT NOT NULL,
  holder_type TEXT NOT NULL,
  counterparty_name TEXT NOT NULL,
  counterparty_ispb TEXT NOT NULL,
  resolution_deadline TEXT NOT NULL,
  cancellation_reason TEXT,
  cancellation_source TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX claims_key ON claims (key, status);
CREATE INDEX claims_search ON claims (owner, participation_flow_type, status);
