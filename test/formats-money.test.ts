import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  centsToWire,
  type DecimalMark,
  FormatError,
  formatAmount,
  formatBrCodeAmount,
  formatBrl,
  formatMoney,
  formatPercentBr,
  parseAmount,
  wireToCents,
} from '../src/formats/index.js';
import { formatError } from './helpers/errors.js';

describe('parseAmount', () => {
  it.each([
    ['1.234,56', 123456],
    ['1234,56', 123456],
    ['1234.56', 123456],
    ['1,234.56', 123456],
    ['10', 1000],
    ['10,5', 1050],
    ['0,05', 5],
    ['1.234.567,89', 123456789],
    [' 7,00 ', 700],
  ])('reads %s as %i cents', (text, cents) => {
    expect(parseAmount(text, ',')).toBe(cents);
    expect(parseAmount(text, '.')).toBe(cents);
  });

  it('reads repeated grouping marks that are not the decimal mark', () => {
    expect(parseAmount('1.234.567', ',')).toBe(123456700);
    expect(parseAmount('1,234,567', '.')).toBe(123456700);
    expect(formatError(() => parseAmount('1.234.567', '.')).code).toBe('INVALID_AMOUNT');
  });

  it('never guesses a single mark followed by 3 digits', () => {
    for (const text of ['1.234', '1,234', '10.555']) {
      const error = formatError(() => parseAmount(text, ','));
      expect(error.code).toBe('AMBIGUOUS_AMOUNT');
      expect(error.message).toContain(`got "${text}"`);
    }
  });

  it.each([
    ['', 'empty'],
    ['-10,00', 'without a sign'],
    ['+10', 'without a sign'],
    ['R$ 10,00', '"R"'],
    ['10.555.00', 'grouped in threes'],
    ['10,555,00', 'one decimal mark'],
    ['1.23,45', 'grouped in threes'],
    ['1,234.5.6', 'one decimal mark'],
    ['10,5678', 'at most 2 decimals'],
    [',50', 'start and end with a digit'],
    ['10,', 'start and end with a digit'],
    ['1 000,00', '" "'],
  ])('refuses %j (%s)', (text, fragment) => {
    const error = formatError(() => parseAmount(text, ','));
    expect(error.code).toBe('INVALID_AMOUNT');
    expect(error.message).toMatch(/^Expected /);
    expect(error.message).toContain(fragment);
  });

  it('format -> parse round-trips in both dialects (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 999_999_999_999 }),
        fc.constantFrom<DecimalMark>('.', ','),
        (cents, mark) => {
          const text = formatAmount(cents, mark);
          expect(text).toMatch(/^\d+[.,]\d{2}$/);
          expect(parseAmount(text, mark)).toBe(cents);
        },
      ),
    );
  });

  it('garbage only ever throws FormatError (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^[0-9.,]{0,12}$/)), (text) => {
        try {
          const cents = parseAmount(text, ',');
          expect(Number.isSafeInteger(cents)).toBe(true);
        } catch (error) {
          expect(error).toBeInstanceOf(FormatError);
        }
      }),
    );
  });
});

describe('wire and BR Code amounts', () => {
  it('converts cents to the wire and back exactly (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 999_999_999_999 }), (cents) => {
        const wire = centsToWire(cents);
        expect(wireToCents(wire)).toBe(cents);
        expect(wireToCents(JSON.parse(JSON.stringify(wire)))).toBe(cents);
        expect(JSON.stringify(wire)).toBe(String(Number(formatBrCodeAmount(cents))));
      }),
    );
  });

  it('tolerates floating point noise but not a third decimal', () => {
    expect(centsToWire(1050)).toBe(10.5);
    expect(wireToCents(0.1 + 0.2)).toBe(30);
    expect(wireToCents(1.15 * 3)).toBe(345);
    expect(formatError(() => wireToCents(10.555)).message).toBe(
      'Expected an amount with at most 2 decimals, got 10.555',
    );
    expect(formatError(() => wireToCents(Number.NaN)).code).toBe('INVALID_AMOUNT');
    expect(formatError(() => wireToCents(Number.POSITIVE_INFINITY)).code).toBe('INVALID_AMOUNT');
    expect(formatError(() => wireToCents(-1)).code).toBe('INVALID_AMOUNT');
    expect(formatError(() => centsToWire(1.5)).code).toBe('INVALID_AMOUNT');
  });

  it('formats BR Code amounts', () => {
    expect(formatBrCodeAmount(6666)).toBe('66.66');
    expect(formatBrCodeAmount(5)).toBe('0.05');
    expect(formatBrCodeAmount(100000)).toBe('1000.00');
    expect(formatBrCodeAmount(999_999_999_999)).toHaveLength(13);
    expect(formatAmount(123456, ',')).toBe('1234,56');
  });
});

describe('formatBrl and formatPercentBr (money and rates as a person in Brazil reads them)', () => {
  it.each([
    [0, 'R$ 0,00'],
    [50, 'R$ 0,50'],
    [123456, 'R$ 1.234,56'],
    [100000000, 'R$ 1.000.000,00'],
    [999_999_999_999, 'R$ 9.999.999.999,99'],
  ])('%i cents reads %s', (cents, text) => {
    expect(formatBrl(cents)).toBe(text);
  });

  it('reads back to the same cents through parseAmount in the comma dialect', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 999_999_999_999 }), (cents) => {
        expect(parseAmount(formatBrl(cents).slice(3), ',')).toBe(cents);
      }),
    );
  });

  it('refuses what is not whole cents', () => {
    expect(() => formatBrl(1.5)).toThrow(FormatError);
    expect(() => formatBrl(-1)).toThrow(FormatError);
  });

  it('writes rates with a decimal comma', () => {
    expect(formatPercentBr(2)).toBe('2%');
    expect(formatPercentBr(2.5)).toBe('2,5%');
    expect(formatPercentBr(0.033)).toBe('0,033%');
    expect(() => formatPercentBr(-1)).toThrow(FormatError);
  });
});

describe('formatMoney (totals)', () => {
  it('says a total above the limit of one amount (a million rows of R$ 49.995,26), as validate prints it', () => {
    expect(formatMoney('pt-BR', 4_999_525_861_600)).toBe('R$ 49.995.258.616,00');
    expect(formatMoney('en', 4_999_525_861_600)).toBe('R$49,995,258,616.00');
    expect(() => formatMoney('pt-BR', -1)).toThrow(FormatError);
    expect(() => formatMoney('pt-BR', 1.5)).toThrow(FormatError);
  });
});
