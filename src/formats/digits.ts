import { FormatError } from './errors.js';

/** Keeps the ASCII digits of `text` and drops everything else ("123.456.789-09" -> "12345678909"). */
export function onlyDigits(text: string): string {
  return text.replace(/[^0-9]/g, '');
}

/**
 * Checks that `text` is exactly `length` ASCII digits, naming `what` in the error:
 * "Expected 44 digits in a bank slip bar code, got 45" / "... got 'x' at position 7".
 */
export function requireDigits(text: string, length: number, what: string): string {
  const bad = /[^0-9]/.exec(text);
  if (bad) {
    throw new FormatError(
      'INVALID_CHARACTERS',
      `Expected only digits in ${what}, got ${JSON.stringify(bad[0])} at position ${bad.index + 1}`,
    );
  }
  if (text.length !== length) {
    throw new FormatError('INVALID_LENGTH', `Expected ${length} digits in ${what}, got ${text.length}`);
  }
  return text;
}

/** Throws `INVALID_CHECK_DIGIT` when `found` is not `expected`: "Expected check digit 7 for X, got 3". */
export function requireCheckDigit(found: string, expected: number, what: string): void {
  if (found !== String(expected)) {
    throw new FormatError('INVALID_CHECK_DIGIT', `Expected check digit ${expected} for ${what}, got ${found}`);
  }
}
