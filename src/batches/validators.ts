/**
 * The one seam between the batch kinds and src/formats for identifiers (documents, states, GUIDs, bills): the rules
 * live in src/formats; this file adapts them to what the cell readers need (error codes per column).
 */
import { parseBillIdentifier as parseBill } from '../formats/bill-identifier.js';
import {
  isValidCep,
  isValidCnpj,
  isValidCpf,
  isValidPhone,
  isValidUf,
  validateDocument,
} from '../formats/documents.js';
import { FormatError } from '../formats/errors.js';
import { isGuid, uuidV5 } from '../formats/ids.js';
import { isValidPixKey } from '../formats/pix.js';

export { isGuid, isValidCep, isValidPhone, uuidV5 };

/** Whether `value` is a Pix key (src/formats/pix.ts, the rule the bank applies). */
export function isPixKey(value: string): boolean {
  return isValidPixKey(value);
}

export function isUf(value: string): boolean {
  return isValidUf(value);
}

/** Drops the usual punctuation of a CPF/CNPJ (dots, slash, hyphen, spaces) and upper-cases the CNPJ letters. */
export function bareDocument(value: string): string {
  // Already bare (digits and upper-case letters only, the usual cell): the same string, without a regex pass.
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (!((c >= 48 && c <= 57) || (c >= 65 && c <= 90))) return value.replace(/[.\-/\s]/g, '').toUpperCase();
  }
  return value;
}

/**
 * Why `value` is not a valid CPF/CNPJ (or not the kind asked for), or undefined when it is. Codes: INVALID_CPF and
 * INVALID_CNPJ for wrong check digits of a well-formed document, INVALID_DOCUMENT for anything else. `bare` is
 * `bareDocument(value)` when the caller has it already (the mask is stripped once per cell).
 */
export function documentProblem(
  value: string,
  only?: 'cpf' | 'cnpj',
  bare: string = bareDocument(value),
): { code: string; message: string } | undefined {
  if (only === 'cpf' && bare.length !== 11) {
    return { code: 'INVALID_DOCUMENT', message: `Expected a CPF (11 digits), got ${bare.length} characters` };
  }
  if (only === 'cnpj' && bare.length !== 14) {
    return { code: 'INVALID_DOCUMENT', message: `Expected a CNPJ (14 characters), got ${bare.length} characters` };
  }
  // The common case first, without building a message: a well-formed valid document.
  if ((bare.length === 11 && isValidCpf(bare)) || (bare.length === 14 && isValidCnpj(bare))) return undefined;
  const reason = validateDocument(value);
  if (reason === null) return undefined;
  const wrongDigits = /check digits/.test(reason) && !/Expected the last/.test(reason);
  const code = !wrongDigits ? 'INVALID_DOCUMENT' : bare.length === 11 ? 'INVALID_CPF' : 'INVALID_CNPJ';
  return { code, message: reason };
}

/** What a bill identifier turned out to be. */
export interface BillIdentifier {
  /** The bill's 44-digit bar code (from a bar code or a digitable line). */
  barCode: string;
  /** BANKSLIP (bank slip) or TAXES (utility/tax bill, starts with 8). */
  type: 'BANKSLIP' | 'TAXES';
}

/**
 * Reads a bar code (44 digits) or digitable line (47 digits for a bank slip, 48 for a utility/tax bill), dots and
 * spaces tolerated, and returns the 44-digit bar code. `as` says which form the column holds: the other form is
 * refused with a hint. Throws `FormatError`.
 */
export function parseBillIdentifier(value: string, as: 'barCode' | 'digitableLine' | 'any' = 'any'): BillIdentifier {
  const bill = parseBill(value);
  if (as === 'barCode' && bill.givenAs !== 'BAR_CODE') {
    throw new FormatError(
      'INVALID_LENGTH',
      `Expected a bar code of 44 digits, got a digitable line of ${bill.digitableLine.length} digits (put it in digitableLine)`,
    );
  }
  if (as === 'digitableLine' && bill.givenAs !== 'DIGITABLE_LINE') {
    throw new FormatError(
      'INVALID_LENGTH',
      'Expected a digitable line of 47 or 48 digits, got a bar code of 44 digits (put it in barCode)',
    );
  }
  return { barCode: bill.barCode, type: bill.type };
}
