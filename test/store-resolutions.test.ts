/**
 * The store's side of `remessa resolve` and `remessa status`: a person settles only an `uncertain` row, the record of
 * who, when and why is kept with the move, a failed settlement gives the natural key up, and batches are found by id,
 * prefix or file name. On both engines (test/helpers/stores.ts).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Dialect } from '../src/batches/kind.js';
import { IdempotencyKeys, type IngestRow, RESOLVED_AS_FAILED, type Store } from '../src/store/index.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const DIALECT: Dialect = { delimiter: ',', decimalMark: '.', encoding: 'utf8', bom: false };
const T0 = new Date('2026-11-23T10:00:00.000Z');

const engines = storeEngines();

describe.each(engines)('on $name', (engine) => {
  skipIfAsked(engine);
  let store: Store;
  let clock: Date;

  beforeEach(async () => {
    clock = T0;
    store = await engine.open({ now: () => clock });
  });
  afterEach(async () => {
    await store.close();
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
  async function batchWithUncertainRow(id: string, fileName: string): Promise<void> {
    await store.createBatch({ id, kind: 'charges', fileName, dialect: DIALECT, header: ['correlationId', 'amount'] });
    await store.ingest(id, [row(2, `${id}-A`), row(3, `${id}-B`)]);
    await store.finishIngest(id, 'send-valid');
    await store.markBatchRunning(id);
    await store.recordIntent(id, 2, 'create');
    await store.recordStepDone(id, 2, 'create', { id: 'ch_1' }, true);
    await store.recordIntent(id, 3, 'create');
    await store.recordStepUnknown(id, 3, 'create', { code: 'HTTP_503', message: 'no answer' });
    await store.recordRowUncertain(id, 3, 'create', { code: 'UNKNOWN_OUTCOME', message: 'retries spent' });
    await store.markBatchDone(id);
  }

  describe('resolveRow', () => {
    it('settles an uncertain row as failed: recorded with who, when, why and what was unknown; the key is free again', async () => {
      await batchWithUncertainRow('a'.repeat(64), 'charges.csv');
      const id = 'a'.repeat(64);
      clock = new Date('2026-11-23T11:00:00.000Z');
      const resolution = await store.resolveRow(id, 3, { as: 'failed', by: 'Ana', note: 'not in the bank statement' });
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
      expect(await store.getResolution(id, 3)).toEqual(resolution);
      expect(await store.resolutions()).toEqual([resolution]);
      const settled = (await store.getRow(id, 3))!;
      expect(settled.state).toBe('failed');
      expect(settled.errorCode).toBe(RESOLVED_AS_FAILED);
      // The answer's message is in the person's language: Portuguese unless the command says otherwise.
      expect(settled.errorMessage).toBe(
        // Its time as read in Brazil (2026-11-23T11:00:00Z).
        'Dado como falho por Ana em 23/11/2026 08:00:00: not in the bank statement',
      );
      // The counts kept with the finished batch follow.
      expect((await store.getBatch(id))!.counts).toMatchObject({ succeeded: 1, failed: 1, uncertain: 0 });
      // Failed: a later file bringing the same row sends it (rule 4), it is no duplicate.
      const later = 'b'.repeat(64);
      await store.createBatch({ id: later, kind: 'charges', fileName: 'again.csv', dialect: DIALECT, header: ['x'] });
      await store.ingest(later, [row(2, `${id}-B`), row(3, `${id}-A`)]);
      expect((await store.getRow(later, 2))!.state).toBe('pending');
      expect((await store.getRow(later, 3))!.state).toBe('duplicate');
    });

    it("settled as failed in the command's locale: English when asked for", async () => {
      const id = 'f'.repeat(64);
      await batchWithUncertainRow(id, 'charges.csv');
      await store.resolveRow(id, 3, { as: 'failed', by: 'Ana', note: 'not in the statement', locale: 'en' });
      expect((await store.getRow(id, 3))!.errorMessage).toBe(
        'Settled as failed by Ana at 2026-11-23 07:00:00 BRT: not in the statement',
      );
    });

    it('settled as succeeded, the row keeps its key and its error is cleared', async () => {
      const id = 'c'.repeat(64);
      await batchWithUncertainRow(id, 'charges.csv');
      await store.resolveRow(id, 3, { as: 'succeeded', by: 'Bruno', note: 'paid, see statement line 12' });
      const settled = (await store.getRow(id, 3))!;
      expect(settled.state).toBe('succeeded');
      expect(settled.errorCode).toBeNull();
      expect(await store.countUnfinished(id)).toBe(0);
      const later = 'd'.repeat(64);
      await store.createBatch({ id: later, kind: 'charges', fileName: 'again.csv', dialect: DIALECT, header: ['x'] });
      await store.ingest(later, [row(2, `${id}-B`)]);
      expect((await store.getRow(later, 2))!.state).toBe('duplicate');
    });

    it('refuses any row that is not uncertain, changing nothing, and says who settled it before', async () => {
      const id = 'e'.repeat(64);
      await batchWithUncertainRow(id, 'charges.csv');
      await expect(store.resolveRow(id, 2, { as: 'failed', by: 'Ana', note: 'x' })).rejects.toThrow(
        /^Esperava uma linha incerta \(uncertain\), veio a linha 2 de charges\.csv, bem-sucedida \(succeeded\): .*nada foi alterado$/,
      );
      expect((await store.getRow(id, 2))!.state).toBe('succeeded');
      await store.resolveRow(id, 3, { as: 'succeeded', by: 'Ana', note: 'paid' });
      let error: unknown;
      try {
        await store.resolveRow(id, 3, { as: 'failed', by: 'Bruno', note: 'changed my mind', locale: 'en' });
      } catch (e) {
        error = e;
      }
      expect(error).toMatchObject({ code: 'ROW_NOT_UNCERTAIN' });
      expect((error as Error).message).toMatch(
        /^Expected an uncertain row, got line 3 of charges\.csv succeeded \(settled by Ana at 2026-11-23 07:00:00 BRT\)/,
      );
      expect(await store.resolutions()).toHaveLength(1);
      await expect(store.resolveRow(id, 9, { as: 'failed', by: 'Ana', note: 'x' })).rejects.toThrow(
        /não tem a linha de dados 9/,
      );
    });
  });

  describe('resolveRow of a row no request with an effect left', () => {
    it('refuses succeeded (the bank cannot have done it), changing nothing; failed is allowed', async () => {
      const id = 'f'.repeat(64);
      await store.createBatch({ id, kind: 'charges', fileName: 'c.csv', dialect: DIALECT, header: ['x'] });
      await store.ingest(id, [row(2, `${id}-A`), row(3, `${id}-B`)]);
      await store.finishIngest(id, 'send-valid');
      await store.markBatchRunning(id);
      // A read step that got no answer: no step in intent or unknown.
      await store.recordRowUncertain(id, 2, 'lookup', { code: 'SERVICE_SERVER_ERROR', message: 'HTTP 503' });
      await store.recordRowUncertain(id, 3, 'lookup', { code: 'SERVICE_SERVER_ERROR', message: 'HTTP 503' });
      await expect(store.resolveRow(id, 2, { as: 'succeeded', by: 'Ana', note: 'paid' })).rejects.toMatchObject({
        code: 'ROW_NOTHING_SENT',
        message: expect.stringMatching(
          /^Esperava uma linha com um pedido ao banco de resultado desconhecido, veio a linha 2 de c\.csv, incerta na etapa lookup antes de qualquer pedido com efeito: .*nada foi alterado$/,
        ),
      });
      expect((await store.getRow(id, 2))!.state).toBe('uncertain');
      expect(await store.resolutions()).toHaveLength(0);
      await store.resolveRow(id, 3, { as: 'failed', by: 'Ana', note: 'not sent' });
      expect((await store.getRow(id, 3))!.state).toBe('failed');
    });
  });

  describe('findBatches and countFinishedSince', () => {
    it('finds a batch by id, unique prefix or file name', async () => {
      const a = `abcd${'1'.repeat(60)}`;
      const b = `abce${'2'.repeat(60)}`;
      await batchWithUncertainRow(a, 'same.csv');
      clock = new Date('2026-11-23T12:00:00.000Z');
      await batchWithUncertainRow(b, 'same.csv');
      expect((await store.findBatches(a)).map((x) => x.id)).toEqual([a]);
      expect((await store.findBatches('abcd')).map((x) => x.id)).toEqual([a]);
      expect((await store.findBatches('ABCE2')).map((x) => x.id)).toEqual([b]);
      expect((await store.findBatches('abc')).map((x) => x.id)).toEqual([]); // too short to be a prefix
      expect((await store.findBatches('same.csv')).map((x) => x.id)).toEqual([b, a]); // newest first
      expect(await store.findBatches('other.csv')).toEqual([]);
    });

    it('counts the rows finished since an instant', async () => {
      const id = 'f'.repeat(64);
      await batchWithUncertainRow(id, 'charges.csv'); // both rows finished at T0
      expect(await store.countFinishedSince(id, T0.toISOString())).toBe(2);
      expect(await store.countFinishedSince(id, '2026-11-23T10:00:00.001Z')).toBe(0);
    });
  });
});
