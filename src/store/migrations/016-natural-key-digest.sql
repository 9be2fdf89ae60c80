-- The cost of a row in the store, third part (issue 13 §3; docs/performance.md (d)). Same number and meaning in
-- ../migrations-pg/016-natural-key-digest.sql.
--
-- natural_keys is keyed by a 16-byte digest of the kind and the natural key (src/store/keys.ts `naturalKeyDigest`:
-- the first 16 bytes of SHA-256 of `<kind>\n<natural key>`) instead of the two texts: a bill's key alone is some 50
-- characters, held in the table and again in its index on PostgreSQL. Who owns a key, and every rule of
-- ../rows.ts (rule 4), is unchanged: the store looks an owner up by the digest of the key it has. The key's text
-- stays on its row (rows.natural_key). Every claim stored before is carried over under its digest, computed by
-- `remessa_key_digest`, the same function (registered on the connection by src/store/db.ts).
CREATE TABLE natural_keys_by_digest (
  key_digest BLOB NOT NULL PRIMARY KEY,
  batch_id TEXT NOT NULL,
  line INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO natural_keys_by_digest (key_digest, batch_id, line)
SELECT remessa_key_digest(kind, natural_key), batch_id, line FROM natural_keys;

DROP TABLE natural_keys;
ALTER TABLE natural_keys_by_digest RENAME TO natural_keys;
