import { msg } from '../i18n/index.js';
import { brasiliaDay } from './brasilia-time.js';
import { bankSlipMod11Dv, mod10 } from './check-digits.js';
import { addDays, daysBetween, epochDay, fromEpochDay } from './dates.js';
import { requireCheckDigit, requireDigits } from './digits.js';
import { formatError } from './errors.js';

/**
 * Bank slip (boleto de cobrança) bar code (44 digits) and digitable line (47 digits), brazilian-formats.md 1-2.
 *
 * Bar code:  bank(3) currency(1)=9 generalDV(1) factor(4) amount(10) freeField(25)
 * Line:      bank+currency+free[0..5]+DV | free[5..15]+DV | free[15..25]+DV | generalDV | factor+amount
 *
 * What must hold: every string returned here passes every check in this file, and line <-> bar code are exact
 * inverses, so the same slip read by line or by bar code is the same bar code.
 */

export const BANK_SLIP_BAR_CODE_LENGTH = 44;
export const BANK_SLIP_LINE_LENGTH = 47;
/** The service's own bank code in its samples. */
export const DEFAULT_BANK_CODE = '435';
/** Currency code of the real: the only one bank slips here carry. */
export const BRL_CURRENCY_CODE = '9';
/** Largest amount the 10-digit field holds. */
export const MAX_BANK_SLIP_AMOUNT_CENTS = 9_999_999_999;

/** Day 0 of the due-date factor (factor 1000 = 2000-07-03). */
export const DUE_DATE_FACTOR_BASE = '1997-10-07';
/** {@link DUE_DATE_FACTOR_BASE} in days since 1970-01-01. */
const FACTOR_BASE_DAY = epochDay(DUE_DATE_FACTOR_BASE);
/** The factor runs 1000..9999 and then restarts at 1000 (it did on 2025-02-22): a cycle of 9000 days. */
const FACTOR_MIN = 1000;
const FACTOR_CYCLE_DAYS = 9000;
/** A factor is read as the one date it can mean between 3000 days before and 5500 days after today. */
export const DUE_DATE_WINDOW_PAST_DAYS = 3000;
export const DUE_DATE_WINDOW_FUTURE_DAYS = 5500;

/**
 * Due-date factor of a `yyyy-mm-dd` date, in the cycle the date falls in (2025-02-22 = 1000, 2025-02-21 = 9999,
 * 2000-07-03 = 1000). Dates before 2000-07-03 have no factor: `DUE_DATE_OUT_OF_RANGE`.
 */
export function dueDateFactor(date: string): number {
  const days = daysBetween(DUE_DATE_FACTOR_BASE, date);
  if (days < FACTOR_MIN) {
    throw formatError('DUE_DATE_OUT_OF_RANGE', 'BOLETO.dueDateTooEarly', { got: date });
  }
  return FACTOR_MIN + ((days - FACTOR_MIN) % FACTOR_CYCLE_DAYS);
}

/**
 * The due date a factor means, read in the window [today - 3000 days, today + 5500 days] (the window is shorter
 * than a cycle, so at most one date fits). Factor 0 means "no due date": `null`.
 * Throws `INVALID_DATE` for factors 1..999 or outside 0..9999 and `DUE_DATE_OUT_OF_RANGE` when no cycle puts the
 * factor in the window.
 *
 * @param today yyyy-mm-dd; defaults to today in Brasília (`brasiliaDay`).
 */
export function factorToDate(factor: number, today: string = brasiliaDay(new Date())): string | null {
  if (factor === 0) return null;
  if (!Number.isInteger(factor) || factor < FACTOR_MIN || factor > 9999) {
    throw formatError('INVALID_DATE', 'BOLETO.factor', { got: factor });
  }
  const todayDay = epochDay(today);
  const earliest = todayDay - DUE_DATE_WINDOW_PAST_DAYS;
  const latest = todayDay + DUE_DATE_WINDOW_FUTURE_DAYS;
  const first = FACTOR_BASE_DAY + factor; // the date in the first cycle
  const cycles = Math.max(0, Math.ceil((earliest - first) / FACTOR_CYCLE_DAYS));
  const day = first + cycles * FACTOR_CYCLE_DAYS;
  if (day > latest) {
    throw formatError('DUE_DATE_OUT_OF_RANGE', 'BOLETO.factorWindow', {
      from: addDays(today, -DUE_DATE_WINDOW_PAST_DAYS),
      to: addDays(today, DUE_DATE_WINDOW_FUTURE_DAYS),
      got: String(factor).padStart(4, '0'),
    });
  }
  return fromEpochDay(day);
}

/** Options of {@link buildBankSlipBarCode}. */
export interface BankSlipBarCodeOptions {
  /** 3-digit bank code. @defaultValue `'435'` */
  bankCode?: string;
  /** Due date yyyy-mm-dd, or `null` for none (factor 0000). */
  dueDate: string | null;
  /** Amount in cents; `null` or 0 for "amount not fixed" (all zeros). At most 9,999,999,999. */
  amountCents: number | null;
  /** The bank-defined 25-digit free field (see {@link serviceFreeField}). */
  freeField: string;
}

/** Builds a 44-digit bank slip bar code with its general check digit. */
export function buildBankSlipBarCode(options: BankSlipBarCodeOptions): string {
  const bankCode = requireDigits(options.bankCode ?? DEFAULT_BANK_CODE, 3, msg('WHAT.bankCode'));
  const freeField = requireDigits(options.freeField, 25, msg('WHAT.slipFreeField'));
  const factor = options.dueDate === null ? 0 : dueDateFactor(options.dueDate);
  const amount = options.amountCents ?? 0;
  if (!Number.isSafeInteger(amount) || amount < 0 || amount > MAX_BANK_SLIP_AMOUNT_CENTS) {
    throw formatError('INVALID_AMOUNT', 'BOLETO.amount', {
      max: MAX_BANK_SLIP_AMOUNT_CENTS,
      got: String(options.amountCents),
    });
  }
  const withoutDv =
    bankCode + BRL_CURRENCY_CODE + String(factor).padStart(4, '0') + String(amount).padStart(10, '0') + freeField;
  return withoutDv.slice(0, 4) + bankSlipMod11Dv(withoutDv) + withoutDv.slice(4);
}

/** Checks a 44-digit bank slip bar code: digits, length, currency 9, general DV. Throws {@link FormatError}. */
export function validateBankSlipBarCode(barCode: string): void {
  requireDigits(barCode, BANK_SLIP_BAR_CODE_LENGTH, msg('WHAT.slipBarCode'));
  if (barCode[3] !== BRL_CURRENCY_CODE) {
    throw formatError('INVALID_FIELD', 'BOLETO.currency', { got: barCode[3] });
  }
  requireCheckDigit(barCode[4]!, bankSlipMod11Dv(barCode.slice(0, 4) + barCode.slice(5)), msg('WHAT.slipGeneralDv'));
}

/** The fields of a bank slip bar code. */
export interface BankSlipBarCode {
  barCode: string;
  bankCode: string;
  currencyCode: string;
  generalDv: string;
  /** 0 = no due date. */
  dueDateFactor: number;
  /** yyyy-mm-dd read in the window around `today`, or null for factor 0000. */
  dueDate: string | null;
  /** null when the amount field is all zeros (amount not fixed). */
  amountCents: number | null;
  freeField: string;
}

/** Validates and splits a bank slip bar code. @param today yyyy-mm-dd that anchors the factor window. */
export function parseBankSlipBarCode(barCode: string, today?: string): BankSlipBarCode {
  validateBankSlipBarCode(barCode);
  const factor = Number(barCode.slice(5, 9));
  const amount = Number(barCode.slice(9, 19));
  return {
    barCode,
    bankCode: barCode.slice(0, 3),
    currencyCode: barCode.slice(3, 4),
    generalDv: barCode.slice(4, 5),
    dueDateFactor: factor,
    dueDate: factorToDate(factor, today),
    amountCents: amount === 0 ? null : amount,
    freeField: barCode.slice(19),
  };
}

/** 47-digit digitable line of a valid bar code (no separators). */
export function bankSlipBarCodeToLine(barCode: string): string {
  validateBankSlipBarCode(barCode);
  const field1 = barCode.slice(0, 4) + barCode.slice(19, 24);
  const field2 = barCode.slice(24, 34);
  const field3 = barCode.slice(34, 44);
  return field1 + mod10(field1) + field2 + mod10(field2) + field3 + mod10(field3) + barCode[4] + barCode.slice(5, 19);
}

/** Checks a 47-digit digitable line: digits, length, the three field DVs, then the bar code it encodes. */
export function validateBankSlipLine(line: string): void {
  requireDigits(line, BANK_SLIP_LINE_LENGTH, msg('WHAT.slipLine'));
  requireCheckDigit(line[9]!, mod10(line.slice(0, 9)), msg('WHAT.lineField', { field: 1, position: 10 }));
  requireCheckDigit(line[20]!, mod10(line.slice(10, 20)), msg('WHAT.lineField', { field: 2, position: 21 }));
  requireCheckDigit(line[31]!, mod10(line.slice(21, 31)), msg('WHAT.lineField', { field: 3, position: 32 }));
  // The general check digit, named where the person typed it: the line's position 33, not the bar code's 5.
  const barCode = rearrangeLine(line);
  if (barCode[3] === BRL_CURRENCY_CODE) {
    requireCheckDigit(
      line[32]!,
      bankSlipMod11Dv(barCode.slice(0, 4) + barCode.slice(5)),
      msg('WHAT.slipLineGeneralDv'),
    );
  }
  validateBankSlipBarCode(barCode);
}

/** 44-digit bar code of a valid digitable line. */
export function bankSlipLineToBarCode(line: string): string {
  validateBankSlipLine(line);
  return rearrangeLine(line);
}

function rearrangeLine(line: string): string {
  return line.slice(0, 4) + line[32] + line.slice(33, 47) + line.slice(4, 9) + line.slice(10, 20) + line.slice(21, 31);
}

/** Bank slip wallets of the service: 112 for normal charges and BANKSLIP_PIX, 121 for express charges. */
export type BankSlipWallet = '112' | '121';

/** Options of {@link serviceFreeField}. */
export interface ServiceFreeFieldOptions {
  /** '112' (normal, BANKSLIP_PIX) or '121' (express: our number sent by the client). */
  wallet: BankSlipWallet;
  /** Our number, 11 digits (shorter digit strings are zero-padded on the left). */
  ourNumber: string;
  /** 4-digit agency. @defaultValue `'0001'` */
  agency?: string;
  /** The 7 digits between wallet and our number (an account number in the samples: `0000006`). */
  middle: string;
}

/** The service's 25-digit free field: agency(4) + wallet(3) + middle(7) + our number(11), as in the samples. */
export function serviceFreeField(options: ServiceFreeFieldOptions): string {
  const agency = requireDigits(options.agency ?? '0001', 4, msg('WHAT.agency'));
  const wallet = requireDigits(options.wallet, 3, msg('WHAT.wallet'));
  const middle = requireDigits(options.middle, 7, msg('WHAT.freeFieldMiddle'));
  if (options.ourNumber.length > 11) requireDigits(options.ourNumber, 11, msg('WHAT.ourNumber'));
  const ourNumber = requireDigits(options.ourNumber.padStart(11, '0'), 11, msg('WHAT.ourNumber'));
  return agency + wallet + middle + ourNumber;
}

/** The parts of the service's free field. */
export interface ServiceFreeField {
  agency: string;
  wallet: string;
  middle: string;
  ourNumber: string;
}

/** Splits a 25-digit free field built by {@link serviceFreeField}. */
export function parseServiceFreeField(freeField: string): ServiceFreeField {
  requireDigits(freeField, 25, msg('WHAT.slipFreeField'));
  return {
    agency: freeField.slice(0, 4),
    wallet: freeField.slice(4, 7),
    middle: freeField.slice(7, 14),
    ourNumber: freeField.slice(14, 25),
  };
}
