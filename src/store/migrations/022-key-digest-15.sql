-- The cost of a row in the store, sixth part (issue 13 §3; docs/performance.md (d), eighteenth pass). Same number and
-- meaning in ../migrations-pg/022-key-digest-15.sql.
--
-- A natural key's digest (src/store/keys.ts `naturalKeyDigest`) is the first 15 bytes of its SHA-256 instead of 16:
-- on PostgreSQL that is 8 bytes less in every entry of natural_keys and of its index (a 16-byte bytea with its header
-- crossed an 8-byte boundary by one byte). Every stored claim keeps its owner under its digest cut to 15 bytes, which
-- is what the store now computes for the same key; nothing else changes. Two stored digests equal in their first 15
-- bytes (a chance below 10^-16 for ten billion keys) would make this migration fail on the table's key, changing
-- nothing: the store would not open, rather than make a key's owner ambiguous.
UPDATE natural_keys SET key_digest = substr(key_digest, 1, 15) WHERE length(key_digest) > 15;
