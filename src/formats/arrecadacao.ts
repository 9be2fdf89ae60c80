import { msg } from '../i18n/index.js';
import { arrecadacaoMod11Dv, mod10 } from './check-digits.js';
import { requireCheckDigit, requireDigits } from './digits.js';
import { formatError } from './errors.js';

/**
 * Utility and tax bills (arrecadação), brazilian-formats.md 3.
 *
 * Bar code (44): 8 | segment(1) | value identifier(1) | general DV(1) | value(11) | company id(4) | free field(25)
 * Line (48):     four blocks of 11 bar code digits, each followed by its DV
 *
 * The value identifier picks the check method of the general DV and of every block DV:
 * 6 = mod 10, real value; 7 = mod 10, reference value; 8 = mod 11, real value; 9 = mod 11, reference value.
 * What must hold: line <-> bar code are exact inverses, and everything returned passes every check here.
 */

export const ARRECADACAO_BAR_CODE_LENGTH = 44;
export const ARRECADACAO_LINE_LENGTH = 48;
export const ARRECADACAO_PRODUCT = '8';
export type ValueIdentifier = '6' | '7' | '8' | '9';
export const MAX_ARRECADACAO_VALUE = 99_999_999_999;

function isValueIdentifier(value: string | undefined): value is ValueIdentifier {
  return value === '6' || value === '7' || value === '8' || value === '9';
}

/** The DV of `digits` under the method the value identifier picks (6/7 mod 10, 8/9 the arrecadação mod 11). */
export function arrecadacaoCheckDigit(digits: string, valueIdentifier: ValueIdentifier): number {
  return valueIdentifier === '6' || valueIdentifier === '7' ? mod10(digits) : arrecadacaoMod11Dv(digits);
}

/** Options of {@link buildArrecadacaoBarCode}. */
export interface ArrecadacaoBarCodeOptions {
  /** Segment 1..9 (1 city halls, 2 sanitation, 3 electricity and gas, 4 telecom, 5 government, ...). */
  segment: number;
  /** 6/7 mod 10, 8/9 mod 11; 6/8 carry a real value in cents, 7/9 a reference value. */
  valueIdentifier: ValueIdentifier;
  /** The 11-digit value: cents for 6/8, a reference number for 7/9. */
  value: number;
  /** 4-digit company/agency id. */
  companyId: string;
  /** 25-digit free field. */
  freeField: string;
}

/** Builds a 44-digit arrecadação bar code with its general DV. */
export function buildArrecadacaoBarCode(options: ArrecadacaoBarCodeOptions): string {
  const { segment, valueIdentifier, value } = options;
  if (!Number.isInteger(segment) || segment < 1 || segment > 9) {
    throw formatError('INVALID_FIELD', 'ARRECADACAO.segment', { got: segment });
  }
  if (!isValueIdentifier(valueIdentifier)) {
    throw formatError('INVALID_FIELD', 'ARRECADACAO.valueIdentifier', { got: valueIdentifier });
  }
  if (!Number.isSafeInteger(value) || value < 0 || value > MAX_ARRECADACAO_VALUE) {
    throw formatError('INVALID_AMOUNT', 'ARRECADACAO.value', { max: MAX_ARRECADACAO_VALUE, got: value });
  }
  const companyId = requireDigits(options.companyId, 4, msg('WHAT.companyId'));
  const freeField = requireDigits(options.freeField, 25, msg('WHAT.taxFreeField'));
  const head = ARRECADACAO_PRODUCT + segment + valueIdentifier;
  const rest = String(value).padStart(11, '0') + companyId + freeField;
  return head + arrecadacaoCheckDigit(head + rest, valueIdentifier) + rest;
}

/** Checks an arrecadação bar code: digits, length, product 8, segment, value identifier, general DV. */
export function validateArrecadacaoBarCode(barCode: string): void {
  requireDigits(barCode, ARRECADACAO_BAR_CODE_LENGTH, msg('WHAT.taxBarCode'));
  const valueIdentifier = checkHead(barCode);
  const dv = arrecadacaoCheckDigit(barCode.slice(0, 3) + barCode.slice(4), valueIdentifier);
  requireCheckDigit(barCode[3]!, dv, msg('WHAT.taxGeneralDv'));
}

function checkHead(digits: string): ValueIdentifier {
  if (digits[0] !== ARRECADACAO_PRODUCT) {
    throw formatError('INVALID_FIELD', 'ARRECADACAO.product', { got: digits[0] });
  }
  if (digits[1] === '0') throw formatError('INVALID_FIELD', 'ARRECADACAO.segmentAt', { got: 0 });
  const valueIdentifier = digits[2];
  if (!isValueIdentifier(valueIdentifier)) {
    throw formatError('INVALID_FIELD', 'ARRECADACAO.valueIdentifierAt', { got: valueIdentifier });
  }
  return valueIdentifier;
}

/** The fields of an arrecadação bar code. */
export interface ArrecadacaoBarCode {
  barCode: string;
  segment: number;
  valueIdentifier: ValueIdentifier;
  generalDv: string;
  /** The 11-digit value field as a number. */
  value: number;
  /** The value in cents when the identifier says real value (6/8); null for a reference value (7/9). */
  amountCents: number | null;
  companyId: string;
  freeField: string;
}

/** Validates and splits an arrecadação bar code. */
export function parseArrecadacaoBarCode(barCode: string): ArrecadacaoBarCode {
  validateArrecadacaoBarCode(barCode);
  const valueIdentifier = barCode[2] as ValueIdentifier;
  const value = Number(barCode.slice(4, 15));
  return {
    barCode,
    segment: Number(barCode[1]),
    valueIdentifier,
    generalDv: barCode[3]!,
    value,
    amountCents: valueIdentifier === '6' || valueIdentifier === '8' ? value : null,
    companyId: barCode.slice(15, 19),
    freeField: barCode.slice(19),
  };
}

/** 48-digit line of a valid arrecadação bar code. */
export function arrecadacaoBarCodeToLine(barCode: string): string {
  validateArrecadacaoBarCode(barCode);
  const valueIdentifier = barCode[2] as ValueIdentifier;
  let line = '';
  for (let block = 0; block < 4; block++) {
    const digits = barCode.slice(block * 11, block * 11 + 11);
    line += digits + arrecadacaoCheckDigit(digits, valueIdentifier);
  }
  return line;
}

/** Checks a 48-digit arrecadação line: digits, length, each block DV, then the bar code it encodes. */
export function validateArrecadacaoLine(line: string): void {
  requireDigits(line, ARRECADACAO_LINE_LENGTH, msg('WHAT.taxLine'));
  const valueIdentifier = checkHead(line);
  for (let block = 0; block < 4; block++) {
    const start = block * 12;
    const dv = arrecadacaoCheckDigit(line.slice(start, start + 11), valueIdentifier);
    requireCheckDigit(line[start + 11]!, dv, msg('WHAT.lineBlock', { block: block + 1, position: start + 12 }));
  }
  validateArrecadacaoBarCode(blocksOf(line));
}

/** 44-digit bar code of a valid arrecadação line. */
export function arrecadacaoLineToBarCode(line: string): string {
  validateArrecadacaoLine(line);
  return blocksOf(line);
}

function blocksOf(line: string): string {
  return line.slice(0, 11) + line.slice(12, 23) + line.slice(24, 35) + line.slice(36, 47);
}
