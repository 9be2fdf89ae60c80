/**
 * (e) shared rate limit (issue 13): do the limits hold across daemons sharing one PostgreSQL store, and do they reach
 * the setting? One limit (N per W ms, bill-payments) shared by 1, 2 and 3 daemons: each daemon is a request queue of
 * its own with its own limiter over its own pg pool (src/queue/shared-rate.ts), all on one throw-away cluster
 * (test/helpers/postgres.ts's, started here and stopped after), saturated for `seconds` like bench/rate-limit.ts:
 * `concurrency` tasks per daemon, each a short local delay, its request through the gate, a random latency (5-155 ms),
 * a third of them a second request. Every start is recorded on the database's clock (the time the limiter admitted it,
 * the one all daemons count on); then, as (c): mean rate / setting (least-squares slope, target within 2%), busiest
 * window / setting (target <= 1), windows over the limit.
 */
import { RequestQueue } from '../src/queue/request-queue.js';
import { SharedRateLimiter } from '../src/queue/shared-rate.js';
import { openPgDriver } from '../src/store/pg-driver.js';
import type { SqlDriver } from '../src/store/sql.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { type RateFigures, rateFigures } from './rate-limit.js';

export interface SharedRateBenchOptions {
  seconds: number;
  requests: number;
  windowMs: number;
  /** Tasks at a time per daemon. */
  concurrency: number;
  /** How many daemons, each run on a fresh database. @defaultValue [1, 2, 3] */
  daemons?: readonly number[];
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function benchSharedRate(options: SharedRateBenchOptions): Promise<RateFigures[]> {
  const cluster = await startPostgres();
  const figures: RateFigures[] = [];
  try {
    for (const count of options.daemons ?? [1, 2, 3]) {
      const db = await cluster.createDatabase();
      const drivers: SqlDriver[] = [];
      try {
        const starts: number[] = [];
        const queues: RequestQueue[] = [];
        for (let i = 0; i < count; i++) {
          const driver = openPgDriver({ url: db.url, password: cluster.password, maxConnections: 10 });
          drivers.push(driver);
          if (i === 0) await driver.migrate();
          const limiter = new SharedRateLimiter(driver, {
            rateLimits: { 'bill-payments': { requests: options.requests, windowMs: options.windowMs } },
            daemon: `bench-${i}`,
          });
          const queue = new RequestQueue({ concurrency: options.concurrency, maxRowsInFlight: 10_000 });
          queue.useSharedLimits({
            admit: async (group, signal) => {
              const at = await limiter.admit(group, signal);
              starts.push(at);
              return at;
            },
            rateLimited: (group, at, ms) => limiter.rateLimited(group, at, ms),
            notBefore: (group) => limiter.notBefore(group),
            ceiling: (group) => limiter.ceiling(group),
            limited: (group) => limiter.limited(group),
            onPause: (l) => limiter.onPause(l),
            onError: (l) => limiter.onError(l),
          });
          queues.push(queue);
        }
        const end = performance.now() + options.seconds * 1000;
        await Promise.all(
          queues.flatMap((queue) =>
            Array.from({ length: options.concurrency * 2 }, async () => {
              while (performance.now() < end) {
                await queue.run('bill-payments', async (task) => {
                  await sleep(Math.floor(Math.random() * 4));
                  const requests = Math.random() < 1 / 3 ? 2 : 1;
                  for (let r = 0; r < requests; r++) {
                    await queue.gate({ task });
                    await sleep(5 + Math.floor(Math.random() * 150));
                  }
                });
              }
            }),
          ),
        );
        figures.push(
          rateFigures(
            `${count} daemon${count === 1 ? '' : 's'}, shared (PostgreSQL)`,
            starts,
            options.requests,
            options.windowMs,
          ),
        );
      } finally {
        await Promise.allSettled(drivers.map((d) => d.close()));
      }
    }
  } finally {
    await cluster.stop();
  }
  return figures;
}

export function sharedRateTable(options: SharedRateBenchOptions, figures: readonly RateFigures[]): string {
  const head = ['daemons', 'starts', 'mean rate / setting', 'busiest window / setting', 'windows over the limit'];
  const lines = figures.map((f) => [
    f.name,
    String(f.starts),
    f.meanRateRatio.toFixed(3),
    `${f.busiestRatio.toFixed(2)} (${Math.round(f.busiestRatio * options.requests)} of ${options.requests})`,
    `${f.windowsOver.toLocaleString('en-US')} of ${f.windows.toLocaleString('en-US')}`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [
    `(e) shared rate limit: ${options.requests} requests per ${options.windowMs} ms across 1-3 daemons on one PostgreSQL store, concurrency ${options.concurrency} each, ${options.seconds} s saturated; targets: mean within 2%, busiest <= 1`,
    fmt(head),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...lines.map(fmt),
  ].join('\n');
}
