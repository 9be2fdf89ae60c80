/**
 * The one place where batch kinds are registered. Adding a kind: write its module, add it to `KINDS` (and its
 * name to KIND_NAMES in src/types.ts), regenerate docs/batches.md (`npx tsx src/batches/docs.ts`).
 */
import { isAbsolute, relative, sep } from 'node:path';
import { isKindName, KIND_NAMES, type KindName } from '../types.js';

export { isKindName };

import { billPaymentsKind } from './bill-payments.js';
import { chargeUpdatesKind } from './charge-updates.js';
import { chargeVoidsKind } from './charge-voids.js';
import { chargesKind } from './charges.js';
import { claimCancellationsKind } from './claim-cancellations.js';
import { claimsKind } from './claims.js';
import type { BatchKind } from './kind.js';
import { pixPaymentsKind } from './pix-payments.js';
import { qrCodesKind } from './qr-codes.js';

/** Every kind, in the order of KIND_NAMES. */
export const KINDS: Readonly<Record<KindName, BatchKind<never>>> = {
  charges: chargesKind as BatchKind<never>,
  'bill-payments': billPaymentsKind as BatchKind<never>,
  'pix-payments': pixPaymentsKind as BatchKind<never>,
  'qr-codes': qrCodesKind as BatchKind<never>,
  'claim-cancellations': claimCancellationsKind as BatchKind<never>,
  claims: claimsKind as BatchKind<never>,
  'charge-updates': chargeUpdatesKind as BatchKind<never>,
  'charge-voids': chargeVoidsKind as BatchKind<never>,
};

/** The kind called `name`, or undefined. Rows parsed by a kind are opaque to the engine: `BatchKind<unknown>`. */
export function kindFor(name: string): BatchKind<unknown> | undefined {
  return isKindName(name) ? (KINDS[name] as unknown as BatchKind<unknown>) : undefined;
}

/** Kind names longest first, so `charge-updates-x.csv` never reads as a `charge...` prefix of another kind. */
const BY_LENGTH = [...KIND_NAMES].sort((a, b) => b.length - a.length);

/**
 * The kind of an inbox file, from where it lies: `<inbox>/<kind>/<name>.csv`, or `<inbox>/<kind>-<name>.csv` /
 * `<inbox>/<kind>_<name>.csv` at the inbox root. Undefined for anything else (unknown kind, deeper folders, not
 * .csv, outside the inbox).
 */
export function kindFromPath(inboxRoot: string, file: string): KindName | undefined {
  const rel = relative(inboxRoot, file);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return undefined;
  const parts = rel.split(sep);
  const base = parts[parts.length - 1]!;
  if (!/\.csv$/i.test(base)) return undefined;
  if (parts.length === 2) return isKindName(parts[0]!) ? parts[0] : undefined;
  if (parts.length !== 1) return undefined;
  const lower = base.toLowerCase();
  return BY_LENGTH.find((k) => lower.startsWith(`${k}-`) || lower.startsWith(`${k}_`));
}
