import { getBoletoInfo, isValidBoleto } from '@brazilian-utils/brazilian-utils';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  addDays,
  BANK_SLIP_LINE_LENGTH,
  bankSlipBarCodeToLine,
  bankSlipLineToBarCode,
  buildBankSlipBarCode,
  dueDateFactor,
  FormatError,
  factorToDate,
  parseBankSlipBarCode,
  parseServiceFreeField,
  serviceFreeField,
  validateBankSlipLine,
} from '../src/formats/index.js';
import { formatError } from './helpers/errors.js';

/** The two samples published by the service's provider (brazilian-formats.md section 2). */
const SAMPLES = [
  {
    barCode: '43595103800000000100001112000000600000520637',
    line: '43590001161200000060900005206370510380000000010',
    dueDate: '2025-04-01', // factor 1038 in the post-2025 cycle
    amountCents: 10,
    middle: '0000006',
    ourNumber: '00000520637',
  },
  {
    barCode: '43594939800000003250001112000000200000311672',
    line: '43590001161200000020300003116720493980000000325',
    dueDate: '2023-07-01', // factor 9398 read in the window: the old cycle (the new one would be 2048)
    amountCents: 325,
    middle: '0000002',
    ourNumber: '00000311672',
  },
];
const TODAY = '2026-11-22';

/** The independent decoder's due date as yyyy-mm-dd. It builds local-time Dates, so read local fields. */
function libraryDueDate(line: string, today: string): string | null {
  const info = getBoletoInfo(line, { referenceDate: new Date(`${today}T12:00:00`) });
  const date = info?.expirationDate;
  if (!date) return null;
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

describe('published samples', () => {
  it.each(SAMPLES)('round-trips $barCode exactly', (sample) => {
    expect(bankSlipBarCodeToLine(sample.barCode)).toBe(sample.line);
    expect(bankSlipLineToBarCode(sample.line)).toBe(sample.barCode);
    expect(parseBankSlipBarCode(sample.barCode, TODAY)).toMatchObject({
      bankCode: '435',
      dueDate: sample.dueDate,
      amountCents: sample.amountCents,
    });
    expect(parseServiceFreeField(sample.barCode.slice(19))).toEqual({
      agency: '0001',
      wallet: '112',
      middle: sample.middle,
      ourNumber: sample.ourNumber,
    });
  });

  it.each(SAMPLES)('is rebuilt from its parts: $barCode', (sample) => {
    const freeField = serviceFreeField({ wallet: '112', middle: sample.middle, ourNumber: sample.ourNumber });
    const barCode = buildBankSlipBarCode({ dueDate: sample.dueDate, amountCents: sample.amountCents, freeField });
    expect(barCode).toBe(sample.barCode);
  });

  it.each(SAMPLES)('is read the same by the independent decoder: $line', (sample) => {
    // @brazilian-utils knows the 2025 factor reset and the same 3000/5500-day window, so it agrees on both samples.
    expect(isValidBoleto(sample.line)).toBe(true);
    expect(getBoletoInfo(sample.line)?.amount).toBe(sample.amountCents);
    expect(getBoletoInfo(sample.line)?.bankCode).toBe('435');
    expect(libraryDueDate(sample.line, TODAY)).toBe(sample.dueDate);
  });
});

describe('due-date factor', () => {
  it('follows the FEBRABAN reset of 2025-02-22', () => {
    expect(dueDateFactor('2000-07-03')).toBe(1000);
    expect(dueDateFactor('2025-02-21')).toBe(9999);
    expect(dueDateFactor('2025-02-22')).toBe(1000);
    expect(dueDateFactor('2026-11-22')).toBe(1000 + 638);
    expect(factorToDate(1000, TODAY)).toBe('2025-02-22');
    expect(factorToDate(9999, TODAY)).toBe('2025-02-21');
    expect(factorToDate(0, TODAY)).toBeNull();
  });

  it('reads a factor only inside the window [today - 3000, today + 5500]', () => {
    const earliest = addDays(TODAY, -3000);
    const latest = addDays(TODAY, 5500);
    expect(factorToDate(dueDateFactor(earliest), TODAY)).toBe(earliest);
    expect(factorToDate(dueDateFactor(latest), TODAY)).toBe(latest);
    // one day past the end of the window: the factor's other candidates are 9000 days away, both outside
    const error = formatError(() => factorToDate(dueDateFactor(addDays(latest, 1)), TODAY));
    expect(error.code).toBe('DUE_DATE_OUT_OF_RANGE');
    // The independent decoder answers the nearest candidate instead of refusing: we never guess a due date.
  });

  it('refuses factors that are no date', () => {
    expect(formatError(() => factorToDate(999, TODAY)).code).toBe('INVALID_DATE');
    expect(formatError(() => factorToDate(10000, TODAY)).code).toBe('INVALID_DATE');
    expect(formatError(() => dueDateFactor('2000-07-02')).code).toBe('DUE_DATE_OUT_OF_RANGE');
    expect(formatError(() => dueDateFactor('2026-02-30')).code).toBe('INVALID_DATE');
  });

  it('reads back every date of the window (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: -3000, max: 5500 }), (offset) => {
        const date = addDays(TODAY, offset);
        expect(factorToDate(dueDateFactor(date), TODAY)).toBe(date);
      }),
    );
  });
});

const digitString = (length: number) =>
  fc.array(fc.integer({ min: 0, max: 9 }), { minLength: length, maxLength: length }).map((d) => d.join(''));

const bankSlip = fc.record({
  bankCode: digitString(3),
  dueOffset: fc.option(fc.integer({ min: -3000, max: 5500 }), { nil: null }),
  amountCents: fc.integer({ min: 0, max: 9_999_999_999 }),
  freeField: digitString(25),
});

describe('generated bank slips', () => {
  it('round-trip bar code <-> line and parse back their fields', () => {
    fc.assert(
      fc.property(bankSlip, (slip) => {
        const dueDate = slip.dueOffset === null ? null : addDays(TODAY, slip.dueOffset);
        const barCode = buildBankSlipBarCode({ ...slip, dueDate });
        const line = bankSlipBarCodeToLine(barCode);
        expect(line).toHaveLength(BANK_SLIP_LINE_LENGTH);
        expect(bankSlipLineToBarCode(line)).toBe(barCode);
        expect(parseBankSlipBarCode(barCode, TODAY)).toMatchObject({
          bankCode: slip.bankCode,
          dueDate,
          amountCents: slip.amountCents === 0 ? null : slip.amountCents,
          freeField: slip.freeField,
        });
      }),
    );
  });

  it('are valid for the independent decoder, with the same amount and due date', () => {
    fc.assert(
      fc.property(bankSlip, (slip) => {
        const dueDate = slip.dueOffset === null ? null : addDays(TODAY, slip.dueOffset);
        const line = bankSlipBarCodeToLine(buildBankSlipBarCode({ ...slip, dueDate }));
        expect(isValidBoleto(line)).toBe(true);
        expect(getBoletoInfo(line)?.amount).toBe(slip.amountCents);
        expect(libraryDueDate(line, TODAY)).toBe(dueDate);
      }),
      { numRuns: 300 },
    );
  });

  it('detect any single changed digit in fields 1 to 3 of the line', () => {
    fc.assert(
      fc.property(
        bankSlip,
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 1, max: 9 }),
        (slip, position, delta) => {
          const line = bankSlipBarCodeToLine(buildBankSlipBarCode({ ...slip, dueDate: null }));
          const changed = (Number(line[position]) + delta) % 10;
          const corrupt = line.slice(0, position) + changed + line.slice(position + 1);
          expect(formatError(() => validateBankSlipLine(corrupt)).code).toBe('INVALID_CHECK_DIGIT');
        },
      ),
    );
  });

  it('garbage only ever throws FormatError', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), digitString(44), digitString(47)), (text) => {
        for (const fn of [
          () => bankSlipLineToBarCode(text),
          () => bankSlipBarCodeToLine(text),
          () => parseBankSlipBarCode(text, TODAY),
        ]) {
          try {
            fn();
          } catch (error) {
            expect(error).toBeInstanceOf(FormatError);
          }
        }
      }),
    );
  });
});

describe('errors say what is wrong', () => {
  const [sample] = SAMPLES;
  const line = sample!.line;

  it('length and characters', () => {
    const short = formatError(() => bankSlipLineToBarCode(line.slice(0, 45)));
    expect(short.code).toBe('INVALID_LENGTH');
    expect(short.message).toBe('Expected 47 digits in a bank slip digitable line, got 45');
    const letters = formatError(() => bankSlipBarCodeToLine(`A${sample!.barCode.slice(1)}`));
    expect(letters.code).toBe('INVALID_CHARACTERS');
    expect(letters.message).toContain('position 1');
  });

  it('each field check digit and the general one', () => {
    const withDigit = (position: number, digit: string) => line.slice(0, position) + digit + line.slice(position + 1);
    expect(formatError(() => validateBankSlipLine(withDigit(9, '0'))).message).toBe(
      'Expected check digit 6 for field 1 of the digitable line (position 10), got 0',
    );
    expect(formatError(() => validateBankSlipLine(withDigit(20, '0'))).message).toContain('field 2');
    expect(formatError(() => validateBankSlipLine(withDigit(31, '1'))).message).toContain('field 3');
    const general = formatError(() => validateBankSlipLine(withDigit(32, '0')));
    expect(general.code).toBe('INVALID_CHECK_DIGIT');
    // Named where the person typed it: the line's position 33 (it was 'the bar code (position 5)').
    expect(general.message).toBe(
      'Expected check digit 5 for the digitable line (position 33, the lone digit before the 14 of due date and amount), got 0',
    );
  });

  it('currency other than 9', () => {
    const barCode = sample!.barCode;
    expect(formatError(() => bankSlipBarCodeToLine(`${barCode.slice(0, 3)}8${barCode.slice(4)}`)).code).toBe(
      'INVALID_FIELD',
    );
  });

  it('builder inputs', () => {
    const freeField = '0'.repeat(25);
    expect(formatError(() => buildBankSlipBarCode({ dueDate: null, amountCents: 1.5, freeField })).code).toBe(
      'INVALID_AMOUNT',
    );
    expect(formatError(() => buildBankSlipBarCode({ dueDate: null, amountCents: 1, freeField: '1' })).message).toBe(
      'Expected 25 digits in a bank slip free field, got 1',
    );
    expect(formatError(() => serviceFreeField({ wallet: '121', middle: '0', ourNumber: '1' })).code).toBe(
      'INVALID_LENGTH',
    );
    expect(serviceFreeField({ wallet: '121', middle: '1234567', ourNumber: '42' })).toBe('0001121123456700000000042');
  });
});
