-- A retorno line's amount: what its thing asked for when the line was made (issue 11; src/store/things.ts rule 4).
-- Same number and meaning in ../migrations-pg/019-change-amount.sql.
--
-- Beside the paid amount it tells a partial payment (paid 250,50 of 600,00); a charge's amount can change after it is
-- issued (a charge-updates row), and a line already written keeps what it said. Lines made before this migration hold
-- NULL and are read with the thing's own (things.amount_cents).
ALTER TABLE thing_changes ADD COLUMN amount_cents INTEGER;
