/**
 * Idempotency keys: the GUID a row sends as `IdempotencyKey`, the same on every attempt, every run and every file.
 *
 * key = UUIDv5(name = `<kind>\n<natural key>`, namespace = UUIDv5(name = account id, namespace = REMESSA_NAMESPACE))
 *
 * Why derived and not random: the same business row (same kind and natural key) must get the same key from any file
 * and even from a rebuilt database, so that the bank, which remembers keys, recognises a resend. The account id is in
 * the namespace so that two accounts never share keys. An explicit `idempotencyKey` column overrides (the kind reads
 * it; see BatchKind.explicitIdempotencyKey).
 *
 * The natural key may itself be derived: a charges or qr-codes row without a correlationId gets one from its Seu
 * número or its content (src/batches/supply.ts, DERIVED_ID_NAMESPACE), stored with the row; that derivation is part of
 * this contract and must never change either.
 *
 * REMESSA_NAMESPACE must never change: changing it changes every key, and a resend after the change would be a new
 * request to the bank.
 */
import { hash } from 'node:crypto';
import { uuidV5 } from '../formats/uuid-v5.js';
import type { KindName } from '../types.js';

/** remessa's fixed UUIDv5 namespace. Never change it (see above). */
export const REMESSA_NAMESPACE = '3f6c1d52-8a4e-4b7f-9c2d-5e0a7b1f4c83';

/** The per-account namespace all of an account's keys are derived in. */
export function accountNamespace(accountId: string): string {
  return uuidV5(accountId, REMESSA_NAMESPACE);
}

/** The idempotency key of a row: stable for the same (account, kind, natural key). */
export function deriveIdempotencyKey(namespace: string, kind: KindName, naturalKey: string): string {
  return uuidV5(`${kind}\n${naturalKey}`, namespace);
}

/**
 * The store's key of a natural key of a kind (the `natural_keys` table, migrations 016 and 022): the first 15 bytes
 * of the SHA-256 of `<kind>\n<natural key>`, the name the idempotency key is derived from. 15 bytes instead of the
 * kind and the key's text (often 50 characters or more) in the table and again in its index; two different keys would
 * share a digest with a chance of about n² / 2^121 among n keys (below 10^-16 for ten billion rows), and then the later
 * row would be reported a duplicate of the earlier, never sent twice. 15 and not 16 (016 kept 16, 022 cut them): on
 * PostgreSQL a 15-byte bytea with its 1-byte header ends the table's tuple and the index's entry on an 8-byte boundary,
 * 8 bytes less in each than 16 (docs/performance.md (d), eighteenth pass). Computed the same way in the migrations'
 * SQL (PostgreSQL's `sha256`; on SQLite the `remessa_key_digest` function src/store/db.ts registers).
 */
export function naturalKeyDigest(kind: string, naturalKey: string): Buffer {
  // One-shot `hash` (UTF-8 of the string, as `update` read it): no Hash object a call.
  return hash('sha256', `${kind}\n${naturalKey}`, 'buffer').subarray(0, KEY_DIGEST_BYTES);
}

/** The length of a natural key's digest (`naturalKeyDigest`), in bytes. */
export const KEY_DIGEST_BYTES = 15;

/**
 * The store's key of the last change of `thing` by a row of `kind` (`BatchKind.changes`), in `natural_keys` beside the
 * natural keys: the digest of a name no natural key can have (natural keys are made of cells, which never hold a
 * control character).
 */
export function lastChangeDigest(kind: string, thing: string): Buffer {
  return naturalKeyDigest(kind, `\u0000changes\n${thing}`);
}

/**
 * The store's key of a row's own explicit idempotency key (its `idempotencyKey` column), in `natural_keys` beside
 * the natural keys: the bank knows a key once a request carried it, so one key is one operation for good (rule 4 of
 * ./rows.ts). A name no natural key can have, as `lastChangeDigest`'s.
 */
export function explicitKeyDigest(kind: string, idempotencyKey: string): Buffer {
  return naturalKeyDigest(kind, `\u0000idempotencyKey\n${idempotencyKey}`);
}

/**
 * The key of a row that takes its natural key over from a `failed` row (`ownerBatchId`, `ownerLine`) whose key was the
 * derived `key`: the same row dropped again is a new request to the bank. `failed` means certainly not done, so a new
 * key cannot do anything twice; the old one would not be heard: a bank that keeps every answer of a key (errors
 * included) replays the first refusal to it forever, a refusal that may no longer be true (a claim then pending, a
 * balance then short). Derived, so an ingestion redone after a crash gives the same key; another each failed owner.
 * The same for a row that takes its key over from an owner another change of its thing has overtaken (rule 4 of
 * ./rows.ts): the old key would get the bank's first answer replayed, not the change made again.
 */
export function renewedIdempotencyKey(key: string, ownerBatchId: string, ownerLine: number): string {
  return uuidV5(`again after failed\n${ownerBatchId}\n${ownerLine}`, key);
}

/** Derives keys for one account; caches the namespace. */
export class IdempotencyKeys {
  readonly namespace: string;

  constructor(accountId: string) {
    this.namespace = accountNamespace(accountId);
  }

  /** The explicit key when the row has one, else the derived key. */
  forRow(kind: KindName, naturalKey: string, explicit?: string): string {
    return explicit && explicit.length > 0 ? explicit : deriveIdempotencyKey(this.namespace, kind, naturalKey);
  }
}
