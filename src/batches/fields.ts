/**
 * Cell readers shared by the kinds: each reads one column of a record, converts it to its typed value, and records a
 * `CellError` (its column, a stable code, and the catalogue key and values of "Expected X, got Y": src/i18n) instead
 * of throwing, so a row reports every bad cell at once. The sentence is worded at the edge (`formatCellErrors`), in
 * the person's locale, naming the column as their file does (`coluna 9 (Vencimento -> dueDate)`).
 *
 * The formats themselves (money, dates, documents, bar codes, BR Codes, GUIDs) live in src/formats; this file only
 * turns their `FormatError`s into cell errors with the column's name.
 */

import { clip, excerptValue } from '../errors.js';
import { parseDate } from '../formats/dates.js';
import { FormatError } from '../formats/errors.js';
import { formatAmount, parseAmount } from '../formats/money.js';
import { day, type Locale, type Message, type MessageKey, msg, type Params, render } from '../i18n/index.js';
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
  excelError: 'EXCEL_ERROR',
} as const;

/**
 * The error values a formula shows in Excel, as it writes them into a CSV, in Portuguese and in English (`#N/D`,
 * `#VALOR!`, ...): never what the person meant to send.
 */
const EXCEL_ERROR_VALUES = new Set(
  [
    '#N/D',
    '#N/A',
    '#VALOR!',
    '#VALUE!',
    '#REF!',
    '#DIV/0!',
    '#NOME?',
    '#NAME?',
    '#NUM!',
    '#NULO!',
    '#NULL!',
    '#CAMPO!',
    '#FIELD!',
    '#DESPEJAR!',
    '#SPILL!',
    '#CALC!',
    '#OBTENDO_DADOS',
    '#GETTING_DATA',
  ].map((v) => v.toUpperCase()),
);

/** A long number as Excel writes it when the cell is not Text (`1,12223E+13`, `3.41913E+43`): its digits are lost. */
const EXCEL_SCIENTIFIC = /^\d(?:[.,]\d+)?E\+\d+$/i;

/**
 * What Excel wrote instead of the value typed, as the sentence a person reads in place of the column's own message:
 * the error value of a formula, or a number in scientific notation. Undefined: the cell is not one of those.
 */
function excelArtefact(raw: string | undefined): Message | undefined {
  if (raw === undefined || raw.length === 0 || raw.length > 20) return undefined;
  const value = raw.trim();
  if (EXCEL_ERROR_VALUES.has(value.toUpperCase())) return msg('EXCEL_ERROR', { got: shown(value) });
  if (EXCEL_SCIENTIFIC.test(value)) return msg('EXCEL_ERROR.scientific', { got: shown(value) });
  return undefined;
}

/** Most characters of a cell quoted in a cell error (src/errors.ts `excerpt`): a long cell must not flood the result. */
export const SHOWN_MAX_CHARS = 60;

/** How a value is quoted in a message: at most 60 characters, then `…` and its length. */
export function shown(value: string): string | Message {
  return excerptValue(value, SHOWN_MAX_CHARS);
}

/** Whether `value` holds a control character (U+0000-U+001F or U+007F): a char loop, cheaper than a regex per cell. */
function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

const NO_OPTIONS = {};
const EMAIL_OPTIONS = { max: 100, code: 'INVALID_EMAIL', key: 'INVALID_EMAIL' as const };
const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** A phrase a kind puts in a sentence (`when`, `why`, `expected`): a catalogue message. */
export type Phrase = Message;

const EXPECT_EMAIL = msg('EXPECT.email');

/** Dates a column accepts, both ends included (yyyy-mm-dd), and how the message names them. */
export interface DateRange {
  from: string;
  to: string;
  /** e.g. "a due date (today to 10 years ahead)" */
  what: Phrase;
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

  /** Records a cell error: its stable code, and the sentence's catalogue key (default: the code) and values. */
  error(column: string | undefined, code: string, key: MessageKey, params?: Params): void {
    this.#push(column, code, msg(key, params));
  }
  /** Records an error about columns of which any one would do (`CellError.anyOf`): none of them has a value. */
  errorAnyOf(columns: readonly [string, ...string[]], code: string, key: MessageKey, params?: Params): void {
    this.errors.push({ column: columns[0], anyOf: columns, code, message: msg(key, params) });
  }
  /** Records an error whose catalogue message a validator built (its key and values). */
  errorMessage(column: string | undefined, code: string, message: Message): void {
    this.#push(column, code, message);
  }

  /**
   * Records a cell error; a cell that holds what Excel wrote instead of the value typed (a formula's `#N/D`, a CNPJ
   * as `1,12223E+13`) is told as such instead of by the column's own rule (which would quote a stray `#` or `,`).
   */
  #push(column: string | undefined, code: string, message: Message): void {
    if (column === undefined) {
      this.errors.push({ code, message });
      return;
    }
    this.errors.push({ column, code, message: excelArtefact(this.record[column]) ?? message });
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
  require(column: string, when?: Phrase): boolean {
    if (this.has(column)) return true;
    this.error(column, CELL_ERROR_CODES.required, 'REQUIRED', { when });
    return false;
  }

  /** Records NOT_ALLOWED when present. */
  forbid(column: string, why: Phrase): void {
    if (this.has(column)) {
      this.error(column, CELL_ERROR_CODES.notAllowed, 'NOT_ALLOWED', { why, got: shown(this.record[column]!) });
    }
  }

  /**
   * Free text: no control characters, at most `max` characters. With `dropLineBreaks`, line breaks and tabs are
   * removed first (a code that is never written with them, copied wrapped or typed with Alt+Enter).
   */
  text(
    column: string,
    options: { required?: boolean; when?: Phrase; max?: number; min?: number; dropLineBreaks?: boolean } = NO_OPTIONS,
  ): string | undefined {
    const cell = this.record[column];
    const value = options.dropLineBreaks && cell !== undefined ? cell.replace(/[\r\n\t]/g, '') : cell;
    if (value === undefined || value === '') {
      if (options.required) this.require(column, options.when);
      return undefined;
    }
    if (hasControl(value)) {
      this.error(column, CELL_ERROR_CODES.invalidText, 'INVALID_TEXT', { got: shown(value) });
      return undefined;
    }
    // Lengths are counted in UTF-16 code units, as the bank counts them (the sandbox's `string.length`; a .NET or
    // JavaScript service does the same): an emoji counts 2. Counting code points would pass a name the bank refuses.
    const length = value.length;
    if (options.max !== undefined && length > options.max) {
      this.error(column, CELL_ERROR_CODES.tooLong, 'TOO_LONG', { max: options.max, got: length });
      return undefined;
    }
    if (options.min !== undefined && length < options.min) {
      this.error(column, CELL_ERROR_CODES.invalidText, 'INVALID_TEXT.min', { min: options.min, got: length });
      return undefined;
    }
    return value;
  }

  /** Text matching `pattern`, described as `expected` in the error. */
  pattern(
    column: string,
    pattern: RegExp,
    expected: Phrase,
    options: { required?: boolean; when?: Phrase; code?: string; key?: MessageKey; max?: number } = NO_OPTIONS,
  ): string | undefined {
    const value = this.text(column, options);
    if (value === undefined) return undefined;
    if (!pattern.test(value)) {
      this.error(column, options.code ?? CELL_ERROR_CODES.invalidText, options.key ?? 'PATTERN', {
        expected,
        got: shown(value),
      });
      return undefined;
    }
    return value;
  }

  /**
   * One of `values`, case aside; or one of `words` (the values as sheets write them: `Pix dinâmico`), compared with
   * case, accents, spaces, `-` and `_` aside. Anything else is INVALID_ENUM, never guessed.
   */
  enumOf<T extends string>(
    column: string,
    values: readonly T[],
    options: { required?: boolean; when?: Phrase; words?: Readonly<Record<string, T>> } = NO_OPTIONS,
  ): T | undefined {
    if (!this.has(column)) {
      if (options.required) this.require(column, options.when);
      return undefined;
    }
    const raw = this.record[column]!;
    if (options.words !== undefined) {
      const word = raw
        .normalize('NFD')
        .replace(/[\u0300-\u036f]/g, '')
        .replace(/[\s_-]+/g, '')
        .toLowerCase();
      const mapped = Object.hasOwn(options.words, word) ? options.words[word] : undefined;
      if (mapped !== undefined) return mapped;
    }
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
      this.error(column, CELL_ERROR_CODES.invalidEnum, 'INVALID_ENUM', { values: values.join(', '), got: shown(raw) });
    }
    return found;
  }

  guid(column: string, options: { required?: boolean; when?: Phrase } = NO_OPTIONS): string | undefined {
    const value = this.text(column, options);
    if (value === undefined) return undefined;
    if (!v.isGuid(value)) {
      this.error(column, CELL_ERROR_CODES.invalidGuid, 'INVALID_GUID', { got: shown(value) });
      return undefined;
    }
    return value.toLowerCase();
  }

  /** Money in the dialect's decimal mark, exact in cents; `positive` requires > 0, `maxCents` bounds it. */
  amount(
    column: string,
    options: { required?: boolean; when?: Phrase; positive?: boolean; maxCents?: Cents; maxWhy?: Phrase } = NO_OPTIONS,
  ): Cents | undefined {
    if (!this.has(column)) {
      if (options.required) this.require(column, options.when);
      return undefined;
    }
    const raw = this.record[column]!;
    let cents: Cents;
    try {
      cents = parseAmount(withoutCurrency(raw), this.dialect.decimalMark);
    } catch (err) {
      return this.formatFailed(column, err, true);
    }
    if (options.positive !== false && cents <= 0) {
      this.error(column, CELL_ERROR_CODES.amountNotPositive, 'AMOUNT_NOT_POSITIVE', { got: shown(raw) });
      return undefined;
    }
    if (options.maxCents !== undefined && cents > options.maxCents) {
      this.error(column, CELL_ERROR_CODES.amountTooLarge, 'AMOUNT_TOO_LARGE', {
        max: formatAmount(options.maxCents, this.dialect.decimalMark),
        why: options.maxWhy,
        got: shown(raw),
      });
      return undefined;
    }
    return cents;
  }

  /** A percentage with up to 2 decimals in the dialect's decimal mark ("2,5" -> 2.5). */
  percent(column: string, options: { required?: boolean; when?: Phrase } = NO_OPTIONS): number | undefined {
    const cents = this.amount(column, { required: options.required, when: options.when, positive: false });
    return cents === undefined ? undefined : cents / 100;
  }

  /**
   * yyyy-mm-dd or dd/mm/yyyy, returned as yyyy-mm-dd. `range` bounds it (both ends included) the way the bank does
   * (a due date from today to 10 years ahead): DATE_OUT_OF_RANGE outside, saying the range and why.
   */
  date(
    column: string,
    options: { required?: boolean; when?: Phrase; range?: DateRange } = NO_OPTIONS,
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
      // The person's own cell and dates as their locale writes them (it said `veio 2026-11-01` for `01/11/2026`).
      this.error(column, CELL_ERROR_CODES.dateOutOfRange, 'DATE_OUT_OF_RANGE', {
        what: range.what,
        from: day(range.from),
        to: day(range.to),
        got: shown(raw),
      });
      return undefined;
    }
    return date;
  }

  /** A whole number in [min, max]. */
  integer(
    column: string,
    options: { required?: boolean; when?: Phrase; min?: number; max?: number } = NO_OPTIONS,
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
      this.error(column, CELL_ERROR_CODES.invalidNumber, 'INVALID_NUMBER', { min, max, got: shown(raw) });
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
    this.error(column, CELL_ERROR_CODES.invalidBoolean, 'INVALID_BOOLEAN', { got: shown(this.record[column]!) });
    return undefined;
  }

  /** CPF (11 digits) or CNPJ (14, letters allowed in the new format), punctuation tolerated; returned bare. */
  document(
    column: string,
    options: { required?: boolean; when?: Phrase; only?: 'cpf' | 'cnpj' } = NO_OPTIONS,
  ): string | undefined {
    const value = this.text(column, options);
    if (value === undefined) return undefined;
    const bare = v.bareDocument(value);
    const problem = v.documentProblem(value, options.only, bare);
    if (problem !== undefined) {
      this.#push(column, problem.code, problem.message);
      return undefined;
    }
    return bare;
  }

  /** Two-letter state code (UF), upper-cased. */
  state(column: string, options: { required?: boolean; when?: Phrase } = NO_OPTIONS): string | undefined {
    const value = this.text(column, options);
    if (value === undefined) return undefined;
    const uf = value.toUpperCase();
    if (!v.isUf(uf)) {
      this.error(column, CELL_ERROR_CODES.invalidState, 'INVALID_STATE', { got: shown(value) });
      return undefined;
    }
    return uf;
  }

  /** CEP: 8 digits, with or without the hyphen; returned as 8 digits. */
  zipCode(column: string, options: { required?: boolean; when?: Phrase } = NO_OPTIONS): string | undefined {
    const value = this.text(column, options);
    if (value === undefined) return undefined;
    if (!v.isValidCep(value)) {
      // 7 digits and nothing else: Excel read `01310100` as a number and dropped its zero. Said, never guessed.
      if (/^\d{5,7}$/.test(value)) {
        const d = value.padStart(8, '0');
        this.error(column, CELL_ERROR_CODES.invalidZipCode, 'INVALID_ZIP_CODE.leadingZeros', {
          got: shown(value),
          length: value.length,
          padded: `${d.slice(0, 5)}-${d.slice(5)}`,
        });
      } else {
        this.error(column, CELL_ERROR_CODES.invalidZipCode, 'INVALID_ZIP_CODE', { got: shown(value) });
      }
      return undefined;
    }
    return value.replace('-', '');
  }

  email(column: string, options: { required?: boolean; when?: Phrase; max?: number } = NO_OPTIONS): string | undefined {
    // The common call (no options) shares one constant options object instead of spreading a new one per row.
    const o =
      options.required === undefined && options.when === undefined && options.max === undefined
        ? EMAIL_OPTIONS
        : { max: 100, ...options, code: CELL_ERROR_CODES.invalidEmail, key: 'INVALID_EMAIL' as const };
    return this.pattern(column, EMAIL_PATTERN, EXPECT_EMAIL, o);
  }

  /**
   * Runs a format parser; a `FormatError` becomes a cell error with its code and its catalogue sentence (which says
   * what it got, or names the field that is wrong: a BR Code carries a Pix key, so it is never quoted whole).
   */
  format<T>(column: string, parse: () => T): T | undefined {
    try {
      return parse();
    } catch (err) {
      return this.formatFailed(column, err);
    }
  }

  /**
   * What `format` does with what a format parser threw (amount and date call the parsers without a closure): its
   * catalogue sentence (`detail`) with a long quoted cell cut to an excerpt. An amount's error in a file of the other
   * decimal mark than the reader's expectation says how this file writes decimals (`use vírgula: 1.234,56`), when
   * the error is about the marks (`SEPARATOR_ERRORS`): not for a sign, an empty cell, letters or a size.
   */
  private formatFailed(column: string, err: unknown, amount = false): undefined {
    if (!(err instanceof FormatError)) throw err;
    const found = this.record[column];
    const long = found !== undefined && found.length > SHOWN_MAX_CHARS;
    const params: Record<string, Params[string]> = { ...err.detail.params };
    // A parser that quotes the whole cell it got: a long cell is shown as an excerpt, once for every parser. (A part
    // of the cell, a BR Code's field, is quoted as it is: never the whole code, which carries a Pix key.)
    if (long && params.got === JSON.stringify(found)) params.got = shown(found!);
    let message: Message = msg(err.detail.key, params);
    if (amount && SEPARATOR_ERRORS.has(err.detail.key)) {
      const hint = msg(this.dialect.decimalMark === ',' ? 'HINT.decimalComma' : 'HINT.decimalDot');
      message = msg('WITH_HINT', { message, hint });
    }
    this.#push(column, err.code, message);
    return undefined;
  }

  /** The parse result: the row when no error was recorded. */
  finish<Row>(row: Row | undefined): ParseResult<Row> {
    // A formula's error value is never what the person meant, even in a column of free text (a payer's name, a
    // description): the row is rejected, naming it, rather than sent to the bank with `#N/D` in it.
    for (const column of this.filledColumns) {
      const raw = this.record[column]!;
      if (raw.length > 20 || !EXCEL_ERROR_VALUES.has(raw.trim().toUpperCase())) continue;
      if (this.errors.some((e) => e.column === column)) continue;
      this.#push(column, CELL_ERROR_CODES.excelError, msg('EXCEL_ERROR', { got: shown(raw.trim()) }));
    }
    if (this.errors.length > 0) return { ok: false, errors: this.errors };
    // Every path that leaves the row undefined records an error first; this guards against a missed one.
    if (row === undefined) return { ok: false, errors: [{ code: 'INVALID_ROW', message: msg('INVALID_ROW') }] };
    return { ok: true, row };
  }
}

/** The amount errors about decimal and thousands marks: the ones the file's own way of writing decimals helps with. */
const SEPARATOR_ERRORS: ReadonlySet<string> = new Set([
  'AMBIGUOUS_AMOUNT',
  'INVALID_AMOUNT.edges',
  'INVALID_AMOUNT.marks',
  'INVALID_AMOUNT.markCount',
  'INVALID_AMOUNT.decimals',
  'INVALID_AMOUNT.grouping',
]);

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

/**
 * How a column is named to a person: `coluna 4 (Vencimento -> dueDate)`; `has`: whether the file has that column. See
 * {@link columnLabeller}.
 */
export interface ColumnLabel {
  (column: string): Message;
  has(column: string): boolean;
}

/** The label of a file whose header is not known: every column by its own name (`coluna dueDate`). */
const absentLabel: ColumnLabel = Object.assign((column: string) => msg('WHERE.columnAbsent', { column }), {
  has: () => false,
});

/** The column a cell error is told at: the first of its `anyOf` that the file has, else its own. */
export function shownColumn(error: CellError, label: ColumnLabel): string | undefined {
  return error.anyOf?.find((column) => label.has(column)) ?? error.column;
}

/**
 * Names a kind's column as the person's file does, the internal name beside it: `coluna 4 (Vencimento -> dueDate)`,
 * `coluna 2 (amount)` when the file calls it so, `coluna dueDate` when the file has no such column. `header` is the
 * file's header in order (source text, and the column each maps to; a supplied column has no place in the file).
 */
export function columnLabeller(
  header: ReadonlyArray<{ source: string; column?: string | null; supplied?: true }>,
): ColumnLabel {
  const labels = new Map<string, Message>();
  header.forEach((h, i) => {
    if (h.column == null || h.supplied || labels.has(h.column)) return;
    const source = clip(h.source, SHOWN_MAX_CHARS);
    labels.set(
      h.column,
      source === h.column
        ? msg('WHERE.columnSame', { index: i + 1, column: h.column })
        : msg('WHERE.column', { index: i + 1, source, column: h.column }),
    );
  });
  return Object.assign((column: string) => labels.get(column) ?? absentLabel(column), {
    has: (column: string) => labels.has(column),
  });
}

/** The cell errors of one row for its result cell: `coluna 4 (Vencimento -> dueDate): Esperava ...; coluna 7 ...`. */
export function formatCellErrors(
  errors: readonly CellError[],
  locale: Locale,
  label: ColumnLabel = absentLabel,
): string {
  return errors
    .map((e) => {
      const column = shownColumn(e, label);
      return column ? `${render(locale, label(column))}: ${render(locale, e.message)}` : render(locale, e.message);
    })
    .join('; ');
}

/**
 * The amount an `amount` cell holds when it can be read (currency sign allowed), else undefined: what a rejected row
 * would have moved, for the summary's rejected total.
 */
export function readableAmount(raw: string | undefined, dialect: Dialect): Cents | undefined {
  if (raw === undefined || raw === '') return undefined;
  try {
    return parseAmount(withoutCurrency(raw), dialect.decimalMark);
  } catch {
    return undefined;
  }
}

/** An amount cell read without a currency sign: `R$ 50,00` is `50,00` (the sign is not ambiguous, Excel adds it). */
function withoutCurrency(raw: string): string {
  return raw.startsWith('R$') ? raw.slice(2).trimStart() : raw;
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
