-- PostgreSQL translation of ../migrations/011-retorno-due.sql (see the comments there, and src/store/things.ts).
ALTER TABLE things ADD COLUMN due_at TEXT;
UPDATE things SET settled = 0 WHERE final = 0 AND kind IN ('bill-payment', 'claim');
DELETE FROM thing_rows_seen WHERE batch_id IN (SELECT id FROM batches WHERE kind = 'qr-codes');
