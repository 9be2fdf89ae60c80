/**
 * The store's side of `remessa resolve` and `remessa status`: a person settles only an `uncertain` row, the record of
 * who, when and why is kept with the move, a failed settlement gives the natural key up, and batches are found by id,
 * prefix or file name.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Dialect } from '../src/batches/kind.js';
import { IdempotencyKeys, type IngestRow, openStore, RESOLVED_AS_FAILED, type Store } from '../src/store/index.js';

const DIALECT: Dialect = { delimiter: ',', decimalMark: '.', encoding: 'utf8', bom: false };
const T0 = new Date('2026-11-23T10:00:00.000Z');

let dir: string;
let store: Store;
let clock: Date;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'remessa-resolutions-'));
  clock = T0;
  store = openStore(path.join(dir, 'state.sqlite'), { now: () => clock });
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

function row(line: number, naturalKey: string): IngestRow {
  return {
    line,
    record: { correlationId: naturalKey, amount: '10.00' },
    valid: true,
    parsed: { correlationId: naturalKey },
    naturalKey,
    idempotencyKey: new IdempotencyKeys('123456').forRow('charges', naturalKey),
    amountCents: 1000,
  };
}

/** A done batch whose line 2 succeeded and line 3 was left uncertain by an unknown step. */
function batchWithUncertainRow(id: string, fileName: string): void {
  store.createBatch({ id, kind: 'charges', fileName, dialect: DIALECT, header: ['correlationId', 'amount'] });
  store.ingest(id, [row(2, `${id}-A`), row(3, `${id}-B`)]);
  store.finishIngest(id, 'send-valid');
  store.markBatchRunning(id);
  store.recordIntent(id, 2, 'create');
  store.recordStepDone(id, 2, 'create', { id: 'ch_1' }, true);
  store.recordIntent(id, 3, 'create');
  store.recordStepUnknown(id, 3, 'create', { code: 'HTTP_503', message: 'no answer' });
  store.recordRowUncertain(id, 3, 'create', { code: 'UNKNOWN_OUTCOME', message: 'retries spent' });
  store.markBatchDone(id);
}

describe('resolveRow', () => {
  it('settles an uncertain row as failed: recorded with who, when, why and what was unknown; the key is free again', () => {
    batchWithUncertainRow('a'.repeat(64), 'charges.csv');
    const id = 'a'.repeat(64);
    clock = new Date('2026-11-23T11:00:00.000Z');
    const resolution = store.resolveRow(id, 3, { as: 'failed', by: 'Ana', note: 'not in the bank statement' });
    expect(resolution).toEqual({
      batchId: id,
      line: 3,
      from: 'uncertain',
      to: 'failed',
      step: 'create',
      error: { code: 'UNKNOWN_OUTCOME', message: 'retries spent' },
      by: 'Ana',
      at: '2026-11-23T11:00:00.000Z',
      note: 'not in the bank statement',
    });
    expect(store.getResolution(id, 3)).toEqual(resolution);
    expect(store.resolutions()).toEqual([resolution]);
    const settled = store.getRow(id, 3)!;
    expect(settled.state).toBe('failed');
    expect(settled.errorCode).toBe(RESOLVED_AS_FAILED);
    expect(settled.errorMessage).toBe(
      'Settled as failed by Ana at 2026-11-23T11:00:00.000Z: not in the bank statement',
    );
    // The counts kept with the finished batch follow.
    expect(store.getBatch(id)!.counts).toMatchObject({ succeeded: 1, failed: 1, uncertain: 0 });
    // Failed: a later file bringing the same row sends it (rule 4), it is no duplicate.
    const later = 'b'.repeat(64);
    store.createBatch({ id: later, kind: 'charges', fileName: 'again.csv', dialect: DIALECT, header: ['x'] });
    store.ingest(later, [row(2, `${id}-B`), row(3, `${id}-A`)]);
    expect(store.getRow(later, 2)!.state).toBe('pending');
    expect(store.getRow(later, 3)!.state).toBe('duplicate');
  });

  it('settled as succeeded, the row keeps its key and its error is cleared', () => {
    const id = 'c'.repeat(64);
    batchWithUncertainRow(id, 'charges.csv');
    store.resolveRow(id, 3, { as: 'succeeded', by: 'Bruno', note: 'paid, see statement line 12' });
    const settled = store.getRow(id, 3)!;
    expect(settled.state).toBe('succeeded');
    expect(settled.errorCode).toBeNull();
    expect(store.countUnfinished(id)).toBe(0);
    const later = 'd'.repeat(64);
    store.createBatch({ id: later, kind: 'charges', fileName: 'again.csv', dialect: DIALECT, header: ['x'] });
    store.ingest(later, [row(2, `${id}-B`)]);
    expect(store.getRow(later, 2)!.state).toBe('duplicate');
  });

  it('refuses any row that is not uncertain, changing nothing, and says who settled it before', () => {
    const id = 'e'.repeat(64);
    batchWithUncertainRow(id, 'charges.csv');
    expect(() => store.resolveRow(id, 2, { as: 'failed', by: 'Ana', note: 'x' })).toThrow(
      /Expected an uncertain row, got line 2 of charges\.csv succeeded/,
    );
    expect(store.getRow(id, 2)!.state).toBe('succeeded');
    store.resolveRow(id, 3, { as: 'succeeded', by: 'Ana', note: 'paid' });
    let error: unknown;
    try {
      store.resolveRow(id, 3, { as: 'failed', by: 'Bruno', note: 'changed my mind' });
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'ROW_NOT_UNCERTAIN' });
    expect((error as Error).message).toMatch(/succeeded \(settled by Ana at 2026-11-23T10:00:00\.000Z\)/);
    expect(store.resolutions()).toHaveLength(1);
    expect(() => store.resolveRow(id, 9, { as: 'failed', by: 'Ana', note: 'x' })).toThrow(/has no data line 9/);
  });
});

describe('findBatches and countFinishedSince', () => {
  it('finds a batch by id, unique prefix or file name', () => {
    const a = `abcd${'1'.repeat(60)}`;
    const b = `abce${'2'.repeat(60)}`;
    batchWithUncertainRow(a, 'same.csv');
    clock = new Date('2026-11-23T12:00:00.000Z');
    batchWithUncertainRow(b, 'same.csv');
    expect(store.findBatches(a).map((x) => x.id)).toEqual([a]);
    expect(store.findBatches('abcd').map((x) => x.id)).toEqual([a]);
    expect(store.findBatches('ABCE2').map((x) => x.id)).toEqual([b]);
    expect(store.findBatches('abc').map((x) => x.id)).toEqual([]); // too short to be a prefix
    expect(store.findBatches('same.csv').map((x) => x.id)).toEqual([b, a]); // newest first
    expect(store.findBatches('other.csv')).toEqual([]);
  });

  it('counts the rows finished since an instant', () => {
    const id = 'f'.repeat(64);
    batchWithUncertainRow(id, 'charges.csv'); // both rows finished at T0
    expect(store.countFinishedSince(id, T0.toISOString())).toBe(2);
    expect(store.countFinishedSince(id, '2026-11-23T10:00:00.001Z')).toBe(0);
  });
});
