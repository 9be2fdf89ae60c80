-- How a slip payment's amount breaks down (issue 11: the retorno reports paid, discount, interest and fine): the
-- calculation of the slip as of the day it was paid (src/sandbox/bills.ts `calculate`, the same one its bill lookup
-- shows). NULL for payments without one (Pix charges, and payments recorded before this migration).
ALTER TABLE charge_payments ADD COLUMN discount_cents INTEGER;
ALTER TABLE charge_payments ADD COLUMN interest_cents INTEGER;
ALTER TABLE charge_payments ADD COLUMN fine_cents INTEGER;
