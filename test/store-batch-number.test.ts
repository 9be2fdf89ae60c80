/**
 * Migration 021 (the batch by a number in the per-row tables, issue 13 §3): a store at 020 holding batches with rows
 * in every state, steps in every state, natural keys, a duplicate of another batch's row and a person's settlement,
 * upgraded on both engines: every table's rows copied exactly (the batch's id now its number), everything read back the
 * same through the store, batches numbered in created order, and a batch created after it takes a fresh number.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Dialect } from '../src/batches/kind.js';
import type { Store } from '../src/store/index.js';
import { naturalKeyDigest } from '../src/store/keys.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const DIALECT: Dialect = { delimiter: ',', decimalMark: '.', encoding: 'utf8', bom: false };
const HEADER = ['correlationId', 'amount'];
const AT = '2026-01-01T00:00:00.000Z';

/** The rows of batch b1 as 020 stored them: one per row state, with holders, outputs and errors. */
const B1_ROWS: Array<{
  line: number;
  state: string;
  step: string | null;
  error: string | null;
  holder: string | null;
}> = [
  { line: 2, state: 'pending', step: null, error: null, holder: null },
  { line: 3, state: 'in_flight', step: 'create', error: null, holder: 'd1' },
  { line: 4, state: 'succeeded', step: null, error: null, holder: 'd1' },
  { line: 5, state: 'failed', step: 'create', error: 'BANK_REFUSED', holder: 'd1' },
  { line: 6, state: 'rejected', step: null, error: 'CELL_INVALID', holder: null },
  { line: 7, state: 'uncertain', step: 'create', error: 'UND_ERR_SOCKET', holder: 'd2' },
  { line: 8, state: 'waiting', step: 'create', error: 'BANK_UNREACHABLE', holder: null },
  { line: 9, state: 'succeeded', step: null, error: null, holder: null },
];

/** Steps of b1's rows, one per step state. */
const B1_STEPS: Array<[line: number, step: string, state: string, attempts: number, output: string | null]> = [
  [3, 'lookup', 'done', 1, '{"ourNumber":"3"}'],
  [3, 'create', 'intent', 1, null],
  [4, 'create', 'done', 2, '{"ourNumber":"4"}'],
  [5, 'create', 'failed', 1, null],
  [7, 'create', 'unknown', 3, null],
  [8, 'create', 'not_sent', 1, null],
];

/** Every row of `table` as its columns hold them, its batch named by id (`batch` SQL: the batch's id of row `t`). */
async function tableRows(store: Store, sql: string): Promise<Array<Record<string, unknown>>> {
  const rows = await store.sql.all<Record<string, unknown>>(sql);
  return rows.map((r) => {
    const { batch_no: _no, ...rest } = r;
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(rest).sort()) {
      const v = rest[k];
      out[k] = v instanceof Uint8Array ? Buffer.from(v).toString('hex') : typeof v === 'bigint' ? Number(v) : v;
    }
    return out;
  });
}

describe.each(storeEngines())('upgrade to 021 (the batch by a number) on $name', (engine) => {
  skipIfAsked(engine);
  const stores: Store[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
  });

  it('copies every row, step, key and settlement exactly, reads them back the same, and numbers new batches', async () => {
    const before = await engine.openBefore(21);
    stores.push(before);
    // b2 is stored first but was created after b1: numbers go by created order.
    for (const [id, file, created, status] of [
      ['20260102T000000Z-bbbbbbbb', 'second.csv', '2026-01-02T00:00:00.000Z', 'done'],
      ['20260101T000000Z-aaaaaaaa', 'first.csv', '2026-01-01T00:00:00.000Z', 'running'],
    ] as const) {
      await before.sql.run(
        `INSERT INTO batches (id, kind, file_name, dialect, header, status, created_at, row_count)
         VALUES (?, 'charges', ?, ?, ?, ?, ?, 8)`,
        [id, file, JSON.stringify(DIALECT), JSON.stringify(HEADER), status, created],
      );
      await before.sql.run(
        `INSERT INTO intakes (id, batch_id, folder, file_name, source, content_sha256, taken_at, answer_name)
         VALUES (?, ?, 'charges', ?, ?, 'x', ?, ?)`,
        [id, id, file, file, created, `${file.slice(0, -4)}.${id}`],
      );
    }
    const b1 = '20260101T000000Z-aaaaaaaa';
    const b2 = '20260102T000000Z-bbbbbbbb';
    for (const r of B1_ROWS) {
      await before.sql.run(
        `INSERT INTO rows (batch_id, line, natural_key, idempotency_key, record, cells, parsed, state, current_step,
           error_code, error_message, outputs, amount_cents, updated_at, holder)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          b1,
          r.line,
          `key-${r.line}`,
          `idem-${r.line}`,
          JSON.stringify({ correlationId: `key-${r.line}`, amount: `${r.line}.00` }),
          JSON.stringify([`key-${r.line}`, `${r.line}.00`]),
          JSON.stringify({ correlationId: `key-${r.line}`, amountCents: r.line * 100 }),
          r.state,
          r.step,
          r.error,
          r.error === null ? null : `why ${r.line}`,
          r.state === 'succeeded' ? JSON.stringify({ ourNumber: String(r.line) }) : null,
          r.line * 100,
          AT,
          r.holder,
        ],
      );
      if (['pending', 'in_flight', 'succeeded', 'uncertain', 'waiting'].includes(r.state)) {
        await before.sql.run('INSERT INTO natural_keys (key_digest, batch_id, line) VALUES (?, ?, ?)', [
          naturalKeyDigest('charges', `key-${r.line}`),
          b1,
          r.line,
        ]);
      }
    }
    for (const [line, step, state, attempts, output] of B1_STEPS) {
      await before.sql.run(
        `INSERT INTO steps (batch_id, line, step, state, attempts, output, error_code, error_message, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [b1, line, step, state, attempts, output, state === 'failed' ? 'BANK_REFUSED' : null, null, AT],
      );
    }
    // b2: a duplicate of b1's succeeded line 4, and one of its own (b1's line 7, uncertain).
    for (const [line, ofLine] of [
      [2, 4],
      [3, 7],
    ] as const) {
      await before.sql.run(
        `INSERT INTO rows (batch_id, line, natural_key, record, state, error_code, error_message, amount_cents,
           duplicate_of_batch, duplicate_of_line, updated_at)
         VALUES (?, ?, ?, '{}', 'duplicate', 'DUPLICATE_NATURAL_KEY', 'dup', ?, ?, ?, ?)`,
        [b2, line, `key-${ofLine}`, ofLine * 100, b1, ofLine, AT],
      );
    }
    await before.sql.run(
      `INSERT INTO resolutions (batch_id, line, from_state, to_state, step, error_code, error_message, resolved_by,
         resolved_at, note)
       VALUES (?, 5, 'uncertain', 'failed', 'create', 'UND_ERR_SOCKET', 'lost', 'maria', ?, 'checked with the bank')`,
      [b1, AT],
    );
    const oldRows = await tableRows(before, 'SELECT * FROM rows ORDER BY batch_id, line');
    const oldSteps = await tableRows(before, 'SELECT * FROM steps ORDER BY batch_id, line, step');
    const oldKeys = await tableRows(before, 'SELECT * FROM natural_keys ORDER BY batch_id, line');
    const oldSettled = await tableRows(before, 'SELECT * FROM resolutions ORDER BY batch_id, line');
    const readBack = async (s: Store) => ({
      rows: await Promise.all(B1_ROWS.map((r) => s.getRow(b1, r.line))),
      steps: await Promise.all([3, 4, 5, 7, 8].map(async (l) => [...(await s.getSteps(b1, l))])),
      counts: [await s.countRows(b1), await s.countRows(b2)],
      sums: await s.sumAmounts(b1),
      unfinished: await s.countUnfinished(b1),
    });
    await before.close();
    stores.splice(0);

    const store = await engine.reopen(before);
    stores.push(store);
    // The tables' contents, as they were (the batch's id read through its number).
    const byId = (table: string, order: string) =>
      tableRows(
        store,
        `SELECT b.id AS batch_id, t.* FROM ${table} t JOIN batches b ON b.batch_no = t.batch_no ORDER BY b.id, ${order}`,
      );
    expect(await byId('rows', 't.line')).toEqual(oldRows);
    expect(await byId('steps', 't.line, t.step')).toEqual(oldSteps);
    expect(await byId('natural_keys', 't.line')).toEqual(oldKeys);
    expect(await byId('resolutions', 't.line')).toEqual(oldSettled);
    // Numbered in created order.
    expect(await store.sql.all('SELECT id, batch_no FROM batches ORDER BY batch_no')).toEqual([
      { id: b1, batch_no: 1 },
      { id: b2, batch_no: 2 },
    ]);

    // Through the store: as a store that never was at 020 reads them.
    const read = await readBack(store);
    expect(read.rows.map((r) => [r?.batchId, r?.line, r?.state, r?.naturalKey, r?.idempotencyKey])).toEqual(
      B1_ROWS.map((r) => [b1, r.line, r.state, `key-${r.line}`, `idem-${r.line}`]),
    );
    expect(read.rows[2]).toMatchObject({ outputs: { ourNumber: '4' }, amountCents: 400 });
    expect(read.rows[3]).toMatchObject({ errorCode: 'BANK_REFUSED', errorMessage: 'why 5', currentStep: 'create' });
    expect(read.steps.map((s) => s.map(([name, st]) => [name, st.state, st.attempts]))).toEqual([
      [
        ['create', 'intent', 1],
        ['lookup', 'done', 1],
      ],
      [['create', 'done', 2]],
      [['create', 'failed', 1]],
      [['create', 'unknown', 3]],
      [['create', 'not_sent', 1]],
    ]);
    expect(read.counts[0]).toMatchObject({
      pending: 1,
      in_flight: 1,
      succeeded: 2,
      failed: 1,
      rejected: 1,
      uncertain: 1,
      waiting: 1,
    });
    expect(read.counts[1]).toMatchObject({ duplicate: 2 });
    expect(read.sums).toMatchObject({ succeeded: 1300, pending: 200 });
    expect(read.unfinished).toBe(4);
    // The duplicates name their owners' batch and show its state and outputs.
    const dups = await store.resultRowsAfter(b2, 0, 10);
    expect(dups.map((r) => [r.line, r.state, r.duplicateOf, r.owner?.state, r.owner?.fileName])).toEqual([
      [2, 'duplicate', { batchId: b1, line: 4 }, 'succeeded', 'first.csv'],
      [3, 'duplicate', { batchId: b1, line: 7 }, 'uncertain', 'first.csv'],
    ]);
    expect(dups[0]!.owner!.outputs).toEqual({ ourNumber: '4' });
    expect(await store.duplicatesNotSucceeded(b2)).toBe(1);
    expect((await store.uncertainRows()).map((r) => [r.batchId, r.line, r.fileName])).toEqual([[b1, 7, 'first.csv']]);
    expect(await store.resolutions()).toEqual([expect.objectContaining({ batchId: b1, line: 5, by: 'maria' })]);
    expect(await store.getResolution(b1, 5)).toMatchObject({ batchId: b1, to: 'failed' });

    // The uncertain owner moves: its batch and the batch holding its duplicate are marked stale.
    const changes = async () => (await store.listBatches()).map((b) => [b.id, b.changes]);
    const was = Object.fromEntries(await changes());
    await store.transitionRow(b1, 7, 'in_flight');
    await store.recordStepDone(b1, 7, 'create', { ourNumber: '7' }, true);
    const now = Object.fromEntries(await changes());
    expect([now[b1] - was[b1], now[b2] - was[b2]]).toEqual([1, 1]);

    // A new batch takes the next number, and its keys meet the old owners: a duplicate of line 4, a failed owner's key
    // taken over.
    await store.createBatch({ id: 'b3', kind: 'charges', fileName: 'third.csv', dialect: DIALECT, header: HEADER });
    expect(await store.sql.get('SELECT batch_no FROM batches WHERE id = ?', ['b3'])).toEqual({ batch_no: 3 });
    const row = (line: number, key: string) => ({
      line,
      record: { correlationId: key },
      valid: true as const,
      parsed: { correlationId: key },
      naturalKey: key,
      idempotencyKey: `new-${line}`,
    });
    await store.ingest('b3', [row(2, 'key-4'), row(3, 'key-5'), row(4, 'key-new')]);
    const third = await store.resultRowsAfter('b3', 0, 10);
    expect(third.map((r) => [r.line, r.state, r.duplicateOf])).toEqual([
      [2, 'duplicate', { batchId: b1, line: 4 }],
      [3, 'pending', null],
      [4, 'pending', null],
    ]);
  });
});
