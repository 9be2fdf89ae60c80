/**
 * The two check-digit sums every Brazilian format here is built on. Each format maps the result to its own
 * digit (bank slips, arrecadação, CPF and CNPJ differ only in that mapping), so the sums live once, here.
 *
 * Characters are valued `charCode - 48`: '0'..'9' -> 0..9, and for the alphanumeric CNPJ 'A'..'Z' -> 17..42, as
 * the Receita Federal rule says. Callers check the characters before calling.
 */

/** Mod 10 DV: weights 2,1,2,1,... from the right, the digits of each product added; `(10 - sum % 10) % 10`. */
export function mod10(digits: string): number {
  let sum = 0;
  let weight = 2;
  for (let i = digits.length - 1; i >= 0; i--) {
    const product = (digits.charCodeAt(i) - 48) * weight;
    sum += product > 9 ? product - 9 : product; // digits of a product <= 18 add to product - 9
    weight = weight === 2 ? 1 : 2;
  }
  return (10 - (sum % 10)) % 10;
}

/**
 * Mod 11 remainder: weights 2,3,...,`maxWeight` cycling from the right, `sum % 11`. Not a DV: each format turns
 * the remainder into its digit (see {@link bankSlipMod11Dv} and the callers in arrecadacao.ts and documents.ts).
 * CPF uses weights that never cycle: pass `maxWeight = Infinity`.
 */
export function mod11(text: string, maxWeight = 9): number {
  let sum = 0;
  let weight = 2;
  for (let i = text.length - 1; i >= 0; i--) {
    sum += (text.charCodeAt(i) - 48) * weight;
    weight = weight === maxWeight ? 2 : weight + 1;
  }
  return sum % 11;
}

/** Bank slip general DV: `11 - remainder`, where 0, 10 and 11 become 1. */
export function bankSlipMod11Dv(digits: string): number {
  const dv = 11 - mod11(digits);
  return dv === 0 || dv === 10 || dv === 11 ? 1 : dv;
}

/** Arrecadação mod 11 DV: remainder 0 or 1 gives 0, remainder 10 gives 1, otherwise `11 - remainder`. */
export function arrecadacaoMod11Dv(digits: string): number {
  const remainder = mod11(digits);
  if (remainder === 0 || remainder === 1) return 0;
  if (remainder === 10) return 1;
  return 11 - remainder;
}

/** CPF/CNPJ DV: remainder below 2 gives 0, otherwise `11 - remainder`. */
export function documentMod11Dv(text: string, maxWeight: number): number {
  const remainder = mod11(text, maxWeight);
  return remainder < 2 ? 0 : 11 - remainder;
}
