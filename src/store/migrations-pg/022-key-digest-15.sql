-- The cost of a row in the store, sixth part (issue 13 §3; docs/performance.md (d), eighteenth pass). Same number and
-- meaning in ../migrations/022-key-digest-15.sql.
--
-- A natural key's digest (src/store/keys.ts `naturalKeyDigest`) is the first 15 bytes of its SHA-256 instead of 16:
-- a 16-byte bytea with its 1-byte header crossed an 8-byte boundary by one byte, so each tuple of natural_keys
-- (56 bytes) and each entry of its index (32) takes 8 bytes less (48, 24). Every stored claim keeps its owner under its
-- digest cut to 15 bytes, which is what the store now computes for the same key; nothing else changes. The table is
-- copied rather than updated in place (an UPDATE would leave a dead version of every claim, and the index's pages
-- half empty). Two stored digests equal in their first 15 bytes (a chance below 10^-16 for ten billion keys) would
-- make this migration fail on the table's key, changing nothing: the store would not open, rather than make a key's
-- owner ambiguous.
CREATE TABLE natural_keys_15 (
  batch_no INTEGER NOT NULL,
  line INTEGER NOT NULL,
  key_digest BYTEA NOT NULL PRIMARY KEY
);
INSERT INTO natural_keys_15 (batch_no, line, key_digest)
SELECT batch_no, line, substring(key_digest FROM 1 FOR 15) FROM natural_keys;
DROP TABLE natural_keys;
ALTER TABLE natural_keys_15 RENAME TO natural_keys;
ALTER INDEX natural_keys_15_pkey RENAME TO natural_keys_pkey;
