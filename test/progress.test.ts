/**
 * Progress refreshes by time, not by a count of rows: a slow batch still shows movement, a fast one is not drawn
 * every few rows. Plain lines (no terminal) carry rows done of total, by status, the rate and the ETA.
 */
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../src/log.js';
import { createProgress, formatDuration, LogProgress } from '../src/runner/progress.js';

function sink() {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  return {
    stream,
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((l) => l !== ''),
  };
}

beforeEach(() => {
  vi.useFakeTimers({ now: new Date('2026-11-23T10:00:00Z') });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('plain progress lines', () => {
  it('writes nothing before the interval, then one line with done/total, statuses, rate and ETA', () => {
    const { stream, lines } = sink();
    const p = createProgress({ stream, tty: false, intervalMs: 5000, locale: 'en' });
    p.start('charges cobrancas.csv', 100);
    for (let i = 0; i < 3; i++) p.tick('succeeded');
    expect(lines()).toEqual([]);
    vi.advanceTimersByTime(5000);
    p.tick('rejected'); // 4 rows in 5 s
    expect(lines()).toEqual(['charges cobrancas.csv: 4/100 rows (succeeded 3, rejected 1), 0.8 rows/s, ETA 2m00s']);
    p.tick('succeeded');
    expect(lines()).toHaveLength(1);
    p.stop();
    expect(lines()[1]).toBe('charges cobrancas.csv: 5 rows done (succeeded 4, rejected 1)');
  });

  it('the last line says one row in the singular, in both languages', () => {
    for (const [locale, said] of [
      ['pt-BR', 'validate c.csv: 1 linha processada (válidas 1)'],
      ['en', 'validate c.csv: 1 row done (valid 1)'],
    ] as const) {
      const { stream, lines } = sink();
      const p = createProgress({ stream, tty: false, intervalMs: 5000, locale });
      p.start('validate c.csv');
      p.tick('valid');
      p.stop();
      expect(lines()).toEqual([said]);
    }
  });

  it('a slow run still gets a line per interval, even with few rows', () => {
    const { stream, lines } = sink();
    const p = createProgress({ stream, tty: false, intervalMs: 1000 });
    p.start('bills', 3);
    for (let i = 1; i <= 3; i++) {
      vi.advanceTimersByTime(1000);
      p.update(i, 3);
    }
    expect(lines()).toHaveLength(3);
  });
});

describe('the daemon log of a running batch', () => {
  it('logs rows done of total, counts read from the store, rate and ETA at its interval', () => {
    const { stream, lines } = sink();
    const logger = createLogger({ destination: stream, format: 'json' });
    const p = new LogProgress({
      logger,
      intervalMs: 30_000,
      countsOf: (id): Record<string, number> => (id === 'b1' ? { succeeded: 40, uncertain: 0, pending: 60 } : {}),
      fields: { file: 'bill-payments/contas.csv', kind: 'bill-payments' },
    });
    p.update(0, undefined, 'b1');
    vi.advanceTimersByTime(30_000);
    p.update(40, 100, 'b1');
    const events = lines().map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      msg: 'batch progress',
      file: 'bill-payments/contas.csv',
      done: 40,
      total: 100,
      counts: { succeeded: 40, pending: 60 },
      etaSeconds: 45,
    });
    expect(events[0]?.ratePerSecond).toBeCloseTo(1.33, 2);
  });

  it("a resumed batch's last line counts every row of the answer, but its rate only the rows this run moved", () => {
    // 10,000 rows, 9,900 ended before (at ingestion, or before a restart): this run drives 100 rows in 50 s.
    const { stream, lines } = sink();
    const logger = createLogger({ destination: stream, format: 'json' });
    const p = new LogProgress({ logger, intervalMs: 30_000 });
    p.update(0, 100, 'b1');
    vi.advanceTimersByTime(50_000);
    p.update(100, 100, 'b1');
    vi.advanceTimersByTime(30_000);
    p.settle(10_000);
    const last = JSON.parse(lines().at(-1)!) as Record<string, unknown>;
    // Before: done 10,000 of total 100, at 125 rows a second.
    expect(last).toMatchObject({ done: 10_000, total: 10_000 });
    expect(last.ratePerSecond).toBeCloseTo(100 / 80, 2);
  });
});

describe('formatDuration', () => {
  it.each([
    [42, '42s'],
    [185, '3m05s'],
    [3720, '1h02m'],
  ])('%d s is %s', (s, text) => {
    expect(formatDuration(s)).toBe(text);
  });
});
