/**
 * A row's own `idempotencyKey` column is one operation for good: the bank knows a key once a request carried it, and
 * a second operation under it would be refused, or (a bank that replays a key's first answer without comparing the
 * request) answered with the first one's outcome: a bill shown paid that nobody paid. `validate` said so of a file's
 * own rows; the run sent such a row and let the bank decide. Now the run refuses it at ingestion, in one file and
 * across files (rule 4 of src/store/rows.ts), on both stores, against the sandbox in process.
 */
import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { benchBill, centsText } from '../bench/generate.js';
import { billPaymentsKind } from '../src/batches/bill-payments.js';
import type { BatchKind } from '../src/batches/kind.js';
import { engineFilePerTest } from './helpers/engine-file.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();
const ef = engineFilePerTest('key-reuse');
const kind = billPaymentsKind as unknown as BatchKind<never>;

/** A bill-payments file of `rows`: bill number and its idempotencyKey cell. */
function file(rows: Array<[bill: number, key: string]>): string {
  const lines = ['barCode,amount,idempotencyKey'];
  for (const [i, key] of rows) {
    const bill = benchBill(1_000 + i);
    lines.push(`${bill.barCode},${centsText(bill.amountCents)},${key}`);
  }
  return `${lines.join('\n')}\n`;
}

describe.each(engines)('a row whose own idempotency key another operation carries ($name)', (engine) => {
  skipIfAsked(engine);
  beforeEach(async () => {
    ef.useStore(await engine.open());
  });

  it('is refused at ingestion, in the same file and in a later one; nothing is sent under it twice', async () => {
    const [k1, k2] = [randomUUID(), randomUUID()];
    // Line 3 carries line 2's key for another bill: refused. Line 4 has a key of its own: paid.
    const first = await ef.runFile(
      kind,
      file([
        [1, k1],
        [2, k1],
        [3, k2],
      ]),
      { policy: 'send-valid' },
    );
    const rows = await Promise.all([2, 3, 4].map((line) => ef.store.getRow(first.batchId, line)));
    expect(rows.map((r) => r?.state)).toEqual(['succeeded', 'rejected', 'succeeded']);
    expect(rows[1]).toMatchObject({ errorCode: 'IDEMPOTENCY_KEY_REUSED' });
    expect(rows[1]!.errorMessage).toContain(`${k1} is already the one of line 2 of this file`);

    // A later file: another bill under k2 is refused naming the first file; line 2's row again is its duplicate.
    const second = await ef.runFile(
      kind,
      file([
        [4, k2],
        [1, k1],
      ]),
      { policy: 'send-valid' },
    );
    const later = await Promise.all([2, 3].map((line) => ef.store.getRow(second.batchId, line)));
    expect(later.map((r) => r?.state)).toEqual(['rejected', 'duplicate']);
    expect(later[0]).toMatchObject({ errorCode: 'IDEMPOTENCY_KEY_REUSED' });
    expect(later[0]!.errorMessage).toContain('line 4 of bill-payments.csv');

    const paid = ef.sandbox.ctx.ledger.counts({ kind: 'bill_paid' });
    expect(paid.map((p) => [p.key, p.count]).sort()).toEqual(
      [
        [k1, 1],
        [k2, 1],
      ].sort(),
    );
  });

  it('is free again once the row that held it was refused before anything was sent', async () => {
    const k = randomUUID();
    // All-or-nothing: the invalid line 3 makes line 2 rejected too; nothing reached the bank under k.
    const first = await ef.runFile(kind, `${file([[5, k]])}not-a-bill,1.00,${randomUUID()}\n`);
    expect((await ef.store.getRow(first.batchId, 2))?.state).toBe('rejected');
    // Another bill under k, in a later file, is sent.
    const second = await ef.runFile(kind, file([[6, k]]));
    expect(second.row.state).toBe('succeeded');
    expect(ef.sandbox.ctx.ledger.counts({ kind: 'bill_paid' })).toEqual([{ kind: 'bill_paid', key: k, count: 1 }]);
  });
});
