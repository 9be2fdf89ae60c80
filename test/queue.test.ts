import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { RateLimitedError } from '../src/bank/errors.js';
import { configSchema, parseConfigText } from '../src/config.js';
import { queueOptionsFromConfig, RequestQueue, ROW_SLOTS_PER_CONNECTION } from '../src/queue/index.js';

const queues: RequestQueue[] = [];
function makeQueue(...args: ConstructorParameters<typeof RequestQueue>): RequestQueue {
  const q = new RequestQueue(...args);
  queues.push(q);
  return q;
}
afterEach(() => {
  for (const q of queues.splice(0)) q.close();
});

function rateLimited(retryAfterMs: number | undefined): RateLimitedError {
  return new RateLimitedError('POST /v1/charges failed with HTTP 429', {
    method: 'POST',
    path: '/v1/charges',
    status: 429,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

const tick = () => new Promise((r) => setTimeout(r, 5));

const ROOT = path.resolve(import.meta.dirname, '..');
const TSX_LOADER = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

describe('RequestQueue', () => {
  it('a 429 pauses only its group; the other groups go on', async () => {
    const q = makeQueue({ concurrency: 4 });
    const log: string[] = [];
    await expect(
      q.run('charges', async () => {
        throw rateLimited(60_000);
      }),
    ).rejects.toBeInstanceOf(RateLimitedError);
    expect(q.isPaused('charges')).toBe(true);
    expect(q.isPaused('pix')).toBe(false);

    let chargesRan = false;
    const charges = q.run('charges', async () => {
      chargesRan = true;
      log.push('charges');
    });
    for (let i = 0; i < 5; i++) await q.run('pix', async () => log.push(`pix${i}`));
    await q.run('claims', async () => log.push('claims'));
    await tick();
    expect(chargesRan).toBe(false);
    expect(log).toEqual(['pix0', 'pix1', 'pix2', 'pix3', 'pix4', 'claims']);
    // the pause ends (close() resumes at once, as a timer would after Retry-After)
    q.close();
    await charges;
    expect(log.at(-1)).toBe('charges');
  });

  it('resumes the group by itself after the Retry-After', async () => {
    const q = makeQueue({ concurrency: 2 });
    const paused: Array<[string, number]> = [];
    q.onPause((g, ms) => paused.push([g, ms]));
    await expect(
      q.run('pix', async () => {
        throw rateLimited(30);
      }),
    ).rejects.toThrow(RateLimitedError);
    expect(paused).toEqual([['pix', 30]]);
    await expect(q.run('pix', async () => 'sent')).resolves.toBe('sent');
    expect(q.isPaused('pix')).toBe(false);
  });

  it('caps a pause at maxPauseMs and uses defaultPauseMs without Retry-After', async () => {
    const q = makeQueue({ maxPauseMs: 50, defaultPauseMs: 20 });
    const paused: number[] = [];
    q.onPause((_g, ms) => paused.push(ms));
    await q.run('claims', async () => Promise.reject(rateLimited(3_600_000))).catch(() => {});
    q.close();
    await q.run('claims', async () => Promise.reject(rateLimited(undefined))).catch(() => {});
    expect(paused).toEqual([50, 20]);
  });

  it('a task admitted before the pause does not go out while paused', async () => {
    const q = makeQueue({ concurrency: 1 });
    let release!: () => void;
    const blocker = q.run('pix', () => new Promise<void>((r) => (release = r)));
    let sent = false;
    const waiting = q.run('charges', async () => {
      sent = true;
    });
    await tick();
    // the charges task waits for the global slot; now charges is paused
    q.pauseGroup('charges', 60_000);
    release();
    await blocker;
    await tick();
    expect(sent).toBe(false);
    q.close();
    await waiting;
    expect(sent).toBe(true);
  });

  it('never runs more than `concurrency` tasks at once', async () => {
    const q = makeQueue({ concurrency: 3 });
    let running = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        q.run(i % 2 ? 'pix' : 'charges', async () => {
          running++;
          peak = Math.max(peak, running);
          await tick();
          running--;
        }),
      ),
    );
    expect(peak).toBe(3);
  });

  it('applies the per-group rate limit (intervalCap per interval)', async () => {
    const q = makeQueue({ concurrency: 10, rateLimits: { charges: { intervalCap: 2, intervalMs: 10_000 } } });
    let ran = 0;
    const all = Array.from({ length: 4 }, () => q.run('charges', async () => ran++));
    await tick();
    expect(ran).toBe(2);
    // other groups are not limited by it
    await q.run('pix', async () => 'ok');
    expect(ran).toBe(2);
    void all;
  });

  it('rejects a task that has not started when the signal aborts', async () => {
    const q = makeQueue({ concurrency: 1 });
    let release!: () => void;
    const blocker = q.run('pix', () => new Promise<void>((r) => (release = r)));
    const ac = new AbortController();
    let ran = false;
    const dropped = q.run(
      'pix',
      async () => {
        ran = true;
      },
      { signal: ac.signal },
    );
    ac.abort();
    await expect(dropped).rejects.toBeDefined();
    release();
    await blocker;
    expect(ran).toBe(false);
  });

  it('never cuts a started task short when the signal aborts: its answer is kept', async () => {
    const q = makeQueue({ concurrency: 1 });
    const ac = new AbortController();
    let release!: (v: string) => void;
    const running = q.run('pix', () => new Promise<string>((r) => (release = r)), { signal: ac.signal });
    await tick();
    ac.abort();
    release('answer');
    await expect(running).resolves.toBe('answer');
  });

  it('bounds rows in flight; one group holds at most half, so a stuck group cannot take every slot', async () => {
    const q = makeQueue({ maxRowsInFlight: 4 });
    await q.acquireRow('charges');
    await q.acquireRow('charges');
    let third = false;
    const p = q.acquireRow('charges').then(() => (third = true));
    await tick();
    expect(third).toBe(false);
    // another group still gets slots
    await q.acquireRow('pix');
    await q.acquireRow('pix');
    expect(q.stats.rowsHeld).toBe(4);
    q.releaseRow('charges');
    await p;
    expect(third).toBe(true);
    const ac = new AbortController();
    const w = q.acquireRow('claims', ac.signal);
    ac.abort(new Error('stop'));
    await expect(w).rejects.toThrow('stop');
  });

  it('gives rows slots by the connections when maxRowsInFlight is not set, and the setting wins when it is', async () => {
    const slotsOf = async (q: RequestQueue, group: 'pix' | 'charges') => {
      let n = 0;
      for (; n < 1000; n++) {
        let got = false;
        void q.acquireRow(group).then(() => (got = true));
        await tick();
        if (!got) break;
      }
      return n;
    };
    // 3 connections: 24 slots, 12 a group.
    const byConnections = makeQueue({ concurrency: 3 });
    expect(byConnections.maxRowsInFlight).toBe(ROW_SLOTS_PER_CONNECTION * 3);
    expect(await slotsOf(byConnections, 'pix')).toBe((ROW_SLOTS_PER_CONNECTION * 3) / 2);
    expect(await slotsOf(byConnections, 'charges')).toBe((ROW_SLOTS_PER_CONNECTION * 3) / 2);
    // The shipped configuration leaves the setting out, and the queue then counts by its connections too.
    const shipped = configSchema.parse(parseConfigText(readFileSync(path.join(ROOT, 'config/remessa.jsonc'), 'utf8')));
    const fromConfig = new RequestQueue(queueOptionsFromConfig(shipped.queue));
    expect(fromConfig.maxRowsInFlight).toBe(ROW_SLOTS_PER_CONNECTION * shipped.queue.concurrency);
    expect(makeQueue({ concurrency: 3, maxRowsInFlight: 100 }).maxRowsInFlight).toBe(100);
  });

  it('checks its options ("Expected X, got Y") and reads the config shape', () => {
    expect(() => new RequestQueue({ concurrency: 0 })).toThrow('concurrency: Expected an integer >= 1, got 0');
    const opts = queueOptionsFromConfig({
      concurrency: 4,
      maxRowsInFlight: 10,
      rateLimits: {
        charges: { requests: 20, intervalMs: 1000 },
        'bill-payments': { requests: 0, intervalMs: 1000 },
        pix: { requests: 5, intervalMs: 500 },
        claims: { requests: 1, intervalMs: 1000 },
      },
    });
    expect(opts.rateLimits).toEqual({
      charges: { intervalCap: 20, intervalMs: 1000 },
      pix: { intervalCap: 5, intervalMs: 500 },
      claims: { intervalCap: 1, intervalMs: 1000 },
    });
  });
});

describe('RequestQueue and async hooks', () => {
  it('running tasks and their requests through the gate turns on no promise hook in the process', async () => {
    // A fresh process: the test runner may have hooks of its own. With promise hooks on (an AsyncLocalStorage on
    // Node 20 and 22 installs them, and every promise of the process pays for them), a promise's reaction runs under
    // an async id of its own; with them off, under the id of the code around it, 0 at the top level of a module.
    const queueUrl = pathToFileURL(path.join(ROOT, 'src/queue/index.ts')).href;
    const script = `
      import { executionAsyncId } from 'node:async_hooks';
      const { RequestQueue } = await import(${JSON.stringify(queueUrl)});
      const q = new RequestQueue({ concurrency: 2, rateLimits: { pix: { intervalCap: 2, intervalMs: 20 } } });
      const task = async (task) => {
        await q.gate({ task });
        await q.gate({ task });
      };
      await Promise.all(Array.from({ length: 6 }, () => q.run('pix', task)));
      q.close();
      console.log(await Promise.resolve().then(() => executionAsyncId()));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, [
      '--import',
      TSX_LOADER,
      '--input-type=module',
      '-e',
      script,
    ]);
    expect(stdout.trim()).toBe('0');
  }, 20_000);
});
