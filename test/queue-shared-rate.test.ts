/**
 * Rate limits shared by every daemon of one PostgreSQL store (issue 13; src/queue/shared-rate.ts), against the real
 * throw-away cluster: three daemons are three request queues, each with its own limiter over its own pg pool. Checked
 * from the start times the database recorded (its one clock): every window of every group, and of the overall limit,
 * holds at most N starts across the three; a saturated run's mean rate is close to the setting; a 429 answered to
 * one daemon pauses the group (only that group) on the others and lowers its ceiling for all; a daemon whose pool ends
 * mid-run does not block the others.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { RateLimitedError } from '../src/bank/errors.js';
import { buildConfig, loadConfig } from '../src/config.js';
import { queueOptionsFromConfig, RequestQueue } from '../src/queue/request-queue.js';
import {
  type SharedRateGate,
  SharedRateLimiter,
  type SharedRateOptions,
  sharedRateOptions,
} from '../src/queue/shared-rate.js';
import { openPgDriver } from '../src/store/pg-driver.js';
import type { SqlDriver } from '../src/store/sql.js';
import { openSqliteDriver } from '../src/store/sqlite-driver.js';
import type { EndpointGroup } from '../src/types.js';
import { skipPostgres, useTestCluster } from './helpers/postgres.js';

const cluster = useTestCluster();
const drivers: SqlDriver[] = [];

afterEach(async () => {
  await Promise.allSettled(drivers.splice(0).map((d) => d.close()));
});

interface Start {
  group: EndpointGroup;
  at: number;
  daemon: number;
}

/** A fresh database with the store's schema, and `count` daemons' limiters on it, each over a pool of its own. */
async function daemons(count: number, options: SharedRateOptions): Promise<SharedRateLimiter[]> {
  const c = cluster();
  const db = await c.createDatabase();
  const out: SharedRateLimiter[] = [];
  for (let i = 0; i < count; i++) {
    const driver = openPgDriver({ url: db.url, password: c.password, maxConnections: 4 });
    drivers.push(driver);
    if (i === 0) await driver.migrate();
    out.push(new SharedRateLimiter(driver, { ...options, daemon: `d${i}` }));
  }
  return out;
}

/** The gate, recording every admitted start (the database's time) into `log`. */
function recorded(limiter: SharedRateLimiter, daemon: number, log: Start[]): SharedRateGate {
  return {
    admit: async (group, signal) => {
      const at = await limiter.admit(group, signal);
      log.push({ group, at, daemon });
      return at;
    },
    rateLimited: (group, startedAt, ms) => limiter.rateLimited(group, startedAt, ms),
    notBefore: (group) => limiter.notBefore(group),
    ceiling: (group) => limiter.ceiling(group),
    limited: (group) => limiter.limited(group),
    onPause: (listener) => limiter.onPause(listener),
    onError: (listener) => limiter.onError(listener),
  };
}

/** The most starts in any half-open window [t, t + windowMs) (the busiest window begins at a start). */
function busiestWindow(starts: readonly number[], windowMs: number): number {
  const s = [...starts].sort((a, b) => a - b);
  let best = 0;
  let j = 0;
  for (let i = 0; i < s.length; i++) {
    if (j < i) j = i;
    while (j < s.length && s[j]! < s[i]! + windowMs) j++;
    best = Math.max(best, j - i);
  }
  return best;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A queue on each of two daemons' limiters, and the pauses the second one's queue is told of. */
function twoQueues(a: SharedRateGate, b: SharedRateGate) {
  const qa = new RequestQueue({ concurrency: 2 });
  qa.useSharedLimits(a);
  const qb = new RequestQueue({ concurrency: 2 });
  qb.useSharedLimits(b);
  const pausesSeenByB: Array<[EndpointGroup, number]> = [];
  qb.onPause((g, ms) => pausesSeenByB.push([g, ms]));
  return { qa, qb, pausesSeenByB };
}

/** A request of `group` on `q` that the bank answers 429 (Retry-After `retryAfterMs`); resolves with when it did. */
async function answered429(q: RequestQueue, group: EndpointGroup, retryAfterMs: number): Promise<number> {
  let at = 0;
  await expect(
    q.run(group, async (task) => {
      await q.gate({ task });
      at = performance.now();
      throw rateLimited(retryAfterMs);
    }),
  ).rejects.toBeInstanceOf(RateLimitedError);
  return at;
}

function rateLimited(retryAfterMs: number): RateLimitedError {
  return new RateLimitedError('HTTP 429', { method: 'POST', path: '/v1/charges', status: 429, retryAfterMs });
}

describe.skipIf(skipPostgres)('rate limits shared by three daemons on one PostgreSQL store', () => {
  it('every window of every group and of the overall limit holds at most N starts, across all daemons (property)', async () => {
    const scenario = fc.record({
      charges: fc.record({ requests: fc.integer({ min: 2, max: 6 }), windowMs: fc.integer({ min: 80, max: 200 }) }),
      pix: fc.record({ requests: fc.integer({ min: 2, max: 6 }), windowMs: fc.integer({ min: 80, max: 200 }) }),
      overall: fc.option(fc.integer({ min: 3, max: 10 }), { nil: undefined }),
      concurrency: fc.tuple(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 6 }),
      ),
      tasks: fc.array(
        fc.record({
          daemon: fc.integer({ min: 0, max: 2 }),
          group: fc.constantFrom<EndpointGroup>('charges', 'pix'),
          localMs: fc.integer({ min: 0, max: 15 }),
          latencyMs: fc.integer({ min: 0, max: 40 }),
          // A lookup, then the payment: a second request of the same task, after the first one's answer.
          twice: fc.boolean(),
        }),
        { minLength: 10, maxLength: 40 },
      ),
    });
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const overall = s.overall === undefined ? undefined : { requests: s.overall, windowMs: 150 };
        const limiters = await daemons(3, { rateLimits: { charges: s.charges, pix: s.pix }, overall });
        const log: Start[] = [];
        const queues = limiters.map((l, i) => {
          const q = new RequestQueue({ concurrency: s.concurrency[i]! });
          q.useSharedLimits(recorded(l, i, log));
          return q;
        });
        await Promise.all(
          s.tasks.map((t) => {
            const q = queues[t.daemon]!;
            return q.run(t.group, async (task) => {
              await sleep(t.localMs);
              for (let n = t.twice ? 2 : 1; n > 0; n--) {
                await q.gate({ task });
                await sleep(t.latencyMs);
              }
            });
          }),
        );
        const expected = s.tasks.reduce((n, t) => n + (t.twice ? 2 : 1), 0);
        expect(log).toHaveLength(expected);
        for (const g of ['charges', 'pix'] as const) {
          const starts = log.filter((x) => x.group === g).map((x) => x.at);
          expect(busiestWindow(starts, s[g].windowMs)).toBeLessThanOrEqual(s[g].requests);
        }
        if (overall) {
          expect(
            busiestWindow(
              log.map((x) => x.at),
              overall.windowMs,
            ),
          ).toBeLessThanOrEqual(overall.requests);
        }
        await Promise.all(drivers.splice(0).map((d) => d.close()));
      }),
      { numRuns: 4 },
    );
  }, 120_000);

  it('a saturated run of three daemons keeps the mean rate close to the setting, and no window over it', async () => {
    const setting = { requests: 10, windowMs: 200 };
    const limiters = await daemons(3, { rateLimits: { 'bill-payments': setting } });
    const log: Start[] = [];
    const stopAt = performance.now() + 3000;
    await Promise.all(
      limiters.flatMap((l, d) =>
        Array.from({ length: 3 }, async () => {
          while (performance.now() < stopAt) {
            const at = await l.admit('bill-payments');
            log.push({ group: 'bill-payments', at, daemon: d });
            await sleep(Math.random() * 20);
          }
        }),
      ),
    );
    const starts = log.map((x) => x.at).sort((a, b) => a - b);
    expect(busiestWindow(starts, setting.windowMs)).toBeLessThanOrEqual(setting.requests);
    // The mean over whole windows from the first start: the windows can hold N each at most.
    const windows = 12;
    const first = starts[0]!;
    const inRun = starts.filter((t) => t < first + windows * setting.windowMs).length;
    const ratio = inRun / (windows * setting.requests);
    expect(ratio).toBeLessThanOrEqual(1);
    // Close to it: about 97% measured (the 1% guard, and a place freed is taken a round trip late); 90% leaves room
    // for a loaded machine. The bench measures a long run (npm run bench -- --only shared-rate).
    expect(ratio).toBeGreaterThan(0.9);
    // Every daemon had its share (none starved by the others).
    for (let d = 0; d < 3; d++) expect(log.filter((x) => x.daemon === d).length).toBeGreaterThan(inRun / 6);
  }, 30_000);

  it("a 429 answered to one daemon pauses that group (only it) on the others and lowers the group's ceiling for all", async () => {
    const setting = { requests: 8, windowMs: 200 };
    const [a, b] = await daemons(2, { rateLimits: { charges: setting, pix: setting } });
    const { qa, qb, pausesSeenByB } = twoQueues(a!, b!);

    const startedAt = await answered429(qa, 'charges', 600);
    // The pause is recorded in the database before the 429's task settles its effects; give it its round trip.
    await sleep(50);

    // Another group on the other daemon goes at once.
    const t0 = performance.now();
    await qb.run('pix', (task) => qb.gate({ task }));
    expect(performance.now() - t0).toBeLessThan(300);

    // The paused group on the other daemon waits for the pause's end (on its own clock: about 600 ms after the 429).
    await qb.run('charges', (task) => qb.gate({ task }));
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(500);
    expect(pausesSeenByB.some(([g, ms]) => g === 'charges' && ms > 300)).toBe(true);
    expect(pausesSeenByB.some(([g]) => g === 'pix')).toBe(false);
    // Halved for both daemons: b read it from the database while admitting.
    expect(qb.currentLimit('charges')).toBe(4);
    expect(qb.currentLimit('pix')).toBe(8);
  }, 30_000);

  it('a 429 for a request sent before the last decrease is an echo: the shared ceiling is halved once per episode', async () => {
    const setting = { requests: 16, windowMs: 200 };
    const [a, b] = await daemons(2, { rateLimits: { claims: setting } });
    const sentA = await a!.admit('claims');
    const sentB = await b!.admit('claims');
    expect(await a!.rateLimited('claims', sentA, 100)).toBe(8);
    // b's request left before a's decrease: the same episode.
    expect(await b!.rateLimited('claims', sentB, 100)).toBeUndefined();
    const later = await b!.admit('claims');
    expect(await b!.rateLimited('claims', later, 100)).toBe(4);
    expect(a!.ceiling('claims')).toBe(8); // as a last saw it; it reads 4 at its next admission
    await a!.admit('claims');
    expect(a!.ceiling('claims')).toBe(4);
  }, 30_000);

  it('a group no shared limit counts is not admitted in the database: its requests leave at once', async () => {
    const [limiter] = await daemons(1, { rateLimits: { charges: { requests: 5, windowMs: 1000 } } });
    const log: Start[] = [];
    const q = new RequestQueue({ concurrency: 2 });
    q.useSharedLimits(recorded(limiter!, 0, log));
    // bill-payments: no limit of its own, no overall limit. Its gate says "go" in the same call, every time.
    const answers: unknown[] = [];
    for (let i = 0; i < 3; i++) await q.run('bill-payments', async (task) => answers.push(q.beforeSend({ task })));
    expect(answers).toEqual([undefined, undefined, undefined]);
    expect(log).toEqual([]);
    // A limited group is admitted there.
    await q.run('charges', (task) => q.gate({ task }));
    expect(log.map((x) => x.group)).toEqual(['charges']);

    // With an overall limit, every group is counted: bill-payments too.
    const [overall] = await daemons(1, { rateLimits: {}, overall: { requests: 5, windowMs: 1000 } });
    const q2 = new RequestQueue({ concurrency: 2 });
    q2.useSharedLimits(recorded(overall!, 0, log));
    await q2.run('bill-payments', (task) => q2.gate({ task }));
    expect(log.map((x) => x.group)).toEqual(['charges', 'bill-payments']);
  });

  it('a 429 of a group no limit counts pauses it on the other daemons too, once their watch reads it', async () => {
    // No limit at all: bill-payments takes no admission, so no admission can find the pause (watchPauses does).
    const [a, b] = await daemons(2, { rateLimits: {}, pauseWatchMs: 50 });
    const { qa, qb, pausesSeenByB } = twoQueues(a!, b!);
    const stop = b!.watchPauses();
    try {
      const answeredAt = await answered429(qa, 'bill-payments', 1_500);
      const deadline = performance.now() + 1_000;
      while (!qb.isPaused('bill-payments') && performance.now() < deadline) await sleep(10);
      expect(qb.isPaused('bill-payments')).toBe(true);
      expect(qb.isPaused('pix')).toBe(false);
      // Told once, with what is left of the pause, however many times the watch reads it while it runs.
      await sleep(300);
      expect(pausesSeenByB).toHaveLength(1);
      expect(pausesSeenByB[0]![0]).toBe('bill-payments');
      expect(pausesSeenByB[0]![1]).toBeGreaterThan(1_000);
      // A request of the group on b leaves only once the pause has ended.
      await qb.run('bill-payments', (task) => qb.gate({ task }));
      expect(performance.now() - answeredAt).toBeGreaterThanOrEqual(1_400);
    } finally {
      stop();
    }
  }, 30_000);

  it('a daemon whose pool ends mid-run does not block the others', async () => {
    const setting = { requests: 10, windowMs: 200 };
    const limiters = await daemons(3, { rateLimits: { charges: setting } });
    const log: Start[] = [];
    const deadAt = performance.now() + 800;
    const stopAt = performance.now() + 2600;
    const dead = drivers[0]!;
    const errors: unknown[] = [];
    limiters[0]!.onError((e) => errors.push(e));
    const kill = sleep(800).then(() => dead.close());
    await Promise.all([
      kill,
      ...limiters.flatMap((l, d) =>
        Array.from({ length: 3 }, async () => {
          const until = d === 0 ? deadAt + 400 : stopAt;
          // Stops the worker at its end (the dead daemon's admissions are retried until then, and fail).
          const signal = AbortSignal.timeout(Math.max(1, Math.ceil(until - performance.now())));
          while (performance.now() < until) {
            try {
              const at = await l.admit('charges', signal);
              log.push({ group: 'charges', at, daemon: d });
            } catch {
              break;
            }
            await sleep(Math.random() * 20);
          }
        }),
      ),
    ]);
    expect(errors.length).toBeGreaterThan(0);
    const starts = log.map((x) => x.at).sort((a, b) => a - b);
    expect(busiestWindow(starts, setting.windowMs)).toBeLessThanOrEqual(setting.requests);
    // After the dead daemon's last start (and one window for it to leave), the two others take the whole rate.
    const killedAt = Math.max(...log.filter((x) => x.daemon === 0).map((x) => x.at));
    expect(starts[starts.length - 1]! - killedAt).toBeGreaterThan(1500);
    const from = killedAt + setting.windowMs * 1.01;
    const windows = 6;
    const after = starts.filter((t) => t >= from && t < from + windows * setting.windowMs).length;
    // A place held for the dead daemon would cost its third of the rate (about 0.66); a lock it held, all of it.
    expect(after / (windows * setting.requests)).toBeGreaterThan(0.8);
  }, 30_000);
});

describe('the shared limits setting', () => {
  it('is "auto" by default (shared when the store is PostgreSQL), "off" on request, anything else refused', () => {
    const cwd = path.resolve(import.meta.dirname, '..');
    expect(loadConfig({ cwd, env: {} }).queue.sharedRateLimits).toBe('auto');
    expect(
      buildConfig({ queue: { sharedRateLimits: 'off' } }, { file: 'c.jsonc', env: {} }).queue.sharedRateLimits,
    ).toBe('off');
    expect(() => buildConfig({ queue: { sharedRateLimits: 'on' } }, { file: 'c.jsonc', env: {} })).toThrow(
      /c\.jsonc.*sharedRateLimits/s,
    );
  });

  it('counts the same limits as the queue would (per group, overall, adaptive)', () => {
    const options = queueOptionsFromConfig({
      concurrency: 4,
      maxRowsInFlight: 100,
      rateLimits: {
        charges: { requests: 20, intervalMs: 1000 },
        'bill-payments': { requests: 0, intervalMs: 1000 },
        pix: { requests: 10, intervalMs: 500 },
        claims: { requests: 5, intervalMs: 1000 },
      },
      overallRateLimit: { requests: 30, intervalMs: 1000 },
      adaptiveRateLimits: false,
    });
    expect(sharedRateOptions(options)).toEqual({
      rateLimits: {
        charges: { requests: 20, windowMs: 1000 },
        pix: { requests: 10, windowMs: 500 },
        claims: { requests: 5, windowMs: 1000 },
      },
      overall: { requests: 30, windowMs: 1000 },
      adaptive: false,
    });
  });

  it('is refused over a SQLite store (one daemon: the local limiter counts)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'remessa-shared-rate-'));
    const driver = openSqliteDriver(path.join(dir, 's.sqlite'));
    try {
      expect(() => new SharedRateLimiter(driver)).toThrow(/PostgreSQL/);
    } finally {
      await driver.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
