/**
 * The compact text of a row's `outputs` and `parsed` columns (migration 015, issue 13 §3: the cost of a row;
 * docs/performance.md (d)). Both columns used to hold a JSON object, whose key names (`"beneficiaryDocument":`) were
 * repeated on every row, and `parsed` repeated the row's own cells (`"barCode":"3419..."` next to the cell
 * `"3419..."`).
 *
 * The compact form is a JSON array of pairs, `[key, value, key, value, ...]`, in the object's key order:
 * - key: a whole number, the index of the name in `KEYS` below, or the name itself as a string;
 * - value: null, a boolean, a number or a string as JSON writes them, or `[i]` (an array of one whole number): for
 *   i >= 0 the row's cell number i (0-based, the `cells` column), when the value is exactly that cell's text; for
 *   i < 0 the string `VALUES[-1 - i]` (the statuses and types the bank answers on every row).
 * An object with any other value (a nested object or array, a bigint) is stored as plain JSON, as before 015. A text
 * that starts with `{` is plain JSON (every row stored before 015 is): both forms are read, so nothing is migrated.
 *
 * What must hold: `decode(encode(v, cells), cells)` is deep-equal to `JSON.parse(JSON.stringify(v))` (keys, order,
 * values; a key whose value is undefined is left out, as JSON does), for every object (test/row-cost.test.ts).
 *
 * `KEYS` and `VALUES` are part of the stored format: an entry's index never changes and no entry is ever removed or
 * reordered; new ones are appended at the end. A name or value missing from them is stored as a string, so a kind that
 * adds an output needs no change here to be correct.
 *
 * The natural key (`rows.natural_key`, `encodeKeyText`) is often a cell with something after it (a bill payment's is
 * `<barCode>|<amount>|<payAt>`): when it starts with a cell's text (8 characters or more), it is stored as
 * `\u0001<i>\u0001<the rest>`; a key that itself starts with \u0001 is stored as `\u0001-\u0001<key>`. It is read
 * back only through `decodeKeyText` (no SQL compares rows.natural_key: ownership is in `natural_keys`, which keeps
 * the key whole).
 */

/** Key names by index. APPEND ONLY: stored rows refer to these indexes. */
const KEYS: readonly string[] = [
  // bill-payments: outputs (lookup, pay), then parsed
  'billType',
  'billStatus',
  'billAmount',
  'chargedAmount',
  'beneficiary',
  'beneficiaryDocument',
  'dueDate',
  'paymentId',
  'paymentStatus',
  'paidAmount',
  'identifier',
  'barCode',
  'amountCents',
  'payAt',
  'idempotencyKey',
  'digitableLine',
  // common outputs of the other kinds
  'correlationId',
  'status',
  'endToEndId',
  'chargeId',
  'id',
  'amount',
  'description',
  'brCode',
  'qrCodeImage',
  'pdf',
  'txid',
];

const KEY_INDEX: ReadonlyMap<string, number> = new Map(KEYS.map((k, i) => [k, i]));

/** String values by index (stored as `[-1 - index]`). APPEND ONLY: stored rows refer to these indexes. */
const VALUES: readonly string[] = [
  'BANKSLIP',
  'PENDING_PAYMENT',
  'PAID',
  'CONCESSIONARY',
  'SCHEDULED',
  'CANCELED',
  'PROCESSING',
  'FAILED',
  'REGISTERED',
  'DONE',
];

const VALUE_INDEX: ReadonlyMap<string, number> = new Map(VALUES.map((v, i) => [v, i]));

/**
 * The stored text of `value` (an object of outputs or a parsed row): the compact form when every value is a scalar,
 * else plain JSON. `cells`: the row's cells, for references to them (none for outputs). Null for undefined or null.
 */
export function encodeObject(value: unknown, cells?: readonly string[] | null): string | null {
  if (value === undefined || value === null) return null;
  // Not an object: plain JSON, after a space when it is an array, so that it never reads as the compact form.
  if (typeof value !== 'object') return plainJson(value);
  if (Array.isArray(value)) return ` ${plainJson(value)}`;
  const obj = value as Record<string, unknown>;
  const out: unknown[] = [];
  for (const k in obj) {
    const v = obj[k];
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
    if (v !== null && typeof v === 'object') return plainJson(value);
    if (typeof v === 'bigint') return plainJson(value);
    out.push(KEY_INDEX.get(k) ?? k);
    if (typeof v === 'string') {
      const i = cells ? cells.indexOf(v) : -1;
      const j = i >= 0 ? undefined : VALUE_INDEX.get(v);
      out.push(i >= 0 ? [i] : j !== undefined ? [-1 - j] : v);
    } else out.push(v);
  }
  return JSON.stringify(out);
}

/** The object `text` holds (either form); `cells`: the row's cells, which the compact form may refer to. */
export function decodeObject<T = Record<string, unknown>>(text: string, cells?: readonly string[] | null): T {
  if (text.charCodeAt(0) !== 0x5b /* [ */) return JSON.parse(text) as T;
  const pairs = JSON.parse(text) as unknown[];
  const out: Record<string, unknown> = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const k = pairs[i];
    const name = typeof k === 'number' ? KEYS[k] : (k as string);
    if (name === undefined) throw new Error(`Unknown key number ${String(k)} in stored outputs`);
    const v = pairs[i + 1];
    let value = v;
    if (Array.isArray(v)) {
      const i = v[0] as number;
      value = i >= 0 ? cells?.[i] : VALUES[-1 - i];
      if (value === undefined)
        throw new Error(`Stored value refers to ${i >= 0 ? 'cell' : 'value'} ${i}, unknown here`);
    }
    // An own property even for `__proto__`, as JSON.parse makes it.
    if (name === '__proto__')
      Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
    else out[name] = value;
  }
  return out as T;
}

/** decodeObject for a nullable column. */
export function decodeNullable<T = Record<string, unknown>>(
  text: string | null,
  cells?: readonly string[] | null,
): T | null {
  return text === null ? null : decodeObject<T>(text, cells);
}

/** JSON, with bigints as strings (as the store always wrote a parsed row), so storing never throws. */
function plainJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
}

const KEY_MARK = '\u0001';
/** Shortest cell a natural key is stored by reference to (a shorter one saves nothing). */
const MIN_KEY_CELL = 8;

/** The stored text of a row's natural key (see the top of this file); null stays null. */
export function encodeKeyText(key: string | null, cells?: readonly string[] | null): string | null {
  if (key === null) return null;
  if (cells) {
    for (let i = 0; i < cells.length; i++) {
      const c = cells[i]!;
      if (c.length >= MIN_KEY_CELL && key.startsWith(c)) return `${KEY_MARK}${i}${KEY_MARK}${key.slice(c.length)}`;
    }
  }
  return key.startsWith(KEY_MARK) ? `${KEY_MARK}-${KEY_MARK}${key}` : key;
}

/** The natural key `text` (stored by `encodeKeyText`) stands for. */
export function decodeKeyText(text: string | null, cells?: readonly string[] | null): string | null {
  if (text === null || !text.startsWith(KEY_MARK)) return text;
  const end = text.indexOf(KEY_MARK, 1);
  const ref = text.slice(1, end);
  const rest = text.slice(end + 1);
  if (ref === '-') return rest;
  const cell = cells?.[Number(ref)];
  if (cell === undefined) throw new Error(`Stored natural key refers to cell ${ref}, which the row has not`);
  return cell + rest;
}
