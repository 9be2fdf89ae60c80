-- PostgreSQL translation of ../migrations/016-natural-key-digest.sql (comments there): the same table and key, the
-- digest computed by the server's sha256 over the same UTF-8 bytes as src/store/keys.ts `naturalKeyDigest`.
CREATE TABLE natural_keys_by_digest (
  key_digest BYTEA NOT NULL PRIMARY KEY,
  batch_id TEXT NOT NULL,
  line INTEGER NOT NULL
);

INSERT INTO natural_keys_by_digest (key_digest, batch_id, line)
SELECT substring(sha256(convert_to(kind || E'\n' || natural_key, 'UTF8')) FROM 1 FOR 16), batch_id, line
FROM natural_keys;

DROP TABLE natural_keys;
ALTER TABLE natural_keys_by_digest RENAME TO natural_keys;
ALTER INDEX natural_keys_by_digest_pkey RENAME TO natural_keys_pkey;
