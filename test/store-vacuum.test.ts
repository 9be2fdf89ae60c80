/**
 * The rules of a store's own vacuums (src/store/vacuum.ts), on a clock the test moves and a `run` the test answers:
 * each `everyRows` rows ended, at most one at a time, never sooner than 10x the last one's duration after it ended,
 * a failure logged once at warn while it repeats, a cancel at stop. The real server's side is
 * test/store-vacuum.postgres.test.ts. A store on SQLite runs none.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildConfig } from '../src/config.js';
import { Metrics } from '../src/metrics.js';
import type { ServerWarning } from '../src/store/sql.js';
import { openStore } from '../src/store/store.js';
import { RowVacuums, VACUUM_PAUSE_FACTOR, VACUUM_SQL } from '../src/store/vacuum.js';
import { memoryLogger } from './helpers/memory-logger.js';

/** A vacuum the test ends by hand: `end(warnings)` or `fail(error)`. */
function harness(everyRows: number) {
  const clock = { now: 0 };
  const calls: Array<{
    sql: string;
    signal: AbortSignal;
    end: (w?: ServerWarning[]) => void;
    fail: (e: Error) => void;
  }> = [];
  const { logger, text } = memoryLogger({ format: 'json' });
  const vacuums = new RowVacuums({
    everyRows,
    logger,
    monotonic: () => clock.now,
    run: (sql, signal) =>
      new Promise<ServerWarning[]>((resolve, reject) => {
        calls.push({ sql, signal, end: (w = []) => resolve(w), fail: reject });
        signal.addEventListener('abort', () => reject(new Error('canceling statement due to user request')));
      }),
  });
  const levels = (level: string) =>
    text()
      .split('\n')
      .filter((l) => l.includes(`"level":"${level}"`));
  const settle = () => new Promise((r) => setTimeout(r, 0));
  const ended = (n: number) => {
    for (let i = 0; i < n; i++) vacuums.rowEnded();
  };
  return { clock, calls, vacuums, levels, settle, ended };
}

describe('a store vacuums its hot tables as its rows end (the rules)', () => {
  it('runs one vacuum each everyRows rows ended, and none while one is under way', async () => {
    const h = harness(10);
    h.ended(9);
    expect(h.calls).toHaveLength(0);
    h.ended(1);
    expect(h.calls).toHaveLength(1);
    expect(h.calls[0]!.sql).toBe(VACUUM_SQL);
    expect(VACUUM_SQL).toMatch(/SKIP_LOCKED/);
    expect(VACUUM_SQL).toMatch(/ rows, steps$/);
    // Under way: the rows ended meanwhile are counted, not started on.
    h.ended(25);
    expect(h.calls).toHaveLength(1);
    expect(h.vacuums.running).toBe(true);
    h.calls[0]!.end();
    await h.settle();
    expect(h.vacuums.stats).toEqual({ done: 1, skipped: 0, failed: 0 });
    // Took no time on this clock: the next row ended starts the vacuum the rows counted meanwhile owe.
    h.ended(1);
    expect(h.calls).toHaveLength(2);
  });

  it('waits 10x the last vacuum s duration after it ended before the next, however many rows end', async () => {
    const h = harness(10);
    h.ended(10);
    h.clock.now = 200; // the vacuum took 200 ms
    h.calls[0]!.end();
    await h.settle();
    expect(VACUUM_PAUSE_FACTOR).toBe(10);
    h.clock.now = 200 + 10 * 200 - 1;
    h.ended(1_000);
    expect(h.calls).toHaveLength(1);
    h.clock.now = 200 + 10 * 200;
    h.ended(1);
    expect(h.calls).toHaveLength(2);
  });

  it('counts a table skipped for another vacuum as skipped, and warns once while failures repeat', async () => {
    const h = harness(1);
    h.ended(1);
    h.calls[0]!.end([{ code: '55P03', message: 'skipping vacuum of "rows" --- lock not available' }]);
    await h.settle();
    expect(h.vacuums.stats).toEqual({ done: 0, skipped: 1, failed: 0 });
    expect(h.levels('warn')).toHaveLength(0);
    h.ended(1);
    h.calls[1]!.fail(new Error('Connection terminated unexpectedly'));
    await h.settle();
    h.ended(1);
    h.calls[2]!.end([{ code: undefined, message: 'skipping "rows" --- only table or database owner can vacuum it' }]);
    await h.settle();
    expect(h.vacuums.stats).toEqual({ done: 0, skipped: 1, failed: 2 });
    expect(h.levels('warn')).toHaveLength(1);
    // Working again: said at info; the next failure warns again.
    h.ended(1);
    h.calls[3]!.end();
    await h.settle();
    expect(h.levels('info').join('')).toMatch(/works again/);
    h.ended(1);
    h.calls[4]!.fail(new Error('the server is gone'));
    await h.settle();
    expect(h.levels('warn')).toHaveLength(2);
  });

  it('cancels the vacuum under way at stop, counts it as no failure, and starts no more', async () => {
    const h = harness(1);
    h.ended(1);
    const stopped = h.vacuums.stop();
    expect(h.calls[0]!.signal.aborted).toBe(true);
    await stopped;
    expect(h.vacuums.running).toBe(false);
    expect(h.vacuums.stats).toEqual({ done: 0, skipped: 0, failed: 0 });
    expect(h.levels('warn')).toHaveLength(0);
    h.ended(5);
    expect(h.calls).toHaveLength(1);
  });

  it('refuses everyRows below 1 (0 is "no vacuums": the store makes none)', () => {
    expect(() => harness(0)).toThrow(/Expected everyRows to be an integer >= 1, got 0/);
  });

  it('shows the vacuums by result in the metrics', async () => {
    const metrics = new Metrics();
    metrics.attach({ storeVacuums: () => ({ done: 3, skipped: 1, failed: 2 }) });
    const text = await metrics.render();
    expect(text).toContain('remessa_store_vacuums_total{result="done"} 3');
    expect(text).toContain('remessa_store_vacuums_total{result="skipped"} 1');
    expect(text).toContain('remessa_store_vacuums_total{result="failed"} 2');
  });
});

describe('store.vacuumEveryRows', () => {
  it('is absent by default (the store s default), takes 0 to turn vacuums off, and refuses what is not a count', () => {
    expect(buildConfig({}, { env: {} }).store.vacuumEveryRows).toBeUndefined();
    expect(buildConfig({ store: { vacuumEveryRows: 0 } }, { env: {} }).store.vacuumEveryRows).toBe(0);
    expect(buildConfig({ store: { vacuumEveryRows: 500 } }, { env: {} }).store.vacuumEveryRows).toBe(500);
    expect(() => buildConfig({ store: { vacuumEveryRows: -1 } }, { env: {} })).toThrow(/vacuumEveryRows/);
    expect(() => buildConfig({ store: { vacuumEveryRows: 2.5 } }, { env: {} })).toThrow(/vacuumEveryRows/);
  });

  it('is ignored on SQLite: the store runs no vacuum, whatever the setting', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'remessa-vacuum-sqlite-'));
    try {
      const store = await openStore(path.join(dir, 'remessa.sqlite'), { vacuumEveryRows: 1 });
      store.rowEnded();
      expect(store.vacuumStats).toBeUndefined();
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
