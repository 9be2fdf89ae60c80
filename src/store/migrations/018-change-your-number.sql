-- A retorno line's Seu número (issue 11; src/store/things.ts rule 4). Same number and meaning in
-- ../migrations-pg/018-change-your-number.sql.
--
-- A charge's Seu número can change after it is issued (a charge-updates row), and a line already written must keep
-- what it said: each line holds the Seu número of its charge when the line was made. Lines made before this
-- migration hold NULL and are read with the charge's own (things.your_number), as before.
ALTER TABLE thing_changes ADD COLUMN your_number TEXT;
