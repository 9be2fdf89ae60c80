/**
 * A bank that keeps answering 429 (too many requests) processed nothing. Before, a row gave up after its 429
 * attempts as `uncertain`, sending a person to check by hand a payment that certainly was not made; now it is
 * `waiting` (certainly nothing sent), and the next run sends it (rows.ts, `waiting`). After an attempt of unknown
 * outcome it stays `uncertain` (rule 6). The sandbox runs in process.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { billPaymentsKind } from '../src/batches/bill-payments.js';
import type { BatchKind } from '../src/batches/kind.js';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import { faultsFor } from '../src/sandbox/faults.js';
import { engineFilePerTest } from './helpers/engine-file.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();
const ef = engineFilePerTest('rate-limited');
const PAY = 'POST /baas/api/v1/bill-payments';
const BAR_CODE = buildBankSlipBarCode({
  bankCode: '341',
  dueDate: '2030-12-31',
  amountCents: 4321,
  freeField: '1090000123456789000430000',
});
const FILE = `barCode,amount\n${BAR_CODE},43.21\n`;
const bills = billPaymentsKind as unknown as BatchKind<never>;

describe.each(engines)('a bank that answers only 429 ($name)', (engine) => {
  skipIfAsked(engine);
  beforeEach(async () => {
    ef.useStore(await engine.open());
  });

  it('leaves the row waiting, not uncertain, and the next run pays it once', async () => {
    faultsFor(ef.sandbox.ctx).set([{ route: PAY, rateLimitRate: 1, retryAfterSeconds: 0 }]);
    const first = await ef.runFile(bills, FILE, { locale: 'pt-BR' });
    expect(ef.sandbox.ctx.ledger.counts({ kind: 'bill_paid' })).toEqual([]);
    // Before: uncertain, "Ainda limitado pelo banco (429) depois de 20 tentativas".
    expect(first.row.state).toBe('waiting');
    expect(first.row.errorMessage).toMatch(/^O banco respondeu 429 .* 20 vezes; nada desta linha foi enviado/);
    expect((await ef.store.getSteps(first.row.batchId, 2)).get('pay')).toMatchObject({ state: 'not_sent' });

    faultsFor(ef.sandbox.ctx).clear();
    const again = await ef.runFile(bills, FILE);
    expect(again.row.state).toBe('succeeded');
    expect(ef.sandbox.ctx.ledger.counts({ kind: 'bill_paid' })).toHaveLength(1);
  });

  it('after an attempt of unknown outcome, the 429s that follow leave it uncertain', async () => {
    // The first payment is processed and its answer lost; every resend is then refused with 429.
    faultsFor(ef.sandbox.ctx).set([
      { route: PAY, dropAfterCommitRate: 1, times: 1 },
      { route: PAY, rateLimitRate: 1, retryAfterSeconds: 0 },
    ]);
    const { row } = await ef.runFile(bills, FILE);
    expect(row.state).toBe('uncertain');
    expect(ef.sandbox.ctx.ledger.counts({ kind: 'bill_paid' })).toHaveLength(1);
  });
});
