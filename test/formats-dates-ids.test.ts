import fc from 'fast-check';
import { validate as uuidValidate, version as uuidVersion } from 'uuid';
import { describe, expect, it } from 'vitest';
import {
  addDays,
  endToEndId,
  epochDay,
  FormatError,
  fromEpochDay,
  isGuid,
  isoTimestamp,
  isValidEndToEndId,
  oneYearAfter,
  parseDate,
  randomAlphanumeric,
  SERVICE_ISPB,
  uuidV5,
} from '../src/formats/index.js';

describe('dates', () => {
  it('oneYearAfter keeps the day and month, 29 February becoming 28 February', () => {
    expect(oneYearAfter('2026-11-22')).toBe('2027-11-22');
    expect(oneYearAfter('2024-02-29')).toBe('2025-02-28');
    expect(oneYearAfter('2027-02-28')).toBe('2028-02-28');
  });

  it('reads yyyy-mm-dd and dd/mm/yyyy, calendar-valid', () => {
    expect(parseDate('2026-11-22')).toBe('2026-11-22');
    expect(parseDate('22/11/2026')).toBe('2026-11-22');
    expect(parseDate('29/02/2024')).toBe('2024-02-29');
    // As Excel writes a date without leading zeros: day and month of 1 or 2 digits, the year of 4.
    expect(parseDate('1/2/2026')).toBe('2026-02-01');
    expect(parseDate('15/3/2027')).toBe('2027-03-15');
    for (const text of [
      '29/02/2026',
      '2026-13-01',
      '2026-04-31',
      '22-11-2026',
      '2026/11/22',
      '1/2/26',
      '123/1/2026',
      '',
    ]) {
      expect(() => parseDate(text)).toThrow(FormatError);
    }
    expect(() => parseDate('31/04/2026')).toThrow('Expected a calendar date, got "31/04/2026"');
  });

  it("reads Excel's date and time at midnight as the date, and refuses another time naming the date", () => {
    expect(parseDate('20/01/2027 00:00')).toBe('2027-01-20');
    expect(parseDate('20/1/2027 0:00:00')).toBe('2027-01-20');
    expect(parseDate('2027-01-20T00:00:00')).toBe('2027-01-20');
    expect(parseDate('2027-01-20 00:00:00.000')).toBe('2027-01-20');
    expect(() => parseDate('20/01/2027 14:30')).toThrow(
      'Expected a date alone (dd/mm/yyyy), got "20/01/2027 14:30", with a time of day: write 20/01/2027',
    );
    expect(() => parseDate('31/02/2027 00:00')).toThrow('Expected a calendar date, got "31/02/2027"');
    expect(() => parseDate('20/01/2027 25:00')).toThrow(FormatError);
  });

  it("refuses Excel's short date (a year of two digits) and names the day it may mean, never guessing", () => {
    expect(() => parseDate('15/03/27')).toThrow(
      'Expected a year of four digits (dd/mm/yyyy), got "15/03/27": if it is 15/03/2027, write it so',
    );
    expect(() => parseDate(' 1/2/26 ')).toThrow('got "1/2/26": if it is 01/02/2026, write it so');
    try {
      parseDate('15/03/27');
    } catch (err) {
      expect((err as FormatError).code).toBe('INVALID_DATE');
    }
  });

  it('agrees with Date on every day of four centuries (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: -100_000, max: 100_000 }), (day) => {
        const iso = new Date(day * 86_400_000).toISOString().slice(0, 10);
        expect(fromEpochDay(day)).toBe(iso);
        expect(epochDay(iso)).toBe(day);
        const [y, m, d] = iso.split('-');
        expect(parseDate(`${d}/${m}/${y}`)).toBe(iso);
      }),
    );
    expect(addDays('2024-02-28', 1)).toBe('2024-02-29');
    expect(addDays('2025-02-22', -1)).toBe('2025-02-21');
  });

  it('writes UTC timestamps with milliseconds', () => {
    expect(isoTimestamp(new Date(Date.UTC(2026, 10, 22, 1, 2, 3, 4)))).toBe('2026-11-22T01:02:03.004Z');
    expect(() => isoTimestamp(new Date(Number.NaN))).toThrow(FormatError);
  });
});

describe('ids', () => {
  it('randomAlphanumeric gives the asked number of letters and digits', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 64 }), (length) => {
        expect(randomAlphanumeric(length)).toMatch(new RegExp(`^[A-Za-z0-9]{${length}}$`));
      }),
    );
  });

  it('recognises GUIDs', () => {
    expect(isGuid('7d9f0335-8dcc-4054-9bf9-0dbd61d36906')).toBe(true);
    expect(isGuid('7D9F0335-8DCC-4054-9BF9-0DBD61D36906')).toBe(true);
    expect(isGuid('7d9f03358dcc40549bf90dbd61d36906')).toBe(false);
    expect(isGuid('not-a-guid')).toBe(false);
  });

  it('makes stable UUID v5 ids', () => {
    const namespace = '6ba7b810-9dad-11d1-80b4-00c04fd430c8'; // RFC 4122 DNS namespace
    expect(uuidV5('www.example.com', namespace)).toBe('2ed6657d-e927-568b-95e1-2665a8aea6a2');
    const id = uuidV5('charges|ABC-1', namespace);
    expect(uuidValidate(id) && uuidVersion(id)).toBe(5);
    expect(() => uuidV5('x', 'nope')).toThrow(FormatError);
  });

  it('makes 32-character end-to-end ids that validate (property)', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2099-12-31T23:59:59Z'), noInvalidDate: true }),
        fc.infiniteStream(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })),
        fc.constantFrom<'E' | 'D'>('E', 'D'),
        (at, stream, prefix) => {
          const id = endToEndId({ ispb: SERVICE_ISPB, at, random: () => stream.next().value, prefix });
          expect(id).toHaveLength(32);
          expect(id.startsWith(`${prefix}${SERVICE_ISPB}`)).toBe(true);
          expect(id.slice(9, 21)).toBe(at.toISOString().replace(/\D/g, '').slice(0, 12));
          expect(isValidEndToEndId(id)).toBe(true);
        },
      ),
    );
    const at = new Date(Date.UTC(2026, 10, 22, 13, 45));
    expect(endToEndId({ ispb: '38224857', at, random: () => 0 })).toBe('E38224857202611221345AAAAAAAAAAA');
  });

  it('refuses malformed end-to-end ids', () => {
    expect(isValidEndToEndId('E38224857202611221345AAAAAAAAAAA')).toBe(true);
    expect(isValidEndToEndId('X38224857202611221345AAAAAAAAAAA')).toBe(false);
    expect(isValidEndToEndId('E38224857202613221345AAAAAAAAAAA')).toBe(false); // month 13
    expect(isValidEndToEndId('E38224857202611222445AAAAAAAAAAA')).toBe(false); // hour 24
    expect(isValidEndToEndId('E38224857202611221345AAAAAAAAAA-')).toBe(false);
    expect(isValidEndToEndId('E38224857202611221345AAAAAAAAAA')).toBe(false);
    expect(() => endToEndId({ ispb: '123', at: new Date() })).toThrow(FormatError);
  });
});
