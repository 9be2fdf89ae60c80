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
 * The shorter compact form (since migration 022; every earlier form is still read, so nothing is migrated): when the
 * keys hold a run of at least RUN consecutive indexes (a bill payment's outputs are keys 0 to 9, in order), the text is
 * `[[keys], value, value, ...]`: the keys once, first, then the values in their order. In `[keys]` an entry is a key
 * (an index, or a name as a string) or, after a key index k, a negative number -m: the m indexes after k
 * (`[0,-9]` is keys 0 to 9; `[10,11,0,12]` four keys). A text starting with `[[` is only ever this form (the first
 * form starts with a key, never an array; a plain array is stored after a space). 13 characters fewer for a bill
 * payment's outputs.
 * In both compact forms a value may also be `["<22 characters>"]` (an array of one string): a UUID written in
 * canonical form (lowercase hex, `8-4-4-4-12`, as the bank's ids are), its 16 bytes in base64url: 26 characters
 * instead of 38. Any other way of writing a UUID (upper case) is stored as the string it is, so the text read back is
 * always the text given.
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
 * back only through `decodeKeyText` (no SQL compares rows.natural_key: ownership is in `natural_keys`, keyed by
 * the key's digest, which ./keys.ts `naturalKeyDigest` computes from the whole decoded key).
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
  const keys: Array<number | string> = [];
  const values: unknown[] = [];
  /** The longest run of consecutive key indexes so far, and the current one's length. */
  let longest = 0;
  let run = 0;
  for (const k in obj) {
    const v = obj[k];
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
    if (v !== null && typeof v === 'object') return plainJson(value);
    if (typeof v === 'bigint') return plainJson(value);
    const key = KEY_INDEX.get(k) ?? k;
    const last = keys.length > 0 ? keys[keys.length - 1] : undefined;
    run = typeof key === 'number' && typeof last === 'number' && key === last + 1 ? run + 1 : 1;
    if (run > longest) longest = run;
    keys.push(key);
    values.push(typeof v === 'string' ? compactString(v, cells) : v);
  }
  if (longest >= RUN) return JSON.stringify([runsOf(keys), ...values]);
  const out: unknown[] = [];
  for (let i = 0; i < keys.length; i++) out.push(keys[i], values[i]);
  return JSON.stringify(out);
}

/** Fewest consecutive key indexes that make the keys-first form worth its brackets. */
const RUN = 4;

/** `keys` with each run of consecutive indexes after its first written as -m (see the top of this file). */
function runsOf(keys: ReadonlyArray<number | string>): Array<number | string> {
  const out: Array<number | string> = [];
  for (let i = 0; i < keys.length; ) {
    const k = keys[i]!;
    out.push(k);
    let j = i + 1;
    if (typeof k === 'number') while (j < keys.length && keys[j] === k + (j - i)) j++;
    if (j - i > 2) out.push(-(j - i - 1));
    else j = i + 1;
    i = j;
  }
  return out;
}

/** A string value as stored: `[i]` for cell i or a known value, `["<base64url>"]` for a canonical UUID, else itself. */
function compactString(v: string, cells: readonly string[] | null | undefined): unknown {
  const i = cells ? cells.indexOf(v) : -1;
  if (i >= 0) return [i];
  const j = VALUE_INDEX.get(v);
  if (j !== undefined) return [-1 - j];
  if (v.length === 36 && UUID.test(v)) return [Buffer.from(v.replace(/-/g, ''), 'hex').toString('base64url')];
  return v;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The UUID, in canonical form, whose 16 bytes `b64` (base64url) holds. */
function uuidOf(b64: string): string {
  const hex = Buffer.from(b64, 'base64url').toString('hex');
  if (hex.length !== 32) throw new Error(`Stored value ${JSON.stringify(b64)} is not a UUID`);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The object `text` holds (any form); `cells`: the row's cells, which the compact forms may refer to. */
export function decodeObject<T = Record<string, unknown>>(text: string, cells?: readonly string[] | null): T {
  if (text.charCodeAt(0) !== 0x5b /* [ */) return JSON.parse(text) as T;
  const items = JSON.parse(text) as unknown[];
  const out: Record<string, unknown> = {};
  if (Array.isArray(items[0])) {
    const keys = items[0] as Array<number | string>;
    let v = 1;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      const next = keys[i + 1];
      if (typeof next === 'number' && next < 0 && typeof k === 'number') {
        for (let d = 0; d <= -next; d++) setField(out, keyName(k + d), items[v++], cells);
        i++;
      } else setField(out, keyName(k), items[v++], cells);
    }
  } else for (let i = 0; i + 1 < items.length; i += 2) setField(out, keyName(items[i]), items[i + 1], cells);
  return out as T;
}

/** The name a stored key stands for. */
function keyName(k: unknown): string {
  const name = typeof k === 'number' ? KEYS[k] : (k as string);
  if (name === undefined) throw new Error(`Unknown key number ${String(k)} in stored outputs`);
  return name;
}

/** Sets `out[name]` to the value the stored `v` stands for. */
function setField(out: Record<string, unknown>, name: string, v: unknown, cells: readonly string[] | null | undefined) {
  let value = v;
  if (Array.isArray(v)) {
    const i = v[0] as number | string;
    if (typeof i === 'string') value = uuidOf(i);
    else {
      value = i >= 0 ? cells?.[i] : VALUES[-1 - i];
      if (value === undefined)
        throw new Error(`Stored value refers to ${i >= 0 ? 'cell' : 'value'} ${i}, unknown here`);
    }
  }
  // An own property even for `__proto__`, as JSON.parse makes it.
  if (name === '__proto__')
    Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
  else out[name] = value;
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
