/**
 * How commands name a batch to a person: batch ids are takings (`20261128T044444Z-3dc83e68`), and every file taken in
 * the same ten minutes shares their first 12 characters. Those 12 were what approve, retry, resolve and the log showed
 * ("contas.csv (20261128T044)"): ambiguous, and an "ambiguous reference" error listed the same 12 for every candidate,
 * so a person could not pick one.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Dialect } from '../src/batches/kind.js';
import { RemessaError } from '../src/errors.js';
import { batchForDecision } from '../src/runner/approval.js';
import { findOneBatch } from '../src/runner/settle.js';
import { shortBatchId } from '../src/store/intakes.js';
import { openStore, type Store } from '../src/store/store.js';

const DIALECT: Dialect = { delimiter: ',', decimalMark: '.', encoding: 'utf8', bom: false };
let dir: string;
let store: Store;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'remessa-refs-'));
  store = await openStore(path.join(dir, 'remessa.sqlite'));
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('naming a batch to a person', () => {
  it('a taking id is shown whole; a legacy SHA-256 id by its first 12 characters', () => {
    expect(shortBatchId('20261128T044444Z-3dc83e68')).toBe('20261128T044444Z-3dc83e68');
    expect(shortBatchId('20261128T044444Z-3dc83e68~2')).toBe('20261128T044444Z-3dc83e68~2');
    expect(shortBatchId('a'.repeat(64))).toBe('a'.repeat(12));
  });

  it('an ambiguous reference lists ids that each name one batch', async () => {
    for (const [id, fileName] of [
      ['20261128T044444Z-3dc83e68', 'contas.csv'],
      ['20261128T044444Z-a137d3eb', 'pix.csv'],
    ] as const) {
      await store.createBatch({ id, kind: 'charges', fileName, dialect: DIALECT, header: ['n'] });
    }
    const err = await findOneBatch(store, '20261128T0444', 'en').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemessaError);
    const message = (err as RemessaError).message;
    expect(message).toContain('20261128T044444Z-3dc83e68 (contas.csv');
    expect(message).toContain('20261128T044444Z-a137d3eb (pix.csv');
  });

  it('approve: a reference naming several files is refused, even when only one of them waits', async () => {
    // "Preferring one that waits" is for one file dropped several times; a prefix of two different files' ids
    // (taken in the same minute) approved the one that waited, which may not be the file the person meant.
    for (const [id, fileName, status] of [
      ['20261128T044444Z-3dc83e68', 'contas.csv', 'done'],
      ['20261128T044444Z-a137d3eb', 'pix.csv', 'awaiting_approval'],
      ['20261128T050000Z-0badcafe', 'pix.csv', 'done'],
    ] as const) {
      await store.createBatch({ id, kind: 'bill-payments', fileName, dialect: DIALECT, header: ['n'] });
      await store.sql.run('UPDATE batches SET status = ? WHERE id = ?', [status, id]);
    }
    const err = await batchForDecision(store, '20261128T044444Z', 'en').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemessaError);
    expect((err as RemessaError).code).toBe('APPROVAL_AMBIGUOUS');
    // The same file dropped twice: its name names the taking that waits.
    expect((await batchForDecision(store, 'pix.csv', 'en')).id).toBe('20261128T044444Z-a137d3eb');
  });
});
