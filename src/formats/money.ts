import { FormatError } from './errors.js';

/** Largest amount in cents that any format here carries (13 characters "9999999999.99" in a BR Code). */
export const MAX_AMOUNT_CENTS = 999_999_999_999;

function groupIntegerCents(cents: number, what: string): void {
  if (!Number.isSafeInteger(cents) || cents < 0) {
    throw new FormatError('INVALID_AMOUNT', `Expected ${what} as a whole, non-negative number of cents, got ${cents}`);
  }
}

/** Amount text of a BR Code (field 54) and of the wire's decimals as text: "66.66", "10.00", "0.05". */
export function formatBrCodeAmount(cents: number): string {
  groupIntegerCents(cents, 'an amount');
  const whole = Math.floor(cents / 100);
  return `${whole}.${String(cents % 100).padStart(2, '0')}`;
}
