/**
 * A PostgreSQL store vacuums its own hot tables as its rows end (src/store/vacuum.ts, issue 13 §3 "store bytes"): on a
 * real throw-away server, a night of bill payments driven by the engine against the embedded sandbox over HTTP.
 * - with `vacuumEveryRows` small, `rows` and `steps` are vacuumed during the run (pg_stat_user_tables.vacuum_count);
 *   with 0, never;
 * - a vacuum the server refuses (the daemon's role does not own the tables) fails no row and no run: every row is
 *   answered, the failure is logged once at warn, without the password;
 * - a store closing does not wait for a vacuum in progress: it is cancelled on the server.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeBillsFile } from '../bench/generate.js';
import { BankClient } from '../src/bank/client.js';
import { billPaymentsKind } from '../src/batches/bill-payments.js';
import { readBatch } from '../src/csv/reader.js';
import { filesDirFor } from '../src/outbox/result.js';
import { RequestQueue } from '../src/queue/request-queue.js';
import { processBatch } from '../src/runner/engine.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';
import { openPgDriver, type PgDriver } from '../src/store/pg-driver.js';
import { openStoreWith, type Store, type StoreOptions } from '../src/store/store.js';
import { memoryLogger } from './helpers/memory-logger.js';
import { skipPostgres, type TestCluster, useTestCluster } from './helpers/postgres.js';

const BILLS = 300;

describe.skipIf(skipPostgres)('a PostgreSQL store vacuums rows and steps as its rows end (server, sandbox)', () => {
  const useCluster = useTestCluster();
  let cluster: TestCluster;
  let db: { name: string; url: string };
  let dir: string;
  let sandbox: RunningSandbox;
  const drivers: PgDriver[] = [];
  const stores: Store[] = [];
  const clients: BankClient[] = [];
  const queues: RequestQueue[] = [];

  beforeEach(async () => {
    cluster = useCluster();
    db = await cluster.createDatabase();
    dir = mkdtempSync(path.join(tmpdir(), 'remessa-vacuum-'));
    sandbox = await startSandbox({ port: 0 });
  });
  afterEach(async () => {
    for (const q of queues.splice(0)) q.close();
    for (const c of clients.splice(0)) await c.close();
    for (const s of stores.splice(0)) await s.close();
    for (const d of drivers.splice(0)) await d.close();
    await sandbox.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function open(options: StoreOptions, as?: { url: string; password: string }) {
    const driver = openPgDriver({ url: as?.url ?? db.url, password: as?.password ?? cluster.password });
    drivers.push(driver);
    const store = await openStoreWith(driver, 'pg', options);
    stores.push(store);
    return store;
  }

  /** The night: BILLS bill payments driven to their end by the engine, against the sandbox. */
  async function night(store: Store) {
    const file = path.join(dir, 'bill-payments-night.csv');
    writeBillsFile(file, BILLS);
    const client = new BankClient({ baseUrl: sandbox.url, apiKey: SANDBOX_PUBLIC_API_KEY, maxAttempts: 1 });
    clients.push(client);
    const queue = new RequestQueue({ concurrency: 4, maxRowsInFlight: 16 });
    queues.push(queue);
    const reader = await readBatch(file, { columns: billPaymentsKind.columns });
    try {
      return await processBatch({
        store,
        kind: billPaymentsKind,
        batchId: 'vacuum-night',
        fileName: path.basename(file),
        input: reader,
        client,
        queue,
        filesDir: filesDirFor(path.join(dir, 'outbox'), 'bill-payments', 'night'),
        accountId: '0001234',
      });
    } finally {
      reader.close();
    }
  }

  /** Manual vacuums of each hot table so far, as the server counts them (each query is a new session: no snapshot). */
  async function vacuumCounts(): Promise<Record<string, number>> {
    const rows = await cluster.query<{ relname: string; n: string }>(
      `SELECT relname, vacuum_count::text AS n FROM pg_stat_user_tables
       WHERE relname IN ('rows', 'steps', 'natural_keys')`,
      db.name,
    );
    return Object.fromEntries(rows.map((r) => [r.relname, Number(r.n)]));
  }

  it('vacuums rows and steps during the run every few rows ended, and never with 0', async () => {
    const store = await open({ vacuumEveryRows: 20 });
    const result = await night(store);
    expect(result.counts.succeeded).toBe(BILLS);
    // The last vacuum started may still be running as the batch ends: the server counts each as it finishes.
    let counts: Record<string, number> = {};
    for (let i = 0; i < 100; i++) {
      counts = await vacuumCounts();
      if ((counts.rows ?? 0) > 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(counts.rows).toBeGreaterThan(0);
    expect(counts.steps).toBe(counts.rows);
    // natural_keys is insert-only (no dead version to free) and locked by every ingestion: left to autovacuum.
    expect(counts.natural_keys).toBe(0);
    expect(store.vacuumStats).toMatchObject({ failed: 0 });
    expect(store.vacuumStats!.done).toBeGreaterThan(0);
  });

  it('vacuums nothing with vacuumEveryRows 0', async () => {
    const store = await open({ vacuumEveryRows: 0 });
    const result = await night(store);
    expect(result.counts.succeeded).toBe(BILLS);
    await store.close();
    expect(await vacuumCounts()).toMatchObject({ rows: 0, steps: 0 });
    expect(store.vacuumStats).toBeUndefined();
  });

  it('answers every row when the server refuses the vacuum, and says so once at warn, without the password', async () => {
    // The tables are the superuser's (migrated by it); the daemon logs in as a role that may use them, not own them:
    // PostgreSQL then skips the VACUUM of each with a warning.
    await open({ vacuumEveryRows: 0 });
    const password = `clerk-${Math.random().toString(36).slice(2)}`;
    await cluster.query(
      `CREATE ROLE clerk_${process.pid} LOGIN PASSWORD '${password}';
       GRANT CREATE, USAGE ON SCHEMA public TO clerk_${process.pid};
       GRANT ALL ON ALL TABLES IN SCHEMA public TO clerk_${process.pid};
       GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO clerk_${process.pid};
       GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO clerk_${process.pid}`,
      db.name,
    );
    const { logger, lines, text } = memoryLogger({ format: 'json' });
    const url = db.url.replace(`${cluster.user}@`, `clerk_${process.pid}@`);
    const store = await open({ vacuumEveryRows: 20, logger }, { url, password });
    const result = await night(store);
    expect(result.counts).toMatchObject({ succeeded: BILLS });
    expect(result.complete).toBe(true);
    // More rows end after the night (the pause after each failure is 10x its duration): a failure repeats.
    for (let i = 0; i < 200 && store.vacuumStats!.failed < 3; i++) {
      for (let r = 0; r < 20; r++) store.rowEnded();
      await new Promise((r) => setTimeout(r, 25));
    }
    await store.close();
    expect(store.vacuumStats!.failed).toBeGreaterThanOrEqual(3);
    expect(store.vacuumStats!.done).toBe(0);
    const warned = lines().filter((l) => l.level === 'warn');
    expect(warned).toHaveLength(1);
    expect(String(warned[0]!.msg)).toMatch(/vacuum/i);
    expect(text()).not.toContain(password);
    expect(await vacuumCounts()).toMatchObject({ rows: 0, steps: 0 });
  });

  it('does not wait for a vacuum in progress when the store closes: it is cancelled on the server', async () => {
    const store = await open({ vacuumEveryRows: 5 });
    await night(store);
    // Every page a vacuum touches now sleeps 100 ms: one vacuum of these tables takes seconds.
    await cluster.query(`ALTER DATABASE ${db.name} SET vacuum_cost_delay = 100`, 'postgres');
    await cluster.query(`ALTER DATABASE ${db.name} SET vacuum_cost_limit = 1`, 'postgres');
    const running = async () =>
      (
        await cluster.query<{ n: string }>(
          `SELECT count(*)::text AS n FROM pg_stat_activity
           WHERE datname = '${db.name}' AND query LIKE 'VACUUM%' AND state = 'active'`,
        )
      )[0]!.n;
    // Rows end until the pause the rule asks after the last vacuum (10x its duration) has passed and one starts.
    for (let i = 0; i < 200 && (await running()) === '0'; i++) {
      for (let r = 0; r < 5; r++) store.rowEnded();
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await running()).toBe('1');
    // Still under way a while later: a slowed one (the night's took tens of milliseconds).
    await new Promise((r) => setTimeout(r, 300));
    expect(await running()).toBe('1');
    const t0 = Date.now();
    await store.close();
    // Waited for, the slowed vacuum keeps the close some 9 s; cancelled, well under a second (3 s: a loaded machine).
    expect(Date.now() - t0).toBeLessThan(3_000);
    for (let i = 0; i < 50 && (await running()) !== '0'; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await running()).toBe('0');
  });
});
