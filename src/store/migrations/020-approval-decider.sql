-- Who decided, as the OS tells it (src/store/approvals.ts rule 3): the owner of the `.approved` marker, or the OS user
-- who ran `remessa approve` / `reject`. Same number and meaning in ../migrations-pg/020-approval-decider.sql.
--
-- decided_by keeps the name the person wrote (`--by`, the marker's line), which anyone can write: the rules check
-- this one. NULL: decided before this migration, or the OS user could not be read.
ALTER TABLE approvals ADD COLUMN decided_user TEXT;
