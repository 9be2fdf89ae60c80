import { randomBytes } from 'node:crypto';
import { isIsoDate } from './dates.js';
import { formatError } from './errors.js';
import { uuidV5 as v5 } from './uuid-v5.js';

/** GUIDs (the service's correlation and idempotency ids) and Pix end-to-end ids (brazilian-formats.md 5). */

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const END_TO_END_ID = /^([ED])(\d{8})(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})([A-Za-z0-9]{11})$/;

/** The service provider's ISPB in its samples. */
export const SERVICE_ISPB = '38224857';

/** 8-4-4-4-12 hexadecimal digits, any case, any version. */
export function isGuid(text: string): boolean {
  return GUID.test(text);
}

/** `length` random letters and digits from the secure random source (the sandbox's txids and transaction ids). */
export function randomAlphanumeric(length: number): string {
  let out = '';
  for (const b of randomBytes(length)) out += ALPHANUMERIC[b % ALPHANUMERIC.length];
  return out;
}

/** Deterministic UUID version 5 of `name` in `namespace` (a GUID): same inputs, same id, on any machine. */
export function uuidV5(name: string, namespace: string): string {
  if (!isGuid(namespace)) throw formatError('INVALID_FIELD', 'IDS.namespace', { got: JSON.stringify(namespace) });
  return v5(name, namespace);
}

/** Options of {@link endToEndId}. */
export interface EndToEndIdOptions {
  /** Payer participant's ISPB, 8 digits. */
  ispb: string;
  /** The instant of the payment; its UTC minute goes into the id. */
  at: Date;
  /** Source of the 11 random characters, values in [0, 1). @defaultValue `Math.random` */
  random?: () => number;
  /** 'E' for a payment, 'D' for a refund. @defaultValue `'E'` */
  prefix?: 'E' | 'D';
}

/** A 32-character end-to-end id: E + ISPB(8) + yyyyMMddHHmm (UTC) + 11 of [A-Za-z0-9]. */
export function endToEndId(options: EndToEndIdOptions): string {
  if (!/^\d{8}$/.test(options.ispb)) {
    throw formatError('INVALID_FIELD', 'IDS.ispb', { got: JSON.stringify(options.ispb) });
  }
  if (Number.isNaN(options.at.getTime())) throw formatError('INVALID_DATE', 'INVALID_DATE.instant');
  const random = options.random ?? Math.random;
  const stamp = options.at.toISOString().replace(/\D/g, '').slice(0, 12);
  let suffix = '';
  for (let i = 0; i < 11; i++) {
    suffix += ALPHANUMERIC[Math.min(ALPHANUMERIC.length - 1, Math.floor(random() * ALPHANUMERIC.length))];
  }
  return (options.prefix ?? 'E') + options.ispb + stamp + suffix;
}

/** True for a well-formed end-to-end id (E or D) whose timestamp is a real UTC minute. */
export function isValidEndToEndId(text: string): boolean {
  const match = END_TO_END_ID.exec(text);
  if (!match) return false;
  const [, , , year, month, day, hour, minute] = match;
  return isIsoDate(`${year}-${month}-${day}`) && Number(hour) < 24 && Number(minute) < 60;
}
