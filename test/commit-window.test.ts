/**
 * The commit window (src/store/store.ts "The commit window"): a write marked `gather` waits, up to the window, for
 * the writes of the other rows in flight, so that one commit (one fsync) holds them all; the engine marks a row's
 * write so only while another row of it is in flight and has not queued a write. On both engines.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BatchKind, StepContext } from '../src/batches/kind.js';
import { RequestQueue } from '../src/queue/index.js';
import type { Store } from '../src/store/index.js';
import { type IdRow, type IdRowStep, idRowKind, processIdRows } from './helpers/fake-kind.js';
import { type EngineStoreOptions, skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();

/** Counts the store's transactions (each a commit) from now on. */
function countCommits(store: Store): () => number {
  let n = 0;
  const driver = store.driver;
  const transaction = driver.transaction.bind(driver);
  driver.transaction = (fn, options) => {
    n++;
    return transaction(fn, options);
  };
  return () => n;
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A write that settles `settled[i]` once committed. */
function tracked(store: Store, settled: boolean[], i: number, options: { gather?: boolean; durable?: boolean }) {
  settled[i] = false;
  return store
    .write((s) => s.sql.run('INSERT INTO scratch (n) VALUES (?)', [9000 + i]), options)
    .then(() => {
      settled[i] = true;
    });
}

describe.each(engines)('the commit window of the store ($name)', (engine) => {
  skipIfAsked(engine);
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });
  const open = async (options: EngineStoreOptions) => {
    store = await engine.open(options);
    await store.sql.run('CREATE TABLE scratch (n INTEGER PRIMARY KEY)');
    return store;
  };
  const versions = async (s: Store) =>
    (await s.sql.all<{ n: number }>('SELECT n FROM scratch ORDER BY n')).map((r) => Number(r.n));

  it('gathered writes of several ticks wait for each other and share one commit, made when asked', async () => {
    const s = await open({ commitWindowMs: 10_000 });
    const commits = countCommits(s);
    const settled: boolean[] = [];
    const first = tracked(s, settled, 0, { gather: true });
    for (let i = 0; i < 5; i++) await tick();
    const second = tracked(s, settled, 1, { gather: true, durable: false });
    for (let i = 0; i < 5; i++) await tick();
    expect(settled).toEqual([false, false]);
    expect(commits()).toBe(0);
    s.flushGathered();
    await Promise.all([first, second]);
    expect(commits()).toBe(1);
    expect(await versions(s)).toEqual([9000, 9001]);
  });

  it('a write not marked gather commits the waiting group at the end of its tick', async () => {
    const s = await open({ commitWindowMs: 10_000 });
    const commits = countCommits(s);
    const settled: boolean[] = [];
    const gathered = tracked(s, settled, 0, { gather: true });
    for (let i = 0; i < 3; i++) await tick();
    await Promise.all([gathered, tracked(s, settled, 1, {})]);
    expect(commits()).toBe(1);
    expect(await versions(s)).toEqual([9000, 9001]);
  });

  it('the window ends: a gathered write alone is committed once it has waited the window out', async () => {
    const s = await open({ commitWindowMs: 40 });
    const settled: boolean[] = [];
    const started = Date.now();
    await tracked(s, settled, 0, { gather: true });
    expect(Date.now() - started).toBeGreaterThanOrEqual(35);
    expect(await versions(s)).toEqual([9000]);
  });

  it('a window of 0 is no window: gather is ignored, the write is committed at the end of its tick', async () => {
    const s = await open({ commitWindowMs: 0 });
    const settled: boolean[] = [];
    const write = tracked(s, settled, 0, { gather: true });
    for (let i = 0; i < 5 && !settled[0]; i++) await tick();
    await write;
    expect(await versions(s)).toEqual([9000]);
  });

  it('close commits a group waiting in its window', async () => {
    const s = await open({ commitWindowMs: 10_000 });
    const settled: boolean[] = [];
    const write = tracked(s, settled, 0, { gather: true });
    await s.close();
    await write;
    expect(settled).toEqual([true]);
    const again = await engine.reopen(s);
    try {
      expect(await versions(again)).toEqual([9000]);
    } finally {
      await again.close();
    }
  });
});

describe.each(engines)('the engine gathers the writes of its rows in flight ($name)', (engine) => {
  skipIfAsked(engine);
  let dir: string;
  let store: Store | undefined;
  let queues: RequestQueue[];
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'remessa-commit-window-'));
    queues = [];
  });
  afterEach(async () => {
    await store?.close();
    store = undefined;
    for (const q of queues) q.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A bill payment's shape, each call answered after 1 to 3 ms as a fast bank would; `seen` is what pay saw. */
  function kind(seen: string[]): BatchKind<IdRow> {
    const later = <T>(value: T) => new Promise<T>((r) => setTimeout(() => r(value), 1 + Math.floor(Math.random() * 3)));
    const steps: IdRowStep[] = [
      { name: 'lookup', effect: 'read', usesIdempotencyKey: false, run: (ctx) => later({ looked: `L-${ctx.row.id}` }) },
      {
        name: 'pay',
        effect: 'money',
        usesIdempotencyKey: true,
        run: async (ctx: StepContext<IdRow>) => {
          // The request leaves only once its intent is committed, window or not.
          const line = Number(ctx.row.id);
          seen.push((await store!.getSteps('b', line)).get('pay')?.state ?? 'none');
          return later({ paid: `P-${ctx.row.id}` });
        },
      },
    ];
    return idRowKind(steps, ['looked', 'paid']);
  }

  async function runRows(
    windowMs: number,
    n: number,
    connections = { concurrency: 8, maxRowsInFlight: 8 },
  ): Promise<{ commits: number; seen: string[]; succeeded: number }> {
    store = await engine.open({ commitWindowMs: windowMs });
    const commits = countCommits(store);
    const seen: string[] = [];
    const ids = Array.from({ length: n }, (_, i) => String(i + 2)); // the id is the line
    const queue = new RequestQueue(connections);
    queues.push(queue);
    const before = commits();
    const r = await processIdRows(store, kind(seen), ids, queue, path.join(dir, 'files'));
    const result = { commits: commits() - before, seen, succeeded: r.counts.succeeded };
    await store.close();
    store = undefined;
    return result;
  }

  it('rows in flight share their commits within the window; every payment leaves after its intent is committed', async () => {
    const n = 64;
    const windowed = await runRows(1_000, n);
    const without = await runRows(0, n);
    for (const r of [windowed, without]) {
      expect(r.succeeded).toBe(n);
      expect(r.seen).toEqual(Array.from({ length: n }, () => 'intent'));
    }
    // Two writes a row (the intent with the lookup's answer, then the payment's answer), 128 writes, and the run's own
    // transactions (ingestion, pages). With no window, a write whose row is alone in its tick is a commit of its own
    // (67 to 92 commits when counted); in the window, the writes of the rows in flight wait for each other (36).
    expect(windowed.commits).toBeLessThan(n * 0.75);
    expect(windowed.commits).toBeLessThan(without.commits);
  });

  it('an intent is committed before its row waits for a connection: rows waiting for one share their commits', async () => {
    // One connection, 8 rows of the group in memory (half the 16 slots): a row's intent is written before it waits
    // for the connection (src/runner/engine.ts), so the intents of the rows waiting are gathered in one commit while
    // the connection serves another row's request. Counted: 16 commits for the 48 rows and the run's own; with the
    // intents written inside the connection's task (tried), 53.
    const n = 48;
    const one = { concurrency: 1, maxRowsInFlight: 16 };
    const windowed = await runRows(50, n, one);
    expect(windowed.succeeded).toBe(n);
    expect(windowed.seen).toEqual(Array.from({ length: n }, () => 'intent'));
    expect(windowed.commits).toBeLessThan(n / 2);
  });

  it('no write waits out the window: a row alone never gathers; rows in flight commit once all have queued', async () => {
    // A 60 s window: waited out even once, the test would time out.
    expect((await runRows(60_000, 1)).succeeded).toBe(1);
    expect((await runRows(60_000, 3)).succeeded).toBe(3);
  }, 20_000);
});
