/**
 * The one seam between the batch kinds and src/formats for identifiers: documents, states, GUIDs and bill
 * identifiers. Kinds call these; the rules themselves live in src/formats.
 */

import { v5 } from 'uuid';
import { arrecadacaoLineToBarCode, validateArrecadacaoBarCode } from '../formats/arrecadacao.js';
import { bankSlipLineToBarCode, validateBankSlipBarCode } from '../formats/boleto.js';
import { documentMod11Dv } from '../formats/check-digits.js';
import { FormatError } from '../formats/errors.js';

const GUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export function isGuid(value: string): boolean {
  return GUID.test(value);
}

/** UUIDv5 of `name` in `namespace` (a GUID): derives a second key for a second request of a row. */
export function uuidV5(name: string, namespace: string): string {
  return v5(name, namespace);
}

export const UFS = [
  'AC',
  'AL',
  'AM',
  'AP',
  'BA',
  'CE',
  'DF',
  'ES',
  'GO',
  'MA',
  'MG',
  'MS',
  'MT',
  'PA',
  'PB',
  'PE',
  'PI',
  'PR',
  'RJ',
  'RN',
  'RO',
  'RR',
  'RS',
  'SC',
  'SE',
  'SP',
  'TO',
] as const;

export function isUf(value: string): boolean {
  return (UFS as readonly string[]).includes(value);
}

/** Drops the usual punctuation of a CPF/CNPJ (dots, slash, hyphen, spaces). */
export function bareDocument(value: string): string {
  return value.replace(/[.\-/\s]/g, '').toUpperCase();
}

function cpfValid(d: string): boolean {
  if (!/^\d{11}$/.test(d) || /^(\d)\1{10}$/.test(d)) return false;
  return (
    documentMod11Dv(d.slice(0, 9), Number.POSITIVE_INFINITY) === Number(d[9]) &&
    documentMod11Dv(d.slice(0, 10), Number.POSITIVE_INFINITY) === Number(d[10])
  );
}

function cnpjValid(d: string): boolean {
  if (!/^[0-9A-Z]{12}\d{2}$/.test(d) || /^(\d)\1{13}$/.test(d)) return false;
  return documentMod11Dv(d.slice(0, 12), 9) === Number(d[12]) && documentMod11Dv(d.slice(0, 13), 9) === Number(d[13]);
}

export function isCpf(value: string): boolean {
  return cpfValid(bareDocument(value));
}

export function isCnpj(value: string): boolean {
  return cnpjValid(bareDocument(value));
}

/** Why `value` is not a valid CPF/CNPJ, or undefined when it is. */
export function documentProblem(value: string, only?: 'cpf' | 'cnpj'): { code: string; message: string } | undefined {
  const d = bareDocument(value);
  const shownValue = JSON.stringify(value.length > 30 ? `${value.slice(0, 27)}...` : value);
  const expected =
    only === 'cpf'
      ? 'a CPF (11 digits)'
      : only === 'cnpj'
        ? 'a CNPJ (14 characters)'
        : 'a CPF (11 digits) or a CNPJ (14 characters)';
  if (d.length === 11 && only !== 'cnpj') {
    return cpfValid(d)
      ? undefined
      : { code: 'INVALID_CPF', message: `Expected a CPF with valid check digits, got ${shownValue}` };
  }
  if (d.length === 14 && only !== 'cpf') {
    return cnpjValid(d)
      ? undefined
      : { code: 'INVALID_CNPJ', message: `Expected a CNPJ with valid check digits, got ${shownValue}` };
  }
  return { code: 'INVALID_DOCUMENT', message: `Expected ${expected}, got ${shownValue}` };
}

/** What a bill identifier turned out to be. */
export interface BillIdentifier {
  /** The bill's 44-digit bar code (from a bar code or a digitable line). */
  barCode: string;
  /** BANKSLIP (47-digit line family) or TAXES (arrecadação, starts with 8). */
  type: 'BANKSLIP' | 'TAXES';
}

/**
 * Reads a bar code (44 digits) or digitable line (47 digits for a bank slip, 48 for a utility/tax bill), dots and
 * spaces tolerated, and returns the 44-digit bar code. Throws `FormatError`.
 */
export function parseBillIdentifier(value: string, as: 'barCode' | 'digitableLine' | 'any' = 'any'): BillIdentifier {
  const digits = value.replace(/[.\s-]/g, '');
  if (!/^\d+$/.test(digits)) {
    throw new FormatError(
      'INVALID_CHARACTERS',
      `Expected only digits (dots and spaces allowed), got ${JSON.stringify(value.slice(0, 60))}`,
    );
  }
  const taxes = digits.startsWith('8');
  if (digits.length === 44 && as !== 'digitableLine') {
    if (taxes) validateArrecadacaoBarCode(digits);
    else validateBankSlipBarCode(digits);
    return { barCode: digits, type: taxes ? 'TAXES' : 'BANKSLIP' };
  }
  if (digits.length === 47 && !taxes && as !== 'barCode') {
    return { barCode: bankSlipLineToBarCode(digits), type: 'BANKSLIP' };
  }
  if (digits.length === 48 && taxes && as !== 'barCode') {
    return { barCode: arrecadacaoLineToBarCode(digits), type: 'TAXES' };
  }
  const expected =
    as === 'barCode'
      ? 'a bar code of 44 digits'
      : as === 'digitableLine'
        ? 'a digitable line of 47 digits (bank slip) or 48 digits starting with 8 (utility/tax bill)'
        : 'a bar code (44 digits) or digitable line (47 or 48 digits)';
  throw new FormatError('INVALID_LENGTH', `Expected ${expected}, got ${digits.length} digits`);
}
