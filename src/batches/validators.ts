/**
 * The one seam between the batch kinds and src/formats for identifiers (documents, states, GUIDs, bills): the rules
 * live in src/formats; this file adapts them to what the cell readers need (error codes per column).
 */
import { parseBillIdentifier as parseBill } from '../formats/bill-identifier.js';
import { isValidCep, isValidCnpj, isValidCpf, isValidPhone, isValidUf } from '../formats/documents.js';
import { formatError } from '../formats/errors.js';
import { isGuid, uuidV5 } from '../formats/ids.js';
import { canonicalPixKey as canonicalKey } from '../formats/pix.js';
import { type Message, msg } from '../i18n/index.js';

export { isGuid, isValidCep, isValidPhone, uuidV5 };

/**
 * `value` as the Pix key the DICT knows (src/formats/pix.ts), or undefined when it is not a Pix key (the rule the bank
 * applies).
 */
export function canonicalPixKey(value: string): string | undefined {
  return canonicalKey(value);
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
 * Why `value` is not a valid CPF/CNPJ (or not the kind asked for), or undefined when it is, as a code and the
 * catalogue sentence (src/i18n) with its values. Codes: INVALID_CPF and INVALID_CNPJ for wrong check digits of a
 * well-formed document, INVALID_DOCUMENT for anything else. `bare` is `bareDocument(value)` when the caller has it
 * already (the mask is stripped once per cell).
 *
 * Digits only, too short, and valid once zeros are put back in front (`1234567890` for CPF `012.345.678-90`): Excel
 * dropped them (it reads the column as a number). That is said, with how to keep them; never guessed.
 */
export function documentProblem(
  value: string,
  only?: 'cpf' | 'cnpj',
  bare: string = bareDocument(value),
): { code: string; message: Message } | undefined {
  // The common case first, without building a message: a well-formed valid document.
  if (only !== 'cnpj' && bare.length === 11 && isValidCpf(bare)) return undefined;
  if (only !== 'cpf' && bare.length === 14 && isValidCnpj(bare)) return undefined;
  const zeros = lostLeadingZeros(bare, only);
  if (zeros !== undefined) {
    return {
      code: 'INVALID_DOCUMENT',
      message: msg('INVALID_DOCUMENT.leadingZeros', { ...zeros, length: bare.length }),
    };
  }
  if (only === 'cpf' && bare.length !== 11) {
    return { code: 'INVALID_DOCUMENT', message: msg('INVALID_DOCUMENT.onlyCpf', { length: bare.length }) };
  }
  if (only === 'cnpj' && bare.length !== 14) {
    return { code: 'INVALID_DOCUMENT', message: msg('INVALID_DOCUMENT.onlyCnpj', { length: bare.length }) };
  }
  // The same reasons as validateDocument (src/formats/documents.ts), by catalogue key.
  if (bare === '') return { code: 'INVALID_DOCUMENT', message: msg('INVALID_DOCUMENT.empty') };
  const bad = /[^0-9A-Z]/.exec(bare);
  if (bad) {
    return { code: 'INVALID_DOCUMENT', message: msg('INVALID_DOCUMENT.characters', { char: JSON.stringify(bad[0]) }) };
  }
  if (bare.length === 11) {
    if (/[A-Z]/.test(bare)) return { code: 'INVALID_DOCUMENT', message: msg('INVALID_DOCUMENT.cpfLetters') };
    return { code: 'INVALID_CPF', message: msg('INVALID_CPF') };
  }
  if (bare.length === 14) {
    if (!/^[0-9A-Z]{12}\d{2}$/.test(bare)) {
      return { code: 'INVALID_DOCUMENT', message: msg('INVALID_DOCUMENT.cnpjLastDigits') };
    }
    return { code: 'INVALID_CNPJ', message: msg('INVALID_CNPJ') };
  }
  return { code: 'INVALID_DOCUMENT', message: msg('INVALID_DOCUMENT', { length: bare.length }) };
}

/**
 * Why a Pix key cell of digits only is no key when it is a CPF or CNPJ that Excel stripped of its leading zeros
 * (`1234567890` for the key 012.345.678-90): said with how to keep them, never guessed. Undefined otherwise.
 */
export function pixKeyLostZeros(text: string): Message | undefined {
  const zeros = lostLeadingZeros(text.trim(), undefined);
  return zeros && msg('INVALID_PIX_KEY.leadingZeros', { ...zeros, got: JSON.stringify(text.trim()) });
}

/** A CPF or CNPJ of digits only that is valid once zeros are put in front: what Excel leaves of `012.345.678-90`. */
function lostLeadingZeros(
  bare: string,
  only: 'cpf' | 'cnpj' | undefined,
): { what: string; expected: number; padded: string } | undefined {
  if (bare.length === 0 || !/^\d+$/.test(bare)) return undefined;
  if (only !== 'cnpj' && bare.length < 11 && isValidCpf(bare.padStart(11, '0'))) {
    const d = bare.padStart(11, '0');
    return { what: 'CPF', expected: 11, padded: `${d.slice(0, 3)}.${d.slice(3, 6)}.${d.slice(6, 9)}-${d.slice(9)}` };
  }
  if (
    only !== 'cpf' &&
    bare.length < 14 &&
    (only === 'cnpj' || bare.length !== 11) &&
    isValidCnpj(bare.padStart(14, '0'))
  ) {
    const d = bare.padStart(14, '0');
    return {
      what: 'CNPJ',
      expected: 14,
      padded: `${d.slice(0, 2)}.${d.slice(2, 5)}.${d.slice(5, 8)}/${d.slice(8, 12)}-${d.slice(12)}`,
    };
  }
  return undefined;
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
    throw formatError('INVALID_LENGTH', 'INVALID_LENGTH.barCodeGotLine', { count: bill.digitableLine.length });
  }
  if (as === 'digitableLine' && bill.givenAs !== 'DIGITABLE_LINE') {
    throw formatError('INVALID_LENGTH', 'INVALID_LENGTH.lineGotBarCode');
  }
  return { barCode: bill.barCode, type: bill.type };
}
