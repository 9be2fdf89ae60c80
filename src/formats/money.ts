import { type MessageKey, moneyIn, type Params } from '../i18n/index.js';
import type { Cents } from '../types.js';
import { formatError } from './errors.js';

/**
 * Money at the edges: CSV text in either decimal mark, the wire's JSON decimal numbers, a BR Code's amount text.
 * Inside the program money is integer cents; every conversion here is exact (string arithmetic, no `* 100` on a
 * parsed float), and whatever could mean two amounts is refused, never guessed.
 */

/** Largest amount in cents any format here carries (13 characters "9999999999.99" in a BR Code). */
export const MAX_AMOUNT_CENTS: Cents = 999_999_999_999;

/** A spreadsheet dialect's decimal mark. */
export type DecimalMark = '.' | ',';

/** INVALID_AMOUNT by catalogue key (a cell's amount: the person reads it in their locale). */
function invalidAs(key: MessageKey, params: Params): never {
  throw formatError('INVALID_AMOUNT', key, params);
}

function requireCents(cents: number): void {
  if (!Number.isSafeInteger(cents) || cents < 0 || cents > MAX_AMOUNT_CENTS) {
    invalidAs('MONEY.cents', { max: MAX_AMOUNT_CENTS, got: cents });
  }
}

function toCents(integer: string, decimals: string, text: string): Cents {
  if (integer.replace(/^0+/, '').length > 10) invalidAs('INVALID_AMOUNT.tooLarge', { got: JSON.stringify(text) });
  return Number(integer) * 100 + Number(decimals.padEnd(2, '0'));
}

/** Up to 10 integer digits, optionally one mark and 1 or 2 decimals: unambiguous in both dialects. */
const SIMPLE_AMOUNT = /^(\d{1,10})(?:[.,](\d{1,2}))?$/;

/**
 * Reads an amount typed in a spreadsheet, exactly: `1.234,56`, `1234,56`, `1234.56`, `1,234.56`, `10`, `10,5`.
 *
 * - Both marks present: the last one is the decimal mark (once), the other groups thousands in groups of 3.
 * - One mark, repeated: thousands grouping (`1.234.567`); refused when it is the dialect's `decimalMark`.
 * - One mark, once: decimal mark with 1 or 2 decimals; followed by exactly 3 digits (`1.234`, `1,234`) it could be
 *   either, so `AMBIGUOUS_AMOUNT`.
 * - Signs, letters, spaces inside, more than 2 decimals, empty: `INVALID_AMOUNT`. Surrounding spaces are trimmed.
 */
export function parseAmount(text: string, decimalMark: DecimalMark): Cents {
  const value = text.trim();
  // Fast path of the common spellings (`1234`, `1234,5`, `1234.56`: up to 10 digits, one mark with 1 or 2 decimals),
  // which every rule below reads the same way in either dialect. Validation of big files spends real time here.
  const simple = SIMPLE_AMOUNT.exec(value);
  if (simple) return Number(simple[1]) * 100 + (simple[2] === undefined ? 0 : Number(simple[2].padEnd(2, '0')));
  if (value === '') invalidAs('INVALID_AMOUNT.empty', {});
  if (/^[+-]/.test(value)) invalidAs('INVALID_AMOUNT.sign', { got: JSON.stringify(text) });
  const bad = /[^0-9.,]/.exec(value);
  if (bad) invalidAs('INVALID_AMOUNT.characters', { char: JSON.stringify(bad[0]), got: JSON.stringify(text) });
  if (!/^\d/.test(value) || !/\d$/.test(value)) invalidAs('INVALID_AMOUNT.edges', { got: JSON.stringify(text) });

  const lastDot = value.lastIndexOf('.');
  const lastComma = value.lastIndexOf(',');
  if (lastDot === -1 && lastComma === -1) return toCents(value, '', text);

  if (lastDot !== -1 && lastComma !== -1) {
    const mark = lastDot > lastComma ? '.' : ',';
    const group = mark === '.' ? ',' : '.';
    const [integer, decimals] = [value.slice(0, value.lastIndexOf(mark)), value.slice(value.lastIndexOf(mark) + 1)];
    checkDecimals(decimals, text);
    if (integer.includes(mark)) invalidAs('INVALID_AMOUNT.marks', { mark, got: JSON.stringify(text) });
    return toCents(ungroup(integer, group, text), decimals, text);
  }

  const mark = lastDot !== -1 ? '.' : ',';
  const parts = value.split(mark);
  if (parts.length > 2) {
    if (mark === decimalMark) {
      invalidAs('INVALID_AMOUNT.markCount', { mark, count: parts.length - 1, got: JSON.stringify(text) });
    }
    return toCents(ungroup(value, mark, text), '', text);
  }
  const decimals = parts[1]!;
  if (decimals.length === 3) {
    throw formatError('AMBIGUOUS_AMOUNT', 'AMBIGUOUS_AMOUNT', {
      mark,
      got: JSON.stringify(text),
      whole: parts.join(''),
      decimal: `${parts[0]}${decimalMark}${decimals.slice(0, 2)}`,
    });
  }
  checkDecimals(decimals, text);
  return toCents(parts[0]!, decimals, text);
}

function checkDecimals(decimals: string, text: string): void {
  if (decimals.length > 2) invalidAs('INVALID_AMOUNT.decimals', { count: decimals.length, got: JSON.stringify(text) });
}

/** `1.234.567` -> `1234567`: groups of exactly 3 after a first group of 1..3. */
function ungroup(integer: string, group: string, text: string): string {
  const parts = integer.split(group);
  if (!/^\d{1,3}$/.test(parts[0]!) || parts.slice(1).some((part) => !/^\d{3}$/.test(part))) {
    invalidAs('INVALID_AMOUNT.grouping', { group, got: JSON.stringify(text) });
  }
  return parts.join('');
}

/** Cents as CSV text in the dialect: `1234,56` / `1234.56`, no grouping, always 2 decimals. */
export function formatAmount(cents: Cents, decimalMark: DecimalMark): string {
  requireCents(cents);
  return `${Math.floor(cents / 100)}${decimalMark}${String(cents % 100).padStart(2, '0')}`;
}

/** Amount text of a BR Code (field 54): "66.66", "10.00", "0.05". */
export function formatBrCodeAmount(cents: Cents): string {
  return formatAmount(cents, '.');
}

/** Cents as the wire's JSON decimal number (1050 -> 10.5). Division by 100 gives the double nearest the decimal. */
export function centsToWire(cents: Cents): number {
  requireCents(cents);
  return cents / 100;
}

/**
 * The wire's JSON decimal number as cents (10.5 -> 1050, 0.30000000000000004 -> 30). Refuses non-finite values,
 * negatives, amounts over {@link MAX_AMOUNT_CENTS}, and a third decimal: the tolerance is a few units in the last
 * place of the double, far below a tenth of a cent, so 10.555 is refused.
 */
export function wireToCents(value: number): Cents {
  if (typeof value !== 'number' || !Number.isFinite(value)) invalidAs('MONEY.finite', { got: String(value) });
  if (value < 0) invalidAs('MONEY.negative', { got: value });
  const scaled = value * 100;
  const cents = Math.round(scaled);
  if (Math.abs(scaled - cents) > Math.max(1e-9, Math.abs(scaled) * 8 * Number.EPSILON)) {
    invalidAs('MONEY.decimals', { got: value });
  }
  if (cents > MAX_AMOUNT_CENTS) invalidAs('MONEY.max', { max: MAX_AMOUNT_CENTS / 100, got: value });
  return cents;
}

/**
 * Cents as a person in Brazil reads money: `R$ 1.234,56`, `R$ 0,50` (thousands grouped with ".", decimal comma,
 * always 2 decimals). For paper and messages, never for CSV cells (those use {@link formatAmount}).
 */
export function formatBrl(cents: Cents): string {
  requireCents(cents);
  return moneyIn('pt-BR', cents);
}

/** A percentage as a person in Brazil reads it: 2 -> `2%`, 2.5 -> `2,5%`, 0.033 -> `0,033%` (decimal comma). */
export function formatPercentBr(percent: number): string {
  if (!Number.isFinite(percent) || percent < 0) invalidAs('MONEY.percent', { got: percent });
  // Up to 4 decimals, trailing zeros dropped: what was typed (1 or 2 decimals in practice) reads back as typed.
  const text = Number(percent.toFixed(4)).toString();
  return `${text.replace('.', ',')}%`;
}

/**
 * Cents as a person reading `locale` reads money (summaries, status): `R$ 14.325,21` in pt-BR ({@link formatBrl}),
 * `R$14,325.21` in English. Negative amounts never reach here (totals of rows). A total is not held to the limit of
 * one amount ({@link MAX_AMOUNT_CENTS}): a million rows of R$ 50.000,00 add up to more, and are still said.
 */
export function formatMoney(locale: 'pt-BR' | 'en', cents: Cents): string {
  if (!Number.isSafeInteger(cents) || cents < 0) invalidAs('MONEY.cents', { max: Number.MAX_SAFE_INTEGER, got: cents });
  return moneyIn(locale, cents);
}
