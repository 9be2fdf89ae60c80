/**
 * A daemon whose lease is lost sends nothing more (src/store/leases.ts, src/runner/engine.ts), also for rows whose
 * intents it committed before they waited for a connection of the queue: those intents were checked against the lease
 * in the database when they were written, which may be long before the request would leave (a queue behind, a 429
 * pause). On a real PostgreSQL server and the sandbox over HTTP.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import { chargesKind } from '../src/batches/charges.js';
import { readBatch } from '../src/csv/reader.js';
import { filesDirFor } from '../src/outbox/result.js';
import { RequestQueue } from '../src/queue/request-queue.js';
import { helpWithBatch, processBatch } from '../src/runner/engine.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';
import { claimRows, DaemonLease } from '../src/store/leases.js';
import { openPgDriver, type PgDriver } from '../src/store/pg-driver.js';
import { openStoreWith, type Store } from '../src/store/store.js';
import { skipPostgres, type TestCluster, useTestCluster } from './helpers/postgres.js';

const HEADER =
  'type,correlationId,amount,dueDate,yourNumber,payer.name,payer.document,payer.address.zipCode,payer.address.publicPlace,payer.address.city,payer.address.state';
const slip = (id: string) =>
  `BANKSLIP,${id},150.00,2027-01-15,NF-1,Maria da Silva,529.982.247-25,01310-100,Av Paulista 1000,Sao Paulo,SP`;
const IDS = ['L-1', 'L-2', 'L-3', 'L-4', 'L-5', 'L-6'];

describe.skipIf(skipPostgres)('a daemon that lost its lease sends nothing more (PostgreSQL, sandbox)', () => {
  const useCluster = useTestCluster();
  let cluster: TestCluster;
  let url: string;
  let dir: string;
  let sandbox: RunningSandbox;
  const drivers: PgDriver[] = [];
  const leases: DaemonLease[] = [];
  const clients: BankClient[] = [];
  const queues: RequestQueue[] = [];

  beforeEach(async () => {
    cluster = useCluster();
    ({ url } = await cluster.createDatabase());
    dir = mkdtempSync(path.join(tmpdir(), 'remessa-engine-lease-'));
    sandbox = await startSandbox({ port: 0 });
  });
  afterEach(async () => {
    for (const l of leases.splice(0)) l.abandon();
    for (const q of queues.splice(0)) q.close();
    for (const c of clients.splice(0)) await c.close();
    for (const d of drivers.splice(0)) await d.close();
    await sandbox.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A daemon: its own store (pool), its lease under `name` on a clock the test moves, one connection to the bank. */
  async function daemon(name: string, onCreate?: () => void) {
    const driver = openPgDriver({ url, password: cluster.password });
    drivers.push(driver);
    const store: Store = await openStoreWith(driver, 'pg');
    const clock = { now: 0 };
    const lease = await DaemonLease.register(store, { name, leaseMs: 30_000, monotonic: () => clock.now });
    leases.push(lease);
    const client = new BankClient({ baseUrl: sandbox.url, apiKey: SANDBOX_PUBLIC_API_KEY, maxAttempts: 1 });
    clients.push(client);
    if (onCreate) {
      const create = client.charges.create.bind(client.charges) as (...args: unknown[]) => Promise<unknown>;
      client.charges.create = (async (...args: unknown[]) => {
        const out = await create(...args);
        onCreate();
        return out;
      }) as typeof client.charges.create;
    }
    // One connection: the rows behind the first wait in the queue, their intents committed ahead.
    const queue = new RequestQueue({ concurrency: 1, maxRowsInFlight: 8 });
    queues.push(queue);
    return { store, clock, lease, client, queue };
  }

  type Daemon = Awaited<ReturnType<typeof daemon>>;

  /** The test's batch of `file` as daemon `d` drives it: its store, its bank client, its queue. */
  const batchOn = (d: Daemon, file: string) => ({
    store: d.store,
    kind: chargesKind,
    batchId: 'lease-batch',
    fileName: path.basename(file),
    client: d.client,
    queue: d.queue,
    filesDir: filesDirFor(path.join(dir, 'outbox'), 'charges', 'lease'),
    accountId: '0001234',
  });

  async function drive(d: Daemon, file: string, signal?: AbortSignal): Promise<unknown> {
    const reader = await readBatch(file, { columns: chargesKind.columns });
    try {
      return await processBatch({ ...batchOn(d, file), input: reader, signal }).catch((error: unknown) => error);
    } finally {
      reader.close();
    }
  }

  /** The six slips written as `name` and their rows stored by `d`, none sent (stopped before the run). */
  async function storeRows(d: Daemon, name: string): Promise<string> {
    const file = path.join(dir, name);
    writeFileSync(file, `${[HEADER, ...IDS.map(slip)].join('\r\n')}\r\n`);
    const stop = new AbortController();
    stop.abort();
    expect(await drive(d, file, stop.signal)).toMatchObject({ stopped: true });
    return file;
  }

  /** Charges the bank created: of one correlation id, or of all. */
  const created = (id?: string) =>
    sandbox.ctx.ledger
      .counts(id ? { kind: 'charge_created', key: id } : { kind: 'charge_created' })
      .reduce((sum, c) => sum + c.count, 0);

  it('sends no request of a row that waited with its intent once the lease is lost; another daemon sends each once', async () => {
    const file = path.join(dir, 'charges-lease.csv');
    writeFileSync(file, `${[HEADER, ...IDS.map(slip)].join('\r\n')}\r\n`);
    // alpha freezes right after its first charge is created: its own clock passes the lease's local deadline.
    let alpha: Awaited<ReturnType<typeof daemon>> | undefined;
    alpha = await daemon('alpha', () => {
      alpha!.clock.now = 1e9;
    });
    await drive(alpha, file);
    expect(alpha.lease.lost).toBe(true);
    expect(created()).toBe(1);
    // The rows that waited keep their intent (certainly not sent, but alpha may no longer write): the next holder
    // resolves them as unknown outcomes (rule 8 of src/store/rows.ts).
    const steps = await alpha.store.getStepsBetween('lease-batch', 2, 7);
    const waited = [...steps.values()].filter((s) => s.get('create')?.state === 'intent').length;
    expect(waited).toBeGreaterThan(1);

    // The database judges alpha dead (its lease passed); beta takes its rows over: each charge created once.
    await alpha.store.sql.run(`UPDATE daemons SET lease_until_ms = 0 WHERE name = 'alpha'`);
    const beta = await daemon('beta');
    await drive(beta, file);
    for (const id of IDS) expect(created(id), id).toBe(1);
    expect(await beta.store.countRows('lease-batch')).toMatchObject({ succeeded: IDS.length });
  });

  it("does not leave its file unfinished when a dead daemon's rows are locked by a helper's claim at its pass", async () => {
    // Seen in the three-daemon soak: the driver's pass skipped the rows of a dead daemon that a helper was claiming at
    // that instant (SKIP LOCKED), then counted none worked elsewhere (the dead holder's rows were left out) and
    // returned with rows pending: its file stayed in the work area though another daemon answered it.
    const beta = await daemon('beta');
    const file = await storeRows(beta, 'charges-locked.csv');
    // gone claims every row, then dies.
    const gone = await daemon('gone');
    expect(await claimRows(gone.store, 'lease-batch', 0, 100, ['pending'])).toHaveLength(IDS.length);
    gone.lease.abandon();
    await gone.store.sql.run(`UPDATE daemons SET lease_until_ms = 0 WHERE name = 'gone'`);
    // A helper's claim holds the rows' locks at the instant of beta's first pass, then lets them go.
    const locker = await daemon('locker');
    let locked!: () => void;
    const lockedNow = new Promise<void>((r) => {
      locked = r;
    });
    const claim = locker.store.transaction(async (s) => {
      await s.sql.all('SELECT line FROM rows FOR UPDATE');
      locked();
      await new Promise((r) => setTimeout(r, 300));
    });
    await lockedNow;
    const result = await processBatch(batchOn(beta, file));
    await claim;
    expect(result).toMatchObject({ complete: true, stopped: false });
    for (const id of IDS) expect(created(id), id).toBe(1);
    expect(await beta.store.countRows('lease-batch')).toMatchObject({ succeeded: IDS.length });
  });

  it('lets go of the rows a helper claimed and did not finish, so that the driver of the file takes them', async () => {
    // A helper's row still `pending` (stopped before it) or `waiting` (429 to the end) when its help ends was held by a
    // live daemon that no longer drove it: the driver waited for it as long as the helper lived.
    const beta = await daemon('beta');
    const gamma = await daemon('gamma');
    const file = await storeRows(beta, 'charges-helped.csv');
    await beta.store.markBatchRunning('lease-batch');
    // gamma helps, and stops at once: it claimed a page of rows and started none.
    const stopped = new AbortController();
    stopped.abort();
    expect(await helpWithBatch({ ...batchOn(gamma, file), signal: stopped.signal })).toBe(0);
    const held = await beta.store.sql.all<{ holder: string | null }>('SELECT holder FROM rows ORDER BY line');
    expect(held.map((r) => r.holder)).toEqual(IDS.map(() => null));
    const giveUp = new AbortController();
    const timer = setTimeout(() => giveUp.abort(), 10_000);
    const result = await processBatch({ ...batchOn(beta, file), signal: giveUp.signal }).finally(() =>
      clearTimeout(timer),
    );
    expect(result).toMatchObject({ complete: true, stopped: false });
    for (const id of IDS) expect(created(id), id).toBe(1);
  });
});
