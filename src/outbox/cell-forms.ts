/**
 * The form of identifiers and dates in answers (result files and the retorno), for the two kinds of reader they have.
 *
 * - A person in Excel pt-BR (the spreadsheet form). Excel reads every cell of digits as a number: a 47-digit digitable
 *   line or a 44-digit bar code becomes `3,41917E+46` (and, saved, stays so: the digits are gone), a Nosso número, CEP
 *   or CPF loses its leading zeros. So, in this form:
 *   - a digitable line is written as printed on the slip (`43590.00116 12000.000060 90000.520637 0 51038000000010`;
 *     a tax bill's `85890000460-9 52460179160-5 ...`): spaces make it text, and it is what the person reads on paper;
 *   - any other identifier of digits (bar code, Nosso número, an ISPB, an id of digits) is written `="0123"`, a
 *     formula whose value is the text (src/csv/writer.ts `asTextFormula`): no mask is printed for them;
 *   - a cell of the input echoed as it was, when it is digits Excel would change (a leading zero, or 12 digits or more,
 *     which Excel shows in scientific notation and saves so), is written `="..."` too, its characters kept;
 *   - a date (yyyy-mm-dd) as `20/12/2026` and an instant (ISO 8601) as Brasília time, `05/12/2026 11:00:00`, as the
 *     person wrote the dates of the file and as Excel pt-BR reads them.
 * - A program (the machine form: an ERP reading its export's answer): bare digits and ISO dates, as the bank gave them.
 *
 * Which form, by setting (config `results`, applied live): `identifiers` and `dates`, each `auto` (default), or forced.
 * `auto` follows the dialect of the file answered: a decimal comma (a `;` file from a Brazilian spreadsheet, as the
 * reader detects it, or `csv.decimalMark: ","`) is the spreadsheet form; anything else (UTF-8 with ',' and '.', what an
 * ERP writes) is the machine form, whose bytes are those remessa always wrote.
 * remessa reads every form back (a result file dropped again, edited or not): `="..."` cells are unwrapped by the
 * reader (src/csv/reader.ts), masked lines and documents are read by their parsers, dates are read in either order,
 * and the columns the answer added are ignored (src/csv/headers.ts).
 */
import type { Dialect, ResultValueForm } from '../batches/kind.js';
import type { ResultCell } from '../csv/writer.js';
import { formatBillLine } from '../formats/bill-identifier.js';
import { brasiliaTime } from '../formats/brasilia-time.js';
import { isIsoDate } from '../formats/dates.js';

/** The `results` section of the configuration. */
export interface ResultFormSettings {
  /** `masked`: the spreadsheet form; `digits`: bare digits; `auto`: by the answered file's dialect. */
  identifiers: 'auto' | 'masked' | 'digits';
  /** `dayFirst`: dd/mm/yyyy and Brasília time; `iso`: as the bank gave them; `auto`: by the dialect. */
  dates: 'auto' | 'dayFirst' | 'iso';
}

export const DEFAULT_RESULT_FORMS: Readonly<ResultFormSettings> = { identifiers: 'auto', dates: 'auto' };

/** The forms one answer is written in, settled from the settings and the dialect. */
export interface ResultForms {
  identifiers: 'masked' | 'digits';
  dates: 'dayFirst' | 'iso';
}

/** Whether `dialect` is a Brazilian spreadsheet's: its decimal mark is a comma (see the top of this file). */
export function isSpreadsheetDialect(dialect: Pick<Dialect, 'decimalMark'>): boolean {
  return dialect.decimalMark === ',';
}

/** The forms of an answer in `dialect` under `settings`. */
export function resultForms(
  dialect: Pick<Dialect, 'decimalMark'>,
  settings: Partial<ResultFormSettings> = DEFAULT_RESULT_FORMS,
): ResultForms {
  const sheet = isSpreadsheetDialect(dialect);
  const identifiers = settings.identifiers ?? 'auto';
  const dates = settings.dates ?? 'auto';
  return {
    identifiers: identifiers === 'auto' ? (sheet ? 'masked' : 'digits') : identifiers,
    dates: dates === 'auto' ? (sheet ? 'dayFirst' : 'iso') : dates,
  };
}

const DIGITS = /^\d+$/;

/**
 * Digits Excel would change when it opens the file: a leading zero (dropped) or 12 digits or more (shown, and saved,
 * in scientific notation; past 15 the digits themselves are lost).
 */
export function excelWouldChange(text: string): boolean {
  return DIGITS.test(text) && ((text.length > 1 && text.startsWith('0')) || text.length >= 12);
}

/** An input cell echoed in the answer: its characters as they were, made text only where Excel would change them. */
export function inputCell(text: string, forms: ResultForms): ResultCell {
  return forms.identifiers === 'masked' && excelWouldChange(text) ? { asText: text } : text;
}

/** An output value of a column that holds `form` (undefined: no form, written as it is). */
export function outputCell(value: ResultCell, form: ResultValueForm | undefined, forms: ResultForms): ResultCell {
  if (typeof value !== 'string' || value === '' || form === undefined) return value;
  switch (form) {
    case 'digitableLine':
      if (forms.identifiers === 'digits') return value;
      return DIGITS.test(value) && (value.length === 47 || value.length === 48)
        ? formatBillLine(value)
        : identifierCell(value, forms);
    case 'identifier':
      return identifierCell(value, forms);
    case 'date':
      return forms.dates === 'dayFirst' ? dayFirstDate(value) : value;
    case 'instant':
      return forms.dates === 'dayFirst' ? dayFirstInstant(value) : value;
  }
}

/** An identifier: text, unless it is digits and the form is the spreadsheet's. */
export function identifierCell(value: string, forms: ResultForms): ResultCell {
  return forms.identifiers === 'masked' && DIGITS.test(value) ? { asText: value } : value;
}

/** `2026-12-20` -> `20/12/2026`; any other text as given. */
export function dayFirstDate(value: string): string {
  return isIsoDate(value) ? `${value.slice(8, 10)}/${value.slice(5, 7)}/${value.slice(0, 4)}` : value;
}

/** An ISO 8601 instant in Brasília time, day first (`05/12/2026 11:00:00`); a date alone as a date; else as given. */
export function dayFirstInstant(value: string): string {
  if (isIsoDate(value)) return dayFirstDate(value);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(value)) return value;
  // A time without a zone is the bank's UTC (src/formats/dates.ts `utcInstant`).
  const zoned = /(Z|[+-]\d\d:?\d\d)$/i.test(value) ? value : `${value}Z`;
  return brasiliaTime(zoned, true);
}
