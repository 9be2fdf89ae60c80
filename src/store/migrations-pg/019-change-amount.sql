-- PostgreSQL translation of ../migrations/019-change-amount.sql (comments there): the same column.
ALTER TABLE thing_changes ADD COLUMN amount_cents BIGINT;
