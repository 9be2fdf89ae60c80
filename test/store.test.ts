import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chargesKind } from '../src/batches/charges.js';
import { columnLabeller } from '../src/batches/fields.js';
import type { Dialect } from '../src/batches/kind.js';
import { NATURAL_KEY_REUSED, sameOperationCheck } from '../src/batches/same-operation.js';
import { msg } from '../src/i18n/index.js';
import {
  accountNamespace,
  BATCH_HAS_INVALID_ROWS,
  canTransitionRow,
  DUPLICATE_NATURAL_KEY,
  deriveIdempotencyKey,
  IdempotencyKeys,
  IllegalTransitionError,
  type IngestRow,
  openDatabase,
  openStore,
  openStoreWith,
  REMESSA_NAMESPACE,
  ROW_STATES,
  type Store,
  type ValidIngestRow,
} from '../src/store/index.js';
import { naturalKeyDigest } from '../src/store/keys.js';
import { openSqliteDriver } from '../src/store/sqlite-driver.js';
import { sqliteOf } from './helpers/sqlite-of.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const DIALECT: Dialect = { delimiter: ',', decimalMark: '.', encoding: 'utf8', bom: false };
const ACCOUNT = '123456';

let store: Store;

const engines = storeEngines();

function validRow(line: number, naturalKey: string, amountCents = 1000): IngestRow {
  const keys = new IdempotencyKeys(ACCOUNT);
  return {
    line,
    record: { correlationId: naturalKey, amount: String(amountCents / 100) },
    valid: true,
    parsed: { correlationId: naturalKey, amountCents },
    naturalKey,
    idempotencyKey: keys.forRow('charges', naturalKey),
    amountCents,
  };
}

function newBatch(id: string, kind: 'charges' | 'bill-payments' = 'charges', fileName = `${id}.csv`) {
  return store.createBatch({ id, kind, fileName, dialect: DIALECT, header: ['correlationId', 'amount'] });
}

describe('on SQLite only (its file, pragmas, migrations folder and lock file)', () => {
  let dir: string;
  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'remessa-store-'));
    store = await openStore(path.join(dir, 'state.sqlite'));
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('migrations', () => {
    it('applies numbered migrations once, records them, and sets WAL + synchronous FULL', async () => {
      const versions = sqliteOf(store).prepare('SELECT version, name FROM schema_migrations ORDER BY version').all();
      expect(versions[0]).toEqual({ version: 1, name: 'batches-rows-steps' });
      expect(sqliteOf(store).pragma('journal_mode', { simple: true })).toBe('wal');
      // 2 = FULL
      expect(sqliteOf(store).pragma('synchronous', { simple: true })).toBe(2);
      await store.close();
      store = await openStore(path.join(dir, 'state.sqlite'));
      expect(sqliteOf(store).prepare('SELECT COUNT(*) AS n FROM schema_migrations').get()).toEqual({
        n: versions.length,
      });
    });

    it('rolls a failing migration back whole and does not record it', async () => {
      const migrations = path.join(dir, 'migrations');
      mkdirSync(migrations);
      writeFileSync(path.join(migrations, '001-good.sql'), 'CREATE TABLE a (x INTEGER);');
      writeFileSync(
        path.join(migrations, '002-bad.sql'),
        'CREATE TABLE b (x INTEGER); INSERT INTO nowhere VALUES (1);',
      );
      const file = path.join(dir, 'm.sqlite');
      expect(() => openDatabase(file, { migrationsDir: migrations })).toThrow(/nowhere/);
      writeFileSync(path.join(migrations, '002-bad.sql'), 'CREATE TABLE b (x INTEGER);');
      const db = openDatabase(file, { migrationsDir: migrations });
      expect(db.prepare('SELECT version FROM schema_migrations ORDER BY version').all()).toEqual([
        { version: 1 },
        { version: 2 },
      ]);
      db.close();
    });
  });

  describe('openStoreWith', () => {
    it("runs the store over a driver it is given, applying that driver's migrations", async () => {
      const driver = openSqliteDriver(path.join(dir, 'given.sqlite'));
      const given = await openStoreWith(driver, 'given');
      try {
        expect(given.driver).toBe(driver);
        const created = await given.createBatch({
          id: 'g1',
          kind: 'charges',
          fileName: 'g1.csv',
          dialect: DIALECT,
          header: ['correlationId', 'amount'],
        });
        expect(created.status).toBe('ingesting');
        expect((await driver.all('SELECT version FROM schema_migrations')).length).toBeGreaterThan(0);
      } finally {
        await given.close();
      }
      expect(driver.isOpen).toBe(false);
    });
  });

  describe('exclusive lock', () => {
    it('lets one process drive the store; readers still open it; a lock left by a dead process is taken over', async () => {
      const file = path.join(dir, 'locked.sqlite');
      const a = await openStore(file, { exclusive: true });
      expect(readFileSync(`${file}.lock`, 'utf8').trim()).toBe(String(process.pid));
      const reader = await openStore(file);
      await reader.close();
      await a.close();
      expect(existsSync(`${file}.lock`)).toBe(false);
      // held by another live process
      const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 10000)']);
      try {
        writeFileSync(`${file}.lock`, `${child.pid}\n`);
        await expect(openStore(file, { exclusive: true })).rejects.toThrow(
          expect.objectContaining({ code: 'STORE_LOCKED' }),
        );
      } finally {
        child.kill('SIGKILL');
      }
      const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
      writeFileSync(`${file}.lock`, `${dead}\n`);
      const b = await openStore(file, { exclusive: true });
      expect(readFileSync(`${file}.lock`, 'utf8').trim()).toBe(String(process.pid));
      await b.close();
    });
  });

  describe('row storage (issue 13 §3, migration 012)', () => {
    const COLUMNS = ['barCode', null, 'amount'] as const;

    function billRow(line: number, record: Record<string, string>, cells: string[]): IngestRow {
      return { ...validRow(line, `bill-${line}`), record, cells };
    }

    it('stores no record that its cells give again, and reads it back the same', async () => {
      await store.createBatch({
        id: 'b1',
        kind: 'bill-payments',
        fileName: 'b1.csv',
        dialect: DIALECT,
        header: ['barCode', 'note', 'amount'],
        columns: [...COLUMNS],
      });
      await store.ingest('b1', [
        // The reader's record of its cells (the ignored column left out, cells trimmed, an empty cell absent).
        billRow(2, { barCode: '341', amount: '10.00' }, [' 341 ', 'x', '10.00']),
        billRow(3, { barCode: '341' }, ['341', '', '']),
        // A record that is not only its cells (an implied value): stored whole.
        billRow(4, { barCode: '341', amount: '1.00', payAt: '2030-01-01' }, ['341', '', '1.00']),
        // The same keys in another order: stored whole (the kind may read the order).
        billRow(5, { amount: '2.00', barCode: '341' }, ['341', '', '2.00']),
        { line: 6, record: { barCode: 'x' }, cells: ['x', '', ''], valid: false, errors: [] },
      ]);
      const stored = sqliteOf(store)
        .prepare(
          'SELECT line, record FROM rows WHERE batch_no = (SELECT batch_no FROM batches WHERE id = ?) ORDER BY line',
        )
        .all('b1') as Array<{ line: number; record: string }>;
      expect(stored.map((r) => [r.line, r.record])).toEqual([
        [2, ''],
        [3, ''],
        [4, JSON.stringify({ barCode: '341', amount: '1.00', payAt: '2030-01-01' })],
        [5, JSON.stringify({ amount: '2.00', barCode: '341' })],
        [6, ''],
      ]);
      const rows = await store.rowsAfter('b1', 0, 10);
      expect(rows.map((r) => r.record)).toEqual([
        { barCode: '341', amount: '10.00' },
        { barCode: '341' },
        { barCode: '341', amount: '1.00', payAt: '2030-01-01' },
        { amount: '2.00', barCode: '341' },
        { barCode: 'x' },
      ]);
      expect(Object.keys(rows[3]!.record)).toEqual(['amount', 'barCode']);
      expect((await store.getRow('b1', 2))!.record).toEqual({ barCode: '341', amount: '10.00' });
      expect((await store.resultRowsAfter('b1', 0, 10)).map((r) => r.record)).toEqual(rows.map((r) => r.record));
      // A second store on the same file (a restart) reads them too.
      await store.close();
      store = await openStore(path.join(dir, 'state.sqlite'));
      expect((await store.getRow('b1', 3))!.record).toEqual({ barCode: '341' });
      expect((await store.getBatch('b1'))!.columns).toEqual(COLUMNS);
    });

    it('reads a store written before migration 012 and drops the step outputs its rows hold whole', async () => {
      await store.close();
      const old = path.join(dir, 'migrations-011');
      mkdirSync(old);
      const all = path.join(import.meta.dirname, '..', 'src', 'store', 'migrations');
      for (const f of readdirSync(all).filter((f) => f < '012'))
        writeFileSync(path.join(old, f), readFileSync(path.join(all, f)));
      const file = path.join(dir, 'old.sqlite');
      // Written as before 012 (by SQL: today's store writes the new shape): records whole, outputs on every step.
      const db = openDatabase(file, { migrationsDir: old });
      db.prepare(
        `INSERT INTO batches (id, kind, file_name, dialect, header, status, created_at)
         VALUES ('b1', 'charges', 'b1.csv', ?, '["correlationId","amount"]', 'running', 'x')`,
      ).run(JSON.stringify(DIALECT));
      const row = db.prepare(
        `INSERT INTO rows (batch_id, line, record, cells, state, outputs, updated_at)
         VALUES ('b1', ?, ?, ?, ?, ?, 'x')`,
      );
      row.run(
        2,
        '{"correlationId":"k1","amount":"10"}',
        '["k1","10"]',
        'succeeded',
        '{"ourNumber":"1","n":2,"ok":true,"none":null,"pdf":"a.pdf"}',
      );
      row.run(3, '{"correlationId":"k2"}', null, 'succeeded', '{"ourNumber":"2","status":"PRINTED"}');
      row.run(4, '{"correlationId":"k3"}', null, 'in_flight', '{"ourNumber":"3"}'); // unfinished: step outputs needed
      const step = db.prepare(
        `INSERT INTO steps (batch_id, line, step, state, attempts, output, updated_at) VALUES ('b1', ?, ?, 'done', 1, ?, 'x')`,
      );
      step.run(2, 'create', '{"ourNumber":"1","n":2,"ok":true,"none":null}');
      step.run(2, 'pdf', '{"pdf":"a.pdf"}');
      step.run(3, 'create', '{"ourNumber":"2","status":"REGISTERED"}');
      step.run(3, 'pdf', '{"status":"PRINTED"}');
      step.run(4, 'create', '{"ourNumber":"3"}');
      db.close();

      store = await openStore(file);
      const outputs = sqliteOf(store)
        .prepare('SELECT line, step, output FROM steps ORDER BY line, step')
        .all() as Array<{
        line: number;
        step: string;
        output: string | null;
      }>;
      expect(outputs.map((o) => [o.line, o.step, o.output])).toEqual([
        [2, 'create', null],
        [2, 'pdf', null],
        [3, 'create', '{"ourNumber":"2","status":"REGISTERED"}'], // overwritten in part by the later step: kept
        [3, 'pdf', null],
        [4, 'create', '{"ourNumber":"3"}'],
      ]);
      expect((await store.getRow('b1', 2))!.record).toEqual({ correlationId: 'k1', amount: '10' });
      expect((await store.rowsAfter('b1', 0, 10)).map((r) => r.record)).toEqual([
        { correlationId: 'k1', amount: '10' },
        { correlationId: 'k2' },
        { correlationId: 'k3' },
      ]);
      expect((await store.getBatch('b1'))!.columns).toBeUndefined();
    });
  });
});

describe.each(engines)('on $name', (engine) => {
  skipIfAsked(engine);
  beforeEach(async () => {
    store = await engine.open();
  });
  afterEach(async () => {
    await store.close();
  });

  describe('migrations', () => {
    it('refuses a database written by a newer version', async () => {
      await store.driver.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'x')");
      await store.close();
      await expect(engine.reopen(store)).rejects.toThrow(expect.objectContaining({ code: 'STORE_SCHEMA_TOO_NEW' }));
      store = await engine.open();
    });
  });

  describe('idempotency keys', () => {
    it('are UUIDv5, the same for the same account, kind and natural key, across stores', async () => {
      const a = new IdempotencyKeys(ACCOUNT).forRow('charges', 'order-1');
      const b = deriveIdempotencyKey(accountNamespace(ACCOUNT), 'charges', 'order-1');
      expect(a).toBe(b);
      expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(new IdempotencyKeys('other').forRow('charges', 'order-1')).not.toBe(a);
      expect(new IdempotencyKeys(ACCOUNT).forRow('qr-codes', 'order-1')).not.toBe(a);
      expect(new IdempotencyKeys(ACCOUNT).forRow('charges', 'order-1', 'E2D3C4B5-0000-4000-8000-000000000001')).toBe(
        'E2D3C4B5-0000-4000-8000-000000000001',
      );
      // Pinned: a change of namespace or derivation would silently change every key sent to the bank.
      expect(REMESSA_NAMESPACE).toBe('3f6c1d52-8a4e-4b7f-9c2d-5e0a7b1f4c83');
      expect(deriveIdempotencyKey(accountNamespace('123456'), 'charges', 'order-1')).toBe(a);
    });

    it('stay the same after the database is rebuilt', async () => {
      await newBatch('b1');
      await store.ingest('b1', [validRow(2, 'order-1')]);
      const before = (await store.getRow('b1', 2))!.idempotencyKey;
      // A new, empty store (the database rebuilt).
      await store.close();
      store = await engine.open();
      await newBatch('b1');
      await store.ingest('b1', [validRow(2, 'order-1')]);
      expect((await store.getRow('b1', 2))!.idempotencyKey).toBe(before);
    });
  });

  describe('row state machine', () => {
    it('allows only the drawn transitions', async () => {
      const allowed = new Set([
        'null>pending',
        'null>rejected',
        'null>duplicate',
        'pending>in_flight',
        'pending>failed',
        'pending>rejected',
        'pending>uncertain',
        'in_flight>in_flight',
        'in_flight>succeeded',
        'in_flight>failed',
        'in_flight>uncertain',
        'in_flight>pending',
        'uncertain>in_flight',
        'uncertain>succeeded',
        'uncertain>failed',
        'uncertain>uncertain',
        // The bank unreachable, nothing sent (src/store/rows.ts): waiting, then sent when it is back.
        'pending>waiting',
        'in_flight>waiting',
        'uncertain>waiting',
        'waiting>waiting',
        'waiting>in_flight',
        'waiting>failed',
        'waiting>uncertain',
      ]);
      for (const from of [null, ...ROW_STATES]) {
        for (const to of ROW_STATES) {
          expect(canTransitionRow(from, to), `${from} -> ${to}`).toBe(allowed.has(`${from}>${to}`));
        }
      }
    });

    it('throws on an illegal move and leaves the row unchanged', async () => {
      await newBatch('b1');
      await store.ingest('b1', [validRow(2, 'k1')]);
      await store.finishIngest('b1', 'send-valid');
      await store.recordIntent('b1', 2, 'create');
      await store.recordStepDone('b1', 2, 'create', { ourNumber: '1' }, true);
      expect((await store.getRow('b1', 2))!.state).toBe('succeeded');
      const before = await store.getRow('b1', 2);
      expect((await store.getSteps('b1', 2)).size).toBe(0);
      await expect(store.recordIntent('b1', 2, 'create')).rejects.toThrow(IllegalTransitionError);
      await expect(
        store.write((s) => s.recordIntent('b1', 2, 'create', { step: 'lookup', output: { found: 'yes' } })),
      ).rejects.toThrow(IllegalTransitionError);
      await expect(store.transitionRow('b1', 2, 'pending')).rejects.toThrow(/succeeded -> pending/);
      // On PostgreSQL the intent's write carries its step records and is checked after: the refusal undoes them.
      expect(await store.getRow('b1', 2)).toEqual(before);
      expect((await store.getSteps('b1', 2)).size).toBe(0);
    });

    it('refuses a last answer for a step done already, and leaves the row, its outputs and its steps as they were', async () => {
      // On PostgreSQL the steps are read by the row's write and checked after it: the write must be undone.
      await newBatch('b1');
      await store.ingest('b1', [validRow(2, 'k1')]);
      await store.recordIntent('b1', 2, 'create');
      await store.recordStepDone('b1', 2, 'create', { ourNumber: '1' }, false);
      const before = await store.getRow('b1', 2);
      await expect(store.recordStepDone('b1', 2, 'create', { pdf: 'a.pdf' }, true)).rejects.toThrow(
        IllegalTransitionError,
      );
      await expect(store.write((s) => s.recordStepDone('b1', 2, 'create', { pdf: 'b.pdf' }, true))).rejects.toThrow(
        IllegalTransitionError,
      );
      expect(await store.getRow('b1', 2)).toEqual(before);
      expect([...(await store.getSteps('b1', 2)).entries()].map(([k, v]) => [k, v.state])).toEqual([
        ['create', 'done'],
      ]);
    });

    it('never lets a done step be sent again', async () => {
      await newBatch('b1');
      await store.ingest('b1', [validRow(2, 'k1')]);
      await store.recordIntent('b1', 2, 'create');
      await store.recordStepDone('b1', 2, 'create', { ourNumber: '1' }, false);
      await expect(store.recordIntent('b1', 2, 'create')).rejects.toThrow(
        expect.objectContaining({ code: 'STORE_ILLEGAL_TRANSITION' }),
      );
      await store.recordIntent('b1', 2, 'pdf');
      await store.recordStepUnknown('b1', 2, 'pdf', { code: 'SERVICE_TIMEOUT', message: 'timed out' });
      await store.recordIntent('b1', 2, 'pdf');
      await store.recordStepDone('b1', 2, 'pdf', { pdf: 'a.pdf' }, true);
      const steps = await store.getSteps('b1', 2);
      // The row succeeded: its outputs hold every step's output whole, which the step records no longer repeat; a step
      // done at its first attempt with nothing else to tell is not kept at all (migration 015), a retried one is.
      expect(steps.get('pdf')).toMatchObject({ state: 'done', attempts: 2, output: null });
      expect(steps.has('create')).toBe(false);
      expect((await store.getRow('b1', 2))!.outputs).toEqual({ ourNumber: '1', pdf: 'a.pdf' });
    });

    it('keeps a done step output while its row is unfinished, and one a later step overwrote in part', async () => {
      await newBatch('b1');
      await store.ingest('b1', [validRow(2, 'k1'), validRow(3, 'k2')]);
      await store.recordIntent('b1', 2, 'create');
      await store.recordStepDone('b1', 2, 'create', { ourNumber: '1', status: 'REGISTERED' }, false);
      // A resumed row hands this output to its next step: it stays on the step while the row is unfinished.
      expect((await store.getSteps('b1', 2)).get('create')!.output).toEqual({ ourNumber: '1', status: 'REGISTERED' });
      await store.recordIntent('b1', 2, 'pdf');
      await store.recordStepDone('b1', 2, 'pdf', { pdf: 'a.pdf', status: 'PRINTED' }, true);
      const steps = await store.getSteps('b1', 2);
      // `status` of the first step is not in the row's outputs any more (the last step's replaced it): kept.
      expect(steps.get('create')!.output).toEqual({ ourNumber: '1', status: 'REGISTERED' });
      expect(steps.has('pdf')).toBe(false); // done at its first attempt, held whole by the row: not kept
      const row = (await store.getRow('b1', 2))!;
      expect(row).toMatchObject({ state: 'succeeded', currentStep: null, errorCode: null });
      expect(row.outputs).toEqual({ ourNumber: '1', status: 'PRINTED', pdf: 'a.pdf' });
      // A row that has not reached `in_flight` is moved through it, as the machine draws (rows.ts).
      await store.recordStepDone('b1', 3, 'create', { ourNumber: '2' }, true);
      expect((await store.getRow('b1', 3))!).toMatchObject({ state: 'succeeded', outputs: { ourNumber: '2' } });
    });
  });

  describe('a page of steps', () => {
    it("reads the steps of a range of lines at once, by line, as getSteps reads one row's", async () => {
      await newBatch('b1');
      await store.ingest('b1', [validRow(2, 'k1'), validRow(3, 'k2'), validRow(4, 'k3'), validRow(5, 'k4')]);
      await store.finishIngest('b1', 'send-valid');
      await store.recordIntent('b1', 2, 'create');
      await store.recordIntent('b1', 4, 'create');
      await store.recordIntent('b1', 5, 'create');
      await store.recordRowFailed('b1', 4, 'create', { code: 'SERVICE_VALIDATION', message: 'no' });
      const page = await store.getStepsBetween('b1', 2, 4);
      expect([...page.keys()].sort()).toEqual([2, 4]); // line 3 has no step; line 5 is after the range
      expect(page.get(2)).toEqual(await store.getSteps('b1', 2));
      expect(page.get(4)).toEqual(await store.getSteps('b1', 4));
      expect(page.get(4)!.get('create')).toMatchObject({ state: 'failed', errorCode: 'SERVICE_VALIDATION' });
    });
  });

  describe('ingestion and duplicates', () => {
    it("marks the duplicates' files stale when their owner moves: succeeded, failed or uncertain, once each", async () => {
      await newBatch('b1', 'charges', 'first.csv');
      await store.ingest('b1', [validRow(2, 'k1'), validRow(3, 'k2'), validRow(4, 'k3')]);
      await store.finishIngest('b1', 'send-valid');
      for (const line of [2, 3, 4]) await store.recordIntent('b1', line, 'create');
      // b2 holds duplicates of all three (two of line 2); b3 of line 3 only.
      await newBatch('b2', 'charges', 'second.csv');
      await store.ingest('b2', [validRow(2, 'k1'), validRow(3, 'k1'), validRow(4, 'k2'), validRow(5, 'k3')]);
      await newBatch('b3', 'charges', 'third.csv');
      await store.ingest('b3', [validRow(2, 'k2')]);
      const changes = async () =>
        Object.fromEntries(
          (
            await store.driver.all<{ id: string; changes: number | string }>(
              "SELECT id, changes FROM batches WHERE id IN ('b2', 'b3') ORDER BY id",
            )
          ).map((b) => [b.id, Number(b.changes)]),
        );
      const before = await changes();
      await store.recordStepDone('b1', 2, 'create', { ourNumber: '77' }, true);
      expect(await changes()).toEqual({ b2: before.b2! + 1, b3: before.b3 });
      await store.recordRowFailed('b1', 3, 'create', { code: 'SERVICE_VALIDATION', message: 'no' });
      expect(await changes()).toEqual({ b2: before.b2! + 2, b3: before.b3! + 1 });
      await store.recordRowUncertain('b1', 4, 'create', { code: 'TIMEOUT', message: 'no answer' });
      expect(await changes()).toEqual({ b2: before.b2! + 3, b3: before.b3! + 1 });
    });

    it('makes a row whose natural key succeeded in an earlier batch a duplicate', async () => {
      await newBatch('b1', 'charges', 'first.csv');
      await store.ingest('b1', [validRow(2, 'k1'), validRow(3, 'k2')]);
      await store.finishIngest('b1', 'send-valid');
      await store.recordIntent('b1', 2, 'create');
      await store.recordStepDone('b1', 2, 'create', { ourNumber: '77' }, true);
      await store.recordIntent('b1', 3, 'create');
      await store.recordRowFailed('b1', 3, 'create', { code: 'SERVICE_VALIDATION', message: 'no' });

      await newBatch('b2', 'charges', 'second.csv');
      await store.ingest('b2', [validRow(2, 'k1'), validRow(3, 'k2'), validRow(4, 'k3'), validRow(5, 'k3')]);
      const rows = await store.resultRowsAfter('b2', 0, 10);
      expect(rows.map((r) => r.state)).toEqual(['duplicate', 'pending', 'pending', 'duplicate']);
      expect(rows[0]).toMatchObject({ errorCode: DUPLICATE_NATURAL_KEY, owner: { state: 'succeeded', line: 2 } });
      expect(rows[0]!.owner!.outputs).toEqual({ ourNumber: '77' });
      expect(rows[0]!.errorMessage).toContain('first.csv');
      // the failed owner gave k2 up: the new row owns it now
      expect(
        await store.driver.get(
          'SELECT b.id AS batch_id, k.line FROM natural_keys k JOIN batches b ON b.batch_no = k.batch_no WHERE k.key_digest = ?',
          [naturalKeyDigest('charges', 'k2')],
        ),
      ).toMatchObject({
        batch_id: 'b2',
      });
      expect(rows[3]!.errorMessage).toContain('linha 4 deste arquivo');
    });

    it('a chunk of several statements (rows and keys read and stored a group at a time): owners as row by row', async () => {
      await newBatch('b0', 'charges', 'old.csv');
      await store.ingest('b0', [validRow(2, 'taken'), validRow(3, 'freed')]);
      await store.finishIngest('b0', 'send-valid');
      await store.recordIntent('b0', 3, 'create');
      await store.recordRowFailed('b0', 3, 'create', { code: 'SERVICE_VALIDATION', message: 'no' });
      await newBatch('b1', 'charges', 'big.csv');
      // 260 rows: more than one statement of inserts (50 a statement) and of owner reads (100 keys a statement).
      const rows = Array.from({ length: 260 }, (_, i) => validRow(i + 2, `k${i}`));
      rows[150] = validRow(152, 'k3'); // the key of line 5, three statements later
      rows[200] = validRow(202, 'taken'); // owned by b0 line 2 (pending there)
      rows[210] = validRow(212, 'freed'); // its owner failed: this row takes it over...
      rows[250] = validRow(252, 'freed'); // ...and this one is its duplicate
      await store.ingest('b1', rows);
      const stored = await store.resultRowsAfter('b1', 0, 300);
      expect(stored).toHaveLength(260);
      const byLine = new Map(stored.map((r) => [r.line, r]));
      expect(stored.filter((r) => r.state === 'duplicate').map((r) => r.line)).toEqual([152, 202, 252]);
      expect(byLine.get(152)!.owner).toMatchObject({ line: 5 });
      expect(byLine.get(152)!.errorMessage).toContain('linha 5 deste arquivo');
      expect(byLine.get(202)!.errorMessage).toContain('old.csv');
      expect(byLine.get(212)!.state).toBe('pending');
      expect(byLine.get(252)!.errorMessage).toContain('linha 212 deste arquivo');
      expect(
        await store.driver.get(
          'SELECT b.id AS batch_id, k.line FROM natural_keys k JOIN batches b ON b.batch_no = k.batch_no WHERE k.key_digest = ?',
          [naturalKeyDigest('charges', 'freed')],
        ),
      ).toEqual({
        batch_id: 'b1',
        line: 212,
      });
      expect(await store.countRows('b1')).toMatchObject({ pending: 257, duplicate: 3 });
    });

    it('a natural key reused for another operation: refused as an invalid row, never a duplicate; honest copies still are', async () => {
      // The charges kind's own check (its `mustMatch`), as the engine hands it to the store.
      const label = columnLabeller([]); // every column by its own name: `column amount`
      const check = sameOperationCheck(chargesKind, [{ column: 'correlationId' }, { column: 'amount' }], label, 'en')!;
      const charge = (line: number, id: string, amountCents: number, document = '52998224725'): IngestRow => ({
        ...(validRow(line, id, amountCents) as ValidIngestRow),
        parsed: {
          input: {
            type: 'BANKSLIP',
            correlationId: id,
            amountCents,
            dueDate: '2027-01-15',
            payer: { name: 'Maria', document, address: { zipCode: '01310100' } },
          },
        },
      });
      await newBatch('b1', 'charges', 'first.csv');
      await store.ingest('b1', [charge(2, '123', 1000), charge(3, '124', 5000)], 'en', check);
      // Another file: one key reused with another amount and payer, one honest copy, one reused with another amount.
      await newBatch('b2', 'charges', 'second.csv');
      await store.ingest('b2', [charge(2, '123', 99900, '11144477735'), charge(3, '124', 5000)], 'en', check);
      // A later chunk of the same file: owners of this file read back from the table (line 4 owns 125).
      await store.ingest('b2', [charge(4, '125', 700), charge(5, '124', 5001)], 'en', check);
      await store.ingest('b2', [charge(6, '125', 800)], 'en', check);
      const rows = new Map((await store.resultRowsAfter('b2', 0, 10)).map((r) => [r.line, r]));
      expect([...rows.values()].map((r) => [r.line, r.state])).toEqual([
        [2, 'rejected'],
        [3, 'duplicate'],
        [4, 'pending'],
        [5, 'rejected'],
        [6, 'rejected'],
      ]);
      const two = rows.get(2)!;
      expect(two).toMatchObject({ errorCode: NATURAL_KEY_REUSED, owner: null, duplicateOf: null, amountCents: 99900 });
      expect(two.errorMessage).toBe(
        'Not sent: "123" in column correlationId already identifies line 2 of first.csv, another charges operation: ' +
          'column amount: R$10.00 on line 2, R$999.00 here; column payer.document: "52998224725" on line 2, ' +
          '"11144477735" here. One key is one operation at the bank: give this row a value of its own',
      );
      expect(rows.get(5)!.errorMessage).toContain('line 3 of first.csv');
      expect(rows.get(6)!.errorMessage).toContain('line 4 of this file');
      expect(rows.get(6)!.errorMessage).toContain('R$7.00 on line 4, R$8.00 here');
      // The refused rows claim nothing: the keys stay their owners'.
      for (const [key, owner] of [
        ['123', { batch_id: 'b1', line: 2 }],
        ['124', { batch_id: 'b1', line: 3 }],
        ['125', { batch_id: 'b2', line: 4 }],
      ] as const) {
        expect(
          await store.driver.get(
            'SELECT b.id AS batch_id, k.line FROM natural_keys k JOIN batches b ON b.batch_no = k.batch_no WHERE k.key_digest = ?',
            [naturalKeyDigest('charges', key)],
          ),
        ).toEqual(owner);
      }
      // They count as invalid rows: an all-or-nothing file sends nothing.
      expect(await store.getBatch('b2')).toMatchObject({ invalidCount: 3 });
      await store.finishIngest('b2', 'all-or-nothing', 'en');
      expect(await store.countRows('b2')).toMatchObject({ rejected: 4, duplicate: 1, pending: 0 });
      expect((await store.getRow('b2', 4))!.errorCode).toBe(BATCH_HAS_INVALID_ROWS);
    });

    it('keeps rejected rows with every cell error and resumes an interrupted ingestion after the last line', async () => {
      await newBatch('b1');
      const bad: IngestRow = {
        line: 3,
        record: { correlationId: '', amount: 'x' },
        valid: false,
        errors: [
          { column: 'correlationId', code: 'REQUIRED', message: msg('REQUIRED') },
          {
            column: 'amount',
            code: 'INVALID_AMOUNT',
            message: msg('INVALID_AMOUNT.characters', { char: '"x"', got: '"x"' }),
          },
        ],
      };
      expect(await store.ingest('b1', [validRow(2, 'k1'), bad])).toEqual({ stored: 2, skipped: 0 });
      // the process died here; the file is read again from the start
      expect(await store.ingest('b1', [validRow(2, 'k1'), bad, validRow(4, 'k4')])).toEqual({ stored: 1, skipped: 2 });
      const b = (await store.getBatch('b1'))!;
      expect(b).toMatchObject({ rowCount: 3, invalidCount: 1, lastLine: 4, status: 'ingesting' });
      const r = (await store.getRow('b1', 3))!;
      expect(r.state).toBe('rejected');
      expect(r.errorCode).toBe('REQUIRED');
      expect(r.errorMessage).toBe(
        'coluna correlationId: Esperava um valor, veio uma célula vazia; coluna amount: Esperava só dígitos, ponto e vírgula, veio "x" em "x"',
      );
    });

    it('all-or-nothing: one invalid row rejects every valid row and frees their keys', async () => {
      await newBatch('b1', 'bill-payments');
      await store.ingest('b1', [validRow(2, 'k1'), { line: 3, record: {}, valid: false, errors: [] }]);
      const b = await store.finishIngest('b1', 'all-or-nothing');
      expect(b.status).toBe('ready');
      expect(await store.countRows('b1')).toMatchObject({ rejected: 2, pending: 0 });
      expect((await store.getRow('b1', 2))!.errorCode).toBe(BATCH_HAS_INVALID_ROWS);
      await newBatch('b2', 'bill-payments');
      await store.ingest('b2', [validRow(2, 'k1')]);
      expect((await store.getRow('b2', 2))!.state).toBe('pending');
    });

    it('send-valid: the valid rows stay pending', async () => {
      await newBatch('b1');
      await store.ingest('b1', [validRow(2, 'k1'), { line: 3, record: {}, valid: false, errors: [] }]);
      await store.finishIngest('b1', 'send-valid');
      expect(await store.countRows('b1')).toMatchObject({ rejected: 1, pending: 1 });
      await expect(store.markBatchDone('b1')).rejects.toThrow(
        expect.objectContaining({ code: 'STORE_BATCH_NOT_FINISHED' }),
      );
      expect((await store.unfinishedBatches()).map((x) => x.id)).toEqual(['b1']);
    });
  });

  describe('group commit', () => {
    it('commits writes of one tick together; a failing write undoes only itself', async () => {
      await newBatch('b1');
      await store.ingest('b1', [validRow(2, 'k1'), validRow(3, 'k2')]);
      const a = store.write((s) => s.recordIntent('b1', 2, 'create'));
      const bad = store.write(async (s) => {
        await s.recordIntent('b1', 3, 'create');
        await s.transitionRow('b1', 3, 'duplicate');
      });
      await expect(a).resolves.toBeUndefined();
      await expect(bad).rejects.toThrow(IllegalTransitionError);
      expect((await store.getRow('b1', 2))!.state).toBe('in_flight');
      // the savepoint of the failing write was rolled back whole, its intent included
      expect((await store.getRow('b1', 3))!.state).toBe('pending');
      expect((await store.getSteps('b1', 3)).size).toBe(0);
    });

    it('a group whose writes all succeed opens no savepoint; one failing write runs the group again, a savepoint each, its bumps counted once', async () => {
      await newBatch('b1');
      await store.ingest('b1', [validRow(2, 'k1'), validRow(3, 'k2'), validRow(4, 'k3')]);
      let savepoints = 0;
      const driver = store.driver;
      const transaction = driver.transaction.bind(driver);
      // Every transaction's savepoints counted (the methods bound: SQLite's transaction keeps private fields).
      driver.transaction = ((fn, options) =>
        transaction(
          (tx) =>
            fn({
              all: (sql, params) => tx.all(sql, params),
              get: (sql, params) => tx.get(sql, params),
              run: (sql, params) => tx.run(sql, params),
              savepoint: (inner) => {
                savepoints += 1;
                return tx.savepoint(inner);
              },
            }),
          options,
        )) as typeof driver.transaction;
      try {
        await Promise.all([
          store.write((s) => s.recordIntent('b1', 2, 'create')),
          store.write((s) => s.recordIntent('b1', 3, 'create')),
        ]);
        expect(savepoints).toBe(0);
        const changes = (await store.getBatch('b1'))!.changes;
        // The failing write comes first: the group is rolled back whole, then run again with a savepoint each.
        const bad = store.write(async (s) => {
          await s.recordIntent('b1', 4, 'create');
          await s.transitionRow('b1', 4, 'duplicate');
        });
        const good = store.write((s) => s.recordRowFailed('b1', 2, 'create', { code: 'X', message: 'x' }));
        const alsoGood = store.write((s) => s.recordRowFailed('b1', 3, 'create', { code: 'X', message: 'x' }));
        await expect(bad).rejects.toThrow(IllegalTransitionError);
        await expect(good).resolves.toBeUndefined();
        await expect(alsoGood).resolves.toBeUndefined();
        expect(savepoints).toBe(3);
        expect((await store.getRow('b1', 2))!.state).toBe('failed');
        expect((await store.getRow('b1', 3))!.state).toBe('failed');
        expect((await store.getRow('b1', 4))!.state).toBe('pending');
        expect((await store.getSteps('b1', 4)).size).toBe(0);
        // Two rows reached a state the answer shows, once each: the rolled-back first run left no bump behind.
        expect((await store.getBatch('b1'))!.changes).toBe(changes + 2);
      } finally {
        driver.transaction = transaction;
      }
    });

    it('writes are durable when write() resolves (seen from another connection)', async () => {
      await newBatch('b1');
      await store.ingest('b1', [validRow(2, 'k1')]);
      await store.write((s) => s.recordIntent('b1', 2, 'create'));
      const other = await engine.reopen(store);
      try {
        expect(await other.driver.get('SELECT state FROM steps WHERE line = 2')).toEqual({ state: 'intent' });
      } finally {
        await other.close();
      }
    });

    it('a statement on the store issued while a group is open waits for it, and is not undone with it', async () => {
      await newBatch('b1');
      await store.ingest('b1', [validRow(2, 'k1'), validRow(3, 'k2')]);
      let outside: Promise<void> | undefined;
      const group = store.write(async (s) => {
        await s.recordIntent('b1', 2, 'create');
        // Issued from elsewhere (not awaited here: a write's fn awaits only its view): queued behind the group.
        outside = store.recordIntent('b1', 3, 'create');
        await s.transitionRow('b1', 2, 'duplicate'); // illegal: this write's savepoint is rolled back
      });
      await expect(group).rejects.toThrow(IllegalTransitionError);
      await outside;
      expect((await store.getRow('b1', 2))!.state).toBe('pending');
      expect((await store.getRow('b1', 3))!.state).toBe('in_flight');
    });

    it('a transaction on a view is a savepoint: a failing method undoes only its own writes', async () => {
      await newBatch('b1');
      await store.transaction(async (s) => {
        await s.ingest('b1', [validRow(2, 'k1')]);
        await s.finishIngest('b1', 'send-valid');
        // ingest refuses a batch that is no longer ingesting: its savepoint alone is rolled back
        await expect(s.ingest('b1', [validRow(3, 'k2')])).rejects.toMatchObject({ code: 'STORE_BATCH_INGESTED' });
      });
      expect(await store.countRows('b1')).toMatchObject({ pending: 1 });
      expect((await store.getBatch('b1'))!.status).toBe('ready');
    });

    it('a method called on the store itself is one transaction: a step is not left behind by a refused row move', async () => {
      await newBatch('b1');
      await store.ingest('b1', [validRow(2, 'k1')]);
      await newBatch('b2');
      await store.ingest('b2', [validRow(2, 'k1')]); // same natural key: duplicate of b1 line 2
      expect((await store.getRow('b2', 2))!.state).toBe('duplicate');
      // The step may move (none -> failed) but the row may not (duplicate is final): nothing of it stays.
      await expect(store.recordRowFailed('b2', 2, 'create', { code: 'X', message: 'x' })).rejects.toThrow(
        IllegalTransitionError,
      );
      expect((await store.getSteps('b2', 2)).size).toBe(0);
    });
  });
});

describe.each(engines)(
  'concurrent transactions on $name (PostgreSQL runs them side by side, READ COMMITTED)',
  (engine) => {
    skipIfAsked(engine);
    beforeEach(async () => {
      store = await engine.open();
    });
    afterEach(async () => {
      await store.close();
    });

    /** Runs `first` in a transaction held open until `second` has been issued (and has had time to run its reads). */
    async function overlapping(
      first: (s: Store) => Promise<void>,
      second: () => Promise<unknown>,
    ): Promise<[PromiseSettledResult<void>, PromiseSettledResult<unknown>]> {
      let written!: () => void;
      const wrote = new Promise<void>((r) => {
        written = r;
      });
      let release!: () => void;
      const gate = new Promise<void>((r) => {
        release = r;
      });
      const a = store.transaction(async (s) => {
        await first(s);
        written();
        await gate;
      });
      await wrote;
      const b = second();
      setTimeout(release, 300);
      return Promise.all([
        a.then(
          (value) => ({ status: 'fulfilled', value }) as const,
          (reason: unknown) => ({ status: 'rejected', reason }) as const,
        ),
        b.then(
          (value) => ({ status: 'fulfilled', value }) as const,
          (reason: unknown) => ({ status: 'rejected', reason }) as const,
        ),
      ]);
    }

    it('a row move reads the state the other transaction committed: no move past the state machine', async () => {
      await newBatch('b1');
      await store.ingest('b1', [validRow(2, 'k1')]);
      await store.finishIngest('b1', 'send-valid');
      await store.recordIntent('b1', 2, 'create');
      const [a, b] = await overlapping(
        (s) => s.recordStepDone('b1', 2, 'create', { ourNumber: '1' }, true),
        () => store.recordRowFailed('b1', 2, 'create', { code: 'SERVICE_VALIDATION', message: 'no' }),
      );
      expect(a.status).toBe('fulfilled');
      expect(b).toMatchObject({ status: 'rejected', reason: expect.any(IllegalTransitionError) });
      expect((await store.getRow('b1', 2))!.state).toBe('succeeded');
      // Not `failed`: the step is done, and as a plain first-attempt step of a succeeded row it is not kept.
      expect((await store.getSteps('b1', 2)).get('create')).toBeUndefined();
    });

    it('a row moved by two transactions at once: the second sees the move of the first, and a final row stays final', async () => {
      await newBatch('b1');
      await store.ingest('b1', [validRow(2, 'k1')]);
      await store.finishIngest('b1', 'send-valid');
      await store.recordIntent('b1', 2, 'create');
      const [a, b] = await overlapping(
        (s) => s.transitionRow('b1', 2, 'succeeded', { outputs: { ourNumber: '1' } }),
        () => store.recordRowUncertain('b1', 2, 'create', { code: 'TIMEOUT', message: 'no answer' }),
      );
      expect(a.status).toBe('fulfilled');
      expect(b).toMatchObject({ status: 'rejected', reason: expect.any(IllegalTransitionError) });
      expect(await store.getRow('b1', 2)).toMatchObject({ state: 'succeeded', errorCode: null });
    });

    it('two files ingested at once with the same natural key: the second row is a duplicate, never a second owner', async () => {
      await newBatch('b1', 'charges', 'first.csv');
      await newBatch('b2', 'charges', 'second.csv');
      const [a, b] = await overlapping(
        (s) => s.ingest('b1', [validRow(2, 'same')]).then(() => undefined),
        () => store.ingest('b2', [validRow(2, 'same')]),
      );
      expect([a.status, b.status]).toEqual(['fulfilled', 'fulfilled']);
      expect((await store.getRow('b1', 2))!.state).toBe('pending');
      expect(await store.getRow('b2', 2)).toMatchObject({
        state: 'duplicate',
        duplicateOf: { batchId: 'b1', line: 2 },
      });
      expect(
        await store.driver.all(
          'SELECT b.id AS batch_id, k.line FROM natural_keys k JOIN batches b ON b.batch_no = k.batch_no WHERE k.key_digest = ?',
          [naturalKeyDigest('charges', 'same')],
        ),
      ).toEqual([{ batch_id: 'b1', line: 2 }]);
    });

    it("an owner moving while a duplicate of it is ingested: the duplicate's file sees the move, or is marked stale by it", async () => {
      await newBatch('b1', 'charges', 'first.csv');
      await store.ingest('b1', [validRow(2, 'same')]);
      await store.finishIngest('b1', 'send-valid');
      await store.recordIntent('b1', 2, 'create');
      await newBatch('b2', 'charges', 'second.csv');
      // What an answer of b2 written the moment its rows are stored would read: its `changes` and the owner's state.
      let seen: { changes: number; owner: string } | undefined;
      const [a, b] = await overlapping(
        (s) => s.recordStepDone('b1', 2, 'create', { ourNumber: '1' }, true),
        async () => {
          await store.ingest('b2', [validRow(2, 'same')]);
          seen = { changes: (await store.getBatch('b2'))!.changes, owner: (await store.getRow('b1', 2))!.state };
        },
      );
      expect([a.status, b.status]).toEqual(['fulfilled', 'fulfilled']);
      expect(await store.getRow('b2', 2)).toMatchObject({
        state: 'duplicate',
        duplicateOf: { batchId: 'b1', line: 2 },
      });
      expect((await store.getRow('b1', 2))!.state).toBe('succeeded');
      // Either the duplicate was stored after the owner's move (an answer then shows it), or the move bumped b2's
      // changes, so that an answer written before it is stale and written again. Never an answer that stays behind.
      const now = (await store.getBatch('b2'))!.changes;
      expect(seen!.owner === 'succeeded' || now > seen!.changes, JSON.stringify({ seen, now })).toBe(true);
    });

    it('a person settles an uncertain row once: a second settlement at the same moment is refused, nothing doubled', async () => {
      await newBatch('b1');
      await store.ingest('b1', [validRow(2, 'k1')]);
      await store.finishIngest('b1', 'send-valid');
      await store.recordIntent('b1', 2, 'create');
      await store.recordRowUncertain('b1', 2, 'create', { code: 'TIMEOUT', message: 'no answer' });
      const [a, b] = await overlapping(
        (s) => s.resolveRow('b1', 2, { as: 'succeeded', by: 'ana', note: 'paid at the bank' }).then(() => undefined),
        () => store.resolveRow('b1', 2, { as: 'failed', by: 'rui', note: 'not in the statement' }),
      );
      expect(a.status).toBe('fulfilled');
      expect(b).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ code: 'ROW_NOT_UNCERTAIN' }) });
      expect((await store.getRow('b1', 2))!.state).toBe('succeeded');
      expect(await store.resolutions('b1')).toHaveLength(1);
    });
  },
);
