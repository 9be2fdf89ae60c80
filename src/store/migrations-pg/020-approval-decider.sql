-- PostgreSQL translation of ../migrations/020-approval-decider.sql (comments there): the same column.
ALTER TABLE approvals ADD COLUMN decided_user TEXT;
