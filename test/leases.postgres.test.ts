/**
 * Several daemons sharing one PostgreSQL store (issue 13 §1, src/store/leases.ts, rule 8 of src/store/rows.ts), on a
 * real server: rows claimed in pages by one daemon each (SKIP LOCKED), the refusals (STORE_ROW_NOT_HELD,
 * STORE_LEASE_LOST), a dead daemon's rows taken over with their steps in `intent` turned `unknown`, an answer claimed
 * by one writer, and concurrent group commits over two batches' counters (deadlocks retried, nothing lost).
 */
import { spawn } from 'node:child_process';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Dialect } from '../src/batches/kind.js';
import { registerIntake } from '../src/store/intakes.js';
import {
  claimAnswer,
  claimRows,
  DaemonLease,
  FileClaims,
  listDaemons,
  STORE_DAEMON_NAME_IN_USE,
  STORE_LEASE_LOST,
  STORE_ROW_NOT_HELD,
  TAKEN_OVER,
} from '../src/store/leases.js';
import { openPgDriver, type PgDriver } from '../src/store/pg-driver.js';
import { type IngestRow, openStoreWith, type Store } from '../src/store/store.js';
import { skipPostgres, type TestCluster, useTestCluster } from './helpers/postgres.js';
import { countStatements } from './helpers/stores.js';

const DIALECT: Dialect = { delimiter: ',', decimalMark: '.', encoding: 'utf8', bom: false };
const RUNNABLE = ['pending', 'in_flight', 'waiting', 'uncertain'];

function rows(from: number, to: number, prefix: string): IngestRow[] {
  const out: IngestRow[] = [];
  for (let line = from; line <= to; line++) {
    out.push({
      line,
      record: { n: String(line) },
      valid: true,
      parsed: { n: line },
      naturalKey: `${prefix}-${line}`,
      idempotencyKey: `key-${prefix}-${line}`,
      amountCents: 100,
    });
  }
  return out;
}

async function makeBatch(store: Store, id: string, count: number): Promise<void> {
  await store.createBatch({ id, kind: 'charges', fileName: `${id}.csv`, dialect: DIALECT, header: ['n'] });
  await store.ingest(id, rows(1, count, id));
  await store.finishIngest(id, 'send-valid');
  await store.markBatchRunning(id);
}

function codeOf(error: unknown): string | undefined {
  return (error as { code?: string }).code;
}

describe.skipIf(skipPostgres)('daemons sharing a PostgreSQL store (leases, claims)', () => {
  const useCluster = useTestCluster();
  let cluster: TestCluster;
  let url: string;
  const drivers: PgDriver[] = [];
  const leases: DaemonLease[] = [];

  /** A store of its own (its own pool), as a daemon on another machine would have. */
  async function openStore(): Promise<Store> {
    const d = openPgDriver({ url, password: cluster.password });
    drivers.push(d);
    return openStoreWith(d, 'pg');
  }

  /** A daemon: its own store, its lease registered under `name`. */
  async function daemon(name: string, leaseMs = 30_000): Promise<{ store: Store; lease: DaemonLease }> {
    const store = await openStore();
    const lease = await DaemonLease.register(store, { name, leaseMs });
    leases.push(lease);
    return { store, lease };
  }

  beforeEach(async () => {
    cluster = useCluster();
    ({ url } = await cluster.createDatabase());
  });
  afterEach(async () => {
    for (const l of leases.splice(0)) l.abandon();
    for (const d of drivers.splice(0)) await d.close();
  });

  it('gives every row to exactly one daemon, in pages, also when they claim at the same instant', async () => {
    const a = await daemon('alpha');
    const b = await daemon('beta');
    await makeBatch(a.store, 'b1', 40);
    const first = await claimRows(a.store, 'b1', 0, 5, RUNNABLE);
    expect(first.map((r) => r.line)).toEqual([1, 2, 3, 4, 5]);
    // beta's page starts at line 1 too, and skips what alpha holds.
    const second = await claimRows(b.store, 'b1', 0, 5, RUNNABLE);
    expect(second.map((r) => r.line)).toEqual([6, 7, 8, 9, 10]);
    // Both at once, page after page (as the engine pages: after the last line seen), until the end: every line once.
    const claimAll = async (store: Store) => {
      const mine: number[] = [];
      for (let after = 0; ; ) {
        const page = await claimRows(store, 'b1', after, 3, RUNNABLE);
        if (page.length === 0) return mine;
        mine.push(...page.map((r) => r.line));
        after = page[page.length - 1]!.line;
      }
    };
    const [mineA, mineB] = await Promise.all([claimAll(a.store), claimAll(b.store)]);
    expect(mineA.filter((l) => mineB.includes(l))).toEqual([]);
    expect([...mineA, ...mineB].sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    const holders = await a.store.sql.all<{ holder: string; n: number }>(
      'SELECT holder, COUNT(*) AS n FROM rows GROUP BY holder ORDER BY holder',
    );
    expect(holders.reduce((n, h) => n + h.n, 0)).toBe(40);
    expect(holders.every((h) => h.holder === 'alpha' || h.holder === 'beta')).toBe(true);
  });

  it("shows a daemon's start and last renewal on the database's clock, not on its machine's skewed one", async () => {
    // Before: last_seen was the daemon's own clock: one 10 minutes behind, alive and renewing, read "last seen 10
    // minutes ago" in status beside a lease the database counts live.
    const a = await daemon('alpha');
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() - 10 * 60_000);
      const skewed = await daemon('skewed');
      await skewed.lease.renew();
    } finally {
      vi.useRealTimers();
    }
    const [{ db }] = (await a.store.sql.all<{ db: number }>(
      'SELECT extract(epoch FROM clock_timestamp()) * 1000 AS db',
    )) as [{ db: number }];
    const view = (await listDaemons(a.store)).find((d) => d.name === 'skewed')!;
    expect(view.alive).toBe(true);
    for (const t of [view.startedAt, view.lastSeen]) expect(Math.abs(Date.parse(t) - Number(db))).toBeLessThan(5_000);
  });

  it('skips a row locked by another transaction instead of waiting for it (SKIP LOCKED)', async () => {
    const a = await daemon('alpha');
    await makeBatch(a.store, 'b1', 4);
    const other = await openStore();
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => {
      locked = r;
    });
    const blocker = other.driver.transaction(async (tx) => {
      await tx.get(
        "SELECT line FROM rows WHERE batch_no = (SELECT batch_no FROM batches WHERE id = 'b1') AND line = 2 FOR UPDATE",
      );
      locked();
      await held;
    });
    await isLocked;
    const page = await claimRows(a.store, 'b1', 0, 10, RUNNABLE);
    expect(page.map((r) => r.line)).toEqual([1, 3, 4]);
    release();
    await blocker;
    expect((await claimRows(a.store, 'b1', 0, 10, RUNNABLE)).map((r) => r.line)).toEqual([1, 2, 3, 4]);
  });

  it('refuses a step of a row another daemon holds, or one it never claimed (STORE_ROW_NOT_HELD)', async () => {
    const a = await daemon('alpha');
    const b = await daemon('beta');
    await makeBatch(a.store, 'b1', 3);
    await claimRows(a.store, 'b1', 0, 1, RUNNABLE);
    await expect(b.store.recordIntent('b1', 1, 'create')).rejects.toMatchObject({ code: STORE_ROW_NOT_HELD });
    await expect(b.store.transitionRow('b1', 1, 'failed')).rejects.toMatchObject({ code: STORE_ROW_NOT_HELD });
    // Line 2 is held by nobody: claimed first, or no intent.
    await expect(b.store.recordIntent('b1', 2, 'create')).rejects.toMatchObject({ code: STORE_ROW_NOT_HELD });
    await a.store.recordIntent('b1', 1, 'create');
    expect((await a.store.getSteps('b1', 1)).get('create')?.state).toBe('intent');
    expect((await a.store.getRow('b1', 1))?.state).toBe('in_flight');
  });

  it('refuses a second daemon under the same name on another host while the lease is live; waits for a dead one', async () => {
    await daemon('alpha');
    const other = await openStore();
    await other.sql.run("UPDATE daemons SET host = 'elsewhere' WHERE name = 'alpha'");
    // Waited for one lease of its own (600 ms here), then refused: the live one keeps renewing.
    await expect(DaemonLease.register(other, { name: 'alpha', leaseMs: 600 })).rejects.toMatchObject({
      code: STORE_DAEMON_NAME_IN_USE,
    });
    // The same daemon, moved to another host after a crash: its old lease passes, then it registers.
    const moved = await openStore();
    await moved.sql.run("UPDATE daemons SET lease_until_ms = lease_until_ms - 29500 WHERE name = 'alpha'");
    leases[0]!.abandon();
    const again = await DaemonLease.register(moved, { name: 'alpha', leaseMs: 3000 });
    leases.push(again);
    expect(again.lost).toBe(false);
  });

  it('refuses a second process of the same name on this host while the first runs (temp folders apart); a dead one is a restart', async () => {
    // The name's lock lives in the machine's temp folder; two processes whose temp folders differ (systemd's
    // PrivateTmp) both pass it. The lease then tells them apart by the process id it names.
    const first = await daemon('alpha');
    first.lease.abandon();
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      await first.store.sql.run('UPDATE daemons SET pid = ? WHERE name = ?', [other.pid!, 'alpha']);
      const second = await openStore();
      await expect(DaemonLease.register(second, { name: 'alpha', leaseMs: 600 })).rejects.toMatchObject({
        code: STORE_DAEMON_NAME_IN_USE,
      });
      // The first process dies (its lease still live): the next one under its name is its restart, at once.
      const exited = new Promise((r) => other.once('exit', r));
      other.kill('SIGKILL');
      await exited;
      // (Its lease of 30 s is still live: were it not taken as a restart, this would be refused.)
      const again = await DaemonLease.register(second, { name: 'alpha', leaseMs: 3000 });
      leases.push(again);
      expect(again.lost).toBe(false);
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('takes a dead daemon rows over: its steps in intent become unknown; the dead one sends nothing more', async () => {
    const a = await daemon('alpha', 600);
    const b = await daemon('beta', 30_000);
    await makeBatch(a.store, 'b1', 3);
    await claimRows(a.store, 'b1', 0, 2, RUNNABLE);
    await a.store.recordIntent('b1', 1, 'create'); // sent, maybe: then alpha freezes
    await a.store.recordIntent('b1', 2, 'lookup');
    await a.store.recordStepDone('b1', 2, 'lookup', { found: true }, false); // between steps
    // While alpha's lease is live, beta gets only line 3.
    expect((await claimRows(b.store, 'b1', 0, 10, RUNNABLE)).map((r) => r.line)).toEqual([3]);
    a.lease.abandon(); // frozen: no renewal
    await new Promise((r) => setTimeout(r, 800));
    expect((await listDaemons(b.store)).map((d) => [d.name, d.alive])).toEqual([
      ['beta', true],
      ['alpha', false],
    ]);
    const taken = await claimRows(b.store, 'b1', 0, 10, RUNNABLE);
    expect(taken.map((r) => r.line)).toEqual([1, 2, 3]);
    const create = (await b.store.getSteps('b1', 1)).get('create')!;
    expect(create).toMatchObject({ state: 'unknown', errorCode: TAKEN_OVER });
    expect((await b.store.getSteps('b1', 2)).get('lookup')?.state).toBe('done'); // nothing else changes hands
    // alpha wakes up: every write of it is refused (its lease is lost, and the rows are beta's).
    await expect(a.store.recordStepDone('b1', 1, 'create', { id: 'x' }, true)).rejects.toSatisfy(
      (e: unknown) => codeOf(e) === STORE_LEASE_LOST || codeOf(e) === STORE_ROW_NOT_HELD,
    );
    await expect(a.store.recordIntent('b1', 2, 'pay')).rejects.toMatchObject({ code: STORE_LEASE_LOST });
    // beta resends with the same key (rule 2), as after a restart.
    await b.store.recordIntent('b1', 1, 'create');
    await b.store.recordStepDone('b1', 1, 'create', { id: 'x' }, true);
    expect((await b.store.getRow('b1', 1))?.state).toBe('succeeded');
  });

  it('refuses an intent once the database says the lease passed, before its own clock does: nothing written', async () => {
    const a = await daemon('alpha');
    await makeBatch(a.store, 'b1', 2);
    await claimRows(a.store, 'b1', 0, 2, RUNNABLE);
    // Live: the intent is one statement: the row's write under its hint's (the state and outputs its claimed page
    // read, held by this daemon), the approval's and the lease's conditions, returning its step's state, with the
    // step's record in the same one (src/store/store.ts `RowHints`). Without a hint, the row is first locked and read
    // by a statement of its own (two).
    const counted = countStatements(a.store);
    await a.store.recordIntent('b1', 1, 'create');
    expect(counted.n).toBe(1);
    expect((await a.store.getSteps('b1', 1)).get('create')?.state).toBe('intent');
    // The database's lease ends (as when the others judged alpha dead) while alpha's own deadline is far.
    await a.store.sql.run(`UPDATE daemons SET lease_until_ms = 0 WHERE name = 'alpha'`);
    await expect(a.store.recordIntent('b1', 2, 'create')).rejects.toMatchObject({ code: STORE_LEASE_LOST });
    expect(a.lease.lost).toBe(true);
    expect((await a.store.getRow('b1', 2))?.state).toBe('pending');
    expect((await a.store.getSteps('b1', 2)).size).toBe(0);
  });

  it('lets go, at a restart under the same name, what its previous life held', async () => {
    const a = await daemon('alpha');
    const b = await daemon('beta');
    await makeBatch(a.store, 'b1', 3);
    await claimRows(a.store, 'b1', 0, 3, RUNNABLE);
    await a.store.recordIntent('b1', 1, 'create');
    a.lease.abandon(); // killed; restarted at once on this host, its lease not yet passed
    const again = await openStore();
    leases.push(await DaemonLease.register(again, { name: 'alpha' }));
    // Its rows are held by nobody now: whoever claims them drives them (beta here), the intent an unknown outcome.
    expect((await claimRows(b.store, 'b1', 0, 10, RUNNABLE)).map((r) => r.line)).toEqual([1, 2, 3]);
    expect((await b.store.getSteps('b1', 1)).get('create')?.state).toBe('intent');
  });

  it('counts a lease lost by the database (renewal after it passed) and says so once', async () => {
    const store = await openStore();
    const lost: string[] = [];
    const lease = await DaemonLease.register(store, {
      name: 'gamma',
      leaseMs: 30_000,
      onLost: (e) => lost.push(e.code),
    });
    leases.push(lease);
    await store.sql.run("UPDATE daemons SET lease_until_ms = 0 WHERE name = 'gamma'"); // as if it had passed
    await lease.renew();
    await lease.renew();
    expect(lost).toEqual([STORE_LEASE_LOST]);
    expect(() => lease.assertLive()).toThrow(/lease of daemon "gamma" is lost/);
  });

  it('counts a lease lost when its renewal still waits for the database at its own deadline', async () => {
    const store = await openStore();
    const renewOn = await openStore();
    let now = 0;
    const lost: string[] = [];
    const lease = await DaemonLease.register(store, {
      name: 'delta',
      leaseMs: 30_000,
      renewOn,
      monotonic: () => now,
      onLost: (e) => lost.push(e.code),
    });
    leases.push(lease);
    // Another session holds the table: the renewal's UPDATE waits, as with a database that does not answer.
    const at = new URL(url);
    const blocker = new pg.Client({
      host: at.hostname,
      port: Number(at.port),
      user: decodeURIComponent(at.username),
      database: at.pathname.slice(1),
      password: cluster.password,
    });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE daemons IN ACCESS EXCLUSIVE MODE');
      const waiting = lease.renew();
      await new Promise((r) => setTimeout(r, 100));
      expect(lost).toEqual([]);
      now = 30_000; // the next tick of the renewal timer, past the local deadline: lost now, not when the DB answers
      void lease.renew();
      expect(lost).toEqual([STORE_LEASE_LOST]);
      expect(() => lease.assertLive()).toThrow(/lease of daemon "delta" is lost/);
      await blocker.query('ROLLBACK');
      await waiting;
      expect(lost).toEqual([STORE_LEASE_LOST]); // told once; it stays lost though the late renewal went through
      expect(lease.lost).toBe(true);
    } finally {
      await blocker.end();
    }
  });

  it('lets a gracefully stopped daemon rows go at once', async () => {
    const a = await daemon('alpha');
    const b = await daemon('beta');
    await makeBatch(a.store, 'b1', 2);
    await claimRows(a.store, 'b1', 0, 10, RUNNABLE);
    expect(await claimRows(b.store, 'b1', 0, 10, RUNNABLE)).toEqual([]);
    await a.lease.release();
    expect((await claimRows(b.store, 'b1', 0, 10, RUNNABLE)).map((r) => r.line)).toEqual([1, 2]);
    const views = await listDaemons(b.store);
    expect(views.find((d) => d.name === 'beta')).toMatchObject({ alive: true, rows: 2 });
    expect(views.find((d) => d.name === 'alpha')).toMatchObject({ alive: false, rows: 0 });
  });

  it('claims an answer for one writer; a dead writer claim is taken over', async () => {
    const a = await daemon('alpha', 600);
    const b = await daemon('beta');
    await registerIntake(a.store, {
      id: 'i1',
      folder: 'charges',
      fileName: 'f.csv',
      source: 'charges/f.csv',
      contentSha256: 'abc',
      takenAt: new Date().toISOString(),
      answerName: 'f.i1',
    });
    expect(await claimAnswer(a.store, 'i1')).toBe(true);
    expect(await claimAnswer(a.store, 'i1')).toBe(true); // its own
    expect(await claimAnswer(b.store, 'i1')).toBe(false);
    a.lease.abandon();
    await new Promise((r) => setTimeout(r, 800));
    expect(await claimAnswer(b.store, 'i1')).toBe(true);
  });

  it('gives a file to one of several daemons claiming it at once; the losers leave it', async () => {
    const ds = [await daemon('d1'), await daemon('d2'), await daemon('d3')];
    const claims = ds.map((d) => new FileClaims(d.store, d.lease));
    for (let round = 0; round < 5; round++) {
      const key = `sha-${round}`;
      const won = await Promise.all(claims.map((c, i) => c.claim(key, `w${round}-${i}`, 'charges/f.csv')));
      expect(won.filter(Boolean)).toHaveLength(1);
      const winner = won.indexOf(true);
      expect(await claims[winner]!.taken(`w${round}-${winner}`)).toBe(true);
      // A later daemon finding the same bytes still leaves them while the holder lives.
      expect(await claims[(winner + 1) % 3]!.claim(key, 'late', 'charges/f.csv')).toBe(false);
      await claims[winner]!.done(`w${round}-${winner}`);
      // Archived: the same bytes dropped again are a new taking.
      expect(await claims[(winner + 1) % 3]!.claim(key, `again-${round}`, 'charges/f.csv')).toBe(true);
    }
  });

  it('passes a file claim of a daemon frozen mid-take to another; the frozen one finds it lost', async () => {
    const a = await daemon('alpha', 600);
    const b = await daemon('beta');
    const ca = new FileClaims(a.store, a.lease);
    const cb = new FileClaims(b.store, b.lease);
    expect(await ca.claim('sha-x', 'wa', 'charges/x.csv')).toBe(true);
    // alpha froze (SIGSTOP) before its rename: the file is still in the inbox; beta leaves it while alpha's lease runs.
    expect(await cb.claim('sha-x', 'wb', 'charges/x.csv')).toBe(false);
    a.lease.abandon();
    await new Promise((r) => setTimeout(r, 800));
    expect(await cb.claim('sha-x', 'wb', 'charges/x.csv')).toBe(true);
    expect(await cb.taken('wb')).toBe(true);
    // alpha wakes up after its rename: its claim is gone, it leaves the work item (an orphan, adopted by others).
    expect(await ca.taken('wa')).toBe(false);
    const items = [
      { id: 'wb', takenAt: new Date().toISOString() },
      { id: 'wa', takenAt: new Date(Date.now() - 60_000).toISOString() },
    ];
    const adopt = (mine: boolean) =>
      cb.adoptable(items, { mine, keyOf: async (i) => `sha-of-${i.id}`, sourceOf: () => 'charges/x.csv' });
    // beta's own item (after a restart: mine) and the orphan, claimed anew by its content.
    expect((await adopt(true)).map((i) => i.id)).toEqual(['wb', 'wa']);
    expect(await b.store.sql.all('SELECT work_id, holder FROM file_claims ORDER BY work_id')).toEqual([
      { work_id: 'wa', holder: 'beta' },
      { work_id: 'wb', holder: 'beta' },
    ]);
  });

  it('leaves an orphan whose file is gone since the listing (archived by its daemon meanwhile), unclaimed', async () => {
    const b = await daemon('beta');
    const cb = new FileClaims(b.store, b.lease);
    const items = [{ id: 'gone', takenAt: new Date(Date.now() - 60_000).toISOString() }];
    const got = await cb.adoptable(items, { mine: true, keyOf: async () => undefined, sourceOf: () => 's' });
    expect(got).toEqual([]);
    expect(await b.store.sql.all('SELECT work_id FROM file_claims')).toEqual([]);
  });

  it('adopts the work items of a dead daemon, not those of a live one', async () => {
    const a = await daemon('alpha', 600);
    const b = await daemon('beta');
    const c = await daemon('gamma');
    const ca = new FileClaims(a.store, a.lease);
    const cc = new FileClaims(c.store, c.lease);
    const cb = new FileClaims(b.store, b.lease);
    await ca.claim('k1', 'w1', 's1');
    await ca.taken('w1');
    await ca.claim('k3', 'w3', 's3'); // archived, but alpha died before its claim went: no work item names it
    await cc.claim('k2', 'w2', 's2');
    await cc.taken('w2');
    const items = [
      { id: 'w1', takenAt: new Date().toISOString() },
      { id: 'w2', takenAt: new Date().toISOString() },
    ];
    const opts = { mine: false, keyOf: async () => 'unused', sourceOf: () => 's' };
    expect(await cb.adoptable(items, opts)).toEqual([]);
    a.lease.abandon();
    await new Promise((r) => setTimeout(r, 800));
    expect((await cb.adoptable(items, opts)).map((i) => i.id)).toEqual(['w1']);
    expect(await b.store.sql.all('SELECT work_id, holder FROM file_claims ORDER BY work_id')).toEqual([
      { work_id: 'w1', holder: 'beta' },
      { work_id: 'w2', holder: 'gamma' },
    ]);
    expect((await listDaemons(b.store)).find((d) => d.name === 'beta')).toMatchObject({ files: 1 });
    // The work ids a claim names, whatever its holder (w3's claim went with its dead daemon's adoption above).
    expect(await cb.claimed(['w1', 'w2', 'w3', 'none'])).toEqual(new Set(['w1', 'w2']));
  });

  it('leaves a batch whose file a live daemon holds to it (one driver and one approval gate per file)', async () => {
    const a = await daemon('alpha', 600);
    const b = await daemon('beta');
    await makeBatch(a.store, 'b1', 2);
    await registerIntake(a.store, {
      id: 'w1',
      folder: 'charges',
      fileName: 'b1.csv',
      source: 'charges/b1.csv',
      contentSha256: 'k1',
      takenAt: new Date().toISOString(),
      answerName: 'b1.w1',
    });
    await a.store.sql.run("UPDATE intakes SET batch_id = 'b1' WHERE id = 'w1'");
    const ca = new FileClaims(a.store, a.lease);
    const cb = new FileClaims(b.store, b.lease);
    await ca.claim('k1', 'w1', 'charges/b1.csv');
    expect(await cb.heldElsewhere('b1')).toBe(true);
    expect(await ca.heldElsewhere('b1')).toBe(false); // its own
    a.lease.abandon();
    await new Promise((r) => setTimeout(r, 800));
    expect(await cb.heldElsewhere('b1')).toBe(false); // its holder is dead: anyone may resume it
  });

  it('commits concurrent writers over two batches counters without losing one (deadlocks run again)', async () => {
    const names = ['d1', 'd2', 'd3'];
    const ds = [];
    for (const n of names) ds.push(await daemon(n));
    await makeBatch(ds[0]!.store, 'x', 60);
    await makeBatch(ds[0]!.store, 'y', 60);
    // Each daemon claims its share of both batches.
    const mine = await Promise.all(
      ds.map(async (d) => ({
        x: (await claimRows(d.store, 'x', 0, 20, RUNNABLE)).map((r) => r.line),
        y: (await claimRows(d.store, 'y', 0, 20, RUNNABLE)).map((r) => r.line),
      })),
    );
    // Every group commit touches both batches' counters, in opposite orders on alternate daemons.
    await Promise.all(
      ds.map(async (d, i) => {
        const m = mine[i]!;
        for (let k = 0; k < m.x.length; k++) {
          const order = (k + i) % 2 === 0 ? (['x', 'y'] as const) : (['y', 'x'] as const);
          await Promise.all(
            order.map((b) =>
              d.store.write(async (s) => {
                const line = b === 'x' ? m.x[k]! : m.y[k]!;
                await s.recordIntent(b, line, 'create');
                await s.recordStepDone(b, line, 'create', { ok: true }, true);
              }),
            ),
          );
        }
      }),
    );
    for (const b of ['x', 'y']) {
      expect(await ds[0]!.store.countRows(b)).toMatchObject({ succeeded: 60, pending: 0, in_flight: 0 });
      // One bump of `changes` per row that succeeded: none lost, none doubled by a transaction run again.
      expect((await ds[0]!.store.getBatch(b))?.changes).toBe(60);
    }
  });
});
