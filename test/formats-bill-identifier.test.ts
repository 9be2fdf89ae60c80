import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  addDays,
  arrecadacaoBarCodeToLine,
  bankSlipBarCodeToLine,
  buildArrecadacaoBarCode,
  buildBankSlipBarCode,
  FormatError,
  parseBillIdentifier,
} from '../src/formats/index.js';
import { formatError } from './helpers/errors.js';

const TODAY = '2026-11-22';
const SAMPLE_BAR_CODE = '43595103800000000100001112000000600000520637';
const SAMPLE_LINE = '43590001161200000060900005206370510380000000010';
const TAX_LINE = '846100000005246100291102005460339004695895061080';

/** How people paste a line: dots, spaces and dashes between groups. */
function decorate(digits: string, separators: string[]): string {
  let out = '';
  for (let i = 0; i < digits.length; i++) out += digits[i]! + (separators[i % separators.length] ?? '');
  return out;
}

const digitString = (length: number) =>
  fc.array(fc.integer({ min: 0, max: 9 }), { minLength: length, maxLength: length }).map((d) => d.join(''));

describe('parseBillIdentifier', () => {
  it('reads the published bank slip sample by bar code and by formatted line', () => {
    const byBarCode = parseBillIdentifier(SAMPLE_BAR_CODE, { today: TODAY });
    const byLine = parseBillIdentifier('43590.00116 12000.000609 00005.206370 5 10380000000010', { today: TODAY });
    expect(byBarCode).toEqual({
      type: 'BANKSLIP',
      givenAs: 'BAR_CODE',
      barCode: SAMPLE_BAR_CODE,
      digitableLine: SAMPLE_LINE,
      amountCents: 10,
      dueDate: '2025-04-01',
      bankCode: '435',
    });
    expect(byLine).toEqual({ ...byBarCode, givenAs: 'DIGITABLE_LINE' });
  });

  it('reads a utility bill as TAXES', () => {
    const bill = parseBillIdentifier('84610000000-5 24610029110-2 00546033900-4 69589506108-0');
    expect(bill).toMatchObject({
      type: 'TAXES',
      givenAs: 'DIGITABLE_LINE',
      digitableLine: TAX_LINE,
      amountCents: 2461,
      dueDate: null,
      segment: 4,
      valueIdentifier: '6',
    });
    expect(parseBillIdentifier(bill.barCode)).toEqual({ ...bill, givenAs: 'BAR_CODE' });
  });

  it('gives the same bar code by line or by bar code, whatever the separators (property)', () => {
    const bankSlips = fc
      .record({
        bankCode: digitString(3).filter((code) => !code.startsWith('8')),
        dueDate: fc.option(
          fc.integer({ min: -3000, max: 5500 }).map((offset) => addDays(TODAY, offset)),
          {
            nil: null,
          },
        ),
        amountCents: fc.integer({ min: 0, max: 9_999_999_999 }),
        freeField: digitString(25),
      })
      .map((options) => {
        const barCode = buildBankSlipBarCode(options);
        return { barCode, line: bankSlipBarCodeToLine(barCode) };
      });
    const taxBills = fc
      .record({
        segment: fc.integer({ min: 1, max: 9 }),
        valueIdentifier: fc.constantFrom('6', '7', '8', '9' as const),
        value: fc.integer({ min: 0, max: 99_999_999_999 }),
        companyId: digitString(4),
        freeField: digitString(25),
      })
      .map((options) => {
        const barCode = buildArrecadacaoBarCode(options);
        return { barCode, line: arrecadacaoBarCodeToLine(barCode) };
      });
    const separators = fc.array(fc.constantFrom('', '', '', ' ', '.', '-'), { minLength: 1, maxLength: 12 });
    fc.assert(
      fc.property(fc.oneof(bankSlips, taxBills), separators, ({ barCode, line }, seps) => {
        const byLine = parseBillIdentifier(decorate(line, seps), { today: TODAY });
        const byBarCode = parseBillIdentifier(barCode, { today: TODAY });
        expect(byLine.barCode).toBe(barCode);
        expect(byLine.digitableLine).toBe(line);
        expect({ ...byLine, givenAs: 'BAR_CODE' }).toEqual(byBarCode);
      }),
    );
  });

  it('says what is wrong', () => {
    expect(formatError(() => parseBillIdentifier('1234')).message).toBe(
      'Expected a 44-digit bar code, a 47-digit bank slip line or a 48-digit utility/tax bill line, got 4 digits',
    );
    expect(formatError(() => parseBillIdentifier(`${SAMPLE_LINE.slice(0, 10)}x`)).code).toBe('INVALID_CHARACTERS');
    expect(formatError(() => parseBillIdentifier(`${SAMPLE_LINE}0`)).code).toBe('INVALID_FIELD');
    expect(formatError(() => parseBillIdentifier(TAX_LINE.slice(0, 47))).code).toBe('INVALID_FIELD');
    expect(formatError(() => parseBillIdentifier(`${SAMPLE_LINE.slice(0, 46)}1`)).code).toBe('INVALID_CHECK_DIGIT');
  });

  it('garbage only ever throws FormatError (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), digitString(44), digitString(47), digitString(48)), (text) => {
        try {
          parseBillIdentifier(text, { today: TODAY });
        } catch (error) {
          expect(error).toBeInstanceOf(FormatError);
        }
      }),
    );
  });
});
