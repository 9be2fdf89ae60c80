/**
 * Row storage on PostgreSQL (issue 13 §3, migration 012): the same as on SQLite (test/store.test.ts, "row storage"):
 * a record its cells give again is not stored and is read back the same; a store written before 012 reads, and its
 * succeeded rows' step outputs held whole in the row's outputs are dropped (jsonb containment there, json_each here).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Dialect } from '../src/batches/kind.js';
import { openPgDriver, type PgDriver } from '../src/store/pg-driver.js';
import { openStoreWith } from '../src/store/store.js';
import { skipPostgres, type TestCluster, useTestCluster } from './helpers/postgres.js';

const DIALECT: Dialect = { delimiter: ',', decimalMark: '.', encoding: 'utf8', bom: false };

describe.skipIf(skipPostgres)('row storage on PostgreSQL (migration 012)', () => {
  const useCluster = useTestCluster();
  let cluster: TestCluster;
  let url: string;
  let dir: string;
  const drivers: PgDriver[] = [];
  const open = (migrationsDir?: string) => {
    const d = openPgDriver({ url, password: cluster.password, ...(migrationsDir ? { migrationsDir } : {}) });
    drivers.push(d);
    return d;
  };

  beforeEach(async () => {
    cluster = useCluster();
    ({ url } = await cluster.createDatabase());
    dir = mkdtempSync(path.join(tmpdir(), 'remessa-rowpg-'));
  });
  afterEach(async () => {
    for (const d of drivers.splice(0)) await d.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores no record its cells give again, and reads it back the same', async () => {
    const store = await openStoreWith(open(), 'pg');
    await store.createBatch({
      id: 'b1',
      kind: 'bill-payments',
      fileName: 'b1.csv',
      dialect: DIALECT,
      header: ['barCode', 'note', 'amount'],
      columns: ['barCode', null, 'amount'],
    });
    const base = { valid: true as const, parsed: {}, idempotencyKey: 'k', amountCents: 100 };
    await store.ingest('b1', [
      { ...base, line: 2, naturalKey: 'n2', record: { barCode: '341', amount: '1.00' }, cells: [' 341', 'x', '1.00'] },
      { ...base, line: 3, naturalKey: 'n3', record: { barCode: '341', payAt: 'x' }, cells: ['341', '', ''] },
    ]);
    expect(await store.sql.all('SELECT line, record FROM rows ORDER BY line')).toEqual([
      { line: 2, record: '' },
      { line: 3, record: JSON.stringify({ barCode: '341', payAt: 'x' }) },
    ]);
    expect((await store.rowsAfter('b1', 0, 10)).map((r) => r.record)).toEqual([
      { barCode: '341', amount: '1.00' },
      { barCode: '341', payAt: 'x' },
    ]);
    await store.recordIntent('b1', 2, 'lookup');
    await store.recordStepDone('b1', 2, 'lookup', { a: 1, b: 'x' }, false);
    expect((await store.getSteps('b1', 2)).get('lookup')!.output).toEqual({ a: 1, b: 'x' });
    await store.recordIntent('b1', 2, 'pay');
    await store.recordStepDone('b1', 2, 'pay', { c: true }, true);
    const steps = await store.getSteps('b1', 2);
    // Both done at their first attempt and held whole by the row's outputs: not kept (migration 015).
    expect([...steps.keys()]).toEqual([]);
    expect((await store.getRow('b1', 2))!).toMatchObject({ state: 'succeeded', outputs: { a: 1, b: 'x', c: true } });
  });

  it('reads a store written before 012 and drops the step outputs its succeeded rows hold whole', async () => {
    const old = path.join(dir, 'migrations-011');
    mkdirSync(old);
    const all = path.join(import.meta.dirname, '..', 'src', 'store', 'migrations-pg');
    for (const f of readdirSync(all).filter((f) => f < '012')) {
      writeFileSync(path.join(old, f), readFileSync(path.join(all, f)));
    }
    const before = open(old);
    await before.migrate();
    await before.run(
      `INSERT INTO batches (id, kind, file_name, dialect, header, status, created_at)
       VALUES ('b1', 'charges', 'b1.csv', ?, '["correlationId"]', 'running', 'x')`,
      [JSON.stringify(DIALECT)],
    );
    const row = `INSERT INTO rows (batch_id, line, record, state, outputs, updated_at) VALUES ('b1', ?, ?, ?, ?, 'x')`;
    await before.run(row, [2, '{"correlationId":"k1"}', 'succeeded', '{"n":"1","m":2,"ok":true,"none":null,"p":"a"}']);
    await before.run(row, [3, '{"correlationId":"k2"}', 'succeeded', '{"n":"2","s":"PRINTED"}']);
    await before.run(row, [4, '{"correlationId":"k3"}', 'in_flight', '{"n":"3"}']);
    const step = `INSERT INTO steps (batch_id, line, step, state, attempts, output, updated_at)
      VALUES ('b1', ?, ?, 'done', 1, ?, 'x')`;
    await before.run(step, [2, 'create', '{"n":"1","m":2,"ok":true,"none":null}']);
    await before.run(step, [2, 'pdf', '{"p":"a"}']);
    await before.run(step, [3, 'create', '{"n":"2","s":"REGISTERED"}']);
    await before.run(step, [3, 'pdf', '{"s":"PRINTED"}']);
    await before.run(step, [4, 'create', '{"n":"3"}']);

    const store = await openStoreWith(open(), 'pg');
    expect(await store.sql.all('SELECT line, step, output FROM steps ORDER BY line, step')).toEqual([
      { line: 2, step: 'create', output: null },
      { line: 2, step: 'pdf', output: null },
      { line: 3, step: 'create', output: '{"n":"2","s":"REGISTERED"}' },
      { line: 3, step: 'pdf', output: null },
      { line: 4, step: 'create', output: '{"n":"3"}' },
    ]);
    expect((await store.rowsAfter('b1', 0, 10)).map((r) => r.record)).toEqual([
      { correlationId: 'k1' },
      { correlationId: 'k2' },
      { correlationId: 'k3' },
    ]);
  });
});
