/**
 * (c) rate limit: does the queue hold its limit in EVERY window, and does it reach it? (issue 12, section 3)
 *
 * The request queue (src/queue) is driven on the real clock for `seconds` with more demand than the limit allows:
 * `concurrency` tasks at a time, each like an engine step: a short local delay (the intent write), its request through
 * the gate (`beforeSend`), a random latency, and for a third of them a second request (a lookup, then the payment).
 * Every request start is recorded; then, for the setting N per W ms:
 * - mean rate / setting: the slope of starts over time (least squares), divided by N per W (target: within 2%);
 * - busiest window / setting: the most starts in any window [t, t + W) (target: <= 1);
 * - windows over the limit: of the windows starting at every whole millisecond, how many held more than N.
 * The same load goes through the queue as it was before (p-queue: `intervalCap` per fixed `interval` per group,
 * feeding a global queue of `concurrency`; a second request not counted), measured in the same run, as the baseline.
 */
import PQueue from 'p-queue';
import { RequestQueue } from '../src/queue/index.js';

export interface RateBenchOptions {
  seconds: number;
  requests: number;
  windowMs: number;
  concurrency: number;
}

export interface RateFigures {
  name: string;
  starts: number;
  meanRateRatio: number;
  busiestRatio: number;
  windowsOver: number;
  windows: number;
}

/** Deterministic pseudo-random numbers in [0, 1), so both sides get the same load. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Measures the figures of a list of start times (ms, any origin). */
export function rateFigures(name: string, raw: readonly number[], requests: number, windowMs: number): RateFigures {
  const s = [...raw].sort((a, b) => a - b);
  const first = s[0] ?? 0;
  const last = s.at(-1) ?? 0;
  // The steady rate: the slope of start count over time (least squares), right for an even flow and for bursts of N
  // once a window alike, and blind to how the run began.
  const n = s.length;
  const meanT = s.reduce((a, t) => a + t, 0) / n;
  const meanI = (n - 1) / 2;
  let cov = 0;
  let variance = 0;
  s.forEach((t, i) => {
    cov += (t - meanT) * (i - meanI);
    variance += (t - meanT) ** 2;
  });
  const perMs = variance > 0 ? cov / variance : 0;
  let busiest = 0;
  for (let i = 0, j = 0; i < s.length; i++) {
    while (j < s.length && s[j]! < s[i]! + windowMs) j++;
    busiest = Math.max(busiest, j - i);
  }
  // windows [t, t + W) at every whole millisecond t from the first start to the last start - W
  let over = 0;
  let windows = 0;
  for (let t = Math.floor(first), lo = 0, hi = 0; t + windowMs <= last; t++, windows++) {
    while (lo < s.length && s[lo]! < t) lo++;
    while (hi < s.length && s[hi]! < t + windowMs) hi++;
    if (hi - lo > requests) over++;
  }
  return {
    name,
    starts: s.length,
    meanRateRatio: (perMs * windowMs) / requests,
    busiestRatio: busiest / requests,
    windowsOver: over,
    windows,
  };
}

/** Sends one request: calls `mark` in the same synchronous run as the request would be handed to the pool. */
type Send = (mark: () => void) => Promise<void>;
type Runner = (task: (send: Send) => Promise<void>) => Promise<void>;

/** Keeps `concurrency * 4` engine-like tasks queued for `seconds`, then waits for them; returns the start times. */
async function drive(options: RateBenchOptions, run: Runner, waiting: () => number): Promise<number[]> {
  const random = prng(12);
  const starts: number[] = [];
  const end = performance.now() + options.seconds * 1000;
  const pending = new Set<Promise<void>>();
  while (performance.now() < end) {
    while (waiting() < options.concurrency * 4) {
      const local = Math.floor(random() * 4);
      const latency = 5 + Math.floor(random() * 150);
      const second = random() < 1 / 3;
      const p = run(async (send) => {
        if (local > 0) await sleep(local);
        const mark = () => starts.push(performance.now());
        await send(mark);
        await sleep(latency);
        if (second) {
          await send(mark);
          await sleep(latency);
        }
      });
      pending.add(p);
      void p.finally(() => pending.delete(p));
    }
    await sleep(5);
  }
  await Promise.all(pending);
  return starts.filter((t) => t <= end);
}

/** The queue as it is: sliding log, starts counted at the gate. */
async function current(options: RateBenchOptions): Promise<number[]> {
  const queue = new RequestQueue({
    concurrency: options.concurrency,
    maxRowsInFlight: 10_000,
    rateLimits: { 'bill-payments': { intervalCap: options.requests, intervalMs: options.windowMs } },
  });
  let waiting = 0;
  const starts = await drive(
    options,
    async (task) => {
      waiting++;
      await queue.run('bill-payments', async (handle) => {
        waiting--;
        // as the bank client's transport does (src/bank/http.ts)
        const request = { task: handle };
        await task(async (mark) => {
          for (let wait = queue.beforeSend(request); wait; wait = queue.beforeSend(request)) await wait;
          mark();
        });
      });
    },
    () => waiting,
  );
  queue.close();
  return starts;
}

/** The queue as it was (p-queue fixed windows admitting into a global queue). */
async function before(options: RateBenchOptions): Promise<number[]> {
  const group = new PQueue({
    concurrency: options.concurrency,
    intervalCap: options.requests,
    interval: options.windowMs,
  });
  const global = new PQueue({ concurrency: options.concurrency });
  return drive(
    options,
    (task) => group.add(() => global.add(() => task(async (mark) => mark()))) as Promise<void>,
    () => group.size + global.size,
  );
}

export async function benchRateLimit(options: RateBenchOptions): Promise<RateFigures[]> {
  const was = rateFigures('p-queue fixed windows (before)', await before(options), options.requests, options.windowMs);
  const now = rateFigures('remessa queue (sliding log)', await current(options), options.requests, options.windowMs);
  return [was, now];
}

export function rateTable(options: RateBenchOptions, figures: readonly RateFigures[]): string {
  const head = ['rate limit', 'starts', 'mean rate / setting', 'busiest window / setting', 'windows over the limit'];
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
    `(c) rate limit: ${options.requests} requests per ${options.windowMs} ms, concurrency ${options.concurrency}, ${options.seconds} s saturated; targets: mean within 2%, busiest <= 1`,
    fmt(head),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...lines.map(fmt),
  ].join('\n');
}
