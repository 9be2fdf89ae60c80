import { type Message, msg, render } from '../i18n/index.js';
import { documentMod11Dv } from './check-digits.js';
import { onlyDigits } from './digits.js';
import { FormatError, formatError } from './errors.js';

/**
 * People and companies (brazilian-formats.md 7): CPF, CNPJ (numeric and, from July 2026, alphanumeric), CEP, UF.
 * Masks people type (dots, slash, dash, spaces) are tolerated; anything else is not.
 */

export { onlyDigits };

/** The 27 federative units (26 states and the Federal District). */
export const UF_CODES = [
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
export type Uf = (typeof UF_CODES)[number];

/** NATURAL = a person (CPF), LEGAL = a company (CNPJ), as the service spells holder types. */
export type DocumentType = 'NATURAL' | 'LEGAL';

function stripMask(text: string): string {
  // Nothing to strip in the common case (a bare document): skip the regex pass.
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c <= 0x20 || c === 0x2e || c === 0x2f || c === 0x2d || c > 0x7e) return text.replace(/[\s./-]/g, '');
  }
  return text;
}

function withCheckDigits(base: string, maxWeight: number): string {
  const first = base + documentMod11Dv(base, maxWeight);
  return first + documentMod11Dv(first, maxWeight);
}

/** CPF: 11 digits, two mod 11 DVs (weights 2..10 then 2..11, no cycling); all-equal digits are refused. */
export function isValidCpf(text: string): boolean {
  const cpf = stripMask(text);
  if (!/^\d{11}$/.test(cpf) || /^(\d)\1{10}$/.test(cpf)) return false;
  return withCheckDigits(cpf.slice(0, 9), Number.POSITIVE_INFINITY) === cpf;
}

/**
 * CNPJ: 14 characters, two mod 11 DVs (weights 2..9 cycling). The first 12 may be letters (alphanumeric CNPJ, July
 * 2026; case-insensitive): every character counts as its ASCII code minus 48. All-equal digits are refused.
 */
export function isValidCnpj(text: string): boolean {
  const cnpj = stripMask(text).toUpperCase();
  if (!/^[0-9A-Z]{12}\d{2}$/.test(cnpj) || /^(\d)\1{13}$/.test(cnpj)) return false;
  return withCheckDigits(cnpj.slice(0, 12), 9) === cnpj;
}

/**
 * Why `text` is not a usable CPF or CNPJ, as a catalogue message (src/i18n), or null when it is one. The reason reads
 * "Expected ..., got ..." and never echoes the whole document (it is personal data).
 */
export function documentProblem(text: string): Message | null {
  const compact = stripMask(text).toUpperCase();
  if (compact === '') return msg('INVALID_DOCUMENT.empty');
  const bad = /[^0-9A-Z]/.exec(compact);
  if (bad) return msg('INVALID_DOCUMENT.characters', { char: JSON.stringify(bad[0]) });
  if (compact.length === 11) {
    if (/[A-Z]/.test(compact)) return msg('INVALID_DOCUMENT.cpfLetters');
    return isValidCpf(compact) ? null : msg('INVALID_CPF');
  }
  if (compact.length === 14) {
    if (!/^[0-9A-Z]{12}\d{2}$/.test(compact)) return msg('INVALID_DOCUMENT.cnpjLastDigits');
    return isValidCnpj(compact) ? null : msg('INVALID_CNPJ');
  }
  return msg('INVALID_DOCUMENT', { length: compact.length });
}

/** {@link documentProblem} in English (the sandbox's answers, logs), or null for a usable document. */
export function validateDocument(text: string): string | null {
  const problem = documentProblem(text);
  return problem === null ? null : render('en', problem);
}

/** The document without mask, upper-cased (`12.ABC.345/01DE-35` -> `12ABC34501DE35`). Throws {@link FormatError}. */
export function normalizeDocument(text: string): string {
  const problem = documentProblem(text);
  if (problem !== null) throw new FormatError('INVALID_CHECK_DIGIT', problem);
  return stripMask(text).toUpperCase();
}

/**
 * A CPF or CNPJ as a person writes it (`123.456.789-09`, `12.345.678/0001-95`), the text as given when it is neither
 * length. Written so in a file a spreadsheet opens, it stays text: bare digits would be read as a number, a CPF's
 * leading zero dropped and a CNPJ shown as `1,23457E+13`.
 */
export function maskDocument(text: string): string {
  const t = stripMask(text).toUpperCase();
  if (/^\d{11}$/.test(t)) return `${t.slice(0, 3)}.${t.slice(3, 6)}.${t.slice(6, 9)}-${t.slice(9)}`;
  if (/^[0-9A-Z]{12}\d{2}$/.test(t)) {
    return `${t.slice(0, 2)}.${t.slice(2, 5)}.${t.slice(5, 8)}/${t.slice(8, 12)}-${t.slice(12)}`;
  }
  return text;
}

/** NATURAL for a valid CPF, LEGAL for a valid CNPJ; {@link FormatError} otherwise. */
export function documentType(text: string): DocumentType {
  const problem = documentProblem(text);
  if (problem !== null) {
    const checkDigits = problem.key === 'INVALID_CPF' || problem.key === 'INVALID_CNPJ';
    throw new FormatError(checkDigits ? 'INVALID_CHECK_DIGIT' : 'INVALID_LENGTH', problem);
  }
  return stripMask(text).length === 11 ? 'NATURAL' : 'LEGAL';
}

/** `n` scrambled into `digits` digits: a bijection on [0, 10^digits), so distinct seeds give distinct numbers. */
function scramble(n: number, digits: number): string {
  const modulus = 10 ** digits;
  if (!Number.isSafeInteger(n) || n < 0) throw formatError('INVALID_FIELD', 'IDS.seed', { got: n });
  // 7_654_321 is odd and not a multiple of 5, so it is invertible modulo 10^digits; BigInt keeps the product exact.
  const mixed = (BigInt(n % modulus) * 7_654_321n + 1_234_567n) % BigInt(modulus);
  return mixed.toString().padStart(digits, '0');
}

/** A valid CPF (11 digits, no mask) determined by `seed`: the same seed, the same CPF. For tests and fixtures. */
export function cpfFromSeed(seed: number): string {
  let base = scramble(seed, 9);
  if (/^(\d)\1{8}$/.test(base)) base = `${base.slice(0, 8)}${(Number(base[8]) + 1) % 10}`;
  return withCheckDigits(base, Number.POSITIVE_INFINITY);
}

/** A valid numeric CNPJ (14 digits, branch 0001) determined by `seed`. For tests and fixtures. */
export function cnpjFromSeed(seed: number): string {
  return withCheckDigits(`${scramble(seed, 8)}0001`, 9);
}

const UF_SET: ReadonlySet<string> = new Set(UF_CODES);

/** One of the 27 two-letter UF codes (upper case). */
export function isValidUf(text: string): text is Uf {
  return UF_SET.has(text);
}

/** A CEP: 8 digits, optionally written `01310-100`. */
export function isValidCep(text: string): boolean {
  return /^\d{5}-?\d{3}$/.test(text.trim());
}

/**
 * A Brazilian phone as the service's payer carries it: `prefix` the 2-digit area code (11..99, none ending in 0),
 * `number` 8 digits for a landline (starting 2..5) or 9 digits for a mobile (starting with 9). Masks tolerated.
 */
export function isValidPhone(prefix: string, number: string): boolean {
  const area = stripMask(prefix).replace(/^\((\d+)\)$/, '$1');
  const local = stripMask(number);
  return /^[1-9][1-9]$/.test(area) && (/^[2-5]\d{7}$/.test(local) || /^9\d{8}$/.test(local));
}

/**
 * A CPF or CNPJ with its printed mask: `529.982.247-25`, `11.222.333/0001-81` (alphanumeric CNPJs too). Any other
 * text is returned as given (the paper shows what the record holds rather than nothing).
 */
export function formatDocument(text: string): string {
  const d = stripMask(text).toUpperCase();
  if (/^\d{11}$/.test(d)) return `${d.slice(0, 3)}.${d.slice(3, 6)}.${d.slice(6, 9)}-${d.slice(9)}`;
  if (/^[0-9A-Z]{12}\d{2}$/.test(d)) {
    return `${d.slice(0, 2)}.${d.slice(2, 5)}.${d.slice(5, 8)}/${d.slice(8, 12)}-${d.slice(12)}`;
  }
  return text;
}

/** A CEP as printed: `01310100` or `01310-100` -> `01310-100`; any other text as given. */
export function formatCep(text: string): string {
  const d = text.trim().replace(/-/, '');
  return /^\d{8}$/.test(d) ? `${d.slice(0, 5)}-${d.slice(5)}` : text;
}
