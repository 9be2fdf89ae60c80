/**
 * `brasiliaDay` keeps the day of the last UTC hour it was asked about (src/formats/brasilia-time.ts), and
 * `factorToDate` reads a factor with its window computed once: both must give, for every instant and factor, what
 * `Intl` and the plain formula give.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DUE_DATE_FACTOR_BASE, factorToDate } from '../src/formats/boleto.js';
import { brasiliaDay } from '../src/formats/brasilia-time.js';
import { addDays, daysBetween } from '../src/formats/dates.js';

const INTL = new Intl.DateTimeFormat('en-CA', {
  timeZone: 'America/Sao_Paulo',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
});

const MS_1900 = Date.UTC(1900, 0, 1);
const MS_2100 = Date.UTC(2100, 0, 1);

describe('brasiliaDay', () => {
  it("is Intl's day of the instant, whatever instant was asked before (same hour, other hours, before 1914)", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(fc.integer({ min: MS_1900, max: MS_2100 }), fc.integer({ min: -7_200_000, max: 7_200_000 })),
          { minLength: 1, maxLength: 20 },
        ),
        (instants) => {
          for (const [at, delta] of instants) {
            // Each instant, then one near it (often the same UTC hour, often across a midnight in Brasília).
            for (const ms of [at, at + delta, at]) expect(brasiliaDay(new Date(ms))).toBe(INTL.format(ms));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('changes at 03:00 UTC, midnight in Brasília, to the millisecond, asked in order as a clock would', () => {
    const midnight = Date.UTC(2026, 10, 30, 3);
    for (let ms = midnight - 3_600_000; ms <= midnight + 3_600_000; ms += 59_999) {
      expect(brasiliaDay(new Date(ms))).toBe(INTL.format(ms));
    }
    expect(brasiliaDay(new Date(midnight - 1))).toBe('2026-11-29');
    expect(brasiliaDay(new Date(midnight))).toBe('2026-11-30');
    expect(brasiliaDay(new Date(midnight - 1))).toBe('2026-11-29');
  });

  it('a summer-time change of the past (2018-11-04, midnight became 01:00) and mean solar time (1913)', () => {
    for (const start of [Date.UTC(2018, 10, 4, 0), Date.UTC(2019, 1, 16, 23), Date.UTC(1913, 11, 31, 0)]) {
      for (let ms = start; ms < start + 6 * 3_600_000; ms += 61_000) {
        expect(brasiliaDay(new Date(ms))).toBe(INTL.format(ms));
      }
    }
  });

  it('an invalid date is still a RangeError', () => {
    brasiliaDay(new Date(Date.UTC(2026, 0, 1)));
    expect(() => brasiliaDay(new Date(Number.NaN))).toThrow(RangeError);
  });
});

describe('factorToDate', () => {
  /** The reading the window describes, day by day: the one date with this factor between its two ends. */
  function byTheWindow(factor: number, today: string): string | null | 'out of range' {
    if (factor === 0) return null;
    const from = addDays(today, -3000);
    for (let d = 0; d <= 8500; d++) {
      const date = addDays(from, d);
      const days = daysBetween(DUE_DATE_FACTOR_BASE, date);
      if (days >= 1000 && 1000 + ((days - 1000) % 9000) === factor) return date;
    }
    return 'out of range';
  }

  it('gives the one date of the factor in the window around today, for any today and factor', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 999, max: 9999 }).map((f) => (f === 999 ? 0 : f)),
        fc.integer({ min: Date.UTC(2001, 0, 1), max: Date.UTC(2060, 0, 1) }),
        (factor, at) => {
          const today = INTL.format(at);
          const expected = byTheWindow(factor, today);
          if (expected === 'out of range') expect(() => factorToDate(factor, today)).toThrow(/./);
          else expect(factorToDate(factor, today)).toBe(expected);
        },
      ),
      { numRuns: 200 },
    );
  });
});
