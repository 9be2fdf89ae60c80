-- The retorno, completed (issue 11 §2-3; module src/store/things.ts):
-- - `due_at`: when the bank owes a thing's final status, for the age of the oldest unsettled thing: a scheduled bill
--   payment's payAt, a key claim's resolutionDeadline; NULL: from its creation (a Pix QR payment).
-- - Bill payments still SCHEDULED and claims not yet COMPLETED or CANCELED are now unsettled (reconciliation can
--   settle them: a bill payment looked up by id, claims by search), so the ones recorded before are marked so.
ALTER TABLE things ADD COLUMN due_at TEXT;
UPDATE things SET settled = 0 WHERE final = 0 AND kind IN ('bill-payment', 'claim');
-- Static QR codes were not followed before (their rows made no thing): their rows are looked at again, so each
-- becomes a `static-qr-code` and the Pix received on it are reported (a dynamic code's thing is already there and is
-- left as it is: things are inserted ON CONFLICT DO NOTHING).
DELETE FROM thing_rows_seen WHERE batch_id IN (SELECT id FROM batches WHERE kind = 'qr-codes');
