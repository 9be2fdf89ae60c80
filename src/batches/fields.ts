/**
 * Cell readers shared by the kinds: each reads one column of a record, converts it to its typed value, and records a
 * `CellError` ("Expected X, got Y", naming the column) instead of throwing, so a row reports every bad cell at once.
 *
 * The formats themselves (money, dates, documents, bar codes, BR Codes, GUIDs) live in src/formats; this file only
 * turns their `FormatError`s into cell errors with the column's name.
 */

import { clip, excerpt } from '../errors.js';
import { parseDate } from '../formats/dates.js';
import { FormatError } from '../formats/errors.js';
import { formatAmount, parseAmount } from '../formats/money.js';
import type { Cents } from '../types.js';
import type { CellError, Dialect, ParseResult } from './kind.js';
import * as v from './validators.js';

/** Stable cell error codes (in addition to the `FormatError` codes passed through: INVALID_AMOUNT, ...). */
export const CELL_ERROR_CODES = {
  required: 'REQUIRED',
  notAllowed: 'NOT_ALLOWED',
  tooLong: 'TOO_LONG',
  invalidText: 'INVALID_TEXT',
  invalidEnum: 'INVALID_ENUM',
  invalidGuid: 'INVALID_GUID',
  amountNotPositive: 'AMOUNT_NOT_POSITIVE',
  invalidNumber: 'INVALID_NUMBER',
  invalidBoolean: 'INVALID_BOOLEAN',
  invalidDocument: 'INVALID_DOCUMENT',
  invalidState: 'INVALID_STATE',
  invalidZipCode: 'INVALID_ZIP_CODE',
  invalidEmail: 'INVALID_EMAIL',
  invalidPhone: 'INVALID_PHONE',
  conflict: 'CONFLICT',
  dateOutOfRange: 'DATE_OUT_OF_RANGE',
  amountTooLarge: 'AMOUNT_TOO_LARGE',
  columnCount: 'COLUMN_COUNT',
} as const;

/** Most characters of a cell quoted in a cell error (src/errors.ts `excerpt`): a long cell must not flood the result. */
export const SHOWN_MAX_CHARS = 60;

/** How a value is quoted in a message: at most 60 characters, then `…` and its length. */
export function shown(value: string): string {
  return excerpt(value, SHOWN_MAX_CHARS);
}

/** Longest cell error message kept whole; a format message that quoted a long cell in full is cut there. */
const MAX_CELL_MESSAGE_CHARS = 500;

/** Whether `value` holds a control character (U+0000-U+001F or U+007F): a char loop, cheaper than a regex per cell. */
function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

const NO_OPTIONS = {};
const EMAIL_OPTIONS = { max: 100, code: 'INVALID_EMAIL' };
const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Dates a column accepts, both ends included (yyyy-mm-dd), and how the message names them. */
export interface DateRange {
  from: string;
  to: string;
  /** e.g. "a due date (today to 10 years ahead)" */
  what: string;
}

/** Reads the cells of one record; collects errors. One instance per row. */
export class CellReader {
  readonly errors: CellError[] = [];

  #columns: string[] | undefined;

  constructor(
    readonly record: Readonly<Record<string, string>>,
    readonly dialect: Dialect,
  ) {}

  /** The columns that have a value (computed once). */
  get filledColumns(): readonly string[] {
    this.#columns ??= Object.keys(this.record).filter((k) => this.record[k] !== '');
    return this.#columns;
  }

  /** Filled columns equal to `prefix` or starting with it (`payer.` -> payer.name, payer.document...). */
  filledUnder(prefix: string): string[] {
    return this.filledColumns.filter((k) => k === prefix || k.startsWith(prefix));
  }

  /** Whether any column equal to `prefix` or starting with it is filled (`filledUnder` without the array). */
  anyFilledUnder(prefix: string): boolean {
    const record = this.record;
    for (const k in record) {
      if (k.startsWith(prefix) && record[k] !== '') return true;
    }
    return false;
  }

  error(column: string | undefined, code: string, message: string): void {
    this.errors.push(column === undefined ? { code, message } : { column, code, message });
  }

  has(column: string): boolean {
    const value = this.record[column];
    return value !== undefined && value !== '';
  }

  /** The first of `columns` that has a value. */
  anyOf(columns: readonly string[]): string | undefined {
    return columns.find((c) => this.has(c));
  }

  /** Records REQUIRED when absent; returns whether present. */
  require(column: string, when?: string): boolean {
    if (this.has(column)) return true;
    this.error(column, CELL_ERROR_CODES.required, `Expected a value${when ? ` (${when})` : ''}, got an empty cell`);
    return false;
  }

  /** Records NOT_ALLOWED when present. */
  forbid(column: string, why: string): void {
    if (this.has(column)) {
      this.error(
        column,
        CELL_ERROR_CODES.notAllowed,
        `Expected an empty cell (${why}), got ${shown(this.record[column]!)}`,
      );
    }
  }

  /** Free text: no control characters, at most `max` characters. */
  text(
    column: string,
    options: { required?: boolean; when?: string; max?: number; min?: number } = NO_OPTIONS,
  ): string | undefined {
    const value = this.record[column];
    if (value === undefined || value === '') {
      if (options.required) this.require(column, options.when);
      return undefined;
    }
    if (hasControl(value)) {
      this.error(
        column,
        CELL_ERROR_CODES.invalidText,
        `Expected text without control characters (tabs, line breaks), got ${shown(value)}`,
      );
      return undefined;
    }
    // Lengths are counted in UTF-16 code units, as the bank counts them (the sandbox's `string.length`; a .NET or
    // JavaScript service does the same): an emoji counts 2. Counting code points would pass a name the bank refuses.
    const length = value.length;
    if (options.max !== undefined && length > options.max) {
      this.error(column, CELL_ERROR_CODES.tooLong, `Expected at most ${options.max} characters, got ${length}`);
      return undefined;
    }
    if (options.min !== undefined && length < options.min) {
      this.error(column, CELL_ERROR_CODES.invalidText, `Expected at least ${options.min} characters, got ${length}`);
      return undefined;
    }
    return value;
  }

  /** Text matching `pattern`, described as `expected` in the error. */
  pattern(
    column: string,
    pattern: RegExp,
    expected: string,
    options: { required?: boolean; when?: string; code?: string; max?: number } = NO_OPTIONS,
  ): string | undefined {
    const value = this.text(column, options);
    if (value === undefined) return undefined;
    if (!pattern.test(value)) {
      this.error(column, options.code ?? CELL_ERROR_CODES.invalidText, `Expected ${expected}, got ${shown(value)}`);
      return undefined;
    }
    return value;
  }

  enumOf<T extends string>(
    column: string,
    values: readonly T[],
    options: { required?: boolean; when?: string } = NO_OPTIONS,
  ): T | undefined {
    if (!this.has(column)) {
      if (options.required) this.require(column, options.when);
      return undefined;
    }
    const raw = this.record[column]!;
    let found: T | undefined;
    for (let i = 0; i < values.length; i++) {
      if (values[i] === raw) {
        found = values[i];
        break;
      }
    }
    if (found === undefined) {
      const lower = raw.toLowerCase();
      found = values.find((x) => x.toLowerCase() === lower);
    }
    if (found === undefined) {
      this.error(column, CELL_ERROR_CODES.invalidEnum, `Expected one of ${values.join(', ')}, got ${shown(raw)}`);
    }
    return found;
  }

  guid(column: string, options: { required?: boolean; when?: string } = NO_OPTIONS): string | undefined {
    const value = this.text(column, options);
    if (value === undefined) return undefined;
    if (!v.isGuid(value)) {
      this.error(
        column,
        CELL_ERROR_CODES.invalidGuid,
        `Expected a GUID like 3f2504e0-4f89-41d3-9a0c-0305e82c3301, got ${shown(value)}`,
      );
      return undefined;
    }
    return value.toLowerCase();
  }

  /** Money in the dialect's decimal mark, exact in cents; `positive` requires > 0, `maxCents` bounds it. */
  amount(
    column: string,
    options: { required?: boolean; when?: string; positive?: boolean; maxCents?: Cents; maxWhy?: string } = NO_OPTIONS,
  ): Cents | undefined {
    if (!this.has(column)) {
      if (options.required) this.require(column, options.when);
      return undefined;
    }
    const raw = this.record[column]!;
    let cents: Cents;
    try {
      cents = parseAmount(raw, this.dialect.decimalMark);
    } catch (err) {
      return this.formatFailed(column, err);
    }
    if (options.positive !== false && cents <= 0) {
      this.error(column, CELL_ERROR_CODES.amountNotPositive, `Expected an amount greater than 0, got ${shown(raw)}`);
      return undefined;
    }
    if (options.maxCents !== undefined && cents > options.maxCents) {
      this.error(
        column,
        CELL_ERROR_CODES.amountTooLarge,
        `Expected an amount of at most ${formatAmount(options.maxCents, this.dialect.decimalMark)}${options.maxWhy ? ` (${options.maxWhy})` : ''}, got ${shown(raw)}`,
      );
      return undefined;
    }
    return cents;
  }

  /** A percentage with up to 2 decimals in the dialect's decimal mark ("2,5" -> 2.5). */
  percent(column: string, options: { required?: boolean; when?: string } = NO_OPTIONS): number | undefined {
    const cents = this.amount(column, { required: options.required, when: options.when, positive: false });
    return cents === undefined ? undefined : cents / 100;
  }

  /**
   * yyyy-mm-dd or dd/mm/yyyy, returned as yyyy-mm-dd. `range` bounds it (both ends included) the way the bank does
   * (a due date from today to 10 years ahead): DATE_OUT_OF_RANGE outside, saying the range and why.
   */
  date(
    column: string,
    options: { required?: boolean; when?: string; range?: DateRange } = NO_OPTIONS,
  ): string | undefined {
    if (!this.has(column)) {
      if (options.required) this.require(column, options.when);
      return undefined;
    }
    const raw = this.record[column]!;
    let date: string;
    try {
      date = parseDate(raw);
    } catch (err) {
      return this.formatFailed(column, err);
    }
    const range = options.range;
    if (range !== undefined && (date < range.from || date > range.to)) {
      this.error(
        column,
        CELL_ERROR_CODES.dateOutOfRange,
        `Expected ${range.what} from ${range.from} to ${range.to}, got ${date}`,
      );
      return undefined;
    }
    return date;
  }

  /** A whole number in [min, max]. */
  integer(
    column: string,
    options: { required?: boolean; when?: string; min?: number; max?: number } = NO_OPTIONS,
  ): number | undefined {
    if (!this.has(column)) {
      if (options.required) this.require(column, options.when);
      return undefined;
    }
    const raw = this.record[column]!;
    const min = options.min ?? 0;
    const max = options.max ?? Number.MAX_SAFE_INTEGER;
    const n = /^\d{1,15}$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      this.error(
        column,
        CELL_ERROR_CODES.invalidNumber,
        `Expected a whole number from ${min} to ${max}, got ${shown(raw)}`,
      );
      return undefined;
    }
    return n;
  }

  boolean(column: string, options: { required?: boolean } = NO_OPTIONS): boolean | undefined {
    if (!this.has(column)) {
      if (options.required) this.require(column);
      return undefined;
    }
    const raw = this.record[column]!.toLowerCase();
    if (['true', 'yes', 'sim', 's', '1'].includes(raw)) return true;
    if (['false', 'no', 'nao', 'não', 'n', '0'].includes(raw)) return false;
    this.error(column, CELL_ERROR_CODES.invalidBoolean, `Expected true or false, got ${shown(this.record[column]!)}`);
    return undefined;
  }

  /** CPF (11 digits) or CNPJ (14, letters allowed in the new format), punctuation tolerated; returned bare. */
  document(
    column: string,
    options: { required?: boolean; when?: string; only?: 'cpf' | 'cnpj' } = NO_OPTIONS,
  ): string | undefined {
    const value = this.text(column, options);
    if (value === undefined) return undefined;
    const bare = v.bareDocument(value);
    const problem = v.documentProblem(value, options.only, bare);
    if (problem !== undefined) {
      this.error(column, problem.code, problem.message);
      return undefined;
    }
    return bare;
  }

  /** Two-letter state code (UF), upper-cased. */
  state(column: string, options: { required?: boolean; when?: string } = NO_OPTIONS): string | undefined {
    const value = this.text(column, options);
    if (value === undefined) return undefined;
    const uf = value.toUpperCase();
    if (!v.isUf(uf)) {
      this.error(
        column,
        CELL_ERROR_CODES.invalidState,
        `Expected a two-letter state code (UF) such as SP or RJ, got ${shown(value)}`,
      );
      return undefined;
    }
    return uf;
  }

  /** CEP: 8 digits, with or without the hyphen; returned as 8 digits. */
  zipCode(column: string, options: { required?: boolean; when?: string } = NO_OPTIONS): string | undefined {
    const value = this.text(column, options);
    if (value === undefined) return undefined;
    if (!v.isValidCep(value)) {
      this.error(
        column,
        CELL_ERROR_CODES.invalidZipCode,
        `Expected a zip code (CEP) of 8 digits like 01310-100, got ${shown(value)}`,
      );
      return undefined;
    }
    return value.replace('-', '');
  }

  email(column: string, options: { required?: boolean; when?: string; max?: number } = NO_OPTIONS): string | undefined {
    // The common call (no options) shares one constant options object instead of spreading a new one per row.
    const o =
      options.required === undefined && options.when === undefined && options.max === undefined
        ? EMAIL_OPTIONS
        : { max: 100, ...options, code: CELL_ERROR_CODES.invalidEmail };
    return this.pattern(column, EMAIL_PATTERN, 'an e-mail address like ana@example.com', o);
  }

  /**
   * Runs a format parser; a `FormatError` becomes a cell error with its code. Its message gets the found value
   * appended when it does not already say what it got ("Expected ..., got ...").
   */
  format<T>(column: string, parse: () => T): T | undefined {
    try {
      return parse();
    } catch (err) {
      return this.formatFailed(column, err);
    }
  }

  /** What `format` does with what a format parser threw (amount and date call the parsers without a closure). */
  private formatFailed(column: string, err: unknown): undefined {
    if (err instanceof FormatError) {
      const found = this.record[column];
      let message =
        /\bgot\b/.test(err.message) || found === undefined ? err.message : `${err.message}, got ${shown(found)}`;
      // The format parsers quote what they got; a long cell is shown as an excerpt here, once for every parser.
      if (found !== undefined && found.length > SHOWN_MAX_CHARS && message.length > MAX_CELL_MESSAGE_CHARS) {
        message = message
          .replaceAll(JSON.stringify(found), shown(found))
          .replaceAll(found, clip(found, SHOWN_MAX_CHARS));
      }
      this.error(column, err.code, clip(message, MAX_CELL_MESSAGE_CHARS));
      return undefined;
    }
    throw err;
  }

  /** The parse result: the row when no error was recorded. */
  finish<Row>(row: Row | undefined): ParseResult<Row> {
    if (this.errors.length > 0) return { ok: false, errors: this.errors };
    // Every path that leaves the row undefined records an error first; this guards against a missed one.
    if (row === undefined)
      return {
        ok: false,
        errors: [{ code: 'INVALID_ROW', message: 'Expected a valid row, got one that could not be read' }],
      };
    return { ok: true, row };
  }
}

/**
 * A kind's `parse`: reads one record through `read` with a fresh {@link CellReader}, then gives the row, or every cell
 * error `read` recorded (`read` returns undefined only after recording one).
 */
export function recordParser<Row>(
  read: (r: CellReader) => Row | undefined,
): (record: Readonly<Record<string, string>>, dialect: Dialect) => ParseResult<Row> {
  return (record, dialect) => {
    const r = new CellReader(record, dialect);
    return r.finish(read(r));
  };
}

/** "payer.document: Expected ...; amount: Expected ..." for one result cell. */
export function formatCellErrors(errors: readonly CellError[]): string {
  return errors.map((e) => (e.column ? `${e.column}: ${e.message}` : e.message)).join('; ');
}

/** Sets `value` at a dotted path (`payer.address.zipCode`) when defined; used to build nested request objects. */
export function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  if (value === undefined) return;
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (typeof next !== 'object' || next === null) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts[parts.length - 1]!] = value;
}

/**
 * The natural key of a kind whose key is a business fact (a bill + amount + date, a QR payload + amount, a Pix key, a
 * change of a charge) rather than an id the bank gives the thing: a row with its own `idempotencyKey` is its own
 * intent. This is how a reusable static QR code is paid again next month, or a key claimed again after a claim
 * ended: give the row a new key. Without an explicit key, equal business facts are one intent (a duplicate).
 */
export function naturalKeyWithExplicit(base: string, explicitKey: string | undefined): string {
  return explicitKey === undefined ? base : `${base}|key=${explicitKey}`;
}

/** Canonical JSON: keys sorted at every level, so equal values give equal text (natural keys). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
