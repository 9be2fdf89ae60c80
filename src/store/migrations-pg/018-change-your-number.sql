-- PostgreSQL translation of ../migrations/018-change-your-number.sql (comments there): the same column.
ALTER TABLE thing_changes ADD COLUMN your_number TEXT;
