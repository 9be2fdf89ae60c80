/**
 * The effects ledger: one row per effect the sandbox performs (a charge created, a bill paid, a Pix paid, a claim
 * cancelled, ...), keyed by what caused it (the idempotency key, or the correlation id where the route has none).
 *
 * Tests read it through `GET /__sandbox/effects` to prove "exactly once": however many times the client retried,
 * the count per key must be 1. Record an effect inside the transaction that performs it.
 */
import type { Clock } from './clock.js';
import type { SandboxDb } from './db.js';

/** Known effect kinds; other areas may use further strings, but prefer adding them here. */
export const EFFECT_KINDS = [
  'charge_created',
  'charge_updated',
  'charge_voided',
  'charge_paid',
  'charge_expired',
  'bill_paid',
  'pix_paid',
  'qr_created',
  'claim_created',
  'claim_cancelled',
] as const;
export type EffectKind = (typeof EFFECT_KINDS)[number] | (string & {});

export interface EffectCount {
  kind: string;
  key: string;
  count: number;
}

export interface Ledger {
  /** Records one effect. `ref` names the object affected (charge correlation id, payment id, ...). */
  record(kind: EffectKind, key: string, ref?: string): void;
  /** Counts per (kind, key), optionally filtered. */
  counts(filter?: { kind?: string; key?: string }): EffectCount[];
  /** How many times `kind` happened for `key`. */
  count(kind: EffectKind, key: string): number;
}

export function createLedger(db: SandboxDb, clock: Clock): Ledger {
  const insert = db.prepare('INSERT INTO effects (kind, key, ref, at) VALUES (?, ?, ?, ?)');
  const countOne = db.prepare('SELECT COUNT(*) AS n FROM effects WHERE kind = ? AND key = ?');
  return {
    record(kind, key, ref) {
      insert.run(kind, key, ref ?? null, clock.nowIso());
    },
    counts(filter = {}) {
      const where: string[] = [];
      const args: string[] = [];
      if (filter.kind) {
        where.push('kind = ?');
        args.push(filter.kind);
      }
      if (filter.key) {
        where.push('key = ?');
        args.push(filter.key);
      }
      const sql = `SELECT kind, key, COUNT(*) AS count FROM effects ${where.length ? `WHERE ${where.join(' AND ')}` : ''} GROUP BY kind, key ORDER BY kind, key`;
      return db.prepare(sql).all(...args) as EffectCount[];
    },
    count(kind, key) {
      return (countOne.get(kind, key) as { n: number }).n;
    },
  };
}
