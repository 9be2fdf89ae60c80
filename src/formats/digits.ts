import type { Message } from '../i18n/index.js';
import { formatError } from './errors.js';

/** Keeps the ASCII digits of `text` and drops everything else ("123.456.789-09" -> "12345678909"). */
export function onlyDigits(text: string): string {
  return text.replace(/[^0-9]/g, '');
}

/**
 * Checks that `text` is exactly `length` ASCII digits, naming `what` (a catalogue phrase) in the error:
 * "Expected 44 digits in a bank slip bar code, got 45" / "... got 'x' at position 7".
 */
export function requireDigits(text: string, length: number, what: Message): string {
  const bad = /[^0-9]/.exec(text);
  if (bad) {
    throw formatError('INVALID_CHARACTERS', 'DIGITS.only', {
      what,
      char: JSON.stringify(bad[0]),
      position: bad.index + 1,
    });
  }
  if (text.length !== length) {
    throw formatError('INVALID_LENGTH', 'DIGITS.count', { what, length, count: text.length });
  }
  return text;
}

/** Throws `INVALID_CHECK_DIGIT` when `found` is not `expected`: "Expected check digit 7 for X, got 3". */
export function requireCheckDigit(found: string, expected: number, what: Message): void {
  if (found !== String(expected)) {
    throw formatError('INVALID_CHECK_DIGIT', 'DIGITS.checkDigit', { what, expected, found });
  }
}
